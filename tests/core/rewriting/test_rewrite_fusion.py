"""Fusion: the rewritten graph has the kernels we expect, computes the same values, and duplicates no work."""

import numpy as np
import pytest

import dimgraph as dg
from dimgraph.core import CAReduce, Elemwise
from dimgraph.core.fused import BLOCK_ELEMENTS, CAReduceElemwise, IndexedLoop
from dimgraph.core.rewriting.fusion import MAX_INPUTS, MAX_STEPS, MAX_STREAMS, _streams
from dimgraph.core.scalar import Composite, ScalarOp

x = dg.vector("x")
y = dg.vector("y")
a = dg.vector("a")
b = dg.vector("b")


def ops(f, kind):
    return [n for n in f.fgraph.nodes if isinstance(n.op, kind)]


def step_names(sop):
    return [op.name for op, _ in sop.steps]


def test_chain_becomes_one_kernel():
    out = dg.exp(x * 2 + y) - dg.sin(y)
    f = dg.function([x, y], out)
    (node,) = f.fgraph.nodes
    assert isinstance(node.op, Elemwise) and isinstance(node.op.scalar_op, Composite)
    assert sorted(step_names(node.op.scalar_op)) == ["add", "exp", "mul", "sin", "sub"]
    xv, yv = np.linspace(-1, 1, 5), np.linspace(2, 3, 5)
    np.testing.assert_allclose(f(xv, yv), np.exp(xv * 2 + yv) - np.sin(yv))


def test_low_rank_subexpression_is_not_recomputed_at_full_rank():
    out = (dg.exp(a[:, None] + b[None, :]) * dg.log1p(b * b)[None, :]).sum(1)
    f = dg.function([a, b], out)
    (red,) = ops(f, CAReduceElemwise)
    assert "log1p" not in step_names(red.op.scalar_op)  # computed once per b, outside the 2-d kernel
    (low,) = [n for n in ops(f, Elemwise) if "log1p" in step_names(n.op.scalar_op)]
    assert low.outputs[0].type.ndim == 1 and sorted(step_names(low.op.scalar_op)) == ["log1p", "square"]
    av, bv = np.linspace(0, 1, 4), np.linspace(-1, 1, 3)
    expected = (np.exp(av[:, None] + bv[None, :]) * np.log1p(bv * bv)[None, :]).sum(1)
    np.testing.assert_allclose(f(av, bv), expected)


def test_shared_producer_is_computed_once_in_a_multi_output_kernel():
    e = dg.exp(x)
    f = dg.function([x], [e * 2, e + 1])
    (node,) = f.fgraph.nodes
    assert node.op.scalar_op.nout == 2 and step_names(node.op.scalar_op).count("exp") == 1
    v = np.linspace(-2, 2, 7)
    r = f(v)
    np.testing.assert_allclose(r[0], np.exp(v) * 2)
    np.testing.assert_allclose(r[1], np.exp(v) + 1)


def test_siblings_sharing_an_input_share_a_loop_and_can_be_excluded():
    f = dg.function([x, y], [dg.exp(x) * y, dg.log(x) + y])
    (node,) = f.fgraph.nodes
    assert node.op.scalar_op.nout == 2
    g = dg.function([x, y], [dg.exp(x) * y, dg.log(x) + y], rewrites={"exclude": ["multi_output_fusion"]})
    assert len(g.fgraph.nodes) == 2
    v, w = np.linspace(0.5, 2, 4), np.arange(4.0)
    for h in (f, g):
        r = h(v, w)
        np.testing.assert_allclose(r[0], np.exp(v) * w)
        np.testing.assert_allclose(r[1], np.log(v) + w)


def test_no_merge_when_a_path_leaves_one_kernel_and_enters_the_other():
    e = dg.exp(x)
    t = e.sum()  # e -> sum -> (x * t): fusing e with x * t would make a cycle
    f = dg.function([x], [e + 1, x * t])
    v = np.linspace(0, 1, 5)
    r = f(v)
    np.testing.assert_allclose(r[0], np.exp(v) + 1)
    np.testing.assert_allclose(r[1], v * np.exp(v).sum())
    f.fgraph.toposort()


def test_different_runtime_shapes_are_not_merged():
    f = dg.function([x, y], [dg.exp(x), dg.exp(y)])
    assert len(f.fgraph.nodes) == 2
    r = f(np.zeros(2), np.zeros(3))
    assert r[0].shape == (2,) and r[1].shape == (3,)


