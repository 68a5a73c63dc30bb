"""Continuous univariate distributions: normal and its relatives, scales, rates, shapes and the unit interval.

Each class registers its `dg.dist` name, states its support, and gives its log
density (`log_density` + `normalizer`), draws (`sample`) and, where the cdf is
elementary or an incomplete gamma/beta function, `log_cdf`/`log_sf` and the
quantiles of a log probability (`icdf_exp`/`isf_exp`) that draw its
truncations. The half distributions reuse their full versions' terms, so a
numerical fix there reaches them too.
"""

from __future__ import annotations

import math

import numpy as np

from dimgraph.errors import NoDrawsError
from dimgraph.labeled import math as lmath
from dimgraph.labeled.dims import Dim, resolve_dims
from dimgraph.labeled.math import xlog1py
from dimgraph.labeled.random import primitive_draw
from dimgraph.labeled.shape import arange
from dimgraph.prob import constraints
from dimgraph.prob.base import Distribution, _abs, _check_option, _finite, _invalid_to_nan, _loggamma
from dimgraph.prob.registry import register
from dimgraph.prob.tails import (
    bisect,
    gamma_quantile_exp,
    log_diff_exp,
    log_ndtr,
    log_regularized_beta,
    log_regularized_gamma,
    ndtri_exp,
    student_t_abs_tails,
)

_LOG_2PI = math.log(2 * math.pi)
_LOG2, _LOG_PI, _SQRT1_2 = math.log(2.0), math.log(math.pi), math.sqrt(0.5)


def _log1p_square(d, *scales):
    """log1p(q^2) with q = d / prod(scales), that cannot overflow: for |q| > 1 it is 2 log|q| + log1p(1 / q^2),
    with log|q| from the logs of |d| and the scales (cauchy(0, 1e-300).logp(1e-10) squared q = 1e290 to inf)."""
    q = _abs(d)
    for s in scales:
        q = q / s
    big = q > 1
    log_q = lmath.log(lmath.where(big, _abs(d), 1.0)) - sum(lmath.log(s) for s in scales)
    u = lmath.where(big, 1.0 / lmath.where(big, q, 1.0), q)  # min(|q|, 1 / |q|)
    return lmath.log1p(u * u) + lmath.where(big, 2 * log_q, 0.0)


_STIRLING_FROM = 20.0  # the shape from which gammaln(a) is taken from Stirling's series (its tail below 2e-15)


def _log_gamma_kernel(a, y, log_y):
    """a log(y) - y - gammaln(a), `y` given both as computed (it may have over- or underflowed) and as its log.

    Written as -a (r - 1 - log r) + c(a), r = y / a, c(a) = a log a - a - gammaln(a), so nothing of size
    a log a cancels (the plain sum keeps no digit of gamma(1e100, 1).logp(1e100) = -116.05): c(a) is
    log(a) / 2 - log(2 pi) / 2 - tail(a) by Stirling's series from a = 20 on, and r - 1 - log r is
    t - log1p(t), t = r - 1, near r = 1. c(a) lives on the parameters' dims, and no branch is taken per element
    but the one near r = 1.
    """
    big = a >= _STIRLING_FROM
    a_s, a_p = lmath.where(big, a, _STIRLING_FROM), lmath.where(big, 1.0, a)
    inv = 1.0 / a_s
    inv2 = inv * inv
    tail = inv * (1.0 / 12 - inv2 * (1.0 / 360 - inv2 * (1.0 / 1260 - inv2 * (1.0 / 1680))))
    stirling = 0.5 * lmath.log(a_s) - 0.5 * _LOG_2PI - tail
    c = lmath.where(big, stirling, a_p * lmath.log(a_p) - a_p - lmath.gammaln(a_p))
    r = y / a
    log_r = log_y - lmath.log(a)
    near = _abs(r - 1) < 0.5
    t = lmath.where(near, r, 1.5) - 1
    a_deviance = lmath.where(near, a * (t - lmath.log1p(t)), y - a - a * log_r)  # a (r - 1 - log r) >= 0
    return c - a_deviance


