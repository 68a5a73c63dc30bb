"""The flat function on a backend with flat entries of its own (`Backend.flat_entry`: numba).

`flat_value_and_grad` compiles the graph of `[value, *gradients]` over the parameters
and the data, and the backend compiles an entry around it (`Tiers.flat`): theta's
unpacking and the gradient's packing in the jitted code, so a call is one Numba
dispatch on `theta`, and its C-callable form (`fn.cfunc`). Until that entry is ready,
and for a `theta` or data of types it was not compiled for, calls take the compiled
function with each parameter's array cut from `theta`.
"""

from __future__ import annotations

import functools

import numpy as np

from dimgraph.compile.flat_function import FlatFunction, positional
from dimgraph.compile.function import function as compile_function
from dimgraph.lower.gradient import value_and_grad


class FlatEntryFunction(FlatFunction):
    """`fn(theta, **data) -> (value, flat gradient)` over the backend's flat entry; see `flat_value_and_grad`.

    `function(*parameter arrays, *data)` is the compiled graph of `[value, *gradients]`. Once it runs
    jitted (`dg.function`'s `jit_graph=`), a call whose `theta` is a C-contiguous float64 vector takes
    the flat entry; the data of the last call are held bound to it, and a call with the very same
    arrays (same objects, same shapes) skips their conversion and checks, so it costs one Numba
    dispatch on `theta`.
    """

    def __init__(self, layout, function):
        stand_ins = [np.empty(shape, dtype) for shape, dtype in zip(layout.shapes, layout.dtypes)]
        super().__init__(layout, function, len(layout.params), stand_ins)
        self.function = function
        if function.tiers is not None and self.data.fast is not None and layout.size:
            dtypes = [d.name for d in layout.dtypes]
            function.tiers.flat([tuple(s) for s in layout.shapes], dtypes, self._ready)

    def _ready(self, entry):
        """The flat entry `entry(*data, theta) -> (value, gradient)` is compiled (maybe in another thread)."""
        self._entry = entry

    def _with_data(self, arrays):
        return functools.partial(self._entry, *arrays)

    def _checked(self, theta, trust_input, data):
        theta = self.layout.check(theta)
        self._check_names(data)
        value, *grads = self.function(*self.layout.arrays(theta), trust_input=trust_input, **data)
        flat = np.empty(self.layout.size)
        for g, where in zip(grads, self.layout.slices):
            flat[where] = np.ravel(g)
        return float(value), flat


def flat_entry_function(layout, cost, inputs, backend, options) -> FlatEntryFunction:
    """`fn(theta, **data)` of the 0-d `cost` over the parameters of `layout` (a `FlatParams`): the compiled
    graph of `[value, *gradients]` of the parameters and `inputs`, with the backend's flat entry on it."""
    value, grads = value_and_grad(cost, list(layout.params))
    outs = [positional(value)] + [positional(g) for g in grads]
    f = compile_function(list(layout.params) + inputs, outs, backend=backend, **options)
    return FlatEntryFunction(layout, f)
