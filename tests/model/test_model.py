"""`dg.Model`: definitions, transforms in the log density, MAP, prior and posterior predictive, log-likelihoods,
bad input, pickling; sampling through nutpie where it is installed."""

import pickle
import threading

import numpy as np
import pytest
import scipy.stats as st
import xarray as xr

import dimgraph as dg
from dimgraph.errors import InputError
from dimgraph.model import samplers

obs = dg.Dim("obs", size=5)
group = dg.Dim("group", coords=["a", "b", "c"])
Y = np.array([1.2, 0.7, 1.9, 1.4, 0.8])


def simple_model():
    m = dg.Model()
    mu = m.normal("mu", 0.0, 10.0)
    sigma = m.halfnormal("sigma", 2.0)
    m.deterministic("mu_twice", 2 * mu)
    m.observe("y", dg.dist.normal(mu, sigma), data=Y, dims=(obs,))
    return m


@pytest.fixture(scope="module")
def model():
    return simple_model()


def test_variables_names_and_dims():
    m = dg.Model()
    mu = m.normal("mu", 0.0, 1.0, dims=(group,))
    w = m.dirichlet("w", dg.constant(np.ones(3), dims=(group,)), dim=group)
    k = m.poisson("k", 3.0)
    assert mu.dims == (group,) and w.dims == (group,) and k.dtype == "int64"
    assert m.free_variables == ["mu", "w", "k"] and m.unconstrained_names == ["mu", "w_simplex__"]
    assert m.sampled[1].free.dims[0].name == "group__free" and m.sampled[1].free.dims[0].size == 2
    assert m["mu"] is mu and "k ~ Poisson" in repr(m)
    with pytest.raises(ValueError, match=r"random variables \['k'\] are discrete"):
        m.logp()


def test_constrained_logp_plus_jacobian_is_the_unconstrained_density(model, backend):
    fn = model.logp_fn(backend)
    assert fn.names == ["mu", "sigma_log__"]
    for mu, log_sigma in [(0.3, -0.2), (1.1, 0.4)]:
        sigma = np.exp(log_sigma)
        expected = (
            st.norm(0, 10).logpdf(mu)
            + st.halfnorm(scale=2).logpdf(sigma)
            + log_sigma
            + st.norm(mu, sigma).logpdf(Y).sum()
        )
        value, grad = fn(np.array([mu, log_sigma]))
        np.testing.assert_allclose(value, expected, rtol=1e-12)
        d_mu = -mu / 100 + ((Y - mu) / sigma**2).sum()
        d_log_sigma = -((sigma / 2) ** 2) + 1 + (((Y - mu) / sigma) ** 2 - 1).sum()  # prior, Jacobian, likelihood
        np.testing.assert_allclose(grad, [d_mu, d_log_sigma], rtol=1e-10)


def test_transform_override_ordered_and_simplex_jacobians():
    cut = dg.Dim("cut", size=3)
    m = dg.Model()
    m.normal("c", 0.0, 2.0, dims=(cut,), transform="ordered")
    m.dirichlet("w", dg.constant(np.array([2.0, 3.0, 4.0]), dims=(group,)), dim=group)
    fn = m.logp_fn("python")
    assert fn.names == ["c_ordered__", "w_simplex__"]
    y_c, y_w = np.array([0.1, -0.3, 0.5]), np.array([0.2, -0.4])
    x_c = np.cumsum([y_c[0], np.exp(y_c[1]), np.exp(y_c[2])])
    w = np.exp(np.append(y_w, 0.0)) / np.exp(np.append(y_w, 0.0)).sum()
    expected = (
        st.norm(0, 2).logpdf(x_c).sum() + y_c[1:].sum() + st.dirichlet([2.0, 3.0, 4.0]).logpdf(w) + np.log(w).sum()
    )
    np.testing.assert_allclose(fn(np.concatenate([y_c, y_w]))[0], expected, rtol=1e-12)
    assert list(m.constrain(np.concatenate([y_c, y_w]))["c"].values) == pytest.approx(x_c)


def test_map_of_a_conjugate_normal(model):
    m = dg.Model()
    mu = m.normal("mu", 0.0, 10.0)
    m.observe("y", dg.dist.normal(mu, 1.0), data=Y, dims=(obs,))
    fit = m.map()
    np.testing.assert_allclose(float(fit["mu"]), Y.sum() / (Y.size + 1 / 100), rtol=1e-6)
    fit = model.map()  # sigma's mode of the constrained density (no Jacobian)
    assert set(fit.data_vars) == {"mu", "sigma", "mu_twice"}
    np.testing.assert_allclose(float(fit["mu_twice"]), 2 * float(fit["mu"]))


