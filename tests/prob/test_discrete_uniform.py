"""discrete_uniform(lower, upper) against scipy.stats.randint(lower, upper + 1): pmf, cdf, tails, draws."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as st

import dimgraph as dg

K = dg.Dim("k", size=9)
XS = np.array([-3, -2, -1, 0, 2, 3, 4, 5, 7])
BOUNDS = [(-2, 4), (0, 0), (3, 5)]


@pytest.fixture(scope="module")
def tails():
    """log pmf, log cdf and log sf of discrete_uniform(lower, upper) at x, compiled once (python backend)."""
    lower, upper, x = (
        dg.labeled("lower", dims=(), dtype="int64"),
        dg.labeled("upper", dims=(), dtype="int64"),
        dg.labeled("x", dims=(K,), dtype="int64"),
    )
    d = dg.dist.discrete_uniform(lower, upper)
    return dg.function([lower, upper, x], [d.logp(x), d.logcdf(x), d.logsf(x)], backend="python")


@pytest.mark.parametrize("lower, upper", BOUNDS)
def test_logp_logcdf_logsf_equal_scipy_randint(tails, lower, upper):
    ref = st.randint(lower, upper + 1)
    logp, logcdf, logsf = (o.values for o in tails(np.array(lower), np.array(upper), XS))
    np.testing.assert_allclose(logp, ref.logpmf(XS), rtol=1e-14)
    np.testing.assert_allclose(logcdf, ref.logcdf(XS), rtol=1e-14)
    np.testing.assert_allclose(logsf, ref.logsf(XS), rtol=1e-14)


def test_draws_are_uniform_on_the_integers_between_the_bounds():
    s = dg.rng_state("s")
    _, draws = dg.dist.discrete_uniform(-2, 4).draw(s, extra_dims=(dg.Dim("n", size=70000),))
    values = dg.function([s], draws, backend="python")(dg.seed_state(0))
    assert values.dtype == np.int64
    counts = np.bincount(values.values + 2, minlength=7)
    assert counts.sum() == 70000 and len(counts) == 7
    assert st.chisquare(counts).pvalue > 1e-3


def test_truncated_draws_invert_its_quantiles():
    s = dg.rng_state("s")
    _, draws = dg.dist.truncated(dg.dist.discrete_uniform(0, 9), lower=3, upper=5).draw(
        s, extra_dims=(dg.Dim("n", size=6000),)
    )
    values = dg.function([s], draws, backend="python")(dg.seed_state(1)).values
    assert set(np.unique(values)) == {3, 4, 5}
    assert st.chisquare(np.bincount(values)[3:]).pvalue > 1e-3


def test_invalid_bounds_give_nan_and_a_model_names_them():
    assert np.isnan(float(dg.dist.discrete_uniform(3, 1).logp(2).eval(backend="python")))
    m = dg.Model()
    with pytest.raises(ValueError, match="'tau'.*outside their support"):
        m.discrete_uniform("tau", 5, 2)


def test_marginalized_its_support_dim_has_the_integers_as_coords():
    year = dg.Dim("year", coords=np.arange(2000, 2006))
    counts = np.array([5, 6, 4, 1, 0, 2])
    m = dg.Model()
    tau = m.discrete_uniform("tau", 2001, 2004, marginalize=True)
    early, late = m.exponential("early", 0.5), m.exponential("late", 0.5)
    rate = dg.where(dg.constant(np.arange(2000, 2006), dims=(year,)) < tau, early, late)
    m.observe("y", dg.dist.poisson(rate), data=counts, dims=(year,))
    value = m.logp_fn(backend="python", jacobian=False)(np.log([4.0, 1.0]))[0]
    years = np.arange(2000, 2006)
    terms = [np.log(1 / 4) + st.poisson.logpmf(counts, np.where(years < t, 4.0, 1.0)).sum() for t in range(2001, 2005)]
    expected = np.logaddexp.reduce(terms) + st.expon.logpdf([4.0, 1.0], scale=2.0).sum()
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    import xarray as xr

    post = xr.Dataset({"early": (("chain", "draw"), [[4.0]]), "late": (("chain", "draw"), [[1.0]])})
    probs = m.latent_probabilities("tau", post)
    assert list(probs.tau_support.values) == [2001, 2002, 2003, 2004]
    np.testing.assert_allclose(probs.values[0, 0], np.exp(np.array(terms) - np.logaddexp.reduce(terms)), rtol=1e-12)
