"""Graph rewrites run by `dg.function` between building the graph and code generation.

Phases (`db.PHASES`, in order): merge, canonicalize, stabilize, specialize,
fusion, then backend clean-ups. `rewrites=` selects what runs:

>>> import dimgraph as dg, numpy as np
>>> x = dg.vector("x")
>>> f = dg.function([x], dg.log(1 + x), rewrites={"exclude": ["fusion"], "trace": True})
>>> f.fgraph.outputs[0].owner.op.scalar_op.name
'log1p'
>>> f.fgraph.rewrite_trace.counts["log1p"]
1
"""

from __future__ import annotations

from dimgraph import config
from dimgraph.core.rewriting.db import MERGE, PHASES
from dimgraph.core.rewriting.egraph import egraph_phases
from dimgraph.core.rewriting.engine import (  # noqa: F401
    Context,
    GlobalPhase,
    GraphRewriter,
    LocalPhase,
    NodeRewriter,
    RewriteError,
    RewriteSpec,
    RewriteTrace,
    node_rewriter,
)
from dimgraph.core.rewriting.pattern import Pat, rule  # noqa: F401

# Rewrites producing ops that a compiled backend must declare it can run (`Backend.rewrites_opt_in`).
OPT_IN = ("multi_output_reduce_fusion", "indexed_loop_fusion", "gather_fusion")


def rewrite_graph(fgraph, rewrites="default", backend=None):
    """Rewrite `fgraph` in place and return it; `fgraph.rewrite_trace` says what fired.

    `rewrites`: "default", "none" (the graph as written), a dict with `include`
    / `exclude` (rewrite names, tags or phase names), `trace` (record every
    event; default `dg.config.rewrite_trace`) and `egraph` (True or options: the
    experimental equality-saturation mode, `dimgraph.core.rewriting.egraph`), or a `RewriteSpec`. A `backend`
    (`dimgraph.backends.Backend`) gives `rewrites_exclude` (names/tags it cannot
    run, e.g. a fused op it has no kernel for), `rewrites_opt_in` (the `OPT_IN`
    rewrites whose ops it runs) and `cleanups` (run last); without one every rewrite runs.
    """
    spec = RewriteSpec.parse(rewrites)
    extra_exclude = ()
    if backend is not None:
        extra_exclude = tuple(backend.rewrites_exclude) + tuple(r for r in OPT_IN if r not in backend.rewrites_opt_in)
    if extra_exclude:
        spec = RewriteSpec(spec.include, tuple(spec.exclude) + extra_exclude, spec.trace, spec.egraph)
    trace = RewriteTrace(tracing=bool(config.rewrite_trace if spec.trace is None else spec.trace))
    fgraph.rewrite_trace = trace
    if spec.include == ():
        return fgraph
    ctx = Context(fgraph, spec, trace)
    ctx.backend = backend  # inner graphs are rewritten for the same backend
    merge_on = spec.enabled(MERGE)
    phases = PHASES
    if spec.egraph is not None:  # experimental: one e-graph phase instead of canonicalize/stabilize/specialize
        phases = egraph_phases(PHASES, spec.egraph)
    for phase in phases:
        if phase.name == "cleanup":
            phase = LocalPhase("cleanup", list(backend.cleanups if backend is not None else ()))
        ctx.phase = phase.name
        ctx.changed = False
        phase.run(fgraph, ctx)
        if ctx.changed and merge_on and phase.name != "merge":
            ctx.phase = "merge"
            GlobalPhase("merge", [MERGE]).run(fgraph, ctx)
    return fgraph
