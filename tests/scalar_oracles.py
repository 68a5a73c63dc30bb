"""The test oracle of every scalar op: NumPy for the ufuncs, scipy.special (in float64) for the special functions.

`ORACLES[name]` takes NumPy arrays and gives what the op must give, in the
op's output dtype. Every row of `dimgraph.core.scalar.SCALAR_SPECS` has one
(tests/test_registries.py checks it); `SPECIAL` are the ones compared with a
looser tolerance (computed in float64, rounded once).
"""

import numpy as np
import scipy.special as sp


def _float_like(fn):
    """A float64 oracle cast to the dtype the special-function rule gives (np.exp's, np.true_divide's folded over more)."""

    def oracle(*xs):
        with np.errstate(all="ignore"):
            dts = tuple(np.asarray(x).dtype for x in xs)
            out_dtype = np.exp.resolve_dtypes(dts[:1] + (None,))[-1] if len(xs) == 1 else dts[0]
            for d in dts[1:]:
                out_dtype = np.true_divide.resolve_dtypes((out_dtype, d, None))[-1]
            return np.asarray(fn(*[np.asarray(x).astype(np.float64) for x in xs])).astype(out_dtype)

    return oracle


def _log1mexp(x):
    return np.where(x < -np.log(2.0), np.log1p(-np.exp(x)), np.log(-np.expm1(x)))


SPECIAL = {
    "sigmoid": _float_like(sp.expit),
    "softplus": _float_like(lambda x: np.logaddexp(0.0, x)),
    "logit": _float_like(sp.logit),
    "log1mexp": _float_like(_log1mexp),
    "erf": _float_like(sp.erf),
    "erfc": _float_like(sp.erfc),
    "gammaln": _float_like(lambda x: np.where(x == -np.inf, np.inf, sp.gammaln(x))),  # C lgamma(-inf) = inf
    "digamma": _float_like(sp.digamma),
    "trigamma": _float_like(lambda x: sp.polygamma(1, x)),
}
SPECIAL_BINARY = {
    "xlogy": _float_like(sp.xlogy),
    "betaln": _float_like(sp.betaln),
    "gammainc": _float_like(sp.gammainc),
    "gammaincc": _float_like(sp.gammaincc),
}

SPECIAL_TERNARY = {
    "betainc": _float_like(sp.betainc),
    "betaincc": _float_like(sp.betaincc),
}

UNARY = {
    "neg": np.negative,
    "abs": np.absolute,
    "sign": np.sign,
    "reciprocal": lambda x: np.true_divide(np.ones((), x.dtype), x),
    "invert": np.invert,
    "isnan": np.isnan,
    "isfinite": np.isfinite,
    "isinf": np.isinf,
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "log1p": np.log1p,
    "expm1": np.expm1,
    "sqrt": np.sqrt,
    "square": np.square,
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "arcsin": np.arcsin,
    "arccos": np.arccos,
    "arctan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "round": np.round,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "identity": lambda x: x,
    "stop_gradient": lambda x: x,
    **SPECIAL,
}

BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "true_div": np.true_divide,
    "floor_div": np.floor_divide,
    "mod": np.remainder,
    "pow": np.power,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "eq": np.equal,
    "neq": np.not_equal,
    "lt": np.less,
    "le": np.less_equal,
    "gt": np.greater,
    "ge": np.greater_equal,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
    "arctan2": np.arctan2,
    "logaddexp": np.logaddexp,
    **SPECIAL_BINARY,
}

ORACLES = {**UNARY, **BINARY, **SPECIAL_TERNARY, "where": np.where}
