"""Counts beyond the basic ones: zero-inflated and hurdle counts, ordinal outcomes, the beta-binomial, geometric,
discrete Weibull, hypergeometric and the point mass (DiracDelta).

Parameters follow PyMC. The zero-inflated and hurdle families wrap their base distribution (`psi` is the
probability of the base component: of a draw from the base for zero-inflation, of a nonzero value for a hurdle),
so the base's numerics, limits and tails carry over.
"""

from __future__ import annotations

import math

import numpy as np

from dimgraph.labeled import math as lmath
from dimgraph.labeled.dims import Dim, resolve_dims
from dimgraph.labeled.distributions import (
    Binomial,
    Distribution,
    Gamma,
    LogNormal,
    NegativeBinomial,
    Poisson,
    _as_float,
    _check_option,
    _count,
    _invalid_to_nan,
    _is_count,
    _is_finite_count,
    _prob,
)
from dimgraph.labeled.distributions_factories import Truncated
from dimgraph.labeled.random import labeled_params, primitive_draw
from dimgraph.labeled.shape import arange
from dimgraph.labeled.tails import log_diff_exp, log_ndtr
from dimgraph.labeled.basic import constant


def _and(a, b):
    return b if a is None else a if b is None else a & b


def _log_choose(n, k):
    """log C(n, k) = -log(n + 1) - betaln(n - k + 1, k + 1)."""
    return -lmath.log1p(n) - lmath.betaln(n - k + 1, k + 1)


class _Wrapping(Distribution):
    """A distribution of `psi` and a base distribution's parameters (`base_cls.names`), built on `self.base`."""

    base_cls: type = Distribution

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.base = self.base_cls(**{k: self.params[k] for k in self.base_cls.names})
        self.discrete = self.base_cls.discrete

    def valid(self, psi, **_):
        return _and(_prob(psi), self.base.valid(**self.base.params))

    def log_cdf(self, x, psi, **p):
        return lmath.where(x < 0, -np.inf, lmath.log1mexp(lmath.minimum(self.log_sf(x, psi, **p), 0.0)))


class _ZeroInflated(_Wrapping):
    """psi: the probability of a draw from the base; 1 - psi of an extra zero (PyMC's zero-inflated counts)."""

    default_transform = None
    discrete = True

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        psi = self.params["psi"]
        base = lmath.log(psi) + self.base.logp(x, check=check)
        density = lmath.where(x == 0, lmath.logaddexp(lmath.log1p(-psi), base), base)
        return _invalid_to_nan(density, _prob(psi), check, type(self).__name__.lower())

    def sample(self, state, dims, psi, **p):
        state, u = primitive_draw("uniform", state, dims=dims)
        state, y = self.base.sample(state, dims, **p)
        return state, lmath.where(u < psi, y, 0)

    # P(X > k) = psi P_base(X > k) for k >= 0
    def log_sf(self, x, psi, **p):
        return lmath.where(x < 0, 0.0, lmath.log(psi) + self.base.log_sf(x, **p))

    def log_cdf(self, x, psi, **p):
        inner = lmath.logaddexp(lmath.log1p(-psi), lmath.log(psi) + self.base.log_cdf(x, **p))
        return lmath.where(x < 0, -np.inf, inner)

    # the base's quantile of the probability left once the extra zeros are taken out
    def icdf_exp(self, lp, psi, **p):
        zeros = lmath.log1p(-psi)
        above = lp > zeros
        rest = log_diff_exp(lmath.where(above, lp, 0.0), lmath.where(above, zeros, -np.inf)) - lmath.log(psi)
        return lmath.where(above, self.base.icdf_exp(lmath.minimum(rest, 0.0), **p), 0.0)

    def isf_exp(self, lq, psi, **p):
        below = lq < lmath.log(psi)
        return lmath.where(below, self.base.isf_exp(lmath.minimum(lq - lmath.log(psi), 0.0), **p), 0.0)


class ZeroInflatedPoisson(_ZeroInflated):
    """Poisson(mu) with probability psi, else 0 (PyMC's `ZeroInflatedPoisson(psi, mu)`).

    >>> import dimgraph as dg, math
    >>> round(float(dg.dist.zero_inflated_poisson(0.7, 2.0).logp(0).eval(backend="python")), 6)  # log(0.3 + 0.7 e^-2)
    -0.997034
    """

    names = ("psi", "mu")
    base_cls = Poisson


class ZeroInflatedBinomial(_ZeroInflated):
    """Binomial(n, p) with probability psi, else 0 (PyMC's `ZeroInflatedBinomial(psi, n, p)`)."""

    names = ("psi", "n", "p")
    base_cls = Binomial


