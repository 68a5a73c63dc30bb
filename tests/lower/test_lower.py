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


def test_only_lower_touches_a_lowering_memo_and_only_twins_the_twin_tag():
    """One lowering entry point: callers hand placeholders in (`given`, `assume`) and ask for values
    (`run`, `positional`); the positional twin is made and read in `labeled/twins.py` alone."""
    import ast
    import pathlib

    root = pathlib.Path(dg.__file__).parent
    memo_users, tag_users = [], []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        tree = ast.parse(path.read_text())
        if "Lowering" in path.read_text() and not rel.startswith("lower/"):
            memo_users += [
                f"{rel}:{n.lineno}" for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "memo"
            ]
        if rel != "labeled/twins.py":
            tag_users += [
                f"{rel}:{n.lineno}"
                for n in ast.walk(tree)
                if isinstance(n, ast.Constant) and n.value == "positional" and _in_tag_access(tree, n)
            ]
    assert memo_users == [] and tag_users == [], f"a Lowering's memo read at {memo_users}, the twin tag at {tag_users}"


def _in_tag_access(tree, const):
    """Whether `const` is the key of a `.tag[...]` or `.tag.get(...)` / `.tag.setdefault(...)`."""
    import ast

    for n in ast.walk(tree):
        if (
            isinstance(n, ast.Subscript)
            and n.slice is const
            and isinstance(n.value, ast.Attribute)
            and n.value.attr == "tag"
        ):
            return True
        if isinstance(n, ast.Call) and const in n.args and isinstance(n.func, ast.Attribute):
            owner = n.func.value
            if isinstance(owner, ast.Attribute) and owner.attr == "tag":
                return True
    return False


def test_lower_takes_given_placeholders(backend):
    """`lower(..., given=...)`: a labeled placeholder lowers to the value handed in, and its unsized dims take
    their sizes from it (so `arange` over such a dim has the given value's length)."""
    t = dg.Dim("t")
    user = dg.labeled("user", dims=(t,))
    stand_in = dg.vector("stand_in")
    out = dg.lower((user * 2.0).sum() + dg.arange(t).sum(), given={user: stand_in})
    same = dg.lower([user, (user * 2.0).sum()], given=[(user, stand_in)])
    assert same[0] is stand_in
    f = dg.function([stand_in], [out, same[1]], backend=backend)
    for n in (0, 1, 4):
        data = np.arange(float(n))
        total, doubled = f(data)
        np.testing.assert_allclose(total, 2 * data.sum() + n * (n - 1) / 2)
        np.testing.assert_allclose(doubled, 2 * data.sum())


@pytest.mark.parametrize(
    "given, error, match",
    [
        ({"x": 1}, TypeError, "given must be"),
        ([(1, 2)], TypeError, "given"),
        (lambda u: {u: dg.labeled("v", dims=(age,))}, TypeError, "value given for 'u' must be a positional tensor"),
        (
            lambda u: {u: dg.vector("v", dtype="float32")},
            TypeError,
            "value given for 'u' has dtype float32, expected float64",
        ),
        (
            lambda u: {u: dg.matrix("m")},
            dg.DimError,
            r"value given for 'u' has shape \(None, None\), expected one axis per dim of \(age: 4\)",
        ),
        (
            lambda u: {u: dg.vector("v", size=3)},
            dg.DimError,
            r"has shape \(3,\), expected one axis per dim of \(age: 4\)",
        ),
    ],
)
def test_lower_refuses_bad_givens_naming_the_placeholder(given, error, match):
    u = dg.labeled("u", dims=(age,))
    with pytest.raises(error, match=match):
        dg.lower(u * 2.0, given=given(u) if callable(given) else given)


T = dg.Dim("t", coords=["a", "b", "c"])
X = np.array([0.5, -2.0, 3.0])


def _scan():
    x = dg.labeled("x", dims=(T,))
    _, trace = dg.scan(lambda acc, e: acc + e, init=dg.constant(0.0, dims=()), sequences=x, dim=T)
    return [x], trace, np.cumsum(X)


def _while_loop():
    x = dg.labeled("x", dims=(T,))
    final = dg.while_loop(lambda v: (v < 100.0).all(), lambda v: v * 2.0 + 1.0, init=x.sum() * 0.0 + 1.0, max_steps=50)
    return [x], final, 127.0


