"""Named distributions on labeled variables: log densities and draws with the same parameters.

`dg.dist.normal(mu, sigma)` is a `Distribution`: its parameters are labeled
(numbers and DataArrays are taken too) and broadcast by dim name.
- `logp(x)`: the log density (log pmf for counts), dims as xarray broadcasts x
  and the parameters. Computed in log space (`gammaln`/`betaln`
  normalizers, `log1p`), `-inf` outside the support.
  NOTE: invalid parameters (sigma <= 0, p outside [0, 1], ...) give NaN, never
  a number that looks valid; `check="raise"` makes the compiled function raise
  instead (an assert in the graph).
  NOTE: infinite parameters give the limit of the log density as they grow:
  -inf where the density vanishes (`gamma(inf, 1)`, `normal(0, inf)`), the
  limiting distribution's where there is one (`student_t(inf, mu, sigma)` is
  normal), +inf where it grows without bound (`exponential(inf).logp(0)`), NaN
  only where the limit depends on how the parameters grow (`gamma(inf, inf)`).
- `draw(state, extra_dims=())`: `(next state, draws)`, the draws on
  `extra_dims` then the parameters' dims (NaN, or -1 for counts, where the
  parameters are invalid: the rule of the primitives), from primitive draws
  (`dimgraph.labeled.random`) and plain math, so they differentiate with
  respect to location/scale parameters where the draw is reparameterized.

Parameter names follow PyMC (`mu`, `sigma`, `alpha`, `beta`, `lam`, `p`, `n`);
the count distributions follow scipy.stats (`nbinom(n, p)` counts failures).
"""

from __future__ import annotations

import math

import numpy as np

from dimgraph.core import reduce as core_reduce
from dimgraph.labeled import linalg, math as lmath
from dimgraph.labeled.dims import resolve_dims
from dimgraph.labeled.shape import arange
from dimgraph.labeled.random import draw_dims, labeled_params, primitive_draw
from dimgraph.labeled.tails import (
    bisect,
    gamma_quantile_exp,
    log_ndtr,
    log_regularized_beta,
    log_regularized_gamma,
    ndtri_exp,
    student_t_abs_tails,
)
from dimgraph.core.extra import assert_op
from dimgraph.labeled.basic import from_positional

