"""Rewrites of control-flow ops: Scan -> Loop, loop-invariant code motion, and rewriting inner graphs.

- `scan_to_loop` (canonicalize): a Scan becomes a Loop that stores only the
  traces some client reads; a read of `trace[-1]` becomes the last state
  (guarded by a run-time check that a step ran, unless n_steps is a constant >= 1:
  on an empty trace `trace[-1]` is an IndexError, and a rewrite never removes a
  failure).
- `loop_dead_inputs` (canonicalize): constants a body never reads and states
  nobody reads are dropped (before `scan_to_loop` decides which traces to keep).
- `loop_constant_states` (canonicalize): a state the body returns unchanged
  becomes a constant (its last value is its initial value).
- `loop_invariant_code_motion` (canonicalize): body nodes that read only the
  loop's constants move out of the loop and become constants. The rule (seed
  001): a node that may raise (an Assert, indexing, reshapes, linear algebra:
  anything but elementwise math, dimshuffles, shapes and sums/products) moves
  only when the loop provably runs at least one step (n_steps a constant >= 1
  and no while condition); otherwise hoisting it could raise where the loop,
  running zero times, would not. Ops that cannot raise always move.
- `inline_op_from_graph` (canonicalize): an OpFromGraph becomes its graph
  unless it was made with `inline=False`.
- `loop_forward_accumulation` (canonicalize): a loop whose states only
  accumulate (`x + term`, the term reading no state) and which reads its step
  only as `n - 1 - i` (a backward pass over sequences) runs forward, reading
  `i`: it sums the same terms in the other order (a float sum may differ in the
  last bits, as any reordered sum). It then reads the data in the order its
  forward loop does, so fused with it (below) both read each position once.
- `loop_inline_constants` (canonicalize): a loop constant whose outer value
  is a 0-d literal goes into the body as that literal, where the body's rewrites
  fold it (a gradient's unit seed `1.0 * x` is `x`).
- `loop_hoist_accumulated_constants` (canonicalize): in a 0-d state that only
  accumulates (`x + term`, no while condition, no trace, and nothing else in the
  body reads `x`: its values inside the loop change), the parts of the term
  fixed for the loop (`- log(sigma)` in a log density) leave it: the loop sums
  the rest and `n_steps * fixed` is added once after it (nothing when no step
  runs; a reassociated float sum, as above). A part that may raise leaves only
  a loop that surely runs (the LICM rule below). A state whose whole term is
  fixed is then unchanged by the step and stops being a state.
- `loop_fusion` (phase "fusion"): loops over the same `n_steps` (no while
  condition) where neither reads the other's results become one loop whose
  body runs both bodies on the same step number: a value loop and its
  gradient loop make one pass over the data (each body keeps its own
  indexing, a reverse scan still reads `n-1-i`, so every value is the same
  bit for bit). Constants both read become one.
- `inner_graph_rewrite` (phase "inner", after fusion): every inner graph gets
  the whole phase list with the same spec (canonicalize, stabilize, fusion:
  a loop body is fused like any graph), once per distinct inner graph.
"""

from __future__ import annotations

import dataclasses

from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.extra import assert_op
from dimgraph.core.fgraph import FunctionGraph
from dimgraph.core.graph import Constant, ancestors, clone_graph
from dimgraph.core.ifelse import IfElse
from dimgraph.core.inner import InnerGraph
from dimgraph.core.loop import Loop, Scan
from dimgraph.core.math import ge
from dimgraph.core.opfromgraph import OpFromGraph
from dimgraph.core.reduce import CAReduce
from dimgraph.core.rewriting.engine import GraphRewriter, RewriteSpec, node_rewriter
from dimgraph.core.rewriting.pattern import is_scalar_op
from dimgraph.core.shape import Shape, ShapeI
from dimgraph.core.subtensor import Subtensor

_FULL = ("slice", None, None, None)


