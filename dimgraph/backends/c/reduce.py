"""C emitters of reductions (`dimgraph.core.reduce`) and the reduction loops the fused and linalg families reuse.

Where the innermost axis is reduced each output element is accumulated in a
register, float sums by NumPy's pairwise summation; elsewhere the output,
filled with the reducer's identity by the plan, is updated in place.
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends.c.loops import elem_strides, indent, loop, nest, strided
from dimgraph.backends.c.registry import CImpl, c_impl
from dimgraph.backends.c.scalar import compute_ctype, expression, print_composite
from dimgraph.core.reduce import Argmax, CAReduce
from dimgraph.core.scalar import ScalarOp

NOMEM = [(MemoryError, "c backend: out of memory for a reduction's scratch row")]


def reduced_view(out, full_shape, axes):
    """`out` (the kept axes) seen over `full_shape`, with stride 0 on the reduced `axes`."""
    st, it = [], iter(elem_strides(out))
    for a in range(len(full_shape)):
        st.append(0 if a in axes else next(it))
    return strided(out, full_shape, st)


def identity_of(reducer, dtype):
    dt = np.dtype(dtype)
    if reducer == "add":
        return 0
    if reducer == "mul":
        return 1
    if reducer == "and":
        return True
    if reducer == "or":
        return False
    if dt.kind == "f":
        return -np.inf if reducer == "maximum" else np.inf
    if dt.kind == "b":
        return reducer == "minimum"
    info = np.iinfo(dt)
    return info.min if reducer == "maximum" else info.max


def check_nonempty(op, reducer, shape, axes):
    if reducer in ("maximum", "minimum") and any(shape[a] == 0 for a in axes):
        raise ValueError(f"{op}: zero-size array to reduction operation {reducer} which has no identity")


def combine_code(reducer, dtype, acc, x):
    """C expression combining accumulator `acc` with `x`, both already in `dtype`'s compute type."""
    return expression(ScalarOp(reducer), dtype, [acc, x])


def trailing_reduced(axes, ndim) -> int:
    """How many trailing axes are all reduced (they are merged into one inner loop where strides allow)."""
    r = 0
    while r < ndim and ndim - 1 - r in axes:
        r += 1
    return r


def collapse_trailing(views, r):
    """The views with their last `r` axes merged into the last one (earlier ones of size 1), if every
    view walks that block with one stride; else the views unchanged."""
    if r < 2:
        return views
    shape = views[0].shape
    nd = len(shape)
    new = []
    for v in views:
        st = elem_strides(v)
        step, expect = None, None
        for k in reversed(range(nd - r, nd)):
            if shape[k] == 1:
                continue
            if step is None:
                step, expect = st[k], st[k] * shape[k]
            elif st[k] != expect:
                return views
            else:
                expect *= shape[k]
        n = int(np.prod(shape[nd - r :]))
        new.append(strided(v, shape[: nd - r] + (1,) * (r - 1) + (n,), st[: nd - r] + [0] * (r - 1) + [step or 0]))
    return new


def reduce_code(o, nd, nin, reducer, out_dtype, axes, value_lines):
    """Loops reducing the values `value_lines(offsets, i)` (C lines ending in `const ct v_ = ...;`) into operand `nin`.

    Where the innermost axis is reduced, each output element is accumulated in a
    register over it, float sums by NumPy's pairwise summation (over a scratch row
    when the values are computed); elsewhere the output is updated in place.
    """
    ct = compute_ctype(out_dtype)
    js = list(range(nin + 1))
    combine = combine_code(reducer, out_dtype, "a_", "v_")
    store = f"{o.ptr(nin)}[{{q}}] = ({o.ctype(nin)})a_;"
    if nd == 0 or nd - 1 not in axes:

        def body(q):
            return value_lines(q, None) + [
                f"{ct} a_ = ({ct}){o.ptr(nin)}[{q[nin]}];",
                f"a_ = {combine};",
                store.format(q=q[nin]),
            ]

        return "\n".join(loop(o, js, body, fast=False))
    inner = nd - 1
    n = o.shape(0, inner)
    pairwise = reducer == "add" and np.dtype(out_dtype).kind == "f"
    scratch = pairwise and value_lines.computed
    suffix = {"float16": "f16", "float32": "f32", "float64": "f64"}.get(np.dtype(out_dtype).name)

    def body(q):
        lines = [f"{ct} a_ = ({ct}){o.ptr(nin)}[{q[nin]}];"]
        if pairwise and not scratch:
            lines.append(f"a_ = a_ + dg_pairwise_{suffix}({o.ptr(0)} + {q[0]}, {n}, {o.stride(0, inner)});")
        else:
            lines.append(f"for (int64_t r_ = 0; r_ < {n}; r_++) {{")
            lines += indent(value_lines(q, "r_"))
            lines += indent(["w_[r_] = v_;"] if scratch else [f"a_ = {combine};"])
            lines.append("}")
            if scratch:
                lines.append(f"a_ = a_ + dg_pairwise_{'f64' if ct == 'double' else 'f32'}(w_, {n}, 1);")
        return lines + [store.format(q=q[nin])]

    shape = [o.shape(0, a) for a in range(inner)]
    code = nest(shape, {j: [o.stride(j, a) for a in range(inner)] for j in js}, body)
    if not scratch:
        return "\n".join(code)
    head = [
        f"{ct} *w_ = ({ct} *)malloc(sizeof({ct}) * ({n} > 0 ? {n} : 1));",
        f"if (!w_) {o.fail(0)}",
    ]
    return "\n".join(head + code + ["free(w_);"])


