"""`IfElse`: a lazy branch. Only the taken branch's own nodes run; what both branches share runs outside.

The op holds two `InnerGraph`s over the same arguments. `ifelse(cond, then, else)`
decides what goes inside each branch when it is built: the nodes that only the
`then` outputs need (not the `else` outputs, not the condition) form the then
graph, and likewise for else; every value they read from outside, shared parts
included, is an argument computed once by the outer graph. So a branch that
would raise, or would cost much, never runs when not taken, on every backend.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dimgraph.core.basic import as_tensor
from dimgraph.core.gradient import vjp
from dimgraph.core.graph import Apply, Constant, Op, toposort
from dimgraph.core.inner import InnerGraph
from dimgraph.core.math import neq
from dimgraph.core.shape import ShapeI, static_or_symbolic
from dimgraph.core.shape_ops import broadcast_to
from dimgraph.core.type import TensorType
from dimgraph.core.vectorize import batch_shape, blockwise_fallback, full_batch, pad, vectorize_graph, vectorize_node


def _join_type(k, a, b):
    """The output type both branches fit: static sizes where they agree."""
    if isinstance(a, TensorType) and isinstance(b, TensorType):
        if a.dtype != b.dtype or a.ndim != b.ndim:
            raise TypeError(f"ifelse: output {k} is {a} in the then branch but {b} in the else branch")
        return TensorType(a.dtype, tuple(x if x == y else None for x, y in zip(a.shape, b.shape)))
    if a != b:
        raise TypeError(f"ifelse: output {k} is {a} in the then branch but {b} in the else branch")
    return a


@dataclass(frozen=True)
class IfElse(Op):
    """Inputs `(cond, *args)`; outputs `then_graph(*args)` when cond is true, else `else_graph(*args)`."""

    then_graph: InnerGraph
    else_graph: InnerGraph

    def make_node(self, cond, *args):
        cond = as_tensor(cond)
        if not (isinstance(cond.type, TensorType) and cond.type.ndim == 0 and cond.type.dtype == "bool"):
            raise TypeError(f"ifelse: the condition must be a 0-d bool, got {cond!r}")
        for k, (t, a) in enumerate(zip(self.then_graph.input_types, args)):
            if not t.is_super(a.type):
                raise TypeError(f"ifelse: argument {k} is declared {t}, got {a!r}")
        types = [
            _join_type(k, a, b)
            for k, (a, b) in enumerate(zip(self.then_graph.output_types, self.else_graph.output_types))
        ]
        return Apply(self, [cond, *args], types)

    def infer_shape(self, inputs, input_shapes):
        # A size the types leave open is the taken branch's: read from the output itself at run time.
        node = self.make_node(*inputs)
        return [
            tuple(s if s is not None else ShapeI(a)(o) for a, s in enumerate(o.type.shape))
            if isinstance(o.type, TensorType)
            else ()
            for o in node.outputs
        ]

    def perform(self, node, inputs):
        cond, *args = inputs
        graph = self.then_graph if bool(cond) else self.else_graph
        return [
            np.asarray(v, dtype=o.type.dtype) if isinstance(o.type, TensorType) else v
            for v, o in zip(graph.evaluate(args), node.outputs)
        ]

    def L_op(self, inputs, outputs, output_grads):
        """The gradient flows through the taken branch: an IfElse of the two branches' vector-Jacobian products."""
        cond, args = inputs[0], inputs[1:]
        floats = [
            k for k, a in enumerate(args) if isinstance(a.type, TensorType) and np.dtype(a.type.dtype).kind in "fc"
        ]
        wrt = [args[k] for k in floats]
        branch_grads = []
        for graph in (self.then_graph, self.else_graph):
            outs = graph.apply(args)
            pairs = [
                (o, g)
                for o, g in zip(outs, output_grads)
                if isinstance(o.type, TensorType) and np.dtype(o.type.dtype).kind in "fc"
            ]
            branch_grads.append(vjp([o for o, _ in pairs], [g for _, g in pairs], wrt, disconnected="zero"))
        grads = ifelse(cond, *branch_grads) if floats else []
        result = [None] * len(inputs)
        for k, g in zip(floats, grads):
            result[1 + k] = g
        return result

    def __str__(self):
        return f"IfElse{{outputs={len(self.then_graph.outputs)}}}"