def test_prior_predictive_is_ancestral_and_reproducible(model):
    prior = model.prior_predictive(2000, seed=5)
    mu, sigma, y = prior.prior["mu"], prior.prior["sigma"], prior.prior_predictive["y"]
    assert mu.dims == ("chain", "draw") and y.dims == ("chain", "draw", "obs") and y.shape == (1, 2000, 5)
    assert st.kstest(mu.values.ravel(), st.norm(0, 10).cdf).pvalue > 1e-3
    assert st.kstest(sigma.values.ravel(), st.halfnorm(scale=2).cdf).pvalue > 1e-3
    z = ((y - mu) / sigma).values.ravel()  # y given its own draw's mu and sigma: standard normal
    assert st.kstest(z, st.norm().cdf).pvalue > 1e-3
    np.testing.assert_allclose(prior.prior["mu_twice"], 2 * mu)
    np.testing.assert_array_equal(model.prior_predictive(2000, seed=5).prior["mu"], mu)
    np.testing.assert_array_equal(prior.observed_data["y"], Y)


def fake_posterior(chains=2, draws=400):
    return xr.Dataset(
        {
            "mu": (("chain", "draw"), np.full((chains, draws), 3.0)),
            "sigma": (("chain", "draw"), np.full((chains, draws), 0.5)),
        },
        coords={"chain": np.arange(chains), "draw": np.arange(draws)},
    )


def test_posterior_predictive_one_compiled_call_over_chain_and_draw(model):
    post = fake_posterior()
    pp = model.posterior_predictive(post, seed=1)
    y = pp.posterior_predictive["y"]
    assert y.dims == ("chain", "draw", "obs") and y.shape == (2, 400, 5)
    assert st.kstest(((y - 3.0) / 0.5).values.ravel(), st.norm().cdf).pvalue > 1e-3
    assert model._cache[("posterior_predictive", None)].compiled_extra_dims == [
        ((0, ("chain", "draw")), (1, ("chain", "draw")))
    ]


def test_log_likelihood_vs_scipy(model):
    post = fake_posterior(1, 3)
    ll = model.log_likelihood(post)["y"]
    assert ll.dims == ("chain", "draw", "obs")
    np.testing.assert_allclose(ll.values[0, 1], st.norm(3.0, 0.5).logpdf(Y), rtol=1e-12)


def test_bad_input_names_the_variable_before_any_work():
    m = dg.Model()
    with pytest.raises(ValueError, match=r"rv 'sigma': the parameters of HalfNormal are outside their support.*-1.0"):
        m.halfnormal("sigma", -1.0)
    with pytest.raises(ValueError, match=r"rv 'sigma': unknown transform 'lg'"):
        m.halfnormal("sigma", 1.0, transform="lg")
    mu = m.normal("mu", 0.0, 1.0)
    with pytest.raises(ValueError, match=r"rv 'mu': the name 'mu' is already taken by the random variable 'mu'"):
        m.normal("mu", 0.0, 1.0)
    m.observe("y", dg.dist.normal(mu, 1.0), data=Y, dims=(obs,))
    with pytest.raises(ValueError, match=r"observed 'y': the name 'y' is already taken by the observed variable 'y'"):
        m.observe("y", dg.dist.normal(mu, 1.0), data=Y, dims=(obs,))
    wrong = xr.DataArray(Y, dims="house")
    with pytest.raises(InputError, match=r"'z'.*expected dims \(obs: 5\).*missing dim 'obs'"):
        m.observe("z", dg.dist.normal(mu, 1.0), data=wrong, dims=(obs,))
    with pytest.raises(InputError, match=r"'y'.*expected dims"):
        m.set_data(y=wrong)
    np.testing.assert_array_equal(m._observed["y"].array, Y)  # a refused value changes nothing
    with pytest.raises(TypeError, match=r"data 'x': give dims=, one Dim per axis of the data \(shape \(5,\)\)"):
        m.data("x", Y)
    with pytest.raises(ValueError, match=r"lack the distribution's dims \['group'\]"):
        m.normal("g", dg.constant(np.zeros(3), dims=(group,)), 1.0, dims=(obs,))


