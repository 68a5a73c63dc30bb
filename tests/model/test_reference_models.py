"""Reference models written with `dg.Model`: the unconstrained log density and its gradient equal a hand-written
NumPy version (transforms and Jacobians by hand) to 1e-10, on every backend.

The NumPy versions use only functions analytic in their arguments, so their
gradients come from the complex step (Im f(theta + i h e_k) / h: exact to
rounding, no finite-difference error), an oracle independent of dimgraph.
"""

import numpy as np
import pytest
from scipy import special

import dimgraph as dg

LOG_2PI = np.log(2 * np.pi)


def normal_lpdf(x, mu, sigma):
    return -0.5 * ((x - mu) / sigma) ** 2 - np.log(sigma) - 0.5 * LOG_2PI


def halfnormal_lpdf(x, sigma):
    return -0.5 * (x / sigma) ** 2 - np.log(sigma) + 0.5 * np.log(2 / np.pi)


def complex_step_grad(f, theta, h=1e-30):
    out = np.empty(theta.size)
    for k in range(theta.size):
        step = theta.astype(complex)
        step[k] += 1j * h
        out[k] = f(step).imag / h
    return out


# --- radon: varying intercept and slope by county, non-centered
COUNTIES = ["AITKIN", "ANOKA", "BECKER", "BELTRAMI", "BENTON", "BIG STONE", "BLUE EARTH"]
rng = np.random.default_rng(27)
N_HOUSE = 60
COUNTY_IDX = rng.integers(0, len(COUNTIES), N_HOUSE)
FLOOR = rng.integers(0, 2, N_HOUSE).astype(float)
LOG_RADON = 1.5 - 0.6 * FLOOR + rng.normal(0, 0.3, len(COUNTIES))[COUNTY_IDX] + rng.normal(0, 0.7, N_HOUSE)


def radon_model(counties=COUNTIES, county_idx=COUNTY_IDX, floor=FLOOR, log_radon=LOG_RADON):
    """The radon hierarchy on these data (`benchmarks/models.py` runs it at a sampler's size)."""
    county, house = dg.Dim("county", coords=counties), dg.Dim("house")
    m = dg.Model()
    mu_a, sigma_a = m.normal("mu_a", 0.0, 5.0), m.halfnormal("sigma_a", 1.0)
    mu_b, sigma_b = m.normal("mu_b", 0.0, 5.0), m.halfnormal("sigma_b", 1.0)
    z_a, z_b = m.normal("z_a", 0.0, 1.0, dims=(county,)), m.normal("z_b", 0.0, 1.0, dims=(county,))
    a = m.deterministic("a", mu_a + sigma_a * z_a)
    b = m.deterministic("b", mu_b + sigma_b * z_b)
    idx = m.data("county_idx", county_idx, dims=(house,))
    on_floor = m.data("floor", floor, dims=(house,))
    sigma_y = m.exponential("sigma_y", 1.0)
    m.observe("log_radon", dg.dist.normal(a.isel(county=idx) + b.isel(county=idx) * on_floor, sigma_y), data=log_radon)
    return m


def radon_numpy(theta):
    k = len(COUNTIES)
    mu_a, log_sa, mu_b, log_sb = theta[0], theta[1], theta[2], theta[3]
    z_a, z_b, log_sy = theta[4 : 4 + k], theta[4 + k : 4 + 2 * k], theta[4 + 2 * k]
    sa, sb, sy = np.exp(log_sa), np.exp(log_sb), np.exp(log_sy)
    a, b = mu_a + sa * z_a, mu_b + sb * z_b
    mean = a[COUNTY_IDX] + b[COUNTY_IDX] * FLOOR
    return (
        normal_lpdf(mu_a, 0, 5)
        + halfnormal_lpdf(sa, 1)
        + log_sa
        + normal_lpdf(mu_b, 0, 5)
        + halfnormal_lpdf(sb, 1)
        + log_sb
        + normal_lpdf(z_a, 0, 1).sum()
        + normal_lpdf(z_b, 0, 1).sum()
        + (np.log(1.0) - sy)
        + log_sy  # exponential(1) and its Jacobian
        + normal_lpdf(LOG_RADON, mean, sy).sum()
    )


