"""Scalar operations: the vocabulary of Elemwise kernels, one row of facts per op.

Every fact about a scalar op lives in its `ScalarSpec` row (`SCALAR_SPECS`):
arity, NumPy reference implementation, dtype rule, derivative, whether it is
commutative or cheap, the dtype special functions compute in, its public name
and whether `dg.<name>` exposes it. The positional and labeled functions, the
top-level exports, the rewrites' commutativity and the backends' loop dtypes
are all read from the rows; a backend adds one entry per row to its own table.

Output dtypes follow NumPy 2 exactly: ops that have a NumPy ufunc ask that
ufunc; special functions without a ufunc resolve like `np.exp` (unary) or
`np.true_divide` (binary): float in, same float out; ints to a float.

`Composite` is a scalar op made of a small DAG of scalar ops; fusion builds it,
and code generators print its body as one expression per step.

>>> SCALAR_SPECS["logit"].nin, ScalarOp("logit").output_dtypes(["float32"])
(1, ('float32',))
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

import numpy as np

from dimgraph.core import special


@dataclass(frozen=True)
class NoDerivative:
    """The derivative of a scalar op (or of one of its inputs) does not exist or is not implemented.

    Taking a gradient through that input raises `NonDifferentiable` with `reason`;
    a gradient that does not need it (the input is a constant) is unaffected.
    """

    reason: str


FLAT = "flat"  # a `grad` entry: piecewise constant, the derivative is 0 wherever it exists


@dataclass(frozen=True)
class ScalarSpec:
    """One scalar op's facts.

    `grad(m, inputs, output, gz)` gives, per input, the gradient flowing to it at
    full (broadcast) shape, written with `m = dimgraph.core.math`; an entry may be
    None (the input carries no gradient: the condition of `where`) or a
    `NoDerivative`. `grad` may also be `FLAT` or a `NoDerivative` for all inputs.
    `public` names the function in `dg.core` (None: operators or a hand-written
    function only); `top_level` exports it as `dg.<public>` (and `aliases`), which
    takes labeled and positional operands alike.
    """

    name: str
    nin: int
    impl: Callable  # NumPy-vectorized reference implementation
    ufunc: object = None  # NumPy ufunc whose dtype rule we follow
    rule: str = "ufunc"  # "ufunc" | "float" (float in, same float out) | "where" | "round" | "same"
    grad: object = None
    commutative: bool = False
    cheap: bool = False  # a handful of instructions: not worth hoisting out of loops
    compute: str | None = None  # the dtype backends compute in when it is not the loop's (special functions)
    public: str | None = ""  # "" means the op's own name
    top_level: bool = False
    aliases: tuple = ()
    params: tuple = ()  # argument names of the public function (default x, or x, y)
    doc: str = ""

    @property
    def public_name(self) -> str | None:
        return self.name if self.public == "" else self.public

    @property
    def arg_names(self) -> tuple:
        return self.params or (("x",), ("x", "y"), ("cond", "a", "b"))[self.nin - 1]


def _float_dtype(*xs):
    """The float dtype special functions give these operands (np.exp's for one, np.true_divide's folded over more)."""
    dts = tuple(np.asarray(x).dtype for x in xs)
    return np.exp.resolve_dtypes(dts + (None,))[-1] if len(dts) == 1 else _fold_float(np.true_divide, dts)


def _fold_float(ufunc, dts):
    """The dtype of `ufunc` folded left over `dts` (((x / y) / z) for true_divide)."""
    out = dts[0]
    for d in dts[1:]:
        out = ufunc.resolve_dtypes((out, d, None))[-1]
    return out


def _in_float(fn):
    """`fn` over its operands cast to the float dtype of the result (ints cannot be negated safely)."""

    def impl(*xs):
        dtype = _float_dtype(*xs)
        return fn(*[np.asarray(x).astype(dtype, copy=False) for x in xs])

    return impl


def _vectorize(fn):
    """A scalar function of `dimgraph.core.special`, computed in float64, rounded once to the result dtype."""
    vec = np.vectorize(fn, otypes=[np.float64])

    def impl(*xs):
        return vec(*[np.asarray(x).astype(np.float64) for x in xs]).astype(_float_dtype(*xs), copy=False)

    return impl


@_in_float
def _sigmoid(x):
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


@_in_float
def _softplus(x):
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


@_in_float
def _logit(p):
    return np.log(p / (1 - p))


@_in_float
def _log1mexp(x):
    return np.where(x < -special.LN2, np.log1p(-np.exp(x)), np.log(-np.expm1(x)))


@_in_float
def _xlogy(x, y):
    return np.where((x == 0) & ~np.isnan(y), np.zeros((), x.dtype), x * np.log(y))


def _pow_grad(m, i, z, gz):
    x, y = i
    dx = gz * y * m.elemwise("pow", x, y - 1)
    # d/dy x**y = log(x) x**y; at x == 0 the limit of that product is 0 (for y > 0)
    safe = m.where(x > 0, x, 1)
    return [dx, gz * m.where(x > 0, m.log(safe) * z, 0)]


def _extremum_grad(first_wins):
    """maximum/minimum: the gradient goes to the first argument where both are equal (a valid subgradient)."""

    def grad(m, i, z, gz):
        first = first_wins(i[0], i[1])
        return [m.where(first, gz, 0), m.where(first, 0, gz)]

    return grad


def _beta_inc_grad(sign):
    """d/dx I_x(a, b) = x^(a-1) (1-x)^(b-1) / B(a, b), the beta density (the complement: its negative); none in a, b."""

    def grad(m, i, z, gz):
        a, b, x = i
        density = m.exp(m.xlogy(a - 1, x) + m.xlogy(b - 1, 1 - x) - m.betaln(a, b))
        none = NoDerivative("the derivatives in the shapes a and b are not implemented")
        return [none, none, sign * gz * density]

    return grad


def _gamma_inc_grad(sign):
    """d/dx P(a, x) = x^(a-1) e^-x / Gamma(a) (Q: its negative); in the shape `a` there is none here."""

    def grad(m, i, z, gz):
        a, x = i
        density = m.exp(m.xlogy(a - 1, x) - x - m.gammaln(a))
        return [NoDerivative("the derivative in the shape a is not implemented"), sign * gz * density]

    return grad


LN2, LN10 = math.log(2.0), math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _rows(*specs) -> dict:
    return {s.name: s for s in specs}


S = ScalarSpec
SCALAR_SPECS: dict[str, ScalarSpec] = _rows(
    # arithmetic
    S("add", 2, np.add, np.add, grad=lambda m, i, z, gz: [gz, gz], commutative=True, cheap=True),
    S("sub", 2, np.subtract, np.subtract, grad=lambda m, i, z, gz: [gz, -gz], cheap=True),
    S("mul", 2, np.multiply, np.multiply, grad=lambda m, i, z, gz: [gz * i[1], gz * i[0]], commutative=True, cheap=True),
    S("true_div", 2, np.true_divide, np.true_divide, grad=lambda m, i, z, gz: [gz / i[1], -gz * i[0] / m.square(i[1])]),
    S("floor_div", 2, np.floor_divide, np.floor_divide, grad=FLAT),
    S("mod", 2, np.remainder, np.remainder, grad=lambda m, i, z, gz: [gz, -gz * m.floor(m.elemwise("true_div", i[0], i[1]))]),
    S("pow", 2, np.power, np.power, grad=_pow_grad),
    S("neg", 1, np.negative, np.negative, grad=lambda m, i, z, gz: [-gz], cheap=True),
    S("abs", 1, np.absolute, np.absolute, grad=lambda m, i, z, gz: [gz * m.sign(i[0])], cheap=True),
    S("sign", 1, np.sign, np.sign, grad=FLAT, cheap=True, top_level=True),
    S("reciprocal", 1, lambda x: 1 / x, np.true_divide, "float", grad=lambda m, i, z, gz: [-gz * m.square(z)]),
    S("maximum", 2, np.maximum, np.maximum, grad=_extremum_grad(lambda x, y: x >= y), commutative=True, cheap=True, top_level=True),
    S("minimum", 2, np.minimum, np.minimum, grad=_extremum_grad(lambda x, y: x <= y), commutative=True, cheap=True, top_level=True),
    # comparison and logic (no float outputs: no gradient flows through them)
    S("eq", 2, np.equal, np.equal, commutative=True, cheap=True),
    S("neq", 2, np.not_equal, np.not_equal, commutative=True, cheap=True),
    S("lt", 2, np.less, np.less, cheap=True),
    S("le", 2, np.less_equal, np.less_equal, cheap=True),
    S("gt", 2, np.greater, np.greater, cheap=True),
    S("ge", 2, np.greater_equal, np.greater_equal, cheap=True),
    S("and", 2, np.bitwise_and, np.bitwise_and, commutative=True, cheap=True, public="bitwise_and"),
    S("or", 2, np.bitwise_or, np.bitwise_or, commutative=True, cheap=True, public="bitwise_or"),
    S("xor", 2, np.bitwise_xor, np.bitwise_xor, commutative=True, cheap=True, public="bitwise_xor"),
    S("invert", 1, np.invert, np.invert, cheap=True),
    S("isnan", 1, np.isnan, np.isnan, cheap=True, top_level=True),
    S("isfinite", 1, np.isfinite, np.isfinite, cheap=True, top_level=True),
    S("isinf", 1, np.isinf, np.isinf, cheap=True, top_level=True),
    # math
    S("exp", 1, np.exp, np.exp, grad=lambda m, i, z, gz: [gz * z], top_level=True),
    S("exp2", 1, np.exp2, np.exp2, grad=lambda m, i, z, gz: [gz * z * LN2], top_level=True),
    S("log", 1, np.log, np.log, grad=lambda m, i, z, gz: [gz / i[0]], top_level=True),
    S("log2", 1, np.log2, np.log2, grad=lambda m, i, z, gz: [gz / (i[0] * LN2)], top_level=True),
    S("log10", 1, np.log10, np.log10, grad=lambda m, i, z, gz: [gz / (i[0] * LN10)], top_level=True),
    S("log1p", 1, np.log1p, np.log1p, grad=lambda m, i, z, gz: [gz / (1 + i[0])], top_level=True),
    S("expm1", 1, np.expm1, np.expm1, grad=lambda m, i, z, gz: [gz * (z + 1)], top_level=True),
    S("sqrt", 1, np.sqrt, np.sqrt, grad=lambda m, i, z, gz: [gz * 0.5 / z], top_level=True),
    S("square", 1, np.square, np.square, grad=lambda m, i, z, gz: [gz * 2 * i[0]], cheap=True, top_level=True),
    S("sin", 1, np.sin, np.sin, grad=lambda m, i, z, gz: [gz * m.cos(i[0])], top_level=True),
    S("cos", 1, np.cos, np.cos, grad=lambda m, i, z, gz: [-gz * m.sin(i[0])], top_level=True),
    S("tan", 1, np.tan, np.tan, grad=lambda m, i, z, gz: [gz * (1 + m.square(z))], top_level=True),
    S("arcsin", 1, np.arcsin, np.arcsin, grad=lambda m, i, z, gz: [gz / m.sqrt(1 - m.square(i[0]))], top_level=True),
    S("arccos", 1, np.arccos, np.arccos, grad=lambda m, i, z, gz: [-gz / m.sqrt(1 - m.square(i[0]))], top_level=True),
    S("arctan", 1, np.arctan, np.arctan, grad=lambda m, i, z, gz: [gz / (1 + m.square(i[0]))], top_level=True),
    S("sinh", 1, np.sinh, np.sinh, grad=lambda m, i, z, gz: [gz * m.cosh(i[0])], top_level=True),
    S("cosh", 1, np.cosh, np.cosh, grad=lambda m, i, z, gz: [gz * m.sinh(i[0])], top_level=True),
    S("tanh", 1, np.tanh, np.tanh, grad=lambda m, i, z, gz: [gz * (1 - m.square(z))], top_level=True),
    S("arctan2", 2, np.arctan2, np.arctan2, top_level=True, params=("y", "x"), grad=lambda m, i, z, gz: [
        gz * i[1] / (m.square(i[0]) + m.square(i[1])), -gz * i[0] / (m.square(i[0]) + m.square(i[1]))]),
    S("logaddexp", 2, np.logaddexp, np.logaddexp, top_level=True,
      grad=lambda m, i, z, gz: [gz * m.exp(i[0] - z), gz * m.exp(i[1] - z)]),
    # special functions
    S("sigmoid", 1, _sigmoid, np.exp, "float", grad=lambda m, i, z, gz: [gz * z * (1 - z)], top_level=True,
      aliases=("expit",), doc="the logistic function 1 / (1 + exp(-x)) (scipy's expit)"),
    S("softplus", 1, _softplus, np.exp, "float", grad=lambda m, i, z, gz: [gz * m.sigmoid(i[0])], top_level=True,
      doc="log(1 + exp(x)), without overflow"),
    S("logit", 1, _logit, np.exp, "float", grad=lambda m, i, z, gz: [gz / (i[0] * (1 - i[0]))], top_level=True,
      params=("p",), doc="log(p / (1 - p)), the inverse of sigmoid/expit"),
    S("log1mexp", 1, _log1mexp, np.exp, "float", grad=lambda m, i, z, gz: [-gz / m.expm1(-i[0])], top_level=True,
      doc="log(1 - exp(x)) for x <= 0, accurate near 0 and for very negative x"),
    S("xlogy", 2, _xlogy, np.true_divide, "float", top_level=True, doc="x * log(y), 0 where x == 0 (scipy's xlogy)",
      grad=lambda m, i, z, gz: [gz * m.log(i[1]), gz * i[0] / i[1]]),
    S("erf", 1, _vectorize(math.erf), np.exp, "float", compute="float64", top_level=True,
      grad=lambda m, i, z, gz: [gz * TWO_OVER_SQRT_PI * m.exp(-m.square(i[0]))]),
    S("erfc", 1, _vectorize(math.erfc), np.exp, "float", compute="float64", top_level=True,
      grad=lambda m, i, z, gz: [-gz * TWO_OVER_SQRT_PI * m.exp(-m.square(i[0]))]),
    S("gammaln", 1, _vectorize(special.lgamma), np.exp, "float", compute="float64", top_level=True,
      grad=lambda m, i, z, gz: [gz * m.digamma(i[0])], doc="log|Gamma(x)|"),
    S("digamma", 1, _vectorize(special.digamma), np.exp, "float", compute="float64", top_level=True,
      grad=lambda m, i, z, gz: [gz * m.trigamma(i[0])], doc="the derivative of gammaln"),
    S("trigamma", 1, _vectorize(special.trigamma), np.exp, "float", compute="float64", top_level=True,
      grad=NoDerivative("its derivative (tetragamma) is not implemented"), doc="the derivative of digamma"),
    S("betaln", 2, _vectorize(special.betaln), np.true_divide, "float", compute="float64", top_level=True,
      params=("a", "b"), doc="log|B(a, b)|, the log of the beta function", grad=lambda m, i, z, gz: [
        gz * (m.digamma(i[0]) - m.digamma(i[0] + i[1])), gz * (m.digamma(i[1]) - m.digamma(i[0] + i[1]))]),
    S("gammainc", 2, _vectorize(special.gammainc), np.true_divide, "float", compute="float64", top_level=True,
      params=("a", "x"), grad=_gamma_inc_grad(1), doc="the regularized lower incomplete gamma function P(a, x)"),
    S("gammaincc", 2, _vectorize(special.gammaincc), np.true_divide, "float", compute="float64", top_level=True,
      params=("a", "x"), grad=_gamma_inc_grad(-1), doc="the regularized upper incomplete gamma function Q(a, x)"),
    S("betainc", 3, _vectorize(special.betainc), np.true_divide, "float", compute="float64", top_level=True,
      params=("a", "b", "x"), grad=_beta_inc_grad(1), doc="the regularized incomplete beta function I_x(a, b)"),
    S("betaincc", 3, _vectorize(special.betaincc), np.true_divide, "float", compute="float64", top_level=True,
      params=("a", "b", "x"), grad=_beta_inc_grad(-1), doc="its complement 1 - I_x(a, b), accurate where I is near 1"),
    # rounding: half to even, ints unchanged (np.round)
    S("round", 1, np.round, None, "round", grad=FLAT, cheap=True, public=None),
    S("floor", 1, np.floor, np.floor, grad=FLAT, cheap=True, top_level=True),
    S("ceil", 1, np.ceil, np.ceil, grad=FLAT, cheap=True, top_level=True),
    S("trunc", 1, np.trunc, np.trunc, grad=FLAT, cheap=True, top_level=True),
    # structure
    S("where", 3, np.where, None, "where", cheap=True, public=None,
      grad=lambda m, i, z, gz: [None, m.where(i[0], gz, 0), m.where(i[0], 0, gz)]),
    S("identity", 1, lambda x: x, None, "same", grad=lambda m, i, z, gz: [gz], cheap=True, public=None),
    S("stop_gradient", 1, lambda x: x, None, "same", grad=lambda m, i, z, gz: [None], cheap=True, top_level=True,
      doc="x itself, but no gradient flows through it (jax.lax.stop_gradient): a shift or a baseline held fixed"),
)  # fmt: skip
del S

# Public function name (and alias) -> row: what `dg.core` and `dg` export for the scalar ops.
PUBLIC_NAMES: dict[str, ScalarSpec] = {
    public: spec for spec in SCALAR_SPECS.values() if spec.public_name for public in (spec.public_name, *spec.aliases)
}


@dataclass(frozen=True)
class ScalarOp:
    """A named scalar function from SCALAR_SPECS."""

    name: str

    def __post_init__(self):
        if self.name not in SCALAR_SPECS:
            raise ValueError(f"unknown scalar op {self.name!r}; known: {sorted(SCALAR_SPECS)}")

    @property
    def spec(self) -> ScalarSpec:
        return SCALAR_SPECS[self.name]

    @property
    def nin(self) -> int:
        return SCALAR_SPECS[self.name].nin

    nout = 1

    def output_dtypes(self, in_dtypes) -> tuple:
        return (_resolve(self.name, tuple(np.dtype(d).name for d in in_dtypes)),)

    def impl(self, *inputs):
        out_dtype = self.output_dtypes([np.asarray(i).dtype for i in inputs])[0]
        with np.errstate(all="ignore"):
            res = SCALAR_SPECS[self.name].impl(*inputs)
        return [np.asarray(res).astype(out_dtype, copy=False)]

    def __str__(self):
        return self.name


@dataclass(frozen=True)
class Cast(ScalarOp):
    """Conversion to `dtype` with NumPy's unsafe-cast semantics (as `astype`)."""

    name: str = "cast"
    dtype: str = "float64"

    def __post_init__(self):
        object.__setattr__(self, "dtype", np.dtype(self.dtype).name)

    nin = 1

    def output_dtypes(self, in_dtypes):
        return (self.dtype,)

    def impl(self, x):
        with np.errstate(all="ignore"):
            return [np.asarray(x).astype(self.dtype)]

    def __str__(self):
        return f"cast[{self.dtype}]"