def ifelse(cond, then_outputs, else_outputs):
    """`then_outputs` when `cond` (0-d) is true, else `else_outputs`; only the taken branch runs.

    Either argument may be one variable (one comes back) or a list (a list comes back).

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.scalar("x")
    >>> y = dg.core.ifelse(x > 0, dg.log(x), -x)
    >>> float(y.eval({x: 4.0})), float(y.eval({x: -2.0}))
    (1.3862943611198906, 2.0)
    """
    single = not isinstance(then_outputs, (list, tuple))
    then_outs = [as_tensor(v) if not hasattr(v, "type") else v for v in ([then_outputs] if single else then_outputs)]
    else_outs = [as_tensor(v) if not hasattr(v, "type") else v for v in ([else_outputs] if single else else_outputs)]
    if len(then_outs) != len(else_outs):
        raise ValueError(f"ifelse: the then branch has {len(then_outs)} outputs but the else branch {len(else_outs)}")
    cond = as_tensor(cond)
    if cond.type.ndim != 0:
        raise ValueError(f"ifelse: the condition must be 0-d, got {cond!r}")
    if cond.type.dtype != "bool":
        cond = neq(cond, 0)
    for k, (a, b) in enumerate(zip(then_outs, else_outs)):
        _join_type(k, a.type, b.type)
    then_nodes, else_nodes = set(toposort(then_outs)), set(toposort(else_outs))
    outside = set(toposort([cond]))
    args = []
    seen = set()
    for outs, own in ((then_outs, then_nodes - else_nodes - outside), (else_outs, else_nodes - then_nodes - outside)):
        for node in toposort(outs):
            if node in own:
                for i in node.inputs:
                    if (i.owner is None or i.owner not in own) and not isinstance(i, Constant) and id(i) not in seen:
                        seen.add(id(i))
                        args.append(i)
        for o in outs:
            if (o.owner is None or o.owner not in own) and not isinstance(o, Constant) and id(o) not in seen:
                seen.add(id(o))
                args.append(o)
    node = IfElse(InnerGraph(args, then_outs), InnerGraph(args, else_outs)).make_node(cond, *args)
    return node.outputs[0] if single else list(node.outputs)


@vectorize_node.register(IfElse)
def _vectorize_ifelse(op, node, inputs, batched, nb):
    """A branch over batched arguments and one condition is one IfElse of the vectorized branches (still
    lazy); an output batched in one branch only is broadcast in the other. A batched condition picks a
    branch per element: Blockwise."""
    if batched[0] or not all(isinstance(v.type, TensorType) for v, b in zip(inputs, batched) if b):
        return blockwise_fallback(op, node, inputs, batched, nb)
    shape = batch_shape(inputs, batched, nb)
    args = [full_batch(a, shape, nb) if b else a for a, b in zip(inputs[1:], batched[1:])]
    first = next(k for k, b in enumerate(batched[1:]) if b)
    branches = []
    for graph in (op.then_graph, op.else_graph):
        places = [a.type.make_variable() if b else p for p, a, b in zip(graph.inputs, args, batched[1:])]
        replace = {p: q for p, q, b in zip(graph.inputs, places, batched[1:]) if b}
        outs = vectorize_graph(list(graph.outputs), replace)
        sizes = static_or_symbolic(places[first])[:nb]  # the batch, read inside the branch
        outs = [
            o if o.type.ndim > c.type.ndim else broadcast_to(pad(o, nb), tuple(sizes) + tuple(static_or_symbolic(o)))
            for o, c in zip(outs, graph.outputs)
        ]
        branches.append(InnerGraph(places, outs))
    return IfElse(*branches).make_node(inputs[0], *args).outputs
