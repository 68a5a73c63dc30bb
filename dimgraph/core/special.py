"""Scalar code of the special functions NumPy lacks: the reference the python backend runs.

Each function takes and returns Python floats and uses only `math`, so the
numba backend compiles these very functions (both backends agree to the last
bit) and the C and JAX backends mirror them line by line. None calls another
(a jitted function cannot call a plain one); values at poles and outside the
domain follow `scipy.special`.
"""

from __future__ import annotations

import math

LN2 = math.log(2.0)
_EPS = 1e-16
_TINY = 1e-300


def digamma(x: float) -> float:
    """digamma by recurrence to x >= 12 and the asymptotic series (about 1e-14 absolute for x > 0)."""
    if not math.isfinite(x):
        return x if x > 0 else math.nan  # psi(inf) = inf; -inf and nan give nan (scipy)
    if x == 0.0:
        return -math.copysign(math.inf, x)  # the pole's one-sided limit, as scipy.special.digamma
    if x < 0.0 and x == math.floor(x):
        return math.nan
    result = 0.0
    if x < 0.0:  # reflection: psi(1 - x) - psi(x) = pi / tan(pi x)
        result -= math.pi / math.tan(math.pi * x)
        x = 1.0 - x
    while x < 12.0:
        result -= 1.0 / x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 * (1.0 / 132)))))
    return result + math.log(x) - 0.5 * inv - series


def trigamma(x: float) -> float:
    """trigamma by recurrence to x >= 12 and the asymptotic series; reflection for x < 0."""
    if not math.isfinite(x):
        return 0.0 if x > 0 else (math.inf if x < 0 else math.nan)  # as scipy.special.polygamma(1, x)
    if x <= 0.0 and x == math.floor(x):
        return math.inf
    reflected = 0.0
    sign = 1.0
    if x < 0.0:  # reflection: psi1(1 - x) + psi1(x) = pi^2 / sin^2(pi x)
        s = math.sin(math.pi * x)
        reflected = (math.pi / s) * (math.pi / s)
        sign = -1.0
        x = 1.0 - x
    result = 0.0
    while x < 12.0:
        result += 1.0 / x / x  # x * x underflows to 0 for tiny x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv + 0.5 * inv2 + inv * inv2 * (1.0 / 6 - inv2 * (1.0 / 30 - inv2 * (1.0 / 42 - inv2 * (1.0 / 30))))
    return reflected + sign * (result + series)


def lgamma(x: float) -> float:
    """log|Gamma(x)|, +inf at the poles (Python's math.lgamma raises there)."""
    if math.isfinite(x) and x <= 0.0 and x == math.floor(x):
        return math.inf
    return math.lgamma(x)


def logit(p: float) -> float:
    """log(p / (1 - p)), the inverse of the logistic sigmoid (nan outside [0, 1])."""
    return math.log(p / (1.0 - p)) if 0.0 < p < 1.0 else (-math.inf if p == 0.0 else (math.inf if p == 1.0 else math.nan))


def log1mexp(x: float) -> float:
    """log(1 - exp(x)) for x <= 0, accurate at both ends (Maechler's switch at -log 2); nan for x > 0."""
    if x > 0.0 or x != x:
        return math.nan
    if x < -LN2:
        return math.log1p(-math.exp(x))
    return math.log(-math.expm1(x)) if x != 0.0 else -math.inf


def xlogy(x: float, y: float) -> float:
    """x * log(y), and 0 where x == 0 (unless y is nan), as scipy.special.xlogy."""
    if x == 0.0 and y == y:
        return 0.0
    return x * math.log(y) if y > 0.0 else (x * -math.inf if y == 0.0 else math.nan)