def _ifelse():
    x = dg.labeled("x", dims=(T,))
    return [x], dg.ifelse(x.sum() > 0, x * 2.0, -x), 2 * X


def _op_from_graph():
    x, y = dg.labeled("x", dims=(T,)), dg.labeled("y", dims=(T,))
    softplus = dg.op_from_graph([y], [dg.log1p(dg.exp(y))])
    return [x], softplus(x), np.log1p(np.exp(X))


def _grad():
    x = dg.labeled("x", dims=(T,))
    return [x], dg.grad((x**3).sum(), x), 3 * X**2


def _vectorize():
    x = dg.labeled("x", dims=(T,))
    centred = dg.vectorize(lambda v: v - v.mean("t"), [("t",)], [("t",)])(x)
    return [x], centred, X - X.mean()


def _rng():
    x = dg.labeled("x", dims=(T,))
    return [x], dg.rng(0).uniform(x, x + 1e-9), X


def _function():
    x = dg.labeled("x", dims=(T,))
    return [x], (x * x).sum(), (X * X).sum()


# entry point -> (build, whether building lowers: loops, branches, macros and labeled gradients lower on the spot)
ENTRY_POINTS = {
    "dg.scan": (_scan, True),
    "dg.while_loop": (_while_loop, True),
    "dg.ifelse": (_ifelse, True),
    "dg.op_from_graph": (_op_from_graph, True),
    "dg.grad": (_grad, True),
    "dg.vectorize": (_vectorize, False),
    "dg.rng": (_rng, False),
    "dg.function": (_function, False),
}


@pytest.fixture
def lowerings(monkeypatch):
    """One entry per lowering pass run from now on (a compile lowers: no warm start from disk)."""
    import importlib

    from dimgraph.compile import warm

    entry = importlib.import_module("dimgraph.lower")  # the module (`dimgraph.lower` the attribute is dg.lower)

    runs = []

    class Counted(entry._Lowering):
        def __init__(self):
            runs.append(self)
            super().__init__()

    monkeypatch.setattr(entry, "_Lowering", Counted)
    monkeypatch.setattr(warm, "load", lambda key: None)
    return runs


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_every_entry_point_lowers_through_the_one_entry(name, lowerings):
    """Each user entry point reaches lowering through `dimgraph.lower.lower` (the pass is built nowhere else:
    tests/test_layering.py), when it builds its graph where it lowers on the spot, and in the compile."""
    build, lowers_when_built = ENTRY_POINTS[name]
    inputs, out, expected = build()
    built = len(lowerings)
    assert (built > 0) == lowers_when_built
    f = dg.function(inputs, out, backend="python")
    assert len(lowerings) > built
    np.testing.assert_allclose(np.asarray(f(X)), expected, rtol=1e-8)


def test_flat_value_and_grad_lowers_through_the_one_entry(lowerings):
    mu, y = dg.labeled("mu", dims=(T,)), dg.labeled("y", dims=(T,))
    fn = dg.flat_value_and_grad(((mu - y) ** 2).sum(), [mu], inputs=[y], backend="python")
    assert len(lowerings) >= 2  # the labeled gradient, then the compile
    value, grad = fn(np.zeros(3), y=X)
    np.testing.assert_allclose(value, (X**2).sum())
    np.testing.assert_allclose(grad, -2 * X)


def test_a_step_sizes_its_unsized_dims_from_the_given_placeholders(backend):
    """A scan's step lowers with `given=` its states and slices: a dim of unknown size (`obs`) that the step
    materialises (`arange`) takes its size from them, so one compile serves every length."""
    t, n_obs = dg.Dim("t"), dg.Dim("n_obs")
    x, s = dg.labeled("x", dims=(n_obs, t)), dg.labeled("s", dims=(n_obs,))
    final, trace = dg.scan(lambda acc, e: acc + e * dg.arange(n_obs), init=s, sequences=x, dim=t)
    f = dg.function([x, s], [final, trace], backend=backend)
    for shape in [(3, 4), (1, 2), (5, 1)]:
        xd, sd = np.arange(float(np.prod(shape))).reshape(shape), np.ones(shape[0])
        got_final, got_trace = f(xd, sd)
        expected = sd[:, None] + np.cumsum(xd * np.arange(shape[0])[:, None], axis=1)
        assert got_trace.dims == ("t", "n_obs")
        np.testing.assert_allclose(got_trace.values, expected.T)
        np.testing.assert_allclose(got_final.values, expected[:, -1])
