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
    return (
        math.log(p / (1.0 - p)) if 0.0 < p < 1.0 else (-math.inf if p == 0.0 else (math.inf if p == 1.0 else math.nan))
    )


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
            lgamma1p = a * (
                -0.5772156649015329
                + a
                * (
                    0.8224670334241132
                    + a
                    * (
                        -0.40068563438653143
                        + a
                        * (
                            0.27058080842778454
                            + a
                            * (
                                -0.207385551028674
                                + a * (0.16955717699740822 + a * (-0.14404989676884614 + a * 0.12550966952474304))
                            )
                        )
                    )
                )
            )
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


def beta_inc(a: float, b: float, x: float, upper: bool) -> float:
    """The regularized incomplete beta function I_x(a, b) (lower) or 1 - I_x(a, b) = I_{1-x}(b, a) (`upper=True`).

    The continued fraction of I_x(a, b) (modified Lentz) for x below the mean
    (a + 1) / (a + b + 2), of I_{1-x}(b, a) above it, so the one computed is the
    smaller tail and never a difference close to 1. Its front factor
    x^a (1-x)^b / B(a, b) is taken in logs from log x and log1p(-x); when a and b
    are both 15 or more it is written as the Gaussian-like
    exp(-a rlog1(l / a) - b rlog1(-l / b)) sqrt(a b / (2 pi (a + b))) with
    l = (a + b) x - a computed exactly and rlog1(t) = t - log1p(t) by its series,
    so a, b near 1e5 keep about 1e-14 relative (the plain sum of logs keeps 1e-11).
    Edges and out-of-domain values follow scipy.special.betainc: x = 0 gives 0,
    x = 1 gives 1, a = 0 or b = inf gives 1, b = 0 or a = inf gives 0, both
    shapes 0 or both inf, a shape below 0 or x outside [0, 1] give nan.
    """
    if a != a or b != b or x != x or a < 0.0 or b < 0.0 or x < 0.0 or x > 1.0:
        return math.nan
    if (a == 0.0 and b == 0.0) or (a == math.inf and b == math.inf):
        return math.nan
    if x == 0.0 or x == 1.0 or a == 0.0 or b == 0.0 or a == math.inf or b == math.inf:
        lower = 0.0 if x == 0.0 else (1.0 if x == 1.0 or a == 0.0 or b == math.inf else 0.0)
        return 1.0 - lower if upper else lower
    y = 1.0 - x  # exact for x >= 1/2; below it only the continued fraction uses y, the logs come from log1p
    lx, ly = math.log(x), math.log1p(-x)
    s = a + b
    large = a >= 15.0 and b >= 15.0
    # l = (a + b) x - a = b - (a + b) y, from the exact one of x, y with the sum and the product error-free:
    # the front factor and the fraction's first term depend on it, and near the mean it is a small difference
    v = s - a
    s_err = (a - (s - v)) + (b - v)
    t = x if x < 0.5 else y
    p = s * t
    p_err = 0.0
    if s < 1e290:  # Dekker's product: s t = p + p_err exactly
        cs, ct = 134217729.0 * s, 134217729.0 * t
        sh, th = cs - (cs - s), ct - (ct - t)
        sl, tl = s - sh, t - th
        p_err = ((sh * th - p) + sh * tl + sl * th) + sl * tl
    lam = ((p - a) + p_err + s_err * t) if x < 0.5 else ((b - p) - p_err - s_err * t)
    if x > (a + 1.0) / (s + 2.0):  # the fraction converges fast below the mean: there I_x(a, b) = 1 - I_y(b, a)
        a, b, x, y, lx, ly, lam, upper = b, a, y, x, ly, lx, -lam, not upper
    if large:
        log_front = 0.5 * (math.log(a) - math.log1p(a / b)) - 0.9189385332046728  # log sqrt(a b / (2 pi (a + b)))
        for k in range(2):  # the exponents a rlog1(l / a) and b rlog1(-l / b), both >= 0
            n, t, lz, ratio = (a, lam / a, lx, b / a) if k == 0 else (b, -lam / b, ly, a / b)
            if abs(t) < 0.5:  # t - log1p(t) = 2u^2 / (1 - u) - 2 (u^3 / 3 + u^5 / 5 + ...), u = t / (2 + t)
                u = t / (2.0 + t)
                u2 = u * u
                power, total = u, 0.0
                for j in range(1, 60):
                    power *= u2
                    total += power / (2 * j + 1)
                    if abs(power) < 1e-17 * abs(total):
                        break
                rlog1 = 2.0 * u2 / (1.0 - u) - 2.0 * total
            else:  # log1p(t) = log(z (a + b) / n) for z = x (n = a) or y (n = b)
                rlog1 = t - (lz + math.log1p(ratio))
            log_front -= n * rlog1
        # Stirling's corrections: lgamma(z) = (z - 1/2) log z - z + log(2 pi) / 2 + c(z), c(z) to 2e-16 for z >= 15
        for z, sign in ((a, -1.0), (b, -1.0), (s, 1.0)):
            iz = 1.0 / z
            iz2 = iz * iz
            log_front += (
                sign * iz * (1.0 / 12 - iz2 * (1.0 / 360 - iz2 * (1.0 / 1260 - iz2 * (1.0 / 1680 - iz2 / 1188))))
            )
    else:
        lo, hi = (a, b) if a < b else (b, a)
        if hi >= 20.0:  # log B(a, b) with lgamma(hi) - lgamma(a + b) from Stirling's series, as betaln
            ih, i_s = 1.0 / hi, 1.0 / s
            ih2, is2 = ih * ih, i_s * i_s
            tail_h = ih * (1.0 / 12 - ih2 * (1.0 / 360 - ih2 * (1.0 / 1260 - ih2 * (1.0 / 1680))))
            tail_s = i_s * (1.0 / 12 - is2 * (1.0 / 360 - is2 * (1.0 / 1260 - is2 * (1.0 / 1680))))
            log_beta = math.lgamma(lo) - (hi - 0.5) * math.log1p(lo / hi) - lo * math.log(s) + lo + (tail_h - tail_s)
        else:
            log_beta = math.lgamma(a) + math.lgamma(b) - math.lgamma(s)
        log_front = a * lx + b * ly - log_beta
    # the continued fraction I_x(a, b) = front / a / (1 + d1 / (1 + d2 / (1 + ...))) by modified Lentz
    c = 1.0
    d = (1.0 - lam) / (a + 1.0)  # 1 - (a + b) x / (a + 1)
    if abs(d) < _TINY:
        d = _TINY
    d = 1.0 / d
    h = d
    for m in range(1, 100000):
        m2 = 2.0 * m
        for k in range(2):
            if k == 0:
                step = m * (b - m) * x / ((a + m2 - 1.0) * (a + m2))
            else:
                step = -(a + m) * (s + m) * x / ((a + m2) * (a + m2 + 1.0))
            d = 1.0 + step * d
            if abs(d) < _TINY:
                d = _TINY
            c = 1.0 + step / c
            if abs(c) < _TINY:
                c = _TINY
            d = 1.0 / d
            delta = d * c
            h *= delta
        if abs(delta - 1.0) < _EPS:
            break
    tail = math.exp(log_front - math.log(a)) * h
    return 1.0 - tail if upper else tail


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    return beta_inc(a, b, x, False)


def betaincc(a: float, b: float, x: float) -> float:
    """Its complement 1 - I_x(a, b) = I_{1-x}(b, a)."""
    return beta_inc(a, b, x, True)
