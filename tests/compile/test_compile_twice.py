"""A compile leaves the user's graph as it found it, so one graph compiles again (and again) to the same function.

The rewrites work on a `FunctionGraph`'s copy of the graph and change its nodes in place; a node shared with
the user's graph (one over constants only, an op's inner graph inlined) once carried them back there: fusion put
a clone of an input into a categorical gradient's graph, and its next compile failed (InputError). For every
`dg.dist` distribution's log density with its gradient, and for a scan, an ifelse and macros (inlined and kept),
each graph is compiled three times: after each compile every node reachable from the outputs, inner graphs
included, still has the inputs it had, the graph's digest is unchanged, and each compile computes what the
unrewritten graph (`rewrites="none"`, the ops' NumPy references) computes.
"""

import numpy as np
import pytest
from graph_state import assert_same_state, graph_state

import dimgraph as dg

K = dg.Dim("k", size=3)
ROW, COL = dg.Dim("row", size=3), dg.Dim("col", size=3)
COMP = dg.Dim("comp", size=2)
T = dg.Dim("t", size=5)
CORR = np.array([[1.0, 0.3, -0.2], [0.3, 1.0, 0.1], [-0.2, 0.1, 1.0]])
COV = np.array([[2.0, 0.5, 0.1], [0.5, 1.0, -0.3], [0.1, -0.3, 0.8]])

# name -> (parameter values, value, whether the value is differentiated): the scalar distributions
SCALAR = {
    "normal": ([0.3, 1.7], -0.4, True),
    "halfnormal": ([1.3], 0.9, True),
    "lognormal": ([0.3, 0.8], 1.2, True),
    "student_t": ([4.0, 0.3, 1.7], 0.9, True),
    "cauchy": ([0.3, 0.8], 1.2, True),
    "uniform": ([-1.0, 2.0], 0.5, True),
    "exponential": ([1.5], 0.7, True),
    "gamma": ([2.5, 1.5], 0.8, True),
    "invgamma": ([2.5, 1.5], 0.8, True),
    "beta": ([2.5, 1.5], 0.3, True),
    "halfcauchy": ([1.3], 0.8, True),
    "halfstudent_t": ([3.5, 1.2], 0.9, True),
    "weibull": ([1.7, 1.4], 0.9, True),
    "laplace": ([0.3, 1.1], 1.4, True),
    "logistic": ([0.3, 1.1], -0.4, True),
    "bernoulli": ([0.3], 1.0, False),
    "binomial": ([12.0, 0.3], 4.0, False),
    "poisson": ([3.5], 4.0, False),
    "negative_binomial": ([2.5, 0.3], 4.0, False),
    "discrete_uniform": ([-1.0, 4.0], 2.0, False),
}
SCALAR.update(
    {  # issue 39's univariate catalog
        "asymmetric_laplace": ([2.0, 0.5, 1.5], 1.2, True),
        "chi_squared": ([3.0], 2.0, True),
        "ex_gaussian": ([0.5, 1.2, 2.0], 1.0, True),
        "gumbel": ([0.5, 2.0], 1.0, True),
        "kumaraswamy": ([2.0, 3.0], 0.4, True),
        "logitnormal": ([0.3, 0.8], 0.4, True),
        "moyal": ([0.5, 1.5], 1.0, True),
        "pareto": ([3.0, 2.0], 4.0, True),
        "rice": ([1.0, 2.0], 1.5, True),
        "skewnormal": ([0.5, 1.5, 3.0], 0.2, True),
        "skew_student_t": ([2.0, 3.0, 0.5, 1.5], -1.0, True),
        "triangular": ([0.0, 1.0, 3.0], 2.0, True),
        "truncated_normal": ([0.3, 1.5, -1.0, 2.0], 0.5, True),
        "vonmises": ([0.5, 2.0], -0.3, True),
        "wald": ([1.0, 2.0, 0.2], 0.9, True),
        "beta_binomial": ([2.0, 3.0, 10.0], 4.0, False),
        "discrete_weibull": ([0.5, 1.5], 2.0, False),
        "geometric": ([0.25], 3.0, False),
        "hypergeometric": ([20.0, 7.0, 12.0], 4.0, False),
        "zero_inflated_poisson": ([0.7, 2.0], 0.0, False),
        "zero_inflated_binomial": ([0.7, 10.0, 0.3], 3.0, False),
        "zero_inflated_negative_binomial": ([0.7, 2.5, 0.4], 0.0, False),
        "hurdle_poisson": ([0.7, 2.0], 3.0, False),
        "hurdle_negative_binomial": ([0.7, 2.5, 0.4], 0.0, False),
        "hurdle_gamma": ([0.7, 2.0, 3.0], 0.5, True),
        "hurdle_lognormal": ([0.7, 0.0, 1.0], 1.5, True),
        "polya_gamma": ([1.5, 0.8], 0.3, True),
    }
)


