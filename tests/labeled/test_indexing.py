"""Labeled indexing (isel, sel, x[...], .loc, .set/.inc) against xarray, on every backend.

Random examples draw 1-3 Dims (sizes 0-4; with unsorted coords, a static size,
or a size known only from the data), a variable over them, and a random key of
every form per dim: ints, slices with steps, position lists, boolean masks
(static and symbolic), symbolic 0-d positions, labeled integer indexers
(constant or symbolic, 1-d and 2-d, broadcasting together by name) and, for
`sel`, labels, label lists, label slices and labeled constants of labels. The
compiled result is compared with xarray on values, dtype, dims, dim order and
the indexes of dims. Updates are checked against a NumPy oracle built from
xarray's own selection of flat positions (`np.add.at` for `inc`).
"""

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st
from labeled_strategies import dataarray, dims_strategy, examples, few

import dimgraph as dg
from dimgraph.labeled.indexing import Isel, IselUpdate

SIZES = (0, 1, 2, 3, 4, 4)  # the data sizes of drawn dims
# ---------------------------------------------------------------------------
# drawing dims, data and keys


class Case:
    """A labeled program's inputs and the matching xarray data."""

    def __init__(self):
        self.inputs, self.data = [], []

    def add(self, var, data):
        self.inputs.append(var)
        self.data.append(data)
        return var


def _indexer_dims(draw, sizes):
    """1-d or 2-d dims for a labeled indexer: p (static size, maybe coords), q (size from the data)."""
    p_size = draw(st.integers(0, 3))
    p = dg.Dim("p", coords=[f"p{k}" for k in range(p_size)]) if draw(st.booleans()) else dg.Dim("p", size=p_size)
    q = dg.Dim("q")
    sizes["p"] = p_size
    sizes.setdefault("q", draw(st.integers(0, 3)))
    return draw(st.sampled_from([(p,), (q,), (p, q), (q, p)]))


def draw_isel_key(draw, case, rng, dims, sizes, forms):
    """({dim name: dg key}, {dim name: xarray key}) for a random subset of dims."""
    chosen = draw(st.lists(st.sampled_from(dims), unique=True, max_size=len(dims)))
    idx_dims = None
    dg_key, xr_key = {}, {}
    for d in chosen:
        n = sizes[d.name]
        options = [f for f in forms if n > 0 or f in ("slice", "sslice", "list", "mask", "smask")]
        if d.coords is not None:  # the dim a symbolic mask or slice leaves carries no coords
            options = [f for f in options if f not in ("smask", "sslice")]
        form = draw(st.sampled_from(options))
        if form == "int":
            k = draw(st.integers(-n, n - 1))
            dg_key[d.name], xr_key[d.name] = k, k
        elif form == "slice":
            bound = st.one_of(st.none(), st.integers(-n - 1, n + 1))
            s = slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, 3, -1, -2])))
            dg_key[d.name], xr_key[d.name] = s, s
        elif form == "sslice":  # symbolic bounds (and step), static ones mixed in
            parts = []
            for k, part in enumerate(["start", "stop", "step"]):
                value = draw(
                    st.one_of(st.none(), st.sampled_from([1, 2, -1]))
                    if k == 2
                    else st.one_of(st.none(), st.integers(-n - 1, n + 1))
                )
                if value is not None and (form == "sslice" and draw(st.integers(0, 3)) > 0):
                    var = case.add(dg.tensor(f"{part}_{d.name}", shape=(), dtype="int64"), np.int64(value))
                    parts.append((var, value))
                else:
                    parts.append((value, value))
            dg_key[d.name] = slice(*[p for p, _ in parts])
            xr_key[d.name] = slice(*[v for _, v in parts])
        elif form == "list":
            pos = draw(st.lists(st.integers(-n, n - 1), max_size=4)) if n else []
            if d.coords is not None:  # unique labels (a Dim's coords are unique)
                pos = list(dict.fromkeys(p % n for p in pos))
            dg_key[d.name], xr_key[d.name] = pos, pos
        elif form == "mask":
            m = rng.uniform(size=n) > 0.5
            dg_key[d.name], xr_key[d.name] = m, m
        elif form == "smask":
            m = rng.uniform(size=n) > 0.5
            var = case.add(dg.labeled(f"mask_{d.name}", dims=(d,), dtype="bool"), m)
            dg_key[d.name], xr_key[d.name] = var, m
        elif form == "scalar":
            k = draw(st.integers(-n, n - 1))
            var = case.add(dg.tensor(f"s_{d.name}", shape=(), dtype="int64"), np.int64(k))
            dg_key[d.name], xr_key[d.name] = var, k
        else:  # labeled integer indexer, constant or symbolic
            if idx_dims is None:
                idx_dims = _indexer_dims(draw, sizes)
            sub = draw(st.sampled_from([idx_dims, idx_dims[:1], idx_dims[::-1]]))
            shape = tuple(sizes[e.name] for e in sub)
            values = rng.integers(-n, n, shape) if n else np.zeros(shape, dtype=np.int64)
            if n == 0 and int(np.prod(shape)):
                dg_key[d.name], xr_key[d.name] = [], []
                continue
            dtype = draw(st.sampled_from(["int64", "int32"]))
            values = values.astype(dtype)
            coords = {e.name: e.coords for e in sub if e.coords is not None}
            xr_idx = xr.DataArray(values, dims=[e.name for e in sub], coords=coords)
            if form == "labeled" and draw(st.booleans()):
                var = dg.constant(values, dims=sub)
            else:
                var = case.add(dg.labeled(f"i_{d.name}", dims=sub, dtype=dtype), xr_idx)
            dg_key[d.name], xr_key[d.name] = var, xr_idx
    return dg_key, xr_key


