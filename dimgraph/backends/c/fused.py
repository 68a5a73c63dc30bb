"""C emitters of the fused ops (`dimgraph.core.fused`): a reduction of an Elemwise, computed in the reduction's loop.

`IndexedLoop` has no emitter: the cleanup `unfuse_indexed_loop` expands it first.
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends.c.reduce import (
    NOMEM,
    Values,
    check_nonempty,
    collapse_trailing,
    identity_of,
    reduce_code,
    reduced_view,
    trailing_reduced,
)
from dimgraph.backends.c.registry import CImpl, c_impl
from dimgraph.backends.c.scalar import NEGATIVE_POWER, compute_ctype, raises
from dimgraph.core.broadcast import node_shape
from dimgraph.core.fused import CAReduceElemwise


@c_impl.register(CAReduceElemwise)
def _careduce_elemwise(op, node):
    in_dtypes = [i.type.dtype for i in node.inputs]
    out = node.outputs[0]
    nd = node.inputs[0].type.ndim
    nin = len(node.inputs)
    types = [(d, nd) for d in in_dtypes] + [(out.type.dtype, nd)]
    ident = identity_of(op.reducer, out.type.dtype)
    r = trailing_reduced(op.axis, nd)

    def plan(ctx, ins):
        shape = node_shape(node, ins)
        check_nonempty(op, op.reducer, shape, op.axis)
        res = ctx.filled([s for k, s in enumerate(shape) if k not in op.axis], ident, out.type.dtype)
        views = [np.broadcast_to(a, shape) for a in ins] + [reduced_view(res, shape, op.axis)]
        return [res], collapse_trailing(views, r), True

    def code(o):
        values = Values(o, nin, nd, compute_ctype(out.type.dtype), op.scalar_op)
        check = f"\nif (dg_error) {{ dg_error = 0; {o.fail(1)} }}" if raises(op.scalar_op) else ""
        return reduce_code(o, nd, nin, op.reducer, out.type.dtype, op.axis, values) + check

    return CImpl(types, code, plan, errors=NOMEM + [NEGATIVE_POWER])
