"""MLIR emitters of indexing (`dimgraph.core.subtensor`).

Basic selections are `tensor.extract_slice` (positive steps; an int position
drops its axis by a rank-reducing slice) and their set/inc is
`tensor.insert_slice`. A gather `x[i, :]` is a `linalg.generic` whose body reads
x with `tensor.extract` at the index arrays' values; its gradient, the
scatter-add `inc(x[i, :], v)`, is `iree_linalg_ext.scatter` (repeated indices
accumulate). Negative positions wrap as NumPy's do and an out-of-bounds one is
an IndexError (a `cf.assert` on a reduction over the index, before the gather runs).
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends.mlir.elemwise import copy
from dimgraph.backends.mlir.emitter import Value, element, generic, tensor_type
from dimgraph.backends.mlir.registry import MlirUnsupported, mlir_impl
from dimgraph.backends.mlir.shape import reshape
from dimgraph.core.broadcast import mismatch_message
from dimgraph.core.subtensor import (
    ARRAY,
    NEWAXIS,
    SYMBOLIC,
    AdvancedIncSubtensor,
    AdvancedSubtensor,
    IncSubtensor,
    Subtensor,
)


def _position(e, p, n, axis):
    """A position (int or SSA index) on an axis of size `n`, wrapped when negative, bounds-checked."""
    if isinstance(p, int) and isinstance(n, int):
        if not -n <= p < n:
            raise IndexError(f"index {p} is out of bounds for axis {axis} with size {n}")
        return p + n if p < 0 else p
    wrapped = e.iselect(e.icmp("slt", p, 0), e.iadd(p, n), p)
    low = e.icmp("slt", wrapped, 0)
    high = e.icmp("sge", wrapped, n)
    bad = low if high is False else high if low is False else e.op(f"arith.ori {low}, {high} : i1", "p")
    e.fail_if(bad, IndexError, f"index out of bounds for axis {axis}")
    return wrapped


def _bound(e, v, n, default):
    """A slice bound normalised as `slice.indices` does for a positive step."""
    if v is None:
        return default
    wrapped = e.imax(e.iadd(v, n), 0)
    return e.iselect(e.icmp("slt", v, 0), wrapped, e.imin(v, n))


def _basic_selection(op, e, x: Value, scalars):
    """(offsets, sizes, strides over x's axes; the selection's dims without and with the NEWAXIS entries)."""
    scalars = list(scalars)

    def part(p):
        return e.index_of(scalars.pop(0)) if p == SYMBOLIC else p

    offsets, sizes, strides, kept, with_new = [], [], [], [], []
    axis = 0
    for entry in op.index:
        if entry == NEWAXIS:
            with_new.append(1)
            continue
        n = x.dims[axis]
        if isinstance(entry, tuple):
            _, start, stop, step = entry
            start, stop, step = part(start), part(stop), part(step)
            step = 1 if step is None else step
            if not isinstance(step, int) or step <= 0:
                raise MlirUnsupported(
                    f"mlir backend: {op} has a step that is not a positive constant ({step}); only such slices are supported"
                )
            lo, hi = _bound(e, start, n, 0), _bound(e, stop, n, n)
            size = e.imax(e.iceildiv(e.isub(hi, lo), step), 0)
            lo = e.imin(lo, n)
            offsets.append(lo), sizes.append(size), strides.append(step), kept.append(size), with_new.append(size)
        else:
            offsets.append(_position(e, part(entry), n, axis)), sizes.append(1), strides.append(1)
        axis += 1
    return offsets, sizes, strides, kept, with_new


def _slice_text(offsets, sizes, strides):
    return f"[{', '.join(map(str, offsets))}] [{', '.join(map(str, sizes))}] [{', '.join(map(str, strides))}]"


@mlir_impl.register(Subtensor)
def _subtensor(op, node, e, ins):
    x = ins[0]
    offsets, sizes, strides, kept, with_new = _basic_selection(op, e, x, ins[1:])
    t = tensor_type(kept, x.dtype)
    sel = Value(
        e.op(f"tensor.extract_slice {x.name}{_slice_text(offsets, sizes, strides)} : {x.type} to {t}", "sl"),
        x.dtype,
        tuple(kept),
    )
    return [reshape(e, sel, with_new) if len(with_new) != len(kept) else sel]


def _broadcast_value(e, op, v: Value, v_static, dims) -> Value:
    """`v` broadcast (right-aligned, static size-1 axes stretched) to `dims`."""
    lead = len(dims) - v.ndim
    if lead < 0:
        raise MlirUnsupported("mlir backend: a set/inc value with more axes than its selection")
    exprs = []
    for j, s in enumerate(v_static):
        if s == 1:
            exprs.append(0)
        else:
            exprs.append(f"d{lead + j}")
            e.same_size(
                v.dims[j],
                dims[lead + j],
                mismatch_message(str(op), f"axis {j}", where="between the value and the selection"),
            )
    return copy(e, v, dims, exprs)


def _add(e, a: Value, b: Value) -> Value:
    rank = a.ndim
    ident = [f"d{k}" for k in range(rank)]
    t = element(a.dtype)
    op = "addf" if t.startswith("f") else ("ori" if t == "i1" else "addi")
    init = e.empty(a.dims, a.dtype)
    (name,) = generic(
        e,
        rank,
        [(a, ident), (b, ident)],
        [(init, a.type, ident)],
        lambda g, x, o: [g.op(f"arith.{op} {x[0]}, {x[1]} : {t}")],
        stem="add",
    )
    return Value(name, a.dtype, a.dims)


@mlir_impl.register(IncSubtensor)
def _inc_subtensor(op, node, e, ins):
    x, v = ins[0], ins[1]
    offsets, sizes, strides, kept, with_new = _basic_selection(op, e, x, ins[2:])
    v = _broadcast_value(e, op, v, node.inputs[1].type.shape, with_new)
    if len(with_new) != len(kept):
        v = reshape(e, v, kept)
    text = _slice_text(offsets, sizes, strides)
    sel_t = tensor_type(kept, x.dtype)
    if op.mode == "inc":
        current = Value(e.op(f"tensor.extract_slice {x.name}{text} : {x.type} to {sel_t}", "sl"), x.dtype, tuple(kept))
        v = _add(e, current, e.cast(v, kept))
    out = e.op(f"tensor.insert_slice {e.cast(v, kept).name} into {x.name}{text} : {sel_t} into {x.type}", "ins")
    return [Value(out, x.dtype, x.dims)]


def _index_block(op, node, what):
    """(first axis of x the index arrays cover, their count): arrays must be adjacent, with no NEWAXIS."""
    if NEWAXIS in op.index:
        raise MlirUnsupported(f"mlir backend: {what} {op} with a new axis is not supported")
    arrays = [k for k, entry in enumerate(op.index) if entry == ARRAY]
    if arrays != list(range(arrays[0], arrays[0] + len(arrays))):
        raise MlirUnsupported(f"mlir backend: {what} {op}: index arrays that are not adjacent are not supported")
    for var in node.inputs[-len(arrays) :]:
        if np.dtype(var.type.dtype).kind not in "iu":
            raise MlirUnsupported(
                f"mlir backend: {what} {op}: a {var.type.dtype} (boolean mask) index is not supported; only integer arrays"
            )
    return arrays[0], len(arrays)


def _broadcast_dims(e, idx_values, idx_vars):
    rank = max(v.ndim for v in idx_values)
    dims = []
    for ax in range(rank):
        sizes = []
        for v, var in zip(idx_values, idx_vars):
            j = ax - (rank - v.ndim)
            if j >= 0 and var.type.shape[j] != 1:
                sizes.append(v.dims[j])
        for other in sizes[1:]:
            e.same_size(sizes[0], other, mismatch_message("advanced indexing", f"axis {ax} of the index arrays"))
        dims.append(sizes[0] if sizes else 1)
    return dims


def _check_bounds(e, idx: Value, n, axis):
    """IndexError (a `cf.assert`, so the gather never runs) when an entry of `idx` is outside [-n, n)."""
    rank = idx.ndim
    t = element(idx.dtype)
    init = e.empty((), "bool")
    filled = e.op(f"linalg.fill ins({e.const(False, 'i1')} : i1) outs({init} : tensor<i1>) -> tensor<i1>", "f")
    bound = e.op(f"arith.index_cast {e.index(n)} : index to {t}", "s")
    neg = e.op(f"arith.subi {e.const(0, t)}, {bound} : {t}", "s")

    def body(b, a, o):
        low = b.op(f"arith.cmpi slt, {a[0]}, {neg} : {t}")
        high = b.op(f"arith.cmpi sge, {a[0]}, {bound} : {t}")
        bad = b.op(f"arith.ori {low}, {high} : i1")
        return [b.op(f"arith.ori {o[0]}, {bad} : i1")]

    (flag,) = generic(
        e,
        rank,
        [(idx, [f"d{k}" for k in range(rank)])],
        [(filled, "tensor<i1>", [])],
        body,
        ["reduction"] * rank,
        stem="oob",
    )
    e.fail_if(e.scalar(Value(flag, "bool", ())), IndexError, f"index out of bounds for axis {axis} with size {n}")


def _wrapped(b, raw, t, n_index):
    """Inside a body: the index element `raw` (of int type t) as a wrapped `index`."""
    i = b.op(f"arith.index_cast {raw} : {t} to index")
    neg = b.op(f"arith.cmpi slt, {i}, {b.const(0, 'index')} : index")
    return b.op(f"arith.select {neg}, {b.op(f'arith.addi {i}, {n_index} : index')}, {i} : index")


@mlir_impl.register(AdvancedSubtensor)
def _advanced_subtensor(op, node, e, ins):
    x, idx = ins[0], list(ins[1:])
    first, count = _index_block(op, node, "gather")
    if any(entry != ARRAY and entry != ("slice", None, None, None) for entry in op.index):
        raise MlirUnsupported(
            f"mlir backend: gather {op} mixes index arrays with partial slices; only full slices are supported beside them"
        )
    idx_vars = node.inputs[1:]
    block = _broadcast_dims(e, idx, idx_vars)
    for k, v in enumerate(idx):
        _check_bounds(e, v, x.dims[first + k], first + k)
    dims = list(x.dims[:first]) + block + list(x.dims[first + count :])
    rank, nb = len(dims), len(block)
    operands = []
    for v, var in zip(idx, idx_vars):
        lead = first + nb - v.ndim
        operands.append((v, [0 if s == 1 else f"d{lead + j}" for j, s in enumerate(var.type.shape)]))
    init = e.empty(dims, x.dtype)
    sizes = [e.index(d) for d in x.dims]

    def body(b, a, o):
        coords = []
        for ax in range(x.ndim):
            if first <= ax < first + count:
                k = ax - first
                coords.append(_wrapped(b, a[k], element(idx[k].dtype), sizes[ax]))
            else:
                out_axis = ax if ax < first else ax - count + nb
                coords.append(b.op(f"linalg.index {out_axis} : index"))
        return [b.op(f"tensor.extract {x.name}[{', '.join(coords)}] : {x.type}")]

    (name,) = generic(
        e, rank, operands, [(init, tensor_type(dims, x.dtype), [f"d{k}" for k in range(rank)])], body, stem="gather"
    )
    return [Value(name, x.dtype, tuple(dims))]


@mlir_impl.register(AdvancedIncSubtensor)
def _advanced_inc_subtensor(op, node, e, ins):
    x, v, idx = ins[0], ins[1], list(ins[2:])
    first, count = _index_block(op, node, "scatter")
    if first != 0 or count != 1 or any(entry != ("slice", None, None, None) for entry in op.index[1:]):
        raise MlirUnsupported(
            f"mlir backend: scatter {op}: only one index array on the first axis (then full slices) is supported"
        )
    (i,) = idx
    _check_bounds(e, i, x.dims[0], 0)
    sel = list(i.dims) + list(x.dims[1:])
    v = _broadcast_value(e, op, v, node.inputs[1].type.shape, sel)
    n = e.product(i.dims)
    updates = reshape(e, v, [n] + list(x.dims[1:]))
    t = element(i.dtype)
    flat = reshape(e, i, [n])
    size = e.index(x.dims[0])
    init = e.empty((n, 1), i.dtype)

    def wrap(b, a, o):
        raw = a[0]
        neg = b.op(f"arith.cmpi slt, {raw}, {b.const(0, t)} : {t}")
        bound = b.op(f"arith.index_cast {size} : index to {t}")
        return [b.op(f"arith.select {neg}, {b.op(f'arith.addi {raw}, {bound} : {t}')}, {raw} : {t}")]

    (positions,) = generic(
        e, 2, [(flat, ["d0"])], [(init, tensor_type((n, 1), i.dtype), ["d0", "d1"])], wrap, stem="pos"
    )
    et = element(x.dtype)
    u, orig, res = e.fresh("u"), e.fresh("orig"), e.fresh("sc")
    if op.mode == "inc":
        combine = "arith.addf" if et.startswith("f") else ("arith.ori" if et == "i1" else "arith.addi")
        step = f"{res} = {combine} {u}, {orig} : {et}\n    iree_linalg_ext.yield {res} : {et}"
    else:
        step = f"iree_linalg_ext.yield {u} : {et}"
    out = e.fresh("scatter")
    pos_t = tensor_type((n, 1), i.dtype)
    e.emit(
        f"{out} = iree_linalg_ext.scatter dimension_map = [0] unique_indices(false) "
        f"ins({updates.name}, {positions} : {updates.type}, {pos_t}) outs({x.name} : {x.type}) {{\n"
        f"  ^bb0({u}: {et}, {orig}: {et}):\n    {step}\n}} -> {x.type}"
    )
    return [Value(out, x.dtype, x.dims)]