@lru_cache(maxsize=None)
def _resolve(name: str, in_dtypes: tuple) -> str:
    spec = SCALAR_SPECS[name]
    dts = tuple(np.dtype(d) for d in in_dtypes)
    if len(dts) != spec.nin:
        raise TypeError(f"scalar op {name} takes {spec.nin} inputs, got {len(dts)}")
    if spec.rule == "same":
        return dts[0].name
    if spec.rule == "round":  # np.round keeps ints and floats, but bool goes through rint to float16
        return np.round(np.zeros(1, dts[0])).dtype.name
    if spec.rule == "where":
        return np.result_type(dts[1], dts[2]).name
    if spec.rule == "float" and spec.ufunc.nin != len(dts):  # reciprocal: the dtype of x / x; betainc: x / y / z
        dts = dts * spec.ufunc.nin if len(dts) == 1 else (_fold_float(spec.ufunc, dts[:-1]), dts[-1])
    try:
        return spec.ufunc.resolve_dtypes(dts + (None,))[-1].name
    except TypeError as err:
        raise TypeError(f"{name} is not defined for dtypes {[d.name for d in dts]} (as in NumPy: {err})") from None


def loop_dtypes(op, in_dtypes) -> tuple:
    """(operand dtypes, output dtype) of NumPy's loop for `op`: the dtypes operands are cast to before it computes.

    >>> loop_dtypes(ScalarOp("add"), ["int8", "float32"])
    ((dtype('float32'), dtype('float32')), dtype('float32'))
    """
    in_dtypes = tuple(np.dtype(d) for d in in_dtypes)
    out = np.dtype(op.output_dtypes(in_dtypes)[0])
    if isinstance(op, Cast):
        return in_dtypes, out
    spec = SCALAR_SPECS[op.name]
    if spec.rule == "where":
        return (np.dtype(bool), out, out), out
    if spec.rule == "same":
        return in_dtypes, out
    if spec.rule in ("round", "float"):
        return (out,) * len(in_dtypes), out
    return tuple(spec.ufunc.resolve_dtypes(in_dtypes + (None,))[:-1]), out


