"""Discrete distributions (counts and categories): pmfs in log space, draws, and cdfs by incomplete beta/gamma.

Counts follow scipy.stats (`nbinom(n, p)` counts failures before the n-th
success); a bound of a count's truncation is included.
"""

from __future__ import annotations

import numpy as np

from dimgraph.labeled import math as lmath
from dimgraph.labeled.math import xlog1py
from dimgraph.labeled.random import primitive_draw
from dimgraph.labeled.shape import arange
from dimgraph.prob import constraints
from dimgraph.prob.base import Distribution, _as_float, _check_option, _CoreDim, _count, _finite, _invalid_to_nan
from dimgraph.prob.registry import register
from dimgraph.prob.tails import log_regularized_beta, log_regularized_gamma


def _count_quantile(reached, hi, steps=40):
    """The smallest count k >= 0 where `reached(k)` holds (it holds from some k on, at the latest at `hi`), by
    bisection between -1 and `hi` (2**steps above the count reached exactly)."""
    lo = -1.0 + 0 * hi
    for _ in range(steps):
        mid = lmath.floor((lo + hi) / 2)
        done = reached(mid)
        lo, hi = lmath.where(done, lo, mid), lmath.where(done, mid, hi)
    return lmath.ceil(hi)



def _prob(p):
    return (p >= 0) & (p <= 1)



@register("bernoulli")
class Bernoulli(Distribution):
    names = ("p",)
    support = constraints.boolean

    def valid(self, p):
        return _prob(p)

    def log_density(self, x, p):
        return lmath.xlogy(x, p) + xlog1py(1 - x, -p)

    def sample(self, state, dims, p):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, lmath.astype(u < p, "int64")

    def log_cdf(self, x, p):
        return lmath.where(x < 0, -np.inf, lmath.where(x < 1, lmath.log1p(-p), 0.0))

    def log_sf(self, x, p):
        return lmath.where(x < 0, 0.0, lmath.where(x < 1, lmath.log(p), -np.inf))

    def icdf_exp(self, lp, p):  # the smallest k with P(X <= k) >= exp(lp)
        return lmath.where(lp > lmath.log1p(-p), 1.0, 0.0)

    def isf_exp(self, lq, p):  # the smallest k with P(X > k) <= exp(lq)
        return lmath.where(lmath.log(p) <= lq, 0.0, 1.0)


def _is_count(x):
    return (x >= 0) & (lmath.floor(x) == x) if np.dtype(x.type.dtype).kind == "f" else x >= 0


@register("binomial")
class Binomial(Distribution):
    names = ("n", "p")

    @property
    def support(self):
        return constraints.integer_interval(0, self.params["n"])

    def valid(self, n, p):
        return _prob(p) & _is_count(n)

    def log_density(self, x, n, p):
        x, n = _as_float(x), _as_float(n)
        n_f = _finite(n)
        # log C(n, x) = -log(n + 1) - betaln(n - x + 1, x + 1)
        density = -lmath.log1p(n_f) - lmath.betaln(n_f - x + 1, x + 1) + lmath.xlogy(x, p) + xlog1py(n_f - x, -p)
        limit = lmath.where((p == 0) & (x == 0), 0.0, -np.inf)  # n = inf: the mass leaves every count unless p = 0
        return lmath.where(lmath.isinf(n), limit, density)

    def sample(self, state, dims, n, p):
        return primitive_draw("binomial", state, n, p, dims=dims)

    # P(X <= k) = 1 - I_p(k + 1, n - k) for 0 <= k < n (no derivative in n)
    def log_cdf(self, x, n, p):
        k, n = lmath.floor(_as_float(x)), _as_float(n)
        inner = log_regularized_beta(lmath.clip(k, 0.0, n - 1) + 1, n - lmath.clip(k, 0.0, n - 1), p, upper=True)
        return lmath.where(k < 0, -np.inf, lmath.where(k >= n, 0.0, inner))

    def log_sf(self, x, n, p):
        k, n = lmath.floor(_as_float(x)), _as_float(n)
        inner = log_regularized_beta(lmath.clip(k, 0.0, n - 1) + 1, n - lmath.clip(k, 0.0, n - 1), p)
        return lmath.where(k < 0, 0.0, lmath.where(k >= n, -np.inf, inner))

    def icdf_exp(self, lp, n, p):
        return _count_quantile(lambda k: self.log_cdf(k, n, p) >= lp, _as_float(n), steps=64)

    def isf_exp(self, lq, n, p):
        return _count_quantile(lambda k: self.log_sf(k, n, p) <= lq, _as_float(n), steps=64)


