"""MatMul, dot, tensordot and Einsum against NumPy (values, dtypes, static and symbolic shapes).

Integer products are compared exactly; float products with rtol of a few ulps of
the output dtype times the contracted length (summation order may differ).
"""

import numpy as np
import pytest
from core_checks import arrays, check_outputs, declared, rtol_for, values_for
from hypothesis import given
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph.core import Einsum, MatMul, dot, einsum, matmul, tensordot
from dimgraph.core.linalg import normalize_subscripts

PRODUCT_DTYPES = ["bool", "int8", "int32", "int64", "float32", "float64"]


@st.composite
def matmul_case(draw):
    m, k, n = (draw(st.integers(0, 3)) for _ in range(3))
    batch = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 2)))]
    nd_a, nd_b = draw(st.integers(0, len(batch))), draw(st.integers(0, len(batch)))
    ba = [draw(st.sampled_from([1, s])) for s in batch[len(batch) - nd_a :]]
    bb = [draw(st.sampled_from([1, s])) for s in batch[len(batch) - nd_b :]]
    a_shape = (k,) if draw(st.booleans()) and not ba else (*ba, m, k)
    b_shape = (k,) if draw(st.booleans()) and not bb else (*bb, k, n)
    return a_shape, b_shape


def _declare(draw, shape):
    """Unknown sizes where allowed: a size-1 batch axis that stretches must stay static."""
    return tuple(s if s == 1 or draw(st.booleans()) else None for s in shape)


@pytest.mark.parametrize(
    "dtypes",
    [
        ("float64", "float64"),
        ("float32", "float32"),
        ("int8", "int8"),
        ("int32", "float32"),
        ("bool", "bool"),
        ("int64", "int8"),
    ],
    ids="-".join,
)
@given(case=matmul_case(), data=st.data())
def test_matmul(dtypes, case, data):
    a_shape, b_shape = case
    a = data.draw(arrays(dtypes[0], a_shape, elements=values_for(dtypes[0], -5, 5)))
    b = data.draw(arrays(dtypes[1], b_shape, elements=values_for(dtypes[1], -5, 5)))
    x = dg.tensor("x", shape=_declare(data.draw, a_shape), dtype=dtypes[0])
    y = dg.tensor("y", shape=_declare(data.draw, b_shape), dtype=dtypes[1])
    expected = np.matmul(a, b)
    outs = [matmul(x, y), x @ y]
    assert isinstance(outs[0].owner.op, MatMul)
    if None not in x.type.shape + y.type.shape:
        assert outs[0].type.shape == expected.shape
    tol = rtol_for(expected.dtype, 4 * max(1, a_shape[-1]))
    check_outputs("python", [x, y], outs, [a, b], [expected, expected], rtol=tol, atol=tol)


def test_matmul_compiled_once(backend):
    a = dg.tensor("a", shape=(None, None, 3))
    b = dg.tensor("b", shape=(1, 3, None), dtype="float32")
    v = dg.tensor("v", shape=(3,), dtype="int32")
    outs = [a @ b, a @ v, v @ b, dot(v, v)]

    @given(st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.data())
    def check(p, m, n, data):
        av = data.draw(arrays("float64", (p, m, 3)))
        bv = data.draw(arrays("float32", (1, 3, n)))
        vv = data.draw(arrays("int32", (3,)))
        expected = [av @ bv, av @ vv, vv @ bv, np.dot(vv, vv)]
        check_outputs(backend, [a, b, v], outs, [av, bv, vv], expected, key=("matmul_fixed",), rtol=1e-6, atol=1e-5)

    check()


def test_matmul_errors(backend):
    with pytest.raises(dg.ShapeError, match="contracted"):
        matmul(dg.tensor("a", shape=(2, 3)), dg.tensor("b", shape=(4, 2)))
    with pytest.raises(ValueError, match="at least 1 axis"):
        matmul(dg.tensor("a", shape=()), dg.tensor("b", shape=(2,)))
    with pytest.raises(dg.ShapeError, match="batch"):
        matmul(dg.tensor("a", shape=(2, 2, 3)), dg.tensor("b", shape=(4, 3, 2)))
    a, b = dg.tensor("a", shape=(None, 2, 2)), dg.tensor("b", shape=(3, 2, 2))
    f = dg.function([a, b], a @ b, backend=backend)
    f(np.ones((3, 2, 2)), np.ones((3, 2, 2)))
    with pytest.raises(dg.ShapeError):
        f(np.ones((1, 2, 2)), np.ones((3, 2, 2)))  # an unknown size that is 1 does not stretch


@given(st.data())
def test_dot(data):
    nd_a, nd_b = data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3))
    k = data.draw(st.integers(0, 3))
    a_shape = tuple(data.draw(st.integers(0, 3)) for _ in range(nd_a))
    b_shape = list(data.draw(st.integers(0, 3)) for _ in range(nd_b))
    if nd_a and nd_b:
        a_shape = a_shape[:-1] + (k,)
        b_shape[-2 if nd_b >= 2 else 0] = k
    b_shape = tuple(b_shape)
    a = data.draw(arrays("float64", a_shape))
    b = data.draw(arrays("int32", b_shape))
    x = dg.tensor("x", shape=data.draw(declared(a_shape)))
    y = dg.tensor("y", shape=data.draw(declared(b_shape)), dtype="int32")
    outs = [dot(x, y)] + ([x.dot(y)] if nd_a else [])
    expected = np.dot(a, b)
    check_outputs("python", [x, y], outs, [a, b], [expected] * len(outs), rtol=1e-12, atol=1e-9)


