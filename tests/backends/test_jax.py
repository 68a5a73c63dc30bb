"""jax-specific behaviour: the pure function under JAX transforms, device outputs, x64 kept local,
run-time checks and compile-time errors for ops without an entry (coverage: tests/test_registries.py).

Values on every op are checked by the backend-parametrized suites (tests/core,
tests/compile, tests/labeled, ...); sharding runs in its own process
(test_jax_sharding.py). Compiled functions are shared by module fixtures: every
new graph or input shape is one XLA compile.
"""

import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph.core.graph import Apply, Op
from dimgraph.core.type import TensorType

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture(scope="module")
def logp():
    """A float64 log-density with its data: sum of normal log-densities of y around mu * x."""
    mu = dg.scalar("mu")
    x = dg.tensor("x", shape=(None,))
    y = dg.tensor("y", shape=(None,))
    cost = (-0.5 * dg.square(y - mu * x)).sum()
    f = dg.function([mu, x, y], cost, backend="jax")
    data = (np.float64(0.7), np.linspace(-1, 1, 5), np.linspace(0, 2, 5))
    return f, data


def test_jax_fn_under_grad_and_vmap(logp):
    f, (mu, x, y) = logp
    expected_grad = np.sum((y - mu * x) * x)  # d/dmu of -0.5 (y - mu x)^2
    with jax.enable_x64(True):
        value = f.jax_fn(mu, x, y)
        grad = jax.grad(f.jax_fn)(mu, x, y)
        mus = np.array([0.0, 0.7, 1.5])
        batched = jax.vmap(f.jax_fn, in_axes=(0, None, None))(mus, x, y)
        jitted = jax.jit(jax.value_and_grad(f.jax_fn))(mu, x, y)
    assert isinstance(value, jax.Array) and value.dtype == np.float64
    np.testing.assert_allclose(float(value), f(mu, x, y), rtol=1e-14)
    np.testing.assert_allclose(float(grad), expected_grad, rtol=1e-12)
    np.testing.assert_allclose(np.asarray(batched), [f(m, x, y) for m in mus], rtol=1e-14)
    np.testing.assert_allclose(float(jitted[1]), expected_grad, rtol=1e-12)


@pytest.fixture(scope="module")
def cancelling():
    """A float64 graph whose value float32 arithmetic would lose: (s * x + 1e8) - 1e8, summed."""
    s = dg.scalar("s")
    x = dg.tensor("x", shape=(3,))
    return dg.function([s, x], ((s * x + 1e8) - 1e8).sum(), backend="jax")


@pytest.mark.parametrize("x64", [False, True])
def test_jax_fn_in_user_transforms_under_either_x64_mode(cancelling, x64):
    f = cancelling
    x = np.array([0.25, 0.5, 1.0])
    want = np.dtype("float64" if x64 else "float32")
    with jax.enable_x64(x64):
        results = {
            "call": f.jax_fn(2.0, x),
            "jit": jax.jit(f.jax_fn)(2.0, x),
            "grad": jax.grad(f.jax_fn, argnums=(0, 1))(2.0, x),
            "vmap": jax.vmap(f.jax_fn, in_axes=(0, None))(np.array([1.0, 2.0]), x),
            "jit value_and_grad": jax.jit(jax.value_and_grad(f.jax_fn))(2.0, x),
        }
    # the graph computes in float64 either way (float32 would give 0 here); dtypes follow the caller's mode
    for name in ("call", "jit"):
        assert results[name].dtype == want and float(results[name]) == 3.5, name
    ds, dx = results["grad"]
    assert ds.dtype == dx.dtype == want
    np.testing.assert_allclose(float(ds), x.sum())
    np.testing.assert_allclose(np.asarray(dx), [2.0, 2.0, 2.0])
    np.testing.assert_array_equal(np.asarray(results["vmap"]), [1.75, 3.5])
    value, grad = results["jit value_and_grad"]
    assert value.dtype == grad.dtype == want and float(value) == 3.5 and float(grad) == 1.75


def test_x64_stays_local(logp):
    f, data = logp
    assert not jax.config.jax_enable_x64
    out = f(*data)
    assert out.dtype == np.float64 and f._compiled.x64
    # the user's JAX code keeps 32-bit defaults, on this thread and after the call
    assert not jax.config.jax_enable_x64
    assert jnp.zeros(2).dtype == np.float32
    assert jnp.arange(3).dtype == np.int32


