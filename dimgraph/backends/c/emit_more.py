"""C emitters for indexing, Join/Split, MatMul/Einsum, cumulative ops, ARange and Assert.

Same contract as `emit.py`: the plan turns every selection into strided views
(basic indexing), offset arrays (advanced indexing: NumPy applies the index to
a grid of element offsets, so every NumPy rule, bounds check and boolean mask
holds), or per-letter strided views (contractions); the C code is loops.
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends.c.emit import (
    _NOMEM,
    CImpl,
    c_impl,
    collapse_trailing,
    compute_ctype,
    copy_code,
    elem_strides,
    loop,
    nest,
    reduce_code,
    strided,
)
from dimgraph.core.extra import ARange, Assert, CumOp
from dimgraph.core.join import Join, Split
from dimgraph.core.linalg import Einsum, MatMul, _check_runtime_broadcast
from dimgraph.core.subtensor import (
    NEWAXIS,
    AdvancedIncSubtensor,
    AdvancedSubtensor,
    IncSubtensor,
    Subtensor,
    _advanced_key,
    _basic_key,
    _check_index_broadcast,
    _check_value_runtime,
    _key_inputs,
)
from dimgraph.errors import ShapeError

# ---------------------------------------------------------------------------
# indexing


def _basic_view(op, ctx, node, x, scalar_vars):
    scalars = [ctx.host_value(v) for v in scalar_vars]
    return x[_basic_key(op.index, scalars) + (Ellipsis,)]


def _selection_ndim(index):
    return sum(1 for e in index if e == NEWAXIS or isinstance(e, tuple))


@c_impl.register(Subtensor)
def _subtensor(op, node):
    def plan(ctx, ins):
        return [_basic_view(op, ctx, node, ins[0], node.inputs[1:])], [], False

    return CImpl([], None, plan)


def _update_code(mode):
    assign = "=" if mode == "set" else "+="

    def code(o):
        return "\n".join(copy_code(o, 0, 1) + ["{"] + copy_code(o, 3, 2, assign) + ["}"])

    return code


@c_impl.register(IncSubtensor)
def _inc_subtensor(op, node):
    x = node.inputs[0]
    nd, dt = x.type.ndim, x.type.dtype
    nsel = _selection_ndim(op.index)
    types = [(dt, nd), (dt, nd), (dt, nsel), (dt, nsel)]

    def plan(ctx, ins):
        a, v = ins[0], ins[1]
        out = np.empty(a.shape, dt)
        sel = _basic_view(op, ctx, node, out, node.inputs[2:])
        _check_value_runtime(op, node.inputs[1].type, v, sel)
        return [out], [a, out, sel, np.broadcast_to(v, sel.shape)], True

    return CImpl(types, _update_code(op.mode), plan)


def _offsets(op, ctx, a, index_vars):
    """Element offsets (from a's first element) of the selection `a[index]`, by NumPy's own indexing.

    The offset is linear in the position, so it is the sum over axes of each selected
    coordinate times the axis stride. NumPy indexes a small stand-in for `a`: each axis
    shrunk to the coordinates the index touches (a slice's range, an index array's
    values), so the cost is that of the elements moved, never of the table (a
    grid the size of `a` cost 15.7 ms per gather of 10 elements from 4e6).
    """
    key = _advanced_key(op.index, [ctx.host_value(v) for v in index_vars])
    _check_index_broadcast(op, op.index, _key_inputs(op.index, index_vars), key)
    axes = list(zip(a.shape, elem_strides(a)))
    if any(isinstance(k, np.ndarray) and k.dtype == np.bool_ and k.ndim == 0 for k in key):
        return _offsets_by_grid(a, axes, key)  # a 0-d mask adds an axis: rare, left to NumPy whole
    small_key, weights = [], []
    for k in _masks_as_positions(key):
        if k is None:
            small_key.append(None)
            continue
        ax = len(weights)
        n, stride = axes[ax]
        if isinstance(k, slice):
            coords, k = np.arange(*k.indices(n), dtype=np.int64), slice(None)
        else:
            coords, k = _distinct_positions(k, ax, n)
        small_key.append(k)
        weights.append(coords * stride)
    for n, stride in axes[len(weights):]:  # axes the index leaves whole
        weights.append(np.arange(n, dtype=np.int64) * stride)
    if len(small_key) == 1 and isinstance(small_key[0], np.ndarray):  # the common gather t[i]: no stand-in
        return np.asarray(weights[0][small_key[0]], order="C")
    small_shape = tuple(len(w) for w in weights)
    offsets = np.zeros((), np.int64)
    for ax, w in enumerate(weights):
        shape = [1] * len(weights)
        shape[ax] = len(w)
        offsets = offsets + np.broadcast_to(w.reshape(shape), small_shape)[tuple(small_key)]
    return np.asarray(offsets, order="C")  # keeps 0-d (ascontiguousarray makes it 1-d)


def _offsets_by_grid(a, axes, key):
    grid = np.zeros(a.shape, np.int64)
    for ax, (n, stride) in enumerate(axes):
        shape = [1] * a.ndim
        shape[ax] = n
        grid += (np.arange(n, dtype=np.int64) * stride).reshape(shape)
    return np.asarray(grid[key], order="C")


def _masks_as_positions(key):
    """`key` with each boolean mask replaced by its positions (one int array per axis it covers), as NumPy reads it."""
    out = []
    for k in key:
        if isinstance(k, np.ndarray) and k.dtype == np.bool_ and k.ndim > 0:
            out.extend(np.nonzero(k))
        else:
            out.append(k)
    return out


def _distinct_positions(idx, axis, n):
    """(the positions `idx` selects on an axis of length `n`, where each entry of `idx` is among them)."""
    idx = np.asarray(idx).astype(np.int64, copy=False)
    bad = (idx < -n) | (idx >= n)
    if bad.any():
        raise IndexError(f"index {int(idx[bad].flat[0])} is out of bounds for axis {axis} with size {n}")
    coords = np.where(idx < 0, idx + n, idx).ravel()  # repeats are fine: the axis is as long as idx
    return coords, np.arange(coords.size, dtype=np.int64).reshape(idx.shape)


@c_impl.register(AdvancedSubtensor)
def _advanced_subtensor(op, node):
    x, out = node.inputs[0], node.outputs[0]
    nd_out = out.type.ndim
    types = [(x.type.dtype, x.type.ndim), ("int64", nd_out), (out.type.dtype, nd_out)]

    def plan(ctx, ins):
        offs = _offsets(op, ctx, ins[0], node.inputs[1:])
        res = np.empty(offs.shape, out.type.dtype)
        return [res], [ins[0], offs, res], True

    def code(o):
        return "\n".join(loop(o, [1, 2], lambda q: [f"{o.ptr(2)}[{q[2]}] = {o.ptr(0)}[{o.ptr(1)}[{q[1]}]];"]))

    return CImpl(types, code, plan)


@c_impl.register(AdvancedIncSubtensor)
def _advanced_inc_subtensor(op, node):
    x, v = node.inputs[0], node.inputs[1]
    nd, dt = x.type.ndim, x.type.dtype
    nsel = _advanced_selection_ndim(op, node)
    types = [(dt, nd), (dt, nd), ("int64", nsel), (dt, nsel)]
    assign = "=" if op.mode == "set" else "+="

    def plan(ctx, ins):
        a, val = ins[0], ins[1]
        out = np.empty(a.shape, dt)
        positions = _offsets(op, ctx, out, node.inputs[2:])
        _check_value_runtime(op, v.type, val, positions)
        return [out], [a, out, positions, np.broadcast_to(val, positions.shape)], True

    def code(o):
        scatter = loop(o, [2, 3], lambda q: [f"{o.ptr(1)}[{o.ptr(2)}[{q[2]}]] {assign} {o.ptr(3)}[{q[3]}];"])
        return "\n".join(copy_code(o, 0, 1) + ["{"] + scatter + ["}"])

    return CImpl(types, code, plan)


def _advanced_selection_ndim(op, node):
    """The ndim of `x[index]` for the advanced index of a set/inc node (that of the matching get)."""
    x, idx = node.inputs[0], node.inputs[2:]
    return AdvancedSubtensor(op.index).make_node(x, *idx).outputs[0].type.ndim


# ---------------------------------------------------------------------------
# Join and Split


@c_impl.register(Join)
def _join(op, node):
    out = node.outputs[0]
    nd = out.type.ndim
    types = []
    for i in node.inputs:
        types += [(i.type.dtype, nd), (out.type.dtype, nd)]

    def plan(ctx, ins):
        for ax in range(nd):
            if ax != op.axis and len({a.shape[ax] for a in ins}) > 1:
                raise ShapeError(
                    f"{op}: inputs have sizes {[a.shape[ax] for a in ins]} on axis {ax}; only axis {op.axis} may differ"
                )
        shape = list(ins[0].shape)
        shape[op.axis] = sum(a.shape[op.axis] for a in ins)
        res = np.empty(shape, out.type.dtype)
        operands, start = [], 0
        for a in ins:
            key = [slice(None)] * nd
            key[op.axis] = slice(start, start + a.shape[op.axis])
            start += a.shape[op.axis]
            operands += [a, res[tuple(key)]]
        return [res], operands, True

    def code(o):
        lines = []
        for k in range(len(node.inputs)):
            lines += ["{"] + copy_code(o, 2 * k, 2 * k + 1) + ["}"]
        return "\n".join(lines)

    return CImpl(types, code, plan)


@c_impl.register(Split)
def _split(op, node):
    def plan(ctx, ins):
        x = ins[0]
        it = iter(int(ctx.host_value(v)) for v in node.inputs[1:])
        sizes = [s if s is not None else next(it) for s in op.sizes]
        if any(s < 0 for s in sizes) or sum(sizes) != x.shape[op.axis]:
            raise ShapeError(f"{op}: sizes {sizes} do not add up to the length {x.shape[op.axis]} of axis {op.axis}")
        return np.split(x, np.cumsum(sizes)[:-1], axis=op.axis), [], False

    return CImpl([], None, plan)


# ---------------------------------------------------------------------------
# contractions: every operand a strided view over all the loop's letters


class _Product:
    """Values for `reduce_code`: the product of the operands at one position, in the output's compute type."""

    computed = True

    def __init__(self, o, n_in, nd, ct):
        self.o, self.n_in, self.nd, self.ct = o, n_in, nd, ct

    def __call__(self, q, i):
        o, ct = self.o, self.ct

        def at(k):
            return q[k] if i is None else f"{q[k]} + {i} * {o.stride(k, self.nd - 1)}"

        prod = " * ".join(f"(({ct}){o.ptr(k)}[{at(k)}])" for k in range(self.n_in))
        return [f"const {ct} v_ = {prod};"]


@c_impl.register(MatMul)
def _matmul(op, node):
    a_var, b_var = node.inputs
    out = node.outputs[0]
    nb = out.type.ndim - (a_var.type.ndim > 1) - (b_var.type.ndim > 1)
    L = nb + 3
    types = [(a_var.type.dtype, L), (b_var.type.dtype, L), (out.type.dtype, L)]

    def plan(ctx, ins):
        a, b = ins
        if a.shape[-1] != (b.shape[0] if b.ndim == 1 else b.shape[-2]):
            raise ShapeError(f"matmul: the contracted axes differ: shapes {a.shape} and {b.shape}")
        if a.ndim > 2 or b.ndim > 2:
            _check_runtime_broadcast(
                op,
                [a_var.type.shape[:-2] if a.ndim > 1 else (), b_var.type.shape[:-2] if b.ndim > 1 else ()],
                [a.shape[:-2] if a.ndim > 1 else (), b.shape[:-2] if b.ndim > 1 else ()],
            )
        a2 = a if a.ndim > 1 else a[None, :]
        b2 = b if b.ndim > 1 else b[:, None]
        batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        m, k, n = a2.shape[-2], a2.shape[-1], b2.shape[-1]
        res = np.zeros(batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ()), out.type.dtype)
        full = batch + (m, k, n)
        sa = elem_strides(np.broadcast_to(a2, batch + (m, k)))
        sb = elem_strides(np.broadcast_to(b2, batch + (k, n)))
        so = elem_strides(res.reshape(batch + (m, n)))
        views = [
            strided(a2, full, sa[:nb] + [sa[-2], sa[-1], 0]),
            strided(b2, full, sb[:nb] + [0, sb[-2], sb[-1]]),
            strided(res, full, so[:nb] + [so[-2], 0, so[-1]]),
        ]
        return [res], views, True

    return CImpl(types, _matmul_code(out.type.dtype), plan)


