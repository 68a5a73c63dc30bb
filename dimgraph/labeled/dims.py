"""`Dim`: a named dimension, the static fact every labeled variable carries.

A Dim is an immutable value: name, size (None until data arrives) and coords
(a `pandas.Index` or None). Two Dims are the same dim when all three agree;
coords enter equality through a digest computed once, so hashing a Dim never
re-hashes its Index. This module also holds the helpers every labeled op uses
to resolve dim references (a Dim or a name) and to unify the dims of several
operands in order of first appearance (xarray's rule), raising `DimError`
when one name stands for two different Dims.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field

import numpy as np

from dimgraph.errors import DimError
from dimgraph.lazy import pandas as pd

MAX_SIZE = 2**63  # sizes are int64 lengths: a Dim's size is below it


def _not_text(name, labels) -> DimError:
    bad = next(c for c in labels if isinstance(c, str) and not _is_text(c))
    return DimError(
        f"Dim {name!r}: the coord label {bad!r} is not valid text (it holds a lone surrogate, "
        "which no encoding can write); decode the labels from bytes with errors='replace', or use other labels"
    )


def _is_text(label: str) -> bool:
    try:
        label.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _coords_digest(coords) -> bytes:
    if coords is None:
        return b""
    values = pd.util.hash_pandas_object(coords, index=False).to_numpy()
    kind = str(coords.dtype) if not isinstance(coords, pd.MultiIndex) else "multi:" + ",".join(map(str, coords.names))
    return hashlib.blake2b(kind.encode() + values.tobytes(), digest_size=16).digest()


@dataclass(frozen=True)
class Dim:
    """A named dimension: `Dim(name, size=None, coords=None)`.

    `coords` (any sequence of unique labels, stored as a `pandas.Index`) fix the
    size; a Dim without coords behaves as xarray's: its labels are 0..n-1.
    A Dim without a size gets one when data arrives; every variable on it shares it.

    >>> import dimgraph as dg
    >>> country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    >>> country.size, list(country.coords)
    (3, ['USA', 'Italy', 'Chile'])
    >>> country.rename("origin").name, dg.Dim("age", size=5) == dg.Dim("age", size=5)
    ('origin', True)
    """

    name: str
    size: int | None = None
    coords: pd.Index | None = field(default=None, compare=False, repr=False)
    # Marks a dim derived at graph-build time whose size is unknown (e.g. `diff` of an unknown dim),
    # so it never compares equal to the dim it came from.
    origin: str | None = field(default=None, repr=False)
    _digest: bytes = field(default=b"", init=False, repr=False)

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"Dim: the name must be a non-empty str, got {self.name!r}")
        if self.origin is not None and not isinstance(self.origin, str):
            raise TypeError(
                f"Dim {self.name!r}: origin must be None or the name of the dim it was renamed from, got {self.origin!r}"
            )
        coords = self.coords
        if coords is not None:
            if not isinstance(coords, pd.Index):
                values = np.asarray(coords)
                if values.ndim != 1:
                    raise DimError(f"Dim {self.name!r}: coords must be one-dimensional, got shape {values.shape}")
                try:
                    coords = pd.Index(values)
                except UnicodeEncodeError:  # pandas' Arrow-backed strings (pyarrow installed) refuse such labels here
                    raise _not_text(self.name, values) from None
            if coords.has_duplicates:
                dups = coords[coords.duplicated()].unique().tolist()[:3]
                raise DimError(f"Dim {self.name!r}: coords must be unique, {dups} appear more than once")
            if self.size is not None and int(self.size) != len(coords):
                raise DimError(f"Dim {self.name!r}: size={self.size} disagrees with the {len(coords)} coords given")
            object.__setattr__(self, "coords", coords)
            object.__setattr__(self, "size", len(coords))
        elif self.size is not None:
            if (
                isinstance(self.size, bool)
                or not isinstance(self.size, (int, np.integer))
                or not 0 <= self.size < MAX_SIZE
            ):
                raise DimError(
                    f"Dim {self.name!r}: size must be a non-negative int below 2**63 (an int64 length) or None, got {self.size!r}"
                )
            object.__setattr__(self, "size", int(self.size))
        try:
            object.__setattr__(self, "_digest", _coords_digest(self.coords))
        except UnicodeEncodeError:
            raise _not_text(self.name, self.coords) from None

    def digest_caveat(self) -> str | None:
        """Why this dim's digest holds only in this process (its labels come from a function), or None."""
        return f"dim {self.name!r} takes its labels from a function" if derivation_of(self) is not None else None

    def rename(self, new_name: str) -> "Dim":
        """The same size and coords under another name (a derived dim stays derived: renamed back, it is not its source)."""
        dim = Dim(new_name, self.size, self.coords, origin=self.origin)
        if self.origin is not None and self in _DERIVATIONS:
            _DERIVATIONS.setdefault(dim, _DERIVATIONS[self])
        return dim

    @property
    def labels(self) -> pd.Index:
        """The coords, or the positions 0..n-1 for a Dim without coords (static size needed)."""
        if self.coords is not None:
            return self.coords
        if self.size is None:
            raise DimError(f"dim {self.name!r} has no size yet, so it has no labels")
        return pd.RangeIndex(self.size)

    def __repr__(self):
        parts = [repr(self.name)]
        if self.coords is not None:
            shown = self.coords[:5].tolist()
            more = ", ..." if len(self.coords) > 5 else ""
            parts.append(f"coords=[{', '.join(map(repr, shown))}{more}]")
        elif self.size is not None:
            parts.append(f"size={self.size}")
        if self.origin is not None:
            parts.append(f"origin={self.origin!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


# Derived dims of unknown size -> (the dim they come from, how their labels follow from its labels).
_DERIVATIONS: dict = {}


def derived_dim(source: Dim, origin: str, labels_from, size=None) -> Dim:
    """A dim made from `source` at build time whose labels follow from its labels (size: None unless known).

    `labels_from(index)` maps the labels a DataArray input supplies for `source`
    to the labels of the new dim (e.g. `index[n:]` for `diff`), so outputs carry
    xarray's coords even when the Dim itself has none.
    """
    dim = Dim(source.name, size=size, origin=origin)
    _DERIVATIONS.setdefault(dim, (source, labels_from))
    return dim


def derivation_of(dim: Dim):
    """`(source dim, labels_from)` for a dim made by `derived_dim`, else None."""
    return _DERIVATIONS.get(dim)


@dataclass(frozen=True, eq=True)
class ProductDim(Dim):
    """A dim whose positions are the product of component dims (row-major), as `stack` makes.

    Size is the product of the components' sizes; coords are
    `pandas.MultiIndex.from_product` with the component names as levels
    (a component without coords contributes 0..n-1). The MultiIndex is built
    only when someone asks for `coords` (a DataArray output, a `sel`), once per
    ProductDim: equality and hashing use the components, so `stack` on large
    dims costs nothing until labels are wanted.

    >>> import dimgraph as dg
    >>> cell = dg.ProductDim("cell", (dg.Dim("a", coords=["x", "y"]), dg.Dim("b", size=2)))
    >>> cell.size, cell.coords.names
    (4, FrozenList(['a', 'b']))
    >>> cell.coords[1]
    ('x', 1)
    """

    dims: tuple = ()

    def __init__(self, name, dims):
        if not isinstance(dims, (list, tuple, str, Dim)):
            raise TypeError(f"ProductDim {name!r}: dims must be a non-empty tuple of Dims, got {dims!r}")
        dims = as_dim_tuple(dims, f"ProductDim {name!r}")
        if not dims:
            raise TypeError(f"ProductDim {name!r}: give a non-empty tuple of Dims, got {dims!r}")
        if not isinstance(name, str) or not name:
            raise TypeError(f"ProductDim: the name must be a non-empty str, got {name!r}")
        check_unique(dims, f"ProductDim {name!r}")
        sizes = [d.size for d in dims]
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "dims", dims)
        size = math.prod(sizes) if None not in sizes else None
        if size is not None and size >= MAX_SIZE:
            raise DimError(
                f"ProductDim {name!r}: its size {size} (the product of its dims' sizes {sizes}) is not an int64 length"
            )
        object.__setattr__(self, "size", size)
        object.__setattr__(self, "origin", None)
        digest = hashlib.blake2b(b"product", digest_size=16)
        for d in dims:
            digest.update(repr((type(d).__name__, d.name, d.size, d.origin)).encode() + d._digest)
        object.__setattr__(self, "_digest", digest.digest())

    @property
    def coords(self):
        """The `pandas.MultiIndex` of the product (levels: component names), built on first use; None while a size is unknown."""
        found = self.__dict__.get("_multiindex", False)
        if found is False:
            found = None
            if self.size is not None:
                found = product_index([d.labels for d in self.dims], [d.name for d in self.dims])
            object.__setattr__(self, "_multiindex", found)
        return found

    def rename(self, new_name: str) -> "ProductDim":
        """The same components under another name."""
        return ProductDim(new_name, self.dims)

    def __repr__(self):
        return f"ProductDim({self.name!r}, ({', '.join(map(repr, self.dims))}{',' if len(self.dims) == 1 else ''}))"


