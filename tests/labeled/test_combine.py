"""Combining labeled variables (concat, dot / @, align) against xarray, on every backend.

Random examples draw 1-3 Dims (sizes 0-3 incl. 1; unsorted coords, a static
size, or a size known only from the data), inputs on random subsets of them in
random orders and dtypes, and compare one compiled function per example with
xarray on values, dtype, dims, dim order and indexes: `concat` of disjoint
selections along an existing dim (pieces carrying different Dims of one name,
pieces lacking other dims) and along a new Dim; `dot` with `dim=None`, `...` and
explicit dims; `align` with every join. Then errors (duplicate labels, coords
that disagree, unknown dims) and gradients against finite differences.
"""

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from labeled_strategies import dataarray, dims_strategy, examples

import dimgraph as dg
from dimgraph.labeled.combine import Concat, Dot
from dimgraph.testing import numeric_grad


def assert_same(got, expected, rtol=0.0):
    """Values, dtype, dims and the indexes of dims as xarray (dimgraph may lack an index where a
    dim's labels are not static, e.g. a concat of dims sized by the data)."""
    assert got.dims == expected.dims, (got.dims, expected.dims)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    if rtol:
        np.testing.assert_allclose(got.values, expected.values, rtol=rtol, atol=1e-12)
    else:
        np.testing.assert_array_equal(got.values, expected.values)
    for name in got.dims:
        if name in got.indexes:
            assert name in expected.indexes and got.indexes[name].equals(expected.indexes[name]), (
                name,
                got.indexes[name],
                expected.indexes.get(name),
            )


def test_concat_matches_xarray(backend):
    @settings(max_examples=examples(backend), suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data):
        draw = data.draw
        dims, sizes = draw(dims_strategy())
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        d = draw(st.sampled_from(dims))
        x = dg.labeled("x", dims=dims, dtype=draw(st.sampled_from(["float64", "int64"])))
        da = dataarray(rng, dims, sizes, x.type.dtype)
        n = sizes[d.name]
        order = draw(st.permutations(range(n)))
        cuts = sorted(draw(st.lists(st.integers(0, n), min_size=0, max_size=2)))
        chunks = [list(order[i:j]) for i, j in zip([0, *cuts], [*cuts, n])]
        pieces, xr_pieces = [], []
        others = [o for o in dims if o != d]
        for k, pos in enumerate(chunks):
            p, e = x.isel({d.name: pos}), da.isel({d.name: pos})
            if others and draw(st.booleans()):  # a piece lacking another dim is broadcast over it
                o = draw(st.sampled_from(others))
                p, e = p.sum(o.name), e.sum(o.name)
            if draw(st.booleans()):
                p, e = p.astype("float32"), e.astype("float32")
            pieces.append(p)
            xr_pieces.append(e)
        ref = d if draw(st.booleans()) else d.name
        y = dg.concat(pieces, ref)
        assert isinstance(y.owner.op, Concat)
        expected = xr.concat(xr_pieces, d.name, coords="minimal", compat="override", join="exact")
        expected = expected.transpose(*[o.name for o in y.dims])  # xarray broadcasts pieces in its own order
        assert [o.name for o in y.dims] == list(_first_appearance(xr_pieces, d.name))
        got = dg.function([x], y, backend=backend)(da)
        assert_same(got, expected)
        if d.coords is not None:
            assert list(y.dims[[o.name for o in y.dims].index(d.name)].coords) == [
                d.coords[i] for c in chunks for i in c
            ]

    check()


def _first_appearance(arrays, dim):
    seen = []
    for a in arrays:
        for n in a.dims:
            if n not in seen:
                seen.append(n)
    return seen


