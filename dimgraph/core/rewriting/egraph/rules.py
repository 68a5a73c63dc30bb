"""Rewrites that only make sense in an e-graph: each adds an alternative whose worth depends on the rest.

In the phase order each of these would need a guess ("does lifting pay here?");
in the e-graph both forms stay and the cost model picks:

- `lift_index`: `f(a, b)[idx] -> f(a[idx], b[idx])` for basic indexing, a boolean
  mask covering every axis, or one integer array on the first axis. It pays when
  the selection is smaller than the array and costs when a gather repeats rows
  (`mu[g]`: 100 groups, a million observations) or when it splits a fused kernel.
- `switch_as_masked_sets`: `where(c, a, b)` (bool `c`, everything of one shape)
  becomes `set(b, c, a[c])`, `set(a, ~c, b[~c])`, and `set(set(zeros, c, a[c]), ~c, b[~c])`;
  with `lift_index` the masked branch is evaluated only where it is selected.
- `sum_of_broadcast`: `sum(broadcast_to(v, shape), axes) -> sum(v, kept axes) * n`
  with `n` the product of the broadcast lengths (symbolic ones too), and 0 where
  a length is 0 (so an infinite `v` gives 0 as the written sum does, not NaN).

Every rule sees a whole class: it tries each e-node of the child class, not only the
one written. The values are equal to the written graph's, NaN positions included
(a masked branch computes exactly the elements it keeps), and so are the run-time
checks: a length the written graph checks is proved equal statically, or the new
term asserts it (an `AssertionError` where the written graph raised a `ShapeError`).
"""

from __future__ import annotations

import numpy as np

from dimgraph.core import math as dgm
from dimgraph.core.basic import constant
from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.extra import assert_op
from dimgraph.core.reduce import CAReduce
from dimgraph.core.rewriting.egraph.egraph import LEAF
from dimgraph.core.rewriting.egraph.translate import join, tracked
from dimgraph.core.scalar import Cast, ScalarOp
from dimgraph.core.shape import ShapeI, shape_of, to_static
from dimgraph.core.shape_ops import Alloc, zeros
from dimgraph.core.subtensor import (
    ARRAY,
    FULL_SLICE,
    NEWAXIS,
    SYMBOLIC,
    AdvancedIncSubtensor,
    AdvancedSubtensor,
    Subtensor,
)


def _plain_elemwise(op):
    return isinstance(op, Elemwise) and (type(op.scalar_op) is ScalarOp or isinstance(op.scalar_op, Cast))


# -- index lifting ----------------------------------------------------------------------------


def _basic_lifter(op, scalars, x_shape):
    """For `x[index]` (basic): a function giving the index of one Elemwise input, or None."""
    if NEWAXIS in op.index:
        return None

    def lift(t):
        entries, kept, it = [], [], iter(scalars)
        for axis, e in enumerate(op.index):
            parts = [next(it) for p in (e[1:] if isinstance(e, tuple) else [e]) if p == SYMBOLIC]
            if t.type.shape[axis] == 1 and x_shape[axis] != 1:  # t broadcasts along this axis
                entries.append(FULL_SLICE if isinstance(e, tuple) else 0)
            else:
                entries.append(e)
                kept.extend(parts)
        return Subtensor(tuple(entries))(t, *kept)

    return lift


def _mask_lifter(op, mask, x_shape):
    """For `x[mask]` with a boolean mask over every axis."""
    if op.index != (ARRAY,) or np.dtype(mask.type.dtype).kind != "b" or mask.type.ndim != len(x_shape):
        return None

    def lift(t):
        if all(s == 1 for s in t.type.shape) and any(x != 1 for x in x_shape):  # a broadcast scalar stays one element
            return DimShuffle(t.type.ndim, ("x",))(t)
        if any(s == 1 and x != 1 for s, x in zip(t.type.shape, x_shape)):
            return None  # partly broadcast: its masked elements are not t[mask]
        return AdvancedSubtensor(op.index)(t, mask)

    return lift


