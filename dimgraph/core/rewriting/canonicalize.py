"""canonicalize and specialize: simpler equivalent graphs, exact to the bit (NaN, inf, dtypes).

Rules that could change a value are guarded: `x + 0 -> x` only where the zero
cannot flip the sign of a zero result (ints, or the constant -0.0), `x / x -> 1`
only for constants known nonzero and finite. Ops that may fail at run time
(reshape, broadcast_to) are removed only when their check is proved statically;
an `Assert` loses only conditions that are constant and true, and is never folded.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core import math as dgm
from dimgraph.core.basic import constant
from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.extra import Assert, CumOp
from dimgraph.core.fused import CAReduceElemwise
from dimgraph.core.graph import Constant, Op
from dimgraph.core.join import Join
from dimgraph.core.reduce import Argmax, CAReduce
from dimgraph.core.rewriting.engine import node_rewriter
from dimgraph.core.rewriting.pattern import Pat, const_data, rule
from dimgraph.core.scalar import Cast
from dimgraph.core.shape import Shape, ShapeI, shape_of, to_static
from dimgraph.core.shape_ops import Alloc, Reshape, full_like
from dimgraph.core.subtensor import AdvancedIncSubtensor, AdvancedSubtensor, IncSubtensor, Subtensor

# A folded constant may hold this many elements, or as many as its largest constant input
# (so folding never turns a small constant and a shape into a large array stored in the graph).
CONSTANT_FOLD_LIMIT = 10_000

# Ops whose value depends only on their inputs and that raise only on inputs that are invalid anyway.
FOLDABLE = (Elemwise, DimShuffle, Reshape, CAReduce, Alloc, Shape, ShapeI, Argmax, CAReduceElemwise)
FOLDABLE += (Subtensor, AdvancedSubtensor, Join, CumOp)

x = Pat.var("x")


def _is_float(v):
    return np.dtype(v.type.dtype).kind in "fc"


def _is_zero(v):
    data = const_data(v)
    return data is not None and data.size > 0 and data.dtype.kind in "biuf" and bool(np.all(data == 0))


z = Pat.var("z", where=_is_zero)


def _signless_zero(x, z):
    """x + z -> x only where it is bit-exact: any zero for ints, only -0.0 for floats (0.0 + -0.0 is +0.0)."""
    if _is_float(x) or const_data(z).dtype.kind in "fc":
        return x if bool(np.all(np.signbit(const_data(z)))) else None
    return x


def _nonzero_finite_constant(v):
    data = const_data(v)
    return (
        data is not None
        and data.size > 0
        and data.dtype.kind in "iuf"
        and bool(np.all(np.isfinite(data) & (data != 0)))
    )


CANON_RULES = [
    rule("mul_one", x * 1, lambda x: x),  # x * 1 -> x
    rule("div_one", x / 1, lambda x: x),  # x / 1 -> x
    rule("sub_zero", x - 0, lambda x: x),  # x - 0 -> x (also for x = -0.0)
    rule("add_zero", x + z, _signless_zero),  # x + 0 -> x, unless 0.0 could turn -0.0 into +0.0
    rule("pow_one", x**1, lambda x: x),  # x ** 1 -> x
    rule("neg_neg", -(-x), lambda x: x),  # -(-x) -> x (also for wrapping ints)
    rule("mul_self", x * x, lambda x: dgm.square(x) if x.type.dtype != "bool" else None),  # x * x -> sqr(x)
    rule(  # x / x -> 1 only for constants known nonzero and finite (0/0, inf/inf are NaN)
        "div_self",
        x / x,
        lambda x, out: full_like(x, 1, dtype=out.type.dtype) if _nonzero_finite_constant(x) else None,
    ),
]


@node_rewriter([Op], tags=("canonicalize",))
def constant_fold(fgraph, node):
    """An op on constants -> its value, unless that value is large (see CONSTANT_FOLD_LIMIT)."""
    if not all(isinstance(i, Constant) for i in node.inputs) or not _foldable(node.op):
        return None
    try:
        values = node.op.perform(node, [i.data for i in node.inputs])
    except Exception:  # noqa: BLE001 - a failing op stays in the graph and fails at run time
        return None
    limit = max([CONSTANT_FOLD_LIMIT] + [np.size(i.data) for i in node.inputs])
    if any(np.size(v) > limit for v in values):
        return None
    return [constant(v, dtype=o.type.dtype) for v, o in zip(values, node.outputs)]


def _foldable(op):
    """Pure ops only: never an Assert (its failure must happen at run time) or an op with state."""
    return isinstance(op, FOLDABLE) or bool(getattr(op, "constant_foldable", False))


@node_rewriter([DimShuffle], tags=("canonicalize",))
def dimshuffle_chain(fgraph, node):
    """DimShuffle(DimShuffle(x)) -> one DimShuffle; an identity DimShuffle -> x."""
    op, (inp,) = node.op, node.inputs
    if op.order == tuple(range(op.input_ndim)):
        return inp
    inner = inp.owner
    if inner is None or not isinstance(inner.op, DimShuffle):
        return None
    order = tuple("x" if o == "x" or inner.op.order[o] == "x" else inner.op.order[o] for o in op.order)
    src = inner.inputs[0]
    if order == tuple(range(src.type.ndim)):
        return src
    return DimShuffle(src.type.ndim, order)(src)


def _same_entry(entry, var, axis):
    """Shape input `entry` is the length of `var`'s `axis` (statically, or as ShapeI(axis)(var))."""
    known = to_static(entry)
    if known is not None:
        return var.type.shape[axis] == known
    owner = entry.owner
    return owner is not None and isinstance(owner.op, ShapeI) and owner.op.i == axis and owner.inputs[0] is var


