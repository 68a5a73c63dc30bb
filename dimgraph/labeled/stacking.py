"""Product dims: `stack`, `unstack`, `ravel`, and `sel` by the levels of a product dim.

Where it sits: users call `x.stack(cell=(country, age))`; that builds one
`Stack` node whose output carries a `ProductDim` (last, as xarray), and
`dimgraph.lower.combine` lowers it to a transpose (only when the components are
not already last and in order) plus a reshape, so a stack of trailing dims is a
view. `Unstack` is the inverse (components last). Neither touches coords: the
`ProductDim`'s MultiIndex is built only when an output or a `sel` asks for it.

`sel` on a product dim follows xarray's MultiIndex rules: a tuple of component
labels is one position (resolved per component in `labels.positions`, without
building the MultiIndex); a key naming a component (`sel(country="USA")` on
`cell`) is a level selection, done here as unstack -> sel on the component ->
stack of the components left, so it stays views: no label, no gather. With one
component left the dim becomes that component (xarray renames it to the level),
with none it is dropped. Beyond xarray, a level key may also be a list or slice
of labels (the result is the product of the selected labels with the rest).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from dimgraph.core.graph import Apply, Variable
from dimgraph.errors import DimError
from dimgraph.labeled.basic import constant, is_dataarray
from dimgraph.labeled.dims import Dim, ProductDim, clash, fmt_dims, resolve_dims
from dimgraph.labeled.indexing import isel, sel
from dimgraph.labeled.labels import LabelNotFound, positions
from dimgraph.labeled.math import as_operand
from dimgraph.labeled.ops import LabeledOp, _check_dims_in, _check_labeled, _names
from dimgraph.labeled.shape import transpose
from dimgraph.labeled.type import LabeledType
from dimgraph.lazy import pandas as pd


@dataclass(frozen=True)
class Stack(LabeledOp):
    """The components of `dim` (a ProductDim) merged into it, put last; the other dims keep their order."""

    dim: ProductDim

    def make_node(self, x):
        _check_labeled(str(self), x)
        _check_dims_in("stack", x, self.dim.dims)
        others = tuple(d for d in x.type.dims if d not in self.dim.dims)
        if any(d.name == self.dim.name for d in others):
            raise DimError(f"stack: {_var(x)} already has a dim named {self.dim.name!r} {fmt_dims(x.type.dims)}")
        if any(d.name == self.dim.name for d in self.dim.dims):
            raise DimError(
                f"stack: the new dim {self.dim.name!r} cannot have the name of one of its components (a level)"
            )
        return Apply(self, [x], [LabeledType(x.type.dtype, others + (self.dim,))])

    def __str__(self):
        return f"stack{{{self.dim.name}=({_names(self.dim.dims)})}}"


@dataclass(frozen=True)
class Unstack(LabeledOp):
    """The ProductDim `dim` split back into its components, put last (as xarray's `unstack`)."""

    dim: ProductDim

    def make_node(self, x):
        _check_labeled(str(self), x)
        _check_dims_in("unstack", x, (self.dim,))
        others = tuple(d for d in x.type.dims if d != self.dim)
        for c in self.dim.dims:
            for d in others:
                if d.name == c.name:
                    raise DimError(
                        f"unstack: the component {c.name!r} of {self.dim.name!r} is already a dim of {_var(x)} {fmt_dims(x.type.dims)}"
                    )
        return Apply(self, [x], [LabeledType(x.type.dtype, others + self.dim.dims)])

    def __str__(self):
        return f"unstack{{{self.dim.name}}}"


def _var(x):
    return repr(x.name) if x.name else "the variable"


def _as_x(x, what):
    return as_operand(x, what)


def stack(x, dim=None, **dims):
    """`x` with dims merged into new `ProductDim`s, each put last (xarray's `stack`).

    `dim` is a dict `{new_name: (d1, d2, ...)}` (or use keywords); components are
    Dims or names, in the order that sets the product's layout (row-major: the
    last varies fastest), `...` stands for the dims not named (those with coords
    first, then the others, as xarray orders them). The coords of the result are
    a `pandas.MultiIndex` with the component names as levels.

    >>> import dimgraph as dg, numpy as np
    >>> country, age = dg.Dim("country", coords=["USA", "Chile"]), dg.Dim("age", size=3)
    >>> x = dg.constant(np.arange(6.0).reshape(2, 3), dims=(country, age))
    >>> y = x.stack(cell=(country, age))
    >>> y.dims[-1] == dg.ProductDim("cell", (country, age))
    True
    >>> out = y.eval()
    >>> out.values.tolist(), out.indexes["cell"][4]
    ([0.0, 1.0, 2.0, 3.0, 4.0, 5.0], ('Chile', 1))
    """
    x = _as_x(x, "stack")
    if dim is not None and not isinstance(dim, dict):
        raise TypeError(f"stack: give {{new_name: (dims...)}} or keywords new_name=(dims...), got {dim!r}")
    given = dict(dim or {})
    for k, v in dims.items():
        if k in given:
            raise DimError(f"stack: the new dim {k!r} is given twice")
        given[k] = v
    if not given:
        raise TypeError("stack: give at least one new dim, e.g. x.stack(cell=(a, b))")
    for name, parts in given.items():
        if not isinstance(name, str):
            raise TypeError(f"stack: the new dim's name must be a str, got {name!r}")
        if isinstance(parts, (Dim, str)) or parts is Ellipsis:
            parts = (parts,)
        parts = list(parts)
        if sum(p is Ellipsis for p in parts) > 1:
            raise DimError("stack: `...` may appear only once")
        named = resolve_dims(x.type.dims, [p for p in parts if p is not Ellipsis], "stack", _var(x))
        if Ellipsis in parts:
            # NOTE: xarray expands `...` in the order of its Dataset's dims, which lists the dims with
            # coords first (a DataArray built with coords in dim order), then the others
            k = parts.index(Ellipsis)
            rest = [d for d in x.type.dims if d not in named]
            indexed = [d for d in rest if isinstance(d, ProductDim) or d.coords is not None]
            rest = tuple(indexed + [d for d in rest if d not in indexed])
            named = named[:k] + rest + named[k:]
        if not named:
            raise DimError(f"stack: the new dim {name!r} needs at least one dim to stack")
        x = Stack(ProductDim(name, named))(x)
    return x


def unstack(x, dim=None):
    """`x` with ProductDims split back into their components, put last (xarray's `unstack`).

    `dim`: a ProductDim (or its name) or a list of them; None: every ProductDim of `x`.
    A dim labeled by a MultiIndex that is not a whole product (e.g. a selection of
    a product dim) unstacks as in xarray: missing combinations are NaN.

    >>> import dimgraph as dg, numpy as np
    >>> a, b = dg.Dim("a", size=2), dg.Dim("b", coords=["u", "v", "w"])
    >>> y = dg.constant(np.arange(6.0), dims=(dg.ProductDim("ab", (a, b)),))
    >>> z = y.unstack("ab")
    >>> z.dims == (a, b), z.eval().sel(b="v").values.tolist()
    (True, [1.0, 4.0])
    """
    x = _as_x(x, "unstack")
    if dim is None:
        found = tuple(d for d in x.type.dims if isinstance(d, ProductDim) or isinstance(d.coords, pd.MultiIndex))
    else:
        found = resolve_dims(x.type.dims, dim, "unstack", _var(x))
    for d in found:
        if isinstance(d, ProductDim):
            x = Unstack(d)(x)
        elif isinstance(d.coords, pd.MultiIndex):
            x = _unstack_multiindex(x, d)
        else:
            raise DimError(
                f"unstack: dim {d.name!r} of {_var(x)} is neither a ProductDim (made by stack) nor labeled by a "
                "MultiIndex; it has no components to restore"
            )
    return x


def _unstack_multiindex(x, d):
    """`unstack` of a dim labeled by a MultiIndex that is not a whole product (a selection of a stacked dim).

    As xarray: the components are the level values still used (in the levels'
    order), and combinations the dim lacks are missing values (NaN; the dtype
    as `where` without `other`). Built as a gather onto the whole product.
    """
    index = d.coords.remove_unused_levels()
    if any(n is None for n in index.names):
        raise DimError(
            f"unstack: the MultiIndex of dim {d.name!r} has unnamed levels {list(index.names)}; name them first"
        )
    full = ProductDim(d.name, tuple(Dim(str(n), coords=level) for n, level in zip(index.names, index.levels)))
    at = np.full(full.size, -1, dtype=np.int64)
    if len(index):
        at[np.ravel_multi_index(tuple(np.asarray(c) for c in index.codes), tuple(c.size for c in full.dims))] = (
            np.arange(len(index))
        )
    missing = at < 0
    y = isel(x, {d: constant(np.where(missing, 0, at), dims=(full,))})
    if missing.any():
        y = y.where(constant(~missing, dims=(full,)))
    return Unstack(full)(y)


def ravel(x, name=None):
    """`x` as one dim: every dim stacked in order (row-major, as `np.ravel`) into a ProductDim.

    The new dim is called `name`, by default the dim names joined by "_"
    (`(country, age)` -> `country_age`; one dim `obs` -> `obs_flat`, as a
    product may not share its name with a component). A 0-d variable has
    nothing to ravel (DimError).

    >>> import dimgraph as dg, numpy as np
    >>> country, age = dg.Dim("country", coords=["USA", "Chile"]), dg.Dim("age", size=2)
    >>> y = dg.constant(np.arange(4.0).reshape(2, 2), dims=(country, age)).ravel()
    >>> y.dims
    (ProductDim('country_age', (Dim('country', coords=['USA', 'Chile']), Dim('age', size=2))),)
    """
    x = _as_x(x, "ravel")
    if not x.type.dims:
        raise DimError(f"ravel: {_var(x)} is 0-d, so there are no dims to ravel; use expand_dims to add one")
    if name is None:
        name = "_".join(d.name for d in x.type.dims) + ("_flat" if x.type.ndim == 1 else "")
    return Stack(ProductDim(name, x.type.dims))(x)


# ---------------------------------------------------------------------------
# sel by the levels of a product dim (called by `indexing.sel`)


def _levels(d):
    """The level names of a dim whose labels are tuples (without building a ProductDim's MultiIndex)."""
    if isinstance(d, ProductDim):
        return tuple(c.name for c in d.dims)
    if isinstance(d.coords, pd.MultiIndex):
        return tuple(d.coords.names)
    return ()


def _is_one_label(value) -> bool:
    """A scalar label (not a tuple, list, slice, array or variable)."""
    if isinstance(value, (tuple, list, slice, Variable)) or is_dataarray(value) or value is Ellipsis:
        return False
    return np.ndim(value) == 0


def split_level_keys(x, keys: dict, what="sel"):
    """`keys` split into ordinary keys and level keys `{product dim: {level: label}}`.

    A key is a level key when it names no dim of `x` but a level of one of its
    product dims (or MultiIndex dims); a tuple key on a product dim with fewer
    labels than levels selects the leading levels, and a lone label the first
    level (as xarray).
    """
    names = set(x.type.names)
    owners = {lvl: d for d in x.type.dims for lvl in _levels(d)}
    plain, levels = {}, {}
    for ref, value in keys.items():
        name = ref.name if isinstance(ref, Dim) else ref
        if isinstance(name, str) and name not in names and name in owners:
            if isinstance(value, (list, np.ndarray)) and np.size(value) == 1:
                value = np.asarray(value).reshape(-1)[0]  # xarray: a level takes one label; one in a list counts
            levels.setdefault(owners[name], {})[name] = value
            continue
        plain[ref] = value
    for ref, value in list(plain.items()):
        name = ref.name if isinstance(ref, Dim) else ref
        d = next((d for d in x.type.dims if d.name == name), None)
        if d is not None and _levels(d) and _is_one_label(value):
            value = plain[ref] = (value,)  # a lone label on a product dim is a label of its first level (xarray)
        if d is not None and isinstance(value, tuple) and 0 < len(value) < len(_levels(d)):
            del plain[ref]
            levels.setdefault(d, {}).update(zip(_levels(d), value))
    for d, lv in levels.items():
        if any((r.name if isinstance(r, Dim) else r) == d.name for r in plain):
            raise DimError(f"{what}: dim {d.name!r} is given both by its own key and by the levels {sorted(lv)}")
    return plain, levels


def select_levels(x, levels: dict, what="sel"):
    """`x` with the level selections `{product dim: {level: label}}` applied (see the module docstring)."""
    for d, keys in levels.items():
        if isinstance(d, ProductDim):
            x = _select_product_levels(x, d, keys, what)
        else:
            x = _select_multiindex_levels(x, d, keys, what)
    return x


def _select_product_levels(x, d, keys, what):
    k = x.type.dims.index(d)
    before = tuple(o for o in x.type.dims[:k])
    after = tuple(o for o in x.type.dims[k + 1 :])
    y = sel(Unstack(d)(x), keys)
    comps = {c.name for c in d.dims}
    left = tuple(o for o in y.type.dims if o.name in comps)
    if len(left) > 1:
        y = Stack(ProductDim(d.name, left))(y)
        left = (y.type.dims[-1],)
    return transpose(y, *(before + left + after))


def _select_multiindex_levels(x, d, keys, what):
    index = d.coords
    mask = np.ones(len(index), dtype=bool)
    for level, label in keys.items():
        if np.ndim(label) != 0 or isinstance(label, (list, slice)):
            raise TypeError(
                f"{what}: the level {level!r} of dim {d.name!r} takes one label (as xarray), got {label!r}; "
                "select by tuples on the dim itself"
            )
        mask &= np.asarray(index.get_level_values(level) == label, dtype=bool)
    pos = np.flatnonzero(mask)
    if not pos.size:
        raise LabelNotFound(f"{what}: dim {d.name!r} has no labels with {keys}")
    rest = [n for n in index.names if n not in keys]
    if not rest:
        return isel(x, {d: int(pos[0])})
    if len(rest) == 1:
        new = Dim(rest[0], coords=index.get_level_values(rest[0])[pos])
    else:
        new = Dim(d.name, coords=index[pos].droplevel(list(keys)))
    for o in x.type.dims:
        if o.name == new.name and o != d:
            raise clash(what, new.name, new, f"the level selection of {d.name!r}", o, _var(x))
    return isel(x, {d: constant(pos, dims=(new,))})


def tuple_positions(dim: Dim, key):
    """Positions of tuple labels (one per level) along a product or MultiIndex dim, or None for other keys.

    On a ProductDim each component resolves its own label (`labels.positions`),
    so the MultiIndex is never built; a list of tuples gives an int64 array.
    """
    n = len(_levels(dim))
    if not n:
        return None
    if isinstance(key, tuple):
        if len(key) != n:
            return None
        tuples, scalar = [key], True
    elif isinstance(key, list) and key and all(isinstance(t, tuple) and len(t) == n for t in key):
        tuples, scalar = key, False
    else:
        return None
    if not isinstance(dim, ProductDim):
        found = dim.coords.get_indexer(pd.MultiIndex.from_tuples(tuples))
        missing = [t for t, f in zip(tuples, found) if f < 0]
        if missing:
            raise LabelNotFound(f"sel: dim {dim.name!r} has no labels {missing[:5]}")
        return int(found[0]) if scalar else found.astype(np.int64)
    if dim.size is None:
        raise DimError(
            f"sel: dim {dim.name!r} has a component of unknown size, so its tuple labels have no positions yet"
        )
    per = []
    for c, labels in zip(dim.dims, zip(*tuples)):
        try:
            found = positions(c, list(labels))
        except LabelNotFound as e:
            raise LabelNotFound(f"sel: dim {dim.name!r}, level {c.name!r}: {e}") from None
        per.append(np.asarray(found, dtype=np.int64))
    flat = np.ravel_multi_index(per, tuple(c.size for c in dim.dims)).astype(np.int64)
    return int(flat[0]) if scalar else flat


def product_from_multiindex(name, index):
    """The ProductDim whose MultiIndex is `index` (a full row-major product of unique level values), else None.

    Lets a stacked DataArray come back in (`dg.as_labeled`) as a product that can be unstacked.
    """
    if not isinstance(index, pd.MultiIndex) or None in index.names or len(set(index.names)) != index.nlevels:
        return None
    levels = [index.get_level_values(k).unique() for k in range(index.nlevels)]
    if math.prod(len(lv) for lv in levels) != len(index) or not len(index):
        return None
    try:
        dims = tuple(Dim(str(n), coords=lv) for n, lv in zip(index.names, levels))
    except DimError:
        return None
    product = ProductDim(name, dims)
    return product if product.coords.equals(index) else None


__all__ = [
    "Stack",
    "Unstack",
    "stack",
    "unstack",
    "ravel",
    "split_level_keys",
    "select_levels",
    "tuple_positions",
    "product_from_multiindex",
]
