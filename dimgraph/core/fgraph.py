"""`FunctionGraph`: the one mutable container that rewrites and backends work on.

It owns a copy of the graph between its inputs and outputs (every node, those
that read only constants too: `replace` rewrites nodes in place, and the
caller's graph must come out of a compile as it went in), keeps for every
variable its clients `(node, input_index)` (an output is a client
`("output", i)`; an insertion-ordered dict used as a set, so dropping one client of
a variable with thousands is O(1)), and tells listening features about every change. Variables are
never mutated in place except for `node.inputs[i]` through `replace`.
"""

from __future__ import annotations

from dimgraph.core.graph import Constant, clone_graph, toposort


class FunctionGraph:
    def __init__(self, inputs, outputs, clone=True):
        inputs, outputs = list(inputs), list(outputs)
        if clone:
            inputs, outputs, _ = clone_graph(outputs, inputs)
        self.inputs = inputs
        self.outputs = outputs
        self.features = []
        self.clients = {}
        self.nodes = set()
        for v in inputs:
            self.clients.setdefault(v, {})
        for node in toposort(outputs, blockers=inputs):
            self._import_node(node)
        for i, out in enumerate(outputs):
            self.clients.setdefault(out, {})[("output", i)] = None
        self._check_inputs_reachable()

    def _check_inputs_reachable(self):
        given = set(self.inputs)
        for v in self.clients:
            if v.owner is None and not isinstance(v, Constant) and v not in given:
                raise ValueError(
                    f"the graph needs {v!r}, which is not among the inputs {[i.name for i in self.inputs]}"
                )

    # -- bookkeeping -------------------------------------------------------
    def _import_node(self, node):
        if node in self.nodes:
            return
        self.nodes.add(node)
        for i, inp in enumerate(node.inputs):
            self.clients.setdefault(inp, {})[(node, i)] = None
        for out in node.outputs:
            self.clients.setdefault(out, {})
        for f in self.features:
            f.on_import(self, node)

    def _import_graph(self, var):
        # Walk only the new part (stop at variables already in the graph): O(new nodes), not O(graph).
        if var in self.clients:
            return
        new, stack, seen = [], [var], set()
        while stack:
            v = stack.pop()
            if v in seen or v in self.clients or v.owner is None:
                continue
            seen.add(v)
            new.append(v)
            stack.extend(v.owner.inputs)
        for node in toposort([var], blockers=[i for v in new for i in v.owner.inputs if i in self.clients]):
            self._import_node(node)

    def _prune(self, var):
        """Drop the nodes that no longer reach an output, starting from `var`."""
        stack = [var]
        while stack:
            v = stack.pop()
            node = v.owner
            if node is None or node not in self.nodes:
                continue
            if any(self.clients.get(o) for o in node.outputs):
                continue
            self.nodes.discard(node)
            for o in node.outputs:
                self.clients.pop(o, None)
            for i, inp in enumerate(node.inputs):
                cl = self.clients.get(inp)
                if cl is not None:
                    cl.pop((node, i), None)
                    if not cl:
                        stack.append(inp)
            for f in self.features:
                f.on_prune(self, node)

    # -- changes -----------------------------------------------------------
    def replace(self, old, new, reason=None, prune=True):
        """Make every client of `old` use `new`; `new`'s type must accept all of `old`'s values."""
        if old is new:
            return
        if old not in self.clients:
            raise ValueError(f"replace: {old!r} is not in this graph")
        # A replacement may be more or less specific about static sizes, never of another kind.
        if not (old.type.is_super(new.type) or new.type.is_super(old.type)):
            raise TypeError(
                f"replace ({reason or 'manual'}): {old!r} has type {old.type} but its replacement "
                f"{new!r} has type {new.type}"
            )
        self._import_graph(new)
        for client, i in list(self.clients[old]):
            if client == "output":
                self.outputs[i] = new
            else:
                client.inputs[i] = new
            del self.clients[old][(client, i)]
            self.clients.setdefault(new, {})[(client, i)] = None
            for f in self.features:
                f.on_change_input(self, client, i, old, new, reason)
        if prune:
            self._prune(old)

    def attach_feature(self, feature):
        self.features.append(feature)
        if hasattr(feature, "on_attach"):
            feature.on_attach(self)

    def remove_feature(self, feature):
        self.features.remove(feature)

    # -- views -------------------------------------------------------------
    def toposort(self):
        return toposort(self.outputs, blockers=self.inputs)

    def variables(self):
        return list(self.clients)

    def clone(self):
        """An independent copy with fresh inputs; returns (fgraph, memo id(old)->new)."""
        inputs, outputs, memo = clone_graph(self.outputs, self.inputs)
        return FunctionGraph(inputs, outputs, clone=False), memo

    def __repr__(self):
        return f"FunctionGraph({self.inputs} -> {self.outputs}, {len(self.nodes)} nodes)"


class Feature:
    """A listener on graph changes; override the hooks you need."""

    def on_attach(self, fgraph):
        pass

    def on_import(self, fgraph, node):
        pass

    def on_prune(self, fgraph, node):
        pass

    def on_change_input(self, fgraph, node, i, old, new, reason):
        pass
