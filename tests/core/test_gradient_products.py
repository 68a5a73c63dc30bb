"""Gradients (`L_op`) of Join/Split, MatMul, Einsum, CumOp, ARange and Assert against finite differences.

One graph structure per test case and backend (sizes mostly unknown, so
hypothesis varies them, 0 and 1 included, without recompiling). See
`vjp_checks` for the oracle and its tolerance.
"""

import functools

import numpy as np
import pytest
from hypothesis import strategies as st
from vjp_checks import NodeVJP, given

import dimgraph as dg
from dimgraph.core import concatenate, cumprod, cumsum, einsum, split_sizes
from dimgraph.core.extra import ARange, Assert
from dimgraph.core.join import Split

F64, I64 = "float64", "int64"
seeds = st.integers(0, 2**32 - 1)
sizes = st.integers(0, 4)


def normal(seed, shape):
    return np.random.default_rng(seed).normal(size=shape)


# ---------------------------------------------------------------------------
# join / split

JOINS = {
    # name: (axis, static shapes of the pieces); None sizes are drawn
    "axis0_unknown": (0, [(None, 3), (None, 3)]),
    "axis1_unknown": (1, [(2, None), (2, None), (2, None)]),
    "axis2_mixed": (2, [(None, 2, 1), (None, 2, None)]),
    "axis0_static": (0, [(2, 3), (1, 3), (0, 3)]),
    "single": (1, [(None, None)]),
}


@pytest.mark.parametrize("name", sorted(JOINS))
@given(data=st.data(), seed=seeds)
def test_join(backend, name, data, seed):
    axis, statics = JOINS[name]
    specs = [(f"x{k}", s, F64) for k, s in enumerate(statics)]
    case = NodeVJP(("join", name), backend, lambda *xs: concatenate(xs, axis=axis), specs)
    common = [data.draw(sizes) for _ in statics[0]]
    shapes = []
    for s in statics:
        shape = [
            (s[ax] if s[ax] is not None else data.draw(sizes))
            if ax == axis
            else (s[ax] if s[ax] is not None else common[ax])
            for ax in range(len(s))
        ]
        shapes.append(tuple(shape))
    grads = case.check([normal(seed + k, sh) for k, sh in enumerate(shapes)], seed)
    w = np.random.default_rng(seed).normal(size=np.concatenate([np.zeros(sh) for sh in shapes], axis).shape)
    bounds = np.cumsum([sh[axis] for sh in shapes])[:-1]
    for g, piece in zip(grads, np.split(w, bounds, axis=axis)):
        np.testing.assert_array_equal(g, piece)


def test_join_integer_piece_gets_no_gradient():
    a = dg.tensor("a", shape=(None,))
    b = dg.tensor("b", shape=(None,), dtype="int64")
    y = concatenate([a, b])
    ga, gb = y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [dg.tensor("w", shape=(None,))])
    assert gb is None and ga.type == a.type


def test_join_float32_piece_gets_float32():
    a = dg.tensor("a", shape=(2, 3), dtype="float32")
    b = dg.tensor("b", shape=(None, 3))
    y = concatenate([a, b])
    ga, gb = y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [dg.tensor("w", shape=y.type.shape)])
    assert ga.type == a.type and gb.type == b.type


@pytest.mark.parametrize("axis", [0, 1])
@given(data=st.data(), seed=seeds)
def test_split(backend, axis, data, seed):
    """Split into three pieces of run-time sizes; the middle piece's cotangent is zeros (as the framework
    passes for outputs without gradient)."""

    def build(x, n0, n1, n2):
        return split_sizes(x, [n0, n1, n2], axis=axis)

    specs = [("x", (None, None), F64), ("n0", (), I64), ("n1", (), I64), ("n2", (), I64)]
    case = NodeVJP(("split", axis), backend, build, specs)
    parts = [data.draw(sizes) for _ in range(3)]
    other = data.draw(sizes)
    shape = (sum(parts), other) if axis == 0 else (other, sum(parts))
    case.check([normal(seed, shape), *parts], seed)


def test_split_gradient_keeps_static_shape():
    """Pieces of symbolic size join back to a gradient with x's static shape."""
    x = dg.tensor("x", shape=(6, 2))
    n = dg.scalar("n", "int64")
    pieces = Split(0, (None, None))(x, n, 6 - n)
    ws = [dg.tensor(f"w{k}", shape=p.type.shape) for k, p in enumerate(pieces)]
    gx, gn, gm = pieces[0].owner.op.L_op(pieces[0].owner.inputs, pieces, ws)
    assert gx.type == x.type and gn is None and gm is None
    f = dg.function([x, n, *ws], gx, backend="python")
    w0, w1 = np.ones((2, 2)), 2 * np.ones((4, 2))
    np.testing.assert_array_equal(f(np.zeros((6, 2)), 2, w0, w1), np.concatenate([w0, w1]))


