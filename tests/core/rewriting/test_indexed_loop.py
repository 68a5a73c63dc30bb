"""IndexedLoop: gathers, reductions and scatter-adds of a 1-d Elemwise fused into one pass.

The oracle is NumPy (`np.take`, `np.add.at`) and the same graph compiled without
the fusion; every backend runs it (those without an IndexedLoop kernel keep the
unfused ops, which must give the same values).
"""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph.core.fused import IndexedLoop
from dimgraph.core.reduce import CAReduce
from dimgraph.core.scalar import Composite, ScalarOp
from dimgraph.core.subtensor import AdvancedIncSubtensor, AdvancedSubtensor, inc_subtensor
from dimgraph.testing import verify_grad

UNFUSED = {"exclude": ["indexed_loop_fusion"]}


def ops(f, kind):
    return [n for n in f.fgraph.nodes if isinstance(n.op, kind)]


def _model(dtype):
    """`t[g] * x + 1`: its sum, its product, and twice it scattered into zeros of t's shape."""
    t = dg.tensor("t", shape=(None,), dtype=dtype)
    x = dg.tensor("x", shape=(None,), dtype=dtype)
    g = dg.tensor("g", shape=(None,), dtype="int64")
    v = t[g] * x + 1
    scattered = inc_subtensor(dg.core.zeros_like(t)[g], v * 2)
    return [t, x, g], [v.sum(), v.prod(), scattered]


_COMPILED = {}


def compiled(backend, dtype, rewrites="default"):
    key = (backend, dtype, str(rewrites))
    if key not in _COMPILED:
        inputs, outputs = _model(dtype)
        _COMPILED[key] = dg.function(inputs, outputs, backend=backend, rewrites=rewrites)
    return _COMPILED[key]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # backend: a constant
