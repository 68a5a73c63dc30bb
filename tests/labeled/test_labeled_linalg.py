"""dg.linalg on labeled variables against NumPy/SciPy through `xarray.apply_ufunc`, every backend.

The matrix dims sit anywhere among the inputs' dims (a batch dim between them,
another only on b), and results must carry the batch dims first and the core
dims last, with the coords of the inputs. Gradients through labeled linalg are
checked against finite differences; bad dims are errors before any work.
"""

import numpy as np
import pytest
import scipy.linalg
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph.errors import DimError

ROW = dg.Dim("row", coords=["r0", "r1", "r2"])
COL = dg.Dim("col", size=3)
BATCH = dg.Dim("batch", coords=[10, 20])
RHS = dg.Dim("rhs", size=2)
_FUNCS = {}


def _data(seed=0, dtype="float64"):
    rng = np.random.default_rng(seed)
    g = rng.normal(size=(2, 3, 3))
    spd = g @ np.swapaxes(g, 1, 2) + 3 * np.eye(3)
    a = xr.DataArray(
        spd.transpose(1, 0, 2).astype(dtype),
        dims=("row", "batch", "col"),
        coords={"row": ROW.coords, "batch": BATCH.coords},
    )
    b = xr.DataArray(rng.normal(size=(2, 3)).astype(dtype), dims=("rhs", "row"), coords={"row": ROW.coords})
    return a, b


def _ufunc(fn, *args, core_in, core_out, n_out=1):
    return xr.apply_ufunc(fn, *args, input_core_dims=core_in, output_core_dims=core_out, vectorize=True)


def _function(backend, dtype):
    key = (backend, dtype)
    if key not in _FUNCS:
        a = dg.labeled("a", dims=(ROW, BATCH, COL), dtype=dtype)
        b = dg.labeled("b", dims=(RHS, ROW), dtype=dtype)
        dims = (ROW, COL)
        low = dg.linalg.cholesky(a, dims=dims)
        outs = [
            low,
            dg.linalg.inv(a, dims=dims),
            dg.linalg.det(a, dims=dims),
            *dg.linalg.slogdet(a, dims=dims),
            dg.linalg.solve(a, b, dims=dims),
            dg.linalg.solve_triangular(low, b, dims=dims),
            dg.linalg.cho_solve((low, True), b, dims=dims),
            dg.linalg.trace(a, dims=dims),
            dg.linalg.diagonal(a, dims=dims),
            *dg.linalg.eigh(a, dims=dims),
        ]
        _FUNCS[key] = dg.function([a, b], outs, backend=backend)
    return _FUNCS[key]


def _expected(a, b):
    rc = [["row", "col"]]
    return [
        _ufunc(np.linalg.cholesky, a, core_in=rc, core_out=rc),
        _ufunc(np.linalg.inv, a, core_in=rc, core_out=rc),
        _ufunc(np.linalg.det, a, core_in=rc, core_out=[[]]),
        _ufunc(lambda m: np.linalg.slogdet(m)[0], a, core_in=rc, core_out=[[]]),
        _ufunc(lambda m: np.linalg.slogdet(m)[1], a, core_in=rc, core_out=[[]]),
        _ufunc(np.linalg.solve, a, b, core_in=rc + [["row"]], core_out=[["col"]]),
        _ufunc(
            lambda m, v: scipy.linalg.solve_triangular(np.linalg.cholesky(m), v, lower=True),
            a,
            b,
            core_in=rc + [["row"]],
            core_out=[["col"]],
        ),
        _ufunc(np.linalg.solve, a, b, core_in=rc + [["row"]], core_out=[["col"]]),
        _ufunc(np.trace, a, core_in=rc, core_out=[[]]),
        _ufunc(np.diagonal, a, core_in=rc, core_out=[["row"]]),
        _ufunc(np.linalg.eigvalsh, a, core_in=rc, core_out=[["col"]]),
    ]


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_labeled_linalg_matches_apply_ufunc(backend, dtype):
    a, b = _data(1, dtype)
    got = _function(backend, dtype)(a, b)
    tol = 1e-9 if dtype == "float64" else 2e-3
    for g, e in zip(got, _expected(a.astype("float64"), b.astype("float64"))):
        core = [d for d in e.dims if d in ("row", "col")]
        assert list(g.dims) == [d for d in ("batch", "rhs") if d in e.dims] + core  # batch dims first, core last
        assert g.dtype == dtype
        xr.testing.assert_allclose(g.transpose(*e.dims), e.astype(dtype), rtol=tol, atol=tol)
        if "row" in g.dims:
            assert list(g.indexes["row"]) == ROW.coords.tolist()
        if "batch" in g.dims:
            assert list(g.indexes["batch"]) == [10, 20]
    w, v = got[-2], got[-1]
    assert list(v.dims) == ["batch", "row", "col"] and list(w.dims) == ["batch", "col"]
    rebuilt = np.einsum("bik,bk,bjk->bij", v.values, w.values, v.values)
    np.testing.assert_allclose(rebuilt, a.transpose("batch", "row", "col").values, rtol=tol * 10, atol=tol * 10)