def test_parameter_outside_its_support_at_the_start_is_an_error_naming_the_variable():
    m = dg.Model()
    mu = m.normal("mu", 0.0, 1.0)
    m.observe("y", dg.dist.normal(0.0, mu - 5.0), data=Y, dims=(obs,))  # sigma < 0 near the start
    with pytest.raises(ValueError, match=r"not finite at the starting point: 'y': log density nan \(NaN: a parameter"):
        m.map()
    with pytest.raises(ValueError, match=r"'y': log density nan"):
        m.sample(draws=10, tune=10, chains=1)  # before any sampler is imported or run
    m2 = dg.Model()
    lam = m2.halfnormal("lam", 1.0)
    m2.observe("k", dg.dist.poisson(lam), data=np.array([1, -2, 0]), dims=(dg.Dim("n", size=3),))
    with pytest.raises(ValueError, match=r"'k': log density -inf \(-inf: a value, or observed data"):
        m2.map()


def test_unknown_sampler(model):
    with pytest.raises(ValueError, match=r"unknown sampler 'hmc'; the samplers are \['nutpie', 'blackjax'\]"):
        model.sample(sampler="hmc")


def test_model_and_its_compiled_functions_pickle(model):
    fn = model.logp_fn()
    theta = np.array([0.4, -0.1])
    copy = pickle.loads(pickle.dumps(model))
    for other in (copy.logp_fn(), pickle.loads(pickle.dumps(fn))):
        value, grad = other(theta)
        assert value == fn(theta)[0]
        np.testing.assert_array_equal(grad, fn(theta)[1])
    np.testing.assert_array_equal(
        copy.prior_predictive(10, seed=3).prior["mu"], model.prior_predictive(10, seed=3).prior["mu"]
    )


def test_sample_compiles_only_the_log_density_before_the_chains_start(monkeypatch):
    """The function of every term (`check_point`'s) compiles only for a start whose log density is not finite;
    the constrained values and the pointwise log-likelihood compile on a thread of their own while the chains
    run, and the results are those of the same functions compiled after the draws."""
    nutpie = pytest.importorskip("nutpie")
    from test_reference_models import eight_schools_model

    m = eight_schools_model()
    before, built, sample, compiled = [], [], nutpie.sample, dg.Model.compiled

    def recorded_sample(*args, **kwargs):
        before.append(sorted(key[0] for key in m._cache if key[0] != "constrain" and key[0] != "log_likelihood"))
        return sample(*args, **kwargs)

    def recorded_compiled(self, key, build):
        if key not in self._cache:
            built.append((key[0], threading.current_thread().name))
        return compiled(self, key, build)

    monkeypatch.setattr(nutpie, "sample", recorded_sample)
    monkeypatch.setattr(dg.Model, "compiled", recorded_compiled)
    idata = m.sample(draws=20, tune=20, chains=2, seed=3)
    assert before == [["layout", "logp"]]
    assert sorted(built) == [
        ("constrain", "dimgraph-after-draws"), ("layout", "MainThread"), ("log_likelihood", "dimgraph-after-draws")
    ]  # fmt: skip
    # the same seed without the thread: every function compiled after the draws, in the caller's thread
    monkeypatch.setattr(dg.Model, "compiled", compiled)

    def nothing(*args):  # a thread that compiles nothing
        thread = threading.Thread(target=lambda: None)
        thread.start()
        return thread

    monkeypatch.setattr(samplers, "_compile_after_draws", nothing)
    again = eight_schools_model().sample(draws=20, tune=20, chains=2, seed=3)
    for group in ("posterior", "log_likelihood"):
        xr.testing.assert_identical(getattr(idata, group), getattr(again, group))


def test_sample_with_nutpie():
    pytest.importorskip("nutpie")
    from test_reference_models import eight_schools_model

    m = eight_schools_model()
    idata = m.sample(draws=200, tune=200, chains=2, seed=3)
    post = idata.posterior
    assert post["theta"].dims == ("chain", "draw", "school") and list(post["school"].values) == list("ABCDEFGH")
    assert post["tau"].shape == (2, 200) and (post["tau"] > 0).all()
    assert int(idata.sample_stats["diverging"].sum()) <= 4
    assert idata.log_likelihood["y"].dims == ("chain", "draw", "school")
    assert abs(float(post["mu"].mean()) - 4.4) < 2.0  # eight schools: mu's posterior mean is about 4.4 (sd 3.3)
    m.posterior_predictive(idata, seed=1, extend_inferencedata=True)
    assert idata.posterior_predictive["y"].shape == (2, 200, 8)
    az = pytest.importorskip("arviz")
    summary = az.summary(idata, var_names=["mu", "tau"])
    assert list(summary.index) == ["mu", "tau"]


