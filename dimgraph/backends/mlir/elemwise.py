"""MLIR emitters of elementwise loops and reductions: Elemwise (one `linalg.generic` per fused Composite),
DimShuffle (an affine map), CAReduce and CAReduceElemwise (a generic with reduction iterators).

Broadcasting follows the graph's static types, as every backend: an axis of
static size 1 broadcasts (its map reads index 0), other axes must agree at run
time (a `ShapeError` from a `cf.assert` where a size is dynamic).
"""

from __future__ import annotations

import math

import numpy as np

from dimgraph.backends.mlir.emitter import (
    Value,
    broadcast_exprs,
    element,
    generic,
    tensor_type,
)
from dimgraph.backends.mlir.registry import MlirUnsupported, mlir_impl
from dimgraph.backends.mlir.scalar import (
    Floats,
    check_composite,
    convert,
    print_composite,
    scalar_step,
)
from dimgraph.core.broadcast import mismatch_message
from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.fused import CAReduceElemwise
from dimgraph.core.reduce import CAReduce
from dimgraph.core.scalar import Composite


def loop_dims(e, node_inputs, ins, what):
    """The dims of an elementwise loop over `ins` (the first non-broadcast input's size per axis), checked."""
    rank = ins[0].ndim if ins else 0
    dims = []
    for ax in range(rank):
        sizes = [v.dims[ax] for v, var in zip(ins, node_inputs) if var.type.shape[ax] != 1]
        d = sizes[0] if sizes else 1
        for other in sizes[1:]:
            e.same_size(d, other, mismatch_message(what, f"axis {ax}"))
        dims.append(d)
    return tuple(dims)


@mlir_impl.register(Elemwise)
def _elemwise(op, node, e, ins):
    in_dtypes = [v.type.dtype for v in node.inputs]
    comp = op.scalar_op
    if isinstance(comp, Composite):
        check_composite(comp)
    out_dtypes = [o.type.dtype for o in node.outputs]
    rank = node.outputs[0].type.ndim
    dims = loop_dims(e, node.inputs, ins, str(op))
    outs = [(e.empty(dims, d), tensor_type(dims, d), [f"d{k}" for k in range(rank)]) for d in out_dtypes]

    def body(b, a, o):
        if isinstance(comp, Composite):
            return print_composite(b, comp, a)
        value, dt = scalar_step(b, comp, in_dtypes, a)
        return [convert(b, value, dt, out_dtypes[0])]

    operands = [(v, broadcast_exprs(var.type.shape, rank)) for v, var in zip(ins, node.inputs)]
    if len(outs) > 1 and rank > 1:
        # one loop per output: IREE 3.13's own rewrites break a 2-d generic of several results ("linalg.yield
        # of 4 values for 1 output", the logsumexp mixture's gradient); its fusion joins them again
        names = [
            generic(e, rank, operands, [out], lambda b, a, o, k=k: [body(b, a, o)[k]], stem="ew")[0]
            for k, out in enumerate(outs)
        ]
    else:
        names = generic(e, rank, operands, outs, body, stem="ew")
    return [Value(n, np.dtype(d).name, dims) for n, d in zip(names, out_dtypes)]


@mlir_impl.register(DimShuffle)
def _dimshuffle(op, node, e, ins):
    (x,) = ins
    dims = tuple(1 if a == "x" else x.dims[a] for a in op.order)
    position = {a: k for k, a in enumerate(op.order) if a != "x"}
    exprs = [f"d{position[a]}" if a in position else 0 for a in range(x.ndim)]  # a dropped axis has size 1
    return [copy(e, x, dims, exprs)]


def copy(e, x: Value, dims, exprs) -> Value:
    """A new tensor of `dims` whose element at (d0, ...) is x at `exprs` (a transpose, broadcast or view)."""
    rank = len(dims)
    init = e.empty(dims, x.dtype)
    (name,) = generic(
        e,
        rank,
        [(x, exprs)],
        [(init, tensor_type(dims, x.dtype), [f"d{k}" for k in range(rank)])],
        lambda b, a, o: [a[0]],
        stem="cp",
    )
    return Value(name, x.dtype, tuple(dims))


IDENTITY = {"add": 0, "mul": 1, "maximum": -math.inf, "minimum": math.inf, "and": True, "or": False}