def _reads_last(client) -> bool:
    """`client` is `trace[-1]` (all other axes whole)."""
    if client == "output" or not isinstance(client.op, Subtensor) or len(client.inputs) != 1:
        return False
    index = client.op.index
    return index[0] == -1 and all(part == _FULL for part in index[1:])


def _runs_a_step(op, node) -> bool:
    n = node.inputs[0]
    return getattr(op, "until", None) is None and isinstance(n, Constant) and int(n.data) >= 1


@node_rewriter([Scan], tags=("canonicalize", "control"))
def scan_to_loop(fgraph, node):
    """Scan -> Loop storing only the traces read; trace[-1] -> the last state."""
    op, ns = node.op, node.op.n_states
    traced, last_reads = [], []
    trace_of = {k: node.outputs[ns + m] for m, k in enumerate(op._traced())}
    for k, trace in trace_of.items():
        clients = [c for c, _ in fgraph.clients.get(trace, {})]
        if not clients:
            continue
        if all(_reads_last(c) for c in clients):
            last_reads.append((k, clients))
        else:
            traced.append(k)
    new = Loop(op.body, ns, traced=tuple(traced), name=op.name).make_node(*node.inputs).outputs
    repl = {node.outputs[k]: new[k] for k in range(ns)}
    for m, k in enumerate(traced):
        repl[trace_of[k]] = new[ns + m]
    for k, clients in last_reads:
        last = new[k]
        if not _runs_a_step(op, node):
            last = assert_op(last, ge(node.inputs[0], 1), msg=f"{op.name}: trace[-1] of a scan that ran no step")
        for c in clients:
            repl[c.outputs[0]] = last
    return repl


def _reads(graph, var_ids_of_outputs):
    """ids of the inner inputs that the given body outputs depend on."""
    inputs = {id(v) for v in graph.inputs}
    outs = [graph.outputs[k] for k in var_ids_of_outputs]
    return {id(v) for v in ancestors(outs, blockers=graph.inputs) if id(v) in inputs}


@node_rewriter([Scan, Loop], tags=("canonicalize", "control"))
def loop_dead_inputs(fgraph, node):
    """Drop loop constants the body never reads, states nobody reads (last value and trace unused, no
    other state reading them) and a Loop's unread traces: a backward scan then stops carrying (and its
    forward scan stops storing) the traces its body does not need."""
    op, body, ns = node.op, node.op.body, node.op.n_states
    traced = op._traced()
    trace_of = {k: node.outputs[ns + m] for m, k in enumerate(traced)}
    until = getattr(op, "until", None)

    def used(v):
        return bool(fgraph.clients.get(v))

    keep = set(range(ns))
    while True:
        read = _reads(body, sorted(keep))
        dead = {
            k
            for k in keep
            if k != until
            and not used(node.outputs[k])
            and not (k in trace_of and used(trace_of[k]))
            and not any(id(body.inputs[1 + k]) in _reads(body, [j]) for j in keep if j != k)
        }
        if not dead:
            break
        keep -= dead
    keep = sorted(keep)
    read = _reads(body, keep)
    consts = [j for j, v in enumerate(body.inputs[1 + ns :]) if id(v) in read]
    unread_traces = isinstance(op, Loop) and any(not used(trace_of[k]) for k in op.traced)
    if (len(keep) == ns and len(consts) == op.n_consts and not unread_traces) or not keep:
        return None
    new_body = InnerGraph(
        [body.inputs[0]] + [body.inputs[1 + k] for k in keep] + [body.inputs[1 + ns + j] for j in consts],
        [body.outputs[k] for k in keep],
    )
    changes = dict(body=new_body, n_states=len(keep))
    if isinstance(op, Loop):
        changes["traced"] = tuple(keep.index(k) for k in op.traced if k in keep and used(trace_of[k]))
        changes["until"] = None if until is None else keep.index(until)
    new_op = dataclasses.replace(op, **changes)
    new = new_op.make_node(
        node.inputs[0], *[node.inputs[1 + k] for k in keep], *[node.inputs[1 + ns + j] for j in consts]
    ).outputs
    repl = {node.outputs[k]: new[pos] for pos, k in enumerate(keep)}
    new_trace = {k: new[len(keep) + m] for m, k in enumerate(keep[p] for p in new_op._traced())}
    for k, tr in trace_of.items():
        if k in new_trace:
            repl[tr] = new_trace[k]
    return repl


