"""Compiled labeled functions: DataArray/NumPy in, DataArray out, and every InputError case."""

import numpy as np
import pytest
import xarray as xr

import dimgraph as dg

country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
age = dg.Dim("age", size=4)
obs = dg.Dim("obs")


@pytest.fixture(scope="module")
def effect_fn():
    ce = dg.labeled("country_effect", dims=(country,))
    ae = dg.labeled("age_effect", dims=(age,))
    return dg.function([ce, ae], ce + ae, backend="python")


def test_outputs_are_dataarrays_with_coords(backend):
    ce = dg.labeled("country_effect", dims=(country,))
    ae = dg.labeled("age_effect", dims=(age,))
    f = dg.function([ce, ae], ce + ae, backend=backend)
    out = f(np.arange(3.0), np.arange(4.0) * 10)
    assert isinstance(out, xr.DataArray) and out.dims == ("country", "age")
    assert list(out.indexes["country"]) == ["USA", "Italy", "Chile"] and "age" not in out.indexes
    np.testing.assert_allclose(out.sel(country="Italy").values, 1 + np.arange(4.0) * 10)


def test_dataarray_inputs_are_transposed_by_name(backend):
    x = dg.labeled("x", dims=(country, age))
    f = dg.function([x], x * 2, backend=backend)
    data = xr.DataArray(
        np.arange(12.0).reshape(4, 3), dims=("age", "country"), coords={"country": list(country.coords)}
    )
    out = f(data)
    assert out.dims == ("country", "age")
    np.testing.assert_allclose(out.values, data.values.T * 2)


def test_trusted_calls_take_dataarrays_and_arrays(backend):
    x = dg.labeled("x", dims=(country, age))
    t = dg.tensor("t", shape=(4,))
    f = dg.function([x, t], x * 2 + dg.from_positional(t, (age,)), backend=backend)
    data = xr.DataArray(
        np.arange(12.0).reshape(4, 3), dims=("age", "country"), coords={"country": list(country.coords)}
    )
    expected = data.values.T * 2 + np.arange(4.0)
    for value in (data, np.ascontiguousarray(data.values.T)):
        for t_value in (np.arange(4.0), xr.DataArray(np.arange(4.0), dims="whatever")):
            out = f(value, t_value, trust_input=True)
            assert out.dims == ("country", "age")
            np.testing.assert_allclose(out.values, expected)


def test_coords_of_unknown_dims_come_from_the_input_dataarray(backend):
    x = dg.labeled("x", dims=(obs,))
    f = dg.function([x], x + 1, backend=backend)
    data = xr.DataArray(np.zeros(3), dims="obs", coords={"obs": [10, 20, 30]})
    out = f(data)
    assert out.indexes["obs"].tolist() == [10, 20, 30]
    assert "obs" not in f(np.zeros(2)).indexes


@pytest.mark.parametrize("n", [1, 2])
def test_derived_dims_take_their_coords_from_the_input_dataarray(backend, n):
    """`diff` of a dim without static coords keeps xarray's upper labels of the input's coords."""
    x = dg.labeled("x", dims=(obs, age))
    f = dg.function([x], x.diff("obs", n=n).cumsum("obs"), backend=backend)
    data = xr.DataArray(np.arange(20.0) ** 2, dims="obs", coords={"obs": list("abcdefghijklmnopqrst")})
    data = data.expand_dims(age=4, axis=1).copy()
    xr.testing.assert_identical(f(data), data.diff("obs", n=n).cumsum("obs").rename(None))
    assert "obs" not in f(data.values).indexes


def test_renamed_dims_keep_the_coords_of_the_input_dataarray(backend):
    """Found by differential testing: xarray's `rename` keeps the labels the data gave the old dim."""
    x = dg.labeled("x", dims=(obs, age))
    outs = [x.rename(obs="o"), x.rename(obs="o").diff("o").rename(o="p").isel(p=[2, 0]), x.rename(age="a")]
    f = dg.function([x], outs, backend=backend)
    data = xr.DataArray(
        np.arange(20.0).reshape(5, 4), dims=("obs", "age"), coords={"obs": list("abcde"), "age": [1, 2, 3, 4]}
    )
    want = [data.rename(obs="o"), data.rename(obs="o").diff("o").rename(o="p").isel(p=[2, 0]), data.rename(age="a")]
    for got, expected in zip(f(data), want):
        xr.testing.assert_identical(got, expected.rename(None))
    assert "o" not in f(data.values)[0].indexes


def test_squeezed_dims_leave_scalar_coords(backend):
    """Found by differential testing: xarray's `squeeze` keeps each dropped dim's label as a scalar coord."""
    one, n = dg.Dim("one", coords=["only"]), dg.Dim("n", size=1)
    x = dg.labeled("x", dims=(obs, one, n))
    f = dg.function([x], [x.squeeze(), x.squeeze("n").sum("obs"), x.isel(obs=[1]).squeeze("one")], backend=backend)
    data = xr.DataArray(
        np.arange(3.0).reshape(3, 1, 1), dims=("obs", "one", "n"), coords={"one": ["only"], "n": [7], "obs": [4, 5, 6]}
    )
    want = [data.squeeze(), data.squeeze("n").sum("obs"), data.isel(obs=[1]).squeeze("one")]
    for got, expected in zip(f(data), want):
        xr.testing.assert_identical(got, expected.rename(None))


