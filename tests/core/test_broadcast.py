"""The run-time broadcast rule (`dimgraph.core.broadcast`): one rule and one message on every backend.

Only an axis of static size 1 stretches; where sizes differ on another axis every
backend raises a ShapeError naming the op, the axis, the operand that differs,
what was expected and what came (numba's printed guards name op and axis only).
"""

import re

import numpy as np
import pytest

import dimgraph as dg
from dimgraph.core.broadcast import broadcast_shape, letter_sizes, mismatch_message
from dimgraph.core.linalg import einsum, matmul
from dimgraph.core.subtensor import set_subtensor


def _sized(backend, message):
    """`message` as a regex; on numba only its part before the sizes (the guard's text is a constant)."""
    if backend == "numba":
        message = message.split(" has different sizes")[0] + " has different sizes"
    return re.escape(message)


def test_broadcast_shape_is_numpy_broadcasting_restricted_to_static_size_1():
    statics = [(None, 1, None), (None, None), (None,)]
    shapes = [(2, 1, 4), (3, 4), (4,)]
    assert broadcast_shape("f", statics, shapes) == np.broadcast_shapes(*shapes) == (2, 3, 4)
    assert broadcast_shape("f", [(1,), (1,)], [(1,), (1,)]) == (1,)
    assert broadcast_shape("f", [(None,), (1,)], [(0,), (1,)]) == (0,)  # a static 1 stretches to 0, as NumPy
    with pytest.raises(
        dg.ShapeError, match=re.escape("f: axis 1 has different sizes: input 1 has 1 where input 0 has 4")
    ):
        broadcast_shape("f", [(None, None), (None,)], [(2, 4), (1,)])
    with pytest.raises(
        dg.ShapeError, match=re.escape("f: letter 'j' has different sizes: input 1 has 5 where input 0 has 3")
    ):
        letter_sizes("f", ["ij", "jk"], [(None, None), (None, None)], [(2, 3), (5, 4)])
    assert letter_sizes("f", ["ij", "jk"], [(None, 1), (None, None)], [(2, 1), (5, 4)]) == {"i": 2, "j": 5, "k": 4}
    assert mismatch_message("f", "axis 0").startswith(
        "f: axis 0 has different sizes across inputs; only axes of static size 1"
    )


def test_elemwise_names_the_input_and_both_sizes(backend):
    x, y = dg.tensor("x", shape=(None, None)), dg.tensor("y", shape=(None, None))
    f = dg.function([x, y], x * y, backend=backend)
    np.testing.assert_array_equal(f(np.full((2, 3), 2.0), np.full((2, 3), 3.0)), np.full((2, 3), 6.0))
    with pytest.raises(
        dg.ShapeError, match=_sized(backend, "mul: axis 1 has different sizes: input 1 has 1 where input 0 has 3")
    ):
        f(np.ones((2, 3)), np.ones((2, 1)))  # an unknown size that is 1 at run time does not stretch


def test_fused_reduction_checks_as_elemwise(backend):
    x, y = dg.tensor("x", shape=(None,)), dg.tensor("y", shape=(None,))
    f = dg.function([x, y], (x * y).sum(), backend=backend)
    assert float(f(np.arange(3.0), np.arange(3.0))) == 5.0
    with pytest.raises(dg.ShapeError, match=r"axis 0 has different sizes"):
        f(np.ones(3), np.ones(4))


def test_matmul_batch_names_the_input(backend):
    a, b = dg.tensor("a", shape=(None, 2, 2)), dg.tensor("b", shape=(None, 2, 2))
    f = dg.function([a, b], matmul(a, b), backend=backend)
    av, bv = np.arange(12.0).reshape(3, 2, 2), np.ones((3, 2, 2))
    np.testing.assert_allclose(f(av, bv), av @ bv)
    with pytest.raises(dg.ShapeError, match=r"batch axis 0 has different sizes(: input 1 has 1 where input 0 has 3)?"):
        f(av, np.ones((1, 2, 2)))


def test_einsum_names_the_letter(backend):
    a, b = dg.tensor("a", shape=(None, None)), dg.tensor("b", shape=(None, None))
    f = dg.function([a, b], einsum("ij,jk->ik", a, b), backend=backend)
    with pytest.raises(dg.ShapeError, match=r"letter 'b' has different sizes(: input 1 has 1 where input 0 has 3)?"):
        f(np.ones((2, 3)), np.ones((1, 4)))


def test_set_subtensor_value_names_value_and_selection(backend):
    x, v = dg.tensor("x", shape=(None, None)), dg.tensor("v", shape=(None,))
    f = dg.function([x, v], set_subtensor(x[0], v), backend=backend)
    np.testing.assert_array_equal(f(np.zeros((2, 3)), np.arange(3.0)), [[0.0, 1.0, 2.0], [0.0, 0.0, 0.0]])
    expected = r"axis 0 has different sizes: the value has 2 where the selection has 3"
    if backend == "numba":
        expected = r"axis 0 of the value has different sizes from the selection's"
    with pytest.raises(dg.ShapeError, match=expected):
        f(np.zeros((2, 3)), np.ones(2))
