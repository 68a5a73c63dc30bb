"""Flat parameter vectors for optimizers and samplers.

`scipy.optimize.minimize`, samplers and most numerical libraries work on one
float64 vector; a model names its parameters with dims. `FlatParams` is the
layout between the two (each parameter's values in its dims order, one after
the other, in the order given) and `flat_value_and_grad` compiles a labeled
cost into `fn(theta, **data) -> (value, flat gradient)`, the form
`minimize(fn, theta0, jac=True)` takes.
"""

from __future__ import annotations

import math

import numpy as np

from dimgraph.errors import InputError


class FlatParams:
    """The layout of parameters (labeled or positional variables of static size) in one float64 vector.

    Parameters are real (float32 or float64): a float32 parameter gets its slice of the
    vector rounded to float32, as a float32 model computes anyway.

    >>> import dimgraph as dg, numpy as np
    >>> g = dg.Dim("g", coords=["a", "b"])
    >>> layout = dg.FlatParams([dg.labeled("mu", dims=(g,)), dg.scalar("log_sigma")])
    >>> theta = layout.ravel({"mu": np.array([1.0, 2.0]), "log_sigma": 0.5})
    >>> theta.tolist(), layout.size
    ([1.0, 2.0, 0.5], 3)
    >>> layout.unravel(theta)["mu"].sel(g="b").item()
    2.0
    """

    def __init__(self, params):
        self.params = list(params)
        self.names, self.shapes, self.slices, self.dtypes = [], [], [], []
        start = 0
        for k, p in enumerate(self.params):
            name = p.name or f"param {k}"
            shape = tuple(getattr(p.type, "shape", ()))
            if any(n is None for n in shape):
                raise ValueError(
                    f"flat parameters need static sizes: {name!r} has type {p.type}; give its dims a size"
                )
            if name in self.names:
                raise ValueError(f"flat parameters: two parameters are named {name!r}")
            dtype = np.dtype(p.type.dtype)
            if dtype.kind != "f":
                raise ValueError(
                    f"flat parameters are real-valued (float32 or float64): {name!r} has dtype {dtype}; "
                    "give it to the function as data instead"
                )
            size = math.prod(shape)
            self.names.append(name)
            self.shapes.append(shape)
            self.dtypes.append(dtype)
            self.slices.append(slice(start, start + size))
            start += size
        self.size = start

    def ravel(self, values) -> np.ndarray:
        """One float64 vector from `{name: value}` (DataArrays matched by dim name, or arrays in dims order)."""
        missing = [n for n in self.names if n not in values]
        if missing:
            raise InputError(f"ravel: missing values for {missing}; the parameters are {self.names}")
        theta = np.empty(self.size)
        for p, name, shape, where in zip(self.params, self.names, self.shapes, self.slices):
            theta[where] = self._in_dims_order(p, name, shape, values[name]).ravel()
        return theta

    def unravel(self, theta, batch_dims=()) -> dict:
        """`{name: value}` from a flat vector: DataArrays for labeled parameters, arrays for positional ones.

        With `batch_dims` (e.g. `("chain", "draw")`), `theta` has those leading axes (a
        stack of vectors, such as posterior draws) and every value is a DataArray with
        them first: the form `dg.function(..., map_extra_dims=True)` maps over.
        """
        theta = np.asarray(theta, dtype=np.float64)
        if batch_dims:
            return self._unravel_batch(theta, tuple(batch_dims))
        theta = self.check(theta)
        return {name: self._wrap(p, a) for p, name, a in zip(self.params, self.names, self.arrays(theta))}

    def _unravel_batch(self, theta, batch_dims):
        import xarray as xr

        lead = theta.shape[: len(batch_dims)]
        if theta.ndim != len(batch_dims) + 1 or theta.shape[-1] != self.size:
            raise InputError(
                f"theta: expected shape (*{batch_dims}, {self.size}) for batch dims {batch_dims}, got {theta.shape}"
            )
        out = {}
        for p, name, shape, where, dtype in zip(self.params, self.names, self.shapes, self.slices, self.dtypes):
            one = self._wrap(p, np.zeros(shape))  # the parameter's dims and coords
            dims = one.dims if hasattr(one, "dims") else tuple(f"{name}_dim_{a}" for a in range(len(shape)))
            coords = dict(one.coords) if hasattr(one, "coords") else {}
            values = theta[..., where].reshape(lead + shape).astype(dtype, copy=False)
            out[name] = xr.DataArray(values, dims=batch_dims + tuple(dims), coords=coords)
        return out

    def arrays(self, theta) -> list:
        """The parameters' arrays (dims order): views into `theta`, or float32 copies for float32 parameters."""
        layout = zip(self.shapes, self.slices, self.dtypes)
        return [theta[where].reshape(shape).astype(dtype, copy=False) for shape, where, dtype in layout]

    def check(self, theta) -> np.ndarray:
        theta = np.asarray(theta, dtype=np.float64)
        if theta.shape != (self.size,):
            raise InputError(f"theta: expected a vector of {self.size} values ({self.names}), got shape {theta.shape}")
        return theta

    @staticmethod
    def _in_dims_order(p, name, shape, value):
        if hasattr(value, "dims") and hasattr(p.type, "dims"):
            from dimgraph.labeled.io import LabeledInput

            return LabeledInput(name, p.type).convert(value)
        arr = np.asarray(value, dtype=np.float64)
        if arr.shape != shape:
            raise InputError(f"ravel: {name!r} needs shape {shape} (its dims order), got {arr.shape}")
        return arr

    @staticmethod
    def _wrap(p, arr):
        if hasattr(p.type, "dims"):
            from dimgraph.lower.io import LabeledOutput

            return LabeledOutput(p, [p]).wrap(arr, [None])
        return arr


