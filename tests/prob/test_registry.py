"""The distribution registry is the catalog: each class files itself once, every surface reads it."""

import inspect
import re
from pathlib import Path

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


# pymc.distributions.__all__, read from PyMC 6.4.0 (Python 3.12, `make bench-peers-env`)
PYMC_DISTRIBUTIONS = [
    "AR", "CAR", "GARCH11", "ICAR", "AsymmetricLaplace", "Bernoulli", "Beta", "BetaBinomial", "Binomial",
    "Categorical", "Cauchy", "Censored", "ChiSquared", "Continuous", "CustomDist", "DensityDist", "DiracDelta",
    "Dirichlet", "DirichletMultinomial", "Discrete", "DiscreteUniform", "DiscreteWeibull", "Distribution",
    "EulerMaruyama", "ExGaussian", "Exponential", "Flat", "Gamma", "GaussianRandomWalk", "Geometric", "Gumbel",
    "HalfCauchy", "HalfFlat", "HalfNormal", "HalfStudentT", "HurdleGamma", "HurdleLogNormal",
    "HurdleNegativeBinomial", "HurdlePoisson", "HyperGeometric", "Interpolated", "InverseGamma", "KroneckerNormal",
    "Kumaraswamy", "LKJCholeskyCov", "LKJCorr", "Laplace", "LogNormal", "Logistic", "LogitNormal", "Lognormal",
    "MatrixNormal", "Mixture", "Moyal", "Multinomial", "MvGaussianRandomWalk", "MvNormal", "MvStudentT",
    "MvStudentTRandomWalk", "NegativeBinomial", "Normal", "NormalMixture", "OrderedLogistic", "OrderedMultinomial",
    "OrderedProbit", "Pareto", "Poisson", "PolyaGamma", "RandomWalk", "Rice", "Simulator", "SkewNormal",
    "SkewStudentT", "StickBreakingWeights", "StudentT", "SymbolicRandomVariable", "Triangular", "Truncated",
    "TruncatedNormal", "Uniform", "VonMises", "Wald", "Weibull", "Wishart", "WishartBartlett",
    "ZeroInflatedBinomial", "ZeroInflatedNegativeBinomial", "ZeroInflatedPoisson", "ZeroSumNormal",
]  # fmt: skip


def _catalog_tables():
    """[(header, rows as {column: cell})] of docs/api.md's distribution catalog, backticks stripped."""
    text = (Path(__file__).parents[2] / "docs" / "api.md").read_text()
    section = text.split("## The distribution catalog", 1)[1].split("\n## ", 1)[0]
    tables, header = [], None
    for line in section.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip().strip("`").strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            tables.append((header, []))
        elif not set(line) <= set("|- "):
            tables[-1][1].append(dict(zip(header, cells)))
    return tables


def test_every_pymc_distribution_has_a_counterpart_or_a_documented_reason():
    counterparts, reasons, listed = {}, {}, set()
    for header, rows in _catalog_tables():
        for row in rows:
            if header[0] == "PyMC":  # the names without a distribution of their own, and why
                reasons[row["PyMC"]] = row
                continue
            listed.add(row[header[0]])
            pymc = re.match(r"[A-Za-z_]\w*", row["PyMC"])  # "(none)", "(pymc-extras ...)": no counterpart
            if pymc:
                counterparts[pymc.group()] = row[header[0]]
    assert len(PYMC_DISTRIBUTIONS) == 89 == len(set(PYMC_DISTRIBUTIONS))
    assert [n for n in PYMC_DISTRIBUTIONS if n not in counterparts and n not in reasons] == []
    assert not set(counterparts) & set(reasons) and set(reasons) <= set(PYMC_DISTRIBUTIONS)
    for pymc, name in counterparts.items():
        assert name in DISTRIBUTIONS, f"{pymc}: the catalog names {name!r}, which is not registered"
    for pymc, row in reasons.items():
        assert row["here"] == "(none)" or row["here"] in DISTRIBUTIONS, pymc
        assert len(row["why"].split()) >= 8, f"{pymc}: say why"
    assert set(DISTRIBUTIONS) <= listed  # and every registered distribution is in the catalog
