"""Positional twins: the one positional stand-in of each labeled graph input or constant.

Labeled graphs are lowered in several passes (the compiled function's, and the
ones `dg.grad`, `dg.scan`, `dg.ifelse` make on the spot); each pass maps a
labeled leaf to its twin, so every positional graph built from one leaf reads
the same variable and they meet in one graph. The twin is kept on the leaf
(`tag["twin"]`), so it is pickled with it: a graph built on the twin before
pickling still meets its leaf after. Read and made only through this module.
"""

from __future__ import annotations

from dimgraph.core.basic import constant as positional_constant
from dimgraph.core.graph import Constant
from dimgraph.core.type import TensorType

_TAG = "positional"


def positional_twin(var):
    """The positional stand-in of a labeled graph input or constant (made once, then reused)."""
    twin = var.tag.get(_TAG)
    if twin is None:
        shared_twin = getattr(var, "shared_twin", None)
        if shared_twin is not None:
            twin = shared_twin
        elif isinstance(var, Constant):
            twin = positional_constant(var.data)
        else:
            twin = TensorType(var.type.dtype, var.type.shape).make_variable(name=var.name)
        twin.tag.setdefault("dims", tuple(d.name for d in var.type.dims))  # printing names its axes
        var.tag[_TAG] = twin
    return twin


def twin_of(var):
    """The twin a lowering gave `var` so far, or None (a graph built on the labeled leaf alone)."""
    return var.tag.get(_TAG)
