"""Labeled math: elementwise functions, where/clip/astype, reductions and scans over named dims.

Operands broadcast by dim name, result dims in order of first appearance
(xarray). Dtypes follow NumPy 2, with Python scalars weak (NEP 50): they take
the dtype the other operands promote to. The top-level `dg.exp`, `dg.where`, ...
(`dispatching`) accept labeled and positional variables alike.
"""

from __future__ import annotations

import inspect

import numpy as np

from dimgraph.core import math as core_math
from dimgraph.core import operands as core_operands
from dimgraph.core import reduce as core_reduce
from dimgraph.core.basic import is_python_scalar
from dimgraph.core.graph import Variable
from dimgraph.core.scalar import PUBLIC_NAMES, Cast, ScalarOp
from dimgraph.errors import DimError
from dimgraph.labeled.basic import as_labeled, constant, from_positional, is_dataarray
from dimgraph.labeled.dims import resolve_dims
from dimgraph.labeled.ops import LabeledCumulative, LabeledDiff, LabeledElemwise, LabeledReduce, is_labeled


def as_operand(x, what="operand"):
    """A labeled variable for a non-scalar operand: labeled, DataArray, 0-d positional or 0-d data."""
    if is_labeled(x):
        return x
    if is_dataarray(x):
        return as_labeled(x)
    if isinstance(x, Variable):
        if x.type.ndim == 0:
            return from_positional(x, ())
        raise TypeError(
            f"{what}: cannot combine a positional tensor with {x.type.ndim} axes ({x!r}) with labeled variables; "
            "give it dims with dg.from_positional(t, dims)"
        )
    arr = np.asarray(x)
    if arr.ndim == 0:
        return constant(arr)
    if core_operands.inside_xarray_operator():
        raise core_operands.dataarray_on_the_left(what)
    raise TypeError(f"{what}: an array with shape {arr.shape} has no dims; use dg.constant(value, dims=...)")


# NumPy 2 computes these exactly for a Python int outside the other operand's integer dtype
# (`int8_x > 300`, `uint8_x / -1`); other ops raise OverflowError there, as NumPy does.
_EXACT_FOR_ANY_INT = {"eq", "neq", "lt", "le", "gt", "ge", "true_div"}


def _weak_scalar(a, strong, what):
    """A Python scalar as a constant of the dtype NEP 50 gives it against the `strong` dtypes."""
    dtype = np.result_type(*strong, a) if strong else None
    try:
        return constant(np.asarray(a, dtype=dtype))
    except OverflowError:
        if what not in _EXACT_FOR_ANY_INT:
            raise OverflowError(
                f"{what}: the Python integer {a} is out of bounds for {dtype} (NumPy 2, NEP 50)"
            ) from None
        return constant(np.asarray(a))


def operands(args, what):
    """Labeled variables for `args`; Python scalars typed by NEP 50 against the others."""
    converted = [a if is_python_scalar(a) else as_operand(a, what) for a in args]
    strong = [v.type.dtype for v in converted if not is_python_scalar(v)]
    return [_weak_scalar(a, strong, what) if is_python_scalar(a) else a for a in converted]


def elemwise(name, *args):
    """Scalar op `name` over labeled operands, broadcast by dim name."""
    op = name if isinstance(name, ScalarOp) else ScalarOp(name)
    return LabeledElemwise(op)(*operands(args, str(op)))


def any_labeled(args) -> bool:
    return any(is_labeled(a) or is_dataarray(a) for a in args)


def _dispatching(spec, public):
    """`dg.<public>`: the row's op on labeled operands by dim name, else the positional function."""
    core_fn = core_math.FUNCTIONS[public]
    signature = inspect.signature(core_fn)

    def fn(*args, **kwargs):
        args = signature.bind(*args, **kwargs).args
        if any_labeled(args):
            return elemwise(spec.name, *args)
        return core_fn(*args)

    fn.__name__ = fn.__qualname__ = public
    fn.__module__ = __name__
    fn.__signature__ = signature
    what = f"`{spec.name}`" + (f" ({spec.doc})" if spec.doc else "")
    fn.__doc__ = (
        f"Elementwise {what}: on labeled variables broadcast by dim name (xarray), on positional ones by NumPy's rules."
    )
    return fn


# Every public scalar op as a function of labeled or positional operands; `TOP_LEVEL` is what `dg` exports.
DISPATCHING = {public: _dispatching(spec, public) for public, spec in PUBLIC_NAMES.items()}
TOP_LEVEL = {public: DISPATCHING[public] for public, spec in PUBLIC_NAMES.items() if spec.top_level}
globals().update(TOP_LEVEL)


