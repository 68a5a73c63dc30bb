"""The scalar-op table: scalar op name -> expression template, and the printer of scalar code.

Fused kernels are printed from this table (tinygrad's `code_for_op`): each step of
a `Composite` becomes one assignment `s3 = np.float64(math.exp(s2))`. NumPy's
dtype rules are kept by construction: operands are cast to the ufunc's loop
dtypes (`resolve_dtypes`), and every result is cast to the step's dtype, so
narrow integers wrap exactly as NumPy's do even though Numba computes in int64.
A template is a string, or a dict keyed by dtype name ("float64") or kind
("b", "i", "u", "f"), with "*" as the default. `{0}`, `{1}`, ... are the operands; `rt.` names a
helper in `dimgraph.backends.numba.runtime`.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.scalar import Cast, Composite, ScalarOp, compute_dtypes

_INT_DIV = {"i": "rt.floordiv_int({0}, {1})", "u": "rt.floordiv_int({0}, {1})", "*": "rt.floordiv_float({0}, {1})"}
_INT_MOD = {"i": "rt.mod_int({0}, {1})", "u": "rt.mod_int({0}, {1})", "*": "rt.mod_float({0}, {1})"}

SCALAR_TEMPLATES = {
    "add": {"b": "({0} or {1})", "*": "({0} + {1})"},
    "sub": "({0} - {1})",
    "mul": {"b": "({0} and {1})", "*": "({0} * {1})"},
    "true_div": "({0} / {1})",
    "floor_div": _INT_DIV,
    "mod": _INT_MOD,
    "pow": {"i": "rt.pow_int({0}, {1})", "u": "rt.pow_int({0}, {1})", "*": "({0} ** {1})"},
    "neg": "(-{0})",
    "abs": {"b": "{0}", "*": "abs({0})"},
    "sign": "rt.sign({0})",
    "reciprocal": "(1.0 / {0})",
    "maximum": {"b": "({0} or {1})", "*": "rt.maximum({0}, {1})"},
    "minimum": {"b": "({0} and {1})", "*": "rt.minimum({0}, {1})"},
    "eq": "({0} == {1})",
    "neq": "({0} != {1})",
    "lt": "({0} < {1})",
    "le": "({0} <= {1})",
    "gt": "({0} > {1})",
    "ge": "({0} >= {1})",
    "and": {"b": "({0} and {1})", "*": "({0} & {1})"},
    "or": {"b": "({0} or {1})", "*": "({0} | {1})"},
    "xor": {"b": "({0} != {1})", "*": "({0} ^ {1})"},
    "invert": {"b": "(not {0})", "*": "(~{0})"},
    "isnan": {"f": "({0} != {0})", "*": "False"},
    "isfinite": {"f": "math.isfinite({0})", "*": "True"},
    "isinf": {"f": "math.isinf({0})", "*": "False"},
    "exp": {"float64": "rt.exp_f64({0})", "*": "math.exp({0})"},
    "exp2": "rt.exp2({0})",
    "log": "np.log({0})",
    "log2": "np.log2({0})",
    "log10": "np.log10({0})",
    "log1p": "np.log1p({0})",
    "expm1": {"float64": "rt.expm1_f64({0})", "*": "math.expm1({0})"},
    "sqrt": "np.sqrt({0})",
    "square": {"b": "({0} and {0})", "*": "({0} * {0})"},
    "sin": "math.sin({0})",
    "cos": "math.cos({0})",
    "tan": "math.tan({0})",
    "arcsin": "np.arcsin({0})",
    "arccos": "np.arccos({0})",
    "arctan": "math.atan({0})",
    "sinh": "math.sinh({0})",
    "cosh": "math.cosh({0})",
    "tanh": {"float64": "rt.tanh_from_expm1(rt.expm1_f64(rt.tanh_arg({0})), {0})", "*": "math.tanh({0})"},
    "arctan2": "math.atan2({0}, {1})",
    "sigmoid": {"float64": "rt.sigmoid_f64({0})", "*": "rt.sigmoid({0})"},
    "softplus": "rt.softplus({0})",
    "erf": "math.erf({0})",
    "erfc": "math.erfc({0})",
    "gammaln": "rt.lgamma({0})",
    "digamma": "rt.digamma({0})",
    "trigamma": "rt.trigamma({0})",
    "logaddexp": "rt.logaddexp({0}, {1})",
    "logit": "rt.logit({0})",
    "log1mexp": "rt.log1mexp({0})",
    "xlogy": "rt.xlogy({0}, {1})",
    "betaln": "rt.betaln({0}, {1})",
    "gammainc": "rt.gamma_inc({0}, {1}, False)",
    "gammaincc": "rt.gamma_inc({0}, {1}, True)",
    "betainc": "rt.beta_inc({0}, {1}, {2}, False)",
    "betaincc": "rt.beta_inc({0}, {1}, {2}, True)",
    "round": {"f": "np.rint({0})", "*": "{0}"},
    "floor": {"f": "np.floor({0})", "*": "{0}"},
    "ceil": {"f": "np.ceil({0})", "*": "{0}"},
    "trunc": {"f": "np.trunc({0})", "*": "{0}"},
    "where": "({1} if {0} else {2})",
    "identity": "{0}",
    "stop_gradient": "{0}",
}

_SUPPORTED_KINDS = "biuf"


def np_type(dtype) -> str:
    """The Numba-visible NumPy scalar constructor for `dtype` (e.g. `np.float64`)."""
    dtype = np.dtype(dtype)
    if dtype.kind not in _SUPPORTED_KINDS or dtype.itemsize > 8 or dtype == np.float16:
        raise NotImplementedError(f"numba backend: dtype {dtype} is not supported")
    return "np.bool_" if dtype.kind == "b" else f"np.{dtype.name}"


def _template(name, dtype):
    entry = SCALAR_TEMPLATES.get(name)
    if entry is None:
        raise NotImplementedError(f"numba backend: no scalar template for {name!r}")
    if isinstance(entry, str):
        return entry
    dtype = np.dtype(dtype)
    return entry.get(dtype.name, entry.get(dtype.kind, entry.get("*")))


def _cast_expr(expr, from_dtype, to_dtype) -> str:
    """`expr` of `from_dtype` converted as NumPy's unsafe `astype` would."""
    src, dst = np.dtype(from_dtype), np.dtype(to_dtype)
    if src == dst:
        return expr
    if dst.kind == "b":
        return f"({expr} != 0)"
    if src.kind == "f" and dst.kind in "iu":
        wide = "rt.float_to_uint64" if dst == np.uint64 else "rt.float_to_int64"
        return f"{np_type(dst)}({wide}({expr}))"
    return f"{np_type(dst)}({expr})"


