"""Making labeled variables: symbolic inputs, constants, DataArrays, and positional tensors read with dims.

These are the only places a new Dim enters a graph, and only as a Dim object
(a string there is a TypeError with a hint), so a typo can never create a
silent broadcast dim.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.basic import constant as positional_constant
from dimgraph.core.graph import Variable
from dimgraph.errors import DimError
from dimgraph.labeled.dims import Dim, as_dim_tuple, clash, fmt_dims
from dimgraph.labeled.ops import FromPositional, is_labeled
from dimgraph.labeled.type import LabeledType
from dimgraph.lazy import pandas as pd


def labeled(name, dims, dtype="float64"):
    """A symbolic labeled input.

    >>> import dimgraph as dg
    >>> country, age = dg.Dim("country", coords=["USA", "Italy"]), dg.Dim("age", size=5)
    >>> x = dg.labeled("x", dims=(country, age))
    >>> x
    x: float64(country: 2, age: 5)
    """
    return LabeledType(dtype, as_dim_tuple(dims, f"labeled {name!r}")).make_variable(name=name)


def is_dataarray(x) -> bool:
    cls = type(x)  # (the class's attributes: `x.indexes` builds a mapping each time it is read)
    return cls.__name__ == "DataArray" and hasattr(cls, "dims") and hasattr(cls, "indexes")


def constant(value, dims=None, dtype=None, name=None):
    """A labeled constant: `value` (an array in `dims` order, or a DataArray) with its Dims.

    >>> import dimgraph as dg, numpy as np
    >>> country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    >>> c = dg.constant(np.arange(3.0), dims=(country,))
    >>> c.eval().sel(country="Italy").item()
    1.0
    """
    if is_dataarray(value):
        return as_labeled(value, dims=dims, dtype=dtype, name=name)
    from dimgraph.labeled.variable import LabeledConstant

    arr = np.array(value, dtype=dtype)
    if arr.dtype.kind in "OUS":  # labels: a build-time value that only `sel` reads (it never compiles)
        arr = arr.astype(object)
    elif arr.dtype.kind == "V":
        raise TypeError(f"constant {name!r}: arrays of dtype {arr.dtype} cannot be graph values")
    if dims is None:
        if arr.ndim:
            raise TypeError(f"constant: give `dims` (Dim objects) for an array with {arr.ndim} axes")
        dims = ()
    dims = as_dim_tuple(dims, "constant")
    if arr.ndim != len(dims):
        raise DimError(f"constant: the value has shape {arr.shape} but {len(dims)} dims were given {fmt_dims(dims)}")
    for d, n in zip(dims, arr.shape):
        if d.size is not None and d.size != n:
            raise DimError(f"constant: dim {d.name!r} has size {d.size}, but the value has {n} entries along it")
    arr.setflags(write=False)
    return LabeledConstant(LabeledType(arr.dtype.name, dims), arr, name=name)


def dims_of_dataarray(da, dims=None, what="as_labeled") -> tuple:
    """The Dims of a DataArray: given ones (matched by name, checked), else made from its indexes."""
    given = {} if dims is None else {d.name: d for d in as_dim_tuple(dims, what)}
    unknown = set(given) - set(map(str, da.dims))
    if unknown:
        raise DimError(f"{what}: the DataArray has no dims {sorted(unknown)}; its dims are {dict(da.sizes)}")
    out = []
    for name, n in zip(da.dims, da.shape):
        index = da.indexes.get(name)
        made = Dim(str(name), coords=index) if index is not None else Dim(str(name), size=n)
        if isinstance(index, pd.MultiIndex):  # a stacked dim comes back as a ProductDim when it is one
            from dimgraph.labeled.stacking import product_from_multiindex

            made = product_from_multiindex(str(name), index) or made
        d = given.get(name)
        if d is None:
            out.append(made)
            continue
        if d.size is not None and d.size != n:
            raise clash(what, name, d, "dims=", made, "the DataArray")
        if d.coords is not None and index is not None and not d.coords.equals(index):
            raise clash(what, name, d, "dims=", made, "the DataArray")
        out.append(d)
    return tuple(out)


def as_labeled(value, dims=None, dtype=None, name=None):
    """A labeled constant from a DataArray: its dims (with coords) become Dims; labeled variables pass.

    `dims` may give the Dim objects to use (matched by name), and their order.

    >>> import dimgraph as dg, numpy as np, xarray as xr
    >>> d = dg.as_labeled(xr.DataArray(np.ones(2), dims="obs", coords={"obs": ["a", "b"]}))
    >>> d.dims
    (Dim('obs', coords=['a', 'b']),)
    """
    if is_labeled(value):
        return value
    if not is_dataarray(value):
        raise TypeError(f"as_labeled: expected an xarray.DataArray or a labeled variable, got {type(value).__name__}")
    found = dims_of_dataarray(value, dims)
    order = found
    if dims is not None:  # the given dims first, in their order, then the array's others
        given = as_dim_tuple(dims, "as_labeled")
        order = given + tuple(d for d in found if d not in given)
    data = value.transpose(*[d.name for d in order]).values
    return constant(
        data,
        dims=order,
        dtype=dtype,
        name=name if name is not None else value.name if isinstance(value.name, str) else None,
    )


def from_positional(t, dims):
    """A positional tensor read as labeled: axis k gets `dims[k]`.

    >>> import dimgraph as dg
    >>> t = dg.tensor("t", shape=(None, 3))
    >>> obs, k = dg.Dim("obs"), dg.Dim("k", size=3)
    >>> dg.from_positional(t, (obs, k)).dims == (obs, k)
    True
    """
    if not isinstance(t, Variable):
        t = positional_constant(t)
    return FromPositional(as_dim_tuple(dims, "from_positional"))(t)
