"""Loops under JAX transforms and over extra dims: `jax.jit(jax.grad(f.jax_fn))` through a scan, scans
vectorized as one loop (map_extra_dims, vectorize_graph) with their gradients, and the step count's rules.

Values against a NumPy loop per draw, gradients against central finite differences;
compiled functions are built once per backend and shared (`_compiled`).
"""

import numpy as np
import pytest
import xarray as xr

import dimgraph as dg
from dimgraph.core.blockwise import Blockwise
from dimgraph.core.loop import LoopOp

_CACHE = {}
T = dg.Dim("t", size=6)


def _compiled(key, backend, build):
    if (key, backend) not in _CACHE:
        _CACHE[key, backend] = build()
    return _CACHE[key, backend]


def _fd(cost, args, k, eps=1e-6):
    args = [np.array(a, dtype=float) for a in args]
    g = np.zeros_like(args[k])
    for idx in np.ndindex(args[k].shape):
        old = args[k][idx]
        args[k][idx] = old + eps
        up = cost(*args)
        args[k][idx] = old - eps
        down = cost(*args)
        args[k][idx] = old
        g[idx] = (up - down) / (2 * eps)
    return g


def _ar1_cost(eps, phi):
    """sum of squares of an AR(1) path driven by eps, minus its last value (reads the trace and the final state)."""
    x, total = 0.0, 0.0
    for e in eps:
        x = phi * x + e
        total += x * x
    return total - x


def _ar1_graph():
    eps, phi = dg.labeled("eps", dims=(T,)), dg.labeled("phi", dims=())
    final, trace = dg.scan(lambda x, e: phi * x + e, init=dg.constant(0.0, dims=()), sequences=eps, dim=T)
    return eps, phi, (trace**2).sum() - final


# -- jax: reverse mode under jit ----------------------------------------------------------------------


def _jax_cases():
    x, w = dg.vector("x", size=5), dg.scalar("w")
    final_only, _ = dg.scan(lambda s, x_t: dg.tanh(w * s + x_t), init=dg.core.constant(0.1), sequences=x)
    _, trace = dg.scan(lambda s, x_t: dg.tanh(w * s + x_t), init=dg.core.constant(0.1), sequences=x)
    steps, _ = dg.scan(lambda s: s * w + 1.0, init=dg.core.constant(0.5), n_steps=4)

    def loop(x, w, keep_trace):
        s, out = 0.1, []
        for x_t in x:
            s = np.tanh(w * s + x_t)
            out.append(s)
        return (np.array(out) ** 2).sum() if keep_trace else s

    def steps_ref(x, w):
        s = 0.5
        for _ in range(4):
            s = s * w + 1.0
        return s

    return {
        "final state only (a loop with no trace)": (final_only, lambda x, w: loop(x, w, False)),
        "trace": ((trace**2).sum(), lambda x, w: loop(x, w, True)),
        "no sequence, fixed n_steps": (steps + 0.0 * x.sum(), steps_ref),
    }, (x, w)


