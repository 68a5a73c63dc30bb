"""Product dims (stack / unstack / ravel, sel on a ProductDim) against xarray, on every backend.

Random examples draw 1-3 Dims (sizes 0-3; with unsorted coords, a static size,
or a size known only from the data), a variable over them in a random order,
and a random ordered subset of them to stack. One compiled function per example
holds every output (stack, unstack of it, ravel, and a stack of a stack), and
each is compared with xarray on values, dtype, dims, dim order and indexes,
MultiIndex included. Then: DataArray round trips, `sel` by tuples and by
levels, laziness of the MultiIndex, the lowered form (a reshape, a view when
the components are trailing), gradients against finite differences, and errors.
"""

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from labeled_strategies import dataarray, dims_strategy, examples

import dimgraph as dg
from dimgraph.labeled.stacking import Stack, Unstack
from dimgraph.testing import numeric_grad


def xr_stack(da, **new):
    """`da.stack(**new)`; where xarray cannot (it reshapes with -1, which NumPy refuses for 0 elements),
    the same built by hand: components moved last, reshaped, and the MultiIndex of their labels."""
    try:
        return da.stack(**new)
    except ValueError:
        ((name, comps),) = new.items()
        rest = [d for d in da.dims if d not in comps]
        moved = da.transpose(*rest, *comps)
        values = moved.values.reshape(
            moved.shape[: len(rest)] + (-1 if moved.size else int(np.prod(moved.shape[len(rest) :])),)
        )
        levels = [da.indexes[c] if c in da.indexes else pd.RangeIndex(da.sizes[c]) for c in comps]
        coords = {n: da.indexes[n] for n in rest if n in da.indexes}
        coords.update(
            xr.Coordinates.from_pandas_multiindex(pd.MultiIndex.from_product(levels, names=list(comps)), name)
        )
        return xr.DataArray(values, dims=(*rest, name), coords=coords)


def assert_same(got, expected, check_plain_coords=True):
    """Values, dtype, dims and indexes as xarray (MultiIndexes by value and level names).

    `check_plain_coords=False`: xarray's `unstack` gives a dim without coords an
    integer index; dimgraph restores the original Dim, which has none.
    """
    assert got.dims == expected.dims, (got.dims, expected.dims)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got.values, expected.values)
    for name, index in expected.indexes.items():
        if name not in expected.dims:
            continue
        if not check_plain_coords and name not in got.indexes:
            assert index.equals(pd.RangeIndex(len(index))), (name, index)
            continue
        assert got.indexes[name].equals(index), (name, got.indexes[name], index)
        if isinstance(index, pd.MultiIndex):
            assert list(got.indexes[name].names) == list(index.names)
    assert {n for n in got.indexes if n in got.dims} <= set(expected.indexes)


def test_stack_unstack_ravel_match_xarray(backend):
    @settings(max_examples=examples(backend), suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data):
        draw = data.draw
        dims, sizes = draw(dims_strategy())
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        dtype = draw(st.sampled_from(["float64", "float32", "int32", "bool"]))
        comps = tuple(draw(st.permutations(dims))[: draw(st.integers(1, len(dims)))])
        x = dg.labeled("x", dims=dims, dtype=dtype)
        da = dataarray(rng, dims, sizes, dtype)
        refs = [c if draw(st.booleans()) else c.name for c in comps]
        y = x.stack(cell=refs) if draw(st.booleans()) else x.stack({"cell": refs})
        assert y.dims[-1] == dg.ProductDim("cell", comps)
        outs = [y, y.unstack("cell"), x.ravel()]
        names = [c.name for c in comps]
        stacked = xr_stack(da, cell=names)
        ravel_name = "_".join(da.dims) + ("_flat" if da.ndim == 1 else "")
        expected = [
            stacked,
            stacked.unstack("cell") if stacked.size else da.transpose(*[n for n in da.dims if n not in names], *names),
            xr_stack(da, **{ravel_name: list(da.dims)}),
        ]
        rest = [d for d in dims if d not in comps]
        if rest:  # a stack of a stack: a product whose component is a product
            outs.append(y.stack(pair=(rest[0], "cell")))
            expected.append(xr_stack(stacked, pair=(rest[0].name, "cell")))
        got = dg.function([x], outs, backend=backend)(da)
        for g, e, plain in zip(got, expected, [True, False, True, True]):
            if g.dims[-1:] == ("pair",):  # xarray flattens nested levels; compare the positions
                assert g.dims == e.dims and g.dtype == e.dtype
                np.testing.assert_array_equal(g.values, e.values)
                continue
            assert_same(g, e, check_plain_coords=plain)
        # numpy data in declared order: the labels of data-sized dims are then 0..n-1, as xarray's
        got = dg.function([x], y, backend=backend)(da.values)
        plain = xr.DataArray(da.values, dims=da.dims, coords={d.name: d.coords for d in dims if d.coords is not None})
        assert_same(got, xr_stack(plain, cell=names))

    check()


