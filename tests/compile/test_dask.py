"""Compiled functions given dask-backed DataArrays return lazy DataArrays equal to the in-memory result."""

import warnings

import numpy as np
import pytest
import xarray as xr
from conftest import BACKENDS

import dimgraph as dg
from dimgraph.compile.chunked import ChunkWarning

dask = pytest.importorskip("dask")
import dask.array as da  # noqa: E402

OBS = dg.Dim("obs", size=5)
GROUP = dg.Dim("group", coords=["a", "b", "c"])


def _model():
    mu = dg.labeled("mu", dims=())
    sigma = dg.labeled("sigma", dims=())
    effect = dg.labeled("effect", dims=(GROUP,))
    y = dg.labeled("y", dims=(OBS,))
    loglik = dg.dist.normal(mu + effect.sum(), sigma).logp(y).sum("obs")
    scaled = (effect * sigma).rename("scaled")
    return [mu, sigma, effect, y], [loglik, scaled]


@pytest.fixture(scope="module")
def posterior():
    rng = np.random.default_rng(0)
    coords = {"chain": [0, 1], "draw": np.arange(12) * 10}
    mu = xr.DataArray(rng.normal(size=(2, 12)), dims=("chain", "draw"), coords=coords)
    sigma = xr.DataArray(rng.uniform(0.5, 2.0, size=(2, 12)), dims=("chain", "draw"), coords=coords)
    effect = xr.DataArray(
        rng.normal(size=(12, 3)), dims=("draw", "group"), coords={"draw": coords["draw"], "group": list("abc")}
    )
    y = xr.DataArray(rng.normal(size=5), dims="obs")
    return mu, sigma, effect, y


@pytest.fixture(scope="module", params=BACKENDS)
def mapped(request):
    inputs, outputs = _model()
    return dg.function(inputs, outputs, backend=request.param, map_extra_dims=True)


def _chunked(values, **chunks):
    return [v.chunk({d: c for d, c in chunks.items() if d in v.dims}) for v in values]


def test_lazy_outputs_match_in_memory(mapped, posterior):
    eager = mapped(*posterior)
    lazy = mapped(*_chunked(posterior, draw=5))
    for e, z in zip(eager, lazy):
        assert isinstance(z.data, da.Array)
        assert z.dims == e.dims and z.dtype == e.dtype and z.name == e.name
        assert z.chunks[z.dims.index("draw")] == (5, 5, 2)  # extra dims keep their chunks
        computed = z.compute()
        xr.testing.assert_allclose(computed, e)
        xr.testing.assert_identical(computed.coords.to_dataset(), e.coords.to_dataset())


def test_nothing_computes_until_asked(posterior):
    inputs, outputs = _model()
    f = dg.function(inputs, outputs[0], map_extra_dims=True)
    calls = []

    def counted(block):
        calls.append(block.shape)
        return block

    mu = posterior[0].chunk(draw=4)
    mu = mu.copy(data=mu.data.map_blocks(counted, dtype=mu.dtype))
    lazy = f(mu, *posterior[1:])
    assert calls == [] or all(0 in s for s in calls)  # dask may probe with empty blocks only
    calls.clear()
    lazy.compute(scheduler="sync")
    assert len(calls) == 3  # one task per chunk of draw


def test_unequal_chunks_unify(posterior):
    inputs, outputs = _model()
    f = dg.function(inputs, outputs, map_extra_dims=True)
    values = [posterior[0].chunk(draw=4), posterior[1].chunk(draw=6, chain=1), posterior[2].chunk(draw=3), posterior[3]]
    for e, z in zip(f(*posterior), f(*values)):
        xr.testing.assert_allclose(z.compute(), e)


def test_core_dim_chunks_rechunk_with_a_warning(posterior):
    inputs, outputs = _model()
    f = dg.function(inputs, outputs, map_extra_dims=True)
    values = [*posterior[:3], posterior[3].chunk(obs=2)]
    with pytest.warns(ChunkWarning, match=r"input 'y' is chunked along \['obs'\]"):
        lazy = f(*values)
    for e, z in zip(f(*posterior), lazy):
        xr.testing.assert_allclose(z.compute(), e)


