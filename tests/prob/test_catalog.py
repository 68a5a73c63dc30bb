"""PyMC's univariate catalog beyond the basic distributions, on every backend: log densities and tails against
scipy.stats (or a closed form) on PyMC's value and parameter domains with their edges, gradients against
finite differences, draws against scipy's cdf (KS, chi-square) and labeled parameters broadcast by name.

One compiled function per backend evaluates every log density and tail, one every gradient, one every draw.
"""

import numpy as np
import pytest
from scipy import integrate, special, stats

import dimgraph as dg
from dimgraph.testing import numeric_grad

inf, nan = np.inf, np.nan


def _masked(ref, inside):
    """`ref` where `inside(x, *params)` holds, else -inf."""

    def fn(x, *p):
        with np.errstate(all="ignore"):
            return ref(x, *p) if inside(x, *p) else -inf

    return fn


def _kumaraswamy(x, a, b):
    return np.log(a * b) + (a - 1) * np.log(x) + (b - 1) * np.log1p(-(x**a))


def _logitnormal(x, mu, s):
    return stats.norm(mu, s).logpdf(special.logit(x)) - np.log(x) - np.log1p(-x)


def _triangular(lo, c, hi):
    return stats.triang((c - lo) / (hi - lo), lo, hi - lo)


def _zero_inflated(ref):
    return lambda x, psi, *p: np.log((1 - psi) * (x == 0) + psi * ref(*p).pmf(x)) if x >= 0 else -inf


def _hurdle(ref):
    def fn(x, psi, *p):
        if x == 0:
            return np.log1p(-psi)
        if x < 0:
            return -inf
        d = ref(*p)
        positive = d.logsf(0) if hasattr(d, "pmf") else 0.0
        return np.log(psi) + (d.logpmf(x) if hasattr(d, "pmf") else d.logpdf(x)) - positive

    return fn


def _polya_gamma_pdf(x, h, z, terms=400):
    """PG(h, z)'s density: the PG(h, 0) series 2^(h-1) / Gamma(h) sum_n (-1)^n Gamma(n + h) / n! (2n + h)
    exp(-(2n + h)^2 / (8x)) / sqrt(2 pi x^3) (Polson, Scott and Windle 2013), tilted by cosh(z/2)^h exp(-z^2 x / 2)."""
    if x <= 0:
        return 0.0
    n = np.arange(terms)
    t = 2 * n + h
    series = ((-1.0) ** n * np.exp(special.gammaln(n + h) - special.gammaln(n + 1) - t * t / (8 * x)) * t).sum()
    tilt = np.cosh(z / 2) ** h * np.exp(-z * z * x / 2)
    return 2 ** (h - 1) / special.gamma(h) * series / np.sqrt(2 * np.pi * x**3) * tilt


def _polya_gamma_cdf(x, h, z):
    return (
        integrate.quad(_polya_gamma_pdf, 0, x, args=(h, z), epsabs=1e-14, epsrel=1e-12, limit=200)[0] if x > 0 else 0.0
    )


class _PolyaGammaLaw:
    """PG(h, z)'s cdf for KS: the density integrated numerically between grid points, interpolated between them."""

    def __init__(self, h, z, top=8.0, points=801):
        grid = np.linspace(0.0, top, points)
        pieces = [integrate.quad(_polya_gamma_pdf, a, b, args=(h, z), epsabs=1e-13)[0] for a, b in zip(grid, grid[1:])]
        self.grid, self.values = grid, np.concatenate([[0.0], np.cumsum(pieces)])

    def cdf(self, x):
        return np.interp(x, self.grid, self.values, right=1.0)