def _matmul_code(out_dtype):
    """Loops (batch, i) around row updates out[i, :] += a[i, k] * b[k, :], four k at a time on unit-stride rows.

    The four updates are added in k order, so every element is summed as the plain k loop sums it.
    """
    ct = compute_ctype(out_dtype)

    def code(o):
        L = o.ndim(2)
        t, ta, tb = o.ctype(2), o.ctype(0), o.ctype(1)
        k_ax, j_ax = L - 2, L - 1

        def body(q):
            def term(a, b, j):
                return f"{a} * ({ct}){b}[{j}]"

            blocked = f"(((({ct})po_[j_] + {term('a0_', 'b0_', 'j_')}) + {term('a1_', 'b1_', 'j_')}) + {term('a2_', 'b2_', 'j_')}) + {term('a3_', 'b3_', 'j_')}"
            return [
                f"const {ta} *pa_ = {o.ptr(0)} + {q[0]};",
                f"const {tb} *pb_ = {o.ptr(1)} + {q[1]};",
                f"{t} *restrict po_ = {o.ptr(2)} + {q[2]};",
                f"const int64_t K_ = {o.shape(2, k_ax)}, N_ = {o.shape(2, j_ax)};",
                f"const int64_t sa_ = {o.stride(0, k_ax)}, sbk_ = {o.stride(1, k_ax)}, sbj_ = {o.stride(1, j_ax)}, so_ = {o.stride(2, j_ax)};",
                "int64_t k_ = 0;",
                "if (sbj_ == 1 && so_ == 1) {",
                "  for (; k_ + 4 <= K_; k_ += 4) {",
                f"    const {ct} a0_ = ({ct})pa_[k_ * sa_], a1_ = ({ct})pa_[(k_ + 1) * sa_], "
                f"a2_ = ({ct})pa_[(k_ + 2) * sa_], a3_ = ({ct})pa_[(k_ + 3) * sa_];",
                f"    const {tb} *restrict b0_ = pb_ + k_ * sbk_, *restrict b1_ = b0_ + sbk_, *restrict b2_ = b1_ + sbk_, *restrict b3_ = b2_ + sbk_;",
                '    _Pragma("omp simd")',
                f"    for (int64_t j_ = 0; j_ < N_; j_++) po_[j_] = ({t})({blocked});",
                "  }",
                "}",
                "for (; k_ < K_; k_++) {",
                f"  const {ct} a_ = ({ct})pa_[k_ * sa_];",
                f"  const {tb} *b_ = pb_ + k_ * sbk_;",
                f"  for (int64_t j_ = 0; j_ < N_; j_++) po_[j_ * so_] = ({t})(({ct})po_[j_ * so_] + a_ * ({ct})b_[j_ * sbj_]);",
                "}",
            ]

        strides = {j: [o.stride(j, a) for a in range(L - 2)] for j in range(3)}
        return "\n".join(nest([o.shape(2, a) for a in range(L - 2)], strides, body))

    return code


