"""Cases from PyTensor's xtensor suite that dimgraph failed: squeeze, full_like, tuple-named indexers,
masks next to indexers, xarray-einstats' solve; values against xarray (or NumPy) on every backend."""

import numpy as np
import pytest
import xarray as xr
import xarray_einstats.linalg as xe

import dimgraph as dg

A3, B5 = dg.Dim("a", size=3), dg.Dim("b", size=5)


def _x_test():
    return xr.DataArray(np.arange(15.0).reshape(3, 5), dims=("a", "b"))


def test_squeeze_of_a_dim_sized_by_the_data(backend):
    c = dg.Dim("c")
    y = dg.labeled("y", dims=(A3, c))
    f = dg.function([y], [y.squeeze("c"), y.squeeze(["c", "c"]) * 2], backend=backend)
    data = xr.DataArray(np.arange(3.0).reshape(3, 1), dims=("a", "c"))
    once, twice = f(data)
    xr.testing.assert_identical(once, data.squeeze("c"))
    xr.testing.assert_identical(twice, data.squeeze(["c", "c"]) * 2)
    with pytest.raises(AssertionError, match=r"squeeze: the data's dims 'c' must have size 1"):
        f(xr.DataArray(np.ones((3, 2)), dims=("a", "c")))


def test_squeeze_refuses_a_static_size_other_than_one():
    y = dg.labeled("y", dims=(A3, B5))
    with pytest.raises(dg.DimError, match="squeeze: dim 'b' has size 5, not 1"):
        y.squeeze("b")


def test_full_like_with_a_symbolic_fill_value(backend):
    x = dg.labeled("x", dims=(A3, B5), dtype="int64")
    v = dg.labeled("v", dims=())
    per_row = dg.labeled("per_row", dims=(A3,), dtype="int64")
    t = dg.tensor("t", shape=())
    f = dg.function(
        [x, v, per_row, t],
        [dg.full_like(x, v), dg.full_like(x, per_row), dg.full_like(x, t, dtype="float64")],
        backend=backend,
    )
    xt = xr.DataArray(np.zeros((3, 5), dtype="int64"), dims=("a", "b"))
    filled, rows, positional = f(xt, 2.0, np.array([1, 2, 3]), 0.5)
    xr.testing.assert_identical(filled, xr.full_like(xt, 2))
    np.testing.assert_array_equal(rows.values, np.repeat([[1], [2], [3]], 5, axis=1))
    assert rows.dims == ("a", "b")
    xr.testing.assert_identical(positional, xr.full_like(xt, 0.5, dtype="float64"))
    with pytest.raises(dg.DimError, match=r"fill value has dims \(c: 2\) that x lacks"):
        dg.full_like(x, dg.labeled("w", dims=(dg.Dim("c", size=2),)))


@pytest.mark.parametrize(
    "key",
    [
        lambda i: (("b", i), slice(1, None)),  # named on b: pointwise with b's slice, as xarray
        lambda i: (("a", i),),
        lambda i: ((("a",), i),),
        lambda i: (("new_a", i),),
        lambda i: ((["new_a"], i),),
    ],
    ids=["on-b-pointwise", "a", "a-tuple", "new", "new-list"],
)
def test_tuple_named_positional_indexers(backend, key):
    x = dg.labeled("x", dims=(A3, B5))
    idx = dg.tensor("idx", shape=(4,), dtype="int64")
    f = dg.function([x, idx], x[key(idx)], backend=backend)
    positions = np.array([0, 1, 0, 2])
    xr.testing.assert_allclose(f(_x_test(), positions), _x_test()[key(positions)])


def test_tuple_named_indexers_with_several_dims(backend):
    x = dg.labeled("x", dims=(dg.Dim("a", size=5), dg.Dim("b", size=7)))
    idx1, idx2 = dg.tensor("idx1", shape=(4, 3), dtype="int64"), dg.tensor("idx2", shape=(3, 2), dtype="int64")
    f = dg.function([x, idx1, idx2], x[(("out1", "out2"), idx1), (["out2", "out3"], idx2)], backend=backend)
    rng = np.random.default_rng(0)
    i1, i2 = rng.binomial(4, 0.5, (4, 3)), rng.binomial(4, 0.5, (3, 2))
    xt = xr.DataArray(np.arange(35.0).reshape(5, 7), dims=("a", "b"))
    xr.testing.assert_allclose(f(xt, i1, i2), xt[(("out1", "out2"), i1), (["out2", "out3"], i2)])


