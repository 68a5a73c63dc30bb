"""Labeled vectorization: dg.vectorize, dg.vectorize_graph with new dims, and compiled functions over extra dims.

Oracle: `xarray.apply_ufunc(..., vectorize=True)` over the unbatched NumPy
computation (values, dims, dim order and coords), every backend.
"""

import numpy as np
import pytest
import xarray as xr

import dimgraph as dg
from dimgraph.errors import DimError, InputError

OBS = dg.Dim("obs", coords=["a", "b", "c"])
K = dg.Dim("k", size=2)
_FUNCS = {}


def _model():
    """A small hierarchical-model log density over obs and k, and its gradient."""
    x = dg.labeled("x", dims=(OBS,))
    mu = dg.labeled("mu", dims=(K,))
    sigma = dg.labeled("sigma", dims=())
    group = dg.constant(np.array([0, 1, 1]), dims=(OBS,))
    mean = mu.isel(k=group)
    logp = (-0.5 * ((x - mean) / sigma) ** 2 - dg.log(sigma)).sum("obs")
    return x, mu, sigma, logp


def _logp_numpy(x, mu, sigma):
    mean = mu[np.array([0, 1, 1])]
    return (-0.5 * ((x - mean) / sigma) ** 2 - np.log(sigma)).sum()


def _posterior(seed=0):
    rng = np.random.default_rng(seed)
    mu = xr.DataArray(
        rng.normal(size=(2, 4, 2)), dims=("chain", "draw", "k"), coords={"chain": [1, 2], "draw": np.arange(4) * 10}
    )
    sigma = xr.DataArray(
        rng.uniform(0.5, 2.0, size=(4, 2)), dims=("draw", "chain"), coords={"chain": [1, 2], "draw": np.arange(4) * 10}
    )
    x = xr.DataArray([0.5, -1.0, 2.0], dims="obs", coords={"obs": ["a", "b", "c"]})
    return x, mu, sigma


def test_extra_dims_call_matches_apply_ufunc_and_compiles_once_per_set(backend):
    x, mu, sigma, logp = _model()
    grad_mu = dg.grad(logp, mu)
    f = dg.function([x, mu, sigma], [logp, grad_mu], backend=backend, map_extra_dims=True)
    X, MU, SIGMA = _posterior()
    got, g = f(X, MU, SIGMA)
    expected = xr.apply_ufunc(_logp_numpy, X, MU, SIGMA, input_core_dims=[["obs"], ["k"], []], vectorize=True)
    assert got.dims == ("chain", "draw")  # extra dims first, in order of appearance
    xr.testing.assert_allclose(got, expected.transpose("chain", "draw"))
    assert list(got.indexes["draw"]) == [0, 10, 20, 30] and list(got.indexes["chain"]) == [1, 2]
    assert g.dims == ("chain", "draw", "k")
    eps = 1e-6
    bumped = MU.copy()
    bumped[0, 0, 1] += eps
    fd = (f(X, bumped, SIGMA)[0] - got)[0, 0] / eps
    np.testing.assert_allclose(g.values[0, 0, 1], fd, rtol=1e-4)
    assert len(f.compiled_extra_dims) == 1
    f(X, MU.isel(draw=slice(0, 2)), SIGMA.isel(draw=slice(0, 2)))  # other sizes: the same compiled function
    assert len(f.compiled_extra_dims) == 1
    single = f(X, MU.isel(chain=0, draw=0), SIGMA.isel(chain=0, draw=0))  # no extra dims: the base function
    np.testing.assert_allclose(single[0].values, expected.isel(chain=0, draw=0).values)
    f(X, MU.isel(chain=0), SIGMA.isel(chain=0))
    assert len(f.compiled_extra_dims) == 2


