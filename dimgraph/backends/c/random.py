"""The C emitter of random draws: the Philox4x32-10 stream and samplers of `backends/numba/random.py`, in C.

The helpers are file-scope functions (`CImpl.prelude`), printed once per
translation unit that draws. The plan makes the parameters broadcast views of
the draws' shape; the kernel fills the draws in C order from the stream the
state words name and writes the next state (the counter plus one).
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends import ziggurat
from dimgraph.backends.c.loops import loop
from dimgraph.backends.c.registry import CImpl, c_impl
from dimgraph.core.random import RandomDraw

RANDOM_PRELUDE = r"""
/* Random draws: Philox4x32-10 (Salmon et al. 2011) over the counter (block, state counter). */
typedef struct { uint64_t key, ctr, block, buf; int has; } dg_stream;

static void dg_philox(uint32_t c[4], uint32_t k0, uint32_t k1) {
  for (int r = 0; r < 10; r++) {
    const uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
    const uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
    c[0] = n0; c[1] = (uint32_t)p1; c[2] = n2; c[3] = (uint32_t)p0;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }
}

static void dg_stream_init(dg_stream *st, uint64_t s0, uint64_t s1, uint64_t s2) {
  st->key = s0 ^ (s1 * 0x9E3779B97F4A7C15ull); st->ctr = s2; st->block = 0; st->buf = 0; st->has = 0;
}

static uint64_t dg_next_u64(dg_stream *st) {
  if (st->has) { st->has = 0; return st->buf; }
  uint32_t c[4] = {(uint32_t)st->block, (uint32_t)(st->block >> 32), (uint32_t)st->ctr, (uint32_t)(st->ctr >> 32)};
  dg_philox(c, (uint32_t)st->key, (uint32_t)(st->key >> 32));
  st->block++;
  st->buf = ((uint64_t)c[2] << 32) | c[3]; st->has = 1;
  return ((uint64_t)c[0] << 32) | c[1];
}

static double dg_uniform(dg_stream *st) { return (double)(dg_next_u64(st) >> 11) * 0x1.0p-53; }

static double dg_normal_from(uint64_t r, dg_stream *st) {  /* the 256-layer ziggurat (backends/ziggurat.py) */
  for (;;) {
    const uint64_t idx = r & 0xFF, rabs = (r >> 9) & 0x000FFFFFFFFFFFFFull, negative = (r >> 8) & 1;
    double x = (double)rabs * dg_zig_wi[idx];
    if (negative) x = -x;
    if (rabs < dg_zig_ki[idx]) return x;
    if (idx == 0) {  /* the tail beyond R */
      for (;;) {
        const double xx = -DG_ZIG_INV_R * log1p(-dg_uniform(st)), yy = -log1p(-dg_uniform(st));
        if (yy + yy > xx * xx) return negative ? -(DG_ZIG_R + xx) : DG_ZIG_R + xx;
      }
    }
    if ((dg_zig_fi[idx - 1] - dg_zig_fi[idx]) * dg_uniform(st) + dg_zig_fi[idx] < exp(-0.5 * x * x)) return x;
    r = dg_next_u64(st);
  }
}

static double dg_normal(dg_stream *st) { return dg_normal_from(dg_next_u64(st), st); }

/* Normals in C order: word k of the stream starts draw k; the rare draws that need more words take them
   from the stream's upper half (as the numba backend). */
static void dg_fill_normal(uint64_t s0, uint64_t s1, uint64_t s2, double *out, int64_t n) {
  dg_stream st;
  dg_stream_init(&st, s0, s1, s2);
  st.block = (uint64_t)1 << 63;
  for (int64_t b = 0; 2 * b < n; b++) {
    uint32_t c[4] = {(uint32_t)b, (uint32_t)((uint64_t)b >> 32), (uint32_t)s2, (uint32_t)(s2 >> 32)};
    dg_philox(c, (uint32_t)st.key, (uint32_t)(st.key >> 32));
    out[2 * b] = dg_normal_from(((uint64_t)c[0] << 32) | c[1], &st);
    if (2 * b + 1 < n) out[2 * b + 1] = dg_normal_from(((uint64_t)c[2] << 32) | c[3], &st);
  }
}

static double dg_gamma(dg_stream *st, double a) {
  if (!(a > 0.0)) return NAN;
  double boost = 1.0;
  if (a < 1.0) { boost = pow(1.0 - dg_uniform(st), 1.0 / a); a += 1.0; }
  const double d = a - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    const double x = dg_normal(st);
    double v = 1.0 + c * x;
    if (v <= 0.0) continue;
    v = v * v * v;
    const double u = 1.0 - dg_uniform(st);
    if (u < 1.0 - 0.0331 * x * x * x * x || log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v * boost;
  }
}

