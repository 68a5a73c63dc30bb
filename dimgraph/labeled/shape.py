"""Labeled shape ops: transpose, rename, expand_dims, squeeze, broadcasting, `*_like`, `arange`, `to_positional`.

xarray's semantics: `transpose()` reverses and `...` stands for the dims not
named; `expand_dims` puts new dims first; `broadcast_like` puts the other's
dims first; `dg.broadcast` gives every result the dims of all inputs in order
of first appearance.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core import shape_ops as core_shape
from dimgraph.core.extra import arange as core_arange
from dimgraph.core.graph import Constant, Variable
from dimgraph.errors import DimError
from dimgraph.labeled.dims import Dim, as_dim_tuple, fmt_dims, resolve_dims, unify_dims
from dimgraph.labeled.math import any_labeled, as_operand, astype
from dimgraph.labeled.ops import (
    Arange,
    BroadcastTo,
    ExpandDims,
    FullLike,
    Relabel,
    Squeeze,
    ToPositional,
    Transpose,
)


def transpose(x, *dims):
    """`x` with dims in the given order; `...` stands for the others in their order; no dims: reversed."""
    x = as_operand(x, "transpose")
    if len(dims) == 1 and isinstance(dims[0], (list, tuple)):
        dims = tuple(dims[0])
    if not dims:
        order = tuple(reversed(x.type.dims))
    else:
        if sum(d is Ellipsis for d in dims) > 1:
            raise DimError("transpose: `...` may appear only once")
        named = resolve_dims(x.type.dims, [d for d in dims if d is not Ellipsis], "transpose", x.name or "the variable")
        rest = tuple(d for d in x.type.dims if d not in named)
        if Ellipsis not in dims:
            if rest:
                raise DimError(
                    f"transpose: give every dim of {fmt_dims(x.type.dims)} (or `...`); missing {[d.name for d in rest]}"
                )
            order = named
        else:
            k = dims.index(Ellipsis)
            order = named[:k] + rest + named[k:]
    if order == x.type.dims:
        return x
    return Transpose(order)(x)


def rename(x, mapping=None, **names):
    """Dims renamed: `{old: new}` with old a Dim or name, new a name (same size and coords) or a Dim.

    A lone string renames the variable itself, as `DataArray.rename`.
    """
    x = as_operand(x, "rename")
    if isinstance(mapping, str):
        out = Relabel(x.type.dims)(x)
        out.name = mapping
        return out
    mapping = dict(mapping or {}, **names)
    new_dims = list(x.type.dims)
    for old, new in mapping.items():
        (d,) = resolve_dims(x.type.dims, old, "rename", x.name or "the variable")
        k = x.type.dims.index(d)
        new_dims[k] = d.rename(new) if isinstance(new, str) else new
        if not isinstance(new_dims[k], Dim):
            raise TypeError(f"rename: the new dim for {d.name!r} must be a name or a Dim, got {new!r}")
    new_dims = as_dim_tuple(new_dims, "rename")
    return Relabel(new_dims)(x)


def expand_dims(x, dim):
    """New dims (Dim objects) put first; the data repeats along them."""
    x = as_operand(x, "expand_dims")
    new = as_dim_tuple(dim, "expand_dims")
    return ExpandDims(new)(x) if new else x


def squeeze(x, dim=None):
    """Dims of size 1 dropped (`dim=None`: all of static size 1). A named dim whose size comes with the
    data is checked at run time, as xarray checks it on data; a dim named twice is squeezed once (xarray).

    >>> import dimgraph as dg, numpy as np, xarray as xr
    >>> a, c = dg.Dim("a", size=2), dg.Dim("c")
    >>> x = dg.labeled("x", dims=(a, c))
    >>> dg.function([x], x.squeeze(["c", "c"]))(xr.DataArray(np.ones((2, 1)), dims=("a", "c"))).dims
    ('a',)
    """
    x = as_operand(x, "squeeze")
    if dim is None:
        dims = tuple(d for d in x.type.dims if d.size == 1)
    else:
        if isinstance(dim, (list, tuple)):
            dim = list({(d.name if hasattr(d, "name") else d): d for d in dim}.values())
        dims = resolve_dims(x.type.dims, dim, "squeeze", x.name or "the variable")
    return Squeeze(dims)(x) if dims else x


def broadcast_to_dims(x, dims, like=()):
    """`x` repeated to `dims`; the variables in `like` that carry the dims it gains give them their labels."""
    x = as_operand(x, "broadcast")
    if tuple(dims) == x.type.dims:
        return x
    gained = set(dims) - set(x.type.dims)
    return BroadcastTo(tuple(dims))(x, *(v for v in like if v is not x and gained & set(v.type.dims)))


def broadcast_like(x, other):
    """`x` repeated over the dims of `other` it lacks; dims: other's first, then x's others (xarray)."""
    x, other = as_operand(x, "broadcast_like"), as_operand(other, "broadcast_like")
    return broadcast_to_dims(x, unify_dims("broadcast_like", [other, x]), like=(other,))


def broadcast(*xs):
    """Every input repeated to the dims of all of them (in order of first appearance), as `xarray.broadcast`."""
    xs = [as_operand(x, "broadcast") for x in xs]
    dims = unify_dims("broadcast", xs)
    return tuple(broadcast_to_dims(x, dims, like=xs) for x in xs)


def full_like(x, fill_value, dtype=None):
    """An array like `x` (dims) filled with `fill_value`, which may be symbolic (0-d, or on dims of `x`: it is
    broadcast over the rest); positional variables get `dg.core.full_like`.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.labeled("x", dims=(dg.Dim("i", size=3),), dtype="int64")
    >>> v = dg.labeled("v", dims=())
    >>> dg.function([x, v], dg.full_like(x, v))(np.zeros(3, dtype="int64"), 2.0).values.tolist()
    [2, 2, 2]
    """
    if not any_labeled((x,)):
        return core_shape.full_like(x, fill_value, dtype)
    x = as_operand(x, "full_like")
    dtype = np.dtype(dtype or x.type.dtype).name
    if isinstance(fill_value, Variable) and not isinstance(fill_value, Constant):
        (value,) = [as_operand(fill_value, "full_like")]
        extra = [d for d in value.type.dims if d not in x.type.dims]
        if extra:
            raise DimError(
                f"full_like: the fill value has dims {fmt_dims(extra)} that {x.name or 'the variable'} lacks "
                f"({fmt_dims(x.type.dims)}); a fill value is 0-d or on dims of the variable"
            )
        return broadcast_to_dims(astype(value, dtype) if value.type.dtype != dtype else value, x.type.dims, like=(x,))
    value = np.asarray(fill_value.data if isinstance(fill_value, Constant) else fill_value, dtype=dtype)
    if value.ndim:
        raise ValueError(
            f"full_like: fill_value must be a scalar or a symbolic variable, got an array of shape {value.shape}"
        )
    return FullLike(value.item(), dtype)(x)


def zeros_like(x, dtype=None):
    """Zeros with the dims (and dtype, unless given) of `x`."""
    return full_like(x, 0, dtype)


def ones_like(x, dtype=None):
    """Ones with the dims (and dtype, unless given) of `x`."""
    return full_like(x, 1, dtype)


def arange(dim, *args, **kwargs):
    """The positions 0..n-1 of `dim` (int64, on that dim); positional arguments give `dg.core.arange`.

    >>> import dimgraph as dg
    >>> dg.arange(dg.Dim("i", size=3)).eval().values.tolist()
    [0, 1, 2]
    """
    if isinstance(dim, str):
        raise TypeError(
            f"arange: the dim must be a Dim object, got the string {dim!r}; declare it first, e.g. {dim} = dg.Dim({dim!r}, size=...)"
        )
    if not isinstance(dim, Dim):
        return core_arange(dim, *args, **kwargs)
    if args or kwargs:
        raise TypeError(
            f"arange: with a Dim ({dim.name!r}) it takes no other arguments; got args={args!r}, kwargs={kwargs!r}"
        )
    return Arange(dim)()


def to_positional(x, dims_order=None):
    """`x` as a positional tensor with axes in `dims_order` (default: its dims' order)."""
    x = as_operand(x, "to_positional")
    order = (
        x.type.dims
        if dims_order is None
        else resolve_dims(x.type.dims, dims_order, "to_positional", x.name or "the variable")
    )
    if len(order) != x.type.ndim:
        raise DimError(f"to_positional: dims_order must name every dim of {fmt_dims(x.type.dims)}")
    return ToPositional(order)(x)
