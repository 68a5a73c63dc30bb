"""Scalar helpers that generated kernels call where NumPy's semantics differ from Numba's.

Every helper is `njit(cache=True)`: it costs one compilation per argument type
for the whole process (and none once Numba's cache holds it); LLVM inlines it
into the kernel's loop when the kernel's module is linked (Numba-level inlining
was measured slower to compile). Each one mirrors the NumPy routine
named in its docstring, so results agree with the python backend exactly
(integer division by zero gives 0, max/min propagate NaN, casts from NaN give
the minimum integer as on x86, and so on).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from dimgraph.core import special

_jit = numba.njit(cache=True, error_model="numpy")
_jit_call = numba.njit(cache=True, error_model="numpy")

_LOGE2 = math.log(2.0)
_TWO63 = 2.0**63


@_jit
def maximum(a, b):
    """np.maximum: NaN in either argument gives NaN."""
    return a if (a >= b or a != a) else b


@_jit
def minimum(a, b):
    """np.minimum: NaN in either argument gives NaN."""
    return a if (a <= b or a != a) else b


@_jit
def floordiv_int(a, b):
    """np.floor_divide on ints: x // 0 is 0; MIN // -1 wraps (the caller casts the result back)."""
    if b == 0:
        return a - a
    if b == -1:
        return -a
    return a // b


@_jit
def mod_int(a, b):
    """np.remainder on ints: x % 0 is 0, the sign follows the divisor."""
    if b == 0 or b == -1:
        return a - a
    return a % b


@_jit
def floordiv_float(a, b):
    """np.floor_divide on floats (npy_divmod): x // 0 is x / 0 (inf or nan)."""
    if b == 0:
        return a / b
    mod = np.fmod(a, b)
    div = (a - mod) / b
    if mod != 0 and ((b < 0) != (mod < 0)):
        div -= 1.0
    if div != 0:
        floordiv = np.floor(div)
        if div - floordiv > 0.5:
            floordiv += 1.0
    else:
        floordiv = math.copysign(0.0, a / b)
    return floordiv


@_jit
def mod_float(a, b):
    """np.remainder on floats (npy_divmod): the sign follows the divisor; x % 0 is nan."""
    if b == 0:
        return np.fmod(a, b)
    mod = np.fmod(a, b)
    if mod != 0:
        if (b < 0) != (mod < 0):
            mod += b
    else:
        mod = math.copysign(0.0, b)
    return mod


@_jit_call
def pow_int(a, b):
    """np.power on ints: wrapping repeated squaring; a negative exponent is an error as in NumPy."""
    if b < 0:
        raise ValueError("Integers to negative integer powers are not allowed.")
    result = a - a + 1
    base = a
    while b > 0:
        if b & 1:
            result = result * base
        base = base * base
        b >>= 1
    return result


@_jit
def sign(x):
    """np.sign: NaN stays NaN."""
    if x != x:
        return x
    return (x > 0) - (x < 0)


@_jit
def sigmoid(x):
    """The stable logistic used by the scalar table (no overflow for large |x|)."""
    e = math.exp(-abs(x))
    if x >= 0:
        return 1.0 / (1.0 + e)
    return e / (1.0 + e)


@_jit
def softplus(x):
    """log(1 + exp(x)) without overflow: log1p(exp(-|x|)) + max(x, 0), NaN-propagating."""
    return math.log1p(math.exp(-abs(x))) + maximum(x, 0.0)


@_jit
def logaddexp(x, y):
    """np.logaddexp (npy_logaddexp)."""
    if x == y:
        return x + _LOGE2
    tmp = x - y
    if tmp > 0:
        return x + math.log1p(math.exp(-tmp))
    if tmp <= 0:
        return y + math.log1p(math.exp(tmp))
    return tmp


@_jit
def exp2(x):
    return math.pow(2.0, x)


@_jit
def float_to_int64(x):
    """An unsafe float -> int64 cast as NumPy does it on x86: NaN, inf and overflow give MIN."""
    if x != x or x >= 9.2233720368547758e18 or x < -9.2233720368547758e18:
        return np.int64(-9223372036854775808)
    return np.int64(x)


