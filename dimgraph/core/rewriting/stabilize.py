"""stabilize: forms that stay finite and accurate where the naive expression overflows or cancels.

Every rule here is for floating inputs only (for ints, `1 + x` may wrap before
the log, so log1p would change the value). Where the naive form is finite the
stable one agrees to rounding; where it overflows to inf or loses everything to
cancellation, the stable one gives the finite answer.

Known difference: the max-shifted forms (logsumexp, softmax) reduce with `max`,
which has no value on an empty axis. They are not applied when the reduced axis
is statically empty; an axis of unknown size that is empty at run time raises
(as `dg.logsumexp` does) where the written graph gives -inf or NaN.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core import math as dgm
from dimgraph.core.basic import constant
from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.reduce import CAReduce
from dimgraph.core.rewriting.pattern import Pat, exp, is_scalar_op, log, log1p, rule, sigmoid

x = Pat.var("x", where=lambda v: np.dtype(v.type.dtype).kind == "f")


def _is_sum(op):
    return op.scalar_op == "add"


def _sum_of(arg):
    return Pat.node(CAReduce, arg, bind="red", where=_is_sum)


def _keepdims_of(arg):
    return Pat.node(DimShuffle, arg, bind="ds")


def _is_keepdims(ds, red, ndim):
    """`ds` puts back, as length-1 axes, exactly the axes `red` reduced (sum(..., keepdims=True))."""
    it = iter(range(ndim - len(red.axis)))
    return ds.order == tuple("x" if a in red.axis else next(it) for a in range(ndim))


def _is_shifted(v):
    """`v` is already `x - where(isfinite(m), m, 0)` (the max shift this module builds)."""
    node = v.owner
    if node is None or not is_scalar_op(node, "sub"):
        return False
    s = node.inputs[1]
    while s.owner is not None and isinstance(s.owner.op, DimShuffle):
        s = s.owner.inputs[0]
    return s.owner is not None and is_scalar_op(s.owner, "where")


def _max_shift(x, axes):
    """x - shift with shift = max over `axes` (0 where that max is not finite), and the shift (keepdims)."""
    m = CAReduce("maximum", axes)(x)
    m = DimShuffle(m.type.ndim, _keep_order(x.type.ndim, axes))(m)
    zero = constant(np.zeros((1,) * m.type.ndim, dtype=m.type.dtype))
    shift = dgm.where(dgm.isfinite(m), m, zero)
    return x - shift, shift


def _keep_order(ndim, axes):
    it = iter(range(ndim - len(axes)))
    return tuple("x" if a in axes else next(it) for a in range(ndim))


def _drop(v, axes):
    """`v` (keepdims shape) without the reduced axes."""
    return DimShuffle(v.type.ndim, tuple(a for a in range(v.type.ndim) if a not in axes))(v)


def _logsumexp(x, red):
    """log(sum(exp(x))) -> logsumexp with a max shift (exact where it matters, finite where naive overflows)."""
    if _is_shifted(x) or any(x.type.shape[a] == 0 for a in red.axis):
        return None
    y, shift = _max_shift(x, red.axis)
    return dgm.log(CAReduce("add", red.axis)(dgm.exp(y))) + _drop(shift, red.axis)


def _logsumexp_keepdims(x, red, ds):
    """log(sum(exp(x), keepdims=True)) -> the same with a max shift."""
    if not _is_keepdims(ds, red, x.type.ndim):
        return None
    lse = _logsumexp(x, red)
    return None if lse is None else DimShuffle(lse.type.ndim, ds.order)(lse)


def _softmax(x, red, ds):
    """exp(x) / sum(exp(x), keepdims) -> the same with x shifted by its max."""
    if _is_shifted(x) or not _is_keepdims(ds, red, x.type.ndim) or any(x.type.shape[a] == 0 for a in red.axis):
        return None
    y, _ = _max_shift(x, red.axis)
    e = dgm.exp(y)
    return e / DimShuffle(x.type.ndim - len(red.axis), ds.order)(CAReduce("add", red.axis)(e))


def _log_softmax(x, red, ds):
    """log(exp(x) / sum(exp(x), keepdims)) -> x - logsumexp(x) (with keepdims)."""
    if not _is_keepdims(ds, red, x.type.ndim) or any(x.type.shape[a] == 0 for a in red.axis):
        return None
    if _is_shifted(x):  # max(x) == 0: log(sum(exp(x))) is in [0, log n]
        lse = dgm.log(CAReduce("add", red.axis)(dgm.exp(x)))
    else:
        lse = _logsumexp(x, red)
    return x - DimShuffle(lse.type.ndim, ds.order)(lse)


STABILIZE = [
    rule("log1p", log(1 + x), lambda x: dgm.log1p(x)),  # log(1 + x) -> log1p(x)
    rule("expm1", exp(x) - 1, lambda x: dgm.expm1(x)),  # exp(x) - 1 -> expm1(x)
    rule("log_exp", log(exp(x)), lambda x: x),  # log(exp(x)) -> x
    rule("softplus", log1p(exp(x)), lambda x: dgm.softplus(x)),  # log1p(exp(x)) -> softplus(x)
    rule("log_sigmoid", log(sigmoid(x)), lambda x: -dgm.softplus(-x)),  # log(sigmoid(x)) -> -softplus(-x)
    rule("log1m_sigmoid", log(1 - sigmoid(x)), lambda x: -dgm.softplus(x)),  # log(1 - sigmoid(x)) -> -softplus(x)
    rule("log1p_neg_sigmoid", log1p(-sigmoid(x)), lambda x: -dgm.softplus(x)),  # log1p(-sigmoid(x)) -> -softplus(x)
    rule("logsumexp", log(_sum_of(exp(x))), _logsumexp),  # log(sum(exp(x))) -> m + log(sum(exp(x - m)))
    rule("logsumexp_keepdims", log(_keepdims_of(_sum_of(exp(x)))), _logsumexp_keepdims),  # same, keepdims
    rule("softmax", exp(x) / _keepdims_of(_sum_of(exp(x))), _softmax),  # exp(x)/sum(exp(x)) -> shifted
    rule("log_softmax", log(exp(x) / _keepdims_of(_sum_of(exp(x)))), _log_softmax),  # -> x - logsumexp(x)
]
for _r in STABILIZE:
    _r.tags |= {"stabilize"}
del _r
