"""Combining labeled variables: `concat`, `dot` (and `a @ b`), and `align`.

Where it sits: `dg.concat` builds one `Concat` node and `dg.dot` one `Dot`
node, lowered in `dimgraph.lower.combine` to `Join` (after aligning and
broadcasting the pieces) and to one `Einsum`. `dg.align` builds no op of its
own: coords are static facts of Dims, so the joined coords and, per input, the
positions it takes from them are computed here, once, and become an `isel` by a
constant indexer (a gather) plus a `where` for the labels an input lacks.

Semantics are xarray's (`xr.concat`, `xr.dot`, `xr.align`), with one designed
difference: dimgraph never aligns implicitly. Two Dims of one name with
different coords in one expression are a `DimError` that shows the first
difference; `align` is the explicit way to bring them together.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from dimgraph.core.graph import Apply
from dimgraph.core.linalg import dot as core_dot
from dimgraph.errors import DimError
from dimgraph.labeled.basic import constant
from dimgraph.labeled.dims import Dim, clash, dim_refs, fmt_dims, resolve_dims, unify_dims
from dimgraph.labeled.indexing import isel
from dimgraph.labeled.math import any_labeled, as_operand
from dimgraph.labeled.ops import LabeledOp, _check_labeled, _names, is_labeled
from dimgraph.labeled.shape import broadcast_to_dims, full_like, rename
from dimgraph.labeled.type import LabeledType


def _label(x, k):
    return repr(x.name) if x.name else f"piece {k} {fmt_dims(x.type.dims)}"


def _operands(xs, what):
    if isinstance(xs, (str, bytes)) or is_labeled(xs) or not hasattr(xs, "__iter__"):
        raise TypeError(f"{what}: give a list of labeled variables, got {xs!r}")
    out = [as_operand(x, what) for x in xs]
    for x in out:
        _check_labeled(what, x)
    return out


# ---------------------------------------------------------------------------
# concat


def _concat_dim(pieces, name, given):
    """The Dim the pieces' `name` dims make when concatenated (coords appended, sizes added)."""
    found = [next((d for d in x.type.dims if d.name == name), None) for x in pieces]
    with_coords = [k for k, d in enumerate(found) if d is not None and d.coords is not None]
    if with_coords:
        if len(with_coords) != len(pieces):
            k = next(k for k in range(len(pieces)) if k not in with_coords)
            why = "lacks that dim" if found[k] is None else "has no coords on it"
            raise DimError(
                f"concat: dim {name!r} has coords in {_label(pieces[with_coords[0]], with_coords[0])} but "
                f"{_label(pieces[k], k)} {why}; give every piece coords on {name!r} (or none)"
            )
        first, *rest = [d.coords for d in found]
        coords = first.append(rest) if rest else first
        if coords.has_duplicates:
            dups = coords[coords.duplicated()].unique().tolist()
            shown = ", ".join(map(repr, dups[:5])) + (f", ... ({len(dups)} in all)" if len(dups) > 5 else "")
            raise DimError(
                f"concat: the labels [{shown}] of dim {name!r} appear in more than one piece, and a Dim's coords are "
                "unique; select disjoint labels, or rename/drop the coords first"
            )
        if len(pieces) == 1:
            return found[0]
        return Dim(name, coords=coords)
    sizes = [1 if d is None else d.size for d in found]
    if None not in sizes:
        return Dim(name, size=sum(sizes))
    parts = ", ".join(
        "1" if d is None else (d.origin or d.name) + ("?" if d.size is None else f":{d.size}") for d in found
    )
    return Dim(name, origin=f"concat({parts})")