def betaln(a: float, b: float) -> float:
    """log|B(a, b)| = lgamma(a) + lgamma(b) - lgamma(a + b).

    When the larger argument is 20 or more the difference lgamma(b) - lgamma(a + b)
    is taken from Stirling's series, so it does not cancel (betaln(1, 1e10) keeps
    all its digits where the plain formula keeps 6).
    """
    b_pole = b <= 0.0 and (b == -math.inf or b == math.floor(b))
    if b_pole and not (a <= 0.0 and (a == -math.inf or a == math.floor(a))):
        a, b = b, a  # the pole (of Gamma) first, as scipy checks it
    if a <= 0.0 and (a == -math.inf or a == math.floor(a)):
        if a == -math.inf or not (math.isfinite(b) and b == math.floor(b) and a + b <= 0.0):
            return math.inf
        # with b an integer and a + b <= 0 the ratio keeps a finite limit: |B(a, b)| = |B(1 - a - b, b)| (scipy)
        a = 1.0 - a - b
        if b <= 0.0:
            return math.inf
    if a != a or b != b or (a == math.inf and b == math.inf):
        return math.nan
    if a > b:
        a, b = b, a
    if b == math.inf:
        return -math.inf if a > 0.0 else math.inf
    s = a + b
    if s <= 0.0 and s == math.floor(s):
        return -math.inf  # 1 / Gamma(a + b) = 0
    if a > 0.0 and b >= 20.0:
        # Stirling: lgamma(x) = (x - 1/2) log x - x + log(2 pi) / 2 + tail(x), the tail below 2e-15 off for x >= 20
        ib, i_s = 1.0 / b, 1.0 / s
        ib2, is2 = ib * ib, i_s * i_s
        tail_b = ib * (1.0 / 12 - ib2 * (1.0 / 360 - ib2 * (1.0 / 1260 - ib2 * (1.0 / 1680))))
        tail_s = i_s * (1.0 / 12 - is2 * (1.0 / 360 - is2 * (1.0 / 1260 - is2 * (1.0 / 1680))))
        diff = -(b - 0.5) * math.log1p(a / b) - a * math.log(s) + a + (tail_b - tail_s)
        return math.lgamma(a) + diff
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(s)


def gamma_inc(a: float, x: float, upper: bool) -> float:
    """The regularized incomplete gamma function: P(a, x) (lower) or Q(a, x) = 1 - P (upper, `upper=True`).

    The power series of P where x < a + 1, Legendre's continued fraction of Q
    (modified Lentz) elsewhere, and Q's own series for a < 1/2 where x < a + 1
    (P is near 1 there), so the one computed is never a difference close to 1. About 1e-14 relative for a up to a few hundred. a = 0 gives the limit
    (P = 1 for x > 0); a < 0 or x < 0 is nan, as scipy.special.gammainc.
    """
    if a != a or x != x or a < 0.0 or x < 0.0 or (a == math.inf and x == math.inf):
        return math.nan
    if a == 0.0:
        if x > 0.0:
            return 0.0 if upper else 1.0
        return math.nan
    if x == 0.0:
        return 1.0 if upper else 0.0
    if math.isinf(a):
        return 1.0 if upper else 0.0
    if math.isinf(x):
        return 0.0 if upper else 1.0
    if upper and a < 0.5 and x < a + 1.0:
        # Q for small a without 1 - P (P is near 1 there: Q(1e-300, 1e-300) came out negative), DLMF 8.7.3:
        # Q = -expm1(e) - exp(e) a sum_{n>=1} (-x)^n / (n! (a + n)),  e = a log x - lgamma(1 + a)
        if a < 0.01:  # lgamma(1 + a) = -euler a + sum_k (-1)^k zeta(k) a^k / k: 1 + a would round a off
            lgamma1p = a * (-0.5772156649015329 + a * (0.8224670334241132 + a * (-0.40068563438653143 + a * (
                0.27058080842778454 + a * (-0.207385551028674 + a * (0.16955717699740822 + a * (
                    -0.14404989676884614 + a * 0.12550966952474304)))))))
        else:
            lgamma1p = math.lgamma(1.0 + a)
        e = a * math.log(x) - lgamma1p
        term = 1.0
        total = 0.0
        for n in range(1, 200):
            term *= -x / n
            total += term / (a + n)
            if abs(term) < _EPS * abs(total):
                break
        return -math.expm1(e) - math.exp(e) * a * total
    log_front = a * math.log(x) - x - math.lgamma(a)
    if x < a + 1.0:
        term = 1.0 / a
        total = term
        n = a
        for _ in range(100000):
            n += 1.0
            term *= x / n
            total += term
            if abs(term) < abs(total) * _EPS:
                break
        p = total * math.exp(log_front)
        return 1.0 - p if upper else p
    b = x + 1.0 - a
    c = 1.0 / _TINY
    d = 1.0 / b
    h = d
    for i in range(1, 100000):
        an = -i * (i - a)
        b += 2.0
        d = an * d + b
        if abs(d) < _TINY:
            d = _TINY
        c = b + an / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    q = h * math.exp(log_front)
    return q if upper else 1.0 - q


def gammainc(a: float, x: float) -> float:
    """The regularized lower incomplete gamma function P(a, x)."""
    return gamma_inc(a, x, False)


def gammaincc(a: float, x: float) -> float:
    """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
    return gamma_inc(a, x, True)
