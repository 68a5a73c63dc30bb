"""Join (concatenate, stack) and Split against NumPy: values, dtype promotion, static and symbolic shapes."""

import numpy as np
import pytest
from conftest import BACKENDS
from core_checks import DTYPES, arrays, check_outputs, declared, shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph.core import Join, Split, concatenate, split, split_sizes, stack


@st.composite
def join_case(draw):
    base = draw(shapes(1, 3, 0, 3))
    axis = draw(st.integers(-len(base), len(base) - 1))
    k = draw(st.integers(1, 3))
    pieces = []
    for _ in range(k):
        sh = list(base)
        sh[axis] = draw(st.integers(0, 3))
        pieces.append(tuple(sh))
    dtypes = [draw(st.sampled_from(DTYPES)) for _ in range(k)]
    return pieces, axis, dtypes


@given(join_case(), st.data())
def test_concatenate(case, data):
    pieces, axis, dtypes = case
    xs = [dg.tensor(f"x{k}", shape=data.draw(declared(sh)), dtype=dt) for k, (sh, dt) in enumerate(zip(pieces, dtypes))]
    vals = [data.draw(arrays(dt, sh)) for sh, dt in zip(pieces, dtypes)]
    y = concatenate(xs, axis=axis)
    expected = np.concatenate(vals, axis=axis)
    assert isinstance(y.owner.op, Join)
    if all(None not in x.type.shape for x in xs):
        assert y.type.shape == expected.shape
    check_outputs("python", xs, y, vals, expected, exact=True)


@given(st.data())
def test_stack(data):
    shape = data.draw(shapes(0, 2, 0, 3))
    k = data.draw(st.integers(1, 3))
    axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    dtypes = [data.draw(st.sampled_from(DTYPES)) for _ in range(k)]
    xs = [dg.tensor(f"x{j}", shape=data.draw(declared(shape)), dtype=dt) for j, dt in enumerate(dtypes)]
    vals = [data.draw(arrays(dt, shape)) for dt in dtypes]
    y = stack(xs, axis=axis)
    check_outputs("python", xs, y, vals, np.stack(vals, axis=axis), exact=True)


def test_join_compiled_once(backend):
    x = dg.tensor("x", shape=(None, 2), dtype="int8")
    y = dg.tensor("y", shape=(None, 2), dtype="float32")
    outs = [concatenate([x, y]), concatenate([x, x, np.ones((1, 2), "int64")]), stack([x, x], axis=-1)]

    @given(st.integers(0, 3), st.integers(0, 3), st.data())
    def check(n, m, data):
        a = data.draw(arrays("int8", (n, 2)))
        b = data.draw(arrays("float32", (m, 2)))
        expected = [np.concatenate([a, b]), np.concatenate([a, a, np.ones((1, 2), "int64")]), np.stack([a, a], -1)]
        check_outputs(backend, [x, y], outs, [a, b], expected, key=("join_fixed",))

    check()


def test_join_errors(backend):
    with pytest.raises(dg.ShapeError, match="axis 1"):
        concatenate([dg.tensor("a", shape=(2, 3)), dg.tensor("b", shape=(2, 4))])
    with pytest.raises(ValueError, match="same number of axes"):
        concatenate([dg.tensor("a", shape=(2, 3)), dg.tensor("b", shape=(2,))])
    with pytest.raises(ValueError, match="zero-dimensional"):
        concatenate([dg.tensor("a", shape=())])
    with pytest.raises(dg.ShapeError):
        stack([dg.tensor("a", shape=(2,)), dg.tensor("b", shape=(3,))])
    a, b = dg.tensor("a", shape=(None, None)), dg.tensor("b", shape=(None, 2))
    f = dg.function([a, b], concatenate([a, b]), backend=backend)
    with pytest.raises(dg.ShapeError):
        f(np.ones((1, 3)), np.ones((1, 2)))


@given(st.data())
def test_split_sections_and_indices(data):
    _check_split(data, "python")


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "python"])
@settings(max_examples=8)  # a compile per example
@given(st.data())
def test_split_sections_and_indices_compiled(backend, data):
    _check_split(data, backend)


def _check_split(data, backend):
    shape = data.draw(shapes(1, 3, 0, 6))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    n = shape[axis]
    decl = data.draw(declared(shape))
    x = dg.tensor("x", shape=decl)
    a = data.draw(arrays("float64", shape))
    divisors = [k for k in range(1, 4) if n % k == 0] if n else [1, 2]
    sections = data.draw(st.sampled_from(divisors))
    indices = data.draw(st.lists(st.integers(-7, 7), max_size=3))
    if data.draw(st.booleans()):
        indices = sorted(i for i in indices if i >= 0)
    outs = split(x, sections, axis=axis) + split(x, indices, axis=axis)
    expected = np.split(a, sections, axis=axis) + np.split(a, indices, axis=axis)
    check_outputs(backend, [x], outs, [a], expected, exact=True)


def test_split_op_static_and_symbolic(backend):
    x = dg.tensor("x", shape=(None, 3))
    k = dg.tensor("k", shape=(), dtype="int64")
    p1, p2 = split_sizes(x, [1, k])
    q = split(x, 2)
    r = split(dg.tensor("z", shape=(6,)), [1, 4])
    assert isinstance(p1.owner.op, Split) and p1.type.shape == (1, 3) and p2.type.shape == (None, 3)
    assert [v.type.shape for v in r] == [(1,), (3,), (2,)]
    assert isinstance(r[0].owner.op, Split)

    @given(st.integers(1, 3), st.data())
    def check(half, data):
        n = 2 * half
        a = data.draw(arrays("float64", (n, 3)))
        expected = [a[:1], a[1:], *np.split(a, 2)]
        check_outputs(backend, [x, k], [p1, p2, *q], [a, n - 1], expected, key=("split_fixed",))

    check()
    f = dg.function([x, k], [p1, p2], backend=backend)
    with pytest.raises(dg.ShapeError, match="add up"):
        f(np.ones((4, 3)), 1)
    g = dg.function([x], q, backend=backend)
    with pytest.raises(dg.ShapeError):
        g(np.ones((3, 3)))


def test_split_errors():
    with pytest.raises(dg.ShapeError, match="equal division"):
        split(dg.tensor("x", shape=(5,)), 2)
    with pytest.raises(dg.ShapeError, match="add up"):
        Split(0, (1, 2))(dg.tensor("x", shape=(4,)))
