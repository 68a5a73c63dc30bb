"""`CAReduceElemwise`: reductions of a fused elementwise expression, with no full-size temporary.

The fusion phase (`dimgraph.core.rewriting.fusion`) turns `sum(f(a, b, ...))`,
where `f` is an Elemwise read only by the reduction, into one node: the scalar
`Composite` `f` is evaluated and reduced block by block. Inputs broadcast like
Elemwise inputs (equal ndim, only static size 1 stretches), so low-rank inputs
stay low rank and backends broadcast them by strides.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dimgraph.core.basic import as_tensor
from dimgraph.core.elemwise import Elemwise
from dimgraph.errors import ShapeError
from dimgraph.core.graph import Op
from dimgraph.core.reduce import REDUCERS
from dimgraph.core.scalar import Composite
from dimgraph.core.shape import build

# The ufunc that combines two partial reductions.
COMBINE = {
    "add": np.add,
    "mul": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "and": np.logical_and,
    "or": np.logical_or,
}

BLOCK_ELEMENTS = 1 << 16  # elements of the elementwise result evaluated at once by `perform`


@dataclass(frozen=True)
class CAReduceElemwise(Op):
    """`reducer` over `axis` of every output of `scalar_op` applied elementwise to the inputs.

    A multi-output `scalar_op` gives one reduced output per composite output:
    the sum of a log-density term and the sums of its gradient terms come from
    one loop over the data.

    >>> import dimgraph as dg, numpy as np
    >>> from dimgraph.core.scalar import Composite, ScalarOp
    >>> sq = Composite(in_dtypes=("float64",), steps=((ScalarOp("square"), (0,)),), outs=(1,))
    >>> x = dg.vector("x")
    >>> float(CAReduceElemwise(sq, "add", (0,))(x).eval({x: np.arange(3.0)}))
    5.0
    """

    scalar_op: Composite
    reducer: str
    axis: tuple

    def __post_init__(self):
        if self.reducer not in REDUCERS:
            raise ValueError(f"CAReduceElemwise: unknown reducer {self.reducer!r}; known: {sorted(REDUCERS)}")

    @property
    def elemwise(self):
        return Elemwise(self.scalar_op)

    def make_node(self, *inputs):
        inputs = [as_tensor(i) for i in inputs]
        dtypes = tuple(i.type.dtype for i in inputs)
        if dtypes != tuple(self.scalar_op.in_dtypes):
            raise TypeError(f"{self}: expected input dtypes {self.scalar_op.in_dtypes}, got {dtypes}")
        # Elemwise validates arity, ndim and static broadcasting; its output types are the unreduced arrays.
        full = self.elemwise.make_node(*inputs).outputs
        ndim = full[0].type.ndim
        if any(not 0 <= a < ndim for a in self.axis):
            raise ValueError(f"{self}: axes {self.axis} out of range for {full[0].type}")
        if self.reducer in ("maximum", "minimum") and any(full[0].type.shape[a] == 0 for a in self.axis):
            raise ValueError(f"{self}: cannot reduce an empty axis (no identity for {self.reducer})")
        out_dtypes = [REDUCERS[self.reducer](np.zeros((1,), dtype=f.type.dtype)).dtype.name for f in full]
        return build(self, inputs, out_dtypes)

    def infer_shape(self, inputs, input_shapes):
        full = self.elemwise.infer_shape(inputs, input_shapes)[0]
        return [tuple(s for a, s in enumerate(full) if a not in self.axis)] * self.scalar_op.nout

    def perform(self, node, inputs):
        _check_broadcast(self, node, inputs)
        dtypes = [o.type.dtype for o in node.outputs]
        shape = np.broadcast_shapes(*[np.shape(i) for i in inputs])
        n = shape[0] if shape else 1
        row = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        step = max(1, BLOCK_ELEMENTS // max(row, 1))
        if not shape or n <= step:
            return self._reduce_block(inputs, shape, dtypes)
        parts = []
        for start in range(0, n, step):
            sl = slice(start, min(n, start + step))
            block_inputs = [i[sl] if np.shape(i)[0] != 1 else i for i in inputs]
            parts.append(self._reduce_block(block_inputs, (sl.stop - sl.start,) + tuple(shape[1:]), dtypes))
        outs = []
        for k, dtype in enumerate(dtypes):
            if 0 in self.axis:
                out = parts[0][k]
                for p in parts[1:]:
                    out = COMBINE[self.reducer](out, p[k])
            else:
                out = np.concatenate([p[k] for p in parts], axis=0)
            outs.append(np.asarray(out, dtype=dtype))
        return outs

    def _reduce_block(self, inputs, shape, dtypes):
        reduce = REDUCERS[self.reducer]
        results = self.scalar_op.impl(*inputs)
        return [
            np.asarray(reduce(np.broadcast_to(r, shape), axis=self.axis), dtype=dt) for r, dt in zip(results, dtypes)
        ]

    def L_op(self, inputs, outputs, output_grads):
        """Unfuse: differentiate `reducer(Elemwise(scalar_op)(*inputs))` through their own L_ops."""
        from dimgraph.core.gradient import vjp
        from dimgraph.core.reduce import CAReduce

        full = self.elemwise(*inputs)
        full = full if isinstance(full, (list, tuple)) else [full]
        reduced = [CAReduce(self.reducer, tuple(self.axis))(f) for f in full]
        return vjp(reduced, output_grads, list(inputs), disconnected="none")

    def __str__(self):
        return f"{self.reducer}_reduce{{axis={list(self.axis)}}}({self.scalar_op})"


def _check_broadcast(op, node, inputs):
    """As Elemwise: an axis of unknown static size never stretches at run time."""
    for ax in range(node.inputs[0].type.ndim):
        sizes = {v.shape[ax] for v, i in zip(inputs, node.inputs) if i.type.shape[ax] != 1}
        if len(sizes) > 1:
            raise ShapeError(
                f"{op}: axis {ax} has sizes {sorted(sizes)} across inputs; only axes of static size 1 broadcast"
            )
