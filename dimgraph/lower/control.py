"""Control flow for users: `dg.scan`, `dg.while_loop`, `dg.ifelse`, `dg.op_from_graph` (labeled and positional variables).

Each lowers on the spot, as labeled `dg.grad` does, so it lives in `lower`: the
step function is called once on placeholders (labeled ones when the states are
labeled), its graph is lowered to a positional body by `lower(..., given=...)`
(each labeled placeholder given its positional one), the outer values by one
plain `lower`, and the loop or branch becomes one core op
(`core.loop.Scan`, `core.loop.Loop`, `core.ifelse.IfElse`) whose labeled
results are read back with `from_positional`. Labeled inputs keep the
positional twin every lowering of them shares, so the op sits in the same
positional graph as the rest of the program. Values the step function reads
from outside (closures) become explicit constants of the loop.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.basic import as_tensor, tensor
from dimgraph.core.extra import assert_op
from dimgraph.core.graph import Constant, Variable, rebuild_node, toposort
from dimgraph.core.ifelse import ifelse as core_ifelse
from dimgraph.core.loop import loop_from_graph, scan_from_graph
from dimgraph.core.math import eq, ge, le, minimum
from dimgraph.core.opfromgraph import check_distinct_inputs
from dimgraph.core.opfromgraph import op_from_graph as core_op_from_graph
from dimgraph.core.random import draws_made, is_rng_state
from dimgraph.core.shape import ShapeI
from dimgraph.core.subtensor import getitem
from dimgraph.core.type import TensorType
from dimgraph.errors import DimError, ShapeError
from dimgraph.labeled.basic import constant as labeled_constant
from dimgraph.labeled.basic import from_positional
from dimgraph.labeled.dims import Dim, fmt_dims, resolve_dims
from dimgraph.labeled.math import astype, where
from dimgraph.labeled.ops import is_labeled
from dimgraph.labeled.shape import broadcast, broadcast_to_dims
from dimgraph.labeled.type import LabeledType
from dimgraph.lower import lower


def _as_list(x):
    if x is None:
        return [], False
    return (list(x), False) if isinstance(x, (list, tuple)) else ([x], True)


def _state_label(k, v):
    return f"state {k}" + (f" ({v.name!r})" if getattr(v, "name", None) else "")


class _Body:
    """A step's placeholders: the states (and sequence slices) it is called on, the positional ones its body
    is built on, and the pairs that tie the labeled ones together (`given` when the step is lowered)."""

    def __init__(self, name, init, labeled):
        self.name, self.labeled = name, labeled
        self.index = tensor("i", (), "int64")
        self.user_states, self.states, self.given = [], [], []
        for v in init:
            if labeled and not is_rng_state(v):  # an RNG state is positional in every mode
                user = LabeledType(v.type.dtype, v.type.dims).make_variable(name=v.name)
                pos = TensorType(v.type.dtype, tuple(d.size for d in v.type.dims)).make_variable(name=v.name)
                self.given.append((user, pos))
            else:
                user = pos = v.type.make_variable(name=v.name)
            self.user_states.append(user)
            self.states.append(pos)

    def checked(self, outs, init):
        """The step's results, checked against the states they replace (labeled ones in the states' dims order)."""
        checked = []
        for k, (v, out) in enumerate(zip(init, outs)):
            label = _state_label(k, v)
            if is_rng_state(v):
                if not is_rng_state(out):
                    raise TypeError(f"{self.name}: the step returns {out!r} for {label}, expected the next RNG state")
            elif self.labeled:
                if not is_labeled(out):
                    out = labeled_constant(out) if not isinstance(out, Variable) else out
                if not is_labeled(out):
                    raise TypeError(f"{self.name}: the step returns {out!r} for {label}, expected a labeled variable")
                if set(out.type.dims) != set(v.type.dims):
                    raise DimError(
                        f"{self.name}: {label} has dims {fmt_dims(v.type.dims)} before a step but "
                        f"{fmt_dims(out.type.dims)} after it; a state keeps its dims"
                    )
                if out.type.dims != v.type.dims:
                    out = out.transpose(*v.type.dims)
            elif not isinstance(out, Variable) or isinstance(v.type, TensorType):
                out = as_tensor(out)
            if getattr(out.type, "dtype", None) != getattr(v.type, "dtype", None):
                raise TypeError(
                    f"{self.name}: {label} has dtype {v.type.dtype} before a step but {out.type.dtype} after it; "
                    f"a state keeps its dtype (use .astype({v.type.dtype!r}) in the step)"
                )
            checked.append(out)
        return checked


def _lower_variables(values, given=()):
    """`values` with the graph variables among them lowered together (one `lower`: they share sizes and
    nodes); others (None, Python numbers) as they are. Positional variables come back unchanged unless
    they are computed from labeled ones."""
    at = [k for k, v in enumerate(values) if isinstance(v, Variable)]
    lowered = dict(zip(at, lower([values[k] for k in at], given=given)))
    return [lowered.get(k, v) for k, v in enumerate(values)]


def _zero_d(name, v, what):
    """`v`, refused naming `what` when it is a labeled variable with dims (a count, a condition)."""
    if isinstance(v, Variable) and is_labeled(v) and v.type.ndim != 0:
        raise DimError(f"{name}: {what} must be 0-d, got dims {fmt_dims(v.type.dims)}")
    return v


def _labeled_mode(values, what):
    flags = [is_labeled(v) for v in values if isinstance(v, Variable) and not is_rng_state(v)]
    if any(flags) and not all(flags):
        raise TypeError(
            f"{what}: mix of labeled and positional states/sequences; convert with dg.from_positional or .to_positional()"
        )
    return any(flags)


def _check_count(name, n, what):
    n = as_tensor(n)
    if n.type.ndim != 0 or not n.type.dtype.startswith(("int", "uint")):
        raise TypeError(f"{name}: {what} must be a 0-d integer, got {n!r}")
    n = n.astype("int64") if n.type.dtype != "int64" else n
    if isinstance(n, Constant):
        if int(n.data) < 0:
            raise ValueError(f"{name}: {what} must be >= 0, got {int(n.data)}")
        return n
    if n.owner is not None and isinstance(n.owner.op, ShapeI):
        return n  # a length is never negative
    return assert_op(n, ge(n, 0), msg=f"{name}: {what} must be >= 0")


def _length(s):
    """A sequence's number of steps: a Python int where its type fixes it, else a symbolic length."""
    size = s.type.shape[0]
    return size if size is not None else ShapeI(0)(s)


