"""Loops and branches: Scan/Loop vs a NumPy loop, gradients vs finite differences, lazy IfElse, merging, LICM.

Every value test runs on each backend (the `backend` fixture); compiled
functions are cached per backend at module level so hypothesis examples reuse them.
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph.core.fgraph import FunctionGraph
from dimgraph.core.ifelse import IfElse
from dimgraph.core.loop import Loop, Scan, loop_from_graph
from dimgraph.core.rewriting import rewrite_graph

_CACHE = {}
# the backend fixture only names a backend: nothing to reset between examples
FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


def cached(key, build):
    if key not in _CACHE:
        _CACHE[key] = build()
    return _CACHE[key]


# -- a model with several states of different shapes and dtypes, sequences and constants ---------


def _multi_state(backend):
    x0 = dg.vector("x0", size=3)
    k0 = dg.scalar("k0", dtype="int64")
    seq = dg.matrix("seq", shape=(None, 3))
    w = dg.scalar("w")

    def step(x, k, row):
        return dg.tanh(x * w) + row, k + 1

    (xf, kf), (xt, kt) = dg.scan(step, init=[x0, k0], sequences=seq)
    return dg.function([x0, k0, seq, w], [xf, kf, xt, kt], backend=backend)


def _multi_state_oracle(x0, k0, seq, w):
    x, k, xs, ks = x0.copy(), k0, [], []
    for row in seq:
        x, k = np.tanh(x * w) + row, k + 1
        xs.append(x)
        ks.append(k)
    return x, k, np.array(xs).reshape(len(seq), 3), np.array(ks, dtype=np.int64)


@FIXTURE_OK
@given(n=st.sampled_from([0, 1, 7]), w=st.floats(-2, 2), seed=st.integers(0, 2**16))
def test_scan_several_states_vs_numpy_loop(backend, n, w, seed):
    f = cached(("multi", backend), lambda: _multi_state(backend))
    rng = np.random.default_rng(seed)
    x0, seq = rng.normal(size=3), rng.normal(size=(n, 3))
    got = f(x0, 4, seq, w)
    want = _multi_state_oracle(x0, 4, seq, w)
    for g, e in zip(got, want):
        assert g.dtype == np.asarray(e).dtype
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


BODIES = {
    "exp_sum": (lambda s, c: dg.log1p(dg.exp(-s)) + c, lambda s, c: np.log1p(np.exp(-s)) + c),
    "cumulative": (lambda s, c: s + dg.core.cumsum(c), lambda s, c: s + np.cumsum(c)),
    "reduce": (lambda s, c: s * 0.5 + (c * s).sum(), lambda s, c: s * 0.5 + (c * s).sum()),
    "indexing": (lambda s, c: dg.core.concatenate([s[1:], s[:1]]) + c, lambda s, c: np.concatenate([s[1:], s[:1]]) + c),
    "where": (lambda s, c: dg.core.where(s > 0, s - c, s + c), lambda s, c: np.where(s > 0, s - c, s + c)),
}


@pytest.mark.parametrize("body", sorted(BODIES))
@FIXTURE_OK
@given(n=st.sampled_from([0, 1, 5]), seed=st.integers(0, 2**16))
def test_scan_bodies_from_op_families(backend, body, n, seed):
    sym, ref = BODIES[body]

    def build():
        s0, c = dg.vector("s0", size=4), dg.vector("c", size=4)
        final, trace = dg.scan(lambda s: sym(s, c), init=s0, n_steps=n)
        return dg.function([s0, c], [final, trace], backend=backend)

    f = cached((body, n, backend), build)
    rng = np.random.default_rng(seed)
    s0, c = rng.normal(size=4), rng.normal(size=4)
    final, trace = f(s0, c)
    s, want = s0, []
    for _ in range(n):
        s = ref(s, c)
        want.append(s)
    np.testing.assert_allclose(final, s, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(trace, np.array(want).reshape(n, 4), rtol=1e-10, atol=1e-12)


def test_ar2_as_window_states(backend):
    """Taps two steps back: AR(2) carries (x[t-1], x[t-2]) as two states."""
    eps = dg.vector("eps")
    a1, a2 = 0.6, -0.3

    def step(x1, x2, e):
        return a1 * x1 + a2 * x2 + e, x1

    (last, _), (trace, _) = dg.scan(step, init=[dg.core.constant(1.0), dg.core.constant(0.5)], sequences=eps)
    f = dg.function([eps], [last, trace], backend=backend)
    e = np.random.default_rng(1).normal(size=20)
    x = [0.5, 1.0]
    for t in range(20):
        x.append(a1 * x[-1] + a2 * x[-2] + e[t])
    got_last, got_trace = f(e)
    np.testing.assert_allclose(got_trace, x[2:], rtol=1e-12)
    np.testing.assert_allclose(got_last, x[-1], rtol=1e-12)


# -- Scan -> Loop ----------------------------------------------------------------------------------


def test_scan_to_loop_keeps_only_read_traces_and_last_reads_become_states():
    s0, c = dg.vector("s0", size=2), dg.scalar("c")
    (a, b), (ta, tb) = dg.scan(lambda a, b: (a * 0.5 + c, b * c), init=[s0, s0], n_steps=4)
    f = dg.function([s0, c], [a, ta[-1], tb], backend="python")
    loops = [n for n in f.fgraph.toposort() if isinstance(n.op, Loop)]
    assert len(loops) == 1 and not any(isinstance(n.op, Scan) for n in f.fgraph.toposort())
    assert loops[0].op.traced == (1,)
    assert f.fgraph.outputs[1] is f.fgraph.outputs[0]  # trace[-1] is the last state (4 steps surely run)
    out = f(np.array([1.0, 2.0]), 2.0)
    want = np.array([1.0, 2.0])
    for _ in range(4):
        want = want * 0.5 + 2.0
    np.testing.assert_allclose(out[0], want)
    np.testing.assert_allclose(out[1], want)
    np.testing.assert_allclose(out[2], [[2, 4], [4, 8], [8, 16], [16, 32]])


def test_last_of_an_empty_trace_still_raises(backend):
    s0, n = dg.scalar("s0"), dg.scalar("n", dtype="int64")
    _, trace = dg.scan(lambda s: s + 1.0, init=s0, n_steps=n)
    f = dg.function([s0, n], trace[-1], backend=backend)
    assert float(f(0.0, 3)) == 3.0
    with pytest.raises((AssertionError, IndexError)):
        f(0.0, 0)


# -- gradients vs finite differences ---------------------------------------------------------------


def _numeric_grad(fn, args, k, eps=1e-6):
    x = np.array(args[k], dtype=float)
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        hi, lo = x.copy(), x.copy()
        hi[idx] += eps
        lo[idx] -= eps
        g[idx] = (fn(*args[:k], hi, *args[k + 1 :]) - fn(*args[:k], lo, *args[k + 1 :])) / (2 * eps)
    return g


def _check_grads(f, ref, args):
    got = f(*args)
    np.testing.assert_allclose(got[0], ref(*args), rtol=1e-10)
    for k, g in enumerate(got[1:]):
        np.testing.assert_allclose(g, _numeric_grad(ref, args, k), rtol=1e-5, atol=1e-6)


def test_grad_random_walk_logp(backend):
    x, sigma = dg.vector("x"), dg.scalar("sigma")

    def step(acc, xt, xp):
        return acc + (-0.5 * ((xt - xp) / sigma) ** 2 - dg.log(sigma))

    lp, _ = dg.scan(step, init=dg.core.constant(0.0), sequences=[x[1:], x[:-1]])
    f = dg.function([x, sigma], [lp, *dg.grad(lp, [x, sigma])], backend=backend)
    ref = lambda x, s: np.sum(-0.5 * (np.diff(x) / s) ** 2 - np.log(s))  # noqa: E731
    _check_grads(f, ref, [np.random.default_rng(0).normal(size=8).cumsum(), 1.3])


def test_grad_ar1_logp_through_a_carried_state(backend):
    """AR(1) with the previous value carried as a state (not read from a sequence)."""
    y, rho, x0 = dg.vector("y"), dg.scalar("rho"), dg.scalar("x0")

    def step(acc, prev, yt):
        return acc - 0.5 * (yt - rho * prev) ** 2, yt + 0.0 * prev

    (lp, _), _ = dg.scan(step, init=[dg.core.constant(0.0), x0], sequences=y)
    f = dg.function([y, rho, x0], [lp, *dg.grad(lp, [y, rho, x0])], backend=backend)

    def ref(y, rho, x0):
        prev = np.concatenate([[x0], y[:-1]])
        return np.sum(-0.5 * (y - rho * prev) ** 2)

    _check_grads(f, ref, [np.random.default_rng(2).normal(size=6), 0.7, 0.3])


def test_grad_euler_ode_stepper(backend):
    """dx/dt = -k x + sin(x), 10 Euler steps of size h: gradient of the end state's square wrt k and x0."""
    k, x0 = dg.scalar("k"), dg.vector("x0", size=2)
    h = 0.1
    xf, _ = dg.scan(lambda x: x + h * (-k * x + dg.sin(x)), init=x0, n_steps=10)
    cost = (xf**2).sum()
    f = dg.function([k, x0], [cost, *dg.grad(cost, [k, x0])], backend=backend)

    def ref(k, x0):
        x = np.array(x0, dtype=float)
        for _ in range(10):
            x = x + h * (-k * x + np.sin(x))
        return np.sum(x**2)

    _check_grads(f, ref, [0.8, np.array([0.5, -1.2])])


