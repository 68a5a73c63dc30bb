"""Making positional variables: symbolic inputs, constants, and conversion of Python values."""

from __future__ import annotations

import numpy as np

from dimgraph.core.graph import Variable
from dimgraph.core.type import TensorType


def tensor(name=None, shape=None, dtype="float64"):
    """A symbolic positional input.

    `shape` holds an int per axis where the size is known, None where it is not.

    >>> import dimgraph as dg
    >>> t = dg.tensor("t", shape=(None, 3), dtype="float32")
    >>> t.type.shape
    (None, 3)
    """
    if isinstance(name, (tuple, list)) and shape is None:
        name, shape = None, name
    if shape is None:
        raise TypeError(f"tensor {name!r}: give `shape`, a tuple with an int or None per axis")
    if isinstance(shape, int):
        raise TypeError(f"tensor {name!r}: `shape` must be a tuple, got the int {shape}")
    return TensorType(dtype, tuple(shape)).make_variable(name=name)


def scalar(name=None, dtype="float64"):
    """A symbolic 0-d input."""
    return tensor(name, (), dtype)


def vector(name=None, dtype="float64", size=None):
    """A symbolic 1-d input of static length `size` (None: unknown)."""
    return tensor(name, (size,), dtype)


def matrix(name=None, dtype="float64", shape=(None, None)):
    """A symbolic 2-d input."""
    return tensor(name, shape, dtype)


def constant(value, dtype=None, name=None) -> Variable:
    """A constant holding a copy of `value` (static shape = its shape)."""
    arr = np.array(value, dtype=dtype)
    if arr.dtype.kind in "OUSV":
        raise TypeError(f"constant {name!r}: arrays of dtype {arr.dtype} cannot be graph values")
    arr.setflags(write=False)
    return _make_constant(TensorType(arr.dtype.name, arr.shape), arr, name)


def _make_constant(type, data, name):
    # cycle: TensorConstant's operators build ops, whose modules import this one
    from dimgraph.core.variable import TensorConstant

    return TensorConstant(type, data, name=name)


def is_python_scalar(x) -> bool:
    """Python numbers are "weak" in NumPy 2 promotion (NEP 50); NumPy scalars are not."""
    return isinstance(x, (bool, int, float, complex)) and not isinstance(x, np.generic)


def is_float(var) -> bool:
    """Whether gradients flow through `var` (float or complex dtype); integer and boolean inputs get None."""
    return np.dtype(var.type.dtype).kind in "fc"


def as_tensor(x, dtype=None, name=None) -> Variable:
    """A positional variable for `x`: variables pass through, data becomes a constant."""
    if isinstance(x, Variable):
        if not isinstance(x.type, TensorType):
            to_positional = getattr(x, "to_positional", None)
            if to_positional is None:
                raise TypeError(f"expected a positional tensor, got {x!r}")
            return to_positional()
        return x
    return constant(x, dtype=dtype, name=name)
