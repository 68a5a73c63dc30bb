"""Scalar ops for the JAX backend: one table, scalar-op name -> a function over `jax.numpy` arrays.

`scalar_fn(scalar_op, in_dtypes)` returns `f(*arrays) -> tuple of arrays` with
NumPy 2's dtypes exactly (the static output dtypes of `dimgraph.core.scalar`):
inputs are cast to the dtypes of the NumPy ufunc loop (`ufunc.resolve_dtypes`),
the table's function runs, and the result is cast to the output dtype. As NumPy
does, float16 loops compute in float32 and round once at the end.

Where `jax.numpy` and NumPy disagree the table entry says so and follows NumPy:
integer `//` and `%` by zero give 0, `trigamma` comes from `polygamma(1, x)`,
`round` of integers is the identity. A `Composite` becomes one function of its
scalar DAG (every step cast to its static dtype), which XLA fuses.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import jax.scipy.special as jsp
import numpy as np

from dimgraph.backends.jax.checks import runtime_check
from dimgraph.core.scalar import Cast, Composite, ScalarOp, loop_dtypes  # noqa: F401  (ScalarOp: the docstring examples)


def cast(x, dtype):
    """`x` as `dtype`. Booleans go to floats through uint8: XLA rewrites `convert(bool) * y` into
    `select(bool, y, 0)`, which loses NumPy's `0 * inf = nan` (and `False / False = nan`)."""
    x = jnp.asarray(x)
    dtype = np.dtype(dtype)
    if x.dtype == dtype:
        return x
    if x.dtype == np.bool_ and dtype.kind in "fc":
        x = x.astype(np.uint8)
    return x.astype(dtype)


def _int_safe_divisor(y):
    return jnp.where(y == 0, jnp.ones((), y.dtype), y)


def _floor_div(x, y):
    if jnp.issubdtype(x.dtype, jnp.integer):  # NumPy: x // 0 == 0 for integers (with a warning)
        return jnp.where(y == 0, jnp.zeros((), x.dtype), jnp.floor_divide(x, _int_safe_divisor(y)))
    return jnp.floor_divide(x, y)


def _mod(x, y):
    if jnp.issubdtype(x.dtype, jnp.integer):  # NumPy: x % 0 == 0 for integers
        return jnp.where(y == 0, jnp.zeros((), x.dtype), jnp.remainder(x, _int_safe_divisor(y)))
    return jnp.remainder(x, y)


def _pow(x, y):
    if jnp.issubdtype(y.dtype, jnp.integer):
        # NumPy raises for negative integer powers of integers (the python backend does too)
        runtime_check(jnp.all(y >= 0), ValueError, "Integers to negative integer powers are not allowed.")
    return jnp.power(x, y)


def _float_to_int(x, out):
    """`x.astype(out)` for floats as NumPy does on x86-64: NaN, inf and values out of the range of
    the conversion's int32/int64 register give its minimum, then narrower ints wrap (XLA saturates)."""
    via = np.dtype("int64") if out.itemsize == 8 or out.kind == "u" and out.itemsize == 4 else np.dtype("int32")
    half = 2.0 ** (via.itemsize * 8 - 1)
    bad = jnp.isnan(x) | (x < -half) | (x >= half)
    t = jnp.where(bad, jnp.zeros((), x.dtype), x).astype(via)
    t = jnp.where(bad, jnp.asarray(np.iinfo(via).min, via), t)
    return t if t.dtype == out else t.astype(out)


def _round(x):
    return x if not jnp.issubdtype(x.dtype, jnp.inexact) else jnp.round(x)


def _int_identity(fn):
    return lambda x: x if not jnp.issubdtype(x.dtype, jnp.inexact) else fn(x)


def _sign(x):
    if jnp.issubdtype(x.dtype, jnp.inexact):
        return jnp.where(jnp.isnan(x), x, jnp.sign(x))
    return jnp.sign(x)


def _where(c, a, b):
    return jnp.where(c.astype(bool), a, b)


def _recur(x, term):
    """Sum of `term(x + k)` for k = 0, 1, ... while x + k < 12, and the x >= 12 reached (x >= 0)."""
    acc = jnp.zeros_like(x)
    for _ in range(12):  # from x >= 0 twelve steps reach 12
        small = x < 12
        acc = acc + jnp.where(small, term(jnp.where(small, x, 1)), 0)
        x = jnp.where(small, x + 1, x)
    return acc, x


