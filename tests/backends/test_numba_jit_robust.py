"""A jitted graph that fails to build never fails a call, a C function or a sampler (issue 36).

The numba backend's second tier (`graphjit.py`) is built from generated text, in the
process that printed it or, from the disk cache and a pickled plan, in a later one.
Both must give the same jitted graph; where one cannot be built, the driver answers,
a `PerformanceWarning` names what did not compile and `f.summary()` says so.
"""

import ctypes
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

import dimgraph as dg
from dimgraph.backends.numba import graphjit

sys.path.insert(0, str(Path(__file__).parent))
import jit_shapes  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def _c_call(c, size, theta):
    grad, logp = np.empty(size), np.empty(1)
    ptr = ctypes.POINTER(ctypes.c_double)
    x = np.ascontiguousarray(theta, dtype=np.float64)
    code = c.ctypes(size, x.ctypes.data_as(ptr), grad.ctypes.data_as(ptr), logp.ctypes.data_as(ptr), c.data)
    return code, logp[0], grad


@pytest.fixture
def broken_jit(monkeypatch):
    """Every jitted graph fails to build, as a generated module that does not load would."""

    def fail(self):
        raise KeyError("injected: the graph module did not load")

    monkeypatch.setattr(graphjit.Tiers, "_dispatcher", fail)


def test_a_jitted_graph_that_does_not_build_leaves_the_driver_answering(broken_jit):
    cost, params, inputs, data = jit_shapes.crossed()
    python = dg.flat_value_and_grad(cost, params, inputs=inputs, backend="python")
    fn = dg.flat_value_and_grad(cost, params, inputs=inputs, backend="numba", jit_graph=True)
    theta = jit_shapes.point(fn.size)
    want_value, want_grad = python(theta, **data)
    with pytest.warns(dg.PerformanceWarning, match="the jitted graph did not compile.*injected"):
        value, grad = fn(theta, **data)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12, atol=1e-14)
    summary = fn.function.summary()
    assert "did not compile: the jitted graph: KeyError" in summary and "injected" in summary
    assert "calls run: the Python driver (the jitted graph did not compile)" in summary
    # the bound call and the C function answer too, by the driver
    bound_value, bound_grad = fn.bind(**data)(theta)
    assert bound_value == value and np.array_equal(bound_grad, grad)
    c = fn.cfunc(**data)
    assert not c.jitted
    code, c_value, c_grad = _c_call(c, fn.size, theta)
    assert code == 0 and c_value == value and np.array_equal(c_grad, grad)
    assert _c_call(c, fn.size + 1, np.zeros(fn.size + 1))[0] == -1  # the C function's own checks hold


def test_a_background_build_failure_is_named_at_the_next_call(monkeypatch):
    load = graphjit.Tiers._dispatcher

    def fail_in_background(self):
        if threading.current_thread().name == "dimgraph-jit-graph":
            raise KeyError("injected: the graph module did not load")
        return load(self)

    monkeypatch.setattr(graphjit.Tiers, "_dispatcher", fail_in_background)
    monkeypatch.setattr(graphjit, "HOT_CALLS", 2)
    x = dg.tensor("x", shape=(None,))
    f = dg.function([x], dg.tanh(x) * 2.0, backend="numba")
    xv = np.linspace(-1.0, 1.0, 7)
    f(xv)  # nothing in the disk cache (a fresh graph): the driver
    with pytest.warns(dg.PerformanceWarning, match="the jitted graph did not compile") as caught:
        f(xv)  # hot: the build starts in the background, and fails there
        graphjit.wait_for_compiles()
        np.testing.assert_allclose(f(xv), np.tanh(xv) * 2.0, rtol=1e-15)  # named by this call at the latest
    assert len([w for w in caught if "did not compile" in str(w.message)]) == 1
    assert "did not compile: the jitted graph" in f.summary()


def test_a_sampler_samples_when_the_jitted_graph_does_not_build(broken_jit):
    pytest.importorskip("nutpie")
    m = dg.Model()
    mu = m.normal("mu", 0.0, 1.0)
    m.observe("y", dg.dist.normal(mu, 1.0), data=np.array([0.5, 1.5, 1.0]), dims=(dg.Dim("obs"),))
    with pytest.warns(dg.PerformanceWarning, match="did not compile"):
        trace = m.sample(draws=30, tune=30, chains=1, seed=3)
    draws = trace.posterior["mu"].values
    assert draws.shape == (1, 30) and np.all(np.isfinite(draws)) and len(np.unique(draws)) > 1


def _run_shapes(cache_dir):
    env = {
        **os.environ,
        "DIMGRAPH_CACHE_DIR": str(cache_dir),
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    done = subprocess.run(
        [sys.executable, str(Path(jit_shapes.__file__))],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_the_jitted_graph_builds_cold_and_again_from_the_warm_cache_in_another_process(tmp_path):
    cold = _run_shapes(tmp_path)
    warm = _run_shapes(tmp_path)  # a fresh process: plans, kernels and jitted graphs from the disk cache
    assert set(cold) == set(warm) == {*jit_shapes.GRAPHS, "draws"}
    for name, build in jit_shapes.GRAPHS.items():
        cost, params, inputs, data = build()
        python = dg.flat_value_and_grad(cost, params, inputs=inputs, backend="python")
        want_value, want_grad = python(jit_shapes.point(python.size), **data)
        for run in (cold[name], warm[name]):
            assert run["state"] == "jitted" and run["cfunc"]["jitted"], (name, run)
            assert not [w for w in run["warnings"] if "did not compile" in w], (name, run["warnings"])
            for value, grad in (
                (run["value"], run["grad"]),
                run["bound"],
                (run["cfunc"]["value"], run["cfunc"]["grad"]),
            ):
                np.testing.assert_allclose(value, want_value, rtol=1e-11, err_msg=name)
                np.testing.assert_allclose(grad, want_grad, rtol=1e-10, atol=1e-13, err_msg=name)
        assert warm[name]["value"] == cold[name]["value"] and warm[name]["grad"] == cold[name]["grad"]
    assert cold["draws"] == warm["draws"] and cold["draws"]["state"] == "jitted"