def where(cond, a, b):
    """`a` where `cond` holds, else `b` (as `xarray.where`: dims in order cond, a, b).

    >>> import dimgraph as dg
    >>> x = dg.labeled("x", dims=(dg.Dim("i", size=3),))
    >>> dg.where(x > 0, x, 0).dims
    (Dim('i', size=3),)
    """
    if any_labeled((cond, a, b)):
        return elemwise("where", cond, a, b)
    return core_math.where(cond, a, b)


def clip(x, lower=None, upper=None):
    """`x` limited to [lower, upper]; None leaves a side open (dims in order x, lower, upper)."""
    if not any_labeled((x, lower, upper)):
        return core_math.clip(x, lower, upper)
    x = as_operand(x, "clip")
    if np.dtype(x.type.dtype).kind in "iu":  # as np.clip: a Python int bound beyond the dtype's range clips nothing
        info = np.iinfo(x.type.dtype)
        lower = None if isinstance(lower, int) and lower < info.min else lower
        upper = None if isinstance(upper, int) and upper > info.max else upper
    if lower is not None:
        x = elemwise("maximum", x, lower)
    if upper is not None:
        x = elemwise("minimum", x, upper)
    return x


def round(x, decimals=0):
    """Round half to even (as `np.round`); `decimals` shifts the rounding position.

    Integers keep their dtype (as NumPy): unchanged for `decimals >= 0`, else
    rounded to a multiple of `10**-decimals`.
    """
    if not any_labeled((x,)):
        return core_math.round(x, decimals)
    x = as_operand(x, "round")
    if decimals == 0:
        return elemwise("round", x)
    if np.dtype(x.type.dtype).kind in "iu":
        if decimals > 0:
            return x
        scale = 10 ** (-decimals)
        return astype(
            elemwise("mul", elemwise("round", elemwise("true_div", x, float(scale))), float(scale)), x.type.dtype
        )
    scale = 10.0**decimals
    return elemwise("true_div", elemwise("round", elemwise("mul", x, scale)), scale)


def astype(x, dtype):
    """`x` converted to `dtype` (unsafe casting, as `astype`)."""
    x = as_operand(x, "astype")
    if x.type.dtype == np.dtype(dtype).name:
        return x
    return LabeledElemwise(Cast(dtype=dtype))(x)


# The default of `skipna` is NumPy's rule, NaNs propagate, where xarray's (None) skips them in float
# data. Deliberately: a log-density that turns NaN must not sum to a finite number behind the
# modeler's back, and the NaN-skipping forms cost extra passes (max 8x, std 16x measured on numba).
# `skipna=True` gives xarray's results.
SKIPNA_DEFAULT = False
SKIPNA_KINDS = ("sum", "prod", "mean", "max", "min", "var", "std", "argmax", "argmin")


def _skipna(skipna, kind, x) -> bool:
    """Whether `kind` of `x` leaves NaNs out: xarray's rule, for float data only (other dtypes have none)."""
    if skipna is None:
        skipna = SKIPNA_DEFAULT
    return bool(skipna) and kind in SKIPNA_KINDS and np.dtype(x.type.dtype).kind in "fc"


def reduce(kind, x, dim=None, ddof=0, skipna=None):
    """Reduction `kind` of `x` over `dim` (a Dim, a name, a list of them; None or `...`: all dims).

    `skipna=True` leaves NaNs out of float reductions (NumPy's nan-functions, as
    xarray): an all-NaN sum is 0, an all-NaN mean/max/var NaN.
    """
    x = as_operand(x, kind)
    if kind in ("argmax", "argmin"):
        return _arg_reduce(kind, x, dim, _skipna(skipna, kind, x))
    dims = resolve_dims(x.type.dims, None if dim is Ellipsis else dim, kind, x.name or "the variable")
    if dim is not None and dim is not Ellipsis and not dims and kind in ("sum", "prod", "mean", "max", "min"):
        return x  # xarray: an explicit empty list of dims reduces nothing and keeps the dtype
    return LabeledReduce(kind, dims, ddof, _skipna(skipna, kind, x))(x)


