"""Discrete distributions (counts and categories): pmfs in log space, draws, and cdfs by incomplete beta/gamma.

Counts follow scipy.stats (`nbinom(n, p)` counts failures before the n-th
success); a bound of a count's truncation is included.
"""

from __future__ import annotations

import numpy as np

from dimgraph.labeled import math as lmath
from dimgraph.labeled.dims import Dim, resolve_dims
from dimgraph.labeled.math import xlog1py
from dimgraph.labeled.random import primitive_draw
from dimgraph.labeled.shape import arange
from dimgraph.prob import constraints
from dimgraph.prob.base import Distribution, _as_float, _check_option, _CoreDim, _count, _finite, _invalid_to_nan
from dimgraph.prob.registry import register
from dimgraph.prob.tails import halvings, log_diff_exp, log_ndtr, log_regularized_beta, log_regularized_gamma


def _count_quantile(reached, hi, steps=40):
    """The smallest count k >= 0 where `reached(k)` holds (it holds from some k on, at the latest at `hi`), by
    bisection between -1 and `hi` (2**steps above the count reached exactly)."""
    _, hi = halvings(lmath.floor, reached, -1.0 + 0 * hi, hi, steps)
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


@register("discrete_uniform")
class DiscreteUniform(Distribution):
    """The whole numbers `lower`..`upper` (both included), each equally likely: scipy's `randint(lower, upper + 1)`.

    >>> import dimgraph as dg
    >>> d = dg.dist.discrete_uniform(1851, 1960)
    >>> round(float(d.logp(1900).eval(backend="python")), 6), float(d.logp(1961).eval(backend="python"))  # -log(110)
    (-4.70048, -inf)
    """

    names = ("lower", "upper")

    @property
    def support(self):
        return constraints.integer_interval(self.params["lower"], self.params["upper"])

    def valid(self, lower, upper):
        return _is_whole(lower) & _is_whole(upper) & (lower <= upper)

    def log_density(self, x, lower, upper):
        return 0.0 * _as_float(x)

    def normalizer(self, lower, upper):
        return -lmath.log(_count_between(lower, upper))

    def sample(self, state, dims, lower, upper):
        state, u = primitive_draw("uniform", state, dims=dims)
        k = lmath.floor(_as_float(lower) + u * _count_between(lower, upper))
        return state, lmath.astype(lmath.minimum(k, _as_float(upper)), "int64")

    def log_cdf(self, x, lower, upper):  # P(X <= k) = (k - lower + 1) / n between the bounds
        k, lo, hi = lmath.floor(_as_float(x)), _as_float(lower), _as_float(upper)
        inside = lmath.log(lmath.clip(k - lo + 1, 1.0, None)) - lmath.log(_count_between(lower, upper))
        return lmath.where(k < lo, -np.inf, lmath.where(k >= hi, 0.0, inside))

    def log_sf(self, x, lower, upper):  # P(X > k) = (upper - k) / n
        k, lo, hi = lmath.floor(_as_float(x)), _as_float(lower), _as_float(upper)
        inside = lmath.log(lmath.clip(hi - k, 1.0, None)) - lmath.log(_count_between(lower, upper))
        return lmath.where(k < lo, 0.0, lmath.where(k >= hi, -np.inf, inside))

    def icdf_exp(self, lp, lower, upper):  # the smallest k with (k - lower + 1) / n >= exp(lp)
        lo, hi = _as_float(lower), _as_float(upper)
        return lmath.clip(lo - 1 + lmath.ceil(lmath.exp(lp) * _count_between(lower, upper)), lo, hi)

    def isf_exp(self, lq, lower, upper):  # the smallest k with (upper - k) / n <= exp(lq)
        lo, hi = _as_float(lower), _as_float(upper)
        return lmath.clip(lmath.ceil(hi - lmath.exp(lq) * _count_between(lower, upper)), lo, hi)


def _is_whole(v):
    return (lmath.floor(v) == v) & lmath.isfinite(v) if np.dtype(v.type.dtype).kind == "f" else v == v


def _count_between(lower, upper):
    """How many whole numbers lower..upper holds, as a float."""
    return _as_float(upper) - _as_float(lower) + 1


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
    alternatives = ((("mu", "alpha"), ("n", "p"), lambda mu, alpha: _negative_binomial_from_mean(mu, alpha)),)

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


