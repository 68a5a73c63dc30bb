"""Lowering: labeled graphs -> positional graphs, in one topological pass before any rewrite.

`lower(outputs, inputs=(), given=())` is the one entry point: `dg.function`
(`lower_io`, `lower_update`), `dg.lower`, labeled `dg.grad` and `dg.jacobian`
(`lower.gradient`), `dg.scan`, `dg.while_loop`, `dg.ifelse` and labeled
`dg.op_from_graph` (`lower.control`) all call it; the pass it runs (`_Lowering`)
is built nowhere else.

Every labeled op is replaced by its rule in `dimgraph.lower.rules`; positional
nodes are rebuilt on the lowered inputs. A labeled graph input becomes one
positional twin (`dimgraph.labeled.twins`: every lowering of it agrees) whose
static shape is its Dims' static sizes. A Dim of unknown size gets the
symbolic size of the first input that carries it; the compiled function checks
before any work that every input on that dim agrees (`lower_io`). After the
pass no labeled op is left.
"""

from __future__ import annotations

from collections.abc import Mapping

from dimgraph.core.graph import Variable, ancestors, rebuild_node, toposort
from dimgraph.core.io import TensorInput, TensorOutput
from dimgraph.core.shape import ShapeI
from dimgraph.core.type import TensorType
from dimgraph.errors import DimError
from dimgraph.labeled.dims import fmt_dims
from dimgraph.labeled.io import LabeledInput
from dimgraph.labeled.ops import LabeledOp, is_labeled
from dimgraph.labeled.shape import broadcast_to_dims
from dimgraph.labeled.twins import positional_twin
from dimgraph.lower import blockwise as _blockwise  # noqa: F401  (registers the LabeledBlockwise rule)
from dimgraph.lower import combine as _combine  # noqa: F401  (registers stack/unstack/concat/dot rules)
from dimgraph.lower import indexing as _indexing  # noqa: F401  (registers the indexing rules)
from dimgraph.lower import random as _random  # noqa: F401  (registers the random-draw rule)
from dimgraph.lower.io import LabeledOutput, indexer_checks, label_checks, shared_size_checks, size_checks
from dimgraph.lower.rules import lowering


def lower(outputs, inputs=(), given=()):
    """The positional graph of labeled `outputs` (a variable or a list): what compiles, or what an op is built on.

    Labeled inputs become positional inputs (same names) whose static shapes
    are their dims' sizes; dims become axes in each variable's dims order.
    `inputs`: values lowered first, so the dims they carry take their sizes
    from them even where the outputs do not read them (a draw over the dims of
    data it does not read). `given`: placeholders already lowered by the caller,
    `{labeled variable: positional variable}` (or pairs), as Theano's `givens`:
    a loop's states, a macro's inputs; their dims of unknown size take their
    sizes from the positional values.

    >>> import dimgraph as dg, numpy as np
    >>> country, age = dg.Dim("country", size=3), dg.Dim("age", size=5)
    >>> a, b = dg.labeled("a", dims=(country,)), dg.labeled("b", dims=(age,))
    >>> y = dg.lower(a + b)
    >>> y.type.shape, type(y.owner.op).__name__
    ((3, 5), 'Elemwise')
    >>> t = dg.Dim("t")
    >>> state = dg.labeled("state", dims=(t,))
    >>> s = dg.vector("s")
    >>> body = dg.lower((state * 2.0).sum() + dg.arange(t).sum(), given={state: s})
    >>> float(body.eval({s: np.array([1.0, 2.0, 3.0])}))
    15.0
    """
    pairs = _given_pairs(given)
    single = not isinstance(outputs, (list, tuple))
    low = _Lowering()
    for var, positional in pairs:
        low.assume(var, positional)
    low.run([inputs] if isinstance(inputs, Variable) else list(inputs))
    outs = low.run([outputs] if single else list(outputs))
    return outs[0] if single else outs