ISEL_FORMS = ("int", "slice", "sslice", "list", "mask", "smask", "scalar", "labeled")


def _clean(expected):
    """`expected` without its non-dimension coords."""
    return expected.drop_vars([c for c in expected.coords if c not in expected.indexes])


def assert_same(got, expected):
    """Values, dtype, dims and every coord (indexes and the non-dimension coords indexing leaves) as xarray."""
    assert got.dims == expected.dims, (got.dims, expected.dims)
    assert set(got.coords) == set(expected.coords), (got.coords, expected.coords)
    for name in expected.coords:
        if name not in expected.indexes:
            assert got.coords[name].dims == expected.coords[name].dims, (name, got.coords[name], expected.coords[name])
            np.testing.assert_array_equal(got.coords[name].values, expected.coords[name].values)
    assert got.dtype == expected.dtype, (got.dtype, expected.dtype)
    np.testing.assert_array_equal(got.values, expected.values)
    assert set(got.indexes) == set(expected.indexes), (dict(got.indexes), dict(expected.indexes))
    for name, index in expected.indexes.items():
        assert got.indexes[name].equals(index), (name, got.indexes[name], index)


def _run(backend, case, outputs):
    f = dg.function(case.inputs, outputs, backend=backend)
    return f(*case.data)


# ---------------------------------------------------------------------------
# isel / x[...] against xarray


def test_isel_matches_xarray(backend):
    @settings(max_examples=examples(backend, 2), suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data):
        draw = data.draw
        dims, sizes = draw(dims_strategy(sizes=SIZES))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        dtype = draw(st.sampled_from(["float64", "float32", "int32", "bool"]))
        case = Case()
        data_coords = draw(st.booleans())  # labels of data-sized dims follow slices, lists and static masks
        x = case.add(dg.labeled("x", dims=dims, dtype=dtype), dataarray(rng, dims, sizes, dtype, data_coords))
        forms = tuple(f for f in ISEL_FORMS if f not in ("smask", "sslice")) if data_coords else ISEL_FORMS
        dg_key, xr_key = draw_isel_key(draw, case, rng, dims, sizes, forms)
        try:
            expected = case.data[0].isel(xr_key)
        except (IndexError, ValueError):
            reject()  # what xarray refuses is not compared
        y = x.isel(dg_key)
        assert isinstance(y.owner.op, Isel)
        got = _run(backend, case, y)
        assert_same(got, expected)
        assert tuple(d.name for d in y.dims) == expected.dims

    check()


def test_positional_getitem_matches_xarray(backend):
    @settings(max_examples=examples(backend, 2), suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data):
        draw = data.draw
        dims, sizes = draw(dims_strategy(sizes=SIZES))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        case = Case()
        x = case.add(dg.labeled("x", dims=dims), dataarray(rng, dims, sizes))
        dg_key, xr_key = draw_isel_key(draw, case, rng, dims, sizes, ("int", "slice", "list", "labeled"))
        names = [d.name for d in dims]
        upto = max([names.index(k) + 1 for k in dg_key] + [0])
        dg_items = tuple(dg_key.get(n, slice(None)) for n in names[:upto])
        xr_items = tuple(xr_key.get(n, slice(None)) for n in names[:upto])
        if draw(st.booleans()) and upto < len(names):
            dg_items, xr_items = dg_items + (Ellipsis,), xr_items + (Ellipsis,)
        expected = case.data[0][xr_items]
        assert_same(_run(backend, case, x[dg_items]), expected)

    check()


# ---------------------------------------------------------------------------
# sel / .loc against xarray


