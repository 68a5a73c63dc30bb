"""The labeled layer: what users write. Dims, labeled variables and labeled ops (graph nodes that carry Dims).

Nothing here computes: `dg.function` lowers every labeled op to positional ops
(`dimgraph.lower`) and compiles the result.
"""

from dimgraph.core import operands as _operands
from dimgraph.labeled.basic import as_labeled, constant, from_positional, labeled
from dimgraph.labeled.combine import align, concat, dot
from dimgraph.labeled.dims import Dim, ProductDim
from dimgraph.labeled.math import DISPATCHING, astype, clip, elemwise, logsumexp, round, where
from dimgraph.labeled.ops import LabeledOp, is_labeled
from dimgraph.labeled.shape import (
    arange,
    broadcast,
    broadcast_like,
    expand_dims,
    full_like,
    ones_like,
    rename,
    squeeze,
    to_positional,
    transpose,
    zeros_like,
)
from dimgraph.labeled.stacking import ravel, stack, unstack
from dimgraph.labeled.type import LabeledType
from dimgraph.labeled.variable import LabeledConstant, LabeledVariable

# Positional operations that meet an xarray.DataArray hand over to these (core cannot import the labeled layer).
_operands.LABELED.update(elemwise=elemwise, dot=dot)

__all__ = [
    "Dim", "ProductDim", "LabeledType", "LabeledVariable", "LabeledConstant", "LabeledOp", "is_labeled",
    "labeled", "constant", "as_labeled", "from_positional", "to_positional", "astype", "clip", "round",
    "where", "logsumexp", "arange", "broadcast", "broadcast_like", "expand_dims", "full_like", "ones_like",
    "zeros_like", "rename", "squeeze", "transpose", "DISPATCHING", "concat", "dot", "align", "stack", "unstack",
    "ravel",
]  # fmt: skip
