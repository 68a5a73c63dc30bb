"""Labeled distributions on every backend: draws vs scipy.stats (KS / chi-square, moments), log densities vs
scipy.stats over parameter grids with extremes, gradients vs finite differences.

One compiled function per backend draws every distribution (and one evaluates every log density), so the
suite pays one compile per backend.
"""

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import dimgraph as dg
from dimgraph.testing import numeric_grad

N = dg.Dim("n", size=3000)
K = dg.Dim("k", size=3)

# name -> (parameters, the scipy distribution of one draw)
CONTINUOUS = {
    "normal": ({"mu": 1.5, "sigma": 2.0}, stats.norm(1.5, 2.0)),
    "halfnormal": ({"sigma": 0.7}, stats.halfnorm(scale=0.7)),
    "lognormal": ({"mu": 0.3, "sigma": 0.5}, stats.lognorm(s=0.5, scale=np.exp(0.3))),
    "student_t": ({"nu": 3.0, "mu": -1.0, "sigma": 0.5}, stats.t(3.0, -1.0, 0.5)),
    "cauchy": ({"alpha": 2.0, "beta": 0.3}, stats.cauchy(2.0, 0.3)),
    "uniform": ({"lower": -2.0, "upper": 5.0}, stats.uniform(-2.0, 7.0)),
    "exponential": ({"lam": 2.5}, stats.expon(scale=1 / 2.5)),
    "gamma": ({"alpha": 0.4, "beta": 3.0}, stats.gamma(0.4, scale=1 / 3.0)),
    "gamma_large": ({"alpha": 40.0, "beta": 0.5}, stats.gamma(40.0, scale=2.0)),
    "invgamma": ({"alpha": 3.0, "beta": 2.0}, stats.invgamma(3.0, scale=2.0)),
    "beta": ({"alpha": 0.3, "beta": 2.0}, stats.beta(0.3, 2.0)),
    "beta_tiny": ({"alpha": 0.02, "beta": 3.0}, stats.beta(0.02, 3.0)),
}
DISCRETE = {
    "bernoulli": ({"p": 0.3}, stats.bernoulli(0.3)),
    "binomial": ({"n": 20, "p": 0.35}, stats.binom(20, 0.35)),
    "binomial_large": ({"n": 5000, "p": 0.6}, stats.binom(5000, 0.6)),
    "poisson": ({"mu": 3.5}, stats.poisson(3.5)),
    "poisson_large": ({"mu": 250.0}, stats.poisson(250.0)),
    "negative_binomial": ({"n": 2.5, "p": 0.4}, stats.nbinom(2.5, 0.4)),
}
INVALID_DRAWS = {  # parameters outside the domain: NaN draws (counts: -1), as the log densities give NaN
    "normal": {"mu": 0.0, "sigma": -1.0},
    "exponential": {"lam": -2.0},
    "uniform": {"lower": 2.0, "upper": 1.0},
    "gamma": {"alpha": 0.0, "beta": 1.0},
    "beta": {"alpha": 1.0, "beta": -1.0},
    "bernoulli": {"p": 1.5},
    "binomial": {"n": 2.5, "p": 0.5},
    "poisson": {"mu": -1.0},
    "negative_binomial": {"n": 0.0, "p": 0.5},
}
CAT_P = np.array([0.2, 0.5, 0.3])
DIR_A = np.array([0.5, 2.0, 4.0])
COV = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, -0.3], [0.1, -0.3, 0.8]])

_DRAWS = {}


def _dist_name(name):
    return name.split("_large")[0].split("_tiny")[0]


def draws(backend):
    """{name: draws as a DataArray on (n,) (or (n, k))}, from one compiled function per backend."""
    if backend not in _DRAWS:
        rng = dg.rng(20261123)
        outs = {}
        for name, (params, _) in {**CONTINUOUS, **DISCRETE}.items():
            outs[name] = getattr(rng, _dist_name(name))(**params, extra_dims=(N,))
        outs["categorical"] = rng.categorical(dg.constant(CAT_P, dims=(K,)), dim=K, extra_dims=(N,))
        outs["dirichlet"] = rng.dirichlet(dg.constant(DIR_A, dims=(K,)), dim="k", extra_dims=(N,))
        bad = dg.Dim("bad", size=2)
        for name, params in INVALID_DRAWS.items():
            outs[f"invalid {name}"] = getattr(rng, name)(**params, extra_dims=(bad,))
        outs["invalid categorical"] = rng.categorical(dg.constant(CAT_P - 0.3, dims=(K,)), dim=K, extra_dims=(bad,))
        f = dg.function([], list(outs.values()), backend=backend)
        _DRAWS[backend] = dict(zip(outs, f()))
    return _DRAWS[backend]


