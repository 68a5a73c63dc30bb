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