# --- eight schools, non-centered
SCHOOLS = list("ABCDEFGH")
Y_SCHOOLS = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
SIGMA_SCHOOLS = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])


def eight_schools_model():
    school = dg.Dim("school", coords=SCHOOLS)
    m = dg.Model()
    mu = m.normal("mu", 0.0, 5.0)
    tau = m.halfnormal("tau", 5.0)
    theta_tilde = m.normal("theta_tilde", 0.0, 1.0, dims=(school,))
    theta = m.deterministic("theta", mu + tau * theta_tilde)
    sigma = m.data("sigma", SIGMA_SCHOOLS, dims=(school,))
    m.observe("y", dg.dist.normal(theta, sigma), data=Y_SCHOOLS)
    return m


def eight_schools_numpy(theta):
    mu, log_tau, tt = theta[0], theta[1], theta[2:]
    tau = np.exp(log_tau)
    return (
        normal_lpdf(mu, 0, 5)
        + halfnormal_lpdf(tau, 5)
        + log_tau
        + normal_lpdf(tt, 0, 1).sum()
        + normal_lpdf(Y_SCHOOLS, mu + tau * tt, SIGMA_SCHOOLS).sum()
    )


# --- a latent AR(1) built by dg.scan, observed with noise
T_STEPS = 12
Y_AR = np.cumsum(rng.normal(0, 0.5, T_STEPS))


def ar1_model():
    time = dg.Dim("time", size=T_STEPS)
    m = dg.Model()
    phi = m.uniform("phi", -1.0, 1.0)  # the interval transform
    sigma = m.halfnormal("sigma", 1.0)
    z = m.normal("z", 0.0, 1.0, dims=(time,))
    _, x = dg.scan(lambda prev, z_t: phi * prev + sigma * z_t, init=dg.constant(0.0), sequences=z, dim=time)
    m.deterministic("x", x)
    m.observe("y", dg.dist.normal(x, 0.5), data=Y_AR, dims=(time,))
    return m


def ar1_numpy(theta):
    y_phi, log_sigma, z = theta[0], theta[1], theta[2:]
    s = 1 / (1 + np.exp(-y_phi))
    phi, sigma = -1 + 2 * s, np.exp(log_sigma)
    x, prev = [], 0.0
    for z_t in z:
        prev = phi * prev + sigma * z_t
        x.append(prev)
    x = np.array(x)
    return (
        -np.log(2.0)
        + np.log(2.0)
        + np.log(s)
        + np.log(1 - s)  # uniform(-1, 1) and its interval Jacobian
        + halfnormal_lpdf(sigma, 1)
        + log_sigma
        + normal_lpdf(z, 0, 1).sum()
        + normal_lpdf(Y_AR, x, 0.5).sum()
    )


# --- correlated varying effects: an LKJ-Cholesky covariance over three effects, 30 groups, 600 observations
EFFECTS = ["intercept", "x1", "x2"]
N_GROUP, N_OBS, ETA = 30, 600, 2.0
GROUP_IDX = rng.integers(0, N_GROUP, N_OBS)
X_EFFECTS = np.column_stack([np.ones(N_OBS), rng.normal(size=(N_OBS, 2))])
Y_EFFECTS = (X_EFFECTS * (np.array([1.0, -0.5, 0.3]) + rng.normal(0, 0.4, (N_GROUP, 3))[GROUP_IDX])).sum(
    1
) + rng.normal(0, 0.5, N_OBS)


def lkj_effects_model():
    effect, effect_ = dg.Dim("effect", coords=EFFECTS), dg.Dim("effect_", coords=EFFECTS)
    group, obs = dg.Dim("group", size=N_GROUP), dg.Dim("obs")
    m = dg.Model()
    chol = m.rv("chol", dg.dist.lkj_cholesky_cov(ETA, dg.dist.exponential(1.0), dims=(effect, effect_)))
    mu = m.normal("mu", 0.0, 5.0, dims=(effect,))
    z = m.normal("z", 0.0, 1.0, dims=(group, effect_))
    beta = m.deterministic("beta", mu + (chol * z).sum(effect_))  # on (effect, group): mu + L z per group
    idx = m.data("group_idx", GROUP_IDX, dims=(obs,))
    x = m.data("x", X_EFFECTS, dims=(obs, effect))
    sigma = m.halfnormal("sigma", 1.0)
    m.observe("y", dg.dist.normal((beta.isel(group=idx) * x).sum(effect), sigma), data=Y_EFFECTS)
    return m