def test_tuple_naming_of_a_labeled_indexer_is_refused():
    x = dg.labeled("x", dims=(A3, B5))
    idx1 = dg.labeled("idx1", dims=(dg.Dim("c", size=4),), dtype="int64")
    with pytest.raises(IndexError, match=r"labeled indexer 'idx1' already has dims.*use .rename\(\)"):
        x[("d", idx1),]
    with pytest.raises(IndexError, match=r"names 2 dims for positions with 1 axes"):
        x[(("d", "e"), np.array([0, 1])),]


def test_solve_in_xarray_einstats_convention(backend):
    city, country, galaxy = dg.Dim("city", size=4), dg.Dim("country", size=4), dg.Dim("galaxy", size=1)
    planet, district = dg.Dim("planet", size=2), dg.Dim("district", size=5)
    a = dg.labeled("a", dims=(city, country, galaxy))
    b = dg.labeled("b", dims=(city, planet))
    b3 = dg.labeled("b3", dims=(district, city, planet))
    b_row = dg.labeled("b_row", dims=(country, district))
    outs = [
        dg.linalg.solve(a, b, dims=["country", "city"]),
        dg.linalg.solve(a, b3, dims=["country", "city", "district"]),
        dg.linalg.solve(a, b_row, dims=["country", "city", "district"]),
    ]
    f = dg.function([a, b, b3, b_row], outs, backend=backend)
    rng = np.random.default_rng(25)
    at = xr.DataArray(rng.random((4, 4, 1)) + 4 * np.eye(4)[:, :, None], dims=("city", "country", "galaxy"))
    bt = xr.DataArray(rng.random((4, 2)), dims=("city", "planet"))
    b3t = xr.DataArray(rng.random((5, 4, 2)), dims=("district", "city", "planet"))
    browt = xr.DataArray(rng.random((4, 5)), dims=("country", "district"))
    got = f(at, bt, b3t, browt)
    expected = [
        xe.solve(at, bt, ["country", "city"]),
        xe.solve(at, b3t, ["country", "city", "district"]),
        xe.solve(at, browt, ["country", "city", "district"]),
    ]
    for r, e in zip(got, expected):
        assert r.dims == e.dims
        np.testing.assert_allclose(r.values, e.values, rtol=1e-10)


def test_a_size_check_fails_with_its_own_message_on_every_backend(backend):
    # the c backend plans views (a broadcast to the checked size) before its C code runs: the check comes first
    t = dg.tensor("t", shape=(None,))
    g = dg.function([t], dg.from_positional(t, (dg.Dim("q", size=2),)) * 2, backend=backend)
    np.testing.assert_array_equal(g(np.ones(2)).values, [2.0, 2.0])
    with pytest.raises(
        AssertionError, match=r"from_positional: the data does not have the sizes of the dims 'q' \(size 2\)"
    ):
        g(np.ones(3))


def test_vectorize_graph_of_a_labeled_graph_with_stacked_dims(backend):
    a, b, c = dg.Dim("a", size=2), dg.Dim("b", size=3), dg.Dim("c", size=4)
    x = dg.labeled("x", dims=(a, b))
    cells = (x.stack(cell=(a, b)) + 1) * 2
    total = x.stack(cell=(a, b)).sum("cell")
    x_new = dg.labeled("x_new", dims=(c, a, b))
    out, summed = dg.vectorize_graph([cells, total], {x: x_new})
    f = dg.function([x_new], [out, summed], backend=backend)
    xt = xr.DataArray(np.arange(24.0).reshape(4, 2, 3), dims=("c", "a", "b"))
    got_cells, got_sum = f(xt)
    expected = (xt.stack(cell=("a", "b")) + 1) * 2
    assert got_cells.dims == expected.dims == ("c", "cell")
    np.testing.assert_allclose(got_cells.values, expected.values)
    assert list(got_cells.indexes["cell"]) == list(expected.indexes["cell"])
    xr.testing.assert_allclose(got_sum, xt.stack(cell=("a", "b")).sum("cell"))


