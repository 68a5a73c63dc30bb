"""The multivariate families: the multivariate normal in precision form, the multivariate Student-t, the
multinomial, Dirichlet-multinomial and ordered multinomial, stick-breaking weights, CAR and ICAR, the Kronecker
and matrix normal, Wishart and inverse Wishart (and the `positive_definite` transform they sample with), and the
normal mixture (a mixture of normals on a component dim).

Oracles: scipy.stats (multivariate_normal, multivariate_t, multinomial, dirichlet_multinomial, matrix_normal,
wishart, invwishart, beta for the sticks), NumPy closed forms (CAR and ICAR as normals with their precisions),
finite differences for gradients and the transform's Jacobian, moments and KS on the margins for draws. A
parameter on a `batch` dim broadcasts by name in each family. One compiled function per backend for the log
densities, one for the gradients, one for the draws; an ICAR spatial model checks `dg.Model`'s log density.
"""

import math

import numpy as np
import pytest
from scipy import stats

import dimgraph as dg
from dimgraph.testing import numeric_grad

RNG = np.random.default_rng(20261201)
I, J = dg.Dim("i", size=3), dg.Dim("j", size=3)
K = dg.Dim("k", size=3)
CUT = dg.Dim("cut", size=2)  # the ordered multinomial's cutpoints: K - 1 of them
B = dg.Dim("batch", size=2)
NODE = dg.Dim("node", coords=["a", "b", "c", "d", "e"])
A1, A2, B1, B2 = dg.Dim("a", size=2), dg.Dim("a2", size=2), dg.Dim("b", size=3), dg.Dim("b2", size=3)
N = dg.Dim("n", size=4000)


def _spd(n, shift=1.0):
    a = RNG.normal(size=(n, n))
    return a @ a.T + shift * np.eye(n)


COV, COV2 = _spd(3), np.array([[2.0, 0.3], [0.3, 1.0]])
MU = np.array([[0.5, -1.0, 2.0], [0.0, 0.3, -0.2]])  # on (batch, i)
W = np.array(  # a 5-node graph: a ring a-b-c-d with e hanging off d
    [[0, 1, 0, 1, 0], [1, 0, 1, 0, 0], [0, 1, 0, 1, 0], [1, 0, 1, 0, 1], [0, 0, 0, 1, 0]], dtype=float
)
P, ALPHA = np.array([0.2, 0.3, 0.5]), np.array([0.5, 2.0, 1.5])
NUS = np.array([4.0, 7.5])  # on batch

_CACHE = {}


def cached(key, build):
    if key not in _CACHE:
        _CACHE[key] = build()
    return _CACHE[key]


def _c(values, *dims):
    return dg.constant(np.asarray(values, dtype=float), dims=dims)


# the values each log density is evaluated at
VALUES = {
    "x": ((I,), np.array([1.0, 0.0, 1.5])),
    "counts": ((B, K), np.array([[2, 1, 4], [0, 7, 0]])),
    "weights": ((B, K), np.array([[0.5, 0.3, 0.2], [0.1, 0.1, 0.8]])),
    "y": ((NODE,), np.array([0.1, -0.5, 0.7, 0.2, -0.3])),
    "z": ((A1, B1), RNG.normal(size=(2, 3))),
    "spd": ((I, J), _spd(3, 0.5)),
}
# the parameters the gradients are taken with respect to: {name: (dims, value)}
PARAMS = {
    "mu": ((B, I), MU),
    "cov": ((I, J), COV),
    "nu": ((B,), NUS),
    "p": ((K,), P),
    "a": ((K,), ALPHA),
    "stick_alpha": ((B,), [2.5, 0.7]),
    "car_alpha": ((B,), [0.6, -0.2]),
    "tau": ((), 2.0),
    "sigma": ((), 1.7),
    "cov2": ((A1, A2), COV2),
    "noise": ((), 0.7),
    "eta": ((B,), [0.3, -1.0]),
    "cut": ((CUT,), [-0.5, 0.8]),
}
ETA, CUTS = np.array([0.3, -1.0]), np.array([-0.5, 0.8])