def _step_count(name, n, seqs, dim):
    """The scan's 0-d int64 step count, checked against the sequences (positional: as PyTensor's scan).

    Positional: `n_steps` may be shorter than a sequence (the rest is not
    read) but not longer; without it the shortest sequence sets the count.
    Labeled: the sequences share the step dim, so `n_steps` must equal its
    length. A mismatch known now is an error now; one that depends on the
    data a ShapeError when the function runs, before the loop starts.
    """
    lengths = [_length(s) for s in seqs]
    if dim is not None and dim.size is not None and not lengths:
        lengths = [dim.size]
    if n is None:
        if not lengths:
            where = "" if dim is None else f" and dim {dim.name!r} has no size"
            raise TypeError(f"{name}: give n_steps= (no sequences{where})")
        known = [k for k in lengths if isinstance(k, int)]
        n = as_tensor(min(known), dtype="int64") if known else None
        for k in lengths:
            if not isinstance(k, int):  # a length known at run time only: the count is the least of them
                k = k.astype("int64") if k.type.dtype != "int64" else k
                n = k if n is None else minimum(n, k)
        return _check_count(name, n, "n_steps")
    n = _check_count(name, n, "n_steps")
    exact = dim is not None  # labeled: the trace gets the step dim, so the count is its length
    for j, k in enumerate(lengths):
        what = f"sequence {j}" if seqs else f"the step dim {dim.name!r}"
        if exact:
            rule = f"n_steps must equal the length of {what} (slice or pad the sequences to change the steps)"
        else:
            rule = f"n_steps must be at most the length of {what} (a sequence may be longer, as in PyTensor)"
        if isinstance(k, int) and isinstance(n, Constant):
            steps = int(n.data)
            if (steps != k) if exact else (steps > k):
                raise (DimError if exact else ShapeError)(
                    f"{name}: n_steps is {steps} but {what} has {k} steps; {rule}"
                )
            continue
        n = assert_op(n, (eq if exact else le)(n, k), msg=f"{name}: {rule}", error=ShapeError)
    return n


