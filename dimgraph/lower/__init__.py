"""Lowering: labeled graphs -> positional graphs, in one topological pass before any rewrite.

Every labeled op is replaced by its rule in `dimgraph.lower.rules`; positional
nodes are rebuilt on the lowered inputs. A labeled graph input becomes one
positional twin (`dimgraph.labeled.twins`: every lowering of it agrees) whose
static shape is its Dims' static sizes. A Dim of unknown size gets the
symbolic size of the first input that carries it; the compiled function checks
before any work that every input on that dim agrees (`lower_io`). After the
pass no labeled op is left.
"""

from __future__ import annotations

from dimgraph.core.graph import Constant, Variable, ancestors, rebuild_node, toposort
from dimgraph.core.shape import ShapeI
from dimgraph.core.type import TensorType
from dimgraph.errors import DimError
from dimgraph.labeled.dims import fmt_dims
from dimgraph.labeled.ops import LabeledOp, is_labeled
from dimgraph.labeled.twins import positional_twin
from dimgraph.lower import blockwise as _blockwise  # noqa: F401  (registers the LabeledBlockwise rule)
from dimgraph.lower import combine as _combine  # noqa: F401  (registers stack/unstack/concat/dot rules)
from dimgraph.lower import indexing as _indexing  # noqa: F401  (registers the indexing rules)
from dimgraph.lower import random as _random  # noqa: F401  (registers the random-draw rule)
from dimgraph.lower.rules import lowering


class Lowering:
    """One lowering pass: a memo from labeled variables to positional ones, and the sizes of dims.

    The one way labeled values become positional, for `dg.function` (`lower_io`) and for
    everything that lowers on the spot (`dg.grad`, `dg.scan`, `dg.ifelse`, `dg.op_from_graph`):
    `given` (or `assume`) are placeholders the caller has already lowered (a loop's states,
    a macro's inputs), `run` lowers graphs, `positional` one value.
    """

    def __init__(self, given=()):
        self.memo = {}  # id(variable) -> positional variable
        self.sizes = {}  # Dim -> int or symbolic int64 scalar
        self.fixed = {}  # Dim of unknown size -> the size a labeled constant gives it
        for var, positional in given:
            self.assume(var, positional)

    def assume(self, var, positional):
        """Take `var` (a labeled placeholder) as lowered to `positional`; its unsized dims take their sizes from it."""
        self.memo[id(var)] = positional
        if is_labeled(var):
            self.bind(var, positional)

    def positional(self, var):
        """The positional version of one labeled or positional value (lowering its graph if not done yet)."""
        found = self.memo.get(id(var))
        return found if found is not None else self.run([var])[0]

    def get(self, var):
        """The positional version of `var`; labeled leaves get their twin."""
        found = self.memo.get(id(var))
        if found is not None:
            return found
        if var.owner is None and is_labeled(var):
            twin = positional_twin(var)
            self.memo[id(var)] = twin
            self.bind(var, twin)
            if isinstance(var, Constant):
                for d, n in zip(var.type.dims, twin.type.shape):
                    if d.size is None:
                        self.fixed.setdefault(d, n)
            return twin
        return var

    def bind(self, var, positional):
        for k, d in enumerate(var.type.dims):
            if d.size is None and d not in self.sizes:
                s = positional.type.shape[k]
                self.sizes[d] = s if s is not None else ShapeI(k)(positional)

    def size(self, dim, what):
        """The size of `dim`: its static size, or the symbolic size bound from an input carrying it."""
        if dim.size is not None:
            return dim.size
        found = self.sizes.get(dim)
        if found is None:
            raise DimError(
                f"{what}: dim {dim.name!r} has no size: give the Dim a size, or use it in an input "
                "that brings it (its size then comes with the data)"
            )
        return found

    def run(self, outputs):
        """Positional versions of `outputs` (labeled or positional)."""
        for v in ancestors(outputs):
            if v.owner is None and is_labeled(v):
                self.get(v)
        for node in toposort(outputs):
            if all(id(o) in self.memo for o in node.outputs):
                continue
            inputs = [self.get(i) for i in node.inputs]
            if isinstance(node.op, LabeledOp):
                result = lowering(node.op, node, inputs, self)
                results = list(result) if isinstance(result, (list, tuple)) else [result]
            else:
                results = rebuild_node(node, inputs).outputs
            for out, low in zip(node.outputs, results):
                _check_lowered(node, out, low)
                self.memo[id(out)] = low
                if is_labeled(out):
                    self.bind(out, low)
        return [self.get(o) for o in outputs]


