"""`OpFromGraph`: a user macro, a graph kept as one node, with a derived or user-given gradient.

The node holds its graph as an `InnerGraph` (so two macros built from the same
function are one op and merge, as loops do). Its gradient is the inner
graph's own vector-Jacobian product, or the user's `grad` graph when given.
The `inline_op_from_graph` rewrite replaces the node by its graph (so the
rewrites see through it) unless the op was made with `inline=False`; gradients
are built before rewriting, so a user gradient is used either way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from dimgraph.core.basic import as_tensor
from dimgraph.core.gradient import vjp
from dimgraph.core.graph import Apply, Constant, Op, clone_graph
from dimgraph.core.inner import InnerGraph
from dimgraph.core.shape import shape_of
from dimgraph.core.shape_ops import zeros_like
from dimgraph.core.type import TensorType
from dimgraph.core.vectorize import blockwise_fallback, vectorize_graph, vectorize_node


def _is_float(var) -> bool:
    return isinstance(var.type, TensorType) and np.dtype(var.type.dtype).kind in "fc"


@dataclass(frozen=True)
class OpFromGraph(Op):
    """Inputs and outputs of `graph`; `grad_graph` maps `(*inputs, *output grads)` to one gradient per input."""

    graph: InnerGraph
    grad_graph: InnerGraph | None = None
    inline: bool = True
    name: str = field(default="op_from_graph", compare=False)

    inner_graph_fields: ClassVar[tuple] = ("graph",)

    def make_node(self, *inputs):
        inputs = [as_tensor(v) if not hasattr(v, "type") else v for v in inputs]
        if len(inputs) != len(self.graph.inputs):
            raise TypeError(f"{self.name}: takes {len(self.graph.inputs)} inputs, got {len(inputs)}")
        for k, (t, v) in enumerate(zip(self.graph.input_types, inputs)):
            if not t.is_super(v.type):
                raise TypeError(f"{self.name}: input {k} is declared {t}, got {v!r}")
        return Apply(self, inputs, list(self.graph.output_types))

    def infer_shape(self, inputs, input_shapes):
        return [shape_of(o) if isinstance(o.type, TensorType) else () for o in self.graph.apply(inputs)]

    def perform(self, node, inputs):
        return self.graph.evaluate(list(inputs))

    def L_op(self, inputs, outputs, output_grads):
        if self.grad_graph is not None:
            return [
                g if _is_float(v) else None for v, g in zip(inputs, self.grad_graph.apply([*inputs, *output_grads]))
            ]
        # NOTE: differentiate the inner graph on its own placeholders, then substitute the outer
        # values: one outer variable bound to two inputs (op(z, z)) must get each slot's own share.
        ins, outs = self.graph.inputs, self.graph.outputs
        slots = [o.type.make_variable() for o in outs]
        pairs = [(o, g) for o, g in zip(outs, slots) if _is_float(o)]
        floats = [k for k, v in enumerate(ins) if _is_float(v)]
        grads = vjp([o for o, _ in pairs], [g for _, g in pairs], [ins[k] for k in floats], disconnected="zero")
        _, grads, _ = clone_graph(grads, [*ins, *slots], replace=dict(zip([*ins, *slots], [*inputs, *output_grads])))
        result = [None] * len(inputs)
        for k, g in zip(floats, grads):
            result[k] = g if _is_float(inputs[k]) else None
        return result

    def __str__(self):
        return f"OpFromGraph{{{self.name}{'' if self.inline else ', kept'}}}"


def check_distinct_inputs(inputs, name):
    """Refuse an input listed twice: the call would bind it twice and use one of the two values (PyTensor refuses too)."""
    for k, v in enumerate(inputs):
        for j in range(k):
            if inputs[j] is v:
                raise ValueError(f"{name}: input {k} ({v!r}) repeats input {j}; each input must be a distinct variable")


def _constants_as_inputs(inputs, outputs):
    """Constants listed among the inputs become placeholders of their type: the call gives their values."""
    if not any(isinstance(v, Constant) for v in inputs):
        return inputs, outputs
    slots = [v.type.make_variable(name=v.name) if isinstance(v, Constant) else v for v in inputs]
    replace = {v: s for v, s in zip(inputs, slots) if s is not v}
    _, outputs, _ = clone_graph(outputs, [], replace=replace)
    return slots, outputs


def op_from_graph(inputs, outputs, grad=None, inline=True, name="op_from_graph"):
    """An op computing `outputs` from `inputs` (positional variables), applied as one node.

    `grad(inputs, output_grads) -> list of input gradients` overrides the derived
    gradient (it is called once on placeholders; it may read only them). The
    node is replaced by its graph during rewriting unless `inline=False`.

    >>> import dimgraph as dg, numpy as np
    >>> a, b = dg.scalar("a"), dg.scalar("b")
    >>> fma = dg.core.op_from_graph([a, b], [a * b + 1.0])
    >>> x = dg.scalar("x")
    >>> float(fma(x, x).eval({x: 3.0}))
    10.0
    """
    inputs, outputs = list(inputs), [as_tensor(o) if not hasattr(o, "type") else o for o in outputs]
    check_distinct_inputs(inputs, name)
    inputs, outputs = _constants_as_inputs(inputs, outputs)
    graph = InnerGraph(inputs, outputs)
    grad_graph = None
    if grad is not None:
        ins = list(graph.inputs)
        gs = [o.type.make_variable(name=f"g{k}") for k, o in enumerate(graph.outputs)]
        given = grad(ins, gs)
        if len(given) != len(ins):
            raise ValueError(f"{name}: grad returned {len(given)} gradients for {len(ins)} inputs")
        given = [zeros_like(v) if g is None else as_tensor(g) for v, g in zip(ins, given)]
        for k, (v, g) in enumerate(zip(ins, given)):
            if isinstance(v.type, TensorType) and (g.type.dtype != v.type.dtype or g.type.ndim != v.type.ndim):
                raise TypeError(f"{name}: the gradient of input {k} is {g.type}, expected the input's type {v.type}")
        grad_graph = InnerGraph(ins + gs, given)
    return OpFromGraph(graph, grad_graph, inline, name)


@vectorize_node.register(OpFromGraph)
def _vectorize_op_from_graph(op, node, inputs, batched, nb):
    """A macro over batched inputs is the macro of its vectorized graph (one node, not one per element).
    A user gradient is written for the unbatched inputs: that macro stays a Blockwise (its gradient is
    the user's, vectorized)."""
    if op.grad_graph is not None or not all(isinstance(v.type, TensorType) for v, b in zip(inputs, batched) if b):
        return blockwise_fallback(op, node, inputs, batched, nb)
    places = [v.type.make_variable(name=p.name) if b else p for p, v, b in zip(op.graph.inputs, inputs, batched)]
    outs = vectorize_graph(list(op.graph.outputs), {p: q for p, q, b in zip(op.graph.inputs, places, batched) if b})
    return OpFromGraph(InnerGraph(places, outs), None, op.inline, op.name).make_node(*inputs).outputs