def _arg_reduce(kind, x, dim, skipna=False):
    """`argmax`/`argmin` as xarray: one dim gives the positions along it; a list or `...` gives a dict.

    The dict maps each reduced dim (in x's dim order) to the position along it of the
    extremum over all of them jointly (xarray's unravelled indices): the dims are
    stacked, reduced once, and the flat position is split by the dims' sizes.
    """
    label = x.name or "the variable"
    if dim is None:
        if x.type.ndim == 0:  # xarray: the only position of a 0-d array
            from dimgraph.labeled.shape import full_like

            return full_like(x, 0, "int64")
        if x.type.ndim != 1:
            raise DimError(
                f"{kind}: give `dim` for a variable with dims {x.type.names} (a dim, a list of dims or `...`)"
            )
        return LabeledReduce(kind, x.type.dims, 0, skipna)(x)
    if dim is not Ellipsis and not isinstance(dim, (list, tuple)):
        return LabeledReduce(kind, resolve_dims(x.type.dims, dim, kind, label), 0, skipna)(x)
    named = resolve_dims(x.type.dims, None if dim is Ellipsis else dim, kind, label)
    dims = tuple(d for d in x.type.dims if d in named)
    if len(dims) <= 1:
        return {d.name: LabeledReduce(kind, (d,), 0, skipna)(x) for d in dims}
    from dimgraph.labeled.stacking import stack

    joined = "_".join(["", kind, *x.type.names])
    stacked = stack(x, {joined: dims})
    flat = LabeledReduce(kind, stacked.type.dims[-1:], 0, skipna)(stacked)
    sizes = x.sizes
    out = {}
    for d in reversed(dims[1:]):
        out[d.name] = flat % sizes[d.name]
        flat = flat // sizes[d.name]
    out[dims[0].name] = flat
    return {d.name: out[d.name] for d in dims}


def logsumexp(x, dim=None, axis=None, keepdims=False):
    """log(sum(exp(x))) over `dim` (labeled) or `axis` (positional), stable against overflow.

    >>> import dimgraph as dg, numpy as np
    >>> i = dg.Dim("i", size=2)
    >>> float(dg.logsumexp(dg.constant(np.array([1000.0, 1000.0]), (i,)), "i").eval())
    1000.6931471805599
    """
    if any_labeled((x,)):
        return reduce("logsumexp", x, dim)
    return core_reduce.logsumexp(x, axis=axis if axis is not None else dim, keepdims=keepdims)


def cumulative(mode, x, dim, skipna=None):
    """Cumulative sum/product along `dim`; a list, None or `...` scans the dims one after another (xarray).

    `skipna=True`: NaNs of float data count as 0 (sum) or 1 (product), as xarray.
    """
    x = as_operand(x, "cumsum")
    what = "cumsum" if mode == "add" else "cumprod"
    dims = resolve_dims(x.type.dims, None if dim is Ellipsis else dim, what, x.name or "the variable")
    skip = _skipna(skipna, "sum", x)
    for d in dims:
        x = LabeledCumulative(mode, d, skip)(x)
    return x


def diff(x, dim, n=1, label="upper"):
    """n-th difference along `dim`; the result keeps xarray's upper labels (`label="lower"`: the lower ones)."""
    x = as_operand(x, "diff")
    (d,) = resolve_dims(x.type.dims, dim, "diff", x.name or "the variable")
    return LabeledDiff(d, int(n), label)(x)


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (also at y == -1)."""
    return where(x == 0, 0.0, x * elemwise("log1p", where(x == 0, 0.0, y)))


def softmax(x, dim=None, axis=None):
    """exp(x) normalized to sum 1 over `dim` (stable: computed as exp(log_softmax)); positional tensors take
    `axis` as scipy.special.softmax.

    >>> import dimgraph as dg, numpy as np
    >>> k = dg.Dim("k", size=2)
    >>> dg.softmax(dg.constant(np.array([0.0, 1000.0]), dims=(k,)), k).eval().values.tolist()
    [0.0, 1.0]
    """
    if not any_labeled((x,)):
        return core_reduce.softmax(x, axis=axis if axis is not None else dim)
    return elemwise("exp", log_softmax(x, dim))


def log_softmax(x, dim=None, axis=None):
    """x - logsumexp(x) over `dim`: the log of the softmax, finite where softmax underflows; positional
    tensors take `axis` as scipy.special.log_softmax.

    >>> import dimgraph as dg, numpy as np
    >>> k = dg.Dim("k", size=2)
    >>> dg.log_softmax(dg.constant(np.array([0.0, 1000.0]), dims=(k,)), "k").eval().values.tolist()
    [-1000.0, 0.0]
    >>> x = dg.tensor("x", shape=(2,))
    >>> dg.function([x], dg.log_softmax(x, axis=0))(np.array([0.0, 1000.0])).tolist()
    [-1000.0, 0.0]
    """
    if not any_labeled((x,)):
        return core_reduce.log_softmax(x, axis=axis if axis is not None else dim)
    x = as_operand(x, "log_softmax")
    (dim,) = resolve_dims(x.dims, dim, "log_softmax")
    return (x - logsumexp(x, dim)).transpose(*x.dims)