# name -> (parameter names, rows (parameters..., x), the reference log density, the reference cdf or None)
CASES = {
    "asymmetric_laplace": (
        ["kappa", "mu", "b"],
        [(2, 0.5, 1.5, -3), (2, 0.5, 1.5, 0.5), (2, 0.5, 1.5, 4), (0.3, 0, 1, 2), (1, 0, 1e-3, 1e3), (0.5, 0, 2, -40)],
        lambda x, k, mu, b: stats.laplace_asymmetric(k, mu, 1 / b).logpdf(x),
        lambda x, k, mu, b: stats.laplace_asymmetric(k, mu, 1 / b).cdf(x),
    ),
    "chi_squared": (
        ["nu"],
        [(3, 2), (0.5, 1e-6), (100, 90), (3, 0), (2, 0), (3, -1), (4, 40)],
        lambda x, nu: stats.chi2(nu).logpdf(x),
        lambda x, nu: stats.chi2(nu).cdf(x),
    ),
    "ex_gaussian": (
        ["mu", "sigma", "nu"],
        [(0.5, 1.2, 2, -3), (0.5, 1.2, 2, 0.5), (0.5, 1.2, 2, 10), (0, 1, 0.1, 0.3), (0, 1, 10, 50), (0, 1, 1, -8)],
        lambda x, mu, s, nu: stats.exponnorm(nu / s, mu, s).logpdf(x),
        lambda x, mu, s, nu: stats.exponnorm(nu / s, mu, s).cdf(x),
    ),
    "flat": ([], [(0.0,), (-1e300,), (inf,)], lambda x: 0.0, None),
    "halfflat": ([], [(2.0,), (1e-300,), (0.0,), (-1.0,)], lambda x: 0.0 if x > 0 else -inf, None),
    "gumbel": (
        ["mu", "beta"],
        [(0.5, 2, -3), (0, 1, 30), (0, 1, -3), (1e3, 1e-3, 1e3)],
        lambda x, mu, b: stats.gumbel_r(mu, b).logpdf(x),
        lambda x, mu, b: stats.gumbel_r(mu, b).cdf(x),
    ),
    "kumaraswamy": (
        ["a", "b"],
        [(2, 3, 0.5), (0.5, 0.5, 0.01), (5, 0.5, 0.999), (2, 3, 0), (2, 3, 1), (2, 3, 1.2)],
        _masked(_kumaraswamy, lambda x, a, b: 0 < x < 1),
        lambda x, a, b: 1 - (1 - np.clip(x, 0, 1) ** a) ** b,
    ),
    "logitnormal": (
        ["mu", "sigma"],
        [(0.3, 0.8, 0.2), (0, 2, 0.999), (-3, 0.1, 0.05), (0, 1, 0), (0, 1, 1)],
        _masked(_logitnormal, lambda x, mu, s: 0 < x < 1),
        lambda x, mu, s: stats.norm(mu, s).cdf(special.logit(x)),
    ),
    "moyal": (
        ["mu", "sigma"],
        [(0.5, 1.5, -2), (0, 1, 30), (0, 1, -5), (2, 1e-2, 2.1)],
        lambda x, mu, s: stats.moyal(mu, s).logpdf(x),
        lambda x, mu, s: stats.moyal(mu, s).cdf(x),
    ),
    "pareto": (
        ["alpha", "m"],
        [(3, 2, 4), (3, 2, 2), (3, 2, 1.5), (0.5, 1e-3, 1e5), (3, 2, inf)],
        lambda x, a, m: stats.pareto(a, scale=m).logpdf(x),
        lambda x, a, m: stats.pareto(a, scale=m).cdf(x),
    ),
    "rice": (
        ["nu", "sigma"],
        [(1, 2, 1.5), (40, 1, 39), (0, 1, 1), (1, 2, 0), (1, 2, -1), (1e3, 10, 1010)],
        lambda x, nu, s: stats.rice(nu / s, scale=s).logpdf(x),
        None,
    ),
    "skewnormal": (
        ["mu", "sigma", "alpha"],
        [(0.5, 1.5, 3, -1), (0, 1, -5, 2), (0, 1, 0, 0.3), (0, 1, 5, -4)],
        lambda x, mu, s, a: stats.skewnorm(a, mu, s).logpdf(x),
        None,
    ),
    "skew_student_t": (
        ["a", "b", "mu", "sigma"],
        [(2, 3, 0.5, 1.5, -1), (2, 3, 0, 1, 100), (2, 3, 0, 1, -100), (1, 1, 0, 1, 0.2), (0.5, 4, 1, 2, 1e4)],
        lambda x, a, b, mu, s: stats.jf_skew_t(a, b, mu, s).logpdf(x),
        lambda x, a, b, mu, s: stats.jf_skew_t(a, b, mu, s).cdf(x),
    ),
    "triangular": (
        ["lower", "c", "upper"],
        [(0, 1, 3, 0.5), (0, 1, 3, 2), (0, 1, 3, -1), (0, 0, 1, 0.5), (0, 1, 1, 0.5), (-5, 0, 5, 4.999)],
        lambda x, lo, c, hi: _triangular(lo, c, hi).logpdf(x),
        lambda x, lo, c, hi: _triangular(lo, c, hi).cdf(x),
    ),
    "truncated_normal": (
        ["mu", "sigma", "lower", "upper"],
        [(0, 1, -1, 2, 0.5), (0, 1, 5, 8, 6), (1, 2, -1, 2, 3), (0, 1, -40, -30, -35)],
        lambda x, mu, s, lo, hi: stats.truncnorm((lo - mu) / s, (hi - mu) / s, mu, s).logpdf(x),
        lambda x, mu, s, lo, hi: stats.truncnorm((lo - mu) / s, (hi - mu) / s, mu, s).cdf(x),
    ),
    "vonmises": (
        ["mu", "kappa"],
        [(0.5, 2, -2), (0, 1e-3, 1), (0, 50, 0.1), (0, 700, 3), (0, 2, 4)],
        _masked(lambda x, mu, k: stats.vonmises(k, mu).logpdf(x), lambda x, mu, k: abs(x) <= np.pi),
        None,
    ),
    "wald": (
        ["mu", "lam", "alpha"],
        [(1, 2, 0, 0.5), (1, 2, 0.5, 1.0), (2, 0.5, 0, 10), (1, 2, 0, 0), (1, 2, 0.5, 0.3), (1, 100, 0, 1.5)],
        lambda x, mu, lam, a: stats.invgauss(mu / lam, loc=a, scale=lam).logpdf(x),
        lambda x, mu, lam, a: stats.invgauss(mu / lam, loc=a, scale=lam).cdf(x),
    ),
    "polya_gamma": (
        ["h", "z"],
        [(1, 0, 0.3), (1, 0, 0.05), (1, 0, 1.0), (2.5, 1.5, 0.3), (0.5, -3, 0.1), (4, 10, 0.4), (1, 50, 0.02)]
        + [(1, 0, 0.0), (1, 0, -1.0), (0.7, 2, 1e-3)],
        _masked(lambda x, h, z: np.log(_polya_gamma_pdf(x, h, z)), lambda x, h, z: x > 0),
        lambda x, h, z: _polya_gamma_cdf(x, h, z),
    ),
    "beta_binomial": (
        ["alpha", "beta", "n"],
        [
            (2, 3, 10, 4),
            (0.5, 0.5, 20, 0),
            (2, 3, 10, 10),
            (2, 3, 10, 11),
            (2, 3, 10, -1),
            (2, 3, 10, 2.5),
            (1e3, 1e3, 1e4, 5e3),
        ],
        lambda x, a, b, n: stats.betabinom(n, a, b).logpmf(x),
        None,
    ),
    "dirac_delta": (
        ["c"],
        [(3, 3), (3, 2), (-0.5, -0.5)],
        lambda x, c: 0.0 if x == c else -inf,
        lambda x, c: float(x >= c),
    ),
    "discrete_weibull": (
        ["q", "beta"],
        [(0.5, 1.5, 1), (0.9, 0.5, 20), (0.5, 1.5, 0), (0.5, 1.5, -1), (0.5, 1.5, 1.5)],
        _masked(lambda x, q, b: np.log(q ** (x**b) - q ** ((x + 1) ** b)), lambda x, q, b: x >= 0 and x == int(x)),
        lambda x, q, b: 1 - q ** ((np.floor(x) + 1) ** b) if x >= 0 else 0.0,
    ),
    "geometric": (
        ["p"],
        [(0.25, 3), (1.0, 1), (1.0, 2), (0.25, 0), (1e-9, 1e6), (0.5, 1.5)],
        lambda x, p: stats.geom(p).logpmf(x),
        lambda x, p: stats.geom(p).cdf(x),
    ),
    "hypergeometric": (
        ["N", "k", "n"],
        [(20, 7, 12, 4), (20, 7, 12, 0), (20, 7, 12, 8), (20, 7, 12, -1), (500, 100, 250, 50)],
        lambda x, N, k, n: stats.hypergeom(N, k, n).logpmf(x),
        None,
    ),
    "zero_inflated_poisson": (
        ["psi", "mu"],
        [(0.7, 2, 0), (0.7, 2, 3), (0, 2, 0), (0, 2, 1), (1, 2, 0), (0.7, 2, -1), (0.7, 2, 1.5)],
        _masked(_zero_inflated(stats.poisson), lambda x, *p: x == int(x)),
        lambda x, psi, mu: (1 - psi) * (x >= 0) + psi * stats.poisson(mu).cdf(x),
    ),
    "zero_inflated_binomial": (
        ["psi", "n", "p"],
        [(0.7, 10, 0.3, 0), (0.7, 10, 0.3, 4), (0.7, 10, 0.3, 11)],
        _zero_inflated(stats.binom),
        lambda x, psi, n, p: (1 - psi) * (x >= 0) + psi * stats.binom(n, p).cdf(x),
    ),
    "zero_inflated_negative_binomial": (
        ["psi", "n", "p"],
        [(0.7, 2.5, 0.4, 0), (0.7, 2.5, 0.4, 5), (0.2, 1e3, 0.999, 1)],
        _zero_inflated(stats.nbinom),
        lambda x, psi, n, p: (1 - psi) * (x >= 0) + psi * stats.nbinom(n, p).cdf(x),
    ),
    "hurdle_poisson": (
        ["psi", "mu"],
        [(0.7, 2, 0), (0.7, 2, 3), (0.7, 1e-3, 1), (0.7, 2, -1)],
        _hurdle(stats.poisson),
        lambda x, psi, mu: 0.0 if x < 0 else 1 - psi * stats.poisson(mu).sf(x) / stats.poisson(mu).sf(0),
    ),
    "hurdle_negative_binomial": (
        ["psi", "n", "p"],
        [(0.7, 2.5, 0.4, 0), (0.7, 2.5, 0.4, 5)],
        _hurdle(stats.nbinom),
        lambda x, psi, n, p: 0.0 if x < 0 else 1 - psi * stats.nbinom(n, p).sf(x) / stats.nbinom(n, p).sf(0),
    ),
    "hurdle_gamma": (
        ["psi", "alpha", "beta"],
        [(0.7, 2, 3, 0), (0.7, 2, 3, 0.5), (0.7, 2, 3, -1)],
        _hurdle(lambda a, b: stats.gamma(a, scale=1 / b)),
        lambda x, psi, a, b: 0.0 if x < 0 else 1 - psi * stats.gamma(a, scale=1 / b).sf(x),
    ),
    "hurdle_lognormal": (
        ["psi", "mu", "sigma"],
        [(0.7, 0, 1, 0), (0.7, 0, 1, 1.5), (0.3, 1, 0.5, 20)],
        _hurdle(lambda mu, s: stats.lognorm(s, scale=np.exp(mu))),
        lambda x, psi, mu, s: 0.0 if x < 0 else 1 - psi * stats.lognorm(s, scale=np.exp(mu)).sf(x),
    ),
}
# PyMC's alternative parameterizations: label -> (name, keyword parameters, rows (values..., x), reference)
ALTERNATIVES = {
    "beta_mu_sigma": (
        "beta",
        ["mu", "sigma"],
        [(0.3, 0.1, 0.2), (0.5, 0.2, 0.9)],
        lambda x, m, s: stats.beta(m * (m * (1 - m) / s**2 - 1), (1 - m) * (m * (1 - m) / s**2 - 1)).logpdf(x),
    ),
    "gamma_mu_sigma": (
        "gamma",
        ["mu", "sigma"],
        [(2.0, 0.5, 1.5), (0.1, 1.0, 0.01)],
        lambda x, m, s: stats.gamma(m**2 / s**2, scale=s**2 / m).logpdf(x),
    ),
    "normal_tau": (
        "normal",
        ["mu", "tau"],
        [(0.5, 4.0, 1.0), (0.0, 1e-4, 30.0)],
        lambda x, m, t: stats.norm(m, t**-0.5).logpdf(x),
    ),
    "negative_binomial_mu_alpha": (
        "negative_binomial",
        ["mu", "alpha"],
        [(3.0, 2.0, 4), (1e3, 0.5, 0)],
        lambda x, m, a: stats.nbinom(a, a / (m + a)).logpmf(x),
    ),
    "bernoulli_logit_p": (
        "bernoulli",
        ["logit_p"],
        [(0.3, 1), (-40.0, 1), (40.0, 0), (40.0, 1), (-800.0, 0)],
        lambda x, lp: -np.logaddexp(0, -lp) if x == 1 else -np.logaddexp(0, lp),
    ),
    "binomial_logit_p": (
        "binomial",
        ["n", "logit_p"],
        [(10, 0.3, 4), (10, -50.0, 0), (10, 50.0, 10), (10, 50.0, 9)],
        lambda x, n, lp: (
            stats.binom(n, special.expit(lp)).logpmf(x)
            if abs(lp) < 30
            else (x * -np.logaddexp(0, -lp) + (n - x) * -np.logaddexp(0, lp) + np.log(special.comb(n, x)))
        ),
    ),
}
INVALID = {  # parameters outside PyMC's domain: NaN, never a number that looks valid
    "asymmetric_laplace": {"kappa": -1.0, "mu": 0.0, "b": 1.0},
    "chi_squared": {"nu": 0.0},
    "ex_gaussian": {"mu": 0.0, "sigma": 1.0, "nu": -1.0},
    "gumbel": {"mu": 0.0, "beta": 0.0},
    "kumaraswamy": {"a": -1.0, "b": 1.0},
    "pareto": {"alpha": 1.0, "m": -1.0},
    "rice": {"nu": -1.0, "sigma": 1.0},
    "triangular": {"lower": 0.0, "c": 2.0, "upper": 1.0},
    "vonmises": {"mu": 0.0, "kappa": -1.0},
    "polya_gamma": {"h": -1.0, "z": 0.0},
    "wald": {"mu": -1.0, "lam": 1.0},
    "beta_binomial": {"alpha": 1.0, "beta": 1.0, "n": 2.5},
    "geometric": {"p": 1.5},
    "discrete_weibull": {"q": 1.5, "beta": 1.0},
    "zero_inflated_poisson": {"psi": 1.5, "mu": 1.0},
    "hurdle_gamma": {"psi": 0.5, "alpha": -1.0, "beta": 1.0},
}

