"""The distributions models need: half-Cauchy, half-Student-t, Weibull, Laplace, logistic; tails (logcdf/logsf);
the factories Mixture, Censored, Truncated; the LKJ family and the zero-sum normal; every support and the transform it gives.

Oracles: scipy.stats (log densities, tails, draws by KS), scipy.special (log_ndtr, ndtri_exp), NumPy closed
forms (the LKJ normalizer in PyMC's form and in Lewandowski et al.'s beta form, a change of variables for the
2 x 2 Cholesky covariance), finite differences for gradients. Each group compiles one function per backend.
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import integrate, special, stats

import dimgraph as dg
from dimgraph.prob import constraints as C
from dimgraph.prob import transforms as T
from dimgraph.prob.tails import log_ndtr, ndtri_exp
from dimgraph.testing import numeric_grad

N = dg.Dim("n", size=4000)
K = dg.Dim("k", size=3)
ROW, COL = dg.Dim("row", coords=["a", "b", "c"]), dg.Dim("col", coords=["a", "b", "c"])


class _HalfT:
    """scipy has no half-t: |T| for T ~ t(nu, 0, sigma)."""

    def __init__(self, nu, sigma):
        self.t = stats.t(nu, 0, sigma)

    def logpdf(self, x):
        return np.where(np.asarray(x) >= 0, np.log(2) + self.t.logpdf(x), -np.inf)

    def cdf(self, x):
        return np.clip(2 * self.t.cdf(x) - 1, 0, 1)

    def sf(self, x):
        return np.where(np.asarray(x) > 0, 2 * self.t.sf(np.maximum(x, 0)), 1.0)


# --- log densities vs scipy: name -> (parameter names, rows (params..., x), scipy logpdf)
LOGP_CASES = {
    "halfcauchy": (
        ["beta"],
        [(1.0, 0.5), (2.0, 0.0), (1e-3, 1e8), (1.0, -1.0)],
        lambda x, b: stats.halfcauchy(scale=b).logpdf(x),
    ),
    "halfstudent_t": (
        ["nu", "sigma"],
        [(3.0, 1.0, 0.5), (1.0, 2.0, 0.0), (30.0, 0.5, 4.0), (3.0, 1.0, -1.0)],
        lambda x, nu, s: _HalfT(nu, s).logpdf(x),
    ),
    "weibull": (
        ["alpha", "beta"],
        [(1.5, 2.0, 1.0), (0.5, 1.0, 3.0), (5.0, 0.3, 0.2), (2.0, 1.0, 0.0), (2.0, 1.0, -1.0)],
        lambda x, a, b: stats.weibull_min(a, scale=b).logpdf(x),
    ),
    "laplace": (
        ["mu", "b"],
        [(0.0, 2.0, 1.0), (-3.0, 0.1, 5.0), (1.0, 1e3, -1e4)],
        lambda x, m, b: stats.laplace(m, b).logpdf(x),
    ),
    "logistic": (
        ["mu", "s"],
        [(0.0, 2.0, 1.0), (1.0, 0.5, 300.0), (-2.0, 3.0, -800.0)],
        lambda x, m, s: stats.logistic(m, s).logpdf(x),
    ),
}

_CACHE = {}


def cached(key, build):
    if key not in _CACHE:
        _CACHE[key] = build()
    return _CACHE[key]


def test_new_log_densities_match_scipy(backend):
    def build():
        inputs, outputs = [], []
        for name, (names, rows, _) in LOGP_CASES.items():
            case = dg.Dim(f"case_{name}", size=len(rows))
            vs = [dg.labeled(f"{name}_{p}", dims=(case,)) for p in [*names, "x"]]
            inputs += vs
            outputs.append(getattr(dg.dist, name)(*vs[:-1]).logp(vs[-1]))
        return dg.function(inputs, outputs, backend=backend)

    f = cached(("logp", backend), build)
    values = [np.array(rows, dtype=float)[:, j] for _, rows, _ in LOGP_CASES.values() for j in range(len(rows[0]))]
    for (name, (_, rows, ref)), got in zip(LOGP_CASES.items(), f(*values)):
        with np.errstate(all="ignore"):
            want = np.array([ref(row[-1], *row[:-1]) for row in rows], dtype=float)
        np.testing.assert_allclose(got.values, want, rtol=1e-9, err_msg=name)


class _HalfNormalTails:
    """P(X > x) = 2 P(Z > x / sigma): scipy's norm.logsf keeps the far tail."""

    def __init__(self, sigma):
        self.sigma = sigma

    def logsf(self, x):
        return np.where(x > 0, np.log(2) + stats.norm.logsf(np.maximum(x, 0) / self.sigma), 0.0)

    def logcdf(self, x):
        return stats.halfnorm(scale=self.sigma).logcdf(x)


class _BothTails:
    """scipy's log of whichever of cdf and sf is below 1/2, log1p of minus the other one above it (scipy's
    own logcdf of a binomial is log(cdf), which keeps 8 digits of a cdf of 1 - 4e-9)."""

    def __init__(self, dist, folded=False):
        self.dist, self.folded = dist, folded

    def _both(self, x):
        if self.folded:  # |X| of a symmetric X: P(|X| > x) = 2 P(X < -x)
            x = np.maximum(x, 0)
            return 1 - 2 * self.dist.sf(x), 2 * self.dist.sf(x)
        return self.dist.cdf(x), self.dist.sf(x)

    def logcdf(self, x):
        cdf, sf = self._both(x)
        return np.where(cdf < 0.5, np.log(cdf), np.log1p(-sf))

    def logsf(self, x):
        cdf, sf = self._both(x)
        return np.where(sf < 0.5, np.log(sf), np.log1p(-cdf))


# --- tails: name -> (our distribution, scipy's); x on a grid reaching far into both tails
TAIL_X = np.array([-1e4, -60.0, -25.0, -19.0, -3.0, -0.5, 0.0, 0.3, 1.0, 2.5, 7.0, 25.0, 60.0, 1e4])
TAILS = {
    "normal": (dg.dist.normal(0.5, 1.5), stats.norm(0.5, 1.5)),
    "halfnormal": (dg.dist.halfnormal(2.0), _HalfNormalTails(2.0)),  # scipy's halfnorm.logsf underflows at 5000 sigma
    "lognormal": (dg.dist.lognormal(0.2, 0.8), stats.lognorm(s=0.8, scale=np.exp(0.2))),
    "cauchy": (dg.dist.cauchy(0.3, 2.0), stats.cauchy(0.3, 2.0)),
    "halfcauchy": (dg.dist.halfcauchy(1.5), stats.halfcauchy(scale=1.5)),
    "uniform": (dg.dist.uniform(-3.0, 4.0), stats.uniform(-3.0, 7.0)),
    "exponential": (dg.dist.exponential(2.0), stats.expon(scale=0.5)),
    "gamma": (dg.dist.gamma(2.5, 1.5), stats.gamma(2.5, scale=1 / 1.5)),
    "invgamma": (dg.dist.invgamma(2.5, 1.5), stats.invgamma(2.5, scale=1.5)),
    "weibull": (dg.dist.weibull(1.5, 2.0), stats.weibull_min(1.5, scale=2.0)),
    "laplace": (dg.dist.laplace(0.5, 2.0), stats.laplace(0.5, 2.0)),
    "logistic": (dg.dist.logistic(0.5, 2.0), stats.logistic(0.5, 2.0)),
    "bernoulli": (dg.dist.bernoulli(0.3), stats.bernoulli(0.3)),
    "poisson": (dg.dist.poisson(3.5), stats.poisson(3.5)),
    # the incomplete beta function's
    "student_t": (dg.dist.student_t(3.5, 0.5, 1.5), stats.t(3.5, 0.5, 1.5)),
    "student_t_inf": (dg.dist.student_t(np.inf, 0.5, 1.5), stats.norm(0.5, 1.5)),
    "halfstudent_t": (dg.dist.halfstudent_t(2.5, 1.5), _BothTails(stats.t(2.5, 0, 1.5), folded=True)),
    "beta": (dg.dist.beta(2.5, 0.7), _BothTails(stats.beta(2.5, 0.7))),
    "binomial": (dg.dist.binomial(30.0, 0.2), _BothTails(stats.binom(30, 0.2))),
    "negative_binomial": (dg.dist.negative_binomial(2.5, 0.3), _BothTails(stats.nbinom(2.5, 0.3))),
}