def scan(step, init, sequences=None, n_steps=None, dim=None, name="scan"):
    """Run `step` `n_steps` times, carrying states; return `(final, trace)`.

    `step(*states, *sequence_slices)` returns the new state(s). `init` is one
    variable (one state) or a list/tuple (several). Each state keeps its dims
    (or shape) and dtype across a step: a change is an error at build time
    naming the state. `sequences` are read one slice per step along `dim`
    (labeled) or axis 0 (positional). `final` holds the states after the last
    step; `trace` each state's values after every step, with `dim` first
    (labeled: a DataArray with `dim`'s coords) or a leading axis (positional).
    `n_steps` defaults to the length of `dim` or of the shortest sequence; as
    in PyTensor, a positional sequence may be longer than `n_steps` (its
    extra rows are not read), never shorter (a ShapeError before the loop).
    Taps further back than one step are window states: an AR(2) carries
    `(x[t-1], x[t-2])` and returns `(x_t, x[t-1])`.

    >>> import dimgraph as dg, numpy as np
    >>> t = dg.Dim("t", coords=["a", "b", "c"])
    >>> eps = dg.labeled("eps", dims=(t,))
    >>> final, trace = dg.scan(lambda x, e: 0.5 * x + e, init=dg.constant(0.0, dims=()), sequences=eps, dim=t)
    >>> out = dg.function([eps], trace)(np.array([1.0, 2.0, 3.0]))
    >>> out.dims, out.values.tolist(), out.t.values.tolist()
    (('t',), [1.0, 2.5, 4.25], ['a', 'b', 'c'])
    """
    init, single = _as_list(init)
    seqs, _ = _as_list(sequences)
    if not init:
        raise ValueError(f"{name}: give at least one initial state in init=")
    labeled = _labeled_mode(init + seqs, name)
    if labeled:
        init = [v if isinstance(v, Variable) else labeled_constant(v) for v in init]
        if dim is None:
            raise TypeError(f"{name}: labeled scans need dim= (the Dim that labels the steps of the traces)")
        if not isinstance(dim, Dim):
            if not seqs:
                raise TypeError(f"{name}: dim= must be a Dim when there are no sequences, got {dim!r}")
            (dim,) = resolve_dims(seqs[0].type.dims, [dim], name, "the first sequence")
        for j, s in enumerate(seqs):
            if dim not in s.type.dims:
                raise _not_on_step_dim(name, j, s, dim)
        # the step reads labeled slices (named as their sequences), lowered to slices of the steps-first sequences
        users = [
            LabeledType(s.type.dtype, tuple(d for d in s.type.dims if d != dim)).make_variable(name=s.name)
            for s in seqs
        ]
        seqs = [s.transpose(dim, *u.type.dims) for s, u in zip(seqs, users)]
    else:
        init = [v if isinstance(v, Variable) else as_tensor(v) for v in init]
        seqs = [as_tensor(s) for s in seqs]
        for s in seqs:
            if s.type.ndim == 0:
                raise ValueError(f"{name}: a sequence needs a leading axis to slice, got the 0-d {s!r}")
    body = _Body(name, init, labeled)
    outer = _lower_variables([*init, *seqs, _zero_d(name, n_steps, "a count")])
    start, seq_outer, n = outer[: len(init)], outer[len(init) : -1], outer[-1]
    seq_inner = [TensorType(s.type.dtype, s.type.shape).make_variable() for s in seq_outer]
    slices = [getitem(ph, body.index) for ph in seq_inner]
    if labeled:
        body.given += zip(users, slices)
        slices = users
    n = _step_count(name, n, seq_outer, dim if labeled else None)
    since = draws_made()
    outs, _ = _as_list(step(*body.user_states, *slices))
    _check_step_draws(outs, [*body.user_states, *slices], since, name)
    if len(outs) != len(init):
        raise ValueError(f"{name}: the step returns {len(outs)} values for {len(init)} states")
    checked = body.checked(outs, init)
    new = lower(checked, given=body.given)
    finals, traces = scan_from_graph(body.index, body.states, seq_inner, new, n, start, seq_outer, name=name)
    if labeled:
        finals = [f if is_rng_state(v) else from_positional(f, v.type.dims) for f, v in zip(finals, init)]
        traces = [t if is_rng_state(v) else from_positional(t, (dim, *v.type.dims)) for t, v in zip(traces, init)]
        _LabeledScan([*body.user_states, *users], checked, init, seqs, n_steps, dim, name).keep_on(finals + traces)
    return (finals[0], traces[0]) if single else (finals, traces)


