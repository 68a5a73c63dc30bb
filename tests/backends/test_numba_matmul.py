"""The numba backend's printed `a @ b` kernels (BLAS `np.dot` for float32/float64, loops otherwise) vs NumPy.

Shapes include empty and length-1 axes, 1-d operands and broadcast batch axes;
dtypes the BLAS ones, integers (wrapping as NumPy's), bool and mixed pairs. The
kernel is nopython: a loop body calling it has no object mode.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph.core import matmul

DTYPE_PAIRS = [
    ("float64", "float64"),
    ("float32", "float32"),
    ("int32", "float32"),
    ("int64", "int64"),
    ("int8", "int8"),
    ("bool", "bool"),
    ("bool", "int64"),
    ("uint8", "int8"),
]
# (a's shape, b's shape) with batch sizes and m, k, n filled in by the test; "1" is a static size 1
FORMS = [
    ("k", "k"),
    ("mk", "k"),
    ("k", "kn"),
    ("mk", "kn"),
    ("bmk", "kn"),
    ("k", "bkn"),
    ("bmk", "k"),
    ("bmk", "1kn"),
    ("cbmk", "bkn"),
]

_COMPILED = {}


def compiled(dtypes, form):
    key = (dtypes, form)
    if key not in _COMPILED:
        shapes = [tuple(1 if c == "1" else None for c in f) for f in form]
        a, b = (dg.tensor(n, shape=s, dtype=d) for n, s, d in zip("ab", shapes, dtypes))
        _COMPILED[key] = dg.function([a, b], matmul(a, b), backend="numba")
    return _COMPILED[key]


def _values(rng, dtype, shape):
    if dtype == "bool":
        return rng.random(shape) < 0.5
    if np.dtype(dtype).kind in "iu":
        info = np.iinfo(dtype)
        return rng.integers(max(info.min, -100), min(info.max, 100), shape, endpoint=True).astype(dtype)  # int8 wraps
    return rng.normal(size=shape).astype(dtype)


@pytest.mark.parametrize("dtypes", DTYPE_PAIRS, ids="-".join)
@pytest.mark.parametrize("form", FORMS, ids=lambda f: "@".join(f))
@given(sizes=st.fixed_dictionaries({c: st.integers(0, 3) for c in "mkncb"}), seed=st.integers(0, 2**16))
def test_printed_matmul_matches_numpy(dtypes, form, sizes, seed):
    rng = np.random.default_rng(seed)
    a, b = (_values(rng, d, tuple(1 if c == "1" else sizes[c] for c in f)) for d, f in zip(dtypes, form))
    f = compiled(dtypes, form)
    got, expected = f(a, b), np.matmul(a, b)
    assert got.dtype == expected.dtype and got.shape == expected.shape
    if expected.dtype.kind == "f":
        tol = 10 * np.finfo(expected.dtype).eps * max(1, a.shape[-1])
        np.testing.assert_allclose(
            got, expected, rtol=tol, atol=tol * np.abs(a).max(initial=1) * np.abs(b).max(initial=1)
        )
    else:
        np.testing.assert_array_equal(got, expected)
    assert f._compiled.kernel_digests and "objmode" not in f.source  # a printed kernel, called by the driver


def test_strided_operands_and_blas_source():
    a, b = dg.tensor("a", shape=(None, None)), dg.tensor("b", shape=(None, None))
    f = dg.function([a, b], a @ b, backend="numba")
    assert "np.dot(a0, a1)" in f.source and "np.ascontiguousarray(x0)" in f.source
    av, bv = np.arange(24.0).reshape(4, 6)[:, ::2], np.arange(12.0).reshape(4, 3).T  # neither C-contiguous
    np.testing.assert_allclose(f(av, bv), av @ bv)


def test_integer_matmul_is_a_printed_loop():
    a, b = dg.tensor("a", shape=(None, None), dtype="int64"), dg.tensor("b", shape=(None,), dtype="int64")
    f = dg.function([a, b], a @ b, backend="numba")
    assert "np.dot" not in f.source and "out[i] += s * np.int64(x1[p])" in f.source
    av, bv = np.arange(6).reshape(2, 3), np.array([1, -2, 3])
    np.testing.assert_array_equal(f(av, bv), av @ bv)


def test_shape_errors_at_run_time():
    a, b = dg.tensor("a", shape=(None, None)), dg.tensor("b", shape=(None, None))
    f = dg.function([a, b], a @ b, backend="numba")
    with pytest.raises(dg.ShapeError, match="contracted axes differ"):
        f(np.ones((2, 3)), np.ones((4, 2)))
    x, y = dg.tensor("x", shape=(None, 2, 2)), dg.tensor("y", shape=(None, 2, 2))
    g = dg.function([x, y], x @ y, backend="numba")
    np.testing.assert_allclose(g(np.ones((3, 2, 2)), np.ones((3, 2, 2))), np.full((3, 2, 2), 2.0))
    with pytest.raises(dg.ShapeError, match="batch axis"):
        g(np.ones((1, 2, 2)), np.ones((3, 2, 2)))  # an unknown size that is 1 does not stretch


def test_matmul_in_a_loop_body_is_nopython():
    W, x0 = dg.tensor("W", shape=(3, 3)), dg.tensor("x0", shape=(3,))
    final, _ = dg.scan(lambda x: dg.tanh(matmul(W, x)), init=x0, n_steps=4)
    f = dg.function([W, x0], final, backend="numba")
    assert "objmode" not in f.source and "perform_caller" not in f.source
    expected = np.ones(3)
    for _ in range(4):
        expected = np.tanh(0.5 * expected)
    np.testing.assert_allclose(f(np.eye(3) * 0.5, np.ones(3)), expected, rtol=1e-14)
