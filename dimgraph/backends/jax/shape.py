"""JAX entries of shapes (`dimgraph.core.shape`, `shape_ops`): shapes are static NumPy values while tracing."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from dimgraph.backends.jax.registry import jax_impl, static_int
from dimgraph.core.shape import Shape, ShapeI
from dimgraph.core.shape_ops import Alloc, Reshape


@jax_impl.register(ShapeI)
def _shape_i(op, node):
    return lambda inputs: [np.asarray(inputs[0].shape[op.i], dtype=np.int64)]


@jax_impl.register(Shape)
def _shape(op, node):
    return lambda inputs: [np.asarray(inputs[0].shape, dtype=np.int64)]


@jax_impl.register(Reshape)
def _reshape(op, node):
    def reshape(inputs):
        x, *shape = inputs
        shape = [static_int(s, op, "target shape") for s in shape]
        try:
            return [jnp.reshape(x, shape)]
        except TypeError as err:  # NumPy raises ValueError for sizes that do not fit
            raise ValueError(
                f"cannot reshape array of shape {tuple(x.shape)} into shape {tuple(shape)} ({op})"
            ) from err

    return reshape


@jax_impl.register(Alloc)
def _alloc(op, node):
    def alloc(inputs):
        value, *shape = inputs
        shape = tuple(static_int(s, op, "target shape") for s in shape)
        return [jnp.broadcast_to(value, shape)]

    return alloc
