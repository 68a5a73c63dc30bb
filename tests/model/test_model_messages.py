"""A model's errors name what is wrong in the model's terms: the random variable and its parameter, the
variable and the dim that share a name, NaN in observed data, a log density at +inf, advice a model user
can follow. Each is raised at definition (or at the starting-point check), before any sampling."""

import re

import numpy as np
import pytest
import xarray as xr

import dimgraph as dg
from dimgraph.errors import InputError

SOIL = dg.Dim("soil", coords=["clay", "loam", "sand"])
PLOT = dg.Dim("plot", size=3)


@pytest.mark.parametrize(
    "method, params", [("halfnormal", (np.ones(5),)), ("normal", (0.0, np.ones((2, 3)))), ("gamma", (2.0, [1.0, 2.0]))]
)
def test_a_bare_array_parameter_names_the_random_variable_and_the_parameter(method, params):
    m = dg.Model()
    dist = getattr(dg.dist, method)
    param = dist.names[len(params) - 1]
    shape = np.shape(params[-1])
    with pytest.raises(
        TypeError,
        match=rf"rv 's': {method}: parameter {param!r}, an array with shape {re.escape(str(shape))}, has no dims; "
        r"give it dims: dg.constant\(value, dims=...\)",
    ):
        getattr(m, method)("s", *params)
    assert m.free_variables == []


DEFINE = {  # one way each kind of variable takes a name or a dim
    "rv": lambda m, name, dims: m.normal(name, dims=dims),
    "data": lambda m, name, dims: m.data(name, np.ones([d.size for d in dims]), dims=dims),
    "observed": lambda m, name, dims: m.observe(
        name, dg.dist.normal(0.0, 1.0), data=np.ones([d.size for d in dims]), dims=dims
    ),
    "deterministic": lambda m, name, dims: m.deterministic(
        name, dg.constant(np.ones([d.size for d in dims]), dims=dims)
    ),
}
WHAT = {"rv": "rv", "data": "data", "observed": "observed", "deterministic": "deterministic"}
KIND = {"rv": "random variable", "data": "data", "observed": "observed variable", "deterministic": "deterministic"}


@pytest.mark.parametrize("kind", sorted(DEFINE))
def test_a_variable_named_like_its_own_dim_is_refused(kind):
    m = dg.Model()
    with pytest.raises(
        ValueError, match=rf"{WHAT[kind]} 'soil': the variable's name 'soil' is also the name of its dim Dim\('soil'"
    ):
        DEFINE[kind](m, "soil", (SOIL,))


@pytest.mark.parametrize("first", sorted(DEFINE))
@pytest.mark.parametrize("second", sorted(DEFINE))
def test_a_variable_and_a_dim_sharing_a_name_are_refused_in_either_order(first, second):
    # the variable first, the dim second
    m = dg.Model()
    DEFINE[first](m, "soil", (PLOT,))
    with pytest.raises(
        ValueError, match=rf"{WHAT[second]} 'x': its dim Dim\('soil'.*has the name of the {KIND[first]} 'soil'; rename"
    ):
        DEFINE[second](m, "x", (SOIL,))
    # the dim first, the variable second
    m = dg.Model()
    DEFINE[first](m, "x", (SOIL,))
    with pytest.raises(
        ValueError,
        match=rf"{WHAT[second]} 'soil': the name 'soil' is the name of the dim Dim\('soil'.* of the {KIND[first]} 'x'; rename",
    ):
        DEFINE[second](m, "soil", (PLOT,))


def test_the_clash_pymc_refuses_no_longer_reaches_the_prior_draws():
    """Refused at definition: it used to lose the prior draws and fail later with xarray's MergeError."""
    m = dg.Model()
    m.normal("effect", dims=(SOIL,))
    with pytest.raises(ValueError, match=r"the name 'soil' is the name of the dim"):
        m.data("soil", np.arange(3.0), dims=(PLOT,))
    draws = m.prior_predictive(5, seed=1, backend="python").prior
    assert draws["effect"].dims == ("chain", "draw", "soil") and list(draws["soil"].values) == list(SOIL.coords)


def _observed_model(data, dist=None):
    m = dg.Model()
    mu = m.normal("mu", 0.0, 1.0)
    m.observe("y", dist if dist is not None else dg.dist.normal(mu, 1.0), data=data, dims=(PLOT,))
    return m


def test_nan_in_observed_data_has_its_own_message(backend):
    m = _observed_model(np.array([1.0, np.nan, np.nan]))
    with pytest.raises(
        ValueError,
        match=r"'y': log density nan \(NaN: the observed data holds 2 NaN value\(s\), which are no "
        r"observations; drop them",
    ):
        m.check_point(np.zeros(1), backend=backend)
    m = dg.Model()
    scale = m.normal("scale", 0.0, 1.0)  # no transform keeps it positive: at -1 the parameter is outside
    m.observe("y", dg.dist.normal(0.0, scale), data=np.array([1.0, 2.0, 3.0]), dims=(PLOT,))
    with pytest.raises(ValueError, match=r"'y': log density nan \(NaN: a parameter is outside its support\)"):
        m.check_point(np.array([-1.0]), backend=backend)


def test_an_infinite_log_density_is_labelled_with_its_sign(backend):
    m = _observed_model(np.zeros(3), dg.dist.exponential(np.inf))  # all the mass at 0: the density is unbounded there
    with pytest.raises(ValueError, match=r"'y': log density inf \(\+inf: the density is unbounded there"):
        m.check_point(np.zeros(1), backend=backend)
    m = _observed_model(np.array([-1.0, 0.5, 0.5]), dg.dist.exponential(1.0))
    with pytest.raises(ValueError, match=r"'y': log density -inf \(-inf: a value, or observed data, is outside"):
        m.check_point(np.zeros(1), backend=backend)


def test_set_data_with_an_extra_dim_gives_advice_for_a_model_user():
    m = dg.Model()
    x = m.data("x", np.ones(3), dims=(PLOT,))
    m.observe("y", dg.dist.normal(m.normal("b") * x, 1.0), data=np.ones(3), dims=(PLOT,))
    before = m.logp_fn("python")(np.zeros(1))[0]
    extra = xr.DataArray(np.ones((2, 3)), dims=("chain", "plot"))
    with pytest.raises(
        InputError,
        match=r"unexpected dim 'chain' \(a model's data keeps the dims it was defined with: select or "
        r"reduce the extra dims first, e.g. value.isel\(chain=0\)",
    ) as err:
        m.set_data(x=extra)
    assert "dg.function" not in str(err.value) and "map_extra_dims" not in str(err.value)
    assert m.logp_fn("python")(np.zeros(1))[0] == before  # nothing changed
