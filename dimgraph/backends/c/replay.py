"""Running a call's plan again: the c backend's cheap path for calls that repeat (a sampler's, an optimizer's).

Planning (`Program.plan`) walks every node in Python: at the sizes samplers run,
it costs far more than the C it plans. But a plan depends only on the inputs'
shapes and on the few input values it reads (index arrays, reshape targets), so
`Replayer` keeps one: the call that records it copies each input into a buffer
of its own and plans on those, noting which inputs' values the plan read
(`ReadLog`). A later call whose inputs have the same dtypes and shapes, and the
same values where the plan read them, copies its inputs into those buffers,
restores the buffers the plan initialized (`Context.filled`: a reduction's
identity), and calls C with the recorded tables; its outputs are copied out, as
the buffers are used again. No Python runs per node.

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
        self.p = np.array(ptrs, dtype=np.uintp)
        self.m = np.array(meta, dtype=np.int64)
        self.p_addr, self.m_addr, self.flags = self.p.ctypes.data, self.m.ctypes.data, bytes(flags)
        self.calls_c = any(flags)  # whether any kernel runs (a graph of views only has none)
        self.outputs, self.fills = outputs, fills
        self.reads = [(k, stages[k].copy()) for k in sorted(reads)]  # the values the plan was made for
        self.alive = alive  # every operand array the tables point into

    def shapes_match(self, arrays):
        for (dtype, shape), a in zip(self.key, arrays):
            if a.dtype != dtype or a.shape != shape:
                return False
        return True

    def reads_match(self, arrays):
        return all(np.array_equal(arrays[k], value) for k, value in self.reads)

    def run(self, entry, arrays, raise_code):
        for stage, a in zip(self.stages, arrays):
            np.copyto(stage, a)
        for a, value in self.fills:
            a.fill(value)
        if self.calls_c:
            rc = entry(self.p_addr, self.m_addr, self.flags)
            if rc:
                raise_code(rc)
        return [np.array(a) for a in self.outputs]


class Replayer:
    """The kept plan of one compiled graph (`plan_call(arrays, ctx)` plans and runs a call the usual way)."""

    def __init__(self, inputs, outputs, entry, plan_call, raise_code):
        self.inputs, self.outputs = inputs, outputs
        self.entry, self.plan_call, self.raise_code = entry, plan_call, raise_code
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
                if current.reads_match(arrays):
                    self.misses = 0
                    return current.run(self.entry, arrays, self.raise_code)
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
