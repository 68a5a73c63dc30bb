"""Rewrites of `Blockwise`: drop it where there is no batch, unroll it for a backend with no loop for it.

- `blockwise_without_batch` (canonicalize): a Blockwise with no batch axes is its core op.
- `unroll_blockwise` (a backend cleanup, for the c backend): a Blockwise of a core op the
  backend has no batched code for, over static batch sizes, becomes one core op per batch
  element and a stack of the results.
"""

from __future__ import annotations

import itertools

import numpy as np

from dimgraph.core.blockwise import Blockwise
from dimgraph.core.join import stack
from dimgraph.core.rewriting.engine import node_rewriter
from dimgraph.core.shape import static_or_symbolic
from dimgraph.core.shape_ops import reshape

UNROLL_LIMIT = 256  # batch elements; more would print more code than a loop is worth


@node_rewriter([Blockwise])
def blockwise_without_batch(fgraph, node):
    """Blockwise{op}(x) with no batch axes -> op(x)."""
    if node.op.batch_ndim(node) != 0:
        return None
    out = node.op.core_op(*node.inputs)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def unroll_blockwise(keep):
    """A cleanup rewrite unrolling the Blockwise nodes whose core op is not an instance of `keep`."""

    @node_rewriter([Blockwise], name="unroll_blockwise")
    def unroll(fgraph, node):
        op = node.op
        if isinstance(op.core_op, keep):
            return None
        nb = op.batch_ndim(node)
        batch = tuple(node.outputs[0].type.shape[:nb])
        if None in batch or int(np.prod(batch, dtype=np.int64)) > UNROLL_LIMIT:
            return None
        results = [[] for _ in node.outputs]
        for idx in itertools.product(*[range(n) for n in batch]):
            parts = [x[tuple(0 if x.type.shape[a] == 1 else i for a, i in enumerate(idx))] for x in node.inputs]
            outs = op.core_op(*parts)
            for r, o in zip(results, outs if isinstance(outs, (list, tuple)) else [outs]):
                r.append(o)
        new = []
        for r, o in zip(results, node.outputs):
            flat = stack(r) if r else None
            if flat is None:
                return None
            new.append(
                reshape(flat, batch + tuple(static_or_symbolic(flat)[1:]))
            )  # core sizes may be known at run time only
        return new

    return unroll
