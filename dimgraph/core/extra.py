"""Scans and odds and ends: `CumOp` (cumsum/cumprod), `diff`, `ARange`, and the run-time `Assert`.

`diff` is a graph of subtensors (so rewrites and gradients see through it).
`Assert` is the one way a graph checks a run-time condition: rewrites may not
drop it unless the condition is proved statically.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from dimgraph.core.basic import as_tensor, constant, is_float, is_python_scalar
from dimgraph.core.graph import Constant, Op
from dimgraph.core.math import cast, ceil, eq, maximum, neq, where
from dimgraph.core.reduce import all as reduce_all
from dimgraph.core.reduce import sum as reduce_sum
from dimgraph.core.shape import build, normalize_axis, shape_of
from dimgraph.core.shape_ops import reshape
from dimgraph.core.subtensor import getitem

_CUM = {"add": np.cumsum, "mul": np.cumprod}


@dataclass(frozen=True)
class CumOp(Op):
    """Cumulative sum (`mode="add"`) or product (`mode="mul"`) along `axis`; dtypes as `np.cumsum`."""

    axis: int
    mode: Literal["add", "mul"] = "add"

    def __post_init__(self):
        if self.mode not in _CUM:
            raise ValueError(f"CumOp: mode must be 'add' or 'mul', got {self.mode!r}")

    def make_node(self, x):
        x = as_tensor(x)
        if not 0 <= self.axis < x.type.ndim:
            raise ValueError(f"{self}: axis {self.axis} is out of range for {x!r}")
        dtype = _CUM[self.mode](np.zeros(1, dtype=x.type.dtype)).dtype.name
        return build(self, [x], [dtype])

    def infer_shape(self, inputs, input_shapes):
        return [input_shapes[0]]

    def perform(self, node, inputs):
        out = _CUM[self.mode](inputs[0], axis=self.axis)
        return [np.asarray(out, dtype=node.outputs[0].type.dtype)]

    def L_op(self, inputs, outputs, output_grads):
        """cumsum: the reversed cumulative sum of the gradient. cumprod: `revcumsum(g * y) / x`, made
        exact where x has zeros; integer inputs get None.

        With z the first zero of a row: before z the division is safe (and y is 0 from z on, so the
        sum stops there); at z the gradient is `revcumsum(g * y')` with y' the cumprod of x whose
        zero at z is replaced by 1; after z every product contains x[z], so it is 0.
        """
        (x,), (y,), (g,) = inputs, outputs, output_grads
        if not is_float(x):
            return [None]
        if self.mode == "add":
            return [self._reverse_cumsum(g).astype(x.type.dtype)]
        zeros_so_far = CumOp(self.axis, "add")(eq(x, 0))
        before = eq(zeros_so_far, 0)
        first_zero = eq(zeros_so_far, 1) & eq(x, 0)
        y_skip = CumOp(self.axis, "mul")(where(first_zero, 1, x))
        gx = where(
            before,
            self._reverse_cumsum(g * y) / where(before, x, 1),
            where(first_zero, self._reverse_cumsum(g * y_skip), 0),
        )
        return [gx.astype(x.type.dtype)]

    def _reverse_cumsum(self, g):
        flip = (slice(None),) * self.axis + (slice(None, None, -1),)
        return getitem(CumOp(self.axis, "add")(getitem(g, flip)), flip)

    def __str__(self):
        return f"Cum{'sum' if self.mode == 'add' else 'prod'}{{axis={self.axis}}}"


def _cum(mode, x, axis):
    x = as_tensor(x)
    if axis is None:
        x, axis = reshape(x, (-1,)), 0
    (axis,) = normalize_axis(axis, x.type.ndim)
    return CumOp(axis, mode)(x)


def cumsum(x, axis=None):
    """Cumulative sum along `axis` (None: of the flattened array), dtypes as `np.cumsum`.

    >>> import dimgraph as dg, numpy as np
    >>> dg.core.cumsum(np.array([[1, 2], [3, 4]], dtype="int8")).eval().tolist()
    [1, 3, 6, 10]
    """
    return _cum("add", x, axis)


def cumprod(x, axis=None):
    """Cumulative product along `axis` (None: of the flattened array), dtypes as `np.cumprod`."""
    return _cum("mul", x, axis)


def diff(x, n=1, axis=-1):
    """n-th discrete difference along `axis`, as `np.diff` (booleans give `!=`).

    >>> import dimgraph as dg, numpy as np
    >>> dg.core.diff(np.array([1.0, 4.0, 9.0])).eval().tolist()
    [3.0, 5.0]
    """
    x = as_tensor(x)
    if n < 0:
        raise ValueError(f"diff: order must be non-negative but got {n}")
    if x.type.ndim == 0:
        raise ValueError("diff requires input that is at least one dimensional")
    (axis,) = normalize_axis(axis, x.type.ndim)
    upper = tuple(slice(1, None) if a == axis else slice(None) for a in range(x.type.ndim))
    lower = tuple(slice(None, -1) if a == axis else slice(None) for a in range(x.type.ndim))
    for _ in range(n):
        a, b = getitem(x, upper), getitem(x, lower)
        x = neq(a, b) if x.type.dtype == "bool" else a - b
    return x


@dataclass(frozen=True)
class ARange(Op):
    """`np.arange(start, stop, step)` of `dtype` from three 0-d inputs; static length when they are constants."""

    dtype: str

    def __post_init__(self):
        object.__setattr__(self, "dtype", np.dtype(self.dtype).name)

    def make_node(self, start, stop, step):
        inputs = [as_tensor(v) for v in (start, stop, step)]
        for v in inputs:
            if v.type.ndim != 0 or np.dtype(v.type.dtype).kind not in "buif":
                raise TypeError(f"{self}: start, stop and step must be 0-d real numbers, got {v!r}")
        if isinstance(inputs[2], Constant) and inputs[2].data == 0:
            raise ValueError(f"{self}: step must not be zero")
        return build(self, inputs, [self.dtype])

    def infer_shape(self, inputs, input_shapes):
        start, stop, step = inputs
        if all(isinstance(v, Constant) for v in inputs):
            return [(len(np.arange(start.data, stop.data, step.data)),)]
        as_f = [cast(v, "float64") for v in inputs]
        length = cast(ceil((as_f[1] - as_f[0]) / as_f[2]), "int64")
        return [(maximum(length, 0),)]

    def perform(self, node, inputs):
        start, stop, step = (v.item() for v in inputs)
        return [np.arange(start, stop, step, dtype=self.dtype)]

    def L_op(self, inputs, outputs, output_grads):
        """out[i] = start + i * step: start gets sum(g), step gets sum(g * i). stop only sets the
        length (a step function of it), so no gradient flows to it (None), nor to integer inputs."""
        start, stop, step = inputs
        (g,) = output_grads
        if not is_float(outputs[0]):
            return [None, None, None]
        positions = arange(0, shape_of(outputs[0])[0], 1, dtype=g.type.dtype)
        gstart = reduce_sum(g).astype(start.type.dtype) if is_float(start) else None
        gstep = reduce_sum(g * positions).astype(step.type.dtype) if is_float(step) else None
        return [gstart, None, gstep]


def arange(start, stop=None, step=1, dtype=None):
    """Evenly spaced values in [start, stop), as `np.arange` (int64, or float64 when any argument is a float).

    >>> import dimgraph as dg
    >>> r = dg.core.arange(2, 11, 3)
    >>> r.type.shape, r.eval().tolist()
    ((3,), [2, 5, 8])
    """
    if stop is None:
        start, stop = 0, start
    args = [start, stop, step]
    if dtype is None:
        # np.arange converts its arguments to Python numbers: int64 unless one is a float
        kinds = {type(a).__name__ if is_python_scalar(a) else np.dtype(as_tensor(a).type.dtype).kind for a in args}
        dtype = "float64" if kinds & {"float", "f"} else "int64"
    inputs = []
    for a in args:
        if is_python_scalar(a):
            a = constant(a)
        inputs.append(as_tensor(a))
    return ARange(dtype)(*inputs)


@dataclass(frozen=True)
class Assert(Op):
    """Passes its first input through; raises `error(message)` when any condition is false at run time.

    `error` is AssertionError by default; checks of what the user gave (a step
    count against a sequence's length) raise the library's own `ShapeError`.
    """

    message: str = "assertion failed"
    error: type = AssertionError

    def __post_init__(self):
        if not (isinstance(self.error, type) and issubclass(self.error, Exception)):
            raise TypeError(f"Assert: error must be an exception class, got {self.error!r}")

    def make_node(self, value, *conds):
        value = as_tensor(value)
        conds = [as_tensor(c) for c in conds]
        for c in conds:
            if c.type.ndim != 0:
                raise TypeError(f"{self}: conditions must be 0-d, got {c!r}")
        return build(self, [value, *conds], [value.type.dtype])

    def infer_shape(self, inputs, input_shapes):
        return [input_shapes[0]]

    def perform(self, node, inputs):
        value, *conds = inputs
        if not all(bool(c) for c in conds):
            raise self.error(self.message)
        return [value]

    def L_op(self, inputs, outputs, output_grads):
        """The gradient passes to the checked value unchanged (the check stays in the forward graph)."""
        return [output_grads[0] if is_float(inputs[0]) else None] + [None] * (len(inputs) - 1)


def assert_op(x, *conds, msg="assertion failed", error=AssertionError):
    """`x`, checked at run time: evaluating it raises `error(msg)` (AssertionError by default) unless every condition holds.

    Non-scalar conditions are reduced with `all`.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(None,))
    >>> y = dg.core.assert_op(x, (x >= 0).all(), msg="x must be non-negative")
    >>> y.eval({x: np.ones(2)}).tolist()
    [1.0, 1.0]
    """
    conds = [as_tensor(c) for c in conds]
    conds = [c if c.type.ndim == 0 else reduce_all(c) for c in conds]
    return Assert(msg, error)(x, *conds)