def _gather_lifter(op, idx, x_shape):
    """For `x[idx]` with one integer array on the first axis and full slices after it."""
    if op.index[0] != ARRAY or any(e != FULL_SLICE for e in op.index[1:]):
        return None
    if np.dtype(idx.type.dtype).kind not in "iu" or idx.type.ndim != 1:
        return None

    def lift(t):
        if t.type.shape[0] == 1 and x_shape[0] != 1:
            return t  # constant along the gathered axis: broadcasts against the gathered rows
        return AdvancedSubtensor(op.index)(t, idx)

    return lift


def same_length(a, b):
    """Shape entries `a` and `b` (ints or `shape_of`'s symbolic lengths) are provably equal."""
    sa, sb = to_static(a), to_static(b)
    if sa is not None or sb is not None:
        return sa == sb
    return (
        a.owner is not None
        and b.owner is not None
        and isinstance(a.owner.op, ShapeI)
        and a.owner.op == b.owner.op
        and a.owner.inputs[0] is b.owner.inputs[0]
    )


def unproved_lengths(operands, axes):
    """(axis, length, length) for each pair of operand lengths along `axes` not provably equal.

    An Elemwise checks at run time that its operands' lengths agree (except where one
    has static length 1); a lifted index selects from each operand alone (`a[1:]` and
    `b[1:]` are both empty when `a` has 1 element and `b` none, and NumPy lets an empty
    mask through whatever the length), so the rewritten term must check these pairs itself.
    """
    shapes = [shape_of(v) for v in operands]
    pairs = []
    for axis in axes:
        lengths = [sh[axis] for v, sh in zip(operands, shapes) if v.type.shape[axis] != 1]
        pairs += [(axis, lengths[0], n) for n in lengths[1:] if not same_length(lengths[0], n)]
    return pairs


def keep_length_checks(term, what, pairs):
    """`term`, asserting at run time the length equalities `pairs` (from `unproved_lengths`) that `what` checked."""
    if not pairs:
        return term
    conds = [dgm.eq(a, b) for _, a, b in pairs]
    axes = sorted({axis for axis, _, _ in pairs})
    return assert_op(term, *conds, msg=f"{what}: operands have different lengths along axes {axes}")


def lift_index(eg, cid, enode):
    """x[index] with x = f(a, b, ...) -> f(a[index'], b[index'], ...) (see the module docstring).

    The Elemwise's run-time check that its operands' lengths agree on the indexed
    axes is kept: proved statically, or asserted on the lifted term (`keep_length_checks`).
    """
    op = enode.op
    if not isinstance(op, (Subtensor, AdvancedSubtensor)):
        return []
    x_cid, *rest = enode.children
    x_type = eg[x_cid].type
    reps = [eg[c].rep for c in rest]
    if isinstance(op, Subtensor):
        lifter = _basic_lifter(op, reps, x_type.shape)
        checked = [axis for axis, e in enumerate(op.index) if e != FULL_SLICE]
    elif len(reps) == 1 and reps[0].type.dtype == "bool":
        lifter = _mask_lifter(op, reps[0], x_type.shape)
        checked = list(range(x_type.ndim))
    elif len(reps) == 1:
        lifter = _gather_lifter(op, reps[0], x_type.shape)
        checked = [0]
    else:
        lifter = None
    if lifter is None:
        return []
    out = []
    for inner in eg[x_cid].nodes:
        if inner.op == LEAF or not _plain_elemwise(inner.op):
            continue
        operands = [eg[c].rep for c in inner.children]
        lifted = [lifter(v) for v in operands]
        if any(v is None for v in lifted):
            continue
        try:
            out.append(keep_length_checks(inner.op(*lifted), str(inner.op), unproved_lengths(operands, checked)))
        except (TypeError, ValueError):
            continue
    return out


# -- switch as masked sets --------------------------------------------------------------------


