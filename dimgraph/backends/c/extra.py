"""C emitters of `dimgraph.core.extra`: cumulative sums and products, ARange and Assert."""

from __future__ import annotations

import numpy as np

from dimgraph.backends.c.loops import nest
from dimgraph.backends.c.registry import CImpl, c_impl
from dimgraph.backends.c.scalar import compute_ctype
from dimgraph.core.extra import ARange, Assert, CumOp
from dimgraph.core.graph import Constant


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
        # A condition on shapes is known before C runs, and the views planned after this node (a broadcast to
        # the checked size, say) would fail on the unchecked shape first: check it here, with this message.
        for cond in node.inputs[1:]:
            if _known_now(ctx, cond) and not np.all(ctx.host_value(cond)):
                raise op.error(op.message)
        return [ins[0][...]], list(ins[1:]), True

    def code(o):
        if not types:
            return ""
        cond = " && ".join(f"{o.ptr(k)}[0]" for k in range(len(types)))
        return f"if (!({cond})) {o.fail(0)}"

    return CImpl(types, code, plan, errors=[(op.error, op.message)])


def _known_now(ctx, var) -> bool:
    """Whether `var` is known at planning time or is one step from values that are (shapes, constants)."""
    known = lambda v: v in ctx.host or isinstance(v, Constant)  # noqa: E731
    return known(var) or (var.owner is not None and all(known(i) for i in var.owner.inputs))
