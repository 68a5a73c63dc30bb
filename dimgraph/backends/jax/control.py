"""JAX entries for control flow: `Loop`/`Scan` -> `lax.scan` / `lax.fori_loop` / `lax.while_loop`, `IfElse` -> `lax.cond`, a kept
`OpFromGraph` traced inline.

A loop whose step count is known while tracing (a Dim of fixed size, a static
length) becomes `lax.scan`, which JAX differentiates in reverse mode under
`jit`; only a count computed from traced data gives `lax.fori_loop` with
dynamic bounds (forward values and `jvp` only, as in JAX).

An inner graph becomes a pure function with the registry's FunctionGraph entry (`compiler.graph_function`), as a
whole graph does. Run-time checks inside a body or a branch (`checks.py`)
cannot leave the loop's trace, so each inner function returns its check
outcomes: a loop carries "every check held so far" per check, a branch returns
the checks of both branches (True for the one not taken); the outer trace then
records them as its own checks. Which checks an inner function has is found
by tracing it once with `jax.eval_shape`.

A branch is lazy: where the two branches do not trace to the same shapes
(vectors of different lengths, an index out of range of one branch's static
shape) the condition is made static (`DataDependentShape`), so only the
taken branch is traced.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from dimgraph.backends.jax.checks import collect, known_range, runtime_check
from dimgraph.backends.jax.registry import BACKEND, DataDependentShape, NeedsStatic, is_static, jax_impl, static_int
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
        return (
            tuple(jnp.asarray(o) for o in outs),
            [jnp.asarray(ok, dtype=bool).reshape(()) for ok, _, _, _ in found.checks],
            [
                (e, m if d is None else m.format("an index"))
                for _, e, m, d in found.checks  # inner checks keep no detail
            ],
        )

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

        def ranged_body(i, *args):
            if not is_static(n):
                return body(i, *args)
            with known_range(i, int(n)):  # the step number: reads of sequences at it need no bounds check
                return body(i, *args)

        def step(i, carry):
            outs, oks, _ = ranged_body(jnp.asarray(i, dtype=jnp.int64), *carry[0], *consts)
            for k, (old, new) in enumerate(zip(carry[0], outs)):
                if old.shape != new.shape:
                    raise ValueError(
                        f"{op.name}: state {k} has shape {old.shape} before a step and {new.shape} after it"
                    )
            return outs, tuple(a & b for a, b in zip(carry[1], oks))

        if is_static(n) and int(n) <= 0:  # no step: the body is not traced (it may index empty sequences)
            return list(states) + [jnp.zeros((0,) + states[k].shape, dtype=states[k].dtype) for k in traced]
        # the constants as the loop sees them (static ones stay static: their checks are made while tracing)
        checks = _discover(
            lambda i, *carried: ranged_body(i, *carried, *consts), jnp.asarray(0, dtype=jnp.int64), *states
        )
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
        elif is_static(n):  # static bounds: a scan, so reverse mode works under the user's jit(grad)
            carry, _ = lax.scan(lambda c, i: (step(i, c), None), carry, jnp.arange(int(n), dtype=jnp.int64))
            traces = ()
        else:
            carry = lax.fori_loop(jnp.asarray(0, dtype=jnp.int64), jnp.asarray(n, dtype=jnp.int64), step, carry)
            traces = ()
        for ok, (error, message) in zip(carry[1], checks):
            runtime_check(ok, error, message)
        return list(carry[0]) + list(traces)

    return loop


def _branch_types(fn, args):
    """The (error, message) of each check `fn` records and its outputs' shapes and dtypes, traced abstractly;
    None when tracing the branch fails (an index out of range of a static shape: it must not run)."""
    found = []

    def probe(*a):
        outs, oks, msgs = fn(*a)
        found[:] = msgs
        return outs, oks

    try:
        outs, _ = jax.eval_shape(probe, *args)
    except DataDependentShape:
        raise
    except Exception:  # noqa: BLE001 - any failure to trace the branch is its own (shown when it is taken)
        return None
    return found, [(o.shape, o.dtype) for o in outs]


@jax_impl.register(IfElse)
def _ifelse(op, node):
    """`lax.cond` when both branches trace to the same shapes; otherwise the condition must be known while
    tracing (the compiled function makes its small inputs static, one compile per value), and only the
    taken branch is traced, so the other may have other shapes or fail to trace at all (lazy, as PyTensor's)."""
    then_fn, else_fn = _inner_function(op.then_graph), _inner_function(op.else_graph)
    dtypes = [o.type.dtype for o in node.outputs]

    def branch(cond, args):
        if is_static(cond):  # known while tracing: only that branch is traced at all
            outs, oks, msgs = (then_fn if bool(np.asarray(cond)) else else_fn)(*args)
            for ok, (error, message) in zip(oks, msgs):
                runtime_check(ok, error, message)
            return [jnp.asarray(o, dtype=dt) for o, dt in zip(outs, dtypes)]
        then_t, else_t = _branch_types(then_fn, args), _branch_types(else_fn, args)
        if then_t is None or else_t is None or [s for s, _ in then_t[1]] != [s for s, _ in else_t[1]]:
            why = (
                "one cannot be traced with these shapes"
                if then_t is None or else_t is None
                else (f"they give shapes {[tuple(s) for s, _ in then_t[1]]} and {[tuple(s) for s, _ in else_t[1]]}")
            )
            raise DataDependentShape(
                f"the {BACKEND} backend cannot compile {op} with a condition computed from input data: {why}, "
                "and XLA traces both branches of a cond to one output shape; the condition must be known while "
                "tracing (the compiled function does this when it comes from small inputs; under your own "
                "jax.jit make them static_argnums), or use another backend",
                cond,
            )
        then_checks, else_checks = then_t[0], else_t[0]
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
