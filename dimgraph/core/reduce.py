"""Reductions: `CAReduce` (sum, prod, max, min, all, any over any set of axes) and `Argmax`.

mean/var/std/logsumexp are graphs of these (so rewrites and gradients see
through them). Output dtypes follow NumPy: sums of small ints widen to the
platform int, float32 stays float32, all/any give bool.
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass

import numpy as np

from dimgraph.core import math as m
from dimgraph.core.basic import as_tensor, is_float
from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.graph import Op
from dimgraph.core.shape import build, normalize_axis, product, shape_of
from dimgraph.core.shape_ops import broadcast_to, pin_shape, reshape

REDUCERS = {
    "add": np.sum,
    "mul": np.prod,
    "maximum": np.max,
    "minimum": np.min,
    "and": np.all,
    "or": np.any,
}


@dataclass(frozen=True)
class CAReduce(Op):
    """Reduce `axis` with a commutative, associative scalar op (`REDUCERS` keys)."""

    scalar_op: str
    axis: tuple

    def __post_init__(self):
        if self.scalar_op not in REDUCERS:
            raise ValueError(f"CAReduce: unknown reducer {self.scalar_op!r}; known: {sorted(REDUCERS)}")

    def make_node(self, x):
        x = as_tensor(x)
        if builtins.any(not 0 <= a < x.type.ndim for a in self.axis):
            raise ValueError(f"{self}: axes {self.axis} out of range for {x.type}")
        if self.scalar_op in ("maximum", "minimum"):
            for a in self.axis:
                if x.type.shape[a] == 0:
                    raise ValueError(
                        f"{self}: cannot reduce the empty axis {a} of {x!r} (no identity for {self.scalar_op})"
                    )
        dtype = REDUCERS[self.scalar_op](np.zeros((1,), dtype=x.type.dtype)).dtype.name
        return build(self, [x], [dtype])

    def infer_shape(self, inputs, input_shapes):
        return [tuple(s for a, s in enumerate(input_shapes[0]) if a not in self.axis)]

    def perform(self, node, inputs):
        out = REDUCERS[self.scalar_op](inputs[0], axis=self.axis)
        return [np.asarray(out, dtype=node.outputs[0].type.dtype)]

    def L_op(self, inputs, outputs, output_grads):
        """sum: spread back; prod: product of the others (exact with zeros); max/min: split equally among ties."""
        (x,), (z,), (gz,) = inputs, outputs, output_grads
        if not is_float(x) or self.scalar_op in ("and", "or"):
            return [None]
        order, k = [], 0
        for a in range(x.type.ndim):
            order.append("x" if a in self.axis else k)
            k += a not in self.axis
        keep = DimShuffle(z.type.ndim, tuple(order))
        g, zk = keep(gz), keep(z)
        if self.scalar_op == "add":
            out = broadcast_to(g, shape_of(x))
        elif self.scalar_op == "mul":
            is_zero = m.eq(x, 0)
            n_zero = sum(m.cast(is_zero, "int64"), self.axis, keepdims=True)
            safe = m.where(is_zero, 1, x)
            others = m.where(
                m.eq(n_zero, 0), zk / safe, m.where(is_zero & m.eq(n_zero, 1), prod(safe, self.axis, keepdims=True), 0)
            )
            out = g * others
        else:
            hit = m.eq(x, zk)
            out = m.where(hit, g / sum(m.cast(hit, x.type.dtype), self.axis, keepdims=True), 0)
        return [pin_shape(m.cast(out, x.type.dtype), x)]

    def __str__(self):
        return f"{self.scalar_op}_reduce{{axis={list(self.axis)}}}"


@dataclass(frozen=True)
class Argmax(Op):
    """Position (int64) of the max (`mode="max"`) or min along one `axis`; first one on ties."""

    axis: int
    mode: str = "max"

    def make_node(self, x):
        x = as_tensor(x)
        if not 0 <= self.axis < x.type.ndim:
            raise ValueError(f"{self}: axis {self.axis} out of range for {x.type}")
        if x.type.shape[self.axis] == 0:
            raise ValueError(f"{self}: the axis {self.axis} of {x!r} is empty")
        return build(self, [x], ["int64"])

    def infer_shape(self, inputs, input_shapes):
        return [tuple(s for a, s in enumerate(input_shapes[0]) if a != self.axis)]

    def perform(self, node, inputs):
        fn = np.argmax if self.mode == "max" else np.argmin
        return [np.asarray(fn(inputs[0], axis=self.axis), dtype=np.int64)]

    def L_op(self, inputs, outputs, output_grads):
        """A position is piecewise constant in the values: no gradient flows to them."""
        return [None]


def _keep(x, out, axes, keepdims):
    if not keepdims:
        return out
    order, k = [], 0
    for a in range(x.type.ndim):
        if a in axes:
            order.append("x")
        else:
            order.append(k)
            k += 1
    return DimShuffle(out.type.ndim, tuple(order))(out)


def _reduce(name, x, axis, keepdims):
    x = as_tensor(x)
    axes = normalize_axis(axis, x.type.ndim)
    return _keep(x, CAReduce(name, axes)(x), axes, keepdims)


def sum(x, axis=None, keepdims=False):
    """Sum over `axis` (None: all), NumPy dtype rules."""
    return _reduce("add", x, axis, keepdims)


def prod(x, axis=None, keepdims=False):
    return _reduce("mul", x, axis, keepdims)


def max(x, axis=None, keepdims=False):
    return _reduce("maximum", x, axis, keepdims)


def min(x, axis=None, keepdims=False):
    return _reduce("minimum", x, axis, keepdims)


def all(x, axis=None, keepdims=False):
    x = as_tensor(x)
    if x.type.dtype != "bool":
        x = m.neq(x, 0)
    return _reduce("and", x, axis, keepdims)


def any(x, axis=None, keepdims=False):
    x = as_tensor(x)
    if x.type.dtype != "bool":
        x = m.neq(x, 0)
    return _reduce("or", x, axis, keepdims)


def count(x, axis):
    """Number of elements reduced by `axis` (an int, or a symbolic int64 scalar)."""
    shape = shape_of(x)
    return product(shape[a] for a in normalize_axis(axis, x.type.ndim))


def mean(x, axis=None, keepdims=False):
    """Arithmetic mean; ints give float64 (NumPy), float32 stays float32."""
    x = m.as_float(x)
    n = count(x, axis)
    if not isinstance(n, int):
        n = m.cast(n, x.type.dtype)
    return sum(x, axis, keepdims) / n


def var(x, axis=None, keepdims=False, ddof=0):
    """Variance with `ddof` degrees of freedom removed (default 0, as NumPy)."""
    x = m.as_float(x)
    dev = x - mean(x, axis, keepdims=True)
    n = count(x, axis)
    if isinstance(n, int):
        denom = builtins.max(n - ddof, 0)  # NumPy: ddof >= n gives 0 / 0 = nan (or inf), never a negative count
    else:
        denom = m.cast(m.maximum(n - ddof, 0), x.type.dtype)
    return sum(dev * dev, axis, keepdims) / denom


def std(x, axis=None, keepdims=False, ddof=0):
    return m.sqrt(var(x, axis, keepdims, ddof))


def logsumexp(x, axis=None, keepdims=False):
    """log(sum(exp(x))) computed with a max shift, finite where the naive form overflows."""
    x = m.as_float(x)
    axes = normalize_axis(axis, x.type.ndim)
    if builtins.any(x.type.shape[a] == 0 for a in axes):
        return m.log(sum(m.exp(x), axis, keepdims))  # nothing to overflow: -inf, and max has no value here
    # The shift cancels exactly, so no gradient flows through it: the gradient is softmax(x)
    # alone, without the max's tie-breaking path (three fewer kernels for a softmax model).
    top = m.stop_gradient(max(x, axis, keepdims=True))
    shift = m.where(m.isfinite(top), top, 0)
    out = m.log(sum(m.exp(x - shift), axis, keepdims=True)) + shift
    if keepdims:
        return out
    keep = tuple(a for a in range(x.type.ndim) if a not in axes)
    return DimShuffle(x.type.ndim, keep)(out)


def log_softmax(x, axis=None):
    """x - logsumexp(x) along `axis` (all axes for None, as scipy.special.log_softmax): finite where softmax underflows."""
    x = m.as_float(x)
    return x - logsumexp(x, axis, keepdims=True)


def softmax(x, axis=None):
    """exp(x) normalized to sum 1 along `axis` (all axes for None, as scipy.special.softmax), as exp(log_softmax)."""
    return m.exp(log_softmax(x, axis))


def _arg(mode, x, axis, keepdims):
    x = as_tensor(x)
    if axis is None:
        out = Argmax(0, mode)(reshape(x, (-1,)))
        return reshape(out, (1,) * x.type.ndim) if keepdims else out  # NumPy keeps every axis, as size 1
    (a,) = normalize_axis(axis, x.type.ndim)
    return _keep(x, Argmax(a, mode)(x), (a,), keepdims)


def argmax(x, axis=None, keepdims=False):
    """Index of the first maximum along `axis` (None: of the flattened array), int64."""
    return _arg("max", x, axis, keepdims)


def argmin(x, axis=None, keepdims=False):
    return _arg("min", x, axis, keepdims)


def sum_to(g, like):
    """`g` summed over the axes broadcasting added or stretched to reach it from `like`, in `like`'s dtype.

    Leading axes `like` lacks are summed away; axes where `like` has static
    size 1 and `g` does not are summed with keepdims (only static size 1
    broadcasts, so no other axis can have been stretched).

    >>> import dimgraph as dg, numpy as np
    >>> v = dg.tensor("v", shape=(1, 3))
    >>> sum_to(dg.core.ones((4, 2, 3)), v).eval().tolist()
    [[8.0, 8.0, 8.0]]
    """
    extra = g.type.ndim - like.type.ndim
    if extra > 0:
        g = sum(g, axis=tuple(range(extra)))
    axes = tuple(k for k, s in enumerate(like.type.shape) if s == 1 and g.type.shape[k] != 1)
    if axes:
        g = sum(g, axis=axes, keepdims=True)
    return pin_shape(m.cast(g, like.type.dtype), like)
