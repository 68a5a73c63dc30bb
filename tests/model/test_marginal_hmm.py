"""Hidden Markov models: markov_chain marginalized by the forward algorithm, against enumeration of every path."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st
import xarray as xr

import dimgraph as dg

STATE = dg.Dim("state", coords=["calm", "storm"])
NEXT = dg.Dim("next", size=2)
P0 = np.array([0.6, 0.4])
P = np.array([[0.9, 0.1], [0.3, 0.7]])
SIGMA = 0.5


def hmm(y, time, trans=P, batch=()):
    """Gaussian emissions with a mean per state (sampled), states a marginalized Markov chain on `time`."""
    m = dg.Model()
    mu = m.normal("mu", dg.constant(np.array([0.0, 2.0]), dims=(STATE,)), 1.0, dims=(STATE,))
    trans_dims = (time, STATE, NEXT) if np.ndim(trans) == 3 else (STATE, NEXT)
    chain = dg.dist.markov_chain(
        dg.constant(P0, dims=(STATE,)), dg.constant(trans, dims=trans_dims), dim=STATE, next_dim=NEXT, time=time
    )
    s = m.rv("s", chain, dims=(*batch, time), marginalize=True)
    m.observe("y", dg.dist.normal(mu.isel(state=s), SIGMA), data=y, dims=(*batch, time))
    return m


def enumerate_paths(y, mu, trans=P):
    """{path: log p(path, y | mu)} over every path of len(y) steps."""
    out = {}
    for path in itertools.product(range(2), repeat=len(y)):
        lp = np.log(P0[path[0]])
        for t in range(1, len(y)):
            lp += np.log((trans[t] if np.ndim(trans) == 3 else trans)[path[t - 1], path[t]])
        out[path] = lp + st.norm.logpdf(y, mu[list(path)], SIGMA).sum()
    return out


TIME3 = dg.Dim("time", size=3)
Y3 = np.array([0.2, 2.5, 1.9])
MU = np.array([0.1, 1.8])


@pytest.fixture(scope="module")
def three_steps():
    return hmm(Y3, TIME3)


def _posterior(mu, draws=1):
    return xr.Dataset({"mu": (("chain", "draw", "state"), np.broadcast_to(mu, (1, draws, 2)).copy())})


def test_three_step_hmm_equals_enumeration_of_every_path(three_steps, backend):
    fn = three_steps.logp_fn(backend)
    assert fn.names == ["mu"]
    paths = enumerate_paths(Y3, MU)
    expected = st.norm.logpdf(MU, [0.0, 2.0], 1.0).sum() + sp.logsumexp(list(paths.values()))
    value, grad = fn(MU)
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    eps = 1e-6
    fd = [(fn(MU + eps * e)[0] - fn(MU - eps * e)[0]) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(grad, fd, rtol=1e-6)


def test_smoothed_marginals_ffbs_paths_and_viterbi_match_enumeration(three_steps):
    paths = enumerate_paths(Y3, MU)
    logs = np.array(list(paths.values()))
    post_p = np.exp(logs - sp.logsumexp(logs))
    keys = np.array(list(paths))
    exact = np.stack([[post_p[keys[:, t] == k].sum() for k in range(2)] for t in range(3)])
    probs = three_steps.latent_probabilities("s", _posterior(MU))
    assert probs.dims == ("chain", "draw", "time", "s_support")
    assert list(probs.s_support.values) == ["calm", "storm"]
    np.testing.assert_allclose(probs.values[0, 0], exact, rtol=1e-12)
    draws = 4000
    rec = three_steps.recover(_posterior(MU, draws), seed=5)["s"].values[0]
    assert rec.shape == (draws, 3)
    for k, path in enumerate(map(tuple, keys)):
        freq = np.mean(np.all(rec == path, axis=1))
        assert abs(freq - post_p[k]) <= 4 * np.sqrt(post_p[k] * (1 - post_p[k]) / draws) + 1e-3
    best = three_steps.viterbi("s", _posterior(MU))
    assert best.dims == ("chain", "draw", "time")
    assert tuple(best.values[0, 0]) == tuple(keys[np.argmax(logs)])


def test_time_varying_transitions_and_batch_sequences_equal_enumeration():
    rng = np.random.default_rng(4)
    time, seq = dg.Dim("time", size=4), dg.Dim("seq", size=2)
    trans = rng.dirichlet(np.ones(2), size=(4, 2))
    y = rng.normal(1.0, 1.0, size=(2, 4))
    m = hmm(y, time, trans=trans, batch=(seq,))
    value = m.logp_fn(backend="python")(MU)[0]
    expected = st.norm.logpdf(MU, [0.0, 2.0], 1.0).sum()
    for row in y:
        expected += sp.logsumexp(list(enumerate_paths(row, MU, trans).values()))
    np.testing.assert_allclose(value, expected, rtol=1e-12)
    probs = m.latent_probabilities("s", _posterior(MU))
    assert probs.dims == ("chain", "draw", "seq", "time", "s_support")
    paths = enumerate_paths(y[1], MU, trans)
    logs = np.array(list(paths.values()))
    keys = np.array(list(paths))
    w = np.exp(logs - sp.logsumexp(logs))
    np.testing.assert_allclose(probs.values[0, 0, 1, 2, 1], w[keys[:, 2] == 1].sum(), rtol=1e-12)


def test_a_400_step_hmm_far_beyond_exp_range_is_finite_with_a_finite_gradient():
    """The log-likelihood is about -20,000 (exp underflows past -745): the forward pass stays in log space."""
    time = dg.Dim("time", size=400)
    rng = np.random.default_rng(0)
    y = rng.normal(0.0, 40.0, size=400)
    m = hmm(y, time)
    value, grad = m.logp_fn()(MU)
    # the oracle: the scaled forward recursion in probability space
    emit = st.norm.pdf(y[:, None], MU[None, :], SIGMA)
    log_emit = st.norm.logpdf(y[:, None], MU[None, :], SIGMA)
    shift = log_emit.max(1)
    alpha, total = P0 * np.exp(log_emit[0] - shift[0]), shift[0]
    for t in range(1, 400):
        alpha = (alpha @ P) * np.exp(log_emit[t] - shift[t])
        total += shift[t] + np.log(alpha.sum())
        alpha /= alpha.sum()
    total += np.log(alpha.sum())
    assert emit.min() == 0.0 and total < -709
    np.testing.assert_allclose(value, total + st.norm.logpdf(MU, [0.0, 2.0], 1.0).sum(), rtol=1e-12)
    assert np.all(np.isfinite(grad))
    eps = 1e-5
    fd = [(m.logp_fn()(MU + eps * e)[0] - m.logp_fn()(MU - eps * e)[0]) / (2 * eps) for e in np.eye(2)]
    np.testing.assert_allclose(grad, fd, rtol=1e-5)


def test_markov_chain_draws_follow_the_transitions():
    """Paths of 6 steps (three doubling rounds): the first state, every step's transitions and the marginals."""
    time = dg.Dim("time", size=6)
    m = dg.Model()
    m.rv(
        "s",
        dg.dist.markov_chain(
            dg.constant(P0, dims=(STATE,)), dg.constant(P, dims=(STATE, NEXT)), dim=STATE, next_dim=NEXT, time=time
        ),
    )
    s = m.prior_predictive(20000, seed=1, backend="python").prior["s"].values[0]
    assert s.shape == (20000, 6)
    np.testing.assert_allclose(np.mean(s[:, 0] == 1), 0.4, atol=0.015)
    for t in (1, 3, 5):
        np.testing.assert_allclose(np.mean(s[s[:, t - 1] == 0, t] == 1), 0.1, atol=0.015)
        np.testing.assert_allclose(np.mean(s[s[:, t - 1] == 1, t] == 1), 0.7, atol=0.02)
    marginal = P0 @ np.linalg.matrix_power(P, 5)
    np.testing.assert_allclose(np.mean(s[:, 5] == 1), marginal[1], atol=0.015)


def test_an_emission_that_reads_the_previous_state_is_an_error():
    m = dg.Model()
    s = m.rv(
        "s",
        dg.dist.markov_chain(
            dg.constant(P0, dims=(STATE,)), dg.constant(P, dims=(STATE, NEXT)), dim=STATE, next_dim=NEXT, time=TIME3
        ),
        marginalize=True,
    )
    m.observe("y", dg.dist.normal(s.shift(time=1, fill_value=0) * 1.0, 1.0), data=Y3, dims=(TIME3,))
    with pytest.raises(ValueError, match=r"s on \(time.*shift or roll along 'time'.* before 'y'"):
        m.logp()