def test_input_limit():
    vs = [dg.vector(f"v{k}") for k in range(MAX_INPUTS + 8)]
    out = vs[0]
    for v in vs[1:]:
        out = dg.sin(out) + v
    f = dg.function(vs, out)
    assert all(len(n.inputs) <= MAX_INPUTS for n in f.fgraph.nodes)
    assert len(f.fgraph.nodes) >= 2
    vals = [np.full(2, 0.01 * k) for k in range(len(vs))]
    expected = vals[0]
    for v in vals[1:]:
        expected = np.sin(expected) + v
    np.testing.assert_allclose(f(*vals), expected)


def test_kernels_are_cut_at_max_steps_and_compute_the_chain():
    out = x
    for k in range(3 * MAX_STEPS):
        out = dg.sin(out) if k % 2 else out * 1.0001 + 0.5
    f = dg.function([x], out)
    kernels = [n for n in f.fgraph.nodes if isinstance(n.op, Elemwise)]
    assert len(kernels) >= 4 and all(len(n.op.scalar_op.steps) <= MAX_STEPS for n in kernels)
    v = np.linspace(-1, 1, 5)
    expected = v
    for k in range(3 * MAX_STEPS):
        expected = np.sin(expected) if k % 2 else expected * 1.0001 + 0.5
    np.testing.assert_allclose(f(v), expected, rtol=1e-12)


def test_array_streams_are_limited_and_scalars_and_full_sums_do_not_count():
    vs = [dg.vector(f"v{k}") for k in range(2 * MAX_STREAMS)]
    scalars = [dg.scalar(f"s{k}") for k in range(2 * MAX_STREAMS)]
    out = vs[0]
    for v, c in zip(vs[1:], scalars):
        out = dg.sin(out) * c + v
    f = dg.function(vs + scalars, out)
    kernels = [n for n in f.fgraph.nodes if isinstance(n.op, Elemwise)]
    assert len(kernels) >= 2 and all(_streams(n.inputs) <= MAX_STREAMS for n in kernels)
    assert max(len(n.inputs) for n in kernels) > MAX_STREAMS  # the scalars ride along
    vals = [np.full(3, 0.01 * k) for k in range(len(vs))] + [np.asarray(1.0 + 0.1 * k) for k in range(len(scalars))]
    expected = vals[0]
    for v, c in zip(vals[1 : len(vs)], vals[len(vs) :]):
        expected = np.sin(expected) * c + v
    np.testing.assert_allclose(f(*vals), expected)
    # a log-density's many gradient sums stay in one pass: fully reduced outputs are accumulators
    mu = x * scalars[0]
    terms = [dg.exp(mu * c).sum() for c in scalars]
    g = dg.function([x, *scalars], terms)
    (loop,) = ops(g, CAReduceElemwise)
    assert len(loop.outputs) == len(terms)
    np.testing.assert_allclose(
        g(*vals[:1], *vals[len(vs) :]), [np.exp(vals[0] * 1.0 * c).sum() for c in vals[len(vs) :]]
    )


def test_reduce_of_elemwise_is_one_node_and_a_near_miss_is_not():
    f = dg.function([x, y], (x * y).sum())
    (node,) = f.fgraph.nodes
    assert isinstance(node.op, CAReduceElemwise) and node.op.reducer == "add"
    np.testing.assert_allclose(f(np.arange(3.0), np.ones(3)), 3.0)
    p = x * y  # read by the sum and returned: the product must exist, so no fused reduction without it
    g = dg.function([x, y], [p.sum(), p])
    assert not ops(g, CAReduceElemwise) and not ops(g, CAReduce)
    (loop,) = ops(g, IndexedLoop)  # one pass writes the product in full and sums it
    assert sorted(kind for _, kind, _ in loop.op.results) == ["full", "reduce"]
    total, product = g(np.arange(3.0), np.full(3, 2.0))
    assert float(total) == 6.0 and product.tolist() == [0.0, 2.0, 4.0]
    h = dg.function([x, y], (x * y).sum(), rewrites={"exclude": ["reduce_fusion"]})
    assert not ops(h, CAReduceElemwise)


