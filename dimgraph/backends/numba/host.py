"""Nodes the numba backend's driver runs in Python, by NumPy: a registry keyed by Op type.

`host_call(node)` returns `fn(*arrays)` giving a bare array (one output) or a tuple.
The default runs the op's `perform` (the python backend's code); entries here
precompute what `perform` would work out on every call, for the ops the driver
runs often: a DimShuffle is one indexing of a transposed view, an einsum of
static shapes follows a contraction path found once (BLAS products instead of
`np.einsum`'s plain loops: 11 ms -> 0.3 ms per call in the softmax regression).
"""

from __future__ import annotations

from functools import singledispatch

import numpy as np

from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.linalg import Einsum


@singledispatch
def host_impl(op, node):
    """`fn(*arrays)` computing `node` by the op's NumPy `perform`."""
    single = len(node.outputs) == 1

    def call(*arrays):
        outs = op.perform(node, list(arrays))
        outs = [o if type(o) is np.ndarray else np.asarray(o, dtype=v.type.dtype) for o, v in zip(outs, node.outputs)]
        return outs[0] if single else tuple(outs)

    return call


def host_call(node):
    fn = host_impl(node.op, node)
    fn.__qualname__ = f"host[{type(node.op).__name__}]"
    return fn


@host_impl.register(DimShuffle)
def _dimshuffle(op, node):
    # Transpose to (kept axes in output order, dropped axes), then one index: None for each
    # new axis, 0 for each dropped one (static size 1). Both steps are views.
    kept = [o for o in op.order if o != "x"]
    perm = tuple(kept) + tuple(op.dropped)
    index = tuple(None if o == "x" else slice(None) for o in op.order) + (0,) * len(op.dropped)
    if perm == tuple(range(op.input_ndim)):
        return lambda x: x[index]
    return lambda x: x.transpose(perm)[index]


@host_impl.register(Einsum)
def _einsum(op, node):
    shapes = [i.type.shape for i in node.inputs]
    sizes = {}
    for term, shape in zip(op.terms, shapes):
        if len(set(term)) != len(term) or None in shape:
            return host_impl.dispatch(object)(op, node)  # diagonals or run-time sizes: perform's checks
        for c, n in zip(term, shape):
            sizes.setdefault(c, set()).add(n)
    if any(len(s) > 1 for s in sizes.values()):  # a static size 1 broadcasts: perform handles it
        return host_impl.dispatch(object)(op, node)
    dummies = [np.zeros(s, dtype=i.type.dtype) for s, i in zip(shapes, node.inputs)]
    path = np.einsum_path(op.subscripts, *dummies, optimize="greedy")[0]
    subscripts, dtype = op.subscripts, np.dtype(node.outputs[0].type.dtype)

    def call(*arrays):
        out = np.einsum(subscripts, *arrays, optimize=path)
        return out if type(out) is np.ndarray and out.dtype == dtype else np.asarray(out, dtype=dtype)

    return call
