"""The e-graph rewrite mode (`rewrites={"egraph": True}`): same results as the phase order, its own
rules asserted on the rewritten graph, budgets that fall back cleanly, and the cost model."""

import numpy as np
import pytest
from hypothesis import given
from test_rewrite_random_graphs import _compare, graphs

import dimgraph as dg
from dimgraph.core.elemwise import Elemwise
from dimgraph.core.rewriting.egraph import graph_cost
from dimgraph.core.subtensor import AdvancedIncSubtensor, AdvancedSubtensor

EGRAPH = {"egraph": True}


def ops_of(f):
    return [n.op for n in f.fgraph.toposort()]


def scalar_names(f):
    names = []
    for op in ops_of(f):
        if isinstance(op, Elemwise):
            sop = op.scalar_op
            names += [s.name for s, _ in sop.steps] if hasattr(sop, "steps") else [sop.name]
    return names


@given(graphs())
def test_egraph_mode_agrees_with_phase_order(case):
    """Values, dtypes, shapes and NaN positions as the default rewrites give (python backend: the rewrite is the same on all)."""
    inputs, values, outputs = case
    f = dg.function(inputs, outputs, rewrites=EGRAPH, backend="python")
    report = f.rewrite_trace.egraph
    assert report.status == "saturated" and not report.fallback, str(report)
    with np.errstate(all="ignore"):
        try:
            written = dg.function(inputs, outputs, rewrites="none", backend="python")(*values)
        except ValueError as err:
            with pytest.raises(type(err)):
                f(*values)
            return
        default = dg.function(inputs, outputs, backend="python")(*values)
        got = f(*values)
    for g, w, d in zip(got, written, default):
        g, w, d = np.asarray(g), np.asarray(w), np.asarray(d)
        _compare(g, w)
        assert g.dtype == d.dtype and g.shape == d.shape
        np.testing.assert_array_equal(np.isnan(g), np.isnan(d))
