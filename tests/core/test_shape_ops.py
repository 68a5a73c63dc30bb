"""Reshape (with -1 and symbolic sizes), Alloc / broadcast_to, zeros/ones/full(_like) against NumPy."""

import numpy as np
import pytest
from core_checks import DTYPES, arrays, check_outputs, declared, shapes
from hypothesis import given
from hypothesis import strategies as st

import dimgraph as dg


@st.composite
def reshape_case(draw):
    shape = draw(shapes(0, 3, 0, 4))
    size = int(np.prod(shape))
    # a target shape with the same size: factor the size, then maybe put one -1
    if size == 0:
        target = list(draw(st.sampled_from([(0,), (0, 3), (2, 0, 1), (1, 0)])))
    else:
        target, rest = [], size
        for _ in range(draw(st.integers(0, 3))):
            divs = [d for d in range(1, rest + 1) if rest % d == 0]
            d = draw(st.sampled_from(divs))
            target.append(d)
            rest //= d
        target.append(rest)
        draw(st.randoms()).shuffle(target)
    if size and draw(st.booleans()):
        target[draw(st.integers(0, len(target) - 1))] = -1
    return shape, tuple(target)


@given(reshape_case(), st.data())
def test_reshape(case, data):
    shape, target = case
    decl = data.draw(declared(shape))
    x = dg.tensor("x", shape=decl, dtype="int32")
    y = dg.core.reshape(x, target)
    a = data.draw(arrays("int32", shape))
    expected = np.reshape(a, target)
    if None not in decl:
        assert y.type.shape == expected.shape
    check_outputs("python", [x], [y, x.reshape(*target), dg.core.flatten(x)], [a], [expected, expected, a.reshape(-1)])


def test_reshape_symbolic_target(backend):
    x = dg.tensor("x", shape=(None, 3))
    n = dg.core.shape_of(x)[0]
    y = dg.core.reshape(x, (3, n))
    z = dg.core.reshape(x, (-1,))
    assert y.type.shape == (3, None) and z.type.shape == (None,)

    @given(st.integers(0, 4), st.data())
    def check(rows, data):
        a = data.draw(arrays("float64", (rows, 3)))
        check_outputs(backend, [x], [y, z], [a], [a.reshape(3, rows), a.reshape(-1)], key=("reshape_sym",))

    check()


def test_reshape_errors():
    x = dg.tensor("x", shape=(2, 3))
    with pytest.raises(ValueError, match="cannot reshape"):
        dg.core.reshape(x, (4, 2))
    with pytest.raises(ValueError, match="at most one -1"):
        dg.core.reshape(x, (-1, -1))
    with pytest.raises(ValueError, match="cannot reshape"):
        dg.core.reshape(x, (4, -1))
    f = dg.function([y := dg.tensor("y", shape=(None,))], dg.core.reshape(y, (2, -1)), backend="python")
    with pytest.raises(ValueError):
        f(np.ones(3))


@st.composite
def broadcast_case(draw):
    target = draw(shapes(0, 3, 0, 3))
    k = draw(st.integers(0, len(target)))
    vshape = tuple(draw(st.sampled_from([1, s])) for s in target[len(target) - k :])
    return vshape, target


@given(broadcast_case(), st.sampled_from(DTYPES), st.data())
def test_broadcast_to(case, dtype, data):
    vshape, target = case
    decl = data.draw(declared(vshape))  # broadcast_to may stretch unknown sizes: that is what it is for
    v = dg.tensor("v", shape=decl, dtype=dtype)
    n = dg.tensor("n", shape=(), dtype="int64")
    # the first target size symbolic (an input), the rest constant
    tshape = (n,) + target[1:] if target else ()
    out = dg.core.broadcast_to(v, tshape)
    a = data.draw(arrays(dtype, vshape))
    inputs, values = ([v, n], [a, np.int64(target[0])]) if target else ([v], [a])
    check_outputs("python", inputs, out, values, np.broadcast_to(a, target), exact=True)


def test_broadcast_to_compiled_once(backend):
    v = dg.tensor("v", shape=(None, 1), dtype="int32")
    n = dg.tensor("n", shape=(), dtype="int64")
    outs = [
        dg.core.broadcast_to(v, (2, dg.core.shape_of(v)[0], n)),
        dg.core.broadcast_to(v, (dg.core.shape_of(v)[0], 3)),
    ]

    @given(st.integers(0, 3), st.integers(0, 3), st.data())
    def check(rows, k, data):
        a = data.draw(arrays("int32", (rows, 1)))
        expected = [np.broadcast_to(a, (2, rows, k)), np.broadcast_to(a, (rows, 3))]
        check_outputs(backend, [v, n], outs, [a, np.int64(k)], expected, key=("broadcast_to",), exact=True)

    check()


def test_broadcast_to_errors():
    with pytest.raises(ValueError, match="cannot broadcast"):
        dg.core.broadcast_to(dg.tensor("v", shape=(3,)), (2, 4))
    with pytest.raises(ValueError, match="more axes"):
        dg.core.broadcast_to(dg.tensor("v", shape=(3, 1)), (3,))


@pytest.mark.parametrize("dtype", ["bool", "int8", "int64", "float32", "float64"])
def test_creation_functions(backend, dtype):
    x = dg.tensor("x", shape=(None, 2), dtype=dtype)

    @given(st.integers(0, 3), st.data())
    def check(rows, data):
        a = data.draw(arrays(dtype, (rows, 2)))
        outs = [
            dg.core.zeros_like(x),
            dg.core.ones_like(x),
            dg.core.full_like(x, 1),
            dg.core.zeros_like(x, dtype="float32"),
            dg.core.zeros((2, 3), dtype=dtype),
            dg.core.ones((0, 1), dtype=dtype),
            dg.core.full((2,), 7, dtype="int16"),
            dg.core.full((3, 1), 2.5),
        ]
        expected = [
            np.zeros_like(a),
            np.ones_like(a),
            np.full_like(a, 1),
            np.zeros_like(a, dtype="float32"),
            np.zeros((2, 3), dtype=dtype),
            np.ones((0, 1), dtype=dtype),
            np.full((2,), 7, dtype="int16"),
            np.full((3, 1), 2.5),
        ]
        check_outputs(backend, [x], outs, [a], expected, key=("creation", dtype), exact=True)

    check()


def test_zero_d_constants_stay_zero_d(backend):
    """0-d constants (as gradients seed with) keep their shape in generated code, rewrites or not."""
    x = dg.tensor("x", shape=(2,))
    for rewrites in ("none", "default"):
        f = dg.function([x], [dg.core.ones(()) + x[0], dg.core.full((), 2.5) * x], backend=backend, rewrites=rewrites)
        a, b = f(np.array([3.0, 4.0]))
        assert a.shape == () and a == 4.0
        np.testing.assert_array_equal(b, [7.5, 10.0])
