"""`LabeledVariable`: what users hold. xarray's operators and methods, each building a labeled op.

`==` is elementwise (as xarray); hashing stays by identity so variables stay
dict keys. Every method returns a new labeled variable.
"""

from __future__ import annotations

import html

import numpy as np

from dimgraph.core import operands
from dimgraph.core.digest import Encoder, sha
from dimgraph.core.graph import Constant, Variable
from dimgraph.core.shape import ShapeI
from dimgraph.labeled import indexing as lindex
from dimgraph.labeled import math as lmath
from dimgraph.labeled import shape as lshape
from dimgraph.labeled.combine import dot
from dimgraph.labeled.dims import fmt_dims, unify_dims
from dimgraph.labeled.shift import roll, shift
from dimgraph.labeled.stacking import ravel, stack, unstack


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

    __array__ = operands.no_array

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
        return dot(self, other)

    def __rmatmul__(self, other):
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

                out[d.name] = ShapeI(k)(positional)
            else:
                out[d.name] = d.size
        return out

    @property
    def dtype(self):
        """The NumPy dtype of the values."""
        return np.dtype(self.type.dtype)

    @property
    def ndim(self) -> int:
        """The number of dims."""
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
        """The values converted to `dtype` (unsafe casting, as `DataArray.astype`)."""
        return lmath.astype(self, dtype)

    def clip(self, min=None, max=None):
        """The values limited to [min, max]; None leaves a side open (as `DataArray.clip`)."""
        return lmath.clip(self, min, max)

    def round(self, decimals=0):
        """Rounded half to even (as `np.round`); `decimals` shifts the rounding position."""
        return lmath.round(self, decimals)

    def where(self, cond, other=None):
        """`self` where `cond` holds, else `other` (dims: self's first, as `DataArray.where`).

        Without `other` the gaps are NaN and the dtype is xarray's for missing
        values: floats stay, integers of 1 or 2 bytes become float32, others float64.
        """
        if other is None:
            kind, size = self.dtype.kind, self.dtype.itemsize
            fill_dtype = (
                self.dtype if kind in "fc" else np.dtype("float32" if kind in "iu" and size <= 2 else "float64")
            )
            other = np.asarray(np.nan, dtype=fill_dtype)
        out = lmath.where(cond, self, other)
        order = unify_dims("where", [v for v in lmath.operands([self, cond, other], "where")])
        return lshape.transpose(out, *order)

    # -- reductions and scans ----------------------------------------------
    def sum(self, dim=None, skipna=None):
        """The sum over `dim` (a Dim, a name or a list; None: all dims), as `DataArray.sum`.

        `skipna=True` leaves NaNs out (the default propagates them: see `labeled.math.SKIPNA_DEFAULT`).

        >>> import dimgraph as dg
        >>> x = dg.labeled("x", dims=(dg.Dim("i", size=2), dg.Dim("j", size=3)))
        >>> x.sum("j").dims
        (Dim('i', size=2),)
        """
        return lmath.reduce("sum", self, dim, skipna=skipna)

    def prod(self, dim=None, skipna=None):
        """The product over `dim` (None: all dims), as `DataArray.prod`."""
        return lmath.reduce("prod", self, dim, skipna=skipna)

    def max(self, dim=None, skipna=None):
        """The maximum over `dim` (None: all dims), as `DataArray.max`."""
        return lmath.reduce("max", self, dim, skipna=skipna)

    def min(self, dim=None, skipna=None):
        """The minimum over `dim` (None: all dims), as `DataArray.min`."""
        return lmath.reduce("min", self, dim, skipna=skipna)

    def all(self, dim=None):
        """Whether every value over `dim` is true (None: all dims)."""
        return lmath.reduce("all", self, dim)

    def any(self, dim=None):
        """Whether some value over `dim` is true (None: all dims)."""
        return lmath.reduce("any", self, dim)

    def mean(self, dim=None, skipna=None):
        """The mean over `dim` (None: all dims), as `DataArray.mean`; ints give float64.

        >>> import dimgraph as dg
        >>> x = dg.labeled("x", dims=(dg.Dim("i", size=2), dg.Dim("j", size=3)))
        >>> x.mean().dims, x.mean().dtype
        ((), dtype('float64'))
        """
        return lmath.reduce("mean", self, dim, skipna=skipna)

    def var(self, dim=None, ddof=0, skipna=None):
        """The variance over `dim` with `ddof` degrees of freedom removed (0, as xarray)."""
        return lmath.reduce("var", self, dim, ddof, skipna)

    def std(self, dim=None, ddof=0, skipna=None):
        """The standard deviation over `dim` with `ddof` degrees of freedom removed (0, as xarray)."""
        return lmath.reduce("std", self, dim, ddof, skipna)

    def logsumexp(self, dim=None):
        """log(sum(exp(x))) over `dim`, without overflow (None: all dims)."""
        return lmath.reduce("logsumexp", self, dim)

    def argmax(self, dim=None, skipna=None):
        """Positions of the maximum along `dim`; a list of dims or `...` gives a dict by dim name (xarray)."""
        return lmath.reduce("argmax", self, dim, skipna=skipna)

    def argmin(self, dim=None, skipna=None):
        """Positions of the minimum along `dim`; a list of dims or `...` gives a dict by dim name (xarray)."""
        return lmath.reduce("argmin", self, dim, skipna=skipna)

    def cumsum(self, dim=None, skipna=None):
        """The cumulative sum along `dim` (a list or None: one dim after another, as xarray)."""
        return lmath.cumulative("add", self, dim, skipna)

    def cumprod(self, dim=None, skipna=None):
        """The cumulative product along `dim` (a list or None: one dim after another, as xarray)."""
        return lmath.cumulative("mul", self, dim, skipna)

    def diff(self, dim, n=1, label="upper"):
        """The `n`-th difference along `dim`, keeping the upper labels (xarray's default)."""
        return lmath.diff(self, dim, n, label)

    def shift(self, shifts=None, fill_value=None, **shifts_kwargs):
        """Values moved `k` steps along a dim, the vacated steps filled (NaN), as `DataArray.shift` (see `dimgraph.labeled.shift`)."""
        return shift(self, shifts, fill_value, **shifts_kwargs)

    def roll(self, shifts=None, roll_coords=False, **shifts_kwargs):
        """Values rotated `k` steps along a dim, as `DataArray.roll` (see `dimgraph.labeled.shift`)."""
        return roll(self, shifts, roll_coords, **shifts_kwargs)

    # -- shape ---------------------------------------------------------------
    def transpose(self, *dims):
        """The same values with dims in the order given (`...` stands for the others; none: reversed).

        >>> import dimgraph as dg
        >>> x = dg.labeled("x", dims=(dg.Dim("i", size=2), dg.Dim("j", size=3)))
        >>> x.transpose("j", "i").dims
        (Dim('j', size=3), Dim('i', size=2))
        """
        return lshape.transpose(self, *dims)

    @property
    def T(self):
        """The dims reversed (`transpose()`)."""
        return lshape.transpose(self)

    def rename(self, mapping=None, **names):
        """Dims renamed by `{old: new}` (or keywords); coords stay with their dim.

        >>> import dimgraph as dg
        >>> x = dg.labeled("x", dims=(dg.Dim("i", size=2), dg.Dim("j", size=3)))
        >>> x.rename(i="row").dims[0].name
        'row'
        """
        return lshape.rename(self, mapping, **names)

    def expand_dims(self, dim):
        """A new dim of size 1 (or a Dim of any size: broadcast) put first, as `DataArray.expand_dims`."""
        return lshape.expand_dims(self, dim)

    def squeeze(self, dim=None):
        """Size-1 dims dropped (`dim`: only those; None: all of them), as `DataArray.squeeze`."""
        return lshape.squeeze(self, dim)

    def broadcast_like(self, other):
        """Broadcast against `other`'s dims (other's dims first, as xarray)."""
        return lshape.broadcast_like(self, other)

    # -- product dims (dimgraph.labeled.stacking) ------------------------------
    def stack(self, dim=None, **dims):
        """Dims merged into a new ProductDim put last: `x.stack(cell=(a, b))` (see `dimgraph.labeled.stacking.stack`)."""
        return stack(self, dim, **dims)

    def unstack(self, dim=None):
        """ProductDims split back into their components, put last (see `dimgraph.labeled.stacking.unstack`)."""
        return unstack(self, dim)

    def ravel(self, name=None):
        """Every dim stacked in order into one ProductDim (named by joining the dim names with "_")."""
        return ravel(self, name)

    def dot(self, other, dim=None):
        """`dg.dot(self, other, dim=dim)` (as `DataArray.dot`)."""
        return dot(self, other, dim=dim)

    # -- indexing (dimgraph.labeled.indexing) ------------------------------
    def isel(self, indexers=None, drop=False, missing_dims="raise", **kwargs):
        """Indexed by position along named dims, as `DataArray.isel` (see `dimgraph.labeled.indexing.isel`)."""
        return lindex.isel(self, indexers, drop, missing_dims, **kwargs)

    def sel(self, indexers=None, method=None, tolerance=None, drop=False, **kwargs):
        """Selected by label along named dims, as `DataArray.sel` (see `dimgraph.labeled.indexing.sel`)."""
        return lindex.sel(self, indexers, method, tolerance, drop, **kwargs)

    def __getitem__(self, key):
        """`x[...]`: positions in dim order (ints, slices, arrays), or a dict by dim name, as `DataArray[...]`."""
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
        """A digest of the constant's type and values (labels by value), equal for equal constants (merging)."""
        if self._key is None:
            encode = Encoder()
            self._key = sha(("labeled const", encode(np.asarray(self.data)), encode(self.type)))
        return self._key

    def __repr__(self):
        if np.size(self.data) <= 6:
            return f"{np.array2string(np.asarray(self.data), separator=',')}: {self.type}"
        return f"<constant>: {self.type}"
