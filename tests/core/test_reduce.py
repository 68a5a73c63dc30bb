"""Reductions against NumPy: every CAReduce reducer, mean/var/std, logsumexp (scipy), argmax/argmin.

Two kinds of tests: per dtype, one compiled function holding every reduction
over a fixed set of (axis, keepdims) configurations, run on every backend with
hypothesis data (sizes 0 and 1 included); and, on the python backend, random
structure (ndim, axis subset, keepdims, declared static or unknown sizes),
compiled per example. Float results use rtol of a few ulps of the output dtype
times the number of elements (summation order may differ between backends).
"""

import numpy as np
import pytest
import scipy.special as sp
from core_checks import DTYPES, arrays, check_outputs, rtol_for, values_for
from hypothesis import given
from hypothesis import strategies as st

import dimgraph as dg

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's oracles on empty slices


def _lse(a, axis=None, keepdims=False):
    out = np.asarray(sp.logsumexp(a.astype(np.float64), axis=axis, keepdims=keepdims))
    out = out.reshape(np.sum(a, axis=axis, keepdims=keepdims).shape)  # scipy gives a 0-d input shape (1,)
    return out.astype(a.dtype if a.dtype.kind == "f" else np.float64)


# name: (dimgraph function, NumPy oracle, needs non-empty reduced axes)
REDUCERS = {
    "sum": (dg.core.sum, np.sum, False),
    "prod": (dg.core.prod, np.prod, False),
    "max": (dg.core.max, np.max, True),
    "min": (dg.core.min, np.min, True),
    "all": (dg.core.all, np.all, False),
    "any": (dg.core.any, np.any, False),
    "mean": (dg.core.mean, np.mean, False),
    "var": (dg.core.var, np.var, False),
    "std": (dg.core.std, np.std, False),
    "logsumexp": (dg.core.logsumexp, _lse, True),
    "argmax": (dg.core.argmax, np.argmax, True),
    "argmin": (dg.core.argmin, np.argmin, True),
}
CONFIGS = [(None, False), (None, True), (0, False), (-1, True), ((0, 2), False), ((1,), True), ((), False)]
ARG_CONFIGS = [(None, False), (None, True), (0, False), (-1, True), (1, False)]
JAX_SHAPES = [(1, 1, 1), (3, 1, 2), (1, 2, 3), (2, 3, 1), (3, 3, 2)]
JAX_EMPTY_SHAPES = [(0, 2, 3), (2, 0, 1), (1, 3, 0)]


def _graph(dtype, nonempty):
    x = dg.tensor("x", shape=(None, None, None), dtype=dtype)
    outs, names, calls = [], [], []
    for name, (fn, np_fn, needs) in REDUCERS.items():
        if needs and not nonempty:
            continue
        for axis, keepdims in ARG_CONFIGS if name.startswith("arg") else CONFIGS:
            if name.startswith("arg") and axis == ():
                continue
            outs.append(fn(x, axis=axis, keepdims=keepdims))
            names.append(f"{name}(axis={axis}, keepdims={keepdims})")
            calls.append((np_fn, axis, keepdims))
    for ddof in (1, 2):  # var/std with ddof
        outs += [dg.core.var(x, (0, 1), ddof=ddof), dg.core.std(x, -1, True, ddof=ddof)]
        names += [f"var(ddof={ddof})", f"std(ddof={ddof})"]
        calls += [
            (lambda a, axis, keepdims, d=ddof: np.var(a, axis=axis, keepdims=keepdims, ddof=d), (0, 1), False),
            (lambda a, axis, keepdims, d=ddof: np.std(a, axis=axis, keepdims=keepdims, ddof=d), -1, True),
        ]
    return x, outs, names, calls


