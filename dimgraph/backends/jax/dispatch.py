"""The JAX backend's registry: one entry per Op type, each returning a closure over `jax.numpy`.

`jax_impl(op, node)` is read once per node when a graph is compiled; the
closure it returns, `fn(list of input values) -> list of output values`, is
called while the whole graph is traced by `jax.jit`. An Op type with no entry
fails at compile time (`missing_ops`), naming the op and the backend.

Values are of two kinds while tracing:
- static: NumPy arrays (constants, shapes, anything computed only from them).
  Shapes are concrete while tracing, so `ShapeI`/`Shape` give NumPy values and
  every size, reshape target or slice bound computed from shapes stays a
  Python int: XLA sees static shapes only.
- traced: JAX arrays computed from the inputs.
An entry must accept static values anywhere and, where it needs an int when
tracing (`static_int`), raise NotImplementedError for a traced one (an output
whose shape depends on data cannot be compiled by XLA).

This module holds the entries for elemwise, shape and reduction ops;
`indexing.py` and `ops_more.py` hold the others.
"""

from __future__ import annotations

from functools import singledispatch

import jax.numpy as jnp
import numpy as np

from dimgraph.backends.jax.scalar import cast, scalar_fn
from dimgraph.core.elemwise import DimShuffle, Elemwise, check_broadcast
from dimgraph.core.fused import CAReduceElemwise, GatherElemwise, IndexedLoop
from dimgraph.core.graph import toposort
from dimgraph.core.reduce import Argmax, CAReduce
from dimgraph.core.shape import Shape, ShapeI
from dimgraph.core.shape_ops import Alloc, Reshape

BACKEND = "jax"
# Nodes with static inputs and at most this many output elements are evaluated with NumPy while tracing.
FOLD_LIMIT = 1024


@singledispatch
def jax_impl(op, node):
    """`fn(list of input values) -> list of output values` for `node` (see the module docstring)."""
    raise NotImplementedError(missing_message(op))


def missing_message(op):
    return (
        f"the {BACKEND} backend has no implementation of op {op} ({type(op).__module__}.{type(op).__name__}); "
        f"register one with @dimgraph.backends.jax.dispatch.jax_impl.register({type(op).__name__}), "
        "or compile with another backend"
    )


def missing_ops(nodes):
    """The Op types among `nodes` with no registry entry."""
    default = jax_impl.dispatch(object)
    return sorted({type(n.op) for n in nodes if jax_impl.dispatch(type(n.op)) is default}, key=lambda t: t.__name__)


def is_static(value) -> bool:
    """True for values known while tracing (NumPy data), False for traced JAX arrays."""
    return isinstance(value, (np.ndarray, np.generic, int, float, bool))


class DataDependentShape(NotImplementedError):
    """A size, bound or mask needed while tracing is a traced value (`value`): the shape depends on data.

    The compiled function answers by making the small inputs behind `value`
    static (one compile per distinct value, see `compiler.py`); where the value
    comes from a large input it is the user's error.
    """

    def __init__(self, message, value):
        super().__init__(message)
        self.value = value


def static_int(value, op, what) -> int:
    """`value` as a Python int; DataDependentShape (a NotImplementedError) when it is traced."""
    if is_static(value):
        return int(value)
    raise DataDependentShape(
        f"the {BACKEND} backend cannot compile {op}: its {what} is computed from input data, so the "
        "output shape would depend on data (XLA needs static shapes), and the inputs it comes from are "
        "not small enough to be compiled in as constants; use another backend for this graph",
        value,
    )


def broadcast_shape(node, inputs):
    """The output shape of an Elemwise-like node: its inputs' shapes broadcast (checked first)."""
    check_broadcast(node, inputs)
    ndim = node.inputs[0].type.ndim
    return tuple(0 if any(x.shape[ax] == 0 for x in inputs) else max(x.shape[ax] for x in inputs) for ax in range(ndim))


# ---------------------------------------------------------------------------
# elementwise


@jax_impl.register(Elemwise)
def _elemwise(op, node):
    fn = scalar_fn(op.scalar_op, [i.type.dtype for i in node.inputs])

    def elemwise(inputs):
        shape = broadcast_shape(node, inputs)
        # a Composite may ignore an input: its result still has the broadcast shape
        return [o if o.shape == shape else jnp.broadcast_to(o, shape) for o in fn(*inputs)]

    return elemwise