@c_impl.register(Einsum)
def _einsum(op, node):
    terms, output = op.terms, op.output
    letters = list(output) + sorted({c for t in terms for c in t} - set(output), key=lambda c: "".join(terms).index(c))
    L = len(letters)
    summed = tuple(range(len(output), L))  # the summed letters are the innermost loops
    out = node.outputs[0]
    types = [(i.type.dtype, L) for i in node.inputs] + [(out.type.dtype, L)]

    def plan(ctx, ins):
        actual = {}
        for term, x in zip(terms, ins):
            for c, n in zip(term, x.shape):
                actual.setdefault(c, set()).add(n)
        target = {c: min(s - {1}, default=1) for c, s in actual.items()}  # NumPy: 1 stretches, also to 0
        for term, x, var in zip(terms, ins, node.inputs):
            for c, n, s in zip(term, x.shape, var.type.shape):
                if n != target[c] and (s is None or n != 1):
                    raise ShapeError(
                        f"{op}: letter {c!r} has sizes {sorted(actual[c])} across the operands; "
                        "only axes of static size 1 broadcast"
                    )
        full = [target[c] for c in letters]
        views = []
        for term, x in zip(terms, ins):
            st = elem_strides(x)
            per = {c: 0 for c in letters}
            for ax, c in enumerate(term):
                if x.shape[ax] == target[c]:
                    per[c] += st[ax]
            views.append(strided(x, full, [per[c] for c in letters]))
        res = np.zeros([target[c] for c in output], out.type.dtype)
        so = elem_strides(res)
        views.append(strided(res, full, so + [0] * (L - len(output))))
        return [res], collapse_trailing(views, len(summed)), True

    def code(o):
        values = _Product(o, len(terms), L, compute_ctype(out.type.dtype))
        return reduce_code(o, L, len(terms), "add", out.type.dtype, summed, values)

    return CImpl(types, code, plan, errors=_NOMEM)