class _PointMass(constraints.IntegerInterval):
    """{c}: the one value of a point mass (discrete, as PyMC's DiracDelta, whatever c's dtype)."""

    def __init__(self, c):
        super().__init__(c, c)

    def __repr__(self):
        return f"point({self.lower!r})"

    def contains(self, x):
        return x == self.lower


def _log_choose(n, k):
    """log C(n, k) = -log(n + 1) - betaln(n - k + 1, k + 1)."""
    return -lmath.log1p(n) - lmath.betaln(n - k + 1, k + 1)


def _is_finite_count(x):
    """A count a pmf is positive at (float counts are whole and finite)."""
    return _is_count(x) & lmath.isfinite(x) if np.dtype(x.type.dtype).kind == "f" else x >= 0


def _and(a, b):
    return b if a is None else a if b is None else a & b


class _Ordered(Distribution):
    """Ordinal outcomes 0..K-1 from a latent eta + noise cut at K - 1 increasing `cutpoints` on `dim`:
    P(Y = k) = F(c_k - eta) - F(c_{k-1} - eta), with c_{-1} = -inf and c_{K-1} = +inf."""

    def __init__(self, *args, dim=None, **kwargs):
        super().__init__(*args, **kwargs)
        what = self.registered_name
        cut = self.params["cutpoints"]
        if dim is None:
            raise TypeError(f"{what}: give the dim of the cutpoints as dim= (one of {cut.dims})")
        (self.dim,) = resolve_dims(cut.dims, dim, what)
        if self.dim.size is None:
            raise ValueError(f"{what}: the cutpoints' dim {self.dim.name!r} needs a static size")

    @property
    def support(self):
        return constraints.integer_interval(0, self.dim.size)

    def _out_dims(self, dims):
        return tuple(d for d in dims if d != self.dim)

    def valid(self, eta, cutpoints, **p):
        increasing = (lmath.diff(cutpoints, self.dim) > 0).all(self.dim.name) if self.dim.size > 1 else None
        return _and(increasing, self._valid_scale(**p))

    def _valid_scale(self, **p):
        return None

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        eta, cut = self.params["eta"], self.params["cutpoints"]
        scale = self._scale()
        k = arange(self.dim)
        hi_hit, lo_hit = k == x, k == x - 1
        has_hi, has_lo = hi_hit.any(self.dim), lo_hit.any(self.dim)
        z_hi = (lmath.where(hi_hit, cut, 0.0).sum(self.dim) - eta) / scale
        z_lo = (lmath.where(lo_hit, cut, 0.0).sum(self.dim) - eta) / scale
        # log F and log S at both cuts (a missing cut is at -inf or +inf), from the tail that keeps precision
        cdf_hi = lmath.where(has_hi, self._log_cdf(z_hi), 0.0)
        cdf_lo = lmath.where(has_lo, self._log_cdf(z_lo), -np.inf)
        sf_hi = lmath.where(has_hi, self._log_cdf(-z_hi), -np.inf)
        sf_lo = lmath.where(has_lo, self._log_cdf(-z_lo), 0.0)
        upper = has_lo & (z_lo > 0)
        density = lmath.where(upper, log_diff_exp(sf_lo, sf_hi), log_diff_exp(cdf_hi, cdf_lo))
        inside = _is_finite_count(x) & (x <= self.dim.size)
        density = lmath.where(inside, density, -np.inf)
        return _invalid_to_nan(density, self.valid(**self.params), check, self.registered_name)

    def sample(self, state, dims, eta, cutpoints, **p):
        state, noise = self._noise(state, tuple(d for d in dims if d != self.dim))
        latent = eta + noise * self._scale()
        return state, lmath.astype(_count(cutpoints < latent, self.dim), "int64")


@register("ordered_logistic")
class OrderedLogistic(_Ordered):
    """Ordinal regression with logistic noise (PyMC's `OrderedLogistic(eta, cutpoints)`): K - 1 cutpoints on `dim`
    give outcomes 0..K-1.

    >>> import dimgraph as dg, numpy as np
    >>> cut = dg.Dim("cut", size=2)
    >>> d = dg.dist.ordered_logistic(0.5, dg.constant(np.array([-1.0, 1.0]), dims=(cut,)), dim=cut)
    >>> round(float(d.logp(1).eval(backend="python")), 6)  # log(sigmoid(0.5) - sigmoid(-1.5))
    -0.820904
    """

    names = ("eta", "cutpoints")

    def _scale(self):
        return 1.0

    def _log_cdf(self, z):
        return -lmath.softplus(-z)

    def _noise(self, state, dims):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, lmath.log(u) - lmath.log1p(-u)