def test_extra_dims_reach_every_output_as_apply_ufunc():
    """An output that depends on no extra dim is repeated along them all, with their coords."""
    x, mu, sigma, logp = _model()
    f = dg.function([x, mu, sigma], [logp, x * 2.0], backend="python", map_extra_dims=True)
    X, MU, SIGMA = _posterior()
    got, doubled = f(X, MU, SIGMA.isel(draw=0, chain=0))
    expected = xr.apply_ufunc(
        lambda a, m, s: a * 2.0,
        X,
        MU,
        SIGMA.isel(draw=0, chain=0),
        input_core_dims=[["obs"], ["k"], []],
        output_core_dims=[["obs"]],
        vectorize=True,
    )
    assert got.dims == ("chain", "draw") and doubled.dims == ("chain", "draw", "obs")
    xr.testing.assert_allclose(doubled, expected)
    assert list(doubled.indexes["draw"]) == [0, 10, 20, 30]


def test_extra_dims_errors():
    x, mu, sigma, logp = _model()
    X, MU, SIGMA = _posterior()
    plain = dg.function([x, mu, sigma], logp, backend="python")
    with pytest.raises(InputError, match=r"unexpected dim 'chain', 'draw'.*map_extra_dims=True"):
        plain(X, MU, SIGMA)
    mapped = dg.function([x, mu, sigma], logp, backend="python", map_extra_dims=True)
    with pytest.raises(InputError, match=r"extra dims \['obs'\]"):
        mapped(X, MU, SIGMA.expand_dims(obs=3))
    with pytest.raises(InputError, match="dim 'k' has size 2"):
        mapped(X, MU.isel(k=[0, 0, 1]), SIGMA)
    with pytest.raises(ValueError, match="updates"):
        w = dg.shared(np.zeros(()), dims=(), name="w")
        dg.function([x, mu, sigma], logp, updates={w: w + 1}, map_extra_dims=True)


def test_vectorize_matches_apply_ufunc(backend):
    time = dg.Dim("time", size=4)
    unit = dg.Dim("unit", size=3)

    def standardize(v, scale):
        return (v - v.mean("time")) / (v.std("time") * scale)

    f_vec = dg.vectorize(standardize, [("time",), ()], [("time",)])
    v = dg.labeled("v", dims=(time, unit))
    scale = dg.labeled("scale", dims=(unit,))
    out = f_vec(v, scale)
    assert [d.name for d in out.dims] == ["unit", "time"]
    V = xr.DataArray(np.random.default_rng(1).normal(size=(4, 3)), dims=("time", "unit"))
    S = xr.DataArray([1.0, 2.0, 3.0], dims="unit")
    got = dg.function([v, scale], out, backend=backend)(V, S)
    expected = xr.apply_ufunc(
        lambda a, s: (a - a.mean()) / (a.std() * s),
        V,
        S,
        input_core_dims=[["time"], []],
        output_core_dims=[["time"]],
        vectorize=True,
    )
    xr.testing.assert_allclose(got, expected)


def test_vectorize_a_function_with_linalg_and_gradient():
    i, j, batch = dg.Dim("i", size=2), dg.Dim("j", size=2), dg.Dim("batch", size=3)

    def logdet(a):
        return dg.linalg.slogdet(a, dims=("i", "j"))[1]

    a = dg.labeled("a", dims=(batch, i, j))
    out = dg.vectorize(logdet, [("i", "j")], [()])(a)
    g = dg.grad(out.sum(), a)
    A = np.stack([np.eye(2) * (k + 1) for k in range(3)])
    r, gr = dg.function([a], [out, g], backend="python")(xr.DataArray(A, dims=("batch", "i", "j")))
    np.testing.assert_allclose(r.values, 2 * np.log(np.arange(1, 4)))
    np.testing.assert_allclose(gr.values, np.linalg.inv(A).transpose(0, 2, 1))


def test_vectorize_gives_every_output_every_batch_dim():
    t, u, w = dg.Dim("t", size=3), dg.Dim("u", size=2), dg.Dim("w")
    x, s = dg.labeled("x", dims=(t, u)), dg.labeled("s", dims=(w,))
    out = dg.vectorize(lambda a, b: a.sum("t") * 2.0, [("t",), ()], [()])(x, s)  # s's dim w reaches the result
    X = xr.DataArray(np.arange(6.0).reshape(3, 2), dims=("t", "u"))
    S = xr.DataArray(np.arange(4.0), dims="w", coords={"w": [1, 2, 3, 4]})
    expected = xr.apply_ufunc(lambda a, b: a.sum() * 2.0, X, S, input_core_dims=[["t"], []], vectorize=True)
    xr.testing.assert_identical(
        dg.function([x, s], out, backend="python")(X, S).rename(None), expected
    )  # w's labels too


