"""`Blockwise`: a core op mapped over leading batch axes, described by a gufunc signature.

`Blockwise(core_op, "(m,m),(m,k)->(m,k)")` applies `core_op` to the trailing
(core) axes of each input, once per position of the leading (batch) axes.
Batch axes broadcast as in Elemwise: every input has the same number of batch
axes (`blockwise()` inserts leading length-1 axes) and only a static size 1
stretches. The core op is the one place that knows the math: `infer_shape`
asks it for the core shapes, `perform` calls its batched NumPy code when it has
one (`perform_batched`) and loops otherwise, and `L_op` is its `L_op` graph
vectorized by `dimgraph.core.vectorize` (no gradient code for batched ops).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from dimgraph.core.basic import as_tensor
from dimgraph.core.broadcast import broadcast_shape
from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.graph import Apply, Op
from dimgraph.core.reduce import sum_to
from dimgraph.core.shape import static_or_symbolic
from dimgraph.core.shape_ops import broadcast_to
from dimgraph.core.type import TensorType
from dimgraph.errors import ShapeError

_ARG = r"\(\s*(?:\w+(?:\s*,\s*\w+)*)?\s*\)"
_SIGNATURE = re.compile(rf"^\s*{_ARG}(?:\s*,\s*{_ARG})*\s*->\s*{_ARG}(?:\s*,\s*{_ARG})*\s*$")


def parse_signature(signature: str):
    """`"(m,m),(m,k)->(m,k)"` -> `((("m", "m"), ("m", "k")), (("m", "k"),))`."""
    if not isinstance(signature, str) or not _SIGNATURE.match(signature):
        raise ValueError(f"Blockwise: {signature!r} is not a gufunc signature such as '(m,m),(m,k)->(m,k)'")
    ins, outs = signature.split("->")

    def args(text):
        return tuple(tuple(n for n in re.split(r"\s*,\s*", a.strip()) if n) for a in re.findall(r"\(([^)]*)\)", text))

    return args(ins), args(outs)


def signature_of(core_node) -> str:
    """A signature for an op with no declared one: every axis of every input and output is core."""
    counter = iter(range(10**6))
    ins = ["(" + ",".join(f"i{next(counter)}" for _ in v.type.shape) + ")" for v in core_node.inputs]
    outs = ["(" + ",".join(f"o{next(counter)}" for _ in v.type.shape) + ")" for v in core_node.outputs]
    return ",".join(ins) + "->" + ",".join(outs)


@dataclass(frozen=True)
class Blockwise(Op):
    """`core_op` over the core axes named by `signature`, once per position of the leading batch axes."""

    core_op: Op
    signature: str

    def __post_init__(self):
        parse_signature(self.signature)

    @property
    def core_ndims(self):
        ins, outs = parse_signature(self.signature)
        return [len(a) for a in ins], [len(a) for a in outs]

    def core_node(self, inputs) -> Apply:
        """The core op applied to stand-ins with the core part of each input's type."""
        in_nd, _ = self.core_ndims
        dummies = [
            TensorType(x.type.dtype, x.type.shape[x.type.ndim - k :] if k else ()).make_variable(name=x.name)
            for x, k in zip(inputs, in_nd)
        ]
        node = self.core_op.make_node(*dummies)
        if any(a is not b for a, b in zip(node.inputs, dummies)):
            raise TypeError(f"{self}: the core op changed its inputs (a cast?); give it inputs of the types it takes")
        return node

    def batch_ndim(self, node) -> int:
        return node.inputs[0].type.ndim - self.core_ndims[0][0]

    def make_node(self, *inputs):
        inputs = [as_tensor(x) for x in inputs]
        in_nd, out_nd = self.core_ndims
        if len(inputs) != len(in_nd):
            raise TypeError(f"{self}: takes {len(in_nd)} inputs, got {len(inputs)}")
        batch = {x.type.ndim - k for x, k in zip(inputs, in_nd)}
        if len(batch) != 1 or min(batch) < 0:
            raise TypeError(
                f"{self}: every input needs its {in_nd} core axes and the same number of batch axes "
                f"(dg.core.blockwise pads them); got {[str(x.type) for x in inputs]}"
            )
        (nb,) = batch
        for ax in range(nb):
            sizes = {x.type.shape[ax] for x in inputs} - {None, 1}
            if len(sizes) > 1:
                raise ShapeError(
                    f"{self}: batch axis {ax} has incompatible sizes {sorted(sizes)} in {[str(x.type) for x in inputs]}"
                )
        core = self.core_node(inputs)
        if [o.type.ndim for o in core.outputs] != out_nd:
            raise TypeError(
                f"{self}: the core op gives outputs {[str(o.type) for o in core.outputs]}, not {out_nd} axes"
            )
        batch = []
        for ax in range(nb):
            sizes = {x.type.shape[ax] for x in inputs}
            batch.append(next(iter(sizes - {None, 1}), 1 if sizes == {1} else None))
        types = [TensorType(o.type.dtype, tuple(batch) + tuple(o.type.shape)) for o in core.outputs]
        return Apply(self, inputs, types)

    def infer_shape(self, inputs, input_shapes):
        in_nd, _ = self.core_ndims
        nb = inputs[0].type.ndim - in_nd[0]
        batch = []
        for ax in range(nb):
            known = [sh[ax] for x, sh in zip(inputs, input_shapes) if x.type.shape[ax] not in (None, 1)]
            if known:
                batch.append(known[0])
            elif all(x.type.shape[ax] == 1 for x in inputs):
                batch.append(1)
            else:
                batch.append(next(sh[ax] for x, sh in zip(inputs, input_shapes) if x.type.shape[ax] is None))
        core = self.core_node(inputs)
        core_shapes = self.core_op.infer_shape(core.inputs, [tuple(sh[nb:]) for sh in input_shapes])
        return [tuple(batch) + tuple(sh) for sh in core_shapes]

    def perform(self, node, inputs):
        nb = self.batch_ndim(node)
        batch = runtime_batch(self, node, inputs, nb)
        core = node.tag.get("core_node") or node.tag.setdefault("core_node", self.core_node(node.inputs))
        batched = getattr(self.core_op, "perform_batched", None)
        if batched is not None:
            arrays = [np.broadcast_to(x, batch + x.shape[nb:]) for x in inputs]
            outs = batched(core, arrays)
            return [np.asarray(o, dtype=v.type.dtype) for o, v in zip(outs, node.outputs)]
        results = None
        for idx in np.ndindex(*batch):
            parts = [x[tuple(0 if x.shape[a] == 1 else i for a, i in enumerate(idx))] for x in inputs]
            outs = self.core_op.perform(core, parts)
            if results is None:
                results = [np.empty(batch + np.shape(o), dtype=v.type.dtype) for o, v in zip(outs, node.outputs)]
            for r, o in zip(results, outs):
                if np.shape(o) != r.shape[nb:]:
                    raise ShapeError(
                        f"{self}: batch element {idx} gives an output of shape {np.shape(o)}, the first gave "
                        f"{r.shape[nb:]}; the core op's output shape depends on the data, so it cannot be batched"
                    )
                r[idx] = o
        if results is None:  # an empty batch: the core shapes come from the core op's shape rule
            shapes = self.core_op.infer_shape(core.inputs, [x.shape[nb:] for x in inputs])
            results = [
                np.empty(batch + tuple(int(s) for s in sh), dtype=v.type.dtype) for sh, v in zip(shapes, node.outputs)
            ]
        return results

    def L_op(self, inputs, outputs, output_grads):
        """The core op's vector-Jacobian product, vectorized; broadcast batch axes are summed back."""
        from dimgraph.core.vectorize import vectorize_graph  # cycle: vectorize_graph builds Blockwise nodes

        nb = inputs[0].type.ndim - self.core_ndims[0][0]
        core = self.core_node(inputs)
        core_gs = [TensorType(g.type.dtype, tuple(g.type.shape[nb:])).make_variable() for g in output_grads]
        grads = self.core_op.L_op(core.inputs, core.outputs, core_gs)
        wanted = [g for g in grads if g is not None]
        replace = dict(zip(core.inputs, inputs))
        replace.update(zip(core.outputs, outputs))
        replace.update(zip(core_gs, output_grads))
        done = iter(vectorize_graph(wanted, replace=replace))
        out = []
        for g, x in zip(grads, inputs):
            if g is None:
                out.append(None)
                continue
            g = next(done)
            if g.type.ndim < x.type.ndim:  # a gradient that does not depend on the batch
                g = broadcast_to(g, static_or_symbolic(x))
            out.append(sum_to(g, x))
        return out

    def __str__(self):
        return f"Blockwise{{{self.core_op}, {self.signature}}}"


