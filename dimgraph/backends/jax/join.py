"""JAX entries of `dimgraph.core.join`; shapes are concrete while tracing, so the joined axes are checked then."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from dimgraph.backends.jax.registry import jax_impl, static_int
from dimgraph.backends.jax.scalar import cast
from dimgraph.core.join import Join, Split


@jax_impl.register(Join)
def _join(op, node):
    dtype = np.dtype(node.outputs[0].type.dtype)

    def join(inputs):
        op.check_shapes([tuple(i.shape) for i in inputs])
        return [jnp.concatenate([cast(i, dtype) for i in inputs], axis=op.axis)]

    return join


@jax_impl.register(Split)
def _split(op, node):
    def split(inputs):
        x, *sizes = inputs
        it = iter(sizes)
        sizes = [static_int(next(it), op, "piece size") if s is None else s for s in op.sizes]
        op.check_sizes(sizes, x.shape[op.axis])
        x = jnp.asarray(x)
        starts = np.cumsum([0] + sizes)
        return [jax.lax.slice_in_dim(x, int(a), int(b), axis=op.axis) for a, b in zip(starts[:-1], starts[1:])]

    return split