def test_vectorize_errors():
    t = dg.Dim("t", size=2)
    v = dg.labeled("v", dims=(t,))
    with pytest.raises(DimError, match="no core dims"):
        dg.vectorize(lambda a: a, [("s",)], [("s",)])(v)
    with pytest.raises(DimError, match="core_dims_out"):
        dg.vectorize(lambda a: a.sum("t"), [("t",)], [("t",)])(v)
    with pytest.raises(TypeError, match="takes 1 inputs"):
        dg.vectorize(lambda a: a, [("t",)], [("t",)])(v, v)


def test_labeled_vectorize_graph_orders_like_xarray_and_reaches_gradients(backend):
    x, mu, sigma, logp = _model()
    g = dg.grad(logp, [mu, sigma])
    chain = dg.Dim("chain")
    mus = dg.labeled("mus", dims=(K, chain))
    new_logp, new_gmu, new_gs = dg.vectorize_graph([logp, *g], {mu: mus})
    assert [d.name for d in new_logp.dims] == ["chain"]
    assert [d.name for d in new_gmu.dims] == ["chain", "k"]  # gradients come back through positional code: batch first
    f = dg.function([x, mus, sigma], [new_logp, new_gmu, new_gs], backend=backend)
    X, MU, SIGMA = _posterior()
    MUS = MU.isel(draw=0).transpose("k", "chain")
    lp, gmu, gs = f(X, MUS, SIGMA.isel(draw=0, chain=0))
    for c in range(2):
        np.testing.assert_allclose(lp.values[c], _logp_numpy(X.values, MUS.values[:, c], float(SIGMA.values[0, 0])))
    assert gs.dims == ("chain",) and gmu.dims == ("chain", "k")
    for c in range(2):  # d logp / d mu_k = sum over obs in group k of (x - mu_k) / sigma^2
        s2 = float(SIGMA.values[0, 0]) ** 2
        resid = X.values - MUS.values[np.array([0, 1, 1]), c]
        np.testing.assert_allclose(gmu.values[c], [resid[0] / s2, (resid[1] + resid[2]) / s2])


def test_labeled_vectorize_graph_errors():
    x, mu, sigma, logp = _model()
    with pytest.raises(DimError, match="lacks its dim 'k'"):
        dg.vectorize_graph(logp, {mu: dg.labeled("m", dims=(dg.Dim("chain", size=2),))})
    with pytest.raises(TypeError, match="must be labeled"):
        dg.vectorize_graph(logp, {mu: dg.tensor("t", shape=(2,))})
    with pytest.raises(DimError):
        dg.vectorize_graph(logp, {mu: dg.labeled("m", dims=(dg.Dim("k", size=5),))})


def test_an_aligned_batch_dim_matches_the_graphs_own_dim_by_name():
    """Refused by default; with aligned= the replacement's dim is the graph's dim: element i meets element i (xarray's rule)."""
    draw = dg.Dim("draw", size=3)
    mu = dg.labeled("mu", dims=())
    data = dg.labeled("data", dims=(draw, K))
    y = data - mu
    mus = dg.labeled("mus", dims=(draw,))
    with pytest.raises(DimError, match="already has"):
        dg.vectorize_graph(y, {mu: mus})
    out = dg.vectorize_graph(y, {mu: mus}, aligned=(draw,))
    Y = xr.DataArray(np.arange(6.0).reshape(3, 2), dims=("draw", "k"))
    MUS = xr.DataArray([10.0, 20.0, 30.0], dims=("draw",))
    got = dg.function([data, mus], out, backend="python")(Y, MUS)
    xr.testing.assert_allclose(got, (Y - MUS).transpose(*got.dims))
    assert got.dims == ("draw", "k")