@pytest.mark.parametrize("name", list(CONTINUOUS))
def test_continuous_draws_match_scipy(backend, name):
    x = draws(backend)[name]
    assert x.dims == ("n",) and x.dtype == np.float64
    ref = CONTINUOUS[name][1]
    assert stats.kstest(x.values, ref.cdf).pvalue > 1e-3
    if np.isfinite(ref.var()):
        assert abs(x.values.mean() - ref.mean()) < 5 * np.sqrt(ref.var() / N.size)
    _assert_variance(x.values, ref)


def _assert_variance(values, ref):
    """The sample variance within 5 standard errors (var(s^2) = sigma^4 (excess kurtosis + 2) / n) where finite."""
    var, kurtosis = ref.stats(moments="vk")
    if np.isfinite(var) and np.isfinite(kurtosis):
        assert abs(values.var(ddof=1) - var) < 5 * var * np.sqrt((kurtosis + 2) / len(values))


def _chi_square_pvalue(values, ref, support):
    counts = np.array([(values == k).sum() for k in support])
    expected = ref.pmf(np.array(support)) * len(values)
    keep = expected >= 5  # pool the rest into one cell
    obs = np.append(counts[keep], len(values) - counts[keep].sum())
    exp = np.append(expected[keep], len(values) - expected[keep].sum())
    if exp[-1] < 1e-9:
        obs, exp = obs[:-1], exp[:-1]
    return stats.chisquare(obs, exp).pvalue


@pytest.mark.parametrize("name", list(DISCRETE))
def test_discrete_draws_match_scipy(backend, name):
    x = draws(backend)[name]
    assert x.dims == ("n",) and x.dtype == np.int64
    ref = DISCRETE[name][1]
    lo, hi = ref.ppf(1e-6), ref.ppf(1 - 1e-6)
    assert _chi_square_pvalue(x.values, ref, list(range(int(lo), int(hi) + 1))) > 1e-3
    assert abs(x.values.mean() - ref.mean()) < 5 * np.sqrt(ref.var() / N.size)
    _assert_variance(x.values, ref)


def test_invalid_parameters_give_nan_draws(backend):
    d = draws(backend)
    for name in [*INVALID_DRAWS, "categorical"]:
        x = d[f"invalid {name}"]
        if x.dtype.kind == "f":
            assert np.isnan(x.values).all(), name
        else:
            assert (x.values == -1).all(), name


def test_categorical_and_dirichlet_draws(backend):
    d = draws(backend)
    cat = d["categorical"]
    assert cat.dims == ("n",) and cat.dtype == np.int64
    assert _chi_square_pvalue(cat.values, stats.rv_discrete(values=(range(3), CAT_P)), [0, 1, 2]) > 1e-3
    dirichlet = d["dirichlet"]
    assert dirichlet.dims == ("n", "k")
    np.testing.assert_allclose(dirichlet.sum("k"), 1.0, rtol=1e-12)
    for j, a in enumerate(DIR_A):  # the marginals are Beta(a_j, sum(a) - a_j)
        assert stats.kstest(dirichlet.values[:, j], stats.beta(a, DIR_A.sum() - a).cdf).pvalue > 1e-3


# --- log densities: (parameters on dim "case", x values, scipy logpdf/logpmf)
def _grid(*rows):
    """Cases as rows (parameters..., x)."""
    return [np.array(row, dtype=float) for row in rows]


