"""Labeled outputs carry what xarray arithmetic would: non-index coords of the inputs whose dims
survive, the variable's name, coord dtypes; inputs whose labels are a reordering are gathered."""

import numpy as np
import pytest
import xarray as xr

import dimgraph as dg

county = dg.Dim("county", coords=["A", "B", "C"])
obs = dg.Dim("obs")


def _data():
    a = xr.DataArray(
        [1.0, 2.0, 3.0],
        dims="county",
        coords={"county": ["A", "B", "C"], "region": ("county", ["n", "s", "n"]), "year": 2024},
    )
    y = xr.DataArray(
        np.arange(6.0).reshape(2, 3),
        dims=("obs", "county"),
        coords={"obs": [10, 20], "floor": ("obs", [0, 1]), "county": ["A", "B", "C"], "year": 2025},
    )
    return a, y


@pytest.fixture(scope="module")
def model():
    a = dg.labeled("a", dims=(county,))
    y = dg.labeled("y", dims=(obs, county))
    outs = {
        "scaled": a * 2,
        "sum": a + y,  # `year` differs between the inputs: dropped, as xarray
        "total": y.sum("county"),
        "transposed": (y * a).transpose(),
        "picked": y.isel(county=[2, 0]),  # positions moved along county: `region` cannot follow
    }
    return [a, y], outs


_COMPILED = {}


@pytest.fixture
def compiled(model, backend):
    """One compiled function per backend, shared by the tests."""
    if backend not in _COMPILED:
        inputs, outs = model
        _COMPILED[backend] = dg.function(inputs, [o.rename(name) for name, o in outs.items()], backend=backend)
    return _COMPILED[backend]


def test_non_index_coords_name_and_dtypes_as_xarray(compiled):
    a, y = _data()
    scaled, total_sum, total, transposed, picked = compiled(a, y)
    for got, want, name in [
        (scaled, a * 2, "scaled"),
        (total_sum, a + y, "sum"),
        (total, y.sum("county"), "total"),
        (transposed, (y * a).transpose(), "transposed"),
    ]:
        xr.testing.assert_identical(got, want.rename(name))
    assert scaled.county.dtype == np.dtype("<U1") and "region" in scaled.coords and "year" not in total_sum.coords
    assert picked.county.values.tolist() == ["C", "A"] and picked.floor.values.tolist() == [0, 1]
    assert "region" not in picked.coords


def test_numpy_inputs_give_dim_coords_only(compiled):
    a, y = _data()
    scaled = compiled(a.values, y.values)[0]
    assert list(scaled.coords) == ["county"] and scaled.county.dtype == np.dtype("<U1")
    assert scaled.name == "scaled"


def test_reordered_labels_are_gathered_into_the_dims_order(compiled):
    a, y = _data()
    shuffled_a = a.isel(county=[2, 0, 1])
    shuffled_y = y.isel(county=[1, 2, 0]).transpose("county", "obs")
    got = compiled(shuffled_a, shuffled_y)
    want = compiled(a, y)
    for g, w in zip(got, want):
        xr.testing.assert_identical(g, w)


def test_labels_that_are_not_a_reordering_are_input_errors(compiled):
    a, y = _data()
    with pytest.raises(dg.InputError, match=r"input 'a': the coords of dim 'county' disagree .* not a reordering"):
        compiled(a.assign_coords(county=["A", "B", "D"]), y)
    with pytest.raises(dg.InputError, match="not a reordering"):
        compiled(a.assign_coords(county=["A", "A", "C"]), y)


def test_outputs_of_successive_calls_are_independent(backend):
    """Outputs share a per-shape template: changing one call's attrs, coords or values leaves the next alone."""
    a = dg.labeled("a", dims=(county,))
    f = dg.function([a], (a * 2).rename("scaled"), backend=backend)
    first = f(np.array([1.0, 2.0, 3.0]))
    first.attrs["units"] = "m"
    first["county"].attrs["note"] = "edited"
    first.name = "renamed"
    first.values[:] = -1.0
    second = f(np.array([1.0, 2.0, 3.0]))
    xr.testing.assert_identical(
        second, xr.DataArray([2.0, 4.0, 6.0], dims="county", coords={"county": ["A", "B", "C"]}, name="scaled")
    )
    assert second["county"].attrs == {} and first.attrs == {"units": "m"}


