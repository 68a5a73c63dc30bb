"""JAX entries for control flow: `Loop`/`Scan` -> `lax.scan` / `lax.fori_loop` / `lax.while_loop`, `IfElse` -> `lax.cond`, a kept
`OpFromGraph` traced inline.

An inner graph becomes a pure function with the registry's FunctionGraph entry (`compiler.graph_function`), as a
whole graph does. Run-time checks inside a body or a branch (`checks.py`)
cannot leave the loop's trace, so each inner function returns its check
outcomes: a loop carries "every check held so far" per check, a branch returns
the checks of both branches (True for the one not taken); the outer trace then
records them as its own checks. Which checks an inner function has is found
by tracing it once with `jax.eval_shape`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dimgraph.backends.jax.checks import collect, runtime_check
from dimgraph.backends.jax.registry import NeedsStatic, is_static, jax_impl, static_int
from dimgraph.core.fgraph import FunctionGraph
from dimgraph.core.ifelse import IfElse
from dimgraph.core.loop import LoopOp
from dimgraph.core.opfromgraph import OpFromGraph


def _inner_function(graph):
    fn = jax_impl(FunctionGraph(graph.inputs, graph.outputs, clone=True), None)

    def run(*args):
        """(outputs as a tuple of JAX arrays, check oks, check (error, message) pairs)."""
        with collect() as found:
            try:
                outs = fn(*args)
            except NeedsStatic as need:  # positions of the inner graph mean nothing outside it
                raise need.error from None
        return tuple(jnp.asarray(o) for o in outs), [jnp.asarray(ok, dtype=bool).reshape(()) for ok, _, _, _ in found.checks], [
            (e, m if d is None else m.format("an index")) for _, e, m, d in found.checks  # inner checks keep no detail
        ]

    return run


def _discover(fn, *args):
    """The (error, message) of each check `fn` records (traced once, abstractly)."""
    found = []

    def probe(*a):
        outs, oks, msgs = fn(*a)
        found[:] = msgs
        return outs, oks

    jax.eval_shape(probe, *args)
    return found


@jax_impl.register(LoopOp)  # Loop and Scan
def _loop(op, node):
    body = _inner_function(op.body)
    ns, traced, until = op.n_states, op._traced(), getattr(op, "until", None)
    dtypes = [o.type.dtype for o in node.outputs[:ns]]

    def loop(inputs):
        n, states, consts = inputs[0], inputs[1 : 1 + ns], inputs[1 + ns :]
        states = tuple(jnp.asarray(s, dtype=dt) for s, dt in zip(states, dtypes))

        def step(i, carry):
            outs, oks, _ = body(jnp.asarray(i, dtype=jnp.int64), *carry[0], *consts)
            for k, (old, new) in enumerate(zip(carry[0], outs)):
                if old.shape != new.shape:
                    raise ValueError(f"{op.name}: state {k} has shape {old.shape} before a step and {new.shape} after it")
            return outs, tuple(a & b for a, b in zip(carry[1], oks))

        if is_static(n) and int(n) <= 0:  # no step: the body is not traced (it may index empty sequences)
            return list(states) + [jnp.zeros((0,) + states[k].shape, dtype=states[k].dtype) for k in traced]
        checks = _discover(body, jnp.asarray(0, dtype=jnp.int64), *states, *consts)
        carry = (states, tuple(jnp.asarray(True) for _ in checks))
        if until is not None:
            n = jnp.asarray(n, dtype=jnp.int64)

            def cond(c):
                return (c[0] < n) & c[1][0][until]

            # traces: buffers of n rows written at each step taken (the rest stay zero)
            steps = static_int(n, op, "number of steps") if traced else 0
            rows = tuple(jnp.zeros((steps,) + states[k].shape, dtype=states[k].dtype) for k in traced)

            def advance(c):
                new = step(c[0], c[1])
                return c[0] + 1, new, tuple(r.at[c[0]].set(new[0][k]) for r, k in zip(c[2], traced))

            _, carry, traces = lax.while_loop(cond, advance, (jnp.asarray(0, dtype=jnp.int64), carry, rows))
        elif traced:
            steps = static_int(n, op, "number of steps")

            def scan_step(c, i):
                new = step(i, c)
                return new, tuple(new[0][k] for k in traced)

            carry, traces = lax.scan(scan_step, carry, jnp.arange(steps, dtype=jnp.int64))
        else:
            carry = lax.fori_loop(jnp.asarray(0, dtype=jnp.int64), jnp.asarray(n, dtype=jnp.int64), step, carry)
            traces = ()
        for ok, (error, message) in zip(carry[1], checks):
            runtime_check(ok, error, message)
        return list(carry[0]) + list(traces)

    return loop


@jax_impl.register(IfElse)
def _ifelse(op, node):
    then_fn, else_fn = _inner_function(op.then_graph), _inner_function(op.else_graph)
    dtypes = [o.type.dtype for o in node.outputs]

    def branch(cond, args):
        if is_static(cond):  # known while tracing: only that branch is traced at all
            outs, oks, msgs = (then_fn if bool(np.asarray(cond)) else else_fn)(*args)
            for ok, (error, message) in zip(oks, msgs):
                runtime_check(ok, error, message)
            return [jnp.asarray(o, dtype=dt) for o, dt in zip(outs, dtypes)]
        then_checks, else_checks = _discover(then_fn, *args), _discover(else_fn, *args)
        t_true = tuple(jnp.asarray(True) for _ in then_checks)
        e_true = tuple(jnp.asarray(True) for _ in else_checks)

        def taken_then(a):
            outs, oks, _ = then_fn(*a)
            return tuple(jnp.asarray(o, dtype=dt) for o, dt in zip(outs, dtypes)), tuple(oks), e_true

        def taken_else(a):
            outs, oks, _ = else_fn(*a)
            return tuple(jnp.asarray(o, dtype=dt) for o, dt in zip(outs, dtypes)), t_true, tuple(oks)

        outs, t_oks, e_oks = lax.cond(jnp.asarray(cond, dtype=bool), taken_then, taken_else, tuple(args))
        for ok, (error, message) in zip(t_oks + e_oks, then_checks + else_checks):
            runtime_check(ok, error, message)
        return list(outs)

    return lambda inputs: branch(inputs[0], inputs[1:])


@jax_impl.register(OpFromGraph)
def _op_from_graph(op, node):
    graph = jax_impl(FunctionGraph(op.graph.inputs, op.graph.outputs, clone=True), None)
    return lambda inputs: graph(*inputs)