_LOG_2PI = math.log(2 * math.pi)
_LOG2, _LOG_PI, _SQRT1_2 = math.log(2.0), math.log(math.pi), math.sqrt(0.5)


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (also at y == -1)."""
    return lmath.where(x == 0, 0.0, x * lmath.log1p(lmath.where(x == 0, 0.0, y)))


def softmax(x, dim=None, axis=None):
    """exp(x) normalized to sum 1 over `dim` (stable: computed as exp(log_softmax)); positional tensors take
    `axis` as scipy.special.softmax.

    >>> import dimgraph as dg, numpy as np
    >>> k = dg.Dim("k", size=2)
    >>> dg.softmax(dg.constant(np.array([0.0, 1000.0]), dims=(k,)), k).eval().values.tolist()
    [0.0, 1.0]
    """
    if not lmath.any_labeled((x,)):
        return core_reduce.softmax(x, axis=axis if axis is not None else dim)
    return lmath.exp(log_softmax(x, dim))


def log_softmax(x, dim=None, axis=None):
    """x - logsumexp(x) over `dim`: the log of the softmax, finite where softmax underflows; positional
    tensors take `axis` as scipy.special.log_softmax.

    >>> import dimgraph as dg, numpy as np
    >>> k = dg.Dim("k", size=2)
    >>> dg.log_softmax(dg.constant(np.array([0.0, 1000.0]), dims=(k,)), "k").eval().values.tolist()
    [-1000.0, 0.0]
    >>> x = dg.tensor("x", shape=(2,))
    >>> dg.function([x], dg.log_softmax(x, axis=0))(np.array([0.0, 1000.0])).tolist()
    [-1000.0, 0.0]
    """
    if not lmath.any_labeled((x,)):
        return core_reduce.log_softmax(x, axis=axis if axis is not None else dim)
    x = lmath.as_operand(x, "log_softmax")
    (dim,) = resolve_dims(x.dims, dim, "log_softmax")
    return (x - lmath.logsumexp(x, dim)).transpose(*x.dims)


def _abs(x):
    return lmath.elemwise("abs", x)


def _finite(v, stand_in=1.0):
    """`v` with `stand_in` where it is +-inf: what a formula sees where a `where` takes the limit instead, so
    neither the branch not taken nor its gradient is NaN (NaN stays NaN: it is no limit)."""
    return lmath.where(lmath.isinf(v), stand_in, v)


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


def _as_float(x):
    return x if np.dtype(x.type.dtype).kind == "f" else lmath.astype(x, "float64")


def _loggamma(state, alpha, dims):
    """(next state, log of a Gamma(alpha, 1) draw), exact for tiny alpha.

    alpha < 1: log G(alpha) = log G(alpha + 1) + log(U) / alpha, so small shapes do not underflow to 0.
    """
    small = alpha < 1
    state, g = primitive_draw("gamma", state, lmath.where(small, alpha + 1, alpha), dims=dims)
    state, u = primitive_draw("uniform", state, dims=dims)
    boost = lmath.where(small, lmath.log1p(-u) / alpha, 0.0)
    return state, lmath.log(g) + boost


class Distribution:
    """Parameters on named dims with a log density (`logp`) and draws (`draw`)."""

    names: tuple = ()  # parameter names, in signature order
    defaults: dict = {}
    discrete = False
    # how a model samples it (dimgraph.labeled.transforms): "identity", "log", "logodds", "interval" (on the
    # `lower`/`upper` params), "simplex" (over `dim`), "ordered", "cholesky_corr", "corr", "zerosum" (over `dims`),
    # "cholesky_cov" (lkj_cholesky_cov); None: discrete, not sampled by gradient samplers
    default_transform: str | None = "identity"

    def __init__(self, *args, **kwargs):
        what = type(self).__name__.lower()
        values = dict(zip(self.names, args))
        for k, v in kwargs.items():
            if k not in self.names:
                raise TypeError(f"{what}: unexpected parameter {k!r}; the parameters are {list(self.names)}")
            if k in values:
                raise TypeError(f"{what}: parameter {k!r} given twice")
            values[k] = v
        if len(args) > len(self.names):
            raise TypeError(f"{what}: takes {len(self.names)} parameters {list(self.names)}, got {len(args)}")
        for k in self.names:
            if k not in values:
                if k not in self.defaults:
                    raise TypeError(f"{what}: missing parameter {k!r}")
                values[k] = self.defaults[k]
        labeled = labeled_params({k: values[k] for k in self.names}, what)
        self.params = dict(zip(self.names, labeled))

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({inner})"

    # --- log density
    def logp(self, x, check="nan"):
        """The log density at `x` (labeled, a DataArray or a number); NaN (or an error) for invalid parameters."""
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        p = self.params
        inside = self.support(x, **p)
        if inside is None:  # the real line: the formula gives -inf at +-inf by itself
            density = self.log_density(x, **p)
        else:  # the formula is evaluated at a safe point outside, so no NaN reaches the gradient
            density = lmath.where(inside, self.log_density(lmath.where(inside, x, self.safe_value), **p), -np.inf)
        norm, valid, what = self.normalizer(**p), self.valid(**p), type(self).__name__.lower()
        if norm is None:
            return _invalid_to_nan(density, valid, check, what)
        if check == "raise":
            return _invalid_to_nan(density + norm, valid, check, what)
        return density + (norm + _nan_unless(valid))  # the parameters' terms first: one add per element

    safe_value = 0.5
    positive: tuple = ()  # the parameters that must be > 0 (the default `valid`)
    domain = "real"  # the default `support`: "real", or finite x >= 0 ("nonnegative") or x > 0 ("positive")

    def valid(self, **p):
        """Where the parameters are valid."""
        return _positive(*(p[k] for k in self.positive))

    def support(self, x, **p):
        """Where x is in the support (None: everywhere)."""
        if self.domain == "real":
            return None
        return ((x >= 0) if self.domain == "nonnegative" else (x > 0)) & lmath.isfinite(x)

    def log_density(self, x, **p):
        """The log density's terms in x (all of it unless `normalizer` gives the parameters' own terms)."""
        raise NotImplementedError(type(self).__name__)

    def normalizer(self, **p):
        """The terms of the log density that depend on the parameters alone, kept out of `log_density` so
        they are summed on the parameters' dims (None: `log_density` is all of it)."""
        return None

    # --- draws
    def draw(self, state, extra_dims=()):
        """`(next state, draws)` from RNG `state`, on `extra_dims` then the parameters' dims.

        >>> import dimgraph as dg
        >>> s = dg.rng_state("s")
        >>> nxt, k = dg.dist.poisson(4.0).draw(s, extra_dims=(dg.Dim("obs", size=3),))
        >>> following, counts = dg.function([s], [nxt, k], backend="python")(dg.seed_state(0))
        >>> counts.dims, int(following[2])
        (('obs',), 1)
        """
        dims = draw_dims(list(self.params.values()), extra_dims, f"{type(self).__name__.lower()} draw")
        state, value = self.sample(state, dims, **self.params)
        return state, _invalid_draws(value, self.valid(**self.params)).transpose(*self._out_dims(dims))

    def _out_dims(self, dims):
        return dims

    # --- tail probabilities (distributions that have them define log_cdf/log_sf, and for draws of their
    # truncations icdf_exp/isf_exp: the quantile of exp(lp), of the lower and the upper tail)
    def logcdf(self, x):
        """log P(X <= x): -inf below the support, 0 above it, NaN for invalid parameters.

        >>> import dimgraph as dg
        >>> round(float(dg.dist.normal(0.0, 1.0).logcdf(-40.0).eval(backend="python")), 6)  # scipy.stats.norm.logcdf(-40)
        -804.608442
        """
        return self._tail("log_cdf", x)

    def logsf(self, x):
        """log P(X > x), the log survival function, accurate where the cdf rounds to 1.

        >>> import dimgraph as dg
        >>> round(float(dg.dist.exponential(2.0).logsf(30.0).eval(backend="python")), 6)
        -60.0
        """
        return self._tail("log_sf", x)

    def _tail(self, kind, x):
        if not hasattr(self, kind):
            what = type(self).__name__.lower()
            raise TypeError(
                f"{what}: has no {kind.replace('_', '')} (univariate distributions with an elementary, "
                "incomplete-gamma or incomplete-beta cdf have one)"
            )
        x = lmath.as_operand(x, kind.replace("_", ""))
        if np.dtype(x.type.dtype).kind not in "biuf":
            what = type(self).__name__.lower()
            raise TypeError(f"{what}.{kind.replace('_', '')}: x must be numbers; got {x.type.dtype} values")
        out = getattr(self, kind)(x, **self.params)
        valid = self.valid(**self.params)
        return out if valid is None else out + _nan_unless(valid)