def draw_sel_key(draw, rng, dims, sizes):
    chosen = draw(st.lists(st.sampled_from(dims), unique=True, max_size=len(dims)))
    dg_key, xr_key = {}, {}
    for d in chosen:
        n = sizes[d.name]
        labels = list(d.coords) if d.coords is not None else list(range(n))
        forms = ["labels", "slice"] + (["label", "lconst"] if n else [])
        form = draw(st.sampled_from(forms))
        if form == "label":
            lab = draw(st.sampled_from(labels))
            dg_key[d.name], xr_key[d.name] = lab, lab
        elif form == "labels":
            labs = draw(st.lists(st.sampled_from(labels), unique=True, max_size=4)) if n else []
            dg_key[d.name], xr_key[d.name] = labs, labs
        elif form == "slice":
            if d.coords is None:
                bound = st.one_of(st.none(), st.integers(-1, n + 1))
                s = slice(draw(bound), draw(bound), draw(st.sampled_from([None, 2, -1])))
            else:
                bound = st.one_of(st.none(), st.sampled_from(labels)) if n else st.none()
                s = slice(draw(bound), draw(bound), draw(st.sampled_from([None, None, 2, -1])))
            dg_key[d.name], xr_key[d.name] = s, s
        else:  # labeled constant of labels on a new dim
            k = draw(st.integers(0, 3))
            obs = dg.Dim("obs", size=k)
            values = np.array(
                [labels[j] for j in rng.integers(0, n, k)], dtype=object if d.coords is not None else np.int64
            )
            dg_key[d.name] = dg.constant(values, dims=(obs,))
            xr_key[d.name] = xr.DataArray(values, dims="obs")
    return dg_key, xr_key


def test_sel_and_loc_match_xarray(backend):
    @settings(max_examples=examples(backend, 2), suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data):
        draw = data.draw
        dims, sizes = draw(dims_strategy(sizes=SIZES))
        dims = tuple(
            d if d.size is not None or d.coords is not None else dg.Dim(d.name, size=sizes[d.name]) for d in dims
        )
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        case = Case()
        x = case.add(dg.labeled("x", dims=dims), dataarray(rng, dims, sizes))
        dg_key, xr_key = draw_sel_key(draw, rng, dims, sizes)
        try:
            expected = case.data[0].sel(xr_key)
        except (KeyError, IndexError, ValueError):
            reject()  # what xarray refuses is not compared
        via_loc = draw(st.booleans())
        y = x.loc[dg_key] if via_loc else x.sel(dg_key)
        assert_same(_run(backend, case, y), expected)

    check()


# ---------------------------------------------------------------------------
# .set / .inc against a NumPy oracle


def _flat_positions(da):
    return xr.DataArray(np.arange(da.size).reshape(da.shape), dims=da.dims, coords=da.coords)


def test_set_and_inc_match_numpy(backend):
    @settings(max_examples=examples(backend, 2), suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data):
        draw = data.draw
        dims, sizes = draw(dims_strategy(sizes=SIZES))
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        dtype = draw(st.sampled_from(["float64", "int64", "float32"]))
        case = Case()
        x_da = dataarray(rng, dims, sizes, dtype)
        x = case.add(dg.labeled("x", dims=dims, dtype=dtype), x_da)
        dg_key, xr_key = draw_isel_key(
            draw, case, rng, dims, sizes, ("int", "slice", "sslice", "list", "mask", "scalar", "labeled")
        )
        try:
            pos = _clean(_flat_positions(x_da).isel(xr_key))
        except (IndexError, ValueError):
            reject()  # what xarray refuses is not compared
        sub = x.isel(dg_key)
        mode = draw(st.sampled_from(["set", "inc"]))
        repeated = len(np.unique(pos.values)) < pos.size
        # a value on a random subset of the selection's dims (a scalar where set repeats positions)
        v_dims = (
            ()
            if (mode == "set" and repeated)
            else tuple(
                draw(st.lists(st.sampled_from(sub.dims), unique=True, max_size=len(sub.dims))) if sub.dims else ()
            )
        )
        v_sizes = {d.name: pos.sizes[d.name] for d in v_dims}
        v_da = dataarray(rng, v_dims, v_sizes, dtype)
        v = case.add(dg.labeled("v", dims=v_dims, dtype=dtype), v_da)
        out = sub.set(v) if mode == "set" else sub.inc(v)
        assert isinstance(out.owner.op, IselUpdate) and out.dims == x.dims
        got = _run(backend, case, out)
        expected = x_da.values.copy()
        flat = expected.reshape(-1)
        values = v_da.broadcast_like(pos).transpose(*pos.dims).values if pos.ndim else v_da.values
        values = np.broadcast_to(values, pos.shape)
        if mode == "set":
            flat[pos.values.reshape(-1)] = values.reshape(-1)
        else:
            np.add.at(flat, pos.values.reshape(-1), values.reshape(-1))
        assert got.dims == x_da.dims
        np.testing.assert_allclose(got.values, expected, rtol=1e-6)

    check()


