"""selections: basic reads through a transpose and a gather, and the gradient of a few reads along one axis
scattered per column (issue 37), checked against NumPy and finite differences on every backend."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph.core.fused import IndexedLoop
from dimgraph.core.shape_ops import Alloc
from dimgraph.core.subtensor import AdvancedIncSubtensor, AdvancedSubtensor
from dimgraph.testing import verify_grad

E = 3
READS = (0, -1, 0)  # a negative position and a repeated one; column 1 is never read


def _model():
    """`coef = table[idx]` read by columns as a user's `coef.sel(effect=...)`, each times its own data row."""
    table = dg.tensor("table", shape=(None, E))
    idx = dg.tensor("idx", shape=(None,), dtype="int64")
    ws = [dg.vector(f"w{r}") for r in range(len(READS))]
    coef = table[idx].T  # (effect, obs)
    cost = sum((dg.sin(coef[c] * w)).sum() for c, w in zip(READS, ws))
    return [table, idx, *ws], [cost, *dg.grad(cost, [table, *ws])]


_COMPILED = {}


def compiled(backend):
    if backend not in _COMPILED:
        inputs, outputs = _model()
        _COMPILED[backend] = dg.function(inputs, outputs, backend=backend)
    return _COMPILED[backend]


def _numpy(table, idx, ws):
    cost, dtable, dws = 0.0, np.zeros_like(table), []
    for c, w in zip(READS, ws):
        col = table[idx, c]
        cost += np.sin(col * w).sum()
        np.add.at(dtable[:, c], idx, np.cos(col * w) * w)
        dws.append(np.cos(col * w) * col)
    return cost, dtable, dws


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # backend: a constant
@given(groups=st.integers(1, 4), n=st.integers(0, 9), seed=st.integers(0, 2**16))
def test_reads_of_a_gather_and_their_gradient_match_numpy(backend, groups, n, seed):
    rng = np.random.default_rng(seed)
    table = rng.normal(size=(groups, E))
    idx = rng.integers(-groups, groups, size=n)  # negatives count from the end, repeats accumulate
    ws = [rng.normal(size=n) for _ in READS]
    cost, dtable, *dws = compiled(backend)(table, idx, *ws)
    want_cost, want_dtable, want_dws = _numpy(table, idx, ws)
    np.testing.assert_allclose(cost, want_cost, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dtable, want_dtable, rtol=1e-12, atol=1e-12)
    for got, want in zip(dws, want_dws):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_one_loop_over_the_observations_and_no_buffer_of_the_whole_shape():
    f = compiled("numba")
    nodes = f.fgraph.toposort()
    assert len([n for n in nodes if isinstance(n.op, IndexedLoop)]) == 1
    assert not [n for n in nodes if isinstance(n.op, AdvancedSubtensor)]
    # no zeros of (effect, obs): column 1, read by nobody, scatters a zero (its index checks kept)
    (scatter,) = [n for n in nodes if isinstance(n.op, AdvancedIncSubtensor)]
    assert scatter.inputs[1].type.ndim == 0
    assert all(n.outputs[0].type.ndim == 1 for n in nodes if isinstance(n.op, Alloc))


def test_gradient_matches_finite_differences():
    idx = np.array([1, -1, 0, 1])

    def fn(table, w):
        coef = table[dg.core.constant(idx)].T
        return (dg.sin(coef[0] * w) + coef[-1] * coef[0] * w).sum()

    rng = np.random.default_rng(3)
    verify_grad(fn, [rng.normal(size=(2, E)), rng.normal(size=4)], backend="numba")


def test_errors_are_kept(backend):
    f = compiled(backend)
    table, ws = np.ones((2, E)), [np.ones(2)] * len(READS)
    with pytest.raises(IndexError):
        f(table, np.array([0, 2]), *ws)
    with pytest.raises(dg.ShapeError):
        f(table, np.array([0, 1]), np.ones(2), np.ones(3), np.ones(2))


def test_reads_through_a_permutation_match_numpy(backend):
    x = dg.tensor("x", shape=(None, 4, None))
    outs = [x.transpose(2, 0, 1)[1, :, 0:3:2], x.transpose(1, 2, 0)[-1], x.transpose(2, 0, 1)[:, ::-1, 0]]
    f = dg.function([x], outs, backend=backend)
    v = np.arange(2 * 4 * 3, dtype=float).reshape(2, 4, 3)
    for got, want in zip(
        f(v), [v.transpose(2, 0, 1)[1, :, 0:3:2], v.transpose(1, 2, 0)[-1], v.transpose(2, 0, 1)[:, ::-1, 0]]
    ):
        np.testing.assert_array_equal(got, want)
    with pytest.raises(IndexError):
        f(np.zeros((2, 4, 1)))  # position 1 of an axis of length 1


def test_each_rule_fires_and_a_near_miss_does_not():
    inputs, outputs = _model()
    counts = dg.function(inputs, outputs, backend="python", rewrites={"trace": True}).rewrite_trace.counts
    assert all(counts[name] >= 1 for name in ("subtensor_of_transpose", "subtensor_of_gather", "scatter_by_columns"))
    # the gather also read whole: it stays, so do the reads of it; a scatter with too many columns stays whole
    table, idx = dg.tensor("table", shape=(None, 12)), dg.tensor("idx", shape=(None,), dtype="int64")
    coef = table[idx]
    cost = (coef[:, 0] * 2).sum() + (coef * coef).sum()
    counts = dg.function([table, idx], dg.grad(cost, table), backend="python", rewrites={"trace": True})
    counts = counts.rewrite_trace.counts
    assert counts["subtensor_of_gather"] == 0 and counts["scatter_by_columns"] == 0