def test_logcdf_and_logsf_match_scipy(backend):
    def build():
        x = dg.labeled("x", dims=(dg.Dim("i", size=len(TAIL_X)),))
        return dg.function([x], [t for d, _ in TAILS.values() for t in (d.logcdf(x), d.logsf(x))], backend=backend)

    got = iter(cached(("tails", backend), build)(TAIL_X))
    for name, (_, ref) in TAILS.items():
        with np.errstate(all="ignore"):
            want_cdf, want_sf = ref.logcdf(TAIL_X), ref.logsf(TAIL_X)
        for kind, want in (("logcdf", want_cdf), ("logsf", want_sf)):
            value = next(got).values
            # where scipy's probability underflows to 0 ours keeps its log (below log of the smallest double)
            lost = np.isneginf(want) & np.isfinite(value)
            assert (value[lost] < -700).all(), (name, kind)
            # where scipy rounds a probability to 1 (log 0), ours keeps the tiny log: compared absolutely
            np.testing.assert_allclose(value[~lost], want[~lost], rtol=1e-9, atol=1e-15, err_msg=f"{name} {kind}")


def test_incomplete_beta_tails_of_size_0_and_1(backend):
    """One function over a dim of unknown size, called with 0 and 1 values (and invalid parameters: NaN)."""
    dists = [
        (dg.dist.student_t(3.5, 0.5, 1.5), stats.t(3.5, 0.5, 1.5)),
        (dg.dist.beta(2.5, 0.7), stats.beta(2.5, 0.7)),
        (dg.dist.binomial(30.0, 0.2), stats.binom(30, 0.2)),
        (dg.dist.negative_binomial(2.5, 0.3), stats.nbinom(2.5, 0.3)),
    ]

    def build():
        x = dg.labeled("x", dims=(dg.Dim("m"),))
        invalid = [
            dg.dist.student_t(-1.0).logsf(x),
            dg.dist.beta(2.0, 0.0).logcdf(x),
            dg.dist.binomial(30.0, 1.5).logcdf(x),
        ]
        return dg.function([x], [t for d, _ in dists for t in (d.logcdf(x), d.logsf(x))] + invalid, backend=backend)

    f = cached(("beta tails sizes", backend), build)
    for xs in (np.zeros(0), np.array([0.4])):
        got = f(xs)
        for k, (_, ref) in enumerate(dists):
            for out, want in zip(got[2 * k : 2 * k + 2], (ref.logcdf(xs), ref.logsf(xs))):
                assert out.dims == ("m",) and out.shape == xs.shape
                np.testing.assert_allclose(out.values, want, rtol=1e-12)
        for out in got[2 * len(dists) :]:
            assert out.shape == xs.shape and np.isnan(out.values).all()


def test_logcdf_of_non_numbers_is_a_clear_error():
    with pytest.raises(TypeError, match="beta.logcdf: x must be numbers; got object"):
        dg.dist.beta(2.0, 2.0).logcdf("a")
    with pytest.raises(TypeError, match="binomial.logsf: x must be numbers"):
        dg.dist.binomial(10, 0.3).logsf("k")


def test_logcdf_of_a_distribution_without_one_is_a_clear_error():
    with pytest.raises(TypeError, match="categorical: has no logcdf"):
        dg.dist.categorical(dg.constant(np.array([0.4, 0.6]), dims=(COMP,)), dim=COMP).logcdf(1)
    with pytest.raises(TypeError, match=r"truncated: categorical has no logcdf/logsf"):
        dg.dist.truncated(dg.dist.categorical(dg.constant(np.array([0.4, 0.6]), dims=(COMP,)), dim=COMP), lower=1)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.floats(-1e3, 40.0), min_size=1, max_size=20))
def test_log_ndtr_and_its_inverse_match_scipy(backend, zs):
    def build():
        z = dg.labeled("z", dims=(dg.Dim("i"),))
        return dg.function([z], [log_ndtr(z), ndtri_exp(log_ndtr(z))], backend=backend)

    z = np.array(zs)
    lp, back = cached(("ndtr", backend), build)(z)
    np.testing.assert_allclose(lp.values, special.log_ndtr(z), rtol=1e-12, atol=1e-300)
    inside = special.log_ndtr(z) < -1e-15  # where Phi(z) rounds to 1 no quantile can come back
    np.testing.assert_allclose(
        back.values[inside], special.ndtri_exp(special.log_ndtr(z[inside])), rtol=1e-10, atol=1e-12
    )


# --- draws: one compiled function per backend
CONTINUOUS_DRAWS = {
    "halfcauchy": ({"beta": 1.5}, stats.halfcauchy(scale=1.5)),
    "halfstudent_t": ({"nu": 4.0, "sigma": 0.7}, _HalfT(4.0, 0.7)),
    "weibull": ({"alpha": 1.5, "beta": 2.0}, stats.weibull_min(1.5, scale=2.0)),
    "laplace": ({"mu": 1.0, "b": 0.5}, stats.laplace(1.0, 0.5)),
    "logistic": ({"mu": -1.0, "s": 2.0}, stats.logistic(-1.0, 2.0)),
}
COMP = dg.Dim("comp", size=2)
W = np.array([0.3, 0.7])
MIX_MU = np.array([-2.0, 3.0])


def truncated_cases():
    """name -> (distribution, scipy distribution of the draws)."""
    a, b = (0.5 - 0.0) / 1.0, (2.0 - 0.0) / 1.0
    return {
        "truncnorm": (dg.dist.truncated(dg.dist.normal(0.0, 1.0), lower=0.5, upper=2.0), stats.truncnorm(a, b)),
        "truncnorm_far": (dg.dist.truncated(dg.dist.normal(0.0, 1.0), lower=8.0), stats.truncnorm(8.0, np.inf)),
        "truncnorm_upper": (
            dg.dist.truncated(dg.dist.normal(1.0, 2.0), upper=0.0),
            stats.truncnorm(-np.inf, -0.5, 1.0, 2.0),
        ),
        "truncexp": (
            dg.dist.truncated(dg.dist.exponential(1.0), lower=1.0, upper=3.0),
            _Conditioned(stats.expon(), 1.0, 3.0),
        ),
        "truncinvgamma": (
            dg.dist.truncated(dg.dist.invgamma(3.0, 2.0), lower=1.5),
            _Conditioned(stats.invgamma(3.0, scale=2.0), 1.5, np.inf),
        ),
        "trunccauchy": (
            dg.dist.truncated(dg.dist.cauchy(0.0, 1.0), lower=-1.0, upper=5.0),
            _Conditioned(stats.cauchy(), -1.0, 5.0),
        ),
    }


def bisected_cases():
    """Truncations whose quantiles bisect the incomplete beta function's tails: name -> (distribution, scipy's)."""
    t_cases = dg.constant(np.array([3.5, 2.5]), dims=(CASE,))
    return {  # the t's second case: a lower bound at P(T > 9) = 7e-5
        "trunc_t": (
            dg.dist.truncated(dg.dist.student_t(t_cases, 0.0, 1.0), lower=_cases(-1.0, 9.0), upper=_cases(4.0, np.inf)),
            [_Conditioned(stats.t(3.5), -1.0, 4.0), _Conditioned(stats.t(2.5), 9.0, np.inf)],
        ),
        "trunc_beta": (
            dg.dist.truncated(dg.dist.beta(2.5, 0.7), lower=0.2, upper=0.9),
            [_Conditioned(stats.beta(2.5, 0.7), 0.2, 0.9)],
        ),
    }


N_BISECTED = dg.Dim("n_b", size=300)


def bisected_draws(backend):
    """{name: draws} of the bisected cases and two truncated count distributions, one function per backend
    (the bisection is one loop: XLA took minutes over the 64 unrolled steps' incomplete beta functions)."""

    def build():
        rng = dg.rng(20261127)
        outs = {k: rng.draw(dist, extra_dims=(N_BISECTED,)) for k, (dist, _) in bisected_cases().items()}
        counts = dg.dist.truncated(dg.dist.binomial(30, 0.2), lower=3, upper=9)
        outs["trunc_binom"] = rng.draw(counts, extra_dims=(N_BISECTED,))
        outs["trunc_nbinom"] = rng.draw(
            dg.dist.truncated(dg.dist.negative_binomial(2.5, 0.3), lower=1), extra_dims=(N_BISECTED,)
        )
        return dict(zip(outs, dg.function([], list(outs.values()), backend=backend)()))

    return cached(("bisected draws", backend), build)


