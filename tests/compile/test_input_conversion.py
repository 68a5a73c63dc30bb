"""Input conversion: every value is computed right or refused with an InputError naming the input.

The cast rule (dimgraph.core.io): an array goes into an input of another dtype
only when every value survives exactly; Python scalars and lists are weak (a float
rounds into a float input, but never overflows). The oracle decides exactness in
exact arithmetic (`fractions.Fraction`), element by element.
"""

import math
from fractions import Fraction

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dimgraph as dg
from dimgraph.core.io import cast_exact

NUMERIC = [
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "complex64",
    "complex128",
]


def _exact(value):
    """A Python number equal to the NumPy scalar `value` (Fraction for finite floats, None for nan/inf)."""
    if isinstance(value, (complex, np.complexfloating)):
        return (_exact(value.real), _exact(value.imag))
    if isinstance(value, (float, np.floating)):
        return Fraction(float(value)) if math.isfinite(value) else ("nonfinite", repr(float(value)))
    return int(value)


def _representable(value, dtype) -> bool:
    """Whether `value` (a NumPy scalar) is exactly a value of `dtype`."""
    dtype = np.dtype(dtype)
    if dtype.kind == "c":
        parts = (value.real, value.imag) if np.iscomplexobj(value) else (value, 0)
        part_dtype = np.finfo(dtype).dtype
        return all(_representable(np.asarray(p)[()], part_dtype) for p in parts)
    if np.iscomplexobj(value):
        return value.imag == 0 and _representable(value.real, dtype)
    exact = _exact(value)
    if dtype.kind == "b":
        return exact in (0, 1)
    if dtype.kind in "iu":
        if not isinstance(exact, (int, Fraction)) or exact != int(exact):
            return False
        info = np.iinfo(dtype)
        return info.min <= exact <= info.max
    if isinstance(exact, tuple):  # nan and inf exist in every float type
        return True
    with np.errstate(all="ignore"):
        cast = np.asarray(value).astype(dtype)[()]
    return bool(np.isfinite(cast)) and Fraction(float(cast)) == exact


