"""Lowering of labeled draws: parameters aligned to the draws' dims, sizes from the dims, one `RandomDraw`."""

from __future__ import annotations

from dimgraph.core.random import RandomDraw
from dimgraph.labeled.random import LabeledRandomDraw
from dimgraph.lower.rules import align, lowering


@lowering.register(LabeledRandomDraw)
def _(op, node, inputs, ctx):
    state, *params = inputs
    aligned = [align(p, v.type.dims, op.dims) for p, v in zip(params, node.inputs[1:])]
    sizes = [ctx.size(d, str(op)) for d in op.dims]
    return RandomDraw(op.kind)(state, *aligned, *sizes)
