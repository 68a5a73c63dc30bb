"""One lowering per labeled op: dims become axis numbers, and labeled ops become positional ones.

Each rule gets the op, the labeled node, its inputs already lowered (axes in
the order of `node.inputs[k].type.dims`) and the lowering pass (for the sizes of
dims a rule must materialise, e.g. `expand_dims`). It returns the positional
output(s), with axes in the order of the node's output dims.
"""

from __future__ import annotations

from functools import singledispatch

import numpy as np

from dimgraph.core import reduce as core_reduce
from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.extra import CumOp, arange, assert_op
from dimgraph.core.extra import diff as core_diff
from dimgraph.core.math import as_float, cast, eq, exp, invert, isnan, log, sqrt, where
from dimgraph.core.shape import ShapeI
from dimgraph.core.shape_ops import broadcast_to, full_like
from dimgraph.labeled.ops import (
    Arange,
    BroadcastTo,
    ExpandDims,
    FromPositional,
    FullLike,
    LabeledCumulative,
    LabeledDiff,
    LabeledElemwise,
    LabeledReduce,
    Relabel,
    Squeeze,
    ToPositional,
    Transpose,
)


@singledispatch
def lowering(op, node, inputs, ctx):
    raise TypeError(f"no lowering is registered for the labeled op {op} ({type(op).__name__})")


def align(x, in_dims, out_dims):
    """`x` (axes in `in_dims` order) permuted to `out_dims`, with length-1 axes for the dims it lacks."""
    order = tuple(in_dims.index(d) if d in in_dims else "x" for d in out_dims)
    if order == tuple(range(len(in_dims))):
        return x
    return DimShuffle(len(in_dims), order)(x)


def specify_sizes(x, dims, what):
    """`x` with the static sizes of `dims` in its type; a run-time check guards axes that were unknown."""
    gain = [k for k, (s, d) in enumerate(zip(x.type.shape, dims)) if s is None and d.size is not None]
    if not gain:
        return x
    conds = [eq(ShapeI(k)(x), dims[k].size) for k in gain]
    names = ", ".join(f"{dims[k].name!r} (size {dims[k].size})" for k in gain)
    x = assert_op(x, *conds, msg=f"{what}: the data does not have the sizes of the dims {names}")
    return broadcast_to(x, [d.size if d.size is not None else ShapeI(k)(x) for k, d in enumerate(dims)])


@lowering.register(LabeledElemwise)
def _(op, node, inputs, ctx):
    out_dims = node.outputs[0].type.dims
    return Elemwise(op.scalar_op)(*[align(x, v.type.dims, out_dims) for x, v in zip(inputs, node.inputs)])


_REDUCERS = {
    "sum": core_reduce.sum,
    "prod": core_reduce.prod,
    "max": core_reduce.max,
    "min": core_reduce.min,
    "all": core_reduce.all,
    "any": core_reduce.any,
    "mean": core_reduce.mean,
    "logsumexp": core_reduce.logsumexp,
}


def _skipping_nans(kind, x, axes, ddof):
    """`kind` of float `x` over `axes` with NaNs left out, as NumPy's nan-functions (xarray's skipna=True)."""
    missing = isnan(x)
    if kind in ("sum", "prod"):
        return _REDUCERS[kind](where(missing, 0 if kind == "sum" else 1, x), axes)
    if kind in ("max", "min", "argmax", "argmin"):
        fill = -np.inf if kind in ("max", "argmax") else np.inf
        if kind in ("argmax", "argmin"):
            return getattr(core_reduce, kind)(where(missing, fill, x), axes[0])
        found = _REDUCERS[kind](where(missing, fill, x), axes)
        return where(core_reduce.all(missing, axes), np.nan, found)  # nothing but NaN: NaN
    present = cast(invert(missing), x.type.dtype)
    n = core_reduce.sum(present, axes, keepdims=True)
    mean = core_reduce.sum(where(missing, 0, x), axes, keepdims=True) / n
    keep = tuple(a for a in range(x.type.ndim) if a not in axes)
    if kind == "mean":
        return DimShuffle(x.type.ndim, keep)(mean)
    dev = where(missing, 0, x - mean)
    dof = core_reduce.sum(present, axes) - ddof
    var = core_reduce.sum(dev * dev, axes) / where(dof > 0, dof, np.nan)  # NumPy: no degrees of freedom left -> NaN
    return sqrt(var) if kind == "std" else var