# ---------------------------------------------------------------------------
# matmul

MATMULS = {
    # name: (static shape of a, static shape of b); None sizes drawn (letters m, k, n, batch)
    "mat_mat": ((None, None), (None, None)),
    "vec_mat": ((None,), (None, None)),
    "mat_vec": ((None, None), (None,)),
    "vec_vec": ((None,), (None,)),
    "batch_mat": ((None, None, None), (None, None)),
    "vec_batch": ((None,), (None, None, None)),
    "batch_vec": ((None, None, None), (None,)),
    "broadcast_batch": ((3, 1, None, None), (2, None, None)),
    "static": ((2, 3), (3, 4)),
}


def _matmul_shapes(data, name):
    sa, sb = MATMULS[name]
    m, k, n, batch = (data.draw(sizes) for _ in range(4))

    def fill(static, letters):
        return tuple(s if s is not None else {"m": m, "k": k, "n": n, "b": batch}[c] for s, c in zip(static, letters))

    la = {1: "k", 2: "mk", 3: "bmk", 4: "bbmk"}[len(sa)]
    lb = {1: "k", 2: "kn", 3: "bkn"}[len(sb)]
    return fill(sa, la), fill(sb, lb)


@pytest.mark.parametrize("name", sorted(MATMULS))
@given(data=st.data(), seed=seeds)
def test_matmul(backend, name, data, seed):
    sa, sb = MATMULS[name]
    case = NodeVJP(("matmul", name), backend, lambda a, b: a @ b, [("a", sa, F64), ("b", sb, F64)])
    shape_a, shape_b = _matmul_shapes(data, name)
    case.check([normal(seed, shape_a), normal(seed + 1, shape_b)], seed)


def test_matmul_gradient_dtypes():
    a = dg.tensor("a", shape=(2, 3), dtype="float32")
    b = dg.tensor("b", shape=(3,), dtype="float64")
    i = dg.tensor("i", shape=(3,), dtype="int64")
    y = a @ b
    ga, gb = y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [dg.tensor("w", shape=(2,))])
    assert ga.type == a.type and gb.type == b.type
    y = a @ i
    ga, gi = y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [dg.tensor("w", shape=(2,))])
    assert ga.type == a.type and gi is None


# ---------------------------------------------------------------------------
# einsum

EINSUMS = {
    # spec: static shapes of the operands (None sizes drawn per letter)
    "ij,jk->ik": [(None, None), (None, None)],
    "ij->": [(None, None)],
    "ij->ji": [(None, None)],
    "i,i->": [(None,), (None,)],
    "i,j->ij": [(None,), (None,)],
    "ii->i": [(None, None)],
    "ii->": [(None, None)],
    "ii,j->ij": [(None, None), (None,)],
    "iij->ji": [(None, None, None)],
    "ijk,j->ki": [(None, None, None), (None,)],
    "ijk,j->": [(None, None, None), (1,)],
    "ij,j->i": [(None, 1), (None,)],
    "...j,j->...": [(None, None, None), (None,)],
    "bij,bjk->bik": [(None, None, None), (1, None, None)],
    "ij,jk,kl->il": [(None, None), (None, None), (None, None)],
}


def _einsum_shapes(data, spec, statics):
    terms = spec.split("->")[0].split(",")
    terms = [t.replace("...", "XY"[: len(st_) - len(t.replace("...", ""))]) for t, st_ in zip(terms, statics)]
    # a letter that some operand has with static size 1 is drawn >= 1: the jax and c backends'
    # Einsum reject a size-1 operand against a size-0 one (NumPy broadcasts 1 to 0)
    broadcast = {c for t, st_ in zip(terms, statics) for c, s in zip(t, st_) if s == 1}
    letter = {}
    shapes = []
    for term, static in zip(terms, statics):
        shape = []
        for c, s in zip(term, static):
            if c not in letter:
                letter[c] = data.draw(st.integers(1, 4) if c in broadcast else sizes)
            shape.append(s if s is not None else letter[c])
        shapes.append(tuple(shape))
    return shapes


