"""The e-graph: equivalence classes of graph terms, kept closed under congruence.

An e-node is an op applied to e-classes (`ENode(op, children, index)`; `index`
picks one output of a multi-output op), or a leaf holding a graph input or a
constant (`ENode(LEAF, (), 0, var)`). An e-class is a set of e-nodes known to
compute the same value. Adding a term that already exists returns its class
(hash-consing); `union` records that two classes are equal; `rebuild` restores
congruence (equal ops on equal children are one class) after unions.

Every class keeps facts used by the rules and the cost model:
- `type`: the variable type (dtype and static shape) all its members share;
  a union is refused when the types contradict, and keeps the more specific shape;
- `rep`: a real graph `Variable` computing the class's value (a constant when
  the class holds one), handed to the project's rewrite functions, which
  inspect variables and build new graphs on them;
- `size`: the estimated number of elements (`cost.estimate_size`).

Each e-node remembers the graph variable it came from (`origin`), so extraction
reuses existing nodes instead of rebuilding them.

NOTE: the graph is immutable: terms are only added, never changed, which is
what lets every rewrite keep both sides of an equality.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.graph import Constant, toposort
from dimgraph.core.type import TensorType

LEAF = "leaf"


class ENode:
    """`op` applied to the classes `children` (their ids), output `index`; a leaf carries its variable.

    Immutable; its hash is computed once (ops hash by their parameters, which is not free).
    """

    __slots__ = ("op", "children", "index", "leaf", "leaf_key", "_hash")

    def __init__(self, op, children, index=0, leaf=None, leaf_key=None):
        self.op, self.children, self.index, self.leaf, self.leaf_key = op, children, index, leaf, leaf_key
        self._hash = hash((op, children, index, leaf_key))

    def __hash__(self):
        return self._hash

    def __eq__(self, other):
        return (
            self._hash == other._hash
            and self.children == other.children
            and self.index == other.index
            and self.leaf_key == other.leaf_key
            and self.op == other.op
        )

    def __repr__(self):
        return f"ENode({self.op}, {self.children}, {self.index})"


@dataclass
class EClass:
    id: int
    nodes: list
    type: object
    rep: object
    size: float
    parents: list = field(default_factory=list)  # (enode, class id) pairs that use this class


class TypeClash(Exception):
    """Two classes claimed equal have types that cannot both hold (different dtype, ndim or size)."""


def merged_type(a, b):
    """The type of a class holding values of types `a` and `b`: the more specific shape; None if they clash."""
    if a == b:
        return a
    if not (isinstance(a, TensorType) and isinstance(b, TensorType)):
        return None
    if a.dtype != b.dtype or a.ndim != b.ndim:
        return None
    if any(x is not None and y is not None and x != y for x, y in zip(a.shape, b.shape)):
        return None
    return TensorType(a.dtype, tuple(x if x is not None else y for x, y in zip(a.shape, b.shape)))


def leaf_key(var):
    if isinstance(var, Constant):
        return ("const", var.key, var.type)
    return ("input", id(var))


class EGraph:
    """Classes of equal terms over a positional graph; see the module docstring."""

    def __init__(self, size_of):
        self.parent = []  # union-find over class ids
        self.classes = {}  # root id -> EClass
        self.memo = {}  # canonical ENode -> class id
        self.var_class = {}  # graph Variable -> class id (every variable ever added)
        self.origin = {}  # ENode -> a graph Variable computing it
        self.size_of = size_of  # (enode, egraph, out type) -> estimated elements
        self.pending = []  # classes whose parents must be re-canonicalized
        self.n_nodes = 0
        self.made_by = {}  # class id -> names of the stabilize rules whose results built it
        self.banned = set()  # e-nodes extraction must not choose (forms a stabilize rule replaced)
        self.applies = {}  # (e-node, input variable ids) -> an Apply of it on those inputs (node rewriters share it)

    # -- union-find --------------------------------------------------------
    def find(self, cid):
        parent = self.parent
        root = cid
        while parent[root] != root:
            root = parent[root]
        while parent[cid] != root:
            parent[cid], cid = root, parent[cid]
        return root

    def canonical(self, enode):
        if enode.op == LEAF:
            return enode
        children = tuple(self.find(c) for c in enode.children)
        return enode if children == enode.children else ENode(enode.op, children, enode.index)

    def __getitem__(self, cid):
        return self.classes[self.find(cid)]

    # -- adding terms ------------------------------------------------------
    def _new_class(self, enode, var):
        cid = len(self.parent)
        self.parent.append(cid)
        size = self.size_of(enode, self, var.type)
        self.classes[cid] = EClass(cid, [enode], var.type, var, size)
        self.memo[enode] = cid
        self.n_nodes += 1
        for c in set(enode.children):
            self.classes[self.find(c)].parents.append((enode, cid))
        return cid

    def add_leaf(self, var):
        cid = self.var_class.get(var)
        if cid is not None:
            return self.find(cid)
        enode = ENode(LEAF, (), 0, var, leaf_key(var))
        cid = self.memo.get(enode)
        if cid is None:
            cid = self._new_class(enode, var)
        self.var_class[var] = cid
        return self.find(cid)

    def add_graph(self, outputs):
        """Add every node between the known variables and `outputs`; returns the outputs' class ids."""
        known = [v for v in self.var_class]
        for node in toposort(outputs, blockers=known):
            children = tuple(self.add_var(i) for i in node.inputs)
            for k, out in enumerate(node.outputs):
                if out in self.var_class:
                    continue
                enode = ENode(node.op, children, k)
                cid = self.memo.get(enode)
                if cid is None:
                    cid = self._new_class(enode, out)
                    self.origin[enode] = out
                else:
                    self.origin.setdefault(enode, out)
                self.var_class[out] = cid
        return [self.add_var(o) for o in outputs]

    def add_var(self, var):
        cid = self.var_class.get(var)
        if cid is not None:
            return self.find(cid)
        if var.owner is None:
            return self.add_leaf(var)
        return self.add_graph([var])[0]

    # -- equalities --------------------------------------------------------
    def union(self, a, b):
        """Record that classes `a` and `b` are equal; returns the root, or raises `TypeClash`."""
        a, b = self.find(a), self.find(b)
        if a == b:
            return a
        ca, cb = self.classes[a], self.classes[b]
        typ = merged_type(ca.type, cb.type)
        if typ is None:
            raise TypeClash(f"{ca.type} vs {cb.type}")
        if len(ca.nodes) < len(cb.nodes):
            a, b, ca, cb = b, a, cb, ca
        self.parent[b] = a
        ca.nodes.extend(cb.nodes)
        ca.parents.extend(cb.parents)
        ca.type = typ
        ca.size = min(ca.size, cb.size)
        if b in self.made_by:
            self.made_by.setdefault(a, set()).update(self.made_by.pop(b))
        if _constness(cb.rep) > _constness(ca.rep):  # rules look for constants: show one when there is one
            ca.rep = cb.rep
        del self.classes[b]
        self.pending.append(a)
        return a

    def rebuild(self):
        """Restore congruence: equal ops on (now) equal children become one class."""
        if not self.pending:
            return
        touched = set()
        while self.pending:
            todo, self.pending = self.pending, []
            for cid in {self.find(c) for c in todo}:
                touched.add(cid)
                cls = self.classes.get(self.find(cid))
                if cls is None:
                    continue
                seen = {}
                for enode, parent in cls.parents:
                    canon = self.canonical(enode)
                    old = self.memo.pop(enode, None)
                    if old is not None and enode in self.origin and canon not in self.origin:
                        self.origin[canon] = self.origin[enode]
                    target = self.find(parent)
                    if canon in seen and seen[canon] != target:
                        target = self.union(seen[canon], target)
                    prev = self.memo.get(canon)
                    if prev is not None and self.find(prev) != target:
                        target = self.union(prev, target)
                    self.memo[canon] = target
                    seen[canon] = self.find(target)
                cls = self.classes.get(self.find(cid))
                if cls is not None:
                    cls.parents = [(self.canonical(e), self.find(p)) for e, p in cls.parents]
        # a class's e-nodes change only when one of their children was merged: the parents of touched classes
        stale = {self.find(p) for c in touched if self.find(c) in self.classes for _, p in self[c].parents}
        stale |= {self.find(c) for c in touched}
        for cid in stale:
            cls = self.classes[cid]
            uniq = {}
            for e in cls.nodes:
                uniq.setdefault(self.canonical(e), None)
            cls.nodes = list(uniq)

    # -- facts -------------------------------------------------------------
    def constant_data(self, cid, depth=4):
        """The data of a constant in class `cid`, seen through DimShuffles as `const_data` does, else None."""
        cls = self[cid]
        for e in cls.nodes:
            if e.op == LEAF and isinstance(e.leaf, Constant):
                return e.leaf.data
        if depth:
            for e in cls.nodes:
                if isinstance(e.op, DimShuffle):
                    data = self.constant_data(e.children[0], depth - 1)
                    if data is not None:
                        return data
        return None

    def __len__(self):
        return self.n_nodes


def _constness(var):
    """2 for a constant, 1 for a DimShuffle of one (what `const_data` sees through), else 0."""
    if isinstance(var, Constant):
        return 2
    return int(
        var.owner is not None and isinstance(var.owner.op, DimShuffle) and isinstance(var.owner.inputs[0], Constant)
    )