class FlatFunction:
    """`fn(theta, **data) -> (value, flat gradient)`; see `flat_value_and_grad`.

    `flat_function` is the compiled graph of `(theta, *data inputs) -> (value, flat gradient)`:
    the vector is sliced and the gradient concatenated inside it, so a call hands the
    backend one parameter array and gets two results back, whatever the number of parameters.
    `function` calls it with each parameter's array and returns each parameter's gradient.
    """

    def __init__(self, layout, flat_function, data_names=()):
        self.layout = layout
        self.flat_function = flat_function
        self._data_names = tuple(data_names)
        self._n_data = len(self._data_names)

    def __call__(self, theta, trust_input=False, **data):
        theta = self.layout.check(theta)
        if len(data) == self._n_data:
            try:
                args = [data[name] for name in self._data_names]
            except KeyError:
                args = None
            if args is not None:  # the data by position: the function's fast path
                value, grad = self.flat_function(theta, *args, trust_input=trust_input)
                return float(value), grad
        value, grad = self.flat_function(theta, trust_input=trust_input, **data)  # names what is missing or unexpected
        return float(value), grad

    @property
    def function(self):
        """`function(*parameter arrays, *data, trust_input=False) -> [value, *gradients]`, each gradient in its
        parameter's shape: for callers that hold the parameters apart."""
        return ParameterCall(self)

    def ravel(self, values) -> np.ndarray:
        return self.layout.ravel(values)

    def unravel(self, theta, batch_dims=()) -> dict:
        return self.layout.unravel(theta, batch_dims)

    @property
    def size(self) -> int:
        return self.layout.size


class ParameterCall:
    """A `FlatFunction` called with the parameters' arrays (in dims order) instead of one vector (`fn.function`)."""

    def __init__(self, flat):
        self.flat = flat

    @property
    def backend(self):
        return self.flat.flat_function.backend

    def __call__(self, *args, trust_input=False, **data):
        layout = self.flat.layout
        n = len(layout.params)
        theta = np.concatenate([np.ravel(a) for a in args[:n]]).astype(np.float64, copy=False) if n else np.empty(0)
        value, grad = self.flat.flat_function(layout.check(theta), *args[n:], trust_input=trust_input, **data)
        return [value] + [grad[where].reshape(shape) for where, shape in zip(layout.slices, layout.shapes)]


def flat_value_and_grad(cost, params, inputs=(), backend=None, **options):
    """Compile a 0-d `cost` into `fn(theta, **data) -> (float, gradient vector)` over one flat vector.

    `params` (labeled or positional, static sizes) are laid out in `theta` in order,
    each in its dims order (`fn.ravel` / `fn.unravel` convert from and to named
    DataArrays); `inputs` are the other inputs, given by keyword at each call.
    The result is what `scipy.optimize.minimize(fn, theta0, jac=True)` takes (pass
    the negated log density to maximise it).

    >>> import dimgraph as dg, numpy as np
    >>> g = dg.Dim("g", coords=["a", "b"])
    >>> mu = dg.labeled("mu", dims=(g,))
    >>> y = dg.labeled("y", dims=(g,))
    >>> fn = dg.flat_value_and_grad(((mu - y) ** 2).sum(), [mu], inputs=[y])
    >>> value, grad = fn(np.zeros(2), y=np.array([1.0, 2.0]))
    >>> value, grad.tolist()
    (5.0, [-2.0, -4.0])
    """
    from dimgraph.compile.function import function
    from dimgraph.core.join import concatenate
    from dimgraph.core.math import cast
    from dimgraph.core.shape_ops import reshape
    from dimgraph.lower.gradient import value_and_grad

    layout = FlatParams(params)
    inputs = list(inputs)
    theta, cost, pieces = _read_from_vector(layout, cost, inputs)
    value, grads = value_and_grad(cost, pieces)
    flat = [_positional(g) for g in grads]
    flat = [reshape(g if g.type.dtype == "float64" else cast(g, "float64"), (-1,)) for g in flat]
    flat_grad = concatenate(flat) if len(flat) > 1 else flat[0]
    f = function([theta] + inputs, [_positional(value), flat_grad], backend=backend, **options)
    return FlatFunction(layout, f, [v.name for v in inputs])


def _read_from_vector(layout, cost, inputs):
    """`(theta, cost, pieces)`: `cost` with each parameter read from its slice of one float64 vector
    `theta` (`pieces`, in the parameters' order, are what it reads them as: the gradient's `wrt`)."""
    from dimgraph.core.basic import tensor
    from dimgraph.core.graph import clone_graph
    from dimgraph.core.math import cast
    from dimgraph.core.shape_ops import reshape
    from dimgraph.labeled.basic import from_positional

    taken = {v.name for v in inputs}
    name = next(n for n in ("theta", "flat_theta", "flat_params_vector") if n not in taken)
    theta = tensor(name, shape=(layout.size,), dtype="float64")
    pieces, replace = [], {}
    for p, shape, where, dtype in zip(layout.params, layout.shapes, layout.slices, layout.dtypes):
        piece = reshape(theta[where], shape)
        if dtype != np.float64:
            piece = cast(piece, dtype)
        if hasattr(p.type, "dims"):
            twin = p.tag.get("positional")  # what graphs lowered on the spot (a scan's body) read it as
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