def product_index(levels, names) -> pd.MultiIndex:
    """The row-major product of `levels` as a MultiIndex whose levels keep their given order.

    NOTE: as xarray's `stack` builds it (`pandas.MultiIndex.from_product` would sort the
    levels), so a later `unstack` of a selection restores the components in their order.
    """
    levels = [pd.Index(level) for level in levels]
    codes = [c.ravel() for c in np.meshgrid(*[np.arange(len(level)) for level in levels], indexing="ij")]
    return pd.MultiIndex(levels=levels, codes=codes, names=list(names))


def fmt_dims(dims) -> str:
    """`(country: 3, obs: ?)`, the one way dims are shown in messages and types."""
    return "(" + ", ".join(f"{d.name}: {'?' if d.size is None else d.size}" for d in dims) + ")"


def describe_difference(a: Dim, b: Dim) -> str:
    """Why two Dims of one name differ: sizes, or the first differing coords."""
    if a.size != b.size:
        if a.coords is not None and b.coords is not None:
            only = [list(x.difference(y, sort=False))[:5] for x, y in ((a.coords, b.coords), (b.coords, a.coords))]
            return f"size {_size(a)} vs {_size(b)}; labels only in the first: {only[0]}, only in the second: {only[1]}"
        return f"size {_size(a)} vs {_size(b)}"
    if (a.coords is None) != (b.coords is None):
        return "one has coords and the other has none"
    if a.coords is not None:
        for k, (u, v) in enumerate(zip(a.coords, b.coords)):
            if not (u == v or (u != u and v != v)):
                return f"coords differ first at position {k}: {u!r} vs {v!r}"
        return f"coords of dtype {a.coords.dtype} vs {b.coords.dtype}"
    if a.origin is not None and b.origin is not None:
        return f"both are derived, {a.origin} and {b.origin}, so their sizes and labels may differ"
    if a.origin != b.origin:
        return f"one is derived ({a.origin or b.origin}), so their sizes may differ"
    return "they differ"


