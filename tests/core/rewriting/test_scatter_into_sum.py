"""`scatter_into_sum`: the gradient of several `sel`/`isel` of one variable scatters into one buffer
(issue 37), not into zeros of the whole shape per selection summed afterwards."""

import numpy as np

import dimgraph as dg
from dimgraph.core.shape_ops import Alloc
from dimgraph.core.subtensor import AdvancedIncSubtensor, IncSubtensor

EFFECT, OBS = dg.Dim("effect", coords=["a", "b", "c"]), dg.Dim("obs")
C, X = dg.labeled("c", dims=(EFFECT, OBS)), dg.labeled("x", dims=(OBS,))
IDX = dg.labeled("idx", dims=(OBS,), dtype="int64")
COST = (
    C.sel(effect="a") * X + C.sel(effect="b") * X**2 + dg.exp(C.isel(effect=2)) + C.isel(obs=IDX).sum("effect")
).sum()


def _scatters(f):
    nodes = f.fgraph.toposort()
    scatters = [n for n in nodes if isinstance(n.op, (AdvancedIncSubtensor, IncSubtensor))]
    into_zeros = [n for n in scatters if n.inputs[0].owner is not None and isinstance(n.inputs[0].owner.op, Alloc)]
    return scatters, into_zeros


def test_the_selections_gradients_scatter_into_one_buffer(backend):
    grad = dg.grad(COST, C)
    f = dg.function([C, X, IDX], grad, backend=backend, return_numpy=True)
    scatters, into_zeros = _scatters(dg.function([C, X, IDX], grad, backend="python"))
    # the three selections along `effect` chain into one buffer; the gather along `obs` scatters in the
    # transposed layout, a buffer of its own
    assert len(scatters) == 4 and len(into_zeros) == 2
    cv = np.random.default_rng(0).normal(size=(3, 5))
    xv, iv = np.linspace(-1.0, 1.0, 5), np.array([4, 0, 0, 2, 1])
    want = np.zeros((3, 5))
    want[0] += xv
    want[1] += xv**2
    want[2] += np.exp(cv[2])
    np.add.at(want, (slice(None), iv), 1.0)
    np.testing.assert_allclose(f(cv, xv, iv), want, rtol=1e-13)
    unfused = dg.function([C, X, IDX], grad, backend="python", rewrites={"exclude": ["scatter_into_sum"]})
    assert len(_scatters(unfused)[1]) == 4  # without the rewrite: a buffer of zeros per selection
