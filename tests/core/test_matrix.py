"""Matrix functions (dg.core.linalg / dg.core.matrix) and Blockwise against NumPy/SciPy, every backend.

One compiled function per (backend, dtype) computes every matrix function of a
batch of matrices; hypothesis draws the matrices. Gradients are checked against
central finite differences of one cost that uses every op (SPD inputs built from
random matrices, symmetric directions). Eigenvectors are compared through
`v diag(w) v.T == a` and `|v|`-free checks, since their signs are arbitrary.
"""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph.core import linalg as la
from dimgraph.core.blockwise import Blockwise, blockwise, parse_signature
from dimgraph.core.matrix import Cholesky, Det, Eigh, Inv, SlogDet, Solve, SolveTriangular
from dimgraph.errors import ShapeError

B, M = 2, 3
_FUNCS = {}
TOL = {"float64": 1e-9, "float32": 2e-3}


def _spd(seed, dtype="float64", batch=(B,), m=M):
    rng = np.random.default_rng(seed)
    g = rng.normal(size=batch + (m, m))
    return (g @ np.swapaxes(g, -1, -2) + m * np.eye(m)).astype(dtype)


def _forward(backend, dtype):
    key = (backend, dtype)
    if key not in _FUNCS:
        a = dg.tensor("a", shape=(B, M, M), dtype=dtype)
        b = dg.tensor("b", shape=(M,), dtype=dtype)
        bm = dg.tensor("bm", shape=(B, M, 2), dtype=dtype)
        low = la.cholesky(a)
        outs = [
            low,
            la.cholesky(a, lower=False),
            la.solve(a, b),
            la.solve(a, bm),
            la.solve_triangular(low, bm),
            la.solve_triangular(low, b, trans=True),
            la.solve_triangular(dg.core.transpose(low, (0, 2, 1)), bm, lower=False),
            la.cho_solve((low, True), b),
            la.inv(a),
            la.det(a),
            *la.slogdet(a),
            *la.eigh(a),
            la.trace(a),
            la.diagonal(a),
        ]
        _FUNCS[key] = dg.function([a, b, bm], outs, backend=backend)
    return _FUNCS[key]


def _expected(A, b, bm):
    L = np.linalg.cholesky(A)
    bb = np.broadcast_to(b, A.shape[:-1])
    return [
        L,
        np.swapaxes(L, -1, -2),
        np.linalg.solve(A, bb[..., None])[..., 0],
        np.linalg.solve(A, bm),
        scipy.linalg.solve_triangular(L, bm, lower=True),
        np.stack([scipy.linalg.solve_triangular(L[k], b, lower=True, trans=1) for k in range(len(A))]),
        scipy.linalg.solve_triangular(np.swapaxes(L, -1, -2), bm, lower=False),
        np.linalg.solve(A, bb[..., None])[..., 0],
        np.linalg.inv(A),
        np.linalg.det(A),
        *np.linalg.slogdet(A),
        np.linalg.eigvalsh(A),
        None,  # eigenvectors: checked by reconstruction
        np.trace(A, axis1=-2, axis2=-1),
        np.diagonal(A, axis1=-2, axis2=-1),
    ]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@given(seed=st.integers(0, 2**31 - 1))