# ---------------------------------------------------------------------------
# the "done when": a hierarchical model with mu.isel(group=group_idx) and a selection by country


COUNTRY = dg.Dim("country", coords=["USA", "Italy", "Chile", "Peru"])
GROUP = dg.Dim("group", size=3)
OBS = dg.Dim("obs")
_HIER = {}


def _hierarchical(backend):
    if backend not in _HIER:
        mu = dg.labeled("mu", dims=(GROUP,))
        beta = dg.labeled("beta", dims=(COUNTRY,))
        group_idx = dg.labeled("group_idx", dims=(OBS,), dtype="int64")
        country_of = dg.constant(np.array(["Chile", "USA", "Chile", "Peru", "USA"]), dims=(dg.Dim("obs", size=5),))
        y = dg.labeled("y", dims=(OBS,))
        pred = mu.isel(group=group_idx) + beta.sel(country=["USA", "Chile"]).sum("country")
        logp = (-0.5 * (y - pred) ** 2).sum()
        picked = beta.sel(country=country_of)
        south = beta.loc["Chile":"Peru"]
        bumped = beta.sel(country="Italy").inc(1.0)
        _HIER[backend] = dg.function([mu, beta, group_idx, y], [pred, logp, picked, south, bumped], backend=backend)
    return _HIER[backend]


@settings(max_examples=few(3), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.sampled_from([0, 1, 2, 7]), seed=st.integers(0, 2**32 - 1))
def test_hierarchical_model_matches_xarray(backend, n, seed):
    rng = np.random.default_rng(seed)
    mu = xr.DataArray(rng.normal(size=3), dims="group")
    beta = xr.DataArray(rng.normal(size=4), dims="country", coords={"country": COUNTRY.coords})
    group_idx = xr.DataArray(rng.integers(0, 3, n), dims="obs")
    y = xr.DataArray(rng.normal(size=n), dims="obs")
    pred, logp, picked, south, bumped = _hierarchical(backend)(mu, beta, group_idx, y)
    want = mu.isel(group=group_idx) + beta.sel(country=["USA", "Chile"]).sum("country")
    assert_same(pred, want)
    np.testing.assert_allclose(logp.values, (-0.5 * (y - want) ** 2).sum().values, rtol=1e-12)
    assert_same(picked, beta.sel(country=xr.DataArray(["Chile", "USA", "Chile", "Peru", "USA"], dims="obs")))
    assert_same(south, beta.loc["Chile":"Peru"])
    want_bumped = beta.copy()
    want_bumped.loc["Italy"] += 1.0
    assert_same(bumped, want_bumped)


# ---------------------------------------------------------------------------
# dims of results (static facts)


def test_result_dims_keep_names_and_selected_coords():
    country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    age = dg.Dim("age", size=5)
    x = dg.labeled("x", dims=(country, age))
    assert x.sel(country=["Chile", "USA"]).dims == (dg.Dim("country", coords=["Chile", "USA"]), age)
    assert x.sel(country="Italy").dims == (age,)
    assert x.isel(age=slice(1, None, 2)).dims == (country, dg.Dim("age", size=2))
    assert x.sel(age=2).dims == (country,)
    assert x.isel(country=slice(None)).dims == x.dims
    obs = dg.Dim("obs")
    y = dg.labeled("y", dims=(obs,))
    a, b = y.isel(obs=slice(1, None)), y.isel(obs=slice(1, None))
    assert a.dims == b.dims and a.dims[0] != obs and a.dims[0].size is None
    assert (a + b).dims == a.dims
    # a symbolic mask makes a dim of unknown size, different for each mask
    m = dg.labeled("m", dims=(age,), dtype="bool")
    assert x.isel(age=m).dims[1].size is None and x.isel(age=m).dims[1].name == "age"


def test_sliced_unknown_dim_gets_coords_from_the_input():
    obs = dg.Dim("obs")
    y = dg.labeled("y", dims=(obs,))
    f = dg.function([y], [y.isel(obs=slice(1, None, 2)), y[::-1]], backend="python")
    da = xr.DataArray(np.arange(5.0), dims="obs", coords={"obs": list("abcde")})
    got, rev = f(da)
    assert_same(got, da.isel(obs=slice(1, None, 2)))
    assert_same(rev, da[::-1])


def test_several_labeled_indexers_broadcast_by_name():
    a, b = dg.Dim("a", size=3), dg.Dim("b", size=4)
    p, q = dg.Dim("p", size=2), dg.Dim("q", size=3)
    x = dg.labeled("x", dims=(a, b))
    ia = dg.labeled("ia", dims=(p,), dtype="int64")
    ib = dg.labeled("ib", dims=(q, p), dtype="int64")
    y = x.isel(a=ia, b=ib)
    assert [d.name for d in y.dims] == ["p", "q"]
    xd = xr.DataArray(np.arange(12.0).reshape(3, 4), dims=("a", "b"))
    iad = xr.DataArray([2, 0], dims="p")
    ibd = xr.DataArray([[0, 1], [3, 2], [1, 1]], dims=("q", "p"))
    assert_same(dg.function([x, ia, ib], y, backend="python")(xd, iad, ibd), xd.isel(a=iad, b=ibd))


