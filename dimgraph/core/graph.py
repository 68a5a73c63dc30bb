"""The graph IR: `Variable`, `Constant`, `Apply`, `Op`, and iterative graph walks.

Invariants:
- `Op`s are frozen, hashable values compared by their parameters.
- An `Apply` is immutable once built and carries a structural key computed from
  its op's digest and its inputs' keys (`dimgraph.core.digest`), so equal
  subgraphs are found in linear time.
- A variable's `key` is nominal for graph inputs (its identity) and structural
  for constants (dtype, shape, data digest) and for outputs (owner key, index).
- `graph_digest` names a whole graph with its inputs by position: the same in
  every process, for inner graphs' equality and the warm start's records.
- Every walk is iterative: no recursion limit at any graph depth.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, fields

import numpy as np

from dimgraph.core.digest import Encoder, Unstable, data_digest, op_digest, sha
from dimgraph.errors import NonDifferentiable

_counter = itertools.count()
_evaluator = None  # evaluate(variable, {input: value}, backend) -> value, set by the compile layer


def register_evaluator(evaluate):
    """Set how `Variable.eval` compiles and runs a variable (`dimgraph.compile.function` registers `dg.function`)."""
    global _evaluator
    _evaluator = evaluate


class Variable:
    """A value in a graph: a graph input (no owner), a constant, or an Apply's output."""

    __slots__ = ("type", "owner", "index", "name", "_key", "_uid", "__weakref__", "tag")

    def __init__(self, type, owner=None, index=None, name=None):
        self.type = type
        self.owner = owner
        self.index = index
        self.name = name
        self._key = None
        self._uid = next(_counter)
        self.tag = {}

    # Identity semantics for dicts and sets even where operators are overloaded.
    __hash__ = object.__hash__

    @property
    def key(self):
        """A digest of what the variable computes (its op and inputs), equal for equal subgraphs (merging).

        A graph input is keyed by its identity in this process; `graph_digest` names inputs by position.
        """
        if self._key is None:
            if self.owner is not None:
                self._key = sha(("out", self.owner.key, self.index))
            else:
                self._key = sha(("input", self._uid))
        return self._key

    def __bool__(self):
        raise TypeError(
            f"the truth value of symbolic variable {self!r} is unknown while the graph is built; "
            "use dg.where / dg.ifelse, or compare graphs with `is`"
        )

    def clone(self, name=None):
        """A fresh graph input of the same type (no owner)."""
        return type(self)(self.type, name=self.name if name is None else name)

    def __repr__(self):
        return f"{self.name or ('<' + type(self).__name__ + '>')}: {self.type}"

    def eval(self, inputs=None, backend=None):
        """Compile this variable alone and evaluate it for `inputs` ({variable: value}).

        The compile layer registers how (`register_evaluator`): core never imports it.
        """
        if _evaluator is None:
            raise RuntimeError(f"{self!r}.eval(): no compiler is registered; `import dimgraph` registers dg.function's")
        return _evaluator(self, dict(inputs or {}), backend)


class Constant(Variable):
    """A variable with data known when the graph is built; keyed by its value."""

    __slots__ = ("data",)

    def __init__(self, type, data, name=None):
        super().__init__(type, name=name)
        self.data = data

    @property
    def key(self):
        if self._key is None:
            arr = np.asarray(self.data)
            self._key = sha(("const", arr.dtype.str, arr.shape, data_digest(arr)))  # hashed in place, never copied
        return self._key

    def same_bytes(self, other) -> bool:
        """Whether the two constants hold the same dtype, shape and bits (-0.0 and 0.0 differ), without copying."""
        a, b = np.asarray(self.data), np.asarray(other.data)
        return a.dtype == b.dtype and a.shape == b.shape and memoryview(data_bytes(a)) == memoryview(data_bytes(b))

    def equals(self, other) -> bool:
        """Whether `other` is a constant of the same type and values (NaNs equal): `==` builds a graph."""
        return (
            isinstance(other, Constant)
            and self.type == other.type
            and np.array_equal(self.data, other.data, equal_nan=self.data.dtype.kind in "fc")
        )

    def clone(self, name=None):
        return type(self)(self.type, self.data, name=self.name if name is None else name)

    def __repr__(self):
        if np.ndim(self.data) == 0 or np.size(self.data) <= 6:
            return f"{np.array2string(np.asarray(self.data), separator=',')}: {self.type}"
        return f"<constant>: {self.type}"


