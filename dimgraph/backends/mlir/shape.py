"""MLIR emitters of shapes and layout: Shape, ShapeI, Reshape (collapse to 1-D, expand to the target),
Alloc (a broadcast generic), Join (`tensor.insert_slice` at running offsets), Split, Assert (a run-time check)."""

from __future__ import annotations

import numpy as np

from dimgraph.backends.mlir.elemwise import copy
from dimgraph.backends.mlir.emitter import Value, element, tensor_type
from dimgraph.backends.mlir.registry import mlir_impl
from dimgraph.backends.mlir.scalar import convert
from dimgraph.core.extra import Assert
from dimgraph.core.join import Join, Split
from dimgraph.core.shape import Shape, ShapeI
from dimgraph.core.shape_ops import Alloc, Reshape
from dimgraph.errors import ShapeError


def dims_from(e, static, entries):
    """Target dims: the static size where the type knows it, else the run-time entry (a 0-d integer Value)."""
    return [int(s) if s is not None else e.index_of(v) for s, v in zip(static, entries)]


@mlir_impl.register(ShapeI)
def _shape_i(op, node, e, ins):
    return [e.from_index(ins[0].dims[op.i])]


@mlir_impl.register(Shape)
def _shape(op, node, e, ins):
    (x,) = ins
    items = []
    for d in x.dims:
        items.append(e.const(d, "i64") if isinstance(d, int) else e.op(f"arith.index_cast {d} : index to i64", "s"))
    t = tensor_type((x.ndim,), "int64")
    return [Value(e.op(f"tensor.from_elements {', '.join(items)} : {t}", "t"), "int64", (x.ndim,))]


def reshape(e, x: Value, dims) -> Value:
    """`x` with the dims `dims` (same size, C order): collapsed to one axis, then expanded."""
    dims = tuple(dims)
    t = element(x.dtype)
    if x.ndim == 0:
        flat = Value(
            e.op(f"tensor.expand_shape {x.name} [] output_shape [1] : {x.type} into tensor<1x{t}>", "rs"), x.dtype, (1,)
        )
    elif x.ndim == 1:
        flat = x
    else:
        size = e.product(x.dims)
        ftype = tensor_type((size,), x.dtype)
        group = ", ".join(str(k) for k in range(x.ndim))
        flat = Value(
            e.op(f"tensor.collapse_shape {x.name} [[{group}]] : {x.type} into {ftype}", "rs"), x.dtype, (size,)
        )
    total = e.product(dims)
    if not dims:
        one = e.cast(flat, (1,))
        return Value(
            e.op(f"tensor.collapse_shape {one.name} [] : {one.type} into {tensor_type((), x.dtype)}", "rs"), x.dtype, ()
        )
    flat = e.cast(flat, (total,) if isinstance(total, int) else ("?",))
    flat = Value(flat.name, flat.dtype, (total,))
    if len(dims) == 1:
        return e.cast(flat, dims)
    group = ", ".join(str(k) for k in range(len(dims)))
    shape = ", ".join(str(d) for d in dims)
    out_t = tensor_type(dims, x.dtype)
    return Value(
        e.op(f"tensor.expand_shape {flat.name} [[{group}]] output_shape [{shape}] : {flat.type} into {out_t}", "rs"),
        x.dtype,
        dims,
    )


@mlir_impl.register(Reshape)
def _reshape(op, node, e, ins):
    x, entries = ins[0], ins[1:]
    static = node.outputs[0].type.shape
    raw = [int(s) if s is not None else e.index_of(v) for s, v in zip(static, entries)]
    size = e.product(x.dims)
    if any(not isinstance(d, int) for d in raw):  # a run-time -1 takes what the others leave
        known = e.product([e.iselect(e.icmp("eq", d, -1), 1, d) if not isinstance(d, int) else d for d in raw])
        rest = e.iop("divsi", size, known, lambda a, b: a // b)
        raw = [e.iselect(e.icmp("eq", d, -1), rest, d) if not isinstance(d, int) else d for d in raw]
    e.same_size(
        size, e.product(raw), f"cannot reshape array of the input's size into shape {tuple(static)}", ValueError
    )
    return [reshape(e, x, raw)]


@mlir_impl.register(Alloc)
def _alloc(op, node, e, ins):
    v, entries = ins[0], ins[1:]
    out = node.outputs[0]
    dims = tuple(dims_from(e, out.type.shape, entries))
    lead = len(dims) - v.ndim
    exprs = []
    for j, s in enumerate(node.inputs[0].type.shape):
        if s == 1:
            exprs.append(0)
        else:
            exprs.append(f"d{lead + j}")
            e.same_size(v.dims[j], dims[lead + j], f"alloc: the value's axis {j} does not fit the shape", ValueError)
    res = copy(e, v, dims, exprs)
    return [Value(res.name, np.dtype(out.type.dtype).name, dims)]


@mlir_impl.register(Join)
def _join(op, node, e, ins):
    axis = op.axis
    first = ins[0]
    for k, v in enumerate(ins[1:], 1):
        for ax in range(first.ndim):
            if ax != axis:
                e.same_size(
                    first.dims[ax],
                    v.dims[ax],
                    f"Join: axis {ax} of the inputs has different sizes (only axis {axis} may differ)",
                )
    total = 0
    for v in ins:
        total = e.iadd(total, v.dims[axis])
    dims = tuple(total if ax == axis else d for ax, d in enumerate(first.dims))
    dest = e.empty(dims, first.dtype)
    out_t = tensor_type(dims, first.dtype)
    offset = 0
    for v in ins:
        offsets = ", ".join(str(offset) if ax == axis else "0" for ax in range(v.ndim))
        sizes = ", ".join(str(d) for d in v.dims)
        strides = ", ".join("1" for _ in v.dims)
        dest = e.op(
            f"tensor.insert_slice {v.name} into {dest}[{offsets}] [{sizes}] [{strides}] : {v.type} into {out_t}", "j"
        )
        offset = e.iadd(offset, v.dims[axis])
    return [Value(dest, first.dtype, dims)]


@mlir_impl.register(Split)
def _split(op, node, e, ins):
    x, symbolic = ins[0], iter(ins[1:])  # one size input per size the op leaves open (None)
    axis = op.axis
    offset = 0
    outs = []
    for size in op.sizes:
        n = int(size) if size is not None else e.index_of(next(symbolic))
        dims = tuple(n if ax == axis else d for ax, d in enumerate(x.dims))
        offsets = ", ".join(str(offset) if ax == axis else "0" for ax in range(x.ndim))
        text = f"[{offsets}] [{', '.join(str(d) for d in dims)}] [{', '.join('1' for _ in dims)}]"
        outs.append(
            Value(
                e.op(f"tensor.extract_slice {x.name}{text} : {x.type} to {tensor_type(dims, x.dtype)}", "sp"),
                x.dtype,
                dims,
            )
        )
        offset = e.iadd(offset, n)
    e.same_size(offset, x.dims[axis], f"{op}: the sizes do not add up to the axis length", ShapeError)
    return outs


@mlir_impl.register(Assert)
def _assert(op, node, e, ins):
    for c, var in zip(ins[1:], node.inputs[1:]):
        ok = convert(e, e.scalar(c), var.type.dtype, "bool")
        bad = e.op(f"arith.xori {ok}, {e.const(True, 'i1')} : i1", "p")
        e.fail_if(bad, op.error, op.message)
    return [ins[0]]