def test_while_loop_gradient_names_the_loop():
    x = dg.scalar("x")
    y = dg.while_loop(lambda v: v < 10.0, lambda v: v * 2.0, init=x, max_steps=100, name="doubling")
    with pytest.raises(dg.NonDifferentiable, match="doubling"):
        dg.grad(y, x)


# -- while loops ----------------------------------------------------------------------------------


def test_while_loop_checks_before_each_step(backend):
    x, n = dg.scalar("x"), dg.scalar("n", dtype="int64")
    y, steps = dg.while_loop(
        lambda v, i: v < 100.0, lambda v, i: (v * 2.0, i + 1), init=[x, dg.core.constant(np.int64(0))], max_steps=n
    )
    f = dg.function([x, n], [y, steps], backend=backend)
    assert [float(v) for v in f(3.0, 1000)] == [192.0, 6.0]
    assert [float(v) for v in f(300.0, 1000)] == [300.0, 0.0]  # zero steps
    assert [float(v) for v in f(3.0, 2)] == [12.0, 2.0]  # the bound


# -- IfElse ---------------------------------------------------------------------------------------


def test_ifelse_runs_only_the_taken_branch(backend):
    x, i = dg.vector("x"), dg.scalar("i", dtype="int64")
    guarded = dg.core.assert_op(x[i], i >= 0, msg="negative index")  # raises when evaluated with i < 0
    y = dg.ifelse(i >= 0, guarded * 2.0, x.sum())
    f = dg.function([x, i], y, backend=backend)
    assert float(f(np.arange(3.0), 1)) == 2.0
    assert float(f(np.arange(3.0), -1)) == 3.0  # the then branch would raise: it did not run


