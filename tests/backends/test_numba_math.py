"""The numba backend's own vectorizable float64 functions (exp, expm1, tanh, sigmoid) against mpmath:
at most 2 ulp over dense grids and hypothesis-drawn inputs (subnormal to overflow), and NumPy's special values."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

numba = pytest.importorskip("numba")
mpmath = pytest.importorskip("mpmath")

from dimgraph.backends.numba import runtime as rt  # noqa: E402

FUNCTIONS = {
    "exp": (rt.exp_f64, mpmath.exp, np.exp),
    "expm1": (rt.expm1_f64, mpmath.expm1, np.expm1),
    "tanh": (rt.tanh_f64, mpmath.tanh, np.tanh),
    "sigmoid": (rt.sigmoid_f64, lambda x: 1 / (1 + mpmath.exp(-x)), lambda x: 1 / (1 + np.exp(-x))),
}


@numba.njit
def _mapped(f, x):
    out = np.empty_like(x)
    for i in range(x.size):
        out[i] = f(x[i])
    return out


def _exact(reference, x):
    with mpmath.workprec(200):
        return np.array([float(reference(mpmath.mpf(float(v)))) for v in x])


def _ulps(got, want):
    """|got - want| in units of the last place of `want` (subnormal results: of the smallest subnormal)."""
    return np.abs(got - want) / np.spacing(np.abs(want))


def _grid():
    rng = np.random.default_rng(0)
    magnitudes = 10.0 ** rng.uniform(-310, 2.86, 3000)  # subnormal inputs up to exp's overflow edge
    return np.concatenate([magnitudes, -magnitudes, np.linspace(-40, 40, 2001), np.linspace(-745.2, 709.78, 1001)])


@pytest.mark.parametrize("name", FUNCTIONS)
def test_within_two_ulp_on_a_dense_grid(name):
    ours, reference, _ = FUNCTIONS[name]
    x = _grid()
    want = _exact(reference, x)
    got = _mapped(ours, x)
    finite = np.isfinite(want)
    assert np.all(got[~finite] == want[~finite])  # overflow to inf where the true value overflows
    ulps = _ulps(got[finite], want[finite])
    assert ulps.max() <= 2.0, (name, x[finite][np.argmax(ulps)], ulps.max())


@pytest.mark.parametrize("name", FUNCTIONS)
@given(st.floats(min_value=-800, max_value=800, allow_nan=False))
def test_within_two_ulp_anywhere(name, x):
    ours, reference, _ = FUNCTIONS[name]
    want = _exact(reference, [x])[0]
    got = ours(x)
    if not np.isfinite(want):
        assert got == want
    else:
        assert _ulps(np.array([got]), np.array([want]))[0] <= 2.0


@pytest.mark.parametrize("name", FUNCTIONS)
def test_special_values_as_numpy(name):
    ours, _, numpy_fn = FUNCTIONS[name]
    specials = np.array(
        [0.0, -0.0, np.inf, -np.inf, np.nan, 5e-324, -5e-324, 2.2e-308, 1e-300, 710.0, -746.0, 1e300, -1e300]
    )
    with np.errstate(all="ignore"):
        want = numpy_fn(specials)
    got = _mapped(ours, specials)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all(), (specials[~same], got[~same], want[~same])
    assert np.array_equal(np.signbit(got[~np.isnan(got)]), np.signbit(want[~np.isnan(want)]))


def test_row_sums_vectorize_and_keep_nan_and_inf():
    data = np.random.default_rng(1).normal(size=(7, 1001))
    data[2, 5], data[4, 0], data[4, 1] = np.nan, np.inf, -np.inf
    data[5, 3] = np.inf
    got = np.array([rt.sum_row(row) for row in data])
    want = data.sum(axis=1)
    np.testing.assert_allclose(got[np.isfinite(want)], want[np.isfinite(want)], rtol=1e-13)
    assert np.isnan(got[2]) and np.isnan(got[4]) and got[5] == np.inf
    assert rt.sum_row(np.empty(0)) == 0.0
