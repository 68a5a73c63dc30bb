"""C emitters of shapes (`dimgraph.core.shape`, `shape_ops`): all plans, no kernels except a reshape that must copy."""

from __future__ import annotations

import numpy as np

from dimgraph.backends.c.loops import copy_code
from dimgraph.backends.c.registry import CImpl, c_impl
from dimgraph.core.shape import Shape, ShapeI
from dimgraph.core.shape_ops import Alloc, Reshape


@c_impl.register(Reshape)
def _reshape(op, node):
    x = node.inputs[0]
    types = [(x.type.dtype, x.type.ndim)] * 2

    def plan(ctx, ins):
        a = ins[0]
        shape = list(ctx.infer(node, ins)[0])
        if shape.count(-1) == 1:  # a -1 computed at run time means "the rest", as in np.reshape
            rest = int(np.prod([s for s in shape if s != -1]))
            shape[shape.index(-1)] = a.size // rest if rest and a.size % rest == 0 else -1
        if int(np.prod(shape)) != a.size or any(s < 0 for s in shape):
            raise ValueError(f"reshape: cannot reshape an array of shape {a.shape} into shape {tuple(shape)}")
        try:
            return [np.reshape(a, shape, copy=False)], [a, a], False
        except ValueError:  # not expressible by strides: C copies in C order
            out = np.empty(shape, a.dtype)
            return [out], [a, out.reshape(a.shape)], True

    return CImpl(types, lambda o: "\n".join(copy_code(o, 0, 1)), plan)


@c_impl.register(Alloc)
def _alloc(op, node):
    def plan(ctx, ins):
        (shape,) = ctx.infer(node, ins)
        return [np.broadcast_to(ins[0], tuple(shape))], [], False

    return CImpl([], None, plan)


@c_impl.register(ShapeI)
def _shape_i(op, node):
    def plan(ctx, ins):
        out = np.asarray(ins[0].shape[op.i], dtype=np.int64)
        ctx.set_host(node.outputs[0], out)
        return [out], [], False

    return CImpl([], None, plan)


@c_impl.register(Shape)
def _shape(op, node):
    def plan(ctx, ins):
        out = np.asarray(ins[0].shape, dtype=np.int64)
        ctx.set_host(node.outputs[0], out)
        return [out], [], False

    return CImpl([], None, plan)
