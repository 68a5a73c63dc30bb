"""What users read: dprint (wrapped lines, dims on labeled gradients), repr/_repr_html_ of compiled
functions, and dg.to_dot's Graphviz text and picture."""

import io
import re

import numpy as np
import pytest

import dimgraph as dg

county = dg.Dim("county", coords=["A", "B", "C"])
obs = dg.Dim("obs")


@pytest.fixture(scope="module")
def model():
    mu = dg.labeled("mu", dims=(county,))
    y = dg.labeled("y", dims=(obs, county))
    cost = (-0.5 * (y - mu) ** 2).sum().rename("logp")
    grad = dg.grad(cost, mu)
    f = dg.function([mu, y], [cost, grad], backend="numba")
    return mu, y, cost, grad, f


def _printed(obj, **kw):
    out = io.StringIO()
    (obj.dprint if hasattr(obj, "dprint") else lambda **k: dg.dprint(obj, **k))(file=out, **kw)
    return out.getvalue().splitlines()


def test_labeled_gradient_prints_with_dims(model):
    *_, grad, _ = model
    lines = _printed(grad)
    assert lines[0].startswith("from_positional{county} 'grad_mu'   float64(county: 3)")  # named after its variable
    assert any("mu   float64(county: 3)" in line for line in lines)
    assert any("float64(obs: ?, county: 3)" in line and "sub" in line for line in lines)


def test_dprint_wraps_long_lines(model):
    *_, f = model
    wide = _printed(f, width=1000)
    narrow = _printed(f, width=50)
    assert max(map(len, narrow)) <= 50 < max(map(len, wide))
    assert len(narrow) > len(wide) and any(re.match(r"^[ |]*   \. ", line) for line in narrow)

    def squash(lines):  # the text without layout: continuation marks, tree bars and spaces dropped
        return re.sub(r"[\s|]", "", "".join(re.sub(r"^([ |]*)   \. ", r"\1", line) for line in lines))

    assert squash(narrow) == squash(wide)
    # graph inputs wrap too (a long name, a constant's values)
    long = dg.labeled("a_long_input_name_" * 4, dims=(county,))
    lines = _printed(dg.exp(long * 2.5).sum(), width=40)
    assert max(map(len, lines)) <= 40 and squash(lines) == squash(_printed(dg.exp(long * 2.5).sum(), width=1000))


def test_function_repr_and_html(model):
    *_, f = model
    text = repr(f)
    assert text.startswith(
        "<dimgraph.Function (mu: float64(county: 3), y: float64(obs: ?, county: 3)) -> (logp: float64(), "
    )
    assert re.search(r"\| numba, \d+ nodes \(\d+ fused kernels\), compiled in \d+\.\d\d s>$", text)
    assert f.compile_time > 0
    page = f._repr_html_()
    assert page.count("<tr>") == 1 + 4  # header, 2 inputs, 2 outputs
    assert "<td>county: 3</td>" in page and "<td>obs: ?, county: 3</td>" in page and "<td>labeled</td>" in page


def test_mapped_function_repr():
    mu = dg.labeled("mu", dims=(county,))
    f = dg.function([mu], mu.sum().rename("total"), backend="python", map_extra_dims=True)
    assert repr(f).startswith("<dimgraph.Function (mu: float64(county: 3)) -> (total: float64()) | python, ")
    assert repr(f).endswith(", mapped over extra dims>") and "<td>county: 3</td>" in f._repr_html_()


def test_to_dot_text(model):
    mu, y, cost, grad, f = model
    text = dg.to_dot(f)
    assert text.startswith("digraph dimgraph {") and text.rstrip().endswith("}")
    assert '[label="mu\\nfloat64(county: 3)"' in text and '"y\\nfloat64(obs: ?, county: 3)"' in text
    assert "subgraph cluster_" in text and "fused kernel: " in text
    assert 'label="output 0: logp"' in text and 'label="output 1: grad_mu"' in text
    assert re.search(r'-> n\d+ \[label="float64\(obs: \?, county: 3\)"\]', text)
    # every edge joins declared nodes, and the braces balance
    declared = set(re.findall(r"^\s*(n\d+) \[label=", text, re.M))
    for a, b in re.findall(r"(n\d+) -> (n\d+)", text):
        assert a in declared and b in declared
    assert text.count("{") == text.count("}")
    # variables (not compiled) draw their own graph; a labeled graph keeps its labeled ops
    unrewritten = dg.to_dot([cost, grad])
    assert "from_positional{county}" in unrewritten and "cluster" not in unrewritten