def data_bytes(arr):
    """The bytes of `arr` as a flat uint8 view (a copy only when `arr` is not C-contiguous)."""
    return np.ascontiguousarray(arr).reshape(-1).view(np.uint8)


class Apply:
    """One application of an Op to input variables, producing output variables."""

    __slots__ = ("op", "inputs", "outputs", "_key", "tag")

    def __init__(self, op, inputs, output_types):
        self.op = op
        self.inputs = list(inputs)
        self._key = None
        self.outputs = [t.make_variable() for t in output_types]
        for i, out in enumerate(self.outputs):
            out.owner, out.index = self, i
        self.tag = {}

    @property
    def key(self):
        """Structural digest of the op and the inputs' keys, computed when first asked (a large
        constant's digest costs time in proportion to its bytes: building `x + c` must not pay it)."""
        if self._key is None:
            self._key = sha(("apply", op_digest(self.op), tuple(i.key for i in self.inputs)))
        return self._key

    @property
    def out(self):
        assert len(self.outputs) == 1, f"{self.op} has {len(self.outputs)} outputs"
        return self.outputs[0]

    def clone_with_new_inputs(self, inputs):
        """The same op on other inputs, through make_node so types are re-inferred."""
        return self.op.make_node(*inputs)

    def __repr__(self):
        return f"Apply({self.op}, {self.inputs})"


@dataclass(frozen=True)
class Op:
    """An operation: a frozen value whose fields are its static parameters.

    Subclasses implement `make_node(*inputs) -> Apply`, `infer_shape(inputs, input_shapes)`
    (one tuple per output, entries int or a symbolic int64 scalar), `perform(node, inputs)`
    (NumPy reference, returns a list of outputs) and, where differentiable, `L_op`.
    """

    def __call__(self, *inputs):
        node = self.make_node(*inputs)
        return node.outputs[0] if len(node.outputs) == 1 else node.outputs

    def make_node(self, *inputs) -> Apply:
        raise NotImplementedError(f"{type(self).__name__}.make_node")

    def perform(self, node, inputs):
        raise NotImplementedError(f"{type(self).__name__}.perform")

    def infer_shape(self, inputs, input_shapes):
        """Per output, a tuple with one entry per axis: an int where known, else a symbolic int64 scalar.

        `inputs` are the node's input variables and `input_shapes` their shapes in the same form
        (`dimgraph.core.shape`); the static `type.shape` of each output is the int part of the answer.
        """
        raise NotImplementedError(f"{type(self).__name__}.infer_shape")

    def L_op(self, inputs, outputs, output_grads):
        """Vector-Jacobian product: one gradient per input (None: no gradient flows there)."""
        raise NonDifferentiable(f"{self} has no gradient (asked for its inputs {[str(i) for i in inputs]})")

    def __str__(self):
        params = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)]
        return f"{type(self).__name__}{{{', '.join(params)}}}" if params else type(self).__name__


def ancestors(outputs, blockers=()):
    """Every variable that `outputs` depend on (outputs included), stopping at `blockers`."""
    blocked = {id(b) for b in blockers}
    seen, order, stack = set(), [], list(outputs)
    while stack:
        v = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        order.append(v)
        if v.owner is not None and id(v) not in blocked:
            stack.extend(v.owner.inputs)
    return order


def graph_inputs(outputs, blockers=()):
    """The ownerless (or blocked) variables that `outputs` depend on, in discovery order."""
    blocked = {id(b) for b in blockers}
    return [v for v in ancestors(outputs, blockers) if v.owner is None or id(v) in blocked]


