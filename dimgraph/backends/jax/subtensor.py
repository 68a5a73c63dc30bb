"""JAX entries of indexing (`dimgraph.core.subtensor`): `Subtensor`, `AdvancedSubtensor` and their set/inc counterparts.

The index is rebuilt while tracing from the op's static description
(`dimgraph.core.subtensor`): ints and slice bounds known while tracing are
Python ints; a position computed from data stays a traced scalar (JAX gathers
with it) and gets a run-time bounds check. Slice bounds and boolean masks
computed from data would give data-dependent shapes: NotImplementedError.
`inc` accumulates repeated positions (scatter-add, as `np.add.at`); `set` at
repeated positions keeps the last value, as NumPy (JAX alone leaves it unspecified).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from dimgraph.backends.jax.checks import checked_before, range_of, runtime_check
from dimgraph.backends.jax.registry import DataDependentShape, is_static, jax_impl, static_int
from dimgraph.core.graph import Constant
from dimgraph.core.subtensor import (
    ARRAY,
    NEWAXIS,
    SYMBOLIC,
    AdvancedIncSubtensor,
    AdvancedSubtensor,
    IncSubtensor,
    Subtensor,
    check_index_shapes,
    check_value_shape,
)


def _out_of_bounds(k, axis, n):
    return f"index {k} is out of bounds for axis {axis} with size {n}"


def _escaped(op) -> str:
    """`str(op)` for a message whose `{}` the failed check's index fills."""
    return str(op).replace("{", "{{").replace("}", "}}")


def _position(op, value, axis, n):
    """A scalar position on an axis of size `n`: a Python int (checked now) or a traced one (checked at run time)."""
    if is_static(value):
        k = int(value)
        if not -n <= k < n:
            raise IndexError(f"{op}: {_out_of_bounds(k, axis, n)}")
        return k
    known = range_of(value)
    if known is not None and -n <= known[0] and known[1] <= n:  # a loop's step number on a long enough sequence
        return jnp.asarray(value)
    value = jnp.asarray(value)
    inside = (value < n) if jnp.issubdtype(value.dtype, jnp.unsignedinteger) else (value >= -n) & (value < n)
    runtime_check(inside, IndexError, _escaped(op) + f": {_out_of_bounds('{}', axis, n)}", value)
    return value


def _slice(op, entry, scalars):
    parts = [static_int(next(scalars), op, "slice bound") if p == SYMBOLIC else p for p in entry[1:]]
    return slice(*parts)


def _basic_key(op, shape, scalars):
    scalars = iter(scalars)
    key, axis = [], 0
    for e in op.index:
        if e == NEWAXIS:
            key.append(None)
            continue
        if e == SYMBOLIC:
            key.append(_position(op, next(scalars), axis, shape[axis]))
        elif isinstance(e, tuple):
            key.append(_slice(op, e, scalars))
        else:
            key.append(_position(op, e, axis, shape[axis]))
        axis += 1
    return tuple(key)


def _selection_shape(shape, key):
    """The shape of `x[key]` for `x` of `shape`, found on a zero-stride NumPy stand-in (no memory)."""
    dummy = np.broadcast_to(np.zeros((), np.bool_), tuple(shape))
    np_key = tuple(
        np.zeros(np.shape(k), np.int64) if not (is_static(k) or k is None or isinstance(k, slice)) else k for k in key
    )
    return dummy[np_key].shape


def _update(x, key, v, mode):
    ref = jnp.asarray(x).at[key]
    if mode == "set":
        return ref.set(v)
    if x.dtype == np.bool_:  # NumPy: True + True stays True (logical or)
        return jnp.asarray(x).astype(np.int8).at[key].add(jnp.asarray(v).astype(np.int8)) != 0
    return ref.add(v)


def _set_last_wins(x, key, v):
    """`x` with `x[key] = v` where, at repeated positions, the last value lands (NumPy's order).

    A scatter-max of each update's order number finds the last one per position;
    the others are sent out of range and dropped.
    """
    x = jnp.asarray(x)
    n = x.size
    itype = np.int32 if n < 2**31 - 1 else np.int64
    selection = jnp.arange(n, dtype=itype).reshape(x.shape)[key]
    pos = selection.reshape(-1)
    vals = jnp.broadcast_to(jnp.asarray(v, x.dtype), selection.shape).reshape(-1)
    order = jnp.arange(pos.size, dtype=itype)
    last = jnp.full((n,), -1, itype).at[pos].max(order)
    wins = last[pos] == order
    return x.reshape(-1).at[jnp.where(wins, pos, n)].set(vals, mode="drop").reshape(x.shape)


@jax_impl.register(Subtensor)
def _subtensor(op, node):
    def subtensor(inputs):
        x, *scalars = inputs
        key = _basic_key(op, x.shape, scalars)
        if is_static(x) and all(is_static(k) or k is None or isinstance(k, slice) for k in key):
            return [np.array(x[key])]
        return [jnp.asarray(x)[key]]

    return subtensor


