"""MLIR emitters of control flow: `Loop` as `scf.for` over tensor states, a while loop (`until`) as
`scf.while`, and `IfElse` as `scf.if`.

The states, the traces (a tensor each, a row written per step with
`tensor.insert_slice`) are the loop's iter_args; the body is the inner graph printed by the same registry, reading
the loop's constants from the enclosing region. A while loop also carries its
step number; it stops when the condition state is false or `n_steps` is reached.
"""

from __future__ import annotations

from dimgraph.backends.mlir.emitter import Value, tensor_type
from dimgraph.backends.mlir.program import emit_graph
from dimgraph.backends.mlir.registry import MlirUnsupported, mlir_impl
from dimgraph.core.ifelse import IfElse
from dimgraph.core.loop import Loop


@mlir_impl.register(Loop)
def _loop(op, node, e, ins):
    if op.until is not None and op.traced:
        raise MlirUnsupported(
            f"mlir backend: the while loop {op} traces states; only untraced while loops are supported"
        )
    n_states = op.n_states
    n_steps, init, consts = ins[0], ins[1 : 1 + n_states], ins[1 + n_states :]
    body = op.body
    state_types = body.input_types[1 : 1 + n_states]
    n = e.index_of(n_steps)
    n = e.imax(n, 0)
    # iter_args: the states (typed as the body declares them), then the traces
    inits, types, statics = [], [], []
    for v, t in zip(init, state_types):
        dims = tuple(int(s) if s is not None else d for s, d in zip(t.shape, v.dims))
        inits.append(e.cast(v, dims).name)
        types.append(tensor_type(t.shape, t.dtype))
        statics.append(tuple(t.shape))
    trace_dims = []
    for k in op.traced:
        dims = (n,) + tuple(int(s) if s is not None else d for s, d in zip(state_types[k].shape, init[k].dims))
        trace_dims.append(dims)
        inits.append(e.empty(dims, state_types[k].dtype))
        types.append(tensor_type(dims, state_types[k].dtype))

    b = e.child()
    i = b.fresh("i")
    args = [b.fresh("st") for _ in inits]
    i_value = b.from_index(i)
    states = [Value(a, t.dtype, b.dims_of(a, t.shape, t.dtype)) for a, t in zip(args, state_types)]
    new = emit_graph(b, body.inputs, [i_value, *states, *consts], body.outputs)
    yielded = []
    for k, (old, nv, t) in enumerate(zip(states, new, state_types)):
        for ax, (d0, d1) in enumerate(zip(old.dims, nv.dims)):
            b.same_size(d0, d1, f"{op.name}: state {k} changes its size along axis {ax} in a step", ValueError)
        yielded.append(b.cast(nv, old.dims).name)
    for m, k in enumerate(op.traced):
        trace = args[n_states + m]
        row = b.cast(new[k], states[k].dims)
        dims = trace_dims[m]
        tt = types[n_states + m]
        offsets = ", ".join([i] + ["0"] * row.ndim)
        sizes = ", ".join(["1"] + [str(d) for d in row.dims])
        strides = ", ".join(["1"] * (row.ndim + 1))
        yielded.append(
            b.op(
                f"tensor.insert_slice {row.name} into {trace}[{offsets}] [{sizes}] [{strides}] : {row.type} into {tt}",
                "tr",
            )
        )
    # the yielded states must have the iter_args' types exactly
    for k, t in enumerate(state_types):
        v = Value(yielded[k], t.dtype, states[k].dims)
        yielded[k] = b.cast(v, tuple(int(s) if s is not None else "?" for s in t.shape)).name

    results = [e.fresh("loop") for _ in inits]
    head = f"{results[0]}:{len(results)}"
    if op.until is None:
        lo, step = e.index(0), e.index(1)
        iter_args = ", ".join(f"{a} = {v}" for a, v in zip(args, inits))
        e.emit(
            f"{head} = scf.for {i} = {lo} to {e.index(n)} step {step} iter_args({iter_args}) -> ({', '.join(types)}) {{"
        )
        e.lines.extend(b.lines)
        e.emit(f"  scf.yield {', '.join(yielded)} : {', '.join(types)}")
        e.emit("}")
    else:
        _while(e, b, head, i, args, inits, types, yielded, n, op.until)
    names = [f"{results[0]}#{k}" for k in range(len(results))]
    outs = []
    for k, t in enumerate(state_types):
        dims = e.dims_of(names[k], t.shape, t.dtype)
        outs.append(Value(names[k], t.dtype, dims))
    for m, k in enumerate(op.traced):
        outs.append(Value(names[n_states + m], state_types[k].dtype, trace_dims[m]))
    return outs


def _while(e, b, head, i, args, inits, types, yielded, n, until):
    """`scf.while` over (step, *states): the before region tests `step < n and state[until]`."""
    before = e.child()
    step, bargs = before.fresh("w"), [before.fresh("ws") for _ in args]
    more = before.op(f"arith.cmpi slt, {step}, {before.index(n)} : index", "p")
    flag = before.op(f"tensor.extract {bargs[until]}[] : {types[until]}", "s")
    go = before.op(f"arith.andi {more}, {flag} : i1", "p")
    one = b.index(1)
    nxt = b.op(f"arith.addi {i}, {one} : index", "i")
    all_types = ", ".join(["index", *types])
    carried = ", ".join(f"{a} = {v}" for a, v in zip([step, *bargs], [e.index(0), *inits]))
    e.emit(f"{e.fresh('wstep')}, {head} = scf.while ({carried}) : ({all_types}) -> ({all_types}) {{")
    e.lines.extend(before.lines)
    e.emit(f"  scf.condition({go}) {', '.join([step, *bargs])} : {all_types}")
    e.emit("} do {")
    e.emit(f"^bb0({', '.join(f'{a}: {t}' for a, t in zip([i, *args], ['index', *types]))}):")
    e.lines.extend(b.lines)
    e.emit(f"  scf.yield {', '.join([nxt, *yielded])} : {all_types}")
    e.emit("}")


@mlir_impl.register(IfElse)
def _ifelse(op, node, e, ins):
    cond, args = ins[0], ins[1:]
    flag = e.op(f"tensor.extract {cond.name}[] : {cond.type}", "s")
    types = [tensor_type(o.type.shape, o.type.dtype) for o in node.outputs]
    branches = []
    for graph in (op.then_graph, op.else_graph):
        b = e.child()
        outs = emit_graph(b, graph.inputs, args, graph.outputs)
        names = [
            b.cast(v, tuple(int(s) if s is not None else "?" for s in o.type.shape)).name
            for v, o in zip(outs, node.outputs)
        ]
        branches.append((b, names))
    res = e.fresh("if")
    e.emit(f"{res}:{len(types)} = scf.if {flag} -> ({', '.join(types)}) {{")
    for k, (b, names) in enumerate(branches):
        if k:
            e.emit("} else {")
        e.lines.extend(b.lines)
        e.emit(f"  scf.yield {', '.join(names)} : {', '.join(types)}")
    e.emit("}")
    outs = []
    for k, o in enumerate(node.outputs):
        name = f"{res}#{k}"
        outs.append(Value(name, o.type.dtype, e.dims_of(name, o.type.shape, o.type.dtype)))
    return outs
