"""The engine: rewrite selection, the trace, fixed points, deep graphs, and stabilized values."""

import sys

import numpy as np
import pytest
from graph_state import assert_same_state, graph_state

import dimgraph as dg
from dimgraph.core import Elemwise
from dimgraph.core.fgraph import FunctionGraph
from dimgraph.core.rewriting import RewriteError, RewriteSpec, node_rewriter, rewrite_graph
from dimgraph.core.rewriting.engine import Context, LocalPhase, RewriteTrace

x = dg.vector("x")


def test_none_keeps_the_graph_as_written():
    out = dg.log(1 + x * 1)
    f = dg.function([x], out, rewrites="none")
    names = sorted(str(n.op) for n in f.fgraph.toposort())
    assert names == ["DimShuffle{x}", "DimShuffle{x}", "add", "log", "mul"]
    assert not f.rewrite_trace.counts


def test_include_exclude_by_name_tag_and_phase():
    out = dg.log(1 + x * 1)
    names = lambda f: sorted(n.op.scalar_op.name for n in f.fgraph.nodes if isinstance(n.op, Elemwise))  # noqa: E731
    assert names(dg.function([x], out, rewrites={"exclude": ["fusion"]})) == ["log1p"]
    assert names(dg.function([x], out, rewrites={"exclude": ["fusion", "log1p"]})) == ["add", "log"]
    assert names(dg.function([x], out, rewrites={"exclude": ["fusion", "stabilize"]})) == ["add", "log"]
    assert names(dg.function([x], out, rewrites=RewriteSpec(include=("mul_one",)))) == ["add", "log"]
    with pytest.raises(ValueError, match="unknown keys"):
        dg.function([x], out, rewrites={"exlude": ["fusion"]})
    with pytest.raises(ValueError, match="expected 'default'"):
        dg.function([x], out, rewrites="fast")


def test_trace_from_config_and_counts_always():
    out = dg.log(1 + x) * 2
    f = dg.function([x], out)
    assert f.rewrite_trace.counts["log1p"] == 1 and f.rewrite_trace.events == []
    dg.config.rewrite_trace = True
    try:
        g = dg.function([x], out)
    finally:
        dg.config.rewrite_trace = False
    phases = [e[0] for e in g.rewrite_trace.events]
    assert ("stabilize", "log1p", "log", "log1p") in g.rewrite_trace.events
    assert phases.index("stabilize") < phases.index("fusion")
    assert "log1p: 1" in str(g.rewrite_trace)


def test_work_list_reaches_a_fixed_point_without_rewalking():
    calls = []

    @node_rewriter([Elemwise], name="count_calls")
    def count_calls(fgraph, node):
        calls.append(node)

    out = x
    for _ in range(200):
        out = dg.sin(out)
    fg = FunctionGraph([x], [out])
    ctx = Context(fg, RewriteSpec(), RewriteTrace())
    LocalPhase("test", [count_calls]).run(fg, ctx)
    assert len(calls) == 200  # each node offered once: nothing changed, nothing is revisited


def test_a_rewrite_that_never_settles_is_an_error():
    @node_rewriter([Elemwise], name="flip")
    def flip(fgraph, node):
        return dg.core.neg(dg.core.neg(node.outputs[0]))  # grows the graph forever

    fg = FunctionGraph([x], [dg.sin(x)])
    with pytest.raises(RewriteError, match="fixed point"):
        LocalPhase("test", [flip]).run(fg, Context(fg, RewriteSpec(), RewriteTrace()))


def test_wrongly_typed_replacement_is_an_error():
    @node_rewriter([Elemwise], name="bad")
    def bad(fgraph, node):
        return node.outputs[0].astype("float32")

    fg = FunctionGraph([x], [dg.sin(x)])
    with pytest.raises(RewriteError, match="bad replaced"):
        LocalPhase("test", [bad]).run(fg, Context(fg, RewriteSpec(), RewriteTrace()))


def test_ten_thousand_node_chain_compiles_without_recursion():
    out = x
    for k in range(10_000):
        out = dg.tanh(out) if k % 2 else out * 1.0001
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(500)
    try:
        f = dg.function([x], out)
    finally:
        sys.setrecursionlimit(limit)
    ref = np.array([0.3, -0.2])
    for k in range(10_000):
        ref = np.tanh(ref) if k % 2 else ref * 1.0001
    np.testing.assert_allclose(f(np.array([0.3, -0.2])), ref)


def test_rewrite_graph_returns_the_graph():
    fg = FunctionGraph([x], [x * 1])
    assert rewrite_graph(fg, "default") is fg and fg.outputs[0] is fg.inputs[0]