def test_plain_function_one_task():
    x = dg.labeled("x", dims=(OBS,))
    f = dg.function([x], [(x * 2).sum(), x + 1])
    data = xr.DataArray(np.arange(5.0), dims="obs")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        total, plus = f(data.chunk(obs=-1))
    assert isinstance(total.data, da.Array) and float(total) == 20.0
    np.testing.assert_array_equal(plus.values, np.arange(5.0) + 1)
    again = f(data)  # the fast path after a first call still sees dask inputs
    lazy = f(data.chunk(obs=-1))
    assert isinstance(lazy[0].data, da.Array) and float(lazy[0]) == float(again[0])


def test_gradients_lazily(posterior):
    inputs, outputs = _model()
    mu, sigma = inputs[:2]
    grads = dg.grad(outputs[0], [mu, sigma])
    g = dg.function(inputs, grads, map_extra_dims=True)
    for e, z in zip(g(*posterior), g(*_chunked(posterior, draw=5))):
        xr.testing.assert_allclose(z.compute(), e)


def _draws():
    mu = dg.labeled("mu", dims=())
    sigma = dg.labeled("sigma", dims=())
    rng = dg.rng(3)
    return dg.function([mu, sigma], rng.normal(mu, sigma, extra_dims=(OBS,)), map_extra_dims=True)


def test_draws_independent_and_the_same_whatever_the_chunking(posterior):
    g = _draws()
    mu, sigma = posterior[:2]
    a = g(mu.chunk(draw=3), sigma.chunk(draw=3), ctx=dg.SharedContext(seed=1)).values
    b = g(mu.chunk(draw=5), sigma.chunk(draw=2, chain=1), ctx=dg.SharedContext(seed=1)).values
    c = g(mu.chunk(draw=5), sigma, ctx=dg.SharedContext(seed=2)).values
    np.testing.assert_array_equal(a, b)
    assert len(np.unique(a)) == a.size  # every element its own numbers
    assert not np.any(a == c)
    z = (a - mu.values[..., None]) / sigma.values[..., None]  # standard normal draws
    assert abs(z.mean()) < 0.3 and abs(z.std() - 1) < 0.3


def test_draws_advance_the_context_once(posterior):
    g = _draws()
    mu, sigma = posterior[:2]
    ctx = dg.SharedContext(seed=5)
    first = g(mu.chunk(draw=4), sigma, ctx=ctx).values
    second = g(mu.chunk(draw=4), sigma, ctx=ctx).values
    assert not np.any(first == second)
    fresh = dg.SharedContext(seed=5)
    g(mu[:, :1], sigma[:, :1], ctx=fresh)  # an eager call advances the same states
    np.testing.assert_array_equal(g(mu.chunk(draw=4), sigma, ctx=fresh).values, second)


def test_updates_refused():
    w = dg.shared(np.zeros(()), dims=(), name="w")
    x = dg.labeled("x", dims=(OBS,))
    f = dg.function([x], x.sum(), updates={w: w + 1})
    with pytest.raises(dg.InputError, match="updates shared variables"):
        f(xr.DataArray(np.ones(5), dims="obs").chunk(obs=-1))
    assert float(w.get()) == 0.0


def test_process_scheduler(posterior):
    inputs, outputs = _model()
    f = dg.function(inputs, outputs, map_extra_dims=True)
    lazy = f(*_chunked(posterior, draw=6))
    for e, z in zip(f(*posterior), lazy):
        xr.testing.assert_allclose(z.compute(scheduler="processes", num_workers=2), e)


def test_distributed_local_cluster(posterior):
    distributed = pytest.importorskip("distributed")
    g = _draws()
    mu, sigma = posterior[:2]
    expected = g(mu.chunk(draw=4), sigma, ctx=dg.SharedContext(seed=9)).values
    inputs, outputs = _model()
    f = dg.function(inputs, outputs, map_extra_dims=True)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster):
            for e, z in zip(f(*posterior), f(*_chunked(posterior, draw=6))):
                xr.testing.assert_allclose(z.compute(), e)
            drawn = g(mu.chunk(draw=6), sigma, ctx=dg.SharedContext(seed=9)).compute().values
    np.testing.assert_array_equal(drawn, expected)


def test_extra_dims_of_different_lengths_are_refused_naming_the_input(posterior):
    inputs, outputs = _model()
    f = dg.function(inputs, outputs[0], map_extra_dims=True)
    mu, sigma, effect, y = posterior
    with pytest.raises(dg.InputError, match=r"input 'sigma': extra dim 'draw' has length 5, another input has 12"):
        f(mu.chunk(draw=4), sigma.isel(draw=slice(0, 5)), effect, y)
