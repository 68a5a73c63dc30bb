"""numba kernels for random draws: a Philox4x32-10 counter-based generator and the primitive samplers.

A draw reads the stream named by the state words (key, counter): block b of
the stream is Philox4x32-10 of the counter (b, counter) under the key, two
uint64 per block, consumed in order over the draws in C order. Nothing is
mutated that the graph can see: the kernel returns the next state (the
counter plus one), so a state used twice gives the same numbers twice.
The samplers: uniform (53 random bits), normal (a 256-layer ziggurat),
gamma (Marsaglia-Tsang, boosted by U^(1/a) below shape 1), Poisson
(multiplication below rate 10, Hormann's PTRS above), binomial (inversion
when n min(p, 1-p) < 10, else Devroye's recursion on beta order statistics).
The C backend prints the same algorithms (`backends/c/random.py`).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from dimgraph.backends import ziggurat
from dimgraph.backends.numba.ops import numba_kernel
from dimgraph.core.random import RandomDraw

_jit = numba.njit(cache=True, error_model="numpy")

_MASK = np.uint64(0xFFFFFFFF)
_M0, _M1 = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
_W0, _W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)
_S32 = np.uint64(32)
_S11 = np.uint64(11)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_TWO_M53 = 2.0**-53

# stream array: [key, counter, next block, buffered word, has buffered word]
_KEY, _CTR, _BLOCK, _BUF, _HAS = 0, 1, 2, 3, 4


@_jit
def philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of the counter (c0..c3) under the key (k0, k1): four 32-bit words (held in uint64)."""
    for r in range(10):
        p0 = _M0 * c0
        p1 = _M1 * c2
        c0, c1, c2, c3 = ((p1 >> _S32) ^ c1 ^ k0) & _MASK, p1 & _MASK, ((p0 >> _S32) ^ c3 ^ k1) & _MASK, p0 & _MASK
        k0 = (k0 + _W0) & _MASK
        k1 = (k1 + _W1) & _MASK
    return c0, c1, c2, c3


@_jit
def stream(state):
    """The sampler stream of the state words (key words mixed into one 64-bit Philox key)."""
    st = np.zeros(5, dtype=np.uint64)
    st[_KEY] = state[0] ^ (state[1] * np.uint64(0x9E3779B97F4A7C15))
    st[_CTR] = state[2]
    return st


@_jit
def next_u64(st):
    if st[_HAS] != _ZERO:
        st[_HAS] = _ZERO
        return st[_BUF]
    b, c, k = st[_BLOCK], st[_CTR], st[_KEY]
    w0, w1, w2, w3 = philox(b & _MASK, b >> _S32, c & _MASK, c >> _S32, k & _MASK, k >> _S32)
    st[_BLOCK] = b + _ONE
    st[_BUF] = (w2 << _S32) | w3
    st[_HAS] = _ONE
    return (w0 << _S32) | w1


@_jit
def uniform(st):
    """Uniform on [0, 1) with 53 random bits."""
    return float(next_u64(st) >> _S11) * _TWO_M53


_KI, _WI, _FI = ziggurat.KI.astype(np.int64), ziggurat.WI, ziggurat.FI
_R, _INV_R = ziggurat.R, 1.0 / ziggurat.R
_MANTISSA = np.uint64(0x000FFFFFFFFFFFFF)


@_jit
def normal_from(r, st):
    """A standard normal from the 64-bit word `r`; the 1% of words that miss the ziggurat's rectangles go on
    with words from `st`."""
    while True:
        idx = np.int64(r & np.uint64(0xFF))
        rabs = np.int64((r >> np.uint64(9)) & _MANTISSA)
        negative = (r >> np.uint64(8)) & _ONE
        x = rabs * _WI[idx]
        if negative:
            x = -x
        if rabs < _KI[idx]:
            return x
        if idx == 0:  # the tail beyond R (Marsaglia 1964)
            while True:
                xx = -_INV_R * math.log1p(-uniform(st))
                yy = -math.log1p(-uniform(st))
                if yy + yy > xx * xx:
                    return -(_R + xx) if negative else _R + xx
        if (_FI[idx - 1] - _FI[idx]) * uniform(st) + _FI[idx] < math.exp(-0.5 * x * x):
            return x
        r = next_u64(st)


@_jit
def normal(st):
    """Standard normal: the 256-layer ziggurat (`backends/ziggurat.py`), one 64-bit word for 99% of draws."""
    return normal_from(next_u64(st), st)