def _pi_frac(x):
    """pi * (x - round(x)): the argument of sin/tan(pi x) reduced exactly, so poles keep their digits."""
    return jnp.pi * (x - jnp.round(x))


def _digamma(x):
    # as dimgraph.core.special.digamma: reflection for x < 0, recurrence to x >= 12, asymptotic series
    neg = x < 0
    y = jnp.where(neg, 1 - x, x)
    acc, y = _recur(y, lambda t: -1 / t)
    inv = 1 / y
    inv2 = inv * inv
    series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 * (1.0 / 132)))))
    out = acc + jnp.log(y) - 0.5 * inv - series
    out = jnp.where(neg, out - jnp.pi / jnp.tan(_pi_frac(x)), out)
    # psi(+-0) = -+inf (the pole's one-sided limit), nan at negative integers and -inf, psi(inf) = inf
    out = jnp.where(x == 0, jnp.where(jnp.signbit(x), jnp.inf, -jnp.inf).astype(x.dtype), out)
    out = jnp.where((neg & (x == jnp.floor(x))) | jnp.isnan(x), jnp.nan, out)
    return jnp.where(x == jnp.inf, jnp.inf, out)


def _trigamma(x):
    # as dimgraph.core.special.trigamma: psi1(x) = -psi1(1 - x) + pi^2 / sin^2(pi x) for x < 0
    neg = x < 0
    y = jnp.where(neg, 1 - x, x)
    acc, y = _recur(y, lambda t: 1 / t / t)
    inv = 1 / y
    inv2 = inv * inv
    out = acc + inv + 0.5 * inv2 + inv * inv2 * (1.0 / 6 - inv2 * (1.0 / 30 - inv2 * (1.0 / 42 - inv2 * (1.0 / 30))))
    s = jnp.sin(_pi_frac(x))
    out = jnp.where(neg, -out + (jnp.pi / s) * (jnp.pi / s), out)
    out = jnp.where((x <= 0) & (x == jnp.floor(x)), jnp.inf, out)
    out = jnp.where(x == jnp.inf, 0, out)
    return jnp.where(jnp.isnan(x), jnp.nan, out)


def _gammaln(x):
    out = jsp.gammaln(x)
    return jnp.where(jnp.isinf(x) | ((x <= 0) & (x == jnp.floor(x))), jnp.inf, out)


def _log1mexp(x):
    # as dimgraph.core.special.log1mexp: log1p(-exp(x)) below -log 2, log(-expm1(x)) above
    far = x < -np.log(2.0)
    return jnp.where(far, jnp.log1p(-jnp.exp(jnp.where(far, x, -1.0))), jnp.log(-jnp.expm1(jnp.where(far, -1.0, x))))


def _stirling_tail(x):
    inv = 1 / x
    inv2 = inv * inv
    return inv * (1.0 / 12 - inv2 * (1.0 / 360 - inv2 * (1.0 / 1260 - inv2 * (1.0 / 1680))))


def _betaln(a, b):
    # as dimgraph.core.special.betaln (poles, then Stirling's series for lgamma(b) - lgamma(a + b) once the larger
    # b >= 20, where jax.scipy.special.betaln loses 8 digits)
    def pole(v):
        return (v <= 0) & (v == jnp.floor(v))

    swap = pole(b) & ~pole(a)
    a, b = jnp.where(swap, b, a), jnp.where(swap, a, b)
    # a pole of Gamma(a) with b an integer and a + b <= 0: the finite limit |B(a, b)| = |B(1 - a - b, b)| (scipy)
    limit = pole(a) & jnp.isfinite(a) & jnp.isfinite(b) & (b == jnp.floor(b)) & (a + b <= 0)
    infinite = (pole(a) & ~limit) | (limit & (b <= 0))
    a = jnp.where(limit, 1 - a - b, a)
    nan = jnp.isnan(a) | jnp.isnan(b) | ((a == jnp.inf) & (b == jnp.inf))
    a, b = jnp.minimum(a, b), jnp.maximum(a, b)
    s = a + b
    far = (a > 0) & (b >= 20) & jnp.isfinite(b)
    bf = jnp.where(far, b, 20.0)
    sf = jnp.where(far, s, 21.0)
    diff = -(bf - 0.5) * jnp.log1p(a / bf) - a * jnp.log(sf) + a + (_stirling_tail(bf) - _stirling_tail(sf))
    out = jnp.where(far, jsp.gammaln(a) + diff, _gammaln(a) + _gammaln(b) - _gammaln(s))
    out = jnp.where(pole(s), -jnp.inf, out)
    out = jnp.where(b == jnp.inf, jnp.where(a > 0, -jnp.inf, jnp.inf), out)
    out = jnp.where(nan, jnp.nan, out)
    return jnp.where(infinite, jnp.inf, out)


