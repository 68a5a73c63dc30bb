"""Labeled shared variables: a labeled graph input whose value lives in a `SharedContext`.

The value is stored under a positional twin (a `SharedTensor` with the Dims'
static sizes), which is what the lowered graph reads; `get` gives a DataArray.
"""

from __future__ import annotations

import numpy as np

from dimgraph.compile.shared import DEFAULT_CONTEXT, SharedMixin, SharedTensor
from dimgraph.core.type import TensorType
from dimgraph.labeled.basic import dims_of_dataarray, is_dataarray
from dimgraph.labeled.dims import as_dim_tuple
from dimgraph.labeled.type import LabeledType
from dimgraph.labeled.variable import LabeledVariable
from dimgraph.lower.io import LabeledInput, LabeledOutput


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
        return LabeledOutput(self, []).wrap(value, [])

    def set(self, value, ctx=None):
        """Store `value` (a DataArray matched by dim names, or an array in dims order) in `ctx`."""
        (ctx or DEFAULT_CONTEXT)._values[self.shared_twin] = self.input_spec.convert(value).copy()


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
