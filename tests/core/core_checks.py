"""Shared checks for the positional-op property tests.

`check_outputs` compiles outputs together with their symbolic shape entries
(`dg.core.shape_of`), runs them, and checks against NumPy oracles:
values (with the tolerance given), dtypes exactly, the static `type.shape`
against the actual shape, and the evaluated `shape_of` against the actual shape.
Compiled functions are cached by a caller-given key, so a hypothesis test
whose graph does not depend on the drawn data compiles once per backend.
"""

from __future__ import annotations

import numpy as np
from hypothesis import assume
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dimgraph as dg
from dimgraph.core.graph import Variable

_CACHE = {}

DTYPES = ["bool", "int8", "int32", "int64", "float32", "float64"]

# Tolerances: results are compared against NumPy computing in the same dtype,
# so rtol is a few ulps of the output dtype (float16 appears for int8 inputs of
# float functions, as in NumPy); scipy oracles for special functions get the
# looser SPECIAL_RTOL below.
RTOL = {"float16": 2e-3, "float32": 2e-5, "float64": 1e-12}


def rtol_for(dtype, scale=1.0):
    return RTOL.get(np.dtype(dtype).name, 0.0) * scale


def shape_entries(out):
    """The entries of `shape_of(out)` and which are symbolic."""
    return list(dg.core.shape_of(out))


def compile_checked(backend, inputs, outputs, key=None):
    """A function returning outputs followed by their symbolic shape entries (cached by `key`)."""
    if key is not None and (key, backend) in _CACHE:
        return _CACHE[(key, backend)]
    sym = []
    layout = []
    for out in outputs:
        entries = shape_entries(out)
        spec = []
        for e in entries:
            if isinstance(e, Variable):
                spec.append(("sym", len(sym)))
                sym.append(e)
            else:
                spec.append(("int", int(e)))
        layout.append((out.type, spec))
    f = dg.function(list(inputs), list(outputs) + sym, backend=backend)
    entry = (f, layout, len(outputs))
    if key is not None:
        _CACHE[(key, backend)] = entry
    return entry


def _has_subnormal(value):
    a = np.asarray(value)
    if a.dtype.kind != "f" or a.size == 0:
        return False
    tiny = np.finfo(a.dtype).tiny
    return bool(np.any((a != 0) & (np.abs(a) < tiny)))


def check_outputs(backend, inputs, outputs, values, expected, key=None, rtol=None, atol=0.0, exact=False, names=None):
    """Run `outputs` on `values` and compare with the `expected` NumPy arrays (dtype exactly).

    `rtol`/`atol` may be lists (one per output); `names` label the outputs in failure messages.
    """
    single = not isinstance(outputs, (list, tuple))
    outputs = [outputs] if single else list(outputs)
    expected = [expected] if single else list(expected)
    n_out = len(outputs)
    rtols = list(rtol) if isinstance(rtol, (list, tuple)) else [rtol] * n_out
    atols = list(atol) if isinstance(atol, (list, tuple)) else [atol] * n_out
    names = list(names) if names is not None else [f"output {k}" for k in range(n_out)]
    if backend == "jax":
        # JAX on CPU flushes subnormal floats to zero (DAZ/FTZ, jax-ml/jax#16200): normal inputs only.
        assume(not any(_has_subnormal(v) for v in values))
    f, layout, n = compile_checked(backend, inputs, outputs, key)
    results = f(*values)
    got, sym = results[:n], results[n:]
    for name, g, e, (typ, spec), rt, at in zip(names, got, expected, layout, rtols, atols):
        e = np.asarray(e)
        g = np.asarray(g)
        assert g.dtype == e.dtype, f"{name}: dtype {g.dtype}, expected {e.dtype}"
        assert g.shape == e.shape, f"{name}: shape {g.shape}, expected {e.shape}"
        assert typ.dtype == e.dtype.name, f"{name}: static dtype {typ.dtype}, expected {e.dtype}"
        assert len(typ.shape) == g.ndim and all(s is None or s == v for s, v in zip(typ.shape, g.shape)), (
            f"{name}: static shape {typ.shape} but actual {g.shape}"
        )
        shape = tuple(int(sym[i]) if kind == "sym" else i for kind, i in spec)
        assert shape == g.shape, f"{name}: shape_of gives {shape} but actual {g.shape}"
        try:
            assert_values(g, e, rtol=rtol_for(e.dtype) if rt is None else rt, atol=at, exact=exact)
        except AssertionError as err:
            raise AssertionError(f"{name}: {err}") from None
    return got


def assert_values(got, expected, rtol=0.0, atol=0.0, exact=False):
    """`atol` may be an array (a tolerance per element, broadcast against the values)."""
    if exact or got.dtype.kind in "biu":
        np.testing.assert_array_equal(got, expected)
    elif np.ndim(atol):
        close = np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
        bad = np.argwhere(~close)[:5]
        assert close.all(), f"not close at {bad.tolist()}: got {got[~close][:5]}, expected {expected[~close][:5]}"
    else:
        np.testing.assert_allclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)


# ---------------------------------------------------------------------------
# strategies


def values_for(dtype, lo=-20, hi=20, finite=True, width=None):
    """Elements of `dtype`: small ints (so products stay in range) or floats in [lo, hi]."""
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return st.booleans()
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return st.integers(max(int(lo), int(info.min)), min(int(hi), int(info.max)))
    w = width or dt.itemsize * 8
    # no subnormals: XLA on CPU flushes them to zero (jax-ml/jax#16200), which NumPy oracles do not model
    if finite:
        return st.floats(lo, hi, width=w, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    return st.one_of(
        st.floats(lo, hi, width=w, allow_nan=False, allow_infinity=False, allow_subnormal=False),
        st.sampled_from([np.inf, -np.inf, np.nan, 0.0, -0.0]),
    )


def shapes(min_dims=0, max_dims=3, min_side=0, max_side=4):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def arrays(dtype, shape, elements=None):
    return hnp.arrays(np.dtype(dtype), shape, elements=elements if elements is not None else values_for(dtype))


@st.composite
def declared(draw, shape):
    """A declared static shape for `shape`: each axis known or None (unknown)."""
    return tuple(s if draw(st.booleans()) else None for s in shape)
