"""The C scalar-op table: scalar op name -> C expression template, and the printer of scalar code.

Fused kernels are printed from this table (tinygrad's `code_for_op`): each step of
a `Composite` becomes one statement `double s3 = (double)(exp(s2));`. NumPy's
dtype rules hold by construction: operands are cast to the ufunc's loop dtypes
(`resolve_dtypes`), and every result is cast to the step's dtype, so narrow
integers wrap as NumPy's do (the code is compiled with `-fwrapv`).

A template is a string, or a dict keyed by the loop dtype's kind ("b", "i", "u",
"f") with "*" as the default. `{0}`, `{1}`, ... are the operands (plain variables,
so a template may repeat them); `{f}` is the C math suffix (`f` for float32 and
float16, which compute in `float`), `{t}` the type suffix of the `dg_` helpers in
`PRELUDE`. Special functions compute in double (their rows' `compute`), as the reference does.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.scalar import Cast, Composite, compute_dtypes

CTYPES = {
    "bool": "_Bool",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
    "float16": "_Float16",
    "float32": "float",
    "float64": "double",
}

_SUFFIX = {
    "int8": "i8",
    "int16": "i16",
    "int32": "i32",
    "int64": "i64",
    "uint8": "u8",
    "uint16": "u16",
    "uint32": "u32",
    "uint64": "u64",
    "float16": "f32",
    "float32": "f32",
    "float64": "f64",
    "bool": "u8",
}


class UnsupportedDtype(TypeError):
    """A dtype the C backend has no type for (complex, strings, objects)."""


def ctype(dtype) -> str:
    """The C storage type of `dtype`."""
    name = np.dtype(dtype).name
    if name not in CTYPES:
        raise UnsupportedDtype(f"c backend: dtype {name} is not supported (supported: {sorted(CTYPES)})")
    return CTYPES[name]


def compute_ctype(dtype) -> str:
    """The C type arithmetic runs in: float16 computes in float and is rounded once when stored."""
    name = np.dtype(dtype).name
    return "float" if name == "float16" else ctype(name)


TEMPLATES = {
    "add": "({0} + {1})",
    "sub": "({0} - {1})",
    "mul": "({0} * {1})",
    "true_div": "({0} / {1})",
    "floor_div": "dg_floordiv_{t}({0}, {1})",
    "mod": "dg_mod_{t}({0}, {1})",
    "pow": {"f": "pow{f}({0}, {1})", "*": "dg_pow_{t}({0}, {1})"},
    "neg": "(-{0})",
    "abs": {"f": "fabs{f}({0})", "u": "{0}", "b": "{0}", "*": "({0} < 0 ? -{0} : {0})"},
    "sign": {
        "f": "({0} > 0 ? 1 : ({0} < 0 ? -1 : ({0} == 0 ? 0 : {0})))",
        "u": "({0} > 0)",
        "*": "(({0} > 0) - ({0} < 0))",
    },
    "reciprocal": "(1 / {0})",
    "maximum": {"f": "((isnan({0}) || {0} >= {1}) ? {0} : {1})", "*": "({0} >= {1} ? {0} : {1})"},
    "minimum": {"f": "((isnan({0}) || {0} <= {1}) ? {0} : {1})", "*": "({0} <= {1} ? {0} : {1})"},
    "eq": "({0} == {1})",
    "neq": "({0} != {1})",
    "lt": "({0} < {1})",
    "le": "({0} <= {1})",
    "gt": "({0} > {1})",
    "ge": "({0} >= {1})",
    "and": "({0} & {1})",
    "or": "({0} | {1})",
    "xor": "({0} ^ {1})",
    "invert": {"b": "(!{0})", "*": "(~{0})"},
    "isnan": {"f": "isnan({0})", "*": "0"},
    "isfinite": {"f": "isfinite({0})", "*": "1"},
    "isinf": {"f": "isinf({0})", "*": "0"},
    "exp": "exp{f}({0})",
    "exp2": "exp2{f}({0})",
    "log": "log{f}({0})",
    "log2": "log2{f}({0})",
    "log10": "log10{f}({0})",
    "log1p": "log1p{f}({0})",
    "expm1": "expm1{f}({0})",
    "sqrt": "sqrt{f}({0})",
    "square": "({0} * {0})",
    "sin": "sin{f}({0})",
    "cos": "cos{f}({0})",
    "tan": "tan{f}({0})",
    "arcsin": "asin{f}({0})",
    "arccos": "acos{f}({0})",
    "arctan": "atan{f}({0})",
    "sinh": "sinh{f}({0})",
    "cosh": "cosh{f}({0})",
    "tanh": "tanh{f}({0})",
    "arctan2": "atan2{f}({0}, {1})",
    "sigmoid": "dg_sigmoid_{t}({0})",
    "softplus": "dg_softplus_{t}({0})",
    "erf": "erf({0})",
    "erfc": "erfc({0})",
    "gammaln": "lgamma({0})",
    "digamma": "dg_digamma({0})",
    "trigamma": "dg_trigamma({0})",
    "logaddexp": "dg_logaddexp_{t}({0}, {1})",
    "logit": "dg_logit_{t}({0})",
    "log1mexp": "dg_log1mexp_{t}({0})",
    "xlogy": "dg_xlogy_{t}({0}, {1})",
    "betaln": "dg_betaln({0}, {1})",
    "gammainc": "dg_gamma_inc({0}, {1}, 0)",
    "gammaincc": "dg_gamma_inc({0}, {1}, 1)",
    "betainc": "dg_beta_inc({0}, {1}, {2}, 0)",
    "betaincc": "dg_beta_inc({0}, {1}, {2}, 1)",
    "round": {"f": "nearbyint{f}({0})", "*": "{0}"},
    "floor": {"f": "floor{f}({0})", "*": "{0}"},
    "ceil": {"f": "ceil{f}({0})", "*": "{0}"},
    "trunc": {"f": "trunc{f}({0})", "*": "{0}"},
    "where": "({0} ? {1} : {2})",
    "identity": "{0}",
    "stop_gradient": "{0}",
    "cast": "{0}",
}


def expression(op, loop_dtype, operands) -> str:
    """The C expression of `op` over operand variables already in `loop_dtype`'s compute type."""
    name = "cast" if isinstance(op, Cast) else op.name
    template = TEMPLATES[name]
    dt = np.dtype(loop_dtype)
    if isinstance(template, dict):
        template = template.get(dt.kind, template["*"])
    f = "" if dt.name == "float64" else "f"
    return template.format(*operands, f=f, t=_SUFFIX.get(dt.name, "f64"))