def test_nutpie_calls_the_c_callable_log_density_on_numba():
    """On numba nutpie's chains call the model's C function (no Python per gradient); elsewhere `from_pyfunc`."""
    pytest.importorskip("nutpie")
    import ctypes

    from test_reference_models import eight_schools_model

    from dimgraph.model import samplers

    m = eight_schools_model()
    fn = m.logp_fn()
    native = samplers._nutpie_native(m, fn)
    assert native is not None and native.n_dim == fn.size == 10
    theta = np.linspace(-1.0, 1.0, 10)
    grad, logp = np.empty(10), np.empty(1)
    ptr = ctypes.POINTER(ctypes.c_double)
    code = native.logp.ctypes(
        10, theta.ctypes.data_as(ptr), grad.ctypes.data_as(ptr), logp.ctypes.data_as(ptr), native.logp.data
    )
    want_value, want_grad = fn(theta)
    assert code == 0 and logp[0] == pytest.approx(want_value, rel=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-11, atol=1e-12)
    assert samplers._nutpie_native(m, m.logp_fn("python")) is None


def test_without_nutpies_native_constructors_the_bridge_takes_from_pyfunc(monkeypatch):
    """A nutpie whose private native-model classes are missing or take other arguments: the C route is
    closed (None) and `m.sample` goes through the public `from_pyfunc`."""
    pytest.importorskip("nutpie")
    from test_reference_models import eight_schools_model

    from dimgraph.model import samplers

    m = eight_schools_model()
    fn = m.logp_fn()

    def missing():
        raise AttributeError("module 'nutpie._lib' has no attribute 'PyMcModel'")

    monkeypatch.setattr(samplers, "_native_model_class", missing)
    assert samplers._nutpie_native(m, fn) is None

    class Refusing:
        def __init__(self, **fields):
            pass

        def _make_model(self, init_mean):
            raise TypeError("PyMcModel.__new__() takes 9 positional arguments")

    monkeypatch.setattr(samplers, "_native_model_class", lambda: Refusing)
    assert samplers._nutpie_native(m, fn) is None
    idata = m.sample(draws=50, tune=50, chains=1, seed=4)
    assert idata.posterior["mu"].shape == (1, 50) and np.isfinite(idata.posterior["mu"]).all()


def test_the_models_guide_runs():
    """docs/models.md is code users paste: its blocks run as printed (from the sampling block on, with nutpie)."""
    import importlib.util
    import pathlib
    import re

    guide = (pathlib.Path(__file__).parent.parent.parent / "docs" / "models.md").read_text()
    namespace = {}
    for block in re.findall(r"```python\n(.*?)```", guide, re.S):
        if "m.sample(" in block and importlib.util.find_spec("nutpie") is None:
            break
        exec(compile(block, "docs/models.md", "exec"), namespace)
    assert namespace["fn"].names == ["mu_a", "sigma_a_log__", "mu_b", "sigma_b_log__", "z_a", "z_b", "sigma_y_log__"]


def test_a_model_of_many_supports_vs_scipy():
    """Multivariate, simplex, probability, interval and discrete observations in one model: the constrained
    log density at the constrained point vs scipy.stats, and the Jacobians vs their closed forms."""
    i, j, k = dg.Dim("i", size=2), dg.Dim("j", size=2), dg.Dim("k", coords=["x", "y", "z"])
    cov_np = np.array([[1.0, 0.3], [0.3, 2.0]])
    m = dg.Model()
    cov = dg.constant(cov_np, dims=(i, j))
    v = m.rv("v", dg.dist.multivariate_normal(dg.constant(np.zeros(2), dims=(i,)), cov=cov, dims=(i, j)))
    w = m.dirichlet("w", dg.constant(np.array([1.5, 2.0, 3.0]), dims=(k,)), dim=k)
    p = m.beta("p", 2.0, 3.0)
    u = m.uniform("u", -1.0, 3.0)
    m.observe("y", dg.dist.normal(v.sum() + u, 1.0), data=np.arange(4.0), dims=(dg.Dim("t", size=4),))
    m.observe("c", dg.dist.categorical(w, dim=k), data=np.array([0, 1, 2, 2]), dims=(dg.Dim("n", size=4),))
    m.observe("b", dg.dist.bernoulli(p), data=np.array([0, 1, 1]), dims=(dg.Dim("nb", size=3),))
    assert m.unconstrained_names == ["v", "w_simplex__", "p_logodds__", "u_interval__"]
    theta = np.array([0.3, -0.2, 0.4, -0.1, 0.7, -0.5])
    point = m.constrain(theta)
    vv, ww, pp, uu = point["v"].values, point["w"].values, float(point["p"]), float(point["u"])
    expected = (
        st.multivariate_normal(np.zeros(2), cov_np).logpdf(vv)
        + st.dirichlet([1.5, 2.0, 3.0]).logpdf(ww)
        + st.beta(2, 3).logpdf(pp)
        + st.uniform(-1, 4).logpdf(uu)
        + st.norm(vv.sum() + uu, 1).logpdf(np.arange(4.0)).sum()
        + np.log(ww[[0, 1, 2, 2]]).sum()
        + st.bernoulli(pp).logpmf([0, 1, 1]).sum()
    )
    constrained = m.logp_fn("python", jacobian=False)(theta)[0]
    np.testing.assert_allclose(constrained, expected, rtol=1e-12)
    jacobians = (
        np.log(ww).sum() + np.log(pp * (1 - pp)) + np.log((uu + 1) * (3 - uu) / 4)
    )  # dx/dy = (x - lo)(hi - x)/(hi - lo)
    np.testing.assert_allclose(m.logp_fn("python")(theta)[0] - constrained, jacobians, rtol=1e-12)
    prior = m.prior_predictive(20, seed=0)
    assert prior.prior["w"].dims == ("chain", "draw", "k") and prior.prior_predictive["c"].dtype == np.int64
    assert list(prior.prior["w"]["k"].values) == ["x", "y", "z"]