@node_rewriter([Reshape], tags=("canonicalize",))
def reshape_chain(fgraph, node):
    """reshape(reshape(x, s1), s2) -> reshape(x, s2), when the inner reshape is proved valid statically."""
    inner = node.inputs[0].owner
    if inner is None or not isinstance(inner.op, Reshape):
        return None
    src = inner.inputs[0]
    if None in src.type.shape or any(to_static(s) is None or to_static(s) == -1 for s in inner.inputs[1:]):
        return None  # the inner reshape's run-time check could fail: keep it
    return Reshape(node.op.ndim)(src, *node.inputs[1:])


@node_rewriter([Reshape], tags=("canonicalize", "useless"))
def reshape_same(fgraph, node):
    """reshape(x, x.shape) -> x."""
    src, *shape = node.inputs
    if src.type.ndim == len(shape) and all(_same_entry(s, src, a) for a, s in enumerate(shape)):
        return src
    return None


@node_rewriter([Alloc], tags=("canonicalize", "useless"))
def alloc_same(fgraph, node):
    """broadcast_to(x, x.shape) -> x (the result is a copy only for the caller's sake; values are equal)."""
    src, *shape = node.inputs
    if src.type.ndim == len(shape) and all(_same_entry(s, src, a) for a, s in enumerate(shape)):
        return src
    return None


@node_rewriter([Elemwise], tags=("canonicalize",))
def elemwise_of_alloc(fgraph, node):
    """Elemwise(.., broadcast_to(v, shape), ..) -> Elemwise(.., v, ..) when the other inputs fix that shape.

    Gradients of sums are broadcasts of one value (`broadcast_to(g, x.shape) * y`);
    letting the kernel broadcast it avoids a full-size array per call.
    """
    inputs = list(node.inputs)
    changed = False
    for k, inp in enumerate(node.inputs):
        alloc = inp.owner
        if alloc is None or not isinstance(alloc.op, Alloc):
            continue
        value, *shape = alloc.inputs
        others = [v for j, v in enumerate(inputs) if j != k]
        pad = len(shape) - value.type.ndim
        ok = True
        for a, entry in enumerate(shape):
            size = 1 if a < pad else value.type.shape[a - pad]
            if a >= pad and _same_entry(entry, value, a - pad):
                continue
            if size == 1 and any(_same_length(entry, o, a) for o in others):
                continue
            ok = False
            break
        if ok:
            inputs[k] = dgm.pad_ndim(value, len(shape)) if pad else value
            changed = True
    if not changed:
        return _lift_alloc(node)
    new = Elemwise(node.op.scalar_op)(*inputs)
    new = new if isinstance(new, list) else [new]
    if any(n.type != o.type for n, o in zip(new, node.outputs)):
        return None
    return new if len(new) > 1 else new[0]


def _same_length(entry, var, axis):
    """Like `_same_entry`, also seeing through `var`'s own shape graph (e.g. the length of y - m is y's)."""
    if _same_entry(entry, var, axis):
        return True
    length = shape_of(var)[axis]
    if isinstance(length, int) or entry.owner is None or length.owner is None:
        return False
    a, b = entry.owner, length.owner
    return isinstance(a.op, ShapeI) and a.op == b.op and a.inputs[0] is b.inputs[0]


def _lift_alloc(node):
    """Elemwise(broadcast_to(v, shape), scalars) -> broadcast_to(Elemwise(v, scalars), shape).

    Moves the broadcast toward a full-size operand, where `elemwise_of_alloc` drops it.
    """
    allocs = [i for i in node.inputs if i.owner is not None and isinstance(i.owner.op, Alloc)]
    if len(allocs) != 1 or len(node.outputs) != 1:
        return None
    if any(i is not allocs[0] and any(s != 1 for s in i.type.shape) for i in node.inputs):
        return None
    value, *shape = allocs[0].owner.inputs
    ndim = len(shape)
    operands = [dgm.pad_ndim(value, ndim) if i is allocs[0] else i for i in node.inputs]
    inner = Elemwise(node.op.scalar_op)(*operands)
    new = Alloc()(inner, *shape)
    return new if new.type == node.outputs[0].type else None


