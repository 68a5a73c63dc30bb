"""Labeled shared variables: a labeled graph input whose value lives in a `SharedContext`.

The value is stored under a positional twin (a `SharedTensor` with the Dims'
static sizes), which is what the lowered graph reads; `get` gives a DataArray.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core import shared as positional
from dimgraph.core.shared import DEFAULT_CONTEXT, SharedMixin, SharedTensor
from dimgraph.core.type import TensorType
from dimgraph.labeled.basic import dims_of_dataarray, is_dataarray
from dimgraph.labeled.dims import as_dim_tuple
from dimgraph.labeled.io import LabeledInput, as_dataarray
from dimgraph.labeled.type import LabeledType
from dimgraph.labeled.variable import LabeledVariable


class LabeledShared(SharedMixin, LabeledVariable):
    __slots__ = ("shared_twin",)

    @property
    def storage_key(self):
        return self.shared_twin

    @property
    def input_spec(self):
        return LabeledInput(self.name, self.type)

    def get(self, ctx=None):
        """The current value in `ctx` (default: the global context) as a DataArray (a copy)."""
        value = np.array((ctx or DEFAULT_CONTEXT).get(self.shared_twin))
        return as_dataarray(value, self.type.dims, self.name)

    def set(self, value, ctx=None):
        """Store `value` (a DataArray matched by dim names, or an array in dims order) in `ctx`."""
        value, ctx = self.input_spec.convert(value).copy(), ctx or DEFAULT_CONTEXT
        with ctx.lock:
            ctx._values[self.shared_twin] = value


def labeled_shared(value, dims=None, name=None, dtype=None):
    """A labeled shared variable initialised to `value` (an array in `dims` order, or a DataArray)."""
    if is_dataarray(value):
        found = dims_of_dataarray(value, dims, "shared")
        dims = found if dims is None else as_dim_tuple(dims, "shared")
        value = value.transpose(*[d.name for d in dims]).values
    dims = as_dim_tuple(dims, f"shared {name!r}")
    ltype = LabeledType(np.asarray(value, dtype=dtype).dtype.name, dims)
    arr = LabeledInput(name, ltype).convert(np.asarray(value, dtype=dtype)).copy()
    arr.setflags(write=False)
    var = LabeledShared(ltype, name=name)
    twin = SharedTensor(TensorType(ltype.dtype, ltype.shape), name=name)
    twin.initial_value = arr
    var.shared_twin = twin
    return var


def shared(value, name=None, dtype=None, dims=None):
    """A shared variable initialised to (a copy of) `value`; labeled with `dims=` or for a DataArray.

    >>> import dimgraph as dg, numpy as np
    >>> w = dg.shared(np.zeros(2), name="w")
    >>> f = dg.function([], w.sum(), updates={w: w + 1})
    >>> float(f()), float(f()), w.get().tolist()
    (0.0, 2.0, [2.0, 2.0])
    """
    if dims is not None or is_dataarray(value):
        return labeled_shared(value, dims=dims, name=name, dtype=dtype)
    return positional.shared(value, name=name, dtype=dtype)