@node_rewriter([Loop], tags=("canonicalize", "control"))
def loop_constant_states(fgraph, node):
    """A state the body returns unchanged -> a constant of the loop; its last value is its initial value.

    (The gradient of an accumulator is one: LICM can then hoist what it multiplies.)"""
    op, body, ns = node.op, node.op.body, node.op.n_states
    fixed = [k for k in range(ns) if body.outputs[k] is body.inputs[1 + k] and k not in op.traced and k != op.until]
    if not fixed or len(fixed) == ns:
        return None
    keep = [k for k in range(ns) if k not in fixed]
    ins = body.inputs
    new_body = InnerGraph(
        [ins[0]] + [ins[1 + k] for k in keep] + list(ins[1 + ns :]) + [ins[1 + k] for k in fixed],
        [body.outputs[k] for k in keep],
    )
    new_op = dataclasses.replace(
        op,
        body=new_body,
        n_states=len(keep),
        traced=tuple(keep.index(k) for k in op.traced),
        until=None if op.until is None else keep.index(op.until),
    )
    new = new_op.make_node(
        node.inputs[0],
        *[node.inputs[1 + k] for k in keep],
        *node.inputs[1 + ns :],
        *[node.inputs[1 + k] for k in fixed],
    ).outputs
    repl = {node.outputs[k]: new[pos] for pos, k in enumerate(keep)}
    repl.update({node.outputs[k]: node.inputs[1 + k] for k in fixed})
    repl.update({node.outputs[ns + m]: new[len(keep) + m] for m in range(len(op.traced))})
    return repl


def cannot_raise(node) -> bool:
    """Ops that never raise at run time, whatever their inputs: the ones LICM may hoist out of any loop."""
    op = node.op
    if isinstance(op, (Elemwise, DimShuffle, Shape, ShapeI)):
        return True
    return isinstance(op, CAReduce) and op.scalar_op in ("add", "mul", "and", "or")


@node_rewriter([Loop], tags=("canonicalize", "control"))
def loop_invariant_code_motion(fgraph, node):
    """Body nodes reading only the loop's constants -> computed once before the loop (see the module rule)."""
    op, body, ns = node.op, node.op.body, node.op.n_states
    runs = _runs_a_step(op, node)
    invariant = {id(v) for v in body.inputs[1 + ns :]}
    hoisted = set()
    for inner in body.nodes():
        if all(isinstance(i, Constant) for i in inner.inputs):
            invariant.update(id(o) for o in inner.outputs)  # folded by the rewrites; copied out with what reads it
            continue
        if all(id(i) in invariant or isinstance(i, Constant) for i in inner.inputs) and (runs or cannot_raise(inner)):
            hoisted.add(inner)
            invariant.update(id(o) for o in inner.outputs)
    if not hoisted:
        return None
    frontier, seen = [], set()

    def cut(v):
        if v.owner in hoisted and id(v) not in seen:
            seen.add(id(v))
            frontier.append(v)

    for inner in body.nodes():
        if inner not in hoisted:
            for i in inner.inputs:
                cut(i)
    for o in body.outputs:
        cut(o)
    consts = body.inputs[1 + ns :]
    _, outer, _ = clone_graph(frontier, consts, replace=dict(zip(consts, node.inputs[1 + ns :])))
    new_body = InnerGraph(body.inputs + frontier, body.outputs)
    new_op = dataclasses.replace(op, body=new_body)
    return new_op.make_node(*node.inputs, *outer).outputs


@node_rewriter([OpFromGraph], tags=("canonicalize", "control"))
def inline_op_from_graph(fgraph, node):
    """OpFromGraph(x) -> its graph on x, unless made with inline=False."""
    return node.op.graph.apply(node.inputs) if node.op.inline else None


