"""JAX entries for joins, products, scans and run-time asserts (`core/join.py`, `core/linalg.py`, `core/extra.py`).

Shapes are concrete while tracing, so the run-time shape checks the python
backend makes (joined axes, contracted and batch axes) happen here at trace
time, with the same errors. Products ask XLA for full precision (no TF32 on
GPUs), as NumPy computes them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from dimgraph.backends.jax.checks import runtime_check
from dimgraph.backends.jax.dispatch import FOLD_LIMIT, is_static, jax_impl, static_int
from dimgraph.backends.jax.scalar import cast
from dimgraph.core.extra import ARange, Assert, CumOp
from dimgraph.core.join import Join, Split
from dimgraph.core.linalg import Einsum, MatMul, _check_runtime_broadcast
from dimgraph.errors import ShapeError

HIGHEST = jax.lax.Precision.HIGHEST


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


def _contract_dtype(dtype):
    """XLA has no boolean dot: booleans multiply-add as int32 and come back as `!= 0` (NumPy's or-of-ands)."""
    return np.dtype("int32") if dtype == np.bool_ else dtype


@jax_impl.register(MatMul)
def _matmul(op, node):
    ta, tb = node.inputs[0].type, node.inputs[1].type
    loops = np.matmul.resolve_dtypes((np.dtype(ta.dtype), np.dtype(tb.dtype), None))
    compute = _contract_dtype(loops[-1])
    out = np.dtype(node.outputs[0].type.dtype)

    def matmul(inputs):
        a, b = inputs
        if a.shape[-1] != (b.shape[0] if b.ndim == 1 else b.shape[-2]):
            raise ShapeError(f"matmul: the contracted axes differ: shapes {tuple(a.shape)} and {tuple(b.shape)}")
        if a.ndim > 2 or b.ndim > 2:
            _check_runtime_broadcast(
                op,
                [ta.shape[:-2] if a.ndim > 1 else (), tb.shape[:-2] if b.ndim > 1 else ()],
                [tuple(a.shape[:-2]) if a.ndim > 1 else (), tuple(b.shape[:-2]) if b.ndim > 1 else ()],
            )
        res = jnp.matmul(cast(a, compute), cast(b, compute), precision=HIGHEST)
        return [res != 0 if out == np.bool_ else cast(res, out)]

    return matmul


@jax_impl.register(Einsum)
def _einsum(op, node):
    out = np.dtype(node.outputs[0].type.dtype)
    compute = _contract_dtype(out)
    terms = op.terms

    def einsum(inputs):
        actual = {}
        for term, x in zip(terms, inputs):
            for c, n in zip(term, x.shape):
                actual.setdefault(c, set()).add(n)
        target = {c: min(s - {1}, default=1) for c, s in actual.items()}  # NumPy: 1 stretches, also to 0
        args = []
        for term, x, var in zip(terms, inputs, node.inputs):
            for c, n, s in zip(term, x.shape, var.type.shape):
                if n != target[c] and (s is None or n != 1):
                    raise ShapeError(
                        f"{op}: letter {c!r} has sizes {sorted(actual[c])} across the operands; "
                        "only axes of static size 1 broadcast"
                    )
            x = cast(x, compute)
            full = tuple(target[c] for c in term)
            args.append(x if x.shape == full else jnp.broadcast_to(x, full))
        res = jnp.einsum(op.subscripts, *args, precision=HIGHEST)
        return [res != 0 if out == np.bool_ else cast(res, out)]

    return einsum


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
            runtime_check(c if is_static(c) else jnp.asarray(c).astype(bool), AssertionError, op.message)
        return [value]

    return check