LOGP_CASES = {
    "normal": (
        ["mu", "sigma"],
        _grid((0, 1, 0.5), (3, 1e-8, 3), (-2, 1e8, 1e9), (0, 2, 40.0), (1, 0.5, -np.inf), (0, -1, 0.0)),
        lambda x, mu, s: stats.norm(mu, s).logpdf(x),
    ),
    "halfnormal": (
        ["sigma"],
        _grid((1, 0.5), (1e-6, 1e-7), (3, -1), (1e6, 1.0)),
        lambda x, s: stats.halfnorm(scale=s).logpdf(x),
    ),
    "lognormal": (
        ["mu", "sigma"],
        _grid((0, 1, 2), (1, 1e-3, np.e), (0, 1, 0), (0, 1, -1), (5, 20, 1e-30)),
        lambda x, mu, s: stats.lognorm(s=s, scale=np.exp(mu)).logpdf(x),
    ),
    "student_t": (
        ["nu", "mu", "sigma"],
        _grid((3, 0, 1, 0.5), (0.5, 1, 2, 1e6), (1e4, 0, 1, -3), (1, 0, 1e-5, 1e-5), (1e10, 0, 1, 1), (1e300, 0, 1, 1)),
        lambda x, nu, mu, s: stats.t(nu, mu, s).logpdf(x),
    ),
    "cauchy": (
        ["alpha", "beta"],
        _grid((0, 1, 3), (0, 1e-6, 1e10), (2, 5, 2)),
        lambda x, a, b: stats.cauchy(a, b).logpdf(x),
    ),
    "uniform": (
        ["lower", "upper"],
        _grid((0, 1, 0.5), (-1e9, 1e9, 3), (0, 1, 1.5), (0, 1, -0.1), (2, 3, 3)),
        lambda x, lo, hi: stats.uniform(lo, hi - lo).logpdf(x),
    ),
    "exponential": (
        ["lam"],
        _grid((2, 0.3), (1e-8, 1e8), (3, -1), (1e5, 0)),
        lambda x, lam: stats.expon(scale=1 / lam).logpdf(x),
    ),
    "gamma": (
        ["alpha", "beta"],
        _grid((2, 3, 0.5), (0.01, 1, 1e-5), (1e5, 1e3, 100), (1, 2, 0), (3, 1, 0), (2, 1, -1)),
        lambda x, a, b: stats.gamma(a, scale=1 / b).logpdf(x),
    ),
    "invgamma": (
        ["alpha", "beta"],
        _grid((2, 3, 0.5), (0.01, 1, 1e5), (1e3, 1e3, 1), (2, 1, 0), (2, 1, -1)),
        lambda x, a, b: stats.invgamma(a, scale=b).logpdf(x),
    ),
    "beta": (
        ["alpha", "beta"],
        _grid((2, 3, 0.3), (0.01, 0.02, 1e-6), (1e4, 2e4, 0.33), (1, 1, 0), (2, 1, 1), (2, 2, 1.5), (2, 2, -0.5)),
        lambda x, a, b: stats.beta(a, b).logpdf(x),
    ),
    "bernoulli": (
        ["p"],
        _grid((0.3, 1), (0.3, 0), (1e-12, 1), (1.0, 1), (0.5, 2)),
        lambda x, p: stats.bernoulli(p).logpmf(x),
    ),
    "binomial": (
        ["n", "p"],
        _grid((10, 0.3, 3), (1e6, 0.5, 5e5), (1e6, 1e-7, 0), (5, 1.0, 5), (5, 0.4, 6), (5, 0.4, 2.5), (0, 0.3, 0)),
        lambda x, n, p: stats.binom(n, p).logpmf(x),
    ),
    "poisson": (
        ["mu"],
        _grid((3.0, 2), (1e-10, 0), (1e8, 1e8), (0, 0), (0, 3), (2, -1), (2, 1.5)),
        lambda x, mu: stats.poisson(mu).logpmf(x),
    ),
    "negative_binomial": (
        ["n", "p"],
        _grid((2.5, 0.4, 3), (1e6, 0.5, 1e6), (0.01, 0.99, 0), (3, 1.0, 0), (3, 0.4, -1)),
        lambda x, n, p: stats.nbinom(n, p).logpmf(x),
    ),
}
INVALID = {  # parameters outside the domain: NaN, never a number that looks valid
    "normal": {"mu": 0.0, "sigma": -1.0},
    "gamma": {"alpha": 0.0, "beta": 1.0},
    "beta": {"alpha": 1.0, "beta": -2.0},
    "binomial": {"n": 5.0, "p": 1.5},
    "poisson": {"mu": -1.0},
}

_LOGP = {}


def logp_function(backend):
    if backend not in _LOGP:
        inputs, outputs = [], []
        for name, (names, cases, _) in LOGP_CASES.items():
            case = dg.Dim(f"case_{name}", size=len(cases))
            x = dg.labeled(f"x_{name}", dims=(case,))
            params = [dg.labeled(f"{name}_{p}", dims=(case,)) for p in names]
            inputs += [x, *params]
            outputs.append(getattr(dg.dist, name)(*params).logp(x))
        _LOGP[backend] = dg.function(inputs, outputs, backend=backend)
    return _LOGP[backend]


def test_log_densities_match_scipy(backend):
    values = []
    for names, cases, _ in LOGP_CASES.values():
        table = np.array(cases)
        values += [table[:, -1]] + [table[:, j] for j in range(len(names))]
    results = logp_function(backend)(*values)
    for (name, (names, cases, ref)), got in zip(LOGP_CASES.items(), results):
        table = np.array(cases)
        with np.errstate(all="ignore"):
            want = np.array([ref(row[-1], *row[:-1]) for row in table])
        np.testing.assert_allclose(got.values, want, rtol=1e-7, atol=1e-9, err_msg=name)


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_parameters_give_nan(name):
    value = getattr(dg.dist, name)(**INVALID[name]).logp(1.0).eval(backend="python")
    assert np.isnan(value)


def test_invalid_parameters_raise_on_request():
    sigma = dg.labeled("sigma", dims=())
    f = dg.function([sigma], dg.dist.normal(0.0, sigma).logp(1.0, check="raise"), backend="python")
    assert float(f(2.0)) == pytest.approx(stats.norm(0, 2).logpdf(1.0))
    with pytest.raises(AssertionError, match="invalid parameters"):
        f(-1.0)