@jax_impl.register(DimShuffle)
def _dimshuffle(op, node):
    kept = [o for o in op.order if o != "x"]
    perm = tuple(kept) + op.dropped

    def dimshuffle(inputs):
        x = jnp.asarray(inputs[0])
        shape = tuple(1 if o == "x" else x.shape[o] for o in op.order)
        if perm != tuple(range(len(perm))):
            x = jnp.transpose(x, perm)
        return [x if x.shape == shape else jnp.reshape(x, shape)]

    return dimshuffle


# ---------------------------------------------------------------------------
# shapes


@jax_impl.register(ShapeI)
def _shape_i(op, node):
    return lambda inputs: [np.asarray(inputs[0].shape[op.i], dtype=np.int64)]


@jax_impl.register(Shape)
def _shape(op, node):
    return lambda inputs: [np.asarray(inputs[0].shape, dtype=np.int64)]


@jax_impl.register(Reshape)
def _reshape(op, node):
    def reshape(inputs):
        x, *shape = inputs
        shape = [static_int(s, op, "target shape") for s in shape]
        try:
            return [jnp.reshape(x, shape)]
        except TypeError as err:  # NumPy raises ValueError for sizes that do not fit
            raise ValueError(f"cannot reshape array of shape {tuple(x.shape)} into shape {tuple(shape)} ({op})") from err

    return reshape


@jax_impl.register(Alloc)
def _alloc(op, node):
    def alloc(inputs):
        value, *shape = inputs
        shape = tuple(static_int(s, op, "target shape") for s in shape)
        return [jnp.broadcast_to(value, shape)]

    return alloc


# ---------------------------------------------------------------------------
# reductions

REDUCE = {
    "add": jnp.sum,
    "mul": jnp.prod,
    "maximum": jnp.max,
    "minimum": jnp.min,
    "and": jnp.all,
    "or": jnp.any,
}


def _reducer(reducer, axis, out_dtype):
    fn = REDUCE[reducer]
    out_dtype = np.dtype(out_dtype)
    # NumPy accumulates in the output dtype (int8 sums in int64); float16 XLA widens itself
    acc = np.dtype("float32") if out_dtype == np.float16 else out_dtype

    def reduce(x):
        if reducer in ("maximum", "minimum"):
            for a in axis:
                if x.shape[a] == 0:
                    raise ValueError(f"zero-size array to reduction operation {reducer} which has no identity")
        if reducer not in ("and", "or"):
            x = cast(x, acc)
        out = fn(x, axis=axis)
        return cast(out, out_dtype)

    return reduce


@jax_impl.register(CAReduce)
def _careduce(op, node):
    reduce = _reducer(op.scalar_op, op.axis, node.outputs[0].type.dtype)
    return lambda inputs: [reduce(jnp.asarray(inputs[0]))]


@jax_impl.register(CAReduceElemwise)
def _careduce_elemwise(op, node):
    fn = scalar_fn(op.scalar_op, [i.type.dtype for i in node.inputs])
    reducers = [_reducer(op.reducer, op.axis, out.type.dtype) for out in node.outputs]

    def careduce_elemwise(inputs):
        shape = broadcast_shape(node, inputs)
        return [
            reduce(full if full.shape == shape else jnp.broadcast_to(full, shape))
            for reduce, full in zip(reducers, fn(*inputs))
        ]

    return careduce_elemwise


@jax_impl.register(IndexedLoop)
@jax_impl.register(GatherElemwise)
def _indexed_loop(op, node):
    """The ops it fuses (gathers, Elemwise, reductions, scatters), traced in order: XLA fuses them again."""
    outputs = op.unfused(node.inputs)
    steps = [(n, jax_impl(n.op, n)) for n in toposort(outputs, blockers=node.inputs)]

    def indexed_loop(inputs):
        env = {id(v): x for v, x in zip(node.inputs, inputs)}
        for n, fn in steps:
            for o, value in zip(n.outputs, fn([env[id(i)] for i in n.inputs])):
                env[id(o)] = value
        return [env[id(o)] for o in outputs]

    return indexed_loop


@jax_impl.register(Argmax)
def _argmax(op, node):
    fn = jnp.argmax if op.mode == "max" else jnp.argmin

    def argmax(inputs):
        x = jnp.asarray(inputs[0])
        if x.shape[op.axis] == 0:
            raise ValueError(f"attempt to get {op.mode} of an empty sequence ({op})")
        return [fn(x, axis=op.axis).astype(np.int64)]

    return argmax

