"""Warm start by digest (`dimgraph.compile.warm`): a later process skips lowering, rewriting and codegen.

The digest must tell apart every graph that compiles differently (constants by content,
coords, names, options) and refuse what it cannot vouch for; a warm-started function
returns what a cold one does, in a fresh process too.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import dimgraph as dg
from dimgraph.backends import get_backend
from dimgraph.compile import warm
from dimgraph.core.digest import Encoder, Unstable
from dimgraph.core.elemwise import Elemwise

pytest.importorskip("numba")
ROOT = str(Path(__file__).resolve().parents[2])
SETTINGS = ("numba", {}, "default", False)


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", str(root))
    return root


def _numba():
    return get_backend("numba")


def _model(scale=2.0, coords=("a", "b", "c"), name="y"):
    g = dg.Dim("g", coords=list(coords))
    obs = dg.Dim("obs")
    mu = dg.labeled("mu", dims=(g,))
    y = dg.labeled(name, dims=(obs, g))
    logp = (-0.5 * ((y - mu) * scale) ** 2).sum()
    value, (grad,) = dg.value_and_grad(logp, [mu])
    return [mu, y], [value, grad]


def _digest(inputs, outputs, settings=SETTINGS):
    return warm.graph_digest(inputs, outputs, _numba(), settings)


def test_the_same_graph_built_twice_has_one_digest():
    assert _digest(*_model()) == _digest(*_model()) is not None


@pytest.mark.parametrize(
    "other",
    [
        dict(scale=2.5),  # a constant's value
        dict(scale=np.float32(2.0)),  # its dtype
        dict(coords=("a", "b", "d")),  # a coord label
        dict(name="z"),  # an input's name (keyword of the call)
    ],
)
def test_graphs_that_compile_differently_have_different_digests(other):
    assert _digest(*_model(**other)) != _digest(*_model())


def test_gradients_of_sources_lowering_alike_have_different_digests():
    """`sel` by label and `isel` on a dim without coords lower to one positional gradient graph,
    but only `sel`'s refuses DataArrays labeled otherwise: the labeled source is digested too."""
    obs = dg.Dim("obs")
    x = dg.labeled("x", dims=(obs,))
    by_label, by_position = dg.grad(x.sel(obs=0) ** 2, x), dg.grad(x.isel(obs=0) ** 2, x)
    assert None is not _digest([x], [by_label]) != _digest([x], [by_position]) is not None


def test_options_and_rewrites_are_part_of_the_digest():
    inputs, outputs = _model()
    plain = _digest(inputs, outputs)
    assert _digest(inputs, outputs, ("numba", {}, "none", False)) != plain
    assert _digest(inputs, outputs, ("numba", {}, "default", True)) != plain


def test_large_constants_count_by_content():
    x = dg.tensor("x", shape=(None, 100))
    base = np.linspace(0, 1, 100)
    changed = base.copy()
    changed[57] += 1e-12
    assert _digest([x], [x * base]) == _digest([x], [x * base.copy()])
    assert _digest([x], [x * base]) != _digest([x], [x * changed])


def test_what_the_digest_cannot_vouch_for_gets_none():
    x = dg.tensor("x", shape=(None,))
    w = dg.shared(np.ones(3), name="w")
    assert _digest([x], [x * w]) is None  # a shared variable: its value lives outside the graph
    t = dg.Dim("t")
    series = dg.labeled("series", dims=(t,))
    assert _digest([series], [series.diff("t")]) is None  # labels derived by a function
    assert warm.graph_digest([x], [x + 1], get_backend("python"), SETTINGS) is None  # a backend without plans


class _Registered:
    """A backend whose registries hold one extra printer: the warm start reads only `warm_tag` and these."""

    def __init__(self, key, fn):
        self.numba = _numba()
        self.registries = self.numba.registries + ({key: fn},)

    def warm_tag(self):
        return self.numba.warm_tag()


class _TheirOp(dg.core.graph.Op):
    pass


def _their_printer(op, node):
    return None


@pytest.mark.parametrize(
    "key, digested",
    [
        (_TheirOp, True),  # prints only their op, which no digested graph can hold
        (Elemwise, False),  # overrides how dimgraph's own op compiles
        (object, False),  # the fallback every op reaches
    ],
)
def test_printers_registered_from_outside_refuse_the_digest_only_where_they_apply(key, digested):
    inputs, outputs = _model()
    assert _digest(inputs, outputs) is not None
    got = warm.graph_digest(inputs, outputs, _Registered(key, _their_printer), SETTINGS)
    assert (got == _digest(inputs, outputs)) if digested else got is None