def test_categorical_and_dirichlet_logp(backend):
    obs = dg.Dim("obs", size=5)
    p = dg.labeled("p", dims=(K,))
    x = dg.labeled("x", dims=(obs,), dtype="int64")
    a = dg.labeled("a", dims=(K,))
    s = dg.labeled("s", dims=(obs, K))
    f = dg.function(
        [p, x, a, s], [dg.dist.categorical(p, dim=K).logp(x), dg.dist.dirichlet(a, dim=K).logp(s)], backend=backend
    )
    simplex = np.array([[0.2, 0.3, 0.5], [1e-9, 0.5, 0.5 - 1e-9], [0.3, 0.3, 0.4], [0.5, 0.6, -0.1], [1 / 3] * 3])
    cat, dirichlet = f(CAT_P * 2, np.array([0, 1, 2, 3, -1]), DIR_A, simplex)
    want = [np.log(CAT_P[k]) if 0 <= k < 3 else -np.inf for k in [0, 1, 2, 3, -1]]
    np.testing.assert_allclose(cat.values, want, rtol=1e-12)
    want = [stats.dirichlet(DIR_A).logpdf(row) if (row >= 0).all() else -np.inf for row in simplex]
    np.testing.assert_allclose(dirichlet.values, want, rtol=1e-9)


GRAD_CASES = {  # name -> (parameters, x, whether x is continuous); counts differentiate w.r.t. the real parameters
    "normal": ([0.3, 1.7], 0.9, True),
    "halfnormal": ([1.3], 0.9, True),
    "lognormal": ([0.3, 0.8], 1.2, True),
    "student_t": ([4.0, 0.3, 1.7], 0.9, True),
    "cauchy": ([0.3, 0.8], 1.2, True),
    "uniform": ([-1.0, 2.0], 0.5, True),
    "exponential": ([1.5], 0.7, True),
    "gamma": ([2.5, 1.5], 0.8, True),
    "invgamma": ([2.5, 1.5], 0.8, True),
    "beta": ([2.5, 1.5], 0.3, True),
    "bernoulli": ([0.3], 1.0, False),
    "binomial": ([12.0, 0.3], 4.0, False),
    "poisson": ([3.5], 4.0, False),
    "negative_binomial": ([2.5, 0.3], 4.0, False),
}
_GRADS = {}


def gradient_cases():
    """[(label, cost, variables, wrt, values)]: every distribution's logp w.r.t. the value and each real parameter."""
    if not _GRADS:
        _GRADS["cases"] = new_gradient_cases()
    return _GRADS["cases"]


def new_gradient_cases():
    """`gradient_cases` on variables of their own."""
    cases = []
    for name, (params, x, continuous) in GRAD_CASES.items():
        vs = [dg.labeled(f"{name}_{k}", dims=()) for k in range(len(params) + 1)]
        cost = getattr(dg.dist, name)(*vs[:-1]).logp(vs[-1])
        wrt = vs if continuous else vs[:-1]
        if name == "binomial":
            wrt = vs[1:2]  # n is a count
        cases.append((name, cost, vs, wrt, [*params, x]))
    row, col = K, K.rename("k2")
    p, a, s = (dg.labeled(n, dims=(K,)) for n in ("cat_p", "dir_a", "dir_x"))
    cases.append(("categorical", dg.dist.categorical(p, dim=K).logp(1), [p], [p], [CAT_P]))
    cases.append(("dirichlet", dg.dist.dirichlet(a, dim=K).logp(s), [a, s], [a, s], [DIR_A, np.array([0.2, 0.3, 0.5])]))
    mu, cov, x = (
        dg.labeled("mvn_mu", dims=(row,)),
        dg.labeled("mvn_cov", dims=(row, col)),
        dg.labeled("mvn_x", dims=(row,)),
    )
    mvn = dg.dist.multivariate_normal(mu, cov=cov, dims=(row, col)).logp(x)
    cases.append(
        (
            "multivariate_normal",
            mvn,
            [mu, cov, x],
            [mu, cov, x],
            [np.array([0.0, 1.0, -1.0]), COV, np.array([0.5, 0.0, 2.0])],
        )
    )
    return cases


def test_logp_gradients_match_finite_differences(backend):
    """Gradients w.r.t. the value and every parameter, all in one compiled function per backend."""
    cases = gradient_cases()
    inputs = [v for _, _, vs, _, _ in cases for v in vs]
    f = dg.function(inputs, [g for _, cost, _, wrt, _ in cases for g in dg.grad(cost, wrt)], backend=backend)
    got = iter(f(*[v for *_, values in cases for v in values]))
    for name, cost, vs, wrt, values in cases:
        cost_fn = dg.function(vs, cost, backend="python")
        for v in wrt:
            k = next(i for i, u in enumerate(vs) if u is v)
            g = np.asarray(next(got))
            fd = numeric_grad(lambda *vals: float(cost_fn(*vals)), [np.asarray(u, dtype=float) for u in values], k)
            if v.type.ndim == 2:  # a covariance: only its symmetric part is seen by the density
                g, fd = (g + g.T) / 2, (fd + fd.T) / 2
            np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7, err_msg=f"{name} d/d{v.name}")


