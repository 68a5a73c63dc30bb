"""Scalar ops as `arith`/`math` statements inside a `linalg.generic` body, and the printer of a Composite.

NumPy's dtype rules hold as in the C backend (`c/scalar.py`): operands are
converted to the ufunc's loop dtypes (`compute_dtypes`) and each result to the
step's dtype. Ops whose `math` op IREE lowers exactly use it; the others are
printed from exp and log (`Floats`: log1p, expm1, sinh, cosh, tanh, log2, log10,
gammaln, digamma, with a sin(pi x) of their own) or from the C prelude's
expressions (sigmoid, softplus, logaddexp, log1mexp, xlogy, logit, NumPy's sign,
maximum and minimum with NaN). The rest (`UNSUPPORTED`: trigonometry, erf, the
incomplete gamma and beta functions, ...) are refused by name when the function compiles.
"""

from __future__ import annotations

import math

import numpy as np

from dimgraph.backends.mlir.emitter import element
from dimgraph.backends.mlir.registry import MlirUnsupported
from dimgraph.core.scalar import Cast, Composite, compute_dtypes

# The `math` ops IREE (3.13, llvm-cpu) lowers exactly in f64. Its f64 `math.log1p`, `expm1` and `sinh` are
# expansions off by up to 1e-4 relative, its `math.cosh` overflows before cosh does (past 709.8), and `tanh`, `sin`, `cos`, `tan`, `asin`, `acos`, `atan`, `log2`,
# `log10`, `erf` and `erfc` fail to link (no libm in its executables): the first ones are printed from exp
# and log below (`Floats`), the rest refused.
MATH = {
    "exp": "exp", "exp2": "exp2", "log": "log", "sqrt": "sqrt",
    "floor": "floor", "ceil": "ceil", "trunc": "trunc", "round": "roundeven",
}  # fmt: skip
FORMULAS = ("log1p", "expm1", "sinh", "cosh", "tanh", "log2", "log10", "gammaln", "digamma")
# f64 exp as the numba backend's polynomial (True) or IREE's `math.exp` (False, the default: exact to 1 ulp,
# and faster: 76 against 96 ms for exp(x).sum() over 1e6, where the polynomial did not vectorize under IREE);
# a list so benchmarks/mlir.py times both.
VECTOR_EXP = [False]
FLOAT_BINARY = {"add": "addf", "sub": "subf", "mul": "mulf", "true_div": "divf"}
INT_BINARY = {"add": "addi", "sub": "subi", "mul": "muli"}
BITWISE = {"and": "andi", "or": "ori", "xor": "xori"}
FLOAT_CMP = {"eq": "oeq", "neq": "une", "lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge"}
SIGNED_CMP = {"eq": "eq", "neq": "ne", "lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge"}
UNSIGNED_CMP = {"eq": "eq", "neq": "ne", "lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge"}
LN2 = math.log(2.0)
# Scalar ops this backend refuses (no exact MLIR op and no formula printed here), with what to use instead.
UNSUPPORTED = (
    "sin",
    "cos",
    "tan",
    "arcsin",
    "arccos",
    "arctan",
    "erf",
    "erfc",
    "trigamma",
    "betaln",
    "gammainc",
    "gammaincc",
    "betainc",
    "betaincc",
    "floor_div",
    "mod",
    "arctan2",
)


def convert(e, x: str, src, dst) -> str:
    """`x` of dtype `src` as dtype `dst`, with NumPy's casting (float -> int truncates; -> bool is `!= 0`)."""
    src, dst = np.dtype(src), np.dtype(dst)
    if src == dst:
        return x
    s, d = element(src), element(dst)
    if dst.kind == "b":
        if src.kind == "f":
            return e.op(f"arith.cmpf une, {x}, {e.const(0.0, s)} : {s}")
        return e.op(f"arith.cmpi ne, {x}, {e.const(0, s)} : {s}")
    if src.kind == "f" and dst.kind == "f":
        return e.op(f"arith.{'extf' if dst.itemsize > src.itemsize else 'truncf'} {x} : {s} to {d}")
    if src.kind == "f":
        return e.op(f"arith.{'fptoui' if dst.kind == 'u' else 'fptosi'} {x} : {s} to {d}")
    if dst.kind == "f":
        return e.op(f"arith.{'sitofp' if src.kind == 'i' else 'uitofp'} {x} : {s} to {d}")
    if s == d:  # int64 <-> uint64: the same bits
        return x
    if dst.itemsize > src.itemsize:
        return e.op(f"arith.{'extsi' if src.kind == 'i' else 'extui'} {x} : {s} to {d}")
    return e.op(f"arith.trunci {x} : {s} to {d}")


