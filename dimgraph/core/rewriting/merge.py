"""Merge: one pass in topological order that makes equal subgraphs one subgraph, in linear time.

Constants are merged by value (type, dtype, shape, bytes: a digest, then the bytes compared in place). A node is then identified by
its op's digest (`dimgraph.core.digest.op_digest`, the one `Apply.key` is built
from) and the identities of its (already merged) inputs, the same structure as
`Apply.key` but exact: keys of nodes whose inputs a rewrite changed are stale,
so the pass recomputes them as it goes rather than trusting them, and a node
merges only into one whose op is equal, not just equally digested. The inputs of a
commutative elementwise op are taken as a set (`a * b` and `b * a` are one value:
IEEE addition and multiplication commute exactly), which gradients produce often.
"""

from __future__ import annotations

from dimgraph.core.digest import op_digest
from dimgraph.core.elemwise import Elemwise
from dimgraph.core.graph import Constant
from dimgraph.core.scalar import ScalarOp


def merge_graph(fgraph, ctx, rewriter):
    """Replace every duplicate constant and every duplicate node by its first occurrence."""
    consts = {}  # (type, digest key) -> the first constants with it; bytes compared in place, never copied
    for var in list(fgraph.clients):
        if isinstance(var, Constant) and var in fgraph.clients:
            firsts = consts.setdefault((var.type, var.key), [])
            first = next((f for f in firsts if f.same_bytes(var)), None)
            if first is None:
                firsts.append(var)
            elif first is not var:
                ctx.replace(rewriter, None, [(var, first)])
    seen = {}
    for node in fgraph.toposort():
        if node not in fgraph.nodes:
            continue
        ids = tuple(id(i) for i in node.inputs)
        if _commutative(node):
            ids = tuple(sorted(ids))
        key = (op_digest(node.op), ids)
        first = seen.setdefault(key, node)
        if first is node or first.op != node.op:
            continue
        pairs = [(o, f) for o, f in zip(node.outputs, first.outputs) if o.type == f.type]
        if len(pairs) == len(node.outputs):
            ctx.replace(rewriter, node, pairs)


def _commutative(node):
    op = node.op
    return isinstance(op, Elemwise) and type(op.scalar_op) is ScalarOp and op.scalar_op.spec.commutative
