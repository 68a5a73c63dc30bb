"""JAX entries of `dimgraph.core.reduce`: reductions accumulate in NumPy's dtype; Argmax."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from dimgraph.backends.jax.registry import jax_impl
from dimgraph.backends.jax.scalar import cast
from dimgraph.core.reduce import Argmax, CAReduce

REDUCE = {
    "add": jnp.sum,
    "mul": jnp.prod,
    "maximum": jnp.max,
    "minimum": jnp.min,
    "and": jnp.all,
    "or": jnp.any,
}


def reduce_fn(reducer, axis, out_dtype):
    """`reduce(x)`: `x` reduced over `axis` by `reducer`, accumulated and returned as NumPy does."""
    fn = REDUCE[reducer]
    out_dtype = np.dtype(out_dtype)
    # NumPy accumulates in the output dtype (int8 sums in int64); float16 XLA widens itself
    acc = np.dtype("float32") if out_dtype == np.float16 else out_dtype

    def reduce(x):
        if reducer in ("maximum", "minimum"):
            for a in axis:
                if x.shape[a] == 0:
                    raise ValueError(f"zero-size array to reduction operation {reducer} which has no identity")
        if reducer not in ("and", "or"):
            x = cast(x, acc)
        out = fn(x, axis=axis)
        return cast(out, out_dtype)

    return reduce


@jax_impl.register(CAReduce)
def _careduce(op, node):
    reduce = reduce_fn(op.scalar_op, op.axis, node.outputs[0].type.dtype)
    return lambda inputs: [reduce(jnp.asarray(inputs[0]))]


@jax_impl.register(Argmax)
def _argmax(op, node):
    fn = jnp.argmax if op.mode == "max" else jnp.argmin

    def argmax(inputs):
        x = jnp.asarray(inputs[0])
        if x.shape[op.axis] == 0:
            raise ValueError(f"attempt to get {op.mode} of an empty sequence ({op})")
        return [fn(x, axis=op.axis).astype(np.int64)]

    return argmax
