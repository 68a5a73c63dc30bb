"""One model of the newer distributions and factories, every sample-free path on every backend.

zerosum_normal, lkj_corr, a packed lkj_cholesky_cov, halfcauchy, halfstudent_t,
truncated and censored (latent and observed) in one `dg.Model`: the flat log
density and its gradient (finite differences, the python backend), `map`
(a stationary point inside every support), prior draws (each in its support,
the censored ones with mass on the bounds), the posterior predictive on a fake
posterior (its mean against scipy's truncated-normal mean, the censored
fraction against the normal tail) and the pointwise log-likelihood against
`scipy.stats`. One model per backend, shared by the tests of this module.
"""

import functools
import pickle

import numpy as np
import pytest
from scipy import stats

import dimgraph as dg

G = dg.Dim("g", coords=list("abcd"))
I, J = dg.Dim("i", size=3), dg.Dim("j", size=3)
K, L = dg.Dim("k", coords=["x", "y"]), dg.Dim("l", coords=["x", "y"])
OBS = dg.Dim("obs")
rng = np.random.default_rng(27)
N = 60
GI = rng.integers(0, 4, N)
Y = np.maximum(np.array([0.8, -0.4, 0.1, -0.5])[GI] + 0.3 + rng.normal(0, 1.2, N), -2.9)  # truncated below at -3
YC = np.minimum(rng.normal(0.2, 0.8, N), 1.0)  # censored above at 1


def build():
    m = dg.Model()
    tau = m.halfcauchy("tau", 1.0)
    s = m.halfstudent_t("s", 3.0, 1.0)
    eff = m.rv("eff", dg.dist.zerosum_normal(tau, dims=(G,)))
    corr = m.rv("corr", dg.dist.lkj_corr(2.0, dims=(I, J)))
    cov = dg.dist.lkj_cholesky_cov(2.0, dg.dist.gamma(3.0, 2.0), dims=(K, L), packed=True)
    chol = m.rv("chol", cov)
    sd = m.deterministic("sd", cov.stds(chol))
    lat = m.rv("lat", dg.dist.truncated(dg.dist.normal(0.0, 1.0), lower=-1.0, upper=2.0))
    cen = m.rv("cen", dg.dist.censored(dg.dist.normal(0.0, 1.0), lower=-1.0, upper=2.0))
    gi = m.data("gi", GI, dims=(OBS,))
    m.observe("y", dg.dist.truncated(dg.dist.normal(eff.isel(g=gi) + lat, s), lower=-3.0), data=Y)
    m.observe(
        "yc", dg.dist.censored(dg.dist.normal(cen + corr.isel(i=0, j=1), sd.isel(k=1)), upper=1.0), data=YC, dims=(OBS,)
    )
    return m


NAMES = [
    "tau_log__",
    "s_log__",
    "eff_zerosum__",
    "corr_corr__",
    "chol_cholesky_cov__",
    "lat_interval__",
    "cen_interval__",
]


@pytest.fixture(scope="module")
def models():
    return {}


@pytest.fixture
def model(models, backend):
    if backend not in models:
        models[backend] = build()
    return models[backend]


def observed_means(post):
    """The observed variables' parameters at each draw of `post` (NumPy, on (chain, draw, obs))."""
    eff, lat, s = (post[n].values for n in ("eff", "lat", "s"))
    chol = post["chol"].values  # packed (0, 0), (1, 0), (1, 1)
    mu_y = eff[..., GI] + lat[..., None]
    mu_c = (post["cen"].values + post["corr"].values[..., 0, 1])[..., None]
    sd_c = np.sqrt(chol[..., 1] ** 2 + chol[..., 2] ** 2)[..., None]
    return mu_y, s[..., None], mu_c, sd_c