def test_ifelse_shared_parts_are_computed_outside():
    x = dg.vector("x")
    shared = dg.exp(x).sum()
    y = dg.ifelse(x[0] > 0, dg.log(shared), shared * 2.0)
    node = y.owner
    assert isinstance(node.op, IfElse)
    assert any(a is shared for a in node.inputs[1:])
    assert len(node.op.then_graph.nodes()) == 1 and len(node.op.else_graph.nodes()) == 1


def test_ifelse_gradient_flows_through_the_taken_branch(backend):
    x = dg.scalar("x")
    y = dg.ifelse(x > 0, x**3, -2.0 * x)
    f = dg.function([x], [y, dg.grad(y, x)], backend=backend)
    assert [float(v) for v in f(2.0)] == [8.0, 12.0]
    assert [float(v) for v in f(-1.0)] == [2.0, -2.0]


def test_ifelse_branch_types_must_agree():
    x = dg.vector("x")
    with pytest.raises(TypeError, match="output 0"):
        dg.ifelse(x[0] > 0, x, x.sum())


# -- identity, merging, LICM -----------------------------------------------------------------------


def _build_scan(x):
    final, _ = dg.scan(lambda s: s * 0.5 + 1.0, init=x, n_steps=5)
    return final


def test_scans_built_separately_are_equal_and_merge():
    x = dg.scalar("x")
    a, b = _build_scan(x), _build_scan(x)
    assert a.owner.op == b.owner.op and hash(a.owner.op) == hash(b.owner.op)
    assert a.owner.op.body is not b.owner.op.body
    f = dg.function([x], [a, b], backend="python")
    assert sum(isinstance(n.op, Loop) for n in f.fgraph.toposort()) == 1
    np.testing.assert_allclose(f(1.0), [2.0 - 1.0 / 32] * 2)


def test_scans_with_different_bodies_differ():
    x = dg.scalar("x")
    a, _ = dg.scan(lambda s: s * 0.5 + 1.0, init=x, n_steps=5)
    b, _ = dg.scan(lambda s: s * 0.5 + 2.0, init=x, n_steps=5)
    assert a.owner.op != b.owner.op


def _licm_graph(n_steps, guard):
    """A loop whose body computes exp(c) from its constant c (dg.scan would already keep it outside)."""
    from dimgraph.core.loop import scan_from_graph

    c, s0 = dg.vector("c", size=3), dg.vector("s0", size=3)
    n = dg.core.constant(np.int64(n_steps)) if n_steps is not None else dg.scalar("n", dtype="int64")
    i, s, c_in = dg.scalar("i", dtype="int64"), dg.vector("s", size=3), dg.vector("c_in", size=3)
    inv = dg.exp(c_in)  # cannot raise: always hoisted
    if guard:
        inv = dg.core.assert_op(inv, (c_in > 0).all(), msg="c must be positive")  # may raise
    (final,), _ = scan_from_graph(i, [s], [c_in], [s + inv], n, [s0], [c])
    inputs = [c, s0] + ([] if n_steps is not None else [n])
    fg = FunctionGraph(inputs, [final])
    rewrite_graph(fg, {"include": ["scan_to_loop", "loop_invariant_code_motion"]})
    (loop,) = [nd for nd in fg.toposort() if isinstance(nd.op, Loop)]
    return fg, loop, inputs


def test_licm_hoists_what_cannot_raise_even_from_a_loop_that_may_not_run():
    fg, loop, _ = _licm_graph(None, guard=False)
    assert not any(getattr(getattr(n.op, "scalar_op", None), "name", None) == "exp" for n in loop.op.body.nodes())
    assert len(loop.inputs) == 1 + 1 + 2  # n_steps, the state, c and the hoisted exp(c)


def test_licm_keeps_a_check_inside_a_loop_that_may_run_zero_times():
    fg, loop, inputs = _licm_graph(None, guard=True)
    assert any(type(n.op).__name__ == "Assert" for n in loop.op.body.nodes())
    f = dg.function(fg.inputs, fg.outputs[0], backend="python")
    np.testing.assert_allclose(f(-np.ones(3), np.zeros(3), 0), np.zeros(3))  # no step: the check must not fire


