"""The e-graph rewrite mode (`rewrites={"egraph": True}`): same results as the phase order, its own
rules asserted on the rewritten graph, budgets that fall back cleanly, and the cost model."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_rewrite_random_graphs import SPECIAL, _compare, graphs

import dimgraph as dg
from dimgraph.core.elemwise import Elemwise
from dimgraph.core.rewriting.egraph import graph_cost
from dimgraph.core.scalar import Composite
from dimgraph.core.subtensor import AdvancedIncSubtensor, AdvancedSubtensor

# Tests that assert what the e-graph found give it time: the default 5 s budget can run out on a loaded machine
# and fall back to the phase order (the budgets have their own tests below).
UNTIMED = {"time_limit": 600.0}
EGRAPH = {"egraph": UNTIMED}


def ops_of(f):
    return [n.op for n in f.fgraph.toposort()]


def scalar_names(f):
    """The scalar ops of every elementwise loop: Elemwise nodes and the fused loops around a Composite."""
    names = []
    for op in ops_of(f):
        sop = getattr(op, "scalar_op", None)
        if isinstance(op, Elemwise) or isinstance(sop, Composite):
            names += [s.name for s, _ in sop.steps] if hasattr(sop, "steps") else [sop.name]
    return names


@given(graphs())
def test_egraph_mode_agrees_with_phase_order(case):
    """Values, dtypes, shapes and NaN positions as the default rewrites give (python backend: the rewrite is the same on all)."""
    inputs, values, outputs = case
    f = dg.function(inputs, outputs, rewrites=EGRAPH, backend="python")
    report = f.rewrite_trace.egraph
    assert report.status == "saturated" and not report.fallback, str(report)
    _agrees_with_written(f, inputs, outputs, values, ValueError)


def _agrees_with_written(f, inputs, outputs, values, errors, raised=None):
    """`f` gives the written graph's values and the default rewrites' dtypes, shapes and NaN positions;
    where the written graph raises one of `errors`, `f` raises one of `raised` (None: the same error class)."""
    with np.errstate(all="ignore"):
        try:
            written = dg.function(inputs, outputs, rewrites="none", backend="python")(*values)
        except errors as err:
            with pytest.raises(raised or type(err)):
                f(*values)
            return
        default = dg.function(inputs, outputs, backend="python")(*values)
        got = f(*values)
    for g, w, d in zip(got, written, default):
        g, w, d = np.asarray(g), np.asarray(w), np.asarray(d)
        _compare(g, w)
        assert g.dtype == d.dtype and g.shape == d.shape
        np.testing.assert_array_equal(np.isnan(g), np.isnan(d))


def test_switch_becomes_masked_sets_when_the_mask_is_sparse():
    """where(x > 2, costly(x, y), cheap(y)) with a sparse mask: the costly branch runs on x[c], y[c] only."""
    x, y = dg.vector("x"), dg.vector("y")
    out = dg.where(x > 2.0, dg.exp(x) * dg.log1p(y * y) + dg.sin(x), dg.sqrt(abs(y)))
    sparse = dg.function([x, y], out, rewrites={"egraph": {"mask_fraction": 0.02, **UNTIMED}}, backend="python")
    dense = dg.function([x, y], out, rewrites=EGRAPH, backend="python")
    ops = ops_of(sparse)
    assert any(isinstance(op, AdvancedIncSubtensor) and op.mode == "set" for op in ops)
    assert sum(isinstance(op, AdvancedSubtensor) for op in ops) == 2  # x[c] and y[c]
    assert sparse.rewrite_trace.counts["switch_as_masked_sets"] >= 1
    assert sparse.rewrite_trace.counts["lift_index"] >= 1
    assert not any(
        isinstance(op, (AdvancedSubtensor, AdvancedIncSubtensor)) for op in ops_of(dense)
    )  # 50%: where stays
    lazy, eager = graph_cost(sparse.fgraph, mask_fraction=0.02), graph_cost(dense.fgraph, mask_fraction=0.02)
    assert lazy.transcendental < 0.1 * eager.transcendental  # the length check's Assert passes x[c]'s size through
    rng = np.random.default_rng(0)
    xv, yv = rng.normal(size=50) * 2, rng.normal(size=50)
    xv[:3] = [np.nan, np.inf, 3.0]
    with np.errstate(invalid="ignore"):
        want = np.where(xv > 2, np.exp(xv) * np.log1p(yv * yv) + np.sin(xv), np.sqrt(np.abs(yv)))
    for f in (sparse, dense):
        np.testing.assert_allclose(f(xv, yv), want, rtol=1e-12)


def test_masked_switch_runs_on_backends(backend):
    x, y = dg.vector("x"), dg.vector("y")
    out = dg.where(x > 1.0, dg.sin(x) * dg.log1p(y * y), y)
    f = dg.function([x, y], out, rewrites={"egraph": {"mask_fraction": 0.01, **UNTIMED}}, backend=backend)
    assert any(isinstance(op, AdvancedIncSubtensor) for op in ops_of(f))
    xv, yv = np.linspace(-3, 3, 41), np.linspace(2, -2, 41)
    np.testing.assert_allclose(f(xv, yv), np.where(xv > 1, np.sin(xv) * np.log1p(yv * yv), yv), rtol=1e-12)
    # where's length check is kept: an empty mask selects nothing from y whatever its length (NumPy; jax refuses it)
    with pytest.raises((AssertionError, IndexError), match="different lengths|did not match"):
        f(np.zeros(0), np.zeros(2))
    m = dg.tensor("m", shape=(None, 3))  # a mask over two axes, one of them static
    g = dg.function(
        [m],
        dg.where(m > 2, dg.exp(m) * dg.sin(m), m),
        rewrites={"egraph": {"mask_fraction": 0.01, **UNTIMED}},
        backend=backend,
    )
    assert any(isinstance(op, AdvancedIncSubtensor) for op in ops_of(g))
    mv = np.linspace(-4, 4, 12).reshape(4, 3)
    np.testing.assert_allclose(g(mv), np.where(mv > 2, np.exp(mv) * np.sin(mv), mv), rtol=1e-12)


def test_index_lifting_through_elemwise_only_when_it_pays():
    """exp(v)[3:5] -> exp(v[3:5]) (fewer calls); exp(mu)[g] with many more rows than mu stays a gather of exp(mu)."""
    v = dg.tensor("v", shape=(1000,))
    f = dg.function([v], dg.exp(v)[3:5], rewrites=EGRAPH, backend="python")
    (node,) = [n for n in f.fgraph.toposort() if isinstance(n.op, Elemwise)]
    assert node.outputs[0].type.shape == (2,)
    np.testing.assert_allclose(f(np.arange(1000.0) / 100), np.exp(np.arange(3, 5) / 100))
    mu, g = dg.tensor("mu", shape=(10,)), dg.tensor("g", shape=(None,), dtype="int64")
    h = dg.function([mu, g], dg.exp(mu)[g], rewrites=EGRAPH, backend="python")
    (node,) = [n for n in h.fgraph.toposort() if isinstance(n.op, Elemwise)]
    assert node.outputs[0].type.shape == (10,)  # the exp runs on the 10 groups, not on every row
    assert h.rewrite_trace.counts["lift_index"] >= 1  # the lifted form was considered and priced
    np.testing.assert_allclose(h(np.arange(10.0), np.array([1, 1, 9])), np.exp([1.0, 1.0, 9.0]))


def test_sum_of_broadcast():
    """sum(broadcast_to(v, (len(x), 3)), axis 0) -> sum over nothing * len(x), and 0 (not NaN) when x is empty and v inf.

    A broadcast length that may be negative (a user's int) or a kept axis not proved to be v's own
    length keeps the broadcast: dropping it would drop its run-time check.
    """
    v, x = dg.tensor("v", shape=(3,)), dg.tensor("x", shape=(None, 3))
    mode = {"egraph": True, "exclude": ["reduce_of_alloc"]}
    f = dg.function([v, x], dg.core.broadcast_to(v, (x.shape[0], 3)).sum(axis=0), rewrites=mode, backend="python")
    assert f.rewrite_trace.counts["sum_of_broadcast"] == 1
    assert not any(type(op).__name__ == "Alloc" for op in ops_of(f))
    vv = np.array([1.0, np.inf, -2.0])
    np.testing.assert_allclose(f(vv, np.zeros((4, 3))), 4 * vv)
    np.testing.assert_array_equal(f(vv, np.zeros((0, 3))), np.zeros(3))
    n, m, w = dg.scalar("n", dtype="int64"), dg.scalar("m", dtype="int64"), dg.tensor("w", shape=(None,))
    g = dg.function([v, n], dg.core.broadcast_to(v, (n, 3)).sum(axis=0), rewrites=mode, backend="python")
    h = dg.function([w, x, m], dg.core.broadcast_to(w, (x.shape[0], m)).sum(axis=0), rewrites=mode, backend="python")
    assert g.rewrite_trace.counts["sum_of_broadcast"] == h.rewrite_trace.counts["sum_of_broadcast"] == 0
    np.testing.assert_allclose(g(vv, 2), 2 * vv)
    with pytest.raises(ValueError, match="non-negative"):
        g(vv, -1)
    with pytest.raises(ValueError):
        h(np.ones(3), np.zeros((2, 3)), 4)  # w has 3 elements, the broadcast asks for 4


def test_lifted_index_keeps_the_elemwise_length_check():
    """exp(x * y)[1] -> exp(x[1] * y[1]) would accept x of 3 elements and y of 2: the lifted term asserts their lengths."""
    x, y = dg.vector("x"), dg.vector("y")
    f = dg.function([x, y], dg.exp(x * y)[1], rewrites=EGRAPH, backend="python")
    assert all(n.outputs[0].type.ndim == 0 for n in f.fgraph.toposort() if isinstance(n.op, Elemwise))  # lifted
    np.testing.assert_allclose(f(np.arange(3.0), np.full(3, 2.0)), np.exp(2.0))
    with pytest.raises(AssertionError, match="different lengths"):
        f(np.zeros(3), np.zeros(2))
    s = dg.tensor("s", shape=(1,))  # x[mask] on an array of one element is x[mask], not x broadcast
    g = dg.function([s], dg.exp(s)[s > 0.5], rewrites=EGRAPH, backend="python")
    assert g(np.array([0.0])).shape == (0,)
    np.testing.assert_allclose(g(np.array([1.0])), [np.e])


@st.composite
def rule_graphs(draw):
    """Graphs of where, basic/mask/gather indexing of elemwise terms and sums of broadcasts, with special values,
    sizes 0 and 1, and sometimes inputs of different lengths (a run-time error the rewritten graph must keep)."""
    n = draw(st.sampled_from([0, 1, 4]))
    shape = (n,) if draw(st.booleans()) else (n, draw(st.sampled_from([1, 3])))
    dt = draw(st.sampled_from(["float64", "float32"]))
    declared = tuple(s if draw(st.booleans()) else None for s in shape)
    x, y = dg.tensor("x", shape=declared, dtype=dt), dg.tensor("y", shape=declared, dtype=dt)
    idx = dg.tensor("i", shape=(None,), dtype="int64")
    size = int(np.prod(shape))
    values = [
        np.array(draw(st.lists(st.sampled_from(SPECIAL), min_size=size, max_size=size)), dt).reshape(shape)
        for _ in range(2)
    ]
    if declared[0] is None and draw(st.integers(0, 3)) == 0:
        values[1] = np.concatenate([values[1], np.ones((1,) + shape[1:], dt)])
    values.append(np.array(draw(st.lists(st.integers(-n, n - 1), max_size=4)) if n else [], "int64"))

    def f(v):
        return getattr(dg.core, draw(st.sampled_from(["exp", "log", "sin", "sqrt", "log1p", "tanh"])))(v)

    pool = [x, y]
    for _ in range(draw(st.integers(1, 4))):
        a = draw(st.sampled_from([p for p in pool if p.type.ndim > 0]))
        b = draw(st.sampled_from([p for p in pool if p.type.shape == a.type.shape]))
        kind = draw(st.sampled_from(["where", "slice", "mask", "gather", "bsum", "elem"]))
        try:
            if kind == "where":
                out = dg.where(a > draw(st.sampled_from([0.0, 1.0])), f(a) * b, f(b))
            elif kind == "slice":
                out = f(a * b)[draw(st.sampled_from([slice(1, None), slice(None, None, -1), slice(0, 2)]))]
            elif kind == "mask":
                out = f(a)[x > 0.5] if a.type.ndim == x.type.ndim else f(a)
            elif kind == "gather":
                out = f(a - b)[idx]
            elif kind == "bsum" and a.type.ndim == 2:
                out = dg.core.broadcast_to(f(a)[:, :1], (a.shape[0], 3)).sum(axis=1)
            else:
                out = f(a) + b
        except IndexError:  # a static index out of range for a sliced term
            continue
        pool.append(out)
    return [x, y, idx], values, pool[-draw(st.integers(1, 2)) :], draw(st.sampled_from([0.001, 0.5]))


@given(rule_graphs())
def test_egraph_rules_agree_with_phase_order(case):
    """Index lifting, switch as masked sets and sum of a broadcast keep values, dtypes, shapes, NaN positions and
    run-time errors (a length mismatch may surface as the lifted term's AssertionError or a mask's IndexError)."""
    inputs, values, outputs, mask_fraction = case
    f = dg.function(inputs, outputs, rewrites={"egraph": {"mask_fraction": mask_fraction}}, backend="python")
    assert not f.rewrite_trace.egraph.fallback, str(f.rewrite_trace.egraph)
    _agrees_with_written(f, inputs, outputs, values, (ValueError, IndexError), (ValueError, IndexError, AssertionError))


def test_every_op_kind_the_issue_names_goes_through_the_egraph():
    """Join, IncSubtensor (set and inc), gathers, Reshape, Alloc, CAReduce and a fused reduction are e-nodes like any
    other: saturation ends, rules fire under them, and the extracted graph computes what was written."""
    from dimgraph.core.fused import CAReduceElemwise
    from dimgraph.core.scalar import Composite, ScalarOp

    x, v, i = dg.tensor("x", shape=(None, 3)), dg.vector("v"), dg.tensor("i", shape=(None,), dtype="int64")
    sq = Composite(in_dtypes=("float64",), steps=((ScalarOp("square"), (0,)),), outs=(1,))
    outs = [
        dg.core.concatenate([dg.exp(x), dg.log(1 + x)], axis=0).sum(axis=1),
        dg.core.inc_subtensor(x[1:], dg.sin(x[:-1]))[0] * 1,
        dg.core.set_subtensor(x[i], dg.exp(x)[i]).sum(),
        dg.core.reshape(dg.exp(x) * 1, (-1,))[2:],
        dg.core.broadcast_to(v[0], (dg.core.shape_of(x)[0],)).sum(),
        dg.core.logsumexp(x, axis=1),
        CAReduceElemwise(sq, "add", (0,))(dg.log(1 + v)),
    ]
    f = dg.function([x, v, i], outs, rewrites=EGRAPH, backend="python")
    assert f.rewrite_trace.egraph.status == "saturated" and f.rewrite_trace.counts["log1p"] >= 2
    rng = np.random.default_rng(0)
    values = (rng.normal(size=(4, 3)), rng.uniform(size=2), np.array([0, 2, 2]))
    want = dg.function([x, v, i], outs, rewrites="none", backend="python")(*values)
    for got, w in zip(f(*values), want):
        np.testing.assert_allclose(got, w, rtol=1e-12)
        assert got.dtype == w.dtype and got.shape == w.shape


def test_project_rules_are_e_matched():
    """log(1 + x) is found behind x * 1 (a rule the phase order runs in another phase)."""
    x = dg.vector("x")
    f = dg.function([x], dg.log((x * 1) + 1) + dg.log(dg.exp(x)), rewrites=EGRAPH, backend="python")
    assert "log1p" in scalar_names(f) and "log" not in scalar_names(f) and "exp" not in scalar_names(f)
    assert f.rewrite_trace.counts["log1p"] >= 1 and f.rewrite_trace.counts["log_exp"] >= 1
    np.testing.assert_allclose(f(np.array([0.5, 1e-12])), np.log1p([0.5, 1e-12]) + [0.5, 1e-12])


def test_rules_can_be_excluded_by_name_and_tag():
    x = dg.vector("x")
    f = dg.function([x], dg.log(1 + x), rewrites={"egraph": True, "exclude": ["log1p"]}, backend="python")
    assert "log1p" not in scalar_names(f)
    g = dg.function(
        [x],
        dg.where(x > 0, dg.sin(x), x),
        rewrites={"egraph": {"mask_fraction": 0.01}, "exclude": ["egraph"]},
        backend="python",
    )
    assert not any(isinstance(op, AdvancedIncSubtensor) for op in ops_of(g))


@pytest.mark.parametrize(
    "budget, status",
    [({"node_limit": 3}, "node budget"), ({"time_limit": 0.0}, "time budget"), ({"iter_limit": 0}, "iteration budget")],
)
def test_over_budget_falls_back_to_the_phase_order(budget, status, caplog):
    x = dg.vector("x")
    out = dg.log(1 + dg.exp(x) * 1)
    with caplog.at_level("INFO", logger="dimgraph"):
        f = dg.function([x], out, rewrites={"egraph": budget}, backend="python")
    report = f.rewrite_trace.egraph
    assert report.fallback and report.status == status
    assert f"egraph: {status}" in caplog.text and "fell back to the phase order" in caplog.text
    default = dg.function([x], out, backend="python")
    assert [str(op) for op in ops_of(f)] == [str(op) for op in ops_of(default)]
    assert f.rewrite_trace.counts["log1p"] == 1  # the phase order's rules ran
    np.testing.assert_allclose(f(np.array([0.0, -50.0])), np.log1p(np.exp([0.0, -50.0])))


def test_bad_egraph_options_are_clear_errors():
    x = dg.vector("x")
    with pytest.raises(ValueError, match="node_limt"):
        dg.function([x], x + 1, rewrites={"egraph": {"node_limt": 5}}, backend="python")
    with pytest.raises(ValueError, match="egraph"):
        dg.function([x], x + 1, rewrites={"egraph": "yes"}, backend="python")
    with pytest.raises(ValueError, match="mask_fraction must be in"):
        dg.function([x], x + 1, rewrites={"egraph": {"mask_fraction": 2.0}}, backend="python")
    with pytest.raises(ValueError, match="time_limit must be a non-negative number, got -1"):
        dg.function([x], x + 1, rewrites={"egraph": {"time_limit": -1}}, backend="python")


def test_cost_model_counts_fusion_kernels_and_transcendentals():
    from dimgraph.core.rewriting.egraph import cost

    x = dg.tensor("x", shape=(100,))
    fused = dg.function([x], dg.exp(x) * dg.sin(x) + 1, backend="python")
    unfused = dg.function([x], dg.exp(x) * dg.sin(x) + 1, rewrites={"exclude": ["fusion"]}, backend="python")
    a, b = graph_cost(fused.fgraph), graph_cost(unfused.fgraph)
    assert a.kernels == 1 and b.kernels == 4
    # reads + writes of each kernel (the constant 1 is one element read)
    assert a.elements == 201 and b.elements == 200 + 200 + 300 + 201
    assert a.transcendental == b.transcendental == 100 * (cost.TRANSCENDENTAL_COST["exp"] + cost.TRANSCENDENTAL)
    assert a.total < b.total
    assert a.total == cost.KERNEL + 201 * cost.ELEMENT + a.transcendental + cost.ARITH * 200


def test_scan_graphs_keep_their_control_flow_rewrites():
    """Rewrites that read the graph's clients (Scan -> Loop) run on the extracted graph."""
    from dimgraph.core.loop import Loop, Scan

    t = dg.Dim("t", size=4)
    eps = dg.labeled("eps", dims=(t,))
    final, trace = dg.scan(
        lambda x, e: 0.5 * x + dg.log(1 + e * e), init=dg.constant(0.0, dims=()), sequences=eps, dim=t
    )
    f = dg.function([eps], final, rewrites=EGRAPH, backend="python")
    assert f.rewrite_trace.counts["scan_to_loop"] == 1
    assert any(isinstance(op, Loop) for op in ops_of(f)) and not any(isinstance(op, Scan) for op in ops_of(f))
    e = np.array([1.0, -2.0, 0.5, 3.0])
    want = 0.0
    for v in e:
        want = 0.5 * want + np.log1p(v * v)
    np.testing.assert_allclose(f(e).values, want)


def test_run_time_checks_survive_extraction():
    """An assert whose condition is only known at run time, and a reshape that may fail, stay in the graph."""
    x = dg.tensor("x", shape=(None,))
    checked = dg.core.assert_op(dg.log(1 + x), (x >= 0).all(), msg="x must be non-negative")
    out = dg.core.reshape(checked * 1, (2, -1)).sum()
    f = dg.function([x], out, rewrites=EGRAPH, backend="python")
    assert "log1p" in scalar_names(f)
    np.testing.assert_allclose(f(np.arange(4.0)), np.log1p(np.arange(4.0)).sum())
    with pytest.raises(AssertionError, match="non-negative"):
        f(np.array([1.0, -0.5]))
    with pytest.raises(ValueError):
        f(np.arange(3.0))  # 3 elements cannot be reshaped to (2, -1)
    proved = dg.function([x], dg.core.assert_op(x, dg.core.constant(True)) + 0.0, rewrites=EGRAPH, backend="python")
    assert not any(type(op).__name__ == "Assert" for op in ops_of(proved))  # a constant true condition is dropped


def test_stabilized_forms_are_kept_even_when_dearer():
    """logsumexp's max shift costs a pass, but the unshifted form overflows: extraction may not choose it."""
    from dimgraph.core.reduce import CAReduce

    x = dg.tensor("x", shape=(1, None), dtype="float32")
    lse = dg.log(dg.exp(x).sum())
    f = dg.function([x], [lse, lse - lse], rewrites=EGRAPH, backend="python")
    assert any(isinstance(op, CAReduce) and op.scalar_op == "maximum" for op in ops_of(f))
    value, zero = f(np.array([[100.0, 0.0]], dtype="float32"))  # exp(100) overflows float32
    np.testing.assert_allclose(value, 100.0, rtol=1e-6)
    assert zero == 0.0  # the written graph gives inf - inf = NaN, the default rewrites 0


def test_equal_cost_goes_to_the_rewritten_form():
    """blockwise_without_batch saves nothing the model sees; the phase order applies it, so the e-graph does too."""
    from dimgraph.core.blockwise import Blockwise
    from dimgraph.core.matrix import Inv

    x = dg.tensor("x", shape=(3, 3))
    f = dg.function([x], Blockwise(Inv(), "(m,m)->(m,m)")(x), rewrites=EGRAPH, backend="python")
    assert isinstance(f.fgraph.outputs[0].owner.op, Inv)
    np.testing.assert_allclose(f(np.eye(3) * 2), np.eye(3) / 2)


def test_stabilize_rules_do_not_restabilize_their_own_results():
    """log(sum over no axes of exp(s)) is s, and logsumexp's shifted forms join that class: saturation must end."""
    s = dg.scalar("s", dtype="float32")
    f = dg.function([s], dg.log(dg.exp(s).sum()), rewrites=EGRAPH, backend="python")
    assert f.rewrite_trace.egraph.status == "saturated"
    np.testing.assert_allclose(f(np.float32(100.0)), 100.0)  # exp(100) overflows float32
