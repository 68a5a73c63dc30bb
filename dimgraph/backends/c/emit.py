"""The C emitter registry (`c_impl`, keyed by Op type) and the emitters of the core ops.

An emitter reads a node's static facts once, at compile time, and returns a
`CImpl` with two halves that share one contract:

- `plan(ctx, ins) -> (outs, operands, run)` runs in Python before each call. It
  gets the node's input arrays (buffers that C fills later; only their shapes
  and strides are meaningful yet), and returns the output arrays, the kernel's
  operand arrays and whether the kernel runs. Views are made here, by strides:
  DimShuffle, Alloc (a broadcast view), reshape where no copy is needed, basic
  indexing, Split. Broadcasting is done here too: every operand of a loop is a
  strided view of the loop's shape (a stretched axis has stride 0), so kernels
  are plain strided loops.
- `code(o) -> str` prints the kernel's C statements, addressing its operands
  through `o` (`o.ptr(j)`, `o.shape(j, axis)`, `o.stride(j, axis)` in elements).
  `operands` lists their static (dtype, ndim).

Errors C detects (a failed Assert) are returned as codes mapped back to exceptions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import singledispatch
from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from dimgraph.backends.c.scalar import NEGATIVE_POWER, as_composite, compute_ctype, ctype, expression, print_composite, raises
from dimgraph.core.elemwise import DimShuffle, Elemwise, check_broadcast
from dimgraph.core.fused import CAReduceElemwise
from dimgraph.core.fused import _check_broadcast as check_fused_broadcast
from dimgraph.core.reduce import Argmax, CAReduce
from dimgraph.core.scalar import ScalarOp
from dimgraph.core.shape import Shape, ShapeI
from dimgraph.core.shape_ops import Alloc, Reshape


class MissingEmitter(NotImplementedError):
    """An op with no entry in the C backend's registry (raised when the function is compiled)."""


@dataclass
class CImpl:
    operands: list  # [(dtype, ndim)] of the kernel's operand arrays
    code: Callable | None  # code(o) -> C statements; None: the plan does all the work
    plan: Callable  # plan(ctx, ins) -> (outs, operands, run)
    errors: list = field(default_factory=list)  # [(exception class, message)]: `o.fail(k)` raises errors[k]
    prelude: str = ""  # file-scope C the kernel calls (printed once per translation unit)


@singledispatch
def c_impl(op, node) -> CImpl:
    """The `CImpl` of `node` (whose op is `op`)."""
    raise MissingEmitter(
        f"c backend: no C emitter for op {op} (type {type(op).__name__}); "
        "register one with dimgraph.backends.c.emit.c_impl.register"
    )


class Operands:
    """C expressions for a kernel's operands: slot numbers into the entry function's P and M arrays."""

    def __init__(self, types, slots, offsets, error_base):
        self.types, self.slots, self.offsets, self.error_base = types, slots, offsets, error_base

    def dtype(self, j):
        return self.types[j][0]

    def ndim(self, j):
        return self.types[j][1]

    def ctype(self, j):
        return ctype(self.dtype(j))

    def ptr(self, j):
        return f"(({self.ctype(j)} *)P[{self.slots[j]}])"

    def shape(self, j, axis):
        return f"M[{self.offsets[j] + axis}]"

    def stride(self, j, axis):
        return f"M[{self.offsets[j] + self.ndim(j) + axis}]"

    def shape_ptr(self, j):
        return f"(M + {self.offsets[j]})"

    def stride_ptr(self, j):
        return f"(M + {self.offsets[j] + self.ndim(j)})"

    def size(self, j):
        return " * ".join(self.shape(j, a) for a in range(self.ndim(j))) or "1"

    def fail(self, k):
        return f"return {self.error_base + k + 1};"


# ---------------------------------------------------------------------------
# loop printing


def indent(lines, n=2):
    pad = " " * n
    return [pad + line for line in lines]


def nest(shape, strides, body, prefix="i"):
    """Nested loops over `shape` (C expressions); `strides[j]` lists operand j's stride per axis.

    `body(offsets)` gets the element offset expression of each operand.
    """
    lines, opened = [], 0
    offs = {j: "0" for j in strides}
    for a, n in enumerate(shape):
        lines += indent([f"for (int64_t {prefix}{a} = 0; {prefix}{a} < {n}; {prefix}{a}++) {{"], 2 * opened)
        opened += 1
        new = {}
        for j, st in strides.items():
            name = f"{prefix}q{j}_{a}"
            lines += indent([f"const int64_t {name} = {offs[j]} + {prefix}{a} * {st[a]};"], 2 * opened)
            new[j] = name
        offs = new
    lines += indent(body(offs), 2 * opened)
    for k in reversed(range(opened)):
        lines += indent(["}"], 2 * k)
    return lines


