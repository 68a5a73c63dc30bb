"""Distributions made from others: `Mixture` (components on a named dim, `NormalMixture` its normal case),
`Censored` and `Truncated`.

Each wraps distributions of `dg.dist` and is one itself (`logp`, `draw`,
`support`), so it can be observed, sampled or wrapped again.
- `Mixture(w, comp_dists, dim=comp)`: `comp_dists` is one distribution whose
  parameters carry `comp` (a mixture of normals with `mu` on comp) or a list
  with one distribution per position of `comp`; the weights `w` are on `comp`
  (normalized over it, as `categorical`). The log density is a logsumexp
  over `comp`; a draw picks a component by its weight.
- `Censored(dist, lower, upper)`: values beyond a bound are recorded at the
  bound, which then carries the tail's probability (`logcdf(lower)`,
  `logsf(upper)`); draws are clipped (PyMC's `Censored`).
- `Truncated(dist, lower, upper)`: `dist` restricted to [lower, upper] and
  renormalized by the mass between the bounds, taken from whichever tail
  keeps its precision; draws invert the base's cdf at a uniform draw between
  the bounds' probabilities (in log space, from the upper tail above the
  median), so a bound far in a tail costs nothing.
Bounds are numbers or labeled variables (broadcast by dim name); None leaves
a side open. For counts a bound is included: `truncated(poisson(3), lower=1)`
is the zero-truncated Poisson.
"""

from __future__ import annotations

import math

import numpy as np

from dimgraph.errors import DimError
from dimgraph.labeled import math as lmath
from dimgraph.labeled.dims import resolve_dims
from dimgraph.labeled.random import draw_dims, labeled_params, primitive_draw
from dimgraph.labeled.shape import arange
from dimgraph.prob import constraints
from dimgraph.prob.base import Distribution, _check_option, _invalid_draws, _invalid_to_nan, draw_on, param_dims
from dimgraph.prob.continuous import Normal
from dimgraph.prob.discrete import Categorical
from dimgraph.prob.registry import register
from dimgraph.prob.tails import log_diff_exp

_LOG_HALF = math.log(0.5)


def _univariate(dist, what):
    if not isinstance(dist, Distribution):
        raise TypeError(f"{what}: expected a dg.dist distribution, got {dist!r}")
    if not (hasattr(dist, "log_cdf") and hasattr(dist, "icdf_exp")):
        raise TypeError(
            f"{what}: {type(dist).__name__.lower()} has no logcdf/logsf, which {what} needs "
            "(univariate distributions with an elementary, incomplete-gamma or incomplete-beta cdf have them)"
        )
    return dist


def _bounds(lower, upper, what):
    given = {k: v for k, v in (("lower", lower), ("upper", upper)) if v is not None}
    if not given:
        raise TypeError(f"{what}: give lower=, upper= or both")
    return dict(zip(given, labeled_params(given, what)))


def _inside(x, lower, upper):
    out = None
    if lower is not None:
        out = x >= lower
    if upper is not None:
        out = (x <= upper) if out is None else out & (x <= upper)
    return out


def _ordered(lower, upper):
    """Where lower < upper (None: no condition)."""
    return None if lower is None or upper is None else lower < upper


def _and(a, b):
    return b if a is None else a if b is None else a & b


class _Bounded(Distribution):
    """A univariate base distribution with `lower`/`upper` bounds (either may be None)."""

    def __init__(self, dist, lower=None, upper=None):
        what = type(self).__name__.lower()
        self.base = _univariate(dist, what)
        self.params = _bounds(lower, upper, what)
        self.lower, self.upper = self.params.get("lower"), self.params.get("upper")

    @property
    def support(self):
        """The values between the bounds (whole numbers for a count base); an open side is open."""
        kind = constraints.integer_interval if self.base.discrete else constraints.interval
        return kind(self.lower, self.upper)

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({self.base!r}, {inner})"

    def valid(self, **_):
        return _and(self.base.valid(**self.base.params), _ordered(self.lower, self.upper))

    def _below(self, bound):
        """The last value below `bound`: bound - 1 for counts (bounds are included), the bound itself otherwise."""
        return bound - 1 if self.discrete else bound