static int64_t dg_poisson(dg_stream *st, double lam) {
  if (!(lam >= 0.0 && lam < 1e18)) return -1;
  if (lam < 10.0) {
    const double limit = exp(-lam);
    int64_t k = 0;
    double prod = 1.0 - dg_uniform(st);
    while (prod > limit) { k++; prod *= 1.0 - dg_uniform(st); }
    return k;
  }
  const double slam = sqrt(lam), loglam = log(lam), b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
  const double invalpha = 1.1239 + 1.1328 / (b - 3.4), vr = 0.9277 - 3.6224 / (b - 2.0);
  for (;;) {
    const double u = dg_uniform(st) - 0.5, v = 1.0 - dg_uniform(st), us = 0.5 - fabs(u);
    const double k = floor((2.0 * a / us + b) * u + lam + 0.43);
    if (us >= 0.07 && v <= vr) return (int64_t)k;
    if (k < 0.0 || (us < 0.013 && v > us)) continue;
    if (log(v) + log(invalpha) - log(a / (us * us) + b) <= -lam + k * loglam - lgamma(k + 1.0)) return (int64_t)k;
  }
}

static int64_t dg_binomial_inversion(dg_stream *st, int64_t n, double p) {
  const double q = 1.0 - p, s = p / q, a = (double)(n + 1) * s;
  double r = pow(q, (double)n), u = dg_uniform(st);
  int64_t x = 0;
  while (u > r && x < n) { u -= r; x++; r *= a / (double)x - s; }
  return x;
}

static int64_t dg_binomial(dg_stream *st, int64_t n, double p) {
  if (!(n >= 0 && p >= 0.0 && p <= 1.0)) return -1;
  const int64_t n0 = n;
  const int flip = p > 0.5;
  if (flip) p = 1.0 - p;
  int64_t total = 0;
  while ((double)n * p >= 10.0) {  /* Devroye: the k-th of n uniforms is Beta(k, n + 1 - k) */
    const int64_t k = (n + 1) / 2;
    const double ga = dg_gamma(st, (double)k), gb = dg_gamma(st, (double)(n + 1 - k)), x = ga / (ga + gb);
    if (x < p) { total += k; n -= k; p = (p - x) / (1.0 - x); }
    else { n = k - 1; p = p / x; }
  }
  total += dg_binomial_inversion(st, n, p);
  return flip ? n0 - total : total;
}
"""


def _tables():
    """The ziggurat tables as C arrays (doubles printed exactly, as hex floats)."""
    ki = ", ".join(f"{int(v)}ull" for v in ziggurat.KI)
    wi = ", ".join(float(v).hex() for v in ziggurat.WI)
    fi = ", ".join(float(v).hex() for v in ziggurat.FI)
    return (
        f"#define DG_ZIG_R {ziggurat.R.hex()}\n#define DG_ZIG_INV_R {(1.0 / ziggurat.R).hex()}\n"
        f"static const uint64_t dg_zig_ki[256] = {{{ki}}};\n"
        f"static const double dg_zig_wi[256] = {{{wi}}};\n"
        f"static const double dg_zig_fi[256] = {{{fi}}};\n"
    )


PRELUDE = _tables() + RANDOM_PRELUDE

_CALLS = {
    "uniform": "dg_uniform(&st)",
    "normal": "dg_normal(&st)",
    "gamma": "dg_gamma(&st, {p0})",
    "poisson": "dg_poisson(&st, {p0})",
    "binomial": "dg_binomial(&st, {p0}, {p1})",
}


@c_impl.register(RandomDraw)
def _random_draw(op, node):
    nparams = op.nparams
    nd = node.outputs[1].type.ndim
    state, draws = node.inputs[0], node.outputs[1]
    types = [("uint64", 1)] + [(p.type.dtype, nd) for p in node.inputs[1 : 1 + nparams]]
    types += [(draws.type.dtype, nd), ("uint64", 1)]
    j_out, j_next = 1 + nparams, 2 + nparams

    def plan(ctx, ins):
        shape = ctx.infer(node, ins)[1]
        params = [np.broadcast_to(p, shape) for p in ins[1 : 1 + nparams]]
        out, following = np.empty(shape, draws.type.dtype), np.empty(3, np.uint64)
        return [following, out], [ins[0], *params, out, following], True

    def code(o):
        s = [f"{o.ptr(0)}[{k} * {o.stride(0, 0)}]" for k in range(3)]
        lines = ["dg_stream st;", f"dg_stream_init(&st, {s[0]}, {s[1]}, {s[2]});"]

        def body(q):
            params = {f"p{k}": f"{o.ptr(1 + k)}[{q[1 + k]}]" for k in range(nparams)}
            return [f"{o.ptr(j_out)}[{q[j_out]}] = {_CALLS[op.kind].format(**params)};"]

        if op.kind == "normal":  # the draws are a fresh C-contiguous array
            lines += [f"dg_fill_normal({s[0]}, {s[1]}, {s[2]}, {o.ptr(j_out)}, {o.size(j_out)});"]
        else:
            lines += loop(o, list(range(1, j_out + 1)), body, shape_of=j_out)
        lines += [f"{o.ptr(j_next)}[{k}] = {s[k]};" for k in range(2)] + [f"{o.ptr(j_next)}[2] = {s[2]} + 1;"]
        return "\n".join(lines)

    assert state.type.ndim == 1
    return CImpl(types, code, plan, prelude=PRELUDE)