def test_sel_on_a_dim_without_coords_refuses_data_that_labels_it():
    """Found by differential testing: `sel` takes the labels of a Dim without coords as positions when the graph
    is built, where xarray would look up the labels a DataArray brings; such data is an InputError, not a
    silently different selection."""
    b = dg.Dim("b", size=3)
    x = dg.labeled("x", dims=(obs, b))
    data = xr.DataArray(np.arange(12.0).reshape(4, 3), dims=("obs", "b"), coords={"obs": [5, 3, 1, 7]})
    for y in (x.sel(obs=1), x.sel(obs=[0, 2]).sum(), x.loc[1:2, :], x.sel(obs=1).set(0.0)):
        f = dg.function([x], y, backend="python")
        with pytest.raises(dg.InputError, match=r"input 'x': dim 'obs' has the labels \[5, 3, 1, 7\].*sel/\.loc"):
            f(data)
        f(data.drop_vars("obs"))  # no labels, or the labels 0..n-1: positions and labels agree
        f(data.assign_coords(obs=[0, 1, 2, 3]))
    f = dg.function([x], [x.isel(obs=1), x.sel(obs=np.array([True, False, True, False])), x.sel(b=2)], backend="python")
    got = f(data)  # positions (isel) and masks are not labels; b is not labeled by the data
    xr.testing.assert_identical(got[0], data.isel(obs=1))
    xr.testing.assert_identical(got[1], data.isel(obs=[0, 2]))


def test_unknown_dim_mismatch_between_inputs_is_input_error(effect_fn):
    a = dg.labeled("a", dims=(obs,))
    b = dg.labeled("b", dims=(obs, age))
    f = dg.function([a, b], a * b, backend="python")
    assert f(np.ones(2), np.ones((2, 4))).shape == (2, 4)
    with pytest.raises(dg.InputError, match="inputs 'a' and 'b' disagree on the size of dim 'obs': 2 in 'a', 3 in 'b'"):
        f(np.ones(2), np.ones((3, 4)))


@pytest.mark.parametrize(
    "value, message",
    [
        (xr.DataArray(np.ones(3), dims="nation"), "missing dim 'country'; unexpected dim 'nation'"),
        (xr.DataArray(np.ones(4), dims="country"), "dim 'country' has size 3, got 4"),
        (np.ones(4), "dim 'country' has size 3, got 4"),
        (np.ones((3, 1)), "expected an array with dims (country: 3)"),
        (
            xr.DataArray(np.ones(3), dims="country", coords={"country": ["USA", "France", "Chile"]}),
            "first difference at position 1: expected 'Italy', got 'France'",
        ),
        (np.array([0.5, 1.0, 2.0]), "change when cast"),
    ],
)
def test_bad_input_is_input_error_naming_input_and_dim(value, message):
    x = dg.labeled("counts", dims=(country,), dtype="int64")
    f = dg.function([x], x + 1, backend="python")
    with pytest.raises(dg.InputError, match="counts") as err:
        f(value)
    assert message in str(err.value)


def test_missing_input_is_input_error(effect_fn):
    with pytest.raises(dg.InputError, match="missing inputs \\['age_effect'\\]"):
        effect_fn(np.ones(3))


def test_constant_fixes_unknown_dim_size():
    x = dg.labeled("x", dims=(obs,))
    c = dg.constant(np.arange(3.0), dims=(obs,))
    f = dg.function([x], x + c, backend="python")
    np.testing.assert_allclose(f(np.ones(3)).values, [1, 2, 3])
    with pytest.raises(dg.InputError, match="dim 'obs' has size 2, but a constant in the graph gives it size 3"):
        f(np.ones(2))


def test_positional_and_labeled_mixed(backend):
    x = dg.labeled("x", dims=(country, age))
    t = dg.tensor("t", shape=(None,))
    y = x.sum("age").to_positional() * t
    f = dg.function([x, t], [y, dg.from_positional(t, (obs,)) + x.sum()], backend=backend)
    p, q = f(np.ones((3, 4)), np.arange(3.0))
    assert isinstance(p, np.ndarray) and p.tolist() == [0.0, 4.0, 8.0]
    assert q.dims == ("obs",) and q.values.tolist() == [12.0, 13.0, 14.0]