def test_a_second_compile_is_a_warm_start_with_the_same_results(cache_root):
    inputs, outputs = _model()
    cold = dg.function(inputs, outputs, backend="numba")
    assert "warm start" not in cold.timings and "rewrite" in cold.timings
    mu = xr.DataArray([0.5, -1.0, 2.0], dims="g", coords={"g": ["a", "b", "c"]})
    y = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("obs", "g"), coords={"g": ["a", "b", "c"]})
    want = cold(mu, y)
    again = dg.function(*_model(), backend="numba")
    assert "warm start" in again.timings and "rewrite" not in again.timings
    got = again(mu, y)
    for g, w in zip(got, want):
        xr.testing.assert_identical(g, w)
    assert again.source == cold.source
    assert len(again.fgraph.toposort()) == len(cold.fgraph.toposort())  # rebuilt when asked
    with pytest.raises(dg.InputError, match="'y'"):
        again(mu, y.isel(obs=0))  # the stored input specs check as the cold ones do


def test_shared_variables_and_updates_compile_every_time(cache_root):
    x = dg.tensor("x", shape=(None,))
    total = dg.shared(np.zeros(()), name="total")
    for _ in range(2):
        f = dg.function([x], x.sum(), updates={total: total + x.sum()}, backend="numba")
        assert "warm start" not in f.timings
        f(np.ones(3))
    assert not list(cache_root.rglob("w_*.pkl"))


_SCRIPT = """
import json, numpy as np, dimgraph as dg
obs, group = dg.Dim("obs", size=50), dg.Dim("group", coords=["u", "v", "w"])
mu = dg.labeled("mu", dims=(group,)); log_sigma = dg.labeled("log_sigma", dims=())
y = dg.labeled("y", dims=(obs,)); g = dg.labeled("g", dims=(obs,), dtype="int64")
z = (y - mu.isel(group=g)) / dg.exp(log_sigma)
logp = (-0.9189385332046727 - log_sigma - 0.5 * z * z).sum()
value, grads = dg.value_and_grad(logp, [mu, log_sigma])
f = dg.function([mu, log_sigma, y, g], [value, *grads, dg.exp(mu) + 1.0])
rng = np.random.default_rng(3)
outs = f(rng.normal(size=3), np.array(0.2), rng.normal(size=50), rng.integers(0, 3, 50))
print(json.dumps(dict(warm="warm start" in f.timings, values=[o.values.tolist() for o in outs],
                      coords=outs[-1].indexes["group"].tolist())))
"""


def test_a_warm_process_returns_what_a_cold_one_does(tmp_path):
    env = dict(os.environ, DIMGRAPH_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    runs = []
    for which in ("cold", "warm"):
        proc = subprocess.run([sys.executable, "-c", _SCRIPT], env=env, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{which} process failed:\n{proc.stderr[-2000:]}"
        runs.append(json.loads(proc.stdout.strip().splitlines()[-1]))
    cold, warm_run = runs
    assert not cold["warm"] and warm_run["warm"]
    assert warm_run["values"] == cold["values"] and warm_run["coords"] == cold["coords"] == ["u", "v", "w"]
    mu = np.random.default_rng(3).normal(size=3)
    np.testing.assert_allclose(cold["values"][-1], np.exp(mu) + 1.0, rtol=1e-15)


def test_coords_of_the_output_come_from_the_record(cache_root):
    """A Dim's coords are in the digest by content: new labels are a new graph, not a stale record."""
    for labels in (["a", "b", "c"], ["a", "b", "z"]):
        g = dg.Dim("g", coords=labels)
        x = dg.labeled("x", dims=(g,))
        out = dg.function([x], x * 2.0, backend="numba")(np.arange(3.0))
        assert out.indexes["g"].tolist() == labels
        assert isinstance(out.indexes["g"], pd.Index)


def test_the_encoder_refuses_values_it_cannot_digest_by_content():
    encode = Encoder(strict=True)
    with pytest.raises(Unstable):
        encode(np.array(["a", None], dtype=object))  # objects: no bytes that stand for their content
    with pytest.raises(Unstable):
        encode(lambda v: v)
    assert encode(np.array([1.0, -0.0])) != encode(np.array([1.0, 0.0]))  # bits, not values


def test_a_loop_compiles_afresh_and_right(cache_root):
    """Control flow gets no warm start (a body's host callbacks are registered while it is printed)."""
    seq = np.random.default_rng(5).normal(size=6)
    want = 0.5**6 + np.sum(0.5 ** np.arange(6)[::-1] * seq)
    for _ in range(2):
        x, c0 = dg.tensor("x", shape=(None,)), dg.scalar("c0")
        final, trace = dg.scan(lambda c, v: c * 0.5 + v, init=c0, sequences=x)
        assert _digest([x, c0], [final, trace]) is None
        f = dg.function([x, c0], [final, trace], backend="numba")
        assert "warm start" not in f.timings
        got_final, got_trace = f(seq, 1.0)
        np.testing.assert_allclose(got_final, want, rtol=1e-12)
        np.testing.assert_allclose(got_trace[-1], got_final, rtol=1e-15)