def compute_dtypes(op, in_dtypes) -> tuple:
    """`loop_dtypes`, except that special functions compute in their row's `compute` dtype (float64).

    The compiled backends evaluate them there, as the python backend does, and round once.
    """
    loops, out = loop_dtypes(op, in_dtypes)
    compute = None if isinstance(op, (Cast, Composite)) else SCALAR_SPECS[op.name].compute
    return ((np.dtype(compute),) * len(loops) if compute else loops), out


def is_cheap(op) -> bool:
    """Whether `op` costs a handful of instructions (casts do): code generators need not hoist it out of loops."""
    if isinstance(op, Cast):
        return True
    return not isinstance(op, Composite) and SCALAR_SPECS[op.name].cheap


@dataclass(frozen=True)
class Composite(ScalarOp):
    """A fused DAG of scalar ops.

    `steps[k] = (scalar_op, refs)`; a ref `r < nin` names input r, otherwise the
    result of step `r - nin`. `outs` are refs of the outputs. `in_dtypes` fixes the
    input dtypes so every step's dtype is known statically.
    """

    name: str = "composite"
    in_dtypes: tuple = ()
    steps: tuple = ()
    outs: tuple = ()

    def __post_init__(self):
        pass

    @property
    def nin(self) -> int:
        return len(self.in_dtypes)

    @property
    def nout(self) -> int:
        return len(self.outs)

    @property
    def step_dtypes(self) -> tuple:
        dts = list(self.in_dtypes)
        for op, refs in self.steps:
            dts.append(op.output_dtypes([dts[r] for r in refs])[0])
        return tuple(dts)

    def output_dtypes(self, in_dtypes):
        dts = self.step_dtypes
        return tuple(dts[r] for r in self.outs)

    def impl(self, *inputs):
        vals = [np.asarray(i) for i in inputs]
        for op, refs in self.steps:
            vals.append(op.impl(*[vals[r] for r in refs])[0])
        return [vals[r] for r in self.outs]

    def __str__(self):
        # Nested expressions while short; a shared step would repeat (exponentially, for deep fused
        # DAGs), so long bodies print one line per step instead: composite{s0=sin(i0); s1=add(s0, i0) -> s1}.
        names = [f"i{k}" for k in range(self.nin)]
        for op, refs in self.steps:
            names.append(f"{op}({', '.join(names[r] for r in refs)})")
            if len(names[-1]) > 200:
                return self._str_steps()
        return "composite{" + ", ".join(names[r] for r in self.outs) + "}"

    def _str_steps(self):
        names = [f"i{k}" for k in range(self.nin)] + [f"s{k}" for k in range(len(self.steps))]
        body = "; ".join(f"s{k}={op}({', '.join(names[r] for r in refs)})" for k, (op, refs) in enumerate(self.steps))
        return "composite{" + body + " -> " + ", ".join(names[r] for r in self.outs) + "}"
