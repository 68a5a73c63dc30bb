"""A hidden Markov model's states given the data, in NumPy log space, from its compiled pieces per draw.

Every function takes the log initial probabilities `log_init` (..., S), the log
transitions `log_trans` (..., S, S') or, varying in time, (T, ..., S, S') (the
slice t is the step into t), and the emissions `log_emit` (T, ..., S); the
leading `...` are (chain, draw, batch dims), all handled at once:
- `smoothed`: P(s_t | all the data), forward-backward;
- `sample_paths`: forward filtering, backward sampling (one path per entry);
- `viterbi`: the most probable path (max-product, backtracked).
"""

from __future__ import annotations

import numpy as np


def logsumexp(a, axis):
    """log(sum(exp(a), axis)) without overflow; -inf where every term is -inf (scipy is not a dependency)."""
    top = np.max(a, axis=axis, keepdims=True)
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.log(np.sum(np.exp(a - top), axis=axis)) + np.squeeze(top, axis=axis)


def _trans_at(log_trans, t, varying):
    return log_trans[t] if varying else log_trans


def forward(log_init, log_trans, log_emit, varying):
    """log alpha_t(s) = log p(data up to t, s_t = s), on (T, ..., S)."""
    alpha = np.empty_like(log_emit)
    alpha[0] = log_init + log_emit[0]
    for t in range(1, len(log_emit)):
        alpha[t] = logsumexp(alpha[t - 1][..., :, None] + _trans_at(log_trans, t, varying), axis=-2) + log_emit[t]
    return alpha


def smoothed(log_init, log_trans, log_emit, varying):
    """P(s_t = s | all the data) on (T, ..., S)."""
    alpha = forward(log_init, log_trans, log_emit, varying)
    beta = np.zeros_like(log_emit)
    for t in range(len(log_emit) - 2, -1, -1):
        ahead = (log_emit[t + 1] + beta[t + 1])[..., None, :]
        beta[t] = logsumexp(_trans_at(log_trans, t + 1, varying) + ahead, axis=-1)
    total = logsumexp(alpha[-1], axis=-1)
    return np.exp(alpha + beta - total[None, ..., None])


def _pick(log_weights, rng):
    """One position per entry along the last axis, with probabilities proportional to exp(log_weights)."""
    w = np.exp(log_weights - log_weights.max(-1, keepdims=True))
    cdf = np.cumsum(w, -1)
    u = rng.uniform(size=cdf.shape[:-1] + (1,)) * cdf[..., -1:]
    return np.minimum((cdf < u).sum(-1), w.shape[-1] - 1)


def sample_paths(log_init, log_trans, log_emit, varying, rng):
    """One path per entry from p(s | all the data): positions on (T, ...)."""
    alpha = forward(log_init, log_trans, log_emit, varying)
    T = len(log_emit)
    path = np.empty(alpha.shape[:-1], dtype=np.int64)
    path[-1] = _pick(alpha[-1], rng)
    for t in range(T - 2, -1, -1):
        into = np.take_along_axis(
            _trans_at(log_trans, t + 1, varying) + np.zeros_like(alpha[t])[..., None],
            path[t + 1][..., None, None],
            axis=-1,
        )[..., 0]
        path[t] = _pick(alpha[t] + into, rng)
    return path


def viterbi(log_init, log_trans, log_emit, varying):
    """The most probable path: positions on (T, ...)."""
    T = len(log_emit)
    best = log_init + log_emit[0]
    back = np.empty(log_emit.shape, dtype=np.int64)
    for t in range(1, T):
        scores = best[..., :, None] + _trans_at(log_trans, t, varying)
        back[t] = scores.argmax(-2)
        best = scores.max(-2) + log_emit[t]
    path = np.empty(log_emit.shape[:-1], dtype=np.int64)
    path[-1] = best.argmax(-1)
    for t in range(T - 1, 0, -1):
        path[t - 1] = np.take_along_axis(back[t], path[t][..., None], axis=-1)[..., 0]
    return path
