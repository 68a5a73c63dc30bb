"""Labeled gradients: exactly the wrt dims (and order), coords on compiled outputs, values vs finite differences."""

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph.testing import numeric_grad

group = dg.Dim("group", coords=["north", "south", "east"])
age = dg.Dim("age", size=2)
obs = dg.Dim("obs")

_FUNCTIONS = {}


def _model():
    """A hierarchical normal model with group x age effects gathered per observation by a labeled indexer."""
    effect = dg.labeled("effect", dims=(age, group))  # wrt dims in another order than the cost uses them
    log_sigma = dg.labeled("log_sigma", dims=())
    g_idx = dg.labeled("g_idx", dims=(obs,), dtype="int64")
    a_idx = dg.labeled("a_idx", dims=(obs,), dtype="int64")
    y = dg.labeled("y", dims=(obs,))
    mu = effect.isel(group=g_idx, age=a_idx)
    resid = (y - mu) / dg.exp(log_sigma)
    logp = (-0.5 * resid**2 - log_sigma).sum() + (-0.5 * effect**2).sum("group").sum()
    return [effect, log_sigma, g_idx, a_idx, y], logp


@pytest.fixture(scope="module")
def model():
    return _model()


def test_gradients_keep_the_wrt_dims(model):
    inputs, logp = model
    g_effect, g_ls = dg.grad(logp, inputs[:2])
    assert g_effect.dims == (age, group) and g_ls.dims == ()
    v, grads = dg.value_and_grad(logp, [inputs[0]])
    assert v is logp and grads[0].dims == (age, group)


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_obs=st.integers(0, 8), seed=st.integers(0, 2**32 - 1))
def test_hierarchical_value_and_grad(backend, model, n_obs, seed):
    inputs, logp = model
    key = ("labeled-hier", backend)
    if key not in _FUNCTIONS:
        v, grads = dg.value_and_grad(logp, inputs[:2])
        _FUNCTIONS[key] = dg.function(inputs, [v, *grads], backend=backend)
        _FUNCTIONS["cost"] = dg.function(inputs, logp, backend="python")
    f, cost = _FUNCTIONS[key], _FUNCTIONS["cost"]
    rng = np.random.default_rng(seed)
    effect = rng.normal(size=(2, 3))
    vals = [
        effect,
        np.float64(0.3 * rng.normal()),
        rng.integers(0, 3, n_obs),
        rng.integers(0, 2, n_obs),
        rng.normal(size=n_obs),
    ]
    value, g_effect, g_ls = f(*vals)
    assert isinstance(g_effect, xr.DataArray) and g_effect.dims == ("age", "group")
    assert list(g_effect.indexes["group"]) == ["north", "south", "east"]
    np.testing.assert_allclose(value.values, cost(*vals).values, rtol=1e-12)
    np.testing.assert_allclose(g_effect.values, numeric_grad(lambda *a: cost(*a).values, vals, 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g_ls.values, numeric_grad(lambda *a: cost(*a).values, vals, 1), rtol=1e-6, atol=1e-6)


def test_dataarray_inputs_in_another_order(model):
    """A DataArray given in another dim order is transposed in; the gradient comes back in the wrt's order."""
    inputs, logp = model
    f = dg.function(inputs[:1] + inputs[2:] + inputs[1:2], dg.grad(logp, inputs[0]), backend="python")
    effect = xr.DataArray(np.arange(6.0).reshape(3, 2), dims=("group", "age"), coords={"group": list(group.coords)})
    out = f(effect, np.array([0, 2]), np.array([1, 0]), np.array([1.0, 2.0]), np.float64(0.0))
    assert out.dims == ("age", "group")
    expected = -effect.T.values.copy()
    expected[1, 0] += 1.0 - effect.values[0, 1]
    expected[0, 2] += 2.0 - effect.values[2, 0]
    np.testing.assert_allclose(out.values, expected)


def test_jacobian_dims_and_rename(backend):
    x = dg.labeled("x", dims=(group, age))
    y = (x**2).sum("age") * 3
    jac = dg.jacobian(y, x)
    assert [d.name for d in jac.dims] == ["group", "group_", "age"]
    assert jac.dims[1].coords.equals(group.coords)
    a = np.arange(6.0).reshape(3, 2)
    out = dg.function([x], jac, backend=backend)(a)
    expected = np.zeros((3, 3, 2))
    for k in range(3):
        expected[k, k] = 6 * a[k]
    np.testing.assert_allclose(out.values, expected)
    assert list(out.indexes["group_"]) == list(group.coords)


def test_labeled_errors():
    x = dg.labeled("x", dims=(group,))
    with pytest.raises(ValueError, match="0-d"):
        dg.grad(x * 2, x)
    with pytest.raises(TypeError, match="int64"):
        dg.grad(x.sum(), dg.labeled("k", dims=(group,), dtype="int64"))
    with pytest.raises(ValueError, match="does not depend on 'z'"):
        dg.grad(x.sum(), dg.labeled("z", dims=(age,)))
    (gz,) = dg.grad(x.sum(), [dg.labeled("z", dims=(age,))], disconnected="zero")
    assert gz.dims == (age,)
