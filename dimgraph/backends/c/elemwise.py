"""C emitters of `dimgraph.core.elemwise`: Elemwise (one strided loop over a printed Composite) and DimShuffle (a view)."""

from __future__ import annotations

import numpy as np

from dimgraph.backends.c.loops import elem_strides, loop, strided
from dimgraph.backends.c.registry import CImpl, c_impl
from dimgraph.backends.c.scalar import NEGATIVE_POWER, as_composite, ctype, print_composite, raises
from dimgraph.core.broadcast import node_shape
from dimgraph.core.elemwise import DimShuffle, Elemwise


@c_impl.register(Elemwise)
def _elemwise(op, node):
    in_dtypes = [i.type.dtype for i in node.inputs]
    comp = as_composite(op.scalar_op, in_dtypes)
    nd = node.outputs[0].type.ndim
    nin, nout = len(node.inputs), len(node.outputs)
    out_dtypes = [o.type.dtype for o in node.outputs]
    types = [(d, nd) for d in in_dtypes] + [(d, nd) for d in out_dtypes]
    for d in in_dtypes + out_dtypes:
        ctype(d)

    still = {j: [a for a, s in enumerate(i.type.shape) if s == 1] for j, i in enumerate(node.inputs)}

    # NOTE: a run-time size check is needed only on axes where two inputs may differ at run time.
    checked = any(
        sum(i.type.shape[ax] != 1 for i in node.inputs) > 1 and any(i.type.shape[ax] is None for i in node.inputs)
        for ax in range(nd)
    )

    def plan(ctx, ins):
        if checked:
            node_shape(node, ins)
        shape = tuple(next((a.shape[ax] for j, a in enumerate(ins) if ax not in still[j]), 1) for ax in range(nd))
        outs = [np.empty(shape, d) for d in out_dtypes]
        return outs, list(ins) + outs, True

    def code(o):
        def body(q):
            lines = [f"const {o.ctype(k)} x{k} = {o.ptr(k)}[{q[k]}];" for k in range(nin)]
            steps, results = print_composite(comp, [f"x{k}" for k in range(nin)])
            lines += steps
            lines += [f"{o.ptr(nin + k)}[{q[nin + k]}] = {v};" for k, v in enumerate(results)]
            return lines

        check = [f"if (dg_error) {{ dg_error = 0; {o.fail(0)} }}"] if raises(comp) else []
        return "\n".join(loop(o, list(range(nin + nout)), body, shape_of=nin, still=still) + check)

    return CImpl(types, code, plan, errors=[NEGATIVE_POWER])


@c_impl.register(DimShuffle)
def _dimshuffle(op, node):
    def plan(ctx, ins):
        (x,) = ins
        st = elem_strides(x)
        shape = [1 if a == "x" else x.shape[a] for a in op.order]
        strides = [0 if a == "x" else st[a] for a in op.order]
        return [strided(x, shape, strides)], [], False

    return CImpl([], None, plan)
