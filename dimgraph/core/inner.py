"""Inner graphs: the closed graphs that control-flow ops (Loop, Scan, IfElse, OpFromGraph) carry.

An `InnerGraph` is part of its op's identity, so it is an immutable value:
- its inputs are nominal placeholders: only their position and type matter
  (alpha-equivalence), so two bodies built separately from the same function
  are equal;
- its identity is its structural digest (`dimgraph.core.graph.graph_digest`:
  each node as its op plus references "input k", "output j of node n" or
  "constant with these bytes"), computed once, in one topological walk. Two ops
  holding inner graphs then hash and merge like any other node: no pairwise
  traversal of two graphs ever happens (an equality test compares two digests).

`free_inputs` finds the outer values a user function closed over, so builders
can turn them into explicit inputs of the op.
"""

from __future__ import annotations

from dimgraph.core.digest import Encoder
from dimgraph.core.graph import Constant, Variable, clone_graph, graph_digest, toposort


class InnerGraph:
    """A closed graph `inputs -> outputs`, copied on construction (the caller's graph is never shared).

    `inputs` are cut points: each becomes a fresh placeholder of its type, even one computed by an op.
    """

    __slots__ = ("inputs", "outputs", "structural_digest", "why_unstable", "_hash", "_program")

    def __init__(self, inputs, outputs):
        inputs, outputs = list(inputs), list(outputs)
        for k, v in enumerate(inputs):
            if not isinstance(v, Variable) or isinstance(v, Constant):
                raise TypeError(f"inner graph: input {k} must be a variable (not a constant), got {v!r}")
        self.inputs, self.outputs, _ = clone_graph(outputs, inputs)
        given = {id(v) for v in self.inputs}
        for node in toposort(self.outputs, blockers=self.inputs):
            for v in node.inputs:
                if v.owner is None and id(v) not in given and not isinstance(v, Constant):
                    raise ValueError(
                        f"inner graph: it reads {v!r}, which is neither one of its inputs nor a constant "
                        "(pass outer values as explicit inputs; builders do this with free_inputs)"
                    )
        for k, v in enumerate(self.outputs):
            if v.owner is None and id(v) not in given and not isinstance(v, Constant):
                raise ValueError(f"inner graph: output {k} is {v!r}, which is not one of its inputs")
        encode = Encoder()
        self.structural_digest = graph_digest(self.inputs, self.outputs, encode)
        self.why_unstable = encode.why_unstable  # what, if anything, is keyed by this process only
        self._hash = hash(self.structural_digest)
        self._program = None

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return isinstance(other, InnerGraph) and self.structural_digest == other.structural_digest

    def __repr__(self):
        n = len(toposort(self.outputs, blockers=self.inputs))
        return f"InnerGraph({len(self.inputs)} inputs -> {len(self.outputs)} outputs, {n} nodes)"

    def __reduce__(self):
        return (InnerGraph, (self.inputs, self.outputs))

    @property
    def input_types(self):
        return tuple(v.type for v in self.inputs)

    @property
    def output_types(self):
        return tuple(v.type for v in self.outputs)

    def nodes(self):
        return toposort(self.outputs, blockers=self.inputs)

    def apply(self, values):
        """The outputs of this graph rebuilt on outer variables `values` (inlining it): new nodes, all of them,
        so the rewrites of the graph they join never reach this one."""
        _, outs, _ = clone_graph(self.outputs, self.inputs, replace=dict(zip(self.inputs, values)))
        return outs

    def evaluate(self, values):
        """Run the graph on NumPy values with each op's `perform` (the reference semantics)."""
        if self._program is None:
            slot = {id(v): k for k, v in enumerate(self.inputs)}
            template = [None] * len(self.inputs)
            program = []

            def slot_of(var):
                if id(var) not in slot:
                    slot[id(var)] = len(template)
                    template.append(var.data if isinstance(var, Constant) else None)
                return slot[id(var)]

            for node in self.nodes():
                program.append((node, [slot_of(i) for i in node.inputs], [slot_of(o) for o in node.outputs]))
            self._program = (template, program, [slot_of(o) for o in self.outputs])
        template, program, out_slots = self._program
        store = list(template)
        store[: len(values)] = values
        for node, ins, outs in program:
            for s, r in zip(outs, node.op.perform(node, [store[i] for i in ins])):
                store[s] = r
        return [store[s] for s in out_slots]


def free_inputs(outputs, placeholders):
    """The outer variables that `outputs` read beside `placeholders`: non-constant values not computed from them.

    Nodes that do not depend on a placeholder stay outside (computed once by the
    outer graph); what they produce, and every outer graph input read, is free.
    Nodes over constants only stay inside, where the body's rewrites fold them.
    Returned in first-use order.
    """
    inner = {id(p) for p in placeholders}
    constant = set()  # values computed from constants only: they stay inside, where they fold
    free, seen = [], set()

    def visit(v):
        if id(v) not in inner and id(v) not in constant and not isinstance(v, Constant) and id(v) not in seen:
            seen.add(id(v))
            free.append(v)

    nodes = toposort(outputs, blockers=placeholders)
    for node in nodes:
        if any(id(i) in inner for i in node.inputs):
            inner.update(id(o) for o in node.outputs)
        elif node.inputs and all(isinstance(i, Constant) or id(i) in constant for i in node.inputs):
            constant.update(id(o) for o in node.outputs)
    for node in nodes:
        if any(id(o) in inner for o in node.outputs):
            for i in node.inputs:
                visit(i)
    for o in outputs:
        visit(o)
    return free