@pytest.mark.parametrize("name", ["trunc_t", "trunc_beta"])
def test_truncated_draws_by_bisection_match_scipy(backend, name):
    found = bisected_draws(backend)
    if name == "trunc_t":
        x = found[name].transpose("n_b", "case").values
    else:
        x = found[name].values[:, None]
    for j, ref in enumerate(bisected_cases()[name][1]):
        assert _ks(x[:, j], ref.cdf) > 1e-3
        assert ref.lo <= x[:, j].min() and x[:, j].max() <= ref.hi


@pytest.mark.parametrize(
    "name, ref, lo, hi", [("trunc_binom", stats.binom(30, 0.2), 3, 9), ("trunc_nbinom", stats.nbinom(2.5, 0.3), 1, 60)]
)
def test_truncated_count_draws_by_bisection(backend, name, ref, lo, hi):
    k = bisected_draws(backend)[name].values
    assert k.dtype == np.int64 and k.min() >= lo and k.max() <= hi
    ks = np.arange(lo, hi + 1)
    pmf = ref.pmf(ks) / (ref.cdf(hi) - ref.cdf(lo - 1))
    counts = np.array([(k == j).sum() for j in ks])
    keep = pmf * k.size >= 5
    obs, exp = counts[keep], pmf[keep] * k.size
    if not keep.all():  # the rare counts pooled into one cell
        obs, exp = np.append(obs, k.size - obs.sum()), np.append(exp, k.size - exp.sum())
    assert stats.chisquare(obs, exp * (k.size / exp.sum())).pvalue > 1e-3


class _Conditioned:
    """A scipy distribution conditioned on [lo, hi]: the oracle for truncations scipy has no class for."""

    def __init__(self, ref, lo, hi):
        self.ref, self.lo, self.hi = ref, lo, hi
        self.mass = ref.sf(lo) - ref.sf(hi)  # survival probabilities: a bound far in the upper tail keeps them

    def cdf(self, x):
        return np.clip((self.ref.sf(self.lo) - self.ref.sf(np.clip(x, self.lo, self.hi))) / self.mass, 0, 1)

    def logpdf(self, x):
        x = np.asarray(x, dtype=float)
        return np.where((x >= self.lo) & (x <= self.hi), self.ref.logpdf(x) - np.log(self.mass), -np.inf)


def draws(backend):
    """{name: draws}: a few compiled functions per backend (XLA's compile time grows faster than a graph)."""

    def build():
        rng = dg.rng(20261126)
        found = {}
        for group in (_univariate_draws, _truncated_draws, _other_draws):
            outs = group(rng)
            found.update(zip(outs, dg.function([], list(outs.values()), backend=backend)()))
        return found

    return cached(("draws", backend), build)


CASE = dg.Dim("case", size=2)


def _cases(a, b):
    return dg.constant(np.array([a, b], dtype=float), dims=(CASE,))


def _univariate_draws(rng):
    return {name: getattr(rng, name)(**params, extra_dims=(N,)) for name, (params, _) in CONTINUOUS_DRAWS.items()}


def _truncated_draws(rng):
    outs = {name: rng.draw(dist, extra_dims=(N,)) for name, (dist, _) in truncated_cases().items()}
    # cases on one dim share one compiled quantile (the gamma's Newton steps, the counts' bisection)
    outs["truncgamma"] = rng.truncated(
        dg.dist.gamma(_cases(2.0, 0.5), 1.0), lower=_cases(0.5, 40.0), upper=_cases(2.0, np.inf), extra_dims=(N,)
    )
    outs["truncpois"] = rng.truncated(dg.dist.poisson(_cases(1.5, 2.0)), lower=_cases(1, 15), extra_dims=(N,))
    return outs


def _other_draws(rng):
    outs = {}
    outs["censored"] = rng.censored(dg.dist.normal(0.0, 1.0), lower=-0.5, upper=1.0, extra_dims=(N,))
    w = dg.constant(W, dims=(COMP,))
    outs["mixture"] = rng.mixture(w, dg.dist.normal(dg.constant(MIX_MU, dims=(COMP,)), 1.0), dim=COMP, extra_dims=(N,))
    outs["mixture_list"] = rng.mixture(
        w, [dg.dist.exponential(1.0), dg.dist.normal(3.0, 0.5)], dim=COMP, extra_dims=(N,)
    )
    outs["lkj_corr"] = rng.lkj_corr(2.0, dims=(ROW, COL), extra_dims=(N,))
    outs["lkj_cholesky_corr"] = rng.lkj_cholesky_corr(0.5, dims=(ROW, COL), packed=True, extra_dims=(N,))
    sd = dg.dist.halfnormal(dg.constant(np.array([1.0, 2.0, 0.5]), dims=(ROW,)))
    outs["lkj_cholesky_cov"] = rng.lkj_cholesky_cov(3.0, sd, dims=(ROW, COL), extra_dims=(N,))
    outs["zerosum"] = rng.zerosum_normal(2.0, dims=(K, ROW), extra_dims=(N,))
    return outs


def _ks(values, cdf):
    return stats.kstest(values, cdf).pvalue


@pytest.mark.parametrize("name", list(CONTINUOUS_DRAWS))
def test_new_univariate_draws_match_scipy(backend, name):
    x = draws(backend)[name]
    assert x.dims == ("n",)
    assert _ks(x.values, CONTINUOUS_DRAWS[name][1].cdf) > 1e-3


@pytest.mark.parametrize("name", list(truncated_cases()))
def test_truncated_draws_match_scipy(backend, name):
    x = draws(backend)[name].values
    ref = truncated_cases()[name][1]
    assert _ks(x, ref.cdf) > 1e-3
    dist = truncated_cases()[name][0]
    lower, upper = dist.lower, dist.upper
    if lower is not None:
        assert x.min() >= float(lower.eval(backend="python"))
    if upper is not None:
        assert x.max() <= float(upper.eval(backend="python"))


def test_truncated_gamma_draws_match_scipy(backend):
    x = draws(backend)["truncgamma"]
    assert x.dims == ("n", "case")
    gamma = stats.gamma(2.0)
    assert _ks(x.values[:, 0], _Conditioned(gamma, 0.5, 2.0).cdf) > 1e-3
    assert x.values[:, 0].min() >= 0.5 and x.values[:, 0].max() <= 2.0
    assert _ks(x.values[:, 1], _Conditioned(stats.gamma(0.5), 40.0, np.inf).cdf) > 1e-3  # P(X > 40) = 7e-19


def test_zero_truncated_poisson_and_censored_draws(backend):
    d = draws(backend)
    k = d["truncpois"].values[:, 0]
    assert k.dtype == np.int64 and k.min() >= 1
    pmf = stats.poisson(1.5).pmf(np.arange(1, 12)) / stats.poisson(1.5).sf(0)
    counts = np.array([(k == j).sum() for j in range(1, 12)])
    keep = pmf * N.size >= 5
    obs, exp = counts[keep], pmf[keep] * N.size
    assert stats.chisquare(np.append(obs, N.size - obs.sum()), np.append(exp, N.size - exp.sum())).pvalue > 1e-3
    far = d["truncpois"].values[:, 1]
    assert far.min() >= 15  # P(X >= 15) = 3e-10 for Poisson(2): rejection would never get there
    cells = stats.poisson(2.0).pmf([15, 16]) / stats.poisson(2.0).sf(14)
    cells = np.append(cells, 1 - cells.sum())
    assert stats.chisquare([(far == 15).sum(), (far == 16).sum(), (far >= 17).sum()], cells * N.size).pvalue > 1e-3
    c = d["censored"].values
    assert c.min() == -0.5 and c.max() == 1.0
    for value, p in [(-0.5, stats.norm.cdf(-0.5)), (1.0, stats.norm.sf(1.0))]:  # the tails' mass sits on the bounds
        assert abs((c == value).mean() - p) < 5 * math.sqrt(p * (1 - p) / N.size)
    inside = c[(c > -0.5) & (c < 1.0)]
    assert _ks(inside, _Conditioned(stats.norm(), -0.5, 1.0).cdf) > 1e-3


def test_mixture_draws_match_the_mixture_cdf(backend):
    d = draws(backend)
    assert d["mixture"].dims == ("n",)
    assert (
        _ks(d["mixture"].values, lambda x: W[0] * stats.norm.cdf(x, MIX_MU[0]) + W[1] * stats.norm.cdf(x, MIX_MU[1]))
        > 1e-3
    )
    cdf = lambda x: W[0] * stats.expon.cdf(x) + W[1] * stats.norm.cdf(x, 3.0, 0.5)  # noqa: E731
    assert _ks(d["mixture_list"].values, cdf) > 1e-3


