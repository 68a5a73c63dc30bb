"""The flat function's interface: `fn(theta, **data) -> (value, flat gradient)`, whatever the backend.

`flat_value_and_grad` returns a `FlatFunction`: the layout of the parameters in
`theta` (`ravel`, `unravel`, `size`), the data inputs (`FlatData`: converted and
checked as the compiled function would), `bind(**data)` for a sampler's hot loop,
`cfunc(**data)` where the backend has flat entries, and the messages naming a
missing or unexpected input. Two families compile it, differing only in the call:

- `flat_entry.FlatEntryFunction` (numba, `Backend.flat_entry`): the graph of
  `[value, *gradients]`, the backend compiling theta's unpacking around it;
- `flat_graph.FlatGraphFunction` (c, jax, python, mlir): one graph
  `(theta, *data) -> (value, flat gradient)`.

A call takes the backend's entry once there is one and the data fit it (the data of
the last call held bound, so a sampler's same arrays skip their conversion and
checks), else the family's checked call, which converts what it can and names what
is wrong.
"""

from __future__ import annotations

import abc

import numpy as np

from dimgraph.compile.flat_data import FlatData
from dimgraph.errors import InputError, NoMatchingEntry


class FlatFunction(abc.ABC):
    """`fn(theta, **data) -> (value, flat gradient)`; see `flat_value_and_grad`.

    `compiled` is the compiled function it calls, whose inputs are `n_leading` inputs for
    the parameters (`stand_ins`: arrays of their static shapes, holding their places in
    its checks) and then the data. A family defines its call: `_checked` (the compiled
    function's checked call) and `_with_data` (the backend's entry with the data bound),
    and sets `_entry` once that entry is ready.
    """

    def __init__(self, layout, compiled, n_leading, stand_ins):
        self.layout = layout
        self._compiled_function = compiled
        names = [v.name for v in compiled.inputs[n_leading:]]
        signature = compiled.signature
        self.data = FlatData(names, signature.inputs[n_leading:], signature, stand_ins)
        self._theta_shape = (layout.size,)
        self._entry = None  # the backend's entry, once ready (the family's `_with_data` binds the data to it)
        # (entry with the last call's data bound: `theta -> (value, gradient)`, ((name, array, shape), ...))
        self._bound = None

    @abc.abstractmethod
    def _checked(self, theta, trust_input, data):
        """`(value, gradient)` by the compiled function's own call: every conversion and check, an error
        naming the input at fault."""

    @abc.abstractmethod
    def _with_data(self, arrays):
        """`theta -> (value, gradient)`: the entry with the data `arrays` (converted and checked) bound; it
        raises `NoMatchingEntry` or an `InputError` for a `theta` it does not take (the checked call names it)."""

    def __call__(self, theta, trust_input=False, **data):
        if self._entry is not None and type(theta) is np.ndarray and theta.shape == self._theta_shape:
            bound = self._bound
            if bound is not None and _same_data(data, bound[1]):
                return self._run(bound[0], theta, data, trust_input)
            call = self._bind(data, trust_input)
            if call is not None:
                return self._run(call, theta, data, trust_input)
        return self._checked(theta, trust_input, data)

    def _bind(self, data, trust_input):
        """The entry with `data` converted, checked and bound (None: the checked call names what is wrong).
        Checked data passed as they are (NumPy arrays of the declared dtypes) stay bound for the next calls:
        a copy made by a conversion would not see the caller's later writes."""
        arrays = self.data.trusted(data) if trust_input else self.data.arrays(data)
        if arrays is None:
            return None
        call = self._with_data(arrays)
        names = self.data.names
        if not trust_input and all(a is data[name] for a, name in zip(arrays, names)):
            self._bound = (call, tuple((name, a, a.shape) for name, a in zip(names, arrays)))
        return call

    def _run(self, call, theta, data, trust_input=False, arrays=None):
        """`call(theta)`; the checked call for a `theta` or data the entry refuses, which names what is wrong."""
        try:
            return call(theta)
        except (NoMatchingEntry, InputError):  # types it was not compiled for, or theta of another length
            pass
        except IndexError as err:  # the function's failure checks name the input at fault
            self.data.name_index_error(data, self.data.arrays(data) if arrays is None else arrays, err)
            raise
        return self._checked(theta, trust_input, data)

    def bind(self, **data):
        """`theta -> (value, gradient)` with the data inputs given here: what a sampler's or an optimizer's
        hot loop calls. The data are converted and checked once, here (an `InputError` naming an input that
        is missing, unexpected or does not fit; a function with shared variables checks them at each call);
        NumPy arrays of the declared dtypes are held as they are, not copied. A call is the backend's one
        call of `theta` (on numba, once the graph runs jitted, one compiled function of `theta` alone);
        another `theta` takes the checked path, which names it.

        >>> import dimgraph as dg, numpy as np
        >>> g = dg.Dim("g", size=2)
        >>> mu, y = dg.labeled("mu", dims=(g,)), dg.labeled("y", dims=(g,))
        >>> logp = dg.flat_value_and_grad(-((mu - y) ** 2).sum(), [mu], inputs=[y]).bind(y=np.array([1.0, 2.0]))
        >>> value, grad = logp(np.zeros(2))
        >>> value, grad.tolist()
        (-5.0, [2.0, 4.0])
        >>> logp = dg.flat_value_and_grad(-((mu - y) ** 2).sum(), [mu], inputs=[y], backend="c").bind(y=np.ones(2))
        >>> logp(np.zeros(2))[1].tolist()
        [2.0, 2.0]
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
        f = self._compiled_function
        if f.tiers is None:
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
        return f.tiers.cfunc(shapes, [d.name for d in self.layout.dtypes], params, arrays)

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

    def ravel(self, values) -> np.ndarray:
        """One float64 vector from `{name: value}` (see `FlatParams.ravel`)."""
        return self.layout.ravel(values)

    def unravel(self, theta, batch_dims=()) -> dict:
        """`{name: value}` from a flat vector, or a stack of them on `batch_dims` (see `FlatParams.unravel`)."""
        return self.layout.unravel(theta, batch_dims)

    @property
    def size(self) -> int:
        """The number of values in `theta`."""
        return self.layout.size


class BoundFlatFunction:
    """`logp(theta) -> (value, gradient)`: a flat function with its data bound (`FlatFunction.bind`)."""

    def __init__(self, fn, data):
        fn.data.check_names(data, "bind")
        self.fn = fn
        self._data = data
        # the data converted and checked once (None: every call takes `fn`'s path: shared variables)
        self._arrays = fn.data.arrays(data)
        self._call = None  # the backend's entry with the data bound, once `fn` has one

    def __call__(self, theta):
        call = self._call
        if call is None:
            if self._arrays is None or self.fn._entry is None:  # no entry (yet): `fn` counts the call
                return self.fn(theta, **self._data)
            call = self._call = self.fn._with_data(self._arrays)
        return self.fn._run(call, theta, self._data, arrays=self._arrays)

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


def positional(v):
    """`v` as a positional variable (a compiled flat function returns arrays, no DataArray per call)."""
    return v.to_positional() if hasattr(v.type, "dims") else v
