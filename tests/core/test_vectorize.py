"""vectorize_graph: a batched graph equals the unbatched graph run once per batch element, stacked.

Random graphs chain steps drawn from every op family (elemwise, reductions,
DimShuffle, Reshape, Alloc, basic and advanced indexing with set/inc, Join,
Split, MatMul, Einsum, cumulative ops, Argmax, shapes, matrix functions, and
gathers whose positions depend on the batched data) and
end with a gradient, so the batching rules and the Blockwise fallback are all
exercised, on every backend. The oracle is the python backend on each batch
element of the unbatched graph.
"""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dimgraph as dg
from dimgraph import core
from dimgraph.core import linalg as la
from dimgraph.core.blockwise import Blockwise
from dimgraph.core.graph import toposort
from dimgraph.core.vectorize import NotBatchable, vectorize_graph
from dimgraph.errors import ShapeError

SHAPE = (3, 4)


def _steps():
    """Shape-preserving (3, 4) -> (3, 4) steps, one or more op families each."""
    return {
        "elemwise": lambda v: v * 0.5 + dg.sin(v),
        "reduce": lambda v: v - core.sum(v, axis=1, keepdims=True) / 4 + core.max(v, axis=0, keepdims=True),
        "matmul_dimshuffle": lambda v: v + 0.1 * (v @ (core.transpose(v) @ v)),
        "matmul_one_side": lambda v: (
            core.constant(np.arange(9.0).reshape(3, 3) * 0.1) @ v + v @ (np.eye(4) * 0.5)
        ),  # one GEMM each
        "reshape_slice": lambda v: core.reshape(core.reshape(v, (12,))[::-1], (3, 4)),
        "join_subtensor": lambda v: core.concatenate([v[1:], v[:1]], axis=0),
        "advanced": lambda v: v[np.array([2, 0, 1])] * v[:, np.array([1, 1, 0, 3])],
        "set_inc": lambda v: core.inc_subtensor(core.set_subtensor(v[1], v[2] * 2.0)[np.array([0, 0, 2])], 1.0),
        "cumsum": lambda v: core.cumsum(v, axis=1) * 0.3,
        "einsum": lambda v: core.einsum("ij,kj->ik", v, v) @ v * 0.05 + v,
        "split": lambda v: core.concatenate(core.split(v, [1, 3], axis=1)[::-1], axis=1),
        "alloc": lambda v: v + core.broadcast_to(core.sum(v, axis=0), SHAPE),
        "argmax": lambda v: v + core.cast(core.argmax(v, axis=1), "float64")[:, None],
        "gather_batched": lambda v: (
            v[core.argmax(v, axis=1) % 3] * 0.5 + v[:, core.argmax(v, axis=0)]
        ),  # positions vary with the batch
        "shape": lambda v: v * core.cast(core.shape_of(v)[0], "float64"),
        "matrix": lambda v: (
            la.cholesky(v @ core.transpose(v) + 4.0 * np.eye(3)) @ v
            + la.slogdet(v[:, :3] @ core.transpose(v[:, :3]) + np.eye(3))[1]
        ),
    }


STEPS = _steps()


def _stacked(f, batch, xs):
    outs = None
    for idx in itertools.product(*[range(n) for n in batch]):
        res = f(*[x[tuple(0 if x.shape[a] == 1 else i for a, i in enumerate(idx))] for x in xs])
        if outs is None:
            outs = [np.empty(batch + r.shape) for r in res]
        for o, r in zip(outs, res):
            o[idx] = r
    return outs


def _check(backend, names, batch, seed):
    x = dg.tensor("x", shape=SHAPE)
    y = x
    for name in names:
        y = STEPS[name](y)
    g = dg.grad((y**2).sum() * 0.01, x)
    xb = dg.tensor("xb", shape=batch + SHAPE)
    yb, gb = vectorize_graph([y, g], {x: xb})
    assert yb.type.ndim == len(batch) + 2 and gb.type.shape[-2:] == SHAPE
    data = np.random.default_rng(seed).normal(size=batch + SHAPE)
    got = dg.function([xb], [yb, gb], backend=backend)(data)
    expected = _stacked(dg.function([x], [y, g], backend="python"), batch, [data])
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


