"""More univariate distributions for `dg.dist`: half-Cauchy, half-Student-t, Weibull, Laplace, logistic.

Parameters follow PyMC (`beta` the half-Cauchy's scale, Weibull's shape
`alpha` and scale `beta`, Laplace's `mu` and `b`, logistic's `mu` and `s`);
each has `logp`, draws, `logcdf`/`logsf` where the cdf is elementary (the
half-Student-t's needs the incomplete beta function) and the quantiles that
draw its truncations. The half distributions reuse their full versions'
terms, so a numerical fix there reaches them too.
"""

from __future__ import annotations

import math

from dimgraph.labeled import math as lmath
from dimgraph.labeled.distributions import Cauchy, Distribution, HalfNormal, StudentT, _finite
from dimgraph.labeled.random import primitive_draw
from dimgraph.labeled.tails import bisect, student_t_abs_tails

_LOG2, _LOG_PI = math.log(2.0), math.log(math.pi)


class HalfCauchy(Distribution):
    """|X| for X ~ Cauchy(0, beta): a heavy-tailed prior for scales (PyMC's `HalfCauchy(beta)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.halfcauchy(2.0).logp(1.0).eval(backend="python")), 6)  # scipy.stats.halfcauchy(scale=2)
    -1.367873
    """

    names, defaults = ("beta",), {"beta": 1.0}
    default_transform = "log"
    positive = ("beta",)
    domain = "nonnegative"

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


class HalfStudentT(Distribution):
    """|X| for X ~ StudentT(nu, 0, sigma) (PyMC's `HalfStudentT(nu, sigma)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.halfstudent_t(3.0, 1.0).logp(0.5).eval(backend="python")), 6)  # log 2 + t(3).logpdf(0.5)
    -0.467827
    """

    names, defaults = ("nu", "sigma"), {"sigma": 1.0}
    default_transform = "log"
    positive = ("nu", "sigma")
    domain = "nonnegative"

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


class Weibull(Distribution):
    """Shape `alpha`, scale `beta` (PyMC); scipy's `weibull_min(alpha, scale=beta)`.

    >>> import dimgraph as dg
    >>> round(float(dg.dist.weibull(1.5, 2.0).logp(1.0).eval(backend="python")), 6)
    -0.987809
    """

    names = ("alpha", "beta")
    default_transform = "log"
    safe_value = 1.0
    positive = ("alpha", "beta")
    domain = "nonnegative"

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


class Laplace(Distribution):
    """Location `mu`, scale `b` (PyMC); scipy's `laplace(mu, b)`.

    >>> import dimgraph as dg
    >>> round(float(dg.dist.laplace(0.0, 2.0).logp(1.0).eval(backend="python")), 6)
    -1.886294
    """

    names, defaults = ("mu", "b"), {"mu": 0.0, "b": 1.0}
    default_transform = "identity"
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


class Logistic(Distribution):
    """Location `mu`, scale `s` (PyMC); scipy's `logistic(mu, s)`.

    >>> import dimgraph as dg
    >>> round(float(dg.dist.logistic(0.0, 2.0).logp(1.0).eval(backend="python")), 6)
    -2.141301
    """

    names, defaults = ("mu", "s"), {"mu": 0.0, "s": 1.0}
    default_transform = "identity"
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


UNIVARIATE = {
    "halfcauchy": HalfCauchy,
    "halfstudent_t": HalfStudentT,
    "weibull": Weibull,
    "laplace": Laplace,
    "logistic": Logistic,
}