def test_stack_dataarray_round_trip_with_multiindex(backend):
    country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    age = dg.Dim("age", coords=[20, 30])
    obs = dg.Dim("obs")
    cell = dg.ProductDim("cell", (country, age))
    x = dg.labeled("x", dims=(obs, country, age))
    stacked = dg.labeled("stacked", dims=(obs, cell))
    f = dg.function([x], x.stack(cell=(country, age)), backend=backend)
    g = dg.function([stacked], stacked.unstack("cell"), backend=backend)
    rng = np.random.default_rng(0)
    for n in (0, 1, 4):
        da = xr.DataArray(
            rng.normal(size=(n, 3, 2)),
            dims=("obs", "country", "age"),
            coords={"country": country.coords, "age": age.coords, "obs": [f"o{k}" for k in range(n)]},
        )
        out = f(da)
        expected = xr_stack(da, cell=("country", "age"))
        if n:
            xr.testing.assert_identical(out, expected)
        assert_same(out, expected)
        assert isinstance(out.indexes["cell"], pd.MultiIndex) and list(out.indexes["cell"].names) == ["country", "age"]
        back = g(out)  # a DataArray with a MultiIndex dim feeds a ProductDim input
        xr.testing.assert_identical(back, da)
        assert dg.as_labeled(out).dims == (dg.Dim("obs", coords=[f"o{k}" for k in range(n)]), cell)
    with pytest.raises(dg.InputError, match="cell"):
        g(da.stack(cell=("age", "country")))  # levels in another order: other labels


def test_sel_on_product_dims_matches_xarray(backend):
    a = dg.Dim("a", size=2)
    b = dg.Dim("b", coords=["x", "y", "z"])
    c = dg.Dim("c", coords=[10, 20, 30, 40])
    t = dg.Dim("t", size=2)
    x = dg.labeled("x", dims=(t, a, b, c))
    s = x.stack(cell=(a, b, c)).transpose("cell", "t")
    s2 = x.stack(ab=(a, b))
    outs = {
        "level": s.sel(b="y"),
        "levels": s.sel(b="y", c=30),
        "all levels": s.sel(a=1, b="z", c=10),
        "tuple": s.sel(cell=(1, "y", 20)),
        "partial tuple": s.sel(cell=(1, "y")),
        "tuples": s.sel(cell=[(1, "y", 20), (0, "x", 10)]),
        "loc tuple": s.loc[(0, "z", 40), :],
        "two levels left": s2.sel(a=0),
        "level of a sel": s.sel(cell=[(1, "y", 20), (0, "x", 10), (0, "y", 40)]).sel(b="y"),
        "lone label: first level": s.sel(cell=1),
        "loc lone label": s2.loc[:, :, 0],
        "one label in a list: a scalar": s.sel(c=[30]),
    }
    f = dg.function([x], list(outs.values()), backend=backend)
    da = xr.DataArray(
        np.arange(48.0).reshape(2, 2, 3, 4), dims=("t", "a", "b", "c"), coords={"b": b.coords, "c": c.coords}
    )
    sd = da.stack(cell=("a", "b", "c")).transpose("cell", "t")
    sd2 = da.stack(ab=("a", "b"))
    expected = {
        "level": sd.sel(b="y"),
        "levels": sd.sel(b="y", c=30),
        "all levels": sd.sel(a=1, b="z", c=10),
        "tuple": sd.sel(cell=(1, "y", 20)),
        "partial tuple": sd.sel(cell=(1, "y")),
        "tuples": sd.sel(cell=[(1, "y", 20), (0, "x", 10)]),
        "loc tuple": sd.loc[(0, "z", 40), :],
        "two levels left": sd2.sel(a=0),
        "level of a sel": sd.sel(cell=[(1, "y", 20), (0, "x", 10), (0, "y", 40)]).sel(b="y"),
        "lone label: first level": sd.sel(cell=1),
        "loc lone label": sd2.loc[:, :, 0],
        "one label in a list: a scalar": sd.sel(c=[30]),
    }
    for (what, e), g in zip(expected.items(), f(da)):
        assert g.dims == e.dims, (what, g.dims, e.dims)
        np.testing.assert_array_equal(g.values, e.values, err_msg=what)
        for name in e.dims:
            if name in e.indexes and name not in g.indexes:  # a level without coords: xarray gives 0..n-1
                assert e.indexes[name].equals(pd.RangeIndex(len(e.indexes[name]))), (what, name)
            elif name in e.indexes:
                assert g.indexes[name].equals(e.indexes[name]), (what, name)
    # beyond xarray: a list of labels of one level keeps the product of the selected labels
    y = s.sel(b=["z", "x"])
    assert y.dims[0] == dg.ProductDim("cell", (a, dg.Dim("b", coords=["z", "x"]), c))
    got = dg.function([x], y, backend=backend)(da)
    np.testing.assert_array_equal(
        got.values, da.sel(b=["z", "x"]).stack(cell=("a", "b", "c")).transpose("cell", "t").values
    )