# ---------------------------------------------------------------------------
# errors


def test_missing_labels_are_key_errors_naming_dim_and_labels():
    country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    age = dg.Dim("age", size=5)
    x = dg.labeled("x", dims=(country, age))
    with pytest.raises(KeyError, match=r"country.*'Spain'"):
        x.sel(country="Spain")
    with pytest.raises(KeyError, match=r"country.*\['Spain', 'Peru'\]"):
        x.sel(country=["USA", "Spain", "Peru", "Spain"])
    with pytest.raises(KeyError, match="country"):
        x.sel(country=dg.constant(np.array(["USA", "Mars"]), dims=(dg.Dim("obs", size=2),)))
    with pytest.raises(KeyError, match=r"age.*\b5\b"):
        x.sel(age=5)
    with pytest.raises(KeyError, match=r"age.*-6"):
        x.loc["USA", -6]  # -1..-5 count from the end, as xarray's sel on a dim without an index
    with pytest.raises(KeyError, match="non-monotonic|Spain"):
        dg.labeled("z", dims=(dg.Dim("country", coords=["Italy", "USA", "Chile"]),)).sel(
            country=slice("Spain", "Chile")
        )


def test_out_of_range_positions_are_index_errors_naming_dim():
    a, obs = dg.Dim("a", size=3), dg.Dim("obs", size=2)
    x = dg.labeled("x", dims=(a,))
    with pytest.raises(IndexError, match=r"position 3 .*'a'"):
        x.isel(a=3)
    with pytest.raises(IndexError, match=r"\[-4\].*'a'"):
        x.isel(a=[0, -4])
    with pytest.raises(IndexError, match=r"\[7\].*'a'"):
        x.isel(a=dg.constant(np.array([1, 7]), dims=(obs,)))
    with pytest.raises(IndexError, match="too many"):
        x[0, 0]
    with pytest.raises(IndexError, match="mask"):
        x.isel(a=np.array([True, False]))


def test_unknown_dims_and_bad_keys():
    a, b = dg.Dim("a", size=3), dg.Dim("b", size=2)
    x = dg.labeled("x", dims=(a, b))
    with pytest.raises(dg.DimError, match=r"no dim 'c'.*\(a: 3, b: 2\)"):
        x.isel(c=0)
    with pytest.raises(dg.DimError, match="no dim 'c'"):
        x.sel({"c": 0})
    assert x.isel(c=0, a=1, missing_dims="ignore").dims == (b,)
    with pytest.warns(UserWarning, match="no dim 'c'"):
        assert x.isel({"c": 0}, missing_dims="warn").dims == (a, b)
    with pytest.raises(dg.DimError, match="'a'"):
        x.isel(
            a=dg.labeled("i", dims=(dg.Dim("a", size=5),), dtype="int64"), b=dg.labeled("j", dims=(a,), dtype="int64")
        )
    with pytest.raises(IndexError, match="integers or booleans"):
        x.isel(a=dg.labeled("f", dims=(b,)))
    with pytest.raises(TypeError, match="boolean scalar"):
        x.isel(a=True)
    with pytest.raises(TypeError, match="from_positional"):
        x.isel(a=dg.tensor("t", shape=(2,), dtype="int64"))
    with pytest.raises(TypeError, match="known when the graph is built"):
        dg.labeled("y", dims=(dg.Dim("c", coords=["u", "v"]),)).sel(c=dg.labeled("l", dims=(b,), dtype="int64"))
    with pytest.raises(dg.DimError, match="repeats the labels"):
        dg.labeled("y", dims=(dg.Dim("c", coords=["u", "v"]),)).isel(c=[0, 0])


def test_set_inc_need_an_indexing_result():
    a = dg.Dim("a", size=3)
    x = dg.labeled("x", dims=(a,))
    for bad in (x, x + 1, x.sum()):
        with pytest.raises(TypeError, match="not the result of isel/sel"):
            bad.set(1.0)
        with pytest.raises(TypeError, match="not the result of isel/sel"):
            bad.inc(1.0)
    with pytest.raises(dg.DimError, match="selection"):
        x.isel(a=0).set(dg.labeled("v", dims=(a,)))
    with pytest.raises(TypeError, match="same_kind"):
        dg.labeled("k", dims=(a,), dtype="int64").isel(a=0).set(dg.labeled("w", dims=()))
    with pytest.raises(TypeError, match="immutable"):
        x.loc[{"a": 0}] = 1.0