@register("ordered_probit")
class OrderedProbit(_Ordered):
    """Ordinal regression with normal noise of scale `sigma` (PyMC's `OrderedProbit(eta, cutpoints, sigma)`)."""

    names, defaults = ("eta", "cutpoints", "sigma"), {"sigma": 1.0}

    def _valid_scale(self, sigma):
        return sigma > 0

    def _scale(self):
        return self.params["sigma"]

    def _log_cdf(self, z):
        return log_ndtr(z)

    def _noise(self, state, dims):
        return primitive_draw("normal", state, dims=dims)


@register("beta_binomial")
class BetaBinomial(Distribution):
    """Binomial(n, p) with p ~ Beta(alpha, beta) (PyMC's `BetaBinomial(alpha, beta, n)`; scipy's `betabinom(n, alpha, beta)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.beta_binomial(2.0, 3.0, 10).logp(4).eval(backend="python")), 6)
    -1.967112
    """

    names = ("alpha", "beta", "n")

    @property
    def support(self):
        return constraints.integer_interval(0, self.params["n"])

    def valid(self, alpha, beta, n):
        return (alpha > 0) & (beta > 0) & _is_finite_count(n)

    def log_density(self, x, alpha, beta, n):
        x, n = _as_float(x), _as_float(n)
        return _log_choose(n, x) + lmath.betaln(x + alpha, n - x + beta)

    def normalizer(self, alpha, beta, n):
        return -lmath.betaln(alpha, beta)

    def sample(self, state, dims, alpha, beta, n):
        state, g1 = primitive_draw("gamma", state, alpha, dims=dims)
        state, g2 = primitive_draw("gamma", state, beta, dims=dims)
        return primitive_draw("binomial", state, n, g1 / (g1 + g2), dims=dims)


@register("geometric")
class Geometric(Distribution):
    """The trial of the first success, 1, 2, ... (PyMC's `Geometric(p)`, scipy's `geom(p)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.geometric(0.25).logp(3).eval(backend="python")), 6)  # log(0.25 * 0.75^2)
    -1.961659
    """

    names = ("p",)
    support = constraints.integer_interval(1, None)

    def valid(self, p):
        return (p > 0) & (p <= 1)

    def log_density(self, x, p):
        return lmath.log(p) + lmath.where(x == 1, 0.0, (_as_float(x) - 1) * lmath.log1p(-p))

    def sample(self, state, dims, p):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, lmath.astype(self.isf_exp(lmath.log1p(-u), p), "int64")

    # P(X > k) = (1 - p)^k for k >= 0
    def log_sf(self, x, p):
        k = lmath.floor(_as_float(x))
        return lmath.where(k < 1, 0.0, lmath.maximum(k, 1.0) * lmath.log1p(-p))

    def log_cdf(self, x, p):
        k = lmath.floor(_as_float(x))
        return lmath.where(k < 1, -np.inf, lmath.log1mexp(lmath.maximum(k, 1.0) * lmath.log1p(-p)))

    def icdf_exp(self, lp, p):  # the smallest k >= 1 with 1 - (1 - p)^k >= exp(lp)
        return self.isf_exp(lmath.log1mexp(lp), p)

    def isf_exp(self, lq, p):  # the smallest k >= 1 with (1 - p)^k <= exp(lq)
        log_q = lmath.log1p(-p)
        return lmath.maximum(lmath.ceil(lmath.where(log_q < 0, lq / lmath.where(log_q < 0, log_q, -1.0), 1.0)), 1.0)


