"""The rewrite database: every phase, in the order it runs. Read top to bottom.

A local phase runs its rewriters to a fixed point with a work list; a global
phase runs whole-graph passes once. After any phase that changed the graph, the
merge pass runs again (rewrites build new nodes that may equal existing ones).
Each rewrite is tagged with its own name and its phase name, so
`rewrites={"exclude": ["stabilize"]}` drops a phase and
`rewrites={"exclude": ["log1p"]}` drops one rule.
"""

from __future__ import annotations

from dimgraph.core.rewriting.blockwise import blockwise_without_batch
from dimgraph.core.rewriting.canonicalize import CANONICALIZE, SPECIALIZE
from dimgraph.core.rewriting.control import CONTROL_CANONICALIZE, INNER, LOOP_FUSION
from dimgraph.core.rewriting.engine import GlobalPhase, GraphRewriter, LocalPhase
from dimgraph.core.rewriting.fusion import elemwise_fusion, fuse_gathers, fuse_indexed_loops, fuse_reduce
from dimgraph.core.rewriting.merge import merge_graph
from dimgraph.core.rewriting.selections import SELECTIONS
from dimgraph.core.rewriting.stabilize import STABILIZE

MERGE = GraphRewriter("merge", merge_graph, tags=("merge",))

PHASES = [
    GlobalPhase("merge", [MERGE]),  # equal subgraphs -> one (linear, by structural key)
    # neutral elements, folding, useless ops, static shapes; Scan -> Loop, loop-invariant code motion;
    # a Blockwise without batch axes -> its core op; reads of a few entries moved onto the arrays they
    # select from, and their gradients' scatters split per column (no zeros of the whole shape)
    LocalPhase("canonicalize", CANONICALIZE + CONTROL_CANONICALIZE + [blockwise_without_batch] + SELECTIONS),
    LocalPhase("stabilize", STABILIZE),  # log1p, expm1, log-sigmoid, logsumexp, softmax
    LocalPhase("specialize", SPECIALIZE),  # cheaper equivalents (x**2 -> sqr)
    GlobalPhase(
        "fusion",
        [
            LOOP_FUSION,  # independent loops over the same n_steps -> one loop (value + gradient: one pass)
            GraphRewriter("elemwise_fusion", elemwise_fusion, tags=("fusion",)),  # chains + multi-output
            GraphRewriter("reduce_fusion", fuse_reduce, tags=("fusion",)),  # sum(f(x)) -> CAReduceElemwise
            # sums and scatter-adds of f(table[idx], ...) -> IndexedLoop (one pass, no temporaries)
            GraphRewriter("indexed_loop_fusion", fuse_indexed_loops, tags=("fusion",)),
            # elementwise work and reductions over table[:, idx] (n-d) -> GatherElemwise (no gathered copy)
            GraphRewriter("gather_fusion", fuse_gathers, tags=("fusion",)),
        ],
    ),
    GlobalPhase("inner", [INNER]),  # the phases above inside loop bodies and branches
    LocalPhase("cleanup", []),  # backend clean-ups: replaced by the backend's `Backend.cleanups`
]


def all_rewriters():
    """Every registered rewriter by name (for docs and tests)."""
    return {rw.name: rw for phase in PHASES for rw in phase.rewriters}