def test_labels_never_reach_the_compiled_graph():
    country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    x = dg.labeled("x", dims=(country,))
    where = dg.constant(np.array(["Chile", "USA"]), dims=(dg.Dim("obs", size=2),))
    low = dg.lower(x.sel(country=where))
    for v in dg.core.graph.ancestors([low]):
        assert v.type.dtype != "object"


def test_indexer_on_a_kept_dim_indexes_pointwise(backend):
    """An indexer carrying a dim the variable keeps pairs with it position by position (as xarray)."""
    obs, group = dg.Dim("obs"), dg.Dim("group", coords=["g0", "g1", "g2"])
    table = dg.labeled("table", dims=(obs, group))
    idx = dg.labeled("idx", dims=(obs,), dtype="int64")
    picked = table.isel(group=idx)
    assert picked.dims == (obs,)
    f = dg.function([table, idx], [picked, picked.set(0.0)], backend=backend)
    rng = np.random.default_rng(1)
    for n in (0, 1, 5):
        td = xr.DataArray(rng.normal(size=(n, 3)), dims=("obs", "group"), coords={"group": group.coords})
        idd = xr.DataArray(rng.integers(0, 3, n), dims="obs")
        got, zeroed = f(td, idd)
        assert_same(got, td.isel(group=idd))
        want = td.values.copy()
        want[np.arange(n), idd.values] = 0.0
        np.testing.assert_array_equal(zeroed.values, want)


def test_lowering_is_one_gather_for_a_group_lookup():
    from dimgraph.core.subtensor import AdvancedSubtensor, Subtensor

    group, obs = dg.Dim("group", size=4), dg.Dim("obs")
    mu = dg.labeled("mu", dims=(group,))
    idx = dg.labeled("idx", dims=(obs,), dtype="int64")
    low = dg.lower(mu.isel(group=idx))
    assert isinstance(low.owner.op, AdvancedSubtensor) and low.owner.inputs[0].owner is None
    x = dg.labeled("x", dims=(group, obs))
    low = dg.lower(x.isel(group=1, obs=slice(None, None, -1)))
    assert isinstance(low.owner.op, Subtensor) and low.type.shape == (None,)
    # labels from sel are positions in the lowered graph
    country = dg.Dim("country", coords=["USA", "Italy"])
    low = dg.lower(dg.labeled("b", dims=(country, group)).sel(country="Italy"))
    assert isinstance(low.owner.op, Subtensor) and low.owner.op.index == (1, ("slice", None, None, None))


def _finite_differences(f, arrays, k, eps=1e-6):
    base = [a.copy() for a in arrays]
    grad = np.zeros_like(base[k])
    for j in np.ndindex(base[k].shape):
        up, down = [a.copy() for a in base], [a.copy() for a in base]
        up[k][j] += eps
        down[k][j] -= eps
        grad[j] = (f(*up) - f(*down)) / (2 * eps)
    return grad