def test_logp_and_gradient_vs_the_python_backend_and_finite_differences(models, model, backend):
    fn = model.logp_fn(backend)
    assert fn.names == NAMES and fn.size == 2 + 3 + 3 + 3 + 2
    reference = (models.get("python") or models.setdefault("python", build())).logp_fn("python")
    for theta in np.random.default_rng(1).uniform(-1, 1, size=(3, fn.size)):
        value, grad = fn(theta)
        want, want_grad = reference(theta)
        np.testing.assert_allclose(value, want, rtol=1e-10)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-9, atol=1e-9)
        h = 1e-6
        fd = [(fn(theta + h * e)[0] - fn(theta - h * e)[0]) / (2 * h) for e in np.eye(fn.size)]
        np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-5)


def test_map_is_a_stationary_point_inside_every_support(model, backend):
    fit = model.map(backend=backend)
    assert float(fit["tau"]) > 0 and float(fit["s"]) > 0
    np.testing.assert_allclose(float(fit["eff"].sum()), 0.0, atol=1e-12)
    corr = fit["corr"].values
    np.testing.assert_allclose(corr, corr.T, atol=1e-12)
    np.testing.assert_allclose(np.diag(corr), 1.0, atol=1e-12)
    assert np.linalg.eigvalsh(corr).min() > 0
    assert fit["chol"].sel(k_l=["x,x", "y,y"]).values.min() > 0
    assert -1 < float(fit["lat"]) < 2 and -1 < float(fit["cen"]) < 2
    np.testing.assert_allclose(
        fit["sd"].values,
        np.sqrt([fit["chol"].values[0] ** 2, fit["chol"].values[1] ** 2 + fit["chol"].values[2] ** 2]).ravel(),
    )
    no_jacobian = model.logp_fn(backend, jacobian=False)
    theta = no_jacobian.ravel({n: v for n, v in zip(NAMES, _unconstrained(model, fit))})
    assert np.abs(no_jacobian(theta)[1]).max() < 1e-3


def _unconstrained(model, fit):
    return [
        v.transform.forward(dg.constant(fit[v.name].values, dims=v.dims)).eval(backend="python").values
        if v.transform
        else fit[v.name].values
        for v in model.sampled
    ]


def test_prior_draws_lie_in_every_support(model, backend):
    prior = model.prior_predictive(300, seed=5, backend=backend)
    p, pp = prior.prior, prior.prior_predictive
    assert (p["tau"] > 0).all() and (p["s"] > 0).all()
    np.testing.assert_allclose(p["eff"].sum("g"), 0.0, atol=1e-12)
    corr = p["corr"].values
    np.testing.assert_allclose(corr, np.swapaxes(corr, -1, -2), atol=1e-12)
    np.testing.assert_allclose(np.diagonal(corr, axis1=-2, axis2=-1), 1.0, atol=1e-12)
    assert np.linalg.eigvalsh(corr).min() > 0
    assert p["chol"].dims == ("chain", "draw", "k_l") and list(p["chol"]["k_l"].values) == ["x,x", "y,x", "y,y"]
    assert (p["chol"].sel(k_l=["x,x", "y,y"]) > 0).all()
    assert ((p["lat"] > -1) & (p["lat"] < 2)).all()
    cen = p["cen"].values
    assert ((cen >= -1) & (cen <= 2)).all() and (cen == -1).any() and (cen == 2).any()  # masses 0.16 and 0.02
    assert (pp["y"] >= -3).all() and (pp["yc"] <= 1).all() and (pp["yc"] == 1).any()