def inner_graphs(op):
    """{field name: InnerGraph} of an op that carries inner graphs (empty for the others)."""
    if isinstance(op, (Loop, Scan)):
        return {"body": op.body}
    if isinstance(op, IfElse):
        return {"then_graph": op.then_graph, "else_graph": op.else_graph}
    fields = getattr(op, "inner_graph_fields", ())
    return {f: getattr(op, f) for f in fields}


def rewrite_inner(graph, ctx):
    """`graph` rewritten by the whole phase list under `ctx`'s spec (memoized per distinct graph)."""
    from dimgraph.core.rewriting import rewrite_graph  # cycle: the pipeline's phases include this module's

    memo = ctx.__dict__.setdefault("inner_memo", {})
    found = memo.get(graph)
    if found is None:
        fg = FunctionGraph(graph.inputs, graph.outputs, clone=True)
        spec = RewriteSpec(ctx.spec.include, ctx.spec.exclude, False)
        rewrite_graph(fg, spec, backend=getattr(ctx, "backend", None))
        for name, n in fg.rewrite_trace.counts.items():
            ctx.trace.counts[name] += n
        found = memo[graph] = InnerGraph(fg.inputs, fg.outputs)
    return found


def rewrite_inner_graphs(fgraph, ctx, rewriter):
    """Each op's inner graphs through the phase list (the body of a loop is fused like any graph)."""
    for node in fgraph.toposort():
        graphs = inner_graphs(node.op)
        if not graphs or node not in fgraph.nodes:
            continue
        new = {name: rewrite_inner(g, ctx) for name, g in graphs.items()}
        if all(new[name] == g for name, g in graphs.items()):
            continue
        new_node = dataclasses.replace(node.op, **new).make_node(*node.inputs)
        ctx.replace(rewriter, node, list(zip(node.outputs, new_node.outputs)))


def _is_add(node) -> bool:
    return node is not None and is_scalar_op(node, "add")


def _only_accumulates(body, ns) -> bool:
    """Every new state is its state unchanged or plus a term that reads no state (so step order only moves rounding)."""
    from dimgraph.core.graph import ancestors

    states = body.inputs[1 : 1 + ns]
    state_ids = {id(v) for v in states}
    for k, out in enumerate(body.outputs):
        if out is states[k]:
            continue
        node = out.owner
        if not _is_add(node) or len(node.inputs) != 2 or not any(i is states[k] for i in node.inputs):
            return False
        term = node.inputs[1] if node.inputs[0] is states[k] else node.inputs[0]
        if any(id(v) in state_ids for v in ancestors([term], blockers=body.inputs)):
            return False
    return True


def _is_last_step(var, n_steps) -> bool:
    """`var` is `n_steps - 1`."""
    node = var.owner
    return (
        node is not None
        and is_scalar_op(node, "sub")
        and node.inputs[0] is n_steps
        and isinstance(node.inputs[1], Constant)
        and int(node.inputs[1].data) == 1
    )


@node_rewriter([Loop], tags=("canonicalize", "control"))
def loop_forward_accumulation(fgraph, node):
    """An accumulating loop reading its step only as n-1-i -> the same loop reading i (see the module docstring)."""
    op, body, ns = node.op, node.op.body, node.op.n_states
    if op.until is not None or op.traced or not _only_accumulates(body, ns):
        return None
    index = body.inputs[0]
    last = {id(p) for p, v in zip(body.inputs[1 + ns :], node.inputs[1 + ns :]) if _is_last_step(v, node.inputs[0])}
    reversed_reads = []
    for inner in body.nodes():
        if any(i is index for i in inner.inputs):
            if not (
                is_scalar_op(inner, "sub")
                and inner.inputs[1] is index
                and id(inner.inputs[0]) in last
                and inner.outputs[0].type == index.type
            ):
                return None
            reversed_reads.append(inner.outputs[0])
    if not reversed_reads:
        return None
    _, outs, _ = clone_graph(body.outputs, [], replace={v: index for v in reversed_reads})
    new_body = InnerGraph(body.inputs, outs)
    return dataclasses.replace(op, body=new_body).make_node(*node.inputs).outputs


