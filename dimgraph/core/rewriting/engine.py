"""The rewrite engine: rewriters, the spec that selects them, the trace, and the work-list driver.

A `NodeRewriter` looks at one node and returns replacements for its outputs (or
None). It declares the Op types it tracks, so a phase offers each node only to
the rewriters indexed under its op's type. A phase runs to a fixed point with a
work list: it starts with every node in topological order and afterwards only
revisits nodes whose inputs changed, nodes that were imported by a replacement,
and producers that lost a client. A `GraphRewriter` is a whole-graph pass (merge,
fusion): one linear function over the FunctionGraph.

Within a phase, a node is offered to its rewriters in list order and the first
one that returns a replacement wins; the node's replacement is then queued and
offered to all of them again.
"""

from __future__ import annotations

import inspect
from collections import Counter, deque
from dataclasses import dataclass, field

from dimgraph.core.fgraph import Feature


class NodeRewriter:
    """A named local rewrite: `fn(fgraph, node)` returns None or the replacements of `node`'s outputs.

    The result may be a variable (single-output nodes), a list with one entry per
    output (None keeps that output), or a dict {old output: new variable}.
    """

    def __init__(self, name, fn, tracks, tags=()):
        self.name = name
        self.fn = fn
        self.tracks = tuple(tracks)
        self.tags = frozenset(tags) | {name}
        self.__doc__ = fn.__doc__

    def transform(self, fgraph, node):
        return self.fn(fgraph, node)

    def __repr__(self):
        return f"NodeRewriter({self.name})"


def node_rewriter(tracks, name=None, tags=()):
    """Decorator: a plain function over one node becomes a `NodeRewriter` tracking `tracks` Op types."""

    def wrap(fn):
        return NodeRewriter(name or fn.__name__, fn, tracks, tags)

    return wrap


class GraphRewriter:
    """A named whole-graph pass: `fn(fgraph, ctx, rewriter)` rewrites in place through `ctx.replace`."""

    def __init__(self, name, fn, tags=()):
        self.name = name
        self.fn = fn
        self.tags = frozenset(tags) | {name}
        self.__doc__ = fn.__doc__

    def __repr__(self):
        return f"GraphRewriter({self.name})"


@dataclass
class RewriteSpec:
    """Which rewrites run: `include` (None: all) and `exclude` name rewrites, tags or phases.

    `dg.function(..., rewrites=RewriteSpec(exclude=["fusion"]))`, the dict
    `{"exclude": ["fusion"], "trace": True}`, "default" and "none" all work.
    """

    include: tuple | None = None
    exclude: tuple = ()
    trace: bool | None = None  # None: dimgraph.config.rewrite_trace
    egraph: dict | None = None  # experimental: options of the e-graph mode (`core/rewriting/egraph`); None: off

    @classmethod
    def parse(cls, rewrites) -> "RewriteSpec":
        if isinstance(rewrites, RewriteSpec):
            return rewrites
        if rewrites is None or rewrites == "default":
            return cls()
        if rewrites == "none":
            return cls(include=())
        if isinstance(rewrites, dict):
            unknown = set(rewrites) - {"include", "exclude", "trace", "egraph"}
            if unknown:
                raise ValueError(f"rewrites: unknown keys {sorted(unknown)}; expected include, exclude, trace, egraph")
            egraph = rewrites.get("egraph")
            if egraph is not None and not isinstance(egraph, (bool, dict)):
                raise ValueError(f"rewrites['egraph']: expected True, False or a dict of options; got {egraph!r}")
            inc = rewrites.get("include")
            return cls(
                include=None if inc is None else tuple([inc] if isinstance(inc, str) else inc),
                exclude=tuple(
                    [rewrites["exclude"]] if isinstance(rewrites.get("exclude"), str) else rewrites.get("exclude", ())
                ),
                trace=rewrites.get("trace"),
                egraph={} if egraph is True else (dict(egraph) if isinstance(egraph, dict) else None),
            )
        raise ValueError(
            f"rewrites: expected 'default', 'none', a dict with include/exclude/trace, or a RewriteSpec; got {rewrites!r}"
        )

    def enabled(self, rewriter) -> bool:
        if self.include is not None and not (rewriter.tags & set(self.include)):
            return False
        return not (rewriter.tags & set(self.exclude))


@dataclass
class RewriteTrace:
    """What the rewrites did to one graph: `counts[name]` always, `events` when tracing.

    Each event is (phase, rewrite name, the node's op as text, the replacement's ops as text).
    """

    counts: Counter = field(default_factory=Counter)
    events: list = field(default_factory=list)
    tracing: bool = False
    egraph: object = None  # the e-graph mode's report (`egraph.EGraphReport`), when that mode ran

    def record(self, phase, rewriter, node, pairs):
        self.counts[rewriter.name] += 1
        if self.tracing:
            new = ", ".join(str(n.owner.op) if n.owner is not None else repr(n) for _, n in pairs)
            self.events.append((phase, rewriter.name, str(node.op) if node is not None else "-", new))

    def __str__(self):
        lines = [f"{name}: {n}" for name, n in sorted(self.counts.items())]
        lines += [f"[{p}] {r}: {old} -> {new}" for p, r, old, new in self.events]
        return "\n".join(lines) or "(no rewrite fired)"