def as_composite(scalar_op, in_dtypes) -> Composite:
    """A single scalar op as a one-step Composite, so one printer serves both."""
    if isinstance(scalar_op, Composite):
        return scalar_op
    n = len(in_dtypes)
    return Composite(
        in_dtypes=tuple(np.dtype(d).name for d in in_dtypes), steps=((scalar_op, tuple(range(n))),), outs=(n,)
    )


def print_composite(comp: Composite, inputs, prefix="s") -> tuple:
    """C statements computing `comp` from the C variables `inputs`; returns (lines, output variable names).

    Each step's value lives in a variable of its dtype's storage type, so
    narrow results are rounded or wrapped exactly where NumPy rounds them.
    """
    dtypes = comp.step_dtypes
    names = list(inputs)
    lines = []
    for k, (op, refs) in enumerate(comp.steps):
        loops, out = compute_dtypes(op, [dtypes[r] for r in refs])
        args = [f"(({compute_ctype(lt)}){names[r]})" for r, lt in zip(refs, loops)]
        var = f"{prefix}{k}"
        expr = expression(op, out if _is_where(op) else loops[0], args)
        lines.append(f"const {ctype(out)} {var} = ({ctype(out)})({expr});")
        names.append(var)
    return lines, [names[r] for r in comp.outs]


def raises(comp: Composite) -> bool:
    """Whether the printed code may set `dg_error` (integer `pow`, which NumPy refuses for negative exponents)."""
    dtypes = comp.step_dtypes
    for op, refs in comp.steps:
        if not isinstance(op, Cast) and op.name == "pow":
            loops, _ = compute_dtypes(op, [dtypes[r] for r in refs])
            if loops[0].kind == "i":
                return True
    return False


NEGATIVE_POWER = (ValueError, "Integers to negative integer powers are not allowed.")


def _is_where(op) -> bool:
    return not isinstance(op, Cast) and op.name == "where"