@node_rewriter([Elemwise], tags=("canonicalize", "useless"))
def cast_same(fgraph, node):
    """cast(x, x.dtype) -> x."""
    if isinstance(node.op.scalar_op, Cast) and node.inputs[0].type.dtype == node.op.scalar_op.dtype:
        return node.inputs[0]
    return None


@node_rewriter([ShapeI, Shape], tags=("canonicalize", "shape"))
def shape_static(fgraph, node):
    """The length of an axis known statically -> an int64 constant."""
    src = node.inputs[0]
    if isinstance(node.op, ShapeI):
        size = src.type.shape[node.op.i]
        return None if size is None else constant(size, dtype="int64")
    if None in src.type.shape:
        return None
    return constant(np.asarray(src.type.shape, dtype=np.int64), dtype="int64")


@node_rewriter([CAReduce], tags=("canonicalize",))
def reduce_of_dimshuffle(fgraph, node):
    """reduce(DimShuffle(x)) -> DimShuffle(reduce(x)): reduce the array as stored, permute the small result."""
    ds = node.inputs[0].owner
    if ds is None or not isinstance(ds.op, DimShuffle):
        return None
    order, axes = ds.op.order, set(node.op.axis)
    src = ds.inputs[0]
    red_axes = tuple(sorted({order[a] for a in axes if order[a] != "x"} | set(ds.op.dropped)))
    kept = [a for a in range(src.type.ndim) if a not in red_axes]
    reduced = CAReduce(node.op.scalar_op, red_axes)(src) if red_axes else src
    if reduced.type.dtype != node.outputs[0].type.dtype:
        return None  # e.g. sum of int8 over only broadcast axes: the dtype widening needs the reduce
    new_order = tuple("x" if order[k] == "x" else kept.index(order[k]) for k in range(len(order)) if k not in axes)
    if new_order == tuple(range(reduced.type.ndim)):
        return reduced
    return DimShuffle(reduced.type.ndim, new_order)(reduced)


@node_rewriter([CAReduce], tags=("canonicalize",))
def reduce_of_alloc(fgraph, node):
    """sum(broadcast_to(v, shape)) -> sum(v) * (the broadcast lengths); max/min -> max/min(v).

    The gradient of a sum of a scalar term is such a broadcast: this keeps it from
    allocating (and summing) a full-size array per call. The broadcast checks at run
    time that `v` fits `shape` and that no length is negative, so it is dropped only
    where that is proved: each axis `v` does not stretch is `v`'s own length, each
    stretched one is static or the length of an array. A sum over a stretched length
    of 0 is 0 (not `v * 0`, NaN for an infinite `v`); max/min need static lengths (of
    zero elements they fail).
    """
    alloc = node.inputs[0].owner
    if alloc is None or not isinstance(alloc.op, Alloc) or node.op.scalar_op not in ("add", "maximum", "minimum"):
        return None
    value, *shape = alloc.inputs
    padded = dgm.pad_ndim(value, len(shape))
    pad = len(shape) - value.type.ndim
    stretched = [a for a in node.op.axis if padded.type.shape[a] == 1 and to_static(shape[a]) != 1]
    if not stretched or not all(_is_length(shape[a]) for a in stretched):
        return None
    if not all(
        _same_entry(shape[a], value, a - pad) if a >= pad else to_static(shape[a]) == 1
        for a in range(len(shape))
        if a not in stretched
    ):
        return None  # may broadcast (or fail) at run time: keep the explicit array
    static = all(to_static(shape[a]) for a in stretched)  # every stretched length known and not 0
    if node.op.scalar_op != "add" and not static:
        return None
    out = CAReduce(node.op.scalar_op, node.op.axis)(padded)
    if node.op.scalar_op == "add":
        dtype = out.type.dtype
        n = None
        for a in stretched:
            length = dgm.cast(shape[a], dtype)
            n = length if n is None else n * length
        out = out * n if static else dgm.where(dgm.eq(n, 0), constant(0, dtype=dtype), out * n)
    return out if out.type == node.outputs[0].type else None


def _is_length(entry):
    """A broadcast length that cannot be negative: a static one, or the length of an array."""
    return to_static(entry) is not None or (entry.owner is not None and isinstance(entry.owner.op, ShapeI))


