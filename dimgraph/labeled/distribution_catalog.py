"""Every named distribution, by the name `dg.dist` and the `dg.rng(...)` streams give it."""

from dimgraph.labeled.distributions import DISTRIBUTIONS as _BASIC
from dimgraph.labeled.distributions_factories import FACTORIES
from dimgraph.labeled.distributions_multivariate import MULTIVARIATE
from dimgraph.labeled.distributions_univariate import UNIVARIATE

DISTRIBUTIONS = {**_BASIC, **UNIVARIATE, **MULTIVARIATE, **FACTORIES}