def _size(d):
    return "?" if d.size is None else d.size


def clash(what, name, a, a_in, b, b_in):
    """The DimError for two different Dims sharing `name`."""
    return DimError(
        f"{what}: two different dims named {name!r}: {a!r} in {a_in} and {b!r} in {b_in} "
        f"({describe_difference(a, b)})\n" + clash_hint(name, a, b)
    )


def clash_hint(name, a, b) -> str:
    """What to do about two Dims named `name`: for slices of one dim, the lag idiom; else align or rename."""
    if a.origin is None and b.origin is None:
        return (
            "hint: select/rename so the dims agree, align them by coords with dg.align(...), "
            "or use the same Dim object for both"
        )
    return (
        f"hint: a dim cut from {name!r} (a slice, diff, ...) has its own length and labels, so it does not pair with "
        f"another by position. For a lag, shift first and cut the same steps from both sides: "
        f"`s = slice(1, None); y.isel({name}=s) - phi * y.shift({name}=1).isel({name}=s)`; "
        f"to pair two cuts position by position anyway, put one on the other's dim: "
        f"`a.rename({{{name!r}: b.dims[k]}})` (their lengths must then agree when the data comes)"
    )


def as_dim_tuple(dims, what) -> tuple:
    """A tuple of Dim objects for a declaration; strings are refused (a new dim is only a Dim)."""
    if dims is None:
        return ()
    if isinstance(dims, Dim):
        dims = (dims,)
    elif isinstance(dims, str):
        raise TypeError(
            f"{what}: dims must be Dim objects, got the string {dims!r}; declare it first, "
            f"e.g. {dims} = dg.Dim({dims!r}, size=...)"
        )
    dims = tuple(dims)
    for d in dims:
        if not isinstance(d, Dim):
            raise TypeError(f"{what}: dims must be Dim objects, got {d!r} in {dims!r}")
    check_unique(dims, what)
    return dims