def _identity(e, reducer, dtype):
    dt = np.dtype(dtype)
    value = IDENTITY[reducer]
    if dt.kind == "b":
        return e.const(bool(value), "i1")
    if dt.kind in "iu" and reducer in ("maximum", "minimum"):
        info = np.iinfo(dt)
        value = info.min if reducer == "maximum" else info.max
    return e.const(value, element(dt))


def combine(b, reducer, dtype, acc, x):
    """`reducer(acc, x)` in `dtype` (NumPy's NaN-propagating maximum and minimum)."""
    dt = np.dtype(dtype)
    t = element(dt)
    if dt.kind == "f":
        f = Floats(b, t)
        if reducer in ("add", "mul"):
            return f.bin("addf" if reducer == "add" else "mulf", acc, x)
        if reducer in ("maximum", "minimum"):
            keep = f.cmp("oge" if reducer == "maximum" else "ole", acc, x)
            return f.select(b.op(f"arith.ori {f.isnan(acc)}, {keep} : i1"), acc, x)
        x = convert(b, x, dt, "bool")
        acc_b = convert(b, acc, dt, "bool")
        return convert(b, b.op(f"arith.{'andi' if reducer == 'and' else 'ori'} {acc_b}, {x} : i1"), "bool", dt)
    ops = {"add": "addi", "mul": "muli", "and": "andi", "or": "ori"}
    if dt.kind == "b":
        ops.update(add="ori", mul="andi", maximum="ori", minimum="andi")
    if reducer in ops:
        if reducer in ("and", "or") and dt.kind != "b":
            raise MlirUnsupported(f"mlir backend: reduction {reducer!r} over dtype {dt.name}")
        return b.op(f"arith.{ops[reducer]} {acc}, {x} : {t}")
    sign = "u" if dt.kind == "u" else "s"
    return b.op(f"arith.{reducer[:3]}{sign}i {acc}, {x} : {t}")


def _reduce(e, reducer, axis, dims, rank, operands, out_dtypes, values):
    """One generic reducing `axis` of a loop of `dims`; `values(b, a) -> [SSA]` are the reduced terms."""
    for dt in out_dtypes:
        if reducer in ("maximum", "minimum"):
            for ax in axis:
                e.fail_if(
                    e.icmp("eq", dims[ax], 0),
                    ValueError,
                    "zero-size array to reduction operation which has no identity",
                )
    kept = [d for k, d in enumerate(dims) if k not in axis]
    out_exprs = [f"d{k}" for k in range(rank) if k not in axis]
    outs = []
    for dt in out_dtypes:
        init = e.empty(kept, dt)
        ident = _identity(e, reducer, dt)
        filled = e.op(
            f"linalg.fill ins({ident} : {element(dt)}) outs({init} : {tensor_type(kept, dt)}) -> {tensor_type(kept, dt)}",
            "f",
        )
        outs.append((filled, tensor_type(kept, dt), out_exprs))
    iterators = ["reduction" if k in axis else "parallel" for k in range(rank)]

    def body(b, a, o):
        terms = values(b, a)
        return [combine(b, reducer, dt, acc, convert(b, x, xdt, dt)) for acc, (x, xdt), dt in zip(o, terms, out_dtypes)]

    names = generic(e, rank, operands, outs, body, iterators, stem="red")
    return [Value(n, np.dtype(dt).name, tuple(kept)) for n, dt in zip(names, out_dtypes)]


@mlir_impl.register(CAReduce)
def _careduce(op, node, e, ins):
    (x,) = ins
    rank = x.ndim
    out_dt = node.outputs[0].type.dtype
    operands = [(x, [f"d{k}" for k in range(rank)])]
    return _reduce(e, op.scalar_op, tuple(op.axis), x.dims, rank, operands, [out_dt], lambda b, a: [(a[0], x.dtype)])


@mlir_impl.register(CAReduceElemwise)
def _careduce_elemwise(op, node, e, ins):
    check_composite(op.scalar_op)
    rank = node.inputs[0].type.ndim
    dims = loop_dims(e, node.inputs, ins, str(op))
    operands = [(v, broadcast_exprs(var.type.shape, rank)) for v, var in zip(ins, node.inputs)]
    out_dtypes = [o.type.dtype for o in node.outputs]
    term_dtypes = op.scalar_op.output_dtypes(op.scalar_op.in_dtypes)

    def values(b, a):
        return list(zip(print_composite(b, op.scalar_op, a), term_dtypes))

    return _reduce(e, op.reducer, tuple(op.axis), dims, rank, operands, out_dtypes, values)
