"""Merge: one pass in topological order that makes equal subgraphs one subgraph, in linear time.

Constants are merged by value (dtype, shape, bytes). A node is then identified by
its op and the identities of its (already merged) inputs, the same structure as
`Apply.key` but exact: keys of nodes whose inputs a rewrite changed are stale,
so the pass recomputes them as it goes rather than trusting them.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.graph import Constant


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
        key = (node.op, tuple(id(i) for i in node.inputs))
        first = seen.setdefault(key, node)
        if first is node:
            continue
        pairs = [(o, f) for o, f in zip(node.outputs, first.outputs) if o.type == f.type]
        if len(pairs) == len(node.outputs):
            ctx.replace(rewriter, node, pairs)