def test_batch_dims_come_first_in_order_of_appearance():
    a = dg.labeled("a", dims=(ROW, BATCH, COL))
    b = dg.labeled("b", dims=(RHS, ROW))
    x = dg.linalg.solve(a, b, dims=(ROW, COL))
    assert [d.name for d in x.dims] == ["batch", "rhs", "col"]
    assert [d.name for d in dg.linalg.cholesky(a, dims=("row", "col")).dims] == ["batch", "row", "col"]


def test_gradients_through_labeled_linalg(backend):
    a = dg.labeled("a", dims=(ROW, BATCH, COL))
    b = dg.labeled("b", dims=(RHS, ROW))
    dims = (ROW, COL)
    low = dg.linalg.cholesky(a, dims=dims)
    cost = (
        (dg.linalg.cho_solve((low, True), b, dims=dims) ** 2).sum()
        + dg.linalg.slogdet(a, dims=dims)[1].sum()
        + dg.linalg.eigh(a, dims=dims)[0].sum() * 0.1
        + dg.linalg.trace(dg.linalg.inv(a, dims=dims), dims=dims).sum()
    )
    ga, gb = dg.grad(cost, [a, b])
    f = dg.function([a, b], [cost, ga, gb], backend=backend)
    A, B = _data(3)
    _, GA, GB = f(A, B)
    assert GA.dims == A.dims and GB.dims == B.dims
    rng = np.random.default_rng(4)
    da = rng.normal(size=(3, 2, 3))
    da = da + da.transpose(2, 1, 0)  # symmetric in (row, col) for every batch element
    db = rng.normal(size=B.shape)
    eps = 1e-6
    plus = float(f(A + eps * da, B + eps * db)[0])
    minus = float(f(A - eps * da, B - eps * db)[0])
    np.testing.assert_allclose((GA.values * da).sum() + (GB.values * db).sum(), (plus - minus) / (2 * eps), rtol=1e-5)


def test_positional_inputs_go_to_the_positional_functions():
    t = dg.tensor("t", shape=(2, 2))
    assert dg.linalg.inv(t).type.shape == (2, 2)
    np.testing.assert_allclose(dg.function([t], dg.linalg.det(t), backend="python")(np.diag([2.0, 3.0])), 6.0)


def test_bad_dims_are_errors_naming_them():
    a = dg.labeled("a", dims=(ROW, BATCH, COL))
    with pytest.raises(DimError, match="give dims=\\(row, col\\)"):
        dg.linalg.cholesky(a)
    with pytest.raises(DimError, match="has no dim 'nope'"):
        dg.linalg.inv(a, dims=("row", "nope"))
    with pytest.raises(DimError, match="must differ"):
        dg.linalg.det(a, dims=("row", "row"))
    with pytest.raises(DimError, match="must be square"):
        dg.linalg.det(dg.labeled("r", dims=(ROW, RHS)), dims=(ROW, RHS))
    with pytest.raises(DimError, match="b must have the dim 'row'"):
        dg.linalg.solve(a, dg.labeled("b", dims=(RHS,)), dims=(ROW, COL))
    with pytest.raises(DimError, match="b has the dim 'col'"):
        dg.linalg.solve(a, dg.labeled("b", dims=(ROW, COL)), dims=(ROW, COL))
    with pytest.raises(TypeError, match="both labeled or both positional"):
        dg.linalg.solve(a, dg.tensor("t", shape=(3,)), dims=(ROW, COL))
    other_batch = dg.Dim("batch", size=5)
    with pytest.raises(DimError, match="batch"):
        dg.linalg.solve(a, dg.labeled("b", dims=(other_batch, ROW)), dims=(ROW, COL))


def test_wrong_core_sizes_at_call_time():
    n, m = dg.Dim("n"), dg.Dim("m")
    a = dg.labeled("a", dims=(n, m))
    f = dg.function([a], dg.linalg.inv(a, dims=(n, m)), backend="python")
    with pytest.raises(ValueError, match="square"):
        f(xr.DataArray(np.ones((2, 3)), dims=("n", "m")))


def test_not_positive_definite_is_nan(backend):
    a, b = _data(5)
    a = a.copy()
    a[:, 1, :] = -a[:, 1, :]
    L = _function(backend, "float64")(a, b)[0]
    assert np.isnan(L.sel(batch=20)).all() and np.isfinite(L.sel(batch=10)).all()