def _scalar_case(name):
    params, x, continuous = SCALAR[name]
    vs = [dg.labeled(f"{name}_{k}", dims=()) for k in range(len(params) + 1)]
    cost = getattr(dg.dist, name)(*vs[:-1]).logp(vs[-1])
    wrt = vs if continuous else vs[:-1]
    if name == "binomial":
        wrt = vs[1:2]  # n is a count
    return vs, cost, wrt, [*params, x]


def _labeled(*names_dims):
    return [dg.labeled(name, dims=dims) for name, dims in names_dims]


def _vector_case(name):
    """(inputs, cost, differentiated inputs, values) of the distributions on dims and those built from others."""
    if name == "categorical":
        (p,) = _labeled(("p", (K,)))
        return [p], dg.dist.categorical(p, dim=K).logp(1), [p], [np.array([0.2, 0.5, 0.3])]
    if name == "dirichlet":
        a, x = _labeled(("a", (K,)), ("x", (K,)))
        return (
            [a, x],
            dg.dist.dirichlet(a, dim=K).logp(x),
            [a, x],
            [np.array([0.5, 2.0, 4.0]), np.array([0.2, 0.3, 0.5])],
        )
    if name == "multivariate_normal":
        mu, cov, x = _labeled(("mu", (ROW,)), ("cov", (ROW, COL)), ("x", (ROW,)))
        cost = dg.dist.multivariate_normal(mu, cov=cov, dims=(ROW, COL)).logp(x)
        return [mu, cov, x], cost, [mu, cov, x], [np.array([0.0, 1.0, -1.0]), COV, np.array([0.5, 0.0, 2.0])]
    if name == "lkj_corr":
        eta, c = _labeled(("eta", ()), ("c", (ROW, COL)))
        return [eta, c], dg.dist.lkj_corr(eta, dims=(ROW, COL)).logp(c), [eta], [1.7, CORR]
    if name == "lkj_cholesky_corr":
        eta, chol = _labeled(("eta", ()), ("chol", (ROW, COL)))
        return (
            [eta, chol],
            dg.dist.lkj_cholesky_corr(eta, dims=(ROW, COL)).logp(chol),
            [eta],
            [1.7, np.linalg.cholesky(CORR)],
        )
    if name == "lkj_cholesky_cov":
        eta, chol = _labeled(("eta", ()), ("chol", (ROW, COL)))
        cost = dg.dist.lkj_cholesky_cov(eta, dg.dist.halfnormal(1.5), dims=(ROW, COL)).logp(chol)
        return [eta, chol], cost, [eta, chol], [2.2, np.linalg.cholesky(COV)]
    if name == "zerosum_normal":
        sigma, x = _labeled(("sigma", ()), ("x", (K,)))
        return [sigma, x], dg.dist.zerosum_normal(sigma, dims=(K,)).logp(x), [sigma], [1.3, np.array([0.5, -0.2, -0.3])]
    if name == "mixture":
        w, mu, x = _labeled(("w", (COMP,)), ("mu", (COMP,)), ("x", ()))
        cost = dg.dist.mixture(w, dg.dist.normal(mu, 1.0), dim=COMP).logp(x)
        return [w, mu, x], cost, [w, mu, x], [np.array([0.4, 0.6]), np.array([-1.0, 1.5]), 0.2]
    if name == "truncated":
        lo, hi, mu, sigma, x = _labeled(*[(n, ()) for n in ("lo", "hi", "mu", "sigma", "x")])
        cost = dg.dist.truncated(dg.dist.normal(mu, sigma), lower=lo, upper=hi).logp(x)
        return [lo, hi, mu, sigma, x], cost, [lo, hi, mu, sigma, x], [-0.5, 2.0, 0.3, 1.2, 0.7]
    if name == "markov_chain":
        init, trans = _labeled(("init", (K,)), ("trans", (K, K.rename("k_next"))))
        chain = dg.dist.markov_chain(init, trans, dim=K, next_dim="k_next", time=T)
        cost = chain.logp(dg.constant(np.array([0, 2, 2, 1, 0]), dims=(T,)))
        rows = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.25, 0.25, 0.5]])
        return [init, trans], cost, [init, trans], [np.array([0.2, 0.5, 0.3]), rows]
    if name in ("ordered_logistic", "ordered_probit"):
        eta, cut = _labeled(("eta", ()), ("cut", (K,)))
        cost = getattr(dg.dist, name)(eta, cut, dim=K).logp(2)
        return [eta, cut], cost, [eta, cut], [0.4, np.array([-1.0, 0.2, 1.5])]
    if name == "interpolated":
        xp, pp, x = _labeled(("xp", (K,)), ("pp", (K,)), ("x", ()))
        return (
            [xp, pp, x],
            dg.dist.interpolated(xp, pp, dim=K).logp(x),
            [pp, x],
            [np.array([0.0, 1.0, 2.0]), np.array([0.5, 1.0, 0.2]), 0.7],
        )
    if name in (
        "flat",
        "halfflat",
        "dirac_delta",
    ):  # log densities constant where finite: x added to reach the gradient
        (x,) = _labeled(("x", ()))
        dist = dg.dist.dirac_delta(0.4) if name == "dirac_delta" else getattr(dg.dist, name)()
        return [x], dist.logp(x) + x, [x], [0.4]
    if name == "custom":
        mu, x = _labeled(("mu", ()), ("x", ()))
        cost = dg.dist.custom(logp=lambda v, mu: -((v - mu) ** 2) * dg.exp(dg.constant(0.1, dims=())), mu=mu).logp(x)
        return [mu, x], cost, [mu, x], [0.3, -0.2]
    if name == "censored":
        lo, mu, x = _labeled(("lo", ()), ("mu", ()), ("x", ()))
        cost = dg.dist.censored(dg.dist.logistic(mu, 1.0), lower=lo).logp(x)
        return [lo, mu, x], cost, [lo, mu, x], [-0.5, 0.3, 0.4]
    return _family_case(name)


