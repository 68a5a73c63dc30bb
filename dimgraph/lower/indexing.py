"""Lowering of labeled indexing (`Isel`, `IselUpdate`, `MaskPositions`) to core indexing ops.

Labels are already positions (resolved when the graph was built). A read is a
basic `Subtensor` (ints, slices, 0-d indexers: views) followed, when there are
indexer arrays, by one `AdvancedSubtensor` with the indexed axes moved first
and the arrays aligned to their broadcast dims (length-1 axes for the dims an
indexer lacks, so NumPy's broadcasting is xarray's by-name broadcasting); a
final DimShuffle puts the axes in the labeled output's order. An update is one
`IncSubtensor`/`AdvancedIncSubtensor` on the same layout, transposed back.
"""

from __future__ import annotations

from dimgraph.core.basic import constant as positional_constant
from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.extra import arange, assert_op
from dimgraph.core.math import eq
from dimgraph.core.shape import ShapeI
from dimgraph.core.shape_ops import broadcast_to
from dimgraph.core.subtensor import (
    ARRAY,
    FULL_SLICE,
    SYMBOLIC,
    AdvancedIncSubtensor,
    AdvancedSubtensor,
    IncSubtensor,
    Subtensor,
)
from dimgraph.labeled.indexing import Isel, IselUpdate, MaskPositions, entry_inputs
from dimgraph.lower.rules import align, lowering


def _int64(t):
    return t if t.type.dtype == "int64" else t.astype("int64")


def _layout(op, node_inputs, x_dims, idx_low, out_dims):
    """Split the entries: per axis of x its basic entry, and the indexer arrays with their dims."""
    per_entry = entry_inputs(op.entries, list(zip(node_inputs, idx_low)))
    basic, scalars, arrays, kept = [], [], [], []  # kept: per remaining axis, its dim or None (indexed)
    for e, ins in zip(op.entries, per_entry):
        if e[0] == "int":
            basic.append(e[1])
        elif e[0] == "slice":
            basic.append(("slice", e[1], e[2], e[3]))
            scalars.extend(_int64(low) for _, low in ins)
            kept.append(e[4])
        else:
            ((v, low),) = ins
            if v.type.ndim == 0:
                basic.append(SYMBOLIC)
                scalars.append(_int64(low))
            else:
                basic.append(FULL_SLICE)
                arrays.append((v, low))
                kept.append(None)
    indexed = {d.name for v, _ in arrays for d in v.type.dims}
    bdims = tuple(d for d in out_dims if d.name in indexed)
    return basic, scalars, arrays, kept, bdims


@lowering.register(Isel)
def _(op, node, inputs, ctx):
    x, *idx = inputs
    x_dims = node.inputs[0].type.dims
    out_dims = node.outputs[0].type.dims
    basic, scalars, arrays, kept, bdims = _layout(op, node.inputs[1:], x_dims, idx, out_dims)
    y = x
    if scalars or any(b != FULL_SLICE for b in basic):
        y = Subtensor(tuple(basic))(x, *scalars)
    if not arrays:
        return y
    front = [k for k, d in enumerate(kept) if d is None]
    rest = [k for k, d in enumerate(kept) if d is not None]
    perm = tuple(front + rest)
    if perm != tuple(range(len(kept))):
        y = DimShuffle(len(kept), perm)(y)
    keys = [align(low, v.type.dims, bdims) for v, low in arrays]
    z = AdvancedSubtensor((ARRAY,) * len(keys) + (FULL_SLICE,) * len(rest))(y, *keys)
    z_dims = bdims + tuple(kept[k] for k in rest)
    return align(z, z_dims, out_dims)


@lowering.register(IselUpdate)
def _(op, node, inputs, ctx):
    x, v, *idx = inputs
    x_var, v_var = node.inputs[0], node.inputs[1]
    x_dims = x_var.type.dims
    sel_dims = Isel(op.entries).make_node(x_var, *node.inputs[2:]).outputs[0].type.dims
    basic, scalars, arrays, kept, bdims = _layout(op, node.inputs[2:], x_dims, idx, sel_dims)
    if not arrays and any(isinstance(e, tuple) for e in basic):
        # NOTE: a selection of one element goes the advanced way below (0-d index arrays): the
        # numba backend's IncSubtensor fails on a 0-d selection
        v_low = align(v, v_var.type.dims, sel_dims)
        return IncSubtensor(tuple(basic), op.mode)(x, v_low, *scalars)
    # x's axes: the ones with indexer arrays first, then the others; ints and 0-d indexers become 0-d arrays
    front = [k for k, e in enumerate(basic) if e == FULL_SLICE and _is_array_axis(op.entries, k, node.inputs[2:])]
    rest = [k for k in range(len(basic)) if k not in front]
    perm = tuple(front + rest)
    xt = x if perm == tuple(range(len(perm))) else DimShuffle(len(perm), perm)(x)
    index, extra = [ARRAY] * len(arrays), [align(low, var.type.dims, bdims) for var, low in arrays]
    it = iter(scalars)
    for k in rest:
        e = basic[k]
        if e == SYMBOLIC:
            index.append(ARRAY)
            extra.append(next(it))
        elif isinstance(e, tuple):
            index.append(e)
            extra.extend(next(it) for p in e[1:] if p == SYMBOLIC)
        else:
            index.append(ARRAY)
            extra.append(positional_constant(e, dtype="int64"))
    target_dims = bdims + tuple(op.entries[k][4] for k in rest if isinstance(basic[k], tuple))
    v_low = align(v, v_var.type.dims, target_dims)
    out = AdvancedIncSubtensor(tuple(index), op.mode)(xt, v_low, *extra)
    if perm == tuple(range(len(perm))):
        return out
    inverse = tuple(perm.index(k) for k in range(len(perm)))
    return DimShuffle(len(perm), inverse)(out)


def _is_array_axis(entries, k, inputs):
    """Whether axis k is indexed by an indexer of one or more dims (0-d ones are scalars)."""
    return entries[k][0] == "index" and entry_inputs(entries, inputs)[k][0].type.ndim > 0


@lowering.register(MaskPositions)
def _(op, node, inputs, ctx):
    (mask,) = inputs
    n = mask.type.shape[0] if mask.type.shape[0] is not None else ShapeI(0)(mask)
    positions = AdvancedSubtensor((ARRAY,))(arange(n), mask)
    if op.dim.size is None:
        return positions
    # the mask's selection matched by name to a dim of known size (`adopt_mask_dim`): its count must be that size
    counted = assert_op(
        positions,
        eq(ShapeI(0)(positions), op.dim.size),
        msg=f"isel: the boolean mask on dim {op.dim.name!r} must select {op.dim.size} positions, the size of the "
        f"dim {op.dim.name!r} it is matched with by name",
    )
    return broadcast_to(counted, [op.dim.size])
