"""Tail probabilities for distributions, in log space: the normal's log cdf and quantile, log differences,
the incomplete gamma and beta functions' logs, Student's t tail, quantiles by bisection.

The cdfs of `dg.dist` are computed as logs (`logcdf`, `logsf`), so a bound
far in a tail (a normal truncated at 40 sigma) keeps its precision; the
quantiles take a log probability for the same reason. Everything here is
plain labeled math, so it runs and differentiates on every backend.
"""

from __future__ import annotations

import math

import numpy as np

from dimgraph.labeled import math as lmath
from dimgraph.labeled.dims import Dim
from dimgraph.lower.control import scan

_SQRT1_2 = math.sqrt(0.5)
_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_FAR = -20.0  # below this, log_ndtr uses its asymptotic series (erfc underflows near -37)


def log_ndtr(z):
    """log Phi(z), the standard normal's log cdf, accurate in both tails (scipy.special.log_ndtr).

    Three branches, each fed a safe argument so the others' gradients stay finite:
    log1p(-Q(z)) above 3, log(erfc(-z / sqrt 2) / 2) in the middle, and the asymptotic
    series -z^2/2 - log(-z) - log(2 pi)/2 + log(1 - 1/z^2 + 3/z^4 - ...) below -20.
    """
    upper = z > 3
    far = z < _FAR
    zu = lmath.where(upper, z, 3.0)
    zm = lmath.where(upper | far, 0.0, z)
    zf = lmath.where(far, z, _FAR)
    high = lmath.log1p(-0.5 * lmath.elemwise("erfc", zu * _SQRT1_2))
    middle = lmath.log(0.5 * lmath.elemwise("erfc", -zm * _SQRT1_2))
    inv = 1.0 / (zf * zf)
    series, term = 1.0, 1.0
    for k in range(1, 11):  # (2k - 1)!! / z^(2k) with alternating signs; the 10th term is 6e-18 at -20
        term = -term * (2 * k - 1) * inv
        series = series + term
    tail = -0.5 * zf * zf - lmath.log(-zf) - _HALF_LOG_2PI + lmath.log(series)
    return lmath.where(upper, high, lmath.where(far, tail, middle))


# Acklam's rational approximations of the normal quantile (relative error 1.2e-9), refined by Newton below
_A = (
    -3.969683028665376e01,
    2.209460984245205e02,
    -2.759285104469687e02,
    1.383577518672690e02,
    -3.066479806614716e01,
    2.506628277459239e00,
)
_B = (
    -5.447609879822406e01,
    1.615858368580409e02,
    -1.556989798598866e02,
    6.680131188771972e01,
    -1.328068155288572e01,
    1.0,
)
_C = (
    -7.784894002430293e-03,
    -3.223964580411365e-01,
    -2.400758277161838e00,
    -2.549732539343734e00,
    4.374664141464968e00,
    2.938163982698783e00,
)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00, 1.0)
_LOG_P_LOW = math.log(0.02425)
_LOG_HALF = math.log(0.5)


def _poly(coefs, x):
    out = coefs[0]
    for c in coefs[1:]:
        out = out * x + c
    return out


def _ndtri_lower(lp):
    """The normal quantile of exp(lp) for lp <= log(1/2)."""
    low = lp < _LOG_P_LOW
    q = lmath.sqrt(-2.0 * lmath.where(low, lp, _LOG_P_LOW))
    tail = _poly(_C, q) / _poly(_D, q)
    c = lmath.exp(lmath.where(low, _LOG_P_LOW, lp)) - 0.5
    r = c * c
    central = _poly(_A, r) * c / _poly(_B, r)
    x = lmath.where(low, tail, central)
    for _ in range(2):  # Newton on log Phi(x) = lp: the step is (log Phi(x) - lp) Phi(x) / phi(x)
        lphi = log_ndtr(x)
        x = x - (lphi - lp) * lmath.exp(lphi + 0.5 * x * x + _HALF_LOG_2PI)
    return x


def ndtri_exp(lp):
    """The standard normal quantile of the probability exp(lp) (scipy.special.ndtri_exp): x with log Phi(x) = lp.

    The lower half is computed directly; the upper half by symmetry from log(1 - p) = log1mexp(lp).
    """
    upper = lp > _LOG_HALF
    lower = _ndtri_lower(lmath.where(upper, _LOG_HALF, lp))
    mirrored = _ndtri_lower(lmath.elemwise("log1mexp", lmath.where(upper, lp, _LOG_HALF)))
    return lmath.where(upper, -mirrored, lower)


def log_diff_exp(a, b):
    """log(exp(a) - exp(b)) for a >= b, without forming either exponential."""
    return a + lmath.elemwise("log1mexp", b - a)


