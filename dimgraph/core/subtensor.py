"""Indexing: basic (`Subtensor`) and advanced (`AdvancedSubtensor`), with set/inc counterparts.

`getitem(x, index)` (behind `x[index]`) parses a NumPy index once, when the
graph is built, into a static description kept in the op:

- an int (a constant position), `SYMBOLIC` (a 0-d int64 input), `NEWAXIS`,
  `("slice", start, stop, step)` whose parts are ints, None or `SYMBOLIC`;
- in advanced indexing also `ARRAY` (an integer or boolean array input; plain
  ints mixed with arrays become 0-d arrays, which is how NumPy treats them).

Ellipsis is expanded and trailing axes get full slices, so the description
covers every axis of `x`. Symbolic parts are the op's inputs after `x` (and
after the value `v` for the set/inc ops), in the order they appear.

Invariants: output shapes come from one function per op family
(`_basic_shape`, `_advanced_shape`) shared by the get and set/inc ops; a
constant position out of range is an IndexError when the graph is built,
naming the axis; index arrays broadcast only where their static size is 1
(an unknown-size axis that turns out to be 1 against a longer one is a
run-time `ShapeError`, as in Elemwise).
"""

from __future__ import annotations

import builtins
from dataclasses import dataclass

import numpy as np

from dimgraph.core.basic import as_tensor, constant, is_float, is_python_scalar
from dimgraph.core.broadcast import broadcast_shape
from dimgraph.core.graph import Constant, Op, Variable
from dimgraph.core.math import eq, maximum, minimum, where
from dimgraph.core.reduce import sum as reduce_sum
from dimgraph.core.reduce import sum_to
from dimgraph.core.shape import build, product, shape_of, static_or_symbolic, to_static
from dimgraph.core.shape_ops import pin_shape, reshape, zeros, zeros_like
from dimgraph.errors import ShapeError

SYMBOLIC = "?"
NEWAXIS = "newaxis"
ARRAY = "array"
FULL_SLICE = ("slice", None, None, None)


# ---------------------------------------------------------------------------
# shape arithmetic on entries that are ints or symbolic int64 scalars


def _is_int(v):
    return isinstance(v, (int, np.integer))


def _max(a, b):
    return builtins.max(a, b) if _is_int(a) and _is_int(b) else maximum(a, b)


def _min(a, b):
    return builtins.min(a, b) if _is_int(a) and _is_int(b) else minimum(a, b)


def _clamp_bound(v, n, default, negative_step):
    """A slice bound normalised as `slice.indices` does: wrapped once, then clamped."""
    if v is None:
        return default
    lo, hi = (-1, n - 1) if negative_step else (0, n)
    if _is_int(v):
        return _max(v + n, lo) if v < 0 else _min(v, hi)
    return where(v < 0, _max(v + n, lo), _min(v, hi))