def test_licm_hoists_a_check_out_of_a_loop_that_surely_runs():
    _, loop, _ = _licm_graph(4, guard=True)
    assert not any(type(n.op).__name__ == "Assert" for n in loop.op.body.nodes())


# -- labeled --------------------------------------------------------------------------------------


def test_labeled_scan_returns_dataarrays_with_step_coords(backend):
    import pandas as pd

    time = dg.Dim("time", coords=pd.date_range("2024-01-01", periods=4))
    region = dg.Dim("region", coords=["n", "s"])
    shock = dg.labeled("shock", dims=(region, time))
    rho = dg.labeled("rho", dims=(region,))
    final, trace = dg.scan(lambda x, e: rho * x + e, init=dg.zeros_like(rho), sequences=shock, dim=time)
    f = dg.function([shock, rho], [final, trace], backend=backend)
    e = np.arange(8.0).reshape(2, 4)
    r = np.array([0.5, -0.5])
    fin, tr = f(e, r)
    assert tr.dims == ("time", "region") and fin.dims == ("region",)
    assert (tr.time.values == time.coords.values).all() and list(tr.region.values) == ["n", "s"]
    x, want = np.zeros(2), []
    for t in range(4):
        x = r * x + e[:, t]
        want.append(x)
    np.testing.assert_allclose(tr.values, want)
    np.testing.assert_allclose(fin.values, want[-1])


def test_labeled_state_changing_dims_is_a_build_error_naming_it():
    a, b = dg.Dim("a", size=2), dg.Dim("b", size=3)
    x = dg.labeled("level", dims=(a,))
    y = dg.labeled("y", dims=(b,))
    with pytest.raises(dg.DimError, match=r"'level'.*\(a: 2\).*\(a: 2, b: 3\)"):
        dg.scan(lambda s: s + y, init=x, n_steps=3, dim=dg.Dim("step", size=3))


def test_labeled_state_changing_dtype_is_a_build_error_naming_it():
    a = dg.Dim("a", size=2)
    x = dg.labeled("count", dims=(a,), dtype="int64")
    with pytest.raises(TypeError, match=r"'count'.*int64.*float64"):
        dg.scan(lambda s: s / 2, init=x, n_steps=3, dim=dg.Dim("step", size=3))


def test_labeled_ifelse_broadcasts_by_name(backend):
    a, b = dg.Dim("a", size=2), dg.Dim("b", size=3)
    x, y, c = dg.labeled("x", dims=(a,)), dg.labeled("y", dims=(b,)), dg.labeled("c", dims=())
    z = dg.ifelse(c > 0, x, y)
    f = dg.function([x, y, c], z, backend=backend)
    got = f(np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0]), 1.0)
    assert got.dims == ("a", "b")
    np.testing.assert_allclose(got.values, np.broadcast_to([[1.0], [2.0]], (2, 3)))
    np.testing.assert_allclose(
        f(np.array([1.0, 2.0]), np.array([3.0, 4.0, 5.0]), -1.0).values, np.broadcast_to([3.0, 4.0, 5.0], (2, 3))
    )


# -- OpFromGraph ------------------------------------------------------------------------------------


def _softplus_macro(**kw):
    a = dg.vector("a")
    return dg.op_from_graph([a], [dg.log1p(dg.exp(a))], **kw)


@pytest.mark.parametrize("inline", [True, False])
def test_op_from_graph_values_and_derived_gradient(backend, inline):
    op = _softplus_macro(inline=inline)
    x = dg.vector("x")
    y = op(x).sum()
    f = dg.function([x], [y, dg.grad(y, x)], backend=backend)
    kept = any(type(n.op).__name__ == "OpFromGraph" for n in f.fgraph.toposort())
    assert kept == (not inline)
    xv = np.array([-1.0, 0.5, 2.0])
    val, g = f(xv)
    np.testing.assert_allclose(val, np.log1p(np.exp(xv)).sum())
    np.testing.assert_allclose(g, 1 / (1 + np.exp(-xv)))


def test_op_from_graph_user_gradient_is_used():
    op = _softplus_macro(grad=lambda ins, gs: [gs[0] * 2.0])
    x = dg.vector("x")
    g = dg.grad(op(x).sum(), x)
    np.testing.assert_allclose(g.eval({x: np.zeros(3)}, backend="python"), [2.0, 2.0, 2.0])


def test_op_from_graph_refuses_repeated_inputs():
    a, b = dg.scalar("a"), dg.scalar("b")
    with pytest.raises(ValueError, match="input 2 \\(a: float64\\(\\)\\) repeats input 0"):
        dg.op_from_graph([a, b, a], [a + b])
    i = dg.Dim("i", size=2)
    la = dg.labeled("la", dims=(i,))
    with pytest.raises(ValueError, match="input 1 .*la.* repeats input 0"):
        dg.op_from_graph([la, la], [la * 2.0])


