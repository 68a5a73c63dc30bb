"""Marginalized discrete latents: log densities against brute-force enumeration, posteriors, draws, errors."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st
import xarray as xr

import dimgraph as dg

OBS = dg.Dim("obs", size=5)
STATE = dg.Dim("state", coords=["low", "high"])
Y_MIX = np.array([0.1, 1.5, -2.0, 3.0, 0.4])


def mixture_model(latent):
    """Two normal components: a Categorical latent marginalized, or `dg.dist.mixture`."""
    m = dg.Model()
    mu = m.normal("mu", dg.constant(np.array([-1.0, 1.0]), dims=(STATE,)), 2.0, dims=(STATE,))
    w = m.dirichlet("w", dg.constant(np.ones(2), dims=(STATE,)), dim=STATE)
    if latent:
        z = m.categorical("z", w, dim=STATE, dims=(OBS,), marginalize=True)
        m.observe("y", dg.dist.normal(mu.isel(state=z), 1.0), data=Y_MIX, dims=(OBS,))
    else:
        m.observe("y", dg.dist.mixture(w, dg.dist.normal(mu, 1.0), dim=STATE), data=Y_MIX, dims=(OBS,))
    return m


@pytest.fixture(scope="module")
def mixtures():
    return mixture_model(True), mixture_model(False)


def _posterior(draws):
    """A posterior Dataset on (chain, draw) from {name: (array of draws, dims after chain, draw)}."""
    return xr.Dataset({n: (("chain", "draw", *dims), v) for n, (v, dims) in draws.items()})


def test_latent_mixture_equals_mixture_in_logp_gradient_and_pointwise_loglik(mixtures, backend):
    latent, mixture = mixtures
    fa, fb = latent.logp_fn(backend), mixture.logp_fn(backend)
    assert fa.names == fb.names == ["mu", "w_simplex__"]
    for theta in np.random.default_rng(0).normal(size=(3, 3)):
        (va, ga), (vb, gb) = fa(theta), fb(theta)
        np.testing.assert_allclose(va, vb, rtol=0, atol=1e-12)
        np.testing.assert_allclose(ga, gb, rtol=0, atol=1e-12)
    rng = np.random.default_rng(1)
    w = rng.dirichlet(np.ones(2), size=(2, 3))
    post = _posterior({"mu": (rng.normal(size=(2, 3, 2)), ("state",)), "w": (w, ("state",))})
    la, lb = latent.log_likelihood(post, backend)["y"], mixture.log_likelihood(post, backend)["y"]
    assert la.dims == ("chain", "draw", "obs")
    np.testing.assert_allclose(la.values, lb.values, rtol=1e-12)
    expected = np.log((w[..., None, :] * st.norm.pdf(Y_MIX[:, None], post["mu"].values[..., None, :], 1.0)).sum(-1))
    np.testing.assert_allclose(la.values, expected, rtol=1e-12)


def test_the_latent_leaves_the_parameters_and_stays_in_the_prior(mixtures):
    latent, _ = mixtures
    assert latent.unconstrained_names == ["mu", "w_simplex__"]
    prior = latent.prior_predictive(50, seed=0, backend="python")
    assert prior.prior["z"].dims == ("chain", "draw", "obs")
    assert set(np.unique(prior.prior["z"].values)) <= {0, 1}


SITE, VISIT = dg.Dim("site", size=4), dg.Dim("visit", size=3)
Y_OCC = np.array([[0, 0, 0], [1, 0, 1], [0, 0, 0], [0, 1, 0]])


@pytest.fixture(scope="module")
def occupancy():
    """Sites occupied with probability psi, each visit detecting an occupant with probability p."""
    m = dg.Model()
    psi = m.beta("psi", 1.0, 1.0)
    p = m.beta("p", 1.0, 1.0)
    z = m.bernoulli("z", psi, dims=(SITE,), marginalize=True)
    m.observe("y", dg.dist.bernoulli(dg.where(z == 1, p, 0.0)), data=Y_OCC, dims=(SITE, VISIT))
    m.deterministic("occupied", z.sum("site"))
    return m


def occupancy_terms(psi, p):
    """Per site: log(psi prod_v Bern(y | p) + (1 - psi) [no detection]), the visits summed before the sum over z."""
    occupied = np.log(psi) + st.bernoulli.logpmf(Y_OCC, p).sum(1)
    empty = np.log1p(-psi) + np.where(Y_OCC.sum(1) == 0, 0.0, -np.inf)
    return np.logaddexp(occupied, empty), occupied, empty


def test_occupancy_equals_enumeration_with_a_finite_gradient(occupancy):
    fn = occupancy.logp_fn(jacobian=False)
    for theta in ([0.2, -0.3], [1.5, 0.7]):
        psi, p = sp.expit(theta)
        value, grad = fn(np.array(theta))
        np.testing.assert_allclose(value, occupancy_terms(psi, p)[0].sum(), rtol=1e-12)
        assert np.all(np.isfinite(grad))
        eps = 1e-6
        fd = [(fn(np.array(theta) + eps * e)[0] - fn(np.array(theta) - eps * e)[0]) / (2 * eps) for e in np.eye(2)]
        np.testing.assert_allclose(grad, fd, rtol=1e-6)


def test_a_zero_probability_value_gives_minus_inf_never_nan(occupancy):
    post = _posterior({"psi": (np.array([[0.4, 1.0]]), ()), "p": (np.array([[0.5, 0.5]]), ())})
    ll = occupancy.log_likelihood(post)["+".join(["y"])]
    assert ll.dims == ("chain", "draw", "site")
    _, occupied, _ = occupancy_terms(0.4, 0.5)
    np.testing.assert_allclose(ll.values[0, 0], occupancy_terms(0.4, 0.5)[0], rtol=1e-12)
    np.testing.assert_allclose(ll.values[0, 1], occupied - np.log(0.4), rtol=1e-12)  # psi = 1: occupied for sure
    probs = occupancy.latent_probabilities("z", post)
    assert probs.dims == ("chain", "draw", "site", "z_support") and list(probs.z_support.values) == [0, 1]
    assert not np.isnan(probs.values).any()
    np.testing.assert_array_equal(probs.values[0, :, [1, 3], 1], 1.0)  # detected: occupied


def test_occupancy_posterior_probabilities_recovered_draws_and_deterministics(occupancy):
    psi, p = 0.6, 0.3
    draws = 4000
    post = _posterior({"psi": (np.full((1, draws), psi), ()), "p": (np.full((1, draws), p), ())})
    probs = occupancy.latent_probabilities("z", post)
    _, occupied, empty = occupancy_terms(psi, p)
    exact = np.exp(occupied - np.logaddexp(occupied, empty))
    np.testing.assert_allclose(probs.values[0, 0, :, 1], exact, rtol=1e-12)
    recovered = occupancy.recover(post, seed=3)
    freq = recovered["z"].values.mean((0, 1))
    assert np.all(np.abs(freq - exact) <= 4 * np.sqrt(exact * (1 - exact) / draws) + 1e-12)
    np.testing.assert_array_equal(recovered["occupied"].values, recovered["z"].values.sum(-1))


def test_posterior_predictive_draws_the_latents_first(occupancy):
    post = _posterior({"psi": (np.full((1, 200), 0.6), ()), "p": (np.full((1, 200), 0.3), ())})
    pred = occupancy.posterior_predictive(post, seed=0).posterior_predictive["y"]
    assert pred.dims == ("chain", "draw", "site", "visit")
    # detected sites are occupied in every recovered draw: their detections have mean p
    np.testing.assert_allclose(pred.values[0, :, [1, 3]].mean(), 0.3, atol=0.06)


def test_two_latents_under_one_dependent_equal_enumeration():
    rng = np.random.default_rng(2)
    kind = dg.Dim("kind", size=3)
    y = rng.normal(size=5)
    m = dg.Model()
    a = m.normal("a", dg.constant(np.zeros(3), dims=(kind,)), 1.0, dims=(kind,))
    b = m.normal("b", 0.0, 1.0)
    q = dg.constant(np.array([0.2, 0.5, 0.3]), dims=(kind,))
    z1 = m.bernoulli("z1", 0.3, dims=(OBS,), marginalize=True)
    z2 = m.categorical("z2", q, dim=kind, dims=(OBS,), marginalize=True)
    m.observe("y", dg.dist.normal(a.isel(kind=z2) + b * z1, 1.0), data=y, dims=(OBS,))
    fn = m.logp_fn(backend="python")
    theta = rng.normal(size=4)
    av, bv = theta[:3], theta[3]
    total = st.norm.logpdf(av).sum() + st.norm.logpdf(bv)
    for i in range(5):
        terms = [
            np.log([0.7, 0.3][s1]) + np.log([0.2, 0.5, 0.3][s2]) + st.norm.logpdf(y[i], av[s2] + bv * s1)
            for s1, s2 in itertools.product(range(2), range(3))
        ]
        total += sp.logsumexp(terms)
    np.testing.assert_allclose(fn(theta)[0], total, rtol=1e-12)
    assert list(m.logp_terms()) == ["a", "b", "z1+z2"]


def test_binomial_latent_under_a_truncated_poisson_count_equals_enumeration():
    """The N-mixture model: abundance N ~ truncated Poisson (upper=25) per site, counts ~ Binomial(N, p)."""
    counts = np.array([[2, 0, 3], [0, 0, 0], [5, 4, 6], [1, 2, 1]])
    m = dg.Model()
    lam = m.gamma("lam", 2.0, 0.5)
    p = m.beta("p", 2.0, 2.0)
    n = m.rv("N", dg.dist.truncated(dg.dist.poisson(lam), upper=25), dims=(SITE,), marginalize=True)
    m.observe("y", dg.dist.binomial(n, p), data=counts, dims=(SITE, VISIT))
    fn = m.logp_fn(jacobian=False)
    theta = np.array([1.2, 0.1])
    lam_v, p_v = np.exp(1.2), sp.expit(0.1)
    ks = np.arange(26)
    prior = st.poisson.logpmf(ks, lam_v) - st.poisson.logcdf(25, lam_v)
    like = st.binom.logpmf(counts[:, :, None], ks, p_v).sum(1)
    expected = (
        sp.logsumexp(prior + like, axis=1).sum() + st.gamma.logpdf(lam_v, 2.0, scale=2.0) + st.beta.logpdf(p_v, 2, 2)
    )
    value, grad = fn(theta)
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    eps = 1e-6
    fd = [(fn(theta + eps * e)[0] - fn(theta - eps * e)[0]) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(grad, fd, rtol=1e-6)


def test_a_binomial_latent_with_a_constant_n():
    m = dg.Model()
    p = m.beta("p", 1.0, 1.0)
    k = m.binomial("k", 4, p, marginalize=True)
    m.observe("y", dg.dist.normal(k * 1.0, 0.5), data=np.array(2.3))
    value = m.logp_fn(jacobian=False)(np.array([0.4]))[0]
    pv, ks = sp.expit(0.4), np.arange(5)
    np.testing.assert_allclose(
        value, sp.logsumexp(st.binom.logpmf(ks, 4, pv) + st.norm.logpdf(2.3, ks, 0.5)), rtol=1e-12
    )


@pytest.mark.parametrize(
    "mix, message",
    [
        (lambda z: z.sum("site") + 0 * z, "sum over 'site' mixes the entries of 'site' before 'y'"),
        (lambda z: z.shift(site=1, fill_value=0), "shift or roll along 'site'"),
        (lambda z: z.cumsum("site"), "cumsum{site} along 'site'"),
    ],
)
def test_ops_that_mix_the_latents_entries_are_errors_naming_latent_op_and_dim(mix, message):
    m = dg.Model()
    z = m.bernoulli("z", 0.5, dims=(SITE,), marginalize=True)
    m.observe("y", dg.dist.normal(mix(z) * 1.0, 1.0), data=np.zeros(4), dims=(SITE,))
    with pytest.raises(
        ValueError,
        match=r"z on \(site\b.*"
        + message.replace("(", r"\(").replace("{", r"\{").replace(")", r"\)").replace("}", r"\}"),
    ):
        m.logp()


def test_bad_marginalizations_are_errors_before_any_change():
    m = dg.Model()
    m.normal("x", 0.0, 1.0)
    m.poisson("c", 3.0)
    with pytest.raises(ValueError, match="'x': Normal is continuous"):
        m.marginalize("x")
    with pytest.raises(
        TypeError, match=r"'c': a poisson has no finite support.*truncated\(poisson\(\.\.\.\), upper=N\)"
    ):
        m.marginalize("c")
    with pytest.raises(KeyError, match=r"\['nope'\] are not random variables"):
        m.marginalize("nope")
    with pytest.raises(ValueError, match="'k': the upper end of binomial's support must be a number"):
        m.binomial("k", m["c"], 0.5, marginalize=True)
    with pytest.raises(TypeError, match="'x2': a normal is not discrete"):
        m.rv("x2", dg.dist.normal(0.0, 1.0), marginalize=True)
    assert m.free_variables == ["x", "c"] and m._marginalized == []
    m.bernoulli("b", 0.5, marginalize=True)
    assert "b ~ Bernoulli" in repr(m) and "(marginalized)" in repr(m)
    with pytest.raises(KeyError, match="'x' is not a marginalized variable"):
        m.latent_probabilities("x", xr.Dataset())


def test_sampling_through_nutpie_then_recovering(occupancy):
    """The marginal model samples through nutpie's C route; the latent comes back with recover."""
    pytest.importorskip("nutpie")
    idata = occupancy.sample(draws=200, tune=200, chains=2, seed=3)
    assert set(idata.posterior.data_vars) == {"psi", "p"}  # z and the deterministic reading it wait for recover
    assert idata.log_likelihood["y"].dims == ("chain", "draw", "site")
    recovered = occupancy.recover(idata, seed=0).posterior
    assert recovered["z"].dims == ("chain", "draw", "site")
    np.testing.assert_array_equal(recovered["z"].values[:, :, [1, 3]], 1)  # detected: occupied in every draw
    np.testing.assert_array_equal(recovered["occupied"].values, recovered["z"].values.sum(-1))