def _densities(v, p):
    """name -> log density, from the inputs `v` (values) and `p` (parameters)."""
    cov = p["cov"]
    precision = dg.linalg.inv(cov, dims=(I, J))
    kron = [p["cov2"], _c(COV, B1, B2)]
    return {
        "mvn_tau": dg.dist.multivariate_normal(p["mu"], tau=precision, dims=(I, J)).logp(v["x"]),
        "mvt": dg.dist.mv_student_t(p["nu"], p["mu"], scale=cov, dims=(I, J)).logp(v["x"]),
        "mvt_tau": dg.dist.mv_student_t(p["nu"], p["mu"], tau=precision, dims=(I, J)).logp(v["x"]),
        "mvt_chol": dg.dist.mv_student_t(p["nu"], p["mu"], chol=dg.linalg.cholesky(cov, dims=(I, J)), dims=(I, J)).logp(
            v["x"]
        ),
        "multinomial": dg.dist.multinomial(7, p["p"], dim=K).logp(v["counts"]),
        "dirichlet_multinomial": dg.dist.dirichlet_multinomial(7, p["a"], dim=K).logp(v["counts"]),
        "stick_breaking_weights": dg.dist.stick_breaking_weights(p["stick_alpha"], dim=K).logp(v["weights"]),
        "car": dg.dist.car(0.3, W, p["car_alpha"], p["tau"], dim=NODE).logp(v["y"]),
        "icar": dg.dist.icar(W, p["sigma"], dim=NODE).logp(v["y"]),
        "kronecker_normal": dg.dist.kronecker_normal(0.2, covs=kron, dims=[(A1, A2), (B1, B2)]).logp(v["z"]),
        "kronecker_noise": dg.dist.kronecker_normal(0.2, covs=kron, sigma=p["noise"], dims=[(A1, A2), (B1, B2)]).logp(
            v["z"]
        ),
        "matrix_normal": dg.dist.matrix_normal(
            0.2, rowcov=p["cov2"], colcov=_c(COV, B1, B2), rowdims=(A1, A2), coldims=(B1, B2)
        ).logp(v["z"]),
        "wishart": dg.dist.wishart(p["nu"], cov, dims=(I, J)).logp(v["spd"]),
        "inverse_wishart": dg.dist.inverse_wishart(p["nu"], cov, dims=(I, J)).logp(v["spd"]),
        "ordered_multinomial": dg.dist.ordered_multinomial(p["eta"], p["cut"], 7, dim=K, cut_dim=CUT).logp(v["counts"]),
        "normal_mixture": dg.dist.normal_mixture(p["p"], p["a"], p["sigma"], dim=K).logp(v["x"]),
        "normal_mixture_tau": dg.dist.normal_mixture(p["p"], p["a"], tau=p["tau"], dim=K).logp(v["x"]),
    }


def _icar_oracle(y, sigma, s=0.001):
    """PyMC's ICAR density as the normal it is on a connected graph: precision L / sigma^2 + 1 1^T / (s n)^2."""
    n = len(y)
    Q = (np.diag(W.sum(1)) - W) / sigma**2 + np.ones((n, n)) / (s * n) ** 2
    return -0.5 * n * math.log(2 * math.pi) + 0.5 * np.linalg.slogdet(Q)[1] - 0.5 * y @ Q @ y


def _stick_oracle(w, alpha):
    """The density of the weights from the Beta(1, alpha) shares v_k = w_k / (1 - w_1 - ... - w_(k-1))."""
    left = 1 - np.concatenate([[0.0], np.cumsum(w[:-1])])
    v = w[:-1] / left[:-1]
    return stats.beta(1, alpha).logpdf(v).sum() - np.log(left[:-1]).sum()


def _ordered_probabilities(eta):
    """P(k) of the ordered logistic: sigmoid(c_k - eta) - sigmoid(c_(k-1) - eta), c_(-1) = -inf, c_(K-1) = inf."""
    return np.diff(np.concatenate([[0.0], 1 / (1 + np.exp(-(CUTS - eta))), [1.0]]))


