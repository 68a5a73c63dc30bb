"""Large kernels split over threads along their outer loop (axis 0).

A kernel whose loop runs over axis 0 of its inputs computes, on a block of rows
of every input that has that axis, the results of those rows: elementwise
results and reductions that keep axis 0 are the blocks' rows one after another;
reductions over axis 0 and scatter-adds are the blocks' partial results
combined by the reducer (a scatter's base goes to the first block only, the
others scatter into zeros). Kernels are compiled `nogil`, so the blocks run at
once on a thread pool.

- A call splits only when its loop has at least `MIN_WORK` elements and every
  split argument has the same length along axis 0 (otherwise the kernel runs
  whole and raises its own shape error).
- Blocks are even, one per thread (`dg.config.threads`: 0 is one per core, 1
  turns splitting off), so a float sum over axis 0 is summed in a fixed order
  for a given thread count: the same inputs give the same bits on every call,
  but a different thread count may change the last bits (as any parallel sum).
- The first block to raise, in row order, raises: the error a single pass would
  have raised first.
- The pool starts on the first split call and is dropped in a child after
  `fork` (a forked child has none of its threads); the child starts its own.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass

import numpy as np

from dimgraph.core.elemwise import Elemwise
from dimgraph.core.fused import CAReduceElemwise, IndexedLoop
from dimgraph.core.reduce import CAReduce
from dimgraph.core.scalar import Composite, is_cheap

# Elements a loop must visit before splitting pays for the pool's hand-off (about 20 us).
MIN_WORK = 200_000
# How partial results over axis 0 combine, by reducer.
COMBINE = {
    "add": np.add, "mul": np.multiply, "maximum": np.maximum, "minimum": np.minimum,
    "and": np.logical_and, "or": np.logical_or, "scatter": np.add,
}  # fmt: skip


@dataclass(frozen=True)
class Split:
    """How one kernel's call splits: per argument whether it is cut along axis 0 or, for a scatter base,
    given whole to the first block and as zeros to the others; per output "rows" or a `COMBINE` key."""

    cut: tuple
    base: tuple
    combine: tuple


def split_of(node) -> Split | None:
    """The `Split` of `node`'s kernel, or None when its loop does not run over axis 0 of its inputs
    or its static shapes make it too small to split."""
    op = node.op
    work = _static_work(op.split_inputs(node.inputs)[0] if isinstance(op, IndexedLoop) else node.inputs)
    if work is not None and work < MIN_WORK:
        return None
    if isinstance(op, IndexedLoop):
        loop, gathers, scatters = op.split_inputs(node.inputs)
        cut = [v.type.shape[0] != 1 for v in loop] + [False] * len(gathers)
        cut += [i.type.shape[0] != 1 for _, idxs in gathers for i in idxs[1:]]
        base = [False] * len(cut)
        for _, idxs in scatters:
            cut += [False] + [True] * len(idxs)
            base += [True] + [False] * len(idxs)
        combine = tuple(
            "rows" if kind == "full" else reducer if kind == "reduce" else "scatter" for _, kind, reducer in op.results
        )
        if any(c == "rows" for c in combine) and not _costly(op.scalar_op):
            return None  # a memory-bound loop: its full-length results copied back together cost what threads save
        return Split(tuple(cut), tuple(base), combine)
    if isinstance(op, Elemwise):
        if not _costly(op.scalar_op):
            return None  # a memory-bound loop: its rows copied back together would cost what the threads save
        reduced, reducer = (), None
    elif isinstance(op, CAReduce):
        reduced, reducer = op.axis, op.scalar_op
    elif isinstance(op, CAReduceElemwise):
        reduced, reducer = op.axis, op.reducer
    else:
        return None
    if node.outputs[0].type.ndim + len(reduced) == 0 or any(i.type.ndim == 0 for i in node.inputs):
        return None
    cut = tuple(i.type.shape[0] != 1 for i in node.inputs)
    if not any(cut):
        return None
    combine = reducer if 0 in reduced else "rows"
    return Split(cut, (False,) * len(cut), (combine,) * len(node.outputs))


def _static_work(loop_inputs):
    """Elements the loop visits when the inputs' static shapes fix it, else None."""
    shapes = [v.type.shape for v in loop_inputs]
    if not shapes or any(s is None for shape in shapes for s in shape):
        return None
    try:
        return int(np.prod(np.broadcast_shapes(*shapes), dtype=np.int64))
    except ValueError:
        return None  # a static mismatch: the kernel's guard reports it


