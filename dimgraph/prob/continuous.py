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

from dimgraph.labeled import math as lmath
from dimgraph.labeled.math import xlog1py
from dimgraph.labeled.random import primitive_draw
from dimgraph.prob import constraints
from dimgraph.prob.base import Distribution, _abs, _finite, _loggamma
from dimgraph.prob.registry import register
from dimgraph.prob.tails import (
    bisect,
    gamma_quantile_exp,
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
        # nu = inf: the normal limit -z^2 / 2, from nu = 1e150 standing in (exact to double precision for
        # |z| < 1e67, past which the normal's value is below -1e133): a per-element `where` for it would
        # double the cost of every finite nu. sigma = inf: the normalizer's -inf is the limit.
        nu_f, sigma_f = _finite(nu, 1e150), _finite(sigma)
        return -(nu_f + 1) / 2 * _log1p_square(x - mu, sigma_f, lmath.sqrt(nu_f))  # log1p(z^2 / nu)

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


@register("beta")
class Beta(Distribution):
    names = ("alpha", "beta")
    support = constraints.unit_interval
    positive = ("alpha", "beta")

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