def test_vectorize_graph_invalid_replacements():
    a, b, c = dg.Dim("a", size=2), dg.Dim("b", size=3), dg.Dim("c", size=4)
    x, y = dg.labeled("x", dims=(a, b)), dg.labeled("y", dims=(c,))
    with pytest.raises(ValueError, match="lacks its dim 'a'"):  # a replacement that drops a dim
        dg.vectorize_graph([x + 1], {x: dg.labeled("x_bad", dims=(b,))})
    with pytest.raises(ValueError, match=r"add the dims \['c'\], which the graph already has \(in y\)"):
        dg.vectorize_graph([x + y], {x: dg.labeled("x_new", dims=(a, b, c))})
    t = dg.tensor("t", shape=(3,))
    with pytest.raises(ValueError, match="fewer axes"):
        dg.vectorize_graph([t + 1], {t: dg.tensor("t_bad", shape=())})


def test_a_mask_and_an_indexer_on_the_same_dim_in_one_isel(backend):
    a, b = dg.Dim("a", size=8), dg.Dim("b", size=7)
    x = dg.labeled("x", dims=(a, b))
    mask = dg.labeled("mask", dims=(a,), dtype="bool")
    int_idx = dg.labeled("int_idx", dims=(dg.Dim("a", size=4), dg.Dim("new_dim", size=3)), dtype="int64")
    f = dg.function([x, mask, int_idx], [x.isel(a=mask, b=int_idx), x[mask, int_idx.rename(a="b")]], backend=backend)
    xt = xr.DataArray(np.arange(56.0).reshape(8, 7), dims=("a", "b"))
    mt = xr.DataArray(np.array([True, False] * 4), dims="a")
    it = xr.DataArray(np.random.default_rng(1).binomial(4, 0.5, (4, 3)), dims=("a", "new_dim"))
    vectorized, orthogonal = f(xt, mt, it)
    xr.testing.assert_allclose(vectorized, xt[mt, it])  # the mask's 'a' and the indexer's 'a' are one dim
    xr.testing.assert_allclose(orthogonal, xt[mt, it.rename(a="b")])
    with pytest.raises(AssertionError, match="boolean mask on dim 'a' must select 4 positions"):
        f(xt, xr.DataArray(np.ones(8, dtype=bool), dims="a"), it)


@pytest.mark.parametrize("mode", ["set", "inc"])
def test_update_after_a_boolean_mask(backend, mode):
    a, b = dg.Dim("a", size=8), dg.Dim("b", size=7)
    x = dg.labeled("x", dims=(a, b))
    mask = dg.labeled("mask", dims=(a,), dtype="bool")
    y = dg.labeled("y", dims=(dg.Dim("b", size=3),))
    outs = [getattr(x[mask, -3:], mode)(y), getattr(x[mask, -3:], mode)(y.rename(b="a"))]
    f = dg.function([x, mask, y], outs, backend=backend)
    xt = xr.DataArray(np.arange(56.0).reshape(8, 7), dims=("a", "b"))
    mt = xr.DataArray([True, False, True, True, False, False, False, False], dims="a")
    yt = xr.DataArray([1.0, 2.0, 3.0], dims="b")

    def updated(value):
        e = xt.copy()
        if mode == "set":
            e[mt, -3:] = value
        else:
            e[mt, -3:] += value
        return e

    along_b, along_a = f(xt, mt, yt)
    xr.testing.assert_allclose(along_b, updated(yt))
    xr.testing.assert_allclose(along_a, updated(yt.rename(b="a")))


def test_vectorize_graph_aligned_batch_dims_pair_with_the_graphs_own():
    # aligned=: a batch dim that is meant to be the graph's own dim pairs up with it element by element
    a, c = dg.Dim("a", size=2), dg.Dim("c", size=3)
    x, y = dg.labeled("x", dims=(a,)), dg.labeled("y", dims=(c,))
    x_new = dg.labeled("x_new", dims=(c, a))
    (out,) = dg.vectorize_graph([x + y], {x: x_new}, aligned=("c",))
    xt, yt = np.arange(6.0).reshape(3, 2), np.array([10.0, 20.0, 30.0])
    got = dg.function([x_new, y], out, backend="python")(xt, yt)
    expected = xr.DataArray(xt, dims=("c", "a")) + xr.DataArray(yt, dims="c")
    xr.testing.assert_allclose(got.transpose(*expected.dims), expected)