def test_no_log_density_runs_a_node_through_perform_on_numba():
    """Every distribution's log density and its gradients, on 0-d values (the driver's single-element
    programs) and on vectors (kernels): no node runs by Python `perform`, on the driver or in the jitted graph."""
    from dimgraph.backends.numba.host import host_call

    cases = new_gradient_cases()  # NOTE: variables of its own: a third compile of one labeled graph fails (MVN's)
    inputs = [v for _, _, vs, _, _ in cases for v in vs]
    outputs = [o for _, cost, _, wrt, _ in cases for o in [cost, *dg.grad(cost, wrt)]]
    values = [v for *_, vals in cases for v in vals]
    f = dg.function(inputs, outputs, backend="numba", jit_graph=True)
    plan = f._compiled.plan
    assert f.timings["perform"] == () and plan.performs == (), f.summary()  # the jitted graph
    assert not [n for name, n in plan.hosts if getattr(host_call(n), "performs", False)]  # the driver
    # the oracle on variables of its own: compiling one graph twice can fail (see the xfail below)
    oracle = new_gradient_cases()
    want = dg.function(
        [v for _, _, vs, _, _ in oracle for v in vs],
        [o for _, cost, _, wrt, _ in oracle for o in [cost, *dg.grad(cost, wrt)]],
        backend="python",
    )(*values)
    for got, w in zip(f(*values), want):
        np.testing.assert_allclose(np.asarray(got), np.asarray(w), rtol=1e-12, atol=1e-14)
    assert f._compiled.tiers.state == "jitted"
    vectors = logp_function("numba")
    assert vectors.tiers.performs == () and vectors._compiled.plan.performs == ()


def test_same_seed_same_numbers_and_contexts_are_independent(backend):
    obs = dg.Dim("obs", size=50)
    f = dg.function([], dg.rng(7).normal(0.0, 1.0, extra_dims=(obs,)), backend=backend)
    g = dg.function([], dg.rng(7).normal(0.0, 1.0, extra_dims=(obs,)), backend=backend)
    first = f(ctx=dg.SharedContext(seed=1))
    np.testing.assert_array_equal(first, g(ctx=dg.SharedContext(seed=1)))
    a, b = dg.SharedContext(seed=3).spawn(2)
    draws_a, draws_b = f(ctx=a), f(ctx=b)
    assert not np.allclose(draws_a, draws_b) and not np.allclose(draws_a, first)
    assert abs(np.corrcoef(draws_a, draws_b)[0, 1]) < 0.5
    np.testing.assert_array_equal(draws_a, g(ctx=dg.SharedContext(seed=3).spawn(2)[0]))


def test_a_stream_advances_only_in_its_context_and_reproduces():
    obs = dg.Dim("obs", size=4)
    rng = dg.rng(11)
    f = dg.function([], rng.normal(0.0, 1.0, extra_dims=(obs,)), backend="python")
    ctx = dg.SharedContext(seed=5)
    (state,) = rng.states
    before_default = state.get()
    a1, a2 = f(ctx=ctx), f(ctx=ctx)
    assert not np.allclose(a1, a2)
    np.testing.assert_array_equal(state.get(), before_default)  # the default context did not move
    replay = dg.SharedContext(seed=5)
    np.testing.assert_array_equal(f(ctx=replay), a1)
    np.testing.assert_array_equal(f(ctx=replay), a2)
    assert int(state.get(ctx=ctx)[2]) == 2


def test_a_failing_call_changes_no_rng_state(backend):
    """Refused inputs and errors raised by the compiled code (a position out of range) alike."""
    obs = dg.Dim("obs")
    y = dg.labeled("y", dims=(obs,))
    i = dg.labeled("i", dims=(), dtype="int64")
    rng = dg.rng(3)
    noise = rng.normal(0.0, 1.0, extra_dims=(dg.Dim("draw", size=2),))
    f = dg.function([y, i], (y + noise.isel(draw=i)).sum(), backend=backend)
    ctx = dg.SharedContext(seed=0)
    f(np.zeros(3), 0, ctx=ctx)
    before = rng.states[0].get(ctx=ctx)
    with pytest.raises(dg.InputError):
        f(np.zeros((3, 2)), 0, ctx=ctx)
    with pytest.raises(IndexError):
        f(np.zeros(3), 5, ctx=ctx)
    np.testing.assert_array_equal(rng.states[0].get(ctx=ctx), before)
    f(np.zeros(3), 1, ctx=ctx)
    assert int(rng.states[0].get(ctx=ctx)[2]) == int(before[2]) + 1


