"""The one shape system.

Each Op's `infer_shape(inputs, input_shapes)` returns, per output, a tuple whose
entries are ints (known when the graph is built) or symbolic int64 scalars.
`Op.build` calls it once in `make_node` and keeps the int part as the static
`type.shape`; `shape_of` calls the same method to get the full symbolic shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dimgraph.core.basic import constant
from dimgraph.core.graph import Apply, Constant, Op, Variable, toposort
from dimgraph.core.type import TensorType


def static_or_symbolic(var):
    """The shape of `var` as far as its type knows; unknown axes as `ShapeI` graphs."""
    return tuple(s if s is not None else ShapeI(i)(var) for i, s in enumerate(var.type.shape))


def to_static(entry):
    """An int for a shape entry that is known (an int or a constant), else None."""
    if isinstance(entry, (int, np.integer)):
        return int(entry)
    if isinstance(entry, Constant):
        return int(entry.data)
    return None


def normalize_axis(axis, ndim, what="axis") -> tuple:
    """A sorted tuple of non-negative axes; None means all axes."""
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"{what} {a} is out of range for an array with {ndim} axes")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated {what} in {axes}")
    return tuple(sorted(out))


def product(entries):
    """The product of shape entries: an int when all are ints, else a symbolic int64 scalar."""
    total = 1
    for e in entries:
        total = total * e
    return total


def build(op, inputs, dtypes) -> Apply:
    """An Apply of `op` whose output types come from `op.infer_shape` (the static part)."""
    shapes = op.infer_shape(inputs, [static_or_symbolic(i) for i in inputs])
    types = [TensorType(dt, tuple(to_static(s) for s in sh)) for dt, sh in zip(dtypes, shapes)]
    return Apply(op, inputs, types)


def shape_of(var):
    """The full shape of `var`: ints where known, symbolic int64 scalars over the inputs' shapes.

    >>> import dimgraph as dg
    >>> x = dg.tensor("x", shape=(None, 3))
    >>> rows, cols = dg.core.shape_of(x * 2)
    >>> cols, rows.eval({x: np.zeros((4, 3))})
    (3, array(4))
    """
    if all(s is not None for s in var.type.shape):
        return tuple(var.type.shape)
    memo = {}

    def get(v):
        if all(s is not None for s in v.type.shape):
            return tuple(v.type.shape)
        return memo[v] if v in memo else static_or_symbolic(v)

    for node in toposort([var]):
        if all(all(s is not None for s in o.type.shape) for o in node.outputs):
            continue
        shapes = node.op.infer_shape(node.inputs, [get(i) for i in node.inputs])
        for out, sh in zip(node.outputs, shapes):
            memo[out] = tuple(s if known is None else known for s, known in zip(sh, out.type.shape))
    return get(var)


@dataclass(frozen=True)
class ShapeI(Op):
    """The length of axis `i` of its input, as a 0-d int64."""

    i: int

    def make_node(self, x):
        if not 0 <= self.i < x.type.ndim:
            raise ValueError(f"ShapeI: axis {self.i} out of range for {x!r}")
        return Apply(self, [x], [TensorType("int64", ())])

    def infer_shape(self, inputs, input_shapes):
        return [()]

    def perform(self, node, inputs):
        return [np.asarray(inputs[0].shape[self.i], dtype=np.int64)]

    def L_op(self, inputs, outputs, output_grads):
        """A length does not vary with the values: no gradient flows to them."""
        return [None]


@dataclass(frozen=True)
class Shape(Op):
    """The shape of its input as an int64 vector."""

    def make_node(self, x):
        return Apply(self, [x], [TensorType("int64", (x.type.ndim,))])

    def infer_shape(self, inputs, input_shapes):
        return [(inputs[0].type.ndim,)]

    def perform(self, node, inputs):
        return [np.asarray(inputs[0].shape, dtype=np.int64)]

    def L_op(self, inputs, outputs, output_grads):
        """A shape does not vary with the values: no gradient flows to them."""
        return [None]


def shape_entry_as_variable(entry) -> Variable:
    """A shape entry (int or symbolic) as a 0-d int64 variable."""
    if isinstance(entry, Variable):
        return entry
    return constant(int(entry), dtype="int64")