@register("poisson")
class Poisson(Distribution):
    names = ("mu",)
    support = constraints.nonnegative_integer

    def valid(self, mu):
        return mu >= 0

    def log_density(self, x, mu):
        x = _as_float(x)
        return lmath.xlogy(x, _finite(mu)) - lmath.gammaln(x + 1)

    def normalizer(self, mu):
        return -mu  # mu = inf: -inf, the mass leaves every count

    def sample(self, state, dims, mu):
        return primitive_draw("poisson", state, mu, dims=dims)

    def log_cdf(self, x, mu):  # P(X <= k) = Q(k + 1, mu)
        k = lmath.floor(_as_float(x))
        return lmath.where(k < 0, -np.inf, log_regularized_gamma(lmath.maximum(k, 0.0) + 1, mu, upper=True))

    def log_sf(self, x, mu):
        k = lmath.floor(_as_float(x))
        return lmath.where(k < 0, 0.0, log_regularized_gamma(lmath.maximum(k, 0.0) + 1, mu, upper=False))

    # one incomplete gamma function per bisection step: P(X <= k) = Q(k + 1, mu), P(X > k) = P(k + 1, mu), up to
    # mu + 40 sqrt(mu) + 40, beyond which a Poisson tail has no double-precision mass (mu up to 1e11)
    def icdf_exp(self, lp, mu):
        return _count_quantile(lambda k: lmath.log(lmath.elemwise("gammaincc", k + 1, mu)) >= lp, _poisson_top(mu))

    def isf_exp(self, lq, mu):
        return _count_quantile(lambda k: lmath.log(lmath.elemwise("gammainc", k + 1, mu)) <= lq, _poisson_top(mu))


def _poisson_top(mu):
    return mu + 40 * lmath.sqrt(mu) + 40


@register("negative_binomial")
class NegativeBinomial(Distribution):
    """Failures before the `n`-th success with success probability `p` (scipy.stats.nbinom, NumPy)."""

    names = ("n", "p")
    support = constraints.nonnegative_integer

    def valid(self, n, p):
        return (n > 0) & (p > 0) & (p <= 1)

    def log_density(self, x, n, p):
        x, n_f = _as_float(x), _finite(n)
        # log C(x + n - 1, x) = -log(x + n) - betaln(n, x + 1)
        density = -lmath.log(x + n_f) - lmath.betaln(n_f, x + 1) + n_f * lmath.log(p) + xlog1py(x, -p)
        limit = lmath.where((p == 1) & (x == 0), 0.0, -np.inf)  # n = inf: the mass leaves every count unless p = 1
        return lmath.where(lmath.isinf(n), limit, density)

    def sample(self, state, dims, n, p):
        state, g = primitive_draw("gamma", state, n, dims=dims)  # Poisson-gamma mixture
        return primitive_draw("poisson", state, g * (1 - p) / p, dims=dims)

    # P(X <= k) = I_p(n, k + 1) (no derivative in n)
    def log_cdf(self, x, n, p):
        k = lmath.floor(_as_float(x))
        return lmath.where(k < 0, -np.inf, log_regularized_beta(n, lmath.maximum(k, 0.0) + 1, p))

    def log_sf(self, x, n, p):
        k = lmath.floor(_as_float(x))
        return lmath.where(k < 0, 0.0, log_regularized_beta(n, lmath.maximum(k, 0.0) + 1, p, upper=True))

    def icdf_exp(self, lp, n, p):
        return _count_quantile(lambda k: self.log_cdf(k, n, p) >= lp, _negative_binomial_top(n, p), steps=64)

    def isf_exp(self, lq, n, p):
        return _count_quantile(lambda k: self.log_sf(k, n, p) <= lq, _negative_binomial_top(n, p), steps=64)


def _negative_binomial_top(n, p):
    """A count past which the tail has no double-precision mass: 40 standard deviations above the mean, plus
    the 750 / -log(1 - p) steps in which a geometric tail loses 750 nats (a small n's tail is geometric)."""
    mean = n * (1 - p) / p
    return mean + 40 * lmath.sqrt(mean / p) + 40 + 750 / -lmath.log1p(-lmath.minimum(p, 0.5))


@register("categorical")
class Categorical(_CoreDim):
    """Index along `dim` drawn with probabilities `p` (normalized over `dim`)."""

    names = ("p",)

    @property
    def support(self):
        return constraints.integer_interval(0, None if self.dim.size is None else self.dim.size - 1)

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        p = self.params["p"]
        p_f = _finite(p)
        logp = lmath.log(p_f) - lmath.log(p_f.sum(self.dim))
        hit = arange(self.dim) == x
        picked = lmath.where(hit, logp, 0.0).sum(self.dim)
        inside = hit.any(self.dim)
        # weights at inf take all the mass: one gets it whole, two or more share it as they grow (NaN)
        infinite = lmath.isinf(p)
        shared = _count(infinite, self.dim) > 1
        limit = lmath.where((hit & infinite).any(self.dim), lmath.where(shared, np.nan, 0.0), -np.inf)
        density = lmath.where(inside, lmath.where(infinite.any(self.dim), limit, picked), -np.inf)
        return _invalid_to_nan(density, self.valid(p), check, "categorical")

    def valid(self, p):
        return (p >= 0).all(self.dim) & (p.sum(self.dim) > 0)

    def sample(self, state, dims, p):
        # Gumbel-max: argmax over dim of log p + G, G = -log(-log U)
        state, u = primitive_draw("uniform", state, dims=dims)
        gumbel = -lmath.log(-lmath.log(u))
        return state, (gumbel + lmath.log(p)).argmax(self.dim)

    def _out_dims(self, dims):
        return tuple(d for d in dims if d != self.dim)