def test_concat_along_a_new_dim_matches_xarray(backend):
    country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    age = dg.Dim("age", size=2)
    obs = dg.Dim("obs")
    x = dg.labeled("x", dims=(country, age))
    z = dg.labeled("z", dims=(obs, age), dtype="int64")
    chain = dg.Dim("chain", coords=["c0", "c1", "c2"])
    draw = dg.Dim("draw")  # no size: the number of pieces gives it
    outs = [
        dg.concat([x, 2 * x, x.sum("age")], chain),
        dg.concat([z, z + 1], draw),
        dg.concat([x], dg.Dim("one", size=1)),
    ]
    f = dg.function([x, z], outs, backend=backend)
    rng = np.random.default_rng(0)
    xd = xr.DataArray(rng.normal(size=(3, 2)), dims=("country", "age"), coords={"country": country.coords})
    zd = xr.DataArray(rng.integers(0, 9, size=(4, 2)), dims=("obs", "age"))
    got = f(xd, zd)
    expected = [
        xr.concat([xd, 2 * xd, xd.sum("age")], pd.Index(["c0", "c1", "c2"], name="chain")),
        xr.concat([zd, zd + 1], "draw"),
        xr.concat([xd], "one"),
    ]
    for g, e in zip(got, expected):
        assert_same(g, e)
    assert outs[1].dims[0] == dg.Dim("draw", size=2)


def test_dot_matches_xarray(backend):
    @settings(max_examples=examples(backend), suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data):
        draw = data.draw
        dims, sizes = draw(dims_strategy())
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        n_ops = draw(st.integers(1, 3))
        inputs, arrays = [], []
        for k in range(n_ops):
            sub = tuple(draw(st.lists(st.sampled_from(dims), unique=True, max_size=len(dims))))
            dtype = draw(st.sampled_from(["float64", "float32", "int64"]))
            inputs.append(dg.labeled(f"in{k}", dims=sub, dtype=dtype))
            arrays.append(dataarray(rng, sub, sizes, dtype))
        every = list(dict.fromkeys(n for a in arrays for n in a.dims))
        form = draw(st.sampled_from(["none", "all", "some", "matmul"] if n_ops == 2 else ["none", "all", "some"]))
        if form == "none":
            y, expected = dg.dot(*inputs), xr.dot(*arrays)
        elif form == "all":
            y, expected = dg.dot(*inputs, dim=...), xr.dot(*arrays, dim=...)
        elif form == "some":
            some = draw(st.lists(st.sampled_from(every), unique=True)) if every else []
            y, expected = dg.dot(*inputs, dim=some), xr.dot(*arrays, dim=some)
        else:
            y, expected = inputs[0] @ inputs[1], arrays[0] @ arrays[1]
        assert isinstance(y.owner.op, Dot)
        got = dg.function(inputs, y, backend=backend)(*arrays)
        # xarray contracts pairwise (opt_einsum), rounding float32 partial products; dimgraph's one einsum does not
        assert_same(got, expected, rtol=1e-5 if any(a.dtype == np.float32 for a in arrays) else 1e-12)

    check()


def test_align_matches_xarray(backend):
    @settings(max_examples=examples(backend), suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data):
        draw = data.draw
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        pool = ["p", "q", "r", "s", "t"]
        join = draw(st.sampled_from(["inner", "outer", "left", "right"]))
        k = dg.Dim("k", size=2)
        inputs, arrays = [], []
        for j in range(draw(st.integers(2, 3))):
            labels = draw(st.permutations(pool))[: draw(st.integers(0, 4))]
            if draw(st.booleans()):  # a dim with a static size and one sized by the data, too
                dims = (dg.Dim("x", coords=labels), k if j else dg.Dim("u"))
            else:
                dims = (dg.Dim("x", coords=labels),)
            dtype = draw(st.sampled_from(["float64", "int64"]))
            inputs.append(dg.labeled(f"in{j}", dims=dims, dtype=dtype))
            sizes = {"x": len(labels), "k": 2, "u": 3}
            arrays.append(dataarray(rng, dims, sizes, dtype))
        fill = draw(st.sampled_from([np.nan, -1.0]))
        outs = dg.align(*inputs, join=join, fill_value=fill)
        expected = xr.align(*arrays, join=join, fill_value=fill)
        got = dg.function(inputs, list(outs), backend=backend)(*arrays)
        for g, e, o in zip(got, expected, outs):
            assert_same(g, e)
            assert o.dims[0].coords.equals(e.indexes["x"])

    check()


