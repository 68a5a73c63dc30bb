"""Scalar operations: the vocabulary of Elemwise kernels.

A `ScalarOp` is named; its meaning lives in one table (`SCALAR_SPECS`): arity,
NumPy reference implementation, and the dtype rule. Output dtypes follow NumPy 2
exactly: ops that have a NumPy ufunc ask that ufunc; special functions without a
ufunc resolve like `np.exp` (float in, same float out; ints to a float).

`Composite` is a scalar op made of a small DAG of scalar ops; fusion builds it,
and code generators print its body as one expression per step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np


@dataclass(frozen=True)
class ScalarSpec:
    nin: int
    impl: object  # NumPy-vectorized implementation
    ufunc: object = None  # NumPy ufunc whose dtype rule we follow
    rule: str = "ufunc"  # "ufunc" | "float" (like np.exp) | "bool" | "where" | "cast"


def _digamma_scalar(x: float) -> float:
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


def _trigamma_scalar(x: float) -> float:
    """trigamma by recurrence to x >= 12 and the asymptotic series."""
    if not math.isfinite(x):
        return 0.0 if x > 0 else (math.inf if x < 0 else math.nan)  # as scipy.special.polygamma(1, x)
    if x <= 0.0 and x == math.floor(x):
        return math.inf
    result = 0.0
    if x < 0.0:  # reflection: psi1(1 - x) + psi1(x) = pi^2 / sin^2(pi x)
        s = math.sin(math.pi * x)
        return -_trigamma_scalar(1.0 - x) + (math.pi / s) * (math.pi / s)
    while x < 12.0:
        result += 1.0 / x / x  # x * x underflows to 0 for tiny x
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    series = inv + 0.5 * inv2 + inv * inv2 * (1.0 / 6 - inv2 * (1.0 / 30 - inv2 * (1.0 / 42 - inv2 * (1.0 / 30))))
    return result + series


def _lgamma_scalar(x: float) -> float:
    """log|Gamma(x)|, +inf at the poles (math.lgamma raises there)."""
    if math.isfinite(x) and x <= 0.0 and x == math.floor(x):
        return math.inf
    return math.lgamma(x)


def _vectorize(fn):
    vec = np.vectorize(fn, otypes=[np.float64])

    def impl(x):
        x = np.asarray(x)
        out_dtype = np.exp.resolve_dtypes((x.dtype, None))[-1]
        return vec(x.astype(np.float64)).astype(out_dtype, copy=False)

    return impl


def _as_float(x):
    """`x` in the float dtype np.exp gives it (bool and ints cannot be negated safely)."""
    x = np.asarray(x)
    return x if x.dtype.kind in "fc" else x.astype(np.exp.resolve_dtypes((x.dtype, None))[-1])


def _sigmoid(x):
    x = _as_float(x)
    with np.errstate(over="ignore"):
        e = np.exp(-np.abs(x))
        return np.where(x >= 0, 1 / (1 + e), e / (1 + e))


def _softplus(x):
    x = _as_float(x)
    return np.log1p(np.exp(-np.abs(x))) + np.maximum(x, 0)


def _where(c, a, b):
    return np.where(c, a, b)


SCALAR_SPECS: dict[str, ScalarSpec] = {
    # arithmetic
    "add": ScalarSpec(2, np.add, np.add),
    "sub": ScalarSpec(2, np.subtract, np.subtract),
    "mul": ScalarSpec(2, np.multiply, np.multiply),
    "true_div": ScalarSpec(2, np.true_divide, np.true_divide),
    "floor_div": ScalarSpec(2, np.floor_divide, np.floor_divide),
    "mod": ScalarSpec(2, np.remainder, np.remainder),
    "pow": ScalarSpec(2, np.power, np.power),
    "neg": ScalarSpec(1, np.negative, np.negative),
    "abs": ScalarSpec(1, np.absolute, np.absolute),
    "sign": ScalarSpec(1, np.sign, np.sign),
    "reciprocal": ScalarSpec(1, lambda x: 1 / x, np.true_divide, "float"),
    "maximum": ScalarSpec(2, np.maximum, np.maximum),
    "minimum": ScalarSpec(2, np.minimum, np.minimum),
    # comparison and logic
    "eq": ScalarSpec(2, np.equal, np.equal),
    "neq": ScalarSpec(2, np.not_equal, np.not_equal),
    "lt": ScalarSpec(2, np.less, np.less),
    "le": ScalarSpec(2, np.less_equal, np.less_equal),
    "gt": ScalarSpec(2, np.greater, np.greater),
    "ge": ScalarSpec(2, np.greater_equal, np.greater_equal),
    "and": ScalarSpec(2, np.bitwise_and, np.bitwise_and),
    "or": ScalarSpec(2, np.bitwise_or, np.bitwise_or),
    "xor": ScalarSpec(2, np.bitwise_xor, np.bitwise_xor),
    "invert": ScalarSpec(1, np.invert, np.invert),
    "isnan": ScalarSpec(1, np.isnan, np.isnan),
    "isfinite": ScalarSpec(1, np.isfinite, np.isfinite),
    "isinf": ScalarSpec(1, np.isinf, np.isinf),
    # math
    "exp": ScalarSpec(1, np.exp, np.exp),
    "exp2": ScalarSpec(1, np.exp2, np.exp2),
    "log": ScalarSpec(1, np.log, np.log),
    "log2": ScalarSpec(1, np.log2, np.log2),
    "log10": ScalarSpec(1, np.log10, np.log10),
    "log1p": ScalarSpec(1, np.log1p, np.log1p),
    "expm1": ScalarSpec(1, np.expm1, np.expm1),
    "sqrt": ScalarSpec(1, np.sqrt, np.sqrt),
    "square": ScalarSpec(1, np.square, np.square),
    "sin": ScalarSpec(1, np.sin, np.sin),
    "cos": ScalarSpec(1, np.cos, np.cos),
    "tan": ScalarSpec(1, np.tan, np.tan),
    "arcsin": ScalarSpec(1, np.arcsin, np.arcsin),
    "arccos": ScalarSpec(1, np.arccos, np.arccos),
    "arctan": ScalarSpec(1, np.arctan, np.arctan),
    "sinh": ScalarSpec(1, np.sinh, np.sinh),
    "cosh": ScalarSpec(1, np.cosh, np.cosh),
    "tanh": ScalarSpec(1, np.tanh, np.tanh),
    "arctan2": ScalarSpec(2, np.arctan2, np.arctan2),
    "sigmoid": ScalarSpec(1, _sigmoid, np.exp, "float"),
    "softplus": ScalarSpec(1, _softplus, np.exp, "float"),
    "erf": ScalarSpec(1, _vectorize(math.erf), np.exp, "float"),
    "erfc": ScalarSpec(1, _vectorize(math.erfc), np.exp, "float"),
    "gammaln": ScalarSpec(1, _vectorize(_lgamma_scalar), np.exp, "float"),
    "digamma": ScalarSpec(1, _vectorize(_digamma_scalar), np.exp, "float"),
    "trigamma": ScalarSpec(1, _vectorize(_trigamma_scalar), np.exp, "float"),
    "logaddexp": ScalarSpec(2, np.logaddexp, np.logaddexp),
    "round": ScalarSpec(1, np.round, None, "round"),  # half to even, ints unchanged (np.round)
    "floor": ScalarSpec(1, np.floor, np.floor),
    "ceil": ScalarSpec(1, np.ceil, np.ceil),
    "trunc": ScalarSpec(1, np.trunc, np.trunc),
    # structure
    "where": ScalarSpec(3, _where, None, "where"),
    "identity": ScalarSpec(1, lambda x: x, None, "same"),
}


@dataclass(frozen=True)
class ScalarOp:
    """A named scalar function from SCALAR_SPECS."""

    name: str

    def __post_init__(self):
        if self.name not in SCALAR_SPECS:
            raise ValueError(f"unknown scalar op {self.name!r}; known: {sorted(SCALAR_SPECS)}")

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
    if spec.rule == "float" and spec.ufunc.nin != len(dts):  # reciprocal: the dtype of x / x
        dts = dts * spec.ufunc.nin
    try:
        return spec.ufunc.resolve_dtypes(dts + (None,))[-1].name
    except TypeError as err:
        raise TypeError(f"{name} is not defined for dtypes {[d.name for d in dts]} (as in NumPy: {err})") from None


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
