"""JAX entries of linear algebra: `Blockwise`, the matrix functions of `dimgraph.core.matrix`
and the products of `dimgraph.core.linalg` (MatMul, Einsum).

The matrix ops batch natively in `jnp.linalg` / `jax.scipy.linalg`, so a
Blockwise of one is a single call on the broadcast stack; a Blockwise of any
other core op is `jax.vmap` of the core op's own entry, once per batch axis (its run-time
checks leave vmap as flags and are required over the whole batch).
JAX's failure rule matches the core one: NaNs, never an exception.
Products check their contracted and batch axes while tracing (shapes are
concrete then), with the python backend's errors, and ask XLA for full
precision (no TF32 on GPUs), as NumPy computes them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.linalg as jsl
import numpy as np

from dimgraph.backends.jax.checks import collect, runtime_check
from dimgraph.backends.jax.registry import jax_impl
from dimgraph.backends.jax.scalar import cast
from dimgraph.core.blockwise import Blockwise
from dimgraph.core.broadcast import letter_sizes
from dimgraph.core.linalg import Einsum, MatMul, matmul_batch
from dimgraph.core.matrix import Cholesky, Det, Eigh, Inv, SlogDet, Solve, SolveTriangular
from dimgraph.errors import ShapeError

HIGHEST = jax.lax.Precision.HIGHEST


def _square(name, a):
    if a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{name}: the matrix must be square, got shape {tuple(a.shape[-2:])}")


def _cholesky(op):
    def fn(a):
        _square("cholesky", a)
        # jnp reads the lower triangle; the upper factor reads a's upper one, the lower triangle of a.T
        chol = jnp.linalg.cholesky(a if op.lower else jnp.swapaxes(a, -1, -2), symmetrize_input=False)
        chol = jnp.where(
            jnp.isnan(chol).any(axis=(-2, -1), keepdims=True), jnp.nan, chol
        )  # all NaN, as NumPy's rule here
        return [chol if op.lower else jnp.swapaxes(chol, -1, -2)]

    return fn


def _solve_triangular(op):
    def fn(a, b):
        _square("solve_triangular", a)
        if a.shape[-1] != b.shape[a.ndim - 2]:
            raise ShapeError(f"solve_triangular: a is {a.shape[-2]}x{a.shape[-1]} but b has {b.shape[a.ndim - 2]} rows")
        rhs = b[..., None] if op.b_ndim == 1 else b
        x = jsl.solve_triangular(a, rhs, lower=op.lower, trans=int(op.trans), unit_diagonal=op.unit_diagonal)
        return [x[..., 0] if op.b_ndim == 1 else x]

    return fn


def _solve(op):
    def fn(a, b):
        _square("solve", a)
        if a.shape[-1] != b.shape[a.ndim - 2]:
            raise ShapeError(f"solve: a is {a.shape[-2]}x{a.shape[-1]} but b has {b.shape[a.ndim - 2]} rows")
        rhs = b[..., None] if op.b_ndim == 1 else b
        x = jnp.linalg.solve(a, rhs)
        return [x[..., 0] if op.b_ndim == 1 else x]

    return fn


def _unary(name, fn):
    def make(op):
        def run(a):
            _square(name, a)
            out = fn(op, a)
            return list(out) if isinstance(out, tuple) else [out]

        return run

    return make


BATCHED = {
    Cholesky: _cholesky,
    SolveTriangular: _solve_triangular,
    Solve: _solve,
    Inv: _unary("inv", lambda op, a: jnp.linalg.inv(a)),
    Det: _unary("det", lambda op, a: jnp.linalg.det(a)),
    SlogDet: _unary("slogdet", lambda op, a: tuple(jnp.linalg.slogdet(a))),
    Eigh: _unary(
        "eigh", lambda op, a: tuple(jnp.linalg.eigh(a, UPLO="L" if op.lower else "U", symmetrize_input=False))
    ),
}


def _register(op_type, make):
    @jax_impl.register(op_type)
    def _(op, node):
        fn = make(op)
        return lambda inputs: fn(*[jnp.asarray(x) for x in inputs])


for _type, _make in BATCHED.items():
    _register(_type, _make)


@jax_impl.register(Blockwise)
def _blockwise(op, node):
    nb = op.batch_ndim(node)
    make = BATCHED.get(type(op.core_op))
    if make is not None:
        core_fn = make(op.core_op)
    else:
        core_fn = _vmapped(jax_impl(op.core_op, op.core_node(node.inputs)), nb)

    def blockwise(inputs):
        batch = tuple(np.broadcast_shapes(*[tuple(x.shape[:nb]) for x in inputs]))
        for x, v in zip(inputs, node.inputs):
            for ax in range(nb):
                if v.type.shape[ax] is None and x.shape[ax] != batch[ax]:
                    raise ShapeError(
                        f"{op}: batch axis {ax} has size {x.shape[ax]} where another input has {batch[ax]}"
                    )
        xs = [jnp.broadcast_to(jnp.asarray(x), batch + tuple(x.shape[nb:])) for x in inputs]
        return [jnp.asarray(o).astype(v.type.dtype) for o, v in zip(core_fn(*xs), node.outputs)]

    return blockwise


def _vmapped(inner, nb):
    """`inner` (a core op's closure) under `nb` `jax.vmap`s; its run-time checks come out as
    per-element flags, and each is required once over the whole batch (no tracer escapes vmap)."""
    checks = []  # (error, message, has detail) of each check, filled while tracing

    def core(*xs):
        with collect() as c:
            outs = inner(list(xs))
        checks[:] = [(e, m, d is not None) for _, e, m, d in c.checks]
        oks = [jnp.asarray(ok, dtype=bool).reshape(()) for ok, *_ in c.checks]
        details = [
            jnp.zeros((), "int64") if d is None else jnp.asarray(d).reshape(()).astype("int64") for *_, d in c.checks
        ]
        return list(outs), oks, details

    for _ in range(nb):
        core = jax.vmap(core)

    def run(*xs):
        outs, oks, details = core(*xs)
        for (error, message, has_detail), ok, detail in zip(checks, oks, details):
            ok, detail = ok.reshape(-1), detail.reshape(-1)
            if ok.size:
                runtime_check(ok.all(), error, message, detail[jnp.argmin(ok)] if has_detail else None)
        return outs

    return run


# ---------------------------------------------------------------------------
# products (dimgraph.core.linalg): checked while tracing, computed at full precision (no TF32), as NumPy


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
        matmul_batch(op, ta, tb, a.shape, b.shape)
        res = jnp.matmul(cast(a, compute), cast(b, compute), precision=HIGHEST)
        return [res != 0 if out == np.bool_ else cast(res, out)]

    return matmul


@jax_impl.register(Einsum)
def _einsum(op, node):
    out = np.dtype(node.outputs[0].type.dtype)
    compute = _contract_dtype(out)
    terms = op.terms
    statics = [i.type.shape for i in node.inputs]

    def einsum(inputs):
        target = letter_sizes(str(op), terms, statics, [x.shape for x in inputs])
        args = []
        for term, x in zip(terms, inputs):
            x = cast(x, compute)
            full = tuple(target[c] for c in term)
            args.append(x if x.shape == full else jnp.broadcast_to(x, full))
        res = jnp.einsum(op.subscripts, *args, precision=HIGHEST)
        return [res != 0 if out == np.bool_ else cast(res, out)]

    return einsum
