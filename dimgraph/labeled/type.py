"""`LabeledType`: the type of labeled variables, a dtype plus a tuple of Dims.

A graph node whose outputs have a LabeledType is a labeled op; the lowering
(`dimgraph.lower`) replaces every one of them with positional ops, where the
Dims' static sizes become the static shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dimgraph.core.type import Type
from dimgraph.labeled.dims import as_dim_tuple, fmt_dims


@dataclass(frozen=True)
class LabeledType(Type):
    dtype: str
    dims: tuple

    def __post_init__(self):
        object.__setattr__(self, "dtype", np.dtype(self.dtype).name)
        object.__setattr__(self, "dims", as_dim_tuple(self.dims, "LabeledType"))

    @property
    def ndim(self) -> int:
        return len(self.dims)

    @property
    def shape(self) -> tuple:
        """The static sizes (None for a dim whose size comes with the data)."""
        return tuple(d.size for d in self.dims)

    @property
    def names(self) -> tuple:
        return tuple(d.name for d in self.dims)

    def make_variable(self, name=None):
        from dimgraph.labeled.variable import LabeledVariable

        return LabeledVariable(self, name=name)

    def __str__(self):
        return f"{self.dtype}{fmt_dims(self.dims)}"
