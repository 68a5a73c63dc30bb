"""Counts with extra zeros: the zero-inflated and hurdle families (PyMC's), each wrapping its base distribution.

`psi` is the probability of the base component: of a draw from the base for
zero-inflation (1 - psi of an extra zero), of a nonzero value for a hurdle (1 - psi
of a zero, the rest drawn from the base restricted to its positive values). The
base's numerics, limits and tails carry over; `mu`/`alpha` name the negative
binomial base as PyMC's do.
"""

from __future__ import annotations

import numpy as np

from dimgraph.labeled import math as lmath
from dimgraph.labeled.random import primitive_draw
from dimgraph.prob import constraints
from dimgraph.prob.base import Distribution, _check_option, _invalid_to_nan
from dimgraph.prob.continuous import Gamma, LogNormal
from dimgraph.prob.discrete import Binomial, NegativeBinomial, Poisson, _negative_binomial_from_mean, _prob
from dimgraph.prob.factories import Truncated
from dimgraph.prob.registry import register
from dimgraph.prob.tails import log_diff_exp


def _and(a, b):
    return b if a is None else a if b is None else a & b


def _and(a, b):
    return b if a is None else a if b is None else a & b


class _Wrapping(Distribution):
    """A distribution of `psi` and a base distribution's parameters (`base_cls.names`), built on `self.base`."""

    base_cls: type = Distribution

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.base = self.base_cls(**{k: self.params[k] for k in self.base_cls.names})

    @property
    def support(self):
        """The base's values and 0."""
        return constraints.nonnegative_integer if self.base.discrete else constraints.nonnegative

    def valid(self, psi, **_):
        return _and(_prob(psi), self.base.valid(**self.base.params))

    def log_cdf(self, x, psi, **p):
        return lmath.where(x < 0, -np.inf, lmath.log1mexp(lmath.minimum(self.log_sf(x, psi, **p), 0.0)))


class _ZeroInflated(_Wrapping):
    """psi: the probability of a draw from the base; 1 - psi of an extra zero (PyMC's zero-inflated counts)."""

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        psi = self.params["psi"]
        base = lmath.log(psi) + self.base.logp(x, check=check)
        density = lmath.where(x == 0, lmath.logaddexp(lmath.log1p(-psi), base), base)
        return _invalid_to_nan(density, _prob(psi), check, self.registered_name)

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


@register("zero_inflated_poisson")
class ZeroInflatedPoisson(_ZeroInflated):
    """Poisson(mu) with probability psi, else 0 (PyMC's `ZeroInflatedPoisson(psi, mu)`).

    >>> import dimgraph as dg, math
    >>> round(float(dg.dist.zero_inflated_poisson(0.7, 2.0).logp(0).eval(backend="python")), 6)  # log(0.3 + 0.7 e^-2)
    -0.929541
    """

    names = ("psi", "mu")
    base_cls = Poisson


@register("zero_inflated_binomial")
class ZeroInflatedBinomial(_ZeroInflated):
    """Binomial(n, p) with probability psi, else 0 (PyMC's `ZeroInflatedBinomial(psi, n, p)`)."""

    names = ("psi", "n", "p")
    base_cls = Binomial


@register("zero_inflated_negative_binomial")
class ZeroInflatedNegativeBinomial(_ZeroInflated):
    """NegativeBinomial(n, p) with probability psi, else 0; `mu`/`alpha` as PyMC's (n = alpha, p = alpha / (mu + alpha))."""

    names = ("psi", "n", "p")
    base_cls = NegativeBinomial
    alternatives = ((("mu", "alpha"), ("n", "p"), _negative_binomial_from_mean),)


class _Hurdle(_Wrapping):
    """psi: the probability of a nonzero value, drawn from the base restricted to its positive values; 1 - psi of 0."""

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        psi = self.params["psi"]
        positive = lmath.log(psi) + self.base.logp(x, check=check) - self._log_positive()
        density = lmath.where(x == 0, lmath.log1p(-psi), lmath.where(x > 0, positive, -np.inf))
        return _invalid_to_nan(density, _prob(psi), check, self.registered_name)

    def _log_positive(self):
        """log P_base(X > 0): the base's mass a nonzero value is drawn from (1 for a continuous base)."""
        return (
            lmath.log1mexp(self.base.logp(0)) if self.discrete else 0.0
        )  # 1 - P(0): differentiable in every parameter

    def sample(self, state, dims, psi, **p):
        state, u = primitive_draw("uniform", state, dims=dims)
        state, y = self._positive_draw(state, dims, **p)
        return state, lmath.where(u < psi, y, 0)

    def _positive_draw(self, state, dims, **p):
        """Draws of the base restricted to x > 0: its truncation's inverse cdf (a continuous base: its own draws)."""
        if not self.discrete:
            return self.base.sample(state, dims, **p)
        state, y = Truncated(self.base, lower=1)._inverse_cdf(state, dims)
        return state, lmath.astype(y, "int64")

    def log_sf(self, x, psi, **p):
        tail = lmath.log(psi) + self.base.log_sf(lmath.maximum(x, 0), **p) - self._log_positive()
        return lmath.where(x < 0, 0.0, tail)


@register("hurdle_poisson")
class HurdlePoisson(_Hurdle):
    """0 with probability 1 - psi, else Poisson(mu) restricted to 1, 2, ... (PyMC's `HurdlePoisson(psi, mu)`)."""

    names = ("psi", "mu")
    base_cls = Poisson

    def _positive_draw(self, state, dims, mu):
        # 1 + the events after the first one of a rate-1 process on [0, mu] that has one: the first arrival T has
        # density e^-t / (1 - e^-mu) on [0, mu], the rest are Poisson(mu - T) (exact, no cdf inverted)
        state, u = primitive_draw("uniform", state, dims=dims)
        first = -lmath.log1p(u * lmath.expm1(-mu))
        state, rest = primitive_draw("poisson", state, lmath.maximum(mu - first, 0.0), dims=dims)
        return state, rest + 1


@register("hurdle_negative_binomial")
class HurdleNegativeBinomial(_Hurdle):
    """0 with probability 1 - psi, else NegativeBinomial(n, p) restricted to 1, 2, ... (`mu`/`alpha` too)."""

    names = ("psi", "n", "p")
    base_cls = NegativeBinomial
    alternatives = ((("mu", "alpha"), ("n", "p"), _negative_binomial_from_mean),)


@register("hurdle_gamma")
class HurdleGamma(_Hurdle):
    """0 with probability 1 - psi, else Gamma(alpha, beta) (PyMC's `HurdleGamma(psi, alpha, beta)`)."""

    names = ("psi", "alpha", "beta")
    base_cls = Gamma


@register("hurdle_lognormal")
class HurdleLogNormal(_Hurdle):
    """0 with probability 1 - psi, else LogNormal(mu, sigma) (PyMC's `HurdleLogNormal(psi, mu, sigma)`)."""

    names = ("psi", "mu", "sigma")
    base_cls = LogNormal