@lowering.register(LabeledReduce)
def _(op, node, inputs, ctx):
    (x,) = inputs
    in_dims = node.inputs[0].type.dims
    axes = tuple(in_dims.index(d) for d in op.dims)
    if op.skipna:
        return _skipping_nans(op.kind, x, axes, op.ddof)
    if op.kind in ("var", "std"):
        return getattr(core_reduce, op.kind)(x, axes, ddof=op.ddof)
    if op.kind in ("argmax", "argmin"):
        return getattr(core_reduce, op.kind)(x, axes[0])
    if op.kind == "logsumexp" and any(d.size == 0 for d in op.dims):
        # the max shift has no identity on an empty dim; there the naive form is exact: log(0) = -inf
        return log(core_reduce.sum(exp(as_float(x)), axes))
    return _REDUCERS[op.kind](x, axes)


@lowering.register(LabeledCumulative)
def _(op, node, inputs, ctx):
    x = inputs[0]
    if op.skipna:
        x = where(isnan(x), 0 if op.mode == "add" else 1, x)
    return CumOp(node.inputs[0].type.dims.index(op.dim), op.mode)(x)


@lowering.register(LabeledDiff)
def _(op, node, inputs, ctx):
    return core_diff(inputs[0], op.n, node.inputs[0].type.dims.index(op.dim))


@lowering.register(Transpose)
@lowering.register(ToPositional)
def _(op, node, inputs, ctx):
    return align(inputs[0], node.inputs[0].type.dims, op.dims)


@lowering.register(Relabel)
def _(op, node, inputs, ctx):
    x = specify_sizes(inputs[0], op.dims, "rename")
    # a dim of unknown size put on a Dim that the data already sized: its length must be that size
    pairs = [
        (k, old, new)
        for k, (old, new) in enumerate(zip(node.inputs[0].type.dims, op.dims))
        if old != new and new.size is None and new in ctx.sizes
    ]
    if not pairs:
        return x
    conds = [eq(ShapeI(k)(x), ctx.sizes[new]) for k, _, new in pairs]
    names = "; ".join(f"{old!r} put on {new!r}" for _, old, new in pairs)
    return assert_op(x, *conds, msg=f"rename: the data gives these dims different lengths: {names}")


@lowering.register(FromPositional)
def _(op, node, inputs, ctx):
    return specify_sizes(inputs[0], op.dims, "from_positional")


@lowering.register(Squeeze)
def _(op, node, inputs, ctx):
    x, in_dims = inputs[0], node.inputs[0].type.dims
    unknown = [k for k, d in enumerate(in_dims) if d in op.dims and x.type.shape[k] is None]
    if unknown:  # sized by the data: checked now, then of static size 1 so the axis can go
        names = ", ".join(repr(in_dims[k].name) for k in unknown)
        x = assert_op(
            x, *[eq(ShapeI(k)(x), 1) for k in unknown], msg=f"squeeze: the data's dims {names} must have size 1"
        )
        x = broadcast_to(
            x, [1 if k in unknown else (s if s is not None else ShapeI(k)(x)) for k, s in enumerate(x.type.shape)]
        )
    return align(x, in_dims, node.outputs[0].type.dims)


def _broadcast(x, in_dims, out_dims, ctx, what):
    x = align(x, in_dims, out_dims)
    if all(d in in_dims or d.size == 1 for d in out_dims):
        return x
    return broadcast_to(x, [ctx.size(d, what) for d in out_dims])


@lowering.register(ExpandDims)
@lowering.register(BroadcastTo)
def _(op, node, inputs, ctx):
    return _broadcast(inputs[0], node.inputs[0].type.dims, node.outputs[0].type.dims, ctx, str(op))


@lowering.register(FullLike)
def _(op, node, inputs, ctx):
    return full_like(inputs[0], op.fill_value, op.dtype)


@lowering.register(Arange)
def _(op, node, inputs, ctx):
    return arange(ctx.size(op.dim, str(op)))