def switch_as_masked_sets(eg, cid, enode):
    """where(c, a, b) -> a's and/or b's elements written through the mask (see the module docstring)."""
    op = enode.op
    if not (isinstance(op, Elemwise) and type(op.scalar_op) is ScalarOp and op.scalar_op.name == "where"):
        return []
    c, a, b = (eg[k].rep for k in enode.children)
    out_type = eg[cid].type
    if out_type.ndim == 0 or c.type.dtype != "bool" or not (a.type.dtype == b.type.dtype == out_type.dtype):
        return []
    if not all(v.type.shape == out_type.shape for v in (c, a, b)) or 1 in out_type.shape:
        return []
    mask = (ARRAY,)
    not_c = dgm.invert(c)
    take, put = AdvancedSubtensor(mask), AdvancedIncSubtensor(mask, "set")
    shape = [s if s is not None else ShapeI(k)(c) for k, s in enumerate(out_type.shape)]
    empty = zeros(shape, dtype=out_type.dtype)
    pairs = unproved_lengths([c, a, b], range(out_type.ndim))
    terms = [
        put(b, take(a, c), c),  # b everywhere, a where c
        put(a, take(b, not_c), not_c),  # a everywhere, b where not c
        put(put(empty, take(a, c), c), take(b, not_c), not_c),  # each branch only where it is kept
    ]
    return [keep_length_checks(t, "where", pairs) for t in terms]


# -- sum of a broadcast -----------------------------------------------------------------------


def sum_of_broadcast(eg, cid, enode):
    """sum(broadcast_to(v, shape), axes) -> sum(v, kept axes) * n, 0 where n is 0.

    The broadcast checks at run time that `v` fits `shape` and that no length is
    negative; the rule applies only where both are proved: every axis `v` does not
    stretch has `v`'s own length (`same_length`), and every stretched length is
    static or the length of some array (a `ShapeI`).
    """
    op = enode.op
    if not (isinstance(op, CAReduce) and op.scalar_op == "add"):
        return []
    out = []
    for inner in eg[enode.children[0]].nodes:
        if not isinstance(inner.op, Alloc):
            continue
        value, *shape = (eg[k].rep for k in inner.children)
        padded = dgm.pad_ndim(value, len(shape))
        lengths = shape_of(padded)
        stretched = [a for a in op.axis if padded.type.shape[a] == 1 and to_static(shape[a]) != 1]
        if not stretched or not all(_non_negative(shape[a]) for a in stretched):
            continue
        if not all(same_length(shape[a], lengths[a]) for a in range(len(shape)) if a not in stretched):
            continue
        total = CAReduce("add", op.axis)(padded)
        dtype = total.type.dtype
        n = None
        for a in stretched:
            length = dgm.cast(shape[a], dtype)
            n = length if n is None else n * length
        scaled = total * n
        if not all(to_static(shape[a]) for a in stretched):  # a length may be 0: the written sum is 0
            scaled = dgm.where(dgm.eq(n, 0), constant(0, dtype=dtype), scaled)
        out.append(scaled)
    return out


def _non_negative(entry):
    """A broadcast length that cannot be negative: a static one, or the length of an array."""
    return to_static(entry) is not None or (entry.owner is not None and isinstance(entry.owner.op, ShapeI))


class ERule:
    """A rewrite over one e-node that may read whole child classes; `fn(eg, cid, enode)` lists equal terms."""

    def __init__(self, name, fn, tracks):
        self.name = name
        self.fn = fn
        self.tracks = tracks
        self.done = set()

    def run(self, eg, stats):
        changed = False
        for cid, enode in tracked(eg, self.tracks):
            key = (eg.canonical(enode), len(eg[enode.children[0]].nodes) if enode.children else 0)
            if key in self.done:
                continue
            self.done.add(key)
            try:
                terms = self.fn(eg, eg.find(cid), enode)
            except (TypeError, ValueError):
                continue
            for term in terms:
                changed |= join(eg, cid, term, self.name, stats)
        return changed


EGRAPH_RULES = [
    ERule("lift_index", lift_index, (Subtensor, AdvancedSubtensor)),
    ERule("switch_as_masked_sets", switch_as_masked_sets, (Elemwise,)),
    ERule("sum_of_broadcast", sum_of_broadcast, (CAReduce,)),
]
