"""What a compile must leave as it found it: the user's graph, node by node, inner graphs included.

`graph_state(outputs)` records every node reachable from `outputs` (its op, and its inputs and outputs by
identity) and the digests of the graph and of every inner graph an op holds (an inner graph digests itself
once, when built, so a change made to it later shows only in a digest taken again); `assert_same_state`
compares two records and names the nodes that changed.
"""

import dataclasses

from dimgraph.core.graph import Constant, Op, graph_digest, graph_inputs, toposort
from dimgraph.core.inner import InnerGraph


def inner_graphs(value):
    """The inner graphs an op holds, in its fields or in the ops it holds (a Blockwise of a macro)."""
    if isinstance(value, InnerGraph):
        return [value]
    if isinstance(value, (tuple, list)):
        return [g for v in value for g in inner_graphs(v)]
    if isinstance(value, Op) or (dataclasses.is_dataclass(value) and not isinstance(value, type)):
        return [g for f in dataclasses.fields(value) for g in inner_graphs(getattr(value, f.name))]
    return []


def graph_state(outputs):
    """({id(node): (node, op, input ids, output ids)}, [digest of the graph, then of each inner graph])."""
    outputs = list(outputs)
    leaves = [v for v in graph_inputs(outputs) if not isinstance(v, Constant)]
    nodes, digests = {}, [graph_digest(leaves, outputs, names=True)]
    graphs, seen = [(outputs, ())], set()
    while graphs:
        outs, blockers = graphs.pop()
        for node in toposort(outs, blockers=blockers):
            nodes[id(node)] = (node, node.op, tuple(map(id, node.inputs)), tuple(map(id, node.outputs)))
            for g in inner_graphs(node.op):
                if id(g) not in seen:
                    seen.add(id(g))
                    digests.append(graph_digest(g.inputs, g.outputs))
                    graphs.append((g.outputs, g.inputs))
    return nodes, digests


def assert_same_state(before, after, what):
    (nodes, digests), (nodes_after, digests_after) = before, after
    changed = [str(entry[1]) for key, entry in nodes.items() if nodes_after.get(key) != entry]
    assert not changed and nodes_after.keys() == nodes.keys(), f"{what} changed the user's graph: nodes {changed[:5]}"
    assert digests_after == digests, f"{what} changed the digest of the user's graph or of an inner graph"
