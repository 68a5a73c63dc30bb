"""CumOp (cumsum/cumprod), diff, ARange and Assert against NumPy."""

import numpy as np
import pytest
from core_checks import DTYPES, arrays, check_outputs, declared, rtol_for, shapes, values_for
from hypothesis import given
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph.core import ARange, Assert, CumOp, arange, assert_op, cumprod, cumsum, diff


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("which", ["cumsum", "cumprod"])
def test_cumulative(backend, which, dtype):
    fn, np_fn = {"cumsum": (cumsum, np.cumsum), "cumprod": (cumprod, np.cumprod)}[which]

    @given(st.data())
    def check(data):
        shape = data.draw(shapes(1, 3, 0, 4))
        axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1)))
        x = dg.tensor("x", shape=(None,) * len(shape), dtype=dtype)
        a = data.draw(arrays(dtype, shape, elements=values_for(dtype, -3, 3)))
        y = fn(x, axis)
        expected = np_fn(a, axis=axis)
        assert y.owner.op == CumOp(axis % len(shape) if axis is not None else 0, "add" if which == "cumsum" else "mul")
        tol = rtol_for(expected.dtype, 4 * max(1, a.size))
        check_outputs(backend, [x], [y, getattr(x, which)(axis)], [a], [expected, expected],
                      key=(which, dtype, len(shape), axis), rtol=tol, atol=tol)

    check()


@given(st.data())
def test_cumulative_static_shapes(data):
    shape = data.draw(shapes(1, 3, 0, 4))
    x = dg.tensor("x", shape=data.draw(declared(shape)), dtype="int8")
    a = data.draw(arrays("int8", shape, elements=values_for("int8", -3, 3)))
    outs = [cumsum(x, -1), cumsum(x), cumprod(x, 0)]
    check_outputs("python", [x], outs, [a], [np.cumsum(a, -1), np.cumsum(a), np.cumprod(a, 0)])


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float32", "float64"])
def test_diff(backend, dtype):
    @given(st.data())
    def check(data):
        shape = data.draw(shapes(1, 3, 0, 5))
        axis = data.draw(st.integers(-len(shape), len(shape) - 1))
        n = data.draw(st.integers(0, 3))
        x = dg.tensor("x", shape=(None,) * len(shape), dtype=dtype)
        a = data.draw(arrays(dtype, shape, elements=values_for(dtype, -10, 10)))
        expected = np.diff(a, n=n, axis=axis)
        check_outputs(backend, [x], diff(x, n, axis), [a], expected, key=("diff", dtype, len(shape), n, axis),
                      rtol=rtol_for(expected.dtype, 16), atol=rtol_for(expected.dtype, 16))

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
    outs = [arange(start, stop), arange(start, stop, step), arange(stop), arange(0, stop, 2, dtype="float32"),
            arange(np.float32(0.5), stop)]
    assert [o.type.dtype for o in outs] == ["int64", "float64", "int64", "float32", "float64"]

    @given(st.integers(-5, 5), st.integers(-5, 10), st.sampled_from([1.0, -1.0, 0.5, 2.5, -1.5]))
    def check(b, e, s):
        expected = [np.arange(np.int64(b), np.int32(e)), np.arange(b, e, s), np.arange(np.int32(e)),
                    np.arange(0, e, 2, dtype="float32"), np.arange(np.float32(0.5), np.int32(e))]
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