@pytest.mark.parametrize("spec", sorted(EINSUMS))
@given(data=st.data(), seed=seeds)
def test_einsum(backend, spec, data, seed):
    """Contractions, transposes, outer products, diagonals (repeated letters), letters only one operand
    has, and static size-1 axes that broadcast."""
    statics = EINSUMS[spec]
    specs = [(f"x{k}", s, F64) for k, s in enumerate(statics)]
    case = NodeVJP(("einsum", spec), backend, lambda *xs: einsum(spec, *xs), specs)
    shapes = _einsum_shapes(data, spec, statics)
    case.check([normal(seed + k, sh) for k, sh in enumerate(shapes)], seed)


def test_einsum_static_diagonal_gradient_is_identity():
    x = dg.tensor("x", shape=(3, 3))
    y = einsum("ii->", x)
    w = dg.scalar("w")
    (gx,) = y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [w])
    assert gx.type == x.type
    np.testing.assert_array_equal(dg.function([w], gx, backend="python")(2.0), 2 * np.eye(3))


# ---------------------------------------------------------------------------
# cumulative ops


@pytest.mark.parametrize("mode", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [0, 1, 2])
@given(data=st.data(), seed=seeds)
def test_cumop(backend, mode, axis, data, seed):
    """cumsum and cumprod along each axis; cumprod's inputs have exact zeros (none, one or several per
    row), where the gradient is not revcumsum(g * y) / x."""
    fn = cumsum if mode == "cumsum" else cumprod
    case = NodeVJP(("cum", mode, axis), backend, lambda x: fn(x, axis), [("x", (None, None, None), F64)])
    shape = tuple(data.draw(st.integers(0, 4)) for _ in range(3))
    rng = np.random.default_rng(seed)
    x = rng.normal(size=shape)
    if mode == "cumprod":
        x = rng.choice([-1.0, 1.0], size=shape) * rng.uniform(0.5, 1.5, size=shape)
        x[rng.uniform(size=shape) < data.draw(st.sampled_from([0.0, 0.2, 0.5]))] = 0.0
    case.check([x], seed)


@functools.cache
def _cumprod_vjp():
    x, w = dg.tensor("x", shape=(None,)), dg.tensor("w", shape=(None,))
    y = cumprod(x)
    (gx,) = y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [w])
    return dg.function([x, w], gx, backend="python")


@given(seed=seeds)
def test_cumprod_gradient_at_zeros_is_exact(seed):
    """Against the product rule written out: d/dx_j sum_i g_i prod_{k<=i} x_k."""
    rng = np.random.default_rng(seed)
    xv = rng.normal(size=6)
    xv[rng.choice(6, size=rng.integers(0, 4), replace=False)] = 0.0
    wv = rng.normal(size=6)
    expected = [sum(wv[i] * np.prod([xv[k] for k in range(i + 1) if k != j]) for i in range(j, 6)) for j in range(6)]
    got = _cumprod_vjp()(xv, wv)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_cumop_integer_input_gets_no_gradient():
    x = dg.tensor("x", shape=(None,), dtype="int32")
    y = cumsum(x)
    assert y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [dg.tensor("w", shape=(None,), dtype=y.type.dtype)]) == [
        None
    ]


# ---------------------------------------------------------------------------
# arange and assert


@given(data=st.data(), seed=seeds)
def test_arange(backend, data, seed):
    """out[i] = start + i * step: start and step get gradients; stop only sets the length (None).
    The length is kept away from a jump (stop sits half a step past the last element) so the differences
    see a smooth function."""
    case = NodeVJP(
        "arange",
        backend,
        lambda a, b, c: ARange("float64")(a, b, c),
        [("a", (), F64), ("b", (), F64), ("c", (), F64)],
        no_gradient=["b"],
    )
    rng = np.random.default_rng(seed)
    length = data.draw(st.integers(0, 5))
    start = rng.normal()
    step = rng.choice([-1.0, 1.0]) * rng.uniform(0.5, 2.0)
    stop = start + (length - 0.5) * step if length else start - 0.5 * step
    case.check([start, stop, step], seed)


def test_arange_integer_inputs_get_no_gradient():
    y = ARange("int64")(dg.scalar("a", "int64"), dg.scalar("b", "int64"), dg.scalar("c", "int64"))
    assert (
        y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [dg.tensor("w", shape=(None,), dtype="int64")]) == [None] * 3
    )


@given(n=sizes, seed=seeds)
def test_assert_passes_the_gradient(backend, n, seed):
    def build(x, c):
        return Assert("x must be finite")(x, c)

    case = NodeVJP("assert", backend, build, [("x", (None,), F64), ("c", (), "bool")])
    x = normal(seed, (n,))
    (g,) = case.check([x, np.array(True)], seed)
    np.testing.assert_array_equal(g, np.random.default_rng(seed).normal(size=n))
