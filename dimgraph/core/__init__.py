"""The positional core: graph IR, ops with NumPy semantics, and the shape system."""

from dimgraph.core.basic import as_tensor, constant, matrix, scalar, tensor, vector
from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.extra import ARange, Assert, CumOp, arange, assert_op, cumprod, cumsum, diff  # noqa: F401
from dimgraph.core.fgraph import Feature, FunctionGraph
from dimgraph.core.graph import Apply, Constant, Op, Variable, ancestors, graph_inputs, toposort
from dimgraph.core.ifelse import IfElse, ifelse  # noqa: F401,E402
from dimgraph.core.inner import InnerGraph  # noqa: F401,E402
from dimgraph.core.join import Join, Split, concatenate, split, split_sizes, stack  # noqa: F401
from dimgraph.core.linalg import Einsum, MatMul, dot, einsum, matmul, tensordot  # noqa: F401
from dimgraph.core.loop import Loop, Scan  # noqa: F401,E402
from dimgraph.core.math import *  # noqa: F401,F403  (the elementwise functions)
from dimgraph.core.math import abs, cast, clip, round, where  # noqa: F401  (shadowing builtins on purpose)
from dimgraph.core.opfromgraph import OpFromGraph, op_from_graph  # noqa: F401,E402
from dimgraph.core.random import RandomDraw, RNGStateType, random_draw, rng_state, seed_state  # noqa: F401
from dimgraph.core.reduce import (  # noqa: F401
    Argmax,
    CAReduce,
    all,
    any,
    argmax,
    argmin,
    log_softmax,
    logsumexp,
    max,
    mean,
    min,
    prod,
    softmax,
    std,
    sum,
    var,
)
from dimgraph.core.scalar import Cast, Composite, ScalarOp
from dimgraph.core.shape import Shape, ShapeI, shape_of
from dimgraph.core.shape_ops import (  # noqa: F401
    Alloc,
    Reshape,
    broadcast_to,
    expand_dims,
    flatten,
    full,
    full_like,
    ones,
    ones_like,
    reshape,
    squeeze,
    transpose,
    zeros,
    zeros_like,
)
from dimgraph.core.subtensor import (  # noqa: F401
    AdvancedIncSubtensor,
    AdvancedSubtensor,
    IncSubtensor,
    Subtensor,
    getitem,
    inc_subtensor,
    set_subtensor,
)
from dimgraph.core.type import TensorType, Type
from dimgraph.core.variable import TensorConstant, TensorVariable
