"""Reference models of the catalog's families: an ordinal regression (ordered_logistic, cutpoints with the
"ordered" transform) and a zero-inflated count model (zero_inflated_poisson with a logit-linear psi, plus a
hurdle negative binomial on a second outcome), their flat log densities against closed forms in scipy at
random points (Jacobians included), gradients against finite differences, on every backend."""

import numpy as np
import pytest
from scipy import special, stats

import dimgraph as dg

rng = np.random.default_rng(39)
N = 40
OBS = dg.Dim("obs", size=N)
CUT = dg.Dim("cut", size=3)
X1 = rng.normal(size=N)
Y_ORD = rng.integers(0, 4, N)
COUNTS = np.where(rng.uniform(size=N) < 0.4, 0, rng.poisson(2.5, N))
COUNTS2 = np.where(rng.uniform(size=N) < 0.3, 0, 1 + rng.poisson(3.0, N))


def ordinal():
    m = dg.Model()
    beta = m.normal("beta", 0.0, 2.0)
    cut = m.normal("cutpoints", 0.0, 3.0, dims=(CUT,), transform="ordered")
    x = m.data("x", X1, dims=(OBS,))
    m.observe("y", dg.dist.ordered_logistic(beta * x, cut, dim=CUT), data=Y_ORD)
    return m


def ordinal_closed_form(theta):
    beta, c0, d1, d2 = theta
    cut = np.array([c0, c0 + np.exp(d1), c0 + np.exp(d1) + np.exp(d2)])
    edges = np.concatenate([[-np.inf], cut, [np.inf]])
    eta = beta * X1
    p = special.expit(edges[Y_ORD + 1] - eta) - special.expit(edges[Y_ORD] - eta)
    return stats.norm(0, 2).logpdf(beta) + stats.norm(0, 3).logpdf(cut).sum() + d1 + d2 + np.log(p).sum()


def zero_inflated():
    m = dg.Model()
    a = m.normal("a", 0.0, 1.0)
    b = m.normal("b", 0.0, 1.0)
    mu = m.gamma("mu", 2.0, 1.0)
    phi = m.exponential("phi", 1.0)
    x = m.data("x", X1, dims=(OBS,))
    m.observe("counts", dg.dist.zero_inflated_poisson(dg.sigmoid(a + b * x), mu), data=COUNTS)
    m.observe("counts2", dg.dist.hurdle_negative_binomial(0.7, mu=mu, alpha=phi), data=COUNTS2, dims=(OBS,))
    return m


def zero_inflated_closed_form(theta):
    a, b, log_mu, log_phi = theta
    mu, phi = np.exp(log_mu), np.exp(log_phi)
    psi = special.expit(a + b * X1)
    pois = stats.poisson(mu)
    zip_ = np.where(COUNTS == 0, np.log(1 - psi + psi * pois.pmf(0)), np.log(psi) + pois.logpmf(COUNTS))
    nb = stats.nbinom(phi, phi / (mu + phi))
    hurdle = np.where(COUNTS2 == 0, np.log(0.3), np.log(0.7) + nb.logpmf(COUNTS2) - nb.logsf(0))
    priors = stats.norm.logpdf(a) + stats.norm.logpdf(b) + stats.gamma(2.0).logpdf(mu) + stats.expon.logpdf(phi)
    return priors + log_mu + log_phi + zip_.sum() + hurdle.sum()


MODELS = {"ordinal": (ordinal, ordinal_closed_form), "zero_inflated": (zero_inflated, zero_inflated_closed_form)}


@pytest.fixture(scope="module")
def built():
    return {}


@pytest.mark.parametrize("name", list(MODELS))
def test_log_density_matches_the_closed_form(built, backend, name):
    build, closed = MODELS[name]
    fn = built.setdefault((name, backend), build()).logp_fn(backend)
    assert fn.size == 4
    for theta in np.random.default_rng(5).uniform(-1, 1, size=(3, 4)):
        value, grad = fn(theta)
        np.testing.assert_allclose(value, closed(theta), rtol=1e-10)
        h = 1e-6
        fd = [(closed(theta + h * e) - closed(theta - h * e)) / (2 * h) for e in np.eye(4)]
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


def test_prior_predictive_of_the_count_model_lies_in_its_support():
    prior = zero_inflated().prior_predictive(200, seed=3, backend="python").prior_predictive
    assert (prior["counts"] >= 0).all() and (prior["counts2"] >= 0).all()
    assert 0.2 < float((prior["counts2"] == 0).mean()) < 0.4  # the hurdle's 30% zeros
