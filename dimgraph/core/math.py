"""User-facing positional math: NumPy-style broadcasting and NEP 50 promotion onto Elemwise.

Python scalars are "weak" (NEP 50): they take the dtype the other operands
promote to, so `float32_x + 1.0` stays float32 and `int32_x / 2` is float64.
Inputs of lower ndim get leading length-1 axes (NumPy's rule) through DimShuffle.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.basic import as_tensor, constant, is_python_scalar
from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.graph import Variable
from dimgraph.core.scalar import Cast, ScalarOp


def _as_operands(args):
    """Variables for `args`, Python scalars typed by NEP 50 against the other operands."""
    strong = []
    for a in args:
        if isinstance(a, Variable):
            strong.append(as_tensor(a).type.dtype)
        elif not is_python_scalar(a):
            strong.append(np.asarray(a).dtype)
    out = []
    for a in args:
        if is_python_scalar(a):
            dtype = np.result_type(*strong, a) if strong else np.asarray(a).dtype
            out.append(constant(a, dtype=dtype))
        else:
            out.append(as_tensor(a))
    return out


def pad_ndim(x, ndim):
    """`x` with leading length-1 axes up to `ndim` (NumPy broadcasting's alignment)."""
    if x.type.ndim == ndim:
        return x
    missing = ndim - x.type.ndim
    return DimShuffle(x.type.ndim, ("x",) * missing + tuple(range(x.type.ndim)))(x)


def elemwise(name, *args):
    """Apply scalar op `name` elementwise with NumPy broadcasting."""
    xs = _as_operands(args)
    ndim = max(x.type.ndim for x in xs)
    return Elemwise(ScalarOp(name))(*[pad_ndim(x, ndim) for x in xs])


def _unary(name):
    def fn(x):
        return elemwise(name, x)

    fn.__name__ = name
    fn.__doc__ = f"Elementwise `{name}` (NumPy semantics and dtype rules)."
    return fn


def _binary(name):
    def fn(x, y):
        return elemwise(name, x, y)

    fn.__name__ = name
    fn.__doc__ = f"Elementwise `{name}` with NumPy broadcasting and dtype promotion."
    return fn


exp, exp2, log, log2, log10, log1p, expm1, sqrt, square = map(
    _unary, ["exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "square"]
)
sin, cos, tan, arcsin, arccos, arctan, sinh, cosh, tanh = map(
    _unary, ["sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh"]
)
sigmoid, softplus, erf, erfc, gammaln, digamma, trigamma = map(
    _unary, ["sigmoid", "softplus", "erf", "erfc", "gammaln", "digamma", "trigamma"]
)
isnan, isfinite, isinf, floor, ceil, trunc, sign, neg, invert, reciprocal = map(
    _unary, ["isnan", "isfinite", "isinf", "floor", "ceil", "trunc", "sign", "neg", "invert", "reciprocal"]
)
abs = _unary("abs")
add, sub, mul, true_div, floor_div, mod, pow = map(
    _binary, ["add", "sub", "mul", "true_div", "floor_div", "mod", "pow"]
)
eq, neq, lt, le, gt, ge = map(_binary, ["eq", "neq", "lt", "le", "gt", "ge"])
bitwise_and, bitwise_or, bitwise_xor = map(_binary, ["and", "or", "xor"])
maximum, minimum, logaddexp, arctan2 = map(_binary, ["maximum", "minimum", "logaddexp", "arctan2"])


def round(x, decimals=0):
    """Round half to even, as `np.round`; `decimals` shifts the rounding position."""
    if decimals == 0:
        return elemwise("round", x)
    scale = 10.0**decimals
    return elemwise("round", x * scale) / scale


def where(cond, a, b):
    """`a` where `cond` is true, else `b` (NumPy broadcasting over all three)."""
    return elemwise("where", cond, a, b)


def clip(x, lower=None, upper=None):
    """`x` limited to [lower, upper]; None leaves that side open (as np.clip)."""
    if lower is not None:
        x = maximum(x, lower)
    if upper is not None:
        x = minimum(x, upper)
    return x


def cast(x, dtype):
    """`x` converted to `dtype` (as `astype`: unsafe casting); a no-op graph when equal."""
    x = as_tensor(x)
    if x.type.dtype == np.dtype(dtype).name:
        return x
    return Elemwise(Cast(dtype=dtype))(x)


def as_float(x):
    """`x` if floating, else cast to float64 (the dtype NumPy gives mean/var of ints)."""
    x = as_tensor(x)
    return x if np.dtype(x.type.dtype).kind in "fc" else cast(x, "float64")