@pytest.mark.parametrize("inline", [True, False])
def test_op_from_graph_constants_among_inputs_and_one_variable_in_two_slots(backend, inline):
    """A constant input is a slot the call fills; `op(z, z)` gets each slot's share of the gradient."""
    from dimgraph.core.basic import constant

    a, c = dg.scalar("a"), constant(2.0)
    op = dg.op_from_graph([a, c], [a * c + c**2], inline=inline)  # (a, c) -> a c + c^2

    def build():
        z = dg.scalar("z")
        uses = op(z, 5.0) + op(z, z) + op(z, 3.0 * z)  # 5z + 25 + (z^2 + z^2) + (3z^2 + 9z^2)
        return dg.function([z], [uses, dg.grad(uses, z)], backend=backend)

    f = cached(("macro-constants", backend, inline), build)
    zv = 1.5
    value, grad = f(zv)
    np.testing.assert_allclose(value, 5 * zv + 25 + 2 * zv**2 + 12 * zv**2)
    np.testing.assert_allclose(grad, 5 + 4 * zv + 24 * zv)
    fd = (float(f(zv + 1e-6)[0]) - float(f(zv - 1e-6)[0])) / 2e-6
    np.testing.assert_allclose(grad, fd, rtol=1e-6)


def test_labeled_op_from_graph_takes_a_constant_input(backend):
    i = dg.Dim("i", size=2)
    x, c = dg.labeled("x", dims=(i,)), dg.constant(np.array([1.0, 2.0]), dims=(i,))
    macro = dg.op_from_graph([x, c], [x * c])
    y = dg.labeled("y", dims=(i,))
    out = dg.function([y], macro(y, dg.constant(np.array([3.0, 4.0]), dims=(i,))), backend=backend)(
        np.array([1.0, 10.0])
    )
    np.testing.assert_allclose(out.values, [3.0, 40.0])


def test_op_from_graph_built_twice_is_one_op():
    assert _softplus_macro() == _softplus_macro() and hash(_softplus_macro()) == hash(_softplus_macro())


# -- states of any type, shared variables -----------------------------------------------------------


def test_a_state_may_have_any_type():
    """A non-tensor state (as an RNG state will be) is carried through; only tensor states have traces."""
    from dataclasses import dataclass

    from dimgraph.core.graph import Apply, Op, Variable
    from dimgraph.core.type import Type

    @dataclass(frozen=True)
    class TokenType(Type):
        def make_variable(self, name=None):
            return Variable(self, name=name)

    @dataclass(frozen=True)
    class Next(Op):
        """A token -> (the next token, a draw)."""

        def make_node(self, token):
            return Apply(self, [token], [TokenType(), dg.core.TensorType("float64", ())])

        def perform(self, node, inputs):
            return [inputs[0] + 1, np.asarray(float(inputs[0]))]

    token = TokenType().make_variable("token")

    def step(tok, total):
        new_tok, draw = Next()(tok)
        return new_tok, total + draw

    (tok_f, total_f), (tok_t, total_t) = dg.scan(step, init=[token, dg.core.constant(0.0)], n_steps=4)
    assert tok_t is None and tok_f.type == TokenType()
    node = total_f.owner
    out = node.op.perform(node, [np.int64(4), 10, np.asarray(0.0)])
    assert out[0] == 14 and float(out[1]) == 10 + 11 + 12 + 13
    np.testing.assert_allclose(out[2], [10, 21, 33, 46])


def test_a_shared_variable_is_a_state_and_its_update_lands(backend):
    w = dg.shared(np.zeros(2), name="w")
    x = dg.vector("x", size=2)
    final, _ = dg.scan(lambda s: s + x, init=w, n_steps=3)
    ctx = dg.SharedContext()
    f = dg.function([x], final, updates={w: final}, backend=backend)
    np.testing.assert_allclose(f(np.ones(2), ctx=ctx), [3.0, 3.0])
    np.testing.assert_allclose(f(np.ones(2), ctx=ctx), [6.0, 6.0])
    np.testing.assert_allclose(w.get(ctx=ctx), [6.0, 6.0])


def test_a_gradient_scan_does_not_store_traces_its_body_never_reads():
    """AR(1)-style logp: the accumulator's gradient needs no forward value, so no trace is stored at all;
    the backward loop then runs forward and is fused with the value loop: one pass over the data."""
    y, rho = dg.vector("y"), dg.scalar("rho")
    lp, _ = dg.scan(
        lambda acc, a, b: acc - 0.5 * (a - rho * b) ** 2, init=dg.core.constant(0.0), sequences=[y[1:], y[:-1]]
    )
    f = dg.function([y, rho], [lp, dg.grad(lp, rho)], backend="python", rewrites={"trace": True})
    (loop,) = [n for n in f.fgraph.toposort() if isinstance(n.op, Loop)]
    assert loop.op.traced == () and loop.op.n_states == 2
    assert f.rewrite_trace.counts["loop_forward_accumulation"] == 1 and f.rewrite_trace.counts["loop_fusion"] == 1
    assert f.rewrite_trace.counts["loop_inline_constants"] >= 1  # the gradient's unit seed, folded in the body
    # the body reads each sequence once per step, at the step itself
    reads = [n for n in loop.op.body.nodes() if type(n.op).__name__ == "Subtensor"]
    assert len(reads) == 2 and all(n.inputs[1] is loop.op.body.inputs[0] for n in reads)
    yv = np.array([0.3, -1.0, 2.0, 0.5])
    val, g = f(yv, 0.7)
    np.testing.assert_allclose(val, -0.5 * np.sum((yv[1:] - 0.7 * yv[:-1]) ** 2))
    np.testing.assert_allclose(g, np.sum((yv[1:] - 0.7 * yv[:-1]) * yv[:-1]))