def toposort(outputs, blockers=()):
    """Apply nodes between `blockers` and `outputs`, each after the nodes it depends on."""
    blocked = {id(b) for b in blockers}
    order, done, on_stack = [], set(), set()
    stack = [(v, False) for v in reversed(list(outputs))]
    while stack:
        v, expanded = stack.pop()
        node = v.owner
        if node is None or id(v) in blocked or id(node) in done:
            continue
        if expanded:
            done.add(id(node))
            order.append(node)
            continue
        if id(node) in on_stack:
            continue
        on_stack.add(id(node))
        stack.append((v, True))
        for inp in reversed(node.inputs):
            if inp.owner is not None and id(inp.owner) not in done and id(inp) not in blocked:
                stack.append((inp, False))
    return order


def graph_digest(inputs, outputs, encode=None, extra=(), names=False) -> bytes:
    """The digest of the graph `inputs -> outputs`, inputs by position (identities aside).

    Nodes are encoded in topological order as their op plus references "input k",
    "output j of node n" or "constant with this type and content": one walk, linear
    in the graph. `names`: each variable's class and name count too (what a compiled
    function shows). `extra` are more (encoded) items to bind into the digest. A
    leaf that is neither an input nor a constant raises `Unstable`.
    """
    encode = encode or Encoder()

    def variable(v):
        if not names:
            return encode(v.type)
        encode(type(v))  # a strict encoder refuses a variable class defined elsewhere
        return (type(v).__qualname__, v.name, encode(v.type))

    refs = {id(v): ("i", k) for k, v in enumerate(inputs)}

    def ref(v):
        found = refs.get(id(v))
        if found is None:
            if not isinstance(v, Constant):
                raise Unstable(f"{v.name or v!r} is neither an input, a constant nor computed (a shared variable?)")
            found = refs[id(v)] = ("c", variable(v), encode(np.asarray(v.data)))
        return found

    items = [tuple(extra), tuple(variable(v) for v in inputs)]
    for n, node in enumerate(toposort(outputs, blockers=inputs)):
        items.append((encode(node.op), tuple(ref(i) for i in node.inputs)))
        for o in node.outputs:
            refs[id(o)] = ("n", n, o.index)
            if names:
                items.append(variable(o))
    items.append(tuple(ref(o) for o in outputs))
    return sha(items)


def clone_graph(outputs, inputs, replace=None):
    """Copies of `outputs` with `inputs` (and `replace` keys) mapped to new variables.

    Every node between them is copied, those reading only constants too (constants
    themselves are shared: nothing changes them): a `FunctionGraph` rewrites its
    nodes in place, so a node shared with the graph it was cloned from (the user's,
    an op's inner graph) would carry its rewrites back there.
    Returns (new_inputs, new_outputs, memo) where memo maps id(old) -> new.
    """
    memo = {}
    new_inputs = []
    for v in inputs:
        nv = v if isinstance(v, Constant) else v.clone()
        memo[id(v)] = nv
        new_inputs.append(nv)
    for old, new in (replace or {}).items():
        memo[id(old)] = new
    for node in toposort(outputs, blockers=[v for v in inputs]):
        if all(id(o) in memo for o in node.outputs):
            continue
        new_node = rebuild_node(node, [memo.get(id(i), i) for i in node.inputs], fresh=True)
        for o, no in zip(node.outputs, new_node.outputs):
            no.name = o.name
            memo[id(o)] = no
    return new_inputs, [memo.get(id(o), o) for o in outputs], memo


def rebuild_node(node, new_inputs, fresh=False):
    """`node` on new inputs, keeping the identical node when nothing changed (a copy if `fresh`)."""
    if not fresh and all(a is b for a, b in zip(node.inputs, new_inputs)):
        return node
    if any(a.type != b.type for a, b in zip(node.inputs, new_inputs)):
        return node.op.make_node(*new_inputs)
    new = Apply.__new__(Apply)
    new.op = node.op
    new.inputs = list(new_inputs)
    new._key = None
    new.outputs = [type(o)(o.type, owner=new, index=o.index, name=o.name) for o in node.outputs]
    new.tag = dict(node.tag)
    return new
