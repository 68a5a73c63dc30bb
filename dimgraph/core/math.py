"""User-facing positional math: NumPy-style broadcasting and NEP 50 promotion onto Elemwise.

Python scalars are "weak" (NEP 50): they take the dtype the other operands
promote to, so `float32_x + 1.0` stays float32 and `int32_x / 2` is float64.
Inputs of lower ndim get leading length-1 axes (NumPy's rule) through DimShuffle.
"""

from __future__ import annotations

import inspect

import numpy as np

from dimgraph.core import operands
from dimgraph.core.basic import as_tensor, constant, is_python_scalar
from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.graph import Variable
from dimgraph.core.scalar import PUBLIC_NAMES, Cast, ScalarOp


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
    """Apply scalar op `name` elementwise with NumPy broadcasting (a DataArray operand: by dim name)."""
    if operands.hands_to_labeled(args):
        return operands.LABELED["elemwise"](name, *args)
    xs = _as_operands(args)
    ndim = max(x.type.ndim for x in xs)
    return Elemwise(ScalarOp(name))(*[pad_ndim(x, ndim) for x in xs])


def _builder(spec, public):
    """The positional function `dg.core.<public>` of a scalar-op row, with the row's argument names."""
    params = [inspect.Parameter(p, inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in spec.arg_names]
    signature = inspect.Signature(params)

    def fn(*args, **kwargs):
        return elemwise(spec.name, *signature.bind(*args, **kwargs).args)

    fn.__name__ = fn.__qualname__ = public
    fn.__module__ = __name__
    fn.__signature__ = signature
    what = f"`{spec.name}`" + (f": {spec.doc}" if spec.doc else "")
    fn.__doc__ = f"Elementwise {what} (NumPy broadcasting and dtype rules)."
    return fn


# `dg.core.exp`, `dg.core.bitwise_and`, ...: one function per public name (and alias) of a row.
FUNCTIONS = {public: _builder(spec, public) for public, spec in PUBLIC_NAMES.items()}
globals().update(FUNCTIONS)


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
        x = elemwise("maximum", x, lower)
    if upper is not None:
        x = elemwise("minimum", x, upper)
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


__all__ = sorted([*FUNCTIONS, "elemwise", "pad_ndim", "round", "where", "clip", "cast", "as_float"])
