"""The flat graph: `(theta, *data) -> (value, flat gradient)` compiled as one graph.

`flat_value_and_grad` builds it for the backends without a flat entry of their own
(c, jax, python; numba compiles its entry around the graph of `[value, *gradients]`,
`dimgraph.compile.flat`). Each parameter is read from its slice of the one float64
input `theta` (sliced, reshaped, cast to its dtype, given its dims by graph ops),
and the gradients are concatenated into one vector by graph ops. So the backend
compiles the unpacking and the packing with the rest (the c backend into its one
translation unit), and a call hands it one vector and gets two results back, whatever
the number of parameters. A call whose data need no conversion goes straight to the
backend's positional entry after the checks a call of the compiled function runs.
"""

from __future__ import annotations

import numpy as np

from dimgraph.compile.flat_data import FlatData
from dimgraph.errors import InputError


class FlatGraphFunction:
    """`fn(theta, **data) -> (value, flat gradient)` over the compiled flat graph; see `flat_value_and_grad`.

    `flat_function` is the compiled `(theta, *data) -> (value, flat gradient)`;
    `function(*parameter arrays, *data)` calls it with each parameter's array apart and
    returns `[value, *gradients]`, each gradient in its parameter's shape.
    """

    def __init__(self, layout, flat_function):
        self.layout = layout
        self.flat_function = flat_function
        self.function = ParameterCall(self)
        signature = flat_function.signature
        self.data = FlatData([v.name for v in flat_function.inputs[1:]], signature.inputs[1:], signature,
                             [np.empty(layout.size)])  # fmt: skip
        self._theta_shape = (layout.size,)
        compiled = flat_function._compiled
        # taken after the first call, which the compiled function times (it may compile)
        plain = self.data.fast is not None
        self._entry_after_first = compiled.fast if plain and compiled.promote is None else None
        self._entry = None

    def __call__(self, theta, trust_input=False, **data):
        if type(theta) is not np.ndarray or theta.dtype != np.float64 or theta.shape != self._theta_shape:
            theta = self.layout.check(theta)
        if self._entry is not None:
            arrays = self.data.trusted(data) if trust_input else self.data.arrays(data)
            if arrays is not None:
                return self._run(theta, arrays, data)
        self._check_names(data)
        value, grad = self.flat_function(theta, trust_input=trust_input, **data)
        self._entry = self._entry_after_first
        return float(value), grad if type(grad) is np.ndarray else np.asarray(grad)

    def _run(self, theta, arrays, data):
        """The backend's positional entry on a checked `theta` and the data `arrays` (converted and checked)."""
        try:
            value, grad = self._entry(theta, *arrays)
        except IndexError as err:  # the function's failure checks name the input at fault
            self.data.name_index_error(data, arrays, err)
            raise
        return float(value), grad if type(grad) is np.ndarray else np.asarray(grad)

    def bind(self, **data):
        """`theta -> (value, gradient)` with the data inputs given here, converted and checked once (see
        `FlatFunction.bind`): a call is the backend's one call of the flat graph.

        >>> import dimgraph as dg, numpy as np
        >>> g = dg.Dim("g", size=2)
        >>> mu, y = dg.labeled("mu", dims=(g,)), dg.labeled("y", dims=(g,))
        >>> fn = dg.flat_value_and_grad(-((mu - y) ** 2).sum(), [mu], inputs=[y], backend="c")
        >>> value, grad = fn.bind(y=np.array([1.0, 2.0]))(np.zeros(2))
        >>> value, grad.tolist()
        (-5.0, [2.0, 4.0])
        """
        return BoundFlatGraph(self, data)

    def _check_names(self, data):
        """An InputError naming a missing or unexpected data input (the parameters are in theta)."""
        inputs = self.layout.names + self.data.names
        for key in data:
            if key in self.layout.names:
                raise InputError(f"input {key!r} given twice (in theta and by name)")
            if key not in self.data.names:
                raise InputError(f"unexpected input {key!r}; the inputs are {inputs}")
        missing = [name for name in self.data.names if name not in data]
        if missing:
            raise InputError(f"missing inputs {missing}; the inputs are {inputs}")

    def cfunc(self, **data):
        raise NotImplementedError(
            f"cfunc: the C-callable function needs the numba backend; this function runs on {self.function.backend!r}"
        )

    def ravel(self, values) -> np.ndarray:
        return self.layout.ravel(values)

    def unravel(self, theta, batch_dims=()) -> dict:
        return self.layout.unravel(theta, batch_dims)

    @property
    def size(self) -> int:
        return self.layout.size

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
    from dimgraph.compile.function import function
    from dimgraph.core.basic import constant
    from dimgraph.core.join import concatenate
    from dimgraph.core.math import cast
    from dimgraph.core.shape_ops import reshape
    from dimgraph.lower.gradient import value_and_grad

    if any(v is p for v in inputs for p in layout.params):
        raise ValueError(f"an input is listed twice in {layout.params + inputs}")
    theta, cost, pieces = _read_from_vector(layout, cost, inputs)
    value, grads = value_and_grad(cost, pieces)
    flat = [reshape(g if g.type.dtype == "float64" else cast(g, "float64"), (-1,)) for g in map(_positional, grads)]
    flat_grad = concatenate(flat) if len(flat) > 1 else flat[0] if flat else constant(np.zeros(0))
    try:
        compiled = function([theta] + inputs, [_positional(value), flat_grad], backend=backend, **options)
    except InputError as err:  # an input the cost reads is not given: named among the parameters, not theta
        given = [v.name for v in inputs]
        raise InputError(str(err).replace(str([theta.name] + given), str(layout.names + given))) from None
    return FlatGraphFunction(layout, compiled)


def _read_from_vector(layout, cost, inputs):
    """`(theta, cost, pieces)`: `cost` with each parameter read from its slice of one float64 vector
    `theta` (`pieces`, in the parameters' order, are what it reads them as: the gradient's `wrt`)."""
    from dimgraph.core.basic import tensor
    from dimgraph.core.graph import clone_graph
    from dimgraph.core.math import cast
    from dimgraph.core.shape_ops import reshape
    from dimgraph.labeled.basic import from_positional
    from dimgraph.labeled.twins import twin_of

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


def _positional(v):
    return v.to_positional() if hasattr(v.type, "dims") else v


class BoundFlatGraph:
    """`logp(theta) -> (value, gradient)`: a flat graph with its data bound (`FlatGraphFunction.bind`)."""

    def __init__(self, fn, data):
        fn.data.check_names(data, "bind")
        self.fn = fn
        self._data = data
        self._arrays = fn.data.arrays(data)  # converted and checked once (None: every call takes `fn`'s path)

    def __call__(self, theta):
        fn = self.fn
        if fn._entry is None or self._arrays is None:  # the first call (it may compile), or shared variables
            return fn(theta, **self._data)
        if type(theta) is not np.ndarray or theta.dtype != np.float64 or theta.shape != fn._theta_shape:
            theta = fn.layout.check(theta)
        return fn._run(theta, self._arrays, self._data)

    @property
    def size(self) -> int:
        return self.fn.size