class _LabeledLoop:
    """What a labeled loop was built from (its step's labeled graph, its initial states), kept on its results so
    `dg.vectorize_graph` rebuilds it by name on batched values (`dg.scan`: `_LabeledScan`, `dg.while_loop`:
    `_LabeledWhile`).

    The loop itself is positional: vectorized as such, a batch dim its states already have (the prior
    predictive's `draw`, aligned) would come back as one more leading axis ('draw' twice), and its closures'
    batch axes would meet the states' own axis of that dim as an outer product. Rebuilt from the labeled step,
    every dim is matched by name, then the loop is lowered anew (a batch dim reaches a state once).
    """

    def __init__(self, placeholders, step_outputs, init, name):
        self.placeholders, self.step_outputs, self.init, self.name = placeholders, step_outputs, init, name
        self.results = []

    def keep_on(self, results):
        self.results = results
        for k, r in enumerate(results):
            r.tag["labeled_loop"] = (self, k)

    def _batched_step(self, vectorize, carriers, new_init, slices, extra_outputs=()):
        """The stand-ins for the step's placeholders, its outputs and `extra_outputs` (graphs of the same
        placeholders) on batched values, and the initial states. A state the batch reaches only through the step
        (or through an extra output, which every state then carries) starts repeated over the batch dims it gains
        (labeled by `carriers`, the batched values), found by stepping again until no state gains more."""
        n_init = len(self.init)
        while True:
            stand_ins = [
                p if is_rng_state(p) else LabeledType(p.type.dtype, v.type.dims).make_variable(name=p.name)
                for p, v in zip(self.placeholders, new_init)
            ] + slices
            labeled = {p: q for p, q in zip(self.placeholders, stand_ins) if p is not q}
            outputs = vectorize([*self.step_outputs, *extra_outputs], labeled)
            step_outputs, extra = outputs[:n_init], outputs[n_init:]
            every = tuple(d for e in extra for d in e.type.dims)
            grown = [
                (k, tuple(dict.fromkeys(d for d in (*o.type.dims, *every) if d not in v.type.dims)))
                for k, (o, v) in enumerate(zip(step_outputs, new_init))
                if not is_rng_state(v)
            ]
            grown = [(k, gained) for k, gained in grown if gained]
            if not grown:
                return stand_ins, step_outputs, extra, new_init
            for k, gained in grown:
                new_init[k] = broadcast_to_dims(new_init[k], gained + new_init[k].type.dims, like=carriers)


class _LabeledScan(_LabeledLoop):
    """A labeled `dg.scan`: also its sequences, step count and step dim."""

    def __init__(self, placeholders, step_outputs, init, sequences, n_steps, dim, name):
        super().__init__(placeholders, step_outputs, init, name)
        self.sequences, self.n_steps, self.dim = sequences, n_steps, dim

    def vectorized(self, vectorize, carriers):
        """The results (finals, then traces) rebuilt on `vectorize(variables, more_replacements)` of the initial
        states, sequences and step; None where the step count gains dims (the positional loop takes a count per
        entry)."""
        counted = isinstance(self.n_steps, Variable)
        n_init = len(self.init)
        *new_values, n_steps = vectorize([*self.init, *self.sequences, *([self.n_steps] if counted else [])]) + (
            [] if counted else [self.n_steps]
        )
        if counted and n_steps.type != self.n_steps.type:
            return None
        new_init, new_seqs = new_values[:n_init], new_values[n_init:]
        slices = [
            LabeledType(p.type.dtype, tuple(d for d in s.type.dims if d != self.dim)).make_variable(name=p.name)
            for p, s in zip(self.placeholders[n_init:], new_seqs)
        ]
        stand_ins, step_outputs, _, new_init = self._batched_step(vectorize, carriers, new_init, slices)
        old = [*self.init, *self.sequences, *self.step_outputs]
        if all(a is b for a, b in zip(new_init + new_seqs + step_outputs, old)):
            return self.results

        def step(*values):
            return _substituted(step_outputs, dict(zip(stand_ins, values)))

        finals, traces = scan(step, new_init, new_seqs, n_steps=n_steps, dim=self.dim, name=self.name)
        return [*finals, *traces]