def _lkj_margin(eta, n):
    """An off-diagonal correlation of LKJ(eta) in dimension n: 2 Beta(b, b) - 1 with b = eta - 1 + n / 2."""
    b = eta - 1 + n / 2
    return lambda r: stats.beta(b, b).cdf((np.asarray(r) + 1) / 2)


def test_lkj_draws(backend):
    d = draws(backend)
    corr = d["lkj_corr"]
    assert corr.dims == ("n", "row", "col") and list(corr.row.values) == ["a", "b", "c"]
    c = corr.values
    np.testing.assert_allclose(np.diagonal(c, axis1=1, axis2=2), 1.0, rtol=1e-12)
    np.testing.assert_allclose(c, np.swapaxes(c, 1, 2), atol=1e-12)
    assert (np.linalg.eigvalsh(c) > 0).all()
    for i, j in [(0, 1), (0, 2), (1, 2)]:
        assert _ks(c[:, i, j], _lkj_margin(2.0, 3)) > 1e-3
    packed = d["lkj_cholesky_corr"]
    assert packed.dims == ("n", "row_col") and list(packed.row_col.values) == ["b,a", "c,a", "c,b"]
    L = dg.dist.lkj_cholesky_corr(0.5, dims=(ROW, COL), packed=True)
    chol = dg.function([], L.unpack(dg.constant(packed.values, dims=(N, L.packed_dim))), backend="python")().values
    corr = chol @ np.swapaxes(chol, 1, 2)
    np.testing.assert_allclose(np.diagonal(corr, axis1=1, axis2=2), 1.0, rtol=1e-12)
    assert _ks(corr[:, 2, 0], _lkj_margin(0.5, 3)) > 1e-3
    cov = d["lkj_cholesky_cov"].values
    assert (np.triu(cov, 1) == 0).all() and (np.diagonal(cov, axis1=1, axis2=2) > 0).all()
    stds = np.sqrt((cov**2).sum(-1))
    for k, s in enumerate([1.0, 2.0, 0.5]):
        assert _ks(stds[:, k], stats.halfnorm(scale=s).cdf) > 1e-3
    r = (cov @ np.swapaxes(cov, 1, 2))[:, 0, 1] / (stds[:, 0] * stds[:, 1])
    assert _ks(r, _lkj_margin(3.0, 3)) > 1e-3


def test_zerosum_draws(backend):
    z = draws(backend)["zerosum"]
    assert z.dims == ("n", "k", "row")
    np.testing.assert_allclose(z.values.sum(1), 0, atol=1e-12)
    np.testing.assert_allclose(z.values.sum(2), 0, atol=1e-12)
    scale = 2.0 * math.sqrt((1 - 1 / 3) * (1 - 1 / 3))  # each element: sigma^2 prod(1 - 1/n_d)
    assert _ks(z.values[:, 1, 2], stats.norm(0, scale).cdf) > 1e-3


# --- factories' log densities
def test_factory_log_densities(backend):
    x = dg.labeled("x", dims=(dg.Dim("i", size=7),))
    k = dg.labeled("k", dims=(dg.Dim("j", size=5),), dtype="int64")
    w = dg.labeled("w", dims=(COMP,))
    mu = dg.labeled("mu", dims=(COMP,))
    u = dg.labeled("u", dims=(dg.Dim("l", size=6),))

    def build():
        outs = [
            dg.dist.truncated(dg.dist.normal(0.5, 2.0), lower=-1.0, upper=3.0).logp(x),
            dg.dist.truncated(dg.dist.normal(0.0, 1.0), lower=30.0).logp(x),
            dg.dist.truncated(dg.dist.gamma(2.0, 1.5), upper=2.0).logp(x),
            dg.dist.truncated(dg.dist.poisson(1.5), lower=1, upper=4).logp(k),
            dg.dist.censored(dg.dist.normal(0.5, 2.0), lower=-1.0, upper=3.0).logp(x),
            dg.dist.censored(dg.dist.poisson(1.5), upper=3).logp(k),
            dg.dist.mixture(w, dg.dist.normal(mu, 1.5), dim=COMP).logp(x),
            dg.dist.mixture(w, [dg.dist.exponential(1.0), dg.dist.laplace(mu.isel(comp=1), 0.5)], dim=COMP).logp(x),
            # the incomplete beta function's
            dg.dist.truncated(dg.dist.student_t(3.5, 0.5, 2.0), lower=-1.0, upper=3.0).logp(x),
            dg.dist.censored(dg.dist.student_t(2.5, 0.5, 2.0), lower=-1.0, upper=3.0).logp(x),
            dg.dist.truncated(dg.dist.beta(2.5, 0.7), lower=0.2, upper=0.9).logp(u),
            dg.dist.censored(dg.dist.beta(2.5, 0.7), lower=0.2, upper=0.9).logp(u),
            dg.dist.truncated(dg.dist.binomial(30, 0.2), lower=1, upper=4).logp(k),
            dg.dist.censored(dg.dist.negative_binomial(2.5, 0.3), upper=3).logp(k),
        ]
        return dg.function([x, k, w, mu, u], outs, backend=backend)

    xs = np.array([-1.0, -0.5, 0.0, 2.9, 3.0, 30.5, 35.0])
    ks = np.array([0, 1, 3, 4, 5])
    us = np.array([0.1, 0.2, 0.5, 0.9, 0.95, 1.0])
    got = cached(("factories", backend), build)(xs, ks, np.array([1.0, 3.0]), MIX_MU, us)
    with np.errstate(all="ignore"):
        norm = stats.norm(0.5, 2.0)
        pois = stats.poisson(1.5)
        mass = pois.cdf(4) - pois.cdf(0)
        t, beta = stats.t(2.5, 0.5, 2.0), stats.beta(2.5, 0.7)
        binom, nbinom = stats.binom(30, 0.2), stats.nbinom(2.5, 0.3)
        want = [
            stats.truncnorm((-1.0 - 0.5) / 2, (3.0 - 0.5) / 2, 0.5, 2.0).logpdf(xs),
            stats.truncnorm(30.0, np.inf).logpdf(xs),
            _Conditioned(stats.gamma(2.0, scale=1 / 1.5), 0.0, 2.0).logpdf(xs),
            np.where((ks >= 1) & (ks <= 4), pois.logpmf(ks) - np.log(mass), -np.inf),
            np.where(
                xs == -1.0,
                norm.logcdf(-1.0),
                np.where(xs == 3.0, norm.logsf(3.0), np.where((xs > -1) & (xs < 3), norm.logpdf(xs), -np.inf)),
            ),
            np.where(ks == 3, np.log(pois.sf(2)), np.where(ks < 3, pois.logpmf(ks), -np.inf)),
            np.log(0.25 * stats.norm(MIX_MU[0], 1.5).pdf(xs) + 0.75 * stats.norm(MIX_MU[1], 1.5).pdf(xs)),
            np.log(0.25 * stats.expon.pdf(xs) + 0.75 * stats.laplace(MIX_MU[1], 0.5).pdf(xs)),
            _Conditioned(stats.t(3.5, 0.5, 2.0), -1.0, 3.0).logpdf(xs),
            np.where(
                xs == -1.0,
                t.logcdf(-1.0),
                np.where(xs == 3.0, t.logsf(3.0), np.where((xs > -1) & (xs < 3), t.logpdf(xs), -np.inf)),
            ),
            _Conditioned(beta, 0.2, 0.9).logpdf(us),
            np.where(
                us == 0.2,
                beta.logcdf(0.2),
                np.where(us == 0.9, beta.logsf(0.9), np.where((us > 0.2) & (us < 0.9), beta.logpdf(us), -np.inf)),
            ),
            np.where((ks >= 1) & (ks <= 4), binom.logpmf(ks) - np.log(binom.cdf(4) - binom.cdf(0)), -np.inf),
            np.where(ks == 3, np.log(nbinom.sf(2)), np.where(ks < 3, nbinom.logpmf(ks), -np.inf)),
        ]
    names = [
        "truncnorm",
        "truncnorm_far",
        "truncgamma",
        "truncpois",
        "censored",
        "censored_pois",
        "mixture",
        "mixture_list",
        "trunc_t",
        "censored_t",
        "trunc_beta",
        "censored_beta",
        "trunc_binom",
        "censored_nbinom",
    ]
    for name, g, wnt in zip(names, got, want, strict=True):
        np.testing.assert_allclose(g.values, wnt, rtol=1e-9, err_msg=name)