def _normal_mixture(x, sigma):
    return np.log((P[None, :] * stats.norm(ALPHA[None, :], sigma).pdf(x[:, None])).sum(1))


def _oracles():
    x = VALUES["x"][1]
    counts, weights, y, z, spd = (VALUES[k][1] for k in ("counts", "weights", "y", "z", "spd"))
    D = np.diag(W.sum(1))
    kron = np.kron(COV2, COV)
    batch = range(2)
    return {
        "mvn_tau": [stats.multivariate_normal(MU[b], COV).logpdf(x) for b in batch],
        "mvt": [stats.multivariate_t(MU[b], COV, df=NUS[b]).logpdf(x) for b in batch],
        "mvt_tau": [stats.multivariate_t(MU[b], COV, df=NUS[b]).logpdf(x) for b in batch],
        "mvt_chol": [stats.multivariate_t(MU[b], COV, df=NUS[b]).logpdf(x) for b in batch],
        "multinomial": [stats.multinomial(7, P).logpmf(counts[b]) for b in batch],
        "dirichlet_multinomial": [stats.dirichlet_multinomial(ALPHA, 7).logpmf(counts[b]) for b in batch],
        "stick_breaking_weights": [_stick_oracle(weights[b], a) for b, a in zip(batch, [2.5, 0.7])],
        "car": [
            stats.multivariate_normal(np.full(5, 0.3), np.linalg.inv(2.0 * (D - a * W))).logpdf(y) for a in (0.6, -0.2)
        ],
        "icar": _icar_oracle(y, 1.7),
        "kronecker_normal": stats.multivariate_normal(np.full(6, 0.2), kron).logpdf(z.ravel()),
        "kronecker_noise": stats.multivariate_normal(np.full(6, 0.2), kron + 0.49 * np.eye(6)).logpdf(z.ravel()),
        "matrix_normal": stats.matrix_normal(np.full((2, 3), 0.2), COV2, COV).logpdf(z),
        "wishart": [stats.wishart(nu, COV).logpdf(spd) for nu in NUS],
        "inverse_wishart": [stats.invwishart(nu, COV).logpdf(spd) for nu in NUS],
        "ordered_multinomial": [stats.multinomial(7, _ordered_probabilities(ETA[b])).logpmf(counts[b]) for b in batch],
        "normal_mixture": _normal_mixture(x, 1.7),
        "normal_mixture_tau": _normal_mixture(x, 2.0**-0.5),
    }


def graph():
    def build():
        v = {
            k: dg.labeled(k, dims=dims, dtype="int64" if k == "counts" else "float64")
            for k, (dims, _) in VALUES.items()
        }
        p = {k: dg.labeled(k, dims=dims) for k, (dims, _) in PARAMS.items()}
        return v, p, _densities(v, p)

    return cached("graph", build)


def _inputs():
    v, p, _ = graph()
    return [*v.values(), *p.values()], [
        *(val for _, val in VALUES.values()),
        *(np.asarray(val, dtype=float) for _, val in PARAMS.values()),
    ]


def test_log_densities_match_scipy(backend):
    _, _, out = graph()
    inputs, values = _inputs()
    for (name, want), got in zip(_oracles().items(), densities_and_gradients(backend)[: len(out)]):
        np.testing.assert_allclose(got.values, want, rtol=1e-9, err_msg=name)
    assert dict(zip(out, [o.dims for o in out.values()]))["mvt"] == (B,)  # nu and mu on batch, broadcast by name