def test_labeled_shared_state(backend):
    w = dg.shared(np.zeros(3), dims=(country,), name="w")
    x = dg.labeled("x", dims=(country, age))
    ctx = dg.SharedContext()
    f = dg.function([x], (x * w).sum(), updates={w: w + x.sum("age")}, backend=backend)
    assert float(f(np.ones((3, 4)), ctx=ctx)) == 0.0
    assert float(f(np.ones((3, 4)), ctx=ctx)) == 48.0  # w was 4 after the first call
    got = w.get(ctx=ctx)
    assert isinstance(got, xr.DataArray) and got.values.tolist() == [8.0, 8.0, 8.0]
    assert list(got.indexes["country"]) == ["USA", "Italy", "Chile"]
    assert w.get().values.tolist() == [0.0, 0.0, 0.0]
    w.set(xr.DataArray([1.0, 2.0, 3.0], dims="country"), ctx=ctx)
    assert w.get(ctx=ctx).values.tolist() == [1.0, 2.0, 3.0]


def test_inputs_labelling_a_dim_differently_are_refused():
    a, b = dg.labeled("a", dims=(obs,)), dg.labeled("b", dims=(obs,))
    f = dg.function([a, b], a - b, backend="python")
    da = xr.DataArray(np.arange(3.0), dims="obs", coords={"obs": ["x", "y", "z"]})
    assert f(da, da).values.tolist() == [0.0, 0.0, 0.0]
    assert f(da, np.ones(3)).indexes["obs"].tolist() == ["x", "y", "z"]
    with pytest.raises(dg.InputError, match="label dim 'obs' differently .*position 0: expected 'x', got 'z'"):
        f(da, da.isel(obs=[2, 1, 0]))


def test_dtype_rules_are_numpy_2_with_weak_python_scalars(backend):
    i = dg.Dim("i", size=2)
    f32, i32, i8 = (dg.labeled(n, dims=(i,), dtype=n) for n in ("float32", "int32", "int8"))
    cases = {
        "f32 + 1.5": (f32 + 1.5, np.ones(2, "float32") + 1.5),
        "i32 / 2": (i32 / 2, np.ones(2, "int32") / 2),
        "i8 + 1": (i8 + 1, np.ones(2, "int8") + 1),
        "f32 * float64 scalar": (f32 * np.float64(2), np.ones(2, "float32") * np.float64(2)),
        "exp(i32)": (dg.exp(i32), np.exp(np.ones(2, "int32"))),
        "f32.mean()": (f32.mean(), np.ones(2, "float32").mean()),
        "i8.sum()": (i8.sum(), np.ones(2, "int8").sum()),
        "i32 // 2": (i32 // 2, np.ones(2, "int32") // 2),
        "2 ** i8": (2**i8, 2 ** np.ones(2, "int8")),
        "f32 > 1": (f32 > 1, np.ones(2, "float32") > 1),
        "argmax": (f32.argmax("i"), np.argmax(np.ones(2, "float32"))),
    }
    outs = [v for v, _ in cases.values()]
    got = dg.function([f32, i32, i8], outs, backend=backend)(np.ones(2), np.ones(2), np.ones(2))
    for (name, (var, expected)), out in zip(cases.items(), got):
        assert var.dtype == np.asarray(expected).dtype, name
        assert out.dtype == var.dtype, name
        np.testing.assert_allclose(out.values, expected, err_msg=name)


def test_non_dimension_coords_follow_xarray(backend):
    """Scalar labels of a sel, labels picked by indexers (static, input, data-carried) propagate as in xarray."""
    where = dg.Dim("where", coords=["USA", "Italy", "Chile", "Peru"])
    x = dg.labeled("x", dims=(where, age))
    idx = dg.labeled("idx", dims=(obs,), dtype="int64")
    o2 = dg.Dim("o2", size=3)
    z = dg.labeled("z", dims=(obs,))
    picked = dg.constant(np.array(["USA", "Chile", "USA"]), dims=(o2,))
    outs = [
        x.sel(where="Chile") * 2 + 1,
        (x.sel(where="USA") + x.sel(where="Peru")).sum(),
        x.isel(where=idx).mean("age"),
        x.sel(where=picked).sum("age"),
        z.isel(obs=1),
    ]
    f = dg.function([x, idx, z], outs, backend=backend)
    X = xr.DataArray(np.arange(16.0).reshape(4, 4), dims=("where", "age"), coords={"where": list(where.coords)})
    idx_da = xr.DataArray(np.array([3, 0, 0]), dims="obs")
    Z = xr.DataArray(np.arange(3.0), dims="obs", coords={"obs": ["p", "q", "r"]})
    expected = [
        X.sel(where="Chile") * 2 + 1,
        (X.sel(where="USA") + X.sel(where="Peru")).sum(),
        X.isel(where=idx_da).mean("age"),
        X.sel(where=xr.DataArray(["USA", "Chile", "USA"], dims="o2")).sum("age"),
        Z.isel(obs=1),
    ]
    for got, want in zip(f(X, idx_da, Z), expected):
        xr.testing.assert_identical(got.rename(None), want.rename(None))
    plain = f(X.values, idx_da.values, Z.values)  # NumPy in: no labels from the data, as xarray on bare arrays
    assert "obs" not in plain[4].coords and list(plain[2].coords["where"].values) == ["Peru", "USA", "USA"]