# --- the LKJ family: NumPy oracles
def lkj_log_c_pymc(eta, n):
    """PyMC's closed form of log c, the log of the integral of det(C)^(eta - 1) (PyMC adds it; the density subtracts it)."""
    k = np.arange(1, n)
    return -(n - 1) * special.gammaln(eta + 0.5 * (n - 1)) + np.sum(
        0.5 * k * np.log(np.pi) + special.gammaln(eta + 0.5 * (n - 1 - k))
    )


def lkj_log_c_beta(eta, n):
    """Lewandowski, Kurowicka and Joe's form: c = prod over k of 2^((2 eta - 2 + n - k)(n - k)) B(b_k, b_k)^(n - k)."""
    k = np.arange(1, n)
    b = eta + (n - k - 1) / 2
    return np.sum((2 * eta - 2 + n - k) * (n - k) * np.log(2) + (n - k) * special.betaln(b, b))


@pytest.mark.parametrize("eta,n", [(1.0, 2), (2.0, 2), (0.5, 3), (1.0, 4), (3.7, 5)])
def test_lkj_normalizer_oracles_agree(eta, n):
    assert lkj_log_c_pymc(eta, n) == pytest.approx(lkj_log_c_beta(eta, n), rel=1e-12, abs=1e-12)
    if n == 2:  # the density of r integrates to 1
        total, _ = integrate.quad(lambda r: (1 - r * r) ** (eta - 1) * np.exp(-lkj_log_c_pymc(eta, 2)), -1, 1)
        assert total == pytest.approx(1.0, rel=1e-9)


def _random_corr(rng, n):
    a = rng.normal(size=(n, n + 2))
    cov = a @ a.T
    s = np.sqrt(np.diag(cov))
    return cov / np.outer(s, s)


def test_lkj_log_densities_match_numpy_oracles(backend):
    eta = dg.labeled("eta", dims=())
    c = dg.labeled("c", dims=(ROW, COL))
    L = dg.labeled("L", dims=(ROW, COL))
    sd_sigma = dg.labeled("sd_sigma", dims=(ROW,))
    corr = dg.dist.lkj_corr(eta, dims=(ROW, COL))
    packed = dg.dist.lkj_corr(eta, dims=(ROW, COL), packed=True)
    cholcorr = dg.dist.lkj_cholesky_corr(eta, dims=(ROW, COL))
    cov = dg.dist.lkj_cholesky_cov(eta, dg.dist.halfnormal(sd_sigma), dims=(ROW, COL))
    cov_packed = dg.dist.lkj_cholesky_cov(eta, dg.dist.halfnormal(sd_sigma), dims=(ROW, COL), packed=True)

    def build():
        outs = [
            corr.logp(c),
            packed.logp(packed.pack(c)),
            cholcorr.logp(dg.linalg.cholesky(c, dims=(ROW, COL))),
            cov.logp(L),
            cov_packed.logp(cov_packed.pack(L)),
            cov.corr(L),
            cov.stds(L),
        ]
        return dg.function([eta, c, L, sd_sigma], outs, backend=backend)

    f = cached(("lkj", backend), build)
    rng = np.random.default_rng(0)
    n = 3
    sigmas = np.array([1.0, 2.0, 0.5])
    for eta_v in [0.7, 1.0, 2.5]:
        C = _random_corr(rng, n)
        s = np.abs(rng.normal(size=n)) + 0.3
        Lcov = np.linalg.cholesky(np.outer(s, s) * C)
        got = f(eta_v, C, Lcov, sigmas)
        log_c = lkj_log_c_beta(eta_v, n)
        want_corr = (eta_v - 1) * np.linalg.slogdet(C)[1] - log_c
        np.testing.assert_allclose(float(got[0]), want_corr, rtol=1e-10)
        np.testing.assert_allclose(float(got[1]), want_corr, rtol=1e-10)
        Lc = np.linalg.cholesky(
            C
        )  # the Jacobian of L -> L L^T: prod 2^n L_kk^(n - k) over k = 1..n (one-based), no 2^n on the strict lower part
        want_chol = want_corr + np.sum((n - 1 - np.arange(n)) * np.log(np.diag(Lc)))
        np.testing.assert_allclose(float(got[2]), want_chol, rtol=1e-10)
        # PyMC's LKJCholeskyCov density, with the normalizer's sign that integrates to 1
        std = np.sqrt((Lcov**2).sum(1))
        cd = np.diag(Lcov) / std
        k = np.arange(n)
        want_cov = (
            -log_c
            + np.sum((2 * eta_v - 3 + n - k) * np.log(cd))
            + stats.halfnorm(scale=sigmas).logpdf(std).sum()
            + np.sum(np.log(cd) - k * np.log(std))
        )
        np.testing.assert_allclose(float(got[3]), want_cov, rtol=1e-10)
        np.testing.assert_allclose(float(got[4]), want_cov, rtol=1e-10)
        np.testing.assert_allclose(got[5].values, C, rtol=1e-10)
        np.testing.assert_allclose(got[6].values, s, rtol=1e-10)
    bad = C.copy()
    bad[0, 1] = bad[1, 0] = 1.5  # not positive definite
    assert float(f(2.0, bad, Lcov, sigmas)[0]) == -np.inf


def test_lkj_cholesky_cov_2x2_by_change_of_variables():
    """For n = 2 the factor is (s1, s2 r, s2 sqrt(1 - r^2)): its density is p(s1) p(s2) p(r) sqrt(1 - r^2) / s2."""
    i, j = dg.Dim("i", size=2), dg.Dim("j", size=2)
    eta = 1.8
    cov = dg.dist.lkj_cholesky_cov(eta, dg.dist.exponential(1.3), dims=(i, j))
    L = dg.labeled("L", dims=(i, j))
    f = dg.function([L], cov.logp(L), backend="python")
    for s1, s2, r in [(0.5, 1.2, 0.3), (2.0, 0.1, -0.9)]:
        value = np.array([[s1, 0.0], [s2 * r, s2 * math.sqrt(1 - r * r)]])
        p_r = (eta - 1) * np.log1p(-r * r) - lkj_log_c_beta(eta, 2)
        want = stats.expon(scale=1 / 1.3).logpdf([s1, s2]).sum() + p_r + 0.5 * np.log1p(-r * r) - np.log(s2)
        assert float(f(value)) == pytest.approx(want, rel=1e-10)


def test_zerosum_normal_logp_matches_the_singular_normal(backend):
    x1 = dg.labeled("x1", dims=(K,))
    x2 = dg.labeled("x2", dims=(K, ROW))
    sigma = dg.labeled("sigma", dims=())
    f = dg.function(
        [x1, x2, sigma],
        [dg.dist.zerosum_normal(sigma, dims=(K,)).logp(x1), dg.dist.zerosum_normal(sigma, dims=(K, ROW)).logp(x2)],
        backend=backend,
    )
    rng = np.random.default_rng(1)
    v1 = rng.normal(size=3)
    v1 -= v1.mean()
    v2 = rng.normal(size=(3, 3))
    v2 -= v2.mean(0)
    v2 -= v2.mean(1, keepdims=True)
    center = np.eye(3) - 1 / 3
    got1, got2 = f(v1, v2, 1.7)
    want1 = stats.multivariate_normal(np.zeros(3), 1.7**2 * center, allow_singular=True).logpdf(v1)
    want2 = stats.multivariate_normal(np.zeros(9), 1.7**2 * np.kron(center, center), allow_singular=True).logpdf(
        v2.ravel()
    )
    assert float(got1) == pytest.approx(want1, rel=1e-10)
    assert float(got2) == pytest.approx(want2, rel=1e-10)
    assert float(f(v1 + 0.1, v2, 1.7)[0]) == -np.inf  # off the zero-sum subspace