def _values(dtype):
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return [info.min, info.max, 0, 1, info.max // 3]
    if dtype.kind == "b":
        return [True, False]
    if dtype.kind == "f":
        info = np.finfo(dtype)
        return [0.0, 0.5, -2.0, 0.1, float(info.max), float(info.tiny), np.nan, np.inf, 3.0e9, 2.0**40 + 1]
    return [1 + 0j, 0.5 - 2j, 0.1 + 0j, 2.0**40 + 1j * 0]


def _canon(value):
    """`value` as (real, imag) exact Python numbers, so values of any two dtypes compare exactly."""
    if np.iscomplexobj(value):
        return (_exact(value.real), _exact(value.imag))
    return (_exact(int(value)) if isinstance(value, (bool, np.bool_)) else _exact(value), 0)


@pytest.mark.parametrize("source", NUMERIC)
@pytest.mark.parametrize("target", NUMERIC)
def test_every_pair_of_numeric_dtypes_casts_exactly_or_refuses(source, target):
    with np.errstate(all="ignore"):
        data = np.array(_values(source)).astype(source)
    for value in data:
        arr = np.array([value], dtype=source)
        if _representable(value, target):
            out = cast_exact("x", arr, target)
            assert out.dtype == np.dtype(target)
            assert _canon(out[0]) == _canon(value)
        else:
            with pytest.raises(dg.InputError, match="input 'x'"):
                cast_exact("x", arr, target)


def test_the_reported_wraparounds_and_roundings_are_refused():
    for value, dtype in [
        (np.array([2**64 - 1], "uint64"), "int64"),
        (np.array([-1], "int8"), "uint8"),
        (np.array([1e300]), "float32"),
        (np.array([0.1]), "float32"),
        (np.array([2**53 + 1]), "float64"),
        (1e300, "float32"),
        (2**70, "int64"),
    ]:
        with pytest.raises(dg.InputError, match="input 'x'"):
            cast_exact("x", value, dtype)
    assert cast_exact("x", 0.1, "float32") == np.float32(0.1)  # a Python float is weak: it rounds
    assert cast_exact("x", np.array([0.5, np.nan]), "float32").dtype == np.float32


# ------------------------------------------------------------ compiled functions, every backend

ROW = dg.Dim("row")
COL = dg.Dim("col", coords=["p", "q", "r"])
_compiled = {}


def _functions(backend):
    if backend not in _compiled:
        x = dg.labeled("x", dims=(ROW, COL), dtype="float32")
        t = dg.tensor("t", shape=(None, 2), dtype="int32")
        _compiled[backend] = (dg.function([x], x * 2, backend=backend), dg.function([t], t + 1, backend=backend))
    return _compiled[backend]


def test_reported_casts_refused_on_every_backend(backend):
    fx, ft = _functions(backend)
    with pytest.raises(dg.InputError, match="input 't'.*int32"):
        ft(np.array([[2**40, 1]], dtype="int64"))
    with pytest.raises(dg.InputError, match="input 't'"):
        ft(np.array([[1, 2**32 - 1]], dtype="uint32"))
    with pytest.raises(dg.InputError, match="input 'x'.*float32"):
        fx(np.full((2, 3), 0.1))
    assert ft(np.array([[3.0, -4.0]])).tolist() == [[4, -3]]
    assert fx(np.full((1, 3), 0.5)).values.tolist() == [[1.0, 1.0, 1.0]]


@st.composite
def _inputs(draw):
    dtype = draw(st.sampled_from(NUMERIC))
    rows = draw(st.integers(0, 3))
    shape = draw(st.sampled_from([(rows, 3), (rows, 2), (3,), (rows, 3, 1), ()]))
    values = draw(hnp.arrays(dtype, shape, elements=hnp.from_dtype(np.dtype(dtype), allow_subnormal=False)))
    layout = draw(st.sampled_from(["C", "F", "reversed", "strided"]))
    if layout == "F":
        values = np.asfortranarray(values)
    elif layout == "reversed" and values.ndim:
        values = values[::-1]
    elif layout == "strided" and values.ndim:
        values = np.repeat(values, 2, axis=0)[::2]
    form = draw(
        st.sampled_from(["array", "list", "dataarray", "transposed", "misnamed", "wrong coords", "reordered coords"])
    )
    return values, form


@pytest.mark.parametrize("which", ["labeled", "positional"])
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # `backend` is a plain name
@given(case=_inputs())
def test_fuzz_inputs_are_computed_right_or_refused_naming_them(backend, which, case):
    values, form = case
    fx, ft = _functions(backend)
    if which == "labeled":
        f, name, dtype, ok_shape = fx, "x", "float32", values.ndim == 2 and values.shape[1] == 3
    else:
        f, name, dtype, ok_shape = ft, "t", "int32", values.ndim == 2 and values.shape[1] == 2
    given_value, ok = values, ok_shape
    if form == "list":
        given_value = values.tolist()
        ok = ok and np.asarray(given_value).shape == values.shape  # [] loses the shape (0, 2)
    elif form in ("dataarray", "transposed", "misnamed", "wrong coords", "reordered coords") and values.ndim == 2:
        names = ["row", "col"] if form != "misnamed" else ["row", "column"]
        coords = {}
        if which == "labeled" and values.shape[1] == 3 and form != "misnamed":
            labels = {"wrong coords": ["p", "q", "z"], "reordered coords": ["r", "p", "q"]}.get(form, ["p", "q", "r"])
            coords = {"col": labels}
        given_value = xr.DataArray(values, dims=names, coords=coords)
        if coords and form == "reordered coords":  # taken in the Dim's order, as xarray aligns by label
            values = values[:, [1, 2, 0]]
        if form == "transposed":
            given_value = given_value.T
        if which == "labeled":
            ok = ok and form not in ("misnamed", "wrong coords")
    elif form != "array":
        given_value = values
    if form == "list" and values.dtype.kind in "biuf" and dtype == "float32":  # weak: rounds, never overflows
        with np.errstate(all="ignore"):
            fits = all(np.isfinite(np.float32(v)) or not np.isfinite(v) for v in values.astype("float64").ravel())
    else:
        fits = all(_representable(v, dtype) for v in values.ravel())
    if form == "transposed" and which == "positional":
        ok = values.ndim == 2 and values.shape[0] == 2  # a positional input takes a DataArray's data in its own order
        values = values.T
    if ok and fits:
        with np.errstate(all="ignore"):
            expected = np.asarray(values).real.astype(dtype)  # complex data fits only with no imaginary part
            expected = expected * np.float32(2) if which == "labeled" else expected + np.int32(1)
        out = f(given_value)
        np.testing.assert_array_equal(np.asarray(out), expected)
    else:
        with pytest.raises(dg.InputError, match=f"'{name}'"):
            f(given_value)


# ------------------------------------------------------------ every dtype NumPy has, on both paths of a call


def _every_numpy_dtype():
    """One dtype of each kind NumPy names (typecodes, sctypeDict), dates and deltas with units, records,
    and NumPy 2's variable-width strings."""
    found = {np.dtype(code) for code in np.typecodes["All"]} | {np.dtype(t) for t in set(np.sctypeDict.values())}
    found |= {
        np.dtype("M8[D]"),
        np.dtype("M8[ns]"),
        np.dtype("m8[s]"),
        np.dtype("V8"),
        np.dtype([("a", "f8"), ("b", "i4")]),
    }
    if hasattr(np.dtypes, "StringDType"):
        found.add(np.dtypes.StringDType())
    return sorted(found, key=str)


ALL_DTYPES = _every_numpy_dtype()
_probe = {}


def _probe_function(backend):
    """x positional, y labeled: a bad value in one is refused naming it while the other is good."""
    if backend not in _probe:
        x = dg.tensor("x", shape=(3,))
        y = dg.labeled("y", dims=(dg.Dim("u", size=3),))
        f = dg.function([x, y], [x * 2, y * 2], backend=backend)
        for _ in range(2):  # after a first good call, exact float64 arrays take the fast path
            f(np.ones(3), np.ones(3))
        _probe[backend] = f
    return _probe[backend]


@pytest.mark.parametrize("dtype", ALL_DTYPES, ids=str)
def test_every_numpy_dtype_is_computed_or_refused_naming_the_input_on_both_paths(backend, dtype):
    import dask.array  # noqa: F401  (a call asks whether an input is a dask array once dask is imported)

    f = _probe_function(backend)
    value = np.zeros(3, dtype=dtype)
    numeric = dtype.kind in "biufc"  # zeros survive the cast to float64 exactly, complex ones too
    good = np.ones(3)
    calls = {  # the fast path (positional exact arrays), the checked path (by keyword), a DataArray
        "x fast": ("x", lambda: f(value, good)),
        "y fast": ("y", lambda: f(good, value)),
        "x keyword": ("x", lambda: f(x=value, y=good)),
        "y keyword": ("y", lambda: f(x=good, y=value)),
        "y dataarray": ("y", lambda: f(good, xr.DataArray(value, dims="u"))),
    }
    if dtype.kind in "Mm" and np.datetime_data(dtype)[0] == "generic":
        del calls["y dataarray"]  # xarray holds no dates or deltas without a unit
    for how, (name, call) in calls.items():
        if numeric:
            out = call()
            got = out[0] if name == "x" else out[1].values
            np.testing.assert_array_equal(got, np.zeros(3), err_msg=f"{dtype} {how}")
        else:
            with pytest.raises(
                dg.InputError, match=rf"input {name!r}: expected numeric data, got data of dtype .* \((?!T\))"
            ):
                call()  # and the kind in words (text, dates, ...), not NumPy's letter
    if dtype.kind == "c":  # a complex value with an imaginary part is refused by the cast rule
        with pytest.raises(dg.InputError, match=r"input 'x': expected dtype float64"):
            f(np.full(3, 1j, dtype=dtype), good)
