"""Compiled functions and graph variables pickle by value, on every backend and across processes."""

import multiprocessing
import pickle

import numpy as np
import pytest
import xarray as xr

import dimgraph as dg
from dimgraph.core.shared import DEFAULT_CONTEXT

country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
obs = dg.Dim("obs")


def _labeled_model():
    mu = dg.labeled("mu", dims=(country,))
    y = dg.labeled("y", dims=(obs, country))
    logp = (-0.5 * (y - mu) ** 2).sum()
    return [mu, y], [logp, dg.exp(mu) * 2]


def _data():
    rng = np.random.default_rng(0)
    mu = xr.DataArray(rng.normal(size=3), dims="country", coords={"country": ["USA", "Italy", "Chile"]})
    y = xr.DataArray(rng.normal(size=(4, 3)), dims=("obs", "country"), coords={"country": mu.country})
    return mu, y


def test_round_trip_gives_identical_results(backend):
    inputs, outputs = _labeled_model()
    f = dg.function(inputs, outputs, backend=backend)
    g = pickle.loads(pickle.dumps(f))
    assert g.backend == f.backend == backend
    mu, y = _data()
    for a, b in zip(f(mu, y), g(mu, y)):
        xr.testing.assert_identical(a, b)
    assert [v.name for v in g.inputs] == ["mu", "y"]


def test_round_trip_positional_single_output_and_options(backend):
    x = dg.tensor("x", shape=(None, 2))
    f = dg.function([x], dg.exp(x).sum(axis=0), backend=backend, rewrites={"exclude": ["fusion"]})
    g = pickle.loads(pickle.dumps(f))
    data = np.arange(6.0).reshape(3, 2)
    out = g(data)
    assert isinstance(out, np.ndarray) and np.array_equal(out, f(data))
    np.testing.assert_allclose(out, np.exp(data).sum(axis=0))


def test_round_trip_with_shared_updates():
    w = dg.shared(np.zeros(2), name="w")
    f = dg.function([], w.sum(), updates={w: w + 1}, backend="python")
    ctx = dg.SharedContext()
    g = pickle.loads(pickle.dumps(f))
    assert [float(g(ctx=ctx)) for _ in range(3)] == [0.0, 2.0, 4.0]


def test_round_trip_carries_the_default_contexts_shared_values():
    """Values set or updated in the default context (positional, labeled, RNG states) travel with the function."""
    w = dg.shared(np.zeros(2), name="w")
    v = dg.shared(xr.DataArray([1.0, 2.0, 3.0], dims="country"), dims=(country,), name="v")
    rng = dg.rng(3)
    f = dg.function([], [w.sum() + v.sum(), rng.normal(0.0, 1.0)], updates={w: w + 1}, backend="python")
    w.set([1.0, 2.0])
    v.set(np.array([10.0, 20.0, 30.0]))
    f()  # w is [2, 3] and the stream has moved on
    held = len(DEFAULT_CONTEXT._values)
    g = pickle.loads(pickle.dumps(f))
    assert len(DEFAULT_CONTEXT._values) == held  # nothing kept per copy
    for _ in range(2):
        (total_f, draw_f), (total_g, draw_g) = f(), g()
        assert float(total_f) == float(total_g) and float(draw_f) == float(draw_g)
    assert float(total_g) == 3 + 4 + 60.0
    assert w.get().tolist() == [4.0, 5.0]  # the copy's updates land on its own variables


def test_graph_variables_pickle_and_compile_with_their_own_inputs(backend):
    inputs, outputs = _labeled_model()
    inputs2, outputs2 = pickle.loads(pickle.dumps((inputs, outputs)))
    assert inputs2[0].dims == (country,) and inputs2[1].dims[0] == obs
    f = dg.function(inputs2, outputs2, backend=backend)
    mu, y = _data()
    np.testing.assert_allclose(f(mu, y)[0].values, (-0.5 * (y - mu) ** 2).sum().values)
    with pytest.raises(dg.InputError, match="not among the function inputs"):
        dg.function(inputs[:1] + inputs2[1:], outputs2[0], backend=backend)


@pytest.mark.filterwarnings("ignore:os.fork")  # the fork child runs numba code only, never JAX
@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_multiprocessing_pool_receives_compiled_functions(method):
    if method not in multiprocessing.get_all_start_methods():
        pytest.skip(f"no {method} start method here")
    x = dg.tensor("x", shape=(None,))
    f = dg.function([x], (dg.exp(x) * 2).sum(), backend="numba")
    chunks = [np.linspace(0, 1, n) for n in (3, 5, 7)]
    with multiprocessing.get_context(method).Pool(2) as pool:
        got = pool.map(f, chunks)  # the compiled function itself is the worker
    np.testing.assert_allclose(got, [(np.exp(c) * 2).sum() for c in chunks])


def test_apply_ufunc_dask_parallelized_on_processes():
    dask = pytest.importorskip("dask")
    x = dg.tensor("x", shape=(None, 3))
    f = dg.function([x], dg.log1p(x * x), backend="numba")
    data = xr.DataArray(np.arange(24.0).reshape(8, 3), dims=("obs", "k")).chunk({"obs": 4})
    lazy = xr.apply_ufunc(f, data, dask="parallelized", output_dtypes=[np.float64])
    with dask.config.set(scheduler="processes", num_workers=2):
        out = lazy.compute()
    np.testing.assert_allclose(out.values, np.log1p(data.values**2))


def test_function_mapped_over_extra_dims_pickles():
    mu = dg.labeled("mu", dims=(country,))
    f = dg.function([mu], (mu * 2).sum(), backend="numba", map_extra_dims=True)
    draws = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("draw", "country"), coords={"country": country.coords})
    g = pickle.loads(pickle.dumps(f))
    xr.testing.assert_identical(g(draws), f(draws))
    np.testing.assert_allclose(g(draws).values, [6.0, 24.0])