@settings(max_examples=5, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_matrix_functions_match_numpy_and_scipy(backend, dtype, seed):
    A = _spd(seed, dtype)
    rng = np.random.default_rng(seed + 1)
    b, bm = rng.normal(size=M).astype(dtype), rng.normal(size=(B, M, 2)).astype(dtype)
    got = _forward(backend, dtype)(A, b, bm)
    expected = _expected(A.astype("float64"), b.astype("float64"), bm.astype("float64"))
    for k, (g, e) in enumerate(zip(got, expected)):
        assert g.dtype == dtype, (k, g.dtype)
        if e is not None:
            np.testing.assert_allclose(g, e, rtol=TOL[dtype], atol=TOL[dtype], err_msg=f"output {k}")
    w, v = got[-4], got[-3]
    rebuilt = v @ (w[..., None] * np.swapaxes(v, -1, -2))
    np.testing.assert_allclose(rebuilt, A, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)


_GRADS = {}


def _cost_and_grads(backend):
    if backend not in _GRADS:
        a = dg.tensor("a", shape=(B, M, M))
        b = dg.tensor("b", shape=(B, M))
        low = la.cholesky(a)
        w, v = la.eigh(a)
        cost = (
            (la.cho_solve((low, True), b, b_ndim=1) ** 2).sum()
            + (la.solve(a, b, b_ndim=1) * b).sum()
            + la.slogdet(a)[1].sum()
            + (la.det(a) * 0.01).sum()
            + (la.inv(a) ** 2).sum()
            + (w * np.arange(1.0, M + 1)).sum()
            + ((v[..., 0] ** 2) * np.arange(M)).sum()
            + (la.solve_triangular(low, b, trans=True, b_ndim=1) ** 2).sum()
            + (la.cholesky(a, lower=False) * np.arange(M * M).reshape(M, M)).sum()
            + la.trace(a).sum() * 0.5
        )
        _GRADS[backend] = dg.function([a, b], [cost, *dg.grad(cost, [a, b])], backend=backend)
    return _GRADS[backend]


@given(seed=st.integers(0, 2**31 - 1))
@settings(max_examples=4, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_gradients_match_finite_differences(backend, seed):
    f = _cost_and_grads(backend)
    A = _spd(seed)
    rng = np.random.default_rng(seed + 2)
    b = rng.normal(size=(B, M))
    _, ga, gb = f(A, b)
    eps = 1e-6
    da = rng.normal(size=A.shape)
    da = da + np.swapaxes(da, -1, -2)  # the ops read symmetric matrices: perturb within them
    db = rng.normal(size=b.shape)
    fd = (f(A + eps * da, b + eps * db)[0] - f(A - eps * da, b - eps * db)[0]) / (2 * eps)
    np.testing.assert_allclose((ga * da).sum() + (gb * db).sum(), fd, rtol=1e-5, atol=1e-6)


def test_each_function_reads_only_its_triangle(backend):
    """The other triangle holds garbage: cholesky and eigh read `lower` (or the upper) one, as NumPy's UPLO."""
    a = dg.tensor("a", shape=(B, M, M))
    b = dg.tensor("b", shape=(M,))
    outs = [la.cholesky(a), la.cholesky(a, lower=False), *la.eigh(a), la.eigh(a, lower=False)[0]]
    outs += [
        la.solve_triangular(a, b, lower=False),
        la.solve_triangular(a, b, lower=False, trans=True, unit_diagonal=True),
    ]
    f = dg.function([a, b], outs, backend=backend)
    A, rhs = _spd(3), np.arange(1.0, M + 1)
    garbage = np.triu(np.full((M, M), 1e3), 1)
    low_read, up_read = A + garbage, A + np.swapaxes(garbage, -1, -2)
    chol_l, _, w, _, _, _, _ = f(low_read, rhs)
    _, chol_u, _, _, w_u, tri, tri_unit = f(up_read, rhs)
    np.testing.assert_allclose(chol_l, np.linalg.cholesky(A), rtol=1e-9)
    np.testing.assert_allclose(chol_u, np.linalg.cholesky(A, upper=True), rtol=1e-9)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(A), rtol=1e-9)
    np.testing.assert_allclose(w_u, np.linalg.eigvalsh(A), rtol=1e-9)
    np.testing.assert_allclose(
        tri, np.linalg.solve(np.triu(up_read), np.broadcast_to(rhs, (B, M))[..., None])[..., 0], rtol=1e-9
    )
    unit = np.triu(up_read, 1) + np.eye(M)
    expected = np.linalg.solve(np.swapaxes(unit, -1, -2), np.broadcast_to(rhs, (B, M))[..., None])[..., 0]
    np.testing.assert_allclose(tri_unit, expected, rtol=1e-9)


def test_not_positive_definite_gives_nans_and_singular_solves_are_not_finite(backend):
    f = _forward(backend, "float64")
    A = _spd(0)
    A[1] = -A[1]  # the second matrix is negative definite, the first stays fine
    got = f(A, np.ones(M), np.ones((B, M, 2)))
    assert np.isnan(got[0][1]).all() and np.isnan(got[1][1]).all()
    np.testing.assert_allclose(got[0][0], np.linalg.cholesky(A[0]), rtol=1e-9)
    a = dg.tensor("a", shape=(M, M))
    x = dg.function([a], la.solve(a, np.ones(M)), backend=backend)(np.ones((M, M)))
    assert not np.isfinite(x).all()


def test_core_shape_errors_name_the_function():
    with pytest.raises(ShapeError, match="cholesky: a must be square"):
        la.cholesky(dg.tensor("a", shape=(2, 3)))
    with pytest.raises(ShapeError, match="solve: a is 3x3 but b has 2 rows"):
        la.solve(dg.tensor("a", shape=(3, 3)), dg.tensor("b", shape=(2,)))
    with pytest.raises(ValueError, match=r"Inv: input 0 .* needs at least 2 axes"):
        la.inv(dg.vector("v"))
    with pytest.raises(TypeError, match="complex matrices are not supported"):
        la.det(dg.tensor("c", shape=(2, 2), dtype="complex128"))
    with pytest.raises(ValueError, match="b_ndim must be 1"):
        la.solve(dg.tensor("a", shape=(3, 3)), dg.tensor("b", shape=(3,)), b_ndim=3)


def test_run_time_shape_errors(backend):
    a, b = dg.tensor("a", shape=(None, None)), dg.tensor("b", shape=(None,))
    f = dg.function([a, b], la.solve(a, b), backend=backend)
    with pytest.raises(ShapeError):
        f(np.eye(3)[:, :2], np.ones(3))
    with pytest.raises(ShapeError):
        f(np.eye(3), np.ones(2))
    stack = dg.tensor("s", shape=(None, 2, 2))
    other = dg.tensor("o", shape=(None, 2, 2))
    g = dg.function([stack, other], la.solve(stack, other), backend=backend)
    with pytest.raises(ShapeError):  # an unknown batch size never stretches
        g(np.stack([np.eye(2)] * 3), np.stack([np.eye(2)]))


def test_integer_matrices_compute_in_float64_and_batch_axes_broadcast():
    a = dg.tensor("a", shape=(1, 2, 2), dtype="int64")
    b = dg.tensor("b", shape=(3, 2), dtype="float32")
    x = la.solve(a, b, b_ndim=1)
    assert x.type.dtype == "float64" and x.type.shape == (3, 2)
    got = dg.function([a, b], x, backend="python")(np.array([[[2, 0], [0, 4]]]), np.ones((3, 2), "float32"))
    np.testing.assert_allclose(got, np.tile([0.5, 0.25], (3, 1)))


def test_blockwise_contract():
    op = Blockwise(Inv(), "(m,m)->(m,m)")
    assert op == Blockwise(Inv(), "(m,m)->(m,m)") and hash(op) == hash(Blockwise(Inv(), "(m,m)->(m,m)"))
    assert str(op) == "Blockwise{Inv, (m,m)->(m,m)}"
    assert parse_signature("(m,m),(m)->(),(m)") == ((("m", "m"), ("m",)), ((), ("m",)))
    with pytest.raises(ValueError, match="not a gufunc signature"):
        Blockwise(Inv(), "m,m->m")
    x = dg.tensor("x", shape=(3, 2, 2))
    assert isinstance(blockwise(Inv(), "(m,m)->(m,m)", x[0]).owner.op, Inv)  # no batch axes: the core op
    y = blockwise(Solve(1), "(m,m),(m)->(m)", x, dg.tensor("b", shape=(2,)))
    assert isinstance(y.owner.op, Blockwise) and y.type.shape == (3, 2)
    n = dg.tensor("n", shape=(None, 4, 4))
    (rows, k, _) = dg.core.shape_of(la.inv(n))
    assert (k, int(rows.eval({n: np.zeros((5, 4, 4))}))) == (4, 5)


@pytest.mark.parametrize(
    "op",
    [
        Cholesky(),
        Cholesky(False),
        Solve(1),
        Solve(2),
        SolveTriangular(True, True, False, 1),
        Inv(),
        Det(),
        SlogDet(),
        Eigh(),
    ],
)
def test_core_ops_are_values(op):
    assert op == type(op)(*[getattr(op, f) for f in op.__dataclass_fields__])
    assert hash(op) == hash(type(op)(*[getattr(op, f) for f in op.__dataclass_fields__]))
    ins, outs = parse_signature(op.signature)
    assert all(len(i) == 2 for i in ins[:1]) and outs


def test_blockwise_of_an_op_without_batched_code_loops(backend):
    """A core op with no `perform_batched` (here Einsum through the Blockwise fallback) runs once per batch element."""
    from dimgraph.core.linalg import Einsum

    x = dg.tensor("x", shape=(2, 3, 3))
    y = Blockwise(Einsum("ab->ba"), "(m,n)->(n,m)")(x)
    data = np.arange(18.0).reshape(2, 3, 3)
    np.testing.assert_allclose(dg.function([x], y, backend=backend)(data), np.swapaxes(data, 1, 2))


def test_blockwise_without_batch_becomes_its_core_op():
    x = dg.tensor("x", shape=(3, 3))
    f = dg.function([x], Blockwise(Inv(), "(m,m)->(m,m)")(x), backend="python")
    assert f.rewrite_trace.counts["blockwise_without_batch"] == 1
    assert isinstance(f.fgraph.outputs[0].owner.op, Inv)
    np.testing.assert_allclose(f(np.eye(3) * 2), np.eye(3) / 2)


def test_c_unrolls_a_blockwise_it_has_no_code_for():
    from dimgraph.core.linalg import Einsum

    x = dg.tensor("x", shape=(2, 3, 3))
    f = dg.function([x], Blockwise(Einsum("ab->ba"), "(m,n)->(n,m)")(x), backend="c")
    ops = {type(n.op).__name__ for n in f.fgraph.toposort()}
    assert "Blockwise" not in ops and f.rewrite_trace.counts["unroll_blockwise"] == 1
