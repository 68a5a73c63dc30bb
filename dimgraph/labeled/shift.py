"""xarray's `shift` and `roll` on labeled variables: the time-series lags.

Both are a gather by positions along one dim, `(i - k) mod n` (so they work on
a dim whose size comes with the data, and differentiate as indexing does);
`shift` then puts `fill_value` where no value moved in. Results keep the
variable's Dims, so a lag combines with the variable itself. The lag idiom
of a time-series model cuts the steps without a lag from both sides before
combining them (one slice gives one Dim, so they combine):

    now, before = y.isel(time=slice(1, None)), y.shift(time=1).isel(time=slice(1, None))
    resid = now - phi * before

NOTE: cutting after combining (`(y - phi * y.shift(time=1)).isel(...)`) has
the right values but NaN gradients for `phi`: the cut step contributes
0 * NaN. Cut first, or shift with a finite `fill_value`.

As xarray: the default fill is NaN, which turns integers into float64; a given
`fill_value` is cast to the variable's dtype. `roll` keeps the coords unless
`roll_coords=True`, which rolls them too (a new Dim). Deliberate difference: a
bool variable needs an explicit `fill_value` (xarray would make it `object`).
"""

from __future__ import annotations

import numpy as np

from dimgraph.labeled.dims import Dim, derived_dim, resolve_dims
from dimgraph.labeled.math import as_operand, astype, where
from dimgraph.labeled.shape import arange


def _shifts(x, shifts, kwargs, what):
    """[(Dim, int)] from `{dim: k}` or keywords (not both), as xarray's `shifts`/`**shifts_kwargs`."""
    if shifts is not None and kwargs:
        raise TypeError(f"{what}: give the shifts as a dict or as keywords, not both")
    shifts = dict(shifts if shifts is not None else kwargs)
    if not shifts:
        raise TypeError(f"{what}: give at least one shift, e.g. {what}(time=1)")
    out = []
    for ref, k in shifts.items():
        (dim,) = resolve_dims(x.type.dims, ref, what, x.name or "the variable")
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"{what}: the shift of dim {dim.name!r} must be an int, got {k!r}")
        out.append((dim, int(k)))
    return out


def _moved(x, dim, k):
    """`x` with position i along `dim` taken from position (i - k) mod n, and those positions i."""
    positions = arange(dim)
    return x.isel({dim.name: (positions - k) % x.sizes[dim.name]}), positions


def shift(x, shifts=None, fill_value=None, **shifts_kwargs):
    """`x` moved `k` steps along each dim (`time=1`: each step holds the one before), as `DataArray.shift`.

    The `k` positions no value moved into get `fill_value` (None: NaN, which
    makes integers float64, as xarray's default); the dims and coords stay.

    >>> import dimgraph as dg, numpy as np
    >>> time = dg.Dim("time", size=4)
    >>> y = dg.constant(np.array([1.0, 2.0, 4.0, 8.0]), dims=(time,))
    >>> y.shift(time=1).eval().values.tolist()
    [nan, 1.0, 2.0, 4.0]
    >>> steps = slice(1, None)  # the lag idiom: an AR(1) residual y[t] - phi y[t-1]
    >>> (y.isel(time=steps) - 0.5 * y.shift(time=1).isel(time=steps)).eval().values.tolist()
    [1.5, 3.0, 6.0]
    """
    x = as_operand(x, "shift")
    moves = _shifts(x, shifts, shifts_kwargs, "shift")
    kind = np.dtype(x.type.dtype).kind
    if fill_value is None:
        if kind == "b":
            raise TypeError("shift: a bool variable has no NaN; give fill_value= (True or False)")
        if kind in "iu":
            x = astype(x, "float64")
        fill_value = np.nan
    fill = astype(as_operand(fill_value, "shift"), x.type.dtype)
    if fill.type.ndim:
        raise TypeError(f"shift: fill_value must be a scalar, got dims {fill.dims}")
    dims = x.type.dims
    for dim, k in moves:
        moved, positions = _moved(x, dim, k)
        inside = positions >= k if k >= 0 else positions < x.sizes[dim.name] + k
        x = where(inside, moved, fill).transpose(*dims)
    return x


def roll(x, shifts=None, roll_coords=False, **shifts_kwargs):
    """`x` rotated `k` steps along each dim (values leaving one end enter at the other), as `DataArray.roll`.

    The coords stay in place unless `roll_coords=True` rolls them with the
    values (the result is then on a new Dim, with the rolled coords).

    >>> import dimgraph as dg, numpy as np
    >>> day = dg.Dim("day", coords=["mon", "tue", "wed"])
    >>> y = dg.constant(np.array([1.0, 2.0, 3.0]), dims=(day,))
    >>> y.roll(day=1).eval().values.tolist()
    [3.0, 1.0, 2.0]
    >>> y.roll(day=1, roll_coords=True).eval().day.values.tolist()
    ['wed', 'mon', 'tue']
    """
    x = as_operand(x, "roll")
    for dim, k in _shifts(x, shifts, shifts_kwargs, "roll"):
        x = _moved(x, dim, k)[0]
        if roll_coords:
            x = x.rename({dim.name: _rolled_dim(dim, k)})
    return x


def _rolled_dim(dim: Dim, k: int) -> Dim:
    """The Dim whose labels are those of `dim` rolled by `k` (data labels too, for a Dim without coords)."""
    if dim.coords is not None:
        n = len(dim.coords)
        return Dim(dim.name, coords=dim.coords[(np.arange(n) - k) % n] if n else dim.coords)
    return derived_dim(dim, f"roll({dim.origin or dim.name}, {k})", _RolledLabels(k), size=dim.size)


class _RolledLabels:
    """Labels rolled by `k` (a value: equal rolls compare equal)."""

    __slots__ = ("k",)

    def __init__(self, k):
        self.k = k

    def __eq__(self, other):
        return isinstance(other, _RolledLabels) and other.k == self.k

    def __hash__(self):
        return hash(("roll", self.k))

    def __call__(self, index):
        n = len(index)
        return index[(np.arange(n) - self.k) % n] if n else index
