"""Every labeled `dg.linalg` function against `xarray_einstats.linalg` (the convention `solve` documents):
the same dims in the same order, the same coords, the same values, on every backend.

The matrix dims are named differently and carry different coords (a label landing on the wrong dim
shows), they are given in both orders, batch dims sit between and around them and some are on `b` only.
`solve_triangular` and `cho_solve` have no einstats twin: they are checked against einstats' `solve` of
the matrix they stand for, with `b` on `row` (where the two conventions are one).
"""

import numpy as np
import pytest
import xarray as xr
import xarray_einstats.linalg as xe

import dimgraph as dg

CITY = dg.Dim("city", coords=["a", "b", "c"])
COUNTRY = dg.Dim("country", coords=["x", "y", "z"])
GALAXY = dg.Dim("galaxy", coords=[10, 20])
PLANET = dg.Dim("planet", coords=["p", "q", "r", "s"])
DISTRICT = dg.Dim("district", coords=[0.5, 1.5])
ORDERS = [("country", "city"), ("city", "country")]
_FUNCS = {}


def _xr(values, *dims):
    return xr.DataArray(values, dims=[d.name for d in dims], coords={d.name: list(d.coords) for d in dims})


def _data():
    rng = np.random.default_rng(36)
    g = rng.normal(size=(2, 3, 3))
    spd = g @ np.swapaxes(g, 1, 2) + 3 * np.eye(3)  # (galaxy, country, city)
    return {
        "a": _xr(spd.transpose(2, 1, 0), CITY, COUNTRY, GALAXY),
        "b": _xr(rng.normal(size=(3, 4)), CITY, PLANET),
        "b3": _xr(rng.normal(size=(2, 3, 4)), DISTRICT, CITY, PLANET),
        "b_row": _xr(rng.normal(size=(3, 2)), COUNTRY, DISTRICT),
    }


def _inputs():
    return {
        "a": dg.labeled("a", dims=(CITY, COUNTRY, GALAXY)),
        "b": dg.labeled("b", dims=(CITY, PLANET)),
        "b3": dg.labeled("b3", dims=(DISTRICT, CITY, PLANET)),
        "b_row": dg.labeled("b_row", dims=(COUNTRY, DISTRICT)),
    }


def _cases(v, order):
    """(name, dimgraph result, einstats oracle on the data `d`) for the matrix dims `order` = (row, col)."""
    row, col = order
    other = {"country": "b_row", "city": "b"}  # a right-hand side on each matrix dim
    on_col = other[col]
    on_row = other[row]
    low = dg.linalg.cholesky(v["a"], dims=list(order))
    return [
        ("cholesky", low, lambda d: xe.cholesky(d["a"], dims=list(order))),
        ("inv", dg.linalg.inv(v["a"], dims=list(order)), lambda d: xe.inv(d["a"], dims=list(order))),
        ("det", dg.linalg.det(v["a"], dims=list(order)), lambda d: xe.det(d["a"], dims=list(order))),
        (
            "slogdet.sign",
            dg.linalg.slogdet(v["a"], dims=list(order))[0],
            lambda d: xe.slogdet(d["a"], dims=list(order))[0],
        ),
        (
            "slogdet.logdet",
            dg.linalg.slogdet(v["a"], dims=list(order))[1],
            lambda d: xe.slogdet(d["a"], dims=list(order))[1],
        ),
        ("eigh.values", dg.linalg.eigh(v["a"], dims=list(order))[0], lambda d: xe.eigh(d["a"], dims=list(order))[0]),
        (
            "eigh.|vectors|",
            abs(dg.linalg.eigh(v["a"], dims=list(order))[1]),
            lambda d: abs(xe.eigh(d["a"], dims=list(order))[1]),
        ),
        ("diagonal", dg.linalg.diagonal(v["a"], dims=list(order)), lambda d: xe.diagonal(d["a"], dims=list(order))),
        ("trace", dg.linalg.trace(v["a"], dims=list(order)), lambda d: xe.trace(d["a"], dims=list(order))),
        (
            "solve b on col",
            dg.linalg.solve(v["a"], v[on_col], dims=list(order)),
            lambda d: xe.solve(d["a"], d[on_col], dims=list(order)),
        ),
        (
            "solve b on row",
            dg.linalg.solve(v["a"], v[on_row], dims=list(order)),
            lambda d: xe.solve(d["a"], d[on_row], dims=list(order)),
        ),
        (
            "solve [row, col, rhs] b on col",
            dg.linalg.solve(v["a"], v["b3"] if col == "city" else v["b_row"], dims=[row, col, "district"]),
            lambda d: xe.solve(d["a"], d["b3"] if col == "city" else d["b_row"], dims=[row, col, "district"]),
        ),
        (
            "solve [row, col, rhs] b on row",
            dg.linalg.solve(v["a"], v["b_row"] if row == "country" else v["b3"], dims=[row, col, "district"]),
            lambda d: xe.solve(d["a"], d["b_row"] if row == "country" else d["b3"], dims=[row, col, "district"]),
        ),
        (
            "solve_triangular",
            dg.linalg.solve_triangular(low, v[on_row], dims=list(order)),
            lambda d: xe.solve(xe.cholesky(d["a"], dims=list(order)), d[on_row], dims=list(order)),
        ),
        (
            "solve_triangular trans",  # b on col, x on row: einstats' solve of the transposed factor
            dg.linalg.solve_triangular(low, v[on_col], dims=list(order), trans=True),
            lambda d: xe.solve(xe.cholesky(d["a"], dims=list(order)), d[on_col], dims=[col, row]),
        ),
        (
            "cho_solve",
            dg.linalg.cho_solve((low, True), v[on_row], dims=list(order)),
            lambda d: xe.solve(d["a"], d[on_row], dims=list(order)),
        ),
    ]


def _compiled(backend, order):
    key = (backend, order)
    if key not in _FUNCS:
        v = _inputs()
        cases = _cases(v, order)
        f = dg.function(list(v.values()), [c[1] for c in cases], backend=backend)
        _FUNCS[key] = (f, [(c[0], c[2]) for c in cases])
    return _FUNCS[key]


@pytest.mark.parametrize("order", ORDERS, ids=["-".join(o) for o in ORDERS])
def test_every_labeled_linalg_function_has_einstats_dims_coords_and_values(backend, order):
    f, oracles = _compiled(backend, order)
    d = _data()
    got = f(*d.values())
    for (name, oracle), g in zip(oracles, got):
        want = oracle(d)
        assert g.dims == want.dims, f"{name} with dims={list(order)}: {g.dims} != einstats' {want.dims}"
        xr.testing.assert_allclose(g, want, rtol=1e-10, atol=1e-12)


def test_the_issue_solve_is_labeled_by_the_dim_b_lacks():
    """a on (city, country, galaxy), b on (city, planet), dims=[country, city]: x on country, with its coords."""
    v, d = _inputs(), _data()
    x = dg.linalg.solve(v["a"], v["b"], dims=["country", "city"])
    assert [dim.name for dim in x.dims] == ["galaxy", "planet", "country"]
    got = dg.function([v["a"], v["b"]], x, backend="python")(d["a"], d["b"])
    assert list(got.country.values) == ["x", "y", "z"] and "city" not in got.coords
