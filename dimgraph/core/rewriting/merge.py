"""Merge: one pass in topological order that makes equal subgraphs one subgraph, in linear time.

Constants are merged by value (dtype, shape, bytes). A node is then identified by
its op and the identities of its (already merged) inputs, the same structure as
`Apply.key` but exact: keys of nodes whose inputs a rewrite changed are stale,
so the pass recomputes them as it goes rather than trusting them. The inputs of a
commutative elementwise op are taken as a set (`a * b` and `b * a` are one value:
IEEE addition and multiplication commute exactly), which gradients produce often.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.elemwise import Elemwise
from dimgraph.core.graph import Constant
from dimgraph.core.scalar import ScalarOp


def _const_key(c):
    arr = np.ascontiguousarray(c.data)
    return (type(c.type), arr.dtype.str, arr.shape, arr.view(np.uint8).tobytes() if arr.size else b"")


def merge_graph(fgraph, ctx, rewriter):
    """Replace every duplicate constant and every duplicate node by its first occurrence."""
    consts = {}
    for var in list(fgraph.clients):
        if isinstance(var, Constant) and var in fgraph.clients:
            first = consts.setdefault(_const_key(var), var)
            if first is not var and first.type == var.type:
                ctx.replace(rewriter, None, [(var, first)])
    seen = {}
    for node in fgraph.toposort():
        if node not in fgraph.nodes:
            continue
        ids = tuple(id(i) for i in node.inputs)
        if _commutative(node):
            ids = tuple(sorted(ids))
        key = (node.op, ids)
        first = seen.setdefault(key, node)
        if first is node:
            continue
        pairs = [(o, f) for o, f in zip(node.outputs, first.outputs) if o.type == f.type]
        if len(pairs) == len(node.outputs):
            ctx.replace(rewriter, node, pairs)


def _commutative(node):
    op = node.op
    return isinstance(op, Elemwise) and type(op.scalar_op) is ScalarOp and op.scalar_op.spec.commutative
