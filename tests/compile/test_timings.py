"""`f.timings` (seconds per compile phase) and the numba backend's compile progress log."""

import logging

import numpy as np
import pytest

import dimgraph as dg


def test_timings_hold_every_phase_and_the_first_call_after_it_runs(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", str(tmp_path))  # a first compile: no warm start (test_warm_start.py)
    x = dg.tensor("x", shape=(None,))
    f = dg.function([x], dg.exp(x).sum() * 2.0, backend=backend)
    assert {"lower", "rewrite", "codegen"} <= set(f.timings) and "first call" not in f.timings
    assert all(f.timings[k] >= 0.0 for k in ("lower", "rewrite", "codegen"))
    with pytest.raises(dg.InputError):  # a rejected call is not the first call
        f(np.ones((2, 2)))
    assert "first call" not in f.timings
    assert float(f(np.zeros(3))) == 6.0
    first = f.timings["first call"]
    assert first > 0.0
    assert float(f(np.zeros(2))) == 4.0  # later calls take the fast path and leave the timing alone
    assert f.timings["first call"] == first


def test_numba_times_each_kernel_of_the_first_call(monkeypatch):
    pytest.importorskip("numba")
    from dimgraph.backends.numba import cache

    monkeypatch.setattr(cache, "_LOADED", {})  # fresh dispatchers: their first call compiles or loads from disk
    x = dg.tensor("x", shape=(None, 3))
    f = dg.function([x], [dg.tanh(x).sum(axis=1), (x * x).max()], backend="numba")
    assert f.timings["kernels"] == {}
    f(np.ones((2, 3)))
    kernels = f.timings["kernels"]
    assert len(kernels) == len(f._compiled.kernel_digests) >= 2
    assert all(name.startswith("k") and seconds > 0.0 for name, seconds in kernels.items())


def test_a_slow_first_call_logs_each_kernel(monkeypatch, caplog):
    pytest.importorskip("numba")
    from dimgraph import progress
    from dimgraph.backends.numba import cache

    monkeypatch.setattr(progress, "AFTER", 0.0)  # every compile counts as slow
    monkeypatch.setattr(cache, "_LOADED", {})  # fresh dispatchers: their first call compiles or loads from disk
    x = dg.tensor("x", shape=(None,))
    f = dg.function([x], dg.sin(x) * 3.0 + dg.cos(x).sum(), backend="numba")
    with caplog.at_level(logging.INFO, logger="dimgraph"):
        np.testing.assert_allclose(f(np.arange(3.0)), np.sin(np.arange(3.0)) * 3 + np.cos(np.arange(3.0)).sum())
    lines = [r.getMessage() for r in caplog.records if r.name == "dimgraph"]
    n = len(f._compiled.kernel_digests)
    kernels = [line for line in lines if ": kernel k" in line]
    assert len(kernels) == n and kernels[-1].startswith(f"dimgraph: compiling {n} numba kernels: kernel k")
    assert f" {n} of {n} (" in kernels[-1]
    assert "done" in lines[-1]


def test_a_slow_compile_shows_a_bar_in_a_notebook(monkeypatch):
    pytest.importorskip("numba")
    import sys
    import types

    from dimgraph import progress
    from dimgraph.backends.numba import cache

    shown = []

    class Handle:
        def update(self, page):
            shown.append(page.data)

    def display(page, display_id=False):
        assert display_id  # the bar is updated in place, not printed again
        shown.append(page.data)
        return Handle()

    class HTML:  # IPython.display.HTML as the notebook's front end reads it
        def __init__(self, data):
            self.data = data

    fake = types.ModuleType("IPython.display")  # a Jupyter kernel's display machinery, without needing IPython here
    fake.HTML, fake.display = HTML, display
    monkeypatch.setitem(sys.modules, "IPython", types.ModuleType("IPython"))
    monkeypatch.setitem(sys.modules, "IPython.display", fake)
    monkeypatch.setattr(progress, "AFTER", 0.0)
    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    monkeypatch.setattr(cache, "_LOADED", {})
    x = dg.tensor("x", shape=(None,))
    f = dg.function([dg.tensor("y", shape=(None,)), x], dg.tan(x) * 2.0 - dg.sinh(x).sum(), backend="numba")
    f(np.zeros(2), np.arange(3.0))
    n = len(f._compiled.kernel_digests)
    bars = [page for page in shown if "numba kernels: kernel k" in page]
    assert len(bars) == n and f'value="{n}" max="{n}"' in bars[-1] and f"{n} / {n}" in bars[-1]
    assert all(page.startswith("<div><progress") for page in shown)


def test_in_notebook_reads_the_running_shell(monkeypatch):
    import sys
    import types

    from dimgraph import progress

    class ZMQInteractiveShell:  # the class name Jupyter kernels run
        pass

    class TerminalInteractiveShell:
        pass

    fake = types.ModuleType("IPython")
    monkeypatch.setitem(sys.modules, "IPython", fake)
    for shell, expected in [(ZMQInteractiveShell(), True), (TerminalInteractiveShell(), False), (None, False)]:
        fake.get_ipython = lambda shell=shell: shell
        assert progress.in_notebook() is expected
    monkeypatch.delitem(sys.modules, "IPython")
    assert progress.in_notebook() is False
