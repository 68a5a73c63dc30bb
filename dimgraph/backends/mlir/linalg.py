"""MLIR emitter of `MatMul`: one `linalg.generic` over the output's loops plus a reduction loop over k.

NumPy's semantics: a 1-d operand is promoted and its axis dropped; batch axes broadcast
(a static size 1 reads index 0), and must agree at run time otherwise. The operands are
converted to the result dtype in the body, as NumPy's matmul loop computes.
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends.mlir.elemwise import _identity
from dimgraph.backends.mlir.emitter import Value, element, generic, tensor_type
from dimgraph.backends.mlir.registry import mlir_impl
from dimgraph.backends.mlir.scalar import convert
from dimgraph.core.broadcast import mismatch_message
from dimgraph.core.linalg import MatMul


@mlir_impl.register(MatMul)
def _matmul(op, node, e, ins):
    a, b = ins
    ta, tb = node.inputs[0].type, node.inputs[1].type
    out_dt = np.dtype(node.outputs[0].type.dtype).name
    nb = max(ta.ndim - 2, tb.ndim - 2, 0)
    rows, cols = ta.ndim > 1, tb.ndim > 1
    k_a, k_b = a.dims[-1], (b.dims[0] if tb.ndim == 1 else b.dims[-2])
    e.same_size(k_a, k_b, mismatch_message(str(op), "the contracted axis"))
    batch = []
    for ax in range(nb):
        sizes = []
        for v, t in ((a, ta), (b, tb)):
            j = ax - (nb - (t.ndim - 2))
            if t.ndim > 1 and j >= 0 and t.shape[j] != 1:
                sizes.append(v.dims[j])
        for other in sizes[1:]:
            e.same_size(sizes[0], other, mismatch_message(str(op), f"batch axis {ax}"))
        batch.append(sizes[0] if sizes else 1)
    dims = tuple(batch + ([a.dims[-2]] if rows else []) + ([b.dims[-1]] if cols else []))
    rank = len(dims) + 1  # the last loop is k
    k = f"d{rank - 1}"
    row = f"d{nb}" if rows else None
    col = f"d{nb + rows}" if cols else None

    def batch_exprs(t):
        lead = nb - (t.ndim - 2)
        return [0 if s == 1 else f"d{lead + j}" for j, s in enumerate(t.shape[:-2])]

    a_exprs = batch_exprs(ta) + [row, k] if rows else [k]
    b_exprs = batch_exprs(tb) + [k, col] if cols else [k]
    init = e.empty(dims, out_dt)
    t = element(out_dt)
    filled = e.op(
        f"linalg.fill ins({_identity(e, 'add', out_dt)} : {t}) outs({init} : {tensor_type(dims, out_dt)}) -> {tensor_type(dims, out_dt)}",
        "f",
    )
    float_out = np.dtype(out_dt).kind == "f"

    def body(g, x, o):
        p = g.op(
            f"arith.{'mulf' if float_out else 'muli'} {convert(g, x[0], a.dtype, out_dt)}, {convert(g, x[1], b.dtype, out_dt)} : {t}"
        )
        return [g.op(f"arith.{'addf' if float_out else 'addi'} {o[0]}, {p} : {t}")]

    iterators = ["parallel"] * (rank - 1) + ["reduction"]
    out_exprs = [f"d{j}" for j in range(rank - 1)]
    (name,) = generic(
        e,
        rank,
        [(a, a_exprs), (b, b_exprs)],
        [(filled, tensor_type(dims, out_dt), out_exprs)],
        body,
        iterators,
        stem="mm",
    )
    return [Value(name, out_dt, dims)]
