"""A model's inside is public and read-only (`m.entries`); its helpers read only that; `set_data` pushes."""

import ast
import inspect
import pathlib
import pickle

import numpy as np
import pytest

import dimgraph as dg
from dimgraph.model import model as model_module
from dimgraph.model.variables import DataVariable, Deterministic, Entries, FreeVariable, ObservedVariable

OBS = dg.Dim("obs", size=4)
X, Y = np.array([0.0, 1.0, 2.0, 3.0]), np.array([0.1, 1.2, 1.9, 3.2])


def regression():
    m = dg.Model()
    x = m.data("x", X, dims=(OBS,))
    a, s = m.normal("a", 0.0, 1.0), m.halfnormal("s", 1.0)
    m.deterministic("twice_a", 2 * a)
    m.observe("y", dg.dist.normal(a * x, s), data=Y, dims=(OBS,))
    return m


def test_entries_are_tuples_of_entry_objects_in_definition_order():
    m = regression()
    e = m.entries
    assert isinstance(e, Entries) and all(isinstance(part, tuple) for part in e)
    assert [v.name for v in e.free] == ["a", "s"] and all(isinstance(v, FreeVariable) for v in e.free)
    assert [type(v) for v in e.observed] == [ObservedVariable] and [type(v) for v in e.data] == [DataVariable]
    assert [(type(d), d.name) for d in e.deterministics] == [(Deterministic, "twice_a")]
    assert [v.name for v in e.holders] == m.data_names == ["x", "y"]
    assert [v.name for v in e.sampled] == ["a", "s"]
    np.testing.assert_array_equal(e.arrays()[1], Y)
    with pytest.raises(AttributeError):
        e.free = ()  # read-only
    assert m["twice_a"] is e.deterministics[0].value


HELPERS = ["predictive.py", "samplers.py", "marginal.py"]


def _private_model_reads(tree):
    """`model._x` / `m._x` attribute reads (what a helper may not do)."""
    return [
        f"{node.lineno}: {node.value.id}.{node.attr}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id in ("model", "m")
        and node.attr.startswith("_")
    ]


@pytest.mark.parametrize("name", HELPERS)
def test_the_helpers_read_no_private_field_of_the_model(name):
    path = pathlib.Path(model_module.__file__).parent / name
    assert _private_model_reads(ast.parse(path.read_text())) == []


def test_logp_function_reads_no_private_field_of_the_model():
    tree = ast.parse(inspect.getsource(model_module.LogpFunction))
    assert "model" not in {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert _private_model_reads(tree) == []


def test_the_checker_catches_a_private_read():
    assert _private_model_reads(ast.parse("def f(model):\n    return model._observed\n")) == ["2: model._observed"]


def test_set_data_pushes_the_new_data_to_the_logp_function():
    m = regression()
    fn = m.logp_fn(backend="python")
    theta = np.array([0.5, -0.2])
    before = fn(theta)
    fn.entries = None  # a call reads nothing from the model or its entries: the data is bound
    assert fn(theta)[0] == before[0]
    fn.entries = m.entries
    m.set_data(x=X[::-1].copy())
    changed = fn(theta)
    expected = dg.flat_value_and_grad(
        m.logp(), [v.free for v in m.sampled], inputs=m.entries.inputs(), backend="python"
    )
    assert changed[0] == pytest.approx(expected(theta, x=X[::-1].copy(), y=Y)[0], rel=1e-12)
    assert changed[0] != pytest.approx(before[0])


def test_a_pickled_model_still_pushes_its_data():
    m = pickle.loads(pickle.dumps(regression()))
    fn = m.logp_fn(backend="python")
    theta = np.array([0.5, -0.2])
    before = fn(theta)[0]
    m.set_data(y=Y + 1.0)
    assert fn(theta)[0] != pytest.approx(before)
    copy = pickle.loads(pickle.dumps(m))
    assert copy.logp_fn(backend="python")(theta)[0] == pytest.approx(fn(theta)[0], rel=1e-12)


def test_functions_mapped_over_chain_and_draw_compile_once(monkeypatch):
    """The model's posterior functions are only ever called with (chain, draw): the function without extra dims
    (the base) is never compiled, so each compiles once."""
    import dimgraph.compile.function as compile_function

    m = regression()
    theta = np.random.default_rng(0).normal(size=(2, 3, 2))
    compiles = []
    real = compile_function.function
    monkeypatch.setattr(
        m.constrain_fn(backend="python"), "_compile", lambda *a, **k: compiles.append(1) or real(*a, **k)
    )
    post = m.constrain(theta, backend="python", batch_dims=("chain", "draw"))
    assert post["a"].dims == ("chain", "draw") and post["twice_a"].dims == ("chain", "draw")
    np.testing.assert_allclose(post["twice_a"].values, 2 * theta[..., 0])
    m.constrain(theta[:, :2], backend="python", batch_dims=("chain", "draw"))  # other sizes, same names: no compile
    fn = m.constrain_fn(backend="python")
    assert compiles == [1] and fn._compiled_base is None and len(fn.compiled_extra_dims) == 1
    ll = m.log_likelihood(post, backend="python")
    assert (
        ll["y"].dims == ("chain", "draw", "obs")
        and m.compiled(("log_likelihood", "python"), None)._compiled_base is None
    )
