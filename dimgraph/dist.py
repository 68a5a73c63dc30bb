"""`dg.dist`: named distributions with labeled parameters, log densities and draws.

>>> import dimgraph as dg, numpy as np
>>> float(dg.dist.normal(0.0, 2.0).logp(1.0).eval())  # scipy.stats.norm(0, 2).logpdf(1)
-1.737085713764618
"""

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

normal, halfnormal, lognormal, student_t, cauchy = Normal, HalfNormal, LogNormal, StudentT, Cauchy
uniform, exponential, gamma, invgamma, beta = Uniform, Exponential, Gamma, InverseGamma, Beta
bernoulli, binomial, poisson, negative_binomial = Bernoulli, Binomial, Poisson, NegativeBinomial
categorical, dirichlet = Categorical, Dirichlet
multivariate_normal = MultivariateNormal