# the gradient of each density's sum with respect to its continuous inputs
GRADIENT_WRT = {
    "mvn_tau": ["x", "mu", "cov"],
    "mvt": ["x", "mu", "cov", "nu"],
    "mvt_tau": ["cov"],
    "multinomial": ["p"],
    "dirichlet_multinomial": ["a"],
    "stick_breaking_weights": ["stick_alpha"],
    "car": ["y", "car_alpha", "tau"],
    "icar": ["y", "sigma"],
    "kronecker_normal": ["z", "cov2"],
    "kronecker_noise": ["z", "cov2", "noise"],
    "matrix_normal": ["z", "cov2"],
    "wishart": [
        "nu",
        "cov",
    ],  # w.r.t. the value: through the transform (the model test), as one entry moved alone leaves the support
    "inverse_wishart": ["nu", "cov"],
    "ordered_multinomial": ["eta", "cut"],
    "normal_mixture": ["x", "p", "a", "sigma"],
    "normal_mixture_tau": ["tau"],
}


def densities_and_gradients(backend):
    """The log densities, then the gradients GRADIENT_WRT names, at the tables' values: one compiled function
    per backend (the gradients' graph holds the densities': compiled apart, they were compiled twice)."""

    def build():
        v, p, out = graph()
        named = {**v, **p}
        inputs, values = _inputs()
        grads = [g for name, wrt in GRADIENT_WRT.items() for g in dg.grad(out[name].sum(), [named[k] for k in wrt])]
        return dg.function(inputs, [*out.values(), *grads], backend=backend)(*values)

    return cached(("densities and gradients", backend), build)


def test_gradients_match_finite_differences(backend):
    v, p, out = graph()
    named = {**v, **p}
    inputs, values = _inputs()
    got = iter(densities_and_gradients(backend)[len(out) :])
    by_name = dict(zip([i.name for i in inputs], values))
    for name, wrt in GRADIENT_WRT.items():
        cost = cached(("cost", name), lambda: dg.function(inputs, out[name].sum(), backend="python"))
        for k in wrt:
            g = np.asarray(next(got))
            at = next(n for n, u in enumerate(inputs) if u is named[k])
            fd = numeric_grad(lambda *vals: float(cost(*vals)), [np.asarray(u, dtype=float) for u in values], at)
            if k in ("cov", "cov2"):  # a symmetric matrix: compare along symmetric directions
                g, fd = g + g.T, fd + fd.T
            np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6, err_msg=f"{name} d/d{k}")
    assert by_name  # the inputs are named as the tables say


def _draws(backend):
    def build():
        s = dg.rng_state("s")
        cov = _c(COV, I, J)
        dists = {
            "mvn_tau": dg.dist.multivariate_normal(_c(MU, B, I), tau=_c(np.linalg.inv(COV), I, J), dims=(I, J)),
            "mvt": dg.dist.mv_student_t(_c(NUS, B), _c(MU, B, I), scale=cov, dims=(I, J)),
            "multinomial": dg.dist.multinomial(_c([7, 30], B), _c(P, K), dim=K),
            "dirichlet_multinomial": dg.dist.dirichlet_multinomial(7, _c(ALPHA, K), dim=K),
            "stick_breaking_weights": dg.dist.stick_breaking_weights(_c([2.5, 0.7], B), dim=K),
            "car": dg.dist.car(0.3, W, 0.6, 2.0, dim=NODE),
            "icar": dg.dist.icar(W, 1.7, dim=NODE),
            "kronecker_noise": dg.dist.kronecker_normal(
                0.2, covs=[_c(COV2, A1, A2), _c(COV, B1, B2)], sigma=0.7, dims=[(A1, A2), (B1, B2)]
            ),
            "wishart": dg.dist.wishart(_c(NUS, B), cov, dims=(I, J)),
            "inverse_wishart": dg.dist.inverse_wishart(9.0, cov, dims=(I, J)),
            "ordered_multinomial": dg.dist.ordered_multinomial(_c(ETA, B), _c(CUTS, CUT), 7, dim=K, cut_dim=CUT),
            "normal_mixture": dg.dist.normal_mixture(_c(P, K), _c(ALPHA, K), 1.7, dim=K),
        }
        state, outs = s, []
        for dist in dists.values():
            state, value = dist.draw(state, extra_dims=(N,))
            outs.append(value)
        return list(dists), dg.function([s], outs, backend=backend)

    names, f = cached(("draws", backend), build)
    return dict(zip(names, f(dg.seed_state(7))))


