"""The c backend's own behaviour: disk cache across processes, concurrent compiles, compiler errors,
missing emitters (registry coverage: tests/test_registries.py), and NumPy's edge semantics in generated code.

The op semantics themselves are covered by the backend-parametrized suites
(tests/core), which run on `c` like on every registered backend.
"""

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass

import numpy as np
import pytest

import dimgraph as dg
from dimgraph.backends.c import build
from dimgraph.backends.c.registry import MissingEmitter
from dimgraph.core.graph import Apply, Op
from dimgraph.core.type import TensorType
from dimgraph.errors import BackendUnavailable

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# A graph no other test builds (its source, hence its cache key, is its own).
SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np
    import dimgraph as dg
    from dimgraph.backends.c import build

    x = dg.tensor("x", shape=(None, 3), dtype="float32")
    y = dg.tensor("y", shape=(3,), dtype="float32")
    start = time.perf_counter()
    f = dg.function([x, y], [dg.tanh(x) * y - x / 7, (x * y).max(axis=0)], backend="c")
    elapsed = time.perf_counter() - start
    a = np.arange(12, dtype="float32").reshape(4, 3)
    b = np.array([1, -2, 3], dtype="float32")
    r0, r1 = f(a, b)
    ok = np.allclose(r0, np.tanh(a) * b - a / 7, rtol=1e-5) and np.array_equal(r1, (a * b).max(0))
    print(json.dumps({"seconds": elapsed, "ok": bool(ok and r0.dtype == np.float32), **build.stats}))
    """
)


def _run_script(cache_dir, extra_env=None):
    env = dict(os.environ, DIMGRAPH_CACHE_DIR=str(cache_dir), PYTHONPATH=ROOT)
    env.update(extra_env or {})
    return subprocess.Popen(
        [sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _result(proc):
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_second_process_loads_the_cache_without_compiling(tmp_path):
    cold = _result(_run_script(tmp_path))
    warm = _result(_run_script(tmp_path))
    assert cold["ok"] and warm["ok"]
    assert cold["compiled"] == 1 and cold["loaded_from_disk"] == 0
    assert warm["compiled"] == 0 and warm["loaded_from_disk"] == 1
    assert warm["seconds"] < cold["seconds"]
    print(
        f"\nc backend compile: cold {cold['seconds']:.3f} s (gcc {cold['compile_seconds']:.3f} s), warm {warm['seconds']:.3f} s"
    )


def test_concurrent_compiles_of_one_graph(tmp_path):
    procs = [_run_script(tmp_path) for _ in range(4)]
    results = [_result(p) for p in procs]
    assert all(r["ok"] for r in results)
    c_dir = tmp_path / "c"
    libs = sorted(p.name for p in c_dir.iterdir() if p.suffix == ".so")
    assert len(libs) == 1, libs
    assert not [p.name for p in c_dir.iterdir() if p.name.startswith(".")], "temporary files left behind"
    # the library in place is whole: a fresh process loads it
    assert _result(_run_script(tmp_path))["compiled"] == 0


def test_missing_compiler_names_it_and_cc(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    x = dg.vector("x")
    with pytest.raises(BackendUnavailable, match=r"/nonexistent/cc.*CC"):
        dg.function([x], x * 2, backend="c")


def test_compile_error_shows_source_path_and_compiler_message(tmp_path, monkeypatch):
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", str(tmp_path))
    with pytest.raises(build.CCompileError) as info:
        build.load("int dg_run(void) { return undefined_name; }\n")
    message = str(info.value)
    assert str(tmp_path / "c") in message and ".c" in message
    assert "undefined_name" in message


@dataclass(frozen=True)
class _Unknown(Op):
    def make_node(self, x):
        return Apply(self, [x], [TensorType(x.type.dtype, x.type.shape)])

    def infer_shape(self, inputs, input_shapes):
        return [input_shapes[0]]

    def perform(self, node, inputs):
        return [inputs[0] + 1]


def test_missing_emitter_fails_at_compile_time_naming_op_and_backend():
    x = dg.vector("x")
    with pytest.raises(MissingEmitter, match=r"c backend.*_Unknown"):
        dg.function([x], _Unknown()(x), backend="c")


def test_same_graph_built_twice_gives_the_same_source():
    def make():
        x = dg.tensor("x", shape=(None, 2))
        return dg.function([x], [dg.exp(x).sum(axis=0), x[:, ::-1]], backend="c")

    assert make().source == make().source


@pytest.fixture(scope="module")
def edge_fn():
    a = dg.tensor("a", shape=(None,), dtype="int64")
    b = dg.tensor("b", shape=(None,), dtype="int64")
    i8 = dg.tensor("i8", shape=(None,), dtype="int8")
    f = dg.tensor("f", shape=(None,), dtype="float32")
    g = dg.tensor("g", shape=(None,), dtype="float64")
    outs = [a // b, a % b, i8 * i8, dg.round(f), dg.maximum(g, 0.5), g.max(), g.min(), f / 3, f // g, f % g, g.argmax()]
    return dg.function([a, b, i8, f, g], outs, backend="c")


def test_numpy_edge_semantics(edge_fn):
    m = np.iinfo(np.int64).min
    a = np.array([7, -7, 7, -7, 5, m, m], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 0, -1, 3], dtype=np.int64)
    i8 = np.array([100, -100, 12, 0, 1, 2, 3], dtype=np.int8)
    f = np.array([0.5, 1.5, 2.5, -0.5, -1.5, np.nan, 3.25], dtype=np.float32)
    g = np.array([1.0, np.nan, -3.0, 0.0, -0.0, 2.0, 0.0])
    with np.errstate(all="ignore"):
        expected = [
            a // b,
            a % b,
            i8 * i8,
            np.round(f),
            np.maximum(g, 0.5),
            g.max(),
            g.min(),
            f / np.float32(3),
            f // g,
            f % g,
            g.argmax(),
        ]
    got = edge_fn(a, b, i8, f, g)
    for k, (r, e) in enumerate(zip(got, expected)):
        e = np.asarray(e)
        assert r.dtype == e.dtype, (k, r.dtype, e.dtype)
        np.testing.assert_array_equal(r, e, err_msg=f"output {k}")


def test_strided_and_reversed_inputs_and_reshape_copies():
    x = dg.tensor("x", shape=(None, None))
    f = dg.function([x], [dg.exp(x), x.T.reshape((-1,)), x[::-1, 1:].sum(axis=0)], backend="c")
    base = np.arange(24.0).reshape(4, 6)
    v = base[::-1, ::2]  # negative and non-unit strides
    r0, r1, r2 = f(v)
    np.testing.assert_allclose(r0, np.exp(v))
    np.testing.assert_array_equal(r1, v.T.reshape(-1))
    np.testing.assert_array_equal(r2, v[::-1, 1:].sum(axis=0))


def test_shapes_that_depend_on_computed_values_and_assert():
    x = dg.tensor("x", shape=(None,), dtype="int64")
    n = x.sum()  # computed in the graph; the plan evaluates it before C runs
    y = dg.core.reshape(dg.core.arange(0, n * 2), (n, 2))
    checked = dg.core.assert_op(x * 2, (x >= 0).all(), msg="x must be non-negative")
    f = dg.function([x], [y, checked], backend="c")
    r0, r1 = f(np.array([1, 2], dtype=np.int64))
    np.testing.assert_array_equal(r0, np.arange(6).reshape(3, 2))
    np.testing.assert_array_equal(r1, [2, 4])
    with pytest.raises(AssertionError, match="non-negative"):
        f(np.array([1, -2], dtype=np.int64))


def test_runtime_broadcast_of_unknown_size_is_a_shape_error():
    x = dg.tensor("x", shape=(None,))
    y = dg.tensor("y", shape=(None,))
    f = dg.function([x, y], x + y, backend="c")
    with pytest.raises(dg.ShapeError if hasattr(dg, "ShapeError") else ValueError):
        f(np.ones(3), np.ones(1))


def test_one_compile_per_source_in_a_process():
    before = dict(build.stats)
    x = dg.tensor("x", shape=(None, 5), dtype="int8")
    for _ in range(3):
        dg.function([x], [x // 3, x % 3], backend="c")
    assert build.stats["compiled"] - before["compiled"] <= 1


def test_negative_integer_power_raises_as_numpy():
    x = dg.tensor("x", shape=(None,), dtype="int64")
    f = dg.function([x], [x**x, (x**2).sum()], backend="c")
    r0, r1 = f(np.array([2, 3], dtype=np.int64))
    np.testing.assert_array_equal(r0, [4, 27])
    assert r1 == 13
    with pytest.raises(ValueError, match="negative integer powers"):
        f(np.array([2, -1], dtype=np.int64))
    f(np.array([1], dtype=np.int64))  # the flag was cleared


def test_unknown_option_is_a_type_error():
    x = dg.vector("x")
    with pytest.raises(TypeError, match="c backend"):
        dg.function([x], x + 1, backend="c", fastmath=True)


@pytest.fixture(scope="module")
def mixed_graph():
    x = dg.tensor("x", shape=(None, None))
    y = dg.tensor("y", shape=(None, None), dtype="float32")
    i = dg.tensor("i", shape=(None,), dtype="int64")
    outs = [
        dg.exp(x) * 2 - dg.sigmoid(y),
        (x * x).sum(axis=1),
        x.max(axis=0),
        dg.core.matmul(x, x.T),
        dg.core.concatenate([x, y.astype("float64")], axis=0),
        x[i],
        dg.core.cumsum(y, axis=1),
        dg.core.inc_subtensor(x[i], 1.0),
        dg.core.reshape(x.T, (-1,)),
        x.argmin(axis=1),
    ]
    inputs = [x, y, i]
    return dg.function(inputs, outs, backend="c"), dg.function(inputs, outs, backend="python")


def _layouts(draw, a):
    """`a` as a (possibly) transposed, reversed or strided view holding the same values."""
    from hypothesis import strategies as st

    kind = draw(st.sampled_from(["plain", "fortran", "reversed", "strided"]))
    if kind == "fortran":
        return np.asfortranarray(a)
    if kind == "reversed":
        return np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1]
    if kind == "strided":
        big = np.zeros((a.shape[0] * 2, a.shape[1] * 3), a.dtype)
        big[::2, ::3] = a
        return big[::2, ::3]
    return a


def test_c_agrees_with_python_on_any_memory_layout(mixed_graph):
    from hypothesis import given
    from hypothesis import strategies as st
    from hypothesis.extra import numpy as hnp

    f_c, f_py = mixed_graph

    @given(st.integers(1, 5), st.integers(1, 5), st.data())
    def check(n, m, data):
        floats = st.floats(-5, 5, allow_nan=False, width=64)
        a = data.draw(hnp.arrays(np.float64, (n, m), elements=floats))
        b = data.draw(hnp.arrays(np.float32, (n, m), elements=st.floats(-5, 5, width=32)))
        idx = data.draw(hnp.arrays(np.int64, (data.draw(st.integers(0, 4)),), elements=st.integers(-n, n - 1)))
        args = [_layouts(data.draw, a), _layouts(data.draw, b), idx]
        for k, (r, e) in enumerate(zip(f_c(*args), f_py(*args))):
            assert r.dtype == e.dtype and r.shape == e.shape, k
            np.testing.assert_allclose(r, e, rtol=2e-6, err_msg=f"output {k}")  # float32 libm vs NumPy: 1 ulp

    check()


def test_kernels_that_print_alike_are_one_function():
    x = dg.tensor("x", shape=(None, None))
    y = x
    for _ in range(30):
        y = dg.exp(y.sum(axis=0, keepdims=True) * 0.001) + y[::-1] * 0.5
    f = dg.function([x], y.max(), backend="c")
    assert f.source.count("static int dg_kernel") < 10
    a = np.random.default_rng(0).random((5, 4))
    np.testing.assert_allclose(f(a), dg.function([x], y.max(), backend="python")(a), rtol=1e-12)


def test_gather_and_scatter_cost_the_elements_moved_not_the_table():
    """A gather of 10 elements from 4e6 allocates nothing the size of the table (it built a 32 MB grid)."""
    import tracemalloc

    t = dg.tensor("t", shape=(None,))
    i = dg.tensor("i", shape=(None,), dtype="int64")
    m = dg.tensor("m", shape=(None, None))
    gather = dg.function([t, i], t[i], backend="c")
    scatter = dg.function([m, i], dg.core.inc_subtensor(m[i, 1:3], 1.0), backend="c")
    table, idx = np.arange(4e6), np.array([5, -1, 7, 5])
    matrix = np.zeros((2000, 2000))
    gather(table, idx), scatter(matrix, idx)
    tracemalloc.start()
    out = gather(table, idx)
    peak_gather = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    scattered = scatter(matrix, idx)
    peak_scatter = tracemalloc.get_traced_memory()[1] - matrix.nbytes  # the output itself is a new matrix
    tracemalloc.stop()
    assert out.tolist() == [5.0, 3999999.0, 7.0, 5.0]
    expected = matrix.copy()
    np.add.at(expected, (idx[:, None], np.arange(1, 3)[None, :]), 1.0)
    np.testing.assert_array_equal(scattered, expected)
    assert peak_gather < 100_000 and peak_scatter < 100_000, (peak_gather, peak_scatter)
    with pytest.raises(IndexError, match="index 4000000 is out of bounds for axis 0 with size 4000000"):
        gather(table, np.array([4_000_000]))