_SLICED = {}


def _sliced(backend):
    """Slices, a selection and a diff of a Dim of fixed size without coords (the labels come with the data)."""
    if backend not in _SLICED:
        time = dg.Dim("time", size=5)
        y = dg.labeled("y", dims=(time,))
        outs = [
            y.isel(time=slice(1, None)),
            y.isel(time=slice(None, None, -2)) * 2.0,
            y.isel(time=[0, 3]),
            y.diff("time"),
            y.diff("time", label="lower"),
            y.isel(time=slice(1, None)).rename(time="t"),
        ]
        _SLICED[backend] = dg.function([y], outs, backend=backend)
    return _SLICED[backend]


def test_a_sliced_dim_of_fixed_size_keeps_the_input_labels(backend):
    """As xarray (and as for a Dim sized by the data): the output carries the labels at the kept positions."""
    da = xr.DataArray(np.arange(5.0) ** 2, dims="time", coords={"time": [10, 20, 30, 40, 50]})
    expected = [
        da.isel(time=slice(1, None)),
        da.isel(time=slice(None, None, -2)) * 2.0,
        da.isel(time=[0, 3]),
        da.diff("time"),
        da.diff("time", label="lower"),
        da.isel(time=slice(1, None)).rename(time="t"),
    ]
    for got, want in zip(_sliced(backend)(da), expected):
        xr.testing.assert_identical(got.rename(None), want.rename(None))
    plain = _sliced(backend)(np.arange(5.0))  # no labels given: none on the outputs (as xarray)
    assert all(not o.indexes for o in plain)


def test_two_slices_giving_one_dim_leave_it_without_labels():
    time = dg.Dim("time", size=5)
    y = dg.labeled("y", dims=(time,))
    f = dg.function([y], y.isel(time=slice(1, None)) - y.isel(time=slice(None, -1)), backend="python")
    out = f(xr.DataArray(np.arange(5.0), dims="time", coords={"time": [10, 20, 30, 40, 50]}))
    assert not out.indexes and out.values.tolist() == [1.0] * 4


def test_renaming_a_sliced_dim_away_and_back_is_not_the_full_dim(backend):
    """The derived dim stays derived under a rename: combining it with the full dim is a DimError naming both."""
    time = dg.Dim("time")
    y = dg.labeled("y", dims=(time,))
    back = y.isel(time=slice(1, None)).rename(time="t").rename(t="time")
    assert back.dims[0] != time and back.dims[0] == y.isel(time=slice(1, None)).dims[0]
    with pytest.raises(
        dg.DimError, match=r"two different dims named 'time': Dim\('time', origin='isel\(time, 1\)'\).*Dim\('time'\)"
    ):
        back - y
    f = dg.function([y], [back * 2.0, y.isel(time=slice(1, None)) + back], backend=backend)
    da = xr.DataArray(np.arange(4.0), dims="time", coords={"time": [10, 20, 30, 40]})
    twice, total = f(da)
    xr.testing.assert_identical(twice.rename(None), (da.isel(time=slice(1, None)) * 2.0))
    xr.testing.assert_identical(total.rename(None), (da.isel(time=slice(1, None)) * 2.0))


def test_a_cut_put_on_the_full_dim_by_hand_is_checked_naming_both_dims(backend):
    """`rename({"time": time})` onto the Dim the data sizes: a length mismatch is an error naming both dims."""
    time = dg.Dim("time")
    y = dg.labeled("y", dims=(time,))
    f = dg.function([y], y.isel(time=slice(1, None)).rename({"time": time}) - y, backend=backend)
    # (c checks a condition on shapes while planning, before the views it would size: the same error)
    with pytest.raises(
        AssertionError,
        match=r"rename: the data gives these dims different lengths: Dim\('time', origin='isel\(time, 1\)'\) put on Dim\('time'\)",
    ):
        f(np.arange(4.0))
