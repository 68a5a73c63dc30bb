"""JAX entries of `dimgraph.core.join`; shapes are concrete while tracing, so the joined axes are checked then."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from dimgraph.backends.jax.registry import jax_impl, static_int
from dimgraph.backends.jax.scalar import cast
from dimgraph.core.join import Join, Split
from dimgraph.errors import ShapeError


@jax_impl.register(Join)
def _join(op, node):
    dtype = np.dtype(node.outputs[0].type.dtype)

    def join(inputs):
        for ax in range(node.outputs[0].type.ndim):
            if ax != op.axis and len({i.shape[ax] for i in inputs}) > 1:
                raise ShapeError(
                    f"{op}: inputs have sizes {[i.shape[ax] for i in inputs]} on axis {ax}; only axis {op.axis} may differ"
                )
        return [jnp.concatenate([cast(i, dtype) for i in inputs], axis=op.axis)]

    return join


@jax_impl.register(Split)
def _split(op, node):
    def split(inputs):
        x, *sizes = inputs
        it = iter(sizes)
        sizes = [static_int(next(it), op, "piece size") if s is None else s for s in op.sizes]
        if any(s < 0 for s in sizes) or sum(sizes) != x.shape[op.axis]:
            raise ShapeError(f"{op}: sizes {sizes} do not add up to the length {x.shape[op.axis]} of axis {op.axis}")
        x = jnp.asarray(x)
        starts = np.cumsum([0] + sizes)
        return [jax.lax.slice_in_dim(x, int(a), int(b), axis=op.axis) for a, b in zip(starts[:-1], starts[1:])]

    return split