class _LabeledWhile(_LabeledLoop):
    """A labeled `dg.while_loop`: also its condition (a graph of the step's placeholders), step bound and trace.

    Where the batch reaches the condition, entries stop apart: the rebuilt loop runs while any entry goes on,
    and a step leaves the states of an entry whose condition is false as they are (its trace repeats them)."""

    def __init__(self, placeholders, step_outputs, condition, init, max_steps, trace, dim, name):
        super().__init__(placeholders, step_outputs, init, name)
        self.condition, self.max_steps, self.trace, self.dim = condition, max_steps, trace, dim

    def vectorized(self, vectorize, carriers):
        """The results (finals, then traces) rebuilt on `vectorize(variables, more_replacements)` of the initial
        states, condition and step; None where the step bound gains dims."""
        bounded = isinstance(self.max_steps, Variable)
        *new_init, max_steps = vectorize([*self.init, *([self.max_steps] if bounded else [])]) + (
            [] if bounded else [self.max_steps]
        )
        if bounded and max_steps.type != self.max_steps.type:
            return None
        stand_ins, step_outputs, (go,), new_init = self._batched_step(
            vectorize, carriers, new_init, [], [self.condition]
        )
        old = [*self.init, *self.step_outputs, self.condition]
        if all(a is b for a, b in zip([*new_init, *step_outputs, go], old)):
            return self.results

        def cond(*values):
            c = _substituted([go], dict(zip(stand_ins, values)))[0]
            return c.any() if c.type.dims else c

        def step(*values):
            if not go.type.dims:
                return _substituted(step_outputs, dict(zip(stand_ins, values)))
            *new, going = _substituted([*step_outputs, go], dict(zip(stand_ins, values)))  # one rebuild of both
            return [n if is_rng_state(v) else where(going, n, v).transpose(*v.type.dims) for n, v in zip(new, values)]

        out = while_loop(cond, step, new_init, max_steps, trace=self.trace, dim=self.dim, name=self.name)
        return [*out[0], *out[1]] if self.trace else out


def _substituted(outputs, mapping):
    """`outputs` with the keys of `mapping` swapped for its values (of the same dims), every node between rebuilt."""
    memo = {id(k): v for k, v in mapping.items()}
    for node in toposort(outputs, blockers=list(mapping)):
        new = rebuild_node(node, [memo.get(id(i), i) for i in node.inputs])
        memo.update((id(o), n) for o, n in zip(node.outputs, new.outputs))
    return [memo.get(id(o), o) for o in outputs]


def _not_on_step_dim(name, j, seq, dim):
    """The DimError for a sequence that is not on the loop's step Dim: what it is on, and what to do."""
    same_name = next((d for d in seq.type.dims if d.name == dim.name), None)
    if same_name is None:
        return DimError(
            f"{name}: sequence {j} has dims {fmt_dims(seq.type.dims)}, without the step dim {dim.name!r}; "
            f"every sequence is read one step at a time along dim= ({dim!r})"
        )
    return DimError(
        f"{name}: sequence {j} is on {same_name!r}, not on the step dim {dim!r}: a loop steps along one Dim, "
        f"and a cut of {dim.name!r} (a slice, diff, ...) is a dim of its own length\n"
        f"hint: cut every sequence the same way and name the step dim, e.g. for a lag `s = slice(1, None)`, "
        f"sequences=[y.isel({dim.name}=s), y.shift({dim.name}=1).isel({dim.name}=s)], dim={dim.name!r} "
        "(a name is the first sequence's dim); or carry the previous value in the state"
    )