def _given_pairs(given):
    """`given` as checked (placeholder, positional value) pairs, before any work."""
    pairs = list(given.items() if isinstance(given, Mapping) else given)
    for k, pair in enumerate(pairs):
        if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(v, Variable) for v in pair)):
            raise TypeError(
                f"lower: given[{k}] must be a pair (placeholder variable, positional variable), got {pair!r}"
            )
        var, positional = pair
        what = f"lower: the value given for {var.name or var!r}"
        if is_labeled(positional) or (is_labeled(var) and not isinstance(positional.type, TensorType)):
            raise TypeError(f"{what} must be a positional tensor, got {positional!r}")
        got, expected = (getattr(v.type, "dtype", type(v.type).__name__) for v in (positional, var))
        if got != expected:
            raise TypeError(f"{what} has dtype {got}, expected {expected}")
        if is_labeled(var):
            sizes, shape = tuple(d.size for d in var.type.dims), positional.type.shape
            if len(shape) != len(sizes) or any(
                n is not None and s is not None and n != s for n, s in zip(sizes, shape)
            ):
                raise DimError(f"{what} has shape {shape}, expected one axis per dim of {fmt_dims(var.type.dims)}")
    return pairs


class _Lowering:
    """One lowering pass (run by `lower` only): a memo from labeled variables to positional ones, and the sizes of dims."""

    def __init__(self):
        self.memo = {}  # id(variable) -> positional variable
        self.sizes = {}  # Dim -> int or symbolic int64 scalar

    def assume(self, var, positional):
        """Take `var` (a labeled placeholder) as lowered to `positional`; its unsized dims take their sizes from it."""
        self.memo[id(var)] = positional
        if is_labeled(var):
            self.bind(var, positional)

    def get(self, var):
        """The positional version of `var`; labeled leaves get their twin."""
        found = self.memo.get(id(var))
        if found is not None:
            return found
        if var.owner is None and is_labeled(var):
            twin = positional_twin(var)
            self.memo[id(var)] = twin
            self.bind(var, twin)
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
    if not (is_labeled(out) or isinstance(out.type, TensorType)):
        return  # a positional value of another type (a user's token) is rebuilt as it is
    assert isinstance(low.type, TensorType), f"lowering {node.op} left a labeled variable"
    assert low.type.dtype == out.type.dtype, f"lowering {node.op}: dtype {low.type.dtype} != {out.type.dtype}"
    assert low.type.ndim == out.type.ndim, f"lowering {node.op}: {low.type} does not fit {out.type}"
    for s, t in zip(low.type.shape, out.type.shape):
        assert t is None or s == t, f"lowering {node.op}: static shape {low.type} does not fit {out.type}"


def lower_io(inputs, outputs, updates=()):
    """Positional inputs/outputs for `dg.function`, with input converters, output wrappers and checks
    (of what the outputs and the `updates`' new values read)."""
    lowered = lower(list(inputs) + list(outputs), inputs=inputs)
    pos_inputs, pos_outputs = lowered[: len(inputs)], lowered[len(inputs) :]
    labels = [v.name or f"input {k}" for k, v in enumerate(inputs)]
    in_specs = [
        LabeledInput(label, v.type) if is_labeled(v) else TensorInput(label, v.type) for label, v in zip(labels, inputs)
    ]
    out_specs = [LabeledOutput(o, inputs) if is_labeled(o) else TensorOutput() for o in outputs]
    read = list(outputs) + [v for v in updates if isinstance(v, Variable)]
    checks = (
        size_checks(inputs, read, labels)
        + label_checks(inputs, read, labels)
        + shared_size_checks(inputs, read, labels)
    )
    checks += indexer_checks(inputs, read, labels)
    return pos_inputs, pos_outputs, in_specs, out_specs, checks


def lower_update(target, value):
    """The positional new value of shared `target` from labeled `value` (broadcast and ordered to its dims)."""
    if is_labeled(target):
        value = broadcast_to_dims(value, target.type.dims)
    elif is_labeled(value) and value.type.ndim != target.type.ndim:
        raise DimError(
            f"updates: {target.name!r} is positional with {target.type.ndim} axes; the new value has dims {fmt_dims(value.type.dims)}"
        )
    return lower(value)