class ZeroInflatedNegativeBinomial(_ZeroInflated):
    """NegativeBinomial(n, p) with probability psi, else 0; `mu`/`alpha` as PyMC's (n = alpha, p = alpha / (mu + alpha))."""

    names = ("psi", "n", "p")
    base_cls = NegativeBinomial


class _Hurdle(_Wrapping):
    """psi: the probability of a nonzero value, drawn from the base restricted to its positive values; 1 - psi of 0."""

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        psi = self.params["psi"]
        positive = lmath.log(psi) + self.base.logp(x, check=check) - self._log_positive()
        density = lmath.where(x == 0, lmath.log1p(-psi), lmath.where(x > 0, positive, -np.inf))
        return _invalid_to_nan(density, _prob(psi), check, type(self).__name__.lower())

    def _log_positive(self):
        """log P_base(X > 0): the base's mass a nonzero value is drawn from (1 for a continuous base)."""
        return self.base.logsf(0) if self.discrete else 0.0

    def sample(self, state, dims, psi, **p):
        state, u = primitive_draw("uniform", state, dims=dims)
        if self.discrete:
            state, y = Truncated(self.base, lower=1)._inverse_cdf(state, dims)
            y = lmath.astype(y, "int64")
        else:
            state, y = self.base.sample(state, dims, **p)
        return state, lmath.where(u < psi, y, 0)

    def log_sf(self, x, psi, **p):
        tail = lmath.log(psi) + self.base.log_sf(lmath.maximum(x, 0), **p) - self._log_positive()
        return lmath.where(x < 0, 0.0, tail)


class HurdlePoisson(_Hurdle):
    """0 with probability 1 - psi, else Poisson(mu) restricted to 1, 2, ... (PyMC's `HurdlePoisson(psi, mu)`)."""

    names = ("psi", "mu")
    base_cls = Poisson
    default_transform = None
    discrete = True


class HurdleNegativeBinomial(_Hurdle):
    """0 with probability 1 - psi, else NegativeBinomial(n, p) restricted to 1, 2, ... (`mu`/`alpha` too)."""

    names = ("psi", "n", "p")
    base_cls = NegativeBinomial
    default_transform = None
    discrete = True


class HurdleGamma(_Hurdle):
    """0 with probability 1 - psi, else Gamma(alpha, beta) (PyMC's `HurdleGamma(psi, alpha, beta)`)."""

    names = ("psi", "alpha", "beta")
    base_cls = Gamma
    default_transform = None


class HurdleLogNormal(_Hurdle):
    """0 with probability 1 - psi, else LogNormal(mu, sigma) (PyMC's `HurdleLogNormal(psi, mu, sigma)`)."""

    names = ("psi", "mu", "sigma")
    base_cls = LogNormal
    default_transform = None


class _Ordered(Distribution):
    """Ordinal outcomes 0..K-1 from a latent eta + noise cut at K - 1 increasing `cutpoints` on `dim`:
    P(Y = k) = F(c_k - eta) - F(c_{k-1} - eta), with c_{-1} = -inf and c_{K-1} = +inf."""

    default_transform = None
    discrete = True

    def __init__(self, *args, dim=None, **kwargs):
        super().__init__(*args, **kwargs)
        what = type(self).__name__.lower()
        cut = self.params["cutpoints"]
        if dim is None:
            raise TypeError(f"{what}: give the dim of the cutpoints as dim= (one of {cut.dims})")
        (self.dim,) = resolve_dims(cut.dims, dim, what)
        if self.dim.size is None:
            raise ValueError(f"{what}: the cutpoints' dim {self.dim.name!r} needs a static size")

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
        return _invalid_to_nan(density, self.valid(**self.params), check, type(self).__name__.lower())

    def sample(self, state, dims, eta, cutpoints, **p):
        state, noise = self._noise(state, tuple(d for d in dims if d != self.dim))
        latent = eta + noise * self._scale()
        return state, lmath.astype(_count(cutpoints < latent, self.dim), "int64")


class OrderedLogistic(_Ordered):
    """Ordinal regression with logistic noise (PyMC's `OrderedLogistic(eta, cutpoints)`): K - 1 cutpoints on `dim`
    give outcomes 0..K-1.

    >>> import dimgraph as dg, numpy as np
    >>> cut = dg.Dim("cut", size=2)
    >>> d = dg.dist.ordered_logistic(0.5, dg.constant(np.array([-1.0, 1.0]), dims=(cut,)), dim=cut)
    >>> round(float(d.logp(1).eval(backend="python")), 6)  # log(sigmoid(0.5) - sigmoid(-1.5))
    -0.723048
    """

    names = ("eta", "cutpoints")

    def _scale(self):
        return 1.0

    def _log_cdf(self, z):
        return -lmath.softplus(-z)

    def _noise(self, state, dims):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, lmath.log(u) - lmath.log1p(-u)


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