def test_gradients_through_isel_sel_and_updates(backend):
    group, obs = dg.Dim("group", size=3), dg.Dim("obs", size=5)
    country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    mu = dg.labeled("mu", dims=(group,))
    beta = dg.labeled("beta", dims=(country,))
    idx = dg.labeled("idx", dims=(obs,), dtype="int64")
    where = dg.constant(np.array(["Chile", "USA", "Chile", "Italy", "USA"]), dims=(obs,))
    pred = mu.isel(group=idx) * beta.sel(country=where)
    cost = (pred**2).sum() + (beta.sel(country=["USA", "Chile"]) ** 3).sum() + mu.isel(group=0).set(2.0).prod()
    cost = cost + dg.exp(beta.loc["Italy":"Chile"]).sum() + mu.isel(group=idx).inc(mu.isel(group=idx)).sum()
    g_mu, g_beta = dg.grad(cost, [mu, beta])
    assert g_mu.dims == mu.dims and g_beta.dims == beta.dims
    f = dg.function([mu, beta, idx], [cost, g_mu, g_beta], backend=backend)
    rng = np.random.default_rng(3)
    mud, betad = rng.normal(size=3), rng.normal(size=3)
    idd = np.array([2, 0, 2, 1, 0])
    c, gm, gb = f(mud, betad, idd)
    value = lambda m, b: float(f(m, b, idd)[0].values)  # noqa: E731
    np.testing.assert_allclose(gm.values, _finite_differences(value, [mud, betad], 0), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(gb.values, _finite_differences(value, [mud, betad], 1), rtol=1e-5, atol=1e-6)
    assert list(gb.indexes["country"]) == ["USA", "Italy", "Chile"]


def test_sel_with_method_and_on_unsized_dims_match_xarray(backend):
    t = dg.Dim("t", coords=[1.0, 2.0, 4.0, 8.0])
    obs = dg.Dim("obs")
    p, q = dg.Dim("p", size=2), dg.Dim("q", size=3)
    x = dg.labeled("x", dims=(obs, t))
    labels2d = np.array([["USA", "Chile", "USA"], ["Peru", "USA", "Chile"]])
    country = dg.Dim("country", coords=["Chile", "USA", "Peru"])
    c = dg.labeled("c", dims=(country,))
    outs = [
        x.sel(t=3.1, method="nearest"),
        x.sel(t=[3.1, 9.0], method="pad"),
        x.sel(t=[2.1], method="backfill", tolerance=5),
        x.sel(obs=2),
        x.sel(obs=[0, 2]),
        x.sel(obs=slice(1, 3)),
        x.sel(obs=dg.constant(np.array([2, 0, 1]), dims=(q,))),
        c.sel(country=dg.constant(labels2d, dims=(p, q))),
        x.loc[..., 4.0],
        x.loc[1:, [8.0, 1.0]],
    ]
    f = dg.function([x, c], outs, backend=backend)
    xd = xr.DataArray(np.arange(16.0).reshape(4, 4), dims=("obs", "t"), coords={"t": t.coords})
    cd = xr.DataArray([1.0, 2.0, 3.0], dims="country", coords={"country": country.coords})
    got = f(xd, cd)
    want = [
        xd.sel(t=3.1, method="nearest"),
        xd.sel(t=[3.1, 9.0], method="pad"),
        xd.sel(t=[2.1], method="backfill", tolerance=5),
        xd.sel(obs=2),
        xd.sel(obs=[0, 2]),
        xd.sel(obs=slice(1, 3)),
        xd.sel(obs=xr.DataArray([2, 0, 1], dims="q")),
        cd.sel(country=xr.DataArray(labels2d, dims=("p", "q"))),
        xd.loc[..., 4.0],
        xd.loc[1:, [8.0, 1.0]],
    ]
    for g, w in zip(got, want):
        assert_same(g, w)
    with pytest.raises(KeyError, match=r"'t'.*nearest"):
        x.sel(t=[3.1, 20.0], method="nearest", tolerance=0.5)
    with pytest.raises(TypeError, match="slice"):
        x.sel(t=slice(1.0, 2.0), method="nearest")


def test_sel_negative_positions_and_datetime_labels_match_xarray(backend):
    """Found by differential testing: on a dim without coords `sel` is positional in xarray (negatives count
    from the end); NumPy datetime64 scalars and partial date strings select on a DatetimeIndex."""
    b, obs = dg.Dim("b", size=5), dg.Dim("obs")
    t = dg.Dim("t", coords=pd.date_range("2020-01-30", periods=4))
    x = dg.labeled("x", dims=(t, b, obs))
    xd = xr.DataArray(np.arange(60.0).reshape(4, 5, 3), dims=("t", "b", "obs"), coords={"t": t.coords})
    keys = [
        {"b": -1},
        {"b": [-1, 0, -5]},
        {"obs": -1, "b": slice(-3, None)},
        {"obs": [-2]},
        {"t": np.datetime64("2020-01-31")},
        {"t": [np.datetime64("2020-02-02"), np.datetime64("2020-01-30")]},
        {"t": "2020-01"},
        {"t": "2020-02-01", "b": -2},
    ]
    got = dg.function([x], [x.sel(k) for k in keys], backend=backend)(xd)
    for k, g in zip(keys, got):
        assert_same(g, xd.sel(k))
    with pytest.raises(KeyError, match=r"'b'.*-6"):
        x.sel(b=-6)
    with pytest.raises(IndexError, match="out of bounds"):
        dg.function([x], x.sel(obs=-4), backend=backend)(xd)


def test_isel_and_sel_drop_match_xarray(backend):
    """xarray's `drop=True` (found missing by differential testing): no scalar coord for a dim an int drops."""
    a, c, o = dg.Dim("a", coords=["x", "y"]), dg.Dim("c"), dg.Dim("o", size=2)
    x = dg.labeled("x", dims=(a, c))
    xd = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("a", "c"), coords={"a": ["x", "y"], "c": [4, 5, 6]})
    idx = dg.constant(np.array([1, 0]), dims=(o,))
    outs = [
        x.isel(a=0, drop=True),
        x.sel(a="y", drop=True),
        x.isel(a=0, c=1, drop=True),
        x.isel(a=idx, drop=True),
        x.isel({"a": 1}, True),
    ]
    want = [
        xd.isel(a=0, drop=True),
        xd.sel(a="y", drop=True),
        xd.isel(a=0, c=1, drop=True),
        xd.isel(a=xr.DataArray([1, 0], dims="o"), drop=True),
        xd.isel({"a": 1}, True),
    ]
    for g, w in zip(dg.function([x], outs, backend=backend)(xd), want):
        xr.testing.assert_identical(g.rename(None), w)


