"""CumOp (cumsum/cumprod), diff, ARange and Assert against NumPy."""

import numpy as np
import pytest
from core_checks import DTYPES, arrays, check_outputs, declared, rtol_for, shapes, values_for
from hypothesis import given
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph.core import ARange, Assert, CumOp, arange, assert_op, cumprod, cumsum, diff

CUM_AXES = [None, 0, 1, -1]


@pytest.mark.parametrize("dtype", DTYPES)
def test_cumulative(backend, dtype):
    """cumsum/cumprod over every axis (and flattened), as functions and methods, in one compiled function."""
    x = dg.tensor("x", shape=(None, None), dtype=dtype)
    outs = [cumsum(x, ax) for ax in CUM_AXES] + [cumprod(x, ax) for ax in CUM_AXES] + [x.cumsum(0), x.cumprod(-1)]
    names = [f"cumsum({ax})" for ax in CUM_AXES] + [f"cumprod({ax})" for ax in CUM_AXES] + ["x.cumsum", "x.cumprod"]
    assert outs[1].owner.op == CumOp(0, "add") and outs[7].owner.op == CumOp(1, "mul")

    @given(st.integers(0, 4), st.integers(0, 4), st.data())
    def check(n, m, data):
        a = data.draw(arrays(dtype, (n, m), elements=values_for(dtype, -3, 3)))
        expected = [np.cumsum(a, ax) for ax in CUM_AXES] + [np.cumprod(a, ax) for ax in CUM_AXES]
        expected += [np.cumsum(a, 0), np.cumprod(a, -1)]
        tols = [rtol_for(e.dtype, 4 * max(1, a.size)) for e in expected]
        check_outputs(backend, [x], outs, [a], expected, key=("cum", dtype), rtol=tols, atol=tols, names=names)

    check()


@given(st.data())
def test_cumulative_static_shapes(data):
    shape = data.draw(shapes(1, 3, 0, 4))
    x = dg.tensor("x", shape=data.draw(declared(shape)), dtype="int8")
    a = data.draw(arrays("int8", shape, elements=values_for("int8", -3, 3)))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    outs = [cumsum(x, axis), cumsum(x), cumprod(x, axis)]
    check_outputs("python", [x], outs, [a], [np.cumsum(a, axis), np.cumsum(a), np.cumprod(a, axis)])


DIFF_CASES = [(0, -1), (1, -1), (2, -1), (1, 0), (3, 0)]


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float32", "float64"])
def test_diff(backend, dtype):
    x = dg.tensor("x", shape=(None, None), dtype=dtype)
    outs = [diff(x, n, axis) for n, axis in DIFF_CASES]

    @given(st.integers(0, 5), st.integers(0, 5), st.data())
    def check(n0, n1, data):
        a = data.draw(arrays(dtype, (n0, n1), elements=values_for(dtype, -10, 10)))
        expected = [np.diff(a, n=n, axis=axis) for n, axis in DIFF_CASES]
        tols = [rtol_for(e.dtype, 16) for e in expected]
        check_outputs(
            backend,
            [x],
            outs,
            [a],
            expected,
            key=("diff", dtype),
            rtol=tols,
            atol=tols,
            names=[f"diff(n={n}, axis={axis})" for n, axis in DIFF_CASES],
        )

    check()


@given(st.data())
def test_diff_static_shapes(data):
    shape = data.draw(shapes(1, 3, 0, 5))
    x = dg.tensor("x", shape=data.draw(declared(shape)))
    n = data.draw(st.integers(0, 6))
    a = data.draw(arrays("float64", shape))
    check_outputs("python", [x], diff(x, n, 0), [a], np.diff(a, n, 0), rtol=1e-12, atol=1e-12)


@given(
    st.one_of(st.integers(-6, 6), st.floats(-6, 6).map(lambda v: round(v, 1))),
    st.one_of(st.none(), st.integers(-6, 12), st.floats(-6, 12).map(lambda v: round(v, 1))),
    st.one_of(st.integers(-3, 3).filter(bool), st.sampled_from([0.5, -0.7, 1.5])),
)
def test_arange_constant(start, stop, step):
    expected = np.arange(start, step=step) if stop is None else np.arange(start, stop, step)
    y = arange(start, stop, step)
    assert isinstance(y.owner.op, ARange)
    assert y.type.shape == expected.shape and y.type.dtype == expected.dtype
    check_outputs("python", [], y, [], expected, rtol=1e-12, atol=1e-12)


def test_arange_symbolic(backend):
    start = dg.tensor("start", shape=(), dtype="int64")
    stop = dg.tensor("stop", shape=(), dtype="int32")
    step = dg.tensor("step", shape=(), dtype="float64")
    outs = [
        arange(start, stop),
        arange(start, stop, step),
        arange(stop),
        arange(0, stop, 2, dtype="float32"),
        arange(np.float32(0.5), stop),
    ]
    assert [o.type.dtype for o in outs] == ["int64", "float64", "int64", "float32", "float64"]

    @given(st.integers(-5, 5), st.integers(-5, 10), st.sampled_from([1.0, -1.0, 0.5, 2.5, -1.5]))
    def check(b, e, s):
        expected = [
            np.arange(np.int64(b), np.int32(e)),
            np.arange(b, e, s),
            np.arange(np.int32(e)),
            np.arange(0, e, 2, dtype="float32"),
            np.arange(np.float32(0.5), np.int32(e)),
        ]
        check_outputs(backend, [start, stop, step], outs, [b, e, s], expected, key=("arange",), rtol=1e-12, atol=1e-12)

    check()


def test_arange_errors():
    with pytest.raises(ValueError, match="step must not be zero"):
        arange(0, 5, 0)
    with pytest.raises(TypeError, match="0-d"):
        arange(dg.tensor("v", shape=(2,)))


def test_assert(backend):
    x = dg.tensor("x", shape=(None,))
    y = assert_op(x * 2, (x >= 0).all(), dg.core.sum(x) < 100, msg="x must be non-negative and small")
    assert isinstance(y.owner.op, Assert) and y.type == (x * 2).type
    f = dg.function([x], y, backend=backend)
    np.testing.assert_allclose(f(np.arange(3.0)), [0.0, 2.0, 4.0])
    with pytest.raises(AssertionError, match="non-negative and small"):
        f(np.array([1.0, -1.0]))
    with pytest.raises(AssertionError, match="non-negative and small"):
        f(np.array([99.0, 2.0]))
    z = assert_op(x, x > 0, msg="positive")  # a non-scalar condition is reduced with all
    assert dg.core.shape_of(z)[0] is not None
    with pytest.raises(AssertionError, match="positive"):
        dg.function([x], z, backend=backend)(np.array([1.0, 0.0]))
    with pytest.raises(TypeError, match="0-d"):
        Assert("m")(x, x > 0)