def test_an_rng_state_is_threaded_through_a_scan(backend):
    """A random walk: the scan gives the draws of the same graph unrolled (each step its own stream)."""
    from dimgraph.core.random import random_draw, rng_state, seed_state

    s, x0 = rng_state("s"), dg.scalar("x0")

    def step(state, x):
        new_state, z = random_draw("normal", state)
        return new_state, x + z

    (s_last, x_last), (_, walk) = dg.scan(step, init=[s, x0], n_steps=4)
    state, x, unrolled = s, x0, []
    for _ in range(4):
        state, x = step(state, x)
        unrolled.append(x)
    f = dg.function([s, x0], [s_last, x_last, walk, state, *unrolled], backend=backend)
    got_state, got_last, got_walk, want_state, *want = f(seed_state(1), 0.5)
    np.testing.assert_array_equal(got_state, want_state)
    np.testing.assert_allclose(got_walk, want, rtol=1e-12)
    assert got_last == got_walk[-1] and len(set(np.diff(got_walk))) == 3


def test_labeled_while_loop(backend):
    a = dg.Dim("a", coords=["x", "y"])
    v = dg.labeled("v", dims=(a,))
    out = dg.while_loop(lambda s: s.sum() < 100.0, lambda s: s * 3.0, init=v, max_steps=50)
    f = dg.function([v], out, backend=backend)
    got = f(np.array([1.0, 2.0]))
    assert got.dims == ("a",) and got.a.values.tolist() == ["x", "y"]
    np.testing.assert_allclose(got.values, [81.0, 162.0])  # sums 3, 9, 27, 81 go on; 243 stops


def _while_oracle(v, k, limit, max_steps):
    vs, ks = [], []
    for _ in range(max_steps):
        if not v.sum() < limit:
            break
        v, k = v * 1.5 + 1.0, k + 2
        vs.append(v)
        ks.append(k)
    return v, k, np.array(vs).reshape(len(vs), v.size), np.array(ks, dtype=np.int64)


@pytest.mark.parametrize("start, limit", [(1.0, 50.0), (1.0, 1e9), (100.0, 50.0)])  # stops, runs out, never runs
def test_while_loop_traces_the_steps_taken(backend, start, limit):
    v0, k0 = dg.vector("v0", size=2), dg.scalar("k0", dtype="int64")
    (v, k), (vt, kt) = dg.while_loop(
        lambda v, k: v.sum() < limit, lambda v, k: (v * 1.5 + 1.0, k + 2), init=[v0, k0], max_steps=6, trace=True
    )
    f = cached(("while_trace", start, limit, backend), lambda: dg.function([v0, k0], [v, k, vt, kt], backend=backend))
    got = f(np.array([start, 2.0]), 3)
    want = _while_oracle(np.array([start, 2.0]), 3, limit, 6)
    for g, e in zip(got, want):
        assert g.dtype == np.asarray(e).dtype and g.shape == np.shape(e)
        np.testing.assert_allclose(g, e, rtol=1e-12)


def test_labeled_while_loop_trace(backend):
    a = dg.Dim("a", coords=["x", "y"])
    v = dg.labeled("v", dims=(a,))
    final, path = dg.while_loop(
        lambda s: s.sum() < 100.0, lambda s: s * 3.0, init=v, max_steps=50, trace=True, dim="step"
    )
    f = dg.function([v], [final, path], backend=backend)
    got_final, got_path = f(np.array([1.0, 2.0]))
    assert got_path.dims == ("step", "a") and got_path.a.values.tolist() == ["x", "y"]
    np.testing.assert_allclose(got_path.values, [[3.0, 6.0], [9.0, 18.0], [27.0, 54.0], [81.0, 162.0]])
    np.testing.assert_allclose(got_final.values, [81.0, 162.0])
    with pytest.raises(TypeError, match="dim="):
        dg.while_loop(lambda s: s.sum() < 1.0, lambda s: s, init=v, max_steps=2, trace=True)


@pytest.mark.parametrize("max_steps", [10**9, 10**12])
def test_while_loop_trace_grows_with_the_steps_taken_not_max_steps(backend, max_steps):
    """The trace was sized by max_steps: 10**12 was a MemoryError (7.3 TiB) though 10 steps ran, and
    10**9 reserved 8 GB on every call. Now it holds the steps taken (a replay records them)."""
    x = dg.vector("x", size=2)
    final, path = dg.while_loop(lambda v: v.sum() < 3000.0, lambda v: v * 2.0, init=x, max_steps=max_steps, trace=True)
    assert path.type.shape == (None, 2)  # its length is the steps taken, known only when run
    f = dg.function([x], [final, path], backend=backend)
    got_final, got_path = f(np.array([1.0, 2.0]))
    np.testing.assert_array_equal(
        got_path, [[2.0**k, 2.0 ** (k + 1)] for k in range(1, 11)]
    )  # 10 steps: 3 * 2**10 >= 3000
    np.testing.assert_array_equal(got_final, got_path[-1])
    assert f(np.array([5000.0, 0.0]))[1].shape == (0, 2)  # no step taken: an empty trace