def test_graph_of_32_bit_values_runs_without_x64():
    x = dg.tensor("x", shape=(3,), dtype="float32")
    f = dg.function([x], dg.exp(x) + 1, backend="jax")
    assert not f._compiled.x64
    out = f(np.zeros(3, np.float32))
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, 2.0)
    assert float(jax.grad(lambda v: f.jax_fn(v).sum())(jnp.zeros(3))[0]) == 1.0  # no x64 needed


def test_output_jax_keeps_device_arrays_and_updates():
    x = dg.tensor("x", shape=(None,))
    w = dg.shared(np.zeros(3), name="w")
    f = dg.function([x], [x * 2, (x * w).sum()], backend="jax", updates={w: w + x}, output="jax")
    ctx = dg.SharedContext()
    a, b = f(np.ones(3), ctx=ctx)
    assert isinstance(a, jax.Array) and isinstance(b, jax.Array)
    assert a.dtype == np.float64
    a, b = f(np.ones(3), ctx=ctx)
    assert float(b) == 3.0
    np.testing.assert_array_equal(np.asarray(w.get(ctx=ctx)), [2.0, 2.0, 2.0])
    with jax.enable_x64(True):
        outs, new_state = f.jax_fn(np.ones(3), np.zeros(3))
    np.testing.assert_array_equal(np.asarray(new_state[0]), 1.0)


def test_numpy_outputs_are_writable_numpy_arrays(logp):
    x = dg.tensor("x", shape=(None,), dtype="int32")
    f = dg.function([x], [x + 1, dg.core.argmax(x)], backend="jax")
    out, idx = f(np.array([3, 9, 9], np.int32))
    assert type(out) is np.ndarray and out.dtype == np.int32 and out.flags.writeable
    assert idx.dtype == np.int64 and int(idx) == 1  # ties: the first
    out[0] = 0


@pytest.fixture(scope="module")
def checked():
    x = dg.tensor("x", shape=(None,))
    i = dg.scalar("i", dtype="int64")
    idx = dg.tensor("idx", shape=(None,), dtype="int64")
    w = dg.shared(np.zeros(()), name="w")
    y = dg.core.assert_op(x, (x >= 0).all(), msg="x must be non-negative")
    outs = [y[i], y[idx].sum()]
    f = dg.function([x, i, idx], outs, backend="jax", updates={w: w + 1})
    return f, w


def test_run_time_checks_raise_before_outputs_and_updates(checked):
    f, w = checked
    ctx = dg.SharedContext()
    x = np.arange(4.0)
    first, total = f(x, np.int64(-1), np.array([0, 3]), ctx=ctx)
    assert float(first) == 3.0 and float(total) == 3.0
    assert float(w.get(ctx=ctx)) == 1.0
    with pytest.raises(AssertionError, match="x must be non-negative"):
        f(-x, np.int64(0), np.array([0]), ctx=ctx)
    with pytest.raises(IndexError, match="out of bounds for axis 0 with size 4"):
        f(x, np.int64(4), np.array([0]), ctx=ctx)
    with pytest.raises(IndexError, match="out of bounds"):
        f(x, np.int64(0), np.array([0, -5]), ctx=ctx)
    assert float(w.get(ctx=ctx)) == 1.0  # no failed call changed the state


def test_one_index_read_and_scattered_is_checked_once_per_call(monkeypatch):
    """A gather and its gradient's scatter by the same index array (a hierarchical model's group index) trace one
    bounds check, not one per node; an index out of range still raises, naming the read and the axis."""
    from dimgraph.backends.jax import subtensor

    traced, real = [], subtensor.runtime_check

    def counting(ok, error, message, detail=None):
        traced.append(message)
        return real(ok, error, message, detail)

    monkeypatch.setattr(subtensor, "runtime_check", counting)
    x, idx = dg.tensor("x", (4,)), dg.tensor("idx", (None,), "int64")
    cost = (x[idx] ** 2).sum() + x[idx].sum()
    f = dg.function([x, idx], [cost, dg.grad(cost, x)], backend="jax")
    X, IDX = np.array([1.0, -2.0, 3.0, 0.5]), np.array([0, 3, 3, 1])
    value, grad = f(X, IDX)
    np.testing.assert_allclose(value, (X[IDX] ** 2).sum() + X[IDX].sum(), rtol=1e-12)
    want = np.zeros(4)
    np.add.at(want, IDX, 2 * X[IDX] + 1)
    np.testing.assert_allclose(grad, want, rtol=1e-12)
    assert len(traced) == 1, traced
    with pytest.raises(IndexError, match=r"AdvancedSubtensor.*index 7 is out of bounds for axis 0 with size 4"):
        f(X, np.array([0, 7]))
    with pytest.raises(IndexError, match="index -5 is out of bounds"):
        f(X, np.array([-5, 0]))