def log_regularized_gamma(a, x, upper=False):
    """log Q(a, x) (`upper`) or log P(a, x); where it is near 1, log1p of minus the other one (P + Q = 1)."""
    p, q = lmath.elemwise("gammainc", a, x), lmath.elemwise("gammaincc", a, x)
    this, other = (q, p) if upper else (p, q)
    return lmath.where(this < 0.5, lmath.log(this), lmath.log1p(-other))


def gamma_quantile_exp(lp, alpha, upper=False):
    """The Gamma(alpha, 1) quantile x with log P(alpha, x) = lp (`upper`: log Q(alpha, x) = lp).

    Newton steps on the log probability in log x (where it is nearly linear in both tails), from the
    larger of Wilson and Hilferty's start and the small-x one, P ~ x^alpha / Gamma(alpha + 1).
    """
    lower_lp = lmath.log1mexp(lp) if upper else lp
    z = -ndtri_exp(lp) if upper else ndtri_exp(lp)
    cube = 1 - 1 / (9 * alpha) + z / (3 * lmath.sqrt(alpha))
    positive = cube > 0
    wilson_hilferty = lmath.where(positive, lmath.log(alpha) + 3 * lmath.log(lmath.where(positive, cube, 1.0)), -np.inf)
    t = lmath.maximum(wilson_hilferty, (lower_lp + lmath.gammaln(alpha + 1)) / alpha)  # each too small where it fails
    toward_root = 1.0 if upper else -1.0  # the step where the probability underflows: x moves toward it
    for _ in range(12):
        x = lmath.exp(t)
        log_prob = lmath.log(lmath.elemwise("gammaincc" if upper else "gammainc", alpha, x))
        slope = lmath.exp(alpha * t - x - lmath.gammaln(alpha) - log_prob)  # d log P / d log x = x pdf(x) / P
        step = (log_prob - lp) / (-slope if upper else slope)
        t = t - lmath.clip(lmath.where(lmath.isfinite(step), step, toward_root), -2.0, 2.0)
    return lmath.exp(t)


def log_regularized_beta(a, b, x, upper=False):
    """log(1 - I_x(a, b)) (`upper`) or log I_x(a, b); where it is near 1, log1p of minus the other one."""
    p, q = lmath.elemwise("betainc", a, b, x), lmath.elemwise("betaincc", a, b, x)
    this, other = (q, p) if upper else (p, q)
    return lmath.where(this < 0.5, lmath.log(this), lmath.log1p(-other))


def student_t_abs_tails(z, nu):
    """(P(|T| > z), P(|T| <= z)) for Student's t with `nu` degrees of freedom and z >= 0, each to full precision.

    P(|T| > z) = I_w(nu/2, 1/2) with w = nu / (nu + z^2). Where z^2 < nu, w is near 1 and is not formed:
    the same values are the complement pair of I_v(1/2, nu/2) with v = z^2 / (nu + z^2). z = 0 is moved by
    1e-150, so the density's 0 * inf in the gradient there stays finite.
    """
    q = (z + lmath.where(z == 0, 1e-150, 0.0)) / lmath.sqrt(nu)
    q2 = q * q
    near = q2 < 1
    w = 1 / (1 + lmath.where(near, 1.0, q2))
    v = 1 / (1 + 1 / lmath.where(near, q2, 1.0))
    half = 0.5 * nu
    outside = lmath.where(near, lmath.elemwise("betaincc", 0.5, half, v), lmath.elemwise("betainc", half, 0.5, w))
    inside = lmath.where(near, lmath.elemwise("betainc", 0.5, half, v), lmath.elemwise("betaincc", half, 0.5, w))
    return outside, inside


def bisect(reached, lo, hi, steps=64):
    """The point where the monotone `reached` turns true between `lo` (false) and `hi` (true), by bisection.

    Quantiles without a closed form: 64 halvings of the bracket reach the spacing of doubles from a
    bracket as wide as a transformed coordinate's (the logit of a beta value, the asinh of a t value).
    """
    lo, hi = halvings(lambda mid: mid, reached, lo, hi, steps)
    return (lo + hi) / 2


def halvings(midpoint, reached, lo, hi, steps):
    """The bracket (lo, hi) after `steps` halvings at `midpoint((lo + hi) / 2)`, keeping the side where `reached`
    turns true: one loop, so a backend compiles the step (an incomplete beta function, say) once, not `steps`
    times (unrolled, XLA took minutes over a chain of 64 incomplete beta functions' loops)."""

    def halve(lo, hi):
        mid = midpoint((lo + hi) / 2)
        done = reached(mid)
        return lmath.where(done, lo, mid), lmath.where(done, mid, hi)

    lo, hi = halve(lo, hi)  # the first step outside: the bracket takes the dims `reached` gives it
    (lo, hi), _ = scan(halve, init=[lo, hi], dim=Dim("halving", size=steps - 1), name="bisection")
    return lo, hi