@_jit
def float_to_uint64(x):
    """An unsafe float -> uint64 cast (values at or above 2**63 convert directly)."""
    if x >= _TWO63 and x < 1.8446744073709552e19:
        return np.uint64(x)
    return np.uint64(float_to_int64(x))


# The special functions compile the python backend's own scalar code, so both agree to the last bit.
lgamma = _jit(special.lgamma)
digamma = _jit_call(special.digamma)
trigamma = _jit_call(special.trigamma)
logit = _jit(special.logit)
log1mexp = _jit(special.log1mexp)
xlogy = _jit(special.xlogy)
betaln = _jit_call(special.betaln)
gamma_inc = _jit_call(special.gamma_inc)
beta_inc = _jit_call(special.beta_inc)


@intrinsic
def _f64_from_bits(typingctx, bits):
    """Reinterpret an int64 as a float64 (a register move; keeps loops vectorizable)."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


@intrinsic
def _bits_from_f64(typingctx, x):
    """Reinterpret a float64 as an int64 (a register move, the inverse of `_f64_from_bits`)."""
    sig = types.int64(types.float64)

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return sig, codegen


_SIGN_BIT = np.int64(-(2**63))
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10


# Only our own polynomial may contract a * b + c into one fused multiply-add (one rounding
# instead of two: no less accurate, and 25% faster in a vectorized loop); user arithmetic
# is never contracted, so it rounds as NumPy's does.
_jit_fma = numba.njit(cache=True, error_model="numpy", fastmath={"contract"})


@_jit_fma
def exp_f64(x):
    """exp for float64 without a libm call, so loops around it vectorize (no SVML here).

    Cody-Waite reduction x = k ln2 + r, |r| <= ln2/2, the degree-12 Taylor polynomial
    (truncation below 2e-16 relative) in fused multiply-adds, and 2**k built from exponent
    bits in two halves (so overflow to inf and gradual underflow come out right). Against
    np.exp over [-708, 709] (normal results): at most 2 ulp, above 1 ulp at 0.4% of points
    (3 ulp without the fused multiply-adds; tests/backends/test_numba.py); inf, nan, 0 and
    -inf behave as np.exp.
    """
    xc = min(max(x, -800.0), 800.0)
    k = np.rint(xc * _LOG2E)
    r = (xc - k * _LN2_HI) - k * _LN2_LO
    p = 1.0 + r * (
        1.0
        + r
        * (
            1.0 / 2
            + r
            * (
                1.0 / 6
                + r
                * (
                    1.0 / 24
                    + r
                    * (
                        1.0 / 120
                        + r
                        * (
                            1.0 / 720
                            + r
                            * (
                                1.0 / 5040
                                + r
                                * (
                                    1.0 / 40320
                                    + r
                                    * (
                                        1.0 / 362880
                                        + r * (1.0 / 3628800 + r * (1.0 / 39916800 + r * (1.0 / 479001600)))
                                    )
                                )
                            )
                        )
                    )
                )
            )
        )
    )
    ki = np.int64(k)
    k1 = ki >> 1
    k2 = ki - k1
    res = p * _f64_from_bits((k1 + 1023) << 52) * _f64_from_bits((k2 + 1023) << 52)
    return res if x == x else x


@_jit_fma
def expm1_f64(x):
    """expm1 for float64 without a libm call (loops around it vectorize), from `exp_f64`'s reduction.

    x = k ln2 + r, |r| <= ln2/2; expm1(r) by its degree-13 Taylor polynomial (r + r^2 (1/2 + ...)),
    then expm1(x) = 2**k expm1(r) + (2**k - 1), exact in the subtraction for the k where it
    matters; near the overflow edge (k > 1000) as (1 + expm1(r)) 2**k - 1 so 2**k does not
    overflow first. +-0, nan and +-inf as np.expm1; accuracy in tests/backends/test_numba_math.py.
    """
    xc = min(max(x, -800.0), 800.0)
    k = np.rint(xc * _LOG2E)
    r = (xc - k * _LN2_HI) - k * _LN2_LO
    p = r + r * r * (
        1.0 / 2
        + r
        * (
            1.0 / 6
            + r
            * (
                1.0 / 24
                + r
                * (
                    1.0 / 120
                    + r
                    * (
                        1.0 / 720
                        + r
                        * (
                            1.0 / 5040
                            + r
                            * (
                                1.0 / 40320
                                + r
                                * (
                                    1.0 / 362880
                                    + r
                                    * (
                                        1.0 / 3628800
                                        + r * (1.0 / 39916800 + r * (1.0 / 479001600 + r * (1.0 / 6227020800)))
                                    )
                                )
                            )
                        )
                    )
                )
            )
        )
    )
    ki = np.int64(k)
    k1 = ki >> 1
    h1 = _f64_from_bits((k1 + 1023) << 52)
    h2 = _f64_from_bits((ki - k1 + 1023) << 52)
    if ki > 1000:
        res = ((p + 1.0) * h1) * h2 - 1.0
    else:
        two_k = h1 * h2
        res = p * two_k + (two_k - 1.0)
    return x if x == 0 or x != x else res


@_jit_fma
def tanh_arg(x):
    """2 min(|x|, 20): the argument of `expm1` in `tanh_f64` (tanh rounds to 1 past 20)."""
    return 2.0 * min(abs(x), 20.0)


@_jit_fma
def tanh_from_expm1(t, x):
    """tanh(x) from t = expm1(tanh_arg(x)): t / (t + 2) with x's sign bit put on by bits (a branch
    would stop the loop vectorizing); +-0, subnormals and nan come out as np.tanh's."""
    y = t / (t + 2.0)
    return _f64_from_bits(_bits_from_f64(y) | (_bits_from_f64(x) & _SIGN_BIT))