_W = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
_X5 = np.array([0.3, 0.1, -0.4, 0.2, 0.5])


def _family_case(name):
    """The multivariate families and the time series (tests/prob/test_multivariate_families.py, test_timeseries.py)."""
    if name in ("mv_student_t", "wishart", "inverse_wishart", "kronecker_normal"):
        nu, cov, x = _labeled(
            ("nu", ()),
            ("cov", (ROW, COL)),
            ("x", (ROW,) if name in ("mv_student_t", "kronecker_normal") else (ROW, COL)),
        )
        dist = {
            "mv_student_t": lambda: dg.dist.mv_student_t(nu, 0.0, scale=cov, dims=(ROW, COL)),
            "wishart": lambda: dg.dist.wishart(nu, cov, dims=(ROW, COL)),
            "inverse_wishart": lambda: dg.dist.inverse_wishart(nu, cov, dims=(ROW, COL)),
            "kronecker_normal": lambda: dg.dist.kronecker_normal(0.0, covs=[cov], sigma=nu, dims=[(ROW, COL)]),
        }[name]()
        value = np.array([0.5, 0.0, 2.0]) if x.type.ndim == 1 else COV + np.eye(3)
        return [nu, cov, x], dist.logp(x), [nu, cov], [4.5, COV, value]
    if name == "matrix_normal":
        cov, x = _labeled(("cov", (ROW, COL)), ("x", (ROW, K)))
        col = dg.constant(np.eye(3), dims=(K, dg.Dim("k2", size=3)))
        cost = dg.dist.matrix_normal(0.0, rowcov=cov, colcov=col, rowdims=(ROW, COL), coldims=(K, col.dims[1])).logp(x)
        return [cov, x], cost, [cov, x], [COV, np.arange(9.0).reshape(3, 3) / 9]
    if name == "ordered_multinomial":
        eta, cut = _labeled(("eta", ()), ("cut", (COMP,)))
        counts = dg.constant(np.array([1, 0, 3]), dims=(K,))
        cost = dg.dist.ordered_multinomial(eta, cut, 4, dim=K, cut_dim=COMP).logp(counts)
        return [eta, cut], cost, [eta, cut], [0.4, np.array([-1.0, 0.5])]
    if name == "normal_mixture":
        w, mu, sigma, x = _labeled(("w", (COMP,)), ("mu", (COMP,)), ("sigma", ()), ("x", ()))
        cost = dg.dist.normal_mixture(w, mu, sigma, dim=COMP).logp(x)
        return [w, mu, sigma, x], cost, [w, mu, sigma, x], [np.array([0.4, 0.6]), np.array([-1.0, 1.5]), 1.3, 0.2]
    if name in ("multinomial", "dirichlet_multinomial"):
        (w,) = _labeled(("w", (K,)))
        counts = dg.constant(np.array([1, 0, 3]), dims=(K,))
        return [w], getattr(dg.dist, name)(4, w, dim=K).logp(counts), [w], [np.array([0.5, 2.0, 4.0])]
    if name == "stick_breaking_weights":
        alpha, x = _labeled(("alpha", ()), ("x", (K,)))
        return (
            [alpha, x],
            dg.dist.stick_breaking_weights(alpha, dim=K).logp(x),
            [alpha, x],
            [1.5, np.array([0.2, 0.3, 0.5])],
        )
    if name in ("car", "icar"):
        a, x = _labeled(("a", ()), ("x", (K,)))
        dist = dg.dist.car(0.0, _W, a, 2.0, dim=K) if name == "car" else dg.dist.icar(_W, a, dim=K)
        return [a, x], dist.logp(x), [a, x], [0.4, np.array([0.2, -0.1, 0.3])]
    sigma, x = _labeled(("sigma", ()), ("x", (T,)))
    dist = {
        "random_walk": lambda: dg.dist.random_walk(dg.dist.normal(), dg.dist.logistic(0.0, sigma), time=T),
        "gaussian_random_walk": lambda: dg.dist.gaussian_random_walk(0.1, sigma, time=T),
        "ar": lambda: dg.dist.ar(0.5, sigma, constant=0.2, time=T),
        "garch11": lambda: dg.dist.garch11(0.2, 0.1, 0.5, sigma, time=T),
        "euler_maruyama": lambda: dg.dist.euler_maruyama(0.1, lambda v, s: (-v, s), (sigma,), time=T),
    }
    if name in dist:
        return [sigma, x], dist[name]().logp(x), [sigma, x], [0.7, _X5]
    if name in ("mv_gaussian_random_walk", "mv_student_t_random_walk"):
        cov, v = _labeled(("cov", (ROW, COL)), ("v", (T, ROW)))
        walk = (
            dg.dist.mv_gaussian_random_walk(0.0, cov=cov, dims=(ROW, COL), time=T)
            if name == "mv_gaussian_random_walk"
            else dg.dist.mv_student_t_random_walk(3.0, 0.0, scale=cov, dims=(ROW, COL), time=T)
        )
        return [cov, v], walk.logp(v), [cov, v], [COV, np.outer(_X5, [1.0, -0.5, 0.2])]
    raise KeyError(name)