class Values:
    """`value_lines` for reduce_code: loads (and computes) the value at offsets q (+ i along the inner axis)."""

    def __init__(self, o, nin, nd, ct, comp=None):
        self.o, self.nin, self.nd, self.ct, self.comp = o, nin, nd, ct, comp
        self.computed = comp is not None

    def __call__(self, q, i):
        o = self.o

        def at(k):
            return q[k] if i is None else f"{q[k]} + {i} * {o.stride(k, self.nd - 1)}"

        if self.comp is None:
            return [f"const {self.ct} v_ = ({self.ct}){o.ptr(0)}[{at(0)}];"]
        lines = [f"const {o.ctype(k)} x{k} = {o.ptr(k)}[{at(k)}];" for k in range(self.nin)]
        steps, (res,) = print_composite(self.comp, [f"x{k}" for k in range(self.nin)])
        return lines + steps + [f"const {self.ct} v_ = ({self.ct}){res};"]


@c_impl.register(CAReduce)
def _careduce(op, node):
    x, out = node.inputs[0], node.outputs[0]
    nd = x.type.ndim
    types = [(x.type.dtype, nd), (out.type.dtype, nd)]
    ident = identity_of(op.scalar_op, out.type.dtype)
    r = trailing_reduced(op.axis, nd)

    def plan(ctx, ins):
        (a,) = ins
        check_nonempty(op, op.scalar_op, a.shape, op.axis)
        res = ctx.filled([s for k, s in enumerate(a.shape) if k not in op.axis], ident, out.type.dtype)
        return [res], collapse_trailing([a, reduced_view(res, a.shape, op.axis)], r), True

    def code(o):
        values = Values(o, 1, nd, compute_ctype(out.type.dtype))
        return reduce_code(o, nd, 1, op.scalar_op, out.type.dtype, op.axis, values)

    return CImpl(types, code, plan, errors=NOMEM)


@c_impl.register(Argmax)
def _argmax(op, node):
    x = node.inputs[0]
    nd = x.type.ndim
    types = [(x.type.dtype, nd), ("int64", nd - 1)]
    is_float = np.dtype(x.type.dtype).kind == "f"
    cmp = "<=" if op.mode == "max" else ">="

    def plan(ctx, ins):
        (a,) = ins
        if a.shape[op.axis] == 0:
            raise ValueError(f"{op}: attempt to get arg{op.mode} of an empty sequence")
        res = np.empty([s for k, s in enumerate(a.shape) if k != op.axis], np.int64)
        return [res], [np.moveaxis(a, op.axis, -1), res], True

    def code(o):
        ct = compute_ctype(x.type.dtype)

        def body(q):
            nan_start = "if (!isnan(b_)) " if is_float else ""
            nan_stop = " if (isnan(b_)) break;" if is_float else ""
            return [
                f"const {o.ctype(0)} *p_ = {o.ptr(0)} + {q[0]};",
                f"const int64_t n_ = {o.shape(0, nd - 1)}, s_ = {o.stride(0, nd - 1)};",
                f"{ct} b_ = ({ct})p_[0]; int64_t k_ = 0;",
                f"{nan_start}for (int64_t i_ = 1; i_ < n_; i_++) {{",
                f"  const {ct} v_ = ({ct})p_[i_ * s_];",
                f"  if (!(v_ {cmp} b_)) {{ b_ = v_; k_ = i_;{nan_stop} }}",
                "}",
                f"{o.ptr(1)}[{q[1]}] = k_;",
            ]

        shape = [o.shape(1, a) for a in range(nd - 1)]
        strides = {0: [o.stride(0, a) for a in range(nd - 1)], 1: [o.stride(1, a) for a in range(nd - 1)]}
        return "\n".join(nest(shape, strides, body))

    return CImpl(types, code, plan)