@register("censored")
class Censored(_Bounded):
    """`dist` with values beyond `lower`/`upper` recorded at the bound (PyMC's `Censored`).

    >>> import dimgraph as dg, numpy as np
    >>> c = dg.dist.censored(dg.dist.normal(0.0, 1.0), lower=-1.0, upper=1.0)
    >>> np.round(c.logp(dg.constant(np.array([-1.0, 0.0, 1.0, 2.0]), dims=(dg.Dim("i", size=4),))).eval(backend="python").values, 6)
    array([-1.841022, -0.918939, -1.841022,      -inf])
    """

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        lower, upper, base = self.lower, self.upper, self.base
        inside = _inside(x, lower, upper)
        density = base.logp(lmath.clip(x, lower, upper))
        if upper is not None:  # P(X >= upper): for counts P(X > upper - 1)
            density = lmath.where(x == upper, base.logsf(self._below(upper)), density)
        if lower is not None:
            density = lmath.where(x == lower, base.logcdf(lower), density)
        density = lmath.where(inside, density, -np.inf)
        ordered = _ordered(lower, upper)
        return density if ordered is None else _invalid_to_nan(density, ordered, check, "censored")

    def draw(self, state, extra_dims=()):
        dims = draw_dims([*self.params.values()], extra_dims, "censored draw")
        dims = dims + tuple(d for d in param_dims(self.base) if d not in dims)
        state, value = draw_on(self.base, state, dims)
        return state, _invalid_draws(
            lmath.clip(value, self.lower, self.upper), _ordered(self.lower, self.upper)
        ).transpose(*dims)


@register("truncated")
class Truncated(_Bounded):
    """`dist` restricted to [lower, upper] and renormalized (PyMC's `Truncated`).

    >>> import dimgraph as dg
    >>> t = dg.dist.truncated(dg.dist.normal(0.0, 1.0), lower=0.0)  # the half-normal
    >>> round(float(t.logp(1.0).eval(backend="python")), 6), round(float(dg.dist.halfnormal(1.0).logp(1.0).eval(backend="python")), 6)
    (-0.725791, -0.725791)
    """

    def log_mass(self):
        """log P(lower <= X <= upper) of the base, from the tail of the lower bound that keeps precision."""
        base, lower, upper = self.base, self.lower, self.upper
        if lower is None:
            return base.logcdf(upper)
        below = self._below(lower)
        if upper is None:
            return base.logsf(below)
        lo_cdf, hi_cdf = base.logcdf(below), base.logcdf(upper)
        lo_sf, hi_sf = base.logsf(below), base.logsf(upper)
        high = lo_cdf > _LOG_HALF  # the lower bound is above the median: subtract survival probabilities
        return lmath.where(high, log_diff_exp(lo_sf, hi_sf), log_diff_exp(hi_cdf, lo_cdf))

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        inside = _inside(x, self.lower, self.upper)
        density = lmath.where(inside, self.base.logp(lmath.clip(x, self.lower, self.upper)) - self.log_mass(), -np.inf)
        ordered = _ordered(self.lower, self.upper)
        return density if ordered is None else _invalid_to_nan(density, ordered, check, "truncated")

    def draw(self, state, extra_dims=()):
        dims = draw_dims([*self.params.values()], extra_dims, "truncated draw")
        dims = dims + tuple(d for d in param_dims(self.base) if d not in dims)
        state, value = self._inverse_cdf(state, dims)
        if self.discrete:
            value = lmath.astype(value, "int64")
        return state, _invalid_draws(value, self.valid()).transpose(*dims)

    def _inverse_cdf(self, state, dims):
        """The base's quantile of a uniform draw between the bounds' cdfs (survival probabilities above the median)."""
        base, lower, upper, p = self.base, self.lower, self.upper, self.base.params
        state, u = primitive_draw("uniform", state, dims=dims)
        log_v = lmath.log1p(-u)  # uniform on (0, 1]: log_v is finite
        if lower is None:
            value = base.icdf_exp(base.logcdf(upper) + log_v, **p)
        elif upper is None:
            value = base.isf_exp(base.logsf(self._below(lower)) + log_v, **p)
        else:
            below = self._below(lower)
            lo_cdf, hi_cdf, lo_sf, hi_sf = base.logcdf(below), base.logcdf(upper), base.logsf(below), base.logsf(upper)
            from_cdf = base.icdf_exp(lmath.logaddexp(lo_cdf, log_v + log_diff_exp(hi_cdf, lo_cdf)), **p)
            from_sf = base.isf_exp(lmath.logaddexp(hi_sf, log_v + log_diff_exp(lo_sf, hi_sf)), **p)
            value = lmath.where(lo_cdf > _LOG_HALF, from_sf, from_cdf)
        return state, lmath.clip(value, lower, upper)  # rounding never leaves the interval