def lkj_log_c(eta, n):
    """log of the LKJ normalizer (Lewandowski, Kurowicka and Joe 2009, eq. 16): the integral of det(C)^(eta - 1)."""
    k = np.arange(1, n)
    b = eta + (n - k - 1) / 2
    return np.sum((2 * eta - 2 + n - k) * (n - k) * np.log(2) + (n - k) * special.betaln(b, b))


def lkj_effects_numpy(theta):
    n = len(EFFECTS)
    free, mu, z, log_sigma = theta[:6], theta[6:9], theta[9 : 9 + 3 * N_GROUP].reshape(N_GROUP, n), theta[-1]
    rows, cols = np.tril_indices(n)  # the free entries: the lower triangle row by row, log on the diagonal
    L = np.zeros((n, n), dtype=theta.dtype)
    L[rows, cols] = np.where(rows == cols, np.exp(free), free)
    s = np.sqrt((L * L).sum(1))  # the standard deviations: row norms
    u = np.diag(L) / s  # the correlation factor's diagonal
    # L = diag(s) Lc row by row, (s_i, Lc_i,<i) -> L_i has Jacobian s_i^i / u_i: p(L) = p(s) p(Lc) u_i / s_i^i
    log_p_chol = (
        (2 * ETA - 2) * np.log(u).sum()
        - lkj_log_c(ETA, n)  # LKJ on C = Lc Lc^T: det(C) = prod u^2
        + ((n - 1 - np.arange(n)) * np.log(u)).sum()  # Lc -> C
        + (-s).sum()  # exponential(1) standard deviations
        + (np.log(u) - np.arange(n) * np.log(s)).sum()  # (s, Lc) -> L
        + free[rows == cols].sum()  # the log diagonal's Jacobian
    )
    sigma = np.exp(log_sigma)
    beta = mu + z @ L.T  # (group, effect)
    return (
        log_p_chol
        + normal_lpdf(mu, 0, 5).sum()
        + normal_lpdf(z, 0, 1).sum()
        + halfnormal_lpdf(sigma, 1)
        + log_sigma
        + normal_lpdf(Y_EFFECTS, (beta[GROUP_IDX] * X_EFFECTS).sum(1), sigma).sum()
    )


# --- a two-component normal mixture: ordered means, Dirichlet weights, a scale per component
N_MIX = 200
Y_MIX = np.where(rng.uniform(size=N_MIX) < 0.3, rng.normal(-2.0, 0.7, N_MIX), rng.normal(1.5, 1.0, N_MIX))


def mixture_model():
    comp, obs = dg.Dim("comp", coords=["low", "high"]), dg.Dim("obs")
    m = dg.Model()
    w = m.dirichlet("w", dg.constant(np.ones(2), dims=(comp,)), dim=comp)
    mu = m.normal("mu", 0.0, 3.0, dims=(comp,), transform="ordered")
    sigma = m.halfnormal("sigma", 2.0, dims=(comp,))
    m.observe("y", dg.dist.mixture(w, dg.dist.normal(mu, sigma), dim=comp), data=Y_MIX, dims=(obs,))
    return m


def mixture_numpy(theta):
    y_w, y_mu, log_sigma = theta[0:1], theta[1:3], theta[3:5]
    padded = np.concatenate([y_w, np.zeros(1)])  # additive log-ratios: w = softmax([y, 0])
    log_w = padded - np.log(np.exp(padded).sum())
    mu = np.array([y_mu[0], y_mu[0] + np.exp(y_mu[1])])  # ordered: mu_1 = mu_0 + exp(y_1)
    sigma = np.exp(log_sigma)
    terms = log_w + normal_lpdf(Y_MIX[:, None], mu, sigma)  # (obs, comp)
    shift = terms.real.max(1, keepdims=True)  # a real constant: leaves the complex step's derivative alone
    loglik = (np.log(np.exp(terms - shift).sum(1)) + shift[:, 0]).sum()
    return (
        special.gammaln(2.0)
        + log_w.sum()  # dirichlet(1, 1) and the simplex Jacobian (sum of log w)
        + normal_lpdf(mu, 0, 3).sum()
        + y_mu[1]  # the ordered Jacobian
        + halfnormal_lpdf(sigma, 2).sum()
        + log_sigma.sum()
        + loglik
    )


