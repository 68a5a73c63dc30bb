"""The distribution registry is the catalog: each class files itself once, every surface reads it."""

import inspect

import numpy as np
import pytest

import dimgraph as dg
from dimgraph.labeled.random import primitive_draw
from dimgraph.prob import constraints as C
from dimgraph.prob.base import Distribution
from dimgraph.prob.registry import DISTRIBUTIONS, register


def test_every_registered_class_states_its_support_once():
    for name, cls in DISTRIBUTIONS.items():
        assert cls.registered_name == name and issubclass(cls, Distribution), name
        declared = inspect.getattr_static(cls, "support", None)
        assert isinstance(declared, (C.Constraint, property)), f"{name}: support must be a constraint or a property"
        assert not hasattr(cls, "default_transform") and not hasattr(cls, "domain"), name


def test_every_surface_reads_the_registry():
    for name, cls in DISTRIBUTIONS.items():
        assert getattr(dg.dist, name) is cls and getattr(dg.dist, cls.__name__) is cls
        assert name in dir(dg.dist) and name in dir(dg.rng(0))


@pytest.fixture
def shifted_normal():
    """A new distribution registered for one test, removed after it."""

    @register("test_shifted_normal")
    class ShiftedNormal(Distribution):
        names, defaults = ("mu",), {"mu": 0.0}
        support = C.real

        def log_density(self, x, mu):
            return -0.5 * (x - mu - 1.0) ** 2

        def normalizer(self, mu):
            return -0.5 * np.log(2 * np.pi) + 0.0 * mu

        def sample(self, state, dims, mu):
            state, z = primitive_draw("normal", state, dims=dims)
            return state, z + mu + 1.0

    try:
        yield ShiftedNormal
    finally:
        del DISTRIBUTIONS["test_shifted_normal"]


def test_a_new_class_is_on_every_surface_at_once(shifted_normal):
    cls = shifted_normal
    assert dg.dist.test_shifted_normal is cls and dg.dist.ShiftedNormal is cls
    lp = float(dg.dist.test_shifted_normal(1.0).logp(2.0).eval(backend="python"))
    assert lp == pytest.approx(-0.5 * np.log(2 * np.pi))
    obs = dg.Dim("obs", size=2000)
    draws = dg.function([], dg.rng(0).test_shifted_normal(2.0, extra_dims=(obs,)), backend="python")()
    assert draws.dims == ("obs",) and abs(float(draws.mean()) - 3.0) < 0.1
    m = dg.Model()
    m.test_shifted_normal("x", 0.5)
    assert m.unconstrained_names == ["x"]  # real support: the identity transform


def test_registering_a_taken_or_bad_name_is_an_error():
    with pytest.raises(ValueError, match="register: the distribution name 'normal' is taken by Normal"):
        register("normal")(type("Other", (Distribution,), {"support": C.real}))
    with pytest.raises(ValueError, match="register: a distribution name is a lower-case identifier, got 'Bad Name'"):
        register("Bad Name")(type("Other", (Distribution,), {"support": C.real}))
    assert "Bad Name" not in DISTRIBUTIONS


def test_an_unknown_name_is_a_clear_error():
    with pytest.raises(AttributeError, match="dg.dist has no distribution 'nromal'; the catalog: .*'normal'"):
        dg.dist.nromal  # noqa: B018
    with pytest.raises(AttributeError, match="RandomStream has no attribute 'nromal'"):
        dg.rng(0).nromal  # noqa: B018
    with pytest.raises(AttributeError, match="Model.multivariate_normal: MultivariateNormal takes its own dims="):
        dg.Model().multivariate_normal  # noqa: B018