def loop(o, js, body, fast=True, shape_of=None, still=None):
    """A loop over the shape of operand `shape_of` (default: the first of `js`) for operands `js`,
    with a flat path when all are C-contiguous; `still[j]` lists axes operand j does not advance on
    (its static size 1 stretched), so it need not be a broadcast view."""
    j0 = js[0] if shape_of is None else shape_of
    still = still or {}
    nd = o.ndim(j0)
    strides = {j: ["0" if a in still.get(j, ()) else o.stride(j, a) for a in range(nd)] for j in js}
    general = nest([o.shape(j0, a) for a in range(nd)], strides, body)
    if not fast or nd == 0:
        return general
    conds = [f"dg_contig({nd}, {o.shape_ptr(j)}, {o.stride_ptr(j)})" for j in js]
    conds += [f"{o.shape(j0, a)} == 1" for j in js for a in still.get(j, ())]
    flat = [f"const int64_t n_ = {o.size(j0)};", "for (int64_t f_ = 0; f_ < n_; f_++) {"]
    flat += indent(body({j: "f_" for j in js})) + ["}"]
    return [f"if ({' && '.join(conds)}) {{"] + indent(flat) + ["} else {"] + indent(general) + ["}"]


def copy_code(o, src, dst, op="="):
    """dst[...] op= src[...] over their common shape, casting to dst's dtype."""

    def body(q):
        return [f"{o.ptr(dst)}[{q[dst]}] {op} ({o.ctype(dst)}){o.ptr(src)}[{q[src]}];"]

    return loop(o, [src, dst], body)


# ---------------------------------------------------------------------------
# plan helpers


def strided(base, shape, elem_strides):
    """A view of `base`'s memory with `shape` and strides counted in elements."""
    item = base.itemsize
    return as_strided(base, shape=tuple(shape), strides=tuple(int(s) * item for s in elem_strides), writeable=False)


