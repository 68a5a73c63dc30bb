"""The C backend's registry: `c_impl`, keyed by Op type, and the `CImpl` contract every emitter returns.

An emitter reads a node's static facts once, at compile time, and returns a
`CImpl` with two halves that share one contract:

- `plan(ctx, ins) -> (outs, operands, run)` runs in Python before each call. It
  gets the node's input arrays (buffers that C fills later; only their shapes
  and strides are meaningful yet), and returns the output arrays, the kernel's
  operand arrays and whether the kernel runs. Views are made here, by strides:
  DimShuffle, Alloc (a broadcast view), reshape where no copy is needed, basic
  indexing, Split. Broadcasting is done here too: every operand of a loop is a
  strided view of the loop's shape (a stretched axis has stride 0), so kernels
  are plain strided loops.
- `code(o) -> str` prints the kernel's C statements, addressing its operands
  through `o` (`o.ptr(j)`, `o.shape(j, axis)`, `o.stride(j, axis)` in elements).
  `operands` lists their static (dtype, ndim).

Errors C detects (a failed Assert) are returned as codes mapped back to exceptions.
The emitters live in one module per op family, mirroring `dimgraph.core`
(`elemwise`, `shape`, `reduce`, `fused`, `subtensor`, `join`, `linalg`,
`extra`, `control`, `random`); each registers its ops here with
`@c_impl.register(OpType)`, and the package imports them all. A whole
`FunctionGraph` is an entry too (the package registers it: `c_impl(fgraph)` is
its `CCompiled`), so control flow compiles an inner graph through this registry
rather than importing the package that imports it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import singledispatch
from typing import Callable

from dimgraph.backends.c.scalar import ctype


class MissingEmitter(NotImplementedError):
    """An op with no entry in the C backend's registry (raised when the function is compiled)."""


@dataclass
class CImpl:
    operands: list  # [(dtype, ndim)] of the kernel's operand arrays
    code: Callable | None  # code(o) -> C statements; None: the plan does all the work
    plan: Callable  # plan(ctx, ins) -> (outs, operands, run)
    errors: list = field(default_factory=list)  # [(exception class, message)]: `o.fail(k)` raises errors[k]
    prelude: str = ""  # file-scope C the kernel calls (printed once per translation unit)


@singledispatch
def c_impl(op, node) -> CImpl:
    """The `CImpl` of `node` (whose op is `op`)."""
    raise MissingEmitter(
        f"c backend: no C emitter for op {op} (type {type(op).__name__}); "
        "register one with dimgraph.backends.c.registry.c_impl.register"
    )


class Operands:
    """C expressions for a kernel's operands: slot numbers into the entry function's P and M arrays."""

    def __init__(self, types, slots, offsets, error_base):
        self.types, self.slots, self.offsets, self.error_base = types, slots, offsets, error_base

    def dtype(self, j):
        return self.types[j][0]

    def ndim(self, j):
        return self.types[j][1]

    def ctype(self, j):
        return ctype(self.dtype(j))

    def ptr(self, j):
        return f"(({self.ctype(j)} *)P[{self.slots[j]}])"

    def shape(self, j, axis):
        return f"M[{self.offsets[j] + axis}]"

    def stride(self, j, axis):
        return f"M[{self.offsets[j] + self.ndim(j) + axis}]"

    def shape_ptr(self, j):
        return f"(M + {self.offsets[j]})"

    def stride_ptr(self, j):
        return f"(M + {self.offsets[j] + self.ndim(j)})"

    def size(self, j):
        return " * ".join(self.shape(j, a) for a in range(self.ndim(j))) or "1"

    def fail(self, k):
        return f"return {self.error_base + k + 1};"