@pytest.mark.parametrize("nonempty", [True, False], ids=["nonempty", "maybe-empty"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_reductions(backend, dtype, nonempty):
    x, outs, names, calls = _graph(dtype, nonempty)

    @given(st.data())
    def check(data):
        if backend == "jax":  # XLA compiles per shape (3 s for these 80 outputs): a few, each axis 0, 1 and more
            shape = data.draw(st.sampled_from(JAX_SHAPES if nonempty else JAX_SHAPES + JAX_EMPTY_SHAPES))
        else:
            shape = tuple(data.draw(st.integers(1 if nonempty else 0, 3)) for _ in range(3))
        lo, hi = (-3, 3) if np.dtype(dtype).kind in "iu" else (-20, 20)  # products stay in range
        a = data.draw(arrays(dtype, shape, elements=values_for(dtype, lo, hi)))
        with np.errstate(all="ignore"):
            expected = [np.asarray(fn(a, axis=axis, keepdims=keepdims)) for fn, axis, keepdims in calls]
        tols = [rtol_for(e.dtype, 8 * max(1, a.size)) for e in expected]
        check_outputs(
            backend, [x], outs, [a], expected, key=("reduce", dtype, nonempty), names=names, rtol=tols, atol=tols
        )

    check()


@st.composite
def reduction_case(draw):
    name = draw(st.sampled_from(sorted(REDUCERS)))
    dtype = draw(st.sampled_from(DTYPES))
    ndim = draw(st.integers(0, 3))
    nonempty = REDUCERS[name][2]
    shape = tuple(draw(st.integers(1 if nonempty else 0, 3)) for _ in range(ndim))
    decl = tuple(s if draw(st.booleans()) else None for s in shape)
    if name.startswith("arg"):
        axis = draw(st.one_of(st.none(), st.integers(-ndim, ndim - 1))) if ndim else None
    else:
        axis = draw(st.one_of(st.none(), st.lists(st.integers(0, ndim - 1), unique=True).map(tuple))) if ndim else None
        if isinstance(axis, tuple) and len(axis) == 1 and draw(st.booleans()):
            axis = axis[0] - ndim  # a bare negative int
    return name, dtype, shape, decl, axis, draw(st.booleans())


@given(reduction_case(), st.data())
def test_reduction_structure(case, data):
    """Random ndim / axis subsets / keepdims / declared sizes: static shapes, shape_of and values."""
    name, dtype, shape, decl, axis, keepdims = case
    fn, np_fn, _ = REDUCERS[name]
    x = dg.tensor("x", shape=decl, dtype=dtype)
    y = fn(x, axis=axis, keepdims=keepdims)
    a = data.draw(arrays(dtype, shape, elements=values_for(dtype, -3, 3)))
    with np.errstate(all="ignore"):
        expected = np.asarray(np_fn(a, axis=axis, keepdims=keepdims))
    if None not in decl:
        assert y.type.shape == expected.shape
    tol = rtol_for(expected.dtype, 8 * max(1, a.size))
    check_outputs("python", [x], y, [a], expected, rtol=tol, atol=tol, names=[name])


def test_static_shapes_and_empty_errors():
    x = dg.tensor("x", shape=(2, None, 0))
    assert dg.core.sum(x, axis=(0, 2)).type.shape == (None,)
    assert dg.core.sum(x, axis=1, keepdims=True).type.shape == (2, 1, 0)
    assert dg.core.sum(x).type.shape == ()
    assert dg.core.sum(dg.tensor("b", shape=(3,), dtype="int8")).type.dtype == np.sum(np.zeros(3, np.int8)).dtype.name
    with pytest.raises(ValueError, match="empty axis 2"):
        dg.core.max(x, axis=2)
    with pytest.raises(ValueError, match="out of range"):
        dg.core.sum(x, axis=3)
    with pytest.raises(ValueError, match="repeated"):
        dg.core.sum(x, axis=(0, -3))


def test_logsumexp_is_stable_and_handles_inf(backend):
    x = dg.tensor("x", shape=(None,))
    f = dg.function([x], dg.logsumexp(x), backend=backend)
    np.testing.assert_allclose(f(np.array([1000.0, 1000.0])), 1000.0 + np.log(2.0))
    assert f(np.array([-np.inf, -np.inf])) == -np.inf
    assert f(np.array([np.inf, 1.0])) == np.inf


@pytest.mark.parametrize("shape, axis", [((0, 3), 0), ((3, 0), 1), ((0,), None), ((2, 0), 0), ((0, 2), (0, 1))])
def test_logsumexp_over_a_statically_empty_axis(backend, shape, axis):
    """Sum of no terms: -inf, with no max shift (max has no value there)."""
    x = dg.tensor("x", shape=shape)
    f = dg.function([x], dg.logsumexp(x, axis=axis), backend=backend)
    with np.errstate(divide="ignore"):
        expected = np.log(np.sum(np.exp(np.zeros(shape)), axis=axis))
    np.testing.assert_array_equal(f(np.zeros(shape)), expected)
