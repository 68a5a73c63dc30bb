"""Nodes the numba backend's driver runs in Python, by NumPy: a registry keyed by Op type.

`host_call(node)` returns `fn(*arrays)` giving a bare array (one output) or a tuple.
The default runs the op's `perform` (the python backend's code); entries here
precompute what `perform` would work out on every call, for the ops the driver
runs often: a DimShuffle is one indexing of a transposed view, float64
arithmetic on single elements calls the ufuncs (or a special function's NumPy
reference) step by step (1 us a step, where `perform` takes about 90), shapes, reshapes and
allocations are the NumPy calls themselves (a graph's own, not a fallback: no `performs` flag), an einsum of
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
from dimgraph.core.shape import Shape, ShapeI
from dimgraph.core.shape_ops import Alloc, Reshape
from dimgraph.core.subtensor import Subtensor, _basic_key


@singledispatch
def host_impl(op, node):
    """`fn(*arrays)` computing `node` by the op's NumPy `perform`."""
    single = len(node.outputs) == 1

    def call(*arrays):
        outs = op.perform(node, list(arrays))
        outs = [o if type(o) is np.ndarray else np.asarray(o, dtype=v.type.dtype) for o, v in zip(outs, node.outputs)]
        return outs[0] if single else tuple(outs)

    call.performs = True  # named by `Function.summary()`
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


@host_impl.register(Subtensor)
def _subtensor(op, node):
    # Basic indexing by static entries only (the driver runs no other Subtensor): a view, as the kernel's.
    key = _basic_key(op.index, []) + (Ellipsis,)
    return lambda x: x[key]


@host_impl.register(Einsum)
def _einsum(op, node):
    shapes = [i.type.shape for i in node.inputs]
    sizes = {}
    for term, shape in zip(op.terms, shapes):
        if None in shape:
            return host_impl.dispatch(object)(op, node)  # run-time sizes: perform's checks
        for c, n in zip(term, shape):
            sizes.setdefault(c, set()).add(n)
    if any(len(s) > 1 for s in sizes.values()):  # a static size 1 broadcasts: perform handles it
        return host_impl.dispatch(object)(op, node)
    dummies = [np.zeros(s, dtype=i.type.dtype) for s, i in zip(shapes, node.inputs)]
    diagonal = any(len(set(term)) != len(term) for term in op.terms)  # (`aa->a`): NumPy's own loop
    path = False if diagonal else np.einsum_path(op.subscripts, *dummies, optimize="greedy")[0]
    subscripts, dtype = op.subscripts, np.dtype(node.outputs[0].type.dtype)

    def call(*arrays):
        out = np.einsum(subscripts, *arrays, optimize=path)
        return out if type(out) is np.ndarray and out.dtype == dtype else np.asarray(out, dtype=dtype)

    return call


# Steps exact on any dtype: comparisons, logic and bit operations, finiteness tests, a choice, a
# conversion to float64 (a step count in a sum). A support check `where(and(ge(x, 0), isfinite(x)), ...)`
# is one of these programs, not a call of `perform` (about 100 us).
_ANY_DTYPE = ("gt", "ge", "lt", "le", "eq", "neq", "where", "and", "or", "xor", "invert", "isfinite", "isnan", "isinf")


@host_impl.register(Elemwise)
def _elemwise(op, node):
    # Single elements through ufuncs that are their ops' NumPy reference: the python
    # backend's result, without its per-step dtype resolution and error states. Float64
    # arithmetic, and on other dtypes only the steps in `_ANY_DTYPE` (each step's NumPy
    # result dtype is checked against the op's once, here).
    variables = node.inputs + node.outputs
    if any(None in v.type.shape or np.prod(v.type.shape) > 1 for v in variables):
        return host_impl.dispatch(object)(op, node)
    steps, outs = flatten(op.scalar_op, len(node.inputs))
    dtypes = [v.type.dtype for v in node.inputs]
    program = []
    for step_op, refs in steps:
        in_dt = [dtypes[r] for r in refs]
        out_dt = step_op.output_dtypes(in_dt)[0]
        if isinstance(step_op, Cast):
            fn, general = np.float64, step_op.dtype == "float64" and all(np.dtype(d).kind in "iuf" for d in in_dt)
        elif step_op.name == "where":
            fn, general = np.where, True
        else:
            spec = SCALAR_SPECS.get(step_op.name)
            if spec is None or spec.impl is None:
                return host_impl.dispatch(object)(op, node)
            # a special function (gammaln, xlogy) by its NumPy reference, on float64 only
            fn, general = spec.impl, spec.impl is spec.ufunc and step_op.name in _ANY_DTYPE
        if not general and any(d != "float64" for d in in_dt + [out_dt]):
            return host_impl.dispatch(object)(op, node)
        with np.errstate(all="ignore"):
            if np.asarray(fn(*[np.zeros((), d) for d in in_dt])).dtype != np.dtype(out_dt):
                return host_impl.dispatch(object)(op, node)
        program.append((fn, refs))
        dtypes.append(out_dt)
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


@host_impl.register(ShapeI)
def _shape_i(op, node):
    i = op.i
    return lambda x: np.asarray(x.shape[i], dtype=np.int64)


@host_impl.register(Shape)
def _shape(op, node):
    return lambda x: np.asarray(x.shape, dtype=np.int64)


@host_impl.register(Reshape)
def _reshape(op, node):
    return lambda x, *shape: np.reshape(x, [int(s) for s in shape])


@host_impl.register(Alloc)
def _alloc(op, node):
    dtype = np.dtype(node.outputs[0].type.dtype)

    def call(value, *shape):
        out = np.empty([int(s) for s in shape], dtype=dtype)
        out[...] = value
        return out

    return call
