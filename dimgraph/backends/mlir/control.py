"""MLIR emitters of control flow: `Loop` as `scf.for` (a while loop, `until`, as `scf.while`) over tensor states.

The states, the traces (a tensor each, a row written per step with
`tensor.insert_slice`) and the error code of the body's checks are the loop's
iter_args; the body is the inner graph printed by the same registry, reading
the loop's constants from the enclosing region.
"""

from __future__ import annotations

from dimgraph.backends.mlir.emitter import Value, tensor_type
from dimgraph.backends.mlir.registry import MlirUnsupported, mlir_impl
from dimgraph.core.loop import Loop


@mlir_impl.register(Loop)
def _loop(op, node, e, ins):
    from dimgraph.backends.mlir.program import emit_graph

    if op.until is not None:
        raise MlirUnsupported(f"mlir backend: the while loop {op} is not supported (only loops of a fixed step count)")
    n_states = op.n_states
    n_steps, init, consts = ins[0], ins[1 : 1 + n_states], ins[1 + n_states :]
    body = op.body
    state_types = body.input_types[1 : 1 + n_states]
    n = e.index_of(n_steps)
    n = e.imax(n, 0)
    # iter_args: the states (typed as the body declares them), the traces, the error code
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
    inits.append(e.const(0, "i64"))
    types.append("i64")

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
        yielded.append(b.op(f"tensor.insert_slice {row.name} into {trace}[{offsets}] [{sizes}] [{strides}] : {row.type} into {tt}", "tr"))
    yielded.append(b.error_code(start=args[-1]))
    # the yielded states must have the iter_args' types exactly
    for k, t in enumerate(state_types):
        v = Value(yielded[k], t.dtype, states[k].dims)
        yielded[k] = b.cast(v, tuple(int(s) if s is not None else "?" for s in t.shape)).name

    results = [e.fresh("loop") for _ in inits]
    lo, step = e.index(0), e.index(1)
    iter_args = ", ".join(f"{a} = {v}" for a, v in zip(args, inits))
    head = f"{results[0]}:{len(results)}"
    e.emit(f"{head} = scf.for {i} = {lo} to {e.index(n)} step {step} iter_args({iter_args}) -> ({', '.join(types)}) {{")
    e.lines.extend(b.lines)
    e.emit(f"  scf.yield {', '.join(yielded)} : {', '.join(types)}")
    e.emit("}")
    names = [f"{results[0]}#{k}" for k in range(len(results))]
    e.codes.append(names[-1])
    outs = []
    for k, t in enumerate(state_types):
        dims = e.dims_of(names[k], t.shape, t.dtype)
        outs.append(Value(names[k], t.dtype, dims))
    for m, k in enumerate(op.traced):
        outs.append(Value(names[n_states + m], state_types[k].dtype, trace_dims[m]))
    return outs