@_jit_fma
def tanh_f64(x):
    """tanh for float64 without a libm call. Kernels print it as its three parts (`tanh_arg`, `expm1_f64`,
    `tanh_from_expm1`): each is small enough for LLVM to inline into the loop, which then vectorizes,
    where one function holding all three is not inlined (measured: 0.75 vs 4.9 ns per element)."""
    return tanh_from_expm1(expm1_f64(tanh_arg(x)), x)


@_jit_fma
def sigmoid_f64(x):
    """The stable logistic for float64 through `exp_f64`: r = 1 / (1 + e^-|x|), e^-|x| r below 0."""
    e = exp_f64(-abs(x))
    r = 1.0 / (1.0 + e)
    return r if x >= 0 else e * r


# Reassociation lets LLVM keep several partial sums in vector registers: the order of the
# additions changes (as NumPy's pairwise summation changes it), never which values are added;
# nan and inf propagate as in any order. Only this function carries the flag.
@numba.njit(cache=True, error_model="numpy", fastmath={"reassoc"})
def sum_row(row):
    """The sum of a 1-d float64 array, vectorized (a plain load summed over a kernel's innermost axis)."""
    s = 0.0
    for i in range(row.shape[0]):
        s += row[i]
    return s


@_jit
def reciprocal_exact(b, tiny, huge):
    """Whether `x * (1 / b)` may stand for `x / b` for every x (a loop-invariant divisor).

    True for 0, +-inf and nan (the product gives the division's inf/nan/0 exactly) and
    for |b| in [tiny, huge] = the normal range of the dtype with a normal reciprocal:
    then the two differ by at most 1 ulp (two roundings instead of one; measured on
    random operands, see tests/backends/test_numba.py). A subnormal or huge divisor,
    whose reciprocal would overflow or lose bits, keeps the division.
    """
    a = abs(b)
    return a == 0 or a != a or a == np.inf or tiny <= a <= huge


@_jit
def sum_buffer(buf):
    """Sum of a row buffer with four independent partial sums (the adds overlap in the pipeline)."""
    n = buf.shape[0]
    a0 = 0.0
    a1 = a0
    a2 = a0
    a3 = a0
    i = 0
    while i + 4 <= n:
        a0 += buf[i]
        a1 += buf[i + 1]
        a2 += buf[i + 2]
        a3 += buf[i + 3]
        i += 4
    while i < n:
        a0 += buf[i]
        i += 1
    return (a0 + a1) + (a2 + a3)
