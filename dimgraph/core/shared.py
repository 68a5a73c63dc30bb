"""Shared variables and the contexts that hold their values.

A shared variable is a graph input whose value lives in a `SharedContext`
(a default one unless the caller passes `ctx=`). Compiled functions read the
values at call time and write updates only after every output was computed,
so a call that raises changes nothing.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.io import TensorInput
from dimgraph.core.type import TensorType
from dimgraph.core.variable import TensorVariable


class SharedContext:
    """A store of shared-variable values; functions called with `ctx=` read and update only it."""

    def __init__(self):
        self._values = {}

    def get(self, var):
        return self._values.get(var, var.initial_value)

    def set(self, var, value):
        self._values[var] = var.input_spec.convert(value).copy()

    def __contains__(self, var):
        return var in self._values


DEFAULT_CONTEXT = SharedContext()


class SharedMixin:
    """Value access shared by positional and labeled shared variables."""

    __slots__ = ()

    def get(self, ctx=None):
        """The current value in `ctx` (default: the global context); a copy, so callers cannot mutate it."""
        return np.array((ctx or DEFAULT_CONTEXT).get(self))

    def set(self, value, ctx=None):
        """Store `value` (checked like a function input) in `ctx` (default: the global context)."""
        (ctx or DEFAULT_CONTEXT).set(self, value)

    @property
    def input_spec(self):
        return TensorInput(self.name, self.type)

    @property
    def storage_key(self):
        """The variable whose value a context stores (a labeled shared variable stores its positional twin)."""
        return self


class SharedTensor(SharedMixin, TensorVariable):
    __slots__ = ("initial_value",)


def shared(value, name=None, dtype=None):
    """A positional shared variable initialised to (a copy of) `value` (`dg.shared` also makes labeled ones)."""
    arr = np.array(value, dtype=dtype)
    var = SharedTensor(TensorType(arr.dtype.name, arr.shape), name=name)
    arr.setflags(write=False)
    var.initial_value = arr
    return var
