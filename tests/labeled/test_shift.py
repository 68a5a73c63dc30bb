"""`shift` and `roll` against xarray's (values, dtypes, coords, fill_value, roll_coords), gradients
against finite differences, and the lag idiom of a time-series model; every backend.

One compiled function per backend holds every case (the shifts are static), and
hypothesis varies the data, including the length of the data-sized dim.
"""

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dimgraph as dg

TIME = dg.Dim("time")  # sized by the data
K = dg.Dim("k", size=2)
DAY = dg.Dim("day", coords=["mon", "tue", "wed", "thu"])
FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])

# (method, kwargs) applied to y (dims k, time) with xarray's names
CASES = [
    ("shift", {"time": 1}),
    ("shift", {"time": -2}),
    ("shift", {"time": 7}),
    ("shift", {"time": 0}),
    ("shift", {"time": 1, "k": -1}),
    ("shift", {"time": 2, "fill_value": 0.5}),
    ("roll", {"time": 1}),
    ("roll", {"time": -3}),
    ("roll", {"time": 9, "k": 1}),
    ("roll", {"time": 2, "roll_coords": True}),
]
INT_CASES = [("shift", {"time": 1}), ("shift", {"time": -1, "fill_value": 7}), ("roll", {"time": 1})]
_FUNCS = {}


def _apply(x, method, kwargs):
    return getattr(x, method)(**kwargs)


def _function(backend):
    if backend not in _FUNCS:
        y = dg.labeled("y", dims=(K, TIME))
        n = dg.labeled("n", dims=(TIME,), dtype="int64")
        w = dg.labeled("w", dims=(DAY,))
        outs = [_apply(y, m, kw) for m, kw in CASES] + [_apply(n, m, kw) for m, kw in INT_CASES]
        outs += [w.shift(day=1, fill_value=0.0), w.roll(day=1, roll_coords=True)]
        _FUNCS[backend] = dg.function([y, n, w], outs, backend=backend)
    return _FUNCS[backend]


def _expected(y, n, w):
    out = [_apply(y, m, kw) for m, kw in CASES] + [_apply(n, m, kw) for m, kw in INT_CASES]
    return out + [w.shift(day=1, fill_value=0.0), w.roll(day=1, roll_coords=True)]


@FIXTURE_OK
@given(length=st.integers(0, 6), seed=st.integers(0, 2**16), labeled_time=st.booleans())
def test_shift_and_roll_match_xarray(backend, length, seed, labeled_time):
    rng = np.random.default_rng(seed)
    coords = {"time": np.arange(length) * 10 + 5} if labeled_time else {}
    y = xr.DataArray(rng.normal(size=(2, length)), dims=("k", "time"), coords=coords)
    n = xr.DataArray(rng.integers(-9, 9, size=length), dims="time", coords=coords)
    w = xr.DataArray(rng.normal(size=4), dims="day", coords={"day": DAY.coords})
    for got, want in zip(_function(backend)(y, n, w), _expected(y, n, w)):
        assert got.dtype == want.dtype
        xr.testing.assert_identical(got.rename(None), want.rename(None))


def test_gradients_of_shift_and_roll_match_finite_differences(backend):
    y = dg.labeled("y", dims=(K, TIME))
    weights = dg.constant(np.arange(10.0).reshape(2, 5) / 7, dims=(K, dg.Dim("time", size=5)))
    fixed = dg.labeled("fixed", dims=(K, dg.Dim("time", size=5)))
    cost = (dg.sin(fixed.shift(time=2, fill_value=1.5)) * weights).sum() + (
        fixed.roll(time=-1, k=1) ** 2 * weights
    ).sum()
    lagged = y - 0.7 * y.shift(time=1, fill_value=0.0)  # a finite fill: the cut step's 0 * NaN would be NaN
    cost2 = (lagged.isel(time=slice(1, None)) ** 2).sum() + y.roll(time=3).isel(time=0).sum()
    f = dg.function([fixed, y], [cost, cost2, dg.grad(cost, fixed), dg.grad(cost2, y)], backend=backend)
    rng = np.random.default_rng(1)
    a, b = rng.normal(size=(2, 5)), rng.normal(size=(2, 6))
    _, _, ga, gb = f(a, b)
    eps = 1e-6
    for k, (value, grad) in enumerate([(a, ga), (b, gb)]):
        d = rng.normal(size=value.shape)
        args = [a, b]
        plus, minus = list(args), list(args)
        plus[k], minus[k] = value + eps * d, value - eps * d
        fd = (float(f(*plus)[k]) - float(f(*minus)[k])) / (2 * eps)
        np.testing.assert_allclose((grad.values * d).sum(), fd, rtol=1e-6)