# ---------------------------------------------------------------------------
# cumulative ops, arange, assert


@c_impl.register(CumOp)
def _cumop(op, node):
    x, out = node.inputs[0], node.outputs[0]
    nd = x.type.ndim
    types = [(x.type.dtype, nd), (out.type.dtype, nd)]
    sign = "+" if op.mode == "add" else "*"

    def plan(ctx, ins):
        res = np.empty(ins[0].shape, out.type.dtype)
        return [res], [np.moveaxis(ins[0], op.axis, -1), np.moveaxis(res, op.axis, -1)], True

    def code(o):
        ct, t = compute_ctype(out.type.dtype), o.ctype(1)

        def body(q):
            return [
                f"const int64_t n_ = {o.shape(0, nd - 1)}, sx_ = {o.stride(0, nd - 1)}, so_ = {o.stride(1, nd - 1)};",
                f"{t} acc_ = 0;",
                "for (int64_t i_ = 0; i_ < n_; i_++) {",
                f"  const {ct} v_ = ({ct}){o.ptr(0)}[{q[0]} + i_ * sx_];",
                f"  acc_ = i_ == 0 ? ({t})v_ : ({t})(({ct})acc_ {sign} v_);",
                f"  {o.ptr(1)}[{q[1]} + i_ * so_] = acc_;",
                "}",
            ]

        shape = [o.shape(0, a) for a in range(nd - 1)]
        strides = {j: [o.stride(j, a) for a in range(nd - 1)] for j in (0, 1)}
        return "\n".join(nest(shape, strides, body))

    return CImpl(types, code, plan)


