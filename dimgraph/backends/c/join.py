"""C emitters of `dimgraph.core.join`: Join copies each input into its block of the output; Split is views."""

from __future__ import annotations

import numpy as np

from dimgraph.backends.c.loops import copy_code
from dimgraph.backends.c.registry import CImpl, c_impl
from dimgraph.core.join import Join, Split


@c_impl.register(Join)
def _join(op, node):
    out = node.outputs[0]
    nd = out.type.ndim
    types = []
    for i in node.inputs:
        types += [(i.type.dtype, nd), (out.type.dtype, nd)]

    def plan(ctx, ins):
        op.check_shapes([a.shape for a in ins])
        shape = list(ins[0].shape)
        shape[op.axis] = sum(a.shape[op.axis] for a in ins)
        res = np.empty(shape, out.type.dtype)
        operands, start = [], 0
        for a in ins:
            key = [slice(None)] * nd
            key[op.axis] = slice(start, start + a.shape[op.axis])
            start += a.shape[op.axis]
            operands += [a, res[tuple(key)]]
        return [res], operands, True

    def code(o):
        lines = []
        for k in range(len(node.inputs)):
            lines += ["{"] + copy_code(o, 2 * k, 2 * k + 1) + ["}"]
        return "\n".join(lines)

    return CImpl(types, code, plan)


@c_impl.register(Split)
def _split(op, node):
    def plan(ctx, ins):
        x = ins[0]
        it = iter(int(ctx.host_value(v)) for v in node.inputs[1:])
        sizes = [s if s is not None else next(it) for s in op.sizes]
        op.check_sizes(sizes, x.shape[op.axis])
        return np.split(x, np.cumsum(sizes)[:-1], axis=op.axis), [], False

    return CImpl([], None, plan)
