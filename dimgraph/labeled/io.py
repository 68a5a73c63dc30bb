"""Labeled data coming into a compiled function or a shared variable: DataArray/NumPy in, an array in dims order out.

`LabeledInput.convert` matches a DataArray's dims by name (transposing as
needed), checks sizes and, when the Dim has coords, the coords (labels that
are the Dim's in another order are gathered into the Dim's order; any other
difference is an InputError); a NumPy array must come in declared dim order. `as_dataarray` is the way back for a value
whose dims are static (a shared variable's).
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.io import PYTHON_SCALARS, as_array, cast_exact, is_weak
from dimgraph.errors import InputError
from dimgraph.labeled.basic import is_dataarray
from dimgraph.labeled.dims import ProductDim, fmt_dims


def first_difference(expected, got) -> str:
    for k, (u, v) in enumerate(zip(expected, got)):
        if not (u == v or (u != u and v != v)):
            return f"first difference at position {k}: expected {u!r}, got {v!r}"
    return f"expected {len(expected)} labels, got {len(got)}"


def _permutation(index, coords):
    """Positions in `index` of each of `coords` when `index` holds the same labels in another order, else None."""
    if len(index) != len(coords) or not index.is_unique:
        return None
    order = index.get_indexer(coords)
    return None if (order < 0).any() else order


class LabeledInput:
    """Converts user data for a labeled input (dims, sizes, coords, dtype) to an array in dims order."""

    __slots__ = ("name", "type")
    extra_dims_hint = " (dg.function(..., map_extra_dims=True) maps a function over extra dims)"

    def __init__(self, name, type):
        self.name, self.type = name, type

    def convert(self, value):
        dims = self.type.dims
        if is_dataarray(value):
            names = [str(n) for n in value.dims]
            expected = [d.name for d in dims]
            missing = [n for n in expected if n not in names]
            extra = [n for n in names if n not in expected]
            if missing or extra:
                got = "(" + ", ".join(f"{n}: {s}" for n, s in zip(names, value.shape)) + ")"
                why = "; ".join(
                    ([f"missing dim {', '.join(map(repr, missing))}"] if missing else [])
                    + ([f"unexpected dim {', '.join(map(repr, extra))}"] if extra else [])
                )
                hint = self.extra_dims_hint.format(dim=extra[0]) if extra and not missing else ""
                raise InputError(f"input {self.name!r}: expected dims {fmt_dims(dims)}, got dims {got}: {why}{hint}")
            if names != expected:
                value = value.transpose(*expected)
            for d in dims:
                if d.coords is None:
                    continue
                index = value.indexes.get(d.name)
                if index is not None and not index.equals(d.coords):
                    order = _permutation(index, d.coords)
                    if order is None:
                        raise InputError(
                            f"input {self.name!r}: the coords of dim {d.name!r} disagree with the Dim's "
                            f"({first_difference(d.coords, index)}), and are not a reordering of them"
                        )
                    value = value.isel({d.name: order})  # the Dim's order: a gather before the call
            arr = np.asarray(value.values)
        else:
            arr = as_array(self.name, value)
            if arr.ndim != len(dims):
                raise InputError(
                    f"input {self.name!r}: expected an array with dims {fmt_dims(dims)} ({len(dims)} axes, "
                    f"in this order), got {arr.ndim} axes (shape {arr.shape})"
                )
        for d, n in zip(dims, arr.shape):
            if d.size is not None and d.size != n:
                raise InputError(f"input {self.name!r}: dim {d.name!r} has size {d.size}, got {n} entries along it")
        return cast_exact(self.name, arr, self.type.dtype, weak=is_weak(value))

    def trusted(self, value):
        """`value` for a call with `trust_input=True`: a DataArray put in dims order, unchecked
        (a Python or NumPy scalar becomes a 0-d array of the input's dtype)."""
        if type(value) in PYTHON_SCALARS or isinstance(value, np.generic):  # np.float64(1.0) is no 0-d array
            return np.asarray(value, dtype=self.type.dtype)
        if not is_dataarray(value):
            return value
        names = [d.name for d in self.type.dims]
        if [str(n) for n in value.dims] != names:
            value = value.transpose(*names)
        return value.values


def as_dataarray(value, dims, name=None):
    """`value` (an array in `dims` order) as a DataArray with the Dims' coords (a ProductDim's as its MultiIndex)."""
    import xarray as xr

    coords = {}
    for d in dims:
        if isinstance(d, ProductDim) and d.coords is not None:
            coords.update(xr.Coordinates.from_pandas_multiindex(d.coords, d.name))
        elif d.coords is not None:
            coords[d.name] = d.coords
    return xr.DataArray(value, dims=[d.name for d in dims], coords=coords or None, name=name)
