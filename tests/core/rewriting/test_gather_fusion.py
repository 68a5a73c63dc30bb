"""GatherElemwise: `table[:, idx]` (one index array along one axis of an n-d array) read in place
by the elementwise or reducing loop that consumes it, with no gathered copy.

The oracle is NumPy (`np.take` then the same arithmetic) and xarray for the labeled
`sel`; every backend runs each graph (numba fuses; the python backend runs the op's
`perform`; c and jax get the gathers and loops it fuses, which must agree).
"""

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph.core.fused import GatherElemwise, IndexedLoop
from dimgraph.core.scalar import Composite, ScalarOp
from dimgraph.core.subtensor import AdvancedSubtensor
from dimgraph.testing import verify_grad


def ops(f, kind):
    return [n for n in f.fgraph.nodes if isinstance(n.op, kind)]


def _gather(table, idx, axis):
    return table[(slice(None),) * axis + (idx,)]


# kind -> (graph from the gathered value g, the other input y and a y broadcast on the gathered axis b;
#          NumPy of the same on arrays)
KINDS = {
    "sum_gathered": (lambda g, y, b, a: g.sum(axis=a), lambda g, y, b, a: g.sum(axis=a)),
    "prod_other": (lambda g, y, b, a: g.prod(axis=(a + 1) % g.ndim), lambda g, y, b, a: g.prod(axis=(a + 1) % g.ndim)),
    "sum_all": (lambda g, y, b, a: g.sum(), lambda g, y, b, a: g.sum()),
    "elemwise": (lambda g, y, b, a: g + y * b, lambda g, y, b, a: g + y * b),
    "reduce_elemwise": (lambda g, y, b, a: (g * y + b).sum(axis=0), lambda g, y, b, a: (g * y + b).sum(axis=0)),
}

_COMPILED = {}


def compiled(backend, ndim, axis, dtype, kind):
    key = (backend, ndim, axis, dtype, kind)
    if key not in _COMPILED:
        table = dg.tensor("table", shape=(None,) * ndim, dtype=dtype)
        idx = dg.tensor("idx", shape=(None,), dtype="int64")
        y = dg.tensor("y", shape=(None,) * ndim, dtype=dtype)
        b = dg.tensor("b", shape=tuple(1 if k == axis else None for k in range(ndim)), dtype=dtype)
        out = KINDS[kind][0](_gather(table, idx, axis), y, b, axis)
        _COMPILED[key] = dg.function([table, idx, y, b], out, backend=backend)
    return _COMPILED[key]


def _values(rng, shape, dtype):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if dtype.startswith("int"):
        return rng.integers(-3, 4, shape).astype(dtype)
    return rng.normal(size=shape).astype(dtype)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # backend: a constant
@given(
    ndim=st.integers(1, 3),
    data=st.data(),
    dtype=st.sampled_from(["float64", "int64", "bool"]),
    kind=st.sampled_from(sorted(KINDS)),
)
def test_fused_gather_matches_numpy(backend, ndim, data, dtype, kind):
    axis = data.draw(st.integers(0, ndim - 1), label="axis")
    shape = data.draw(st.lists(st.integers(0, 3), min_size=ndim, max_size=ndim), label="shape")
    shape[axis] = data.draw(st.integers(1, 4), label="table length")  # an index needs a position to point at
    n_idx = data.draw(st.sampled_from([0, 1, 2, 5]), label="index length")
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    idx = rng.integers(-shape[axis], shape[axis], n_idx)  # negatives and repeats
    table = _values(rng, shape, dtype)
    gathered_shape = list(shape)
    gathered_shape[axis] = n_idx
    y = _values(rng, gathered_shape, dtype)
    b = _values(rng, [1 if k == axis else s for k, s in enumerate(gathered_shape)], dtype)
    f = compiled(backend, ndim, axis, dtype, kind)
    got = np.asarray(f(table, idx, y, b))
    expected = np.asarray(KINDS[kind][1](np.take(table, idx, axis=axis), y, b, axis))
    assert got.shape == expected.shape and got.dtype == expected.dtype, (got, expected)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    if backend == "numba":  # read in place: no gathered copy left (a 1-d elementwise loop is an IndexedLoop)
        assert ops(f, (GatherElemwise, IndexedLoop)) and not ops(f, AdvancedSubtensor)


