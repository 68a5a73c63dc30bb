"""Flat parameter vectors for optimizers and samplers.

`scipy.optimize.minimize`, samplers and most numerical libraries work on one
float64 vector; a model names its parameters with dims. `FlatParams` is the
layout between the two (each parameter's values in its dims order, one after
the other, in the order given) and `flat_value_and_grad` compiles a labeled
cost into `fn(theta, **data) -> (value, flat gradient)`, the form
`minimize(fn, theta0, jac=True)` takes.

The function is a `flat_function.FlatFunction` on every backend (layout, data
binding, `ravel`/`unravel`/`size`, the messages); how a call reaches the backend
depends on it. numba compiles an entry of its own around the graph of
`[value, *gradients]` (`flat_entry.FlatEntryFunction`: theta's unpacking and the
gradient's packing in the jitted code, and the C-callable `cfunc`). The other backends
get one graph `(theta, *data) -> (value, flat gradient)` (`flat_graph.FlatGraphFunction`):
theta is sliced and reshaped, and the gradients concatenated, by graph ops, so one call
is one backend call with one vector in and two results out, whatever the number of parameters.
"""

from __future__ import annotations

import math

import numpy as np

from dimgraph.backends import get_backend
from dimgraph.compile.flat_entry import flat_entry_function
from dimgraph.compile.flat_graph import flat_graph_function
from dimgraph.core.graph import Variable
from dimgraph.errors import InputError
from dimgraph.labeled.dims import dim_refs
from dimgraph.labeled.io import LabeledInput
from dimgraph.lower.io import LabeledOutput


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
        if not isinstance(params, (list, tuple)) or not all(isinstance(p, Variable) for p in params):
            raise TypeError(
                f"FlatParams: params must be a list of graph variables (labeled or positional), got {params!r}"
            )
        self.params = list(params)
        self.names, self.shapes, self.slices, self.dtypes = [], [], [], []
        start = 0
        for k, p in enumerate(self.params):
            name = p.name or f"param {k}"
            shape = tuple(getattr(p.type, "shape", ()))
            if any(n is None for n in shape):
                raise ValueError(f"flat parameters need static sizes: {name!r} has type {p.type}; give its dims a size")
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
        theta = _real(theta, "theta", f"{self.size} values per vector ({self.names})")
        batch_dims = tuple(getattr(d, "name", d) for d in dim_refs(batch_dims, "unravel") or ())  # "draw": one dim
        if batch_dims:
            return self._unravel_batch(theta, batch_dims)
        theta = self.check(theta)
        return {name: self._wrap(p, a) for p, name, a in zip(self.params, self.names, self.arrays(theta))}

    def _unravel_batch(self, theta, batch_dims):
        lead = theta.shape[: len(batch_dims)]
        if theta.ndim != len(batch_dims) + 1 or theta.shape[-1] != self.size:
            raise InputError(
                f"theta: expected shape (*{batch_dims}, {self.size}) for batch dims {batch_dims}, got {theta.shape}"
            )
        import xarray as xr  # `import dimgraph` loads no xarray (tests/test_import.py)

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
        """`theta` as a float64 vector of `size` values; an `InputError` naming it otherwise (before any work)."""
        theta = _real(theta, "theta", f"a vector of {self.size} values ({self.names})")
        if theta.shape != (self.size,):
            raise InputError(f"theta: expected a vector of {self.size} values ({self.names}), got shape {theta.shape}")
        return theta

    @staticmethod
    def _in_dims_order(p, name, shape, value):
        if hasattr(value, "dims") and hasattr(p.type, "dims"):
            return LabeledInput(name, p.type).convert(value)
        arr = _real(value, f"ravel: {name!r}", f"shape {shape}")
        if arr.shape != shape:
            raise InputError(f"ravel: {name!r} needs shape {shape} (its dims order), got {arr.shape}")
        return arr

    @staticmethod
    def _wrap(p, arr):
        if hasattr(p.type, "dims"):
            return LabeledOutput(p, [p]).wrap(arr, [None])
        return arr


def _real(value, what: str, expected: str) -> np.ndarray:
    """`value` as float64 when it holds real numbers (floats, ints); an `InputError` naming `what` for
    complex numbers (casting would drop the imaginary part), text, booleans or objects."""
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:  # ragged nesting
        raise InputError(f"{what}: expected real numbers, {expected}; got {type(value).__name__} ({e})") from None
    if arr.dtype.kind not in "fiu":
        raise InputError(f"{what}: expected real numbers (float or int), {expected}; got an array of dtype {arr.dtype}")
    return arr.astype(np.float64, copy=False)


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
    layout = FlatParams(params)
    build = flat_entry_function if get_backend(backend).flat_entry else flat_graph_function
    return build(layout, cost, list(inputs), backend, options)