graphs = st.lists(st.sampled_from(sorted(STEPS)), min_size=1, max_size=3)
batches = st.lists(st.integers(1, 3), min_size=1, max_size=2).map(tuple)


@given(names=graphs, batch=batches, seed=st.integers(0, 1000))
@settings(max_examples=30)
def test_random_graphs_python(names, batch, seed):
    _check("python", names, batch, seed)


@pytest.mark.parametrize("name", sorted(STEPS))
def test_every_family_on_every_backend(backend, name):
    _check(backend, [name, "elemwise"], (2,), 0)


@given(names=graphs, batch=batches, seed=st.integers(0, 1000))
@settings(max_examples=2, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_random_graphs_every_backend(backend, names, batch, seed):
    _check(backend, names, batch, seed)


def _op_types(outputs):
    return {type(n.op).__name__ for n in toposort(outputs)}


def test_native_families_do_not_become_blockwise():
    x = dg.tensor("x", shape=SHAPE)
    xb = dg.tensor("xb", shape=(5,) + SHAPE)
    for name in sorted(set(STEPS) - {"matrix"}):
        (yb,) = vectorize_graph([STEPS[name](x)], {x: xb})
        assert "Blockwise" not in _op_types([yb]), name
    (mb,) = vectorize_graph([STEPS["matrix"](x)], {x: xb})
    assert "Blockwise" in _op_types([mb])


def test_a_blockwise_fallback_checks_every_batch_element(backend):
    """A Blockwise of an op with run-time checks (a gather) raises for a bad element; an unknown batch size
    (no unrolling on c: its host loop; numba: objmode; jax: vmap) matches NumPy."""
    from dimgraph.core.subtensor import ARRAY, AdvancedSubtensor

    x, i = dg.tensor("x", shape=(None, 4)), dg.tensor("i", shape=(None, 2), dtype="int64")
    f = dg.function([x, i], Blockwise(AdvancedSubtensor((ARRAY,)), "(a),(b)->(b)")(x, i), backend=backend)
    data = np.arange(12.0).reshape(3, 4)
    np.testing.assert_allclose(f(data, np.array([[0, 3], [1, 1], [2, 0]])), [[0.0, 3.0], [5.0, 5.0], [10.0, 8.0]])
    with pytest.raises(IndexError):
        f(data, np.array([[0, 3], [1, 4], [2, 0]]))


def test_a_fused_gather_batches_natively(backend):
    """GatherElemwise (a gather inside an elementwise loop, reduced) gets the batch axes itself, not a Blockwise."""
    from dimgraph.core.fused import GatherElemwise
    from dimgraph.core.scalar import Composite, ScalarOp

    add = Composite(in_dtypes=("float64", "float64"), steps=((ScalarOp("add"), (0, 1)),), outs=(2,))
    data, idx, w = dg.matrix("data"), dg.vector("idx", dtype="int64"), dg.matrix("w")
    y = GatherElemwise(add, gather_axes=(0, None), reducer="add", axis=(1,))(
        idx, w, data
    )  # sum_j data[idx[i], j] + w[i, j]
    db, wb = dg.tensor("db", shape=(1, None, None)), dg.tensor("wb", shape=(2, None, None))
    yb = vectorize_graph(y, {data: db, w: wb})
    assert "Blockwise" not in _op_types([yb])
    rng = np.random.default_rng(0)
    D, I, W = rng.normal(size=(1, 3, 4)), np.array([2, 0, 1, 1, -1]), rng.normal(size=(2, 5, 4))
    got = dg.function([db, idx, wb], yb, backend=backend)(D, I, W)
    np.testing.assert_allclose(got, (D[:, I] + W).sum(axis=2))


def test_an_indexed_loop_batches_through_its_parts(backend):
    """IndexedLoop (gather, elementwise, sum and scatter-add in one 1-d loop) batches as its unfused ops, not a Blockwise."""
    from dimgraph.core.fused import IndexedLoop
    from dimgraph.core.scalar import Composite, ScalarOp

    mul_add = Composite(
        in_dtypes=("float64", "float64"), steps=((ScalarOp("mul"), (0, 1)), (ScalarOp("add"), (2, 0))), outs=(3,)
    )
    loop = IndexedLoop(
        mul_add, gathered=(True, False), results=((0, "reduce", "add"), (0, "scatter", None), (0, "full", None))
    )
    table, x, idx, base = dg.vector("table"), dg.vector("x"), dg.vector("idx", dtype="int64"), dg.vector("base")
    outs = loop(idx, x, table, base, idx)  # o = t * x + t with t = table[idx]: sum(o), base.at[idx].add(o), o
    tb, xb, bb = dg.tensor("tb", shape=(None, 1, 3)), dg.tensor("xb", shape=(2, None, 5)), dg.tensor("bb", shape=(1, 3))
    batched = vectorize_graph(outs, {table: tb, x: xb, base: bb})
    assert "Blockwise" not in _op_types(batched) and "IndexedLoop" not in _op_types(batched)
    rng = np.random.default_rng(4)
    T, X, B, I = (
        rng.normal(size=(2, 1, 3)),
        rng.normal(size=(2, 4, 5)),
        rng.normal(size=(1, 3)),
        np.array([2, 0, -1, 2, 1]),
    )
    got = dg.function([tb, xb, bb, idx], batched, backend=backend)(T, X, B, I)
    o = T[..., I] * X + T[..., I]
    scattered = np.broadcast_to(B, (2, 4, 3)).copy()
    for j, i in enumerate(I):
        scattered[..., i] += o[..., j]
    for g, want in zip(got, [o.sum(axis=-1), scattered, o]):
        np.testing.assert_allclose(g, want, rtol=1e-12)
    with pytest.raises(IndexError):
        dg.function([tb, xb, bb, idx], batched, backend=backend)(T, X, B, np.array([0, 1, 3, 0, 0]))


def test_batched_elementwise_work_stays_fused():
    x, mu = dg.tensor("x", shape=(5,)), dg.scalar("mu")
    y = ((dg.exp(x - mu) * 2 + 1) ** 2).sum()
    mus = dg.tensor("mus", shape=(None,))
    f = dg.function([x, mus], vectorize_graph(y, {mu: mus}), backend="python")
    kernels = [type(n.op).__name__ for n in f.fgraph.toposort() if type(n.op).__name__ != "DimShuffle"]
    assert kernels == ["CAReduceElemwise"]  # one fused loop and reduction, as unbatched
    xv, mv = np.arange(5.0), np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(f(xv, mv), [((np.exp(xv - m) * 2 + 1) ** 2).sum() for m in mv])


def test_batch_axes_of_several_replacements_broadcast():
    x, w = dg.tensor("x", shape=(3,)), dg.tensor("w", shape=(3,))
    y = (x * w).sum()
    xb, wb = dg.tensor("xb", shape=(2, 1, 3)), dg.tensor("wb", shape=(4, 3))
    yb = vectorize_graph(y, {x: xb, w: wb})
    assert yb.type.shape == (2, 4)
    xv, wv = np.arange(6.0).reshape(2, 1, 3), np.arange(12.0).reshape(4, 3)
    np.testing.assert_allclose(dg.function([xb, wb], yb, backend="python")(xv, wv), (xv * wv).sum(-1))


def test_unbatched_outputs_are_returned_unchanged():
    x, c = dg.tensor("x", shape=(3,)), dg.tensor("c", shape=(3,))
    y, z = x.sum(), c * 2
    yb, zb = vectorize_graph([y, z], {x: dg.tensor("xb", shape=(2, 3))})
    assert zb is z and yb.type.shape == (2,)


def test_replacement_errors():
    x = dg.tensor("x", shape=(3,))
    with pytest.raises(TypeError, match="dtype float32, expected float64"):
        vectorize_graph(x * 2, {x: dg.tensor("b", shape=(2, 3), dtype="float32")})
    with pytest.raises(ShapeError, match="must end with its shape"):
        vectorize_graph(x * 2, {x: dg.tensor("b", shape=(2, 4))})
    with pytest.raises(ValueError, match="fewer axes"):
        vectorize_graph(x * 2, {x: dg.scalar("s")})


def test_an_op_that_cannot_be_batched_is_named():
    n = dg.scalar("n", dtype="int64")
    y = core.arange(n)
    with pytest.raises(NotBatchable, match="ARange"):
        vectorize_graph(y, {n: dg.tensor("ns", shape=(2,), dtype="int64")})
    v, m = dg.tensor("v", shape=(4,)), dg.tensor("m", shape=(4,), dtype="bool")
    with pytest.raises(NotBatchable, match="AdvancedSubtensor.*boolean mask"):
        vectorize_graph((v[m] ** 2).sum(), {m: dg.tensor("ms", shape=(2, 4), dtype="bool")})


def test_a_blockwise_whose_core_shape_varies_is_a_shape_error():
    from dimgraph.core.subtensor import ARRAY, AdvancedSubtensor

    v, m = dg.tensor("v", shape=(2, 4)), dg.tensor("m", shape=(2, 4), dtype="bool")
    f = dg.function([v, m], Blockwise(AdvancedSubtensor((ARRAY,)), "(a),(b)->(c)")(v, m), backend="python")
    np.testing.assert_allclose(f(np.ones((2, 4)), np.array([[1, 0, 1, 0], [0, 1, 1, 0]], bool)), np.ones((2, 2)))
    with pytest.raises(ShapeError, match=r"batch element \(1,\) gives an output of shape \(4,\).*cannot be batched"):
        f(np.ones((2, 4)), np.array([[1, 0, 1, 0], [1, 1, 1, 1]], bool))


def test_blockwise_gradient_sums_broadcast_batch_axes():
    a = dg.tensor("a", shape=(3, 3))
    b = dg.tensor("b", shape=(4, 3))
    cost = la.solve(a, b, b_ndim=1).sum()
    ga = dg.grad(cost, a)
    assert ga.type.shape == (3, 3)
    A = np.eye(3) * 2 + 0.1
    B = np.arange(12.0).reshape(4, 3)
    got = dg.function([a, b], ga, backend="python")(A, B)
    inv_t = np.linalg.inv(A).T
    expected = sum(-np.outer(inv_t @ np.ones(3), np.linalg.solve(A, bk)) for bk in B)
    np.testing.assert_allclose(got, expected, rtol=1e-10)
    assert any(isinstance(n.op, Blockwise) for n in toposort([ga]))


def test_jacobian_is_one_batched_reverse_pass(backend):
    """The Jacobian graph does not grow with the size of y, works for unknown sizes, and matches finite differences."""

    def graph_size(n):
        x = dg.tensor("x", shape=(n,))
        return len(toposort([dg.jacobian(dg.tanh(x) * x.sum(), x)]))

    assert graph_size(100) == graph_size(10)
    x = dg.tensor("x", shape=(None,))
    a = dg.tensor("a", shape=(None, None))
    y = dg.tanh(a @ x) * x.sum()
    f = dg.function([a, x], [y, dg.jacobian(y, x)], backend=backend)
    rng = np.random.default_rng(0)
    A, X = rng.normal(size=(4, 3)), rng.normal(size=3)
    _, jac = f(A, X)
    assert jac.shape == (4, 3)
    eps = 1e-6
    fd = np.stack([(f(A, X + eps * e)[0] - f(A, X - eps * e)[0]) / (2 * eps) for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-8)
