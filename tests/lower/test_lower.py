"""Lowering: no labeled op survives, Dims' static sizes become static shapes, one rule per op."""

import io

import numpy as np
import pytest
import xarray as xr

import dimgraph as dg
from dimgraph.core import CAReduce, DimShuffle, Elemwise, toposort
from dimgraph.labeled.ops import LabeledOp, is_labeled

country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
age = dg.Dim("age", size=4)
obs = dg.Dim("obs")


def _program():
    x = dg.labeled("x", dims=(country, age))
    y = dg.labeled("y", dims=(obs, country))
    outs = [
        x + y,
        (x * 2).sum("age"),
        dg.logsumexp(x, [country, "age"]),
        x.transpose("age", ...).cumsum("age").diff("country"),
        x.mean().expand_dims(obs).broadcast_like(y),
        x.rename({"age": "years"}).argmax("years"),
        dg.zeros_like(y, dtype="int32") + dg.arange(country),
        y.to_positional(["country", "obs"]),
        x.squeeze(),
    ]
    return x, y, outs


def test_no_labeled_op_remains_and_static_shapes():
    x, y, outs = _program()
    lowered = dg.lower(outs)
    for node in toposort(lowered):
        assert not isinstance(node.op, LabeledOp), node.op
        assert not any(is_labeled(v) for v in node.inputs + node.outputs)
    assert lowered[0].type.shape == (3, 4, None)
    assert lowered[1].type.shape == (3,) and isinstance(lowered[1].owner.op, CAReduce)
    assert lowered[4].type.shape == (None, 3) and lowered[7].type.shape == (3, None)


def test_rules_use_core_ops():
    x = dg.labeled("x", dims=(country, age))
    t = dg.lower(x.transpose())
    assert isinstance(t.owner.op, DimShuffle) and t.owner.op.order == (1, 0)
    s = dg.lower(x.sum("country"))
    assert s.owner.op.axis == (0,)
    e = dg.lower(x + dg.labeled("a", dims=(age,)))
    assert isinstance(e.owner.op, Elemwise) and e.type.shape == (3, 4)


def test_lowering_commutes_with_evaluation(backend):
    x, y, outs = _program()
    rng = np.random.default_rng(0)
    xd, yd = rng.normal(size=(3, 4)), rng.normal(size=(5, 3))
    labeled = dg.function([x, y], outs, backend=backend)(xd, yd)
    lowered = dg.lower(outs)
    px, py = x.tag["positional"], y.tag["positional"]
    positional = dg.function([px, py], lowered, backend="python")(xd, yd)
    for a, b in zip(labeled, positional):
        np.testing.assert_allclose(getattr(a, "values", a), b, rtol=1e-12)


def test_unknown_dim_without_size_source_is_dim_error():
    with pytest.raises(dg.DimError, match="dim 'obs' has no size"):
        dg.lower(dg.arange(obs))
    y = dg.labeled("y", dims=(obs,))
    assert dg.function([y], dg.arange(obs) + y, backend="python")(np.zeros(3)).values.tolist() == [0, 1, 2]


def test_from_positional_checks_unknown_sizes_at_run_time():
    t = dg.tensor("t", shape=(None,))
    f = dg.function([t], dg.from_positional(t, (age,)) * 2, backend="python")
    assert f(np.ones(4)).dims == ("age",)
    with pytest.raises(AssertionError, match="dims 'age' \\(size 4\\)"):
        f(np.ones(3))


def test_dprint_shows_dims_on_labeled_nodes():
    x = dg.labeled("x", dims=(country, age))
    buf = io.StringIO()
    dg.dprint((x * 2).sum("age"), file=buf)
    text = buf.getvalue()
    assert "sum{age}   float64(country: 3)" in text and "x   float64(country: 3, age: 4)" in text


def test_lowered_update_is_ordered_to_the_shared_dims(backend):
    w = dg.shared(xr.DataArray(np.zeros((4, 3)), dims=("age", "country")), dims=(age, country), name="w")
    x = dg.labeled("x", dims=(country, age))
    ctx = dg.SharedContext()
    f = dg.function([x], x.sum(), updates={w: w + x}, backend=backend)
    f(np.arange(12.0).reshape(3, 4), ctx=ctx)
    assert w.get(ctx=ctx).dims == ("age", "country")
    np.testing.assert_allclose(w.get(ctx=ctx).values, np.arange(12.0).reshape(3, 4).T)