@register("discrete_weibull")
class DiscreteWeibull(Distribution):
    """P(X = x) = q^(x^beta) - q^((x + 1)^beta) on 0, 1, ... (PyMC's `DiscreteWeibull(q, beta)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.discrete_weibull(0.5, 1.5).logp(1).eval(backend="python")), 6)  # log(0.5 - 0.5^(2^1.5))
    -1.023836
    """

    names = ("q", "beta")
    support = constraints.nonnegative_integer

    def valid(self, q, beta):
        return (q > 0) & (q < 1) & (beta > 0)

    def log_density(self, x, q, beta):
        x, log_q = _as_float(x), lmath.log(q)
        now, after = x**beta, (x + 1) ** beta
        return now * log_q + lmath.log1mexp((after - now) * log_q)

    def sample(self, state, dims, q, beta):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, lmath.astype(self.isf_exp(lmath.log1p(-u), q, beta), "int64")

    # P(X > k) = q^((k + 1)^beta)
    def log_sf(self, x, q, beta):
        k = lmath.floor(_as_float(x))
        return lmath.where(k < 0, 0.0, (lmath.maximum(k, 0.0) + 1) ** beta * lmath.log(q))

    def log_cdf(self, x, q, beta):
        k = lmath.floor(_as_float(x))
        return lmath.where(k < 0, -np.inf, lmath.log1mexp((lmath.maximum(k, 0.0) + 1) ** beta * lmath.log(q)))

    def icdf_exp(self, lp, q, beta):
        return self.isf_exp(lmath.log1mexp(lp), q, beta)

    def isf_exp(self, lq, q, beta):  # the smallest k >= 0 with (k + 1)^beta >= lq / log q
        return lmath.maximum(lmath.ceil((lq / lmath.log(q)) ** (1.0 / beta) - 1), 0.0)


@register("dirac_delta")
class DiracDelta(Distribution):
    """All the mass at `c` (PyMC's `DiracDelta(c)`): log density 0 there, -inf elsewhere; counts where c is.

    >>> import dimgraph as dg
    >>> float(dg.dist.dirac_delta(3).logp(3).eval(backend="python")), float(dg.dist.dirac_delta(3).logp(2).eval(backend="python"))
    (0.0, -inf)
    """

    names = ("c",)

    @property
    def support(self):
        return _PointMass(self.params["c"])

    def valid(self, c):
        return None

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        return lmath.where(x == self.params["c"], 0.0, -np.inf)

    def sample(self, state, dims, c):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, lmath.where(u >= 0, c, c)

    def log_cdf(self, x, c):
        return lmath.where(x < c, -np.inf, 0.0)

    def log_sf(self, x, c):
        return lmath.where(x < c, 0.0, -np.inf)

    def icdf_exp(self, lp, c):
        return c + 0 * lp

    def isf_exp(self, lq, c):
        return c + 0 * lq


@register("hypergeometric")
class HyperGeometric(Distribution):
    """Successes in `n` draws without replacement from `N` items of which `k` are successes (PyMC's
    `HyperGeometric(N, k, n)`; scipy's `hypergeom(N, k, n)`).

    Draws and tails sum the pmf over every count 0..max(N) on one dim, so `N` must be given as numbers.

    >>> import dimgraph as dg
    >>> round(float(dg.dist.hypergeometric(20, 7, 12).logp(4).eval(backend="python")), 6)
    -1.028382
    """

    names = ("N", "k", "n")

    @property
    def support(self):
        N, k, n = (self.params[p] for p in self.names)
        return constraints.integer_interval(lmath.maximum(n - N + k, 0), lmath.minimum(k, n))

    def valid(self, N, k, n):
        return _is_finite_count(N) & _is_finite_count(k) & _is_finite_count(n) & (k <= N) & (n <= N)

    def log_density(self, x, N, k, n):
        x, N, k, n = (_as_float(v) for v in (x, N, k, n))
        return _log_choose(k, x) + _log_choose(N - k, n - x)

    def normalizer(self, N, k, n):
        return -_log_choose(_as_float(N), _as_float(n))

    def _counts(self, what):
        """Every count 0..max(N), on a new dim (N must be numbers)."""
        data = getattr(self.params["N"], "data", None)
        if data is None:
            raise ValueError(
                f"hypergeometric {what}: N must be numbers (the population size sets how many counts "
                f"the {what} sums over), got {self.params['N']!r}"
            )
        top = int(np.max(data))
        return arange(Dim("hypergeometric_count", size=top + 1))

    def _log_pmf_upto(self, x, what):
        """(log P(X = j) for every count j, where j <= x) on the counts' dim, and that dim."""
        j = self._counts(what)
        pmf = self.logp(_as_float(j))
        return pmf, j, j.dims[0]

    def log_cdf(self, x, N, k, n):
        pmf, j, dim = self._log_pmf_upto(x, "logcdf")
        return lmath.logsumexp(lmath.where(j <= x, pmf, -np.inf), dim)

    def log_sf(self, x, N, k, n):
        pmf, j, dim = self._log_pmf_upto(x, "logsf")
        return lmath.logsumexp(lmath.where(j > x, pmf, -np.inf), dim)

    def sample(self, state, dims, N, k, n):
        state, u = primitive_draw("uniform", state, dims=dims)
        pmf, j, dim = self._log_pmf_upto(None, "draw")
        cdf = lmath.cumulative("add", lmath.exp(pmf), dim)
        return state, lmath.astype(_count(cdf <= u, dim), "int64")


