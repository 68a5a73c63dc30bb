"""Extraction: the cheapest term of each output's class under the cost model, built back into a graph.

Greedy bottom-up (egg's default extractor): each class's cost is the least, over
its e-nodes (less those a stabilize rule banned), of the e-node's local cost (`cost.node_cost`, which knows whether
the chosen child fuses into it) plus its children's costs, iterated to a fixed
point. Costs are never negative, so the choice has no cycle. At equal cost the
younger term wins (a rewrite's result over what it replaced: the phase order would
have applied the rewrite), except for free terms (views), where that could cycle. A shared child is
counted once per consumer (a tree cost): the whole result is priced again as a
DAG, after fusion, by `cost.graph_cost`.

The chosen terms are built with each op's `make_node`, except that a term that is
an existing node on the same inputs reuses it (so an unchanged graph stays the
same objects).
"""

from __future__ import annotations

from dimgraph.core.rewriting.egraph.cost import kind_of, node_cost
from dimgraph.core.rewriting.egraph.egraph import LEAF
from dimgraph.core.shape import ShapeI
from dimgraph.core.shape_ops import reshape
from dimgraph.core.type import TensorType


class ExtractionError(RuntimeError):
    """No finite-cost term, or a built term of another type: the phase falls back to the phase order."""


def choose(eg, mask_fraction):
    """{class id: (cost, e-node, kind)} for every class with a finite-cost term."""
    best = {}
    banned = {eg.canonical(e) for e in eg.banned}
    for _ in range(len(eg.classes) + 2):
        changed = False
        for cid, cls in eg.classes.items():
            for enode in cls.nodes:
                if enode in banned:
                    continue
                children = list(dict.fromkeys(eg.find(c) for c in enode.children))
                if any(c not in best for c in children):
                    continue
                local = node_cost(
                    enode.op,
                    cls.type,
                    cls.size,
                    [(eg[c].type, eg[c].size, best[eg.find(c)][2], eg.find(c)) for c in enode.children],
                    mask_fraction,
                )
                total = local + sum(best[c][0] for c in children)
                if cid not in best or total < best[cid][0] - 1e-9 * abs(total):
                    best[cid] = (total, enode, kind_of(enode.op))
                    changed = True
                elif (
                    local > 0 and total <= best[cid][0] + 1e-9 * abs(total) and _age(eg, enode) > _age(eg, best[cid][1])
                ):
                    best[cid] = (best[cid][0], enode, kind_of(enode.op))  # a tie goes to the rewritten form
        if not changed:
            return best
    return best


def _age(eg, enode):
    """When the term behind `enode` was built (graph variables count up): rewrites' results are younger."""
    origin = eg.origin.get(enode)
    return -1 if origin is None else origin._uid


def build(eg, best, roots):
    """Graph variables for the classes `roots`, from the chosen e-nodes."""
    built = {}
    nodes = {}
    for root in roots:
        stack = [(eg.find(root), False)]
        on_path = set()
        while stack:
            cid, ready = stack.pop()
            if cid in built:
                continue
            if cid not in best:
                raise ExtractionError(f"class {cid} ({eg[cid].type}) has no finite-cost term")
            enode = best[cid][1]
            children = [eg.find(c) for c in enode.children]
            if not ready:
                if cid in on_path:
                    raise ExtractionError(f"the chosen terms form a cycle through class {cid}")
                on_path.add(cid)
                stack.append((cid, True))
                stack.extend((c, False) for c in children if c not in built)
                continue
            on_path.discard(cid)
            built[cid] = _pinned(_term(eg, enode, [built[c] for c in children], nodes), eg[cid].type)
    return [built[eg.find(r)] for r in roots]


def _term(eg, enode, inputs, nodes):
    if enode.op == LEAF:
        return enode.leaf
    origin = eg.origin.get(enode)
    if origin is not None and origin.owner is not None and len(origin.owner.inputs) == len(inputs):
        if all(a is b for a, b in zip(origin.owner.inputs, inputs)):
            return origin
    key = (enode.op, tuple(id(v) for v in inputs))
    node = nodes.get(key)
    if node is None:
        node = nodes[key] = enode.op.make_node(*inputs)
    return node.outputs[enode.index]


def _pinned(var, typ):
    """`var` with the static sizes its class knows (a no-op reshape), so consumers broadcast as written."""
    if not isinstance(typ, TensorType) or var.type == typ:
        return var
    if var.type.dtype != typ.dtype or var.type.ndim != typ.ndim:
        raise ExtractionError(f"a chosen term has type {var.type}, its class {typ}")
    if all(a is None or a == b for a, b in zip(typ.shape, var.type.shape)):
        return var
    return reshape(var, tuple(s if s is not None else ShapeI(k)(var) for k, s in enumerate(typ.shape)))