def test_while_loop_trace_replays_the_same_draws(backend):
    """The replay that records the trace draws what the counting run drew: RNG states are loop states."""
    s = dg.rng_state("s")

    def step(x, state):
        state, eps = dg.dist.normal(0.0, 1.0).draw(state)
        return x + eps, state

    zero = dg.constant(0.0, dims=())
    (x, after), (path, _) = dg.while_loop(
        lambda x, state: abs(x) < 2.5, step, init=[zero, s], max_steps=10**12, trace=True, dim="t"
    )
    f = dg.function([s], [x, after, path], backend=backend)
    got_x, got_after, got_path = f(dg.seed_state(3))
    steps = int(got_after[2]) - int(dg.seed_state(3)[2])  # the state counts the draws made
    assert got_path.sizes["t"] == steps > 0
    assert float(got_path.values[-1]) == float(got_x) and abs(float(got_x)) >= 2.5
    assert (np.abs(got_path.values[:-1]) < 2.5).all()


def test_build_errors_name_what_is_wrong():
    x = dg.vector("x", size=3)
    with pytest.raises(TypeError, match="state 0.*float64.*int64"):
        dg.scan(lambda s: (s > 0).astype("int64"), init=x, n_steps=2)
    with pytest.raises(ValueError, match="returns 2 values for 1 states"):
        dg.scan(lambda s: (s, s), init=x, n_steps=2)
    with pytest.raises(TypeError, match="n_steps"):
        dg.scan(lambda s: s, init=x)
    with pytest.raises(ValueError, match="n_steps must be >= 0"):
        dg.scan(lambda s: s, init=x, n_steps=-1)
    with pytest.raises(ValueError, match="0-d"):
        dg.ifelse(x > 0, x, x)
    with pytest.raises(TypeError, match="dim="):
        dg.scan(lambda s: s, init=dg.labeled("s", dims=(dg.Dim("a", size=2),)), n_steps=2)


def test_a_negative_step_count_fails_at_run_time(backend):
    x, n = dg.scalar("x"), dg.scalar("n", dtype="int64")
    final, _ = dg.scan(lambda s: s + 1.0, init=x, n_steps=n)
    f = dg.function([x, n], final, backend=backend)
    assert float(f(0.0, 2)) == 2.0
    with pytest.raises(AssertionError, match="n_steps must be >= 0"):
        f(0.0, -1)


def test_ifelse_promotes_as_numpy_with_weak_python_numbers():
    x = dg.scalar("x", dtype="float32")
    assert dg.ifelse(x > 0, dg.sqrt(x), 0.0).type.dtype == "float32"
    assert dg.ifelse(x > 0, x, dg.scalar("y")).type.dtype == "float64"
    i = dg.scalar("i", dtype="int64")
    assert float(dg.ifelse(i > 0, i, 0.5).eval({i: 0}, backend="python")) == 0.5


def test_a_compiled_loop_and_branch_pickle(backend):
    import pickle

    x, s0 = dg.vector("x"), dg.scalar("s0")
    final, trace = dg.scan(lambda s, e: 0.5 * s + e, init=s0, sequences=x)
    f = dg.function([x, s0], [dg.ifelse(s0 > 0, final, -final), trace], backend=backend)
    g = pickle.loads(pickle.dumps(f))
    for got, want in zip(g(np.arange(3.0), 1.0), f(np.arange(3.0), 1.0)):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(g(np.arange(3.0), -1.0)[0], -(0.125 * -1.0 + 0.25 * 0 + 0.5 * 1 + 2))


def test_fixed_parts_of_an_accumulated_term_leave_the_loop():
    """x + (f(i) - c) over n steps: the loop sums f(i); n * c is taken once after it."""
    seq, c, x0 = dg.vector("seq"), dg.scalar("c"), dg.scalar("x0")
    (total, count), _ = dg.scan(
        lambda s, k, e: (s + (e * e - dg.log(c)), k + 1), init=[x0, dg.core.constant(0, dtype="int64")], sequences=seq
    )
    f = dg.function([seq, c, x0], [total, count], backend="python", rewrites={"trace": True})
    (loop,) = [n for n in f.fgraph.toposort() if isinstance(n.op, Loop)]
    assert f.rewrite_trace.counts["loop_hoist_accumulated_constants"] >= 1
    assert loop.op.n_states == 1 and not any(
        n.op.scalar_op == "log" for n in loop.op.body.nodes() if hasattr(n.op, "scalar_op")
    )
    v = np.array([0.5, -1.0, 2.0])
    got_total, got_count = f(v, 3.0, 1.5)
    np.testing.assert_allclose(got_total, 1.5 + np.sum(v * v - np.log(3.0)), rtol=1e-14)
    assert got_count == 3 and got_count.dtype == np.int64
    with np.errstate(divide="ignore"):
        assert float(f(np.zeros(0), 0.0, 1.5)[0]) == 1.5  # no step: -log(0) is never added (0 * inf would be nan)


