"""The flat graph: `(theta, *data) -> (value, flat gradient)` compiled as one graph.

`flat_value_and_grad` builds it for the backends without a flat entry of their own
(c, jax, python, mlir; numba compiles its entry around the graph of `[value, *gradients]`,
`dimgraph.compile.flat_entry`; both are a `flat_function.FlatFunction`). Each parameter is read from its slice of the one float64
input `theta` (sliced, reshaped, cast to its dtype, given its dims by graph ops),
and the gradients are concatenated into one vector by graph ops. So the backend
compiles the unpacking and the packing with the rest (the c backend into its one
translation unit), and a call hands it one vector and gets two results back, whatever
the number of parameters. A call whose data need no conversion goes straight to the
backend's positional entry after the checks a call of the compiled function runs.
"""

from __future__ import annotations

import numpy as np

from dimgraph.compile.flat_function import FlatFunction, positional
from dimgraph.compile.function import function as compile_function
from dimgraph.core.basic import constant, tensor
from dimgraph.core.graph import clone_graph
from dimgraph.core.join import concatenate
from dimgraph.core.math import cast
from dimgraph.core.shape_ops import reshape
from dimgraph.errors import InputError, UnlistedInput
from dimgraph.labeled.basic import from_positional
from dimgraph.labeled.twins import twin_of
from dimgraph.lower.gradient import value_and_grad


class FlatGraphFunction(FlatFunction):
    """`fn(theta, **data) -> (value, flat gradient)` over the compiled flat graph; see `flat_value_and_grad`.

    `flat_function` is the compiled `(theta, *data) -> (value, flat gradient)`;
    `function(*parameter arrays, *data)` calls it with each parameter's array apart and
    returns `[value, *gradients]`, each gradient in its parameter's shape.
    """

    def __init__(self, layout, flat_function):
        super().__init__(layout, flat_function, 1, [np.empty(layout.size)])
        self.flat_function = flat_function
        self.function = ParameterCall(self)
        # the backend's entry, taken after the first call (which the compiled function times: it may compile)
        plain = self.data.fast is not None and flat_function.tiers is None
        self._entry_after_first = flat_function.entry if plain else None

    def _checked(self, theta, trust_input, data):
        if type(theta) is not np.ndarray or theta.dtype != np.float64 or theta.shape != self._theta_shape:
            theta = self.layout.check(theta)
        self._check_names(data)
        value, grad = self.flat_function(theta, trust_input=trust_input, **data)
        self._entry = self._entry_after_first
        return float(value), grad if type(grad) is np.ndarray else np.asarray(grad)

    def _with_data(self, arrays):
        entry, layout, theta_shape = self._entry, self.layout, self._theta_shape

        def call(theta):
            if type(theta) is not np.ndarray or theta.dtype != np.float64 or theta.shape != theta_shape:
                theta = layout.check(theta)
            value, grad = entry(theta, *arrays)
            return float(value), grad if type(grad) is np.ndarray else np.asarray(grad)

        return call

    def __reduce__(self):  # the backend's entry comes again from the unpickled compiled function
        return FlatGraphFunction, (self.layout, self.flat_function)


class ParameterCall:
    """A `FlatGraphFunction` called with the parameters' arrays (in dims order) instead of one vector
    (`fn.function`): `[value, *gradients]`, each gradient in its parameter's shape."""

    def __init__(self, flat):
        self.flat = flat

    @property
    def backend(self) -> str:
        return self.flat.flat_function.backend

    def __call__(self, *args, trust_input=False, **data):
        flat = self.flat
        names = flat.layout.names + flat.data.names
        if len(args) > len(names):
            raise InputError(f"function takes {len(names)} inputs {names}, got {len(args)} positional values")
        for name, value in zip(names, args):
            if name in data:
                raise InputError(f"input {name!r} given twice (by position and by name)")
            data[name] = value
        missing = [name for name in flat.layout.names if name not in data]
        if missing:
            raise InputError(f"missing inputs {missing}; the inputs are {names}")
        params = [data.pop(name) for name in flat.layout.names]
        theta = np.concatenate(params, axis=None) if params else np.empty(0)
        value, grad = flat(theta, trust_input=trust_input, **data)
        return [np.array(value)] + [
            grad[where].reshape(shape) for where, shape in zip(flat.layout.slices, flat.layout.shapes)
        ]


def flat_graph_function(layout, cost, inputs, backend, options) -> FlatGraphFunction:
    """`fn(theta, **data)` of the 0-d `cost` over the parameters of `layout` (a `FlatParams`), compiled as
    one graph of `theta` and `inputs`."""
    if any(v is p for v in inputs for p in layout.params):
        raise ValueError(f"an input is listed twice in {layout.params + inputs}")
    theta, cost, pieces = _read_from_vector(layout, cost, inputs)
    value, grads = value_and_grad(cost, pieces)
    flat = [reshape(g if g.type.dtype == "float64" else cast(g, "float64"), (-1,)) for g in map(positional, grads)]
    flat_grad = concatenate(flat) if len(flat) > 1 else flat[0] if flat else constant(np.zeros(0))
    try:
        compiled = compile_function([theta] + inputs, [positional(value), flat_grad], backend=backend, **options)
    except UnlistedInput as err:  # an input the cost reads is not given: listed with the parameters, not theta
        raise UnlistedInput(err.args[0], layout.names + [v.name for v in inputs]) from None
    return FlatGraphFunction(layout, compiled)


def _read_from_vector(layout, cost, inputs):
    """`(theta, cost, pieces)`: `cost` with each parameter read from its slice of one float64 vector
    `theta` (`pieces`, in the parameters' order, are what it reads them as: the gradient's `wrt`)."""
    taken = {v.name for v in inputs}
    name = next(n for n in ("theta", "flat_theta", "flat_params_vector") if n not in taken)
    theta = tensor(name, shape=(layout.size,), dtype="float64")
    pieces, replace = [], {}
    for p, shape, where, dtype in zip(layout.params, layout.shapes, layout.slices, layout.dtypes):
        piece = reshape(theta[where], shape)
        if dtype != np.float64:
            piece = cast(piece, dtype)
        if hasattr(p.type, "dims"):
            twin = twin_of(p)  # what graphs lowered on the spot (a scan's body) read the parameter as
            if twin is not None:
                replace[twin] = piece
            piece = from_positional(piece, p.type.dims)
        piece.name = p.name  # errors about it (a parameter the cost does not read) name the parameter
        replace[p] = piece
        pieces.append(piece)
    _, (cost,), _ = clone_graph([cost], [], replace=replace)
    return theta, cost, pieces