def test_negative_integer_power_raises_as_numpy():
    a = dg.tensor("a", shape=(None,), dtype="int64")
    b = dg.tensor("b", shape=(None,), dtype="int64")
    f = dg.function([a, b], a**b, backend="jax")
    np.testing.assert_array_equal(f(np.array([2, 3]), np.array([3, 0])), [8, 1])
    with pytest.raises(ValueError, match="negative integer powers"):
        f(np.array([2, 3]), np.array([1, -1]))


def test_data_dependent_shapes_are_a_clear_error():
    x = dg.tensor("x", shape=(None,))
    f = dg.function([x], x[x > 0], backend="jax")
    # a short x is compiled in as a constant (one compile per value); a long one cannot be
    np.testing.assert_array_equal(f(np.array([1.0, -1.0])), [1.0])
    with pytest.raises(NotImplementedError, match="jax backend.*depend on data"):
        f(np.linspace(-1, 1, 100))
    # a constant mask is static: fine
    g = dg.function([x], x[np.array([True, False, True])], backend="jax")
    np.testing.assert_array_equal(g(np.array([1.0, 2.0, 3.0])), [1.0, 3.0])


def test_shapes_from_symbolic_sizes_are_static():
    x = dg.tensor("x", shape=(None, None))
    n = dg.core.shape_of(x)[0]
    y = dg.core.reshape(x, (-1,))[: n * 2 - 1] + dg.core.arange(0, n * 2 - 1).astype("float64")
    f = dg.function([x], [y, n], backend="jax")
    out, size = f(np.ones((2, 3)))
    np.testing.assert_array_equal(out, 1.0 + np.arange(3.0))
    assert size.dtype == np.int64 and int(size) == 2


@dataclass(frozen=True)
class Mystery(Op):
    """An op no backend but python knows."""

    def make_node(self, x):
        return Apply(self, [x], [TensorType(x.type.dtype, x.type.shape)])

    def infer_shape(self, inputs, input_shapes):
        return [input_shapes[0]]

    def perform(self, node, inputs):
        return [inputs[0] + 1]


def test_missing_op_fails_at_compile_time_naming_op_and_backend():
    x = dg.tensor("x", shape=(2,))
    with pytest.raises(NotImplementedError, match=r"jax backend has no implementation of op Mystery"):
        dg.function([x], Mystery()(x), backend="jax")


def test_backend_unavailable_without_jax(monkeypatch):
    from dimgraph.backends import get_backend

    monkeypatch.setitem(sys.modules, "jax", None)  # `import jax` raises ImportError
    x = dg.tensor("x", shape=(2,))
    with pytest.raises(dg.BackendUnavailable, match=r"pip install dimgraph\[jax\]"):
        get_backend("jax").compile(dg.core.FunctionGraph([x], [x + 1]))


def test_unknown_option_is_a_type_error():
    x = dg.tensor("x", shape=(2,))
    with pytest.raises(TypeError, match="unknown options"):
        dg.function([x], x + 1, backend="jax", outptu="jax")


def test_sizes_from_small_inputs_are_compiled_in():
    x = dg.tensor("x", shape=(None,))
    n = dg.scalar("n", dtype="int64")
    k = dg.scalar("k", dtype="int32")
    outs = [x[:n], dg.core.broadcast_to(x[0], (k,)), dg.core.arange(0, n)]
    f = dg.function([x, n, k], outs, backend="jax")
    data = np.arange(5.0)
    for nv, kv in [(2, 3), (4, 1), (2, 3)]:
        head, filled, r = f(data, np.int64(nv), np.int32(kv))
        np.testing.assert_array_equal(head, data[:nv])
        np.testing.assert_array_equal(filled, np.zeros(kv))
        np.testing.assert_array_equal(r, np.arange(nv))
    assert f._compiled.static_inputs() == {1, 2}  # n and k: one compile per distinct (n, k)