def check_unique(dims, what):
    seen = {}
    for d in dims:
        if d.name in seen:
            raise DimError(f"{what}: dim name {d.name!r} appears twice in {fmt_dims(dims)}")
        seen[d.name] = d


def dim_refs(ref, what="dims"):
    """The tuple of dim references in a `dims`/`dim` argument (None stays None).

    The one place an argument naming existing dims is read: a Dim or a lone
    string is ONE dim (never a sequence of one-letter names); a list or tuple
    holds Dims and names.
    """
    if ref is None:
        return None
    if isinstance(ref, (Dim, str)):
        return (ref,)
    if not isinstance(ref, (list, tuple)):
        raise TypeError(f"{what}: a dim is referenced by a Dim or its name (or a list of them), got {ref!r}")
    for r in ref:
        if not isinstance(r, (Dim, str)):
            raise TypeError(f"{what}: a dim is referenced by a Dim or its name, got {r!r} in {ref!r}")
    return tuple(ref)


def resolve_dims(dims, ref, what, var_label="the variable") -> tuple:
    """The Dims of `dims` that `ref` names (a Dim, a name, or a list of them; None: all).

    A lone string is one name. A name or Dim that is not among `dims` is a
    DimError listing the dims there are; a Dim whose name matches but which differs is a clash.
    """
    refs = dim_refs(ref, what)
    if refs is None:
        return tuple(dims)
    by_name = {d.name: d for d in dims}
    out = []
    for r in refs:
        name = r.name if isinstance(r, Dim) else r
        found = by_name.get(name)
        if found is None:
            raise DimError(f"{what}: {var_label} has no dim {name!r}; its dims are {fmt_dims(dims)}")
        if isinstance(r, Dim) and r != found:
            raise clash(what, name, r, "the argument", found, var_label)
        if any(found is o for o in out):
            raise DimError(f"{what}: dim {name!r} is given twice")
        out.append(found)
    return tuple(out)


def unify_dims(what, variables) -> tuple:
    """The dims of a broadcast of `variables`: xarray's order of first appearance, clashes refused."""
    seen, order, where = {}, [], {}
    for k, v in enumerate(variables):
        for d in v.type.dims:
            prev = seen.get(d.name)
            if prev is None:
                seen[d.name] = d
                where[d.name] = _label(v, k)
                order.append(d)
            elif prev != d:
                raise clash(what, d.name, prev, where[d.name], d, _label(v, k))
    return tuple(order)


def _label(v, k):
    return f"{v.name!r}" if v.name else f"operand {k} {fmt_dims(v.type.dims)}"