def test_explicit_states_are_pure_values(backend):
    obs = dg.Dim("obs", size=6)
    s = dg.rng_state("s")
    nxt, x = dg.dist.normal(0.0, 1.0).draw(s, extra_dims=(obs,))
    again_state, again = dg.dist.normal(0.0, 1.0).draw(s, extra_dims=(obs,))
    _, later = dg.dist.normal(0.0, 1.0).draw(nxt, extra_dims=(obs,))
    f = dg.function([s], [nxt, x, again, later], backend=backend)
    start = dg.seed_state(1)
    s1, x1, x2, x3 = f(start)
    np.testing.assert_array_equal(x1, x2)  # one state, one stream
    assert not np.allclose(x1, x3)
    np.testing.assert_array_equal(s1, [*start[:2], 1])
    np.testing.assert_array_equal(f(s1)[1], x3)  # the next state continues the stream


def test_stream_next_state_is_the_graph_value():
    rng = dg.rng(0)
    x = rng.poisson(3.0, extra_dims=(dg.Dim("obs", size=2),))
    nxt = rng.next_state(x)
    assert nxt.owner is rng.states[0].default_update.owner
    with pytest.raises(ValueError, match="not a draw"):
        rng.next_state(x + 1)


def test_draw_dims_broadcast_by_name(backend):
    group = dg.Dim("group", coords=["a", "b", "c"])
    obs = dg.Dim("obs", size=1000)
    mu = dg.labeled("mu", dims=(group,))
    rng = dg.rng(1)
    y = rng.normal(mu, 0.01, extra_dims=(obs,))
    one = rng.normal(mu, 0.01, extra_dims=obs)  # a single Dim is taken as a tuple of one
    f = dg.function([mu], [y, one], backend=backend)
    out, out_one = f(xr.DataArray([0.0, 10.0, -10.0], dims="group"))
    assert out.dims == ("obs", "group") and list(out.coords["group"].values) == ["a", "b", "c"]
    np.testing.assert_allclose(out.mean("obs"), [0.0, 10.0, -10.0], atol=0.01)
    assert out_one.dims == ("obs", "group") and not np.allclose(out, out_one)


def test_draw_errors():
    obs = dg.Dim("obs", size=3)
    mu = dg.labeled("mu", dims=(obs,))
    with pytest.raises(dg.DimError, match="extra_dims"):
        dg.rng(0).normal(mu, 1.0, extra_dims=(obs,))
    with pytest.raises(TypeError, match="missing parameter 'p'"):
        dg.dist.bernoulli()
    with pytest.raises(TypeError, match="unexpected parameter 'scale'"):
        dg.dist.normal(scale=1.0)
    with pytest.raises(TypeError, match="has no dims"):
        dg.dist.normal(np.zeros(3))
    with pytest.raises(TypeError, match="RNG state"):
        dg.dist.normal().draw(dg.labeled("s", dims=()))
    with pytest.raises(TypeError, match=r"categorical: give the core dim of 'p' as dim="):
        dg.dist.categorical(dg.constant(CAT_P, dims=(K,)))
    for make in (dg.rng, dg.seed_state, dg.SharedContext):
        with pytest.raises(TypeError, match=r"expected a non-negative int.*got 'a'"):
            make("a")
        with pytest.raises(ValueError, match=r"expected a non-negative int.*got -1"):
            make(-1)


def test_softmax_and_log_softmax_match_scipy(backend):
    from scipy.special import log_softmax, softmax

    row = dg.Dim("row", size=2)
    x = dg.labeled("x", dims=(K, row))
    t = dg.tensor("t", shape=(3, 2))  # the positional layer: axis=, all axes by default (scipy)
    outputs = [
        dg.softmax(x, K),
        dg.log_softmax(x, "k"),
        dg.softmax(t, axis=1),
        dg.log_softmax(t, axis=0),
        dg.softmax(t),
    ]
    f = dg.function([x, t], outputs, backend=backend)
    data = np.array([[1.0, -800.0], [2.0, 0.0], [3.0, 800.0]])
    sm, lsm, *positional = f(data, data)
    assert sm.dims == ("k", "row")
    np.testing.assert_allclose(sm.values, softmax(data, axis=0), rtol=1e-12)
    np.testing.assert_allclose(lsm.values, log_softmax(data, axis=0), rtol=1e-12)
    for got, want in zip(positional, [softmax(data, axis=1), log_softmax(data, axis=0), softmax(data)]):
        np.testing.assert_allclose(got, want, rtol=1e-12)


