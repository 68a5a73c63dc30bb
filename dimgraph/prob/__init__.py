"""Probability: named distributions, their supports and the transforms a model samples them with.

Above `labeled` (distributions are labeled math) and below `compile`/`model`.
A family module per kind (`continuous`, `discrete`, `multivariate`,
`timeseries`, `factories`) holds one class per distribution, registered by
name (`registry.register`); `dg.dist`, `dg.rng` and `dg.Model` read that
registry. `constraints` states supports, `transforms` maps them to the real
space (`biject_to`), `tails` computes log cdfs and quantiles.
"""

from dimgraph.prob import continuous, custom, discrete, factories, inflated, multivariate, timeseries  # noqa: F401  (each registers its classes)
from dimgraph.prob.base import Distribution  # noqa: F401
from dimgraph.prob.registry import DISTRIBUTIONS, register  # noqa: F401