def while_loop(cond, step, init, max_steps, trace=False, dim=None, name="while_loop"):
    """Apply `step` while `cond(*states)` is true, at most `max_steps` times; return the last states.

    The condition is checked before every step (so the loop may run zero
    times). States follow `dg.scan`'s rules. A while loop has no gradient
    (`dg.NonDifferentiable` names it). With `trace=True` it returns
    `(final, trace)` as `dg.scan` does: each state's values after every step
    taken, the steps along a new leading axis (labeled: the Dim or dim name
    `dim=`, sized by the steps taken). The trace takes memory for the steps
    taken only, however large `max_steps`: the steps run twice, once to count
    them and once to record them.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.scalar("x")
    >>> y = dg.while_loop(lambda v: v < 100.0, lambda v: v * 2.0, init=x, max_steps=1000)
    >>> float(y.eval({x: 3.0}))
    192.0
    >>> final, path = dg.while_loop(lambda v: v < 100.0, lambda v: v * 2.0, init=x, max_steps=1000, trace=True)
    >>> path.eval({x: 3.0}).tolist()
    [6.0, 12.0, 24.0, 48.0, 96.0, 192.0]
    """
    init, single = _as_list(init)
    labeled = _labeled_mode(init, name)
    init = [v if isinstance(v, Variable) else (labeled_constant(v) if labeled else as_tensor(v)) for v in init]
    body = _Body(name, init, labeled)
    since = draws_made()
    outs, _ = _as_list(step(*body.user_states))
    _check_step_draws(outs, body.user_states, since, name)
    if len(outs) != len(init):
        raise ValueError(f"{name}: the step returns {len(outs)} values for {len(init)} states")
    checked = body.checked(outs, init)
    # the condition before the first step (on the initial states) and after each step (on the new states)
    before, after = (_zero_d(name, cond(*values), "the condition") for values in (init, checked))
    *new, nxt = _lower_variables([*checked, after], given=body.given)
    *begin, first, n = _lower_variables([*init, before, _zero_d(name, max_steps, "a count")])
    first, nxt, n = _flag(name, first), _flag(name, nxt), _check_count(name, n, "max_steps")
    go = tensor("go", (), "bool")
    if trace and labeled:
        if dim is None:
            raise TypeError(f"{name}: a labeled while loop with trace=True needs dim= (the Dim or name of its steps)")
        dim = dim if isinstance(dim, Dim) else Dim(dim)
    states, new, start = body.states + [go], new + [nxt], begin + [first]
    if trace:  # a step counter: the replay below records exactly the steps taken
        count = tensor("count", (), "int64")
        states, new, start = states + [count], new + [count + 1], start + [as_tensor(0, dtype="int64")]
    outs = loop_from_graph(body.index, states, [], new, n, start, [], until=len(init), name=name)
    finals, kept = outs[: len(init)], None
    if labeled:
        finals = [f if is_rng_state(v) else from_positional(f, v.type.dims) for f, v in zip(finals, init)]
        condition = cond(*body.user_states)  # the condition as a graph of the step's placeholders
        if isinstance(condition, Variable) and is_labeled(condition):
            kept = _LabeledWhile(body.user_states, checked, condition, init, max_steps, trace, dim, name)
    if not trace:
        if kept is not None:
            kept.keep_on(finals)
        return finals[0] if single else finals
    # NOTE: the trace is recorded by a replay of the steps taken (the step is pure: its RNG states are
    # loop states), so its rows are the steps taken. Sized by max_steps, it reserved 8 GB per call for
    # max_steps=10**9 and was a MemoryError for 10**12 however few steps ran.
    taken = outs[len(states) - 1]
    traced = tuple(k for k, v in enumerate(body.states) if isinstance(v.type, TensorType) and not is_rng_state(init[k]))
    replay = loop_from_graph(body.index, body.states, [], new[: len(init)], taken, begin, [], traced=traced, name=name)
    traces = [None] * len(init)
    for m, k in enumerate(traced):
        t = replay[len(init) + m]
        traces[k] = from_positional(t, (dim, *init[k].type.dims)) if labeled else t
    if kept is not None and all(t is not None for t in traces):
        kept.keep_on(finals + traces)
    return (finals[0], traces[0]) if single else (finals, traces)