def test_random_walk_in_scan_threads_the_state(backend):
    t, chain = dg.Dim("t", size=4), dg.Dim("chain", size=500)
    s = dg.rng_state("s")

    def step(x, state):
        state, eps = dg.dist.normal(0.0, 1.0).draw(state, extra_dims=(chain,))
        return x + eps, state

    (final_x, final_state), (walk, _) = dg.scan(step, init=[dg.constant(np.zeros(500), dims=(chain,)), s], dim=t)
    unrolled, state = [], s
    for _ in range(4):  # the same draws made one after another outside a loop
        state, eps = dg.dist.normal(0.0, 1.0).draw(state, extra_dims=(chain,))
        unrolled.append(eps)
    init = [dg.constant(np.zeros(500), dims=(chain,)), s]  # a while loop carries the state too: until a chain passes 4
    until_x, until_state = dg.while_loop(lambda x, state: x.max() < 4.0, step, init=init, max_steps=4)
    f = dg.function([s], [walk, final_state, until_x, until_state, *unrolled], backend=backend)
    walk_values, after, until_value, until_after, *steps = f(dg.seed_state(9))
    assert walk_values.dims == ("t", "chain")
    np.testing.assert_allclose(walk_values.values, np.cumsum([e.values for e in steps], axis=0), rtol=1e-12)
    assert int(after[2]) == 4
    assert stats.kstest(np.diff(walk_values.values, axis=0).ravel(), stats.norm().cdf).pvalue > 1e-3
    passed = walk_values.values.max(axis=1) >= 4.0
    taken = int(np.argmax(passed)) + 1 if passed.any() else 4
    assert int(until_after[2]) == taken
    np.testing.assert_allclose(until_value.values, walk_values.values[taken - 1], rtol=1e-12)


def test_a_step_drawing_from_a_state_it_does_not_carry_is_refused():
    """Such a draw would repeat the same numbers at every step; a draw made before the loop may be read."""
    t = dg.Dim("t", size=3)
    zero = dg.constant(0.0, dims=())
    with pytest.raises(ValueError, match="scan: the step draws from the RNG state 'rng_state_0' without carrying it"):
        dg.scan(lambda x: x + dg.rng(0).normal(0.0, 1.0), init=[zero], dim=t)
    s = dg.rng_state("s")
    with pytest.raises(ValueError, match="while_loop: the step draws from the RNG state 's'"):
        dg.while_loop(lambda x: x < 1.0, lambda x: x + dg.dist.exponential(1.0).draw(s)[1], init=[zero], max_steps=5)
    with pytest.raises(ValueError, match="scan: the step draws from the RNG state 's'"):
        dg.scan(lambda x: x + dg.core.random_draw("normal", s)[1], init=[dg.core.constant(0.0)], n_steps=3)
    theta = dg.rng(4).normal(0.0, 1.0)
    _, trace = dg.scan(lambda x: x + theta, init=zero, dim=t)
    got, value = dg.function([], [trace, theta], backend="python")()
    np.testing.assert_allclose(got.values, float(value) * np.arange(1, 4), rtol=1e-12)


def test_positional_outputs_of_labeled_draws_compile():
    """Inputs and outputs all positional (a state, `to_positional()`), labeled ops inside: lowered all the same."""
    s = dg.rng_state("s")
    nxt, z = dg.dist.normal().draw(s, extra_dims=(dg.Dim("n", size=4),))
    following, values = dg.function([s], [nxt, z.to_positional()], backend="python")(dg.seed_state(0))
    assert values.shape == (4,) and int(following[2]) == 1


def test_multivariate_normal_logp_and_draws(backend):
    row, col = K, K.rename("k2")
    batch = dg.Dim("batch", size=2)
    mu = dg.labeled("mu", dims=(batch, row))
    cov = dg.labeled("cov", dims=(row, col))
    x = dg.labeled("x", dims=(row, batch))
    mvn = dg.dist.multivariate_normal(mu, cov=cov, dims=(row, col))
    draws = dg.rng(5).multivariate_normal(mu, cov=cov, dims=(row, col), extra_dims=(N,))
    f = dg.function([mu, cov, x], [mvn.logp(x), draws], backend=backend)
    mu_v = np.array([[0.0, 1.0, -1.0], [3.0, 0.0, 2.0]])
    x_v = np.array([[0.5, 1.0], [0.0, -2.0], [30.0, 1.5]])
    logp, sample = f(mu_v, COV, x_v)
    want = [stats.multivariate_normal(mu_v[b], COV).logpdf(x_v[:, b]) for b in range(2)]
    assert logp.dims == ("batch",)
    np.testing.assert_allclose(logp.values, want, rtol=1e-10)
    assert sample.dims == ("n", "batch", "k")
    for b in range(2):
        values = sample.values[:, b, :]
        np.testing.assert_allclose(values.mean(0), mu_v[b], atol=5 * np.sqrt(COV.diagonal().max() / N.size))
        np.testing.assert_allclose(np.cov(values.T), COV, atol=0.15)
        for j in range(3):  # each margin is normal
            assert stats.kstest(values[:, j], stats.norm(mu_v[b, j], np.sqrt(COV[j, j])).cdf).pvalue > 1e-3
    chol = dg.dist.multivariate_normal(mu, chol=dg.constant(np.linalg.cholesky(COV), dims=(row, col)), dims=(row, col))
    same = dg.function([mu, x], chol.logp(x), backend=backend)(mu_v, x_v)
    np.testing.assert_allclose(same.values, want, rtol=1e-10)
    bad = dg.function([mu, cov, x], mvn.logp(x), backend=backend)(mu_v, -COV, x_v)
    assert np.isnan(bad.values).all()


