"""Time series over a named time Dim: random walks (any innovation, Gaussian, multivariate normal and Student-t),
AR(p) with a constant and an initial distribution, GARCH(1, 1) and Euler-Maruyama.

Oracles: NumPy/scipy.stats closed forms of each log density (the innovations of the value), finite differences
for gradients, scipy.stats for draws (KS on the innovations recovered from the draws, moments). Parameters on a
`series` dim broadcast by name. One compiled function per backend for the log densities, one for their
gradients and one for the draws; a stochastic-volatility model checks `dg.Model`'s log density.
"""

import math

import numpy as np
import pytest
from scipy import stats

import dimgraph as dg
from dimgraph.testing import numeric_grad

T = dg.Dim("t", coords=[f"d{k}" for k in range(7)])  # coords: windows of the series must line up by position
S = dg.Dim("series", size=2)
LAG = dg.Dim("lag", size=2)
ROW, COL = dg.Dim("row", size=2), dg.Dim("col", size=2)
N = dg.Dim("n", size=2000)
COV = np.array([[1.0, 0.4], [0.4, 0.5]])
RHO = np.array([0.6, -0.3])
RNG = np.random.default_rng(20261201)
X = RNG.normal(size=(2, 7)).cumsum(axis=1)  # a value on (series, t)
XV = RNG.normal(size=(7, 2)).cumsum(axis=0)  # a vector series on (t, row)

_CACHE = {}


def cached(key, build):
    if key not in _CACHE:
        _CACHE[key] = build()
    return _CACHE[key]


def _c(values, *dims):
    return dg.constant(np.asarray(values, dtype=float), dims=dims)


def _sde(x, k, s):
    return -k * x, s * (1.0 + 0.1 * x * x)


# name -> (parameters as inputs {name: (dims, value)}, distribution from the inputs)
CASES = {
    "gaussian_random_walk": (
        {"mu": ((S,), [0.3, -0.2]), "sigma": ((), 0.7)},
        lambda v: dg.dist.gaussian_random_walk(v["mu"], v["sigma"], init_dist=dg.dist.normal(1.0, 2.0), time=T),
    ),
    "random_walk": (
        {"b": ((), 1.5)},
        lambda v: dg.dist.random_walk(dg.dist.normal(0.0, 1.0), dg.dist.laplace(0.0, v["b"]), time=T),
    ),
    "ar2": (
        {"rho": ((LAG,), RHO), "sigma": ((S,), [0.8, 1.3]), "constant": ((), 0.1)},
        lambda v: dg.dist.ar(
            v["rho"], v["sigma"], constant=v["constant"], init_dist=dg.dist.normal(0.0, 2.0), lag=LAG, time=T
        ),
    ),
    "ar1": (
        {"rho": ((S,), [0.5, 0.95]), "sigma": ((), 0.6)},
        lambda v: dg.dist.ar(v["rho"], v["sigma"], time=T),
    ),
    "garch11": (
        {"omega": ((), 0.3), "alpha_1": ((S,), [0.2, 0.1]), "beta_1": ((), 0.5), "initial_vol": ((), 1.2)},
        lambda v: dg.dist.garch11(v["omega"], v["alpha_1"], v["beta_1"], v["initial_vol"], time=T),
    ),
    "euler_maruyama": (
        {"k": ((S,), [2.0, 0.5]), "s": ((), 0.5)},
        lambda v: dg.dist.euler_maruyama(0.1, _sde, (v["k"], v["s"]), init_dist=dg.dist.normal(0.0, 1.0), time=T),
    ),
}


def _numpy_logp(name, p, x):
    """The oracle, one series (x on t) and its parameters as numbers."""
    inc = np.diff(x)
    if name == "gaussian_random_walk":
        return stats.norm(1, 2).logpdf(x[0]) + stats.norm(p["mu"], p["sigma"]).logpdf(inc).sum()
    if name == "random_walk":
        return stats.norm().logpdf(x[0]) + stats.laplace(0, p["b"]).logpdf(inc).sum()
    if name == "ar2":
        mean = p["constant"] + p["rho"][0] * x[1:-1] + p["rho"][1] * x[:-2]
        return stats.norm(0, 2).logpdf(x[:2]).sum() + stats.norm(mean, p["sigma"]).logpdf(x[2:]).sum()
    if name == "ar1":
        return stats.norm(0, 100).logpdf(x[0]) + stats.norm(p["rho"] * x[:-1], p["sigma"]).logpdf(x[1:]).sum()
    if name == "garch11":
        vol = [p["initial_vol"]]
        for k in range(1, len(x)):
            vol.append(math.sqrt(p["omega"] + p["alpha_1"] * x[k - 1] ** 2 + p["beta_1"] * vol[-1] ** 2))
        return stats.norm(0, np.array(vol)).logpdf(x).sum()
    if name == "euler_maruyama":
        drift, diffusion = _sde(x[:-1], p["k"], p["s"])
        return (
            stats.norm().logpdf(x[0]) + stats.norm(x[:-1] + drift * 0.1, diffusion * math.sqrt(0.1)).logpdf(x[1:]).sum()
        )
    raise KeyError(name)