def _check_option(check):
    if check not in ("nan", "raise"):
        raise ValueError(f"logp: check must be 'nan' or 'raise', got {check!r}")


def _invalid_to_nan(density, valid, check, what):
    """`density` where the parameters are `valid`: NaN elsewhere (`check="nan"`) or a run-time error (`"raise"`)."""
    if check == "raise":
        return _checked(density, valid, f"{what} logp: invalid parameters")
    return density + _nan_unless(valid)


def _invalid_draws(value, valid):
    """Draws where the parameters are valid, NaN (float draws) or -1 (counts) elsewhere, as the primitives give."""
    if valid is None:
        return value
    if np.dtype(value.type.dtype).kind == "f":
        return value + _nan_unless(valid)
    return lmath.where(valid, value, -1)


def _checked(value, valid, message):
    """`value` where it is used, after a run-time check that `valid` holds everywhere."""
    flag = (valid.all() if valid.type.ndim else valid).to_positional()
    ok = from_positional(assert_op(flag, flag, msg=message), ())
    return lmath.where(ok, value, np.nan)


def _nan_unless(valid):
    """0 where the parameters are valid, NaN elsewhere: computed on the parameters' dims and added to the
    density, so a model with scalar parameters pays one add per element, not a select (nor one in its gradient)."""
    return lmath.where(valid, 0.0, np.nan)


def _count_quantile(reached, hi, steps=40):
    """The smallest count k >= 0 where `reached(k)` holds (it holds from some k on, at the latest at `hi`), by
    bisection between -1 and `hi` (2**steps above the count reached exactly)."""
    lo = -1.0 + 0 * hi
    for _ in range(steps):
        mid = lmath.floor((lo + hi) / 2)
        done = reached(mid)
        lo, hi = lmath.where(done, lo, mid), lmath.where(done, mid, hi)
    return lmath.ceil(hi)


def _positive(*vs):
    out = None
    for v in vs:
        c = v > 0
        out = c if out is None else out & c
    return out


def _prob(p):
    return (p >= 0) & (p <= 1)


def _count(flags, dim):
    """How many of the booleans `flags` hold along `dim`."""
    return lmath.where(flags, 1.0, 0.0).sum(dim)