def test_a_bad_state_is_an_input_error():
    s = dg.rng_state("s")
    _, z = dg.dist.normal().draw(s, extra_dims=(dg.Dim("obs", size=2),))
    f = dg.function([s], z, backend="python")
    with pytest.raises(dg.InputError, match="'s'"):
        f(np.zeros(2, dtype=np.uint64))
    with pytest.raises(TypeError, match="RNG state"):
        dg.core.random_draw("normal", dg.tensor("t", shape=(3,), dtype="uint64"), size=(2,))


def test_a_pickled_function_draws_the_same_numbers(backend):
    import pickle

    f = dg.function([], dg.rng(1).gamma(2.0, 1.0, extra_dims=(dg.Dim("obs", size=5),)), backend=backend)
    g = pickle.loads(pickle.dumps(f))
    np.testing.assert_array_equal(f(ctx=dg.SharedContext(seed=2)), g(ctx=dg.SharedContext(seed=2)))


def test_extra_dims_sized_by_an_input(backend):
    """API.md's `rng.normal(mu, sigma, extra_dims=(obs,))` with `obs = dg.Dim("obs")`: the size comes with y."""
    obs = dg.Dim("obs")
    y = dg.labeled("y", dims=(obs,))
    rng = dg.rng(0)
    f = dg.function([y], y + rng.normal(0.0, 1.0, extra_dims=(obs,)), backend=backend)
    first, second = f(np.zeros(4)), f(np.full(2, 10.0))
    assert first.sizes["obs"] == 4 and second.sizes["obs"] == 2 and (second > 5).all()
    assert int(rng.states[0].get()[2]) == 2


def test_mapped_over_extra_dims_each_element_draws_anew(backend):
    """`map_extra_dims=True` (a posterior predictive over `draw`): every element draws its own numbers."""
    group = dg.Dim("group", size=2)
    mu = dg.labeled("mu", dims=(group,))
    rng = dg.rng(6)
    f = dg.function([mu], [rng.normal(mu, 1.0), rng.gamma(dg.exp(mu), 1.0)], map_extra_dims=True, backend=backend)
    posterior = xr.DataArray(np.tile([0.0, 1.0], (1500, 1)), dims=("draw", "group"))
    y, g = f(posterior)
    assert y.dims == ("draw", "group") and g.dims == ("draw", "group")
    assert stats.kstest((y - posterior).values.ravel(), stats.norm().cdf).pvalue > 1e-3
    for j, alpha in enumerate([1.0, np.e]):
        assert stats.kstest(g.values[:, j], stats.gamma(alpha).cdf).pvalue > 1e-3
    assert [int(s.get()[2]) for s in rng.states] == [1, 1]


def test_reparameterized_draws_differentiate(backend):
    """x = mu + sigma z: d sum(x) / d mu = n and d sum(x) / d sigma = sum(z), the z of the same state."""
    mu, sigma = dg.labeled("mu", dims=()), dg.labeled("sigma", dims=())
    s, obs = dg.rng_state("s"), dg.Dim("obs", size=4)
    _, x = dg.dist.normal(mu, sigma).draw(s, extra_dims=(obs,))
    _, z = dg.dist.normal().draw(s, extra_dims=(obs,))
    f = dg.function([s, mu, sigma], [*dg.grad(x.sum(), [mu, sigma]), z.sum()], backend=backend)
    d_mu, d_sigma, z_sum = f(dg.seed_state(0), 1.0, 2.0)
    assert float(d_mu) == 4.0 and float(d_sigma) == pytest.approx(float(z_sum), rel=1e-12)


def test_one_graph_compiles_twice():
    """The rewrites work on a copy: a second compile of one graph (its nodes over constants only, too) finds it as
    the first did (they once fused a clone of `p` into the user's gradient graph: InputError)."""
    k = dg.Dim("k", size=3)
    p = dg.labeled("p", dims=(k,))
    cost = dg.dist.categorical(p, dim=k).logp(1)
    outputs = [cost, *dg.grad(cost, [p])]
    first = dg.function([p], outputs, backend="python")(CAT_P)
    second = dg.function([p], outputs, backend="python")(CAT_P)
    np.testing.assert_allclose(second[1].values, first[1].values)
    # log p_1 - log sum(p), and its gradient 1{j = 1} / p_1 - 1 / sum(p)
    assert float(second[0]) == pytest.approx(np.log(CAT_P[1]), rel=1e-12)
    np.testing.assert_allclose(second[1].values, [-1.0, 1.0, -1.0], rtol=1e-12)
