"""Nodes the numba backend's driver runs in Python, by NumPy: a registry keyed by Op type.

`host_call(node)` returns `fn(*arrays)` giving a bare array (one output) or a tuple.
The default runs the op's `perform` (the python backend's code); entries here
precompute what `perform` would work out on every call, for the ops the driver
runs often: a DimShuffle is one indexing of a transposed view, float64
arithmetic on single elements calls the ufuncs step by step (1 us a step, where
`perform` takes about 90), an einsum of
static shapes follows a contraction path found once (BLAS products instead of
`np.einsum`'s plain loops: 11 ms -> 0.3 ms per call in the softmax regression).
"""

from __future__ import annotations

from functools import singledispatch

import numpy as np

from dimgraph.backends.numba.scalar import flatten
from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.linalg import Einsum
from dimgraph.core.scalar import SCALAR_SPECS, Cast


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


@host_impl.register(Elemwise)
def _elemwise(op, node):
    # Single elements of float64 through ufuncs that are their ops' NumPy reference: the
    # python backend's result, without its per-step dtype resolution and error states.
    # An integer input is allowed where it is only converted to float64 (a step count in a sum).
    variables = node.inputs + node.outputs
    if any(None in v.type.shape or np.prod(v.type.shape) > 1 for v in variables):
        return host_impl.dispatch(object)(op, node)
    if any(v.type.dtype != "float64" for v in node.outputs):
        return host_impl.dispatch(object)(op, node)
    steps, outs = flatten(op.scalar_op, len(node.inputs))
    ints = {r for r, v in enumerate(node.inputs) if v.type.dtype != "float64"}
    if any(np.dtype(node.inputs[r].type.dtype).kind not in "iu" for r in ints):
        return host_impl.dispatch(object)(op, node)
    program = []
    for step_op, refs in steps:
        if isinstance(step_op, Cast) and step_op.dtype == "float64" and refs[0] in ints:
            program.append((np.float64, refs))
            continue
        if any(r in ints for r in refs):
            return host_impl.dispatch(object)(op, node)
        spec = SCALAR_SPECS.get(step_op.name)
        if spec is None or spec.ufunc is None or spec.impl is not spec.ufunc:
            return host_impl.dispatch(object)(op, node)
        if step_op.output_dtypes(["float64"] * len(refs))[0] != "float64":
            return host_impl.dispatch(object)(op, node)
        program.append((spec.ufunc, refs))
    shape = node.outputs[0].type.shape
    single = len(outs) == 1

    def call(*arrays):
        values = list(arrays)
        with np.errstate(all="ignore"):
            for ufunc, refs in program:
                values.append(ufunc(*[values[r] for r in refs]))
        results = [np.asarray(values[r]).reshape(shape) for r in outs]
        return results[0] if single else tuple(results)

    return call

