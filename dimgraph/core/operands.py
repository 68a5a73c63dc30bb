"""How symbolic variables meet NumPy: ufunc dispatch (NEP 13) and operator deferral by priority.

`np.exp(x)` on a dimgraph variable builds the graph `dg.exp(x)` would build
(xarray's choice: NumPy ufuncs on a DataArray give a DataArray), for the ufuncs
that have a scalar op; any other ufunc, a ufunc method (`np.add.reduce`) or
keyword (`out=`) is a TypeError that names the dimgraph spelling. Operators and
ufuncs defer to an operand of higher `__array_priority__` (NumPy's own rule):
labeled variables outrank positional ones, so `dg.scalar("s") * m` is handled
by the labeled side in either order. An `xarray.DataArray` operand of a positional
operation hands the operation to the labeled layer (its dims are kept, and the
labeled rule for positional operands applies); the labeled layer registers its
`elemwise` and `dot` here when imported, as core cannot import it.
"""

from __future__ import annotations

import sys

import numpy as np

LABELED = {}  # set by dimgraph.labeled: "elemwise" (name, *operands) and "dot" (a, b) over labeled operands

# NumPy ufunc name -> dimgraph scalar op name (the same name where they agree).
UFUNC_OPS = {
    "add": "add", "subtract": "sub", "multiply": "mul", "divide": "true_div", "true_divide": "true_div",
    "floor_divide": "floor_div", "remainder": "mod", "power": "pow", "negative": "neg", "absolute": "abs",
    "equal": "eq", "not_equal": "neq", "less": "lt", "less_equal": "le", "greater": "gt", "greater_equal": "ge",
    "bitwise_and": "and", "bitwise_or": "or", "bitwise_xor": "xor", "invert": "invert",
    "maximum": "maximum", "minimum": "minimum", "logaddexp": "logaddexp", "arctan2": "arctan2",
    "reciprocal": "reciprocal",
    **{name: name for name in [
        "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "square", "sin", "cos", "tan",
        "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "isnan", "isfinite", "isinf", "floor", "ceil",
        "trunc", "sign",
    ]},
}  # fmt: skip


def outranked(self, operands) -> bool:
    """Whether an operand has a higher `__array_priority__` than `self`, so it should handle the operation."""
    mine = type(self).__array_priority__
    return any(getattr(o, "__array_priority__", mine) > mine for o in operands)


def is_dataarray(x) -> bool:
    return type(x).__name__ == "DataArray" and hasattr(x, "dims") and hasattr(x, "indexes")


def hands_to_labeled(args) -> bool:
    """Whether a positional operation over `args` belongs to the labeled layer (a DataArray is among them)."""
    return bool(LABELED) and any(is_dataarray(a) for a in args)


def inside_xarray_operator() -> bool:
    """Whether an xarray binary operator is on the call stack (asked only before an error or an n-d ufunc operand)."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == "_binary_op" and frame.f_globals.get("__name__", "").startswith("xarray."):
            return True
        frame = frame.f_back
    return False


def dataarray_on_the_left(what) -> TypeError:
    """The error for `da <op> x`: xarray passes dimgraph the DataArray's bare data, its dims lost."""
    return TypeError(
        f"{what}: an xarray.DataArray left of a dimgraph variable reaches dimgraph as bare data, because "
        "xarray's operators do not hand over to other array types (pydata/xarray#9944); write "
        "dg.as_labeled(da) <op> x, or put the dimgraph variable first"
    )


def array_ufunc(self, ufunc, method, inputs, kwargs, elemwise):
    """NEP 13 `__array_ufunc__` for a variable class: `elemwise(op_name, *inputs)` or a pointed TypeError."""
    if outranked(self, inputs):
        return NotImplemented
    name = ufunc.__name__
    if method != "__call__":
        raise TypeError(
            f"numpy.{name}.{method} does not apply to symbolic dimgraph variables; use their methods "
            "(x.sum(...), x.cumsum(...), ...) or the dg functions"
        )
    if kwargs:
        raise TypeError(
            f"numpy.{name}(..., {', '.join(f'{k}=' for k in kwargs)}) on symbolic dimgraph variables: keyword "
            f"arguments are not supported; call dg.{name}(...) or use .astype for a dtype"
        )
    if any(type(a) is np.ndarray and a.ndim for a in inputs) and inside_xarray_operator():
        raise dataarray_on_the_left(name)
    op = UFUNC_OPS.get(name)
    if op is None:
        raise TypeError(
            f"numpy.{name} has no dimgraph counterpart for symbolic variables; build the value from the dg "
            f"functions (dg.exp, dg.where, ...), or compile the graph and apply numpy.{name} to the results"
        )
    return elemwise(op, *inputs)


def no_array(self, dtype=None, copy=None):
    """`__array__` of a symbolic variable: a TypeError saying where its values come from.

    Without it NumPy would wrap the variable in a 0-d object array, and `np.where(x > 0, x, 0)`
    or `xarray.DataArray(x)` would fail far from the cause.
    """
    raise TypeError(
        f"{self!r} is a symbolic dimgraph variable: it has values only once compiled and called "
        "(dg.function, x.eval); NumPy ufuncs build graphs from it, other NumPy functions have dimgraph "
        "spellings (dg.where, x.sum(...), dg.concat, ...)"
    )


def deferring(method):
    """`method` returning NotImplemented when the other operand outranks `self` (Python then asks it)."""

    def binary(self, other):
        if outranked(self, (other,)):
            return NotImplemented
        return method(self, other)

    binary.__name__, binary.__doc__ = method.__name__, method.__doc__
    return binary


BINARY_OPERATORS = [
    f"__{r}{name}__"
    for name in ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "matmul"]
    for r in ("", "r")
] + ["__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__"]