def _inputs(name):
    return {k: dg.labeled(f"{name}_{k}", dims=dims) for k, (dims, _) in CASES[name][0].items()}


def _values(name):
    return [np.asarray(v, dtype=float) for _, v in CASES[name][0].values()]


def _per_series(name, s):
    """The parameters of series s as numbers."""
    return {
        k: (np.asarray(v, dtype=float)[s] if S in dims else np.asarray(v, dtype=float))
        for k, (dims, v) in CASES[name][0].items()
    }


def logp_graph():
    def build():
        x = dg.labeled("x", dims=(S, T))
        graph = {}
        for name, (_, make) in CASES.items():
            params = _inputs(name)
            graph[name] = (params, make(params).logp(x))
        return x, graph

    return cached("logp graph", build)


def densities_and_gradients(backend):
    """The log densities, then each one's gradient w.r.t. the series and its parameters, at the tables' values:
    one compiled function per backend (the gradients' graph holds the densities': apart, compiled twice)."""

    def build():
        x, graph = logp_graph()
        wrts = [[x, *params.values()] for params, _ in graph.values()]
        grads = [g for (_, out), wrt in zip(graph.values(), wrts) for g in dg.grad(out.sum(), wrt)]
        inputs = [x] + [v for params, _ in graph.values() for v in params.values()]
        f = dg.function(inputs, [*(out for _, out in graph.values()), *grads], backend=backend)
        return f(X, *[v for name in CASES for v in _values(name)])

    return cached(("densities and gradients", backend), build)


def test_log_densities_match_numpy(backend):
    for name, value in zip(CASES, densities_and_gradients(backend)[: len(CASES)]):
        assert value.dims == ("series",), name
        want = [_numpy_logp(name, _per_series(name, s), X[s]) for s in range(2)]
        np.testing.assert_allclose(value.values, want, rtol=1e-10, err_msg=name)


def test_gradients_match_finite_differences(backend):
    x, graph = logp_graph()
    costs = {name: out.sum() for name, (_, out) in graph.items()}
    wrts = {name: [x, *params.values()] for name, (params, _) in graph.items()}
    got = iter(densities_and_gradients(backend)[len(CASES) :])
    for name in CASES:
        cost = cached(("cost", name), lambda: dg.function(wrts[name], costs[name], backend="python"))
        values = [X, *_values(name)]
        for k, v in enumerate(wrts[name]):
            fd = numeric_grad(lambda *vals: float(cost(*vals)), values, k)
            np.testing.assert_allclose(np.asarray(next(got)), fd, rtol=1e-5, atol=1e-6, err_msg=f"{name} d/d{v.name}")


def _draw_function(backend):
    def build():
        s = dg.rng_state("s")
        state, outs = s, []
        for name, (params, make) in CASES.items():
            state, value = make({k: _c(v, *dims) for k, (dims, v) in params.items()}).draw(state, extra_dims=(N,))
            outs.append(value)
        cov = _c(COV, ROW, COL)
        mvn = dg.dist.mv_gaussian_random_walk(
            _c([0.5, -0.5], ROW), cov=cov, dims=(ROW, COL), init_dist=dg.dist.normal(0.0, 1.0), time=T
        )
        mvt = dg.dist.mv_student_t_random_walk(
            4.0, 0.0, scale=cov, dims=(ROW, COL), init_dist=dg.dist.normal(0.0, 1.0), time=T
        )
        for dist in (mvn, mvt):
            state, value = dist.draw(state, extra_dims=(N,))
            outs.append(value)
        return dg.function([s], outs, backend=backend)

    f = cached(("draws", backend), build)
    return dict(zip([*CASES, "mv_normal", "mv_student_t"], f(dg.seed_state(20261201))))


def _ks(values, cdf):
    return stats.kstest(np.ravel(values), cdf).pvalue