def test_random_variables_are_labeled_variables_sel_linalg(backend):
    """sel by label, rename and dg.linalg inside a model: the constrained log density vs scipy, every backend."""
    i, j = dg.Dim("i", coords=["u", "v"]), dg.Dim("j", coords=["u", "v"])
    m = dg.Model()
    sd = m.halfnormal("sd", 1.0, dims=(i,))
    rho = m.uniform("rho", -0.9, 0.9)
    corr = dg.where(dg.arange(i) == dg.arange(j), 1.0, rho)
    cov = m.deterministic("cov", sd * corr * sd.rename(i="j"))
    chol = dg.linalg.cholesky(cov, dims=(i, j))
    x = m.rv("x", dg.dist.multivariate_normal(dg.constant(np.zeros(2), dims=(i,)), chol=chol, dims=(i, j)))
    m.observe("y", dg.dist.normal(x.sel(i="v"), 1.0), data=np.array([0.5, -0.2]), dims=(dg.Dim("n", size=2),))
    theta = np.array([0.1, -0.3, 0.4, 0.7, -0.2])
    point = m.constrain(theta, backend)
    sdv, r, xv = point["sd"].values, float(point["rho"]), point["x"].values
    covv = np.outer(sdv, sdv) * np.array([[1, r], [r, 1]])
    expected = (
        st.halfnorm().logpdf(sdv).sum()
        + st.uniform(-0.9, 1.8).logpdf(r)
        + st.multivariate_normal(np.zeros(2), covv).logpdf(xv)
        + st.norm(xv[1], 1).logpdf([0.5, -0.2]).sum()
    )
    np.testing.assert_allclose(m.logp_fn(backend, jacobian=False)(theta)[0], expected, rtol=1e-10)
    np.testing.assert_allclose(point["cov"].sel(i="u", j="v"), covv[0, 1], rtol=1e-12)


def test_a_chain_starts_where_the_log_density_is_finite():
    from dimgraph.model.samplers import _start

    m = dg.Model()
    mu = m.normal("mu", 0.0, 1.0)
    m.observe("y", dg.dist.normal(0.0, 1.0 - 10 * mu), data=Y, dims=(obs,))  # finite only for mu < 0.1
    fn = m.logp_fn("python")
    starts = [_start(m, fn, seed) for seed in range(20)]
    assert all(np.isfinite(fn(s)[0]) for s in starts) and len({float(s[0]) for s in starts}) > 1


def test_sample_with_blackjax():
    pytest.importorskip("blackjax")
    from test_reference_models import eight_schools_model

    m = eight_schools_model()
    idata = m.sample(draws=300, tune=300, chains=2, seed=4, sampler="blackjax")
    post = idata.posterior
    assert post["theta"].dims == ("chain", "draw", "school") and list(post["school"].values) == list("ABCDEFGH")
    assert idata.sample_stats["diverging"].shape == (2, 300) and int(idata.sample_stats["diverging"].sum()) <= 6
    assert abs(float(post["mu"].mean()) - 4.4) < 2.0 and (post["tau"] > 0).all()
    assert idata.log_likelihood["y"].dims == ("chain", "draw", "school")
    with pytest.raises(ValueError, match="runs the jax backend"):
        m.sample(draws=10, tune=10, chains=1, sampler="blackjax", backend="numba")