def test_rewrites_change_their_copy_only():
    """A FunctionGraph holds no node of the graph it was built from, nodes over constants only included, and an
    inlined macro comes in as new nodes: rewriting (merge, folding, fusion) leaves the graph and the macro's inner
    graph as they were."""
    half = dg.exp(dg.core.constant(np.array([-0.7, 0.1])))  # over constants only
    u = dg.vector("u")
    macro = dg.op_from_graph([u], [dg.log1p(dg.exp(u * dg.exp(dg.core.constant(0.2))))])
    out = (macro(x * half) + half * dg.exp(dg.core.constant(np.array([-0.7, 0.1])))).sum()
    before = graph_state([out])
    fg = FunctionGraph([x], [out])
    assert not {id(n) for n in fg.nodes} & before[0].keys()
    rewrite_graph(fg, "default")
    assert_same_state(before, graph_state([out]), "rewriting")
    value = dg.function([x], out, backend="python")(np.array([0.3, -1.2]))
    want = np.log1p(np.exp(np.array([0.3, -1.2]) * np.exp([-0.7, 0.1]) * np.exp(0.2))) + np.exp([-1.4, 0.2])
    np.testing.assert_allclose(value, want.sum(), rtol=1e-12)


BIG = np.array([-1000.0, -50.0, 0.0, 30.0, 800.0])

STABLE = [
    ("log1p", lambda v: dg.log(1 + v), lambda a: np.log1p(a), np.array([1e-20, -1e-18, 3e-17])),
    ("expm1", lambda v: dg.exp(v) - 1, lambda a: np.expm1(a), np.array([1e-20, -1e-18, 3e-17])),
    ("softplus", lambda v: dg.log(1 + dg.exp(v)), lambda a: np.logaddexp(0, a), BIG),
    ("log_sigmoid", lambda v: dg.log(dg.sigmoid(v)), lambda a: -np.logaddexp(0, -a), BIG),
    ("log1m_sigmoid", lambda v: dg.log(1 - dg.sigmoid(v)), lambda a: -np.logaddexp(0, a), BIG),
    ("log_exp", lambda v: dg.log(dg.exp(v)), lambda a: a, BIG),
    ("logsumexp", lambda v: dg.log(dg.exp(v).sum()), lambda a: np.logaddexp.reduce(a), BIG),
    (
        "logsumexp_keepdims",
        lambda v: dg.log(dg.exp(v).sum(keepdims=True)),
        lambda a: np.logaddexp.reduce(a, keepdims=True),
        BIG,
    ),
    ("softmax", lambda v: dg.exp(v) / dg.exp(v).sum(), lambda a: np.exp(a - a.max()) / np.exp(a - a.max()).sum(), BIG),
    (
        "log_softmax",
        lambda v: dg.log(dg.exp(v) / dg.exp(v).sum()),
        lambda a: a - np.logaddexp.reduce(a),
        BIG,
    ),
]


@pytest.mark.parametrize("name, build, ref, data", STABLE, ids=[s[0] for s in STABLE])
def test_stabilized_graph_is_accurate_where_the_naive_one_is_not(name, build, ref, data):
    with np.errstate(all="ignore"):
        naive = dg.function([x], build(x), rewrites="none")(data)
        stable = dg.function([x], build(x))(data)
        want = ref(data)
    assert np.all(np.isfinite(stable))
    np.testing.assert_allclose(stable, want, rtol=1e-12, atol=1e-300)
    assert not np.allclose(naive, want, rtol=1e-12, atol=1e-300, equal_nan=False)  # the naive form is off


def test_stabilized_float32_stays_float32():
    x32 = dg.vector("x32", dtype="float32")
    f = dg.function([x32], dg.log(dg.exp(x32).sum()))
    out = f(np.array([100.0, 200.0], dtype=np.float32))
    assert out.dtype == np.float32 and np.isfinite(out)


def test_deep_shared_dag_fuses_and_prints_in_linear_size():
    out = x  # 60 scalar steps: one kernel (MAX_STEPS = 64)
    for _ in range(30):
        out = dg.sin(out) + out  # every value read twice: nested text would double per level
    f = dg.function([x], out, rewrites={"trace": True})
    (node,) = f.fgraph.nodes
    assert len(str(node.op)) < 5000 and len(str(f.rewrite_trace)) < 20000
    ref = np.array([0.1, 0.2])
    for _ in range(30):
        ref = np.sin(ref) + ref
    np.testing.assert_allclose(f(np.array([0.1, 0.2])), ref)


def test_constants_merge_by_bits_and_building_never_hashes_their_bytes():
    """Equal constants become one; 0.0 and -0.0 stay two (merge is exact); building `x + c` leaves c's digest unasked."""
    x = dg.tensor("x", shape=(3,))
    big = dg.core.constant(np.arange(3.0))
    y = x + big
    assert big._key is None and y.owner._key is None  # Apply.key is lazy: no digest of the constant's bytes yet
    outs = [x * dg.core.constant(np.zeros(3)), x + dg.core.constant(np.zeros(3)), x - dg.core.constant(-np.zeros(3))]
    fg = rewrite_graph(FunctionGraph([x], outs), {"include": ("merge",)})
    consts = {v for node in fg.toposort() for v in node.inputs if isinstance(v, dg.core.Constant)}
    assert len(consts) == 2 and {float(np.copysign(1, c.data[0])) for c in consts} == {1.0, -1.0}