def _small_a_gammaincc(a, x):
    """Q(a, x) for a < 1/2 and x < a + 1 from its own series, as dimgraph.core.special.gamma_inc (jax's 1 - P goes negative)."""
    horner = a * (
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
    lgamma1p = jnp.where(a < 0.01, horner, jsp.gammaln(1.0 + a))
    e = a * jnp.log(x) - lgamma1p
    term, total = jnp.ones_like(x), jnp.zeros_like(x)
    for n in range(1, 41):  # x < 1.5: 1.5^40 / 40! is below 1e-40
        term = term * (-x / n)
        total = total + term / (a + n)
    return -jnp.expm1(e) - jnp.exp(e) * a * total


def _gamma_inc(upper):
    """jax's regularized incomplete gamma with scipy's limits: P(0, x > 0) = 1, P(inf, finite x) = 0."""
    fn = jsp.gammaincc if upper else jsp.gammainc

    def gamma_inc(a, x):
        one, zero = (0.0, 1.0) if upper else (1.0, 0.0)  # the values P takes as 1 and 0 (Q: swapped)
        out = fn(a, x)
        if upper:
            small = (a > 0) & (a < 0.5) & (x > 0) & (x < a + 1)
            out = jnp.where(small, _small_a_gammaincc(jnp.where(small, a, 0.25), jnp.where(small, x, 0.5)), out)
        out = jnp.where((a == 0) & (x > 0), one, out)
        out = jnp.where((a == jnp.inf) & (x >= 0) & (x < jnp.inf), zero, out)
        return jnp.where((a == jnp.inf) & (x == jnp.inf), jnp.nan, out).astype(out.dtype)

    return gamma_inc


def _beta_inc(upper):
    """jax's regularized incomplete beta (its complement as I_{1-x}(b, a) where 1 - x is exact, x >= 1/2) with scipy's edges and domain,
    as dimgraph.core.special.beta_inc: x = 0 or 1, a shape 0 or inf give 0 or 1; outside the domain nan."""

    def beta_inc(a, b, x):
        nan = jnp.isnan(a) | jnp.isnan(b) | jnp.isnan(x) | (a < 0) | (b < 0) | (x < 0) | (x > 1)
        nan = nan | ((a == 0) & (b == 0)) | (jnp.isinf(a) & jnp.isinf(b))
        edge = (x == 0) | (x == 1) | (a == 0) | (b == 0) | jnp.isinf(a) | jnp.isinf(b)
        lower = jnp.where(x == 0, 0.0, jnp.where((x == 1) | (a == 0) | (b == jnp.inf), 1.0, 0.0))
        inside = ~(nan | edge)
        a, b, x = jnp.where(inside, a, 1.0), jnp.where(inside, b, 1.0), jnp.where(inside, x, 0.5)
        out = jnp.where(x < 0.5, 1 - jsp.betainc(a, b, x), jsp.betainc(b, a, 1 - x)) if upper else jsp.betainc(a, b, x)
        out = jnp.where(edge, 1 - lower if upper else lower, out)
        return jnp.where(nan, jnp.nan, out).astype(out.dtype)

    return beta_inc


def _softplus(x):
    return jnp.logaddexp(x, jnp.zeros((), x.dtype))


# name -> function of arrays already cast to the NumPy loop dtypes
JAX_SCALAR = {
    "add": jnp.add,
    "sub": jnp.subtract,
    "mul": jnp.multiply,
    "true_div": jnp.true_divide,
    "floor_div": _floor_div,
    "mod": _mod,
    "pow": _pow,
    "neg": jnp.negative,
    "abs": jnp.abs,
    "sign": _sign,
    "reciprocal": lambda x: jnp.ones((), x.dtype) / x,
    "maximum": jnp.maximum,
    "minimum": jnp.minimum,
    "eq": jnp.equal,
    "neq": jnp.not_equal,
    "lt": jnp.less,
    "le": jnp.less_equal,
    "gt": jnp.greater,
    "ge": jnp.greater_equal,
    "and": jnp.bitwise_and,
    "or": jnp.bitwise_or,
    "xor": jnp.bitwise_xor,
    "invert": jnp.invert,
    "isnan": jnp.isnan,
    "isfinite": jnp.isfinite,
    "isinf": jnp.isinf,
    "exp": jnp.exp,
    "exp2": jnp.exp2,
    "log": jnp.log,
    "log2": jnp.log2,
    "log10": jnp.log10,
    "log1p": jnp.log1p,
    "expm1": jnp.expm1,
    "sqrt": jnp.sqrt,
    "square": jnp.square,
    "sin": jnp.sin,
    "cos": jnp.cos,
    "tan": jnp.tan,
    "arcsin": jnp.arcsin,
    "arccos": jnp.arccos,
    "arctan": jnp.arctan,
    "sinh": jnp.sinh,
    "cosh": jnp.cosh,
    "tanh": jnp.tanh,
    "arctan2": jnp.arctan2,
    "sigmoid": jax.nn.sigmoid,
    "softplus": _softplus,
    "erf": jsp.erf,
    "erfc": jsp.erfc,
    "gammaln": _gammaln,
    "digamma": _digamma,
    "trigamma": _trigamma,
    "logaddexp": jnp.logaddexp,
    "logit": jsp.logit,
    "log1mexp": _log1mexp,
    "xlogy": jsp.xlogy,
    "betaln": _betaln,
    "gammainc": _gamma_inc(upper=False),
    "gammaincc": _gamma_inc(upper=True),
    "betainc": _beta_inc(upper=False),
    "betaincc": _beta_inc(upper=True),
    "round": _round,
    "floor": _int_identity(jnp.floor),
    "ceil": _int_identity(jnp.ceil),
    "trunc": _int_identity(jnp.trunc),
    "where": _where,
    "identity": lambda x: x,
    "stop_gradient": jax.lax.stop_gradient,
}


def _one(op, in_dtypes):
    """`f(*arrays) -> array` for a named scalar op or Cast, cast to its static output dtype."""
    out = np.dtype(op.output_dtypes(in_dtypes)[0])
    if isinstance(op, Cast):
        if out == np.bool_:
            return lambda x: x != 0
        if out.kind in "iu" and np.dtype(in_dtypes[0]).kind == "f":
            return lambda x: _float_to_int(x, out)
        return lambda x: cast(x, out)
    fn = JAX_SCALAR[op.name]
    # NumPy's loop dtypes; float16 computes in float32 (as NumPy's loops do) and rounds once at the end
    loops = tuple(np.dtype("float32") if d == np.float16 else d for d in loop_dtypes(op, in_dtypes)[0])

    def apply(*xs):
        res = fn(*[cast(x, d) for x, d in zip(xs, loops)])
        return res if res.dtype == out else cast(res, out)

    return apply


def scalar_fn(op, in_dtypes):
    """`f(*arrays) -> tuple of arrays` for `op` (a ScalarOp, Cast or Composite) on inputs of `in_dtypes`.

    >>> import numpy as np
    >>> f = scalar_fn(ScalarOp("floor_div"), ("int32", "int32"))
    >>> [int(v) for v in f(np.array([7, 7], np.int32), np.array([2, 0], np.int32))[0]]
    [3, 0]
    """
    in_dtypes = tuple(np.dtype(d).name for d in in_dtypes)
    if not isinstance(op, Composite):
        one = _one(op, in_dtypes)
        return lambda *xs: (one(*[jnp.asarray(x) for x in xs]),)
    dts = op.step_dtypes
    steps = [(_one(step, tuple(dts[r] for r in refs)), refs) for step, refs in op.steps]
    outs = op.outs

    def composite(*xs):
        vals = [jnp.asarray(x) for x in xs]
        for fn, refs in steps:
            vals.append(fn(*[vals[r] for r in refs]))
        return tuple(vals[r] for r in outs)

    return composite