@_jit
def fill_normal(state, flat):
    """`flat` filled with standard normals: word k of the stream starts draw k (Philox blocks computed in
    the loop, in registers); the rare draws that need more words take them from the stream's upper half."""
    st = stream(state)
    st[_BLOCK] = np.uint64(1) << np.uint64(63)
    key, ctr = st[_KEY], st[_CTR]
    k0, k1, c2, c3 = key & _MASK, key >> _S32, ctr & _MASK, ctr >> _S32
    n = flat.size
    for b in range((n + 1) // 2):
        block = np.uint64(b)
        w0, w1, w2, w3 = philox(block & _MASK, block >> _S32, c2, c3, k0, k1)
        flat[2 * b] = normal_from((w0 << _S32) | w1, st)
        if 2 * b + 1 < n:
            flat[2 * b + 1] = normal_from((w2 << _S32) | w3, st)


@_jit
def gamma(st, a):
    """Gamma(a, 1) (Marsaglia-Tsang); NaN for a <= 0 or NaN."""
    if not a > 0.0:
        return np.nan
    boost = 1.0
    if a < 1.0:
        boost = (1.0 - uniform(st)) ** (1.0 / a)
        a += 1.0
    d = a - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = normal(st)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = 1.0 - uniform(st)
        if u < 1.0 - 0.0331 * x * x * x * x or math.log(u) < 0.5 * x * x + d * (1.0 - v + math.log(v)):
            return d * v * boost


@_jit
def poisson(st, lam):
    """Poisson(lam); -1 for an invalid rate."""
    if not (lam >= 0.0 and lam < 1e18):
        return -1
    if lam < 10.0:
        limit = math.exp(-lam)
        k = 0
        prod = 1.0 - uniform(st)
        while prod > limit:
            k += 1
            prod *= 1.0 - uniform(st)
        return k
    # PTRS (Hormann 1993)
    slam = math.sqrt(lam)
    loglam = math.log(lam)
    b = 0.931 + 2.53 * slam
    a = -0.059 + 0.02483 * b
    invalpha = 1.1239 + 1.1328 / (b - 3.4)
    vr = 0.9277 - 3.6224 / (b - 2.0)
    while True:
        u = uniform(st) - 0.5
        v = 1.0 - uniform(st)
        us = 0.5 - abs(u)
        k = math.floor((2.0 * a / us + b) * u + lam + 0.43)
        if us >= 0.07 and v <= vr:
            return int(k)
        if k < 0.0 or (us < 0.013 and v > us):
            continue
        if math.log(v) + math.log(invalpha) - math.log(a / (us * us) + b) <= -lam + k * loglam - math.lgamma(k + 1.0):
            return int(k)


@_jit
def _binomial_inversion(st, n, p):
    """Binomial by sequential search of the cdf, for n * p < 10 with p <= 1/2."""
    q = 1.0 - p
    s = p / q
    a = (n + 1) * s
    r = q**n
    u = uniform(st)
    x = 0
    while u > r and x < n:
        u -= r
        x += 1
        r *= a / x - s
    return x


@_jit
def binomial(st, n, p):
    """Binomial(n, p); -1 for invalid parameters."""
    if not (n >= 0 and p >= 0.0 and p <= 1.0):
        return -1
    n0, flip = n, p > 0.5
    if flip:
        p = 1.0 - p
    total = 0
    # Devroye: the k-th of n uniforms is Beta(k, n + 1 - k); below it lie k - 1 of them
    while n * p >= 10.0:
        k = (n + 1) // 2
        ga = gamma(st, float(k))
        gb = gamma(st, float(n + 1 - k))
        x = ga / (ga + gb)
        if x < p:
            total += k
            n -= k
            p = (p - x) / (1.0 - x)
        else:
            n = k - 1
            p = p / x
    total += _binomial_inversion(st, n, p)
    return n0 - total if flip else total  # flipped: counted the failures


_SAMPLER_CALLS = {
    "uniform": "uniform(st)",
    "normal": "normal(st)",
    "gamma": "gamma(st, p0[i])",
    "poisson": "poisson(st, p0[i])",
    "binomial": "binomial(st, p0[i], p1[i])",
}


@numba_kernel.register(RandomDraw)
def _random_draw(op, node):
    nparams, ndim = op.nparams, node.outputs[1].type.ndim
    params = [f"p{k}" for k in range(nparams)]
    sizes = [f"s{k}" for k in range(ndim)]
    shape = "(" + "".join(f"{s}.item(), " for s in sizes) + ")"
    dtype = "np.float64" if op.dtype == "float64" else "np.int64"
    lines = [
        "from dimgraph.backends.numba.random import binomial, fill_normal, gamma, poisson, stream, uniform",
        "",
        "",
        f"def kernel(state, {''.join(p + ', ' for p in params)}{', '.join(sizes)}):",
        f"    out = np.empty({shape}, dtype={dtype})",
    ]
    # parameters broadcast to the draws' shape (stride 0 where their size is 1), then read flat
    lines += [f"    {p} = np.ascontiguousarray(np.broadcast_to({p}, out.shape)).reshape(-1)" for p in params]
    if op.kind == "normal":
        lines += ["    fill_normal(state, out.reshape(-1))"]
    else:
        lines += [
            "    st = stream(state)",
            "    flat = out.reshape(-1)",
            "    for i in range(flat.size):",
            f"        flat[i] = {_SAMPLER_CALLS[op.kind]}",
        ]
    lines += [
        "    following = state.copy()",
        "    following[2] += np.uint64(1)",
        "    return following, out",
    ]
    return "\n".join(lines) + "\n"
