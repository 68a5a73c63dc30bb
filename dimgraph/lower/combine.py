"""Lowering of product dims and combining ops: `Stack`/`Unstack` -> DimShuffle + Reshape, `Concat` -> Join, `Dot` -> Einsum.

A stack moves its components last (a DimShuffle only when they are not
already last and in order) and reshapes them into one axis, so stacking
trailing dims is a view; an unstack moves the product axis last and reshapes it
into the component sizes. Sizes are static where the Dims know them, else the
symbolic sizes bound from the data. A concat aligns each piece to the output's
dim order (a length-1 axis for a new dim or for a concat dim a piece lacks),
broadcasts it over the dims it lacks, and joins. A dot is one einsum with one
letter per dim name.
"""

from __future__ import annotations

import math
import string

from dimgraph.core.join import Join
from dimgraph.core.linalg import Einsum, normalize_subscripts
from dimgraph.core.shape import ShapeI
from dimgraph.core.shape_ops import broadcast_to, reshape
from dimgraph.errors import DimError
from dimgraph.labeled.basic import is_dataarray
from dimgraph.labeled.combine import Concat, Dot
from dimgraph.labeled.dims import derivation_of, product_index
from dimgraph.labeled.ops import is_labeled
from dimgraph.labeled.stacking import Stack, Unstack
from dimgraph.lower.rules import align, lowering


def _sizes(x, dims, ctx):
    """The size of each axis of `x` (on `dims`): static ints, else the symbolic size of the dim or of the axis."""
    out = []
    for k, d in enumerate(dims):
        if x.type.shape[k] is not None:
            out.append(x.type.shape[k])
        elif d.size is not None:
            out.append(d.size)
        else:
            out.append(ctx.sizes.get(d) if d in ctx.sizes else ShapeI(k)(x))
    return out


def _product(entries):
    static = [e for e in entries if isinstance(e, int)]
    symbolic = [e for e in entries if not isinstance(e, int)]
    total = math.prod(static)
    if not symbolic:
        return total
    out = symbolic[0]
    for e in symbolic[1:]:
        out = out * e
    return out if total == 1 else out * total


@lowering.register(Stack)
def _(op, node, inputs, ctx):
    in_dims = node.inputs[0].type.dims
    out_dims = node.outputs[0].type.dims
    others = out_dims[:-1]
    xt = align(inputs[0], in_dims, others + op.dim.dims)
    sizes = _sizes(xt, others + op.dim.dims, ctx)
    k = len(others)
    return reshape(xt, sizes[:k] + [_product(sizes[k:])])


@lowering.register(Unstack)
def _(op, node, inputs, ctx):
    in_dims = node.inputs[0].type.dims
    out_dims = node.outputs[0].type.dims
    comps = op.dim.dims
    others = out_dims[: len(out_dims) - len(comps)]
    xt = align(inputs[0], in_dims, others + (op.dim,))
    sizes = _sizes(xt, others + (op.dim,), ctx)[:-1]
    parts = [c.size if c.size is not None else ctx.sizes.get(c) for c in comps]
    unknown = [j for j, p in enumerate(parts) if p is None]
    if unknown:
        known = [p for p in parts if p is not None]
        if len(unknown) > 1 or any(isinstance(p, int) and p == 0 for p in known):
            names = ", ".join(repr(comps[j].name) for j in unknown)
            raise DimError(
                f"unstack: the sizes of the components {names} of {op.dim.name!r} are unknown and do not follow "
                "from the product's size; give the Dims sizes, or use them in an input that brings them"
            )
        total = xt.type.shape[-1] if xt.type.shape[-1] is not None else ShapeI(xt.type.ndim - 1)(xt)
        rest = _product(known)
        parts[unknown[0]] = total // rest if not (isinstance(rest, int) and rest == 1) else total
    return reshape(xt, sizes + parts)


@lowering.register(Concat)
def _(op, node, inputs, ctx):
    out_dims = node.outputs[0].type.dims
    axis = next(k for k, d in enumerate(out_dims) if d.name == op.dim.name)
    pieces = []
    for x, var in zip(inputs, node.inputs):
        own = next((d for d in var.type.dims if d.name == op.dim.name), None)
        target = tuple((own if own is not None else op.dim) if k == axis else d for k, d in enumerate(out_dims))
        y = align(x, var.type.dims, target)
        missing = [k for k, d in enumerate(target) if k != axis and d not in var.type.dims and d.size != 1]
        if missing:
            shape = []
            for k, d in enumerate(target):
                if k == axis:
                    shape.append(y.type.shape[k] if y.type.shape[k] is not None else ShapeI(k)(y))
                else:
                    shape.append(ctx.size(d, "concat"))
            y = broadcast_to(y, shape)
        pieces.append(y)
    return Join(axis)(*pieces) if len(pieces) > 1 else pieces[0]


@lowering.register(Dot)
def _(op, node, inputs, ctx):
    letters = {}
    for var in node.inputs:
        for d in var.type.dims:
            if d.name not in letters:
                if len(letters) == len(string.ascii_letters):
                    raise DimError(f"dot: more than {len(string.ascii_letters)} distinct dims")
                letters[d.name] = string.ascii_letters[len(letters)]
    terms = ["".join(letters[d.name] for d in var.type.dims) for var in node.inputs]
    out = "".join(letters[d.name] for d in node.outputs[0].type.dims)
    subscripts = normalize_subscripts(",".join(terms) + "->" + out, tuple(len(t) for t in terms))
    return Einsum(subscripts)(*inputs)


class ProductLabels:
    """The MultiIndex of a ProductDim whose size is known only at run time, for `LabeledOutput`.

    Each component's labels come from its Dim (coords, or 0..n-1 for a static
    size), else from an input that carries the component (a DataArray's index,
    else 0..n-1 for its length there), else, for one component at most, from
    the output's length (0..n-1), as xarray's stack labels dims without coords.
    """

    __slots__ = ("dim", "parts")

    def __init__(self, dim, inputs):
        self.dim = dim
        self.parts = []
        for c in dim.dims:
            if c.size is not None:
                self.parts.append((c.name, c.labels, (), ()))
                continue
            source, maps = c, []
            while True:
                carriers = tuple(
                    (k, v.type.dims.index(source))
                    for k, v in enumerate(inputs)
                    if is_labeled(v) and source in v.type.dims
                )
                derivation = derivation_of(source)
                if carriers or derivation is None:
                    break
                source, labels_from = derivation
                maps.append(labels_from)
            self.parts.append((c.name, None, carriers, tuple(maps[::-1])))

    def index(self, length, raw_inputs):
        """The MultiIndex for an output axis of `length` positions, or None when the labels do not follow."""
        import pandas as pd

        levels = []
        for name, labels, carriers, maps in self.parts:
            for k, axis in () if labels is not None else carriers:
                raw = raw_inputs[k]
                found = raw.indexes.get(name) if is_dataarray(raw) else None
                if found is None and hasattr(raw, "shape"):
                    found = pd.RangeIndex(raw.shape[axis] if not is_dataarray(raw) else raw.sizes[name])
                for labels_from in maps:
                    found = labels_from(found)
                labels = found
                break
            levels.append(labels)
        unknown = [j for j, lv in enumerate(levels) if lv is None]
        known = math.prod(len(lv) for lv in levels if lv is not None)
        if len(unknown) > 1 or (unknown and known == 0):
            return None
        if unknown:
            levels[unknown[0]] = pd.RangeIndex(length // known)
        if math.prod(len(lv) for lv in levels) != length:
            return None
        return product_index(levels, [name for name, *_ in self.parts])
