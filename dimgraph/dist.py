"""`dg.dist`: named distributions with labeled parameters, log densities and draws.

Every name is looked up in the registry (`dimgraph.prob.registry`), where each
class files itself once; the class is there under its own name too
(`dg.dist.normal` is `dg.dist.Normal`).

>>> import dimgraph as dg, numpy as np
>>> float(dg.dist.normal(0.0, 2.0).logp(1.0).eval())  # scipy.stats.norm(0, 2).logpdf(1)
-1.737085713764618
>>> dg.dist.normal is dg.dist.Normal, "gamma" in dg.dist.DISTRIBUTIONS
(True, True)
"""

from dimgraph.prob import constraints  # noqa: F401
from dimgraph.prob.base import Distribution  # noqa: F401
from dimgraph.prob.registry import DISTRIBUTIONS, by_class_name


def __getattr__(name):
    found = DISTRIBUTIONS.get(name) or by_class_name().get(name)
    if found is None:
        raise AttributeError(f"dg.dist has no distribution {name!r}; the catalog: {sorted(DISTRIBUTIONS)}")
    return found


def __dir__():
    return sorted({*globals(), *DISTRIBUTIONS, *by_class_name()})
