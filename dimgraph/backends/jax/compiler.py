"""From a rewritten FunctionGraph to one `jax.jit` function, and the callable around it.

`graph_function(fgraph)` is the pure function of the whole graph: it walks the
nodes in topological order, calling each node's `jax_impl` closure (read once,
here), and returns the outputs. Nodes whose inputs are all static (NumPy) and
whose outputs are small are evaluated with the python backend's `perform` while
tracing, so shape arithmetic never reaches XLA. The function is wrapped once in
`jax.jit`; JAX retraces it for new input shapes and dtypes only.

Data-dependent shapes: where a size, slice bound or mask needed while tracing
comes from input values (`x[:n]`, `broadcast_to(v, (k,))`, `x[mask]` with `n`,
`k`, `mask` inputs), the inputs it is computed from become static arguments
of the jit when they are small (at most STATIC_INPUT_LIMIT elements in the
call that needs it): their values are compiled in, one compile per distinct
value, as a JAX user would write `static_argnums`. A size computed from a
larger input (`x[x > 0]` for a long `x`) is a NotImplementedError.

64-bit: NumPy dtypes are kept exactly. A graph holding any 64-bit value (float64,
int64 shapes, ...) is traced and run inside `jax.enable_x64(True)`, a context
manager local to the calling thread: the user's global JAX config
(`jax.config.jax_enable_x64`) is not changed and other JAX code keeps its mode.

Its `run(arrays) -> arrays` (in a `JaxCompiled`, with the pure function and the jit caches) checks the run-time flags (`checks.py`),
and converts outputs to writable NumPy arrays unless `output="jax"`.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Callable

import jax
import numpy as np

from dimgraph.backends import Compiled, memory

# Entry families, mirroring dimgraph.core; each registers its ops with `registry.jax_impl`.
from dimgraph.backends.jax import control, elemwise, extra, fused, join, linalg, random, reduce, subtensor  # noqa: F401
from dimgraph.backends.jax import shape as _shape_entries  # noqa: F401  (registers; `shape` is a local name here)
from dimgraph.backends.jax.checks import collect
from dimgraph.backends.jax.registry import (
    FOLD_LIMIT,
    DataDependentShape,
    NeedsStatic,
    is_static,
    jax_impl,
    missing_message,
    missing_ops,
)
from dimgraph.backends.jax.sharding import Placement
from dimgraph.backends.python import python_impl
from dimgraph.core.fgraph import FunctionGraph
from dimgraph.core.graph import Constant
from dimgraph.core.shape import Shape, ShapeI
from dimgraph.errors import BackendUnavailable, InputError

# Inputs of at most this many elements whose values set a shape are compiled in as constants.
STATIC_INPUT_LIMIT = 64


def needs_x64(fgraph) -> bool:
    """Whether any value of the graph has a 64-bit dtype (JAX computes in 32 bits without x64)."""
    variables = list(fgraph.inputs) + list(fgraph.outputs)
    for node in fgraph.toposort():
        variables.extend(node.inputs)
        variables.extend(node.outputs)
    return any(np.dtype(v.type.dtype).itemsize == 8 or np.dtype(v.type.dtype).kind == "c" for v in variables)


def x64_context(enabled):
    """`jax.enable_x64(True)` (thread-local) when `enabled`, else nothing."""
    return jax.enable_x64(True) if enabled else contextlib.nullcontext()


def _foldable(node) -> bool:
    size = 0
    for out in node.outputs:
        if any(s is None for s in out.type.shape):
            return False
        size += int(np.prod(out.type.shape, dtype=np.int64))
    return size <= FOLD_LIMIT


def graph_function(fgraph):
    """The pure function `(*input arrays) -> list of output arrays` of the whole graph."""
    nodes = fgraph.toposort()
    missing = missing_ops(nodes)
    if missing:
        op = next(n.op for n in nodes if type(n.op) is missing[0])
        raise NotImplementedError(missing_message(op))
    slot, template = {}, []

    def slot_of(var):
        if var not in slot:
            slot[var] = len(template)
            template.append(np.asarray(var.data) if isinstance(var, Constant) else None)
        return slot[var]

    input_slots = [slot_of(v) for v in fgraph.inputs]
    program = []
    for node in nodes:
        program.append(
            (
                jax_impl(node.op, node),
                python_impl(node.op, node),
                _foldable(node),
                [slot_of(i) for i in node.inputs],
                [slot_of(o) for o in node.outputs],
                node,
            )
        )
    output_slots = [slot_of(v) for v in fgraph.outputs]

    def graph(*args):
        values = list(template)
        for s, a in zip(input_slots, args):
            values[s] = a
        for impl, fold, small_out, ins, outs, node in program:
            vals = [values[i] for i in ins]
            if all(is_static(v) for v in vals) and (small_out or sum(np.size(v) for v in vals) <= FOLD_LIMIT):
                results = fold(vals)
            else:
                try:
                    results = impl(vals)
                except DataDependentShape as err:
                    raise NeedsStatic(_static_candidates(fgraph, args, node, vals, err.value), err) from None
                if not isinstance(node.op, memory.VIEWS):  # XLA aborts the process on a hopeless allocation
                    for r, var in zip(results, node.outputs):
                        memory.check_fits(np.shape(r), var.type.dtype, f"{node.op} (output {var.name or var.index})")
            for s, r, var in zip(outs, results, node.outputs):
                values[s] = _conform(node, var, r)
        return [values[s] for s in output_slots]

    return graph


@jax_impl.register(FunctionGraph)
def _graph(fgraph, node=None):
    """A whole graph is a registry entry too (`graph_function`): control flow compiles its inner graphs through the registry."""
    return graph_function(fgraph)


def _static_candidates(fgraph, args, node, vals, value):
    """The graph inputs `value` is computed from (through values, not through shapes), if all are small now."""
    start = [v for v, x in zip(node.inputs, vals) if x is value] or [
        v for v, x in zip(node.inputs, vals) if not is_static(x)
    ]
    position = {v: k for k, v in enumerate(fgraph.inputs)}
    found, seen, stack = set(), set(), list(start)
    while stack:
        v = stack.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in position:
            if int(np.prod(np.shape(args[position[v]]), dtype=np.int64)) > STATIC_INPUT_LIMIT:
                return None
            found.add(position[v])
        elif v.owner is not None and not isinstance(v.owner.op, (ShapeI, Shape)):  # shapes are static already
            stack.extend(v.owner.inputs)
    return frozenset(found) or None


class StaticValue:
    """A small input compiled in as a constant: hashable by dtype, shape and bytes (a `jax.jit` static argument)."""

    __slots__ = ("array", "_key")

    def __init__(self, value):
        self.array = np.array(value)
        self._key = (self.array.dtype.str, self.array.shape, self.array.tobytes())

    def __hash__(self):
        return hash(self._key)

    def __eq__(self, other):
        return isinstance(other, StaticValue) and self._key == other._key


def _conform(node, var, value):
    """Every result has its static dtype and shape (a mismatch is a bug in an entry)."""
    dtype, shape = var.type.dtype, var.type.shape
    if is_static(value):
        value = np.asarray(value)
    if (
        value.dtype != dtype
        or value.ndim != len(shape)
        or any(s is not None and s != v for s, v in zip(shape, value.shape))
    ):
        raise RuntimeError(
            f"internal error in the jax backend: {node.op} gave {value.dtype}{tuple(value.shape)} "
            f"but its type says {var.type}"
        )
    return value


def _backends_started() -> bool:
    try:
        from jax._src import xla_bridge
    except ImportError:  # pragma: no cover  (a JAX without the module: assume started)
        return True
    started = getattr(xla_bridge, "backends_are_initialized", None)
    return True if started is None else bool(started())


_forked_after_start = False


def _note_fork():
    global _forked_after_start
    _forked_after_start = _forked_after_start or _backends_started()


os.register_at_fork(after_in_child=_note_fork)


def check_not_forked():
    """Refuse to run in a child forked after JAX started its threads: XLA would hang there, not fail."""
    if _forked_after_start:
        raise BackendUnavailable(
            f"the jax backend cannot run in this process (pid {os.getpid()}): it was forked from a process in "
            "which JAX had already started, and JAX is not fork-safe (the call would hang); start workers with "
            "multiprocessing's 'spawn' or 'forkserver' method, or use another backend in forked workers"
        )


def compile_graph(fgraph, output="numpy", shard=None, mesh=None):
    """The `JaxCompiled` of `fgraph` (see `dimgraph.backends.jax` for the options; `BACKEND.compile` checks their names)."""
    check_not_forked()
    if output not in ("numpy", "jax"):
        raise ValueError(f"the jax backend's output= must be 'numpy' or 'jax', got {output!r}")
    graph = graph_function(fgraph)
    x64 = needs_x64(fgraph)
    placement = Placement(shard, mesh) if shard else None

    def traced(*args):
        with collect() as checks:
            outs = graph(*[a.array if isinstance(a, StaticValue) else a for a in args])
            return outs, checks.flags()

    jitted = {frozenset(): jax.jit(traced)}  # by the set of inputs compiled in as constants
    static = frozenset()
    to_numpy = output == "numpy"

    def run(arrays):
        nonlocal static
        if _forked_after_start:
            check_not_forked()
        with x64_context(x64):
            if placement is not None:
                arrays = placement.place(arrays)
            while True:
                for k in static:
                    if np.size(arrays[k]) > STATIC_INPUT_LIMIT:
                        raise DataDependentShape(
                            f"the jax backend compiles input {k} in as a constant because its values set an "
                            f"output shape, but it has {np.size(arrays[k])} elements (more than {STATIC_INPUT_LIMIT}): "
                            "the output shape would depend on data (XLA needs static shapes); use another backend",
                            None,
                        )
                args = [StaticValue(a) if k in static else a for k, a in enumerate(arrays)]
                try:
                    outs, flags = jitted[static](*args)
                    break
                except NeedsStatic as need:
                    if need.positions is None or need.positions <= static:
                        raise need.error from None
                    static = static | need.positions
                    jitted[static] = jax.jit(traced, static_argnums=tuple(sorted(static)))
        if flags is not None:
            flags.raise_failed()
        return [np.array(o) for o in outs] if to_numpy else list(outs)

    single = len(fgraph.outputs) == 1

    def fast(*arrays):
        """`Function`'s positional entry (arrays of the exact dtypes): a bare array for one output, else a tuple."""
        outs = run(list(arrays))
        return outs[0] if single else tuple(outs)

    in_dtypes = [np.dtype(v.type.dtype) for v in fgraph.inputs]

    def jax_fn(*args):
        # The caller's mode (x64 or not) decides the dtypes at the boundary, so a value and its
        # gradient agree; in between, the graph computes in its own dtypes (64-bit under x64_context).
        if _forked_after_start:  # called bare in a forked child, it would hang as `run` would
            check_not_forked()
        narrow = x64 and jax.dtypes.canonicalize_dtype(np.float64) != np.float64  # the caller runs without x64
        with x64_context(x64):
            # Python and NumPy values stay static (as `static_argnums` under the user's jit): a size or a
            # branch condition they set is known while tracing, as in the compiled function's own jit
            args = [
                np.asarray(a, dtype=d) if is_static(a) else jax.numpy.asarray(a, dtype=d)
                for a, d in zip(args, in_dtypes)
            ]
            try:
                outs = graph(*args)
            except NeedsStatic as need:
                raise need.error from None
            return [
                jax.numpy.asarray(o, dtype=_NARROW.get(np.dtype(o.dtype), o.dtype) if narrow else o.dtype) for o in outs
            ]

    return JaxCompiled(
        run,
        fast=fast,
        exports={"jax_fn": lambda function: _user_jax_fn(jax_fn, function)},
        jax_fn=jax_fn,
        jitted=jitted,
        static_inputs=lambda: static,
        x64=x64,
        placement=placement,
    )


