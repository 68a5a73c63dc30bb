"""Flat parameter vectors for optimizers and samplers.

`scipy.optimize.minimize`, samplers and most numerical libraries work on one
float64 vector; a model names its parameters with dims. `FlatParams` is the
layout between the two (each parameter's values in its dims order, one after
the other, in the order given) and `flat_value_and_grad` compiles a labeled
cost into `fn(theta, **data) -> (value, flat gradient)`, the form
`minimize(fn, theta0, jac=True)` takes.

How a call reaches the backend depends on it. numba compiles an entry of its own
around the graph of `[value, *gradients]` (`FlatFunction`: theta's unpacking and the
gradient's packing in the jitted code, and the C-callable `cfunc`). The other backends
get one graph `(theta, *data) -> (value, flat gradient)` (`flat_graph.FlatGraphFunction`):
theta is sliced and reshaped, and the gradients concatenated, by graph ops, so one call
is one backend call with one vector in and two results out, whatever the number of parameters.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from dimgraph.backends import get_backend
from dimgraph.compile.flat_data import FlatData
from dimgraph.compile.flat_graph import flat_graph_function
from dimgraph.errors import InputError
from dimgraph.labeled.dims import dim_refs


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
        from dimgraph.core.graph import Variable

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
        """`theta` as a float64 vector of `size` values; an `InputError` naming it otherwise (before any work)."""
        theta = _real(theta, "theta", f"a vector of {self.size} values ({self.names})")
        if theta.shape != (self.size,):
            raise InputError(f"theta: expected a vector of {self.size} values ({self.names}), got shape {theta.shape}")
        return theta

    @staticmethod
    def _in_dims_order(p, name, shape, value):
        if hasattr(value, "dims") and hasattr(p.type, "dims"):
            from dimgraph.labeled.io import LabeledInput

            return LabeledInput(name, p.type).convert(value)
        arr = _real(value, f"ravel: {name!r}", f"shape {shape}")
        if arr.shape != shape:
            raise InputError(f"ravel: {name!r} needs shape {shape} (its dims order), got {arr.shape}")
        return arr

    @staticmethod
    def _wrap(p, arr):
        if hasattr(p.type, "dims"):
            from dimgraph.lower.io import LabeledOutput

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


class FlatFunction:
    """`fn(theta, **data) -> (value, flat gradient)`; see `flat_value_and_grad`.

    On the numba backend, once the graph runs jitted (`dg.function`'s `jit_graph=`), a call
    whose `theta` is a C-contiguous float64 vector takes one compiled entry: the vector's
    unpacking and the gradient's packing are compiled with the graph. A sampler passes the
    same data at every call: the data of the last call are held bound to that entry, and a
    call with the very same arrays (same objects, same shapes) skips their conversion and
    checks, so it costs one Numba dispatch on `theta`.
    """

    def __init__(self, layout, function):
        self.layout = layout
        self.function = function
        n = len(layout.params)
        stand_ins = [np.empty(shape, dtype) for shape, dtype in zip(layout.shapes, layout.dtypes)]
        self.data = FlatData(
            [v.name for v in function.inputs[n:]], function.signature.inputs[n:], function.signature, stand_ins
        )
        self._theta_shape = (layout.size,)
        self._entry = None  # the compiled entry `(*data, theta) -> (value, gradient)`, once ready
        # (entry with the last call's data bound: `theta -> (value, gradient)`, ((name, array, shape), ...))
        self._bound = None
        compiled = function._compiled
        if compiled.flat is not None and self.data.fast is not None and layout.size:
            dtypes = [d.name for d in layout.dtypes]
            compiled.flat([tuple(s) for s in layout.shapes], dtypes, self._promote)

    def _promote(self, entry):
        self._entry = entry

    def __call__(self, theta, trust_input=False, **data):
        # (the entry refuses a theta or data of other dtypes or memory layouts by a TypeError: the general path)
        if self._entry is not None and type(theta) is np.ndarray and theta.shape == self._theta_shape:
            bound = self._bound
            call = bound[0] if bound is not None and _same_data(data, bound[1]) else self._bind(data)
            if call is not None:
                try:
                    return call(theta)
                except TypeError as err:  # types the entry was not compiled for: the general path
                    if not str(err).startswith("No matching definition"):
                        raise
                except IndexError as err:
                    self.data.name_index_error(data, self.data.arrays(data), err)
                    raise
        theta = self.layout.check(theta)
        value, *grads = self.function(*self.layout.arrays(theta), trust_input=trust_input, **data)
        flat = np.empty(self.layout.size)
        for g, where in zip(grads, self.layout.slices):
            flat[where] = np.ravel(g)
        return float(value), flat

    def _bind(self, data):
        """The compiled entry with `data` converted, checked and bound (None: the general path names what is
        wrong). Data passed as they are (NumPy arrays of the declared dtypes) stay bound for the next calls:
        a copy made by a conversion would not see the caller's later writes."""
        arrays = self.data.arrays(data)
        if arrays is None:
            return None
        call = functools.partial(self._entry, *arrays)
        names = self.data.names
        if all(a is data[name] for a, name in zip(arrays, names)):
            self._bound = (call, tuple((name, a, a.shape) for name, a in zip(names, arrays)))
        return call

    def bind(self, **data):
        """`theta -> (value, gradient)` with the data inputs given here: what a sampler's or an optimizer's
        hot loop calls. The data are converted and checked once, here (an `InputError` naming an input that
        is missing, unexpected or does not fit; a function with shared variables checks them at each call);
        NumPy arrays of the declared dtypes are held as they are, not copied. On numba, once the graph runs
        jitted, a call with a C-contiguous float64 `theta` is one compiled function of `theta` alone;
        another `theta` takes the checked path, which names it.

        >>> import dimgraph as dg, numpy as np
        >>> g = dg.Dim("g", size=2)
        >>> mu, y = dg.labeled("mu", dims=(g,)), dg.labeled("y", dims=(g,))
        >>> logp = dg.flat_value_and_grad(-((mu - y) ** 2).sum(), [mu], inputs=[y]).bind(y=np.array([1.0, 2.0]))
        >>> value, grad = logp(np.zeros(2))
        >>> value, grad.tolist()
        (-5.0, [2.0, 4.0])
        """
        return BoundFlatFunction(self, data)

    def cfunc(self, **data):
        """The C-callable log density and gradient with `data` bound (numba backend): a `CFunction` whose
        `address` is a GIL-free `int64 f(int64 n, const double* x, double* grad, double* logp, void* data)`
        to be called with its `data` pointer, as a sampler written in Rust or C calls a model (nutpie
        calls PyMC's so). It returns 0; 3 when the gradient or 4 when the log density is not finite (both
        written: a sampler rejects the point and goes on); -1 when `n` is not `fn.size`. The data are copied
        (C order) and held by the `CFunction`: keep it alive while the address is in use.

        >>> import ctypes, dimgraph as dg, numpy as np
        >>> g = dg.Dim("g", size=2)
        >>> mu, y = dg.labeled("mu", dims=(g,)), dg.labeled("y", dims=(g,))
        >>> fn = dg.flat_value_and_grad(-((mu - y) ** 2).sum(), [mu], inputs=[y])
        >>> c = fn.cfunc(y=np.array([1.0, 2.0]))
        >>> x, grad, logp = np.zeros(2), np.empty(2), np.empty(1)
        >>> ptr = ctypes.POINTER(ctypes.c_double)
        >>> c.ctypes(2, x.ctypes.data_as(ptr), grad.ctypes.data_as(ptr), logp.ctypes.data_as(ptr), c.data)
        0
        >>> float(logp[0]), grad.tolist()
        (-5.0, [2.0, 4.0])
        """
        f = self.function
        if f._compiled.cfunc is None:
            raise NotImplementedError(
                f"cfunc: the C-callable function needs the numba backend; this function runs on {f.backend!r}"
            )
        self.data.check_names(data, "cfunc")
        names = self.data.names
        arrays = [np.array(spec.convert(data[n]), order="C") for n, spec in zip(names, self.data.specs)]
        params = self.layout.arrays(np.zeros(self.layout.size))
        raw = [None] * len(params) + [data[n] for n in names]
        for check in f.signature.checks:  # label checks of the data, once: nothing checks them at each call
            check(params + arrays, raw, None)
        shapes = [tuple(s) for s in self.layout.shapes]
        return f._compiled.cfunc(shapes, [d.name for d in self.layout.dtypes], params, arrays)

    def ravel(self, values) -> np.ndarray:
        return self.layout.ravel(values)

    def unravel(self, theta, batch_dims=()) -> dict:
        return self.layout.unravel(theta, batch_dims)

    @property
    def size(self) -> int:
        return self.layout.size


class BoundFlatFunction:
    """`logp(theta) -> (value, gradient)`: a flat function with its data bound (`FlatFunction.bind`)."""

    def __init__(self, fn, data):
        fn.data.check_names(data, "bind")
        self.fn = fn
        self._data = data
        # the data converted and checked (numba's compiled entry takes them; None: every call takes `fn`'s path)
        self._arrays = fn.data.arrays(data)
        self._call = None  # the compiled entry with the data bound, once `fn` has one

    def __call__(self, theta):
        call = self._call
        if call is None:
            if self._arrays is None or self.fn._entry is None:  # not jitted (yet): `fn` counts the call
                return self.fn(theta, **self._data)
            call = self._call = functools.partial(self.fn._entry, *self._arrays)
        try:
            return call(theta)
        except TypeError as err:  # a theta the entry was not compiled for: the checked path names what is wrong
            if not str(err).startswith("No matching definition"):
                raise
        except InputError:  # theta of another length (the entry's own check): the checked path's message
            pass
        except IndexError as err:
            self.fn.data.name_index_error(self._data, self._arrays, err)
            raise
        return self.fn(theta, **self._data)

    @property
    def size(self) -> int:
        return self.fn.size


def _same_data(data, bound) -> bool:
    """Whether `data` holds exactly the arrays of `bound` ((name, array, shape), ...), with their shapes."""
    if len(data) != len(bound):
        return False
    for name, array, shape in bound:
        if data.get(name) is not array or array.shape != shape:
            return False
    return True


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
    from dimgraph.lower.gradient import value_and_grad

    layout = FlatParams(params)
    if not get_backend(backend).flat_entry:
        return flat_graph_function(layout, cost, list(inputs), backend, options)
    value, grads = value_and_grad(cost, list(params))
    outs = [_positional(value)] + [_positional(g) for g in grads]  # arrays out: no DataArray per call
    f = function(list(params) + list(inputs), outs, backend=backend, **options)
    return FlatFunction(layout, f)


def _positional(v):
    return v.to_positional() if hasattr(v.type, "dims") else v