# --- gradients vs finite differences, one function per backend
def gradient_cases():
    def build():
        cases = []
        for name, params, x in [
            ("halfcauchy", [1.3], 0.8),
            ("halfstudent_t", [3.5, 1.2], 0.9),
            ("weibull", [1.7, 1.4], 0.9),
            ("laplace", [0.3, 1.1], 1.4),
            ("logistic", [0.3, 1.1], -0.4),
        ]:
            vs = [dg.labeled(f"g_{name}_{k}", dims=()) for k in range(len(params) + 1)]
            cases.append((name, getattr(dg.dist, name)(*vs[:-1]).logp(vs[-1]), vs, [*params, x]))
        for name, params, x in [
            ("normal", [0.3, 1.7], -0.4),
            ("cauchy", [0.3, 0.8], 1.2),
            ("exponential", [1.5], 0.7),
            ("weibull", [1.7, 1.4], 0.9),
            ("logistic", [0.3, 1.1], -0.4),
            ("laplace", [0.3, 1.1], 1.4),
        ]:
            vs = [dg.labeled(f"t_{name}_{k}", dims=()) for k in range(len(params) + 1)]
            d = getattr(dg.dist, name)(*vs[:-1])
            cases.append((f"{name} logcdf", d.logcdf(vs[-1]), vs, [*params, x]))
            vs2 = [dg.labeled(f"s_{name}_{k}", dims=()) for k in range(len(params) + 1)]
            cases.append((f"{name} logsf", getattr(dg.dist, name)(*vs2[:-1]).logsf(vs2[-1]), vs2, [*params, x]))
        # the incomplete beta function's tails: shapes (nu, alpha, beta, n) are constants, having no derivative
        for name, build_dist, values in [
            ("student_t", lambda mu, sigma: dg.dist.student_t(3.5, mu, sigma), [0.3, 1.7, -0.9]),
            ("halfstudent_t", lambda sigma: dg.dist.halfstudent_t(2.5, sigma), [1.3, 0.8]),
            ("beta", lambda: dg.dist.beta(2.5, 0.7), [0.6]),
            ("binomial", lambda p: dg.dist.binomial(30, p), [0.3, 7.0]),
            ("negative_binomial", lambda p: dg.dist.negative_binomial(2.5, p), [0.4, 3.0]),
        ]:
            discrete = name in ("binomial", "negative_binomial")  # a count enters the shapes: it is data here
            for kind in ("logcdf", "logsf"):
                vs = [dg.labeled(f"b{kind}_{name}_{k}", dims=()) for k in range(len(values) - discrete)]
                x = values[-1] if discrete else vs[-1]
                cost = getattr(build_dist(*(vs if discrete else vs[:-1])), kind)(x)
                cases.append((f"{name} {kind}", cost, vs, values[:-1] if discrete else values))
        lo, hi, mu, sigma, x = (dg.labeled(f"tr_{k}", dims=()) for k in ("lo", "hi", "mu", "sigma", "x"))
        trunc = dg.dist.truncated(dg.dist.normal(mu, sigma), lower=lo, upper=hi).logp(x)
        cases.append(("truncated", trunc, [lo, hi, mu, sigma, x], [-0.5, 2.0, 0.3, 1.2, 0.7]))
        clo, cmu, cx = (dg.labeled(f"ce_{k}", dims=()) for k in ("lo", "mu", "x"))
        cens = dg.dist.censored(dg.dist.logistic(cmu, 1.0), lower=clo).logp(cx)
        cases.append(("censored", cens, [clo, cmu, cx], [-0.5, 0.3, -0.5]))
        w, mmu, mx = dg.labeled("mix_w", dims=(COMP,)), dg.labeled("mix_mu", dims=(COMP,)), dg.labeled("mix_x", dims=())
        mix = dg.dist.mixture(w, dg.dist.normal(mmu, 1.0), dim=COMP).logp(mx)
        cases.append(("mixture", mix, [w, mmu, mx], [np.array([0.4, 0.6]), np.array([-1.0, 1.5]), 0.2]))
        eta, c = dg.labeled("lkj_eta", dims=()), dg.labeled("lkj_c", dims=(ROW, COL))
        cases.append(
            (
                "lkj_corr",
                dg.dist.lkj_corr(eta, dims=(ROW, COL)).logp(c),
                [eta, c],
                [1.7, _random_corr(np.random.default_rng(3), 3)],
            )
        )
        ceta, L = dg.labeled("cov_eta", dims=()), dg.labeled("cov_L", dims=(ROW, COL))
        Lv = np.linalg.cholesky(np.array([[2.0, 0.3, 0.1], [0.3, 1.0, -0.2], [0.1, -0.2, 0.5]]))
        cov = dg.dist.lkj_cholesky_cov(ceta, dg.dist.halfnormal(1.5), dims=(ROW, COL)).logp(L)
        cases.append(("lkj_cholesky_cov", cov, [ceta, L], [2.2, Lv]))
        zs, zx = dg.labeled("zs_sigma", dims=()), dg.labeled("zs_x", dims=(K,))
        cases.append(
            (
                "zerosum_normal",
                dg.dist.zerosum_normal(zs, dims=(K,)).logp(zx),
                [zs, zx],
                [1.3, np.array([0.5, -0.2, -0.3])],
            )
        )
        return cases

    return cached("gradient cases", build)


def test_gradients_match_finite_differences(backend):
    cases = gradient_cases()
    # a correlation's or a zero-sum vector's entries are not free: their cases differentiate w.r.t. the parameters
    # the censored value sits on its bound: d/d mu of the tail's log mass (moving the bound or the value leaves it)
    wrts = [
        [v for v in vs if name not in ("lkj_corr", "zerosum_normal") or v.type.ndim == 0] for name, _, vs, _ in cases
    ]
    wrts = [[vs[1]] if name == "censored" else wrt for (name, _, vs, _), wrt in zip(cases, wrts)]
    outputs = [g for (_, cost, _, _), wrt in zip(cases, wrts) for g in dg.grad(cost, wrt)]
    f = cached(
        ("grads", backend), lambda: dg.function([v for _, _, vs, _ in cases for v in vs], outputs, backend=backend)
    )
    got = iter(f(*[v for *_, values in cases for v in values]))
    for (name, cost, vs, values), wrt in zip(cases, wrts):
        cost_fn = dg.function(vs, cost, backend="python")
        for v in wrt:
            k = next(i for i, u in enumerate(vs) if u is v)
            g = np.asarray(next(got))
            fd = numeric_grad(lambda *vals: float(cost_fn(*vals)), [np.asarray(u, dtype=float) for u in values], k)
            if name == "lkj_cholesky_cov" and v.type.ndim == 2:  # only the lower triangle is read
                g, fd = np.tril(g), np.tril(fd)
            np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-7, err_msg=f"{name} d/d{v.name}")


