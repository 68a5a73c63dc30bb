"""Transforms: round trips constrained <-> unconstrained, and each log-Jacobian against finite differences
of the inverse transform (the backward map onto the constrained coordinates the density is written in)."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph.prob import constraints as C
from dimgraph.prob import transforms as T

g = dg.Dim("g", size=2)
k = dg.Dim("k", size=4)
r, c = dg.Dim("r", size=3), dg.Dim("c", size=3)


def lower_entries(a):
    return a[np.tril_indices(a.shape[0], -1)]


def lower_with_diagonal(a):
    return a[np.tril_indices(a.shape[0])]


packed = dg.Dim("r_c", size=6)


# (transform, constrained dims without the batch dim g, the coordinates the density is written in, det kind)
CASES = {
    "identity": (T.Identity(), (), lambda x: x, "square"),
    "log": (T.Log(), (), lambda x: x, "square"),
    "logodds": (T.LogOdds(), (), lambda x: x, "square"),
    "interval": (T.Interval(-1.0, 2.5), (), lambda x: x, "square"),
    "interval_lower": (T.Interval(1.0, np.inf), (), lambda x: x, "square"),
    "interval_upper": (T.Interval(-np.inf, 2.0), (), lambda x: x, "square"),
    "simplex": (T.Simplex(k), (k,), lambda x: x[:-1], "square"),
    "ordered": (T.Ordered(k), (k,), lambda x: x, "square"),
    "zerosum": (T.ZeroSum(k), (k,), lambda x: x, "volume"),
    "zerosum_2d": (T.ZeroSum((k, r)), (k, r), lambda x: x.ravel(), "volume"),
    "cholesky_corr": (T.CholeskyCorr((r, c)), (r, c), lower_entries, "square"),
    "corr": (T.Corr((r, c)), (r, c), lower_entries, "square"),
    "cholesky_cov": (T.CholeskyCov((r, c)), (r, c), lower_with_diagonal, "square"),
    "cholesky_cov_packed": (T.CholeskyCov((r, c), packed), (packed,), lambda x: x, "square"),
}


def compile_case(name, backend):
    t, dims, _, _ = CASES[name]
    y = dg.labeled("y", dims=t.free_dims((g,) + dims))
    x = t.backward(y)
    return dg.function([y], [x, t.forward(x), t.log_jac_det(y)], backend=backend)


@pytest.fixture(scope="module")
def python_fns():
    return {name: compile_case(name, "python") for name in CASES}


def free_shape(name):
    t, dims, _, _ = CASES[name]
    return tuple(d.size for d in t.free_dims((g,) + dims))


def numeric_log_jac(fn, coords, kind, y, eps=1e-6):
    """log|det J| of y -> coords(backward(y)) by central differences, per element of g."""
    out = []
    for b in range(y.shape[0]):
        cols = []
        for i in range(y[b].size):
            step = np.zeros_like(y[b]).ravel()
            step[i] = eps
            hi, lo = y.copy(), y.copy()
            hi[b] += step.reshape(y[b].shape)
            lo[b] -= step.reshape(y[b].shape)
            cols.append((coords(fn(hi)[0].values[b]) - coords(fn(lo)[0].values[b])) / (2 * eps))
        jac = np.array(cols).T.reshape(-1, y[b].size)
        if kind == "square":
            out.append(np.linalg.slogdet(jac)[1])
        else:  # an embedding into a hyperplane: the volume factor sqrt(det(J^T J))
            out.append(0.5 * np.linalg.slogdet(jac.T @ jac)[1])
    return np.array(out)


def unconstrained(name):
    shape = free_shape(name)
    return st.lists(st.floats(-2.5, 2.5), min_size=int(np.prod(shape)), max_size=int(np.prod(shape))).map(
        lambda v: np.array(v).reshape(shape)
    )


@pytest.mark.parametrize("name", sorted(CASES))
def test_round_trip_and_log_jacobian_vs_finite_differences(python_fns, name):
    fn = python_fns[name]
    _, _, coords, kind = CASES[name]

    @given(unconstrained(name))
    def check(y):
        x, back, log_jac = fn(y)
        np.testing.assert_allclose(back.values, y, atol=1e-9)
        np.testing.assert_allclose(
            np.broadcast_to(log_jac.values, (g.size,))
            if log_jac.ndim == 0
            else log_jac.values.reshape(g.size, -1).sum(-1),
            numeric_log_jac(fn, coords, kind, y),
            atol=1e-6,
        )

    check()


def test_constrained_values_lie_in_their_support(python_fns):
    y = np.random.default_rng(1)
    x = {name: python_fns[name](y.normal(size=free_shape(name)) * 3)[0].values for name in CASES}
    assert (x["log"] > 0).all() and ((x["logodds"] > 0) & (x["logodds"] < 1)).all()
    assert ((x["interval"] > -1) & (x["interval"] < 2.5)).all() and (x["interval_lower"] > 1).all()
    assert (x["interval_upper"] < 2).all()
    np.testing.assert_allclose(x["simplex"].sum(-1), 1.0)
    assert (np.diff(x["ordered"], axis=-1) > 0).all()
    np.testing.assert_allclose(x["zerosum"].sum(-1), 0.0, atol=1e-12)
    np.testing.assert_allclose(x["zerosum_2d"].sum(1), 0.0, atol=1e-12)
    np.testing.assert_allclose(x["zerosum_2d"].sum(2), 0.0, atol=1e-12)
    for b in range(g.size):
        chol, corr = x["cholesky_corr"][b], x["corr"][b]
        np.testing.assert_allclose(np.triu(chol, 1), 0.0)
        np.testing.assert_allclose((chol**2).sum(1), 1.0)
        np.testing.assert_allclose(np.diag(corr), 1.0)
        assert (np.linalg.eigvalsh(corr) > 0).all()
        cov = x["cholesky_cov"][b]
        np.testing.assert_allclose(np.triu(cov, 1), 0.0)
        assert (np.diag(cov) > 0).all()
        assert (x["cholesky_cov_packed"][b][[0, 2, 5]] > 0).all()  # the diagonal in PyMC's packed order


def test_every_backend_agrees_with_python(backend, python_fns):
    """One graph holds every transform, so each backend compiles once."""
    ys = {name: dg.labeled(f"y_{name}", dims=CASES[name][0].free_dims((g,) + CASES[name][1])) for name in CASES}
    outs = []
    for name, y in ys.items():
        t = CASES[name][0]
        x = t.backward(y)
        outs += [x, t.forward(x), t.log_jac_det(y)]
    f = dg.function(list(ys.values()), outs, backend=backend)
    rng = np.random.default_rng(2)
    values = {name: rng.normal(size=free_shape(name)) for name in CASES}
    got = f(*values.values())
    for j, name in enumerate(CASES):
        for a, b in zip(got[3 * j : 3 * j + 3], python_fns[name](values[name])):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-12, atol=1e-12, err_msg=name)


def test_a_named_transform_reads_the_distribution():
    sig = dg.dist.uniform(0.0, 3.0)
    t = T.transform_for(sig, (), "interval", "rv 'u'")
    assert isinstance(t, T.Interval)
    assert isinstance(
        T.transform_for(dg.dist.dirichlet(dg.constant(np.ones(4), dims=(k,)), dim=k), (k,), "simplex", "w"), T.Simplex
    )
    assert T.transform_for(dg.dist.normal(), (k,), "ordered", "cut").n == 4
    assert isinstance(
        T.transform_for(dg.dist.halfnormal(), (), "interval", "s"), T.Interval
    )  # (0, inf) from the support
    with pytest.raises(ValueError, match=r"rv 'sigma': unknown transform 'lg'"):
        T.transform_for(dg.dist.halfnormal(), (), "lg", "rv 'sigma'")
    with pytest.raises(
        ValueError,
        match=r"rv 'x': the 'interval' transform needs a distribution with a lower or upper bound; the support of .* is real",
    ):
        T.transform_for(dg.dist.normal(), (), "interval", "rv 'x'")
    with pytest.raises(ValueError, match="Ordered"):
        T.transform_for(dg.dist.normal(), (g, k), "ordered", "rv 'x'")
    with pytest.raises(
        ValueError,
        match=r"the 'zerosum' transform needs the distribution's dims; give transform=dg.transforms.ZeroSum\(dims\)",
    ):
        T.transform_for(dg.dist.normal(), (k,), "zerosum", "rv 'x'")


def test_every_transform_is_public():
    assert all(getattr(dg.transforms, cls.__name__) is cls for cls in T.TRANSFORMS.values())
    assert dg.transforms.CholeskyCov is T.CholeskyCov  # an error message tells users to build one


def test_biject_to_dispatches_on_the_constraint():
    assert isinstance(T.biject_to(C.real), T.Identity) and isinstance(T.biject_to(C.positive), T.Log)
    assert isinstance(T.biject_to(C.unit_interval), T.LogOdds) and isinstance(
        T.biject_to(C.interval(0.0, 2.0)), T.Interval
    )
    assert T.biject_to(C.simplex(k)).dim == k and T.biject_to(C.zero_sum((k,))).dims == (k,)
    with pytest.raises(ValueError, match=r"biject_to: the support integer_interval\(lower=0, upper=None\) is discrete"):
        T.biject_to(C.nonnegative_integer)
    with pytest.raises(TypeError, match="biject_to: expected a support"):
        T.biject_to("log")


def test_the_default_transform_for_lkj_covariance_and_one_sided_bounds():
    sd = dg.dist.halfnormal(1.0)
    unpacked = dg.dist.lkj_cholesky_cov(2.0, sd, dims=(r, c))
    t = T.transform_for(unpacked, (r, c), None, "chol")
    assert isinstance(t, T.CholeskyCov) and t.free_dims((r, c)) == (t.free,) and t.free.size == 6
    packed_dist = dg.dist.lkj_cholesky_cov(2.0, sd, dims=(r, c), packed=True)
    tp = T.transform_for(packed_dist, (packed_dist.packed_dim,), None, "chol")
    assert (
        T.transform_for(packed_dist, (packed_dist.packed_dim,), "cholesky_cov", "chol").packed_dim
        == packed_dist.packed_dim
    )
    assert tp.packed_dim == packed_dist.packed_dim
    above = dg.dist.truncated(dg.dist.normal(0.0, 1.0), lower=0.5)
    ti = T.transform_for(above, (), None, "t")
    assert isinstance(ti, T.Interval)
    f = dg.function([], [ti.backward(dg.constant(np.array(-30.0), dims=()))])
    assert float(f()[0]) > 0.5  # the open upper side: lower + exp(y)