def _negative_binomial_from_mean(mu, alpha):
    """PyMC's mean/dispersion form: n = alpha, p = alpha / (mu + alpha)."""
    return {"n": alpha, "p": alpha / (mu + alpha)}


def _log_sigmoid(t):
    return -lmath.softplus(-t)


class _BernoulliLogit(Bernoulli):
    """`bernoulli(logit_p=...)`: the log pmf from log-sigmoids of the logit, exact where p rounds to 0 or 1."""

    names = ("logit_p",)

    def valid(self, logit_p):
        return None

    def log_density(self, x, logit_p):
        return lmath.where(x == 1, _log_sigmoid(logit_p), _log_sigmoid(-logit_p))

    def sample(self, state, dims, logit_p):
        return Bernoulli.sample(self, state, dims, lmath.sigmoid(logit_p))

    def log_cdf(self, x, logit_p):
        return lmath.where(x < 0, -np.inf, lmath.where(x < 1, _log_sigmoid(-logit_p), 0.0))

    def log_sf(self, x, logit_p):
        return lmath.where(x < 0, 0.0, lmath.where(x < 1, _log_sigmoid(logit_p), -np.inf))

    def icdf_exp(self, lp, logit_p):
        return lmath.where(lp > _log_sigmoid(-logit_p), 1.0, 0.0)

    def isf_exp(self, lq, logit_p):
        return lmath.where(_log_sigmoid(logit_p) <= lq, 0.0, 1.0)


class _BinomialLogit(Binomial):
    """`binomial(n, logit_p=...)`: the log pmf from log-sigmoids of the logit, exact where p rounds to 0 or 1."""

    names = ("n", "logit_p")

    def valid(self, n, logit_p):
        return _is_count(n) & lmath.isfinite(n)

    def log_density(self, x, n, logit_p):
        x, n = _as_float(x), _as_float(n)
        return _log_choose(n, x) + x * _log_sigmoid(logit_p) + (n - x) * _log_sigmoid(-logit_p)

    def sample(self, state, dims, n, logit_p):
        return Binomial.sample(self, state, dims, n, lmath.sigmoid(logit_p))

    def log_cdf(self, x, n, logit_p):
        return Binomial.log_cdf(self, x, n, lmath.sigmoid(logit_p))

    def log_sf(self, x, n, logit_p):
        return Binomial.log_sf(self, x, n, lmath.sigmoid(logit_p))

    def icdf_exp(self, lp, n, logit_p):
        return Binomial.icdf_exp(self, lp, n, lmath.sigmoid(logit_p))

    def isf_exp(self, lq, n, logit_p):
        return Binomial.isf_exp(self, lq, n, lmath.sigmoid(logit_p))


def _logit_form(cls, logit_cls):
    """`cls(..., logit_p=...)` builds `logit_cls` (PyMC's `logit_p`): `p` and `logit_p` are one parameter."""

    def __new__(kind, *args, **kwargs):
        if kind is cls and "logit_p" in kwargs:
            if "p" in kwargs or len(args) >= len(cls.names):
                raise TypeError(f"{cls.registered_name}: give p or logit_p, not both")
            return object.__new__(logit_cls)
        return object.__new__(kind)

    cls.__new__ = __new__


_logit_form(Bernoulli, _BernoulliLogit)
_logit_form(Binomial, _BinomialLogit)


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
