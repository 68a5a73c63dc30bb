"""Labeled primitive draws: `LabeledRandomDraw`, an RNG state and labeled parameters in, draws on named dims out.

The draws' dims are the `extra_dims` first, then the parameters' dims in order
of first appearance; parameters broadcast over them by dim name. The op lowers
to one positional `RandomDraw` (`dimgraph.lower.random`); every named
distribution is built from these in `dimgraph.prob`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dimgraph.core.graph import Apply, Variable
from dimgraph.core.random import PRIMITIVES, RNGStateType, is_rng_state, mark_draw
from dimgraph.errors import DimError
from dimgraph.labeled.basic import is_dataarray
from dimgraph.labeled.dims import as_dim_tuple, fmt_dims, unify_dims
from dimgraph.labeled.math import astype, operands
from dimgraph.labeled.ops import LabeledOp, is_labeled
from dimgraph.labeled.type import LabeledType

# the dtype each primitive's parameters are cast to
_PARAM_DTYPES = {"gamma": ("float64",), "poisson": ("float64",), "binomial": ("int64", "float64")}


@dataclass(frozen=True)
class LabeledRandomDraw(LabeledOp):
    """Draws of primitive `kind` on `dims`: `(state, *params) -> (next state, draws)`."""

    kind: str
    dims: tuple

    def make_node(self, state, *params):
        if not is_rng_state(state):
            raise TypeError(f"{self}: the first input must be an RNG state, got {state!r}")
        nparams, dtype = PRIMITIVES[self.kind]
        if len(params) != nparams:
            raise TypeError(f"{self}: takes {nparams} parameters, got {len(params)}")
        for p in params:
            if not is_labeled(p):
                raise TypeError(f"{self}: parameters must be labeled, got {p!r}")
            missing = [d.name for d in p.type.dims if d not in self.dims]
            if missing:
                raise DimError(f"{self}: parameter dims {missing} are not among the draws' dims {fmt_dims(self.dims)}")
        return mark_draw(Apply(self, [state, *params], [RNGStateType(), LabeledType(dtype, self.dims)]))

    def __str__(self):
        return f"LabeledRandomDraw{{{self.kind}, {', '.join(d.name for d in self.dims)}}}"


def draw_dims(params, extra_dims, what):
    """`extra_dims` then the dims of `params` (order of first appearance); a name in both is a DimError."""
    extra = as_dim_tuple(extra_dims, what)
    param_dims = unify_dims(what, params) if params else ()
    clashes = [d.name for d in extra if d.name in {p.name for p in param_dims}]
    if clashes:
        raise DimError(
            f"{what}: extra_dims {clashes} are already dims of the parameters {fmt_dims(param_dims)}; "
            "extra_dims must be new dims"
        )
    return extra + param_dims


def primitive_draw(kind, state, *params, dims):
    """`(next state, draws)` of primitive `kind` on `dims`, parameters cast to the primitive's dtypes."""
    params = operands(params, kind) if params else []
    params = [astype(p, dt) if p.type.dtype != dt else p for p, dt in zip(params, _PARAM_DTYPES.get(kind, ()))]
    return LabeledRandomDraw(kind, tuple(dims))(state, *params)


def labeled_params(params, what):
    """Labeled variables for distribution parameters (numbers, DataArrays, labeled variables), float or int.

    `params` is a list, or a dict {parameter name: value}: then a value that is not numbers
    is a TypeError naming its parameter (`normal: sigma must be numbers, got 'a'`).
    """
    names = list(params) if isinstance(params, dict) else [f"parameter {k}" for k in range(len(params))]
    values = list(params.values()) if isinstance(params, dict) else list(params)
    for name, v in zip(names, values):
        if not (isinstance(v, Variable) or is_dataarray(v)) and not _numbers(v):
            raise TypeError(
                f"{what}: {name} must be numbers (a number, an array, a DataArray or a variable), got {v!r}"
            )
    for name, v in zip(names, values):
        if not (isinstance(v, Variable) or is_dataarray(v)) and np.ndim(v) > 0:  # which dim is which is not known
            raise TypeError(
                f"{what}: {name if name.startswith('parameter ') else f'parameter {name!r}'}, an array with shape "
                f"{np.shape(v)}, has no dims; give it dims: dg.constant(value, dims=...) or an xarray.DataArray"
            )
    out = []
    for name, p in zip(names, operands(values, what)):
        if np.dtype(p.type.dtype).kind not in "biuf":
            raise TypeError(f"{what}: {name} must be real numbers (float, int or bool), got {p!r}")
        out.append(p)
    return out


def _numbers(value) -> bool:
    try:
        return np.asarray(value).dtype.kind in "biufc"
    except (TypeError, ValueError):
        return False