_FUNCTIONS = {}


def _shared(key, build):
    if key not in _FUNCTIONS:
        _FUNCTIONS[key] = build()
    return _FUNCTIONS[key]


def _table_function(backend):
    """One function of every case's parameters and value: [logp (and logcdf, logsf where a cdf is given)]."""
    inputs, outputs = [], []
    for name, (names, rows, _, cdf) in CASES.items():
        case = dg.Dim(f"case_{name}", size=len(rows))
        x = dg.labeled(f"x_{name}", dims=(case,))
        params = [dg.labeled(f"{name}_{p}", dims=(case,)) for p in names]
        dist = getattr(dg.dist, name)(**dict(zip(names, params)))
        inputs += [x, *params]
        outputs += [dist.logp(x)] + ([dist.logcdf(x), dist.logsf(x)] if cdf is not None else [])
    for label, (name, names, rows, _) in ALTERNATIVES.items():
        case = dg.Dim(f"case_{label}", size=len(rows))
        x = dg.labeled(f"x_{label}", dims=(case,))
        params = [dg.labeled(f"{label}_{p}", dims=(case,)) for p in names]
        inputs += [x, *params]
        outputs.append(getattr(dg.dist, name)(**dict(zip(names, params))).logp(x))
    return dg.function(inputs, outputs, backend=backend)