def concat_dims(pieces, dim, what="concat"):
    """(output dims, the concat Dim, whether it is new) for `concat(pieces, dim)`, as xarray orders them."""
    name = dim.name if isinstance(dim, Dim) else dim
    if not isinstance(name, str):
        raise TypeError(f"{what}: `dim` must be a Dim or the name of an existing dim, got {dim!r}")
    present = any(name in x.type.names for x in pieces)
    others = unify_dims(what, [_without(x, name) for x in pieces])  # one Dim per name, xarray's order
    if not present:
        if not isinstance(dim, Dim):
            have = sorted({n for x in pieces for n in x.type.names})
            raise DimError(
                f"{what}: no piece has a dim {name!r} (they have {have}); a new dim must be a Dim object, "
                f"e.g. dg.concat(xs, dg.Dim({name!r}, coords=[...]))"
            )
        new = dim if dim.size is not None else Dim(name, size=len(pieces))
        if new.size != len(pieces):
            raise DimError(f"{what}: the new dim {name!r} has size {new.size}, but {len(pieces)} pieces were given")
        return (new,) + others, new, True
    joined = _concat_dim(pieces, name, dim)
    order, seen = [], set()
    for x in pieces:  # first-appearance order with the concat dim in its place
        for d in x.type.dims:
            if d.name not in seen:
                seen.add(d.name)
                order.append(joined if d.name == name else next(o for o in others if o.name == d.name))
    return tuple(order), joined, False


class _Dims:
    """A stand-in with only `type.dims` and `name`, for `unify_dims` over a piece minus the concat dim."""

    __slots__ = ("type", "name")

    def __init__(self, dims, name):
        self.type = type("T", (), {"dims": dims})()
        self.name = name


def _without(x, name):
    return _Dims(tuple(d for d in x.type.dims if d.name != name), x.name)


@dataclass(frozen=True)
class Concat(LabeledOp):
    """The pieces joined along `dim` (an existing dim's result Dim, or a new one put first); others broadcast."""

    dim: Dim
    new: bool
    dims: tuple

    def make_node(self, *pieces):
        if not pieces:
            raise ValueError("concat: need at least one piece")
        for x in pieces:
            _check_labeled("concat", x)
        dims, joined, new = concat_dims(pieces, self.dim if self.new else self.dim.name)
        if dims != self.dims or joined != self.dim or new != self.new:
            raise DimError(f"{self}: the pieces {[fmt_dims(x.type.dims) for x in pieces]} make dims {fmt_dims(dims)}")
        dtype = np.result_type(*[x.type.dtype for x in pieces]).name
        return Apply(self, list(pieces), [LabeledType(dtype, dims)])

    def __str__(self):
        return f"concat{{{self.dim.name}{', new' if self.new else ''}}}"


def concat(xs, dim):
    """The labeled variables `xs` joined along `dim`, as `xarray.concat`.

    `dim` names an existing dim (a Dim or its name): the pieces may carry
    different Dims of that name (e.g. two `sel` results); their coords are
    appended (a label in two pieces is a DimError, a Dim's coords are unique),
    and a piece without that dim counts as size 1 when no piece has coords on
    it. Or `dim` is a new Dim (its coords, if any, label the pieces), put first.
    Every other dim must be the same Dim wherever it appears; pieces lacking one
    are broadcast over it. Dims in xarray's order (first appearance).

    >>> import dimgraph as dg, numpy as np
    >>> country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    >>> x = dg.constant(np.arange(3.0), dims=(country,))
    >>> y = dg.concat([x.sel(country=["Chile"]), x.sel(country=["USA", "Italy"])], "country")
    >>> y.dims
    (Dim('country', coords=['Chile', 'USA', 'Italy']),)
    >>> chain = dg.Dim("chain", coords=["a", "b"])
    >>> dg.concat([x, 2 * x], chain).eval().sel(chain="b").values.tolist()
    [0.0, 2.0, 4.0]
    """
    pieces = _operands(xs, "concat")
    if not pieces:
        raise ValueError("concat: need at least one piece")
    dims, joined, new = concat_dims(pieces, dim)
    return Concat(joined, new, dims)(*pieces)


# ---------------------------------------------------------------------------
# dot


