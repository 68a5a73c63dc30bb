"""`Elemwise` (a scalar op mapped over arrays) and `DimShuffle` (axis permutation/insertion/removal).

Broadcasting is static: Elemwise inputs have equal ndim (the user-facing
functions in `dimgraph.core.math` insert DimShuffles), and an axis stretches only
where its static size is 1. An axis of unknown size that turns out to be 1
against a longer one is a run-time `ShapeError`, never a silent stretch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dimgraph.core.basic import as_tensor
from dimgraph.core.broadcast import node_shape
from dimgraph.core.graph import Op
from dimgraph.core.scalar import ScalarOp
from dimgraph.core.shape import build
from dimgraph.errors import ShapeError


@dataclass(frozen=True)
class Elemwise(Op):
    scalar_op: ScalarOp

    def make_node(self, *inputs):
        inputs = [as_tensor(i) for i in inputs]
        if len(inputs) != self.scalar_op.nin:
            raise TypeError(f"{self}: takes {self.scalar_op.nin} inputs, got {len(inputs)}")
        ndims = {i.type.ndim for i in inputs}
        if len(ndims) > 1:
            raise TypeError(
                f"{self}: inputs must have equal ndim (use dg.core.math functions, which broadcast); "
                f"got {[str(i.type) for i in inputs]}"
            )
        ndim = ndims.pop()
        for ax in range(ndim):
            sizes = {i.type.shape[ax] for i in inputs} - {None, 1}
            if len(sizes) > 1:
                raise ShapeError(
                    f"{self}: axis {ax} has incompatible static sizes {sorted(sizes)} in inputs "
                    f"{[str(i.type) for i in inputs]}"
                )
        dtypes = self.scalar_op.output_dtypes([i.type.dtype for i in inputs])
        return build(self, inputs, dtypes)

    def infer_shape(self, inputs, input_shapes):
        out = []
        for ax in range(inputs[0].type.ndim):
            entries = [sh[ax] for sh in input_shapes]
            known = [e for e, i in zip(entries, inputs) if i.type.shape[ax] not in (None, 1)]
            if known:
                out.append(known[0])
            elif all(i.type.shape[ax] == 1 for i in inputs):
                out.append(1)
            else:
                out.append(next(e for e, i in zip(entries, inputs) if i.type.shape[ax] is None))
        return [tuple(out)] * self.scalar_op.nout

    def perform(self, node, inputs):
        node_shape(node, inputs)
        return self.scalar_op.impl(*inputs)

    def L_op(self, inputs, outputs, output_grads):
        from dimgraph.core.scalar_grad import (
            elemwise_grads,
        )  # cycle: a derivative is built from the math functions over Elemwise

        return elemwise_grads(self.scalar_op, inputs, outputs, output_grads)

    def __str__(self):
        return str(self.scalar_op)


@dataclass(frozen=True)
class DimShuffle(Op):
    """Reorder axes, insert new length-1 axes ('x'), or drop axes of static size 1.

    `order[k]` is the input axis placed at output position k, or 'x' for a new axis.
    Input axes not named are dropped and must have static size 1.
    """

    input_ndim: int
    order: tuple

    def __post_init__(self):
        named = [o for o in self.order if o != "x"]
        if len(set(named)) != len(named) or any(not 0 <= o < self.input_ndim for o in named):
            raise ValueError(f"DimShuffle: invalid order {self.order} for {self.input_ndim} input axes")

    @property
    def dropped(self):
        return tuple(a for a in range(self.input_ndim) if a not in self.order)

    def make_node(self, x):
        x = as_tensor(x)
        if x.type.ndim != self.input_ndim:
            raise TypeError(f"{self}: expected an input with {self.input_ndim} axes, got {x.type}")
        for a in self.dropped:
            if x.type.shape[a] != 1:
                raise ValueError(f"{self}: cannot drop axis {a} of {x!r}: its static size is {x.type.shape[a]}, not 1")
        return build(self, [x], [x.type.dtype])

    def infer_shape(self, inputs, input_shapes):
        (sh,) = input_shapes
        return [tuple(1 if o == "x" else sh[o] for o in self.order)]

    def perform(self, node, inputs):
        (x,) = inputs
        kept = [o for o in self.order if o != "x"]
        res = np.transpose(x, kept + list(self.dropped))
        res = res.reshape(res.shape[: len(kept)])  # the dropped axes are trailing ones of size 1: a view
        return [np.expand_dims(res, [k for k, o in enumerate(self.order) if o == "x"])]

    def L_op(self, inputs, outputs, output_grads):
        (g,) = output_grads
        kept = [k for k, o in enumerate(self.order) if o != "x"]
        if len(kept) != len(self.order):  # drop the new (size-1) axes
            g = DimShuffle(len(self.order), tuple(kept))(g)
        source = [self.order[k] for k in kept]
        return [
            DimShuffle(len(source), tuple(source.index(a) if a in source else "x" for a in range(self.input_ndim)))(g)
        ]

    def __str__(self):
        return f"DimShuffle{{{','.join(str(o) for o in self.order)}}}"