# --- supports and the transforms they give (the model layer's key), and bad input
EXPECTED_TRANSFORMS = {
    "normal": T.Identity,
    "halfnormal": T.Log,
    "lognormal": T.Log,
    "student_t": T.Identity,
    "cauchy": T.Identity,
    "uniform": T.Interval,
    "exponential": T.Log,
    "gamma": T.Log,
    "invgamma": T.Log,
    "beta": T.LogOdds,
    "bernoulli": None,
    "binomial": None,
    "poisson": None,
    "negative_binomial": None,
    "categorical": None,
    "dirichlet": T.Simplex,
    "multivariate_normal": T.Identity,
    "halfcauchy": T.Log,
    "halfstudent_t": T.Log,
    "weibull": T.Log,
    "laplace": T.Identity,
    "logistic": T.Identity,
    "lkj_corr": T.Corr,
    "lkj_cholesky_corr": T.CholeskyCorr,
    "lkj_cholesky_cov": T.CholeskyCov,
    "zerosum_normal": T.ZeroSum,
    "discrete_uniform": None,
    "markov_chain": None,
}
EXPECTED_TRANSFORMS.update(
    {  # issue 39's univariate catalog
        "flat": T.Identity,
        "halfflat": T.Log,
        "asymmetric_laplace": T.Identity,
        "chi_squared": T.Log,
        "ex_gaussian": T.Identity,
        "gumbel": T.Identity,
        "kumaraswamy": T.LogOdds,
        "logitnormal": T.LogOdds,
        "moyal": T.Identity,
        "pareto": T.Interval,
        "rice": T.Log,
        "skewnormal": T.Identity,
        "skew_student_t": T.Identity,
        "triangular": T.Interval,
        "vonmises": T.Interval,
        "wald": T.Interval,
        "interpolated": T.Interval,
        "truncated_normal": T.Interval,
        "custom": T.Identity,
        "beta_binomial": None,
        "dirac_delta": None,
        "discrete_weibull": None,
        "geometric": None,
        "hypergeometric": None,
        "ordered_logistic": None,
        "ordered_probit": None,
        "zero_inflated_poisson": None,
        "zero_inflated_binomial": None,
        "zero_inflated_negative_binomial": None,
        "hurdle_poisson": None,
        "hurdle_negative_binomial": None,
        "hurdle_gamma": T.Log,
        "hurdle_lognormal": T.Log,
        "polya_gamma": T.Log,
        "normal_mixture": T.Identity,
    }
)
_I, _J, _K = dg.Dim("si", size=3), dg.Dim("sj", size=3), dg.Dim("sk", size=3)
_EXAMPLES = {  # an instance of each distribution whose constructor needs more than its defaults
    "student_t": lambda: dg.dist.student_t(3.0),
    "gamma": lambda: dg.dist.gamma(2.0),
    "invgamma": lambda: dg.dist.invgamma(2.0),
    "beta": lambda: dg.dist.beta(2.0, 3.0),
    "bernoulli": lambda: dg.dist.bernoulli(0.3),
    "binomial": lambda: dg.dist.binomial(5, 0.3),
    "poisson": lambda: dg.dist.poisson(2.0),
    "negative_binomial": lambda: dg.dist.negative_binomial(3.0, 0.4),
    "categorical": lambda: dg.dist.categorical(dg.constant(np.ones(3), dims=(_K,)), dim=_K),
    "dirichlet": lambda: dg.dist.dirichlet(dg.constant(np.ones(3), dims=(_K,)), dim=_K),
    "multivariate_normal": lambda: dg.dist.multivariate_normal(
        dg.constant(np.zeros(3), dims=(_I,)), cov=dg.constant(np.eye(3), dims=(_I, _J)), dims=(_I, _J)
    ),
    "weibull": lambda: dg.dist.weibull(1.5, 2.0),
    "halfstudent_t": lambda: dg.dist.halfstudent_t(3.0),
    "lkj_corr": lambda: dg.dist.lkj_corr(2.0, dims=(_I, _J)),
    "lkj_cholesky_corr": lambda: dg.dist.lkj_cholesky_corr(2.0, dims=(_I, _J)),
    "lkj_cholesky_cov": lambda: dg.dist.lkj_cholesky_cov(2.0, dg.dist.halfnormal(1.0), dims=(_I, _J)),
    "zerosum_normal": lambda: dg.dist.zerosum_normal(1.0, dims=(_K,)),
    "discrete_uniform": lambda: dg.dist.discrete_uniform(1, 6),
    "markov_chain": lambda: dg.dist.markov_chain(
        dg.constant(np.ones(3), dims=(_K,)), dg.constant(np.ones((3, 3)), dims=(_K, _J)), dim=_K, next_dim=_J, time=_I
    ),
}
_EXAMPLES.update(
    {
        "asymmetric_laplace": lambda: dg.dist.asymmetric_laplace(2.0),
        "chi_squared": lambda: dg.dist.chi_squared(3.0),
        "ex_gaussian": lambda: dg.dist.ex_gaussian(0.0, 1.0, 1.0),
        "kumaraswamy": lambda: dg.dist.kumaraswamy(2.0, 3.0),
        "pareto": lambda: dg.dist.pareto(3.0, 1.0),
        "rice": lambda: dg.dist.rice(1.0),
        "skew_student_t": lambda: dg.dist.skew_student_t(2.0, 3.0),
        "wald": lambda: dg.dist.wald(1.0, 2.0),
        "truncated_normal": lambda: dg.dist.truncated_normal(lower=0.0),
        "interpolated": lambda: dg.dist.interpolated(
            dg.constant(np.arange(3.0), dims=(_K,)), dg.constant(np.ones(3), dims=(_K,)), dim=_K
        ),
        "custom": lambda: dg.dist.custom(logp=lambda x: -x * x),
        "beta_binomial": lambda: dg.dist.beta_binomial(2.0, 3.0, 10),
        "dirac_delta": lambda: dg.dist.dirac_delta(3),
        "discrete_weibull": lambda: dg.dist.discrete_weibull(0.5, 1.5),
        "geometric": lambda: dg.dist.geometric(0.3),
        "hypergeometric": lambda: dg.dist.hypergeometric(20, 7, 12),
        "ordered_logistic": lambda: dg.dist.ordered_logistic(
            0.0, dg.constant(np.array([-1.0, 0.0, 1.0]), dims=(_K,)), dim=_K
        ),
        "ordered_probit": lambda: dg.dist.ordered_probit(
            0.0, dg.constant(np.array([-1.0, 0.0, 1.0]), dims=(_K,)), dim=_K
        ),
        "zero_inflated_poisson": lambda: dg.dist.zero_inflated_poisson(0.7, 2.0),
        "zero_inflated_binomial": lambda: dg.dist.zero_inflated_binomial(0.7, 10, 0.3),
        "zero_inflated_negative_binomial": lambda: dg.dist.zero_inflated_negative_binomial(0.7, 2.5, 0.4),
        "hurdle_poisson": lambda: dg.dist.hurdle_poisson(0.7, 2.0),
        "hurdle_negative_binomial": lambda: dg.dist.hurdle_negative_binomial(0.7, 2.5, 0.4),
        "hurdle_gamma": lambda: dg.dist.hurdle_gamma(0.7, 2.0, 3.0),
        "hurdle_lognormal": lambda: dg.dist.hurdle_lognormal(0.7, 0.0, 1.0),
        "normal_mixture": lambda: dg.dist.normal_mixture(
            dg.constant(np.ones(3), dims=(_K,)), dg.constant(np.arange(3.0), dims=(_K,)), dim=_K
        ),
    }
)


# the multivariate families and the time series (tests/prob/test_multivariate_families.py, test_timeseries.py)
_T, _EYE = dg.Dim("st", size=4), dg.constant(np.eye(3), dims=(_I, _J))
_W = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
EXPECTED_TRANSFORMS.update(
    {
        "mv_student_t": T.Identity,
        "multinomial": None,
        "dirichlet_multinomial": None,
        "ordered_multinomial": None,
        "stick_breaking_weights": T.Simplex,
        "car": T.Identity,
        "icar": T.Identity,
        "kronecker_normal": T.Identity,
        "matrix_normal": T.Identity,
        "wishart": T.PositiveDefinite,
        "inverse_wishart": T.PositiveDefinite,
        "random_walk": T.Identity,
        "gaussian_random_walk": T.Identity,
        "mv_gaussian_random_walk": T.Identity,
        "mv_student_t_random_walk": T.Identity,
        "ar": T.Identity,
        "garch11": T.Identity,
        "euler_maruyama": T.Identity,
    }
)
_EXAMPLES.update(
    {
        "mv_student_t": lambda: dg.dist.mv_student_t(3.0, 0.0, scale=_EYE, dims=(_I, _J)),
        "multinomial": lambda: dg.dist.multinomial(5, dg.constant(np.ones(3), dims=(_K,)), dim=_K),
        "dirichlet_multinomial": lambda: dg.dist.dirichlet_multinomial(5, dg.constant(np.ones(3), dims=(_K,)), dim=_K),
        "ordered_multinomial": lambda: dg.dist.ordered_multinomial(
            0.0, dg.constant(np.array([-1.0, 1.0]), dims=(dg.Dim("scut", size=2),)), 5, dim=_K, cut_dim="scut"
        ),
        "stick_breaking_weights": lambda: dg.dist.stick_breaking_weights(1.0, dim=_K),
        "car": lambda: dg.dist.car(0.0, _W, 0.5, 1.0, dim=_K),
        "icar": lambda: dg.dist.icar(_W, dim=_K),
        "kronecker_normal": lambda: dg.dist.kronecker_normal(0.0, covs=[_EYE], dims=[(_I, _J)]),
        "matrix_normal": lambda: dg.dist.matrix_normal(
            0.0, rowcov=_EYE, colcov=_EYE.rename({"si": "sk", "sj": "sk2"}), rowdims=(_I, _J), coldims=("sk", "sk2")
        ),
        "wishart": lambda: dg.dist.wishart(4.0, _EYE, dims=(_I, _J)),
        "inverse_wishart": lambda: dg.dist.inverse_wishart(4.0, _EYE, dims=(_I, _J)),
        "random_walk": lambda: dg.dist.random_walk(dg.dist.normal(), dg.dist.normal(), time=_T),
        "gaussian_random_walk": lambda: dg.dist.gaussian_random_walk(time=_T),
        "mv_gaussian_random_walk": lambda: dg.dist.mv_gaussian_random_walk(0.0, cov=_EYE, dims=(_I, _J), time=_T),
        "mv_student_t_random_walk": lambda: dg.dist.mv_student_t_random_walk(
            3.0, 0.0, scale=_EYE, dims=(_I, _J), time=_T
        ),
        "ar": lambda: dg.dist.ar(0.5, time=_T),
        "garch11": lambda: dg.dist.garch11(0.1, 0.1, 0.5, 1.0, time=_T),
        "euler_maruyama": lambda: dg.dist.euler_maruyama(0.1, lambda x: (-x, 1.0), time=_T),
    }
)