def _ks(values, cdf):
    return stats.kstest(np.ravel(values), cdf).pvalue


def _cov_close(samples, cov, rtol=0.12):
    err = np.abs(np.cov(samples.T) - cov)
    assert (err <= rtol * np.sqrt(np.outer(np.diag(cov), np.diag(cov)))).all(), err


def test_draws_match_the_distributions(backend):
    d = _draws(backend)
    dims = {k: v.dims for k, v in d.items()}
    assert dims["mvn_tau"] == ("n", "batch", "i") and dims["mvt"] == ("n", "batch", "i")
    assert dims["multinomial"] == ("n", "batch", "k") and dims["car"] == ("n", "node") and dims["icar"] == ("n", "node")
    assert dims["kronecker_noise"] == ("n", "a", "b") and dims["wishart"] == ("n", "batch", "i", "j")
    for b in range(2):
        values = d["mvn_tau"].values[:, b]
        np.testing.assert_allclose(values.mean(0), MU[b], atol=5 * np.sqrt(COV.diagonal().max() / N.size))
        _cov_close(values, COV)
        t = d["mvt"].values[:, b]
        for j in range(3):
            assert _ks(t[:, j], stats.t(NUS[b], MU[b, j], math.sqrt(COV[j, j])).cdf) > 1e-3
    counts = d["multinomial"].values
    assert counts.dtype == np.int64
    np.testing.assert_array_equal(counts.sum(-1), np.broadcast_to([7, 30], (N.size, 2)))
    for j in range(3):  # each count is binomial
        assert (
            stats.chisquare(
                np.bincount(counts[:, 0, j], minlength=8), stats.binom(7, P[j]).pmf(np.arange(8)) * N.size
            ).pvalue
            > 1e-4
        )
    dm = d["dirichlet_multinomial"].values
    np.testing.assert_array_equal(dm.sum(-1), 7)
    margin = stats.betabinom(7, ALPHA[0], ALPHA.sum() - ALPHA[0]).pmf(np.arange(8)) * N.size
    assert stats.chisquare(np.bincount(dm[:, 0], minlength=8), margin).pvalue > 1e-4
    w = d["stick_breaking_weights"].values
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)
    for b, a in enumerate([2.5, 0.7]):
        assert _ks(w[:, b, 0], stats.beta(1, a).cdf) > 1e-3
        assert _ks(w[:, b, 1] / (1 - w[:, b, 0]), stats.beta(1, a).cdf) > 1e-3
    D = np.diag(W.sum(1))
    _cov_close(d["car"].values, np.linalg.inv(2.0 * (D - 0.6 * W)))
    np.testing.assert_allclose(d["car"].values.mean(0), 0.3, atol=0.05)
    Q = (D - W) / 1.7**2 + np.ones((5, 5)) / (0.001 * 5) ** 2
    _cov_close(d["icar"].values, np.linalg.inv(Q))
    k = d["kronecker_noise"].values.reshape(N.size, 6)
    _cov_close(k, np.kron(COV2, COV) + 0.49 * np.eye(6))
    wish = d["wishart"].values
    for b, nu in enumerate(NUS):
        np.testing.assert_allclose(wish[:, b].mean(0), nu * COV, rtol=0.1, atol=0.1 * nu)
        for j in range(3):  # a diagonal entry is sigma_jj chi^2(nu)
            assert _ks(wish[:, b, j, j] / COV[j, j], stats.chi2(nu).cdf) > 1e-3
    om = d["ordered_multinomial"]
    assert om.dims == ("n", "batch", "k") and om.dtype == np.int64
    np.testing.assert_array_equal(om.values.sum(-1), 7)
    for b in range(2):  # each count is binomial
        for j in range(3):
            pmf = stats.binom(7, _ordered_probabilities(ETA[b])[j]).pmf(np.arange(8)) * N.size
            keep = pmf >= 5
            counts = np.bincount(om.values[:, b, j], minlength=8)
            obs, exp = np.append(counts[keep], counts[~keep].sum()), np.append(pmf[keep], pmf[~keep].sum())
            assert stats.chisquare(obs, exp).pvalue > 1e-4
    mix = d["normal_mixture"]
    assert mix.dims == ("n",)
    assert _ks(mix.values, lambda v: (P * stats.norm(ALPHA, 1.7).cdf(np.asarray(v)[:, None])).sum(1)) > 1e-3
    inv = d["inverse_wishart"].values
    for j in range(3):  # a diagonal entry is inverse gamma((nu - p + 1) / 2, psi_jj / 2)
        assert _ks(inv[:, j, j], stats.invgamma((9.0 - 3 + 1) / 2, scale=COV[j, j] / 2).cdf) > 1e-3


