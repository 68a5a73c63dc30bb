"""Loops: the high-level `Scan` (last states and traces) and the low-level `Loop` every backend runs.

Both carry a body, an `InnerGraph` with inputs `(i, *states, *constants)` and
outputs `(*new states)`, where `i` is the step number (0-d int64). Their node
inputs are `(n_steps, *initial states, *constants)`. Sequences are ordinary
constants that the body indexes with `i` (the builders do this).

- `Scan` outputs every state's last value, then every state's trace (its
  values after steps 0..n-1 along a new leading axis). It is what builders and
  gradients produce; the `scan_to_loop` rewrite turns it into a `Loop` that
  stores only the traces some client reads (`trace[-1]` reads become the last
  state).
- `Loop` outputs the last states, then the traces of the states listed in
  `traced`. With `until=k`, state k is a boolean checked before each step:
  the loop stops when it is False (a while loop, bounded by `n_steps`). A while
  loop's traces have `n_steps` rows; those past the step it stopped at are
  unspecified, so `dg.while_loop(..., trace=True)` traces nothing in its while
  loop: it counts the steps, then replays that many in a loop that traces them
  (memory for the steps taken, never for `max_steps`).

State types are any `Type` (RNG states and shared values included): a state
only needs its body output to fit its input type. Traces need tensor states.
A state's shape must stay the same across steps (checked on every backend).
Window states give taps further back than one step: an AR(2) carries
`(x[t-1], x[t-2])` as two states and returns `(x_t, x[t-1])`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from dimgraph.core.basic import as_tensor, tensor
from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.gradient import vjp
from dimgraph.core.graph import Apply, Constant, Op, clone_graph
from dimgraph.core.inner import InnerGraph, free_inputs
from dimgraph.core.join import concatenate
from dimgraph.core.math import lt, where
from dimgraph.core.random import RandomDraw, draw_over_batch
from dimgraph.core.reduce import any as reduce_any
from dimgraph.core.reduce import max as reduce_max
from dimgraph.core.shape import shape_entry_as_variable, shape_of, static_or_symbolic, to_static
from dimgraph.core.shape_ops import Alloc, broadcast_to, expand_dims, zeros, zeros_like
from dimgraph.core.subtensor import Subtensor, getitem, inc_subtensor
from dimgraph.core.type import TensorType
from dimgraph.core.vectorize import batch_shape, blockwise_fallback, full_batch, pad, vectorize_graph, vectorize_node
from dimgraph.errors import NonDifferentiable


def _is_float_tensor(var) -> bool:
    return isinstance(var.type, TensorType) and np.dtype(var.type.dtype).kind in "fc"


@dataclass(frozen=True)
class LoopOp(Op):
    """What Loop and Scan share: the body, the states, stepping (`perform`), shapes; backends register this class."""

    body: InnerGraph
    n_states: int
    name: str = field(default="loop", compare=False)

    @property
    def n_consts(self) -> int:
        return len(self.body.inputs) - 1 - self.n_states

    def _traced(self):
        raise NotImplementedError

    def _check_inputs(self, n_steps, init, consts):
        n_steps = as_tensor(n_steps)
        if not (
            isinstance(n_steps.type, TensorType)
            and n_steps.type.ndim == 0
            and n_steps.type.dtype.startswith(("int", "uint"))
        ):
            raise TypeError(f"{self.name}: n_steps must be a 0-d integer, got {n_steps!r}")
        if len(init) != self.n_states or len(consts) != self.n_consts:
            raise TypeError(
                f"{self.name}: takes {self.n_states} initial states and {self.n_consts} constants, "
                f"got {len(init)} and {len(consts)}"
            )
        types = self.body.input_types
        for k, (v, out_t) in enumerate(zip(init, self.body.output_types)):
            state_t = types[1 + k]
            if not state_t.is_super(v.type):
                raise TypeError(f"{self.name}: state {k} is declared {state_t} but its initial value is {v!r}")
            if not state_t.is_super(out_t):
                raise TypeError(f"{self.name}: state {k} is {state_t} but the step returns {out_t} for it")
        for j, c in enumerate(consts):
            if not types[1 + self.n_states + j].is_super(c.type):
                raise TypeError(f"{self.name}: constant {j} is declared {types[1 + self.n_states + j]}, got {c!r}")
        return n_steps

    def _make(self, n_steps, init, consts):
        n_steps = self._check_inputs(n_steps, init, consts)
        state_types = self.body.input_types[1 : 1 + self.n_states]
        n = int(n_steps.data) if isinstance(n_steps, Constant) else None
        traces = []
        for k in self._traced():
            t = state_types[k]
            if not isinstance(t, TensorType):
                raise TypeError(f"{self.name}: state {k} of type {t} cannot be traced (only tensors can)")
            traces.append(TensorType(t.dtype, (n,) + t.shape))
        return Apply(self, [n_steps, *init, *consts], list(state_types) + traces)

    def infer_shape(self, inputs, input_shapes):
        n = to_static(inputs[0])
        n = n if n is not None else inputs[0]
        states = [input_shapes[1 + k] for k in range(self.n_states)]
        return states + [(n,) + tuple(states[k]) for k in self._traced()]

    def perform(self, node, inputs):
        n = int(inputs[0])
        states = list(inputs[1 : 1 + self.n_states])
        consts = list(inputs[1 + self.n_states :])
        traced = self._traced()
        until = getattr(self, "until", None)
        traces = [
            np.empty((n,) + np.shape(states[k]), dtype=node.outputs[self.n_states + m].type.dtype)
            for m, k in enumerate(traced)
        ]
        for i in range(n):
            if until is not None and not states[until]:
                break
            new = self.body.evaluate([np.asarray(i, dtype=np.int64), *states, *consts])
            for k, (old, nv) in enumerate(zip(states, new)):
                check_state_shape(self.name, k, np.shape(old), np.shape(nv))
            states = new
            for m, k in enumerate(traced):
                traces[m][i] = states[k]
        return states + traces


def check_state_shape(name, k, old, new):
    """A state keeps its shape across steps (types allow unknown sizes; the values may not change them)."""
    if tuple(old) != tuple(new):
        raise ValueError(f"{name}: state {k} has shape {tuple(old)} before a step and {tuple(new)} after it")


@dataclass(frozen=True)
class Scan(LoopOp):
    """Outputs: every state's last value, then every tensor state's trace (values after each step, stacked first)."""

    name: str = field(default="scan", compare=False)

    def _traced(self):
        """Every tensor state (a state of another type, an RNG state, has no trace)."""
        types = self.body.input_types[1 : 1 + self.n_states]
        return tuple(k for k, t in enumerate(types) if isinstance(t, TensorType))

    def make_node(self, n_steps, *rest):
        return self._make(n_steps, rest[: self.n_states], rest[self.n_states :])

    def __str__(self):
        return f"Scan{{{self.name}, states={self.n_states}, consts={self.n_consts}}}"

    def L_op(self, inputs, outputs, output_grads):
        """A reverse scan over the stored traces.

        Stored for the backward pass: the trace of every state (a Scan's outputs),
        joined after the initial state into `all_k` of length n+1, so the state
        before step t is `all_k[t]`. The backward scan runs t = n-1 .. 0 with
        states: the gradient of each float state, the accumulated gradient of
        each float constant, and, for a constant read only as `c[i]` (a
        sequence), the gradient of that step's slice, whose trace reversed is
        the sequence's gradient (no dense accumulator per step). Each step
        re-runs the body on `all_k[t]` and takes its vector-Jacobian product.
        Integer states and constants get no gradient.
        """
        ns = self.n_states
        n, init, consts = inputs[0], inputs[1 : 1 + ns], inputs[1 + ns :]
        traces = outputs[ns:]
        g_final, g_trace = output_grads[:ns], output_grads[ns:]
        for k, v in enumerate(init):
            if not isinstance(v.type, TensorType):
                raise NonDifferentiable(f"{self.name}: state {k} of type {v.type} has no gradient through the scan")
        fs = [k for k in range(ns) if _is_float_tensor(init[k])]
        reads = sequence_reads(self.body, ns)
        fc = [j for j, c in enumerate(consts) if _is_float_tensor(c) and j not in reads]
        fq = [j for j, c in enumerate(consts) if _is_float_tensor(c) and j in reads]
        all_states = [concatenate([expand_dims(init[k], 0), traces[k]], axis=0) for k in range(ns)]
        used_trace = [m for m, k in enumerate(fs) if not _is_zeros(g_trace[k])]

        i = tensor("i", (), "int64")
        g_s = [init[k].type.make_variable(name=f"g_state{k}") for k in fs]
        acc = [consts[j].type.make_variable(name=f"g_const{j}") for j in fc]
        g_sl = [tensor(f"g_slice{j}", consts[j].type.shape[1:], consts[j].type.dtype) for j in fq]
        n_in = tensor("n", (), n.type.dtype)
        all_in = [v.type.make_variable() for v in all_states]
        gt_in = [g_trace[fs[m]].type.make_variable() for m in used_trace]
        c_in = [c.type.make_variable() for c in consts]
        t = (n_in - 1 - i).astype("int64")
        prev = [getitem(a, t) for a in all_in]
        slices = {j: getitem(c_in[j], t) for j in fq}
        replace = dict(zip(self.body.inputs, [t, *prev, *c_in]))
        for j in fq:
            for read in reads[j]:
                replace[read] = slices[j]
        _, new, _ = clone_graph(self.body.outputs, self.body.inputs, replace=replace)
        cot = list(g_s)
        for pos, m in enumerate(used_trace):
            cot[m] = cot[m] + getitem(gt_in[pos], t)
        wrt = [prev[k] for k in fs] + [c_in[j] for j in fc] + [slices[j] for j in fq]
        grads = vjp([new[k] for k in fs], cot, wrt, disconnected="zero")
        nf, nc = len(fs), len(fc)
        new_acc = [a + g for a, g in zip(acc, grads[nf : nf + nc])]
        finals, back_traces = scan_from_graph(
            i,
            g_s + acc + g_sl,
            [n_in, *all_in, *gt_in, *c_in],
            grads[:nf] + new_acc + grads[nf + nc :],
            n,
            [g_final[k] for k in fs]
            + [zeros_like(consts[j]) for j in fc]
            + [zeros(shape_of(consts[j])[1:], consts[j].type.dtype) for j in fq],
            [n, *all_states, *[g_trace[fs[m]] for m in used_trace], *consts],
            name=f"grad of {self.name}",
        )
        result = [None] * len(inputs)
        for pos, k in enumerate(fs):
            result[1 + k] = finals[pos]
        for pos, j in enumerate(fc):
            result[1 + ns + j] = finals[nf + pos]
        for pos, j in enumerate(fq):
            per_step = back_traces[nf + nc + pos]  # step t's slice gradient at position n-1-t
            whole = zeros_like(consts[j])
            result[1 + ns + j] = inc_subtensor(whole[:n], per_step[::-1])
        return result


def sequence_reads(body, n_states):
    """{constant position: its reads} for the constants the body reads only as `c[i]` (i the step number)."""
    index = body.inputs[0]
    full = ("slice", None, None, None)
    users = {id(p): (j, []) for j, p in enumerate(body.inputs[1 + n_states :])}
    bad = set()
    for node in body.nodes():
        for pos, v in enumerate(node.inputs):
            found = users.get(id(v))
            if found is None:
                continue
            op = node.op
            if (
                pos == 0
                and isinstance(op, Subtensor)
                and len(node.inputs) == 2
                and node.inputs[1] is index
                and op.index[0] == "?"
                and all(p == full for p in op.index[1:])
            ):
                found[1].append(node.outputs[0])
            else:
                bad.add(found[0])
    bad.update(j for j, p in enumerate(body.inputs[1 + n_states :]) if any(o is p for o in body.outputs))
    return {j: reads for j, reads in users.values() if reads and j not in bad}


def _is_zeros(g) -> bool:
    """A gradient known to be zero (what `vjp` passes for an output nobody differentiates)."""
    if isinstance(g, Constant):
        return not np.any(g.data)
    node = g.owner
    return (
        node is not None
        and isinstance(node.op, Alloc)
        and isinstance(node.inputs[0], Constant)
        and not np.any(node.inputs[0].data)
    )


@dataclass(frozen=True)
class Loop(LoopOp):
    """Outputs: every state's last value, then the traces of the states in `traced`.

    `until=k`: state k is a boolean checked before each step; the loop stops when it is False.
    """

    traced: tuple = ()
    until: int | None = None

    def _traced(self):
        return tuple(self.traced)

    def make_node(self, n_steps, *rest):
        node = self._make(n_steps, rest[: self.n_states], rest[self.n_states :])
        if self.until is not None:
            t = node.inputs[1 + self.until].type
            if not (isinstance(t, TensorType) and t.ndim == 0 and t.dtype == "bool"):
                raise TypeError(f"{self.name}: the while condition (state {self.until}) must be a 0-d bool, got {t}")
        return node

    def __str__(self):
        kind = "while" if self.until is not None else "loop"
        return (
            f"Loop{{{self.name}, {kind}, states={self.n_states}, consts={self.n_consts}, traced={list(self.traced)}}}"
        )

    def L_op(self, inputs, outputs, output_grads):
        if self.until is not None:
            raise NonDifferentiable(
                f"{self.name}: gradients through a while loop are not supported (the number of steps depends on "
                "the values); write it as a scan with a fixed number of steps to differentiate it"
            )
        raise NonDifferentiable(f"{self.name}: a low-level Loop has no gradient; differentiate the Scan it came from")


def scan_from_graph(index, states, consts, new_states, n_steps, init, const_values, name="scan"):
    """Apply a Scan whose body maps placeholders `(index, *states, *consts)` to `new_states`.

    Outer values the body reads beside its placeholders become extra constants
    (found by `free_inputs`). Returns `(finals, traces)`, traces[k] None for a non-tensor state.
    """
    placeholders = [index, *states, *consts]
    new_states = [as_tensor(v) if not hasattr(v, "type") else v for v in new_states]
    for k, (p, v) in enumerate(zip(states, new_states)):
        if not p.type.is_super(v.type):
            raise TypeError(f"{name}: state {k} is {p.type} before a step but {v.type} after it")
    free = free_inputs(new_states, placeholders)
    body = InnerGraph(placeholders + free, new_states)
    op = Scan(body, len(states), name=name)
    outs = op.make_node(n_steps, *init, *const_values, *free).outputs
    traces = [None] * len(states)
    for m, k in enumerate(op._traced()):
        traces[k] = outs[len(states) + m]
    return outs[: len(states)], traces


def loop_from_graph(index, states, consts, new_states, n_steps, init, const_values, until=None, traced=(), name="loop"):
    """Apply a Loop built like `scan_from_graph`; `until` and `traced` as `Loop`'s. Returns the last states, then the traces."""
    placeholders = [index, *states, *consts]
    for k, (p, v) in enumerate(zip(states, new_states)):
        if not p.type.is_super(v.type):
            raise TypeError(f"{name}: state {k} is {p.type} before a step but {v.type} after it")
    free = free_inputs(new_states, placeholders)
    body = InnerGraph(placeholders + free, new_states)
    return (
        Loop(body, len(states), traced=tuple(traced), until=until, name=name)
        .make_node(n_steps, *init, *const_values, *free)
        .outputs
    )


@vectorize_node.register(LoopOp)
def _vectorize_loop(op, node, inputs, batched, nb):
    """A loop over batched inputs is one loop whose body is the vectorized body (no loop per batch element).

    Each state that the batch reaches (given batched, or computed from batched
    values in the body, found by iterating to a fixed point) carries the batch
    axes first. A constant the body reads only as `c[i]` (a sequence) keeps its
    step axis first, `(steps, *batch, ...)`, so every step reads one
    contiguous slice and the gradient still sees a sequence. Traces come out
    `(*batch, steps, ...)`. A batched step count runs the most steps any
    element takes, each element's states frozen after its own count (so the
    last states, and their gradients, are one loop too); traces of different
    lengths per element are a Blockwise (a ShapeError unless the counts agree).
    A batched while condition runs while any element goes on, each element's
    states frozen once its own condition fails. A batched value of another
    type (an RNG state): Blockwise.
    """
    shape = batch_shape(inputs, batched, nb)
    if batched[0]:
        masked = _masked_by_count(op, inputs[0].type.dtype)
        if masked is not None:
            n_max = reduce_max(concatenate([inputs[0].flatten(), as_tensor(np.zeros(1, inputs[0].type.dtype))]))
            out = _batched_loop(masked, [n_max, *inputs[1:], inputs[0]], [False, *batched[1:], True], nb, shape, None)
            if out is not None:
                traces = blockwise_fallback(op, node, inputs, batched, nb)[op.n_states :]  # dead unless read
                return out[: op.n_states] + traces
    out = _batched_loop(op, inputs, batched, nb, shape, None)
    return out if out is not None else blockwise_fallback(op, node, inputs, batched, nb)


def _masked_by_count(op, dtype):
    """`op` with one more constant, the element's own step count `m`: a step `i >= m` leaves every state
    as it is (run `m` steps or more, the last states are those after `m`). None with a non-tensor state."""
    body, ns = op.body, op.n_states
    if not all(isinstance(t, TensorType) for t in body.input_types[1 : 1 + ns]):
        return None
    own = tensor("own_steps", (), dtype)
    i, states = body.inputs[0], body.inputs[1 : 1 + ns]
    runs = lt(i, own)
    outs = [where(runs, o, s) for o, s in zip(body.outputs[:ns], states)]
    return dataclasses.replace(op, body=InnerGraph([*body.inputs, own], outs))


def loop_draws_over_batch(node, inputs, batch):
    """A loop whose body draws, with fresh numbers for every batch element at every step (as
    `core.random.draw_over_batch` gives a draw outside loops): the batch sizes `batch` enter the body
    as constants, and each draw in it gets them as leading axes. `inputs` are the node's new inputs
    (some with leading batch axes); None for a node that is not such a loop (or cannot be batched so).
    """
    op = node.op
    if not isinstance(op, LoopOp) or not any(isinstance(n.op, (RandomDraw, LoopOp)) for n in op.body.nodes()):
        return None
    nb = len(batch)
    extra = [v.type.ndim - o.type.ndim for v, o in zip(inputs, node.inputs)]
    padded = [pad(v, nb - k) if 0 < k < nb else v for v, k in zip(inputs, extra)]
    return _batched_loop(op, padded, [k > 0 for k in extra], nb, tuple(batch), batch)


def _batched_loop(op, inputs, batched, nb, shape, draws):
    """The outputs of `op` over `inputs` (batched ones with `nb` leading axes) as one loop, or None where it
    cannot be one. `shape`: the batch sizes; `draws`: the batch sizes every draw in the body gets, or None."""
    ns = op.n_states
    n, init, consts = inputs[0], list(inputs[1 : 1 + ns]), list(inputs[1 + ns :])
    kinds_ok = all(isinstance(v.type, TensorType) for v, b in zip(inputs, batched) if b)
    if batched[0] or not kinds_ok:
        return None
    until = getattr(op, "until", None)
    body = op.body
    reads = sequence_reads(body, ns)
    sizes = [tensor(f"batch{k}", (), "int64") for k in range(nb)] if draws is not None else []
    rule = None
    if draws is not None:  # every draw of the body (and of loops nested in it) gets the batch

        def rule(inner, ins):
            found = draw_over_batch(inner, ins, sizes)
            return found if found is not None else loop_draws_over_batch(inner, ins, sizes)

    state_batched = [isinstance(v.type, TensorType) and b for v, b in zip(init, batched[1 : 1 + ns])]
    while True:
        if until is not None and state_batched[until] and not all(state_batched):  # elements stop apart:
            if not all(
                isinstance(t, TensorType) for t in body.input_types[1 : 1 + ns]
            ):  # each state frozen per element
                return None
            state_batched = [True] * ns
        new_init = [
            full_batch(v if b else pad(v, nb), shape, nb) if sb else v
            for v, b, sb in zip(init, batched[1 : 1 + ns], state_batched)
        ]
        places, replace, outer_consts = [body.inputs[0]], {}, []
        for k, (p, v) in enumerate(zip(body.inputs[1 : 1 + ns], new_init)):
            if state_batched[k]:
                p_new = TensorType(v.type.dtype, v.type.shape).make_variable(name=p.name)
                replace[p] = p_new
                p = p_new
            places.append(p)
        for j, (p, c) in enumerate(zip(body.inputs[1 + ns :], consts)):
            if not batched[1 + ns + j]:
                places.append(p)
            elif j in reads:  # a sequence: steps first, then the batch
                c = DimShuffle(c.type.ndim, (nb,) + tuple(range(nb)) + tuple(range(nb + 1, c.type.ndim)))(c)
                p_new = TensorType(c.type.dtype, c.type.shape).make_variable(name=p.name)
                for read in reads[j]:
                    replace[read] = getitem(p_new, body.inputs[0])
                places.append(p_new)
            else:
                p_new = TensorType(c.type.dtype, c.type.shape).make_variable(name=p.name)
                replace[p] = p_new
                places.append(p_new)
            outer_consts.append(c)
        outs = vectorize_graph(list(body.outputs), replace, node_rule=rule) if replace or rule else list(body.outputs)
        reached = [
            k
            for k, (o, b) in enumerate(zip(outs[:ns], body.outputs[:ns]))
            if o.type.ndim > b.type.ndim and not state_batched[k]
        ]
        if not reached:
            break
        for k in reached:
            state_batched[k] = True
    for k in range(ns):
        if (
            state_batched[k] and outs[k].type.shape != places[1 + k].type.shape
        ):  # unbatched, or broadcastable batch axes
            o = outs[k] if outs[k].type.ndim > body.outputs[k].type.ndim else pad(outs[k], nb)
            outs[k] = broadcast_to(o, static_or_symbolic(places[1 + k]))
    extra_init = []
    if until is not None and state_batched[until]:  # one more state, "any element goes on", is the condition
        go = places[1 + until]
        outs = [
            where(DimShuffle(nb, tuple(range(nb)) + ("x",) * (p.type.ndim - nb))(go), o, p)
            for o, p in zip(outs, places[1 : 1 + ns])
        ]
        outs.append(reduce_any(outs[until]))
        places.insert(1 + ns, tensor("any_goes", (), "bool"))
        extra_init.append(reduce_any(new_init[until]))
        new_op = Loop(InnerGraph(places + sizes, outs), ns + 1, name=op.name, traced=op.traced, until=ns)
    else:
        new_op = dataclasses.replace(op, body=InnerGraph(places + sizes, outs))
    results = new_op.make_node(
        n, *new_init, *extra_init, *outer_consts, *[shape_entry_as_variable(b) for b in (draws or [])]
    ).outputs
    results = results[:ns] + results[ns + len(extra_init) :]
    traces = []
    for m, k in enumerate(new_op._traced()):
        t = results[ns + m]
        if state_batched[k]:  # (steps, *batch, ...) -> (*batch, steps, ...)
            t = DimShuffle(t.type.ndim, tuple(range(1, nb + 1)) + (0,) + tuple(range(nb + 1, t.type.ndim)))(t)
        traces.append(t)
    return list(results[:ns]) + traces
