"""Shape ops: `Reshape`, `Alloc` (broadcast_to / fill), and the NumPy-named helpers over them.

Target shapes are inputs (0-d int64 variables, constants where known), so an
unknown size flows through the same `infer_shape` as everything else.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dimgraph.core.basic import as_tensor, constant, is_float
from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.graph import Op, Variable
from dimgraph.core.math import cast, maximum
from dimgraph.core.shape import (
    ShapeI,
    build,
    normalize_axis,
    shape_entry_as_variable,
    shape_of,
    static_or_symbolic,
    to_static,
)


def _shape_inputs(shape, what):
    if isinstance(shape, (int, np.integer, Variable)):
        shape = (shape,)
    out = []
    for s in shape:
        v = shape_entry_as_variable(s)
        if v.type.ndim != 0 or np.dtype(v.type.dtype).kind not in "iu":
            raise TypeError(f"{what}: shape entries must be ints or 0-d integer variables, got {v!r}")
        out.append(v if v.type.dtype == "int64" else v.astype("int64"))
    return out


@dataclass(frozen=True)
class Reshape(Op):
    """Reshape to `ndim` axes given by scalar inputs (one entry may be -1, as NumPy)."""

    ndim: int

    def make_node(self, x, *shape):
        x = as_tensor(x)
        if len(shape) != self.ndim:
            raise TypeError(f"{self}: expected {self.ndim} shape entries, got {len(shape)}")
        static = [to_static(s) for s in shape]
        if sum(s == -1 for s in static) > 1:
            raise ValueError(f"reshape: at most one -1 in the target shape, got {static}")
        if any(s is not None and s < -1 for s in static):
            raise ValueError(f"reshape: negative size in target shape {static}")
        known_in = x.type.shape
        if None not in known_in and None not in static:
            total_in = int(np.prod(known_in))
            rest = int(np.prod([s for s in static if s != -1]))
            ok = (rest == total_in) if -1 not in static else (rest != 0 and total_in % rest == 0)
            if not ok:
                raise ValueError(f"reshape: cannot reshape {x!r} of shape {known_in} into {tuple(static)}")
        return build(self, [x, *shape], [x.type.dtype])

    def infer_shape(self, inputs, input_shapes):
        x_shape = input_shapes[0]
        entries = [to_static(v) if to_static(v) is not None else v for v in inputs[1:]]
        is_free = [isinstance(e, int) and e == -1 for e in entries]
        if any(is_free):
            total, rest = 1, 1
            for s in x_shape:
                total = total * s
            for e, free in zip(entries, is_free):
                rest = rest if free else rest * e
            entries = [total // rest if free else e for e, free in zip(entries, is_free)]
        return [tuple(entries)]

    def perform(self, node, inputs):
        x, *shape = inputs
        return [np.reshape(x, [int(s) for s in shape])]

    def L_op(self, inputs, outputs, output_grads):
        x = inputs[0]
        return [reshape(output_grads[0], shape_of(x))] + [None] * (len(inputs) - 1)


def reshape(x, shape):
    """`x` reshaped to `shape` (ints, -1 once, or 0-d int variables), as `np.reshape`."""
    x = as_tensor(x)
    entries = _shape_inputs(shape, "reshape")
    return Reshape(len(entries))(x, *entries)


@dataclass(frozen=True)
class Alloc(Op):
    """`value` broadcast to the shape given by scalar inputs (the value's axes align right)."""

    def make_node(self, value, *shape):
        value = as_tensor(value)
        if value.type.ndim > len(shape):
            raise ValueError(f"broadcast_to: {value!r} has more axes than the target shape ({len(shape)})")
        offset = len(shape) - value.type.ndim
        for k, s in enumerate(value.type.shape):
            target = to_static(shape[offset + k])
            if s is not None and s != 1 and target is not None and s != target:
                raise ValueError(
                    f"broadcast_to: axis {k} of {value!r} has size {s}, which cannot broadcast to {target}"
                )
        return build(self, [value, *shape], [value.type.dtype])

    def infer_shape(self, inputs, input_shapes):
        entries = []
        value = inputs[0]
        offset = len(inputs) - 1 - value.type.ndim
        for k, v in enumerate(inputs[1:]):
            known = to_static(v)
            if known is None and k >= offset and value.type.shape[k - offset] not in (None, 1):
                known = value.type.shape[k - offset]
            entries.append(known if known is not None else v)
        return [tuple(entries)]

    def perform(self, node, inputs):
        value, *shape = inputs
        return [np.array(np.broadcast_to(value, [int(s) for s in shape]))]

    def L_op(self, inputs, outputs, output_grads):
        """Sum over the axes broadcasting made: leading ones, static size 1, and run-time size 1.

        An axis of unknown size n_v broadcast to n is split into (n_v, n // n_v) and
        summed over the second part: the identity when n_v == n, a full sum when n_v == 1.
        """
        from dimgraph.core.reduce import sum as reduce_sum  # cycle: a sum's gradient is a broadcast_to

        value, (g,) = inputs[0], output_grads
        none = [None] * (len(inputs) - 1)
        if not is_float(value):
            return [None] + none
        extra = g.type.ndim - value.type.ndim
        if extra:
            g = reduce_sum(g, axis=tuple(range(extra)))
        for k, s in enumerate(value.type.shape):
            if s == 1 and g.type.shape[k] != 1:
                g = reduce_sum(g, axis=k, keepdims=True)
            elif s is None and g.type.shape[k] != 1:
                entries = list(shape_of(g))
                n_v = ShapeI(k)(value)
                g = reduce_sum(
                    reshape(g, entries[:k] + [n_v, entries[k] // maximum(n_v, 1)] + entries[k + 1 :]), axis=k + 1
                )
        return [pin_shape(cast(g, value.type.dtype), value)] + none


def broadcast_to(x, shape):
    """`x` broadcast to `shape` as `np.broadcast_to` (the result is a new array)."""
    x = as_tensor(x)
    entries = _shape_inputs(shape, "broadcast_to")
    return Alloc()(x, *entries)


def full(shape, fill_value, dtype=None):
    """An array of `shape` filled with `fill_value`."""
    value = constant(fill_value, dtype=dtype)
    return broadcast_to(value, shape)


def zeros(shape, dtype="float64"):
    return full(shape, 0, dtype)


def ones(shape, dtype="float64"):
    return full(shape, 1, dtype)


def full_like(x, fill_value, dtype=None):
    x = as_tensor(x)
    return full(shape_of(x), fill_value, dtype or x.type.dtype)


def zeros_like(x, dtype=None):
    return full_like(x, 0, dtype)


def ones_like(x, dtype=None):
    return full_like(x, 1, dtype)


def transpose(x, axes=None):
    """Axes permuted as `np.transpose` (reversed when `axes` is None)."""
    x = as_tensor(x)
    order = tuple(reversed(range(x.type.ndim))) if axes is None else normalize_axis_order(axes, x.type.ndim)
    return DimShuffle(x.type.ndim, order)(x)


def normalize_axis_order(axes, ndim):
    order = tuple(int(a) % ndim if -ndim <= a < ndim else a for a in axes)
    if sorted(order) != list(range(ndim)):
        raise ValueError(f"transpose: axes {tuple(axes)} are not a permutation of {ndim} axes")
    return order


def expand_dims(x, axis):
    """New length-1 axes at the positions `axis` of the result (as `np.expand_dims`)."""
    x = as_tensor(x)
    new_ndim = x.type.ndim + (1 if isinstance(axis, (int, np.integer)) else len(axis))
    new = normalize_axis(axis, new_ndim)
    it = iter(range(x.type.ndim))
    return DimShuffle(x.type.ndim, tuple("x" if a in new else next(it) for a in range(new_ndim)))(x)


def squeeze(x, axis=None):
    """Axes of static size 1 removed (`axis=None`: all of them)."""
    x = as_tensor(x)
    if axis is None:
        axes = tuple(a for a, s in enumerate(x.type.shape) if s == 1)
    else:
        axes = normalize_axis(axis, x.type.ndim)
        for a in axes:
            if x.type.shape[a] != 1:
                raise ValueError(f"squeeze: axis {a} of {x!r} has static size {x.type.shape[a]}, not 1")
    return DimShuffle(x.type.ndim, tuple(a for a in range(x.type.ndim) if a not in axes))(x)


def flatten(x):
    return reshape(x, (-1,))


def pin_shape(g, like):
    """`g` with the static sizes `like` knows and `g` does not (a no-op reshape), so gradients keep their input's type."""
    if all(s is None or t is not None for s, t in zip(like.type.shape, g.type.shape)):
        return g
    own = static_or_symbolic(g)
    return reshape(g, tuple(s if s is not None else own[k] for k, s in enumerate(like.type.shape)))