# ---------------------------------------------------------------------------
# random fused graphs against the python backend (same rewrites: Composite and reduce-of-elemwise kernels)

SPECIAL = [0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 3.0, np.nan, np.inf, -np.inf]
OPS = ["add", "sub", "mul", "true_div", "floor_div", "mod", "maximum", "minimum", "logaddexp", "arctan2"]
UNARY = ["exp", "log1p", "sqrt", "tanh", "sigmoid", "softplus", "abs", "floor", "sign", "neg", "square"]


@st.composite
def fused_graphs(draw):
    shape = (draw(st.sampled_from([0, 1, 3])), 2)
    dtypes = [draw(st.sampled_from(["float64", "float32", "int32", "int64", "bool"])) for _ in range(3)]
    inputs, values = [], []
    for k, dt in enumerate(dtypes):
        inputs.append(dg.tensor(f"i{k}", shape=(None, 2) if k != 2 else (1, 2), dtype=dt))
        n = int(np.prod(shape)) if k != 2 else 2
        pool = SPECIAL if dt.startswith("float") else ([True, False] if dt == "bool" else [0, 1, -1, 2, -3])
        flat = draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n))
        values.append(np.array(flat, dtype=dt).reshape(shape if k != 2 else (1, 2)))
    pool = list(inputs)
    for _ in range(draw(st.integers(2, 6))):
        a, b = draw(st.sampled_from(pool)), draw(st.sampled_from(pool))
        kind = draw(st.sampled_from(["unary", "binary", "binary", "where", "cast"]))
        try:
            if kind == "unary":
                out = getattr(dg.core, draw(st.sampled_from(UNARY)))(a)
            elif kind == "binary":
                out = dg.core.elemwise(draw(st.sampled_from(OPS)), a, b)
            elif kind == "where":
                out = dg.where(a > b, a, b * 2)
            else:
                out = dg.core.cast(a, draw(st.sampled_from(["float32", "int8", "bool", "float64"])))
        except TypeError:  # an op NumPy does not define for these dtypes
            continue
        pool.append(out)
    last = pool[-1]
    outs = [last, last.sum(axis=0), dg.core.max(dg.core.cast(last, "float64"), axis=1)]
    return inputs, values, outs


@given(fused_graphs())
def test_fused_graphs_match_python_backend(case):
    inputs, values, outs = case
    with np.errstate(all="ignore"):
        want = dg.function(inputs, outs, backend="python")(*values)
    got = dg.function(inputs, outs, backend="jax")(*values)
    # a few ulps of the narrowest float computed on the way (NumPy computes some float16 ops in float16)
    dtypes = {v.type.dtype for v in dg.core.ancestors(outs)}
    rtol = 2e-3 if "float16" in dtypes else 1e-5 if "float32" in dtypes else 1e-12
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        if w.dtype.kind == "f":
            np.testing.assert_array_equal(np.isnan(g), np.isnan(w))
            np.testing.assert_allclose(g, w, rtol=rtol, atol=rtol, equal_nan=True)
        else:
            np.testing.assert_array_equal(g, w)


def test_set_at_repeated_positions_keeps_the_last_value():
    x = dg.tensor("x", shape=(None, 2))
    i = dg.tensor("i", shape=(None,), dtype="int64")
    v = dg.tensor("v", shape=(None, 2))
    outs = [dg.core.set_subtensor(x[i], v), dg.core.set_subtensor(x[i, 1], v[:, 0]), dg.core.inc_subtensor(x[i], v)]
    f = dg.function([x, i, v], outs, backend="jax")
    g = dg.function([x, i, v], outs, backend="python")
    args = (np.zeros((3, 2)), np.array([0, 2, -3, 0, 2]), np.arange(10.0).reshape(5, 2))
    for got, want in zip(f(*args), g(*args)):
        np.testing.assert_array_equal(got, want)