def test_the_lag_idiom_gives_the_ar1_log_density(backend):
    """The README's lag idiom on a data-sized dim: the steps after the first, and the shifted ones (the lags)."""
    y = dg.labeled("y", dims=(TIME,))
    phi, sigma = dg.labeled("phi", dims=()), 0.5
    steps = slice(1, None)
    resid = y.isel(time=steps) - phi * y.shift(time=1).isel(time=steps)
    logp = dg.dist.normal(0.0, sigma).logp(resid).sum()
    f = dg.function([y, phi], [logp, dg.grad(logp, phi)], backend=backend)
    data = np.cumsum(np.random.default_rng(2).normal(size=7))
    value, grad = f(data, 0.3)
    r = data[1:] - 0.3 * data[:-1]
    from scipy import stats

    np.testing.assert_allclose(value, stats.norm(0.0, sigma).logpdf(r).sum(), rtol=1e-12)
    np.testing.assert_allclose(grad, (r * data[:-1]).sum() / sigma**2, rtol=1e-10)


def test_bad_shifts_are_errors_naming_them():
    y = dg.labeled("y", dims=(K, TIME))
    with pytest.raises(dg.DimError, match="has no dim 'tim'"):
        y.shift(tim=1)
    with pytest.raises(TypeError, match="the shift of dim 'time' must be an int, got 1.5"):
        y.roll(time=1.5)
    with pytest.raises(TypeError, match="not both"):
        y.shift({"time": 1}, k=1)
    with pytest.raises(TypeError, match="at least one shift"):
        y.roll()
    with pytest.raises(TypeError, match="bool variable has no NaN; give fill_value="):
        (y > 0).shift(time=1)
    assert (y > 0).shift(time=1, fill_value=False).dtype == "bool"


def test_a_rolled_dim_with_rolled_coords_is_a_new_dim():
    w = dg.labeled("w", dims=(DAY,))
    rolled = w.roll(day=1, roll_coords=True)
    assert list(rolled.dims[0].coords) == ["thu", "mon", "tue", "wed"]
    assert w.roll(day=1).dims == w.dims and w.shift(day=-1).dims == w.dims
    with pytest.raises(dg.DimError, match="two different dims named 'day'"):
        w + rolled


def test_two_slices_of_one_dim_say_to_shift_and_the_hint_works(backend):
    y = dg.labeled("y", dims=(TIME,))
    phi = dg.labeled("phi", dims=())
    now, before = y.isel(time=slice(1, None)), y.isel(time=slice(None, -1))
    with pytest.raises(
        dg.DimError,
        match=r"(?s)both are derived, isel\(time, 1\) and isel\(time, :-1\).*y\.shift\(time=1\)\.isel\(time=s\)",
    ):
        now - phi * before
    paired = now - phi * before.rename({"time": now.dims[0]})  # the hint's other way: one cut onto the other's dim
    s = slice(1, None)
    init = dg.constant(0.0, dims=())
    with pytest.raises(
        dg.DimError,
        match=r"(?s)sequence 0 is on Dim\('time', origin='isel\(time, 1\)'\), not on the step dim Dim\('time'\).*dim='time'",
    ):
        dg.scan(lambda acc, a, b: acc + a * b, init=init, sequences=[now, before], dim=TIME)
    total, _ = dg.scan(
        lambda acc, a, b: acc + a * b, init=init, sequences=[y.isel(time=s), y.shift(time=1).isel(time=s)], dim="time"
    )
    f = dg.function([y, phi], [paired, total], backend=backend)
    data = np.arange(1.0, 6.0)
    got_paired, got_total = f(data, 0.5)
    np.testing.assert_allclose(got_paired.values, data[1:] - 0.5 * data[:-1])
    np.testing.assert_allclose(got_total, (data[1:] * data[:-1]).sum())
