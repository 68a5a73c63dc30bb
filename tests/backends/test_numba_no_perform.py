"""Arbitrary graphs from the public ops run jitted on numba with no node by Python `perform` (issue 37).

Hypothesis draws a log-density-like cost from labeled reads (`isel`/`sel` with data
indexers, two at once, slices, coordinates), positional set/inc, reductions, `cumsum`,
`dot` and linalg, and its gradient; the numba function with its jitted graph forced
must run every node compiled (no object-mode `perform`, no `PerformanceWarning`) and
agree with the python backend.
"""

import warnings

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import dimgraph as dg

BATCH, MACHINE = dg.Dim("batch", coords=list("abc")), dg.Dim("machine", coords=list("wxyz"))
OBS = dg.Dim("obs")
A = dg.labeled("a", dims=(BATCH, MACHINE))
S = dg.labeled("s", dims=())
B_IDX = dg.labeled("b", dims=(OBS,), dtype="int64")
K_IDX = dg.labeled("k", dims=(OBS,), dtype="int64")
Y = dg.labeled("y", dims=(OBS,))
DATA = {"b": np.array([0, 2, 1, 2, 0]), "k": np.array([3, 0, 1, 3, -1]), "y": np.linspace(-1.0, 1.0, 5)}
SPD = np.array([[2.0, 0.3, 0.1], [0.3, 1.5, 0.2], [0.1, 0.2, 1.0]])
ROW, COL = dg.Dim("row", size=3), dg.Dim("col", size=3)


def _terms():
    """name -> (a, s) -> a 0-d term, each smooth in the parameters."""
    return {
        "two indexers": lambda a, s: ((a.isel(batch=B_IDX, machine=K_IDX) - Y) ** 2).sum(),
        "one indexer": lambda a, s: (dg.sin(a.isel(machine=K_IDX)) * Y).sum(),
        "sel coords": lambda a, s: (a.sel(machine=["x", "w"]) ** 2).sum() + a.sel(batch="b", machine="z"),
        "slice": lambda a, s: dg.exp(0.1 * a.isel(machine=slice(1, None, 2))).sum(),
        "cumsum walk": lambda a, s: (s * a.cumsum("machine")).isel(batch=B_IDX, machine=K_IDX).sum(),
        "reductions": lambda a, s: a.mean("batch").sum() + dg.logsumexp(a, dim="machine").sum(),
        "dot": lambda a, s: dg.dot(a, a.isel(batch=0), dim="machine").sum(),
        "linalg": lambda a, s: (
            dg.log(
                dg.linalg.diagonal(
                    dg.linalg.cholesky(
                        dg.constant(SPD, dims=(ROW, COL)) + dg.exp(s) * dg.constant(np.eye(3), dims=(ROW, COL)),
                        dims=(ROW, COL),
                    ),
                    dims=(ROW, COL),
                )
            ).sum()
            + dg.linalg.slogdet(dg.constant(SPD, dims=(ROW, COL)) * dg.exp(s), dims=(ROW, COL))[1]
        ),
    }


TERMS = _terms()


def _positional(x, i, j):
    """Positional set/inc by two index arrays and by a mask, read back: the scatters' kernels."""
    put = dg.core.inc_subtensor(x[i, j], 2.0 * x[i, j])
    put = dg.core.set_subtensor(put[:, 1:][x[:, 1:] > 0.5], 0.25)
    return (put**2).sum()


@settings(max_examples=6, deadline=None)
@given(st.lists(st.sampled_from(sorted(TERMS)), min_size=1, max_size=3, unique=True), st.integers(0, 2**16))
def test_a_drawn_graph_and_its_gradient_run_jitted_with_no_perform(names, seed):
    cost = sum(TERMS[n](A, S) for n in names) - 0.5 * S**2 - 0.5 * (A**2).sum()  # every draw depends on both
    theta = np.random.default_rng(seed).normal(size=13) * 0.5
    python = dg.flat_value_and_grad(cost, [A, S], inputs=[B_IDX, K_IDX, Y], backend="python")
    with warnings.catch_warnings():
        warnings.simplefilter("error", dg.PerformanceWarning)
        fn = dg.flat_value_and_grad(cost, [A, S], inputs=[B_IDX, K_IDX, Y], backend="numba", jit_graph=True)
        value, grad = fn(theta, **DATA)
    want_value, want_grad = python(theta, **DATA)
    np.testing.assert_allclose(value, want_value, rtol=1e-11)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-9, atol=1e-12)
    assert fn.function.timings["perform"] == () and fn.function._compiled.tiers.state == "jitted"


def test_positional_set_inc_by_arrays_and_masks_runs_jitted_with_no_perform():
    x = dg.tensor("x", shape=(3, 4))
    i, j = dg.tensor("i", shape=(None,), dtype="int64"), dg.tensor("j", shape=(None,), dtype="int64")
    cost = _positional(x, i, j)
    outs = [cost, dg.grad(cost, x)]
    xv = np.random.default_rng(3).uniform(size=(3, 4))
    iv, jv = np.array([0, 2, 2, -1]), np.array([1, 3, 3, 0])
    want = dg.function([x, i, j], outs, backend="python")(xv, iv, jv)
    with warnings.catch_warnings():
        warnings.simplefilter("error", dg.PerformanceWarning)
        f = dg.function([x, i, j], outs, backend="numba", jit_graph=True)
        got = f(xv, iv, jv)
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w, rtol=1e-12)
    assert f.timings["perform"] == () and f._compiled.tiers.state == "jitted"
