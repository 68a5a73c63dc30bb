"""Reductions against NumPy: every CAReduce reducer, mean/var/std, logsumexp (scipy), argmax/argmin.

Axis subsets, keepdims, sizes 0 and 1 and unknown declared sizes are drawn by
hypothesis; each (function, dtype, ndim, axis, keepdims) graph compiles once per
backend. Float results use rtol of a few ulps of the output dtype times the
reduced length (summation order may differ between backends).
"""

import numpy as np
import pytest
import scipy.special as sp
from core_checks import DTYPES, arrays, check_outputs, rtol_for, values_for
from hypothesis import given, settings
from hypothesis import strategies as st

import dimgraph as dg

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")  # NumPy's oracles on empty slices

FEW = settings(max_examples=max(4, settings.default.max_examples // 2))

REDUCERS = {
    "sum": (dg.core.sum, np.sum),
    "prod": (dg.core.prod, np.prod),
    "max": (dg.core.max, np.max),
    "min": (dg.core.min, np.min),
    "all": (dg.core.all, np.all),
    "any": (dg.core.any, np.any),
    "mean": (dg.core.mean, np.mean),
    "var": (dg.core.var, np.var),
    "std": (dg.core.std, np.std),
}


@st.composite
def reduction_case(draw, nonempty=False):
    ndim = draw(st.integers(0, 3))
    shape = tuple(draw(st.integers(1 if nonempty else 0, 3)) for _ in range(ndim))
    axis = draw(st.one_of(st.none(), st.lists(st.integers(0, ndim - 1), unique=True).map(tuple) if ndim else st.none()))
    if axis is not None and len(axis) == 1 and draw(st.booleans()):
        axis = axis[0] - ndim if draw(st.booleans()) else axis[0]  # a bare int, maybe negative
    keepdims = draw(st.booleans())
    return shape, axis, keepdims


def _compare(backend, fn, np_fn, dtype, shape, axis, keepdims, data, key, scale=4.0):
    x = dg.tensor("x", shape=(None,) * len(shape), dtype=dtype)
    y = fn(x, axis=axis, keepdims=keepdims)
    with np.errstate(all="ignore"):
        expected = np.asarray(np_fn(data, axis=axis, keepdims=keepdims))
    n = max(1, data.size)
    tol = rtol_for(expected.dtype, scale * n)
    check_outputs(backend, [x], y, [data], expected, key=key, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", sorted(REDUCERS))
def test_reducers(backend, name, dtype):
    fn, np_fn = REDUCERS[name]

    @FEW
    @given(reduction_case(nonempty=name in ("max", "min")), st.data())
    def check(case, data):
        shape, axis, keepdims = case
        lo, hi = (-3, 3) if name == "prod" else (-20, 20)
        values = data.draw(arrays(dtype, shape, elements=values_for(dtype, lo, hi)))
        _compare(backend, fn, np_fn, dtype, shape, axis, keepdims, values, key=(name, dtype, shape.__len__(), axis, keepdims))

    check()


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


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
@pytest.mark.parametrize("ddof", [0, 1])
def test_var_std_ddof(backend, dtype, ddof):
    @FEW
    @given(reduction_case(nonempty=True), st.data())
    def check(case, data):
        shape, axis, keepdims = case
        values = data.draw(arrays(dtype, shape))
        with np.errstate(all="ignore"):
            ev = np.asarray(np.var(values, axis=axis, keepdims=keepdims, ddof=ddof))
            es = np.asarray(np.std(values, axis=axis, keepdims=keepdims, ddof=ddof))
        x = dg.tensor("x", shape=(None,) * len(shape), dtype=dtype)
        outs = [dg.core.var(x, axis, keepdims, ddof), dg.core.std(x, axis, keepdims, ddof)]
        tol = rtol_for(ev.dtype, 40 * max(1, values.size))
        check_outputs(backend, [x], outs, [values], [ev, es], key=("varstd", dtype, ddof, len(shape), axis, keepdims), rtol=tol, atol=tol)

    check()


@pytest.mark.parametrize("dtype", ["int8", "int64", "float32", "float64"])
def test_logsumexp(backend, dtype):
    @FEW
    @given(reduction_case(nonempty=True), st.data())
    def check(case, data):
        shape, axis, keepdims = case
        values = data.draw(arrays(dtype, shape, elements=values_for(dtype, -800, 800) if dtype == "float64" else None))
        expected = np.asarray(sp.logsumexp(values.astype(np.float64), axis=axis, keepdims=keepdims))
        expected = expected.astype(values.dtype if values.dtype.kind == "f" else np.float64)
        expected = expected.reshape(np.sum(values, axis=axis, keepdims=keepdims).shape)  # scipy gives 0-d input (1,)
        _compare(backend, dg.core.logsumexp, lambda a, axis, keepdims: expected, dtype, shape, axis, keepdims, values,
                 key=("lse", dtype, len(shape), axis, keepdims), scale=8.0)

    check()


def test_logsumexp_is_stable_and_handles_inf():
    x = dg.tensor("x", shape=(None,))
    f = dg.function([x], dg.logsumexp(x), backend="python")
    np.testing.assert_allclose(f(np.array([1000.0, 1000.0])), 1000.0 + np.log(2.0))
    assert f(np.array([-np.inf, -np.inf])) == -np.inf
    assert f(np.array([np.inf, 1.0])) == np.inf


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float32", "float64"])
@pytest.mark.parametrize("which", ["argmax", "argmin"])
def test_argmax_argmin(backend, which, dtype):
    fn, np_fn = getattr(dg.core, which), getattr(np, which)

    @FEW
    @given(reduction_case(nonempty=True), st.data())
    def check(case, data):
        shape, axis, keepdims = case
        if isinstance(axis, tuple):
            axis = axis[0] if len(axis) == 1 else None
        values = data.draw(arrays(dtype, shape, elements=values_for(dtype, -3, 3)))  # ties: the first wins
        _compare(backend, fn, np_fn, dtype, shape, axis, keepdims, values, key=(which, dtype, len(shape), axis, keepdims))

    check()


@given(st.data())
def test_reductions_with_static_shapes(data):
    """Declared static sizes (0 and 1 included) give the static output shapes NumPy's result has."""
    shape, axis, keepdims = data.draw(reduction_case(nonempty=True))
    decl = tuple(s if data.draw(st.booleans()) else None for s in shape)
    x = dg.tensor("x", shape=decl)
    values = data.draw(arrays("float64", shape))
    outs = [dg.core.sum(x, axis, keepdims), dg.core.max(x, axis, keepdims), dg.core.mean(x, axis, keepdims)]
    expected = [np.sum(values, axis=axis, keepdims=keepdims), np.max(values, axis=axis, keepdims=keepdims),
                np.mean(values, axis=axis, keepdims=keepdims)]
    for o, e in zip(outs, expected):
        assert all(s is None or s == t for s, t in zip(o.type.shape, np.shape(e)))
        if None not in decl:
            assert o.type.shape == np.shape(e)
    check_outputs("python", [x], outs, [values], expected, rtol=1e-12, atol=1e-12)