@given(st.data())
def test_tensordot(data):
    n_contract = data.draw(st.integers(0, 2))
    contracted = [data.draw(st.integers(0, 3)) for _ in range(n_contract)]
    free_a = [data.draw(st.integers(0, 3)) for _ in range(data.draw(st.integers(0, 2)))]
    free_b = [data.draw(st.integers(0, 3)) for _ in range(data.draw(st.integers(0, 2)))]
    a_shape, b_shape = tuple(free_a + contracted), tuple(contracted + free_b)
    a = data.draw(arrays("float64", a_shape))
    b = data.draw(arrays("float64", b_shape))
    x = dg.tensor("x", shape=data.draw(declared(a_shape)))
    y = dg.tensor("y", shape=data.draw(declared(b_shape)))
    # the same contraction as an int and as explicit (permuted) axis lists
    perm = data.draw(st.permutations(range(n_contract)))
    axes_a = [len(free_a) + p for p in perm]
    axes_b = list(perm)
    outs = [tensordot(x, y, n_contract), tensordot(x, y, (axes_a, axes_b))]
    expected = [np.tensordot(a, b, n_contract), np.tensordot(a, b, (axes_a, axes_b))]
    check_outputs("python", [x, y], outs, [a, b], expected, rtol=1e-12, atol=1e-9)


EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->ji", [(2, 3)]),
    ("i,i", [(4,), (4,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]),
    ("...j,j", [(2, 3, 4), (4,)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 1)]),
    ("ij,ij->i", [(1, 3), (2, 3)]),  # a size-1 axis broadcasts, as in NumPy
    ("Ab,bA->", [(2, 3), (3, 2)]),
    ("i...->...", [(2, 3, 4)]),
    ("ijk,kji", [(2, 0, 3), (3, 0, 2)]),
]


@pytest.mark.parametrize("dtype", ["int32", "float32", "float64"])
def test_einsum(backend, dtype):
    """Every case in one compiled function; operands declared with unknown sizes (size-1 axes static)."""
    inputs, outs = [], []
    for k, (subscripts, shapes_) in enumerate(EINSUM_CASES):
        xs = [
            dg.tensor(f"x{k}_{j}", shape=tuple(s if s == 1 else None for s in sh), dtype=dtype)
            for j, sh in enumerate(shapes_)
        ]
        inputs += xs
        outs.append(einsum(subscripts, *xs))
        assert isinstance(outs[-1].owner.op, Einsum)
        # the same with every size static
        static = [dg.tensor(f"s{j}", shape=sh, dtype=dtype) for j, sh in enumerate(shapes_)]
        zeros = [np.zeros(sh, dtype) for sh in shapes_]
        assert einsum(subscripts, *static).type.shape == np.einsum(subscripts, *zeros).shape

    @given(st.data())
    def check(data):
        vals, expected = [], []
        for subscripts, shapes_ in EINSUM_CASES:
            vs = [data.draw(arrays(dtype, sh, elements=values_for(dtype, -5, 5))) for sh in shapes_]
            vals += vs
            expected.append(np.einsum(subscripts, *vs))
        tols = [rtol_for(e.dtype, 50) for e in expected]
        check_outputs(
            backend,
            inputs,
            outs,
            vals,
            expected,
            key=("einsum", dtype),
            rtol=tols,
            atol=tols,
            names=[c[0] for c in EINSUM_CASES],
        )

    check()


def test_einsum_normal_form():
    assert normalize_subscripts("ij,jk", (2, 2)) == "ab,bc->ac"
    assert normalize_subscripts("xy,yz->xz", (2, 2)) == "ab,bc->ac"
    assert normalize_subscripts("...ij,...jk", (3, 2)) == "abc,cd->abd"
    a, b = dg.tensor("a", shape=(2, 3)), dg.tensor("b", shape=(3, 4))
    assert einsum("ij,jk", a, b).owner.op == einsum("pq,qr->pr", a, b).owner.op
    with pytest.raises(ValueError, match="operand"):
        einsum("ij,jk", a)
    with pytest.raises(ValueError, match="name 3 axes"):
        einsum("ijk", a)
    with pytest.raises(ValueError, match="do not appear"):
        einsum("ij->k", a)
    with pytest.raises(dg.ShapeError, match="letter"):
        einsum("ij,ij", a, b)


def test_einsum_unknown_size_does_not_stretch(backend):
    a, b = dg.tensor("a", shape=(None,)), dg.tensor("b", shape=(3,))
    f = dg.function([a, b], einsum("i,i->i", a, b), backend=backend)
    np.testing.assert_allclose(f(np.ones(3), np.ones(3)), 1.0)
    with pytest.raises(dg.ShapeError):
        f(np.ones(1), np.ones(3))


def test_einsum_static_one_stretches_to_zero(backend):
    """A letter of static size 1 in one operand and 0 in another contracts over nothing (NumPy)."""
    a = dg.tensor("a", shape=(None, 1))
    b = dg.tensor("b", shape=(None, None))
    f = dg.function([a, b], dg.core.einsum("ij,ij->i", a, b), backend=backend)
    np.testing.assert_array_equal(
        f(np.ones((2, 1)), np.ones((2, 0))), np.einsum("ij,ij->i", np.ones((2, 1)), np.ones((2, 0)))
    )
    np.testing.assert_array_equal(f(np.full((2, 1), 2.0), np.ones((2, 3))), [6.0, 6.0])
