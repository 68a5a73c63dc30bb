"""The special functions of the math row (logit, expit, log1mexp, xlogy, betaln, gammainc, gammaincc) on labeled variables.

Operands broadcast by dim name as in xarray (scipy.special applied to the
DataArrays is the oracle, coords and dim order included), on every backend,
and labeled gradients match finite differences of the compiled cost.
"""

import numpy as np
import pytest
import scipy.special as sp
import xarray as xr

import dimgraph as dg
from dimgraph.testing import numeric_grad

I = dg.Dim("i", coords=["a", "b", "c"])
J = dg.Dim("j", size=2)
P = xr.DataArray(np.array([0.05, 0.5, 0.93]), dims=["i"], coords={"i": ["a", "b", "c"]})
X = xr.DataArray(np.array([[0.3, 2.5], [1.0, 7.0], [4.0, 0.1]]), dims=["i", "j"], coords={"i": ["a", "b", "c"]})
S = xr.DataArray(np.array([0.8, 3.2]), dims=["j"])

CASES = {
    "logit": (lambda p, x, s: dg.logit(p), lambda p, x, s: sp.logit(p)),
    "expit": (lambda p, x, s: dg.expit(x), lambda p, x, s: sp.expit(x)),
    "log1mexp": (lambda p, x, s: dg.log1mexp(-x), lambda p, x, s: np.log(-np.expm1(-x))),
    "xlogy": (lambda p, x, s: dg.xlogy(p, x), lambda p, x, s: sp.xlogy(p, x)),
    "betaln": (lambda p, x, s: dg.betaln(s, x), lambda p, x, s: sp.betaln(s, x)),
    "gammainc": (lambda p, x, s: dg.gammainc(s, x), lambda p, x, s: sp.gammainc(s, x)),
    "gammaincc": (lambda p, x, s: dg.gammaincc(s, x), lambda p, x, s: sp.gammaincc(s, x)),
}


def _inputs():
    return dg.labeled("p", dims=(I,)), dg.labeled("x", dims=(I, J)), dg.labeled("s", dims=(J,))


def test_values_dims_and_coords_match_xarray(backend):
    p, x, s = _inputs()
    f = dg.function([p, x, s], [build(p, x, s) for build, _ in CASES.values()], backend=backend)
    for name, out, (_, oracle) in zip(CASES, f(P, X, S), CASES.values()):
        expected = oracle(P, X, S)
        assert out.dims == expected.dims, name
        assert list(out.indexes["i"]) == ["a", "b", "c"], name
        np.testing.assert_allclose(out.values, expected.values, rtol=1e-10, atol=1e-12, err_msg=name)


def test_positional_operands_follow_numpy():
    """`dg.<name>` on positional tensors is the positional op (NumPy broadcasting)."""
    a, x = dg.tensor("a", shape=(2, 1)), dg.tensor("x", shape=(3,))
    f = dg.function([a, x], [dg.gammainc(a, x), dg.betaln(a=a, b=x)], backend="python")
    av, xv = np.array([[0.5], [3.0]]), np.array([0.2, 1.0, 6.0])
    got = f(av, xv)
    np.testing.assert_allclose(got[0], sp.gammainc(av, xv), rtol=1e-12)
    np.testing.assert_allclose(got[1], sp.betaln(av, xv), rtol=1e-12)


@pytest.mark.parametrize("name", ["logit", "log1mexp", "xlogy", "betaln", "gammainc", "gammaincc"])
def test_labeled_gradient_matches_finite_differences(name):
    p, x, s = _inputs()
    build, _ = CASES[name]
    wrt = p if name == "logit" else x
    cost = (build(p, x, s) * dg.constant(np.array([1.0, -2.0]), dims=(J,))).sum()
    f_cost = dg.function([p, x, s], cost, backend="python")
    f_grad = dg.function([p, x, s], dg.grad(cost, wrt), backend="python")
    names = ["p", "x", "s"]
    k = names.index(wrt.name)
    g = f_grad(P, X, S)
    assert g.dims == (P, X, S)[k].dims

    def cost_at(*vals):
        return float(f_cost(*[da.copy(data=v) for da, v in zip((P, X, S), vals)]))

    expected = numeric_grad(cost_at, [P.values, X.values, S.values], k)
    np.testing.assert_allclose(g.values, expected, rtol=1e-6, atol=1e-8)


def test_incomplete_gamma_small_shapes(backend):
    """Q(a, x) for small a, where P is near 1 (1 - P gave -2e-14 for Q(1e-300, 1e-300)), vs scipy, on every backend."""
    a, x = dg.tensor("a", shape=(None,)), dg.tensor("x", shape=(None,))
    f = dg.function([a, x], [dg.gammaincc(a, x), dg.gammainc(a, x)], backend=backend)
    grid_a, grid_x = np.meshgrid([1e-300, 1e-12, 1e-5, 0.009, 0.011, 0.3, 0.49], [1e-300, 1e-10, 0.1, 0.9, 1.3])
    av, xv = grid_a.ravel(), grid_x.ravel()
    q, p = f(av, xv)
    np.testing.assert_allclose(q, sp.gammaincc(av, xv), rtol=1e-12, atol=0)
    np.testing.assert_allclose(p, sp.gammainc(av, xv), rtol=1e-12, atol=0)