@register("normal")
class Normal(Distribution):
    names, defaults = ("mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    support = constraints.real
    positive = ("sigma",)
    alternatives = ((("tau",), ("sigma",), lambda tau: {"sigma": tau**-0.5}),)  # tau: the precision

    def log_density(self, x, mu, sigma):
        z = (x - mu) / _finite(sigma)  # sigma = inf: the normalizer's -inf is the limit, for any mu
        return -0.5 * z * z

    def normalizer(self, mu, sigma):
        return -lmath.log(sigma) - 0.5 * _LOG_2PI

    def sample(self, state, dims, mu, sigma):
        state, z = primitive_draw("normal", state, dims=dims)
        return state, z * sigma + mu

    def log_cdf(self, x, mu, sigma):
        return log_ndtr((x - mu) / sigma)

    def log_sf(self, x, mu, sigma):
        return log_ndtr((mu - x) / sigma)

    def icdf_exp(self, lp, mu, sigma):
        return mu + sigma * ndtri_exp(lp)

    def isf_exp(self, lq, mu, sigma):
        return mu - sigma * ndtri_exp(lq)


@register("halfnormal")
class HalfNormal(Distribution):
    names, defaults = ("sigma",), {"sigma": 1.0}
    support = constraints.nonnegative
    positive = ("sigma",)

    def log_density(self, x, sigma):
        z = x / sigma
        return -0.5 * z * z

    def normalizer(self, sigma):
        return 0.5 * math.log(2 / math.pi) - lmath.log(sigma)

    def sample(self, state, dims, sigma):
        state, z = primitive_draw("normal", state, dims=dims)
        return state, _abs(z) * sigma

    def log_cdf(self, x, sigma):
        z = lmath.maximum(x, 0.0) / sigma  # P(X <= x) = erf(z / sqrt 2); near 1 it is 1 - P(X > x)
        small = z < 1
        near = lmath.log(lmath.elemwise("erf", lmath.where(small, z, 0.5) * _SQRT1_2))
        far = lmath.log1mexp(_LOG2 + log_ndtr(-lmath.where(small, 1.0, z)))
        return lmath.where(small, near, far)

    def log_sf(self, x, sigma):
        return _LOG2 + log_ndtr(-lmath.maximum(x, 0.0) / sigma)

    def icdf_exp(self, lp, sigma):
        return self.isf_exp(lmath.log1mexp(lp), sigma)

    def isf_exp(self, lq, sigma):
        return -sigma * ndtri_exp(lq - _LOG2)


@register("lognormal")
class LogNormal(Distribution):
    names, defaults = ("mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    support = constraints.positive
    safe_value = 1.0
    positive = ("sigma",)

    def log_density(self, x, mu, sigma):
        lx = lmath.log(x)
        z = (lx - mu) / _finite(sigma)  # sigma = inf: the normalizer's -inf is the limit, for any mu
        return -0.5 * z * z - lx

    def normalizer(self, mu, sigma):
        return -lmath.log(sigma) - 0.5 * _LOG_2PI

    def sample(self, state, dims, mu, sigma):
        state, z = primitive_draw("normal", state, dims=dims)
        return state, lmath.exp(z * sigma + mu)

    def log_cdf(self, x, mu, sigma):
        return log_ndtr((lmath.log(lmath.maximum(x, 0.0)) - mu) / sigma)

    def log_sf(self, x, mu, sigma):
        return log_ndtr((mu - lmath.log(lmath.maximum(x, 0.0))) / sigma)

    def icdf_exp(self, lp, mu, sigma):
        return lmath.exp(mu + sigma * ndtri_exp(lp))

    def isf_exp(self, lq, mu, sigma):
        return lmath.exp(mu - sigma * ndtri_exp(lq))


@register("student_t")
class StudentT(Distribution):
    names, defaults = ("nu", "mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    support = constraints.real
    positive = ("nu", "sigma")

    def log_density(self, x, nu, mu, sigma):
        # nu = inf: the normal's -z^2 / 2, as the normal computes it (no stand-in nu is the limit for every z:
        # 1e150 gave -5.8e151 for -5e199 at z = 1e100); the t branch sees nu = 1e150 there, so neither it
        # nor its gradient is NaN. sigma = inf: the normalizer's -inf is the limit.
        nu_f, sigma_f = _finite(nu, 1e150), _finite(sigma)
        t = -(nu_f + 1) / 2 * _log1p_square(x - mu, sigma_f, lmath.sqrt(nu_f))  # log1p(z^2 / nu)
        z = (x - mu) / sigma_f
        return lmath.where(lmath.isinf(nu), -0.5 * z * z, t)

    def normalizer(self, nu, mu, sigma):
        # gammaln((nu + 1) / 2) - gammaln(nu / 2) = log(pi) / 2 - betaln(nu / 2, 1 / 2): no cancellation for large nu
        nu_f = _finite(nu)
        t = -lmath.betaln(nu_f / 2, 0.5) - 0.5 * lmath.log(nu_f)
        return lmath.where(lmath.isinf(nu), -0.5 * _LOG_2PI, t) - lmath.log(sigma)

    def sample(self, state, dims, nu, mu, sigma):
        state, z = primitive_draw("normal", state, dims=dims)
        state, g = primitive_draw("gamma", state, nu / 2, dims=dims)  # chi2(nu) / 2
        return state, z * lmath.sqrt(nu / (2 * g)) * sigma + mu

    # the incomplete beta function's tail (no derivative in nu); nu = inf: the normal's
    def log_cdf(self, x, nu, mu, sigma):
        return _t_log_tail(-(x - mu) / sigma, nu)

    def log_sf(self, x, nu, mu, sigma):
        return _t_log_tail((x - mu) / sigma, nu)

    # by bisection on asinh(z), which brackets every double z in [-720, 720]
    def icdf_exp(self, lp, nu, mu, sigma):
        return mu + sigma * lmath.sinh(bisect(lambda s: _t_log_tail(-lmath.sinh(s), nu) >= lp, -720.0 + 0 * lp, 720.0))

    def isf_exp(self, lq, nu, mu, sigma):
        return mu + sigma * lmath.sinh(bisect(lambda s: _t_log_tail(lmath.sinh(s), nu) <= lq, -720.0 + 0 * lq, 720.0))


def _t_log_tail(z, nu):
    """log P(T > z) for Student's t (nu = inf: the normal's log_ndtr(-z))."""
    tail = 0.5 * student_t_abs_tails(abs(z), _finite(nu))[0]
    t = lmath.where(z > 0, lmath.log(tail), lmath.log1p(-tail))
    return lmath.where(lmath.isinf(nu), log_ndtr(-z), t)


@register("cauchy")
class Cauchy(Distribution):
    names, defaults = ("alpha", "beta"), {"alpha": 0.0, "beta": 1.0}
    support = constraints.real
    positive = ("beta",)

    def log_density(self, x, alpha, beta):
        return -_log1p_square(x - alpha, _finite(beta))  # beta = inf: the normalizer's -inf is the limit

    def normalizer(self, alpha, beta):
        return -math.log(math.pi) - lmath.log(beta)

    def sample(self, state, dims, alpha, beta):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, lmath.tan(math.pi * (u - 0.5)) * beta + alpha

    # P(X <= x) = atan2(1, -z) / pi: no cancellation in either tail
    def log_cdf(self, x, alpha, beta):
        return lmath.log(lmath.elemwise("arctan2", 1.0, (alpha - x) / beta)) - _LOG_PI

    def log_sf(self, x, alpha, beta):
        return lmath.log(lmath.elemwise("arctan2", 1.0, (x - alpha) / beta)) - _LOG_PI

    def icdf_exp(self, lp, alpha, beta):
        return alpha - beta / lmath.tan(math.pi * lmath.exp(lp))

    def isf_exp(self, lq, alpha, beta):
        return alpha + beta / lmath.tan(math.pi * lmath.exp(lq))


@register("uniform")
class Uniform(Distribution):
    names, defaults = ("lower", "upper"), {"lower": 0.0, "upper": 1.0}

    @property
    def support(self):
        return constraints.interval(self.params["lower"], self.params["upper"])

    def valid(self, lower, upper):
        return lower < upper

    def log_density(self, x, lower, upper):
        return -lmath.log(upper - lower) + 0 * _finite(x)  # on x's dims; an infinite bound gives -inf, x = inf too

    def sample(self, state, dims, lower, upper):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, u * (upper - lower) + lower

    def log_cdf(self, x, lower, upper):
        return lmath.log(lmath.clip((x - lower) / (upper - lower), 0.0, 1.0))

    def log_sf(self, x, lower, upper):
        return lmath.log(lmath.clip((upper - x) / (upper - lower), 0.0, 1.0))

    def icdf_exp(self, lp, lower, upper):
        return lower + lmath.exp(lp) * (upper - lower)

    def isf_exp(self, lq, lower, upper):
        return upper - lmath.exp(lq) * (upper - lower)


@register("exponential")
class Exponential(Distribution):
    names, defaults = ("lam",), {"lam": 1.0}
    support = constraints.nonnegative
    positive = ("lam",)

    def log_density(self, x, lam):
        lam_f = _finite(lam)
        limit = lmath.where(x > 0, -np.inf, np.inf)  # lam = inf: all the mass at 0
        return lmath.where(lmath.isinf(lam), limit, lmath.log(lam_f) - lam_f * x)

    def sample(self, state, dims, lam):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, -lmath.log1p(-u) / lam

    def log_cdf(self, x, lam):
        return lmath.log1mexp(-lam * lmath.maximum(x, 0.0))

    def log_sf(self, x, lam):
        return -lam * lmath.maximum(x, 0.0)

    def icdf_exp(self, lp, lam):
        return -lmath.log1mexp(lp) / lam

    def isf_exp(self, lq, lam):
        return -lq / lam


@register("gamma")
class Gamma(Distribution):
    """Shape `alpha`, rate `beta` (PyMC); scipy's `gamma(alpha, scale=1/beta)`."""

    names, defaults = ("alpha", "beta"), {"beta": 1.0}
    support = constraints.nonnegative
    safe_value = 1.0
    positive = ("alpha", "beta")
    # mean and standard deviation: alpha = mu^2 / sigma^2, beta = mu / sigma^2
    alternatives = (
        (("mu", "sigma"), ("alpha", "beta"), lambda mu, sigma: {"alpha": (mu / sigma) ** 2, "beta": mu / sigma**2}),
    )

    def log_density(self, x, alpha, beta):
        a, b = _finite(alpha), _finite(beta)
        positive = x > 0
        log_x = lmath.log(lmath.where(positive, x, 1.0))
        # x > 0 and alpha = inf: the mass leaves every x; beta = inf: it goes to 0; both: it depends on alpha / beta
        inf_alpha, inf_beta = lmath.isinf(alpha), lmath.isinf(beta)
        limit = lmath.where(inf_alpha & inf_beta, np.nan, lmath.where(inf_alpha | inf_beta, -np.inf, 0.0))
        density = _log_gamma_kernel(a, b * x, lmath.log(b) + log_x) - log_x + limit
        # x = 0: the density there is 0 (alpha > 1, alpha = inf too), beta (alpha = 1) or unbounded (alpha < 1)
        at_zero = lmath.where(alpha > 1, -np.inf, lmath.where(alpha == 1, lmath.log(beta), np.inf))
        return lmath.where(positive, density, at_zero)

    def sample(self, state, dims, alpha, beta):
        state, g = primitive_draw("gamma", state, alpha, dims=dims)
        return state, g / beta

    def log_cdf(self, x, alpha, beta):  # no derivative in alpha (gammainc has none)
        return log_regularized_gamma(alpha, beta * lmath.maximum(x, 0.0), upper=False)

    def log_sf(self, x, alpha, beta):
        return log_regularized_gamma(alpha, beta * lmath.maximum(x, 0.0), upper=True)

    def icdf_exp(self, lp, alpha, beta):
        return gamma_quantile_exp(lp, alpha) / beta

    def isf_exp(self, lq, alpha, beta):
        return gamma_quantile_exp(lq, alpha, upper=True) / beta


@register("invgamma")
class InverseGamma(Distribution):
    """Shape `alpha`, scale `beta` (PyMC); scipy's `invgamma(alpha, scale=beta)`."""

    names, defaults = ("alpha", "beta"), {"beta": 1.0}
    support = constraints.positive
    safe_value = 1.0
    positive = ("alpha", "beta")

    def log_density(self, x, alpha, beta):
        a, b = _finite(alpha), _finite(beta)
        log_x = lmath.log(x)
        return _log_gamma_kernel(a, b / x, lmath.log(b) - log_x) - log_x

    def normalizer(self, alpha, beta):
        # alpha = inf: the mass goes to 0; beta = inf: to inf; both: it depends on alpha / beta
        inf_alpha, inf_beta = lmath.isinf(alpha), lmath.isinf(beta)
        return lmath.where(inf_alpha & inf_beta, np.nan, lmath.where(inf_alpha | inf_beta, -np.inf, 0.0))

    def sample(self, state, dims, alpha, beta):
        state, g = primitive_draw("gamma", state, alpha, dims=dims)
        return state, 1.0 / g * beta

    def log_cdf(self, x, alpha, beta):  # P(X <= x) = Q(alpha, beta / x); no derivative in alpha
        return log_regularized_gamma(alpha, beta / lmath.maximum(x, 0.0), upper=True)

    def log_sf(self, x, alpha, beta):
        return log_regularized_gamma(alpha, beta / lmath.maximum(x, 0.0), upper=False)

    def icdf_exp(self, lp, alpha, beta):  # X <= x where the gamma draw beta / X >= beta / x
        return beta / gamma_quantile_exp(lp, alpha, upper=True)

    def isf_exp(self, lq, alpha, beta):
        return beta / gamma_quantile_exp(lq, alpha)


def _beta_from_moments(mu, sigma):
    """Beta's shapes from its mean and standard deviation: kappa = mu (1 - mu) / sigma^2 - 1 (NaN where sigma^2 >=
    mu (1 - mu): no beta has them)."""
    kappa = mu * (1 - mu) / (sigma * sigma) - 1
    kappa = lmath.where(kappa > 0, kappa, np.nan)
    return {"alpha": mu * kappa, "beta": (1 - mu) * kappa}


@register("beta")
class Beta(Distribution):
    names = ("alpha", "beta")
    support = constraints.unit_interval
    positive = ("alpha", "beta")
    alternatives = ((("mu", "sigma"), ("alpha", "beta"), lambda mu, sigma: _beta_from_moments(mu, sigma)),)

    def log_density(self, x, alpha, beta):
        a, b = _finite(alpha), _finite(beta)
        density = lmath.xlogy(a - 1, x) + xlog1py(b - 1, -x) - lmath.betaln(a, b)
        # alpha = inf: all the mass at 1, where the density grows without bound for beta <= 1 (beta = inf: at 0);
        # both: the mass goes where alpha / beta says (NaN inside, -inf at 0 and 1)
        limit_alpha = lmath.where(x == 1, lmath.where(beta <= 1, np.inf, -np.inf), -np.inf)
        limit_beta = lmath.where(x == 0, lmath.where(alpha <= 1, np.inf, -np.inf), -np.inf)
        limit_both = lmath.where((x > 0) & (x < 1), np.nan, -np.inf)
        inf_a, inf_b = lmath.isinf(alpha), lmath.isinf(beta)
        limit = lmath.where(inf_a & inf_b, limit_both, lmath.where(inf_a, limit_alpha, limit_beta))
        return lmath.where(inf_a | inf_b, limit, density)

    def sample(self, state, dims, alpha, beta):
        # X / (X + Y) = sigmoid(log X - log Y), from log-gammas: no 0/0 for tiny shapes
        state, lx = _loggamma(state, alpha, dims)
        state, ly = _loggamma(state, beta, dims)
        return state, lmath.sigmoid(lx - ly)

    # I_x(alpha, beta) and its complement (no derivative in alpha, beta)
    def log_cdf(self, x, alpha, beta):
        return log_regularized_beta(alpha, beta, lmath.clip(x, 0.0, 1.0))

    def log_sf(self, x, alpha, beta):
        return log_regularized_beta(alpha, beta, lmath.clip(x, 0.0, 1.0), upper=True)

    # by bisection on logit(x), which brackets every double x in (0, 1) in [-750, 40]
    def icdf_exp(self, lp, alpha, beta):
        return lmath.sigmoid(bisect(lambda t: self.log_cdf(lmath.sigmoid(t), alpha, beta) >= lp, -750.0 + 0 * lp, 40.0))

    def isf_exp(self, lq, alpha, beta):
        return lmath.sigmoid(bisect(lambda t: self.log_sf(lmath.sigmoid(t), alpha, beta) <= lq, -750.0 + 0 * lq, 40.0))


@register("halfcauchy")
class HalfCauchy(Distribution):
    """|X| for X ~ Cauchy(0, beta): a heavy-tailed prior for scales (PyMC's `HalfCauchy(beta)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.halfcauchy(2.0).logp(1.0).eval(backend="python")), 6)  # scipy.stats.halfcauchy(scale=2)
    -1.367873
    """

    names, defaults = ("beta",), {"beta": 1.0}
    support = constraints.nonnegative
    positive = ("beta",)

    def log_density(self, x, beta):
        return Cauchy.log_density(self, x, 0.0, beta)

    def normalizer(self, beta):
        return Cauchy.normalizer(self, 0.0, beta) + _LOG2

    def sample(self, state, dims, beta):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, lmath.tan(0.5 * math.pi * u) * beta

    # P(X <= x) = 2 atan(x / beta) / pi, P(X > x) = 2 atan(beta / x) / pi: no cancellation in either tail
    def log_cdf(self, x, beta):
        return lmath.log(lmath.arctan(lmath.maximum(x, 0.0) / beta)) + (_LOG2 - _LOG_PI)

    def log_sf(self, x, beta):
        return lmath.log(lmath.elemwise("arctan2", 1.0, lmath.maximum(x, 0.0) / beta)) + (_LOG2 - _LOG_PI)

    def icdf_exp(self, lp, beta):
        return beta * lmath.tan(0.5 * math.pi * lmath.exp(lp))

    def isf_exp(self, lq, beta):
        return beta / lmath.tan(0.5 * math.pi * lmath.exp(lq))


@register("halfstudent_t")
class HalfStudentT(Distribution):
    """|X| for X ~ StudentT(nu, 0, sigma) (PyMC's `HalfStudentT(nu, sigma)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.halfstudent_t(3.0, 1.0).logp(0.5).eval(backend="python")), 6)  # log 2 + t(3).logpdf(0.5)
    -0.467827
    """

    names, defaults = ("nu", "sigma"), {"sigma": 1.0}
    support = constraints.nonnegative
    positive = ("nu", "sigma")

    def log_density(self, x, nu, sigma):
        return StudentT.log_density(self, x, nu, 0.0, sigma)

    def normalizer(self, nu, sigma):
        return StudentT.normalizer(self, nu, 0.0, sigma) + _LOG2

    def sample(self, state, dims, nu, sigma):
        state, z = primitive_draw("normal", state, dims=dims)
        state, g = primitive_draw("gamma", state, nu / 2, dims=dims)  # chi2(nu) / 2
        return state, lmath.elemwise("abs", z) * lmath.sqrt(nu / (2 * g)) * sigma

    # P(X > x) = I_w(nu/2, 1/2), no derivative in nu; nu = inf: the half-normal's
    def log_cdf(self, x, nu, sigma):
        outside, inside = student_t_abs_tails(lmath.maximum(x, 0.0) / sigma, _finite(nu))
        t = lmath.where(x <= 0, -math.inf, lmath.where(inside < 0.5, lmath.log(inside), lmath.log1p(-outside)))
        return lmath.where(lmath.isinf(nu), HalfNormal.log_cdf(self, x, sigma), t)

    def log_sf(self, x, nu, sigma):
        outside, inside = student_t_abs_tails(lmath.maximum(x, 0.0) / sigma, _finite(nu))
        t = lmath.where(outside < 0.5, lmath.log(outside), lmath.log1p(-inside))
        return lmath.where(lmath.isinf(nu), HalfNormal.log_sf(self, x, sigma), t)

    # by bisection on asinh(x / sigma), which brackets every double in [0, 720]
    def icdf_exp(self, lp, nu, sigma):
        return sigma * lmath.sinh(bisect(lambda s: self.log_cdf(lmath.sinh(s), nu, 1.0) >= lp, 0 * lp, 720.0))

    def isf_exp(self, lq, nu, sigma):
        return sigma * lmath.sinh(bisect(lambda s: self.log_sf(lmath.sinh(s), nu, 1.0) <= lq, 0 * lq, 720.0))


@register("weibull")
class Weibull(Distribution):
    """Shape `alpha`, scale `beta` (PyMC); scipy's `weibull_min(alpha, scale=beta)`.

    >>> import dimgraph as dg
    >>> round(float(dg.dist.weibull(1.5, 2.0).logp(1.0).eval(backend="python")), 6)
    -0.987809
    """

    names = ("alpha", "beta")
    support = constraints.nonnegative
    safe_value = 1.0
    positive = ("alpha", "beta")

    def log_density(self, x, alpha, beta):
        return lmath.xlogy(alpha - 1, x) - (x / beta) ** alpha

    def normalizer(self, alpha, beta):
        return lmath.log(alpha) - alpha * lmath.log(beta)

    def sample(self, state, dims, alpha, beta):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, beta * (-lmath.log1p(-u)) ** (1.0 / alpha)

    def log_cdf(self, x, alpha, beta):
        return lmath.log1mexp(-((lmath.maximum(x, 0.0) / beta) ** alpha))

    def log_sf(self, x, alpha, beta):
        return -((lmath.maximum(x, 0.0) / beta) ** alpha)

    def icdf_exp(self, lp, alpha, beta):
        return beta * (-lmath.log1mexp(lp)) ** (1.0 / alpha)

    def isf_exp(self, lq, alpha, beta):
        return beta * (-lq) ** (1.0 / alpha)


def _laplace_quantile(lp, mu, b):
    """The Laplace quantile of exp(lp): mu + b log(2p) below the median, mu - b log(2(1 - p)) above."""
    upper = lp > -_LOG2
    below = mu + b * (lmath.where(upper, -_LOG2, lp) + _LOG2)
    above = mu - b * (lmath.log1mexp(lmath.where(upper, lp, -_LOG2)) + _LOG2)
    return lmath.where(upper, above, below)


@register("laplace")
class Laplace(Distribution):
    """Location `mu`, scale `b` (PyMC); scipy's `laplace(mu, b)`.

    >>> import dimgraph as dg
    >>> round(float(dg.dist.laplace(0.0, 2.0).logp(1.0).eval(backend="python")), 6)
    -1.886294
    """

    names, defaults = ("mu", "b"), {"mu": 0.0, "b": 1.0}
    support = constraints.real
    positive = ("b",)

    def log_density(self, x, mu, b):
        return -lmath.elemwise("abs", x - mu) / b

    def normalizer(self, mu, b):
        return -lmath.log(2 * b)

    def sample(self, state, dims, mu, b):
        state, u = primitive_draw("uniform", state, dims=dims)
        state, v = primitive_draw("uniform", state, dims=dims)
        return state, (lmath.log1p(-v) - lmath.log1p(-u)) * b + mu  # the difference of two Exponential(1)

    def log_cdf(self, x, mu, b):
        z = (x - mu) / b
        below = z < 0
        return lmath.where(below, lmath.minimum(z, 0.0) - _LOG2, lmath.log1p(-0.5 * lmath.exp(-lmath.maximum(z, 0.0))))

    def log_sf(self, x, mu, b):
        return self.log_cdf(2 * mu - x, mu, b)

    def icdf_exp(self, lp, mu, b):
        return _laplace_quantile(lp, mu, b)

    def isf_exp(self, lq, mu, b):
        return 2 * mu - _laplace_quantile(lq, mu, b)


@register("logistic")
class Logistic(Distribution):
    """Location `mu`, scale `s` (PyMC); scipy's `logistic(mu, s)`.

    >>> import dimgraph as dg
    >>> round(float(dg.dist.logistic(0.0, 2.0).logp(1.0).eval(backend="python")), 6)
    -2.141301
    """

    names, defaults = ("mu", "s"), {"mu": 0.0, "s": 1.0}
    support = constraints.real
    positive = ("s",)

    def log_density(self, x, mu, s):
        z = (x - mu) / s
        return -z - 2 * lmath.softplus(-z)

    def normalizer(self, mu, s):
        return -lmath.log(s)

    def sample(self, state, dims, mu, s):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, (lmath.log(u) - lmath.log1p(-u)) * s + mu

    def log_cdf(self, x, mu, s):
        return -lmath.softplus((mu - x) / s)

    def log_sf(self, x, mu, s):
        return -lmath.softplus((x - mu) / s)

    def icdf_exp(self, lp, mu, s):
        return mu + s * (lp - lmath.log1mexp(lp))

    def isf_exp(self, lq, mu, s):
        return mu + s * (lmath.log1mexp(lq) - lq)


_LOG_HALF = math.log(0.5)
_BESSEL_SERIES_UP_TO = 15.0


def log_i0(x):
    """log I0(|x|), the modified Bessel function of the first kind and order 0, to about 1e-15.

    Below 15 the power series sum q^k / (k!)^2, q = x^2 / 4 (42 terms, by Horner's rule); above it Hankel's
    asymptotic series e^x / sqrt(2 pi x) sum ((2k - 1)!!)^2 / (k! (8x)^k) (30 terms).
    """
    x = lmath.elemwise("abs", x)
    small = x < _BESSEL_SERIES_UP_TO
    xs = lmath.where(small, x, 0.0)
    series = _horner(_I0_SERIES, xs * xs / 4)
    xl = lmath.where(small, _BESSEL_SERIES_UP_TO, x)
    large = xl - 0.5 * lmath.log(2 * math.pi * xl) + lmath.log(_horner(_I0_ASYMPTOTIC, 1.0 / xl))
    return lmath.where(small, lmath.log(series), large)


def _horner(coefs, t):
    """sum coefs[k] t^k."""
    out = coefs[-1] + 0 * t
    for c in coefs[-2::-1]:
        out = out * t + c
    return out


_I0_SERIES = [1 / math.factorial(k) ** 2 for k in range(42)]
_I0_ASYMPTOTIC = [1.0]
for _k in range(1, 30):
    _I0_ASYMPTOTIC.append(_I0_ASYMPTOTIC[-1] * (2 * _k - 1) ** 2 / (8 * _k))


@register("flat")
class Flat(Distribution):
    """The improper uniform density on the real line: log density 0 everywhere (PyMC's `Flat`). No draws.

    >>> import dimgraph as dg
    >>> float(dg.dist.flat().logp(12.5).eval(backend="python"))
    0.0
    """

    names = ()
    support = constraints.real

    def valid(self):
        return None

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        inside = self.support.contains(x)
        return lmath.where(x == x, 0.0, 0.0) if inside is None else lmath.where(inside, 0.0, -np.inf)

    def sample(self, state, dims):
        raise NoDrawsError(
            f"{self.registered_name}: an improper density has no draws (give the variable a proper prior to draw from it)"
        )

    # PyMC's convention: half the mass on either side of every finite point
    def log_cdf(self, x):
        return lmath.where(x == -np.inf, -np.inf, lmath.where(x == np.inf, 0.0, -_LOG2))

    def log_sf(self, x):
        return lmath.where(x == -np.inf, 0.0, lmath.where(x == np.inf, -np.inf, -_LOG2))


@register("halfflat")
class HalfFlat(Flat):
    """The improper uniform density on x > 0: log density 0 there, -inf elsewhere (PyMC's `HalfFlat`). No draws."""

    support = constraints.positive

    def log_cdf(self, x):
        return lmath.where(x == np.inf, 0.0, -np.inf)

    def log_sf(self, x):
        return lmath.where(x <= 0, 0.0, lmath.where(x == np.inf, -np.inf, 0.0))


@register("asymmetric_laplace")
class AsymmetricLaplace(Distribution):
    """Location `mu`, rate `b`, asymmetry `kappa` (PyMC's `AsymmetricLaplace(kappa, mu, b)`; scipy's
    `laplace_asymmetric(kappa, mu, 1 / b)`): P(X > mu) = 1 / (1 + kappa^2).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.asymmetric_laplace(2.0, 0.0, 1.0).logp(0.5).eval(backend="python")), 6)
    -1.916291
    """

    names, defaults = ("kappa", "mu", "b"), {"mu": 0.0, "b": 1.0}
    support = constraints.real
    positive = ("kappa", "b")

    def log_density(self, x, kappa, mu, b):
        z = (x - mu) * b
        return lmath.where(z >= 0, -z * kappa, z / kappa)

    def normalizer(self, kappa, mu, b):
        return lmath.log(b) + lmath.log(kappa) - lmath.log1p(kappa * kappa)

    def sample(self, state, dims, kappa, mu, b):
        state, u = primitive_draw("uniform", state, dims=dims)
        state, v = primitive_draw("uniform", state, dims=dims)
        return state, mu + (-lmath.log1p(-u) / kappa + lmath.log1p(-v) * kappa) / b  # a difference of exponentials

    def _below(self, kappa):  # log P(X <= mu)
        return 2 * lmath.log(kappa) - lmath.log1p(kappa * kappa)

    def log_cdf(self, x, kappa, mu, b):
        z = (x - mu) * b
        left = self._below(kappa) + lmath.minimum(z, 0.0) / kappa
        right = lmath.log1mexp(-lmath.log1p(kappa * kappa) - lmath.maximum(z, 0.0) * kappa)
        return lmath.where(z < 0, left, right)

    def log_sf(self, x, kappa, mu, b):
        z = (x - mu) * b
        right = -lmath.log1p(kappa * kappa) - lmath.maximum(z, 0.0) * kappa
        left = lmath.log1mexp(self._below(kappa) + lmath.minimum(z, 0.0) / kappa)
        return lmath.where(z >= 0, right, left)

    def icdf_exp(self, lp, kappa, mu, b):
        below = self._below(kappa)
        left = kappa * (lmath.minimum(lp, below) - below)
        right = -(lmath.log1mexp(lmath.maximum(lp, below)) + lmath.log1p(kappa * kappa)) / kappa
        return mu + lmath.where(lp < below, left, right) / b

    def isf_exp(self, lq, kappa, mu, b):
        above = -lmath.log1p(kappa * kappa)
        right = -(lmath.minimum(lq, above) - above) / kappa
        left = kappa * (lmath.log1mexp(lmath.maximum(lq, above)) - self._below(kappa))
        return mu + lmath.where(lq <= above, right, left) / b


@register("chi_squared")
class ChiSquared(Distribution):
    """Gamma(nu / 2, 1 / 2) (PyMC's `ChiSquared(nu)`, scipy's `chi2(nu)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.chi_squared(3.0).logp(2.0).eval(backend="python")), 6)
    -1.572365
    """

    names = ("nu",)
    support = constraints.nonnegative
    positive = ("nu",)

    def _gamma(self, nu):
        return {"alpha": nu / 2, "beta": 0.5}

    def log_density(self, x, nu):
        return Gamma.log_density(self, x, **self._gamma(nu))

    def sample(self, state, dims, nu):
        state, g = primitive_draw("gamma", state, nu / 2, dims=dims)
        return state, 2 * g

    def log_cdf(self, x, nu):
        return Gamma.log_cdf(self, x, **self._gamma(nu))

    def log_sf(self, x, nu):
        return Gamma.log_sf(self, x, **self._gamma(nu))

    def icdf_exp(self, lp, nu):
        return Gamma.icdf_exp(self, lp, **self._gamma(nu))

    def isf_exp(self, lq, nu):
        return Gamma.isf_exp(self, lq, **self._gamma(nu))


def _real_quantile(reached, loc, scale):
    """x = loc + scale sinh(s) where the monotone `reached(x)` turns true, by bisection on s in [-710, 710]."""
    s = bisect(lambda s: reached(loc + scale * lmath.sinh(s)), -710.0 + 0 * loc * scale, 710.0)
    return loc + scale * lmath.sinh(s)


def _positive_quantile(reached, like):
    """x = exp(t) where the monotone `reached(x)` turns true, by bisection on t in [-745, 710]."""
    return lmath.exp(bisect(lambda t: reached(lmath.exp(t)), -745.0 + 0 * like, 710.0))


@register("ex_gaussian")
class ExGaussian(Distribution):
    """Normal(mu, sigma) plus Exponential(1 / nu) (PyMC's `ExGaussian(mu, sigma, nu)`; scipy's
    `exponnorm(nu / sigma, mu, sigma)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.ex_gaussian(0.0, 1.0, 2.0).logp(1.0).eval(backend="python")), 6)
    -1.437094
    """

    names = ("mu", "sigma", "nu")
    support = constraints.real
    positive = ("sigma", "nu")

    def _shifted(self, x, mu, sigma, nu):
        """log of exp((mu - x) / nu + sigma^2 / (2 nu^2)) Phi((x - mu) / sigma - sigma / nu)."""
        r = sigma / nu
        return (mu - x) / nu + 0.5 * r * r + log_ndtr((x - mu) / sigma - r)

    def log_density(self, x, mu, sigma, nu):
        return self._shifted(x, mu, sigma, nu)

    def normalizer(self, mu, sigma, nu):
        return -lmath.log(nu)

    def sample(self, state, dims, mu, sigma, nu):
        state, z = primitive_draw("normal", state, dims=dims)
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, mu + sigma * z - nu * lmath.log1p(-u)

    def log_cdf(self, x, mu, sigma, nu):
        return log_diff_exp(log_ndtr((x - mu) / sigma), self._shifted(x, mu, sigma, nu))

    def log_sf(self, x, mu, sigma, nu):
        return lmath.logaddexp(log_ndtr((mu - x) / sigma), self._shifted(x, mu, sigma, nu))

    def icdf_exp(self, lp, mu, sigma, nu):
        return _real_quantile(lambda x: self.log_cdf(x, mu, sigma, nu) >= lp, mu, sigma + nu)

    def isf_exp(self, lq, mu, sigma, nu):
        return _real_quantile(lambda x: self.log_sf(x, mu, sigma, nu) <= lq, mu, sigma + nu)


@register("gumbel")
class Gumbel(Distribution):
    """Location `mu`, scale `beta` (PyMC's `Gumbel(mu, beta)`, scipy's `gumbel_r(mu, beta)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.gumbel(0.0, 2.0).logp(1.0).eval(backend="python")), 6)
    -1.799678
    """

    names, defaults = ("mu", "beta"), {"mu": 0.0, "beta": 1.0}
    support = constraints.real
    positive = ("beta",)

    def log_density(self, x, mu, beta):
        z = (x - mu) / beta
        return -z - lmath.exp(-z)

    def normalizer(self, mu, beta):
        return -lmath.log(beta)

    def sample(self, state, dims, mu, beta):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, mu - beta * lmath.log(-lmath.log1p(-u))

    def log_cdf(self, x, mu, beta):
        return -lmath.exp((mu - x) / beta)

    def log_sf(self, x, mu, beta):
        return lmath.log1mexp(-lmath.exp((mu - x) / beta))

    def icdf_exp(self, lp, mu, beta):
        return mu - beta * lmath.log(-lp)

    def isf_exp(self, lq, mu, beta):
        return mu - beta * lmath.log(-lmath.log1mexp(lq))


@register("kumaraswamy")
class Kumaraswamy(Distribution):
    """a b x^(a-1) (1 - x^a)^(b-1) on (0, 1) (PyMC's `Kumaraswamy(a, b)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.kumaraswamy(2.0, 3.0).logp(0.5).eval(backend="python")), 6)  # log(6 * 0.5 * 0.75^2)
    0.523248
    """

    names = ("a", "b")
    support = constraints.unit_interval
    positive = ("a", "b")

    def log_density(self, x, a, b):  # at 0 and 1 the limits (xlogy: 0 where the power is 0)
        return lmath.xlogy(a - 1, x) + xlog1py(b - 1, -(x**a))

    def normalizer(self, a, b):
        return lmath.log(a) + lmath.log(b)

    def sample(self, state, dims, a, b):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, self.isf_exp(lmath.log1p(-u), a, b)

    def log_sf(self, x, a, b):  # (1 - x^a)^b
        return lmath.where(x <= 0, 0.0, b * lmath.log1p(-(lmath.clip(x, 0.0, 1.0) ** a)))

    def log_cdf(self, x, a, b):
        return lmath.log1mexp(self.log_sf(x, a, b))

    def icdf_exp(self, lp, a, b):
        return self.isf_exp(lmath.log1mexp(lp), a, b)

    def isf_exp(self, lq, a, b):
        return (-lmath.expm1(lq / b)) ** (1.0 / a)


@register("logitnormal")
class LogitNormal(Distribution):
    """sigmoid(Y) for Y ~ Normal(mu, sigma) (PyMC's `LogitNormal(mu, sigma)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.logitnormal(0.0, 1.0).logp(0.5).eval(backend="python")), 6)  # norm.logpdf(0) + log 4
    0.467356
    """

    names, defaults = ("mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    support = constraints.unit_interval
    positive = ("sigma",)

    def log_density(self, x, mu, sigma):  # 0 at both ends, where the normal's tail vanishes faster than 1/x
        inside = (x > 0) & (x < 1)
        x = lmath.where(inside, x, 0.5)
        z = (lmath.logit(x) - mu) / sigma
        return lmath.where(inside, -0.5 * z * z - lmath.log(x) - lmath.log1p(-x), -np.inf)

    def normalizer(self, mu, sigma):
        return -lmath.log(sigma) - 0.5 * _LOG_2PI

    def sample(self, state, dims, mu, sigma):
        state, z = primitive_draw("normal", state, dims=dims)
        return state, lmath.sigmoid(mu + sigma * z)

    def log_cdf(self, x, mu, sigma):
        return log_ndtr((lmath.logit(lmath.clip(x, 0.0, 1.0)) - mu) / sigma)

    def log_sf(self, x, mu, sigma):
        return log_ndtr((mu - lmath.logit(lmath.clip(x, 0.0, 1.0))) / sigma)

    def icdf_exp(self, lp, mu, sigma):
        return lmath.sigmoid(mu + sigma * ndtri_exp(lp))

    def isf_exp(self, lq, mu, sigma):
        return lmath.sigmoid(mu - sigma * ndtri_exp(lq))


@register("moyal")
class Moyal(Distribution):
    """Location `mu`, scale `sigma`: mu - 2 sigma log|Z| (PyMC's `Moyal(mu, sigma)`, scipy's `moyal(mu, sigma)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.moyal(0.0, 1.0).logp(1.0).eval(backend="python")), 6)
    -1.602878
    """

    names, defaults = ("mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    support = constraints.real
    positive = ("sigma",)

    def log_density(self, x, mu, sigma):
        z = (x - mu) / sigma
        return -0.5 * (z + lmath.exp(-z))

    def normalizer(self, mu, sigma):
        return -lmath.log(sigma) - 0.5 * _LOG_2PI

    def sample(self, state, dims, mu, sigma):
        state, z = primitive_draw("normal", state, dims=dims)
        return state, mu - 2 * sigma * lmath.log(_abs(z))

    # P(X <= x) = 2 Phi(-e), P(X > x) = erf(e / sqrt 2), e = exp(-z / 2)
    def log_cdf(self, x, mu, sigma):
        return _LOG2 + log_ndtr(-lmath.exp((mu - x) / (2 * sigma)))

    def log_sf(self, x, mu, sigma):
        return lmath.log(lmath.erf(lmath.exp((mu - x) / (2 * sigma)) * math.sqrt(0.5)))

    def icdf_exp(self, lp, mu, sigma):
        return mu - 2 * sigma * lmath.log(-ndtri_exp(lp - _LOG2))

    def isf_exp(self, lq, mu, sigma):
        return self.icdf_exp(lmath.log1mexp(lq), mu, sigma)


@register("pareto")
class Pareto(Distribution):
    """alpha m^alpha / x^(alpha + 1) on x >= m (PyMC's `Pareto(alpha, m)`, scipy's `pareto(alpha, scale=m)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.pareto(3.0, 2.0).logp(4.0).eval(backend="python")), 6)  # log(3 * 8 / 4^4)
    -2.367124
    """

    names = ("alpha", "m")
    positive = ("alpha", "m")
    safe_value = 1.0

    @property
    def support(self):
        return constraints.interval(self.params["m"], None)

    def log_density(self, x, alpha, m):
        return -(alpha + 1) * lmath.log(x)

    def normalizer(self, alpha, m):
        return lmath.log(alpha) + alpha * lmath.log(m)

    def sample(self, state, dims, alpha, m):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, self.isf_exp(lmath.log1p(-u), alpha, m)

    def log_sf(self, x, alpha, m):
        return alpha * lmath.minimum(lmath.log(m) - lmath.log(lmath.maximum(x, m)), 0.0)

    def log_cdf(self, x, alpha, m):
        return lmath.log1mexp(self.log_sf(x, alpha, m))

    def icdf_exp(self, lp, alpha, m):
        return self.isf_exp(lmath.log1mexp(lp), alpha, m)

    def isf_exp(self, lq, alpha, m):
        return m * lmath.exp(-lq / alpha)


@register("rice")
class Rice(Distribution):
    """|nu + sigma Z| for a complex normal Z: the Rice distribution (PyMC's `Rice(nu, sigma)`; scipy's
    `rice(nu / sigma, scale=sigma)`). No logcdf (it is Marcum's Q function; PyMC has none either).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.rice(1.0, 2.0).logp(1.5).eval(backend="python")), 6)
    -1.352227
    """

    names, defaults = ("nu", "sigma"), {"sigma": 1.0}
    support = constraints.nonnegative

    def valid(self, nu, sigma):
        return (nu >= 0) & (sigma > 0)

    def log_density(self, x, nu, sigma):
        s2 = sigma * sigma
        return lmath.log(x) - (x * x + nu * nu) / (2 * s2) + log_i0(x * nu / s2)

    def normalizer(self, nu, sigma):
        return -2 * lmath.log(sigma)

    def sample(self, state, dims, nu, sigma):
        state, z1 = primitive_draw("normal", state, dims=dims)
        state, z2 = primitive_draw("normal", state, dims=dims)
        re = nu + sigma * z1
        im = sigma * z2
        return state, lmath.sqrt(re * re + im * im)


@register("skewnormal")
class SkewNormal(Distribution):
    """The normal tilted by Phi(alpha z) (PyMC's `SkewNormal(mu, sigma, alpha)`; scipy's `skewnorm(alpha, mu, sigma)`).
    No logcdf (it needs Owen's T function; PyMC has none either).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.skewnormal(0.0, 1.0, 3.0).logp(0.5).eval(backend="python")), 6)
    -0.419935
    """

    names, defaults = ("mu", "sigma", "alpha"), {"mu": 0.0, "sigma": 1.0, "alpha": 0.0}
    support = constraints.real
    positive = ("sigma",)

    def log_density(self, x, mu, sigma, alpha):
        z = (x - mu) / sigma
        return -0.5 * z * z + log_ndtr(alpha * z)

    def normalizer(self, mu, sigma, alpha):
        return _LOG2 - lmath.log(sigma) - 0.5 * _LOG_2PI

    def sample(self, state, dims, mu, sigma, alpha):
        state, u0 = primitive_draw("normal", state, dims=dims)
        state, v = primitive_draw("normal", state, dims=dims)
        delta = alpha / lmath.sqrt(1 + alpha * alpha)
        return state, mu + sigma * (delta * _abs(u0) + lmath.sqrt(1 - delta * delta) * v)


@register("skew_student_t")
class SkewStudentT(Distribution):
    """Jones and Faddy's skewed t with tail parameters `a`, `b` (PyMC's `SkewStudentT(a, b, mu, sigma)`; scipy's
    `jf_skew_t(a, b, mu, sigma)`); a = b is symmetric (Student's t with 2a degrees of freedom, rescaled).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.skew_student_t(2.0, 3.0, 0.0, 1.0).logp(0.5).eval(backend="python")), 6)
    -1.460556
    """

    names, defaults = ("a", "b", "mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    support = constraints.real
    positive = ("a", "b", "sigma")

    def _sides(self, z, a, b):
        """(log(1 + z / d), log(1 - z / d)) with d = sqrt(a + b + z^2), each without cancellation."""
        d = lmath.sqrt(a + b + z * z)
        ab = lmath.log(a + b) - lmath.log(d)
        plus = lmath.where(z >= 0, lmath.log1p(z / d), ab - lmath.log(d - lmath.minimum(z, 0.0)))
        minus = lmath.where(z <= 0, lmath.log1p(-z / d), ab - lmath.log(d + lmath.maximum(z, 0.0)))
        return plus, minus

    def log_density(self, x, a, b, mu, sigma):
        plus, minus = self._sides((x - mu) / sigma, a, b)
        return (a + 0.5) * plus + (b + 0.5) * minus

    def normalizer(self, a, b, mu, sigma):
        return -(a + b - 1) * _LOG2 - lmath.betaln(a, b) - 0.5 * lmath.log(a + b) - lmath.log(sigma)

    def sample(self, state, dims, a, b, mu, sigma):
        state, g1 = primitive_draw("gamma", state, a, dims=dims)
        state, g2 = primitive_draw("gamma", state, b, dims=dims)
        z = lmath.sqrt(a + b) * (g1 - g2) / (2 * lmath.sqrt(g1 * g2))
        return state, mu + sigma * z

    # P(X <= x) = I_w(a, b), w = (1 + z / d) / 2; P(X > x) = I_{1 - w}(b, a)
    def log_cdf(self, x, a, b, mu, sigma):
        plus, minus = self._sides((x - mu) / sigma, a, b)
        return log_regularized_beta(a, b, lmath.exp(plus - _LOG2))

    def log_sf(self, x, a, b, mu, sigma):
        plus, minus = self._sides((x - mu) / sigma, a, b)
        return log_regularized_beta(b, a, lmath.exp(minus - _LOG2))

    def icdf_exp(self, lp, a, b, mu, sigma):
        return _real_quantile(lambda x: self.log_cdf(x, a, b, mu, sigma) >= lp, mu, sigma)

    def isf_exp(self, lq, a, b, mu, sigma):
        return _real_quantile(lambda x: self.log_sf(x, a, b, mu, sigma) <= lq, mu, sigma)


@register("triangular")
class Triangular(Distribution):
    """The triangle on [lower, upper] with its mode at `c` (PyMC's `Triangular(lower, c, upper)`; scipy's
    `triang((c - lower) / (upper - lower), lower, upper - lower)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.triangular(0.0, 1.0, 3.0).logp(2.0).eval(backend="python")), 6)  # log(2 * 1 / (3 * 2))
    -1.098612
    """

    names, defaults = ("lower", "c", "upper"), {"lower": 0.0, "c": 0.5, "upper": 1.0}

    @property
    def support(self):
        return constraints.interval(self.params["lower"], self.params["upper"])

    def valid(self, lower, c, upper):
        return (lower <= c) & (c <= upper) & (lower < upper)

    def log_density(self, x, lower, c, upper):
        left = x < c
        rise = lmath.log(lmath.where(left, x - lower, 1.0)) - lmath.log(lmath.where(left, c - lower, 1.0))
        fall = lmath.log(lmath.where(left, 1.0, upper - x)) - lmath.log(lmath.where(left, 1.0, upper - c))
        return lmath.where(left, rise, fall)

    def normalizer(self, lower, c, upper):
        return _LOG2 - lmath.log(upper - lower)

    def sample(self, state, dims, lower, c, upper):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, self.icdf_exp(lmath.log(u), lower, c, upper)

    def _mode_log_cdf(self, lower, c, upper):
        return lmath.log(c - lower) - lmath.log(upper - lower)

    def log_cdf(self, x, lower, c, upper):
        x = lmath.clip(x, lower, upper)
        left = x <= c
        rise = 2 * lmath.log(x - lower) - lmath.log(upper - lower) - lmath.log(lmath.where(left, c - lower, 1.0))
        fall = lmath.log1p(-((upper - x) ** 2) / ((upper - lower) * lmath.where(left, 1.0, upper - c)))
        return lmath.where(left, rise, fall)

    def log_sf(self, x, lower, c, upper):
        x = lmath.clip(x, lower, upper)
        right = x > c
        fall = 2 * lmath.log(upper - x) - lmath.log(upper - lower) - lmath.log(lmath.where(right, upper - c, 1.0))
        rise = lmath.log1p(-((x - lower) ** 2) / ((upper - lower) * lmath.where(right, 1.0, c - lower)))
        return lmath.where(right, fall, rise)

    def _quantile(self, lp, lq, lower, c, upper):
        left = lp <= self._mode_log_cdf(lower, c, upper)
        span = upper - lower
        rise = lower + lmath.sqrt(lmath.exp(lp) * span * (c - lower))
        fall = upper - lmath.sqrt(lmath.exp(lq) * span * (upper - c))
        return lmath.where(left, rise, fall)

    def icdf_exp(self, lp, lower, c, upper):
        return self._quantile(lp, lmath.log1mexp(lp), lower, c, upper)

    def isf_exp(self, lq, lower, c, upper):
        return self._quantile(lmath.log1mexp(lq), lq, lower, c, upper)


@register("vonmises")
class VonMises(Distribution):
    """exp(kappa cos(x - mu)) / (2 pi I0(kappa)) on [-pi, pi] (PyMC's `VonMises(mu, kappa)`; scipy's
    `vonmises(kappa, mu)`). Draws by Best and Fisher's rejection, 16 rounds (acceptance >= 65%: a draw is
    left unaccepted with probability below 4e-8, and then keeps its last proposal).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.vonmises(0.0, 2.0).logp(0.5).eval(backend="python")), 6)
    -0.906705
    """

    names, defaults = ("mu", "kappa"), {"mu": 0.0, "kappa": 1.0}
    support = constraints.interval(-math.pi, math.pi)
    positive = ("kappa",)
    _ROUNDS = 16

    def log_density(self, x, mu, kappa):
        return kappa * lmath.cos(x - mu)

    def normalizer(self, mu, kappa):
        return -math.log(2 * math.pi) - log_i0(kappa)

    def sample(self, state, dims, mu, kappa):
        # rho = (tau - sqrt(2 tau)) / (2 kappa), tau = 1 + sqrt(1 + 4 kappa^2), without cancellation at small kappa
        root = lmath.sqrt(1 + 4 * kappa * kappa)
        tau = 1 + root
        rho = 2 * kappa * tau / ((root + 1) * (tau + lmath.sqrt(2 * tau)))
        r = (1 + rho * rho) / (2 * rho)
        f = None
        accepted = None
        for _ in range(self._ROUNDS):
            state, u1 = primitive_draw("uniform", state, dims=dims)
            state, u2 = primitive_draw("uniform", state, dims=dims)
            z = lmath.cos(math.pi * u1)
            g = (1 + r * z) / (r + z)
            c = kappa * (r - g)
            ok = (c * (2 - c) - u2 > 0) | (lmath.log(c / u2) + 1 - c >= 0)
            if f is None:
                f, accepted = g, ok
            else:
                f = lmath.where(accepted, f, g)
                accepted = accepted | ok
        state, u3 = primitive_draw("uniform", state, dims=dims)
        theta = lmath.where(u3 < 0.5, -1.0, 1.0) * lmath.arccos(lmath.clip(f, -1.0, 1.0))
        return state, lmath.elemwise("mod", theta + mu + math.pi, 2 * math.pi) - math.pi


@register("wald")
class Wald(Distribution):
    """The inverse Gaussian with mean `mu` and shape `lam`, shifted by `alpha` (PyMC's `Wald(mu, lam, alpha)`;
    scipy's `invgauss(mu / lam, alpha, lam)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.wald(1.0, 2.0).logp(0.5).eval(backend="python")), 6)
    -0.032644
    """

    names, defaults = ("mu", "lam", "alpha"), {"alpha": 0.0}
    positive = ("mu", "lam")

    @property
    def support(self):
        return constraints.interval(self.params["alpha"], None)

    def valid(self, mu, lam, alpha):
        return (mu > 0) & (lam > 0) & (alpha >= 0)

    def log_density(self, x, mu, lam, alpha):  # 0 at alpha and at inf
        inside = (x > alpha) & lmath.isfinite(x)
        y = lmath.where(inside, x - alpha, mu)
        d = y - mu
        return lmath.where(inside, -1.5 * lmath.log(y) - lam * d * d / (2 * mu * mu * y), -np.inf)

    def normalizer(self, mu, lam, alpha):
        return 0.5 * (lmath.log(lam) - _LOG_2PI)

    def sample(self, state, dims, mu, lam, alpha):
        # Michael, Schucany and Haas: a root of the chi-square(1) equation, then one of the two by a coin
        state, z = primitive_draw("normal", state, dims=dims)
        state, u = primitive_draw("uniform", state, dims=dims)
        v = z * z
        m2v = mu * mu * v
        y = mu + m2v / (2 * lam) - mu / (2 * lam) * lmath.sqrt(4 * mu * lam * v + m2v * v)
        return state, alpha + lmath.where(u <= mu / (mu + y), y, mu * mu / y)

    def _terms(self, x, mu, lam, alpha):
        y = lmath.maximum(x - alpha, 0.0)
        s = lmath.sqrt(lam / lmath.where(y > 0, y, 1.0))
        return y, s * (y / mu - 1), s * (y / mu + 1)

    # P(Y <= y) = Phi(s (y/mu - 1)) + exp(2 lam / mu) Phi(-s (y/mu + 1)), s = sqrt(lam / y)
    def log_cdf(self, x, mu, lam, alpha):
        y, a, b = self._terms(x, mu, lam, alpha)
        return lmath.where(y > 0, lmath.logaddexp(log_ndtr(a), 2 * lam / mu + log_ndtr(-b)), -np.inf)

    def log_sf(self, x, mu, lam, alpha):
        y, a, b = self._terms(x, mu, lam, alpha)
        return lmath.where(y > 0, log_diff_exp(log_ndtr(-a), 2 * lam / mu + log_ndtr(-b)), 0.0)

    def icdf_exp(self, lp, mu, lam, alpha):
        return alpha + _positive_quantile(lambda y: self.log_cdf(alpha + y, mu, lam, alpha) >= lp, lp * mu)

    def isf_exp(self, lq, mu, lam, alpha):
        return alpha + _positive_quantile(lambda y: self.log_sf(alpha + y, mu, lam, alpha) <= lq, lq * mu)


@register("interpolated")
class Interpolated(Distribution):
    """The density through the points (`x_points`, `pdf_points`) on `dim`, linear between them and normalized by
    its trapezoid area (PyMC's `Interpolated(x_points, pdf_points)`); draws invert its piecewise-quadratic cdf.

    >>> import dimgraph as dg, numpy as np
    >>> k = dg.Dim("k", size=3)
    >>> xp, pp = dg.constant(np.array([0.0, 1.0, 2.0]), dims=(k,)), dg.constant(np.array([0.0, 1.0, 0.0]), dims=(k,))
    >>> round(float(dg.dist.interpolated(xp, pp, dim=k).logp(0.5).eval(backend="python")), 6)  # log(0.5 / 1)
    -0.693147
    """

    names = ("x_points", "pdf_points")

    def __init__(self, *args, dim=None, **kwargs):
        super().__init__(*args, **kwargs)
        xp = self.params["x_points"]
        if dim is None:
            raise TypeError(f"interpolated: give the dim of the points as dim= (one of {xp.dims})")
        (self.dim,) = resolve_dims(xp.dims, dim, "interpolated")
        if self.dim.size is None or self.dim.size < 2:
            raise ValueError(f"interpolated: the points' dim {self.dim.name!r} needs a static size of at least 2")

    @property
    def bounds(self):
        """(the first point, the last point)."""
        xp, last = self.params["x_points"], self.dim.size - 1
        return xp.isel({self.dim.name: 0}), xp.isel({self.dim.name: last})

    @property
    def support(self):
        return constraints.interval(*self.bounds)

    def _out_dims(self, dims):
        return tuple(d for d in dims if d != self.dim)

    def valid(self, x_points, pdf_points):
        return (lmath.diff(x_points, self.dim) > 0).all(self.dim.name) & (pdf_points >= 0).all(self.dim)

    def _segments(self, x_points, pdf_points):
        """Per point i on `dim`: (x_i, x_{i+1}, p_i, p_{i+1}, whether a segment starts there, its area)."""
        d = self.dim.name
        x1 = x_points.shift({d: -1}, fill_value=0.0)
        p1 = pdf_points.shift({d: -1}, fill_value=0.0)
        starts = arange(self.dim) < self.dim.size - 1
        area = lmath.where(starts, (x1 - x_points) * (pdf_points + p1) / 2, 0.0)
        return x1, p1, starts, area

    def _locate(self, x, x_points, pdf_points):
        """The one-hot segment of x along `dim` (the last segment holds the last point) and the segment's pieces."""
        x1, p1, starts, area = self._segments(x_points, pdf_points)
        last = arange(self.dim) == self.dim.size - 2
        hit = starts & (x_points <= x) & ((x < x1) | (last & (x <= x1)))
        return hit, x1, p1, area

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        xp, pp = self.params["x_points"], self.params["pdf_points"]
        hit, x1, p1, area = self._locate(x, xp, pp)
        width = lmath.where(hit, x1 - xp, 1.0)
        here = lmath.where(hit, pp + (p1 - pp) * (x - xp) / width, 0.0).sum(self.dim)
        density = lmath.where(hit.any(self.dim), lmath.log(here), -np.inf) - lmath.log(area.sum(self.dim))
        return _invalid_to_nan(density, self.valid(xp, pp), check, "interpolated")

    def _log_cdf_of(self, x, x_points, pdf_points):
        hit, x1, p1, area = self._locate(x, x_points, pdf_points)
        before = lmath.cumulative("add", area, self.dim) - area  # the area of the segments below each one
        t = x - x_points
        width = lmath.where(hit, x1 - x_points, 1.0)
        partial = t * pdf_points + (p1 - pdf_points) * t * t / (2 * width)
        inside = lmath.where(hit, before + partial, 0.0).sum(self.dim)
        lo, hi = self.bounds
        mass = lmath.where(x < lo, 0.0, lmath.where(x >= hi, area.sum(self.dim), inside))
        return mass, area.sum(self.dim)

    def log_cdf(self, x, x_points, pdf_points):
        mass, total = self._log_cdf_of(x, x_points, pdf_points)
        return lmath.log(mass) - lmath.log(total)

    def log_sf(self, x, x_points, pdf_points):
        mass, total = self._log_cdf_of(x, x_points, pdf_points)
        return lmath.log(total - mass) - lmath.log(total)

    def _quantile(self, u, x_points, pdf_points):
        """x with F(x) = u: the segment where the running area passes u * area, then the root of its quadratic."""
        x1, p1, starts, area = self._segments(x_points, pdf_points)
        total = area.sum(self.dim)
        after = lmath.cumulative("add", area, self.dim)
        target = u * total
        last = arange(self.dim) == self.dim.size - 2
        hit = starts & (after - area <= target) & ((target < after) | last)
        hit = hit & (lmath.cumulative("add", lmath.where(hit, 1.0, 0.0), self.dim) == 1)  # the first one
        r = target - (after - area)
        width = lmath.where(hit, x1 - x_points, 1.0)
        slope = (p1 - pdf_points) / width
        # (slope / 2) t^2 + p_i t = r, by the root that does not cancel: t = 2 r / (p_i + sqrt(p_i^2 + 2 slope r))
        disc = lmath.sqrt(lmath.maximum(pdf_points * pdf_points + 2 * slope * r, 0.0))
        denom = pdf_points + disc
        t = lmath.where(denom > 0, 2 * r / lmath.where(denom > 0, denom, 1.0), 0.0)
        return lmath.where(hit, x_points + lmath.clip(t, 0.0, x1 - x_points), 0.0).sum(self.dim)

    def sample(self, state, dims, x_points, pdf_points):
        state, u = primitive_draw("uniform", state, dims=tuple(d for d in dims if d != self.dim))
        return state, self._quantile(u, x_points, pdf_points)

    def icdf_exp(self, lp, x_points, pdf_points):
        return self._quantile(lmath.exp(lp), x_points, pdf_points)

    def isf_exp(self, lq, x_points, pdf_points):
        return self._quantile(-lmath.expm1(lq), x_points, pdf_points)


_POLYA_GAMMA_SERIES = Dim("polya_gamma_series", size=200)  # the terms of the density's and cdf's series
_POLYA_GAMMA_GAMMAS = Dim("polya_gamma_gammas", size=32)  # the gammas of a draw, before the tail's stand-in


def _log_cosh(t):
    """log cosh(t), finite for any t (cosh overflows past 710)."""
    a = _abs(t)
    return a + lmath.softplus(-2 * a) - _LOG2


def _signed_log_sum(log_terms, sign, dim):
    """log sum_n sign_n exp(log_terms_n) over `dim` (an alternating series; NaN where it sums below zero)."""
    top = lmath.stop_gradient(lmath.where(lmath.isfinite(log_terms), log_terms, -np.inf).max(dim))
    top = lmath.where(lmath.isfinite(top), top, 0.0)
    return top + lmath.log((sign * lmath.exp(log_terms - top)).sum(dim))


@register("polya_gamma")
class PolyaGamma(Distribution):
    """The Polya-Gamma distribution PG(h, z) (PyMC's `PolyaGamma(h=1, z=0)`): the law of
    sum_k g_k / (2 pi^2 ((k - 1/2)^2 + z^2 / (4 pi^2))) with g_k ~ Gamma(h, 1), whose mean is h tanh(z/2) / (2 z).

    The density and cdf are PyMC's (its `polyagamma` package's): 200 terms of alternating series, the density
    the PG(h, 0) one (inverse-gamma-like terms) tilted by cosh(z/2)^h exp(-z^2 x / 2), the cdf a series of
    inverse Gaussian cdfs. Past the right tail's bulk (a density below about 1e-15 of its peak) the series
    cancel to noise, as PyMC's do. Draws sum the first 32 gammas and stand in for the rest by one gamma with
    the tail's exact mean and variance.

    >>> import dimgraph as dg
    >>> round(float(dg.dist.polya_gamma(1.0, 0.0).logp(0.3).eval(backend="python")), 6)  # PyMC: 0.357415
    0.357415
    """

    names, defaults = ("h", "z"), {"h": 1.0, "z": 0.0}
    support = constraints.positive
    positive = ("h",)

    def _series(self, h):
        """(n, 2n + h, log Gamma(n + h) - log n!) on the series' dim."""
        n = lmath.astype(arange(_POLYA_GAMMA_SERIES), "float64")
        return n, 2 * n + h, lmath.gammaln(n + h) - lmath.gammaln(n + 1)

    def _sign(self):
        return 1.0 - 2.0 * lmath.astype(arange(_POLYA_GAMMA_SERIES) % 2, "float64")

    def log_density(self, x, h, z):
        _, t, log_ratio = self._series(h)
        terms = log_ratio + lmath.log(t) - t * t / (8 * x)
        series = _signed_log_sum(terms, self._sign(), _POLYA_GAMMA_SERIES)
        return series - 1.5 * lmath.log(x) - 0.5 * z * z * x

    def normalizer(self, h, z):
        return h * _log_cosh(z / 2) + (h - 1) * _LOG2 - lmath.gammaln(h) - 0.5 * _LOG_2PI

    def log_cdf(self, x, h, z):
        z = _abs(z)
        inside = (x > 0) & lmath.isfinite(x)
        s = lmath.sqrt(lmath.where(inside, x, 1.0))
        n, t, log_ratio = self._series(h)
        # each term: the cdf of an inverse Gaussian (mean t / (2z), shape t^2 / 4), the inverse gamma's at z = 0
        lower = log_ndtr(z * s - t / (2 * s))
        upper = z * t + log_ndtr(-(z * s + t / (2 * s)))
        terms = log_ratio - z * n + lmath.logaddexp(lower, upper)
        series = _signed_log_sum(terms, self._sign(), _POLYA_GAMMA_SERIES)
        out = lmath.minimum(h * lmath.softplus(-z) - lmath.gammaln(h) + series, 0.0)
        return lmath.where(inside, out, lmath.where(x > 0, 0.0, -np.inf))

    def log_sf(self, x, h, z):
        return lmath.log1mexp(self.log_cdf(x, h, z))

    def sample(self, state, dims, h, z):
        k = lmath.astype(arange(_POLYA_GAMMA_GAMMAS), "float64") + 1
        c2 = z * z / (4 * math.pi**2)
        d = (k - 0.5) ** 2 + c2
        state, g = primitive_draw("gamma", state, h, dims=(*dims, _POLYA_GAMMA_GAMMAS))
        head = (g / d).sum(_POLYA_GAMMA_GAMMAS)
        # the rest, sum over k > 32 of g_k / d_k: one gamma with its mean h S1 and variance h S2
        s1 = _polya_gamma_inverse_sum(z) - (1 / d).sum(_POLYA_GAMMA_GAMMAS)
        s2 = _polya_gamma_inverse_square_sum(z) - (1 / (d * d)).sum(_POLYA_GAMMA_GAMMAS)
        state, rest = primitive_draw("gamma", state, h * s1 * s1 / s2, dims=dims)
        return state, (head + rest * s2 / s1) / (2 * math.pi**2)


def _polya_gamma_inverse_sum(z):
    """sum_{k >= 1} 1 / ((k - 1/2)^2 + z^2 / (4 pi^2)) = pi^2 tanh(z/2) / z (pi^2 / 2 at z = 0)."""
    a = _abs(z)
    small = a < 1e-4
    safe = lmath.where(small, 1.0, a)
    return math.pi**2 * lmath.where(small, 0.5 - a * a / 24, lmath.tanh(safe / 2) / safe)


def _polya_gamma_inverse_square_sum(z):
    """sum_{k >= 1} 1 / ((k - 1/2)^2 + z^2 / (4 pi^2))^2 = pi^4 (2 tanh(z/2) - z sech^2(z/2)) / z^3
    (pi^4 / 6 at z = 0; by its series near 0, where the difference cancels)."""
    a = _abs(z)
    small = a < 1e-3
    safe = lmath.where(small, 1.0, a)
    sech = 1 / lmath.cosh(lmath.minimum(safe / 2, 350.0))
    exact = (2 * lmath.tanh(safe / 2) - safe * sech * sech) / safe**3
    return math.pi**4 * lmath.where(small, 1 / 6 - a * a / 30, exact)