@node_rewriter([CAReduce], tags=("canonicalize", "useless"))
def reduce_no_axes(fgraph, node):
    """A reduction over no axes -> its input (when the dtype is unchanged)."""
    if node.op.axis == () and node.inputs[0].type.dtype == node.outputs[0].type.dtype:
        return node.inputs[0]
    return None


@node_rewriter([Subtensor], tags=("canonicalize", "useless"))
def full_slice(fgraph, node):
    """x[:, ::1, 0::] -> x: basic indexing that keeps every element in order."""
    if len(node.inputs) == 1 and all(_is_full_slice(e) for e in node.op.index):
        return node.inputs[0]
    return None


def _is_full_slice(entry):
    return (
        isinstance(entry, tuple)
        and entry[0] == "slice"
        and entry[1] in (None, 0)
        and entry[2] is None
        and entry[3] in (None, 1)
    )


@node_rewriter([Join], tags=("canonicalize", "useless"))
def join_one(fgraph, node):
    """concatenate([x]) -> x."""
    if len(node.inputs) == 1 and node.inputs[0].type.dtype == node.outputs[0].type.dtype:
        return node.inputs[0]
    return None


@node_rewriter([Assert], tags=("canonicalize",))
def assert_proved(fgraph, node):
    """assert_op(x, True, ...) -> x: only conditions that are constants and true are dropped."""
    conds = node.inputs[1:]
    keep = [c for c in conds if not (isinstance(c, Constant) and bool(np.all(c.data)))]
    if len(keep) == len(conds):
        return None
    return Assert(node.op.message, node.op.error)(node.inputs[0], *keep) if keep else node.inputs[0]


@node_rewriter([Elemwise], tags=("canonicalize",))
def eq_self(fgraph, node):
    """x == x -> True on integers and bools (no NaN there): e.g. a gradient's length check against its own input."""
    if getattr(node.op.scalar_op, "name", None) != "eq" or node.inputs[0] is not node.inputs[1]:
        return None
    x = node.inputs[0]
    if np.dtype(x.type.dtype).kind not in "biu":
        return None
    return constant(np.True_) if x.type.ndim == 0 else full_like(x, True, dtype="bool")


def _scatter_into_zeros(fgraph, v):
    """(op, value, index inputs) when `v` is `inc_subtensor(zeros, value, ...)` read by one node only: the
    gradient of one selection, a buffer of the whole shape for a few entries."""
    node = v.owner
    if node is None or type(node.op) not in (AdvancedIncSubtensor, IncSubtensor) or node.op.mode != "inc":
        return None
    base = node.inputs[0].owner
    if base is None or not isinstance(base.op, Alloc) or not _is_zero(base.inputs[0]):
        return None
    readers = [c for c, _ in fgraph.clients.get(v, []) if c == "output" or not isinstance(c.op, (Shape, ShapeI))]
    if len(readers) != 1:
        return None
    return node.op, node.inputs[1], node.inputs[2:]


@node_rewriter([Elemwise], tags=("canonicalize",))
def scatter_into_sum(fgraph, node):
    """inc_subtensor(zeros, g, idx) + y -> inc_subtensor(y, g, idx), y of the sum's own type.

    The gradient of a variable read by several `sel`/`isel` is a sum of scatters, each into zeros
    of the whole shape; scattered into the sum of the others instead, the selections share one
    buffer (a chain of them: one allocation, the zeros the first one scatters into).
    """
    if getattr(node.op.scalar_op, "name", None) != "add" or len(node.inputs) != 2:
        return None
    out = node.outputs[0]
    for k in (0, 1):
        found = _scatter_into_zeros(fgraph, node.inputs[k])
        other = node.inputs[1 - k]
        if found is None or other.type != out.type:
            continue
        op, value, idx = found
        return op(other, value, *idx)
    return None


CANONICALIZE = [
    constant_fold,
    *CANON_RULES,
    dimshuffle_chain,
    reshape_chain,
    reshape_same,
    alloc_same,
    elemwise_of_alloc,
    cast_same,
    shape_static,
    reduce_of_dimshuffle,
    reduce_of_alloc,
    scatter_into_sum,
    reduce_no_axes,
    full_slice,
    join_one,
    eq_self,
    assert_proved,
]

SPECIALIZE = [
    rule("pow_two", x**2, lambda x: dgm.square(x)),  # x ** 2 -> sqr(x) (pow is correctly rounded here)
    rule("pow_minus_one", x**-1, lambda x: dgm.reciprocal(x) if _is_float(x) else None),  # x ** -1 -> 1 / x
    rule("mul_minus_one", x * -1, lambda x: neg_of(x)),  # x * -1 -> -x
]


def neg_of(v):
    return dgm.neg(v) if v.type.dtype != "bool" else None


for _r in CANON_RULES:
    _r.tags |= {"canonicalize"}
for _r in SPECIALIZE:
    _r.tags |= {"specialize"}
del _r