MODELS = {
    "radon": (
        radon_model,
        radon_numpy,
        ["mu_a", "sigma_a_log__", "mu_b", "sigma_b_log__", "z_a", "z_b", "sigma_y_log__"],
    ),
    "eight_schools": (eight_schools_model, eight_schools_numpy, ["mu", "tau_log__", "theta_tilde"]),
    "ar1": (ar1_model, ar1_numpy, ["phi_interval__", "sigma_log__", "z"]),
    "lkj_effects": (lkj_effects_model, lkj_effects_numpy, ["chol_cholesky_cov__", "mu", "z", "sigma_log__"]),
    "mixture": (mixture_model, mixture_numpy, ["w_simplex__", "mu_ordered__", "sigma_log__"]),
}


@pytest.fixture(scope="module")
def models():
    return {name: build() for name, (build, _, _) in MODELS.items()}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_logp_and_gradient_equal_the_hand_written_numpy_version(models, backend, name):
    _, numpy_logp, names = MODELS[name]
    fn = models[name].logp_fn(backend)
    assert fn.names == names
    points = np.random.default_rng(3).uniform(-1.5, 1.5, size=(3, fn.size))
    for theta in points:
        value, grad = fn(theta)
        np.testing.assert_allclose(value, numpy_logp(theta), rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(grad, complex_step_grad(numpy_logp, theta), rtol=1e-10, atol=1e-10)


def test_swapped_data_changes_the_logp_without_a_recompile(models):
    m = models["eight_schools"]
    fn = m.logp_fn("python")
    theta = np.linspace(-1, 1, fn.size)
    before = fn(theta)[0]
    m.set_data(y=Y_SCHOOLS + 1.0)
    try:
        assert m.logp_fn("python") is fn
        shifted = fn(theta)[0]
    finally:
        m.set_data(y=Y_SCHOOLS)
    tau, mu = np.exp(theta[1]), theta[0]
    expected = shifted - before
    ours = (
        normal_lpdf(Y_SCHOOLS + 1, mu + tau * theta[2:], SIGMA_SCHOOLS).sum()
        - normal_lpdf(Y_SCHOOLS, mu + tau * theta[2:], SIGMA_SCHOOLS).sum()
    )
    np.testing.assert_allclose(expected, ours, rtol=1e-10)


def test_prior_draws_run_through_the_scan(models):
    """Prior draws of the AR(1): the deterministic path is the recursion of the drawn phi, sigma and z, per draw."""
    prior = models["ar1"].prior_predictive(4, seed=1).prior
    phi, sigma, z, x = (prior[n].values[0] for n in ("phi", "sigma", "z", "x"))
    assert prior["x"].dims == ("chain", "draw", "time") and ((phi > -1) & (phi < 1)).all()
    prev, path = np.zeros(4), []
    for t in range(T_STEPS):
        prev = phi * prev + sigma * z[:, t]
        path.append(prev)
    np.testing.assert_allclose(x, np.array(path).T, rtol=1e-12)


def test_posterior_predictive_of_the_radon_model_keeps_the_county_coords(models):
    m = models["radon"]
    prior = m.prior_predictive(6, seed=2)
    pp = m.posterior_predictive(prior.prior, seed=3).posterior_predictive["log_radon"]
    assert pp.dims == ("chain", "draw", "house") and pp.shape == (1, 6, N_HOUSE)
    assert list(prior.prior["a"]["county"].values) == COUNTIES
    a, b, sy = (prior.prior[n].values[0] for n in ("a", "b", "sigma_y"))
    z = (pp.values[0] - (a[:, COUNTY_IDX] + b[:, COUNTY_IDX] * FLOOR)) / sy[:, None]
    assert abs(z.mean()) < 0.2 and abs(z.std() - 1) < 0.15  # 360 standardized residuals of N(0, 1)


def test_sampled_posterior_agrees_with_the_hand_written_version():
    """Eight schools sampled by nutpie twice: on the model's compiled logp and on the hand-written NumPy one
    (complex-step gradient); the posterior means of the unconstrained parameters agree within Monte Carlo error."""
    nutpie = pytest.importorskip("nutpie")
    az = pytest.importorskip("arviz")
    from nutpie.compiled_pyfunc import from_pyfunc

    m = eight_schools_model()
    ours = m.sample(draws=1000, tune=1000, chains=2, seed=11)
    theirs_model = from_pyfunc(
        10,
        lambda: lambda x, **_: (float(eight_schools_numpy(x)), complex_step_grad(eight_schools_numpy, x)),
        lambda *_: lambda x, **_: {"theta": np.array(x)},
        [np.dtype("float64")],
        [(10,)],
        ["theta"],
        make_initial_point_fn=lambda s: np.random.default_rng(int(s)).uniform(-1, 1, 10),
    )
    theirs = nutpie.sample(theirs_model, draws=1000, tune=1000, chains=2, seed=12, progress_bar=False)
    flat = np.asarray(theirs.posterior["theta"])
    reference = {"mu": flat[..., 0], "tau": np.exp(flat[..., 1]), "theta_tilde": flat[..., 2:]}

    def mean_and_mcse(draws):
        draws = np.asarray(draws)
        ess = az.ess(az.convert_to_dataset({"x": draws}))["x"].values
        return draws.mean(axis=(0, 1)), np.sqrt(draws.var(axis=(0, 1)) / ess)

    for name, ref in reference.items():
        (a, se_a), (b, se_b) = mean_and_mcse(ours.posterior[name]), mean_and_mcse(ref)
        assert (np.abs(a - b) < 5 * np.hypot(se_a, se_b)).all(), (name, a, b, se_a, se_b)
    assert int(ours.sample_stats["diverging"].sum()) <= 10


def test_mixture_predictive_draws_over_an_observed_dim_sized_by_the_data(models, backend):
    """obs has no size: the prior and posterior predictive take it from the observed data (new data, new length).
    Each draw's values through its own mixture CDF are uniform (a pooled KS test)."""
    from scipy import stats

    m = models["mixture"]
    prior = m.prior_predictive(100, seed=4, backend=backend).prior
    w, mu, sigma = (prior[n].values[0] for n in ("w", "mu", "sigma"))
    np.testing.assert_allclose(w.sum(-1), 1.0, rtol=1e-12)
    assert (
        sigma > 0
    ).all()  # mu is drawn from its normal prior, unordered (as PyMC's prior draws: a transform is for sampling)
    m.set_data(y=Y_MIX[:50])
    try:
        y = m.posterior_predictive(prior, seed=5, backend=backend).posterior_predictive["y"]
    finally:
        m.set_data(y=Y_MIX)
    assert y.dims == ("chain", "draw", "obs") and y.shape == (1, 100, 50)
    cdf = (w[:, None, :] * stats.norm.cdf(y.values[0][..., None], mu[:, None, :], sigma[:, None, :])).sum(-1)
    assert stats.kstest(cdf.ravel(), "uniform").pvalue > 1e-3


def test_lkj_effects_prior_deterministic_is_mu_plus_the_factor_times_z(models):
    prior = models["lkj_effects"].prior_predictive(20, seed=6).prior
    chol, mu, z, beta = (prior[n].values[0] for n in ("chol", "mu", "z", "beta"))
    assert (
        prior["beta"].dims == ("chain", "draw", "effect", "group") and list(prior["chol"]["effect"].values) == EFFECTS
    )
    np.testing.assert_allclose(np.triu(chol, 1), 0.0)
    assert (np.diagonal(chol, axis1=1, axis2=2) > 0).all()
    np.testing.assert_allclose(beta, mu[:, :, None] + np.einsum("def,dgf->deg", chol, z), rtol=1e-12, atol=1e-12)