def test_labeled_sel_sum_matches_xarray_and_makes_no_copy(backend):
    labels = [f"c{i}" for i in range(6)]
    country, time_ = dg.Dim("country", coords=pd.Index(labels)), dg.Dim("time", size=7)
    data = dg.labeled("data", dims=(country, time_))
    picked, positions = ["c4", "c0", "c5"], [-1, 0, 2]  # out of order; negatives count from the end
    outputs = [
        data.sel(country=picked).sum("time"),
        data.isel(country=positions).max("country"),
        dg.exp(data.sel(country=picked)).mean("country"),
    ]
    f = dg.function([data], outputs, backend=backend)
    values = np.random.default_rng(0).normal(size=(6, 7))
    ref = xr.DataArray(values, dims=("country", "time"), coords={"country": labels})
    total, largest, mean = f(values)
    xr.testing.assert_allclose(total, ref.sel(country=picked).sum("time"))
    xr.testing.assert_allclose(largest, ref.isel(country=positions).max("country"))
    xr.testing.assert_allclose(mean, np.exp(ref.sel(country=picked)).mean("country"))
    if backend == "numba":
        assert len(ops(f, GatherElemwise)) == 3 and not ops(f, AdvancedSubtensor)


@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("bad", [3, -4])
def test_out_of_range_index_raises_index_error_naming_the_axis(backend, axis, bad):
    table = dg.matrix("table")
    idx = dg.tensor("idx", shape=(None,), dtype="int64")
    f = dg.function([table, idx], (_gather(table, idx, axis) * 2).sum(axis=1 - axis), backend=backend)
    values = np.ones((3, 3))
    np.testing.assert_allclose(f(values, np.array([0, -3, 2])), [6.0, 6.0, 6.0])
    with pytest.raises(IndexError, match=f"index {bad} is out of bounds for axis {axis} with size 3"):
        f(values, np.array([0, bad]))
    with pytest.raises(IndexError, match=f"index {bad} is out of bounds for axis {axis} with size 3"):
        f(values, np.array([bad]))


@pytest.mark.parametrize("index_dtype", ["int8", "int32", "uint8", "uint64"])
def test_narrow_and_unsigned_index_dtypes(backend, index_dtype):
    table = dg.matrix("table")
    idx = dg.tensor("idx", shape=(None,), dtype=index_dtype)
    f = dg.function([table, idx], dg.sqrt(table[:, idx]).sum(axis=0), backend=backend)
    values, positions = np.arange(12.0).reshape(3, 4), np.array([3, 1, 3], dtype=index_dtype)
    np.testing.assert_allclose(f(values, positions), np.sqrt(values[:, positions]).sum(axis=0), rtol=1e-14)
    if np.dtype(index_dtype).kind == "i":
        np.testing.assert_allclose(f(values, np.array([-4], dtype=index_dtype)), np.sqrt(values[:, [0]]).sum(axis=0))
    with pytest.raises(IndexError, match="index 4 is out of bounds for axis 1 with size 4"):
        f(values, np.array([4], dtype=index_dtype))


def test_index_checked_once_per_value_and_gather_on_outer_axis_stays_contiguous():
    table = dg.tensor("table", shape=(None, None, None))
    idx = dg.tensor("idx", shape=(None,), dtype="int64")
    outer = dg.function([table, idx], table[idx].sum(axis=2))
    inner = dg.function([table, idx], table[:, :, idx].sum(axis=1))
    outer_src, inner_src = outer.source.split("---- kernels ----")[1], inner.source.split("---- kernels ----")[1]
    # the gathered table read row by row in place: a contiguous innermost loop, or the row summed whole
    assert outer_src.count("check_index") == 1 and (
        "t0[k0, j1, j2]" in outer_src or "rt.sum_row(t0[kr0, j1, :])" in outer_src
    )
    # an inner gathered axis: its positions checked in one pass before the loops
    assert inner_src.count("check_index") == 1 and "kp0[jk] = rt_views.check_index(x0[jk], tn0, 2)" in inner_src
    values = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_allclose(outer(values, np.array([1, 1, -2])), values[[1, 1, -2]].sum(axis=2))
    np.testing.assert_allclose(inner(values, np.array([3, 0])), values[:, :, [3, 0]].sum(axis=1))