def test_loops_fuse_only_when_neither_reads_the_other():
    x0, c = dg.scalar("x0"), dg.scalar("c")
    a, _ = dg.scan(lambda s: s * 0.5 + c, init=x0, n_steps=4)
    b, _ = dg.scan(lambda s: s * 2.0 - c, init=x0, n_steps=4)
    after, _ = dg.scan(lambda s: s + a, init=b, n_steps=4)  # reads a's result: a loop of its own
    f = dg.function([x0, c], [a, b, after], backend="python", rewrites={"trace": True})
    loops = [n for n in f.fgraph.toposort() if isinstance(n.op, Loop)]
    assert len(loops) == 2 and f.rewrite_trace.counts["loop_fusion"] == 1
    sa, sb = 1.5, 1.5
    for _ in range(4):
        sa, sb = sa * 0.5 + 0.25, sb * 2.0 - 0.25
    np.testing.assert_allclose([float(v) for v in f(1.5, 0.25)], [sa, sb, sb + 4 * sa])


def test_a_backward_loop_that_does_not_only_accumulate_keeps_its_order():
    """A state multiplied each step (not a sum of terms) must see the steps n-1 .. 0 in that order."""
    seq, s0 = dg.vector("seq"), dg.scalar("s0")
    i, s, q, last = dg.scalar("i", dtype="int64"), dg.scalar("s"), dg.vector("q"), dg.scalar("last", dtype="int64")
    n = seq.shape[0]
    (final,) = loop_from_graph(i, [s], [q, last], [s * 0.5 + q[last - i]], n, [s0], [seq, n - 1])
    f = dg.function([seq, s0], final, backend="python", rewrites={"trace": True})
    assert f.rewrite_trace.counts["loop_forward_accumulation"] == 0
    v, want = np.array([1.0, 2.0, 3.0]), 0.0
    for e in v[::-1]:
        want = want * 0.5 + e
    assert float(f(v, 0.0)) == want


def test_loop_constant_states_turns_an_unchanged_state_into_a_constant():
    x0, c = dg.scalar("x0"), dg.scalar("c")
    (a, b), _ = dg.scan(lambda a, b: (a + b * 2.0, b), init=[x0, c], n_steps=3)
    f = dg.function([x0, c], [a, b], backend="python", rewrites={"trace": True})
    (loop,) = [n for n in f.fgraph.toposort() if isinstance(n.op, Loop)]
    assert loop.op.n_states == 1 and f.rewrite_trace.counts["loop_constant_states"] == 1
    assert f.fgraph.outputs[1] is f.fgraph.inputs[1]  # b's last value is its initial value
    assert [float(v) for v in f(1.0, 0.5)] == [4.0, 0.5]


def test_inner_graph_rewrite_fuses_a_loop_body():
    x0 = dg.vector("x0", size=3)
    final, _ = dg.scan(lambda s: dg.exp(s * 0.5) - s * s + 1.0, init=x0, n_steps=2)
    f = dg.function([x0], final, backend="python", rewrites={"trace": True})
    (loop,) = [n for n in f.fgraph.toposort() if isinstance(n.op, Loop)]
    assert f.rewrite_trace.counts["inner_graph_rewrite"] == 1
    assert len(loop.op.body.nodes()) == 1 and type(loop.op.body.nodes()[0].op.scalar_op).__name__ == "Composite"
    s = np.array([0.1, -0.2, 0.3])
    for _ in range(2):
        s = np.exp(s * 0.5) - s * s + 1.0
    np.testing.assert_allclose(f(np.array([0.1, -0.2, 0.3])), s)


# -- labeled macros -----------------------------------------------------------------------------------


def _labeled_softplus(**kw):
    a, b = dg.Dim("a", size=2), dg.Dim("b")
    x = dg.labeled("x", dims=(a, b))
    return a, b, dg.op_from_graph([x], [dg.log1p(dg.exp(x))], **kw)


@pytest.mark.parametrize("inline", [True, False])
def test_labeled_op_from_graph_values_and_derived_gradient(backend, inline):
    a, b, softplus = _labeled_softplus(inline=inline)
    y = dg.labeled("y", dims=(b, a))  # the macro's dims in another order
    out = softplus(y)
    total = out.sum()
    f = dg.function([y], [out, dg.grad(total, y)], backend=backend)
    v = np.array([[-1.0, 0.5], [2.0, 0.0], [0.3, -0.7]])
    got, g = f(v)
    assert got.dims == ("a", "b") and g.dims == ("b", "a")
    np.testing.assert_allclose(got.values, np.log1p(np.exp(v)).T, rtol=1e-12)
    np.testing.assert_allclose(g.values, 1 / (1 + np.exp(-v)), rtol=1e-12)


def test_labeled_op_from_graph_user_gradient_and_errors():
    a, b, softplus = _labeled_softplus(grad=lambda ins, gs: [gs[0] * 2.0])
    y = dg.labeled("y", dims=(a, b))
    g = dg.grad(softplus(y).sum(), y)
    got = dg.function([y], g, backend="python")(np.zeros((2, 3)))
    assert got.dims == ("a", "b") and np.all(got.values == 2.0)
    assert _labeled_softplus()[2] == _labeled_softplus()[2]
    with pytest.raises(dg.DimError, match=r"input 0 must have dims \(a: 2, b: \?\), got \(a: 2\)"):
        softplus(dg.labeled("z", dims=(a,)))