_CHO = {}


def _cho_solve_function(backend):
    """cho_solve with the upper pair, the lower pair and a bare (lower) factor, and the gradient of each."""
    if backend not in _CHO:
        n = dg.Dim("n", size=5)
        m = dg.Dim("m", size=5)
        upper, low = dg.labeled("upper", dims=(n, m)), dg.labeled("low", dims=(n, m))
        b = dg.labeled("b", dims=(n, RHS))
        xs = [
            dg.linalg.cho_solve((upper, False), b, dims=(n, m)),
            dg.linalg.cho_solve((low, True), b, dims=("n", "m")),
            dg.linalg.cho_solve(low, b, dims=(n, m)),
        ]
        costs = [(x * dg.sin(dg.arange(x.dims[-1]) + 1.0)).sum() for x in xs]
        grads = [g for cost, c in zip(costs, (upper, low, low)) for g in dg.grad(cost, [c, b])]
        _CHO[backend] = dg.function([upper, low, b], [*xs, *costs, *grads], backend=backend)
    return _CHO[backend]


def test_cho_solve_follows_scipy_lower_convention_values_and_gradients(backend):
    rng = np.random.default_rng(7)
    g = rng.normal(size=(5, 5))
    a = g @ g.T + 5 * np.eye(5)
    low = np.linalg.cholesky(a)
    upper = low.T
    b = rng.normal(size=(5, 2))
    f = _cho_solve_function(backend)
    out = f(upper, low, b)
    for x in out[:3]:
        assert x.dims == ("rhs", "m")
        np.testing.assert_allclose(x.values.T, scipy.linalg.cho_solve((upper, False), b), rtol=1e-9)
        np.testing.assert_allclose(x.values.T, scipy.linalg.cho_solve((low, True), b), rtol=1e-9)
    # gradients vs central differences of the compiled cost, along random directions
    eps = 1e-6
    for k, (cidx, grad_c, grad_b) in enumerate([(0, 6, 7), (1, 8, 9), (1, 10, 11)]):
        inputs = [upper, low, b]
        dc = rng.normal(size=(5, 5))
        db = rng.normal(size=b.shape)

        def cost(t):
            vals = list(inputs)
            vals[cidx] = vals[cidx] + t * dc
            vals[2] = vals[2] + t * db
            return float(f(*vals)[3 + k])

        fd = (cost(eps) - cost(-eps)) / (2 * eps)
        analytic = (out[grad_c].values * dc).sum() + (out[grad_b].values * db).sum()
        np.testing.assert_allclose(analytic, fd, rtol=1e-5, err_msg=f"cho_solve form {k}")


def test_cho_solve_pair_must_be_a_factor_and_a_bool():
    c = dg.labeled("c", dims=(ROW, COL))
    b = dg.labeled("b", dims=(ROW,))
    # the public door (`dimgraph.arguments`) names the argument and scipy's form before the function runs
    pair = r"c_and_lower must be scipy's pair \(Cholesky factor, lower: bool\), or the factor alone"
    with pytest.raises(TypeError, match=pair + r"; got \(c: .*'no'\)"):
        dg.linalg.cho_solve((c, "no"), b, dims=(ROW, COL))
    with pytest.raises(TypeError, match=pair + r"; got \(c: .*True, 1\)"):
        dg.linalg.cho_solve((c, True, 1), b, dims=(ROW, COL))


_CHO_ANY = {}


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_cho_solve_matches_scipy_for_any_size(backend, n, seed):
    """Both scipy conventions on matrices whose size comes with the data."""
    if backend not in _CHO_ANY:
        r, c = dg.Dim("r"), dg.Dim("c")
        factor, b = dg.labeled("factor", dims=(r, c)), dg.labeled("b", dims=(r,))
        outs = [dg.linalg.cho_solve((factor, low), b, dims=(r, c)) for low in (True, False)]
        _CHO_ANY[backend] = dg.function([factor, b], outs, backend=backend)
    rng = np.random.default_rng(seed)
    g = rng.normal(size=(n, n))
    low = np.linalg.cholesky(g @ g.T + n * np.eye(n))
    b = rng.normal(size=n)
    got_lower = _CHO_ANY[backend](low, b)[0]
    np.testing.assert_allclose(got_lower.values, scipy.linalg.cho_solve((low, True), b), rtol=1e-8, atol=1e-10)
    got_upper = _CHO_ANY[backend](low.T, b)[1]
    np.testing.assert_allclose(got_upper.values, scipy.linalg.cho_solve((low.T, False), b), rtol=1e-8, atol=1e-10)