@node_rewriter([Loop], tags=("canonicalize", "control"))
def loop_inline_constants(fgraph, node):
    """Loop constants given as 0-d literals -> those literals inside the body."""
    op, body, ns = node.op, node.op.body, node.op.n_states
    consts = list(zip(body.inputs[1 + ns :], node.inputs[1 + ns :]))
    literal = {p: v for p, v in consts if isinstance(v, Constant) and v.type.ndim == 0 and p.type.is_super(v.type)}
    if not literal:
        return None
    _, outs, _ = clone_graph(body.outputs, [], replace=literal)
    kept = [(p, v) for p, v in consts if p not in literal]
    new_body = InnerGraph(body.inputs[: 1 + ns] + [p for p, _ in kept], outs)
    return dataclasses.replace(op, body=new_body).make_node(*node.inputs[: 1 + ns], *[v for _, v in kept]).outputs


def _signed_parts(term, sign=1):
    """`term` as [(sign, part)] over its tree of adds and subtractions."""
    owner = term.owner
    if owner is not None and len(owner.inputs) == 2 and owner.outputs[0].type == term.type:
        if is_scalar_op(owner, "add"):
            return _signed_parts(owner.inputs[0], sign) + _signed_parts(owner.inputs[1], sign)
        if is_scalar_op(owner, "sub"):
            return _signed_parts(owner.inputs[0], sign) + _signed_parts(owner.inputs[1], -sign)
    return [(sign, term)]


def _signed_sum(parts):
    total = None
    for sign, v in parts:
        if total is None:
            total = v if sign > 0 else -v
        else:
            total = total + v if sign > 0 else total - v
    return total


def _readers(body):
    """{id of a body value: ids of the body nodes reading it}; a value that is itself a body output is read by
    "output" too (a state passed on unchanged as another state)."""
    found = {}
    for inner in body.nodes():
        for i in inner.inputs:
            found.setdefault(id(i), set()).add(id(inner))
    for o in body.outputs:
        found.setdefault(id(o), set()).add("output")
    return found


@node_rewriter([Loop], tags=("canonicalize", "control"))
def loop_hoist_accumulated_constants(fgraph, node):
    """x + (f(i) - c) accumulated over n steps -> the sum of f(i), plus n * (-c) once (see the module docstring)."""
    from dimgraph.core.graph import ancestors, toposort
    from dimgraph.core.math import cast, gt, where
    from dimgraph.core.shape_ops import zeros

    op, body, ns = node.op, node.op.body, node.op.n_states
    if op.until is not None:
        return None
    runs = _runs_a_step(op, node)
    varying = {id(v) for v in body.inputs[: 1 + ns]}
    outputs, hoisted = list(body.outputs), {}
    readers = _readers(body)
    for k in range(ns):
        out, state = body.outputs[k], body.inputs[1 + k]
        if (
            k in op.traced
            or state.type.ndim != 0
            or not _is_add(out.owner)
            or len(out.owner.inputs) != 2
            or not any(i is state for i in out.owner.inputs)
        ):
            continue
        if readers.get(id(state), set()) != {
            id(out.owner)
        }:  # read elsewhere in the body: its values there would change
            continue
        term = out.owner.inputs[1] if out.owner.inputs[0] is state else out.owner.inputs[0]
        parts = _signed_parts(term)
        fixed = [(sg, v) for sg, v in parts if not any(id(a) in varying for a in ancestors([v], blockers=body.inputs))]
        if not runs:  # the LICM rule: nothing that may raise leaves a loop that may run no step
            fixed = [(sg, v) for sg, v in fixed if all(cannot_raise(n) for n in toposort([v], blockers=body.inputs))]
        if not fixed:
            continue
        rest = [(sg, v) for sg, v in parts if all(v is not w for _, w in fixed)]
        outputs[k] = state if not rest else state + _signed_sum(rest)
        hoisted[k] = _signed_sum(fixed)
    if not hoisted:
        return None
    new = dataclasses.replace(op, body=InnerGraph(body.inputs, outputs)).make_node(*node.inputs).outputs
    consts = body.inputs[1 + ns :]
    keys = sorted(hoisted)
    _, outer, _ = clone_graph([hoisted[k] for k in keys], consts, replace=dict(zip(consts, node.inputs[1 + ns :])))
    repl = dict(zip(node.outputs, new))
    n = node.inputs[0]
    for k, per_step in zip(keys, outer):
        dtype = node.outputs[k].type.dtype
        total = cast(n, dtype) * per_step
        if not runs:  # no step: nothing added (0 * inf would be nan)
            total = where(gt(n, 0), total, zeros((), dtype))
        repl[node.outputs[k]] = cast(new[k] + total, dtype)
    return repl