def _columns(rows, n):
    table = np.array(rows, dtype=float).reshape(len(rows), n + 1)
    return [table[:, -1]] + [table[:, j] for j in range(n)]


def test_log_densities_and_tails_match_scipy(backend):
    f = _shared(("table", backend), lambda: _table_function(backend))
    values = [c for names, rows, _, _ in CASES.values() for c in _columns(rows, len(names))]
    values += [c for _, names, rows, _ in ALTERNATIVES.values() for c in _columns(rows, len(names))]
    got = iter(f(*values))
    for name, (names, rows, ref, cdf) in CASES.items():
        with np.errstate(all="ignore"):
            want = np.array([ref(row[-1], *row[:-1]) for row in rows], dtype=float)
        np.testing.assert_allclose(next(got).values, want, rtol=1e-8, atol=1e-10, err_msg=f"{name} logp")
        if cdf is not None:
            with np.errstate(all="ignore"):
                p = np.array([cdf(row[-1], *row[:-1]) for row in rows], dtype=float)
            np.testing.assert_allclose(np.exp(next(got).values), p, rtol=1e-7, atol=1e-12, err_msg=f"{name} logcdf")
            np.testing.assert_allclose(np.exp(next(got).values), 1 - p, rtol=1e-7, atol=1e-12, err_msg=f"{name} logsf")
    for label, (_, _, rows, ref) in ALTERNATIVES.items():
        want = np.array([ref(row[-1], *row[:-1]) for row in rows], dtype=float)
        np.testing.assert_allclose(next(got).values, want, rtol=1e-8, atol=1e-10, err_msg=label)