def test_positive_definite_transform_round_trips_with_its_jacobian():
    t = dg.transforms.PositiveDefinite((I, J))
    y = dg.labeled("y", dims=t.free_dims((I, J)))
    x = t.backward(y)
    f = dg.function([y], [x, t.forward(x), t.log_jac_det(y)], backend="python")
    y0 = RNG.normal(size=6) * 0.5
    matrix, again, log_jac = f(y0)
    m = matrix.values
    np.testing.assert_allclose(m, m.T, rtol=1e-12)
    assert (np.linalg.eigvalsh(m) > 0).all()
    np.testing.assert_allclose(again.values, y0, rtol=1e-10, atol=1e-12)
    rows, cols = np.tril_indices(3)
    lower = dg.function([y], x, backend="python")
    jac = np.stack(
        [numeric_grad(lambda v, r=r, c=c: float(lower(v).values[r, c]), [y0], 0) for r, c in zip(rows, cols)]
    )
    np.testing.assert_allclose(float(log_jac), np.log(abs(np.linalg.det(jac))), rtol=1e-6)


def test_icar_spatial_model_matches_numpy():
    """A BYM-style model: ICAR spatial effects with a random scale, Poisson counts with a log link."""
    counts = np.array([3, 0, 5, 2, 1])
    m = dg.Model()
    sigma = m.halfnormal("sigma", 1.0)
    phi = m.icar("phi", W, sigma, dim=NODE)
    m.observe("y", dg.dist.poisson(dg.exp(1.0 + phi)), data=counts, dims=(NODE,))
    assert m.unconstrained_names == ["sigma_log__", "phi"]
    logp = m.logp_fn(backend="python")
    for _ in range(3):
        theta = RNG.normal(size=6) * 0.3
        s, ph = math.exp(theta[0]), theta[1:]
        want = (
            stats.halfnorm().logpdf(s)
            + theta[0]
            + _icar_oracle(ph, s)
            + stats.poisson(np.exp(1.0 + ph)).logpmf(counts).sum()
        )
        value, grad = logp(theta)
        np.testing.assert_allclose(value, want, rtol=1e-9)
        np.testing.assert_allclose(grad, numeric_grad(lambda th: logp(th)[0], [theta], 0), rtol=1e-5, atol=1e-5)
    assert m.prior_predictive(30, seed=3).prior["phi"].dims == ("chain", "draw", "node")


def test_wishart_and_multinomial_models():
    """m.wishart samples on the positive-definite transform; m.observe of multinomial counts."""
    m = dg.Model()
    m.rv("S", dg.dist.wishart(5.0, _c(COV, I, J), dims=(I, J)))
    p = m.dirichlet("p", _c(ALPHA, K), dim=K)
    m.observe("c", dg.dist.multinomial(7, p, dim=K), data=np.array([2, 1, 4]), dims=(K,))
    assert m.unconstrained_names == ["S_positive_definite__", "p_simplex__"]
    theta = RNG.normal(size=8) * 0.3
    logp = m.logp_fn(backend="python")
    value, grad = logp(theta)
    np.testing.assert_allclose(grad, numeric_grad(lambda th: logp(th)[0], [theta], 0), rtol=1e-5, atol=1e-6)
    t = dg.transforms.PositiveDefinite((I, J))
    y = dg.labeled("y", dims=t.free_dims((I, J)))
    matrix, jac = dg.function([y], [t.backward(y), t.log_jac_det(y)], backend="python")(theta[:6])
    simplex = np.exp(np.append(theta[6:], 0.0)) / np.exp(np.append(theta[6:], 0.0)).sum()
    want = stats.wishart(5.0, COV).logpdf(matrix.values) + float(jac)
    want += (
        stats.dirichlet(ALPHA).logpdf(simplex) + np.log(simplex).sum() + stats.multinomial(7, simplex).logpmf([2, 1, 4])
    )
    np.testing.assert_allclose(value, want, rtol=1e-9)


