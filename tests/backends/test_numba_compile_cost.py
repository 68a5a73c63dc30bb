"""What keeps the numba backend's compile time per distinct kernel (benchmark workload 4).

- a graph with many kernel calls runs its driver from Python: a jitted driver makes
  Numba link and recompile every kernel's code once more;
- nodes equal in op and types share one printed kernel;
- adjacent guards raising the same error are one `if` (each `raise` site costs Numba
  compile time), with the same errors raised.
"""

import numpy as np
import pytest

import dimgraph as dg
from dimgraph.backends import numba as nb_backend

pytest.importorskip("numba")


def _blocks(n):
    x = dg.tensor("x", shape=(8, 4))
    ws = [dg.tensor(f"w{i}", shape=(4,)) for i in range(n)]
    h = x
    for w in ws:
        h = dg.tanh(h * w + 0.5)
    return x, ws, h


def _reference(xv, wvs):
    h = xv
    for w in wvs:
        h = np.tanh(h * w + 0.5)
    return h


def test_many_calls_run_from_python_with_the_same_values():
    x, ws, h = _blocks(30)
    f = dg.function([x, *ws], h, backend="numba", rewrites="none")
    calls = f.source.split("def graph(")[1].count(" = k")
    assert calls > nb_backend.JIT_GRAPH_MAX_CALLS
    assert f._run.jitted is False
    rng = np.random.default_rng(1)
    xv, wvs = rng.normal(size=(8, 4)), [rng.normal(size=4) for _ in ws]
    np.testing.assert_allclose(f(xv, *wvs), _reference(xv, wvs), rtol=1e-13)


def test_jit_graph_option_still_jits_a_large_driver():
    x, ws, h = _blocks(6)
    f = dg.function([x, *ws], h, backend="numba", rewrites="none", jit_graph=True)
    assert f._run.jitted is True
    rng = np.random.default_rng(2)
    xv, wvs = rng.normal(size=(8, 4)), [rng.normal(size=4) for _ in ws]
    np.testing.assert_allclose(f(xv, *wvs), _reference(xv, wvs), rtol=1e-13)


def test_a_few_calls_still_run_as_one_jitted_function():
    x, ws, h = _blocks(2)
    f = dg.function([x, *ws], h, backend="numba", rewrites="none")
    calls = f.source.split("def graph(")[1].count(" = k")
    assert nb_backend.JIT_GRAPH_MIN_CALLS < calls <= nb_backend.JIT_GRAPH_MAX_CALLS
    assert f._run.jitted is True
    xv, wvs = np.full((8, 4), 0.25), [np.full(4, 2.0), np.full(4, -1.0)]
    np.testing.assert_allclose(f(xv, *wvs), _reference(xv, wvs), rtol=1e-13)


def test_equal_nodes_share_one_kernel():
    x, ws, h = _blocks(12)
    f = dg.function([x, *ws], h, backend="numba", rewrites="none")
    body = f.source.split("def graph(")[1].split("# ---- kernels ----")[0]
    calls = body.count(" = k")
    # per block: DimShuffles of w and of the constant 0.5, mul, add, tanh: five kernels in all
    assert calls == 5 * 12
    assert len(f._run.kernel_digests) == 5
    assert f.source.count("\ndef kernel(") == len(f._run.kernel_digests)


def test_guards_of_a_wide_kernel_are_one_raise_and_still_raise():
    xs = [dg.tensor(f"x{i}", shape=(None,)) for i in range(6)]
    out = xs[0]
    for v in xs[1:]:
        out = dg.tanh(out * v)
    f = dg.function(xs, out, backend="numba")
    kernel_text = f.source.split("# ---- kernels ----")[1]
    assert kernel_text.count("raise ShapeError") == 1
    assert "(x1.shape[0] != n0) or (x2.shape[0] != n0)" in kernel_text
    vals = [np.linspace(0.1, 1.0, 5) * (i + 1) for i in range(6)]
    expected = vals[0]
    for v in vals[1:]:
        expected = np.tanh(expected * v)
    np.testing.assert_allclose(f(*vals), expected, rtol=1e-13)
    for bad in (1, 5):  # the first and the last input of the merged check
        args = list(vals)
        args[bad] = np.ones(4)
        with pytest.raises(dg.ShapeError, match="axis 0 has different sizes"):
            f(*args)


def test_merge_guards_merges_only_plain_runs_of_the_same_raise():
    src = "\n".join(
        [
            "def kernel(x):",
            "    if a:",
            "        raise E('m')",
            "    if b:",
            "        raise E('m')",
            "    else:",
            "        pass",
            "    if c:",
            "        raise E('m')",
            "    if d[1:2]:",
            "        raise E('m')",
            "    if e:",
            "        raise F('m')",
            "    if f:",
            "        raise F('m')",
            "        g = 1",
            "    return x",
        ]
    )
    merged = nb_backend._merge_guards(src).splitlines()
    assert merged == [
        "def kernel(x):",
        "    if a:",
        "        raise E('m')",
        "    if b:",
        "        raise E('m')",
        "    else:",
        "        pass",
        "    if (c) or (d[1:2]):",
        "        raise E('m')",
        "    if e:",
        "        raise F('m')",
        "    if f:",
        "        raise F('m')",
        "        g = 1",
        "    return x",
    ]