def _check_lowered(node, out, low):
    # NOTE: an invariant of the rules, not a user error: dtype and static sizes survive lowering.
    assert isinstance(low.type, TensorType), f"lowering {node.op} left a labeled variable"
    assert low.type.dtype == out.type.dtype, f"lowering {node.op}: dtype {low.type.dtype} != {out.type.dtype}"
    assert low.type.ndim == out.type.ndim, f"lowering {node.op}: {low.type} does not fit {out.type}"
    for s, t in zip(low.type.shape, out.type.shape):
        assert t is None or s == t, f"lowering {node.op}: static shape {low.type} does not fit {out.type}"


def lower(outputs, inputs=()):
    """The positional graph of labeled `outputs` (a variable or a list), to inspect what compiles.

    Labeled inputs become positional inputs (same names) whose static shapes
    are their dims' sizes; dims become axes in each variable's dims order.
    `inputs`: labeled inputs that size the dims they carry even where the
    outputs do not read them (a draw over the dims of data it does not read).

    >>> import dimgraph as dg
    >>> country, age = dg.Dim("country", size=3), dg.Dim("age", size=5)
    >>> a, b = dg.labeled("a", dims=(country,)), dg.labeled("b", dims=(age,))
    >>> y = dg.lower(a + b)
    >>> y.type.shape, type(y.owner.op).__name__
    ((3, 5), 'Elemwise')
    """
    single = not isinstance(outputs, (list, tuple))
    low = Lowering()
    for v in inputs:
        low.get(v)
    outs = low.run([outputs] if single else list(outputs))
    return outs[0] if single else outs


def lower_io(inputs, outputs, updates=()):
    """Positional inputs/outputs for `dg.function`, with input converters, output wrappers and checks
    (of what the outputs and the `updates`' new values read)."""
    from dimgraph.core.io import TensorInput, TensorOutput
    from dimgraph.labeled.io import LabeledInput
    from dimgraph.lower.io import LabeledOutput, indexer_checks, label_checks, read_by, shared_size_checks, size_checks

    low = Lowering()
    pos_inputs = [low.get(v) for v in inputs]
    pos_outputs = low.run(outputs)
    labels = [v.name or f"input {k}" for k, v in enumerate(inputs)]
    in_specs = [
        LabeledInput(label, v.type) if is_labeled(v) else TensorInput(label, v.type) for label, v in zip(labels, inputs)
    ]
    out_specs = [LabeledOutput(o, inputs) if is_labeled(o) else TensorOutput() for o in outputs]
    read = list(outputs) + [v for v in updates if isinstance(v, Variable)]
    for v in read_by(read):  # labeled constants that updates or gradients (lowered apart) read fix sizes too
        if isinstance(v, Constant) and is_labeled(v):
            low.get(v)
    checks = size_checks(inputs, labels, low) + label_checks(inputs, read, labels) + shared_size_checks(inputs, read, labels)
    checks += indexer_checks(inputs, read, labels)
    return pos_inputs, pos_outputs, in_specs, out_specs, checks


def lower_update(target, value):
    """The positional new value of shared `target` from labeled `value` (broadcast and ordered to its dims)."""
    from dimgraph.labeled.shape import broadcast_to_dims

    if is_labeled(target):
        value = broadcast_to_dims(value, target.type.dims)
    elif is_labeled(value) and value.type.ndim != target.type.ndim:
        raise DimError(f"updates: {target.name!r} is positional with {target.type.ndim} axes; the new value has dims {fmt_dims(value.type.dims)}")
    return Lowering().run([value])[0]
