"""numba kernels of the fused loops: a reduce-of-elemwise, an indexed loop (gather, math, reductions,
scatter) and an elementwise or reducing loop reading n-d gathers in place."""

from __future__ import annotations

from dimgraph.backends.numba.loops import loop_kernel
from dimgraph.backends.numba.ops import numba_kernel, print_loop
from dimgraph.backends.numba.scalar import flatten
from dimgraph.core.fused import CAReduceElemwise, GatherElemwise, IndexedLoop


@numba_kernel.register(CAReduceElemwise)
def _careduce_elemwise(op, node):
    sink, dtypes = (op.reducer, tuple(op.axis)), [i.type.dtype for i in node.inputs]
    sinks = lambda outs: [(r, sink + (o.type.dtype,)) for r, o in zip(outs, node.outputs)]  # noqa: E731
    return print_loop(op, node.inputs, dtypes, sinks, reciprocals=True)


@numba_kernel.register(IndexedLoop)
def _indexed_loop(op, node):
    loop_inputs, gathers, scatters = op.split_inputs(node.inputs)
    gather_of = dict(zip([v for v, g in enumerate(op.gathered) if g], gathers))
    sinks, scatter_at, scatter_of = [], {}, iter(scatters)
    for k, ((out, kind, reducer), o) in enumerate(zip(op.results, node.outputs)):
        dtype = o.type.dtype
        if kind == "scatter":
            base, idxs = next(scatter_of)
            sinks.append((out, ("scatter", dtype, len(idxs))))
            # the same index arrays into a table of the same static shape: one check per position
            for v, (table, table_idxs) in gather_of.items():
                static = None not in table.type.shape and table.type.shape == base.type.shape
                if static and len(idxs) == len(table_idxs) and all(a is b for a, b in zip(idxs, table_idxs)):
                    scatter_at[k] = v
        else:
            sinks.append((out, None if kind == "full" else (reducer, (0,), dtype)))
    return print_loop(
        op,
        loop_inputs,
        op.scalar_op.in_dtypes,
        lambda outs: [(outs[out], sink) for out, sink in sinks],
        gathered=tuple(0 if g else None for g in op.gathered),
        scatter_at=scatter_at,
        reciprocals=True,
        more_indices={v: int(g) - 1 for v, g in enumerate(op.gathered) if int(g) > 1},
    )


@numba_kernel.register(GatherElemwise)
def _gather_elemwise(op, node):
    steps, outs = flatten(op.scalar_op, op.scalar_op.nin)
    bcast = [tuple(s == 1 for s in t.shape) for t in op.loop_types(node.inputs)]
    sinks = [
        (r, None if op.reducer is None else (op.reducer, tuple(op.axis), o.type.dtype))
        for r, o in zip(outs, node.outputs)
    ]
    return loop_kernel(
        bcast, list(op.scalar_op.in_dtypes), steps, sinks, op_name=str(op), gathered=op.gather_axes, reciprocals=True
    )