@dataclass(frozen=True)
class JaxCompiled(Compiled):
    jax_fn: Callable | None = None  # the pure JAX function of the graph (positional arrays in and out)
    jitted: dict = field(default_factory=dict)  # {inputs compiled in as constants: the jitted function}
    static_inputs: Callable | None = None  # () -> the positions of the inputs compiled in as constants so far
    x64: bool = False  # whether the graph runs under `jax.enable_x64(True)`
    placement: Placement | None = None  # the inputs' shardings (`shard=`), or None


_NARROW = {np.dtype(a): np.dtype(b) for a, b in [("f8", "f4"), ("i8", "i4"), ("u8", "u4"), ("c16", "c8")]}


def _user_jax_fn(jax_fn, function):
    """`f.jax_fn`: the pure JAX function of a compiled `Function`, returning what `f` returns.

    Arguments: positional arrays for `f.inputs` (labeled ones in their declared
    dim order), then the values of the shared variables the graph reads. The
    result is `f`'s (bare when `f` has one output), or `(outputs, new shared
    values)` when `f` has updates. Outputs are JAX arrays, never DataArrays.
    """
    n_out = len(function.outputs)
    signature = function.signature
    single = signature.single
    has_updates = bool(signature.update_targets)

    names = signature.labels()
    names += [s.name or f"shared variable {k}" for k, s in enumerate(signature.shared)]
    types = [v.type for v in function.fgraph.inputs]

    def user_fn(*args):
        _check_arguments(args, names, types)
        res = jax_fn(*args)
        outs = res[0] if single else list(res[:n_out])
        return (outs, list(res[n_out:])) if has_updates else outs

    user_fn.__doc__ = _user_jax_fn.__doc__
    return user_fn


def _check_arguments(args, names, types):
    """Arguments of `f.jax_fn` against the inputs' axes and static sizes: an InputError naming the input.

    Under `jax.vmap` the shapes seen here are those of one batch element, as the graph expects.
    """
    if len(args) != len(types):
        raise InputError(f"jax_fn takes {len(types)} arguments {names}, got {len(args)}")
    for name, arg, t in zip(names, args, types):
        shape = tuple(np.shape(arg))
        if len(shape) != t.ndim or any(s is not None and s != n for s, n in zip(t.shape, shape)):
            expected = (
                "(" + ", ".join("?" if s is None else str(s) for s in t.shape) + ("," if t.ndim == 1 else "") + ")"
            )
            raise InputError(f"jax_fn: input {name!r}: expected shape {expected}, got shape {shape}")