def _fuse_two(a, b):
    """One Loop node running loops `a` and `b` (same n_steps, independent) step by step, and the replacements."""
    from dimgraph.core.basic import tensor

    ops = (a.op, b.op)
    index = tensor("i", (), "int64")
    states = [[v.type.make_variable() for v in op.body.inputs[1 : 1 + op.n_states]] for op in ops]
    holder, consts, const_values = {}, [], []
    per_loop_consts = []
    for node in (a, b):
        mine = []
        for p, v in zip(node.op.body.inputs[1 + node.op.n_states :], node.inputs[1 + node.op.n_states :]):
            if v not in holder:
                holder[v] = p.type.make_variable()
                consts.append(holder[v])
                const_values.append(v)
            mine.append(holder[v])
        per_loop_consts.append(mine)
    outs = []
    for op, st, cs in zip(ops, states, per_loop_consts):
        outs += op.body.apply([index, *st, *cs])
    na = a.op.n_states
    body = InnerGraph([index, *states[0], *states[1], *consts], outs)
    op = Loop(
        body,
        na + b.op.n_states,
        traced=a.op.traced + tuple(na + k for k in b.op.traced),
        name=f"{a.op.name} + {b.op.name}",
    )
    new = op.make_node(a.inputs[0], *a.inputs[1 : 1 + na], *b.inputs[1 : 1 + b.op.n_states], *const_values).outputs
    n_finals, nta = op.n_states, len(a.op.traced)
    pairs = [(a.outputs[k], new[k]) for k in range(na)] + [(a.outputs[na + m], new[n_finals + m]) for m in range(nta)]
    nb = b.op.n_states
    pairs += [(b.outputs[k], new[na + k]) for k in range(nb)]
    pairs += [(b.outputs[nb + m], new[n_finals + nta + m]) for m in range(len(b.op.traced))]
    return new[0].owner, pairs


def loop_fusion(fgraph, ctx, rewriter):
    """Loops with the same n_steps, neither reading the other -> one loop (see the module docstring)."""
    from dimgraph.core.graph import ancestors

    groups = {}
    for node in fgraph.toposort():
        if isinstance(node.op, Loop) and node.op.until is None:
            groups.setdefault(node.inputs[0], []).append(node)
    for loops in groups.values():
        current = loops[0]
        for node in loops[1:]:
            upstream = {id(v.owner) for v in ancestors(node.inputs) if v.owner is not None}
            if id(current) in upstream:
                current = node
                continue
            fused, pairs = _fuse_two(current, node)
            ctx.replace(rewriter, node, pairs)
            current = fused


CONTROL_CANONICALIZE = [
    loop_dead_inputs,
    scan_to_loop,
    loop_constant_states,
    loop_invariant_code_motion,
    loop_forward_accumulation,
    loop_inline_constants,
    loop_hoist_accumulated_constants,
    inline_op_from_graph,
]
LOOP_FUSION = GraphRewriter("loop_fusion", loop_fusion, tags=("fusion", "control"))
INNER = GraphRewriter("inner_graph_rewrite", rewrite_inner_graphs, tags=("inner", "control"))