def test_bad_input_is_a_clear_error():
    cov = _c(COV, I, J)
    with pytest.raises(TypeError, match=r"multivariate_normal: give exactly one of cov=, tau=, chol="):
        dg.dist.multivariate_normal(0.0, cov=cov, tau=cov, dims=(I, J))
    with pytest.raises(TypeError, match=r"mv_student_t: mu must be on the row dim 'i'"):
        dg.dist.mv_student_t(3.0, _c([1.0, 2.0], B), scale=cov, dims=(I, J))
    with pytest.raises(TypeError, match=r"multinomial: give the categories' dim of 'p' as dim="):
        dg.dist.multinomial(3, _c(P, K))
    with pytest.raises(dg.DimError, match=r"multinomial: n must not be on the categories' dim 'k'"):
        dg.dist.multinomial(_c([1, 2, 3], K), _c(P, K), dim=K)
    with pytest.raises(dg.DimError, match=r"multinomial: the value must be on the categories' dim 'k'"):
        dg.dist.multinomial(3, _c(P, K), dim=K).logp(3)
    cuts = _c(CUTS, CUT)
    with pytest.raises(
        TypeError, match=r"ordered_multinomial: give the cutpoints' dim as cut_dim= \(one of \(cut: 2\)\)"
    ):
        dg.dist.ordered_multinomial(0.0, cuts, 3, dim=K)
    with pytest.raises(TypeError, match=r"ordered_multinomial: give the categories' dim as dim= \(a Dim of size 3"):
        dg.dist.ordered_multinomial(0.0, cuts, 3, cut_dim=CUT)
    with pytest.raises(dg.DimError, match=r"ordered_multinomial: 2 cutpoints make 3 categories, so dim= must be"):
        dg.dist.ordered_multinomial(0.0, cuts, 3, dim=A1, cut_dim=CUT)
    with pytest.raises(dg.DimError, match=r"ordered_multinomial: eta, cutpoints and n must not be on the categories'"):
        dg.dist.ordered_multinomial(_c(ALPHA, K), cuts, 3, dim=K, cut_dim=CUT)
    with pytest.raises(TypeError, match=r"normal_mixture: give sigma or tau, not both"):
        dg.dist.normal_mixture(_c(P, K), _c(ALPHA, K), 1.0, tau=2.0, dim=K)
    with pytest.raises(dg.DimError, match=r"mixture: the components' parameters must be on dim 'k'"):
        dg.dist.normal_mixture(_c(P, K), 0.0, 1.0, dim=K)
    with pytest.raises(TypeError, match=r"stick_breaking_weights: give the weights' dim as dim="):
        dg.dist.stick_breaking_weights(1.0)
    with pytest.raises(ValueError, match=r"icar: W must be symmetric"):
        dg.dist.icar(np.triu(W), dim=NODE)
    with pytest.raises(ValueError, match=r"icar: W must hold only 0s and 1s"):
        dg.dist.icar(2 * W, dim=NODE)
    with pytest.raises(dg.DimError, match=r"car: W is 5 x 5 but the nodes' dim 'k' has size 3"):
        dg.dist.car(0.0, W, 0.5, 1.0, dim=K)
    with pytest.raises(TypeError, match=r"car: W must be data"):
        dg.dist.car(0.0, dg.labeled("w", dims=(NODE, dg.Dim("n2", size=5))), 0.5, 1.0, dim=NODE)
    with pytest.raises(ValueError, match=r"car: every node needs a neighbor; node\(s\) \[2\]"):
        dg.dist.car(0.0, np.array([[0, 1, 0], [1, 0, 0], [0, 0, 0]]), 0.5, 1.0, dim=K)
    islands = np.zeros((3, 3))
    islands[0, 1] = islands[1, 0] = 1
    with pytest.raises(ValueError, match=r"icar: the graph has 2 connected components"):
        dg.dist.icar(islands, dim=K).draw(dg.rng_state("s"))
    with pytest.raises(TypeError, match=r"kroneckernormal: give exactly one of covs= and chols="):
        dg.dist.kronecker_normal(0.0, dims=[(A1, A2)])
    with pytest.raises(TypeError, match=r"kroneckernormal: give dims=\[\(row, col\), ...\], one pair per matrix"):
        dg.dist.kronecker_normal(0.0, covs=[_c(COV2, A1, A2)], dims=[])
    with pytest.raises(TypeError, match=r"matrixnormal: give exactly one of colcov= and colchol="):
        dg.dist.matrix_normal(0.0, rowcov=_c(COV2, A1, A2), rowdims=(A1, A2), coldims=(B1, B2))
    with pytest.raises(dg.DimError, match=r"wishart: nu must not be on the matrix dims"):
        dg.dist.wishart(_c([4.0, 5.0, 6.0], I), cov, dims=(I, J))
    with pytest.raises(dg.DimError, match=r"wishart: the value must be on the matrix dims"):
        dg.dist.wishart(4.0, cov, dims=(I, J)).logp(_c(np.ones(3), I))