def test_posterior_predictive_and_log_likelihood_on_a_fake_posterior_vs_scipy(model, backend):
    posterior = model.prior_predictive(200, seed=8, backend=backend).prior
    mu_y, s_y, mu_c, sd_c = observed_means(posterior)
    pp = model.posterior_predictive(posterior, seed=9, backend=backend).posterior_predictive
    y, yc = pp["y"].values, pp["yc"].values
    assert pp["y"].dims == ("chain", "draw", "obs") and y.shape == (1, 200, N)
    a = (-3 - mu_y) / s_y
    with np.errstate(invalid="ignore"):  # scipy's skewness, not asked for, warns far out in the tail
        mean, var = stats.truncnorm.stats(a, np.inf, loc=mu_y, scale=s_y, moments="mv")
    assert (y >= -3).all() and abs((y - mean).sum() / np.sqrt(var.sum())) < 4
    tail = stats.norm.sf(1.0, mu_c, sd_c) * np.ones_like(yc)
    assert (yc <= 1).all() and abs(((yc == 1) - tail).sum() / np.sqrt((tail * (1 - tail)).sum())) < 4

    loglik = model.log_likelihood(posterior, backend=backend)
    np.testing.assert_allclose(loglik["y"].values, stats.truncnorm.logpdf(Y, a, np.inf, loc=mu_y, scale=s_y), rtol=1e-9)
    want_c = np.where(YC == 1.0, stats.norm.logsf(1.0, mu_c, sd_c), stats.norm.logpdf(YC, mu_c, sd_c))
    np.testing.assert_allclose(loglik["yc"].values, want_c, rtol=1e-9)


# --- bad input: each a clear error naming the variable, the model unchanged
K2 = dg.Dim("k2", size=2)
_W = dg.constant(np.array([1.0, 2.0]), dims=(K2,))
BAD_PARAMETERS = {
    "lkj_corr eta": (lambda: dg.dist.lkj_corr(-1.0, dims=(I, J)), r"rv 'v'.*LKJCorr.*eta=-1.0"),
    "lkj_cholesky_cov sd_dist": (
        lambda: dg.dist.lkj_cholesky_cov(2.0, dg.dist.halfnormal(-1.0), dims=(K, L), packed=True),
        r"rv 'v'.*LKJCholeskyCov.*sd_dist=HalfNormal\(sigma=-1.0\)",
    ),
    "zerosum_normal sigma": (lambda: dg.dist.zerosum_normal(-1.0, dims=(G,)), r"rv 'v'.*ZeroSumNormal\(sigma=-1.0\)"),
    "truncated base": (
        lambda: dg.dist.truncated(dg.dist.normal(0.0, -1.0), lower=0.0),
        r"rv 'v'.*Truncated\(lower=0.0, base=Normal\(mu=0.0, sigma=-1.0\)\)",
    ),
    "censored bounds": (
        lambda: dg.dist.censored(dg.dist.normal(0.0, 1.0), lower=2.0, upper=1.0),
        r"rv 'v'.*Censored\(lower=2.0, upper=1.0",
    ),
    "mixture component": (
        lambda: dg.dist.mixture(_W, [dg.dist.normal(0.0, 1.0), dg.dist.halfnormal(-2.0)], dim=K2),
        r"rv 'v'.*component_1=HalfNormal\(sigma=-2.0\)",
    ),
    "mixture stacked component": (
        lambda: dg.dist.mixture(_W, dg.dist.normal(_W, -1.0), dim=K2),
        r"rv 'v'.*component_0=Normal\(mu=array\(2,\), sigma=-1.0\)",
    ),
    "halfcauchy beta": (lambda: dg.dist.halfcauchy(-1.0), r"rv 'v'.*HalfCauchy\(beta=-1.0\)"),
    "halfstudent_t nu": (lambda: dg.dist.halfstudent_t(-3.0, 1.0), r"rv 'v'.*HalfStudentT\(nu=-3.0"),
}


@pytest.mark.parametrize("case", sorted(BAD_PARAMETERS))
def test_a_parameter_outside_its_support_names_the_variable_and_the_parameter(case):
    make, message = BAD_PARAMETERS[case]
    m = dg.Model()
    with pytest.raises(ValueError, match=message):
        m.rv("v", make())
    assert m.free_variables == []