def test_stack_with_ellipsis_orders_dims_as_xarray(backend):
    """Found by differential testing: xarray expands `...` in stack with the dims that have coords first."""
    t, a = dg.Dim("t", size=2), dg.Dim("a", size=2)
    b, c = dg.Dim("b", coords=["x", "y", "z"]), dg.Dim("c", coords=[10, 20])
    x = dg.labeled("x", dims=(t, a, b, c))
    da = xr.DataArray(
        np.arange(24.0).reshape(2, 2, 3, 2), dims=("t", "a", "b", "c"), coords={"b": b.coords, "c": c.coords}
    )
    specs = [(..., "t"), ("a", ...), ("c", ..., "a")]
    outs = [x.stack(s=spec) for spec in specs] + [x.stack(s=(..., "t")).unstack("s")]
    want = [da.stack(s=list(spec)) for spec in specs] + [da.stack(s=[..., "t"]).unstack("s")]
    for g, w in zip(dg.function([x], outs, backend=backend)(da), want):
        assert_same(g, w, check_plain_coords=False)


def test_unstack_of_a_selected_product_matches_xarray(backend):
    """Found by differential testing: a selection of a product dim (a MultiIndex that is not a whole product)
    unstacks as in xarray, with the level values still used and NaN for the missing combinations."""
    a, b = dg.Dim("a", coords=["x", "y", "z"]), dg.Dim("b", coords=[30, 10])
    t = dg.Dim("t", size=2)
    x = dg.labeled("x", dims=(a, t, b), dtype="int16")
    da = xr.DataArray(
        np.arange(12, dtype="int16").reshape(3, 2, 2), dims=("a", "t", "b"), coords={"a": a.coords, "b": b.coords}
    )
    s, sd = x.stack(s=(a, b)), da.stack(s=["a", "b"])
    keys = [slice(0, 4), [5, 0, 3], slice(None, None, -2), []]
    outs = [s.isel(s=k).unstack("s") for k in keys] + [s.isel(s=[4, 1]).unstack()]
    want = [sd.isel(s=k).unstack("s") for k in keys] + [sd.isel(s=[4, 1]).unstack()]
    for g, w in zip(dg.function([x], outs, backend=backend)(da), want):
        assert_same(g, w)
        np.testing.assert_array_equal(g.values, w.values)


def test_product_multiindex_is_built_only_when_asked():
    big = [dg.Dim(n, size=1000) for n in "pqr"]
    x = dg.labeled("x", dims=tuple(big))
    y = x.stack(cell=big)  # 10**9 positions: building its MultiIndex would not fit in memory
    cell = y.dims[-1]
    assert cell.size == 10**9 and "_multiindex" not in cell.__dict__
    z = (y * 2).sum("cell")
    dg.lower([z, y.unstack("cell"), y.sel(cell=(999, 0, 5)), y.sel(q=3)])
    assert "_multiindex" not in cell.__dict__
    assert hash(cell) == hash(dg.ProductDim("cell", big)) and cell == dg.ProductDim("cell", big)
    small = dg.ProductDim("s", (dg.Dim("u", coords=["p", "q"]), dg.Dim("v", size=2)))
    assert "_multiindex" not in small.__dict__
    assert small.coords.tolist() == [("p", 0), ("p", 1), ("q", 0), ("q", 1)]
    assert small.coords is small.coords  # built once


