"""Experimental rewrite mode by equality saturation: `dg.function(..., rewrites={"egraph": True})`.

Instead of running canonicalize, stabilize and specialize one after the other
(each rule applied as soon as it matches, so an earlier rule can hide a later,
better one), the graph goes into an e-graph (`egraph.py`) where every rewrite
only adds equal terms; the project's own rules (`translate.py`) and rules that
need a global view (`rules.py`: index lifting, switch as masked sets, sum of a
broadcast) run until nothing new appears or a budget runs out, and the cheapest
graph under a cost model with fusion (`cost.py`) is extracted (`extract.py`).
Fusion and the backends then work on it as usual. `docs/egraph.md` has the
measured comparison with the phase order.

>>> import dimgraph as dg
>>> x = dg.vector("x")
>>> f = dg.function([x], dg.log(1 + x) * 1, rewrites={"egraph": True}, backend="python")
>>> f.fgraph.outputs[0].owner.op.scalar_op.name
'log1p'
>>> f.rewrite_trace.egraph.status
'saturated'

Options: `rewrites={"egraph": {"node_limit": 20000, "time_limit": 5.0, "iter_limit": 30}}`.
"""

from __future__ import annotations

from dimgraph.core.rewriting.egraph.cost import GraphCost, graph_cost  # noqa: F401
from dimgraph.core.rewriting.egraph.phase import EGraphPhase, EGraphReport  # noqa: F401


def egraph_phases(phases, options):
    """`phases` (db.PHASES) with canonicalize, stabilize and specialize replaced by one e-graph phase."""
    local = {"canonicalize", "stabilize", "specialize"}
    out, placed = [], False
    for phase in phases:
        if phase.name not in local:
            out.append(phase)
        elif not placed:
            out.append(EGraphPhase([p for p in phases if p.name in local], options))
            placed = True
    return out
