"""numba-specific behaviour: kernel reuse, the disk cache across processes, inspectable source.

Values on every op are checked by the backend-parametrized suites (tests/core,
tests/compile, ...); these tests cover what only this backend promises.
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
from dimgraph.core.graph import Apply, Op
from dimgraph.core.type import TensorType

pytest.importorskip("numba")


def _kernel_lines(source):
    graph_part = source.split("# ---- kernels ----")[0]
    return [line for line in graph_part.splitlines() if "_kernel(" in line and "=" in line]


def test_identical_kernels_are_printed_and_compiled_once():
    x = dg.tensor("x", shape=(None, 4))
    h = x
    for k in range(6):  # six structurally identical blocks
        h = dg.tanh(h * (k + 1.0) + 0.5)
    f = dg.function([x], h, backend="numba", rewrites="none")
    lines = _kernel_lines(f.source)
    # mul, add, tanh and the DimShuffle of constants: one kernel each, whatever the block count
    assert len(lines) <= 4, lines
    data = np.linspace(-1, 1, 8).reshape(2, 4)
    expected = dg.function([x], h, backend="python", rewrites="none")(data)
    np.testing.assert_allclose(f(data), expected, rtol=1e-12)


def test_kernels_are_shared_across_graphs():
    from dimgraph.backends.numba import cache

    x = dg.tensor("x", shape=(None,))
    y = dg.tensor("y", shape=(None,))
    f = dg.function([x], dg.exp(x), backend="numba", rewrites="none")
    g = dg.function([y], dg.exp(y) * 2.0, backend="numba", rewrites="none")
    shared = set(f._compiled.kernel_digests) & set(g._compiled.kernel_digests)
    assert shared, "the exp kernel should be one module for both graphs"
    for key in shared:
        assert cache._LOADED[key].kernel is cache.kernel(key)
    np.testing.assert_allclose(g(np.arange(3.0)), 2 * np.exp(np.arange(3.0)))


def test_source_is_inspectable_and_holds_no_user_names():
    secret = dg.tensor("secret_input_name", shape=(None, 3))
    other = dg.tensor("another_user_label", shape=(1, 3))
    out = dg.exp(secret) * other + 1
    out.name = "user_output_label"
    f = dg.function([secret, other], [out, out.sum()], backend="numba")
    src = f.source
    assert "def graph(" in src and "def kernel(" in src and "for j0 in range(n0):" in src
    for name in ("secret_input_name", "another_user_label", "user_output_label"):
        assert name not in src
    a, b = np.ones((2, 3)), np.full((1, 3), 2.0)
    r = f(a, b)
    np.testing.assert_allclose(r[0], np.e * 2 + 1)
    np.testing.assert_allclose(r[1], 6 * (np.e * 2 + 1))


def test_assert_message_is_escaped():
    x = dg.tensor("x", shape=(None,))
    msg = 'x must be positive"\nimport os; os.system("echo pwned")'
    y = dg.core.assert_op(x, (x > 0).all(), msg=msg)
    f = dg.function([x], y, backend="numba")
    assert "os.system" not in f.source
    np.testing.assert_allclose(f(np.ones(2)), [1.0, 1.0])
    with pytest.raises(AssertionError):
        f(-np.ones(2))


@dataclass(frozen=True)
class _Unregistered(Op):
    def make_node(self, x):
        return Apply(self, [x], [TensorType(x.type.dtype, x.type.shape)])

    def infer_shape(self, inputs, input_shapes):
        return [input_shapes[0]]

    def perform(self, node, inputs):
        return [inputs[0]]


def test_missing_op_fails_at_compile_time_naming_op_and_backend():
    x = dg.tensor("x", shape=(2,))
    with pytest.raises(NotImplementedError, match="numba backend.*_Unregistered"):
        dg.function([x], _Unregistered()(x), backend="numba")


def test_rank_aware_kernel_hoists_the_low_rank_factor():
    a = dg.tensor("a", shape=(None,))
    b = dg.tensor("b", shape=(None,))
    out = (dg.exp(a[:, None] + b[None, :]) * dg.log1p(b * b)[None, :]).sum(axis=1)
    f = dg.function([a, b], out, backend="numba")
    av, bv = np.linspace(-1, 1, 5), np.linspace(0, 2, 7)
    expected = (np.exp(av[:, None] + bv[None, :]) * np.log1p(bv * bv)[None, :]).sum(axis=1)
    np.testing.assert_allclose(f(av, bv), expected, rtol=1e-12)
    kernels = f.source.split("# ---- kernels ----")[1]
    fused = next(k for k in kernels.split("\n# k") if "exp_f64" in k)
    lines = fused.splitlines()
    first_outer = next(i for i, line in enumerate(lines) if line.strip().startswith("for j0 in"))
    assert not any("log1p" in line for line in lines[first_outer:]), fused  # never recomputed per (x, y)


def test_loop_printer_computes_a_low_rank_subexpression_once():
    from dimgraph.backends.numba.loops import loop_kernel
    from dimgraph.core.scalar import ScalarOp

    # exp(a + b) * log1p(b * b) with a on axis 0 only and b on axis 1 only
    steps = (
        (ScalarOp("add"), (0, 1)),
        (ScalarOp("exp"), (2,)),
        (ScalarOp("mul"), (1, 1)),
        (ScalarOp("log1p"), (4,)),
        (ScalarOp("mul"), (3, 5)),
    )
    src = loop_kernel([(False, True), (True, False)], ["float64", "float64"], steps, [(6, ("add", (1,), "float64"))])
    lines = src.splitlines()
    first_outer = next(i for i, line in enumerate(lines) if line.strip().startswith("for j0 in"))
    assert any("np.log1p" in line for line in lines[:first_outer]), src  # a temporary of b's rank
    assert not any("np.log1p" in line for line in lines[first_outer:]), src


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_division_by_a_loop_invariant_is_within_one_ulp_and_exact_at_the_edges(dtype):
    # the loops that reduce or gather get the products: an IndexedLoop writing x[i] / c in full
    t = dg.tensor("t", shape=(None,), dtype=dtype)
    i = dg.tensor("i", shape=(None,), dtype="int64")
    c = dg.tensor("c", shape=(), dtype=dtype)
    v = t[i] / c
    g = dg.function([t, i, c], [v, v.sum()], backend="numba")
    assert "reciprocal_exact" in g.source  # printed as a product with 1 / c

    def f(xs, d):
        return g(xs, np.arange(len(xs)), d)

    rng = np.random.default_rng(0)
    xs = np.concatenate([rng.normal(size=20_000) * s for s in (1e-30, 1e-3, 1.0, 1e3, 1e30)]).astype(dtype)
    xs = np.concatenate([xs, np.array([0.0, -0.0, np.inf, -np.inf, np.nan], dtype=dtype)])
    info = np.finfo(dtype)
    for divisor in [3.0, -7.1, 1e-3, 1e20, 0.1, float(info.tiny) * 4, 1 / float(info.tiny) / 4]:
        d = np.asarray(divisor, dtype=dtype)
        with np.errstate(all="ignore"):
            got, want = f(xs, d)[0], xs / d
        finite = np.isfinite(want)
        np.testing.assert_array_equal(np.isfinite(got), finite)
        np.testing.assert_array_equal(got[~finite], want[~finite])
        ulps = np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]).astype(dtype))
        assert ulps.max() <= 1.0, (divisor, ulps.max())
    # 0, inf and nan divisors, subnormal and huge ones (reciprocal not normal): NumPy's results exactly
    for divisor in [0.0, -0.0, np.inf, -np.inf, np.nan, float(info.smallest_subnormal) * 3, float(info.max) / 2]:
        d = np.asarray(divisor, dtype=dtype)
        with np.errstate(all="ignore"):
            np.testing.assert_array_equal(f(xs, d)[0], xs / d)


def test_vectorizable_exp_is_within_two_ulp_of_numpy():
    x = dg.tensor("x", shape=(None,))
    f = dg.function([x], dg.exp(x), backend="numba")
    assert "exp_f64" in f.source
    rng = np.random.default_rng(0)
    xs = np.concatenate(
        [np.linspace(-708.3, 709.7, 400_001), rng.uniform(-2, 2, 100_000), rng.normal(size=100_000) * 50]
    )
    got, want = f(xs), np.exp(xs)
    ulps = np.abs(got - want) / np.spacing(want)
    assert ulps.max() <= 2, (xs[np.argmax(ulps)], ulps.max())
    assert (ulps > 1).mean() < 0.01
    edges = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 709.79, 709.8, 710.0, -745.2, -745.1, -746.0, -720.0, 1e-300])
    with np.errstate(all="ignore"):
        want = np.exp(edges)
    got = f(edges)
    np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
    finite = np.isfinite(want) & (want != 0)
    np.testing.assert_array_equal(got[~finite], want[~finite])
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-15)


def test_numpy_semantics_at_the_edges():
    i = dg.tensor("i", shape=(None,), dtype="int64")
    j = dg.tensor("j", shape=(None,), dtype="int64")
    x = dg.tensor("x", shape=(None,))
    f = dg.function([i, j, x], [i // j, i % j, dg.maximum(x, 0.0), x.max()], backend="numba")
    a, b = np.array([7, -7, 5]), np.array([0, 2, -1])
    xs = np.array([1.0, np.nan, -1.0])
    q, r, m, mx = f(a, b, xs)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(q, a // b)
        np.testing.assert_array_equal(r, a % b)
    np.testing.assert_array_equal(m, np.maximum(xs, 0.0))
    assert np.isnan(mx)


def test_runtime_broadcast_mismatch_is_shape_error():
    x = dg.tensor("x", shape=(None,))
    y = dg.tensor("y", shape=(None,))
    f = dg.function([x, y], x + y, backend="numba")
    with pytest.raises(dg.ShapeError):
        f(np.ones(3), np.ones(1))


def test_float16_graph_runs_on_the_reference():
    x = dg.tensor("x", shape=(3,), dtype="float16")
    f = dg.function([x], x * 2, backend="numba")
    out = f(np.ones(3, dtype="float16"))
    assert out.dtype == np.float16 and out.tolist() == [2.0, 2.0, 2.0]
    assert "python backend" in f.source


_SCRIPT = textwrap.dedent(
    """
    import json, time, numpy as np
    t0 = time.perf_counter()
    import dimgraph as dg
    x = dg.tensor("x", shape=(None, 3))
    w = dg.tensor("w", shape=(3,))
    h = dg.tanh(x * w + 1.0)
    cost = (h * h).sum()
    f = dg.function([x, w], [cost, dg.grad(cost, w)], backend="numba")
    out = f(np.ones((4, 3)), np.full(3, 0.5))
    from dimgraph.backends.numba import cache
    stats = [cache.kernel(key).stats for key in f._compiled.kernel_digests]
    print(json.dumps({"hits": sum(sum(s.cache_hits.values()) for s in stats),
                      "misses": sum(sum(s.cache_misses.values()) for s in stats),
                      "seconds": time.perf_counter() - t0}))
    """
)


def test_second_process_loads_from_the_disk_cache(tmp_path):
    env = dict(os.environ, DIMGRAPH_CACHE_DIR=str(tmp_path / "cache"))
    runs = []
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert runs[0]["misses"] >= 1 and runs[0]["hits"] == 0
    assert runs[1]["hits"] >= 1 and runs[1]["misses"] == 0
    files = list((tmp_path / "cache").rglob("*.py"))
    assert files and not list((tmp_path / "cache").rglob(".tmp-*"))


# Reductions over the rows of a matrix with a few static columns: one accumulator per column
# (`loops.column_reduce_kernel`). (reducer, dtype, columns); one compile each.
COLUMN_CASES = [("sum", "float64", 3), ("sum", "float64", 8), ("max", "float32", 2), ("min", "int32", 3),
                ("prod", "float64", 1), ("any", "bool", 3)]  # fmt: skip


@pytest.fixture(scope="module")
def column_reductions():
    fns = {}
    for reducer, dtype, columns in COLUMN_CASES:
        x = dg.matrix("x", dtype=dtype, shape=(None, columns))
        fns[reducer, dtype, columns] = dg.function([x], getattr(x, reducer)(axis=0), backend="numba")
    return fns


@pytest.mark.parametrize("case", COLUMN_CASES, ids=lambda c: "-".join(map(str, c)))
def test_column_reductions_are_one_pass_with_numpys_results(column_reductions, case):
    from hypothesis import given
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import arrays, from_dtype

    reducer, dtype, columns = case
    f = column_reductions[case]
    assert f"acc{columns - 1} = " in f.source and "for j1 in" not in f.source
    elements = (
        from_dtype(np.dtype(dtype), allow_nan=False, allow_infinity=False, min_value=-1e3, max_value=1e3)
        if dtype != "bool"
        else st.booleans()
    )
    low = 1 if reducer in ("max", "min") else 0

    @given(arrays(dtype, st.tuples(st.integers(low, 40), st.just(columns)), elements=elements))
    def check(x):
        got, want = f(x), getattr(np, reducer)(x, axis=0)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-12 if dtype == "float64" else 1e-6)

    check()
    if reducer in ("max", "min"):
        with pytest.raises(ValueError, match="zero-size array to reduction operation"):
            f(np.zeros((0, columns), dtype=dtype))