def test_to_dot_renders_svg(model):
    from dimgraph.dotgraph import renderer

    if renderer() is None:
        pytest.skip("no Graphviz program (the test extra installs graphviz-pure)")
    *_, f = model
    picture = dg.to_dot(f)
    svg = picture.svg()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg and "county: 3" in svg
    assert picture._repr_svg_() == svg


def test_to_dot_without_a_renderer_says_what_to_install(model, monkeypatch):
    from dimgraph import dotgraph

    monkeypatch.setattr(dotgraph.shutil, "which", lambda name: None)
    monkeypatch.setattr(dotgraph.os, "access", lambda path, mode: False)
    monkeypatch.setattr(dotgraph, "_warned", set())
    *_, f = model
    picture = dg.to_dot(f)
    with pytest.raises(dotgraph.RenderUnavailable, match=r"pip install 'dimgraph\[graphviz\]'.*apt install graphviz"):
        picture.svg()
    with pytest.warns(RuntimeWarning, match="no Graphviz renderer found") as record:
        assert picture._repr_svg_() is None
        assert picture._repr_svg_() is None  # said once
    assert len(record) == 1
    assert str(picture).startswith("digraph dimgraph {")  # the text is still there for the notebook


def test_to_dot_prefers_the_system_dot(monkeypatch):
    from dimgraph import dotgraph

    monkeypatch.setattr(dotgraph.shutil, "which", lambda name: "/usr/bin/dot" if name == "dot" else None)
    assert dotgraph.renderer() == "/usr/bin/dot"


def test_function_results_unchanged_by_printing(model):
    mu, y, cost, grad, f = model
    data = np.arange(6.0).reshape(2, 3)
    before = f(np.zeros(3), data)
    dg.to_dot(f), repr(f), f._repr_html_(), _printed(f)
    after = f(np.zeros(3), data)
    np.testing.assert_array_equal(before[1].values, after[1].values)


def test_help_of_function_lists_backends_default_and_options():
    from dimgraph.backends import DEFAULT_BACKEND, available_backends

    text = dg.function.__doc__
    for name in available_backends():
        assert f'"{name}"' in text, name
    assert f'"{DEFAULT_BACKEND}" (the default' in text
    for option in ('output="dataset"', 'output="jax"', "shard=", "mesh=", "jit_graph=", "updates :", "rewrites :"):
        assert option in text, option


def test_gradients_named_after_their_variables(backend):
    i = dg.Dim("i", coords=["a", "b"])
    mu, s = dg.labeled("mu", dims=(i,)), dg.labeled("s", dims=())
    x, c = dg.tensor("x", shape=(2,)), dg.tensor("c", shape=(2,))
    cost, (g_mu, g_s) = dg.value_and_grad((mu**2).sum() * s, [mu, s])
    assert (g_mu.name, g_s.name) == ("grad_mu", "grad_s")
    f = dg.function([mu, s], [cost.rename("cost"), g_mu, g_s], backend=backend)
    outs = f(np.array([1.0, 2.0]), 3.0)
    assert [o.name for o in outs] == ["cost", "grad_mu", "grad_s"]
    np.testing.assert_allclose(outs[1].values, [6.0, 12.0])
    out = io.StringIO()
    f.dprint(file=out)
    titles = [line for line in out.getvalue().splitlines() if line.startswith("output ")]
    assert titles == ["output 'cost':", "output 'grad_mu':", "output 'grad_s':"]
    assert dg.grad(dg.exp(x).sum(), x).name == "grad_x"
    g_x = dg.grad((x * c).sum(), x)  # the gradient is `c` itself (or a view of it): c keeps its own name
    assert c.name == "c" and g_x.name in (None, "c", "grad_x")
