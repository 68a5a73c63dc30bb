"""The lowering of `LabeledBlockwise`: each input transposed to (batch dims, core dims), then vectorized.

Batch dims an input lacks become length-1 axes (they broadcast statically),
so every operand has the output's batch axes in the output's order. The core
op is applied through `vectorize_graph`, so an op that batches natively
(Einsum for `trace`/`diagonal`) stays itself and the others become `Blockwise`.
"""

from __future__ import annotations

from dimgraph.core.blockwise import Blockwise
from dimgraph.core.type import TensorType
from dimgraph.core.vectorize import vectorize_graph
from dimgraph.labeled.blockwise import LabeledBlockwise
from dimgraph.lower.rules import align, lowering


@lowering.register(LabeledBlockwise)
def _(op, node, inputs, ctx):
    out = node.outputs[0].type.dims
    n_batch = len(out) - len(op.core_dims_out[0])
    batch = tuple(out[:n_batch])
    operands = []
    for x, v, core in zip(inputs, node.inputs, op.core_dims_in):
        have = {d.name: d for d in v.type.dims}
        operands.append(align(x, v.type.dims, batch + tuple(have[c.name] for c in core)))
    stand_ins = [TensorType(x.type.dtype, x.type.shape[n_batch:]).make_variable() for x in operands]
    core_node = Blockwise(op.core_op, op.signature).core_node(stand_ins)
    return vectorize_graph(core_node.outputs, dict(zip(core_node.inputs, operands)))