@c_impl.register(ARange)
def _arange(op, node):
    ins_types = [(i.type.dtype, 0) for i in node.inputs]
    types = ins_types + [(op.dtype, 1)]
    all_int = np.dtype(op.dtype).kind in "iu" and all(np.dtype(i.type.dtype).kind in "biu" for i in node.inputs)

    def plan(ctx, ins):
        if ctx.host_value(node.inputs[2]) == 0:
            raise ValueError(f"{op}: step must not be zero")
        (shape,) = ctx.infer(node, ins)
        res = np.empty(shape, op.dtype)
        return [res], list(ins) + [res], True

    def code(o):
        t, ct = o.ctype(3), compute_ctype(op.dtype)
        if all_int:
            return "\n".join(
                [
                    f"const int64_t s0_ = (int64_t){o.ptr(0)}[0], d_ = (int64_t){o.ptr(2)}[0];",
                    f"for (int64_t i_ = 0; i_ < {o.shape(3, 0)}; i_++) {o.ptr(3)}[i_ * {o.stride(3, 0)}] = ({t})(s0_ + i_ * d_);",
                ]
            )
        return "\n".join(
            [  # as NumPy's fill: the first two values, then start + i * (second - first)
                f"const double s0_ = (double){o.ptr(0)}[0], d0_ = (double){o.ptr(2)}[0];",
                f"const {t} v0_ = ({t})s0_, v1_ = ({t})(s0_ + d0_);",
                f"const {ct} d_ = ({ct})v1_ - ({ct})v0_;",
                f"for (int64_t i_ = 0; i_ < {o.shape(3, 0)}; i_++)",
                f"  {o.ptr(3)}[i_ * {o.stride(3, 0)}] = i_ == 0 ? v0_ : (i_ == 1 ? v1_ : ({t})(({ct})v0_ + ({ct})i_ * d_));",
            ]
        )

    return CImpl(types, code, plan)


@c_impl.register(Assert)
def _assert(op, node):
    types = [(c.type.dtype, 0) for c in node.inputs[1:]]

    def plan(ctx, ins):
        return [ins[0][...]], list(ins[1:]), True

    def code(o):
        if not types:
            return ""
        cond = " && ".join(f"{o.ptr(k)}[0]" for k in range(len(types)))
        return f"if (!({cond})) {o.fail(0)}"

    return CImpl(types, code, plan, errors=[(AssertionError, op.message)])