def runtime_batch(op, node, inputs, nb):
    """The batch shape of this call (the first `nb` axes of every input); only axes of static size 1 stretch."""
    static = [v.type.shape[:nb] for v in node.inputs]
    return broadcast_shape(str(op), static, [x.shape[:nb] for x in inputs], axis_kind="batch axis")


def blockwise(core_op, signature, *inputs):
    """`Blockwise(core_op, signature)` on `inputs`, padding each with leading length-1 axes to equal batch ndim.

    A call with no batch axes at all is the core op itself.

    >>> import dimgraph as dg, numpy as np
    >>> from dimgraph.core.matrix import Inv
    >>> x = dg.tensor("x", shape=(2, 3, 3))
    >>> blockwise(Inv(), "(m,m)->(m,m)", x).type.shape
    (2, 3, 3)
    """
    ins, _ = parse_signature(signature)
    inputs = [as_tensor(x) for x in inputs]
    if len(inputs) != len(ins):
        raise TypeError(f"{core_op}: takes {len(ins)} inputs, got {len(inputs)}")
    for k, (x, core) in enumerate(zip(inputs, ins)):
        if x.type.ndim < len(core):
            raise ValueError(
                f"{core_op}: input {k} ({x!r}) needs at least {len(core)} axes for its core dims ({','.join(core)}), "
                f"got {x.type.ndim}"
            )
    nb = max(x.type.ndim - len(core) for x, core in zip(inputs, ins))
    if nb == 0:
        return core_op(*inputs)
    padded = []
    for x, core in zip(inputs, ins):
        missing = nb - (x.type.ndim - len(core))
        padded.append(DimShuffle(x.type.ndim, ("x",) * missing + tuple(range(x.type.ndim)))(x) if missing else x)
    return Blockwise(core_op, signature)(*padded)
