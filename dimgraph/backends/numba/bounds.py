"""Out-of-range positions raised from kernels without leaking memory on each failing call.

Numba leaks on every raise whose arguments are run-time values (its "dynamic
exceptions": about 450 bytes per raise, never freed), while a raise of a bare
exception class leaks nothing. So a kernel that meets a bad position first writes
(index, size, axis) into this thread's row of `SLOTS`, a process-wide table whose
address Numba's linker knows by name (`_SYMBOL`: cached machine code finds it in
a new process), then raises the bare `KernelIndexOutOfBounds`. Numba builds the
Python exception in the thread that ran the kernel, so its `__init__` reads the
same row back and the error carries NumPy's message.

NOTE: the raise must be inlined into the kernel (`views.check_index` is
`inline="always"`): a raise in a called function returns through the caller
without releasing the caller's arrays (numba/numba#1549).
"""

from __future__ import annotations

import threading

import llvmlite.binding as llvm
import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from dimgraph.errors import IndexOutOfBounds

N_ROWS = 256  # threads that ever failed; past that a row is shared and may lose its numbers, not the error
_SYMBOL = "dimgraph_numba_index_slots"
_GOLDEN = 0x9E3779B97F4A7C15  # Fibonacci hashing of a thread id into a first row to probe
_SHIFT = 64 - 8  # log2(N_ROWS) bits of the product
SLOTS = np.zeros((N_ROWS, 4), dtype=np.uint64)  # per row: owning thread id (0: free), index, size, axis
llvm.add_symbol(_SYMBOL, SLOTS.ctypes.data)


def _first_row(thread_id: int) -> int:
    return ((thread_id * _GOLDEN) % 2**64) >> _SHIFT


def _numbers():
    """(index, size, axis) recorded by this thread's last failing kernel, or None."""
    me, row = threading.get_ident(), _first_row(threading.get_ident())
    for _ in range(N_ROWS):  # the kernel's probe, read back
        owner = int(SLOTS[row, 0])
        if owner == me:
            return tuple(int(v) for v in SLOTS[row, 1:].view(np.int64))
        if owner == 0:
            return None
        row = (row + 1) % N_ROWS
    return None


class KernelIndexOutOfBounds(IndexOutOfBounds):
    """`IndexOutOfBounds` raised by a kernel: built without arguments, it reads them from this thread's row."""

    def __init__(self, *args):
        if not args:
            args = _numbers() or ("a position is out of bounds (its numbers were lost: over 256 failing threads)",)
        super().__init__(*args)

    def __reduce__(self):
        return IndexOutOfBounds, self.args


def _cells(builder):
    """The table as i64* (declared, not defined, in this module: the linker resolves it to `SLOTS`)."""
    i64 = ir.IntType(64)
    table = builder.module.globals.get(_SYMBOL)
    if table is None:
        table = ir.GlobalVariable(builder.module, ir.ArrayType(i64, N_ROWS * 4), _SYMBOL)
        table.linkage = "external"
    return builder.bitcast(table, i64.as_pointer())


@intrinsic
def _thread_id(typingctx):
    """pthread_self(), which is Python's `threading.get_ident()` on POSIX."""

    def codegen(context, builder, signature, args):
        i64 = ir.IntType(64)
        return builder.call(
            cgutils.get_or_insert_function(builder.module, ir.FunctionType(i64, []), "pthread_self"), []
        )

    return types.int64(), codegen


@intrinsic
def _claim(typingctx, cell, expected, new):
    """Atomically set table cell `cell` to `new` if it holds `expected`; the value it held."""

    def codegen(context, builder, signature, args):
        ptr = builder.gep(_cells(builder), [args[0]])
        return builder.extract_value(builder.cmpxchg(ptr, args[1], args[2], "seq_cst", "seq_cst"), 0)

    return types.int64(types.int64, types.int64, types.int64), codegen


@intrinsic
def _store(typingctx, cell, value):
    def codegen(context, builder, signature, args):
        builder.store(args[1], builder.gep(_cells(builder), [args[0]]))
        return context.get_dummy_value()

    return types.void(types.int64, types.int64), codegen


@numba.njit(cache=True)
def record_position(index, size, axis):
    """Write (index, size, axis) into this thread's row of `SLOTS`, claiming a free row the first time."""
    me = _thread_id()
    row = np.int64((np.uint64(me) * np.uint64(_GOLDEN)) >> np.uint64(_SHIFT))
    for _ in range(N_ROWS):
        owner = _claim(row * 4, 0, me)
        if owner == 0 or owner == me:
            break
        row = (row + 1) % N_ROWS
    _store(row * 4 + 1, np.int64(index))
    _store(row * 4 + 2, np.int64(size))
    _store(row * 4 + 3, np.int64(axis))