@register("truncated_normal")
class TruncatedNormal(Truncated):
    """Normal(mu, sigma) restricted to [lower, upper] (PyMC's `TruncatedNormal`; scipy's `truncnorm`): the
    normal's `truncated`, with its tails taken from whichever side keeps precision.

    >>> import dimgraph as dg
    >>> round(float(dg.dist.truncated_normal(0.0, 1.0, lower=0.0).logp(1.0).eval(backend="python")), 6)  # halfnormal
    -0.725791
    """

    names = ("mu", "sigma", "lower", "upper")

    def __init__(self, mu=0.0, sigma=1.0, lower=None, upper=None):
        super().__init__(Normal(mu, sigma), lower=lower, upper=upper)

    # the base's probability between the lower bound and x (x and the upper bound), from the tail that keeps it
    def log_cdf(self, x, lower=None, upper=None):
        base, x = self.base, lmath.clip(x, lower, upper)
        if lower is None:
            return base.logcdf(x) - self.log_mass()
        high = base.logcdf(lower) > _LOG_HALF
        between = lmath.where(
            high, log_diff_exp(base.logsf(lower), base.logsf(x)), log_diff_exp(base.logcdf(x), base.logcdf(lower))
        )
        return lmath.where(x < lower, -np.inf, between - self.log_mass())

    def log_sf(self, x, lower=None, upper=None):
        base, x = self.base, lmath.clip(x, lower, upper)
        if upper is None:
            return base.logsf(x) - self.log_mass()
        high = base.logcdf(x) > _LOG_HALF
        between = lmath.where(
            high, log_diff_exp(base.logsf(x), base.logsf(upper)), log_diff_exp(base.logcdf(upper), base.logcdf(x))
        )
        return between - self.log_mass()


