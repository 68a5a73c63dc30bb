"""The e-graph phase: saturate, extract, and fall back to the phase order when over budget.

It stands where canonicalize, stabilize and specialize stand in `db.PHASES`, and
runs their rules (the ones the spec enables) all at once, plus `rules.EGRAPH_RULES`,
until nothing new is learned. Budgets bound the work: `node_limit` e-nodes,
`time_limit` seconds and `iter_limit` rounds. Past any of them the e-graph is
dropped (the graph is untouched until extraction) and the three phases run in their usual order; the
report (`fgraph.rewrite_trace.egraph`) says which budget stopped it, and the fallback is logged
(`logging.getLogger("dimgraph")`, level INFO).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field

from dimgraph.core.rewriting.db import MERGE
from dimgraph.core.rewriting.egraph.cost import MASK_FRACTION, estimate_size
from dimgraph.core.rewriting.egraph.egraph import LEAF, EGraph
from dimgraph.core.rewriting.egraph.extract import ExtractionError, build, choose
from dimgraph.core.rewriting.egraph.rules import EGRAPH_RULES, ERule
from dimgraph.core.rewriting.egraph.translate import NodeRewrite, PatRewrite
from dimgraph.core.rewriting.engine import GlobalPhase, LocalPhase
from dimgraph.core.rewriting.pattern import Rule

_log = logging.getLogger("dimgraph")

DEFAULTS = {"node_limit": 20_000, "time_limit": 5.0, "iter_limit": 30, "mask_fraction": MASK_FRACTION}


@dataclass
class EGraphReport:
    """What the e-graph phase did to one graph: how it ended, its size, time, and the cost it chose."""

    status: str = "not run"  # "saturated", or the budget that stopped it ("node budget", ...)
    fallback: bool = False  # True: the phase order ran instead
    iterations: int = 0
    enodes: int = 0
    eclasses: int = 0
    seconds: float = 0.0
    cost: float | None = None  # the extractor's (tree) cost of the outputs
    applied: Counter = field(default_factory=Counter)  # rule name -> equalities it added

    def __str__(self):
        how = "fell back to the phase order" if self.fallback else f"extracted at cost {self.cost:.4g}"
        return (
            f"egraph: {self.status} after {self.iterations} rounds, {self.enodes} e-nodes, {self.eclasses} classes, "
            f"{self.seconds * 1e3:.1f} ms; {how}"
        )


def _sizer(mask_fraction):
    def size_of(enode, eg, out_type):
        if enode.op == LEAF:
            return estimate_size(None, out_type, [], [])
        children = [eg[c] for c in enode.children]
        return estimate_size(enode.op, out_type, [c.type for c in children], [c.size for c in children], mask_fraction)

    return size_of


class _Tagged:
    """The spec sees an e-graph rule as a rewriter named `name`, tagged "egraph"."""

    def __init__(self, name):
        self.tags = frozenset({name, "egraph"})


class EGraphPhase:
    """Equality saturation over the rules of `phases` (see the module docstring)."""

    name = "egraph"

    def __init__(self, phases, options=None):
        self.phases = list(phases)
        unknown = set(options or {}) - set(DEFAULTS)
        if unknown:
            raise ValueError(f"rewrites['egraph']: unknown options {sorted(unknown)}; expected {sorted(DEFAULTS)}")
        self.options = {**DEFAULTS, **(options or {})}
        for key, value in self.options.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ValueError(f"rewrites['egraph']: {key} must be a non-negative number, got {value!r}")
        if not 0 < self.options["mask_fraction"] <= 1:
            raise ValueError(
                f"rewrites['egraph']: mask_fraction must be in (0, 1], got {self.options['mask_fraction']!r}"
            )
        rewriters = [rw for phase in self.phases for rw in phase.rewriters]
        # Control-flow rewrites read the graph's clients (which traces are read), a fact of one graph
        # and not of an e-graph: they run on the extracted graph, as a canonicalize phase of their own.
        self.rewriters = [rw for rw in rewriters if "control" not in rw.tags]
        self.after = LocalPhase("canonicalize", [rw for rw in rewriters if "control" in rw.tags])

    def _rules(self, spec):
        rules = []
        for rw in self.rewriters:
            if not spec.enabled(rw):
                continue
            rules.append(PatRewrite(rw) if isinstance(rw, Rule) else NodeRewrite(rw))
        for rule in EGRAPH_RULES:
            if spec.enabled(_Tagged(rule.name)):
                rules.append(ERule(rule.name, rule.fn, rule.tracks))  # a fresh memory of what it tried
        return rules

    def run(self, fgraph, ctx):
        report = EGraphReport()
        ctx.trace.egraph = report
        start = time.perf_counter()
        try:
            new_outputs = self._saturate_and_extract(fgraph, ctx, report, start)
        except _OverBudget as stop:
            report.status, report.fallback = str(stop), True
            new_outputs = None
        except ExtractionError as err:
            report.status, report.fallback = f"extraction failed: {err}", True
            new_outputs = None
        report.seconds = time.perf_counter() - start
        if new_outputs is None:
            _log.info("%s", report)
            self._phase_order(fgraph, ctx)
            return
        ctx.trace.counts.update(report.applied)
        for old, new in zip(list(fgraph.outputs), new_outputs):
            if new is not old and old in fgraph.clients:
                fgraph.replace(old, new, reason="egraph")
                ctx.changed = True
        self.after.run(fgraph, ctx)

    def _saturate_and_extract(self, fgraph, ctx, report, start):
        opts = self.options
        eg = EGraph(_sizer(opts["mask_fraction"]))
        for v in fgraph.inputs:
            eg.add_leaf(v)
        roots = eg.add_graph(fgraph.outputs)
        rules = self._rules(ctx.spec)

        def check():
            report.enodes, report.eclasses = eg.n_nodes, len(eg.classes)
            if eg.n_nodes > opts["node_limit"]:
                raise _OverBudget("node budget")
            if time.perf_counter() - start > opts["time_limit"]:
                raise _OverBudget("time budget")

        report.status = "saturated"
        while True:
            if report.iterations >= opts["iter_limit"]:
                raise _OverBudget("iteration budget")
            report.iterations += 1
            changed = False
            for rule in rules:
                changed |= rule.run(eg, report.applied)
                eg.rebuild()
                check()
            if not changed:
                break
        best = choose(eg, opts["mask_fraction"])
        outputs = build(eg, best, roots)
        report.cost = sum(best[eg.find(r)][0] for r in set(eg.find(r) for r in roots))
        for old, new in zip(fgraph.outputs, outputs):
            if not (old.type.is_super(new.type) or new.type.is_super(old.type)):
                raise ExtractionError(f"output {old!r} became {new!r} of type {new.type}")
        return outputs

    def _phase_order(self, fgraph, ctx):
        for phase in self.phases:
            ctx.phase = phase.name
            ctx.changed = False
            phase.run(fgraph, ctx)
            if ctx.changed and ctx.spec.enabled(MERGE):
                GlobalPhase("merge", [MERGE]).run(fgraph, ctx)
        ctx.phase = self.name


class _OverBudget(Exception):
    pass