class Floats:
    """Float arithmetic in one element type, for the formulas below."""

    def __init__(self, e, t):
        self.e, self.t = e, t

    def c(self, v):
        return self.e.const(float(v), self.t)

    def bin(self, name, a, b):
        return self.e.op(f"arith.{name} {a}, {b} : {self.t}")

    def add(self, a, b):
        return self.bin("addf", a, b)

    def sub(self, a, b):
        return self.bin("subf", a, b)

    def mul(self, a, b):
        return self.bin("mulf", a, b)

    def div(self, a, b):
        return self.bin("divf", a, b)

    def neg(self, a):
        return self.e.op(f"arith.negf {a} : {self.t}")

    def fn(self, name, a):
        if name in FORMULAS:
            return getattr(self, name)(a)
        if name == "exp" and self.t == "f64" and VECTOR_EXP[0]:
            return self.exp_f64(a)
        return self.e.op(f"math.{name} {a} : {self.t}")

    def exp_f64(self, x):
        """exp without a libm call, so the loop around it vectorizes: the numba backend's `exp_f64`
        (`numba/runtime.py`: Cody-Waite reduction x = k ln2 + r, degree-12 Taylor polynomial in fused
        multiply-adds, 2**k from exponent bits in two halves; at most 2 ulp from np.exp)."""
        e = self.e
        xc = self.e.op(
            f"arith.minimumf {self.e.op(f'arith.maximumf {x}, {self.c(-800.0)} : f64')}, {self.c(800.0)} : f64"
        )
        k = self.fn("roundeven", self.mul(xc, self.c(1.4426950408889634)))
        r = self.sub(
            self.sub(xc, self.mul(k, self.c(6.93147180369123816490e-01))),
            self.mul(k, self.c(1.90821492927058770002e-10)),
        )
        p = self.c(1.0 / 479001600)
        for n in range(11, -1, -1):
            p = e.op(f"math.fma {r}, {p}, {self.c(1.0 / math.factorial(n))} : f64")
        ki = e.op(f"arith.fptosi {k} : f64 to i64")
        k1 = e.op(f"arith.shrsi {ki}, {e.const(1, 'i64')} : i64")
        k2 = e.op(f"arith.subi {ki}, {k1} : i64")
        halves = []
        for h in (k1, k2):
            biased = e.op(f"arith.addi {h}, {e.const(1023, 'i64')} : i64")
            bits = e.op(f"arith.shli {biased}, {e.const(52, 'i64')} : i64")
            halves.append(e.op(f"arith.bitcast {bits} : i64 to f64"))
        res = self.mul(self.mul(p, halves[0]), halves[1])
        return self.select(self.isnan(x), x, res)

    def log1p(self, x):
        """Kahan's log1p from log: log(u) * x / (u - 1) with u = 1 + x (x itself where u rounds to 1)."""
        u = self.add(self.c(1.0), x)
        um1 = self.sub(u, self.c(1.0))
        exact = self.div(self.mul(self.fn("log", u), x), um1)
        big = self.cmp("oeq", u, self.c(math.inf))
        return self.select(self.cmp("oeq", um1, self.c(0.0)), x, self.select(big, u, exact))

    def expm1(self, x):
        """Kahan's expm1 from exp and log: (u - 1) * x / log(u) with u = exp(x)."""
        u = self.fn("exp", x)
        um1 = self.sub(u, self.c(1.0))
        exact = self.div(self.mul(um1, x), self.fn("log", u))
        edge = self.select(
            self.cmp("oeq", um1, self.c(-1.0)),
            self.c(-1.0),
            self.select(self.cmp("oeq", u, self.c(math.inf)), u, exact),
        )
        return self.select(self.cmp("oeq", u, self.c(1.0)), x, edge)

    def _odd(self, x, magnitude):
        """An odd function's value from its value at |x| (NaN passes through)."""
        m = magnitude(self.fn("absf", x))
        return self.select(self.cmp("olt", x, self.c(0.0)), self.neg(m), m)

    def sinh(self, x):
        """sinh |x| = (t + t / (t + 1)) / 2 with t = expm1 |x|; past 700 as (e^(|x|/2) / 2) e^(|x|/2), which
        overflows where sinh does (710.5), not where expm1 does (709.8)."""

        def magnitude(a):
            t = self.expm1(a)
            small = self.mul(self.c(0.5), self.add(t, self.div(t, self.add(t, self.c(1.0)))))
            h = self.fn("exp", self.mul(a, self.c(0.5)))
            return self.select(self.cmp("ogt", a, self.c(700.0)), self.mul(self.mul(h, self.c(0.5)), h), small)

        return self._odd(x, magnitude)

    def cosh(self, x):
        """cosh x = (e + 1 / e) / 2 with e = exp |x|; past 700 as (e^(|x|/2) / 2) e^(|x|/2) (see `sinh`)."""
        a = self.fn("absf", x)
        ex = self.fn("exp", a)
        small = self.mul(self.c(0.5), self.add(ex, self.div(self.c(1.0), ex)))
        h = self.fn("exp", self.mul(a, self.c(0.5)))
        return self.select(self.cmp("ogt", a, self.c(700.0)), self.mul(self.mul(h, self.c(0.5)), h), small)

    def tanh(self, x):
        """tanh |x| = t / (t + 2) with t = expm1(2 |x|); 1 once |x| > 22 (where t overflows first)."""

        def magnitude(a):
            t = self.expm1(self.add(a, a))
            return self.select(self.cmp("ogt", a, self.c(22.0)), self.c(1.0), self.div(t, self.add(t, self.c(2.0))))

        return self._odd(x, magnitude)

    def is_int(self, x):
        return self.cmp("oeq", self.fn("floor", x), x)

    def sinpi(self, x):
        """sin(pi x): x reduced exactly to r in [-1/2, 1/2] (x - 2 round(x / 2), then reflected about +-1/2),
        then the Taylor polynomial of sin(pi r) to degree 25 (truncation below 1e-20)."""
        r = self.sub(x, self.mul(self.c(2.0), self.fn("roundeven", self.mul(x, self.c(0.5)))))
        r = self.select(self.cmp("ogt", r, self.c(0.5)), self.sub(self.c(1.0), r), r)
        r = self.select(self.cmp("olt", r, self.c(-0.5)), self.sub(self.c(-1.0), r), r)
        z = self.mul(r, self.c(math.pi))
        z2 = self.mul(z, z)
        p = self.c(0.0)
        for n in range(25, 1, -2):  # sin z = z (1 - z^2/3! + z^4/5! - ...)
            sign = -1.0 if (n // 2) % 2 else 1.0
            p = self.e.op(f"math.fma {z2}, {p}, {self.c(sign / math.factorial(n))} : {self.t}")
        return self.mul(z, self.e.op(f"math.fma {z2}, {p}, {self.c(1.0)} : {self.t}"))

    def cospi(self, x):
        return self.sinpi(self.add(self.fn("absf", x), self.c(0.5)))

    def gammaln(self, x):
        """log|Gamma(x)|: reflection for x < 0, then shifted up to z >= 12 (12 unrolled steps, the product
        of the shifts in one log), Stirling's series to 1/z^13 there; inf at the poles, as scipy. Within
        1e-13 relative of scipy where |value| > 0.1, 5e-15 absolute near its zeros at 1 and 2 (libm does
        better there)."""
        neg = self.cmp("olt", x, self.c(0.0))
        w = self.select(neg, self.sub(self.c(1.0), x), x)
        z, prod = w, self.c(1.0)
        for _ in range(12):
            low = self.cmp("olt", z, self.c(12.0))
            prod = self.select(low, self.mul(prod, z), prod)
            z = self.select(low, self.add(z, self.c(1.0)), z)
        iz = self.div(self.c(1.0), z)
        iz2 = self.mul(iz, iz)
        series = self.c(1.0 / 156)
        for coef in (-691.0 / 360360, 1.0 / 1188, -1.0 / 1680, 1.0 / 1260, -1.0 / 360, 1.0 / 12):
            series = self.e.op(f"math.fma {iz2}, {series}, {self.c(coef)} : {self.t}")
        stirling = self.add(
            self.add(
                self.sub(self.mul(self.sub(z, self.c(0.5)), self.fn("log", z)), z), self.c(0.5 * math.log(2 * math.pi))
            ),
            self.mul(series, iz),
        )
        positive = self.sub(stirling, self.fn("log", prod))
        reflected = self.sub(self.fn("log", self.div(self.c(math.pi), self.fn("absf", self.sinpi(x)))), positive)
        value = self.select(neg, reflected, positive)
        pole = self.e.op(f"arith.andi {self.cmp('ole', x, self.c(0.0))}, {self.is_int(x)} : i1")
        value = self.select(
            self.e.op(f"arith.ori {pole}, {self.cmp('oeq', x, self.c(math.inf))} : i1"), self.c(math.inf), value
        )
        return self.select(self.cmp("oeq", x, self.c(-math.inf)), x, value)  # scipy: gammaln(-inf) = -inf

    def digamma(self, x):
        """The C backend's `dg_digamma`: reflection for x < 0 (pi / tan(pi x)), 12 unrolled recurrence steps
        up to x >= 12, then the asymptotic series; NaN at the negative poles, -+inf at -+0."""
        neg = self.cmp("olt", x, self.c(0.0))
        tan = self.div(self.sinpi(x), self.cospi(x))
        result = self.select(neg, self.neg(self.div(self.c(math.pi), tan)), self.c(0.0))
        z = self.select(neg, self.sub(self.c(1.0), x), x)
        for _ in range(12):
            low = self.cmp("olt", z, self.c(12.0))
            result = self.select(low, self.sub(result, self.div(self.c(1.0), z)), result)
            z = self.select(low, self.add(z, self.c(1.0)), z)
        inv = self.div(self.c(1.0), z)
        inv2 = self.mul(inv, inv)
        series = self.c(1.0 / 132)
        for coef in (1.0 / 240, 1.0 / 252, 1.0 / 120, 1.0 / 12):
            series = self.sub(self.c(coef), self.mul(inv2, series))
        series = self.mul(inv2, series)
        value = self.sub(self.sub(self.add(result, self.fn("log", z)), self.mul(self.c(0.5), inv)), series)
        nan = self.c(math.nan)
        value = self.select(self.e.op(f"arith.andi {neg}, {self.is_int(x)} : i1"), nan, value)
        zero = self.cmp("oeq", x, self.c(0.0))
        signed_inf = self.e.op(f"math.copysign {self.c(math.inf)}, {x} : {self.t}")
        value = self.select(zero, self.neg(signed_inf), value)
        finite = self.cmp("olt", self.fn("absf", x), self.c(math.inf))
        at_inf = self.select(self.cmp("ogt", x, self.c(0.0)), x, nan)
        return self.select(finite, value, at_inf)

    def log2(self, x):
        return self.div(self.fn("log", x), self.c(math.log(2.0)))

    def log10(self, x):
        return self.div(self.fn("log", x), self.c(math.log(10.0)))

    def cmp(self, pred, a, b):
        return self.e.op(f"arith.cmpf {pred}, {a}, {b} : {self.t}")

    def select(self, cond, a, b):
        return self.e.op(f"arith.select {cond}, {a}, {b} : {self.t}")

    def isnan(self, a):
        return self.cmp("uno", a, a)


def _float_op(e, name, t, args):
    f = Floats(e, t)
    a = args[0]
    if name in FLOAT_BINARY:
        return f.bin(FLOAT_BINARY[name], *args)
    if name in MATH:
        return f.fn(MATH[name], a)
    if name in FORMULAS:
        return f.fn(name, a)
    if name in FLOAT_CMP:
        return f.cmp(FLOAT_CMP[name], a, args[1])
    if name == "neg":
        return f.neg(a)
    if name == "abs":
        return f.fn("absf", a)
    if name == "square":
        return f.mul(a, a)
    if name == "reciprocal":
        return f.div(f.c(1.0), a)
    if name == "pow":
        return e.op(f"math.powf {args[0]}, {args[1]} : {t}")
    if name == "sign":  # NumPy: 1, -1, 0 (for +-0) or the NaN itself
        zero = f.c(0.0)
        inner = f.select(f.cmp("oeq", a, zero), zero, a)
        inner = f.select(f.cmp("olt", a, zero), f.c(-1.0), inner)
        return f.select(f.cmp("ogt", a, zero), f.c(1.0), inner)
    if name in ("maximum", "minimum"):  # NaN propagates; ties keep the first operand, as NumPy's loop does
        keep = f.cmp("oge" if name == "maximum" else "ole", a, args[1])
        nan = f.isnan(a)
        return f.select(e.op(f"arith.ori {nan}, {keep} : i1"), a, args[1])
    if name == "isnan":
        return f.isnan(a)
    if name == "isinf":
        return f.cmp("oeq", f.fn("absf", a), f.c(math.inf))
    if name == "isfinite":
        return f.cmp("olt", f.fn("absf", a), f.c(math.inf))
    if name == "sigmoid":
        ex = f.fn("exp", f.neg(f.fn("absf", a)))
        one_plus = f.add(f.c(1.0), ex)
        return f.select(f.cmp("oge", a, f.c(0.0)), f.div(f.c(1.0), one_plus), f.div(ex, one_plus))
    if name == "softplus":
        keep = e.op(f"arith.ori {f.isnan(a)}, {f.cmp('oge', a, f.c(0.0))} : i1")
        m = f.select(keep, a, f.c(0.0))
        return f.add(f.fn("log1p", f.fn("exp", f.neg(f.fn("absf", a)))), m)
    if name == "logit":
        return f.fn("log", f.div(a, f.sub(f.c(1.0), a)))
    if name == "log1mexp":
        far = f.fn("log1p", f.neg(f.fn("exp", a)))
        near = f.select(f.cmp("oeq", a, f.c(0.0)), f.c(-math.inf), f.fn("log", f.neg(f.fn("expm1", a))))
        value = f.select(f.cmp("olt", a, f.c(-LN2)), far, near)
        bad = e.op(f"arith.ori {f.cmp('ogt', a, f.c(0.0))}, {f.isnan(a)} : i1")
        return f.select(bad, f.c(math.nan), value)
    if name == "xlogy":
        x, y = args
        zero = e.op(f"arith.andi {f.cmp('oeq', x, f.c(0.0))}, {f.cmp('ord', y, y)} : i1")
        return f.select(zero, f.c(0.0), f.mul(x, f.fn("log", y)))
    if name == "logaddexp":
        x, y = args
        d = f.sub(x, y)
        pos = f.add(x, f.fn("log1p", f.fn("exp", f.neg(d))))
        neg = f.add(y, f.fn("log1p", f.fn("exp", d)))
        value = f.select(f.cmp("ogt", d, f.c(0.0)), pos, f.select(f.cmp("ole", d, f.c(0.0)), neg, d))
        return f.select(f.cmp("oeq", x, y), f.add(x, f.c(LN2)), value)
    return None


def _int_op(e, name, dt, args):
    t = element(dt)
    a = args[0]
    unsigned = dt.kind in "ub"  # i1 compares unsigned: true is 1, not -1
    if dt.kind == "b":
        if name in ("and", "mul"):
            return e.op(f"arith.andi {a}, {args[1]} : i1")
        if name in ("or", "add", "maximum"):
            return e.op(f"arith.ori {a}, {args[1]} : i1")
        if name == "minimum":
            return e.op(f"arith.andi {a}, {args[1]} : i1")
        if name in ("xor", "neq"):
            return e.op(f"arith.xori {a}, {args[1]} : i1")
        if name == "eq":
            return e.op(f"arith.cmpi eq, {a}, {args[1]} : i1")
        if name == "invert":
            return e.op(f"arith.xori {a}, {e.const(True, 'i1')} : i1")
        if name in ("abs", "identity", "stop_gradient", "floor", "ceil", "trunc", "round"):
            return a
    if name in INT_BINARY:
        return e.op(f"arith.{INT_BINARY[name]} {a}, {args[1]} : {t}")
    if name in BITWISE:
        return e.op(f"arith.{BITWISE[name]} {a}, {args[1]} : {t}")
    if name in SIGNED_CMP:
        pred = (UNSIGNED_CMP if unsigned else SIGNED_CMP)[name]
        return e.op(f"arith.cmpi {pred}, {a}, {args[1]} : {t}")
    if name == "neg":
        return e.op(f"arith.subi {e.const(0, t)}, {a} : {t}")
    if name == "abs":
        return a if unsigned else e.op(f"math.absi {a} : {t}")
    if name == "invert":
        return e.op(f"arith.xori {a}, {e.const(-1, t)} : {t}")
    if name in ("maximum", "minimum"):
        return e.op(f"arith.{name[:3]}{'u' if unsigned else 's'}i {a}, {args[1]} : {t}")
    if name == "square":
        return e.op(f"arith.muli {a}, {a} : {t}")
    if name == "sign":
        zero = e.const(0, t)
        if unsigned:
            return e.op(f"arith.extui {e.op(f'arith.cmpi ugt, {a}, {zero} : {t}')} : i1 to {t}")
        gt = e.op(f"arith.extui {e.op(f'arith.cmpi sgt, {a}, {zero} : {t}')} : i1 to {t}")
        lt = e.op(f"arith.extui {e.op(f'arith.cmpi slt, {a}, {zero} : {t}')} : i1 to {t}")
        return e.op(f"arith.subi {gt}, {lt} : {t}")
    if name in ("isnan", "isinf"):
        return e.const(False, "i1")
    if name == "isfinite":
        return e.const(True, "i1")
    if name in ("floor", "ceil", "trunc", "round"):
        return a
    return None


def scalar_step(e, op, in_dtypes, args) -> tuple:
    """(SSA result, its dtype) of scalar `op` on SSA `args` of `in_dtypes`."""
    if isinstance(op, Composite):
        outs = print_composite(e, op, args)
        if len(outs) != 1:
            raise MlirUnsupported(f"mlir backend: a nested multi-output Composite {op} is not supported")
        return outs[0], op.output_dtypes(in_dtypes)[0]
    loops, out = compute_dtypes(op, list(in_dtypes))
    name = "cast" if isinstance(op, Cast) else op.name
    if name in ("cast", "identity", "stop_gradient"):
        return convert(e, args[0], in_dtypes[0], out), out
    if name == "where":
        cond = convert(e, args[0], in_dtypes[0], "bool")
        a, b = (convert(e, x, d, out) for x, d in zip(args[1:], in_dtypes[1:]))
        return e.op(f"arith.select {cond}, {a}, {b} : {element(out)}"), out
    operands = [convert(e, x, d, lt) for x, d, lt in zip(args, in_dtypes, loops)]
    lt = np.dtype(loops[0])
    if name in UNSUPPORTED:
        raise MlirUnsupported(
            f"mlir backend: scalar op {name!r} has no MLIR lowering (it has no math-dialect op); use the numba, c or jax backend"
        )
    result = _float_op(e, name, element(lt), operands) if lt.kind == "f" else _int_op(e, name, lt, operands)
    if result is None:
        raise MlirUnsupported(f"mlir backend: scalar op {name!r} is not supported for dtype {lt.name}")
    res_dtype = (
        "bool"
        if (name in SIGNED_CMP or name in BITWISE and lt.kind == "b" or name in ("isnan", "isinf", "isfinite"))
        else lt.name
    )
    return convert(e, result, res_dtype, out), np.dtype(out).name


def print_composite(e, comp: Composite, args) -> list:
    """SSA values of `comp`'s outputs computed from `args` (SSA scalars of `comp.in_dtypes`)."""
    dtypes = list(comp.step_dtypes)
    names = list(args)
    for op, refs in comp.steps:
        value, _ = scalar_step(e, op, [dtypes[r] for r in refs], [names[r] for r in refs])
        names.append(value)
    return [names[r] for r in comp.outs]


def check_composite(comp: Composite):
    """Refuse, by name, a Composite holding a scalar op this backend cannot print (before any emission)."""
    for op, _ in comp.steps:
        if isinstance(op, Composite):
            check_composite(op)
        elif not isinstance(op, Cast) and op.name in UNSUPPORTED:
            raise MlirUnsupported(
                f"mlir backend: scalar op {op.name!r} has no MLIR lowering (it has no math-dialect op); use the numba, c or jax backend"
            )