def test_draws_match_the_innovations(backend):
    d = _draw_function(backend)
    for name, value in d.items():
        want = ("n", "t", "row") if name.startswith("mv_") else ("n", "series", "t")
        if name == "random_walk":
            want = ("n", "t")
        assert value.dims == want, name
        assert list(value.t.values) == list(T.coords), name
    g = d["gaussian_random_walk"].values
    assert _ks(g[:, :, 0], stats.norm(1, 2).cdf) > 1e-3
    for s, mu in enumerate([0.3, -0.2]):
        assert _ks(np.diff(g[:, s], axis=-1), stats.norm(mu, 0.7).cdf) > 1e-3
    assert _ks(np.diff(d["random_walk"].values, axis=-1), stats.laplace(0, 1.5).cdf) > 1e-3
    a = d["ar2"].values
    for s, sigma in enumerate([0.8, 1.3]):
        res = a[:, s, 2:] - 0.1 - RHO[0] * a[:, s, 1:-1] - RHO[1] * a[:, s, :-2]
        assert _ks(res, stats.norm(0, sigma).cdf) > 1e-3
    a1 = d["ar1"].values
    for s, rho in enumerate([0.5, 0.95]):
        assert _ks(a1[:, s, 1:] - rho * a1[:, s, :-1], stats.norm(0, 0.6).cdf) > 1e-3
    x = d["garch11"].values
    for s, alpha in enumerate([0.2, 0.1]):
        vol = np.empty_like(x[:, s])
        vol[:, 0] = 1.2
        for k in range(1, 7):
            vol[:, k] = np.sqrt(0.3 + alpha * x[:, s, k - 1] ** 2 + 0.5 * vol[:, k - 1] ** 2)
        assert _ks(x[:, s] / vol, stats.norm().cdf) > 1e-3
    e = d["euler_maruyama"].values
    for s, k in enumerate([2.0, 0.5]):
        drift, diffusion = _sde(e[:, s, :-1], k, 0.5)
        assert _ks((e[:, s, 1:] - e[:, s, :-1] - 0.1 * drift) / (diffusion * math.sqrt(0.1)), stats.norm().cdf) > 1e-3
    steps = np.diff(d["mv_normal"].values, axis=1)  # (n, step, row)
    np.testing.assert_allclose(steps.mean(axis=(0, 1)), [0.5, -0.5], atol=0.05)
    np.testing.assert_allclose(np.cov(steps.reshape(-1, 2).T), COV, atol=0.05)
    t_steps = np.diff(d["mv_student_t"].values, axis=1)
    for j in range(2):  # each component of a multivariate t step is a t with the same nu
        assert _ks(t_steps[..., j], stats.t(4.0, 0, math.sqrt(COV[j, j])).cdf) > 1e-3


def test_vector_walk_log_densities_match_scipy(backend):
    def build():
        x = dg.labeled("xv", dims=(T, ROW))
        cov = dg.labeled("cov", dims=(ROW, COL))
        init = dg.dist.normal(0.0, 1.0)
        outs = [
            dg.dist.mv_gaussian_random_walk(
                _c([0.5, -0.5], ROW), cov=cov, dims=(ROW, COL), init_dist=init, time=T
            ).logp(x),
            dg.dist.mv_gaussian_random_walk(0.0, tau=cov, dims=(ROW, COL), init_dist=init, time=T).logp(x),
            dg.dist.mv_student_t_random_walk(4.0, 0.0, scale=cov, dims=(ROW, COL), init_dist=init, time=T).logp(x),
        ]
        return dg.function([x, cov], outs, backend=backend)

    normal, precision, student = cached(("vector logp", backend), build)(XV, COV)
    first = stats.norm().logpdf(XV[0]).sum()
    steps = np.diff(XV, axis=0)
    np.testing.assert_allclose(
        float(normal), first + stats.multivariate_normal([0.5, -0.5], COV).logpdf(steps).sum(), rtol=1e-10
    )
    np.testing.assert_allclose(
        float(precision), first + stats.multivariate_normal([0, 0], np.linalg.inv(COV)).logpdf(steps).sum(), rtol=1e-10
    )
    np.testing.assert_allclose(
        float(student), first + stats.multivariate_t([0, 0], COV, df=4).logpdf(steps).sum(), rtol=1e-10
    )


def test_stochastic_volatility_model_matches_numpy():
    """PyMC's stochastic-volatility example: a Gaussian random walk of log volatilities, Student-t returns."""
    returns = RNG.standard_t(5, size=7) * 0.02
    m = dg.Model()
    step = m.exponential("step_size", 10.0)
    nu = m.exponential("nu", 0.1)
    volatility = m.gaussian_random_walk("volatility", 0.0, step, init_dist=dg.dist.normal(0.0, 10.0), time=T)
    m.observe("returns", dg.dist.student_t(nu, 0.0, dg.exp(volatility)), data=returns, dims=(T,))
    assert m.unconstrained_names == ["step_size_log__", "nu_log__", "volatility"]
    logp = m.logp_fn(backend="python")
    for _ in range(3):
        theta = RNG.normal(size=9) * 0.5
        s, n, vol = math.exp(theta[0]), math.exp(theta[1]), theta[2:]
        want = stats.expon(scale=0.1).logpdf(s) + theta[0] + stats.expon(scale=10).logpdf(n) + theta[1]
        want += stats.norm(0, 10).logpdf(vol[0]) + stats.norm(0, s).logpdf(np.diff(vol)).sum()
        want += stats.t(n, 0, np.exp(vol)).logpdf(returns).sum()
        value, grad = logp(theta)
        np.testing.assert_allclose(value, want, rtol=1e-10)
        fd = numeric_grad(lambda th: logp(th)[0], [theta], 0)
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)
    prior = m.prior_predictive(50, seed=1)
    assert prior.prior["volatility"].dims == ("chain", "draw", "t")
    assert prior.prior_predictive["returns"].dims == ("chain", "draw", "t")


