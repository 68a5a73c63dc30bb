"""dimgraph: array programs over named dimensions, compiled to fast code.

>>> import dimgraph as dg, numpy as np
>>> x = dg.tensor("x", shape=(3,))
>>> dg.function([x], dg.exp(x).sum())(np.zeros(3))
array(3.)
"""

from dimgraph import config, core
from dimgraph.compile.flat import FlatParams, flat_value_and_grad
from dimgraph.compile.function import Function, function
from dimgraph.core.basic import constant as _positional_constant  # noqa: F401
from dimgraph.core.basic import matrix, scalar, tensor, vector
from dimgraph.core.shared import SharedContext
from dimgraph.dotgraph import to_dot
from dimgraph.errors import BackendUnavailable, DimError, InputError, NonDifferentiable, ShapeError
from dimgraph.labeled import (  # noqa: F401  (the labeled layer: the main path)
    Dim,
    ProductDim,
    align,
    arange,
    as_labeled,
    broadcast,
    clip,
    concat,
    constant,
    dot,
    from_positional,
    full_like,
    labeled,
    linalg,  # noqa: F401  (dg.linalg: labeled linear algebra)
    logsumexp,
    ones_like,
    round,
    where,
    zeros_like,
)
from dimgraph.labeled.math import TOP_LEVEL as _SCALAR_FUNCTIONS
from dimgraph.labeled.shared import shared
from dimgraph.labeled.vectorize import vectorize, vectorize_graph  # noqa: F401
from dimgraph.lower import lower
from dimgraph.lower.gradient import grad, hessian, jacobian, value_and_grad
from dimgraph.printing import dprint
from dimgraph.version import __version__

# dg.exp, dg.logit, dg.gammainc, ...: every scalar op whose row says top_level (labeled by dim name, positional as NumPy)
globals().update(_SCALAR_FUNCTIONS)

# control flow (issue 16): loops and lazy branches over labeled or positional variables
# random draws and log densities (issue 17)
# models (issue 27): named random variables, transforms, predictive draws, samplers
from dimgraph import (
    dist,  # noqa: E402
    transforms,  # noqa: E402,F401
)

# every public function checks its arguments' kinds first, naming the one that is wrong (`arguments.py`)
from dimgraph.arguments import guard as _guard  # noqa: E402
from dimgraph.compile.chunked import ChunkWarning  # noqa: E402,F401  (dask inputs chunked along a dim the function computes with)
from dimgraph.compile.random import RandomStream, rng  # noqa: E402,F401
from dimgraph.core.random import rng_state, seed_state  # noqa: E402,F401
from dimgraph.errors import CacheWarning, IndexOutOfBounds, PerformanceWarning  # noqa: E402,F401  (reliability: disk caches, out-of-range positions, Python on a hot path)
from dimgraph.labeled.math import log_softmax, softmax  # noqa: E402,F401
from dimgraph.lower.control import ifelse, op_from_graph, scan, while_loop  # noqa: E402
from dimgraph.model import Model  # noqa: E402,F401

_guard(globals())
_guard(vars(linalg), linalg.__all__, prefix="linalg.")  # dg.linalg.cholesky, ...