def _control_case(name):
    """Control flow and macros, each with a part over constants only (inside and outside) that the rewrites fold."""
    half = dg.exp(dg.constant(-0.7, dims=()))
    if name == "scan":
        rho, eps = _labeled(("rho", ()), ("eps", (T,)))
        _, trace = dg.scan(lambda s, e: rho * s * dg.exp(dg.constant(0.1, dims=())) + e, init=dg.constant(0.5, dims=()),
                           sequences=eps, dim=T)  # fmt: skip
        cost = (trace**2).sum() * half
        return [rho, eps], cost, [rho, eps], [0.6, np.linspace(-1.0, 1.0, 5)]
    if name == "ifelse":
        (x,) = _labeled(("x", (K,)))
        cost = dg.ifelse(x.sum() > 0, dg.exp(x).sum() * half, (x**2).sum() + half)
        return [x], cost, [x], [np.array([0.3, -0.1, 0.5])]
    if name.startswith("op_from_graph"):
        (u,) = _labeled(("u", (K,)))
        softplus = dg.op_from_graph(
            [u], [dg.log1p(dg.exp(u * dg.exp(dg.constant(0.2, dims=()))))], inline=name == "op_from_graph"
        )
        (x,) = _labeled(("x", (K,)))
        return [x], softplus(x).sum() * half, [x], [np.array([0.3, -1.1, 2.5])]
    raise KeyError(name)