def _check_step_draws(outs, placeholders, since, name):
    """Refuse draws made by the step from an RNG state it does not carry (a `dg.rng` stream's, or one from
    outside): they would repeat the same numbers at every step. Draws made before the loop may be read."""
    inner = {id(p) for p in placeholders}
    for node in toposort([o for o in outs if isinstance(o, Variable)], blockers=placeholders):
        if node.tag.get("draw", 0) > since and id(node.inputs[0]) not in inner:
            state = node.inputs[0]
            raise ValueError(
                f"{name}: the step draws from the RNG state {state.name or state!r} without carrying it, so every step "
                "would repeat the same numbers; make the state a loop state: pass it in init and return the next one "
                "(`state, x = dg.dist.normal(mu, sigma).draw(state)` in the step), or draw before the loop with the "
                "step dim in extra_dims"
            )
        if any(id(i) in inner for i in node.inputs):
            inner.update(id(o) for o in node.outputs)


def _flag(name, c):
    """A loop's condition as a 0-d bool tensor (refused naming the loop otherwise)."""
    c = as_tensor(c)
    if c.type.ndim != 0 or c.type.dtype != "bool":
        raise TypeError(f"{name}: the condition must be a 0-d bool, got {c!r}")
    return c


def _positional(v, dtype):
    v = v if isinstance(v, Variable) else as_tensor(v, dtype=dtype)
    return v if v.type.dtype == dtype else v.astype(dtype)


def ifelse(cond, then, otherwise):
    """`then` where the 0-d `cond` is true, else `otherwise`; only the taken branch runs (on every backend).

    Branches are one variable or lists of equal length; labeled branches
    broadcast by dim name (as `dg.where`). Values both branches read are
    computed once, outside.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.scalar("x")
    >>> y = dg.ifelse(x > 0, dg.sqrt(x), 0.0)
    >>> float(y.eval({x: 9.0})), float(y.eval({x: -1.0}))
    (3.0, 0.0)
    """
    a, single = _as_list(then)
    b, _ = _as_list(otherwise)
    if len(a) != len(b):
        raise ValueError(f"ifelse: the then branch has {len(a)} values but the else branch {len(b)}")
    everything = a + b + [cond]
    labeled = any(isinstance(v, Variable) and is_labeled(v) for v in everything)
    _zero_d("ifelse", cond, "the condition")
    pos_a, pos_b, dims = [], [], []
    for x, y in zip(a, b):
        # NumPy 2 promotion, Python numbers weak (NEP 50): a float32 branch and 0.0 stay float32
        common = np.result_type(*(v.type.dtype if isinstance(v, Variable) else v for v in (x, y))).name
        if not labeled:
            pos_a.append(_positional(x, common))
            pos_b.append(_positional(y, common))
            continue
        x, y = (v if isinstance(v, Variable) else labeled_constant(v, dtype=common) for v in (x, y))
        if not (is_labeled(x) and is_labeled(y)):
            raise TypeError(
                "ifelse: a labeled branch value is paired with a positional one; convert with dg.from_positional"
            )
        x, y = broadcast(x, y)
        x, y = (v if v.type.dtype == common else astype(v, common) for v in (x, y))
        pos_a.append(x)
        pos_b.append(y)
        dims.append(x.type.dims)
    cond, *branches = _lower_variables([cond, *pos_a, *pos_b])
    outs = core_ifelse(cond, branches[: len(a)], branches[len(a) :])
    if not labeled:
        return outs[0] if single else outs
    outs = [from_positional(o, d) for o, d in zip(outs, dims)]
    return outs[0] if single else outs


