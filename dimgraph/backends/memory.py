"""Refusing an array this machine cannot hold, before any backend tries to allocate it.

NumPy and Numba answer a hopeless allocation with a `MemoryError`, but XLA aborts
the interpreter (`Check failed: buffer_.IsConcrete()`), and an allocation that
merely fits in virtual memory can still take the machine down. So every backend
passes through one check: `Backend.compile` refuses a graph holding a value whose
static shape needs more bytes than the machine's memory and swap together
(`check_graph`), and the jax backend checks the shapes it meets while tracing
(`check_fits`), where sizes that come from inputs become known.
"""

from __future__ import annotations

import functools
import math
import os

import numpy as np

from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.shape_ops import Reshape
from dimgraph.core.subtensor import Subtensor

# Ops whose outputs are views of their inputs (never more elements than an input holds): no allocation.
VIEWS = (DimShuffle, Reshape, Subtensor)


@functools.lru_cache(maxsize=None)
def capacity() -> int | None:
    """Bytes of memory and swap on this machine (None when the system does not say)."""
    try:
        with open("/proc/meminfo") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return sum(int(fields[k].split()[0]) * 1024 for k in ("MemTotal", "SwapTotal") if k in fields) or None
    except (OSError, ValueError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, OSError, ValueError):
        return None


def _bytes(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if n < 1024 or unit == "EiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def check_fits(shape, dtype, what: str):
    """A `MemoryError` naming `what` when an array of `shape` and `dtype` needs more than `capacity()`.

    >>> check_fits((10**12,), "float64", "normal draw")
    Traceback (most recent call last):
    ...
    MemoryError: normal draw: an array of shape (1000000000000,) and dtype float64 needs 7.28 TiB, ...
    """
    limit = capacity()
    nbytes = math.prod(int(s) for s in shape) * np.dtype(dtype).itemsize  # Python ints: no overflow
    if limit is not None and nbytes > limit:
        raise MemoryError(
            f"{what}: an array of shape {tuple(int(s) for s in shape)} and dtype {np.dtype(dtype)} needs "
            f"{_bytes(nbytes)}, more than this machine's memory and swap together ({_bytes(limit)})"
        )


def check_graph(fgraph):
    """`check_fits` for every value `fgraph` computes whose shape is static (views excepted)."""
    for node in fgraph.toposort():
        if isinstance(node.op, VIEWS):
            continue
        for out in node.outputs:
            shape = out.type.shape
            if shape and None not in shape:
                check_fits(shape, out.type.dtype, f"{node.op} (output {out.name or out.index})")