def test_every_distribution_states_its_support_and_its_transform_follows():
    for name, cls in dg.dist.DISTRIBUTIONS.items():
        if name in ("mixture", "censored", "truncated"):
            continue  # instances derive theirs (below)
        dist = _EXAMPLES.get(name, cls)()
        assert isinstance(dist.support, C.Constraint), name
        assert dist.discrete == (EXPECTED_TRANSFORMS[name] is None) == dist.support.discrete, name
        if EXPECTED_TRANSFORMS[name] is not None:
            assert type(T.biject_to(dist.support)) is EXPECTED_TRANSFORMS[name], name
    assert set(EXPECTED_TRANSFORMS) | {"mixture", "censored", "truncated"} == set(dg.dist.DISTRIBUTIONS)
    assert not any("default_transform" in vars(c) or "domain" in vars(c) for c in dg.dist.DISTRIBUTIONS.values())


def _bounds(support):
    """The support's (lower, upper) as numbers, None for an open side."""
    return [
        None if b is None else float(b.eval(backend="python") if hasattr(b, "eval") else b)
        for b in (support.lower, support.upper)
    ]


def test_factories_derive_their_support():
    trunc = dg.dist.truncated(dg.dist.normal(), lower=0.0)
    assert type(T.biject_to(trunc.support)) is T.Interval and _bounds(trunc.support) == [0.0, None]
    assert dg.dist.truncated(dg.dist.poisson(2.0), lower=1).discrete
    assert dg.dist.truncated(dg.dist.poisson(2.0), lower=1).support.discrete
    cens = dg.dist.censored(dg.dist.gamma(2.0), upper=3.0)
    assert type(T.biject_to(cens.support)) is T.Interval and _bounds(cens.support) == [None, 3.0]
    w = dg.constant(W, dims=(COMP,))
    assert dg.dist.mixture(w, dg.dist.gamma(dg.constant([1.0, 3.0], dims=(COMP,))), dim=COMP).support is C.nonnegative
    assert dg.dist.mixture(w, [dg.dist.halfnormal(), dg.dist.lognormal()], dim=COMP).support is C.nonnegative
    assert dg.dist.mixture(w, [dg.dist.normal(), dg.dist.exponential()], dim=COMP).support is C.real
    counts = dg.dist.mixture(w, [dg.dist.poisson(1.0), dg.dist.poisson(5.0)], dim=COMP)
    assert counts.discrete and _bounds(counts.support) == [0.0, None]
    spans = dg.dist.mixture(
        w, dg.dist.uniform(dg.constant([0.0, -1.0], dims=(COMP,)), dg.constant([2.0, 1.0], dims=(COMP,))), dim=COMP
    )
    assert type(T.biject_to(spans.support)) is T.Interval
    assert _bounds(spans.support) == [-1.0, 2.0]
    assert set(spans.params) == {"w"}  # the bounds live in the support, not in the mixture's parameters


def test_bad_input_is_a_clear_error():
    w = dg.constant(W, dims=(COMP,))
    with pytest.raises(TypeError, match=r"mixture: give the components' dim as dim="):
        dg.dist.mixture(w, dg.dist.normal())
    with pytest.raises(dg.DimError, match=r"mixture: the components' parameters must be on dim 'comp'"):
        dg.dist.mixture(w, dg.dist.normal(), dim=COMP)
    with pytest.raises(dg.DimError, match=r"mixture: 3 components for dim 'comp' of size 2"):
        dg.dist.mixture(w, [dg.dist.normal()] * 3, dim=COMP)
    with pytest.raises(dg.DimError, match=r"mixture: the value must not be on the components' dim 'comp'"):
        dg.dist.mixture(w, [dg.dist.normal()] * 2, dim=COMP).logp(w)
    with pytest.raises(TypeError, match=r"truncated: give lower=, upper= or both"):
        dg.dist.truncated(dg.dist.normal())
    with pytest.raises(TypeError, match=r"censored: expected a dg.dist distribution"):
        dg.dist.censored("normal", lower=0.0)
    with pytest.raises(TypeError, match=r"lkj_corr: give the matrix dims as dims=\(row, col\)"):
        dg.dist.lkj_corr(1.0, dims=(ROW,))
    with pytest.raises(dg.DimError, match=r"lkj_corr: the matrix dims need one static size >= 2"):
        dg.dist.lkj_corr(1.0, dims=(ROW, dg.Dim("other", size=2)))
    with pytest.raises(dg.DimError, match=r"lkj_cholesky_cov: eta must not be on the matrix dims"):
        dg.dist.lkj_cholesky_cov(dg.constant(np.ones(3), dims=(ROW,)), dg.dist.halfnormal(), dims=(ROW, COL))
    with pytest.raises(dg.DimError, match=r"lkj_corr: the value must be on the matrix dims"):
        dg.dist.lkj_corr(1.0, dims=(ROW, COL)).logp(dg.constant(np.ones(3), dims=(ROW,)))
    with pytest.raises(TypeError, match=r"lkj_cholesky_cov: sd_dist must be a univariate dg.dist distribution"):
        dg.dist.lkj_cholesky_cov(1.0, 2.0, dims=(ROW, COL))
    with pytest.raises(TypeError, match=r"zerosum_normal: give the dims"):
        dg.dist.zerosum_normal(1.0)
    with pytest.raises(dg.DimError, match=r"zerosum_normal: sigma must not be on the zero-sum dims"):
        dg.dist.zerosum_normal(dg.constant(np.ones(3), dims=(K,)), dims=(K,))
    with pytest.raises(dg.DimError, match=r"zerosum_normal: the value must be on the zero-sum dims"):
        dg.dist.zerosum_normal(1.0, dims=(K,)).logp(0.0)


def test_invalid_parameters_give_nan():
    eta = dg.labeled("eta", dims=())
    corr = np.array([[1.0, 0.2, 0.1], [0.2, 1.0, 0.3], [0.1, 0.3, 1.0]])
    outs = [
        dg.dist.weibull(-1.0, 1.0).logp(1.0),
        dg.dist.laplace(0.0, -1.0).logcdf(0.5),
        dg.dist.truncated(dg.dist.normal(), lower=2.0, upper=1.0).logp(1.5),
        dg.dist.mixture(dg.constant([-0.5, 1.5], dims=(COMP,)), [dg.dist.normal()] * 2, dim=COMP).logp(0.0),
        dg.dist.lkj_corr(eta, dims=(ROW, COL)).logp(dg.constant(corr, dims=(ROW, COL))),
        dg.dist.zerosum_normal(-1.0, dims=(K,)).logp(dg.constant(np.zeros(3), dims=(K,))),
    ]
    for value in dg.function([eta], outs, backend="python")(-1.0):
        assert np.isnan(value)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.floats(-5, 5), st.floats(0.1, 5), st.floats(-8, 8), st.floats(0.05, 10), st.floats(0, 1)),
        min_size=1,
        max_size=10,
    )
)
def test_truncated_normal_logp_matches_scipy_over_bounds(backend, rows):
    """Bounds anywhere from the center to 16 sigma out: the mass comes from the tail that keeps it."""

    def build():
        i = dg.Dim("i")
        mu, sigma, lo, hi, x = (dg.labeled(k, dims=(i,)) for k in ("mu", "sigma", "lo", "hi", "x"))
        return dg.function(
            [mu, sigma, lo, hi, x],
            dg.dist.truncated(dg.dist.normal(mu, sigma), lower=lo, upper=hi).logp(x),
            backend=backend,
        )

    mu, sigma, lo, width, frac = (np.array(c) for c in zip(*rows))
    hi = lo + width
    x = lo + frac * width
    got = cached(("truncnorm hypothesis", backend), build)(mu, sigma, lo, hi, x)
    want = stats.truncnorm((lo - mu) / sigma, (hi - mu) / sigma, mu, sigma).logpdf(x)
    np.testing.assert_allclose(got.values, want, rtol=1e-8, atol=1e-10)