@pytest.mark.parametrize("name", list(INVALID))
def test_invalid_parameters_give_nan(name):
    value = getattr(dg.dist, name)(**INVALID[name]).logp(1.0).eval(backend="python")
    assert np.isnan(value)


def test_far_tails_keep_their_precision():
    """The tails truncation renormalizes by, where the cdf rounds to 0 or 1 (scipy's logcdf/logsf as reference)."""
    checks = [
        (dg.dist.gumbel(0.0, 1.0).logsf(40.0), stats.gumbel_r.logsf(40.0)),
        (dg.dist.gumbel(0.0, 1.0).logcdf(-3.0), stats.gumbel_r.logcdf(-3.0)),
        (dg.dist.moyal(0.0, 1.0).logcdf(-6.0), stats.moyal.logcdf(-6.0)),
        (dg.dist.logitnormal(0.0, 1.0).logsf(1 - 1e-15), stats.norm.logsf(special.logit(1 - 1e-15))),
        (dg.dist.asymmetric_laplace(2.0, 0.0, 1.0).logsf(30.0), stats.laplace_asymmetric(2.0).logsf(30.0)),
        (dg.dist.ex_gaussian(0.0, 1.0, 1.0).logcdf(-30.0), stats.exponnorm(1.0).logcdf(-30.0)),
        (dg.dist.geometric(0.5).logsf(2000), 2000 * np.log(0.5)),
        (dg.dist.wald(1.0, 2.0).logsf(60.0), stats.invgauss(0.5, scale=2.0).logsf(60.0)),
    ]
    f = dg.function([], [c for c, _ in checks], backend="python")
    for got, (_, want) in zip(f(), checks):
        np.testing.assert_allclose(float(got), want, rtol=1e-9)


# --- gradients: name -> (parameters, x, the parameters to differentiate by (and "x"))
GRADS = {
    "asymmetric_laplace": ([2.0, 0.5, 1.5], 1.2, ["kappa", "mu", "b", "x"]),
    "chi_squared": ([3.0], 2.0, ["nu", "x"]),
    "ex_gaussian": ([0.5, 1.2, 2.0], 1.0, ["mu", "sigma", "nu", "x"]),
    "gumbel": ([0.5, 2.0], 1.0, ["mu", "beta", "x"]),
    "kumaraswamy": ([2.0, 3.0], 0.4, ["a", "b", "x"]),
    "logitnormal": ([0.3, 0.8], 0.4, ["mu", "sigma", "x"]),
    "moyal": ([0.5, 1.5], 1.0, ["mu", "sigma", "x"]),
    "pareto": ([3.0, 2.0], 4.0, ["alpha", "m", "x"]),
    "rice": ([1.0, 2.0], 1.5, ["nu", "sigma", "x"]),
    "skewnormal": ([0.5, 1.5, 3.0], 0.2, ["mu", "sigma", "alpha", "x"]),
    "skew_student_t": ([2.0, 3.0, 0.5, 1.5], -1.0, ["a", "b", "mu", "sigma", "x"]),
    "triangular": ([0.0, 1.0, 3.0], 2.0, ["lower", "c", "upper", "x"]),
    "truncated_normal": ([0.3, 1.5, -1.0, 2.0], 0.5, ["mu", "sigma", "lower", "upper", "x"]),
    "vonmises": ([0.5, 2.0], -0.3, ["mu", "kappa", "x"]),
    "wald": ([1.0, 2.0, 0.2], 0.9, ["mu", "lam", "alpha", "x"]),
    "polya_gamma": ([1.5, 0.8], 0.3, ["h", "z", "x"]),
    "beta_binomial": ([2.0, 3.0, 10.0], 4.0, ["alpha", "beta"]),
    "discrete_weibull": ([0.5, 1.5], 2.0, ["q", "beta"]),
    "geometric": ([0.25], 3.0, ["p"]),
    "zero_inflated_poisson": ([0.7, 2.0], 0.0, ["psi", "mu"]),
    "zero_inflated_binomial": ([0.7, 10.0, 0.3], 3.0, ["psi", "p"]),
    "zero_inflated_negative_binomial": ([0.7, 2.5, 0.4], 0.0, ["psi", "n", "p"]),
    "hurdle_poisson": ([0.7, 2.0], 3.0, ["psi", "mu"]),
    "hurdle_gamma": ([0.7, 2.0, 3.0], 0.5, ["psi", "alpha", "beta", "x"]),
    "hurdle_lognormal": ([0.7, 0.0, 1.0], 1.5, ["psi", "mu", "sigma", "x"]),
}