def test_outside_the_support_and_invalid_parameters():
    cov = _c(COV, I, J)
    outs = [
        dg.dist.multinomial(7, _c(P, K), dim=K).logp(dg.constant(np.array([2, 1, 3]), dims=(K,))),  # sums to 6
        dg.dist.dirichlet_multinomial(3, _c(ALPHA, K), dim=K).logp(dg.constant(np.array([-1, 2, 2]), dims=(K,))),
        dg.dist.stick_breaking_weights(1.0, dim=K).logp(_c([0.5, 0.6, -0.1], K)),
        dg.dist.wishart(4.0, cov, dims=(I, J)).logp(_c(-np.eye(3), I, J)),
        dg.dist.inverse_wishart(4.0, cov, dims=(I, J)).logp(
            _c([[1.0, 2.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], I, J)
        ),
        dg.dist.ordered_multinomial(0.0, _c(CUTS, CUT), 3, dim=K, cut_dim=CUT).logp(  # sums to 4
            dg.constant(np.array([1, 1, 2]), dims=(K,))
        ),
    ]
    invalid = [
        dg.dist.mv_student_t(-1.0, 0.0, scale=cov, dims=(I, J)).logp(_c(np.zeros(3), I)),
        dg.dist.multinomial(7, _c(-P, K), dim=K).logp(dg.constant(np.array([2, 1, 4]), dims=(K,))),
        dg.dist.car(0.0, W, 1.5, 1.0, dim=NODE).logp(_c(np.zeros(5), NODE)),
        dg.dist.icar(W, -1.0, dim=NODE).logp(_c(np.zeros(5), NODE)),
        dg.dist.wishart(1.0, cov, dims=(I, J)).logp(_c(np.eye(3), I, J)),  # nu <= p - 1
        dg.dist.ordered_multinomial(0.0, _c([0.5, -0.5], CUT), 3, dim=K, cut_dim=CUT).logp(  # decreasing cutpoints
            dg.constant(np.array([1, 1, 1]), dims=(K,))
        ),
    ]
    got = dg.function([], outs + invalid, backend="python")()
    for value in got[: len(outs)]:
        assert float(value) == -np.inf
    for value in got[len(outs) :]:
        assert np.isnan(float(value))