@pytest.mark.parametrize("reducer", ["add", "mul", "maximum", "minimum"])
@pytest.mark.parametrize("axis", [(0,), (1,), (0, 1)])
def test_careduce_elemwise_blocks_match_numpy(reducer, axis):
    rows = BLOCK_ELEMENTS // 50 + 7  # several blocks along axis 0
    sq = Composite(in_dtypes=("float64", "float64"), steps=((ScalarOp("mul"), (0, 1)),), outs=(2,))
    m = dg.matrix("m")
    r = dg.tensor("r", shape=(1, None))
    out = CAReduceElemwise(sq, reducer, axis)(m, r)
    f = dg.function([m, r], out, rewrites="none")
    rng = np.random.default_rng(0)
    mv, rv = rng.uniform(0.99, 1.01, (rows, 100)), rng.uniform(0.99, 1.01, (1, 100))
    ref = {"add": np.sum, "mul": np.prod, "maximum": np.max, "minimum": np.min}[reducer]((mv * rv), axis=axis)
    np.testing.assert_allclose(f(mv, rv), ref, rtol=1e-10)


@pytest.mark.parametrize("dtype", ["int8", "bool", "float32"])
def test_careduce_elemwise_dtypes_and_empty(dtype):
    v = dg.vector("v", dtype=dtype)
    out = dg.core.sum(v * v) if dtype != "bool" else dg.core.any(v & v)
    f = dg.function([v], out)
    assert ops(f, CAReduceElemwise)
    for n in (0, 1, 5):
        data = (np.arange(n) % 3).astype(dtype)
        want = dg.function([v], out, rewrites="none")(data)
        got = f(data)
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_careduce_elemwise_checks_broadcast_like_elemwise():
    f = dg.function([x, y], (x * y).sum())
    with pytest.raises(dg.ShapeError):
        f(np.ones(1), np.ones(3))


def test_logp_and_gradient_sums_share_one_pass():
    mu, sigma = dg.scalar("mu"), dg.scalar("sigma")
    z = (x - mu) / sigma
    logp = (-0.5 * z * z - dg.log(sigma)).sum()
    dmu = (z / sigma).sum()
    f = dg.function([x, mu, sigma], [logp, dmu])
    (red,) = ops(f, CAReduceElemwise)
    assert len(red.outputs) == 2 and red.op.scalar_op.nout == 2
    assert step_names(red.op.scalar_op).count("true_div") == 2  # z computed once, then z / sigma
    v = np.linspace(-1, 2, 6)
    zv = (v - 0.5) / 1.5
    logp_v, dmu_v = f(v, 0.5, 1.5)
    np.testing.assert_allclose(logp_v, (-0.5 * zv * zv - np.log(1.5)).sum())
    # dmu cancels to about 1e-16: compare to the summation error bound (terms' magnitude x eps)
    np.testing.assert_allclose(dmu_v, (zv / 1.5).sum(), rtol=0, atol=8 * np.finfo(float).eps * np.abs(zv / 1.5).sum())
    g = dg.function([x, mu, sigma], [logp, (z / sigma).max()])  # different reductions: separate nodes
    assert not any(len(n.outputs) > 1 for n in ops(g, CAReduceElemwise))


def test_fused_kernels_run_on_every_backend(backend):
    mu = dg.scalar("mu")
    z = x - mu
    outs = [
        dg.exp(x * 2 + y) - dg.sin(y),  # chain
        (dg.exp(a[:, None] + b[None, :]) * dg.log1p(b * b)[None, :]).sum(1),  # rank rule + reduce fusion
        (-0.5 * z * z).sum(),  # logp-like sum ...
        z.sum(),  # ... and its gradient term
        dg.log(dg.exp(x).sum()),  # stabilized logsumexp
    ]
    ins = [x, y, a, b, mu]
    vals = [np.linspace(-1, 1, 4), np.linspace(0, 2, 4), np.linspace(0, 1, 3), np.linspace(-1, 1, 5), 0.25]
    want = dg.function(ins, outs, backend="python", rewrites="none")(*vals)
    got = dg.function(ins, outs, backend=backend)(*vals)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-12)


def test_existing_composites_are_inlined():
    two = Composite(
        in_dtypes=("float64", "float64"),
        steps=((ScalarOp("exp"), (0,)), (ScalarOp("add"), (2, 1))),
        outs=(3, 2),
    )
    s, e = Elemwise(two)(x, y)
    f = dg.function([x, y], s * e - y)
    (node,) = f.fgraph.nodes
    assert sorted(step_names(node.op.scalar_op)) == ["add", "exp", "mul", "sub"]
    v, w = np.linspace(0, 1, 3), np.arange(3.0)
    np.testing.assert_allclose(f(v, w), (np.exp(v) + w) * np.exp(v) - w)