def _gradient_cases():
    cases = []
    for name, (params, x, wrt) in GRADS.items():
        names = CASES[name][0]
        vs = {p: dg.labeled(f"g_{name}_{p}", dims=()) for p in [*names, "x"]}
        cost = getattr(dg.dist, name)(**{p: vs[p] for p in names}).logp(vs["x"])
        cases.append((name, cost, list(vs.values()), [vs[w] for w in wrt], [*params, x]))
    return cases


def test_logp_gradients_match_finite_differences(backend):
    cases = _shared("gradient cases", _gradient_cases)

    def build():
        inputs = [v for _, _, vs, _, _ in cases for v in vs]
        return dg.function(inputs, [g for _, cost, _, wrt, _ in cases for g in dg.grad(cost, wrt)], backend=backend)

    f = _shared(("gradients", backend), build)
    got = iter(f(*[v for *_, values in cases for v in values]))
    for name, cost, vs, wrt, values in cases:
        cost_fn = _shared(("cost", name), lambda: dg.function(vs, cost, backend="python"))
        for v in wrt:
            k = next(i for i, u in enumerate(vs) if u is v)
            fd = numeric_grad(lambda *vals: float(cost_fn(*vals)), [np.asarray(u, dtype=float) for u in values], k)
            np.testing.assert_allclose(np.asarray(next(got)), fd, rtol=1e-5, atol=1e-7, err_msg=f"{name} d/d{v.name}")


# --- draws: name -> (parameters, the scipy distribution of one draw)
N = dg.Dim("n", size=2000)
CONTINUOUS_DRAWS = {
    "asymmetric_laplace": ({"kappa": 2.0, "mu": 0.5, "b": 1.5}, stats.laplace_asymmetric(2.0, 0.5, 1 / 1.5)),
    "chi_squared": ({"nu": 3.0}, stats.chi2(3.0)),
    "ex_gaussian": ({"mu": 0.5, "sigma": 1.2, "nu": 2.0}, stats.exponnorm(2.0 / 1.2, 0.5, 1.2)),
    "gumbel": ({"mu": 0.5, "beta": 2.0}, stats.gumbel_r(0.5, 2.0)),
    "moyal": ({"mu": 0.5, "sigma": 1.5}, stats.moyal(0.5, 1.5)),
    "pareto": ({"alpha": 3.0, "m": 2.0}, stats.pareto(3.0, scale=2.0)),
    "rice": ({"nu": 1.0, "sigma": 2.0}, stats.rice(0.5, scale=2.0)),
    "skewnormal": ({"mu": 0.5, "sigma": 1.5, "alpha": -3.0}, stats.skewnorm(-3.0, 0.5, 1.5)),
    "skew_student_t": ({"a": 2.0, "b": 3.0, "mu": 0.5, "sigma": 1.5}, stats.jf_skew_t(2.0, 3.0, 0.5, 1.5)),
    "triangular": ({"lower": 0.0, "c": 1.0, "upper": 3.0}, _triangular(0.0, 1.0, 3.0)),
    "truncated_normal": ({"mu": 0.0, "sigma": 1.0, "lower": -1.0, "upper": 2.0}, stats.truncnorm(-1.0, 2.0)),
    "vonmises": ({"mu": 0.0, "kappa": 2.0}, stats.vonmises(2.0)),
    "wald": ({"mu": 1.0, "lam": 2.0, "alpha": 0.5}, stats.invgauss(0.5, loc=0.5, scale=2.0)),
    "kumaraswamy": ({"a": 2.0, "b": 3.0}, stats.beta(1.0, 3.0)),  # X^2 ~ Beta(1, 3) for a = 2: checked on x**2
    "logitnormal": ({"mu": 0.3, "sigma": 0.8}, stats.norm(0.3, 0.8)),  # checked on logit(x)
    "polya_gamma": ({"h": 2.5, "z": 1.5}, _PolyaGammaLaw(2.5, 1.5)),
}
DRAWN_AS = {"kumaraswamy": np.square, "logitnormal": special.logit}
DISCRETE_DRAWS = {
    "beta_binomial": ({"alpha": 2.0, "beta": 3.0, "n": 10}, stats.betabinom(10, 2.0, 3.0)),
    "discrete_weibull": ({"q": 0.5, "beta": 1.5}, None),
    "geometric": ({"p": 0.25}, stats.geom(0.25)),
    "hypergeometric": ({"N": 20, "k": 7, "n": 12}, stats.hypergeom(20, 7, 12)),
    "zero_inflated_poisson": ({"psi": 0.7, "mu": 2.0}, None),
    "zero_inflated_binomial": ({"psi": 0.7, "n": 10, "p": 0.3}, None),
    "zero_inflated_negative_binomial": ({"psi": 0.7, "n": 2.5, "p": 0.4}, None),
    "hurdle_poisson": ({"psi": 0.7, "mu": 2.0}, None),
    "hurdle_negative_binomial": ({"psi": 0.7, "n": 2.5, "p": 0.4}, None),
    "dirac_delta": ({"c": 3}, None),
}
SLOW_ON_JAX = {"hurdle_negative_binomial"}  # 64 chained incomplete-beta bisection steps: XLA compiles for minutes