def test_static_mask_on_a_dim_sized_by_the_data_checks_its_length():
    obs = dg.Dim("obs")
    y = dg.labeled("y", dims=(obs,))
    f = dg.function([y], y.isel(obs=np.array([True, False, True])), backend="python")
    np.testing.assert_array_equal(f(np.arange(3.0)).values, [0.0, 2.0])
    with pytest.raises(dg.InputError, match="obs"):
        f(np.arange(5.0))
    with pytest.raises(dg.DimError, match="obs"):
        y.isel(obs=dg.constant(np.array([True]), dims=(dg.Dim("obs", size=1),)))


def test_label_arrays_are_only_selection_keys():
    obs = dg.Dim("obs", size=2)
    labels = dg.constant(np.array(["USA", "Chile"]), dims=(obs,))
    for use in (lambda: labels + 1, lambda: labels.sum(), lambda: dg.exp(labels)):
        with pytest.raises(TypeError, match="array of labels"):
            use()


def test_symbolic_slice_bounds():
    t, obs = dg.Dim("t", size=6), dg.Dim("obs")
    x = dg.labeled("x", dims=(t,))
    n = dg.scalar("n", dtype="int64")
    window = x.isel(t=slice(1, n))
    assert window.dims[0].name == "t" and window.dims[0].size is None
    assert x.isel(t=slice(1, n)).dims != x.isel(t=slice(2, n)).dims
    f = dg.function([x, n], [window, window.sum(), x.isel(t=slice(None, n)).set(0.0)], backend="python")
    w, s, zeroed = f(np.arange(6.0), 4)
    np.testing.assert_array_equal(w.values, [1.0, 2.0, 3.0])
    assert float(s.values) == 6.0
    np.testing.assert_array_equal(zeroed.values, [0, 0, 0, 0, 4, 5])
    with pytest.raises(TypeError, match="slice bounds"):
        x.isel(t=slice(0, 2.5))
    assert x[:n].dims == x.isel(t=slice(None, n)).dims and x[1:n:2].dims[0].size is None
    f = dg.function([x, n], x[::n], backend="python")
    np.testing.assert_array_equal(f(np.arange(6.0), -2).values, [5.0, 3.0, 1.0])
    y = dg.labeled("y", dims=(obs, t))
    i = dg.labeled("i", dims=(obs,), dtype="int64")
    assert y.isel(t=i).dims == (obs,)  # i's obs pairs with y's obs, position by position
    with pytest.raises(dg.DimError, match="derived"):  # a sliced obs is another dim than i's obs
        y.isel(t=i, obs=slice(0, n))


def test_symbolic_slices_match_xarray(backend):
    @settings(max_examples=examples(backend, 2), suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def check(data):
        draw = data.draw
        dims, sizes = draw(dims_strategy(sizes=SIZES))
        dims = tuple(d if d.coords is None else dg.Dim(d.name, size=d.size) for d in dims)
        rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
        case = Case()
        x_da = dataarray(rng, dims, sizes)
        x = case.add(dg.labeled("x", dims=dims), x_da)
        dg_key, xr_key = draw_isel_key(draw, case, rng, dims, sizes, ("sslice",))
        expected = x_da.isel(xr_key)
        sub = x.isel(dg_key)
        got, updated = _run(backend, case, [sub, sub.inc(1.0)])
        assert_same(got, expected)
        want = x_da.copy()
        want[xr_key] += 1.0
        np.testing.assert_array_equal(updated.values, want.values)

    check()


def test_gradients_through_2d_indexers_masks_and_symbolic_slices(backend):
    a, b = dg.Dim("a", size=4), dg.Dim("b", size=3)
    p, q = dg.Dim("p", size=2), dg.Dim("q", size=3)
    x = dg.labeled("x", dims=(a, b))
    idx = dg.constant(np.array([[0, 3, 3], [1, 0, 2]]), dims=(p, q))
    n = dg.scalar("n", dtype="int64")
    cost = (
        (x.isel(a=idx) ** 2).sum()
        + dg.sin(x.isel(b=slice(1, n))).sum()
        + x.isel(a=np.array([True, False, True, True])).prod()
    )
    g = dg.grad(cost, x)
    assert g.dims == x.dims
    f = dg.function([x, n], [cost, g], backend=backend)
    xd = np.random.default_rng(5).normal(size=(4, 3))
    _, gd = f(xd, 3)
    value = lambda v: float(f(v, 3)[0].values)  # noqa: E731
    np.testing.assert_allclose(gd.values, _finite_differences(value, [xd], 0), rtol=1e-5, atol=1e-6)
