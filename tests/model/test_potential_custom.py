"""`m.potential` and `dg.dist.custom` in a model: the log density and its gradient, MAP, both predictives, and
the errors naming the variable (a draw asked of a density without one, a bad potential)."""

import warnings

import numpy as np
import pytest
from scipy import stats

import dimgraph as dg

OBS = dg.Dim("obs", size=6)
G = dg.Dim("g", size=3)
Y = np.array([0.3, -1.2, 2.2, 0.8, 1.1, -0.4])


def _laplace_logp(x, mu, b):
    return -abs(x - mu) / b - dg.log(2 * b)


def _laplace_draw(state, extra_dims, mu, b):
    return dg.dist.laplace(mu, b).draw(state, extra_dims)


def build(with_draw=True):
    """mu ~ N(0, 2); a soft sum-to-zero potential on three effects; y ~ custom Laplace(mu + eff[0], 0.7)."""
    m = dg.Model()
    mu = m.normal("mu", 0.0, 2.0)
    eff = m.normal("eff", 0.0, 1.0, dims=(G,))
    m.potential("soft_zero_sum", dg.dist.normal(0.0, 0.1).logp(eff.sum("g")))
    m.potential("pull", -0.5 * (eff - 0.2) ** 2)  # a term on dims: summed
    dist = dg.dist.custom(logp=_laplace_logp, draw=_laplace_draw if with_draw else None, mu=mu + eff.isel(g=0), b=0.7)
    m.observe("y", dist, data=Y, dims=(OBS,))
    return m


def _closed_form(mu, eff):
    return (
        stats.norm(0, 2).logpdf(mu)
        + stats.norm(0, 1).logpdf(eff).sum()
        + stats.norm(0, 0.1).logpdf(eff.sum())
        + (-0.5 * (eff - 0.2) ** 2).sum()
        + stats.laplace(mu + eff[0], 0.7).logpdf(Y).sum()
    )


@pytest.fixture(scope="module")
def models():
    return {}


def test_potentials_and_a_custom_density_add_to_the_log_density(models, backend):
    m = models.setdefault(backend, build())
    fn = m.logp_fn(backend)
    assert fn.names == ["mu", "eff"]
    for theta in np.random.default_rng(0).normal(size=(3, 4)):
        value, grad = fn(theta)
        np.testing.assert_allclose(value, _closed_form(theta[0], theta[1:]), rtol=1e-10)
        h = 1e-6
        fd = [
            (_closed_form(*np.split(theta + h * e, [1])) - _closed_form(*np.split(theta - h * e, [1]))) / (2 * h)
            for e in np.eye(4)
        ]
        np.testing.assert_allclose(grad, np.ravel(fd), rtol=1e-5, atol=1e-6)
    assert m.potentials == ["soft_zero_sum", "pull"]
    assert set(m.logp_terms()) == {"mu", "eff", "soft_zero_sum", "pull", "y"}


def test_map_feels_the_potential():
    fit = build().map(backend="python")
    assert abs(float(fit["eff"].sum())) < 0.05  # the soft constraint holds at the mode


def test_prior_predictive_ignores_potentials_with_a_warning_and_draws_the_custom_density():
    m = build()
    with pytest.warns(UserWarning, match="potentials .*'soft_zero_sum', 'pull'.* are ignored"):
        prior = m.prior_predictive(2000, seed=1, backend="python")
    y, mu, eff = prior.prior_predictive["y"], prior.prior["mu"], prior.prior["eff"]
    assert y.dims == ("chain", "draw", "obs")
    resid = (y - mu - eff.isel(g=0)).values.ravel()  # Laplace(0, 0.7) residuals
    assert stats.kstest(resid, stats.laplace(0, 0.7).cdf).pvalue > 1e-3
    assert float(eff.sum("g").std()) > 1.0  # drawn from the priors alone: the potential is not in the draws


def test_posterior_predictive_draws_the_custom_density(backend):
    m = build()
    import xarray as xr

    posterior = xr.Dataset(
        {"mu": (("chain", "draw"), np.full((1, 400), 0.5)), "eff": (("chain", "draw", "g"), np.zeros((1, 400, 3)))},
        coords={"chain": [0], "draw": np.arange(400)},
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a potential is no reason to warn here: the posterior has felt it
        pp = m.posterior_predictive(posterior, seed=2, backend=backend).posterior_predictive["y"]
    assert pp.dims == ("chain", "draw", "obs")
    assert stats.kstest(pp.values.ravel(), stats.laplace(0.5, 0.7).cdf).pvalue > 1e-3
    ll = m.log_likelihood(posterior, backend=backend)["y"]
    np.testing.assert_allclose(ll.isel(chain=0, draw=0).values, stats.laplace(0.5, 0.7).logpdf(Y), rtol=1e-12)


def test_a_density_without_draws_is_named_when_draws_are_asked():
    m = build(with_draw=False)
    assert np.isfinite(m.logp_fn("python")(np.zeros(4))[0])  # its log density needs no draws
    with pytest.raises(TypeError, match="observed 'y': custom: no draw function was given"), pytest.warns(UserWarning):
        m.prior_predictive(10, backend="python")
    m2 = dg.Model()
    m2.flat("f")
    with pytest.raises(TypeError, match="rv 'f': flat: an improper density has no draws"):
        m2.prior_predictive(10, backend="python")


def test_a_latent_custom_variable_with_a_support_and_a_transform():
    m = dg.Model()
    s = m.rv(
        "s", dg.dist.custom(logp=lambda x, lam: dg.log(lam) - lam * x, lam=2.0, support=dg.dist.constraints.positive)
    )
    assert m.unconstrained_names == ["s_log__"]
    m.observe("y", dg.dist.normal(0.0, s), data=Y, dims=(OBS,))
    fit = m.map(backend="python")
    assert float(fit["s"]) > 0
    t = m.rv("t", dg.dist.custom(logp=lambda x: -x * x, support=dg.dist.constraints.interval(-1.0, 1.0)))
    assert t.dims == () and m.unconstrained_names[-1] == "t_interval__"
    u = m.rv("u", dg.dist.custom(logp=lambda x: -x * x), transform="log")
    assert u.dims == () and m.unconstrained_names[-1] == "u_log__"
    k = m.rv("k", dg.dist.custom(logp=lambda x: -x * 1.0, support=dg.dist.constraints.nonnegative_integer))
    assert k.type.dtype == "int64" and "k" not in [v.name for v in m.sampled]


def test_custom_errors():
    with pytest.raises(TypeError, match="custom: logp must be a function"):
        dg.dist.custom(logp=3.0)
    with pytest.raises(TypeError, match="custom: mu must be numbers"):
        dg.dist.custom(logp=_laplace_logp, mu="a", b=1.0)
    bad = dg.dist.custom(logp=_laplace_logp, draw=lambda state, extra, mu, b: (state, mu), mu=0.0, b=1.0)
    with pytest.raises(ValueError, match="custom draw: the draws are on"):
        bad.draw(dg.rng_state("s"), extra_dims=(OBS,))


def test_potential_errors():
    m = dg.Model()
    mu = m.normal("mu", 0.0, 1.0)
    with pytest.raises(ValueError, match="potential 'mu': the name 'mu' is already taken"):
        m.potential("mu", mu)
    with pytest.raises(TypeError, match="potential 'p': expected a labeled expression"):
        m.potential("p", "not a graph")
    with pytest.raises(TypeError, match="potential 'p': a log density term must be real numbers"):
        m.potential("p", mu > 0)