CONTROL = ["scan", "ifelse", "op_from_graph", "op_from_graph kept"]
CASES = sorted(SCALAR) + [n for n in dg.dist.DISTRIBUTIONS if n not in SCALAR] + CONTROL
NUMBA_CASES = ["categorical", "lkj_cholesky_corr", "scan"]


def build(name):
    """(inputs, outputs: the cost and its gradients, values) of one case, on variables of its own."""
    make = _scalar_case if name in SCALAR else _control_case if name in CONTROL else _vector_case
    inputs, cost, wrt, values = make(name)
    return inputs, [cost, *dg.grad(cost, wrt)], values


_COMPILED = {}


def compiled_thrice(name, backend):
    """The case, its three compiles (the first two run every rewrite; the third may start warm) and its oracle."""
    key = (name, backend)
    if key not in _COMPILED:
        inputs, outputs, values = build(name)
        before = graph_state(outputs)
        fns = []
        for k, rewrites in enumerate([{"trace": True}, {"trace": True}, "default"]):
            fns.append(dg.function(inputs, outputs, backend=backend, rewrites=rewrites))
            assert_same_state(before, graph_state(outputs), f"compile {k + 1} of {name!r} on {backend}")
        oracle = dg.function(inputs, outputs, backend="python", rewrites="none")
        assert_same_state(before, graph_state(outputs), f"the unrewritten compile of {name!r}")
        _COMPILED[key] = (fns, oracle, values)
    return _COMPILED[key]


def _check_values(name, backend):
    fns, oracle, values = compiled_thrice(name, backend)
    want = [np.asarray(v) for v in oracle(*values)]
    assert np.isfinite(want[0]).all(), f"{name}: the test point must be inside the support"
    first = [np.asarray(v) for v in fns[0](*values)]
    for k, fn in enumerate(fns):
        got = [np.asarray(v) for v in fn(*values)]
        for j, (g, f, w) in enumerate(zip(got, first, want)):
            np.testing.assert_array_equal(g, f, err_msg=f"{name}: compile {k + 1}, output {j}, vs the first compile")
            np.testing.assert_allclose(g, w, rtol=1e-9, atol=1e-12, err_msg=f"{name}: compile {k + 1}, output {j}")


def test_every_distribution_has_a_case():
    assert set(dg.dist.DISTRIBUTIONS) <= set(CASES)


@pytest.mark.parametrize("name", CASES)
def test_a_graph_compiles_again_to_the_same_function(name):
    _check_values(name, "python")


@pytest.mark.parametrize("name", NUMBA_CASES)
def test_a_graph_compiles_again_to_the_same_function_on_numba(name):
    _check_values(name, "numba")