class Normal(Distribution):
    names, defaults = ("mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    default_transform = "identity"
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


class HalfNormal(Distribution):
    names, defaults = ("sigma",), {"sigma": 1.0}
    default_transform = "log"
    positive = ("sigma",)
    domain = "nonnegative"

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


class LogNormal(Distribution):
    names, defaults = ("mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    default_transform = "log"
    safe_value = 1.0
    positive = ("sigma",)
    domain = "positive"

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


class StudentT(Distribution):
    names, defaults = ("nu", "mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    default_transform = "identity"
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


class Cauchy(Distribution):
    names, defaults = ("alpha", "beta"), {"alpha": 0.0, "beta": 1.0}
    default_transform = "identity"
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


class Uniform(Distribution):
    names, defaults = ("lower", "upper"), {"lower": 0.0, "upper": 1.0}
    default_transform = "interval"

    def valid(self, lower, upper):
        return lower < upper

    def support(self, x, lower, upper):
        return (x >= lower) & (x <= upper)

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


class Exponential(Distribution):
    names, defaults = ("lam",), {"lam": 1.0}
    default_transform = "log"
    positive = ("lam",)
    domain = "nonnegative"

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


class Gamma(Distribution):
    """Shape `alpha`, rate `beta` (PyMC); scipy's `gamma(alpha, scale=1/beta)`."""

    names, defaults = ("alpha", "beta"), {"beta": 1.0}
    default_transform = "log"
    safe_value = 1.0
    positive = ("alpha", "beta")
    domain = "nonnegative"

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


class InverseGamma(Distribution):
    """Shape `alpha`, scale `beta` (PyMC); scipy's `invgamma(alpha, scale=beta)`."""

    names, defaults = ("alpha", "beta"), {"beta": 1.0}
    default_transform = "log"
    safe_value = 1.0
    positive = ("alpha", "beta")
    domain = "positive"

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


class Beta(Distribution):
    names = ("alpha", "beta")
    default_transform = "logodds"
    positive = ("alpha", "beta")

    def support(self, x, alpha, beta):
        return (x >= 0) & (x <= 1)

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


class Bernoulli(Distribution):
    names = ("p",)
    default_transform = None
    discrete = True

    def valid(self, p):
        return _prob(p)

    def support(self, x, p):
        return (x == 0) | (x == 1)

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


def _is_finite_count(x):
    """A count a pmf is positive at (n = inf is a parameter's limit, never a value)."""
    return _is_count(x) & lmath.isfinite(x) if np.dtype(x.type.dtype).kind == "f" else x >= 0


class Binomial(Distribution):
    names = ("n", "p")
    default_transform = None
    discrete = True

    def valid(self, n, p):
        return _prob(p) & _is_count(n)

    def support(self, x, n, p):
        return _is_finite_count(x) & (x <= n)

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


class Poisson(Distribution):
    names = ("mu",)
    default_transform = None
    discrete = True

    def valid(self, mu):
        return mu >= 0

    def support(self, x, mu):
        return _is_finite_count(x)

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


class NegativeBinomial(Distribution):
    """Failures before the `n`-th success with success probability `p` (scipy.stats.nbinom, NumPy)."""

    names = ("n", "p")
    default_transform = None
    discrete = True

    def valid(self, n, p):
        return (n > 0) & (p > 0) & (p <= 1)

    def support(self, x, n, p):
        return _is_finite_count(x)

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

class _CoreDim(Distribution):
    """A distribution whose parameter has a core dim (`dim=`): the categories or the simplex."""

    def __init__(self, *args, dim=None, **kwargs):
        super().__init__(*args, **kwargs)
        first = next(iter(self.params.values()))
        if dim is None:
            raise TypeError(f"{type(self).__name__.lower()}: give the core dim of {self.names[0]!r} as dim= (one of {first.dims})")
        (self.dim,) = resolve_dims(first.dims, dim, type(self).__name__.lower())


class Categorical(_CoreDim):
    """Index along `dim` drawn with probabilities `p` (normalized over `dim`)."""

    names = ("p",)
    default_transform = None
    discrete = True

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


class Dirichlet(_CoreDim):
    """Points on the simplex over `dim` with concentrations `a`."""

    names = ("a",)
    default_transform = "simplex"
    safe_value = 0.5

    def support(self, x, a):
        return ((x >= 0) & (x <= 1)).all(self.dim)

    def valid(self, a):
        return (a > 0).all(self.dim)

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        a = self.params["a"]
        inside = self.support(x, a)
        safe = lmath.where(inside, x, 1.0 / (self.dim.size or 2))
        a_f = _finite(a)
        norm = lmath.gammaln(a_f.sum(self.dim)) - lmath.gammaln(a_f).sum(self.dim)
        density = norm + lmath.xlogy(a_f - 1, safe).sum(self.dim)
        # concentrations at inf: the mass goes to the face where every other component is 0, and leaves any
        # point off it (or on it where a finite a > 1 zeroes the density, or an infinite one's component is 0);
        # on it the density grows without bound for one such component (or where a finite a < 1 has a pole),
        # and depends on how two or more grow (NaN)
        infinite, finite = lmath.isinf(a), lmath.isfinite(a)
        off = ((finite & ((safe > 0) | (a > 1))) | (infinite & (safe == 0))).any(self.dim)
        pole = (finite & (safe == 0) & (a < 1)).any(self.dim) | (_count(infinite, self.dim) == 1)
        limit = lmath.where(off, -np.inf, lmath.where(pole, np.inf, np.nan))
        density = lmath.where(inside, lmath.where(infinite.any(self.dim), limit, density), -np.inf)
        return _invalid_to_nan(density, self.valid(a), check, "dirichlet")

    def sample(self, state, dims, a):
        state, lg = _loggamma(state, a, dims)
        return state, softmax(lg, self.dim)


DISTRIBUTIONS = {
    "normal": Normal,
    "halfnormal": HalfNormal,
    "lognormal": LogNormal,
    "student_t": StudentT,
    "cauchy": Cauchy,
    "uniform": Uniform,
    "exponential": Exponential,
    "gamma": Gamma,
    "invgamma": InverseGamma,
    "beta": Beta,
    "bernoulli": Bernoulli,
    "binomial": Binomial,
    "poisson": Poisson,
    "negative_binomial": NegativeBinomial,
    "categorical": Categorical,
    "dirichlet": Dirichlet,
}


class MultivariateNormal(Distribution):
    """Vectors on `dims[0]` with mean `mu` and covariance `cov` (or its lower Cholesky factor `chol`) on `dims`.

    The matrix needs two dims of one size, (row, col); `mu`, `x` and the draws live on
    row. The log density solves with the Cholesky factor (no inverse, no determinant).

    >>> import dimgraph as dg, numpy as np
    >>> i, j = dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> cov = dg.constant(np.array([[2.0, 0.5], [0.5, 1.0]]), dims=(i, j))
    >>> mvn = dg.dist.multivariate_normal(dg.constant(np.zeros(2), dims=(i,)), cov=cov, dims=(i, j))
    >>> round(float(mvn.logp(dg.constant(np.array([1.0, -1.0]), dims=(i,))).eval(backend="python")), 6)  # scipy: -3.260542
    -3.260542
    """

    names = ("mu", "chol")
    default_transform = "identity"

    def __init__(self, mu, cov=None, chol=None, dims=None):
        if (cov is None) == (chol is None):
            raise TypeError("multivariate_normal: give exactly one of cov= and chol=")
        given = {"mu": mu, "cov": cov} if chol is None else {"mu": mu, "chol": chol}
        mu, matrix = labeled_params(given, "multivariate_normal")
        self.dims = linalg._core_dims("multivariate_normal", matrix, dims)
        row, col = self.dims
        if row not in mu.dims and mu.type.ndim:
            raise TypeError(f"multivariate_normal: mu must be on the row dim {row.name!r}, got dims {mu.dims}")
        chol = linalg.cholesky(matrix, dims=self.dims) if chol is None else matrix
        self.params = {"mu": mu, "chol": chol}

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        row, col = self.dims
        mu, chol = self.params["mu"], self.params["chol"]
        d = x - mu
        far = lmath.isinf(d)  # a mean (or value) component at +-inf: the density vanishes
        z = linalg.solve_triangular(chol, _finite(d, 0.0), dims=self.dims)  # on col: L z = x - mu
        diag = linalg.diagonal(chol, dims=self.dims)
        k = row.size
        density = -0.5 * (z * z).sum(col) - lmath.log(diag).sum(row) - 0.5 * k * _LOG_2PI
        density = lmath.where(far.any(row), -np.inf, density)
        return _invalid_to_nan(density, self.valid(mu, chol), check, "multivariate_normal")

    def valid(self, mu, chol):
        """A Cholesky factor with a positive diagonal (inf: a variance without bound, so the density vanishes; a
        covariance that is not positive definite gives NaNs)."""
        diag = linalg.diagonal(chol, dims=self.dims)
        return (diag > 0).all(self.dims[0])

    def sample(self, state, dims, mu, chol):
        row, col = self.dims
        state, z = primitive_draw("normal", state, dims=tuple(d for d in dims if d != row))
        return state, (chol * z).sum(col) + mu

    def _out_dims(self, dims):
        return tuple(d for d in dims if d != self.dims[1])


DISTRIBUTIONS["multivariate_normal"] = MultivariateNormal
