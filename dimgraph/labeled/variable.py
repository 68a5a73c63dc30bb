"""`LabeledVariable`: what users hold. xarray's operators and methods, each building a labeled op.

`==` is elementwise (as xarray); hashing stays by identity so variables stay
dict keys. Every method returns a new labeled variable.
"""

from __future__ import annotations

import html

import numpy as np

from dimgraph.core import operands
from dimgraph.core.graph import Constant, Variable
from dimgraph.labeled import indexing as lindex
from dimgraph.labeled import math as lmath
from dimgraph.labeled import shape as lshape
from dimgraph.labeled.dims import fmt_dims, unify_dims


def _binary(name, reflected=False):
    if reflected:
        return lambda self, other: lmath.elemwise(name, other, self)
    return lambda self, other: lmath.elemwise(name, self, other)


class LabeledOperators:
    """Operators and methods shared by labeled variables and labeled constants."""

    __slots__ = ()
    __array_priority__ = 2000  # above positional variables: in mixed operations the labeled rule applies

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """`np.exp(x)` is `dg.exp(x)` (NEP 13, as xarray); ufuncs without a dimgraph op are a TypeError naming it."""
        return operands.array_ufunc(self, ufunc, method, inputs, kwargs, lmath.elemwise)

    __add__, __radd__ = _binary("add"), _binary("add", True)
    __sub__, __rsub__ = _binary("sub"), _binary("sub", True)
    __mul__, __rmul__ = _binary("mul"), _binary("mul", True)
    __truediv__, __rtruediv__ = _binary("true_div"), _binary("true_div", True)
    __floordiv__, __rfloordiv__ = _binary("floor_div"), _binary("floor_div", True)
    __mod__, __rmod__ = _binary("mod"), _binary("mod", True)
    __pow__, __rpow__ = _binary("pow"), _binary("pow", True)
    __eq__, __ne__ = _binary("eq"), _binary("neq")
    __lt__, __le__, __gt__, __ge__ = _binary("lt"), _binary("le"), _binary("gt"), _binary("ge")
    __and__, __rand__ = _binary("and"), _binary("and", True)
    __or__, __ror__ = _binary("or"), _binary("or", True)
    __xor__, __rxor__ = _binary("xor"), _binary("xor", True)
    __hash__ = Variable.__hash__

    def __neg__(self):
        return lmath.elemwise("neg", self)

    def __pos__(self):
        return self

    def __abs__(self):
        return lmath.elemwise("abs", self)

    def __invert__(self):
        return lmath.elemwise("invert", self)

    def __matmul__(self, other):
        """`dg.dot(self, other)`: the product summed over the dims both have (xarray's `@`)."""
        from dimgraph.labeled.combine import dot

        return dot(self, other)

    def __rmatmul__(self, other):
        from dimgraph.labeled.combine import dot

        return dot(other, self)

    def __iter__(self):
        raise TypeError(f"symbolic labeled variable {self!r} cannot be iterated")

    def __len__(self):
        raise TypeError(f"len() of symbolic labeled variable {self!r}; use x.sizes")

    # -- properties ---------------------------------------------------------
    @property
    def dims(self) -> tuple:
        """The Dim objects, in order."""
        return self.type.dims

    @property
    def sizes(self) -> dict:
        """{name: size}; a dim whose size comes with the data gives a symbolic int64 scalar."""
        positional = None
        out = {}
        for k, d in enumerate(self.type.dims):
            if d.size is None:
                if positional is None:
                    positional = self.to_positional()
                from dimgraph.core.shape import ShapeI

                out[d.name] = ShapeI(k)(positional)
            else:
                out[d.name] = d.size
        return out

    @property
    def dtype(self):
        return np.dtype(self.type.dtype)

    @property
    def ndim(self) -> int:
        return self.type.ndim

    @property
    def values(self):
        """The data as a positional tensor, axes in dims order (as `to_positional()`)."""
        return self.to_positional()

    # -- conversion and elementwise methods ---------------------------------
    def to_positional(self, dims_order=None):
        """A positional tensor with axes in `dims_order` (a list of Dims or names; default: `dims`)."""
        return lshape.to_positional(self, dims_order)

    def astype(self, dtype):
        return lmath.astype(self, dtype)

    def clip(self, min=None, max=None):
        return lmath.clip(self, min, max)

    def round(self, decimals=0):
        return lmath.round(self, decimals)

    def where(self, cond, other=None):
        """`self` where `cond` holds, else `other` (dims: self's first, as `DataArray.where`).

        Without `other` the gaps are NaN and the dtype is xarray's for missing
        values: floats stay, integers of 1 or 2 bytes become float32, others float64.
        """
        if other is None:
            kind, size = self.dtype.kind, self.dtype.itemsize
            fill_dtype = self.dtype if kind in "fc" else np.dtype("float32" if kind in "iu" and size <= 2 else "float64")
            other = np.asarray(np.nan, dtype=fill_dtype)
        out = lmath.where(cond, self, other)
        order = unify_dims("where", [v for v in lmath.operands([self, cond, other], "where")])
        return lshape.transpose(out, *order)

    # -- reductions and scans ----------------------------------------------
    def sum(self, dim=None, skipna=None):
        return lmath.reduce("sum", self, dim, skipna=skipna)

    def prod(self, dim=None, skipna=None):
        return lmath.reduce("prod", self, dim, skipna=skipna)

    def max(self, dim=None, skipna=None):
        return lmath.reduce("max", self, dim, skipna=skipna)

    def min(self, dim=None, skipna=None):
        return lmath.reduce("min", self, dim, skipna=skipna)

    def all(self, dim=None):
        return lmath.reduce("all", self, dim)

    def any(self, dim=None):
        return lmath.reduce("any", self, dim)

    def mean(self, dim=None, skipna=None):
        return lmath.reduce("mean", self, dim, skipna=skipna)

    def var(self, dim=None, ddof=0, skipna=None):
        return lmath.reduce("var", self, dim, ddof, skipna)

    def std(self, dim=None, ddof=0, skipna=None):
        return lmath.reduce("std", self, dim, ddof, skipna)

    def logsumexp(self, dim=None):
        return lmath.reduce("logsumexp", self, dim)

    def argmax(self, dim=None, skipna=None):
        return lmath.reduce("argmax", self, dim, skipna=skipna)

    def argmin(self, dim=None, skipna=None):
        return lmath.reduce("argmin", self, dim, skipna=skipna)

    def cumsum(self, dim=None, skipna=None):
        return lmath.cumulative("add", self, dim, skipna)

    def cumprod(self, dim=None, skipna=None):
        return lmath.cumulative("mul", self, dim, skipna)

    def diff(self, dim, n=1, label="upper"):
        return lmath.diff(self, dim, n, label)

    # -- shape ---------------------------------------------------------------
    def transpose(self, *dims):
        return lshape.transpose(self, *dims)

    @property
    def T(self):
        return lshape.transpose(self)

    def rename(self, mapping=None, **names):
        return lshape.rename(self, mapping, **names)

    def expand_dims(self, dim):
        return lshape.expand_dims(self, dim)

    def squeeze(self, dim=None):
        return lshape.squeeze(self, dim)

    def broadcast_like(self, other):
        return lshape.broadcast_like(self, other)

    # -- product dims (dimgraph.labeled.stacking) ------------------------------
    def stack(self, dim=None, **dims):
        """Dims merged into a new ProductDim put last: `x.stack(cell=(a, b))` (see `dimgraph.labeled.stacking.stack`)."""
        from dimgraph.labeled.stacking import stack

        return stack(self, dim, **dims)

    def unstack(self, dim=None):
        """ProductDims split back into their components, put last (see `dimgraph.labeled.stacking.unstack`)."""
        from dimgraph.labeled.stacking import unstack

        return unstack(self, dim)

    def ravel(self, name=None):
        """Every dim stacked in order into one ProductDim (named by joining the dim names with "_")."""
        from dimgraph.labeled.stacking import ravel

        return ravel(self, name)

    def dot(self, other, dim=None):
        """`dg.dot(self, other, dim=dim)` (as `DataArray.dot`)."""
        from dimgraph.labeled.combine import dot

        return dot(self, other, dim=dim)

    # -- indexing (dimgraph.labeled.indexing) ------------------------------
    def isel(self, indexers=None, drop=False, missing_dims="raise", **kwargs):
        """Indexed by position along named dims, as `DataArray.isel` (see `dimgraph.labeled.indexing.isel`)."""
        return lindex.isel(self, indexers, drop, missing_dims, **kwargs)

    def sel(self, indexers=None, method=None, tolerance=None, drop=False, **kwargs):
        """Selected by label along named dims, as `DataArray.sel` (see `dimgraph.labeled.indexing.sel`)."""
        return lindex.sel(self, indexers, method, tolerance, drop, **kwargs)

    def __getitem__(self, key):
        return lindex.getitem(self, key)

    @property
    def loc(self):
        """`x.loc[...]`: `sel` by a dict or a tuple of labels in dim order."""
        return lindex.LocIndexer(self)

    def set(self, value):
        """The whole variable this isel/sel result came from, with the selection replaced by `value`."""
        return lindex.set_selection(self, value)

    def inc(self, value):
        """The whole variable this isel/sel result came from, with `value` added to the selection (`np.add.at`)."""
        return lindex.inc_selection(self, value)

    # -- display -------------------------------------------------------------
    def _repr_html_(self):
        rows = "".join(
            f"<tr><td>{html.escape(d.name)}</td><td>{'?' if d.size is None else d.size}</td>"
            f"<td>{html.escape(_coords_preview(d))}</td></tr>"
            for d in self.type.dims
        )
        title = html.escape(f"{self.name or '<labeled>'}: {self.type.dtype}{fmt_dims(self.type.dims)}")
        return (
            f"<div><b>{title}</b><table><thead><tr><th>dim</th><th>size</th><th>coords</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></div>"
        )


def _coords_preview(d):
    if d.coords is None:
        return ""
    shown = ", ".join(map(str, d.coords[:5].tolist()))
    return shown + (", ..." if len(d.coords) > 5 else "")


class LabeledVariable(LabeledOperators, Variable):
    __slots__ = ()


class LabeledConstant(LabeledOperators, Constant):
    __slots__ = ()

    @property
    def key(self):
        if self._key is None:
            if self.type.dtype == "object":  # labels (for sel): hashed by value, not by bytes
                self._key = hash((tuple(np.asarray(self.data).reshape(-1).tolist()), np.shape(self.data), self.type))
            else:
                self._key = hash((Constant.key.fget(self), self.type))
        return self._key

    def __repr__(self):
        if np.size(self.data) <= 6:
            return f"{np.array2string(np.asarray(self.data), separator=',')}: {self.type}"
        return f"<constant>: {self.type}"
