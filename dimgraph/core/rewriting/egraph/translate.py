"""The project's rewrites, run on an e-graph without being rewritten by hand.

Two mechanical translations:

- `PatRewrite`: a `Rule` (a `Pat` pattern and a replacement function). The pattern
  is e-matched: every e-node of a class is tried, so `log(1 + x)` matches when any
  term equal to the log's input is an `add` of 1, not only the one written. The
  replacement function gets each bound class's representative variable (its
  `rep`), builds its graph as in the phase order, and the result joins the class.
  A stabilize rule is not a mere equality: the e-node it matched (the form that
  overflows or cancels) is banned from extraction, as the phase order never keeps
  it, even where it would be cheaper (logsumexp without its max shift); and it
  does not match terms it built itself (the phase order's guards look at one
  term, `x.owner`; in an e-graph a shifted value may have an unshifted
  representative, and logsumexp would shift it again without end).
- `NodeRewrite`: a plain node rewriter (`constant_fold`, `dimshuffle_chain`, ...).
  It is offered each e-node rebuilt on members of its children's classes (the
  representative and the term behind each other e-node, at most
  `MAX_COMBINATIONS` combinations), so it sees one level of alternatives; a match
  that needs an alternative two levels down is missed.

Both keep the phase order's guards: a replacement of another dtype or contradicting
static shape is declined, and so is one that would lose static sizes.
"""

from __future__ import annotations

import itertools

import numpy as np

from dimgraph.core.elemwise import Elemwise
from dimgraph.core.graph import Apply
from dimgraph.core.rewriting.egraph.egraph import LEAF, TypeClash, merged_type
from dimgraph.core.rewriting.engine import _pairs
from dimgraph.core.rewriting.pattern import Rule
from dimgraph.core.scalar import SCALAR_SPECS, ScalarOp
from dimgraph.core.type import TensorType


def ematch(eg, pat, cid, bound):
    """Every extension of `bound` ({name: class id or op}) under which class `cid` matches `pat`."""
    cid = eg.find(cid)
    if pat.kind == "var":
        prev = bound.get(pat.name)
        if prev is not None:
            if eg.find(prev) == cid:
                yield bound
            return
        if pat.where is not None and not pat.where(eg[cid].rep):
            return
        yield {**bound, pat.name: cid}
        return
    if pat.kind == "const":
        data = eg.constant_data(cid)
        if data is None or data.size == 0 or data.dtype.kind not in "biuf":
            return
        if bool(np.all(data == pat.value)):
            yield bound
        return
    for enode in list(eg[cid].nodes):
        yield from ematch_enode(eg, pat, enode, bound)


def ematch_enode(eg, pat, enode, bound):
    """The extensions of `bound` under which the e-node `enode` matches `pat` (an `elem` or `node` pattern)."""
    op = enode.op
    if op == LEAF:
        return
    if pat.kind == "elem":
        if not (isinstance(op, Elemwise) and type(op.scalar_op) is ScalarOp and op.scalar_op.name == pat.name):
            return
        orders = [enode.children]
        if pat.name in SCALAR_SPECS and SCALAR_SPECS[pat.name].commutative and len(enode.children) == 2:
            orders.append(enode.children[::-1])
        b0 = bound
    else:
        if not isinstance(op, pat.value) or (pat.where is not None and not pat.where(op)):
            return
        orders = [enode.children[: len(pat.args)]]
        b0 = bound if pat.name is None else {**bound, pat.name: op}
    for children in orders:
        yield from _match_args(eg, pat.args, children, b0)


def _match_args(eg, pats, children, bound):
    if not pats:
        yield bound
        return
    for b in ematch(eg, pats[0], children[0], bound):
        yield from _match_args(eg, pats[1:], children[1:], b)


def join(eg, cid, new, trace_name, stats, mark=False):
    """Add `new` (a graph variable) and record it equal to class `cid`; True when that changed the e-graph.

    `mark`: record `trace_name` as the maker of the classes `new` adds (see `PatRewrite`).
    """
    if new is None:
        return False
    cls = eg[cid]
    if new is cls.rep or not keeps_type(cls.type, new.type):
        return False
    before = (len(eg.classes), eg.n_nodes)
    first_new = len(eg.parent)
    ncid = eg.add_var(new)
    if mark:
        for k in range(first_new, len(eg.parent)):
            eg.made_by.setdefault(eg.find(k), set()).add(trace_name)
    if eg.find(ncid) == eg.find(cid):
        return (len(eg.classes), eg.n_nodes) != before
    try:
        eg.union(cid, ncid)
    except TypeClash:
        return False
    stats[trace_name] += 1
    return True