def test_align_override_matches_xarray(backend):
    """join="override": the first coords replace the others', and every input gets that one Dim.

    xarray leaves an index-less input without an index (it takes the index in
    arithmetic); a Dim has its coords or not, so here every input carries the
    overriding coords: the values are xarray's and the results combine as xarray's do.
    """
    x1, x2 = dg.Dim("x", coords=["p", "q", "r"]), dg.Dim("x", coords=["r", "s", "p"])
    a = dg.labeled("a", dims=(x1,))
    b = dg.labeled("b", dims=(dg.Dim("k", size=2), x2), dtype="int64")
    c = dg.labeled("c", dims=(dg.Dim("x", size=3),))
    da = xr.DataArray([1.0, 2.0, 3.0], dims="x", coords={"x": x1.coords})
    db = xr.DataArray(np.arange(6).reshape(2, 3), dims=("k", "x"), coords={"x": x2.coords})
    dc = xr.DataArray([4.0, 5.0, 6.0], dims="x")
    aligned = [dg.align(a, b, c, join="override"), dg.align(c, b, join="override")]
    outs = [*aligned[0], *aligned[1], aligned[0][0] + aligned[0][2], aligned[1][0] * aligned[1][1]]
    xr_aligned = [xr.align(da, db, dc, join="override"), xr.align(dc, db, join="override")]
    expected = [
        *xr_aligned[0],
        *xr_aligned[1],
        xr_aligned[0][0] + xr_aligned[0][2],
        xr_aligned[1][0] * xr_aligned[1][1],
    ]
    got = dg.function([a, b, c], outs, backend=backend)(da, db, dc)
    for g, e in zip(got, expected):
        if "x" not in e.indexes:  # xarray's index-less input: the same values, under the overriding coords
            e = e.assign_coords(x=g.indexes["x"])
        assert_same(g, e)
    for group in aligned:
        assert len({next(d for d in v.dims if d.name == "x") for v in group}) == 1  # one Dim: they combine
    assert aligned[0][0].dims[0] == x1 and aligned[1][0].dims[0] == x2
    with pytest.raises(dg.DimError, match="join='override' needs equal sizes"):
        dg.align(a, dg.labeled("d", dims=(dg.Dim("x", size=2),)), join="override")


def test_align_override_checks_a_data_sized_dim_when_data_comes():
    n = dg.Dim("x")
    a = dg.labeled("a", dims=(dg.Dim("x", coords=["p", "q"]),))
    d = dg.labeled("d", dims=(n,))
    a2, d2 = dg.align(a, d, join="override")
    assert d2.dims == a2.dims
    f = dg.function([a, d], a2 + d2, backend="python")
    np.testing.assert_allclose(f(np.ones(2), np.arange(2.0)).values, [1.0, 2.0])
    with pytest.raises(AssertionError, match="sizes of the dims 'x' \\(size 2\\)"):
        f(np.ones(2), np.arange(3.0))


def test_aligned_inputs_combine_and_unchanged_inputs_pass():
    x1 = dg.Dim("x", coords=["p", "q", "r"])
    a = dg.labeled("a", dims=(x1,))
    b = dg.labeled("b", dims=(dg.Dim("x", coords=["r", "p"]),))
    a2, b2 = dg.align(a, b, join="outer")
    assert a2 is a  # already on the joined coords: no gather
    c = dg.labeled("c", dims=(dg.Dim("x", size=3),))  # no coords: takes the labels of the others, by position
    a3, c3 = dg.align(a, c)
    assert a3 is a and c3.dims == (x1,)
    f = dg.function([a, b, c], [a2 + b2, a3 + c3], backend="python")
    s, t = f(np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0]), np.array([5.0, 6.0, 7.0]))
    np.testing.assert_array_equal(s.values, [21.0, np.nan, 13.0])
    assert list(s.indexes["x"]) == ["p", "q", "r"]
    np.testing.assert_array_equal(t.values, [6.0, 8.0, 10.0])


