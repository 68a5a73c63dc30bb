"""JAX entries of `dimgraph.core.extra`: cumulative ops, ARange (folded to a constant when small) and Assert (a run-time check)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from dimgraph.backends.jax.checks import runtime_check
from dimgraph.backends.jax.registry import FOLD_LIMIT, is_static, jax_impl, static_int
from dimgraph.backends.jax.scalar import cast
from dimgraph.core.extra import ARange, Assert, CumOp


@jax_impl.register(CumOp)
def _cumop(op, node):
    out = np.dtype(node.outputs[0].type.dtype)
    fn = jnp.cumsum if op.mode == "add" else jnp.cumprod

    def cumop(inputs):
        return [cast(fn(cast(inputs[0], out), axis=op.axis), out)]

    return cumop


@jax_impl.register(ARange)
def _arange(op, node):
    dtype = np.dtype(op.dtype)
    perform = op.perform

    def arange(inputs):
        for v in inputs:
            if not is_static(v):
                static_int(v, op, "start, stop or step")  # raises: the length would depend on data
        start, stop, step = (np.asarray(v).item() for v in inputs)
        n = max(0, int(np.ceil((float(stop) - float(start)) / float(step))))  # np.arange's length
        if n <= FOLD_LIMIT:
            return perform(node, [np.asarray(v) for v in inputs])
        acc = dtype if dtype.kind in "iu" else np.dtype("float64")  # large ranges: an iota, not a constant
        return [(jnp.arange(n, dtype=acc) * jnp.asarray(step, acc) + jnp.asarray(start, acc)).astype(dtype)]

    return arange


@jax_impl.register(Assert)
def _assert(op, node):
    def check(inputs):
        value, *conds = inputs
        for c in conds:
            runtime_check(c if is_static(c) else jnp.asarray(c).astype(bool), op.error, op.message)
        return [value]

    return check
