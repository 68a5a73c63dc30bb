"""The JAX backend's registry: one entry per Op type, each returning a closure over `jax.numpy`.

`jax_impl(op, node)` is read once per node when a graph is compiled; the
closure it returns, `fn(list of input values) -> list of output values`, is
called while the whole graph is traced by `jax.jit`. An Op type with no entry
fails at compile time (`missing_ops`), naming the op and the backend.

Values are of two kinds while tracing:
- static: NumPy arrays (constants, shapes, anything computed only from them).
  Shapes are concrete while tracing, so `ShapeI`/`Shape` give NumPy values and
  every size, reshape target or slice bound computed from shapes stays a
  Python int: XLA sees static shapes only.
- traced: JAX arrays computed from the inputs.
An entry must accept static values anywhere and, where it needs an int when
tracing (`static_int`), raise NotImplementedError for a traced one (an output
whose shape depends on data cannot be compiled by XLA).

The entries live in one module per op family, mirroring `dimgraph.core`
(`elemwise`, `shape`, `reduce`, `fused`, `subtensor`, `join`, `linalg`,
`extra`, `control`, `random`); each registers its ops here with
`@jax_impl.register(OpType)`, and `compiler.py` imports them all.
A whole `FunctionGraph` is an entry too (`compiler.py` registers it: `jax_impl(fgraph)`
is `fn(*values) -> list of values`), so control flow compiles its inner graphs
through this registry rather than importing the compiler that imports it.
"""

from __future__ import annotations

from functools import singledispatch

import numpy as np

BACKEND = "jax"
# Nodes with static inputs and at most this many output elements are evaluated with NumPy while tracing.
FOLD_LIMIT = 1024


class NeedsStatic(Exception):
    """Tracing met a data-dependent shape; `positions` are the fgraph inputs to make static (None: impossible)."""

    def __init__(self, positions, error):
        super().__init__(str(error))
        self.positions, self.error = positions, error


@singledispatch
def jax_impl(op, node):
    """`fn(list of input values) -> list of output values` for `node` (see the module docstring)."""
    raise NotImplementedError(missing_message(op))


def missing_message(op):
    return (
        f"the {BACKEND} backend has no implementation of op {op} ({type(op).__module__}.{type(op).__name__}); "
        f"register one with @dimgraph.backends.jax.registry.jax_impl.register({type(op).__name__}), "
        "or compile with another backend"
    )


def missing_ops(nodes):
    """The Op types among `nodes` with no registry entry."""
    default = jax_impl.dispatch(object)
    return sorted({type(n.op) for n in nodes if jax_impl.dispatch(type(n.op)) is default}, key=lambda t: t.__name__)


def is_static(value) -> bool:
    """True for values known while tracing (NumPy data), False for traced JAX arrays."""
    return isinstance(value, (np.ndarray, np.generic, int, float, bool))


class DataDependentShape(NotImplementedError):
    """A size, bound or mask needed while tracing is a traced value (`value`): the shape depends on data.

    The compiled function answers by making the small inputs behind `value`
    static (one compile per distinct value, see `compiler.py`); where the value
    comes from a large input it is the user's error.
    """

    def __init__(self, message, value):
        super().__init__(message)
        self.value = value


def static_int(value, op, what) -> int:
    """`value` as a Python int; DataDependentShape (a NotImplementedError) when it is traced."""
    if is_static(value):
        return int(value)
    raise DataDependentShape(
        f"the {BACKEND} backend cannot compile {op}: its {what} is computed from input data, so the "
        "output shape would depend on data (XLA needs static shapes), and the inputs it comes from are "
        "not small enough to be compiled in as constants; use another backend for this graph",
        value,
    )
