"""`dg.transforms`: bijections between a distribution's support and the real space, for `dg.Model(..., transform=)`.

>>> import dimgraph as dg
>>> t = dg.transforms.Log()
>>> round(float(t.backward(dg.constant(0.5)).eval(backend="python")), 6)  # exp(0.5)
1.648721
"""

from dimgraph.prob.transforms import (  # noqa: F401
    TRANSFORMS,
    CholeskyCorr,
    CholeskyCov,
    Corr,
    Identity,
    Interval,
    Log,
    LogOdds,
    Ordered,
    Simplex,
    Transform,
    ZeroSum,
    biject_to,
    bijection_for,
    transform_for,
)