@given(
    n_table=st.integers(1, 5),
    n=st.integers(0, 12),
    dtype=st.sampled_from(["float64", "float32"]),
    data=st.data(),
)
def test_gather_sum_prod_and_scatter_match_numpy(backend, n_table, n, dtype, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    t = rng.normal(size=n_table).astype(dtype)
    x = rng.uniform(0.5, 1.5, size=n).astype(dtype)
    g = rng.integers(-n_table, n_table, size=n)  # negatives count from the end, repeats accumulate
    total, prod, scattered = compiled(backend, dtype)(t, x, g)
    v = t[g] * x + dtype_one(dtype)
    expected_scatter = np.zeros(n_table, dtype=dtype)
    np.add.at(expected_scatter, g, v * 2)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(total, v.sum(dtype=dtype), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(prod, np.prod(v), rtol=rtol * 10, atol=rtol)
    np.testing.assert_allclose(scattered, expected_scatter, rtol=rtol, atol=rtol)
    assert np.asarray(total).dtype == dtype and scattered.dtype == dtype


def dtype_one(dtype):
    return np.asarray(1, dtype=dtype)


def test_hierarchical_logp_and_gradient_is_one_loop_on_numba():
    mu, beta, log_sigma = dg.tensor("mu", shape=(5,)), dg.scalar("beta"), dg.scalar("log_sigma")
    x, y = dg.vector("x"), dg.vector("y")
    g = dg.tensor("g", shape=(None,), dtype="int64")
    r = (y - (mu[g] + beta * x)) / dg.exp(log_sigma)
    logp, grads = dg.value_and_grad((-0.5 * r * r).sum() - log_sigma * 7, [mu, beta, log_sigma])
    rng = np.random.default_rng(0)
    values = [
        rng.normal(size=5),
        np.asarray(0.3),
        np.asarray(-0.2),
        rng.normal(size=7),
        rng.normal(size=7),
        rng.integers(0, 5, 7),
    ]
    f = dg.function([mu, beta, log_sigma, x, y, g], [logp, *grads], backend="numba")
    assert len(ops(f, IndexedLoop)) == 1
    assert not ops(f, AdvancedSubtensor) and not ops(f, AdvancedIncSubtensor)  # no full-length temporaries
    reference = dg.function([mu, beta, log_sigma, x, y, g], [logp, *grads], backend="python", rewrites=UNFUSED)
    for got, want in zip(f(*values), reference(*values)):
        np.testing.assert_allclose(got, want, rtol=1e-12)
    mu_v, b, ls, xv, yv, gv = values
    s = math.exp(ls)
    rr = (yv - (mu_v[gv] + b * xv)) / s
    np.testing.assert_allclose(f(*values)[1], np.bincount(gv, rr / s, minlength=5), rtol=1e-12)


def test_out_of_range_index_raises_index_error(backend):
    f = compiled(backend, "float64")
    with pytest.raises(IndexError):
        f(np.ones(3), np.ones(2), np.array([0, 3]))
    with pytest.raises(IndexError):
        f(np.ones(3), np.ones(2), np.array([-4, 0]))


def test_one_checked_position_serves_the_read_and_the_write(backend):
    t, x = dg.tensor("t", shape=(4,)), dg.vector("x")
    g = dg.tensor("g", shape=(None,), dtype="int64")
    w = t[g] * x
    f = dg.function([t, x, g], [inc_subtensor(dg.core.zeros_like(t)[g], w), w.sum()], backend=backend)
    if backend == "numba":
        assert "o1[k" in f.source or "o0[k" in f.source  # the scatter writes at the gather's checked position
    tv, xv, gv = np.arange(1.0, 5.0), np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([-1, 0, 3, -4, 2])
    expected = np.zeros(4)
    np.add.at(expected, gv, tv[gv] * xv)
    scattered, total = f(tv, xv, gv)
    np.testing.assert_array_equal(scattered, expected)
    assert total == (tv[gv] * xv).sum()
    for bad in ([0, 4], [-5, 0]):
        with pytest.raises(IndexError):
            f(tv, np.ones(2), np.array(bad))


def test_loop_length_mismatch_is_a_shape_error(backend):
    with pytest.raises(dg.ShapeError):
        compiled(backend, "float64")(np.ones(3), np.ones(2), np.array([0, 1, 2]))


def test_output_read_elsewhere_is_written_in_full():
    t, x = dg.tensor("t", shape=(4,)), dg.vector("x")
    g = dg.tensor("g", shape=(None,), dtype="int64")
    v = dg.exp(t[g] + x)
    f = dg.function([t, x, g], [v.sum(), v], backend="numba")
    (loop,) = ops(f, IndexedLoop)
    assert sorted(kind for _, kind, _ in loop.op.results) == ["full", "reduce"]
    tv, xv, gv = np.arange(4.0), np.linspace(0, 1, 6), np.array([3, 0, 0, 1, 2, 3])
    total, values = f(tv, xv, gv)
    np.testing.assert_allclose(values, np.exp(tv[gv] + xv), rtol=1e-14)
    np.testing.assert_allclose(total, np.exp(tv[gv] + xv).sum(), rtol=1e-14)


_SUMMED_AND_KEPT = {}


def _summed_and_kept(backend, dtype, rewrites="default"):
    """`v = x * y + 1` summed, and `x * y * 2` kept (a prior's log density summed, its gradient returned)."""
    key = (backend, dtype, str(rewrites))
    if key not in _SUMMED_AND_KEPT:
        x, y = dg.tensor("x", shape=(None,), dtype=dtype), dg.tensor("y", shape=(None,), dtype=dtype)
        a = x * y
        _SUMMED_AND_KEPT[key] = dg.function([x, y], [(a + 1).sum(), a * 2], backend=backend, rewrites=rewrites)
    return _SUMMED_AND_KEPT[key]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # backend: a constant
@given(n=st.integers(0, 12), dtype=st.sampled_from(["float64", "float32"]), seed=st.integers(0, 2**16))
def test_a_sum_and_a_kept_output_of_one_elemwise_match_numpy(backend, n, dtype, seed):
    """With neither gathers nor scatters, a multi-output Elemwise with an output only a sum reads and one
    read elsewhere is one loop (numba: one IndexedLoop, no array for the sum), on every backend NumPy's
    values and those of the graph compiled without the fusion."""
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=n).astype(dtype), rng.normal(size=n).astype(dtype)
    total, kept = _summed_and_kept(backend, dtype)(x, y)
    unfused_total, unfused_kept = _summed_and_kept(backend, dtype, UNFUSED)(x, y)
    rtol = 1e-5 if dtype == "float32" else 1e-12
    np.testing.assert_allclose(total, (x * y + dtype_one(dtype)).sum(dtype=dtype), rtol=rtol, atol=rtol)
    np.testing.assert_allclose(total, unfused_total, rtol=rtol, atol=rtol)
    np.testing.assert_array_equal(kept, x * y * np.asarray(2, dtype=dtype))
    np.testing.assert_array_equal(kept, unfused_kept)
    assert np.asarray(total).dtype == dtype and kept.dtype == dtype and kept.shape == (n,)


def test_a_sum_and_a_kept_output_of_one_elemwise_are_one_indexed_loop_on_numba():
    f = _summed_and_kept("numba", "float64")
    (loop,) = ops(f, IndexedLoop)
    assert sorted(kind for _, kind, _ in loop.op.results) == ["full", "reduce"]
    assert not any(loop.op.gathered) and not ops(f, CAReduce)


def test_scatter_whose_base_depends_on_the_loop_stays_outside(backend):
    t, x = dg.tensor("t", shape=(3,)), dg.vector("x")
    g = dg.tensor("g", shape=(None,), dtype="int64")
    w = t[g] * x
    base = dg.core.zeros_like(t) + w.sum()  # depends on the loop's own reduction
    out = inc_subtensor(base[g], w)
    f = dg.function([t, x, g], out, backend=backend)
    tv, xv, gv = np.array([1.0, 2.0, 3.0]), np.array([1.0, 10.0, 100.0]), np.array([2, 2, 0])
    wv = tv[gv] * xv
    expected = np.full(3, wv.sum())
    np.add.at(expected, gv, wv)
    np.testing.assert_allclose(f(tv, xv, gv), expected, rtol=1e-14)


def test_static_length_one_input_broadcasts_along_the_loop(backend):
    t, c = dg.tensor("t", shape=(3,)), dg.tensor("c", shape=(1,))
    g = dg.tensor("g", shape=(None,), dtype="int64")
    w = t[g] * c
    out = inc_subtensor(dg.core.zeros_like(t)[g], w)
    f = dg.function([t, c, g], [out, w.sum()], backend=backend)
    tv, gv = np.array([1.0, 2.0, 3.0]), np.array([1, 1, 2, 0])
    scattered, total = f(tv, np.array([2.0]), gv)
    expected = np.zeros(3)
    np.add.at(expected, gv, tv[gv] * 2)
    np.testing.assert_allclose(scattered, expected)
    np.testing.assert_allclose(total, (tv[gv] * 2).sum())


def test_integer_loop_values_reduce_in_numpy_dtypes(backend):
    t = dg.tensor("t", shape=(None,), dtype="int8")
    g = dg.tensor("g", shape=(None,), dtype="int32")
    v = t[g] * 3
    f = dg.function([t, g], [v.sum(), v.max()], backend=backend)
    tv, gv = np.array([1, -2, 5], dtype="int8"), np.array([0, 2, 2, 1], dtype="int32")
    total, top = f(tv, gv)
    assert total == (tv[gv] * np.int8(3)).sum() and total.dtype == (tv[gv] * np.int8(3)).sum().dtype
    assert top == 15


def test_perform_and_gradient_of_the_op_itself():
    sq = Composite(in_dtypes=("float64", "float64"), steps=((ScalarOp("mul"), (0, 1)),), outs=(2,))
    loop = IndexedLoop(
        sq, gathered=(True, False), results=((0, "reduce", "add"), (0, "scatter", None), (0, "full", None))
    )
    idx = np.array([1, 0, 1, 1])

    def fn(table, x, base):
        total, scattered, full = loop(dg.core.constant(idx), x, table, base, dg.core.constant(idx))
        return total * 2 + (scattered * scattered).sum() + (full * full).sum()

    rng = np.random.default_rng(1)
    verify_grad(fn, [rng.normal(size=2), rng.normal(size=4), rng.normal(size=2)], backend="python")


def test_a_hand_built_indexed_loop_runs_on_every_backend(backend):
    """Backends with no kernel for it (c) expand it into the ops it fuses; jax traces them."""
    double = Composite(in_dtypes=("float64",), steps=((ScalarOp("add"), (0, 0)),), outs=(1,))
    loop = IndexedLoop(
        double, gathered=(True,), results=((0, "reduce", "add"), (0, "scatter", None), (0, "full", None))
    )
    table, idx = dg.vector("table"), dg.tensor("idx", shape=(None,), dtype="int64")
    f = dg.function([table, idx], loop(idx, table, dg.core.zeros((3,)), idx), backend=backend)
    total, scattered, full = f(np.array([1.0, 2.0, 3.0]), np.array([2, 2, -3]))
    assert float(total) == 14.0 and scattered.tolist() == [2.0, 0.0, 12.0] and full.tolist() == [6.0, 6.0, 2.0]


def test_bad_construction_is_refused():
    sq = Composite(in_dtypes=("float64",), steps=((ScalarOp("square"), (0,)),), outs=(1,))
    with pytest.raises(ValueError, match="gathered flags"):
        IndexedLoop(sq, gathered=(True, False), results=((0, "full", None),))
    with pytest.raises(ValueError, match="unknown reducer"):
        IndexedLoop(sq, gathered=(False,), results=((0, "reduce", "median"),))
    loop = IndexedLoop(sq, gathered=(False,), results=((0, "scatter", None),))
    v, i = dg.vector("v"), dg.tensor("i", shape=(None,), dtype="int64")
    with pytest.raises(TypeError, match="takes 3 inputs, got 1"):
        loop(v)
    with pytest.raises(TypeError, match="every input must be 1-d"):
        loop(dg.matrix("m"), v, i)
    with pytest.raises(TypeError, match="scatter base has dtype float32"):
        loop(v, dg.tensor("b", shape=(None,), dtype="float32"), i)
    with pytest.raises(TypeError, match="expected loop input dtypes"):
        loop(dg.tensor("w", shape=(None,), dtype="float32"), v, i)
    with pytest.raises(dg.ShapeError, match="different static lengths"):
        two = Composite(in_dtypes=("float64", "float64"), steps=((ScalarOp("add"), (0, 1)),), outs=(2,))
        IndexedLoop(two, gathered=(False, False), results=((0, "full", None),))(
            dg.tensor("p", shape=(2,)), dg.tensor("q", shape=(3,))
        )
    with pytest.raises(TypeError, match="index arrays must be integers"):
        IndexedLoop(sq, gathered=(True,), results=((0, "full", None),))(dg.vector("i"), dg.vector("t"))


# -- one index array per axis of an n-d table: cell[b, k] and its gradient's zeros[b, k] += w


def _two_index_model():
    """`c[b, k] * x + 1` summed, and its gradient with respect to the (rows, cols) table."""
    c = dg.tensor("c", shape=(None, None))
    x = dg.vector("x")
    b = dg.tensor("b", shape=(None,), dtype="int64")
    k = dg.tensor("k", shape=(None,), dtype="int64")
    v = c[b, k] * x + 1
    cost = (v * v).sum()
    return [c, x, b, k], [cost, *dg.grad(cost, [c, x])]


_TWO_INDEX = {}


def two_index(backend):
    if backend not in _TWO_INDEX:
        inputs, outputs = _two_index_model()
        _TWO_INDEX[backend] = dg.function(inputs, outputs, backend=backend)
    return _TWO_INDEX[backend]


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # backend: a constant
@given(rows=st.integers(1, 4), cols=st.integers(1, 4), n=st.integers(0, 9), seed=st.integers(0, 2**16))
def test_two_index_gather_and_scatter_match_numpy(backend, rows, cols, n, seed):
    rng = np.random.default_rng(seed)
    c, x = rng.normal(size=(rows, cols)), rng.normal(size=n)
    b = rng.integers(-rows, rows, size=n)  # negatives count from the end, repeats accumulate
    k = rng.integers(-cols, cols, size=n)
    cost, dc, dx = two_index(backend)(c, x, b, k)
    v = c[b, k] * x + 1
    expected_dc = np.zeros_like(c)
    np.add.at(expected_dc, (b, k), 2 * v * x)
    np.testing.assert_allclose(cost, (v * v).sum(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dc, expected_dc, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dx, 2 * v * c[b, k], rtol=1e-12, atol=1e-12)


def test_two_index_gather_is_read_in_place_on_numba():
    """The gather and its gradient's scatter are the loop's reads and writes: no (obs,) temporary."""
    f = two_index("numba")
    (loop,) = ops(f, IndexedLoop)
    assert 2 in loop.op.gathered and (0, "scatter", 2) in [(0, kind, n) for _, kind, n in loop.op.results]
    assert not ops(f, AdvancedSubtensor) and not ops(f, AdvancedIncSubtensor)


def test_two_index_gradient_matches_finite_differences():
    b, k = np.array([1, -1, 0, 1, 0]), np.array([2, 0, -3, 2, 1])

    def fn(c, x):
        v = c[dg.core.constant(b), dg.core.constant(k)] * x
        return (dg.sin(v) + v * v).sum()

    rng = np.random.default_rng(2)
    verify_grad(fn, [rng.normal(size=(2, 3)), rng.normal(size=5)], backend="numba")


def test_two_index_out_of_range_and_length_mismatch_raise(backend):
    f = two_index(backend)
    c, x = np.ones((2, 3)), np.ones(2)
    for b, k in (([0, 2], [0, 0]), ([0, -3], [0, 0]), ([0, 0], [3, 0]), ([0, 0], [0, -4])):
        with pytest.raises(IndexError):
            f(c, x, np.array(b), np.array(k))
    with pytest.raises(IndexError, match="could not be broadcast together"):  # NumPy's error
        f(c, x, np.array([0, 1]), np.array([0, 1, 2]))
    with pytest.raises(dg.ShapeError):  # the indices and the loop's other inputs differ in length
        f(c, np.ones(3), np.array([0, 1]), np.array([0, 1]))


def test_a_hand_built_two_index_loop_runs_on_every_backend(backend):
    """The op's own doctest form: a (2, 2) table read and scattered at (rows[j], cols[j])."""
    double = Composite(in_dtypes=("float64",), steps=((ScalarOp("add"), (0, 0)),), outs=(1,))
    loop = IndexedLoop(double, gathered=(2,), results=((0, "reduce", "add"), (0, "scatter", 2)))
    cell = dg.matrix("cell")
    rows, cols = (dg.tensor(n, shape=(None,), dtype="int64") for n in ("rows", "cols"))
    f = dg.function([cell, rows, cols], loop(rows, cell, cols, dg.core.zeros((2, 2)), rows, cols), backend=backend)
    total, scattered = f(np.array([[1.0, 2.0], [3.0, 4.0]]), np.array([1, -1, 0]), np.array([0, 1, 1]))
    assert float(total) == 2 * (3.0 + 4.0 + 2.0) and scattered.tolist() == [[0.0, 4.0], [6.0, 8.0]]
    with pytest.raises(TypeError, match="2 index arrays into a 1-d array"):
        loop(rows, dg.vector("t"), cols, dg.core.zeros((2, 2)), rows, cols)
    with pytest.raises(TypeError, match="broadcast alike"):
        loop(rows, cell, dg.tensor("one", shape=(1,), dtype="int64"), dg.core.zeros((2, 2)), rows, cols)