class BetaBinomial(Distribution):
    """Binomial(n, p) with p ~ Beta(alpha, beta) (PyMC's `BetaBinomial(alpha, beta, n)`; scipy's `betabinom(n, alpha, beta)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.beta_binomial(2.0, 3.0, 10).logp(4).eval(backend="python")), 6)
    -1.82999
    """

    names = ("alpha", "beta", "n")
    default_transform = None
    discrete = True

    def valid(self, alpha, beta, n):
        return (alpha > 0) & (beta > 0) & _is_finite_count(n)

    def support(self, x, alpha, beta, n):
        return _is_finite_count(x) & (x <= n)

    def log_density(self, x, alpha, beta, n):
        x, n = _as_float(x), _as_float(n)
        return _log_choose(n, x) + lmath.betaln(x + alpha, n - x + beta)

    def normalizer(self, alpha, beta, n):
        return -lmath.betaln(alpha, beta)

    def sample(self, state, dims, alpha, beta, n):
        state, g1 = primitive_draw("gamma", state, alpha, dims=dims)
        state, g2 = primitive_draw("gamma", state, beta, dims=dims)
        return primitive_draw("binomial", state, n, g1 / (g1 + g2), dims=dims)


class Geometric(Distribution):
    """The trial of the first success, 1, 2, ... (PyMC's `Geometric(p)`, scipy's `geom(p)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.geometric(0.25).logp(3).eval(backend="python")), 6)  # log(0.25 * 0.75^2)
    -1.961659
    """

    names = ("p",)
    default_transform = None
    discrete = True

    def valid(self, p):
        return (p > 0) & (p <= 1)

    def support(self, x, p):
        return _is_finite_count(x) & (x >= 1)

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


class DiscreteWeibull(Distribution):
    """P(X = x) = q^(x^beta) - q^((x + 1)^beta) on 0, 1, ... (PyMC's `DiscreteWeibull(q, beta)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.discrete_weibull(0.5, 1.5).logp(1).eval(backend="python")), 6)  # log(0.5 - 0.5^(2^1.5))
    -0.970436
    """

    names = ("q", "beta")
    default_transform = None
    discrete = True

    def valid(self, q, beta):
        return (q > 0) & (q < 1) & (beta > 0)

    def support(self, x, q, beta):
        return _is_finite_count(x)

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


class DiracDelta(Distribution):
    """All the mass at `c` (PyMC's `DiracDelta(c)`): log density 0 there, -inf elsewhere; counts where c is.

    >>> import dimgraph as dg
    >>> float(dg.dist.dirac_delta(3).logp(3).eval(backend="python")), float(dg.dist.dirac_delta(3).logp(2).eval(backend="python"))
    (0.0, -inf)
    """

    names = ("c",)
    default_transform = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.discrete = np.dtype(self.params["c"].type.dtype).kind in "biu"

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


class HyperGeometric(Distribution):
    """Successes in `n` draws without replacement from `N` items of which `k` are successes (PyMC's
    `HyperGeometric(N, k, n)`; scipy's `hypergeom(N, k, n)`).

    Draws and tails sum the pmf over every count 0..max(N) on one dim, so `N` must be given as numbers.

    >>> import dimgraph as dg
    >>> round(float(dg.dist.hypergeometric(20, 7, 12).logp(4).eval(backend="python")), 6)
    -1.052149
    """

    names = ("N", "k", "n")
    default_transform = None
    discrete = True

    def valid(self, N, k, n):
        return _is_finite_count(N) & _is_finite_count(k) & _is_finite_count(n) & (k <= N) & (n <= N)

    def support(self, x, N, k, n):
        return _is_finite_count(x) & (x <= k) & (x <= n) & (n - x <= N - k)

    def log_density(self, x, N, k, n):
        x, N, k, n = (_as_float(v) for v in (x, N, k, n))
        return _log_choose(k, x) + _log_choose(N - k, n - x)

    def normalizer(self, N, k, n):
        return -_log_choose(_as_float(N), _as_float(n))

    def _counts(self, what):
        """Every count 0..max(N), on a new dim (N must be numbers)."""
        data = getattr(self.params["N"], "data", None)
        if data is None:
            raise ValueError(f"hypergeometric {what}: N must be numbers (the population size sets how many counts "
                             f"the {what} sums over), got {self.params['N']!r}")
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