def test_bad_dims_transforms_and_names_name_the_variable():
    m = dg.Model()
    with pytest.raises(ValueError, match=r"rv 'corr': unknown transform 'bogus'"):
        m.rv("corr", dg.dist.lkj_corr(2.0, dims=(I, J)), transform="bogus")
    with pytest.raises(ValueError, match=r"rv 'corr': the 'simplex' transform needs one dim"):
        m.rv("corr", dg.dist.lkj_corr(2.0, dims=(I, J)), transform="simplex")
    with pytest.raises(ValueError, match=r"rv 'corr': dims .* lack the distribution's dims \['j'\]"):
        m.rv("corr", dg.dist.lkj_corr(2.0, dims=(I, J)), dims=(I,))
    with pytest.raises(ValueError, match=r"'z'.*dim 'g' has size 4, got 3"):
        m.observe("z", dg.dist.zerosum_normal(1.0, dims=(G,)), data=np.zeros(3))
    with pytest.raises(ValueError, match=r"'c'.*dim 'i' has size 3, got 2"):
        m.observe("c", dg.dist.lkj_corr(2.0, dims=(I, J)), data=np.eye(2))
    with pytest.raises(ValueError, match=r"'y'.*dims \(obs: \?\).*got 2 axes"):
        m.observe("y", dg.dist.truncated(dg.dist.normal(0.0, 1.0), lower=0.0), data=np.ones((2, 3)), dims=(OBS,))
    assert m.free_variables == [] and m.observed_variables == []
    m.observe("y", dg.dist.censored(dg.dist.normal(0.0, 1.0), upper=1.0), data=np.zeros(3), dims=(OBS,))
    with pytest.raises(ValueError, match=r"observed 'y': the name 'y' is already taken"):
        m.observe("y", dg.dist.censored(dg.dist.normal(0.0, 1.0), upper=1.0), data=np.zeros(3), dims=(OBS,))


@pytest.mark.parametrize("factory", ["truncated", "censored"])
def test_observed_data_outside_the_bounds_is_an_error_naming_it_before_any_fit(factory):
    m = dg.Model()
    mu = m.normal("mu", 0.0, 1.0)
    m.observe(
        "y", getattr(dg.dist, factory)(dg.dist.normal(mu, 1.0), lower=0.0), data=np.array([1.0, -1.0]), dims=(OBS,)
    )
    with pytest.raises(ValueError, match=r"'y': log density -inf .*outside the distribution's support"):
        m.map(backend="python")


def lkj_model():
    """LKJ priors on a correlation and on a correlation's Cholesky factor, read by an observed normal."""
    m = dg.Model()
    corr = m.rv("corr", dg.dist.lkj_corr(2.0, dims=(I, J)))
    chol = m.rv("chol", dg.dist.lkj_cholesky_corr(1.5, dims=(K, L)))
    m.observe("y", dg.dist.normal(corr.isel(i=0, j=1) + chol.isel(k=1, l=0), 1.0), data=YC[:12], dims=(OBS,))
    return m


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_an_lkj_models_logp_fn_rebuilds_after_pickling(backend):
    """A compile leaves the model's graph as it found it (the rewrites once wrote into it, and the unpickled
    function, compiled anew from that graph, failed with InputError): the unpickled `logp_fn`, the pickled model's
    and a second compile of the same graph compute the first one's values; the gradient is the log density's."""
    m = lkj_model()
    fn = m.logp_fn(backend)
    assert fn.names == ["corr_corr__", "chol_cholesky_corr__"] and fn.size == 3 + 1
    again = dg.flat_value_and_grad(m.logp(), [v.free for v in m.sampled], inputs=m.entries.inputs(), backend=backend)
    copies = [
        pickle.loads(pickle.dumps(fn)),
        pickle.loads(pickle.dumps(m)).logp_fn(backend),
        functools.partial(again, y=YC[:12]),
    ]
    for theta in np.random.default_rng(4).uniform(-1, 1, size=(3, fn.size)):
        value, grad = fn(theta)
        assert np.isfinite(value)
        for other in copies:
            got, got_grad = other(theta)
            assert got == value
            np.testing.assert_array_equal(got_grad, grad)
        h = 1e-6
        fd = [(fn(theta + h * e)[0] - fn(theta - h * e)[0]) / (2 * h) for e in np.eye(fn.size)]
        np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)