@pytest.mark.parametrize("case", ["final state only (a loop with no trace)", "trace", "no sequence, fixed n_steps"])
def test_jax_jit_grad_through_a_scan_with_a_static_step_count(case):
    jax = pytest.importorskip("jax")
    cases, inputs = _jax_cases()
    cost, ref = cases[case]
    f = dg.function(list(inputs), cost, backend="jax")
    x, w = np.random.default_rng(3).normal(size=5), 0.7
    with jax.enable_x64(True):
        gx, gw = jax.jit(jax.grad(f.jax_fn, argnums=(0, 1)))(x, w)
    np.testing.assert_allclose(np.asarray(gx), _fd(ref, [x, w], 0), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(float(gw), _fd(ref, [x, w], 1), rtol=1e-6)


def test_jax_jit_grad_through_a_labeled_scan_over_a_fixed_size_dim():
    jax = pytest.importorskip("jax")
    eps, phi, cost = _ar1_graph()
    f = dg.function([eps, phi], cost, backend="jax")
    e, p = np.random.default_rng(4).normal(size=T.size), 0.6
    with jax.enable_x64(True):
        ge, gp = jax.jit(jax.grad(lambda a, b: f.jax_fn(a, b), argnums=(0, 1)))(e, p)
    np.testing.assert_allclose(np.asarray(ge), _fd(_ar1_cost, [e, p], 0), rtol=1e-6)
    np.testing.assert_allclose(float(gp), _fd(_ar1_cost, [e, p], 1), rtol=1e-6)


def test_jax_ifelse_of_different_shapes_under_the_users_jit_names_what_to_do():
    """The compiled function makes the condition static itself; a user's own jit must be told to."""
    jax = pytest.importorskip("jax")
    c, x, y = dg.scalar("c", dtype="int32"), dg.vector("x"), dg.vector("y")
    f = dg.function([c, x, y], dg.ifelse(c, x, y), backend="jax")
    np.testing.assert_array_equal(f(1, np.arange(3.0), np.arange(2.0)), np.arange(3.0))
    with pytest.raises(NotImplementedError, match="condition must be known while tracing.*static_argnums"):
        jax.jit(f.jax_fn)(1, np.arange(3.0), np.arange(2.0))
    got = jax.jit(f.jax_fn, static_argnums=0)(0, np.arange(3.0), np.arange(2.0))
    np.testing.assert_array_equal(np.asarray(got), np.arange(2.0))


# -- scans over extra dims ------------------------------------------------------------------------------


def _mapped(backend):
    def build():
        eps, phi, cost = _ar1_graph()
        return dg.function([eps, phi], [cost, *dg.grad(cost, [eps, phi])], backend=backend, map_extra_dims=True)

    return _compiled("mapped_ar1", backend, build)


def test_map_extra_dims_over_a_scan_values_and_gradients_per_draw(backend):
    f = _mapped(backend)
    rng = np.random.default_rng(5)
    e = xr.DataArray(rng.normal(size=(2, 3, T.size)), dims=("chain", "draw", "t"))
    p = xr.DataArray(rng.uniform(-0.9, 0.9, size=(2, 3)), dims=("chain", "draw"))
    cost, g_eps, g_phi = f(e, p)
    assert cost.dims == ("chain", "draw") and g_eps.dims == ("chain", "draw", "t")
    for c in range(2):
        for d in range(3):
            args = [e.values[c, d], p.values[c, d]]
            np.testing.assert_allclose(cost.values[c, d], _ar1_cost(*args), rtol=1e-12)
            np.testing.assert_allclose(g_eps.values[c, d], _fd(_ar1_cost, args, 0), rtol=1e-6, atol=1e-9)
            np.testing.assert_allclose(g_phi.values[c, d], _fd(_ar1_cost, args, 1), rtol=1e-6)


def test_map_extra_dims_over_a_scan_is_one_loop_not_a_loop_per_draw(backend):
    """The vectorized graph holds loops over batched states, no Blockwise of a loop (interpreted per draw)."""
    f = _mapped(backend)
    e = xr.DataArray(np.zeros((4, T.size)), dims=("draw", "t"))
    f(e, xr.DataArray(np.zeros(4), dims="draw"))
    (vectorized,) = [g for key, g in f._mapped.items() if key[0][1] == ("draw",)]
    nodes = vectorized.fgraph.toposort()
    assert not [n for n in nodes if isinstance(n.op, Blockwise) and isinstance(n.op.core_op, LoopOp)]
    loops = [n for n in nodes if isinstance(n.op, LoopOp)]
    assert loops and all(n.inputs[1].type.ndim >= 1 for n in loops)  # the states carry the draw axis


@pytest.mark.parametrize("batched", ["state", "sequence", "constant", "state and sequence"])
def test_vectorize_graph_of_a_scan_vs_a_loop_per_element(backend, batched):
    """Each way a batch reaches a scan: through its initial state, a sequence, or a constant of the step;
    a state the batch reaches only inside the step gets the batch too (the counter k stays unbatched)."""

    def build():
        x0, seq, w = dg.vector("x0", size=2), dg.matrix("seq", shape=(5, 2)), dg.scalar("w")
        k0 = dg.core.constant(np.int64(0))
        (xf, kf), (xt, kt) = dg.scan(lambda x, k, row: (dg.sin(x * w) + row, k + 1), init=[x0, k0], sequences=seq)
        b_x0, b_seq, b_w = (
            dg.matrix("b_x0", shape=(3, 2)),
            dg.tensor("b_seq", shape=(3, 5, 2)),
            dg.vector("b_w", size=3),
        )
        replace = {}
        if "state" in batched:
            replace[x0] = b_x0
        if "sequence" in batched:
            replace[seq] = b_seq
        if batched == "constant":
            replace[w] = b_w
        outs = dg.vectorize_graph([xf, kf, xt, kt], replace)
        cost = (outs[2] ** 2).sum()
        ins = [
            b_x0 if "state" in batched else x0,
            b_seq if "sequence" in batched else seq,
            b_w if batched == "constant" else w,
        ]
        return dg.function(ins, [*outs, *dg.grad(cost, ins)], backend=backend), ins

    f, ins = _compiled(("vectorized", batched), backend, build)
    rng = np.random.default_rng(6)
    args = [rng.normal(size=v.type.shape) for v in ins]
    xf, kf, xt, kt, *grads = f(*args)

    def element(b, x0, seq, w):
        x0, seq, w = x0[b] if x0.ndim == 2 else x0, seq[b] if seq.ndim == 3 else seq, w[b] if w.ndim == 1 else w
        x, xs = x0, []
        for row in seq:
            x = np.sin(x * w) + row
            xs.append(x)
        return x, np.array(xs)

    def cost(*a):
        return sum((element(b, *a)[1] ** 2).sum() for b in range(3))

    for b in range(3):
        x_last, x_trace = element(b, *args)
        np.testing.assert_allclose(xf[b], x_last, rtol=1e-12)
        np.testing.assert_allclose(xt[b], x_trace, rtol=1e-12)
    assert kf.shape == () and int(kf) == 5 and kt.tolist() == [1, 2, 3, 4, 5]
    for k, g in enumerate(grads):
        np.testing.assert_allclose(g, _fd(cost, args, k), rtol=1e-5, atol=1e-8)


# -- the step count --------------------------------------------------------------------------------------


def test_labeled_n_steps_must_equal_the_step_dim():
    eps = dg.labeled("eps", dims=(T,))
    with pytest.raises(dg.DimError, match="n_steps is 4 but sequence 0 has 6 steps; n_steps must equal"):
        dg.scan(lambda x, e: x + e, init=dg.constant(0.0, dims=()), sequences=eps, dim=T, n_steps=4)


def test_labeled_n_steps_against_a_data_sized_dim_is_a_shape_error_before_the_loop(backend):
    def build():
        time = dg.Dim("time")
        eps, n = dg.labeled("eps", dims=(time,)), dg.labeled("n", dims=(), dtype="int64")
        final, _ = dg.scan(lambda x, e: x + e, init=dg.constant(0.0, dims=()), sequences=eps, dim=time, n_steps=n)
        return dg.function([eps, n], final, backend=backend)

    f = _compiled("labeled_n_steps", backend, build)
    assert float(f(np.arange(4.0), 4)) == 6.0
    with pytest.raises(dg.ShapeError, match="n_steps must equal the length of sequence 0"):
        f(np.arange(4.0), 3)


def test_the_shortest_sequence_sets_the_steps(backend):
    def build():
        x, y = dg.vector("x"), dg.vector("y", size=4)
        final, trace = dg.scan(lambda s, a, b: s + a * b, init=dg.core.constant(0.0), sequences=[x, y])
        return dg.function([x, y], [final, trace], backend=backend)

    f = _compiled("shortest", backend, build)
    for n in (2, 4, 7):
        x, y = np.arange(1.0, n + 1), np.array([1.0, 10.0, 100.0, 1000.0])
        final, trace = f(x, y)
        m = min(n, 4)
        np.testing.assert_allclose(trace, np.cumsum(x[:m] * y[:m]))
        assert float(final) == np.sum(x[:m] * y[:m])


def test_map_extra_dims_over_a_scan_that_draws_gives_each_element_fresh_numbers(backend):
    """A random walk in a scan, mapped over posterior draws of its scale: every element draws anew at every
    step (as separate calls would), not one path scaled by each element's sigma."""

    def build():
        sigma, state = dg.labeled("sigma", dims=()), dg.rng_state("s")

        def step(x, st):
            st, e = dg.dist.normal(0.0, sigma).draw(st)
            return x + e, st

        (_, _), (path, _) = dg.scan(step, init=[dg.constant(0.0, dims=()), state], dim=T)
        return dg.function([sigma, state], path, backend=backend, map_extra_dims=True)

    f = _compiled("mapped_walk", backend, build)
    out = f(xr.DataArray([1e-9, 1.0, 1.0, 2.0], dims="draw"), dg.seed_state(3))
    assert out.dims == ("draw", "t")
    steps = np.diff(out.values, axis=1, prepend=0.0)
    assert np.all(np.isfinite(steps)) and np.all(np.abs(steps[0]) < 1e-7) and np.all(np.abs(steps[1:]) > 1e-7)
    assert not np.allclose(steps[1], steps[2])
    assert not np.allclose(steps[3], 2 * steps[1]) and not np.allclose(steps[3], 2 * steps[2])


def test_vectorize_graph_over_a_batched_step_count_and_its_gradient(backend):
    """Each element runs its own number of steps (one loop of the most steps, states frozen after each
    element's count); the gradient compiles (it was an InputError naming a stray int64 input)."""

    def build():
        n, w, ns = dg.scalar("n", dtype="int64"), dg.scalar("w"), dg.vector("ns", dtype="int64")
        final, _ = dg.scan(lambda s: dg.sin(s * w) + 1.0, init=dg.core.constant(0.5), n_steps=n)
        out = dg.vectorize_graph(final, {n: ns})
        return dg.function([ns, w], [out, dg.grad((out**2).sum(), [w])[0]], backend=backend)

    def element(n, w):
        s = 0.5
        for _ in range(n):
            s = np.sin(s * w) + 1.0
        return s

    f = _compiled("batched_n", backend, build)
    ns, w = np.array([0, 1, 4, 2]), 0.8
    out, g = f(ns, w)
    np.testing.assert_allclose(out, [element(n, w) for n in ns], rtol=1e-12)
    np.testing.assert_allclose(g, _fd(lambda w: sum(element(n, float(w)) ** 2 for n in ns), [w], 0), rtol=1e-6)
    np.testing.assert_allclose(f(np.zeros(0, dtype=np.int64), w)[0], np.zeros(0))


def test_vectorize_graph_of_a_while_loop_whose_elements_stop_apart(backend):
    """One loop while any element goes on, each element's states frozen once its own condition fails
    (one element never stops: max_steps bounds it)."""

    def build():
        x, lim, xs = dg.scalar("x"), dg.scalar("lim"), dg.vector("xs")
        y, k = dg.while_loop(
            lambda v, c: v < lim, lambda v, c: (v * 2.0, c + 1), init=[x, dg.core.constant(np.int64(0))], max_steps=40
        )
        return dg.function([xs, lim], dg.vectorize_graph([y, k], {x: xs}), backend=backend)

    f = _compiled("batched_while", backend, build)
    ys, ks = f(np.array([3.0, 200.0, 0.7, -1.0]), 100.0)
    np.testing.assert_allclose(ys, [192.0, 200.0, 179.2, -(2.0**40)], rtol=1e-12)
    assert ks.tolist() == [6, 0, 8, 40]


def test_map_extra_dims_over_a_traced_while_loop(backend):
    """Traces of the steps taken: one array when every element takes as many steps, else a ShapeError."""

    def build():
        v0 = dg.labeled("v0", dims=())
        fin, path = dg.while_loop(lambda v: v < 100.0, lambda v: v * 2.0, init=v0, max_steps=50, trace=True, dim="step")
        return dg.function([v0], [fin, path], backend=backend, map_extra_dims=True)

    f = _compiled("mapped_while", backend, build)
    fin, path = f(xr.DataArray([3.0, 2.9], dims="draw"))
    assert path.dims == ("draw", "step")
    np.testing.assert_allclose(fin.values, [192.0, 185.6], rtol=1e-12)
    np.testing.assert_allclose(path.values, [3.0 * 2.0 ** np.arange(1, 7), 2.9 * 2.0 ** np.arange(1, 7)], rtol=1e-12)
    with pytest.raises(dg.ShapeError, match="batch element"):
        f(xr.DataArray([3.0, 3.5], dims="draw"))  # 6 steps and 5


# -- branches over extra dims -----------------------------------------------------------------------------


def test_vectorize_graph_of_an_ifelse_stays_one_lazy_branch(backend):
    """Batched arguments under one condition: one IfElse of vectorized branches (the untaken one, which
    would fail, does not run); a condition batched per element picks a branch per element."""
    from dimgraph.core.ifelse import IfElse

    def build():
        c, x, w = dg.scalar("c", dtype="int32"), dg.vector("x", size=3), dg.scalar("w")
        failing = dg.core.assert_op(x[::-1] * 2.0, dg.core.all(x > 0), msg="the else branch must not run")
        y = dg.ifelse(c, dg.sin(x * w), failing)
        ws, cs = dg.vector("ws"), dg.vector("cs", dtype="int32")
        out = dg.vectorize_graph(y, {w: ws})
        per_element = dg.vectorize_graph(dg.ifelse(c, x * w, x - w), {c: cs, w: ws})
        return dg.function([c, x, ws, cs], [out, dg.grad((out**2).sum(), [ws])[0], per_element], backend=backend)

    f = _compiled("vectorized_ifelse", backend, build)
    x, ws, cs = np.array([-0.1, 0.2, 0.3]), np.array([1.0, 2.0]), np.array([1, 0], dtype=np.int32)
    out, g, per = f(1, x, ws, cs)
    np.testing.assert_allclose(out, np.sin(x * ws[:, None]), rtol=1e-12)
    np.testing.assert_allclose(g, (x * np.sin(2 * x * ws[:, None])).sum(axis=1), rtol=1e-10)
    np.testing.assert_allclose(per, [x * 1.0, x - 2.0], rtol=1e-12)
    with pytest.raises(AssertionError, match="must not run"):
        f(0, x, ws, cs)
    nodes = f.fgraph.toposort()
    assert any(isinstance(n.op, IfElse) and n.outputs[0].type.ndim == 2 for n in nodes)  # the value's, over the batch
    assert (
        len([n for n in nodes if isinstance(n.op, Blockwise) and isinstance(n.op.core_op, IfElse)]) == 1
    )  # per_element


@pytest.mark.parametrize("inline", [False, True])
def test_vectorize_graph_of_an_op_from_graph_is_one_macro(backend, inline):
    """A macro over batched inputs: one node of its vectorized graph; with a user gradient, a Blockwise
    whose gradient is the user's."""
    from dimgraph.core.opfromgraph import OpFromGraph

    def build():
        a, b = dg.vector("a", size=3), dg.scalar("b")
        macro = dg.op_from_graph([a, b], [dg.tanh(a * b).sum(), a * 2.0], inline=inline)
        fake = dg.op_from_graph([a, b], [(a * b).sum()], grad=lambda ins, gs: [ins[0] * 0.0 + 1.0, gs[0] * 0.0 + 3.0])
        bs = dg.vector("bs")
        s, twice = dg.vectorize_graph(macro(a, b), {b: bs})
        faked = dg.vectorize_graph(fake(a, b), {b: bs})
        cost = (s**2).sum()
        return dg.function([a, bs], [s, twice, *dg.grad(cost, [a, bs]), dg.grad(faked.sum(), [bs])[0]], backend=backend)

    def cost(a, bs):
        return float((np.tanh(a[None, :] * bs[:, None]).sum(axis=1) ** 2).sum())

    f = _compiled(("vectorized_ofg", inline), backend, build)
    a, bs = np.array([0.3, -0.2, 0.5]), np.array([1.0, -2.0, 0.5, 3.0])
    s, twice, ga, gbs, g_fake = f(a, bs)
    np.testing.assert_allclose(s, np.tanh(a[None, :] * bs[:, None]).sum(axis=1), rtol=1e-12)
    np.testing.assert_allclose(twice, a * 2.0)
    np.testing.assert_allclose(ga, _fd(cost, [a, bs], 0), rtol=1e-6)
    np.testing.assert_allclose(gbs, _fd(cost, [a, bs], 1), rtol=1e-6)
    np.testing.assert_array_equal(g_fake, np.full(4, 3.0))
    if not inline:
        nodes = f.fgraph.toposort()
        assert any(isinstance(n.op, OpFromGraph) and n.outputs[0].type.ndim == 1 for n in nodes)
        assert not any(
            isinstance(n.op, Blockwise) and isinstance(n.op.core_op, OpFromGraph) and n.op.core_op.grad_graph is None
            for n in nodes
        )