class RewriteError(RuntimeError):
    """A rewrite produced a replacement of the wrong type, or a phase did not reach a fixed point."""


def compatible(old, new) -> bool:
    """`new` can stand in for `old`: same dtype and ndim, no contradicting static size."""
    a, b = old.type, new.type
    if type(a) is not type(b) or getattr(a, "dtype", None) != getattr(b, "dtype", None):
        return False
    if getattr(a, "ndim", None) != getattr(b, "ndim", None):
        return False
    return all(x is None or y is None or x == y for x, y in zip(a.shape, b.shape))


class Context:
    """State shared by the phases of one `rewrite_graph` call: the spec, the trace, the phase name."""

    def __init__(self, fgraph, spec, trace):
        self.fgraph = fgraph
        self.spec = spec
        self.trace = trace
        self.phase = None
        self.changed = False

    def replace(self, rewriter, node, pairs):
        """Apply `pairs` [(old, new)] from `rewriter` on `node`, recording it; types must agree."""
        pairs = [(o, n) for o, n in pairs if n is not None and n is not o]
        if not pairs:
            return False
        for old, new in pairs:
            if not compatible(old, new):
                raise RewriteError(
                    f"rewrite {rewriter.name} replaced {old!r} (type {old.type}) by {new!r} (type {new.type})"
                )
        self.trace.record(self.phase, rewriter, node, pairs)
        for old, new in pairs:
            if old in self.fgraph.clients:
                self.fgraph.replace(old, new, reason=rewriter.name)
        self.changed = True
        return True


def _pairs(node, result):
    if isinstance(result, dict):
        return list(result.items())
    if isinstance(result, (list, tuple)):
        if len(result) != len(node.outputs):
            raise RewriteError(
                f"a rewrite of {node.op} returned {len(result)} replacements for {len(node.outputs)} outputs"
            )
        return list(zip(node.outputs, result))
    return [(node.outputs[0], result)]


class _WorkList(Feature):
    """Queues the nodes a change may have made rewritable."""

    def __init__(self):
        self.queue = deque()
        self.queued = set()

    def push(self, node):
        if node != "output" and node not in self.queued:
            self.queued.add(node)
            self.queue.append(node)

    def on_import(self, fgraph, node):
        self.push(node)

    def on_change_input(self, fgraph, node, i, old, new, reason):
        self.push(node)

    def on_prune(self, fgraph, node):
        for inp in node.inputs:
            if inp.owner is not None and inp.owner in fgraph.nodes:
                self.push(inp.owner)


class LocalPhase:
    """A phase of node rewriters run to a fixed point with a work list (no whole-graph re-walks)."""

    def __init__(self, name, rewriters):
        self.name = name
        self.rewriters = list(rewriters)

    def run(self, fgraph, ctx):
        active = [r for r in self.rewriters if ctx.spec.enabled(r)]
        if not active:
            return
        index = {}

        def rewriters_for(op_type):
            found = index.get(op_type)
            if found is None:
                found = index[op_type] = [r for r in active if any(issubclass(op_type, t) for t in r.tracks)]
            return found

        work = _WorkList()
        for node in fgraph.toposort():
            work.push(node)
        fgraph.attach_feature(work)
        budget = 50 * (len(fgraph.nodes) + 100)
        try:
            while work.queue:
                node = work.queue.popleft()
                work.queued.discard(node)
                if node not in fgraph.nodes:
                    continue
                for rw in rewriters_for(type(node.op)):
                    result = rw.transform(fgraph, node)
                    if result is None:
                        continue
                    if ctx.replace(rw, node, _pairs(node, result)):
                        budget -= 1
                        if budget < 0:
                            raise RewriteError(
                                f"phase {self.name} did not reach a fixed point (last rewrite: {rw.name} on {node.op})"
                            )
                        break
        finally:
            fgraph.remove_feature(work)


class GlobalPhase:
    """A phase made of whole-graph passes, run once each, in order."""

    def __init__(self, name, rewriters):
        self.name = name
        self.rewriters = list(rewriters)

    def run(self, fgraph, ctx):
        for rw in self.rewriters:
            if ctx.spec.enabled(rw):
                rw.fn(fgraph, ctx, rw)


def accepts_kwargs(fn):
    """The parameter names of `fn` (for pattern replacement functions)."""
    return tuple(inspect.signature(fn).parameters)