def _draw_function(backend):
    rng = dg.rng(20261201)
    outs = {}
    for name, (params, _) in {**CONTINUOUS_DRAWS, **DISCRETE_DRAWS}.items():
        if backend == "jax" and name in SLOW_ON_JAX:
            continue
        outs[name] = getattr(rng, name)(**params, extra_dims=(N,))
    outs["hurdle_gamma"] = rng.hurdle_gamma(0.7, 2.0, 3.0, extra_dims=(N,))
    f = dg.function([], list(outs.values()), backend=backend)
    return lambda: dict(zip(outs, f()))


def draws(backend):
    return _shared(("draws", backend), lambda: _draw_function(backend)())


@pytest.mark.parametrize("name", list(CONTINUOUS_DRAWS))
def test_continuous_draws_match_scipy(backend, name):
    x = draws(backend)[name]
    assert x.dims == ("n",) and x.dtype == np.float64
    values = DRAWN_AS.get(name, lambda v: v)(x.values)
    assert stats.kstest(values, CONTINUOUS_DRAWS[name][1].cdf).pvalue > 1e-3


def _pmf(name):
    """The reference pmf on 0..40: scipy's, or the log density's own (checked against scipy above)."""
    params, ref = DISCRETE_DRAWS[name]
    k = np.arange(41)
    if ref is not None:
        return ref.pmf(k)
    d = getattr(dg.dist, name)(**params)
    return np.exp(d.logp(dg.constant(k.astype(float), dims=(dg.Dim("k", size=41),))).eval(backend="python").values)


@pytest.mark.parametrize("name", list(DISCRETE_DRAWS))
def test_discrete_draws_match_their_pmf(backend, name):
    if backend == "jax" and name in SLOW_ON_JAX:
        pytest.skip("its draw compiles for minutes on jax (the same function is checked on the other backends)")
    x = draws(backend)[name]
    assert x.dims == ("n",) and x.dtype == np.int64
    pmf = _pmf(name)
    counts = np.bincount(x.values, minlength=41)[:41]
    assert counts.sum() == N.size  # nothing beyond 40, nothing negative
    expected = pmf * N.size
    keep = expected >= 5
    if keep.sum() < 2:  # a point mass
        np.testing.assert_array_equal(counts > 0, pmf > 0.5)
        return
    obs = np.append(counts[keep], N.size - counts[keep].sum())
    exp = np.append(expected[keep], N.size - expected[keep].sum())
    if exp[-1] < 1e-9:  # nothing left to pool
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp).pvalue > 1e-3


def test_hurdle_gamma_draws_zeros_and_gammas(backend):
    x = draws(backend)["hurdle_gamma"].values
    assert abs((x == 0).mean() - 0.3) < 5 * np.sqrt(0.21 / N.size)
    assert stats.kstest(x[x > 0], stats.gamma(2.0, scale=1 / 3.0).cdf).pvalue > 1e-3


def test_polya_gamma_reference_and_pymc_values():
    """The reference density integrates to 1 with mean h tanh(z/2) / (2z); the log density is PyMC's (6.4.0,
    its polyagamma package's) at two points."""
    for h, z in ((2.5, 1.5), (1.0, 1e-9)):
        mass = integrate.quad(_polya_gamma_pdf, 0, 40, args=(h, z), limit=200)[0]
        mean = integrate.quad(lambda x: x * _polya_gamma_pdf(x, h, z), 0, 40, limit=200)[0]
        np.testing.assert_allclose([mass, mean], [1.0, h * np.tanh(z / 2) / (2 * z)], rtol=1e-9)
    pymc = {(0.3, 1.0, 0.0): 0.3574148512344202, (0.3, 2.5, 1.5): 0.5337693387408879}
    got = dg.function([], [dg.dist.polya_gamma(h, z).logp(x) for x, h, z in pymc], backend="python")()
    np.testing.assert_allclose([float(g) for g in got], list(pymc.values()), rtol=1e-12)


def test_polya_gamma_draws_have_its_moments(backend):
    """Mean h tanh(z/2) / (2z) and variance h (sinh z - z) / (4 z^3 cosh^2(z/2)): the tail's stand-in keeps both."""
    x = draws(backend)["polya_gamma"].values
    h, z = 2.5, 1.5
    mean, var = h * np.tanh(z / 2) / (2 * z), h * (np.sinh(z) - z) / (4 * z**3 * np.cosh(z / 2) ** 2)
    assert abs(x.mean() - mean) < 5 * np.sqrt(var / N.size)
    assert abs(x.var() / var - 1) < 0.2