def _zeros_like(a):
    """Zeros of `a`'s type, read-only included: Numba types a read-only array apart (another compile)."""
    z = np.zeros_like(a)
    z.flags.writeable = a.flags.writeable
    return z


def _costly(scalar_op) -> bool:
    steps = scalar_op.steps if isinstance(scalar_op, Composite) else [(scalar_op, ())]
    return any(not is_cheap(step) for step, _ in steps)


class Splitter:
    """`kernel(*args)` with its loop cut into row blocks run on the pool (see the module docstring).

    `lookup()` gives the kernel each call (so a timing wrapper put in the driver's namespace is seen).
    """

    def __init__(self, lookup, split: Split, threads: int):
        self.lookup, self.split, self.threads = lookup, split, threads
        self.ready = False  # whether the kernel has run once (compiled or loaded from the disk cache)
        self.splits = 0  # calls that ran in blocks (a graph that splits stays on the Python driver)

    def __call__(self, *args):
        kernel = self.lookup()
        blocks = self._blocks(args) if self.ready else None
        if blocks is None:
            # The first call runs whole: threads calling a kernel that is not compiled yet would
            # each compile it (0.6 s more for the hierarchical model).
            out = kernel(*args)
            self.ready = True
            return out
        self.splits += 1
        pool = _pool(self.threads)
        calls = [self._args(args, lo, hi, first=lo == 0) for lo, hi in blocks]
        later = [pool.submit(kernel, *a) for a in calls[1:]]
        try:
            first = kernel(*calls[0])
        except BaseException:
            wait(later)  # no block outlives the call
            raise
        return self._combine([first] + [f.result() for f in later])  # the first failure in row order raises

    def _blocks(self, args):
        n = None
        width = 1
        for a, cut in zip(args, self.split.cut):
            shape = np.shape(a)  # a trusted call may pass Python scalars
            if cut:
                if not shape:
                    return None  # not an array along the loop: the kernel's own checks decide
                if n is None:
                    n = shape[0]
                elif shape[0] != n:
                    return None  # the kernel's own guard names the mismatch
            if shape and shape[0]:
                width = max(width, np.size(a) // shape[0])
        count = min(self.threads, n or 0)
        if count < 2 or n * width < MIN_WORK:
            return None
        edges = [n * k // count for k in range(count + 1)]
        return list(zip(edges[:-1], edges[1:]))

    def _args(self, args, lo, hi, first):
        out = []
        for a, cut, base in zip(args, self.split.cut, self.split.base):
            out.append(a[lo:hi] if cut else a if (first or not base) else _zeros_like(a))
        return out

    def _combine(self, parts):
        single = not isinstance(parts[0], tuple)
        columns = [[p] for p in parts] if single else [list(p) for p in parts]
        results = []
        for k, how in enumerate(self.split.combine):
            values = [c[k] for c in columns]
            if how == "rows":
                results.append(np.concatenate(values, axis=0))
            else:
                total = values[0]
                for v in values[1:]:
                    total = COMBINE[how](total, v).astype(total.dtype, copy=False)
                results.append(total)
        return results[0] if single else tuple(results)


_POOL = {"pool": None, "size": 0}
_LOCK = threading.Lock()


def thread_count(setting: int) -> int:
    """Threads for `dg.config.threads`: 0 means one per core.

    >>> thread_count(3)
    3
    """
    if isinstance(setting, bool) or not isinstance(setting, int) or setting < 0:
        raise ValueError(f"dg.config.threads must be an int >= 0 (0: one per core, 1: no splitting), got {setting!r}")
    return setting if setting > 0 else (os.cpu_count() or 1)


def _pool(threads):
    with _LOCK:
        if _POOL["pool"] is None or _POOL["size"] < threads - 1:
            if _POOL["pool"] is not None:
                _POOL["pool"].shutdown(wait=False)  # a function compiled for more threads: a larger pool
            _POOL["pool"] = ThreadPoolExecutor(max_workers=threads - 1, thread_name_prefix="dimgraph-numba")
            _POOL["size"] = threads - 1
        return _POOL["pool"]


def _forget_pool():
    """In a forked child: the parent's pool has no threads here, so the next split starts a new one."""
    global _LOCK
    _POOL["pool"], _POOL["size"] = None, 0
    _LOCK = threading.Lock()  # the parent may have held it while forking


os.register_at_fork(after_in_child=_forget_pool)