def op_from_graph(inputs, outputs, grad=None, inline=True, name="op_from_graph"):
    """A macro computing `outputs` from `inputs`, applied as one node (an `OpFromGraph`).

    Positional inputs give the core op (`dimgraph.core.op_from_graph`). Labeled
    inputs give a `LabeledMacro`: called on labeled variables with the inputs'
    dims (in any order), it returns labeled outputs with the outputs' dims.
    `grad(inputs, output_grads) -> input gradients` overrides the derived
    gradient; for a labeled macro it gets and returns labeled variables. The
    node is replaced by its graph while rewriting unless `inline=False`.

    >>> import dimgraph as dg, numpy as np
    >>> a, b = dg.Dim("a", size=2), dg.Dim("b", size=3)
    >>> x = dg.labeled("x", dims=(a, b))
    >>> softplus = dg.op_from_graph([x], [dg.log1p(dg.exp(x))])
    >>> y = dg.labeled("y", dims=(b, a))
    >>> out = dg.function([y], softplus(y))(np.zeros((3, 2)))
    >>> out.dims, round(float(out.values[0, 0]), 6)
    (('a', 'b'), 0.693147)
    """
    inputs, outputs = list(inputs), list(outputs)
    if not any(isinstance(v, Variable) and is_labeled(v) for v in inputs + outputs):
        return core_op_from_graph(inputs, outputs, grad=grad, inline=inline, name=name)
    for k, v in enumerate(inputs):
        if not (isinstance(v, Variable) and is_labeled(v)):
            raise TypeError(f"{name}: input {k} is {v!r}; a labeled macro takes labeled inputs only")
    check_distinct_inputs(inputs, name)
    placeholders = [
        TensorType(v.type.dtype, tuple(d.size for d in v.type.dims)).make_variable(name=v.name) for v in inputs
    ]
    outputs = [v if isinstance(v, Variable) else labeled_constant(v) for v in outputs]
    out_dims = [tuple(v.type.dims) if is_labeled(v) else () for v in outputs]
    in_dims = [tuple(v.type.dims) for v in inputs]

    def positional_grad(ins, gs):
        user_ins = [LabeledType(v.type.dtype, v.type.dims).make_variable(name=v.name) for v in inputs]
        user_gs = [
            LabeledType(o.type.dtype, dims).make_variable(name=f"g_{o.name}" if o.name else None)
            for dims, o in zip(out_dims, outputs)
        ]
        given = list(grad(user_ins, user_gs))
        if len(given) != len(inputs):
            raise ValueError(f"{name}: grad returned {len(given)} gradients for {len(inputs)} inputs")
        aligned = []
        for k, (g, dims) in enumerate(zip(given, in_dims)):
            if g is not None:
                g = g if isinstance(g, Variable) else labeled_constant(g)
                if set(g.type.dims) - set(dims):
                    raise DimError(
                        f"{name}: the gradient of input {k} has dims {fmt_dims(g.type.dims)}, beyond the input's {fmt_dims(dims)}"
                    )
                g = broadcast_to_dims(g.transpose(*[d for d in dims if d in g.type.dims]), dims)
            aligned.append(g)
        return _lower_variables(aligned, given=[*zip(user_ins, ins), *zip(user_gs, gs)])

    body = lower(outputs, given=zip(inputs, placeholders))
    op = core_op_from_graph(
        placeholders, body, grad=positional_grad if grad is not None else None, inline=inline, name=name
    )
    return LabeledMacro(op, tuple(in_dims), tuple(out_dims))


class LabeledMacro:
    """A macro over labeled variables (from `dg.op_from_graph` on labeled inputs); call it like a function.

    Two macros built from the same graph are equal (their `op` is).
    """

    def __init__(self, op, in_dims, out_dims):
        self.op, self.in_dims, self.out_dims = op, in_dims, out_dims

    def __eq__(self, other):
        return isinstance(other, LabeledMacro) and (self.op, self.in_dims, self.out_dims) == (
            other.op,
            other.in_dims,
            other.out_dims,
        )

    def __hash__(self):
        return hash((self.op, self.in_dims, self.out_dims))

    def __repr__(self):
        return f"LabeledMacro({self.op})"

    def __call__(self, *args):
        name = self.op.name
        if len(args) != len(self.in_dims):
            raise TypeError(f"{name}: takes {len(self.in_dims)} inputs, got {len(args)}")
        ordered = []
        for k, (v, dims) in enumerate(zip(args, self.in_dims)):
            if not (isinstance(v, Variable) and is_labeled(v)):
                v = labeled_constant(v) if not isinstance(v, Variable) else v
            if not is_labeled(v) or set(v.type.dims) != set(dims):
                got = fmt_dims(v.type.dims) if is_labeled(v) else repr(v)
                raise DimError(f"{name}: input {k} must have dims {fmt_dims(dims)}, got {got}")
            ordered.append(v.transpose(*dims))
        outs = self.op.make_node(*lower(ordered)).outputs
        labeled = [from_positional(o, dims) for o, dims in zip(outs, self.out_dims)]
        return labeled[0] if len(labeled) == 1 else labeled