def test_stack_lowers_to_a_reshape_view():
    a, b, c = dg.Dim("a", size=2), dg.Dim("b", size=3), dg.Dim("c", size=4)
    x = dg.labeled("x", dims=(a, b, c))
    trailing = dg.lower(x.stack(cell=(b, c)))
    assert type(trailing.owner.op).__name__ == "Reshape"
    assert trailing.owner.inputs[0].owner is None  # the input itself is reshaped: no transpose, a view
    assert trailing.type.shape == (2, 12)
    moved = dg.lower(x.stack(cell=(c, a)))
    assert type(moved.owner.op).__name__ == "Reshape" and type(moved.owner.inputs[0].owner.op).__name__ == "DimShuffle"
    f = dg.function([x], x.stack(cell=(b, c)).to_positional(), backend="python")
    data = np.arange(24.0).reshape(2, 3, 4)
    np.testing.assert_array_equal(f(data), data.reshape(2, 12))
    y = x.stack(cell=(b, c))
    assert isinstance(y.owner.op, Stack) and isinstance(y.unstack("cell").owner.op, Unstack)


def test_unstack_of_a_product_of_data_sized_dims():
    obs, k = dg.Dim("obs"), dg.Dim("k", size=3)
    cell = dg.ProductDim("cell", (obs, k))
    x = dg.labeled("x", dims=(cell,))
    f = dg.function([x], x.unstack(), backend="python")  # obs's size follows from the product's
    out = f(np.arange(12.0))
    assert out.dims == ("obs", "k") and out.shape == (4, 3)
    two = dg.labeled("two", dims=(dg.ProductDim("pair", (obs, dg.Dim("m"))),))
    with pytest.raises(dg.DimError, match="unknown"):
        dg.function([two], two.unstack(), backend="python")


def test_gradients_through_stack_and_unstack(backend):
    country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    age, k = dg.Dim("age", size=2), dg.Dim("k", size=2)
    x = dg.labeled("x", dims=(country, age))
    w = dg.labeled("w", dims=(dg.ProductDim("cell", (age, country)), k))
    y = x.stack(cell=(age, country))
    cost = (
        (dg.exp(y) * w).sum()
        + (w.unstack("cell") ** 2 * x).sum()
        + y.sel(country="Italy").prod()
        + x.ravel().sel(country_age=("Chile", 1))
    )
    gx, gw = dg.grad(cost, [x, w])
    assert gx.dims == x.dims and gw.dims == w.dims
    f = dg.function([x, w], [cost, gx, gw], backend=backend)
    rng = np.random.default_rng(1)
    xd, wd = rng.normal(size=(3, 2)), rng.normal(size=(6, 2))
    _, g1, g2 = f(xd, wd)
    value = lambda a, b: float(f(a, b)[0].values)  # noqa: E731
    np.testing.assert_allclose(g1.values, numeric_grad(value, [xd, wd], 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(g2.values, numeric_grad(value, [xd, wd], 1), rtol=1e-5, atol=1e-6)
    assert isinstance(g2.indexes["cell"], pd.MultiIndex)


def test_stack_errors():
    a, b = dg.Dim("a", size=2), dg.Dim("b", coords=["x", "y"])
    x = dg.labeled("x", dims=(a, b))
    with pytest.raises(dg.DimError, match="no dim 'zz'.*a: 2, b: 2"):
        x.stack(cell=("a", "zz"))
    with pytest.raises(dg.DimError, match="already has a dim named 'b'"):
        x.stack(b=("a",))
    with pytest.raises(dg.DimError, match="two different dims named 'a'"):
        x.stack(cell=(dg.Dim("a", size=3), b))
    with pytest.raises(TypeError, match="at least one new dim"):
        x.stack()
    with pytest.raises(dg.DimError, match="neither a ProductDim"):
        x.unstack("a")
    with pytest.raises(dg.DimError, match="0-d"):
        x.sum().ravel()
    y = x.stack(cell=(a, b))
    with pytest.raises(KeyError, match="cell.*'b'.*'q'"):
        y.sel(cell=(1, "q"))
    with pytest.raises(KeyError, match="'q'"):
        y.sel(b="q")
    with pytest.raises(dg.DimError, match="both"):
        y.sel(b="x", cell=(0, "x"))
    assert x.stack(cell=(a, ...)).dims[-1] == dg.ProductDim("cell", (a, b))
    assert x.stack(cell="b").dims == (a, dg.ProductDim("cell", (b,)))
    assert y.rename(cell="z").dims == (dg.ProductDim("z", (a, b)),)
