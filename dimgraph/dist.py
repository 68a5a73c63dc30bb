"""`dg.dist`: named distributions with labeled parameters, log densities and draws.

Each class has a lower-case name too (`dg.dist.normal` is `dg.dist.Normal`).

>>> import dimgraph as dg, numpy as np
>>> float(dg.dist.normal(0.0, 2.0).logp(1.0).eval())  # scipy.stats.norm(0, 2).logpdf(1)
-1.737085713764618
"""

from dimgraph.labeled.distribution_catalog import DISTRIBUTIONS
from dimgraph.labeled.distributions import (  # noqa: F401
    Bernoulli,
    Beta,
    Binomial,
    Categorical,
    Cauchy,
    Dirichlet,
    Distribution,
    Exponential,
    Gamma,
    HalfNormal,
    InverseGamma,
    LogNormal,
    MultivariateNormal,
    NegativeBinomial,
    Normal,
    Poisson,
    StudentT,
    Uniform,
)
from dimgraph.labeled.distributions_factories import Censored, Mixture, Truncated  # noqa: F401
from dimgraph.labeled.distributions_multivariate import (  # noqa: F401
    LKJCholeskyCorr,
    LKJCholeskyCov,
    LKJCorr,
    ZeroSumNormal,
)
from dimgraph.labeled.distributions_univariate import HalfCauchy, HalfStudentT, Laplace, Logistic, Weibull  # noqa: F401

globals().update(DISTRIBUTIONS)  # normal, halfnormal, ..., lkj_cholesky_cov, mixture, censored, truncated
