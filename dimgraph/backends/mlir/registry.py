"""The MLIR backend's registry: `mlir_impl`, keyed by Op type, and the refusal every missing entry raises.

An emitter `mlir_impl(op, node, e, ins) -> [Value]` prints the node's MLIR into
the `Emitter` `e` from its input `Value`s and returns its output `Value`s. An op
with no entry, or an entry meeting a case it does not cover, raises
`MlirUnsupported` (a `NotImplementedError`) naming the op when the function is
compiled, never a wrong answer at run time.
"""

from __future__ import annotations

from functools import singledispatch


class MlirUnsupported(NotImplementedError):
    """An op (or an op's case) the mlir backend cannot emit; raised when the function is compiled."""


@singledispatch
def mlir_impl(op, node, e, ins):
    """The output `Value`s of `node` (whose op is `op`), printed into the emitter `e`."""
    raise MlirUnsupported(
        f"mlir backend: op {op} (type {type(op).__name__}) is not supported; "
        "use the numba, c or jax backend (docs/mlir.md lists what the mlir backend runs)"
    )
