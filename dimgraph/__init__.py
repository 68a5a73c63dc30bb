"""dimgraph: array programs over named dimensions, compiled to fast code.

>>> import dimgraph as dg, numpy as np
>>> x = dg.tensor("x", shape=(3,))
>>> dg.function([x], dg.exp(x).sum())(np.zeros(3))
array(3.)
"""

from dimgraph import config, core
from dimgraph.compile.function import Function, function
from dimgraph.compile.shared import SharedContext, shared
from dimgraph.core.basic import constant as _positional_constant  # noqa: F401
from dimgraph.core.basic import matrix, scalar, tensor, vector
from dimgraph.core.math import (  # noqa: F401
    ceil,
    clip,
    cos,
    digamma,
    erf,
    erfc,
    exp,
    expm1,
    floor,
    gammaln,
    isfinite,
    isnan,
    log,
    log1p,
    logaddexp,
    maximum,
    minimum,
    round,
    sigmoid,
    sign,
    sin,
    softplus,
    sqrt,
    square,
    tan,
    tanh,
    where,
)
from dimgraph.core.reduce import logsumexp
from dimgraph.errors import BackendUnavailable, DimError, InputError, ShapeError
from dimgraph.printing import dprint

__version__ = "0.1.0"