def elem_strides(a):
    return [s // a.itemsize for s in a.strides]


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


# ---------------------------------------------------------------------------
# Elemwise and DimShuffle


@c_impl.register(Elemwise)
def _elemwise(op, node):
    in_dtypes = [i.type.dtype for i in node.inputs]
    comp = as_composite(op.scalar_op, in_dtypes)
    nd = node.outputs[0].type.ndim
    nin, nout = len(node.inputs), len(node.outputs)
    out_dtypes = [o.type.dtype for o in node.outputs]
    types = [(d, nd) for d in in_dtypes] + [(d, nd) for d in out_dtypes]
    for d in in_dtypes + out_dtypes:
        ctype(d)

    still = {j: [a for a, s in enumerate(i.type.shape) if s == 1] for j, i in enumerate(node.inputs)}

    # NOTE: a run-time size check is needed only on axes where two inputs may differ at run time.
    checked = any(
        sum(i.type.shape[ax] != 1 for i in node.inputs) > 1 and any(i.type.shape[ax] is None for i in node.inputs)
        for ax in range(nd)
    )

    def plan(ctx, ins):
        if checked:
            check_broadcast(node, ins)
        shape = tuple(
            next((a.shape[ax] for j, a in enumerate(ins) if ax not in still[j]), 1) for ax in range(nd)
        )
        outs = [np.empty(shape, d) for d in out_dtypes]
        return outs, list(ins) + outs, True

    def code(o):
        def body(q):
            lines = [f"const {o.ctype(k)} x{k} = {o.ptr(k)}[{q[k]}];" for k in range(nin)]
            steps, results = print_composite(comp, [f"x{k}" for k in range(nin)])
            lines += steps
            lines += [f"{o.ptr(nin + k)}[{q[nin + k]}] = {v};" for k, v in enumerate(results)]
            return lines

        check = [f"if (dg_error) {{ dg_error = 0; {o.fail(0)} }}"] if raises(comp) else []
        return "\n".join(loop(o, list(range(nin + nout)), body, shape_of=nin, still=still) + check)

    return CImpl(types, code, plan, errors=[NEGATIVE_POWER])


@c_impl.register(DimShuffle)
def _dimshuffle(op, node):
    def plan(ctx, ins):
        (x,) = ins
        st = elem_strides(x)
        shape = [1 if a == "x" else x.shape[a] for a in op.order]
        strides = [0 if a == "x" else st[a] for a in op.order]
        return [strided(x, shape, strides)], [], False

    return CImpl([], None, plan)


# ---------------------------------------------------------------------------
# shapes: Reshape, Alloc, ShapeI, Shape


@c_impl.register(Reshape)
def _reshape(op, node):
    x = node.inputs[0]
    types = [(x.type.dtype, x.type.ndim)] * 2

    def plan(ctx, ins):
        a = ins[0]
        shape = list(ctx.infer(node, ins)[0])
        if shape.count(-1) == 1:  # a -1 computed at run time means "the rest", as in np.reshape
            rest = int(np.prod([s for s in shape if s != -1]))
            shape[shape.index(-1)] = a.size // rest if rest and a.size % rest == 0 else -1
        if int(np.prod(shape)) != a.size or any(s < 0 for s in shape):
            raise ValueError(f"reshape: cannot reshape an array of shape {a.shape} into shape {tuple(shape)}")
        try:
            return [np.reshape(a, shape, copy=False)], [a, a], False
        except ValueError:  # not expressible by strides: C copies in C order
            out = np.empty(shape, a.dtype)
            return [out], [a, out.reshape(a.shape)], True

    return CImpl(types, lambda o: "\n".join(copy_code(o, 0, 1)), plan)


@c_impl.register(Alloc)
def _alloc(op, node):
    def plan(ctx, ins):
        (shape,) = ctx.infer(node, ins)
        return [np.broadcast_to(ins[0], tuple(shape))], [], False

    return CImpl([], None, plan)


@c_impl.register(ShapeI)
def _shape_i(op, node):
    def plan(ctx, ins):
        out = np.asarray(ins[0].shape[op.i], dtype=np.int64)
        ctx.set_host(node.outputs[0], out)
        return [out], [], False

    return CImpl([], None, plan)


@c_impl.register(Shape)
def _shape(op, node):
    def plan(ctx, ins):
        out = np.asarray(ins[0].shape, dtype=np.int64)
        ctx.set_host(node.outputs[0], out)
        return [out], [], False

    return CImpl([], None, plan)


# ---------------------------------------------------------------------------
# reductions


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
            lines += indent([f"w_[r_] = v_;"] if scratch else [f"a_ = {combine};"])
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


class _Values:
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


_NOMEM = [(MemoryError, "c backend: out of memory for a reduction's scratch row")]


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
        res = np.full([s for k, s in enumerate(a.shape) if k not in op.axis], ident, out.type.dtype)
        return [res], collapse_trailing([a, reduced_view(res, a.shape, op.axis)], r), True

    def code(o):
        values = _Values(o, 1, nd, compute_ctype(out.type.dtype))
        return reduce_code(o, nd, 1, op.scalar_op, out.type.dtype, op.axis, values)

    return CImpl(types, code, plan, errors=_NOMEM)


@c_impl.register(CAReduceElemwise)
def _careduce_elemwise(op, node):
    in_dtypes = [i.type.dtype for i in node.inputs]
    out = node.outputs[0]
    nd = node.inputs[0].type.ndim
    nin = len(node.inputs)
    types = [(d, nd) for d in in_dtypes] + [(out.type.dtype, nd)]
    ident = identity_of(op.reducer, out.type.dtype)
    r = trailing_reduced(op.axis, nd)

    def plan(ctx, ins):
        check_fused_broadcast(op, node, ins)
        shape = np.broadcast_shapes(*[a.shape for a in ins])
        check_nonempty(op, op.reducer, shape, op.axis)
        res = np.full([s for k, s in enumerate(shape) if k not in op.axis], ident, out.type.dtype)
        views = [np.broadcast_to(a, shape) for a in ins] + [reduced_view(res, shape, op.axis)]
        return [res], collapse_trailing(views, r), True

    def code(o):
        values = _Values(o, nin, nd, compute_ctype(out.type.dtype), op.scalar_op)
        check = f"\nif (dg_error) {{ dg_error = 0; {o.fail(1)} }}" if raises(op.scalar_op) else ""
        return reduce_code(o, nd, nin, op.reducer, out.type.dtype, op.axis, values) + check

    return CImpl(types, code, plan, errors=_NOMEM + [NEGATIVE_POWER])


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