def _update_window(x, key, v, mode):
    """`x[key] = v` or `+= v` for a basic `key` of positions and slices of step 1 or -1, as a dynamic slice
    updated in place (`lax.dynamic_update_slice`), not a scatter: faster, and XLA's simplifier has
    crashed on a reversed scatter-add (`x[::-1] += g`, in the gradient of a scan over a reversed
    sequence). None for other steps."""
    x = jnp.asarray(x)
    shape = _selection_shape(x.shape, key)
    starts, sizes, flips, axis = [], [], [], 0
    for e in key:
        if e is None:
            continue
        n = x.shape[axis]
        axis += 1
        if not isinstance(e, slice):  # a position, checked in range by `_basic_key`
            starts.append(e + n if is_static(e) and e < 0 else (e if is_static(e) else jnp.where(e < 0, e + n, e)))
            sizes.append(1)
            continue
        start, stop, step = e.indices(n)
        if step not in (1, -1):
            return None
        count = max(0, (stop - start) * step)
        starts.append(start if step == 1 else start - count + 1)
        sizes.append(count)
        if step == -1:
            flips.append(len(sizes) - 1)
    starts += [0] * (x.ndim - len(starts))
    sizes += list(x.shape[len(sizes) :])
    v = jnp.broadcast_to(jnp.asarray(v).astype(x.dtype), shape).reshape(sizes)
    v = jnp.flip(v, flips) if flips else v
    starts = [jnp.asarray(s).astype(np.int32) for s in starts]  # one dtype for all (x64 or not)
    if mode != "set":
        region = jax.lax.dynamic_slice(x, starts, sizes)
        v = (region | v) if x.dtype == np.bool_ else region + v  # NumPy: True + True stays True
    return jax.lax.dynamic_update_slice(x, v, starts)


@jax_impl.register(IncSubtensor)
def _inc_subtensor(op, node):
    def inc_subtensor(inputs):
        x, v, *scalars = inputs
        key = _basic_key(op, x.shape, scalars)
        check_value_shape(op, node.inputs[1].type, np.shape(v), _selection_shape(x.shape, key))
        out = _update_window(x, key, v, op.mode)
        return [out if out is not None else _update(x, key, v, op.mode)]

    return inc_subtensor


def _advanced_key(op, node, x_shape, idx_values, idx_vars):
    """The index for jnp (static masks become integer arrays), with bounds and broadcasting checked."""
    values, variables = iter(idx_values), iter(idx_vars)
    key, arrays, axis = [], [], 0
    for e in op.index:
        if e == NEWAXIS:
            key.append(None)
            continue
        if e != ARRAY:
            key.append(_slice(op, e, values))
            for _ in range(sum(p == SYMBOLIC for p in e[1:])):
                next(variables)  # keep the variables in step with the values
            axis += 1
            continue
        a, var = next(values), next(variables)
        if np.dtype(var.type.dtype) == np.bool_:
            if not is_static(a):
                raise DataDependentShape(
                    f"the jax backend cannot compile {op}: a boolean mask computed from input data gives an "
                    "output whose size depends on data (XLA needs static shapes); use integer positions, "
                    "a constant mask, or another backend",
                    a,
                )
            a = np.asarray(a)
            for k in range(a.ndim):
                if a.shape[k] != x_shape[axis + k]:
                    raise IndexError(
                        f"{op}: boolean index did not match indexed array along axis {axis + k}; size of axis is "
                        f"{x_shape[axis + k]} but size of corresponding boolean axis is {a.shape[k]}"
                    )
            nonzero = np.nonzero(a)
            static = (int(np.count_nonzero(var.data)),) if isinstance(var, Constant) else (None,)
            for part in nonzero:
                key.append(part)
                arrays.append((part.shape, static))
            axis += a.ndim
            continue
        n = x_shape[axis]
        if is_static(a):
            a = np.asarray(a)
            bad = a[(a < -n) | (a >= n)]
            if bad.size:
                raise IndexError(f"{op}: {_out_of_bounds(int(bad.flat[0]), axis, n)}")
        else:
            checked = checked_before(a, "in bounds", n)  # by the graph's value: the same index array read again
            a = jnp.asarray(a)
            if not checked:
                ok = jnp.all(_inside(a, n))
                # the offending value is looked for only when the check fails (a second pass over the index)
                first_bad = (
                    jax.lax.cond(ok, lambda a: a.ravel()[0], lambda a: a.ravel()[jnp.argmin(_inside(a, n).ravel())], a)
                    if a.size
                    else None
                )
                runtime_check(ok, IndexError, _escaped(op) + f": {_out_of_bounds('{}', axis, n)}", first_bad)
        key.append(a)
        arrays.append((tuple(a.shape), var.type.shape))
        axis += 1
    check_index_shapes(op, [static for _, static in arrays], [shape for shape, _ in arrays])
    return tuple(key)


def _inside(a, n):
    """Where index values lie in [-n, n); an unsigned index is never negative (`-n` would wrap)."""
    return (a < n) if jnp.issubdtype(a.dtype, jnp.unsignedinteger) else (a >= -n) & (a < n)


@jax_impl.register(AdvancedSubtensor)
def _advanced_subtensor(op, node):
    def advanced_subtensor(inputs):
        x, *idx = inputs
        key = _advanced_key(op, node, x.shape, idx, node.inputs[1:])
        return [jnp.asarray(x)[key]]

    return advanced_subtensor


@jax_impl.register(AdvancedIncSubtensor)
def _advanced_inc_subtensor(op, node):
    def advanced_inc_subtensor(inputs):
        x, v, *idx = inputs
        key = _advanced_key(op, node, x.shape, idx, node.inputs[2:])
        check_value_shape(op, node.inputs[1].type, np.shape(v), _selection_shape(x.shape, key))
        if op.mode == "set":
            return [_set_last_wins(x, key, v)]
        return [_update(x, key, v, op.mode)]

    return advanced_inc_subtensor
