"""Checking data coming into a compiled function and wrapping what goes out.

Every check runs before any computation and raises `InputError` naming the
input, what was expected and what came. The casting rule: data is accepted when
NumPy's safe cast applies, when a float is narrowed to a smaller float, or when
the values survive the cast exactly (integral floats into an int input, small
ints into a narrower int); anything else is an InputError.
"""

from __future__ import annotations

import numpy as np

from dimgraph.errors import InputError


def cast_exact(name, value, dtype) -> np.ndarray:
    """`value` as an array of `dtype`, or an InputError when the cast would change values."""
    arr = np.asarray(value)
    dtype = np.dtype(dtype)
    if arr.dtype == dtype:
        return arr
    if arr.dtype.kind not in "biufc":
        raise InputError(f"input {name!r}: expected numeric data of dtype {dtype}, got data of dtype {arr.dtype}")
    if np.can_cast(arr.dtype, dtype, "safe") or (arr.dtype.kind == "f" and dtype.kind == "f"):
        return arr.astype(dtype)
    with np.errstate(all="ignore"):
        out = arr.astype(dtype)
        back = out.astype(arr.dtype)
    same = (back == arr) | ((arr != arr) & (back != back)) if arr.dtype.kind in "fc" else back == arr
    if arr.dtype.kind in "fc" and dtype.kind in "iub":
        same = same & np.isfinite(arr)
    if not np.all(same):
        bad = arr[~same].ravel()[:3] if arr.ndim else arr
        raise InputError(
            f"input {name!r}: expected dtype {dtype}; data of dtype {arr.dtype} has values that "
            f"change when cast (e.g. {np.asarray(bad).tolist()})"
        )
    return out


class TensorInput:
    """Converts user data for a positional input: ndim, static sizes, dtype."""

    __slots__ = ("name", "type")

    def __init__(self, name, type):
        self.name, self.type = name, type

    def convert(self, value):
        if hasattr(value, "dims") and hasattr(value, "values") and not isinstance(value, np.ndarray):
            value = value.values  # a DataArray given to a positional input: its data in its own order
        arr = np.asarray(value)
        if arr.ndim != self.type.ndim:
            raise InputError(
                f"input {self.name!r}: expected {self.type.ndim} axes (shape {_fmt(self.type.shape)}), "
                f"got {arr.ndim} axes (shape {arr.shape})"
            )
        for ax, (s, v) in enumerate(zip(self.type.shape, arr.shape)):
            if s is not None and s != v:
                raise InputError(
                    f"input {self.name!r}: expected shape {_fmt(self.type.shape)}, got {arr.shape} (axis {ax})"
                )
        return cast_exact(self.name, arr, self.type.dtype)

    def trusted(self, value):
        """`value` for a call with `trust_input=True`: a DataArray's data, anything else as given."""
        if hasattr(value, "dims") and hasattr(value, "values") and not isinstance(value, np.ndarray):
            return value.values
        return value


def _fmt(shape):
    return "(" + ", ".join("?" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


class TensorOutput:
    """Positional outputs come back as NumPy arrays (0-d arrays for scalars)."""

    __slots__ = ()

    def wrap(self, value, inputs):
        return value
