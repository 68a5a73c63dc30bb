"""JAX entries of `dimgraph.core.elemwise`: Elemwise (the scalar op's function, broadcast) and DimShuffle."""

from __future__ import annotations

import jax.numpy as jnp

from dimgraph.backends.jax.checks import shifted_range
from dimgraph.backends.jax.registry import jax_impl
from dimgraph.backends.jax.scalar import scalar_fn
from dimgraph.core.broadcast import node_shape
from dimgraph.core.elemwise import DimShuffle, Elemwise


@jax_impl.register(Elemwise)
def _elemwise(op, node):
    fn = scalar_fn(op.scalar_op, [i.type.dtype for i in node.inputs])
    name = getattr(op.scalar_op, "name", None)
    shifts = name in ("add", "sub") and len(node.inputs) == 2 and node.outputs[0].type.ndim == 0

    def elemwise(inputs):
        if shifts:  # a loop's step number moved by a constant keeps a known range (reads need no check)
            (out,) = fn(*inputs)
            shifted_range(name, inputs[0], inputs[1], out)
            return [out]
        shape = node_shape(node, inputs)
        # a Composite may ignore an input: its result still has the broadcast shape
        return [o if o.shape == shape else jnp.broadcast_to(o, shape) for o in fn(*inputs)]

    return elemwise


@jax_impl.register(DimShuffle)
def _dimshuffle(op, node):
    kept = [o for o in op.order if o != "x"]
    perm = tuple(kept) + op.dropped

    def dimshuffle(inputs):
        x = jnp.asarray(inputs[0])
        shape = tuple(1 if o == "x" else x.shape[o] for o in op.order)
        if perm != tuple(range(len(perm))):
            x = jnp.transpose(x, perm)
        return [x if x.shape == shape else jnp.reshape(x, shape)]

    return dimshuffle