def test_combine_errors():
    country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    age = dg.Dim("age", size=2)
    x = dg.labeled("x", dims=(country, age))
    with pytest.raises(dg.DimError, match=r"labels \['USA'\] of dim 'country' appear in more than one piece"):
        dg.concat([x.sel(country=["USA", "Chile"]), x.sel(country=["USA"])], "country")
    with pytest.raises(dg.DimError, match="new dim must be a Dim"):
        dg.concat([x, x], "chain")
    with pytest.raises(dg.DimError, match="size 3, but 2 pieces"):
        dg.concat([x, x], dg.Dim("chain", size=3))
    other_age = dg.Dim("age", size=3)
    with pytest.raises(dg.DimError, match="two different dims named 'age'"):
        dg.concat([x, dg.labeled("y", dims=(country, other_age))], "country")
    plain = dg.labeled("p", dims=(dg.Dim("country", size=2),))
    with pytest.raises(dg.DimError, match="has coords in .* but .* has no coords"):
        dg.concat([x.sum("age"), plain], "country")
    with pytest.raises(dg.DimError, match="has coords in"):
        dg.concat([x, x.sum("country")], "country")
    # coords that disagree: a DimError that shows the difference, and points to dg.align
    y = dg.labeled("y", dims=(dg.Dim("country", coords=["USA", "Chile", "Italy"]),))
    with pytest.raises(dg.DimError, match=r"coords differ first at position 1: 'Italy' vs 'Chile'[\s\S]*dg.align"):
        x + y
    z = dg.labeled("z", dims=(dg.Dim("country", coords=["USA", "Italy"]),))
    with pytest.raises(dg.DimError, match=r"labels only in the first: \['Chile'\]"):
        dg.dot(x, z)
    with pytest.raises(dg.DimError, match="join='exact'"):
        dg.align(x, z, join="exact")
    with pytest.raises(ValueError, match="join must be one of"):
        dg.align(x, z, join="sideways")
    with pytest.raises(dg.DimError, match="neither has coords"):
        dg.align(dg.labeled("u", dims=(dg.Dim("n", size=2),)), dg.labeled("v", dims=(dg.Dim("n", size=3),)))
    with pytest.raises(dg.DimError, match="has no dim 'cuntry'"):
        dg.dot(x, x, dim="cuntry")
    with pytest.raises(TypeError, match="list of labeled"):
        dg.concat(x, "country")


def test_gradients_through_concat_dot_and_align(backend):
    country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    age = dg.Dim("age", size=2)
    x = dg.labeled("x", dims=(country, age))
    w = dg.labeled("w", dims=(age,))
    b = dg.labeled("b", dims=(dg.Dim("country", coords=["Chile", "Peru"]),))
    joined = dg.concat([x.sel(country=["Chile"]), x.sel(country=["USA", "Italy"]) * 2], "country")
    new = dg.concat([x, dg.exp(x)], dg.Dim("chain", size=2))
    a2, b2 = dg.align(x.sum("age"), b, join="outer", fill_value=0.0)
    cost = (dg.dot(joined, w) ** 2).sum() + (new @ w).sum() + (x @ x) ** 0.5 + (a2 * b2 + a2 + b2).sum()
    gx, gw, gb = dg.grad(cost, [x, w, b])
    f = dg.function([x, w, b], [cost, gx, gw, gb], backend=backend)
    rng = np.random.default_rng(2)
    values = [rng.normal(size=(3, 2)), rng.normal(size=2), rng.normal(size=2)]
    out = f(*values)
    value = lambda *v: float(f(*v)[0].values)  # noqa: E731
    for k in range(3):
        np.testing.assert_allclose(out[k + 1].values, numeric_grad(value, values, k), rtol=1e-5, atol=1e-6)
    assert list(out[1].indexes["country"]) == ["USA", "Italy", "Chile"]


def test_gradient_of_a_sum_with_a_sqrt_of_a_dot_fuses_without_a_cycle():
    x = dg.labeled("x", dims=(dg.Dim("i", size=3), dg.Dim("j", size=2)))
    w = dg.labeled("w", dims=(dg.Dim("j", size=2),))
    cost = (dg.concat([x, dg.exp(x)], dg.Dim("chain", size=2)) @ w).sum() + (x @ x) ** 0.5
    f = dg.function([x, w], [cost, dg.grad(cost, x)], backend="python")
    xd, wd = np.ones((3, 2)), np.ones(2)
    np.testing.assert_allclose(
        f(xd, wd)[1].values, numeric_grad(lambda a: float(f(a, wd)[0].values), [xd], 0), rtol=1e-5
    )


def test_dot_of_positional_operands_is_numpy_dot():
    t = dg.tensor("t", shape=(2, 3))
    y = dg.dot(t, np.arange(3.0))
    np.testing.assert_array_equal(y.eval({t: np.ones((2, 3))}), [3.0, 3.0])
