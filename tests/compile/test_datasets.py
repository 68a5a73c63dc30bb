"""xarray.Dataset in (labeled inputs by data-variable name) and out (output="dataset")."""

import pickle

import numpy as np
import pytest
import xarray as xr

import dimgraph as dg

county = dg.Dim("county", coords=["A", "B", "C"])
obs = dg.Dim("obs")


def _model():
    mu = dg.labeled("mu", dims=(county,))
    y = dg.labeled("y", dims=(obs, county))
    scale = dg.scalar("scale")
    resid = ((y - mu) / scale).rename("resid")
    logp = (-0.5 * resid**2).sum().rename("logp")
    twice = scale * 2
    twice.name = "twice"
    return [mu, y, scale], [logp, resid, twice]


DATA = xr.Dataset(
    {
        "mu": ("county", [0.0, 1.0, 2.0]),
        "y": (("obs", "county"), np.arange(6.0).reshape(2, 3)),
        "unused": ("obs", [1, 2]),
    },
    coords={"county": ["A", "B", "C"]},
)


def test_dataset_in_and_out(backend):
    inputs, outputs = _model()
    f = dg.function(inputs, outputs, backend=backend, output="dataset")
    got = f(DATA, scale=2.0)
    assert isinstance(got, xr.Dataset) and list(got.data_vars) == ["logp", "resid", "twice"]
    resid = (DATA.y - DATA.mu) / 2.0
    xr.testing.assert_allclose(got.resid, resid.rename("resid"))
    np.testing.assert_allclose(got.logp.values, (-0.5 * resid**2).sum().values)
    assert got.twice.dims == () and float(got.twice) == 4.0
    # the same function by keyword gives the same Dataset; it pickles with its output form
    xr.testing.assert_identical(f(mu=DATA.mu, y=DATA.y, scale=2.0), got)
    xr.testing.assert_identical(pickle.loads(pickle.dumps(f))(DATA, scale=2.0), got)


def test_dataset_input_with_list_outputs():
    inputs, outputs = _model()
    logp = dg.function(inputs, outputs[0], backend="python")(DATA, scale=1.0)
    np.testing.assert_allclose(logp.values, (-0.5 * (DATA.y - DATA.mu) ** 2).sum().values)


def test_dataset_errors():
    inputs, outputs = _model()
    f = dg.function(inputs, outputs, backend="python", output="dataset")
    with pytest.raises(dg.InputError, match=r"missing inputs \['scale'\]"):
        f(DATA)
    with pytest.raises(dg.InputError, match="give the other inputs by keyword"):
        f(DATA, 2.0)
    with pytest.raises(dg.InputError, match="'mu' given twice"):
        f(DATA, mu=DATA.mu, scale=1.0)
    with pytest.raises(dg.InputError, match="input 'y'"):
        f(DATA.drop_vars("y").assign(y=("county", [1.0, 2.0, 3.0])), scale=1.0)
    t = dg.tensor("t", shape=(3,))
    with pytest.raises(TypeError, match="output 0 .* has no name"):
        dg.function(inputs, [inputs[0] * 2], output="dataset")
    with pytest.raises(TypeError, match="'t' is positional with 1 axes"):
        dg.function([t], t, output="dataset")
    with pytest.raises(TypeError, match="two outputs are named 'logp'"):
        dg.function(inputs, [outputs[0], outputs[0]], output="dataset")


def test_dataset_with_map_extra_dims_keeps_output_names():
    """A posterior Dataset (chain, draw) in, a Dataset of named outputs with those dims first out."""
    inputs, outputs = _model()
    f = dg.function(inputs, outputs[:2], backend="python", output="dataset", map_extra_dims=True)
    posterior = xr.Dataset({"mu": (("chain", "draw", "county"), np.arange(12.0).reshape(2, 2, 3))}, coords=DATA.coords)
    got = f(posterior, y=DATA.y, scale=2.0)
    assert list(got.data_vars) == ["logp", "resid"] and got.logp.dims == ("chain", "draw")
    assert got.resid.dims == ("chain", "draw", "obs", "county")
    resid = (DATA.y - posterior.mu) / 2.0
    xr.testing.assert_allclose(got.resid, resid.transpose("chain", "draw", "obs", "county").rename("resid"))
    xr.testing.assert_allclose(got.logp, (-0.5 * resid**2).sum(("obs", "county")).rename("logp"))
    # one DataArray out keeps its name too
    single = dg.function(inputs, outputs[0], backend="python", map_extra_dims=True)(posterior.mu, DATA.y, 2.0)
    assert single.name == "logp"