@register("mixture")
class Mixture(Distribution):
    """Components on the named dim `dim`, weighted by `w` on it (PyMC's `Mixture(w, comp_dists)`).

    >>> import dimgraph as dg, numpy as np
    >>> comp = dg.Dim("comp", size=2)
    >>> mix = dg.dist.mixture(dg.constant(np.array([0.3, 0.7]), dims=(comp,)),
    ...                       dg.dist.normal(dg.constant(np.array([-2.0, 2.0]), dims=(comp,)), 1.0), dim=comp)
    >>> round(float(mix.logp(0.0).eval(backend="python")), 6)  # log(0.3 N(0; -2, 1) + 0.7 N(0; 2, 1))
    -2.918939
    """

    def __init__(self, w, comp_dists, dim=None):
        (w,) = labeled_params({"w": w}, "mixture")
        if dim is None:
            raise TypeError(f"mixture: give the components' dim as dim= (one of the weights' dims {w.dims})")
        (self.dim,) = resolve_dims(w.dims, dim, "mixture: dim")
        if isinstance(comp_dists, Distribution):
            if self.dim not in param_dims(comp_dists):
                raise DimError(
                    f"mixture: the components' parameters must be on dim {self.dim.name!r}, got dims {param_dims(comp_dists)}"
                )
            self.components, self.stacked = (comp_dists,), comp_dists
        else:
            self.components, self.stacked = tuple(comp_dists), None
            if not self.components or not all(isinstance(c, Distribution) for c in self.components):
                raise TypeError(f"mixture: comp_dists must be a distribution or a list of them, got {comp_dists!r}")
            if len(self.components) != self.dim.size:
                raise DimError(
                    f"mixture: {len(self.components)} components for dim {self.dim.name!r} of size {self.dim.size}"
                )
        self.params = {"w": w}

    @property
    def support(self):
        """The union of the components' supports (an interval spans their bounds; differing ones: the real line)."""
        return constraints.union(
            [c.support for c in self.components],
            lambda lows: self._over_components(lows, lmath.minimum, "min"),
            lambda highs: self._over_components(highs, lmath.maximum, "max"),
        )

    def _over_components(self, values, pick, reduction):
        """The min or max of one value per component (a stacked component's: over `dim`)."""
        if self.stacked is not None:
            (v,) = values
            return getattr(v, reduction)(self.dim) if self.dim in getattr(v, "dims", ()) else v
        if not any(hasattr(v, "dims") for v in values):
            return min(values) if reduction == "min" else max(values)
        out = values[0]
        for v in values[1:]:
            out = pick(out, v)
        return out

    def log_weights(self):
        w = self.params["w"]
        return lmath.log(w) - lmath.log(w.sum(self.dim))

    def valid(self, **_):
        """Weights non-negative, finite, not all zero, and every component's parameters valid."""
        w = self.params["w"]
        ok = ((w >= 0) & lmath.isfinite(w)).all(self.dim) & (w.sum(self.dim) > 0)
        for comp in self.components:
            comp_ok = comp.valid(**comp.params)
            if comp_ok is not None:
                ok = ok & (comp_ok.all(self.dim) if self.dim in comp_ok.dims else comp_ok)
        return ok

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        if self.dim in x.dims:
            raise DimError(
                f"mixture: the value must not be on the components' dim {self.dim.name!r}, got dims {x.dims}"
            )
        logw = self.log_weights()
        if self.stacked is not None:
            density = lmath.logsumexp(logw + self.stacked.logp(x), self.dim)
        else:
            density = None
            for k, comp in enumerate(self.components):
                term = logw.isel({self.dim: k}) + comp.logp(x)
                density = term if density is None else lmath.logaddexp(density, term)
        return _invalid_to_nan(density, self.valid(), check, "mixture")

    def draw(self, state, extra_dims=()):
        dims = draw_dims([self.params["w"]], extra_dims, "mixture draw")
        for comp in self.components:
            dims = dims + tuple(d for d in param_dims(comp) if d not in dims)
        out = tuple(d for d in dims if d != self.dim)
        state, which = draw_on(Categorical(self.params["w"], dim=self.dim), state, out)
        if self.stacked is not None:
            state, values = draw_on(self.stacked, state, dims)
            value = lmath.where(arange(self.dim) == which, values, 0).sum(self.dim)
        else:
            value = None
            for k, comp in enumerate(self.components):
                state, v = draw_on(comp, state, out)
                value = v if value is None else lmath.where(which == k, v, value)
        return state, _invalid_draws(value, self.valid()).transpose(*out)


@register("normal_mixture")
class NormalMixture(Mixture):
    """Normal components on `dim`: `mu` and `sigma` (or `tau`, the precision) on it, weighted by `w` (PyMC's
    `NormalMixture(w, mu, sigma)`); the `mixture` of `normal(mu, sigma)`.

    >>> import dimgraph as dg, numpy as np
    >>> comp = dg.Dim("comp", size=2)
    >>> w, mu = dg.constant(np.array([0.3, 0.7]), dims=(comp,)), dg.constant(np.array([-2.0, 2.0]), dims=(comp,))
    >>> round(float(dg.dist.normal_mixture(w, mu, 1.0, dim=comp).logp(0.0).eval(backend="python")), 6)
    -2.918939
    """

    def __init__(self, w, mu, sigma=None, tau=None, dim=None):
        if sigma is not None and tau is not None:
            raise TypeError("normal_mixture: give sigma or tau, not both")
        normal = Normal(mu, 1.0 if sigma is None else sigma) if tau is None else Normal(mu, tau=tau)
        super().__init__(w, normal, dim=dim)