def test_the_rule_fires_where_it_applies_and_can_be_excluded():
    table = dg.tensor("table", shape=(None, None))
    idx = dg.tensor("idx", shape=(None,), dtype="int64")
    two = dg.tensor("two", shape=(None,), dtype="int64")
    outputs = [dg.exp(table[idx]).sum(axis=0), table[idx, two]]  # two index arrays: not a gather along one axis
    fused = dg.function([table, idx, two], outputs, backend="numba", rewrites={"trace": True})
    plain = dg.function([table, idx, two], outputs, backend="numba", rewrites={"exclude": ["gather_fusion"]})
    assert fused.rewrite_trace.counts["gather_fusion"] == 1 and len(ops(fused, AdvancedSubtensor)) == 1
    assert not ops(plain, GatherElemwise) and len(ops(plain, AdvancedSubtensor)) == 2
    values = (np.arange(12.0).reshape(3, 4) / 10, np.array([2, 0, 2]), np.array([1, 3, 0]))
    for got, want in zip(fused(*values), plain(*values)):
        np.testing.assert_allclose(got, want, rtol=1e-15)
    np.testing.assert_allclose(plain(*values)[0], np.exp(values[0][[2, 0, 2]]).sum(axis=0), rtol=1e-14)


def test_broadcast_mismatch_is_a_shape_error(backend):
    table = dg.matrix("table")
    y = dg.matrix("y")
    idx = dg.tensor("idx", shape=(None,), dtype="int64")
    f = dg.function([table, idx, y], table[idx] + y, backend=backend)
    with pytest.raises(dg.ShapeError):
        f(np.ones((3, 2)), np.array([0, 1]), np.ones((3, 2)))


def _hand_built():
    add = Composite(in_dtypes=("float64", "float64"), steps=((ScalarOp("mul"), (0, 1)),), outs=(2,))
    return GatherElemwise(add, gather_axes=(1, None), reducer="add", axis=(0,))


def test_perform_and_gradient_of_the_op_itself():
    op = _hand_built()
    table, w = np.arange(6.0).reshape(2, 3), np.array([[1.0, 2.0], [3.0, 4.0]])
    idx = np.array([2, 2])  # a repeat: the table's gradient accumulates
    grads = verify_grad(lambda w, t: op(dg.core.constant(idx), w, t).sum(), [w, table], backend="python")
    np.testing.assert_allclose(grads[0], table[:, idx])
    expected_table_grad = np.zeros_like(table)
    np.add.at(expected_table_grad, (slice(None), idx), w)
    np.testing.assert_allclose(grads[1], expected_table_grad)


def test_a_hand_built_gather_elemwise_runs_on_every_backend(backend):
    """Backends with no kernel for it (c) expand it into the ops it fuses; jax traces them."""
    op = _hand_built()
    t, w = dg.matrix("t"), dg.matrix("w")
    idx = dg.tensor("idx", shape=(None,), dtype="int64")
    f = dg.function([idx, w, t], op(idx, w, t), backend=backend)
    table, weights = np.arange(6.0).reshape(2, 3), np.array([[1.0, 2.0], [3.0, 4.0]])
    np.testing.assert_allclose(f(np.array([2, -3]), weights, table), (table[:, [2, 0]] * weights).sum(axis=0))


def test_bad_construction_is_refused():
    ident = Composite(in_dtypes=("float64",), steps=(), outs=(0,))
    with pytest.raises(ValueError, match="1 gather axes for 2 inputs"):
        GatherElemwise(_hand_built().scalar_op, gather_axes=(0,))
    with pytest.raises(ValueError, match="unknown reducer"):
        GatherElemwise(ident, gather_axes=(0,), reducer="median", axis=(0,))
    op = GatherElemwise(ident, gather_axes=(1,))
    m, i = dg.matrix("m"), dg.tensor("i", shape=(None,), dtype="int64")
    with pytest.raises(TypeError, match="takes 2 inputs, got 1"):
        op(i)
    with pytest.raises(TypeError, match="index arrays must be 1-d integers"):
        op(dg.vector("f"), m)
    with pytest.raises(ValueError, match="gather axis 1 out of range"):
        op(i, dg.vector("v"))
    assert op(i, m).type.shape == (None, None)