def test_an_ar_model_samples_its_coefficients():
    """m.ar through the registry: the coefficients and the series are free variables of one model."""
    m = dg.Model()
    rho = m.normal("rho", 0.0, 0.5, dims=(LAG,))
    m.ar("x", rho, 1.0, init_dist=dg.dist.normal(0.0, 1.0), lag=LAG, time=T)
    assert m.unconstrained_names == ["rho", "x"]
    theta = RNG.normal(size=9)
    value, _ = m.logp_fn(backend="python")(theta)
    r, x = theta[:2], theta[2:]
    want = stats.norm(0, 0.5).logpdf(r).sum() + stats.norm().logpdf(x[:2]).sum()
    want += stats.norm(r[0] * x[1:-1] + r[1] * x[:-2], 1.0).logpdf(x[2:]).sum()
    np.testing.assert_allclose(value, want, rtol=1e-10)
    draws = m.prior_predictive(40, seed=2).prior["x"]
    assert draws.dims == ("chain", "draw", "t")


def test_bad_input_is_a_clear_error():
    short = dg.Dim("short", size=1)
    with pytest.raises(TypeError, match=r"gaussianrandomwalk: give the time dim as time=, a Dim"):
        dg.dist.gaussian_random_walk(0.0, 1.0)
    with pytest.raises(dg.DimError, match=r"the time dim 'short' needs a static size above 1"):
        dg.dist.gaussian_random_walk(0.0, 1.0, time=short)
    with pytest.raises(dg.DimError, match=r"innovation_dist's parameters must not be on the time dim 't'"):
        dg.dist.gaussian_random_walk(_c(np.zeros(7), T), 1.0, time=T)
    with pytest.raises(TypeError, match=r"random_walk|randomwalk: innovation_dist must be a dg.dist distribution"):
        dg.dist.random_walk(dg.dist.normal(), "normal", time=T)
    with pytest.raises(dg.DimError, match=r"the value must be on the time dim 't'"):
        dg.dist.gaussian_random_walk(0.0, 1.0, time=T).logp(_c(np.zeros(2), S))
    with pytest.raises(dg.DimError, match=r"ar: lag"):
        dg.dist.ar(_c(RHO, LAG), 1.0, lag="nope", time=T)
    with pytest.raises(dg.DimError, match=r"ar: sigma must not be on the lag dim 'lag'"):
        dg.dist.ar(_c(RHO, LAG), _c([1.0, 2.0], LAG), lag=LAG, time=T)
    with pytest.raises(dg.DimError, match=r"the time dim 't' needs a static size above 7"):
        dg.dist.ar(_c(np.ones(7) * 0.1, dg.Dim("p", size=7)), 1.0, lag="p", time=T)
    with pytest.raises(dg.DimError, match=r"garch11: omega must not be on the time dim 't'"):
        dg.dist.garch11(_c(np.ones(7), T), 0.1, 0.1, 1.0, time=T)
    with pytest.raises(TypeError, match=r"euler_maruyama: sde_fn must be a function"):
        dg.dist.euler_maruyama(0.1, 3.0, (), time=T)


def test_invalid_parameters_give_nan():
    x = _c(X, S, T)
    outs = [
        dg.dist.gaussian_random_walk(0.0, -1.0, time=T).logp(x),
        dg.dist.ar(0.5, -1.0, time=T).logp(x),
        dg.dist.garch11(0.3, -0.1, 0.5, 1.0, time=T).logp(x),
        dg.dist.euler_maruyama(-0.1, _sde, (1.0, 1.0), time=T).logp(x),
    ]
    s = dg.rng_state("s")
    draws = [dg.dist.ar(0.5, -1.0, time=T).draw(s)[1], dg.dist.garch11(-0.3, 0.1, 0.5, 1.0, time=T).draw(s)[1]]
    for value in dg.function([s], outs + draws, backend="python")(dg.seed_state(0)):
        assert np.isnan(value.values).all()
