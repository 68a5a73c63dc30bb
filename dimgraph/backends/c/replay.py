"""Running a call's plan again: the c backend's cheap path for calls that repeat (a sampler's, an optimizer's).

Planning (`Program.plan`) walks every node in Python: at the sizes samplers run,
it costs far more than the C it plans. But a plan depends only on the inputs'
shapes and on the few input values it reads (index arrays, reshape targets), so
`Replayer` keeps one: the call that records it copies each input into a buffer
of its own and plans on those, noting which inputs' values the plan read
(`ReadLog`). A later call whose inputs have the same dtypes and shapes copies its
inputs into those buffers and makes one C call, `dg_replay` (`REPLAY_ENTRY`, in
every translation unit): it compares the values the plan read with the ones
copied in (a difference returns -1 before any work, and the call plans again),
restores the buffers the plan initialized (`Context.filled`: a reduction's
identity) and runs `dg_run` with the recorded tables. Its outputs are copied out,
as the buffers are used again. No Python runs per node, per read or per buffer.

A plan that did work C does not repeat (`Context.no_replay`: a loop stepped in
Python, a failure kept for C to raise) is not kept, nor one over inputs larger
than `REPLAY_LIMIT` elements, nor one whose copies in and out would take longer
than planning took (`x + 1` on 60,000 elements plans in microseconds). A
kept plan serves one thread at a time; another thread plans as before. After
`MAX_MISSES` calls in a row whose read values differ (the plan reads a
parameter: an `ifelse` on data), recording stops.
"""

from __future__ import annotations

import threading

import numpy as np

REPLAY_LIMIT = 1 << 16  # elements of one input
MAX_MISSES = 3
COPY_BYTES_PER_SECOND = 4e9  # a cautious memcpy rate: a replay copies its inputs in and its outputs out
READ_CHANGED = -1  # dg_replay's answer when a value the plan read differs (dg_run's error codes are positive)

# T: n_reads, then (input buffer, the value the plan read, bytes) per read; n_fills, then (buffer, its
# initial bytes, bytes) per initialized buffer; then whether a kernel runs and dg_run's P, M, R.
REPLAY_ENTRY = f"""
/* A kept plan run again (dimgraph/backends/c/replay.py). */
int dg_replay(const int64_t *T) {{
  int64_t k = 1;
  for (int64_t r = 0; r < T[0]; r++, k += 3)
    if (memcmp((const void *)(uintptr_t)T[k], (const void *)(uintptr_t)T[k + 1], (size_t)T[k + 2])) return {READ_CHANGED};
  const int64_t n_fills = T[k++];
  for (int64_t f = 0; f < n_fills; f++, k += 3)
    memcpy((void *)(uintptr_t)T[k], (const void *)(uintptr_t)T[k + 1], (size_t)T[k + 2]);
  if (!T[k]) return 0;
  return dg_run((char **)(uintptr_t)T[k + 1], (const int64_t *)(uintptr_t)T[k + 2], (const unsigned char *)(uintptr_t)T[k + 3]);
}}
"""


class ReadLog(dict):
    """`Context.host` that notes which graph inputs (by position) the plan read the values of."""

    def __init__(self, positions):
        super().__init__()
        self.positions = positions  # id(input variable) -> its position
        self.read = set()

    def __getitem__(self, var):
        k = self.positions.get(id(var))
        if k is not None:
            self.read.add(k)
        return dict.__getitem__(self, var)


class Replay:
    """One recorded plan: the input buffers it was made on, its C tables, and what must hold to run it again."""

    def __init__(self, stages, ptrs, meta, flags, outputs, fills, reads, alive):
        self.stages = stages
        self.key = [(a.dtype, a.shape) for a in stages]
        p, m = np.array(ptrs, dtype=np.uintp), np.array(meta, dtype=np.int64)
        r = np.array(bytearray(flags) or bytearray(1), dtype=np.uint8)
        read = [(stages[k], stages[k].copy()) for k in sorted(reads)]  # the values the plan was made for
        initial = [(a, np.full(a.shape, value, a.dtype)) for a, value in fills]
        table = [len(read)] + [x for a, b in read for x in (a.ctypes.data, b.ctypes.data, a.nbytes)]
        table += [len(initial)] + [x for a, b in initial for x in (a.ctypes.data, b.ctypes.data, a.nbytes)]
        table += [int(any(flags)), p.ctypes.data, m.ctypes.data, r.ctypes.data]
        self.table = np.array(table, dtype=np.int64)  # dg_replay's T
        self.address = self.table.ctypes.data
        self.outputs = outputs
        self.alive = (alive, p, m, r, read, initial)  # every array the tables point into

    def shapes_match(self, arrays):
        for (dtype, shape), a in zip(self.key, arrays):
            if a.dtype != dtype or a.shape != shape:
                return False
        return True

    def run(self, replay_entry, arrays, raise_code):
        """The outputs, or None when a value the plan read differs (nothing ran)."""
        for stage, a in zip(self.stages, arrays):
            stage[...] = a
        rc = replay_entry(self.address)
        if rc:
            if rc == READ_CHANGED:
                return None
            raise_code(rc)
        return [np.array(a) for a in self.outputs]


class Replayer:
    """The kept plan of one compiled graph (`plan_call(arrays, ctx)` plans and runs a call the usual way)."""

    def __init__(self, inputs, outputs, replay_entry, plan_call, raise_code):
        self.inputs, self.outputs = inputs, outputs
        self.replay_entry, self.plan_call, self.raise_code = replay_entry, plan_call, raise_code
        self.positions = {id(v): k for k, v in enumerate(inputs)}
        self.current = None
        self.misses = 0
        self.enabled = True
        self.lock = threading.Lock()

    def __call__(self, arrays):
        if not self.enabled or not self.lock.acquire(blocking=False):
            return self.plan_call(arrays, None)
        try:
            current = self.current
            if current is not None and current.shapes_match(arrays):
                results = current.run(self.replay_entry, arrays, self.raise_code)
                if results is not None:
                    self.misses = 0
                    return results
                self.misses += 1
                if self.misses >= MAX_MISSES:  # the plan reads values that change: plan every call
                    self.enabled, self.current = False, None
                    return self.plan_call(arrays, None)
            return self._record(arrays)
        finally:
            self.lock.release()

    def _record(self, arrays):
        if any(a.size > REPLAY_LIMIT for a in arrays):
            return self.plan_call(arrays, None)
        stages = [np.array(a, order="C") for a in arrays]
        log = ReadLog(self.positions)
        ctx, results = self.plan_call(stages, log)
        copied = sum(a.nbytes for a in stages) + sum(a.nbytes for a in results)
        if ctx.replayable and copied / COPY_BYTES_PER_SECOND < ctx.plan_seconds:  # replaying costs less than planning
            self.current = Replay(
                stages, *ctx.tables, [ctx.bufs[v] for v in self.outputs], ctx.fills, log.read, ctx.alive
            )
            return [np.array(r) for r in results]
        return results