PRELUDE = r"""
#include <stdint.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

/* Set by scalar helpers that NumPy would raise in (an integer to a negative power); checked after the kernel. */
static _Thread_local int dg_error;

#define DG_SIGNED_DIV(T, U, S)                                                   \
  static inline T dg_floordiv_##S(T a, T b) {                                    \
    if (b == 0) return 0;                                                        \
    if (b == -1) return (T)(0 - (U)a);                                           \
    T q = (T)(a / b);                                                            \
    if ((T)(a % b) != 0 && ((a < 0) != (b < 0))) q -= 1;                         \
    return q;                                                                    \
  }                                                                              \
  static inline T dg_mod_##S(T a, T b) {                                         \
    if (b == 0 || b == -1) return 0;                                             \
    T r = (T)(a % b);                                                            \
    if (r != 0 && ((r < 0) != (b < 0))) r += b;                                  \
    return r;                                                                    \
  }                                                                              \
  static inline T dg_pow_##S(T a, T b) {                                         \
    if (b < 0) { dg_error = 1; return 0; }                                       \
    U r = 1, x = (U)a;                                                           \
    while (b) { if (b & 1) r *= x; x *= x; b >>= 1; }                            \
    return (T)r;                                                                 \
  }

#define DG_UNSIGNED_DIV(T, S)                                                    \
  static inline T dg_floordiv_##S(T a, T b) { return b == 0 ? 0 : (T)(a / b); } \
  static inline T dg_mod_##S(T a, T b) { return b == 0 ? 0 : (T)(a % b); }      \
  static inline T dg_pow_##S(T a, T b) {                                         \
    T r = 1;                                                                     \
    while (b) { if (b & 1) r = (T)(r * a); a = (T)(a * a); b >>= 1; }            \
    return r;                                                                    \
  }

DG_SIGNED_DIV(int8_t, uint8_t, i8)
DG_SIGNED_DIV(int16_t, uint16_t, i16)
DG_SIGNED_DIV(int32_t, uint32_t, i32)
DG_SIGNED_DIV(int64_t, uint64_t, i64)
DG_UNSIGNED_DIV(uint8_t, u8)
DG_UNSIGNED_DIV(uint16_t, u16)
DG_UNSIGNED_DIV(uint32_t, u32)
DG_UNSIGNED_DIV(uint64_t, u64)

/* NumPy's npy_divmod: floor division and remainder with the sign of the divisor. */
#define DG_FLOAT_DIV(T, S, F)                                                    \
  static inline T dg_floordiv_##S(T a, T b) {                                    \
    if (!b) return a / b;                                                        \
    T mod = fmod##F(a, b);                                                       \
    T div = (a - mod) / b;                                                       \
    if (mod) { if (isless(b, (T)0) != isless(mod, (T)0)) div -= 1; }             \
    T fl;                                                                        \
    if (div) { fl = floor##F(div); if (isgreater(div - fl, (T)0.5)) fl += 1; }   \
    else fl = copysign##F((T)0, a / b);                                          \
    return fl;                                                                   \
  }                                                                              \
  static inline T dg_mod_##S(T a, T b) {                                         \
    T mod = fmod##F(a, b);                                                       \
    if (!b) return mod;                                                          \
    if (mod) { if (isless(b, (T)0) != isless(mod, (T)0)) mod += b; }             \
    else mod = copysign##F((T)0, b);                                             \
    return mod;                                                                  \
  }                                                                              \
  static inline T dg_sigmoid_##S(T x) {                                          \
    T e = exp##F(-fabs##F(x));                                                   \
    return x >= 0 ? (T)1 / ((T)1 + e) : e / ((T)1 + e);                          \
  }                                                                              \
  static inline T dg_softplus_##S(T x) {                                         \
    T m = (isnan(x) || x >= 0) ? x : (T)0;                                       \
    return log1p##F(exp##F(-fabs##F(x))) + m;                                    \
  }                                                                              \
  static inline T dg_logit_##S(T p) { return log##F(p / ((T)1 - p)); }            \
  static inline T dg_log1mexp_##S(T x) {                                         \
    if (x > 0 || isnan(x)) return (T)NAN;                                        \
    if (x < (T)-0.693147180559945309417232121458176568)                          \
      return log1p##F(-exp##F(x));                                               \
    return x == 0 ? (T)-INFINITY : log##F(-expm1##F(x));                         \
  }                                                                              \
  static inline T dg_xlogy_##S(T x, T y) {                                       \
    if (x == 0 && !isnan(y)) return (T)0;                                        \
    return x * log##F(y);                                                        \
  }                                                                              \
  static inline T dg_logaddexp_##S(T x, T y) {                                   \
    if (x == y) return x + (T)0.693147180559945309417232121458176568;            \
    T d = x - y;                                                                 \
    if (d > 0) return x + log1p##F(exp##F(-d));                                  \
    if (d <= 0) return y + log1p##F(exp##F(d));                                  \
    return d;                                                                    \
  }

DG_FLOAT_DIV(float, f32, f)
DG_FLOAT_DIV(double, f64, )

static const double DG_PI = 3.14159265358979323846264338327950288;

static double dg_digamma(double x) {
  if (!isfinite(x)) return x > 0 ? x : NAN;
  if (x == 0.0) return -copysign(INFINITY, x);
  if (x < 0.0 && x == floor(x)) return NAN;
  double result = 0.0;
  if (x < 0.0) { result -= DG_PI / tan(DG_PI * x); x = 1.0 - x; }
  while (x < 12.0) { result -= 1.0 / x; x += 1.0; }
  double inv = 1.0 / x, inv2 = inv * inv;
  double series = inv2 * (1.0 / 12 - inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 * (1.0 / 132)))));
  return result + log(x) - 0.5 * inv - series;
}

static double dg_trigamma(double x) {
  if (!isfinite(x)) return x > 0 ? 0.0 : (x < 0 ? INFINITY : NAN);
  if (x <= 0.0 && x == floor(x)) return INFINITY;
  double result = 0.0;
  if (x < 0.0) { double s = sin(DG_PI * x); return -dg_trigamma(1.0 - x) + DG_PI * DG_PI / (s * s); }
  while (x < 12.0) { result += 1.0 / (x * x); x += 1.0; }
  double inv = 1.0 / x, inv2 = inv * inv;
  double series = inv + 0.5 * inv2 + inv * inv2 * (1.0 / 6 - inv2 * (1.0 / 30 - inv2 * (1.0 / 42 - inv2 * (1.0 / 30))));
  return result + series;
}

/* As dimgraph.core.special.betaln: Stirling's series for lgamma(b) - lgamma(a + b) once b >= 20. */
static double dg_betaln(double a, double b) {
  int b_pole = b <= 0.0 && b == floor(b);  /* floor(-inf) == -inf: -inf counts as a pole, as in scipy */
  if (b_pole && !(a <= 0.0 && a == floor(a))) { double t = a; a = b; b = t; }
  if (a <= 0.0 && a == floor(a)) {
    if (isinf(a) || !(isfinite(b) && b == floor(b) && a + b <= 0.0)) return INFINITY;
    a = 1.0 - a - b;  /* the pole's finite limit |B(a, b)| = |B(1 - a - b, b)| (scipy) */
    if (b <= 0.0) return INFINITY;
  }
  if (isnan(a) || isnan(b) || (a == INFINITY && b == INFINITY)) return NAN;
  if (a > b) { double t = a; a = b; b = t; }
  if (b == INFINITY) return a > 0.0 ? -INFINITY : INFINITY;
  double s = a + b;
  if (s <= 0.0 && s == floor(s)) return -INFINITY;
  if (a > 0.0 && b >= 20.0) {
    double ib = 1.0 / b, is = 1.0 / s, ib2 = ib * ib, is2 = is * is;
    double tail_b = ib * (1.0 / 12 - ib2 * (1.0 / 360 - ib2 * (1.0 / 1260 - ib2 * (1.0 / 1680))));
    double tail_s = is * (1.0 / 12 - is2 * (1.0 / 360 - is2 * (1.0 / 1260 - is2 * (1.0 / 1680))));
    return lgamma(a) + (-(b - 0.5) * log1p(a / b) - a * log(s) + a + (tail_b - tail_s));
  }
  return lgamma(a) + lgamma(b) - lgamma(s);
}

/* As dimgraph.core.special.gamma_inc: the series of P for x < a + 1 (of Q for a < 1/2), Legendre's continued fraction of Q elsewhere. */
static double dg_gamma_inc(double a, double x, int upper) {
  if (isnan(a) || isnan(x) || a < 0.0 || x < 0.0 || (isinf(a) && isinf(x))) return NAN;
  if (a == 0.0) return x > 0.0 ? (upper ? 0.0 : 1.0) : NAN;
  if (x == 0.0) return upper ? 1.0 : 0.0;
  if (isinf(a)) return upper ? 1.0 : 0.0;
  if (isinf(x)) return upper ? 0.0 : 1.0;
  if (upper && a < 0.5 && x < a + 1.0) {  /* Q's own series for small a (DLMF 8.7.3), not 1 - P */
    double lgamma1p = a < 0.01
        ? a * (-0.5772156649015329 + a * (0.8224670334241132 + a * (-0.40068563438653143 + a * (
              0.27058080842778454 + a * (-0.207385551028674 + a * (0.16955717699740822 + a * (
                  -0.14404989676884614 + a * 0.12550966952474304)))))))
        : lgamma(1.0 + a);
    double e = a * log(x) - lgamma1p, term = 1.0, total = 0.0;
    for (int n = 1; n < 200; n++) {
      term *= -x / n; total += term / (a + n);
      if (fabs(term) < 1e-16 * fabs(total)) break;
    }
    return -expm1(e) - exp(e) * a * total;
  }
  double log_front = a * log(x) - x - lgamma(a);
  if (x < a + 1.0) {
    double term = 1.0 / a, total = term, n = a;
    for (int i = 0; i < 100000; i++) {
      n += 1.0; term *= x / n; total += term;
      if (fabs(term) < fabs(total) * 1e-16) break;
    }
    double p = total * exp(log_front);
    return upper ? 1.0 - p : p;
  }
  const double tiny = 1e-300;
  double b = x + 1.0 - a, c = 1.0 / tiny, d = 1.0 / b, h = d;
  for (int i = 1; i < 100000; i++) {
    double an = -i * (i - a);
    b += 2.0;
    d = an * d + b; if (fabs(d) < tiny) d = tiny;
    c = b + an / c; if (fabs(c) < tiny) c = tiny;
    d = 1.0 / d;
    double delta = d * c;
    h *= delta;
    if (fabs(delta - 1.0) < 1e-16) break;
  }
  double q = h * exp(log_front);
  return upper ? q : 1.0 - q;
}

/* As dimgraph.core.special.beta_inc: the continued fraction (modified Lentz) below the mean, its front factor
   from an exact l = (a + b) x - a and, when a, b >= 15, from t - log1p(t) series and Stirling's corrections. */
static double dg_beta_inc(double a, double b, double x, int upper) {
  if (isnan(a) || isnan(b) || isnan(x) || a < 0.0 || b < 0.0 || x < 0.0 || x > 1.0) return NAN;
  if ((a == 0.0 && b == 0.0) || (isinf(a) && isinf(b))) return NAN;
  if (x == 0.0 || x == 1.0 || a == 0.0 || b == 0.0 || isinf(a) || isinf(b)) {
    double lower = x == 0.0 ? 0.0 : ((x == 1.0 || a == 0.0 || isinf(b)) ? 1.0 : 0.0);
    return upper ? 1.0 - lower : lower;
  }
  double y = 1.0 - x, lx = log(x), ly = log1p(-x), s = a + b;
  int large = a >= 15.0 && b >= 15.0;
  double v = s - a, s_err = (a - (s - v)) + (b - v);
  double t = x < 0.5 ? x : y, p = s * t, p_err = 0.0;
  if (s < 1e290) {  /* Dekker's product: s t = p + p_err exactly */
    double cs = 134217729.0 * s, ct = 134217729.0 * t;
    double sh = cs - (cs - s), th = ct - (ct - t), sl = s - sh, tl = t - th;
    p_err = ((sh * th - p) + sh * tl + sl * th) + sl * tl;
  }
  double lam = x < 0.5 ? ((p - a) + p_err + s_err * t) : ((b - p) - p_err - s_err * t);
  if (x > (a + 1.0) / (s + 2.0)) {
    double w;
    w = a; a = b; b = w;
    w = x; x = y; y = w;
    w = lx; lx = ly; ly = w;
    lam = -lam; upper = !upper;
  }
  double log_front;
  if (large) {
    log_front = 0.5 * (log(a) - log1p(a / b)) - 0.9189385332046728;
    for (int k = 0; k < 2; k++) {
      double n = k == 0 ? a : b, tk = k == 0 ? lam / a : -lam / b;
      double lz = k == 0 ? lx : ly, ratio = k == 0 ? b / a : a / b, rlog1;
      if (fabs(tk) < 0.5) {
        double u = tk / (2.0 + tk), u2 = u * u, power = u, total = 0.0;
        for (int j = 1; j < 60; j++) {
          power *= u2; total += power / (2 * j + 1);
          if (fabs(power) < 1e-17 * fabs(total)) break;
        }
        rlog1 = 2.0 * u2 / (1.0 - u) - 2.0 * total;
      } else {
        rlog1 = tk - (lz + log1p(ratio));
      }
      log_front -= n * rlog1;
    }
    const double zs[3] = {a, b, s}, signs[3] = {-1.0, -1.0, 1.0};
    for (int k = 0; k < 3; k++) {
      double iz = 1.0 / zs[k], iz2 = iz * iz;
      log_front += signs[k] * iz * (1.0 / 12 - iz2 * (1.0 / 360 - iz2 * (1.0 / 1260 - iz2 * (1.0 / 1680 - iz2 / 1188))));
    }
  } else {
    double lo = a < b ? a : b, hi = a < b ? b : a, log_beta;
    if (hi >= 20.0) {
      double ih = 1.0 / hi, is = 1.0 / s, ih2 = ih * ih, is2 = is * is;
      double tail_h = ih * (1.0 / 12 - ih2 * (1.0 / 360 - ih2 * (1.0 / 1260 - ih2 * (1.0 / 1680))));
      double tail_s = is * (1.0 / 12 - is2 * (1.0 / 360 - is2 * (1.0 / 1260 - is2 * (1.0 / 1680))));
      log_beta = lgamma(lo) - (hi - 0.5) * log1p(lo / hi) - lo * log(s) + lo + (tail_h - tail_s);
    } else {
      log_beta = lgamma(a) + lgamma(b) - lgamma(s);
    }
    log_front = a * lx + b * ly - log_beta;
  }
  const double tiny = 1e-300;
  double c = 1.0, d = (1.0 - lam) / (a + 1.0), delta = 1.0;
  if (fabs(d) < tiny) d = tiny;
  d = 1.0 / d;
  double h = d;
  for (int m = 1; m < 100000; m++) {
    double m2 = 2.0 * m;
    for (int k = 0; k < 2; k++) {
      double step = k == 0 ? m * (b - m) * x / ((a + m2 - 1.0) * (a + m2))
                           : -(a + m) * (s + m) * x / ((a + m2) * (a + m2 + 1.0));
      d = 1.0 + step * d; if (fabs(d) < tiny) d = tiny;
      c = 1.0 + step / c; if (fabs(c) < tiny) c = tiny;
      d = 1.0 / d;
      delta = d * c;
      h *= delta;
    }
    if (fabs(delta - 1.0) < 1e-16) break;
  }
  double tail = exp(log_front - log(a)) * h;
  return upper ? 1.0 - tail : tail;
}

/* NumPy's pairwise summation (8 accumulators, blocks of 128), so float sums round as NumPy's do. */
#define DG_PAIRWISE(S, TI, TA)                                                   \
  static TA dg_pairwise_##S(const TI *a, int64_t n, int64_t s) {                 \
    if (n < 8) {                                                                 \
      TA res = 0;                                                                \
      for (int64_t i = 0; i < n; i++) res += (TA)a[i * s];                       \
      return res;                                                                \
    }                                                                            \
    if (n <= 128) {                                                              \
      TA r[8];                                                                   \
      int64_t i;                                                                 \
      for (int j = 0; j < 8; j++) r[j] = (TA)a[j * s];                           \
      if (s == 1) /* the same sums; unit stride lets the 8 lanes vectorize */     \
        for (i = 8; i < n - (n % 8); i += 8)                                     \
          for (int j = 0; j < 8; j++) r[j] += (TA)a[i + j];                      \
      else                                                                       \
        for (i = 8; i < n - (n % 8); i += 8)                                     \
          for (int j = 0; j < 8; j++) r[j] += (TA)a[(i + j) * s];                \
      TA res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7])); \
      for (; i < n; i++) res += (TA)a[i * s];                                    \
      return res;                                                                \
    }                                                                            \
    int64_t n2 = n / 2;                                                          \
    n2 -= n2 % 8;                                                                \
    return dg_pairwise_##S(a, n2, s) + dg_pairwise_##S(a + n2 * s, n - n2, s);   \
  }

#ifdef __FLT16_MAX__
DG_PAIRWISE(f16, _Float16, float)
#endif
DG_PAIRWISE(f32, float, float)
DG_PAIRWISE(f64, double, double)

/* 1 when the strided array is C-contiguous for its shape (size-0/1 axes do not matter). */
static inline int dg_contig(int nd, const int64_t *shape, const int64_t *strides) {
  int64_t expect = 1;
  for (int k = nd - 1; k >= 0; k--) {
    if (shape[k] != 1 && strides[k] != expect) return 0;
    expect *= shape[k];
  }
  return 1;
}
"""