@dataclass(frozen=True)
class Dot(LabeledOp):
    """The product of the operands summed over `dims` (each a dim of at least one operand), as `xarray.dot`."""

    dims: tuple

    def make_node(self, *operands):
        for x in operands:
            _check_labeled("dot", x)
        every = unify_dims("dot", operands)
        for d in self.dims:
            if d not in every:
                raise DimError(f"dot: no operand has the dim {d!r}; their dims are {fmt_dims(every)}")
        out = tuple(d for d in every if d not in self.dims)
        dtype = np.einsum(
            *[a for x in operands for a in (np.zeros((1,) * x.type.ndim, x.type.dtype), list(range(x.type.ndim)))]
        ).dtype.name
        return Apply(self, list(operands), [LabeledType(dtype, out)])

    def __str__(self):
        return f"dot{{{_names(self.dims)}}}"


def dot(*arrays, dim=None):
    """Products of the operands summed over `dim`, as `xarray.dot` (lowered to one einsum).

    `dim=None` sums the dims that appear in more than one operand; `dim=...`
    sums every dim; else a Dim, a name or a list of them. The result has the
    other dims in order of first appearance. `a @ b` is `dot(a, b)`. Two
    positional operands get NumPy's `dot` (`dg.core.dot`).

    >>> import dimgraph as dg, numpy as np
    >>> i, j, k = dg.Dim("i", size=2), dg.Dim("j", size=3), dg.Dim("k", size=4)
    >>> a = dg.constant(np.ones((2, 3)), dims=(i, j))
    >>> b = dg.constant(np.ones((3, 4)), dims=(j, k))
    >>> (a @ b).dims == (i, k), dg.dot(a, b, dim=...).eval().item()
    (True, 24.0)
    """
    if len(arrays) == 1 and isinstance(arrays[0], (list, tuple)):
        arrays = tuple(arrays[0])

    if len(arrays) == 2 and dim is None and not any_labeled(arrays):  # positional operands: NumPy's dot
        return core_dot(*arrays)
    xs = _operands(arrays, "dot")
    if not xs:
        raise TypeError("dot: give at least one labeled variable")
    every = unify_dims("dot", xs)
    if dim is None:
        counts = {}
        for x in xs:
            for d in x.type.dims:
                counts[d.name] = counts.get(d.name, 0) + 1
        dims = tuple(d for d in every if counts[d.name] > 1)
    elif dim is Ellipsis:
        dims = every
    else:
        dims = resolve_dims(every, dim, "dot", "the operands")
    return Dot(dims)(*xs)


# ---------------------------------------------------------------------------
# align

_JOINS = {
    "outer": lambda indexes: functools.reduce(lambda a, b: a.union(b), indexes),
    "inner": lambda indexes: functools.reduce(lambda a, b: a.intersection(b), indexes),
    "left": lambda indexes: indexes[0],
    "right": lambda indexes: indexes[-1],
}


def _joined_dim(name, found, join, what):
    """The Dim all of `found` (Dims of one name) are aligned to, or None when they already agree."""
    distinct = list(dict.fromkeys(found))
    if len(distinct) == 1:
        return None
    indexed = [d for d in distinct if d.coords is not None]
    plain = [d for d in distinct if d.coords is None]
    if not indexed:  # as xarray: dims without an index align only when their sizes agree
        raise clash(what, name, plain[0], "one input", plain[1], "another (neither has coords to align by)")
    if join == "exact":
        raise clash(what, name, distinct[0], "one input", distinct[1], "another (join='exact')")
    joined = _JOINS[join]([d.coords for d in found if d.coords is not None])
    for d in plain:
        if d.size != len(joined):
            raise DimError(
                f"{what}: dim {name!r} has no coords in one input and size {'?' if d.size is None else d.size}, "
                f"but the coords it is aligned to have {len(joined)} labels (join={join!r})"
            )
    return Dim(name, coords=joined)