def tracked(eg, tracks):
    """`(class id, e-node)` of every e-node whose op is one of `tracks`, listed before a rule adds any."""
    return [
        (c, e) for c, cls in list(eg.classes.items()) for e in cls.nodes if e.op != LEAF and isinstance(e.op, tracks)
    ]


def keeps_type(old, new):
    """`new` may join a class of type `old`: same dtype and ndim, every static size kept (more may be known)."""
    if merged_type(old, new) is None:
        return False
    return not isinstance(old, TensorType) or all(a is None or a == b for a, b in zip(old.shape, new.shape))


class PatRewrite:
    """A `Rule` run by e-matching (see the module docstring)."""

    def __init__(self, rule: Rule):
        self.rule = rule
        self.name = rule.name
        self.stabilizes = "stabilize" in rule.tags
        self.done = set()

    def run(self, eg, stats):
        changed = False
        rule = self.rule
        matches = []
        for cid, cls in list(eg.classes.items()):
            for enode in list(cls.nodes):
                for bound in ematch_enode(eg, rule.pattern, enode, {}):
                    matches.append((cid, enode, bound))
        for cid, enode, bound in matches:
            cid = eg.find(cid)
            key = (cid, tuple(sorted((k, eg.find(v) if isinstance(v, int) else v) for k, v in bound.items())))
            if key in self.done:
                continue
            self.done.add(key)
            if self.stabilizes and any(
                isinstance(v, int) and self.name in eg.made_by.get(eg.find(v), ()) for v in bound.values()
            ):
                continue  # a form this rule built is stable already (the phase order's `_is_shifted` guards)
            kwargs = {k: (eg[v].rep if isinstance(v, int) else v) for k, v in bound.items() if k in rule.params}
            if "out" in rule.params:
                kwargs["out"] = eg[cid].rep
            try:
                new = rule.fn(**kwargs)
            except (TypeError, ValueError):
                continue  # the function could not build its graph on these terms
            changed |= join(eg, cid, new, self.name, stats, mark=self.stabilizes)
            if self.stabilizes and new is not None and eg.var_class.get(new) is not None:
                if eg.find(eg.var_class[new]) == eg.find(cid):
                    eg.banned.add(enode)  # the unstable form must not come back, however cheap
        return changed


class NodeRewrite:
    """A plain node rewriter offered each e-node rebuilt on its children's representatives."""

    def __init__(self, rewriter):
        self.rewriter = rewriter
        self.name = rewriter.name
        self.tracks = rewriter.tracks
        self.done = set()

    def run(self, eg, stats):
        changed = False
        for cid, enode in tracked(eg, self.tracks):
            for inputs in itertools.islice(
                itertools.product(*(members(eg, c) for c in enode.children)), MAX_COMBINATIONS
            ):
                key = (enode, tuple(id(r) for r in inputs))
                if key in self.done:
                    continue
                self.done.add(key)
                changed |= self._offer(eg, enode, inputs, stats)
        return changed

    def _offer(self, eg, enode, inputs, stats):
        node = as_apply(eg, enode, list(inputs))
        if node is None:
            return False
        try:
            result = self.rewriter.transform(None, node)
        except (TypeError, ValueError, AttributeError):
            return False
        if result is None:
            return False
        changed = False
        for old, new in _pairs(node, result):
            if new is None or old.index is None:
                continue
            target = eg.memo.get(eg.canonical(type(enode)(enode.op, enode.children, old.index)))
            if target is not None:
                changed |= join(eg, target, new, self.name, stats)
        return changed


# A node rewriter is offered at most this many combinations of its inputs' class members.
MAX_COMBINATIONS = 16


def members(eg, cid):
    """Variables computing class `cid`: its representative first, then the term behind each other e-node."""
    cls = eg[cid]
    out = {id(cls.rep): cls.rep}
    for e in cls.nodes:
        var = e.leaf if e.op == LEAF else eg.origin.get(e)
        if var is not None and getattr(var, "type", None) == cls.type:
            out.setdefault(id(var), var)
    return list(out.values())


def as_apply(eg, enode, reps):
    """An Apply of `enode`'s op on `reps`: the node it came from when that node has exactly these inputs."""
    origin = eg.origin.get(enode)
    if origin is not None and origin.owner is not None and all(a is b for a, b in zip(origin.owner.inputs, reps)):
        return origin.owner
    key = (enode, tuple(id(r) for r in reps))
    if key not in eg.applies:
        try:
            node = enode.op.make_node(*reps)
        except Exception:  # noqa: BLE001 - an op that cannot be rebuilt on these terms is skipped
            node = None
        eg.applies[key] = (node if isinstance(node, Apply) else None, reps)  # reps kept alive: ids stay unique
    return eg.applies[key][0]