def _len_for_sign(n, start, stop, step, negative_step):
    start = _clamp_bound(start, n, n - 1 if negative_step else 0, negative_step)
    stop = _clamp_bound(stop, n, -1 if negative_step else n, negative_step)
    if negative_step:
        return _max((start - stop + (-step) - 1) // (-step), 0)
    return _max((stop - start + step - 1) // step, 0)


def slice_length(n, start, stop, step):
    """Length of `range(n)[start:stop:step]`; ints fold to an int, else an int64 graph.

    >>> slice_length(10, None, None, -3), slice_length(5, -2, None, None)
    (4, 2)
    """
    step = 1 if step is None else step
    if all(v is None or _is_int(v) for v in (n, start, stop, step)):
        return len(range(int(n))[slice(start, stop, step)])
    if _is_int(step):
        return _len_for_sign(n, start, stop, int(step), int(step) < 0)
    return where(step > 0, _len_for_sign(n, start, stop, step, False), _len_for_sign(n, start, stop, step, True))


# ---------------------------------------------------------------------------
# parsing a NumPy index


def _classify(item):
    """One raw index item as (kind, payload); kinds: newaxis, ellipsis, slice, int, array."""
    if item is None:
        return ("newaxis", None)
    if item is Ellipsis:
        return ("ellipsis", None)
    if isinstance(item, slice):
        return ("slice", item)
    if isinstance(item, (bool, np.bool_)):
        raise TypeError(f"indexing with a boolean scalar ({item!r}) is not supported; use a boolean array")
    if isinstance(item, (int, np.integer)):
        return ("int", int(item))
    if isinstance(item, Variable):
        var = as_tensor(item)
        kind = np.dtype(var.type.dtype).kind
        if kind not in "iub":
            raise IndexError(f"index arrays must be integer or boolean, got {var!r} of dtype {var.type.dtype}")
        if var.type.ndim == 0:
            if kind == "b":
                raise TypeError(f"indexing with a boolean scalar ({var!r}) is not supported; use a boolean array")
            static = to_static(var)
            return ("int", static) if static is not None else ("int", var)
        return ("array", var)
    arr = np.asarray(item)
    if arr.dtype.kind not in "iub":
        if arr.size == 0 and arr.dtype.kind == "f":  # [] gives float64; NumPy indexes with it as ints
            arr = arr.astype(np.int64)
        else:
            raise IndexError(
                f"only integers, slices, None, Ellipsis and integer or boolean arrays are valid indices; got {item!r}"
            )
    if arr.ndim == 0:
        if arr.dtype.kind == "b":
            raise TypeError(f"indexing with a boolean scalar ({item!r}) is not supported; use a boolean array")
        return ("int", int(arr))
    return ("array", constant(arr if arr.dtype.kind == "b" else arr.astype(np.int64)))


def _as_index_scalar(v):
    """A slice part as an int, None, or a 0-d int64 variable."""
    if v is None or _is_int(v):
        return None if v is None else int(v)
    if isinstance(v, (bool, np.bool_)):
        raise TypeError(f"slice bounds must be integers or None, got {v!r}")
    var = as_tensor(v)
    if var.type.ndim != 0 or np.dtype(var.type.dtype).kind not in "iu":
        raise TypeError(f"slice bounds must be integers, None or 0-d integer variables, got {var!r}")
    static = to_static(var)
    if static is not None:
        return static
    return var if var.type.dtype == "int64" else var.astype("int64")


def _parse(x, index):
    """The classified items of `index` with Ellipsis expanded and trailing full slices added."""
    if not isinstance(index, tuple):
        index = (index,)
    items = [_classify(i) for i in index]
    consumed = 0
    for kind, payload in items:
        if kind in ("int", "slice"):
            consumed += 1
        elif kind == "array":
            consumed += payload.type.ndim if payload.type.dtype == "bool" else 1
    ndim = x.type.ndim
    if consumed > ndim:
        raise IndexError(f"too many indices for {x!r}: it has {ndim} axes but {consumed} were indexed")
    n_ellipsis = sum(kind == "ellipsis" for kind, _ in items)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    fill = [("slice", slice(None))] * (ndim - consumed)
    if n_ellipsis:
        k = next(i for i, (kind, _) in enumerate(items) if kind == "ellipsis")
        items = items[:k] + fill + items[k + 1 :]
    else:
        items = items + fill
    return items


def _slice_entry(s, inputs):
    parts = []
    for v in (s.start, s.stop, s.step):
        v = _as_index_scalar(v)
        if isinstance(v, Variable):
            inputs.append(v)
            parts.append(SYMBOLIC)
        else:
            parts.append(v)
    if parts[2] == 0:
        raise ValueError("slice step cannot be zero")
    return ("slice", *parts)


def getitem(x, index):
    """`x[index]` with NumPy semantics: basic indexing gives a `Subtensor`, arrays an `AdvancedSubtensor`.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(4, None))
    >>> y = x[1:, ::-1]
    >>> y.type.shape, y.eval({x: np.arange(8.0).reshape(4, 2)})[0].tolist()
    ((3, None), [3.0, 2.0])
    """
    x = as_tensor(x)
    items = _parse(x, index)
    advanced = any(kind == "array" for kind, _ in items)
    entries, inputs = [], []
    for kind, payload in items:
        if kind == "newaxis":
            entries.append(NEWAXIS)
        elif kind == "slice":
            entries.append(_slice_entry(payload, inputs))
        elif kind == "int":
            if advanced:
                inputs.append(constant(payload, dtype="int64") if _is_int(payload) else payload)
                entries.append(ARRAY)
            elif _is_int(payload):
                entries.append(payload)
            else:
                inputs.append(payload if payload.type.dtype == "int64" else payload.astype("int64"))
                entries.append(SYMBOLIC)
        else:  # array
            inputs.append(payload)
            entries.append(ARRAY)
    op = AdvancedSubtensor(tuple(entries)) if advanced else Subtensor(tuple(entries))
    return op(x, *inputs)


# ---------------------------------------------------------------------------
# basic indexing


def _check_constant_position(k, size, axis, where):
    if size is not None and not -size <= k < size:
        raise IndexError(f"{where}: index {k} is out of bounds for axis {axis} with size {size}")


def _validate_basic(op_name, index, x, scalars):
    n_sym = 0
    axis = 0
    for e in index:
        if e == NEWAXIS:
            continue
        if e == SYMBOLIC:
            n_sym += 1
        elif _is_int(e):
            _check_constant_position(e, x.type.shape[axis], axis, op_name)
        elif isinstance(e, tuple) and e[0] == "slice" and len(e) == 4:
            if e[3] == 0:
                raise ValueError(f"{op_name}: slice step cannot be zero")
            n_sym += sum(p == SYMBOLIC for p in e[1:])
        else:
            raise TypeError(f"{op_name}: invalid index entry {e!r}")
        axis += 1
    if axis != x.type.ndim:
        raise IndexError(f"{op_name}: the index covers {axis} axes but {x!r} has {x.type.ndim}")
    if len(scalars) != n_sym:
        raise TypeError(f"{op_name}: expected {n_sym} symbolic index inputs, got {len(scalars)}")
    for s in scalars:
        if s.type.ndim != 0 or np.dtype(s.type.dtype).kind not in "iu":
            raise TypeError(f"{op_name}: symbolic index parts must be 0-d integers, got {s!r}")


def _basic_shape(index, x_shape, scalars):
    """Output shape of basic indexing; `scalars` are the symbolic parts in order."""
    it = iter(scalars)
    out, axis = [], 0
    for e in index:
        if e == NEWAXIS:
            out.append(1)
            continue
        if isinstance(e, tuple):
            parts = [next(it) if p == SYMBOLIC else p for p in e[1:]]
            parts = [to_static(p) if isinstance(p, Variable) and to_static(p) is not None else p for p in parts]
            out.append(slice_length(x_shape[axis], *parts))
        elif e == SYMBOLIC:
            next(it)
        axis += 1
    return tuple(out)


def _basic_key(index, scalars):
    """The Python index tuple for NumPy from the static entries and run-time scalars."""
    it = iter(scalars)
    key = []
    for e in index:
        if e == NEWAXIS:
            key.append(None)
        elif e == SYMBOLIC:
            key.append(int(next(it)))
        elif isinstance(e, tuple):
            key.append(slice(*[int(next(it)) if p == SYMBOLIC else p for p in e[1:]]))
        else:
            key.append(e)
    return tuple(key)


def _index_str(index):
    parts = []
    for e in index:
        if e == NEWAXIS:
            parts.append("None")
        elif isinstance(e, tuple):
            s = ":".join("" if p is None else str(p) for p in e[1:])
            parts.append(s[:-1] if s.endswith(":") else s)
        else:
            parts.append(str(e))
    return ", ".join(parts)


@dataclass(frozen=True)
class Subtensor(Op):
    """Basic indexing (ints, slices, newaxis); the output shape is static wherever the sizes allow."""

    index: tuple

    def make_node(self, x, *scalars):
        x = as_tensor(x)
        scalars = [as_tensor(s) for s in scalars]
        _validate_basic(str(self), self.index, x, scalars)
        return build(self, [x, *scalars], [x.type.dtype])

    def infer_shape(self, inputs, input_shapes):
        return [_basic_shape(self.index, input_shapes[0], inputs[1:])]

    def perform(self, node, inputs):
        x, *scalars = inputs
        return [np.array(x[_basic_key(self.index, scalars)])]

    def L_op(self, inputs, outputs, output_grads):
        """The output gradient written back into zeros of x's shape; index parts get None.

        One position on one axis, full slices elsewhere (`theta[k]`, `x[:, k]`) scatters through
        the advanced form with a 0-d position, the same result as the basic one, which backends
        print as a loop (numba runs a basic IncSubtensor in object mode).
        """
        x, *scalars = inputs
        if not is_float(x):
            return [None] * len(inputs)
        (g,) = output_grads
        positions = [k for k, e in enumerate(self.index) if e == SYMBOLIC or _is_int(e)]
        if len(positions) == 1 and all(e == FULL_SLICE for k, e in enumerate(self.index) if k != positions[0]):
            e = self.index[positions[0]]
            k = scalars[0] if e == SYMBOLIC else constant(e, dtype="int64")
            index = tuple(ARRAY if j == positions[0] else FULL_SLICE for j in range(len(self.index)))
            gx = AdvancedIncSubtensor(index, "inc")(zeros_like(x), g, k.astype("int64"))
        elif (padded := _pad_slice_gradient(self.index, x, g)) is not None:
            gx = padded
        else:
            gx = IncSubtensor(self.index, "inc")(zeros_like(x), g, *scalars)
        return [gx] + [None] * len(scalars)

    def __str__(self):
        return f"Subtensor[{_index_str(self.index)}]"


def _pad_slice_gradient(index, x, g):
    """For `x[a:b]` on one axis (constant bounds, step 1, full slices elsewhere): `g` between zeros,
    one Join (printed by every backend); None for other indices."""
    from dimgraph.core.join import concatenate  # cycle: join's gradients slice (getitem)

    sliced = [k for k, e in enumerate(index) if e != FULL_SLICE]
    if len(sliced) != 1 or len(index) != x.type.ndim:
        return None
    axis = sliced[0]
    e = index[axis]
    if not (isinstance(e, tuple) and e[3] in (None, 1) and all(p is None or _is_int(p) for p in e[1:3])):
        return None
    n = static_or_symbolic(x)[axis]
    start = _clamp_bound(e[1], n, 0, False)
    length = shape_of(g)[axis]
    after = n - start - length
    g_shape = shape_of(g)
    pieces = [zeros(g_shape[:axis] + (start,) + g_shape[axis + 1 :], x.type.dtype), g]
    pieces.append(zeros(g_shape[:axis] + (after,) + g_shape[axis + 1 :], x.type.dtype))
    pieces = [p for p in pieces if p.type.shape[axis] != 0]
    if not pieces:
        return None
    return pin_shape(concatenate(pieces, axis=axis) if len(pieces) > 1 else pieces[0], x)


def _check_value(op_name, target_shape, v):
    """`v` must broadcast to the selection (right-aligned, static size 1 stretches)."""
    if v.type.ndim > len(target_shape):
        raise ValueError(f"{op_name}: the value {v!r} has {v.type.ndim} axes but the selection has {len(target_shape)}")
    offset = len(target_shape) - v.type.ndim
    for k, s in enumerate(v.type.shape):
        t = to_static(target_shape[offset + k])
        if s is not None and s != 1 and t is not None and s != t:
            raise ShapeError(
                f"{op_name}: axis {k} of the value {v!r} has size {s}, which cannot broadcast to the "
                f"selection's size {t}"
            )


def check_value_shape(op, v_type, v_shape, target_shape):
    """The value of a set/inc fits the selection's run-time shape: only its axes of static size 1 stretch."""
    statics = [(None,) * len(target_shape), v_type.shape]
    broadcast_shape(str(op), statics, [tuple(target_shape), tuple(v_shape)], names=["the selection", "the value"])


def _check_mode(mode):
    if mode not in ("set", "inc"):
        raise ValueError(f"mode must be 'set' or 'inc', got {mode!r}")


@dataclass(frozen=True)
class IncSubtensor(Op):
    """`x` with `x[index]` replaced by (`mode="set"`) or incremented by (`mode="inc"`) the value `v`."""

    index: tuple
    mode: str = "inc"

    def __post_init__(self):
        _check_mode(self.mode)

    def make_node(self, x, v, *scalars):
        x, v = as_tensor(x), as_tensor(v)
        scalars = [as_tensor(s) for s in scalars]
        _validate_basic(str(self), self.index, x, scalars)
        if v.type.dtype != x.type.dtype:
            raise TypeError(f"{self}: the value has dtype {v.type.dtype}, expected {x.type.dtype} (x's dtype)")
        target = _basic_shape(self.index, static_or_symbolic(x), scalars)
        _check_value(str(self), target, v)
        return build(self, [x, v, *scalars], [x.type.dtype])

    def infer_shape(self, inputs, input_shapes):
        return [input_shapes[0]]

    def perform(self, node, inputs):
        x, v, *scalars = inputs
        out = x.copy()
        key = _basic_key(self.index, scalars)
        check_value_shape(self, node.inputs[1].type, np.shape(v), out[key].shape)
        if self.mode == "set":
            out[key] = v
        else:
            out[key] += v
        return [out]

    def L_op(self, inputs, outputs, output_grads):
        """x gets the gradient (with the set region zeroed for `set`); v gets it read at the selection,
        summed over the axes v was broadcast along."""
        x, v, *scalars = inputs
        (g,) = output_grads
        if not is_float(x):
            return [None] * len(inputs)
        gx = g if self.mode == "inc" else IncSubtensor(self.index, "set")(g, constant(0, dtype=g.type.dtype), *scalars)
        gv = sum_to(Subtensor(self.index)(g, *scalars), v)
        return [gx, gv] + [None] * len(scalars)

    def __str__(self):
        return f"{'Set' if self.mode == 'set' else 'Inc'}Subtensor[{_index_str(self.index)}]"


# ---------------------------------------------------------------------------
# advanced indexing


def _validate_advanced(op_name, index, x, idx_inputs):
    """Check entries against x and the inputs; constant positions and masks are checked here."""
    it = iter(idx_inputs)
    axis, n_arrays = 0, 0
    for e in index:
        if e == NEWAXIS:
            continue
        if e == ARRAY:
            try:
                a = next(it)
            except StopIteration:
                raise TypeError(f"{op_name}: too few index inputs for {index}") from None
            kind = np.dtype(a.type.dtype).kind
            n_arrays += 1
            if kind == "b":
                if a.type.ndim == 0:
                    raise TypeError(f"{op_name}: boolean scalar indices are not supported")
                if axis + a.type.ndim > x.type.ndim:
                    raise IndexError(
                        f"{op_name}: too many indices: the boolean index at axis {axis} has {a.type.ndim} axes"
                    )
                for k, s in enumerate(a.type.shape):
                    size = x.type.shape[axis + k]
                    if s is not None and size is not None and s != size:
                        raise IndexError(
                            f"{op_name}: boolean index did not match the indexed array along axis {axis + k}; "
                            f"size of axis is {size} but size of the boolean axis is {s}"
                        )
                axis += a.type.ndim
                continue
            if kind not in "iu":
                raise IndexError(f"{op_name}: index arrays must be integer or boolean, got {a!r}")
            size = x.type.shape[axis] if axis < x.type.ndim else None
            if isinstance(a, Constant) and size is not None and a.data.size:
                bad = np.asarray(a.data)[(a.data < -size) | (a.data >= size)]
                if bad.size:
                    raise IndexError(
                        f"{op_name}: index {int(bad.flat[0])} is out of bounds for axis {axis} with size {size}"
                    )
        elif isinstance(e, tuple) and e[0] == "slice" and len(e) == 4:
            if e[3] == 0:
                raise ValueError(f"{op_name}: slice step cannot be zero")
            for p in e[1:]:
                if p == SYMBOLIC:
                    s = next(it, None)
                    if s is None or s.type.ndim != 0 or np.dtype(s.type.dtype).kind not in "iu":
                        raise TypeError(f"{op_name}: symbolic slice parts must be 0-d integers, got {s!r}")
        else:
            raise TypeError(f"{op_name}: invalid advanced index entry {e!r}")
        axis += 1
    if axis != x.type.ndim:
        raise IndexError(f"{op_name}: the index covers {axis} axes but {x!r} has {x.type.ndim}")
    if next(it, None) is not None:
        raise TypeError(f"{op_name}: too many index inputs for {index}")
    if n_arrays == 0:
        raise TypeError(f"{op_name}: advanced indexing needs at least one index array")


def _broadcast_index_shapes(op_name, shapes, static):
    """Broadcast shape of the index arrays (static size 1 stretches; unknown sizes assumed equal)."""
    ndim = builtins.max((len(s) for s in shapes), default=0)
    out = []
    for ax in range(ndim):
        cands = []
        for sh, st in zip(shapes, static):
            k = ax - (ndim - len(sh))
            if k >= 0:
                cands.append((sh[k], st[k]))
        known = {st for _, st in cands if st not in (None, 1)}
        if len(known) > 1:
            raise IndexError(
                f"{op_name}: shape mismatch: indexing arrays could not be broadcast together with shapes "
                f"{[tuple('?' if s is None else s for s in st) for st in static]}"
            )
        if known:
            out.append(known.pop())
        elif all(st == 1 for _, st in cands):
            out.append(1)
        else:
            out.append(next(e for e, st in cands if st is None))
    return tuple(out)


def _advanced_parts(index, x_shape, idx_inputs, idx_shapes):
    """Per entry: ("basic", size) or ("adv", shape, static shape); skipped for consumed ints."""
    it = iter(zip(idx_inputs, idx_shapes))
    parts, axis = [], 0
    for e in index:
        if e == NEWAXIS:
            parts.append(("basic", 1))
            continue
        if e == ARRAY:
            a, a_shape = next(it)
            if a.type.dtype == "bool":
                if isinstance(a, Constant):
                    nnz = int(np.count_nonzero(a.data))
                else:
                    nnz = reduce_sum(a.astype("int64"))
                parts.append(("adv", (nnz,), (nnz if _is_int(nnz) else None,)))
                axis += a.type.ndim
                continue
            parts.append(("adv", tuple(a_shape), a.type.shape))
        else:
            sl = []
            for p in e[1:]:
                if p == SYMBOLIC:
                    s, _ = next(it)
                    p = to_static(s) if to_static(s) is not None else s
                sl.append(p)
            parts.append(("basic", slice_length(x_shape[axis], *sl)))
        axis += 1
    return parts


def _advanced_shape(op_name, index, x_shape, idx_inputs, idx_shapes):
    parts = _advanced_parts(index, x_shape, idx_inputs, idx_shapes)
    adv_pos = [k for k, p in enumerate(parts) if p[0] == "adv"]
    adv = [p for p in parts if p[0] == "adv"]
    bshape = _broadcast_index_shapes(op_name, [p[1] for p in adv], [p[2] for p in adv])
    consecutive = adv_pos[-1] - adv_pos[0] + 1 == len(adv_pos)
    basics_before = [p[1] for p in parts[: adv_pos[0]] if p[0] == "basic"]
    basics_after = [p[1] for p in parts[adv_pos[0] :] if p[0] == "basic"]
    if consecutive:
        return tuple(basics_before) + bshape + tuple(basics_after)
    return bshape + tuple(basics_before) + tuple(basics_after)


def _advanced_key(index, idx_values):
    it = iter(idx_values)
    key = []
    for e in index:
        if e == NEWAXIS:
            key.append(None)
        elif e == ARRAY:
            key.append(np.asarray(next(it)))
        else:
            key.append(slice(*[int(next(it)) if p == SYMBOLIC else p for p in e[1:]]))
    return tuple(key)


def _check_index_broadcast(op, index, idx_nodes_inputs, key):
    """Index arrays with unknown static sizes must not rely on run-time size-1 stretching."""
    arrays = [(var, k) for var, k in zip(idx_nodes_inputs, key) if isinstance(k, np.ndarray) and var is not None]
    shapes = [k.shape if k.dtype != np.bool_ else (int(np.count_nonzero(k)),) for _, k in arrays]
    statics = []
    for var, k in arrays:
        if k.dtype != np.bool_:
            statics.append(var.type.shape)
        else:  # a mask stands for its positions: a count known only for constants
            statics.append((int(np.count_nonzero(var.data)),) if isinstance(var, Constant) else (None,))
    check_index_shapes(op, statics, shapes)


def check_index_shapes(op, statics, shapes):
    """The index arrays' run-time `shapes` broadcast as NumPy's (an IndexError otherwise), and only their
    axes of static size 1 (`statics`) stretch (a ShapeError otherwise)."""
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise IndexError(
            f"{op}: shape mismatch: indexing arrays could not be broadcast together with shapes {shapes}"
        ) from None
    broadcast_shape(str(op), statics, shapes, names=[f"index array {k}" for k in range(len(shapes))])


def _key_inputs(index, idx_inputs):
    """The graph variable behind each key entry (None for newaxis and slices)."""
    it = iter(idx_inputs)
    out = []
    for e in index:
        if e == ARRAY:
            out.append(next(it))
        else:
            if isinstance(e, tuple):
                for p in e[1:]:
                    if p == SYMBOLIC:
                        next(it)
            out.append(None)
    return out


@dataclass(frozen=True)
class AdvancedSubtensor(Op):
    """Indexing with integer/boolean arrays (NumPy rules for broadcasting and axis placement)."""

    index: tuple

    def make_node(self, x, *idx):
        x = as_tensor(x)
        idx = [as_tensor(i) for i in idx]
        _validate_advanced(str(self), self.index, x, idx)
        return build(self, [x, *idx], [x.type.dtype])

    def infer_shape(self, inputs, input_shapes):
        return [_advanced_shape(str(self), self.index, input_shapes[0], inputs[1:], input_shapes[1:])]

    def perform(self, node, inputs):
        x, *idx = inputs
        key = _advanced_key(self.index, idx)
        _check_index_broadcast(self, self.index, _key_inputs(self.index, node.inputs[1:]), key)
        return [np.array(x[key])]

    def L_op(self, inputs, outputs, output_grads):
        """The output gradient scattered with `inc` into zeros of x's shape, so repeated positions
        accumulate (`np.add.at`); index arrays, masks and slice parts get None.

        With one integer array and full slices elsewhere (`mu[group_idx]`) the scatter is the same
        index form as the read, which the numba backend runs as a printed loop.
        """
        x, *idx = inputs
        if not is_float(x):
            return [None] * len(inputs)
        gx = AdvancedIncSubtensor(self.index, "inc")(zeros_like(x), output_grads[0], *idx)
        return [gx] + [None] * len(idx)

    def __str__(self):
        return f"AdvancedSubtensor[{_index_str(self.index)}]"


@dataclass(frozen=True)
class AdvancedIncSubtensor(Op):
    """`x` with `x[index]` (advanced) set to `v`, or incremented by it; repeated positions accumulate (`np.add.at`)."""

    index: tuple
    mode: str = "inc"

    def __post_init__(self):
        _check_mode(self.mode)

    def make_node(self, x, v, *idx):
        x, v = as_tensor(x), as_tensor(v)
        idx = [as_tensor(i) for i in idx]
        _validate_advanced(str(self), self.index, x, idx)
        if v.type.dtype != x.type.dtype:
            raise TypeError(f"{self}: the value has dtype {v.type.dtype}, expected {x.type.dtype} (x's dtype)")
        idx_shapes = [static_or_symbolic(i) for i in idx]
        target = _advanced_shape(str(self), self.index, static_or_symbolic(x), idx, idx_shapes)
        _check_value(str(self), target, v)
        return build(self, [x, v, *idx], [x.type.dtype])

    def infer_shape(self, inputs, input_shapes):
        return [input_shapes[0]]

    def perform(self, node, inputs):
        x, v, *idx = inputs
        key = _advanced_key(self.index, idx)
        _check_index_broadcast(self, self.index, _key_inputs(self.index, node.inputs[2:]), key)
        out = x.copy()
        # the flat position of every selected element, in the selection's shape
        positions = np.arange(x.size, dtype=np.int64).reshape(x.shape)[key]
        check_value_shape(self, node.inputs[1].type, np.shape(v), positions.shape)
        values = np.broadcast_to(v, positions.shape)
        flat = out.reshape(-1)
        if self.mode == "set":
            flat[positions.reshape(-1)] = values.reshape(-1)
        else:
            np.add.at(flat, positions.reshape(-1), values.reshape(-1))
        return [out]

    def L_op(self, inputs, outputs, output_grads):
        """x gets the gradient (set region zeroed for `set`); v gets it gathered at the selection and
        summed over its broadcast axes.

        `set` with a position selected more than once keeps one write (the last in NumPy); only that
        element of the selection gets the gradient. Which one won is read back from the backend's own
        scatter (positions' ids scattered, then gathered and compared), unless the index is provably
        free of repeats (a lone boolean mask, or constant integer arrays without repeats).
        """
        x, v, *idx = inputs
        (g,) = output_grads
        if not is_float(x):
            return [None] * len(inputs)
        zero = constant(0, dtype=g.type.dtype)
        gx = g if self.mode == "inc" else AdvancedIncSubtensor(self.index, "set")(g, zero, *idx)
        gsel = AdvancedSubtensor(self.index)(g, *idx)
        if self.mode == "set" and not _repeat_free(self.index, x, idx):
            gsel = where(_last_writes(self.index, x, idx, gsel), gsel, zero)
        gv = sum_to(gsel, v)
        return [gx, gv] + [None] * len(idx)

    def __str__(self):
        return f"Advanced{'Set' if self.mode == 'set' else 'Inc'}Subtensor[{_index_str(self.index)}]"


# ---------------------------------------------------------------------------
# user functions


def _repeat_free(index, x, idx):
    """True when the advanced index provably selects no position twice (checked at build time)."""
    arrays = [a for a, e in zip(_key_inputs(index, idx), index) if e == ARRAY and a is not None]
    if len(arrays) == 1 and arrays[0].type.dtype == "bool":
        return True
    if not all(isinstance(a, Constant) for a in idx) or any(s is None for s in x.type.shape):
        return False
    key = _advanced_key(index, [a.data for a in idx])
    try:
        positions = np.arange(int(np.prod(x.type.shape)), dtype=np.int64).reshape(x.type.shape)[key]
    except (IndexError, ValueError):
        return False
    return np.unique(positions).size == positions.size


def _last_writes(index, x, idx, sel):
    """A boolean array of the selection's shape: True where that element's write is the one `set` keeps."""
    from dimgraph.core.extra import arange  # cycle: extra's diff and cumsum gradient slice (getitem)

    sel_shape = shape_of(sel)
    ids = reshape(arange(0, product(sel_shape), 1, dtype="int64"), sel_shape)
    written = AdvancedIncSubtensor(index, "set")(zeros(shape_of(x), "int64"), ids, *idx)
    return eq(AdvancedSubtensor(index)(written, *idx), ids)


def _update(sub, v, mode, fname):
    owner = sub.owner if isinstance(sub, Variable) else None
    if owner is None or not isinstance(owner.op, (Subtensor, AdvancedSubtensor)):
        raise TypeError(f"{fname}: expected an indexed tensor x[index] as first argument, got {sub!r}")
    op = sub.owner.op
    x, *idx = sub.owner.inputs
    dtype = np.dtype(x.type.dtype)
    if is_python_scalar(v):
        v = constant(v, dtype=np.result_type(dtype, v))  # NEP 50: weak, takes x's dtype where it fits
    v = as_tensor(v)
    if v.type.dtype != dtype.name:
        if not np.can_cast(v.type.dtype, dtype, "same_kind"):
            raise TypeError(
                f"{fname}: cannot cast the value of dtype {v.type.dtype} to {dtype.name} (x's dtype) "
                "under the same_kind rule; cast it explicitly"
            )
        v = v.astype(dtype.name)
    inc_op = IncSubtensor(op.index, mode) if isinstance(op, Subtensor) else AdvancedIncSubtensor(op.index, mode)
    return inc_op(x, v, *idx)


def set_subtensor(sub, v):
    """The whole of `x` with the selection `sub = x[index]` replaced by `v` (broadcast as NumPy).

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(4,))
    >>> dg.core.set_subtensor(x[1:3], 9.0).eval({x: np.zeros(4)}).tolist()
    [0.0, 9.0, 9.0, 0.0]
    """
    return _update(sub, v, "set", "set_subtensor")


def inc_subtensor(sub, v):
    """The whole of `x` with `v` added to the selection `sub = x[index]`; repeated positions accumulate.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(3,))
    >>> dg.core.inc_subtensor(x[[0, 0, 2]], 1.0).eval({x: np.zeros(3)}).tolist()
    [2.0, 0.0, 1.0]
    """
    return _update(sub, v, "inc", "inc_subtensor")