def test_improper_densities_have_no_draws():
    with pytest.raises(TypeError, match="flat: an improper density has no draws"):
        dg.dist.flat().draw(dg.rng_state("s"))
    with pytest.raises(TypeError, match="halfflat"):
        dg.rng(0).halfflat()


def test_labeled_parameters_broadcast_by_name(backend):
    """Parameters on different dims broadcast by name, in logp and in draws (the result on both dims)."""
    a, b = dg.Dim("a", size=2), dg.Dim("b", size=3)
    psi = dg.constant(np.array([0.2, 0.9]), dims=(a,))
    mu = dg.constant(np.array([0.5, 1.0, 4.0]), dims=(b,))
    zip_ = dg.dist.zero_inflated_poisson(psi, mu)
    gum = dg.dist.gumbel(mu, psi + 1.0)
    lp_zip, lp_gum, draw = dg.function(
        [], [zip_.logp(0), gum.logp(1.0), dg.rng(3).zero_inflated_poisson(psi, mu)], backend=backend
    )()
    assert lp_zip.dims == ("a", "b") and lp_gum.dims == ("b", "a") and draw.dims == ("a", "b")
    want = np.log((1 - psi.data[:, None]) + psi.data[:, None] * np.exp(-mu.data[None, :]))
    np.testing.assert_allclose(lp_zip.values, want, rtol=1e-12)
    np.testing.assert_allclose(
        lp_gum.values, stats.gumbel_r(mu.data[:, None], psi.data[None, :] + 1).logpdf(1.0), rtol=1e-12
    )


def test_ordered_logistic_and_probit(backend):
    """log P(Y = k) for every outcome (cutpoints on their own dim, eta on another), against the closed form,
    and draws against those probabilities."""
    cut, obs = dg.Dim("cut", size=3), dg.Dim("obs", size=5)
    c = np.array([-1.0, 0.3, 1.5])
    eta = dg.labeled("eta", dims=(obs,))
    y = dg.labeled("y", dims=(obs,), dtype="int64")
    cutpoints = dg.labeled("cutpoints", dims=(cut,))
    logistic = dg.dist.ordered_logistic(eta, cutpoints, dim=cut)
    probit = dg.dist.ordered_probit(eta, cutpoints, 2.0, dim="cut")
    big = dg.Dim("big", size=3000)
    rng = dg.rng(7)
    draws_ = [
        rng.ordered_logistic(0.4, cutpoints, dim=cut, extra_dims=(big,)),
        rng.ordered_probit(0.4, cutpoints, 2.0, dim=cut, extra_dims=(big,)),
    ]
    f = _shared(
        ("ordered", backend),
        lambda: dg.function([eta, y, cutpoints], [logistic.logp(y), probit.logp(y), *draws_], backend=backend),
    )
    etas, ys = np.array([0.5, -2.0, 3.0, 40.0, 0.0]), np.array([0, 1, 2, 3, 4])
    lp_logistic, lp_probit, d_logistic, d_probit = f(etas, ys, c)
    edges = np.concatenate([[-inf], c, [inf]])

    def closed(cdf, e, k):
        return np.log(cdf(edges[k + 1] - e) - cdf(edges[k] - e)) if 0 <= k <= 3 else -inf

    expit = special.expit
    np.testing.assert_allclose(
        lp_logistic.values, [closed(expit, e, k) for e, k in zip(etas, ys)], rtol=1e-9, atol=1e-15
    )
    np.testing.assert_allclose(
        lp_probit.values,
        [closed(lambda z: stats.norm.cdf(z / 2), e, k) for e, k in zip(etas, ys)],
        rtol=1e-9,
        atol=1e-15,
    )
    for d, cdf in ((d_logistic, expit), (d_probit, lambda z: stats.norm.cdf(z / 2))):
        assert d.dims == ("big",)
        p = np.diff(cdf(edges - 0.4))
        counts = np.bincount(d.values, minlength=4)
        assert stats.chisquare(counts, p * big.size).pvalue > 1e-3


def test_ordered_needs_its_dim_and_increasing_cutpoints():
    cut = dg.Dim("cut", size=2)
    c = dg.constant(np.array([1.0, -1.0]), dims=(cut,))
    with pytest.raises(TypeError, match="ordered_logistic: give the dim of the cutpoints as dim="):
        dg.dist.ordered_logistic(0.0, c)
    assert np.isnan(dg.dist.ordered_logistic(0.0, c, dim=cut).logp(1).eval(backend="python"))


def test_alternative_parameterizations_need_one_of_them():
    with pytest.raises(TypeError, match="beta: give alpha and beta, or mu and sigma"):
        dg.dist.beta(alpha=1.0, sigma=0.2)
    with pytest.raises(TypeError, match="normal: give sigma or tau, not both"):
        dg.dist.normal(0.0, sigma=1.0, tau=1.0)
    with pytest.raises(TypeError, match="bernoulli: give p or logit_p, not both"):
        dg.dist.bernoulli(p=0.5, logit_p=0.0)