def test_an_index_follows_its_dim_when_vectorizing_reorders_the_input():
    """`a` on steps, then on (draw, steps): `a + noise` keeps its dims but not their order, and the isel along
    steps must index that dim (it indexed the old position, the draw dim, a shape error when lowering)."""
    draw, steps = dg.Dim("draw", size=3), dg.Dim("steps", size=4)
    a, noise = dg.labeled("a", dims=(steps,)), dg.labeled("noise", dims=(draw,))
    y = (a + noise).isel(steps=dg.constant(np.array([0, 0, 1, 2]), dims=(steps,)))
    new_a = dg.labeled("new_a", dims=(draw, steps))
    out = dg.vectorize_graph(y, {a: new_a}, aligned=(draw,))
    A, Z = np.arange(12.0).reshape(3, 4), np.array([10.0, 20.0, 30.0])
    got = dg.function([new_a, noise], out, backend="python")(A, Z)
    np.testing.assert_array_equal(got.transpose("draw", "steps").values, (A + Z[:, None])[:, [0, 0, 1, 2]])


def test_mapped_function_pickles():
    import pickle

    x, mu, sigma, logp = _model()
    f = dg.function([x, mu, sigma], logp, backend="python", map_extra_dims=True)
    X, MU, SIGMA = _posterior()
    g = pickle.loads(pickle.dumps(f))
    xr.testing.assert_allclose(g(X, MU, SIGMA), f(X, MU, SIGMA))


def _loop_graph(draw, steps):
    """A labeled scan whose state is on `draw` and whose step reads `mu` from outside (a closure), as the
    bisection of a truncated draw reads its parameters: x <- x / 2 + mu + c * sequence entry."""
    x0, mu = dg.labeled("x0", dims=(draw,)), dg.labeled("mu", dims=())
    c = dg.labeled("c", dims=(K,))
    eps = dg.labeled("eps", dims=(steps,))
    final, trace = dg.scan(lambda x, e: x / 2 + mu + c * e, init=x0 * c, sequences=eps, dim=steps)
    return (x0, mu, c, eps), final, trace


def _loop_numpy(x0, mu, c, eps):
    """The loop by hand over NumPy arrays (x0 on draw, mu on the batch, c on k): (final, trace) on
    (batch, draw, k) and (batch, steps, draw, k)."""
    x = x0[None, :, None] * c[None, None, :] + 0 * mu[:, None, None]
    trace = []
    for e in eps:
        x = x / 2 + mu[:, None, None] + c[None, None, :] * e
        trace.append(x)
    return x, np.stack(trace, axis=1)


@pytest.mark.parametrize("aligned", [False, True], ids=["new batch dim", "aligned batch dim"])
def test_vectorizing_a_labeled_scan_carries_each_batch_dim_once(aligned):
    """A scan whose closure gains a batch dim: its states and traces gain it once, batch dims first. Aligned
    (the prior predictive's `draw`), the state already has the dim: element i of the closure meets element i
    of the state (it was 'draw' twice); a new dim is one more leading dim."""
    draw, steps = dg.Dim("draw", size=3), dg.Dim("steps", size=4)
    batch = draw if aligned else dg.Dim("chain", size=2)
    (x0, mu, c, eps), final, trace = _loop_graph(draw, steps)
    mus = dg.labeled("mus", dims=(batch,))
    new_final, new_trace = dg.vectorize_graph([final, trace], {mu: mus}, aligned=(draw,) if aligned else ())
    lead = () if aligned else ("chain",)
    assert new_final.type.names == (*lead, "draw", "k")
    assert new_trace.type.names == (*lead, "steps", "draw", "k")
    rng = np.random.default_rng(3)
    X0, C, EPS = rng.normal(size=3), rng.normal(size=2), rng.normal(size=4)
    MUS = rng.normal(size=batch.size)
    got = dg.function([x0, mus, c, eps], [new_final, new_trace], backend="python")(X0, MUS, C, EPS)
    want_final, want_trace = _loop_numpy(X0, MUS, C, EPS)
    if aligned:  # the batch entry i is the draw i: the diagonal of the by-hand loop over every (batch, draw)
        want_final = want_final[np.arange(3), np.arange(3)]
        want_trace = want_trace[np.arange(3), :, np.arange(3)].transpose(1, 0, 2)
    np.testing.assert_allclose(got[0].values, want_final, rtol=1e-12)
    np.testing.assert_allclose(got[1].values, want_trace, rtol=1e-12)