def test_float_to_int_casts_of_special_values_match_numpy():
    """NaN, inf and out-of-range floats cast as NumPy does on x86-64 (XLA alone saturates)."""
    x = dg.tensor("x", shape=(None,))
    targets = ["int8", "uint8", "int16", "uint16", "int32", "int64", "bool", "float32", "float16"]
    outs = [dg.core.cast(x, t) for t in targets]
    v = np.array(
        [np.nan, np.inf, -np.inf, 3e10, -3e10, 200.0, -200.0, 300.0, -1.0, 2.0**63, 1e19, -0.5, 70000.0, 2.0**31]
    )
    with np.errstate(all="ignore"):
        want = dg.function([x], outs, backend="python")(v)
    for t, got, w in zip(targets, dg.function([x], outs, backend="jax")(v), want):
        assert got.dtype == w.dtype, t
        np.testing.assert_array_equal(got, w, err_msg=t)


def test_jax_fn_checks_shapes_at_its_boundary_naming_the_input():
    x = dg.tensor("x", shape=(None, 3))
    w = dg.tensor("w", shape=(3,))
    f = dg.function([x, w], (x * w).sum(), backend="jax")
    assert float(f.jax_fn(np.ones((2, 3)), np.arange(3.0))) == 6.0
    with pytest.raises(dg.InputError, match="input 'w': expected shape \\(3,\\), got shape \\(4,\\)"):
        f.jax_fn(np.ones((2, 3)), np.arange(4.0))
    with pytest.raises(dg.InputError, match="input 'x': expected shape \\(\\?, 3\\), got shape \\(3,\\)"):
        f.jax_fn(np.ones(3), np.arange(3.0))
    with pytest.raises(dg.InputError, match="takes 2 arguments"):
        f.jax_fn(np.ones((2, 3)))
    batched = jax.vmap(f.jax_fn, in_axes=(0, None))(np.ones((5, 2, 3)), np.arange(3.0))
    assert np.asarray(batched).tolist() == [6.0] * 5


def test_a_child_forked_after_jax_started_refuses_instead_of_hanging(tmp_path):
    """JAX is not fork-safe: a call in a forked child (a new function, one called before, the bare
    `f.jax_fn`) used to hang; it raises BackendUnavailable."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import os, signal, warnings, numpy as np
        warnings.simplefilter("ignore")
        import dimgraph as dg
        x = dg.tensor("x", shape=(None,))
        f = dg.function([x], (x * x).sum(), backend="jax")
        g = dg.function([x], x.sum() * 2.0, backend="jax")
        print("parent", float(f(np.arange(3.0))), flush=True)
        pid = os.fork()
        if pid == 0:
            signal.alarm(100)  # a hanging child must not outlive the test
            for call in (lambda: g(np.arange(3.0)), lambda: f(np.arange(3.0)), lambda: f.jax_fn(np.arange(3.0))):
                try:
                    call()
                    print("child ran", flush=True)
                except dg.BackendUnavailable as e:
                    print("child refused:", "forked" in str(e) and "spawn" in str(e), flush=True)
            os._exit(0)
        os.waitpid(pid, 0)
        """
    )
    root = str(Path(__file__).resolve().parents[2])
    env = dict(os.environ, PYTHONPATH=root, DIMGRAPH_CACHE_DIR=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:4] == ["parent 5.0"] + ["child refused: True"] * 3  # f.jax_fn hung


def test_a_scan_reads_its_sequences_at_the_step_number_without_run_time_checks():
    """The step number lies in [0, n): reading a sequence of length >= n at it (or at n - 1 - i, as the
    gradient's reverse loop does) needs no per-step bounds check, so the jitted call returns no check flags."""
    t = dg.Dim("t")
    rho, seq = dg.labeled("rho", dims=()), dg.labeled("seq", dims=(t,))
    _, path = dg.scan(lambda s, e: rho * s + e, init=dg.zeros_like(rho), sequences=seq, dim=t)
    cost = (path**2).sum()
    outs = [cost.to_positional(), dg.grad(cost, rho).to_positional(), dg.grad(cost, seq).to_positional()]
    f = dg.function([rho, seq], outs, backend="jax")
    ref = dg.function([rho, seq], outs, backend="python")
    e = np.random.default_rng(0).normal(size=30)
    for got, want in zip(f(0.7, e), ref(0.7, e)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    import jax

    with jax.enable_x64(True):
        _, flags = f._compiled.jitted[frozenset()](np.asarray(0.7), e)
    assert flags is None
