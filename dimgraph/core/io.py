"""Checking data coming into a compiled function and wrapping what goes out.

Every check runs before any computation and raises `InputError` naming the
input, what was expected and what came.

The casting rule (API.md): an array is accepted when NumPy's `same_kind` cast
to the input's dtype keeps every value exactly; an integral float into an int
input counts too. So int64 or float32 data go into a float64 input; a float64
array into a float32 input only when each value is a float32 (0.5, not 0.1:
round with `.astype` first, as PyTensor's `allow_input_downcast`); an integer
never wraps around (uint64 `2**64-1` into int64, int8 `-1` into uint8 are
refused) and a float never overflows to inf. Python scalars and lists carry
no dtype of their own (NEP 50 "weak" values): a Python float is rounded to a
float input's precision, but is refused when it overflows it, and any value is
refused where it does not fit an int or bool input exactly.
"""

from __future__ import annotations

import numpy as np

from dimgraph.errors import InputError

PYTHON_SCALARS = (bool, int, float, complex)


def as_array(name, value) -> np.ndarray:
    """`value` as a numeric NumPy array, or an InputError naming the input (ragged lists, text, objects, masked values)."""
    if hasattr(value, "data_vars") and hasattr(value, "dims"):
        raise InputError(
            f"input {name!r}: expected an array or a DataArray, got an xarray.Dataset "
            f"(variables {list(value.data_vars)}); pass one of its variables, e.g. ds[{next(iter(value.data_vars), 'name')!r}]"
        )
    if isinstance(value, np.ma.MaskedArray) and np.ma.is_masked(value):
        raise InputError(
            f"input {name!r}: expected an array without masked values, got a masked array with {np.ma.count_masked(value)} "
            "masked (the function would compute with the values under the mask); fill them first, e.g. .filled(np.nan)"
        )
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError) as e:
        raise InputError(
            f"input {name!r}: expected numeric array data, got {type(value).__name__} that NumPy cannot "
            f"make an array of ({e})"
        ) from None
    if arr.dtype.kind not in "biufc":
        raise InputError(
            f"input {name!r}: expected numeric data, got data of dtype {arr.dtype} ({_kind_name(arr.dtype)})"
        )
    return arr


def _kind_name(dtype) -> str:
    return {
        "U": "text",
        "T": "text",
        "S": "bytes",
        "O": "Python objects: a ragged list, None, or an integer beyond 64 bits among the values",
        "M": "dates",
        "m": "time deltas",
        "V": "raw records",
    }.get(dtype.kind, dtype.kind)


def is_weak(value) -> bool:
    """Python scalars and lists: data without a dtype of its own (NEP 50)."""
    return not isinstance(value, (np.ndarray, np.generic)) and not hasattr(value, "dtype")


def cast_exact(name, value, dtype, weak=None) -> np.ndarray:
    """`value` as an array of `dtype`, or an InputError when the cast would change values (see module doc)."""
    weak = is_weak(value) if weak is None else weak
    arr = as_array(name, value)
    dtype = np.dtype(dtype)
    if arr.dtype == dtype:
        return arr
    if np.can_cast(arr.dtype, dtype, "safe") and not _may_round(arr.dtype, dtype):
        return arr.astype(dtype)
    with np.errstate(all="ignore"):
        if dtype.kind in "iu" and arr.dtype.kind in "iub":
            ok = _in_range(arr, dtype)
            out = arr.astype(dtype)
        elif dtype.kind in "iu":  # from float or complex: integral, finite and in range
            real = arr.real if arr.dtype.kind == "c" else arr
            ok = (real == np.floor(real)) & _in_range(real, dtype)
            if arr.dtype.kind == "c":
                ok &= arr.imag == 0
            out = real.astype(dtype)
        else:
            out = arr.real.astype(dtype) if arr.dtype.kind == "c" and dtype.kind != "c" else arr.astype(dtype)
            if weak and dtype.kind in "fc" and (dtype.kind == "c" or arr.dtype.kind != "c"):
                ok = np.isfinite(out) | ~np.isfinite(arr)  # weak floats round; only overflow is refused
            else:
                back = (out.real if out.dtype.kind == "c" and arr.dtype.kind != "c" else out).astype(arr.dtype)
                ok = (back == arr) | ((arr != arr) & (back != back))
                if arr.dtype.kind in "iu" and dtype.kind in "fc":  # the way back must not overflow either
                    ok &= _in_range(out.real if dtype.kind == "c" else out, arr.dtype)
    if not np.all(ok):
        bad = np.asarray(arr[~ok] if arr.ndim else arr).ravel()[:3].tolist()
        what = "Python values" if weak else f"data of dtype {arr.dtype} with values"
        raise InputError(
            f"input {name!r}: expected dtype {dtype}; {what} that change when cast to {dtype} "
            f"(e.g. {bad}); data is accepted when every value is exactly a {dtype}"
            + (f" (round it first: .astype({dtype.name!r}))" if dtype.kind == "f" else "")
        )
    return out


def _may_round(source, target) -> bool:
    """Whether NumPy calls a cast "safe" that rounds some values (int64 -> float64 above 2**53)."""
    return (
        source.kind in "iu"
        and target.kind in "fc"
        and source.itemsize * 8 - (source.kind == "i") > np.finfo(target).nmant + 1
    )


def _in_range(values, dtype) -> np.ndarray:
    """Where `values` (ints or floats) lie within the integer `dtype`'s range, compared exactly."""
    info = np.iinfo(dtype)
    if values.dtype.kind in "iub":
        return (values >= info.min) & (values <= info.max)
    # NOTE: the bounds min and max + 1 are powers of two, exact in float64; as NumPy scalars (not
    # Python floats, which NEP 50 would round to float16's inf) they compare in float64.
    return (values >= np.float64(info.min)) & (values < np.float64(info.max) + 1.0)


class TensorInput:
    """Converts user data for a positional input: ndim, static sizes, dtype."""

    __slots__ = ("name", "type")

    def __init__(self, name, type):
        self.name, self.type = name, type

    def convert(self, value):
        if hasattr(value, "dims") and hasattr(value, "values") and not isinstance(value, np.ndarray):
            value = value.values  # a DataArray given to a positional input: its data in its own order
        arr = as_array(self.name, value)
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
        return cast_exact(self.name, arr, self.type.dtype, weak=is_weak(value))

    def trusted(self, value):
        """`value` for a call with `trust_input=True`: a DataArray's data, a Python or NumPy scalar as a
        0-d array of the input's dtype (a compiled kernel has no signature for a Python float), anything else as given."""
        if type(value) in PYTHON_SCALARS or isinstance(value, np.generic):  # np.float64(1.0) is no 0-d array
            return np.asarray(value, dtype=self.type.dtype)
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
