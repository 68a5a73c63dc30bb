"""JAX entries of the fused ops (`dimgraph.core.fused`): traced as the ops they fuse, which XLA fuses again."""

from __future__ import annotations

import jax.numpy as jnp

from dimgraph.backends.jax.reduce import reduce_fn
from dimgraph.backends.jax.registry import jax_impl
from dimgraph.backends.jax.scalar import scalar_fn
from dimgraph.core.broadcast import node_shape
from dimgraph.core.fused import CAReduceElemwise, GatherElemwise, IndexedLoop
from dimgraph.core.graph import toposort


@jax_impl.register(CAReduceElemwise)
def _careduce_elemwise(op, node):
    fn = scalar_fn(op.scalar_op, [i.type.dtype for i in node.inputs])
    reducers = [reduce_fn(op.reducer, op.axis, out.type.dtype) for out in node.outputs]

    def careduce_elemwise(inputs):
        shape = node_shape(node, inputs)
        return [
            reduce(full if full.shape == shape else jnp.broadcast_to(full, shape))
            for reduce, full in zip(reducers, fn(*inputs))
        ]

    return careduce_elemwise


@jax_impl.register(IndexedLoop)
@jax_impl.register(GatherElemwise)
def _indexed_loop(op, node):
    """The ops it fuses (gathers, Elemwise, reductions, scatters), traced in order: XLA fuses them again."""
    outputs = op.unfused(node.inputs)
    steps = [(n, jax_impl(n.op, n)) for n in toposort(outputs, blockers=node.inputs)]

    def indexed_loop(inputs):
        env = {id(v): x for v, x in zip(node.inputs, inputs)}
        for n, fn in steps:
            for o, value in zip(n.outputs, fn([env[id(i)] for i in n.inputs])):
                env[id(o)] = value
        return [env[id(o)] for o in outputs]

    return indexed_loop