def _reindex(x, d, target, fill_value):
    """`x` with dim `d` reindexed to the coords of `target` (a gather; `fill_value` where a label is missing)."""
    if d == target:
        return x
    if d.coords is None:  # no labels of its own: its positions take the target's (sizes agree)
        return rename(x, {d.name: target})
    found = np.asarray(d.coords.get_indexer(target.coords), dtype=np.int64)
    missing = found < 0
    if d.size == 0 and missing.any():  # nothing to gather from: every value is the fill
        dtype = np.result_type(x.type.dtype, fill_value)
        rest = full_like(x.sum(d) if x.type.dtype != "bool" else x.any(d), fill_value, dtype)
        return broadcast_to_dims(rest, tuple(target if o == d else o for o in x.type.dims))
    y = isel(x, {d: constant(np.where(missing, 0, found), dims=(target,))})
    if missing.any():
        y = y.where(constant(~missing, dims=(target,)), fill_value)
    return y


def _override(xs, name, found):
    """join="override" on dim `name`: every input gets one Dim, so they combine (as xarray's do).

    The Dim is the first one with coords (xarray: the first index overrides the
    others, and an index-less dim takes the index in arithmetic), else the first
    of known size. Sizes must agree; a data-sized dim is checked when data comes.
    """
    known = [d for d in found if d.size is not None]
    for d in known[1:]:
        if d.size != known[0].size:
            raise clash("align", name, known[0], "one input", d, "another (join='override' needs equal sizes)")
    target = next((d for d in found if d.coords is not None), known[0] if known else found[0])
    out = []
    for x in xs:
        d = next((d for d in x.type.dims if d.name == name), None)
        out.append(x if d is None or d == target else rename(x, {d.name: target}))
    return out


def align(*objects, join="inner", fill_value=np.nan, exclude=()):
    """The inputs reindexed to common coords on every dim name they share, as `xarray.align`.

    `join`: "inner" (labels in all), "outer" (in any; the missing get
    `fill_value`, so integers become floats under the default NaN), "left",
    "right" (the first's / last's labels), "exact" (a DimError unless they
    agree) or "override" (every input gets the first input's coords, or the
    first coords any input has; sizes must agree). Computed when the graph is built: each input becomes a gather by
    constant positions (and a `where` for filled labels); inputs already on the
    joined coords pass unchanged. A dim without coords aligns only with dims of
    its size. `exclude`: dim names left alone.

    >>> import dimgraph as dg, numpy as np
    >>> a = dg.constant(np.array([1.0, 2.0, 3.0]), dims=(dg.Dim("x", coords=["p", "q", "r"]),))
    >>> b = dg.constant(np.array([10.0, 20.0]), dims=(dg.Dim("x", coords=["r", "p"]),))
    >>> a2, b2 = dg.align(a, b)
    >>> list(a2.dims[0].coords), (a2 + b2).eval().values.tolist()
    (['p', 'r'], [21.0, 13.0])
    >>> a3, b3 = dg.align(a, b, join="left", fill_value=0.0)
    >>> b3.eval().values.tolist()
    [20.0, 0.0, 10.0]
    """
    if join not in (*_JOINS, "exact", "override"):
        raise ValueError(f"align: join must be one of {sorted((*_JOINS, 'exact', 'override'))}, got {join!r}")
    xs = _operands(objects, "align")
    skip = {e.name if isinstance(e, Dim) else e for e in dim_refs(exclude, "align") or ()}
    names = []
    for x in xs:
        for d in x.type.dims:
            if d.name not in names and d.name not in skip:
                names.append(d.name)
    for name in names:
        found = [d for x in xs for d in x.type.dims if d.name == name]
        if join == "override":
            xs = _override(xs, name, found)
            continue
        target = _joined_dim(name, found, join, "align")
        if target is None:
            continue
        out = []
        for x in xs:
            d = next((d for d in x.type.dims if d.name == name), None)
            out.append(x if d is None else _reindex(x, d, target, fill_value))
        xs = out
    return tuple(xs)


__all__ = ["Concat", "Dot", "concat", "concat_dims", "dot", "align"]