def _while_numpy(x, limit, max_steps=50):
    """The by-hand while loop of `_while_graph` for one entry: its last state and its trace (steps taken)."""
    trace = []
    for _ in range(max_steps):
        if not x.sum() < limit:
            break
        x = 2.0 * x + 1.0
        trace.append(x)
    return x, np.array(trace).reshape(len(trace), *x.shape)


def _aligned_while_numpy(x, limits, max_steps=50):
    """`_while_numpy` with one limit per row of the state: row b steps while the whole state's sum is under
    limits[b], and the loop runs while any row does (a stopped row repeats in the trace)."""
    trace = []
    for _ in range(max_steps):
        going = x.sum() < limits
        if not going.any():
            break
        x = np.where(going[:, None], 2.0 * x + 1.0, x)
        trace.append(x)
    return x, np.array(trace).reshape(len(trace), *x.shape)


def _while_graph(draw, trace):
    """A labeled while loop on a state over (draw, k) whose condition reads a 0-d closure `limit`."""
    x0, limit = dg.labeled("x0", dims=(draw, K)), dg.labeled("limit", dims=())
    out = dg.while_loop(
        lambda v: v.sum() < limit, lambda v: 2.0 * v + 1.0, init=x0, max_steps=50, trace=trace, dim="steps"
    )
    return x0, limit, out


@pytest.mark.parametrize("trace", [False, True], ids=["final", "trace"])
@pytest.mark.parametrize("aligned", [False, True], ids=["new batch dim", "aligned batch dim"])
@pytest.mark.parametrize("backend", ["python", "numba"])
def test_vectorizing_a_labeled_while_loop_stops_each_entry_on_its_own(aligned, trace, backend):
    """The condition's closure gains a batch dim, so entries stop apart: each entry's final state is the by-hand
    loop's for its own `limit`, and its trace (as long as the longest entry's) repeats its last state after it
    stops. Aligned, the state's own `draw` meets the batch's `draw` element by element (it was 'draw' twice)."""
    draw = dg.Dim("draw", size=3)
    batch = draw if aligned else dg.Dim("chain", size=2)
    x0, limit, out = _while_graph(draw, trace)
    limits = dg.labeled("limits", dims=(batch,))
    new = dg.vectorize_graph(list(out) if trace else out, {limit: limits}, aligned=(draw,) if aligned else ())
    lead = () if aligned else ("chain",)
    finals = new[0] if trace else new
    assert finals.type.names == (*lead, "draw", "k")
    X0 = np.array([[0.5, 1.0], [2.0, 0.1], [0.0, 0.2]])
    LIMITS = np.array([3.0, 40.0, 1.0e3])[: batch.size]
    got = dg.function([x0, limits], new, backend=backend)(X0, LIMITS)
    if aligned:  # draw b's condition reads the whole state (its sum) and limit b; row b steps while it holds
        want_final, want_trace = _aligned_while_numpy(X0, LIMITS)
    else:  # chain c: the by-hand loop of the whole state with limit c
        runs = [_while_numpy(X0, lim) for lim in LIMITS]
        n = max(len(t) for _, t in runs)
        want_final = np.stack([f for f, _ in runs])
        want_trace = np.stack([np.concatenate([t, np.repeat(f[None], n - len(t), axis=0)]) for f, t in runs])
    np.testing.assert_allclose((got[0] if trace else got).values, want_final, rtol=1e-12)
    if trace:
        assert new[1].type.names == (*lead, "steps", "draw", "k")
        np.testing.assert_allclose(got[1].values, want_trace, rtol=1e-12)