# Steps whose Numba result already has the output dtype when every operand has it (float64
# or int64 arithmetic) or, for the predicates, always (a bool). Their expressions are printed
# without a cast: each `np.float64(...)` costs Numba typing and lowering time (a kernel
# compiles about 15% faster without them) and no machine code.
_SAME_TYPE = {
    "add", "sub", "mul", "true_div", "neg", "abs", "maximum", "minimum", "square", "identity", "stop_gradient", "reciprocal",
    "exp", "exp2", "log", "log2", "log10", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "arcsin", "arccos",
    "arctan", "sinh", "cosh", "tanh", "arctan2", "sigmoid", "softplus", "erf", "erfc", "gammaln", "digamma",
    "trigamma", "logaddexp", "round", "floor", "ceil", "trunc",
}  # fmt: skip
_INT_SAME_TYPE = {"add", "sub", "mul", "neg", "abs", "square", "identity", "stop_gradient"}
_PREDICATES = {"eq", "neq", "lt", "le", "gt", "ge", "isnan", "isfinite", "isinf"}


def _needs_cast(name, loop_in, out) -> bool:
    if name == "where":
        loop_in = loop_in[1:]
    if out == "bool" and name in _PREDICATES:
        return False
    if all(d == out for d in loop_in):
        return not ((out == "float64" and name in _SAME_TYPE) or (out == "int64" and name in _INT_SAME_TYPE))
    return True


def render_step(op: ScalarOp, args, in_dtypes) -> tuple:
    """(expression, dtype) of scalar `op` applied to the expressions `args` of `in_dtypes`."""
    if isinstance(op, Cast):
        return _cast_expr(args[0], in_dtypes[0], op.dtype), op.dtype
    loop_in, out = compute_dtypes(op, in_dtypes)
    cast_args = [_cast_expr(a, d, ld) for a, d, ld in zip(args, in_dtypes, loop_in)]
    expr = _template(op.name, loop_in[-1] if op.name == "where" else loop_in[0]).format(*cast_args)
    return (f"{np_type(out)}({expr})" if _needs_cast(op.name, loop_in, out) else expr), out


def flatten(op: ScalarOp, nin: int) -> tuple:
    """(steps, outs) of `op` over `nin` inputs, nested Composites inlined (refs as in Composite)."""
    if not isinstance(op, Composite):
        return ((op, tuple(range(nin))),), (nin,)
    steps, where = [], list(range(nin))  # where[r]: the flat ref of op's ref r
    for step_op, refs in op.steps:
        if isinstance(step_op, Composite):
            sub_steps, sub_outs = flatten(step_op, len(refs))
            base = nin + len(steps)
            remap = [where[r] for r in refs]

            def flat(r, remap=remap, base=base, k=len(refs)):
                return remap[r] if r < k else base + r - k

            for s_op, s_refs in sub_steps:
                steps.append((s_op, tuple(flat(r) for r in s_refs)))
            where.append(flat(sub_outs[0]))
        else:
            steps.append((step_op, tuple(where[r] for r in refs)))
            where.append(nin + len(steps) - 1)
    return tuple(steps), tuple(where[r] for r in op.outs)
