"""What keeps the numba backend's compile time per distinct kernel (benchmark workload 4).

- the driver is Python: views, shapes, ops without a printed kernel and (beside loops)
  single-element arithmetic run by NumPy there instead of costing a Numba function each;
- nodes equal in op and types share one printed kernel;
- the guards raising the same error are one `if` (each `raise` site costs Numba
  compile time), with the same errors raised.
"""

import re

import numpy as np
import pytest

import dimgraph as dg
from dimgraph.backends import numba as nb_backend  # noqa: F401  (registers the backend)
from dimgraph.backends.numba.flatjit import flat_text

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


def _driver(f):
    return f.source.split("def graph(")[1].split("# ---- kernels ----")[0]


def test_views_run_on_the_host_and_equal_nodes_share_one_kernel():
    x, ws, h = _blocks(30)
    f = dg.function([x, *ws], h, backend="numba", rewrites="none")
    body = _driver(f)
    # per block: mul, add, tanh as kernels; the DimShuffles of w and of 0.5 by NumPy in the driver
    assert body.count(" = k") == 3 * 30 and body.count(" = h") == 2 * 30
    assert len(f._compiled.kernel_digests) == 3 and f.source.count("\ndef kernel(") == 3
    assert "DimShuffle" not in f.source.split("# ---- kernels ----")[1]
    rng = np.random.default_rng(1)
    xv, wvs = rng.normal(size=(8, 4)), [rng.normal(size=4) for _ in ws]
    np.testing.assert_allclose(f(xv, *wvs), _reference(xv, wvs), rtol=1e-13)


def test_single_element_arithmetic_beside_a_loop_runs_on_the_host():
    x = dg.tensor("x", shape=(None,))
    s, t = dg.tensor("s", shape=()), dg.tensor("t", shape=(1,))
    scale = dg.exp(s) * 2.0 + dg.log1p(t * t).sum()  # single elements: no kernel for these
    out = (x * scale).sum()
    f = dg.function([x, s, t], [out, scale], backend="numba")
    assert len(f._compiled.kernel_digests) == 1, f.source
    xv, sv, tv = np.linspace(-1, 1, 7), np.array(0.3), np.array([0.5])
    want = dg.function([x, s, t], [out, scale], backend="python")(xv, sv, tv)
    got = f(xv, sv, tv)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-14)


def test_single_element_support_checks_run_as_ufunc_steps():
    """A log density's support and validity checks (bitwise logic, isfinite) on single elements go through the
    host's ufunc program, not `perform` (about 90 us a step there: 2 ms per call of a radon model's logp)."""
    from dimgraph.backends.numba.host import host_impl

    x = dg.tensor("x", shape=(None,))
    s = dg.tensor("s", shape=())
    inside = ((s >= 0) & dg.isfinite(s)) | ~(dg.isnan(s) ^ (s < 1))
    scale = dg.where(inside, dg.exp(s), -1.0)
    f = dg.function([x, s], [(x * scale).sum(), scale], backend="numba")
    tiny = [n for n in f.fgraph.toposort() if n.op.__class__.__name__ == "Elemwise" and n.outputs[0].type.shape == ()]
    assert tiny and all("program" in host_impl(n.op, n).__code__.co_freevars for n in tiny)
    want = dg.function([x, s], [(x * scale).sum(), scale], backend="python")
    for sv in (0.3, -2.0, np.inf, np.nan):
        for g, w in zip(f(np.linspace(-1, 1, 7), np.array(sv)), want(np.linspace(-1, 1, 7), np.array(sv))):
            np.testing.assert_array_equal(g, w)


def test_a_graph_of_single_elements_only_is_one_kernel():
    x = dg.tensor("x", shape=())
    f = dg.function([x], dg.exp(x) + 1.0, backend="numba")
    assert len(f._compiled.kernel_digests) == 1 and not f._compiled.host_ops
    assert float(f(np.array(0.5))) == pytest.approx(np.exp(0.5) + 1.0, rel=1e-15)


def test_ops_without_a_printed_kernel_run_by_numpy_in_the_driver():
    a, b = dg.tensor("a", shape=(3, 4, 5)), dg.tensor("b", shape=(5, 4))
    f = dg.function([a, b], dg.core.einsum("ijk,kj->i", a, b), backend="numba")
    assert "objmode" not in f.source and not f._compiled.kernel_digests
    av, bv = np.arange(60.0).reshape(3, 4, 5), np.arange(20.0).reshape(5, 4)
    np.testing.assert_allclose(f(av, bv), np.einsum("ijk,kj->i", av, bv))


def test_lapack_functions_run_by_numpy_in_the_driver_and_jitted_in_loop_bodies():
    """solve/inv/det/slogdet/eigh skip Numba's np.linalg compile (seconds cold) at the top level;
    a scan body, which must be jitted, still prints them; cholesky stays a printed loop."""
    rng = np.random.default_rng(3)
    g = rng.normal(size=(5, 4, 4))
    A, B = g @ g.transpose(0, 2, 1) + 4 * np.eye(4), rng.normal(size=(5, 4))
    a, b = dg.tensor("a", shape=(None, 4, 4)), dg.tensor("b", shape=(None, 4))
    L = dg.linalg
    outs = [L.solve(a, b, b_ndim=1), L.inv(a), L.det(a), L.slogdet(a)[1], L.eigh(a)[0], L.cholesky(a)]
    f = dg.function([a, b], outs, backend="numba")
    assert len(f._compiled.host_ops) == 5 and len(f._compiled.kernel_digests) == 1, f.source  # the cholesky
    want = [
        np.linalg.solve(A, B[..., None])[..., 0],
        np.linalg.inv(A),
        np.linalg.det(A),
        np.linalg.slogdet(A)[1],
        np.linalg.eigh(A)[0],
        np.linalg.cholesky(A),
    ]
    for got, expected in zip(f(A, B), want):
        np.testing.assert_allclose(got, expected, rtol=1e-10)
    A[2] = 0.0  # singular: NaNs or infs by the failure rule, never an exception
    assert not np.isfinite(f(A, B)[0][2]).all() and np.isfinite(f(A, B)[0][[0, 1, 3, 4]]).all()
    final, _ = dg.scan(lambda x, m: L.solve(m, x, b_ndim=1) + L.det(m), init=b[0], sequences=[a])
    g2 = dg.function([a, b], final, backend="numba")
    assert "np.linalg.solve" in g2.source and "np.linalg.det" in g2.source
    A = g @ g.transpose(0, 2, 1) + 4 * np.eye(4)
    x = B[0]
    for m in A:
        x = np.linalg.solve(m, x) + np.linalg.det(m)
    np.testing.assert_allclose(g2(A, B), x, rtol=1e-10)


def test_unknown_options_are_an_error_naming_the_accepted_ones():
    x = dg.tensor("x", shape=(None,))
    with pytest.raises(TypeError, match=r"unknown options \['jit_graf'\]; accepted: jit_graph"):
        dg.function([x], x + 1, backend="numba", jit_graf=True)


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


def test_guard_lines_print_one_if_per_raise_keeping_the_order():
    from dimgraph.backends.numba.loops import guard_lines

    checks = [("a", "raise E('m')"), ("b", "raise F('m')"), ("c", "raise E('m')"), ("d", "raise E('m')")]
    assert guard_lines(checks, "    ") == [
        "    if (a) or (c) or (d):",
        "        raise E('m')",
        "    if b:",
        "        raise F('m')",
    ]


def test_an_objmode_kernel_names_its_op_by_a_key_that_runs_its_perform():
    import re

    from dimgraph.backends.numba.fallback import perform_caller
    from dimgraph.backends.numba.ops import ObjmodeKernel, numba_kernel

    # an IfElse vectorized over a per-element condition (inputs: the conditions, x broadcast over the batch)
    from dimgraph.core.blockwise import Blockwise
    from dimgraph.core.graph import toposort

    c, x, cs = dg.scalar("c", dtype="int32"), dg.vector("x", size=3), dg.vector("cs", dtype="int32")
    out = dg.vectorize_graph(dg.ifelse(c, x * 2.0, x - 1.0), {c: cs})
    (node,) = [n for n in toposort([out]) if isinstance(n.op, Blockwise)]
    src = numba_kernel(node.op, node)
    assert isinstance(src, ObjmodeKernel) and "pickle" not in src and "fromhex" not in src
    (key,) = re.findall(r'perform_caller\("([0-9a-f]+)"\)', src)
    got = perform_caller(key)(np.array([True, False]), np.array([[1.0, 2.0, 3.0]]))
    got = got[0] if isinstance(got, (tuple, list)) else got
    np.testing.assert_array_equal(got, [[2.0, 4.0, 6.0], [0.0, 1.0, 2.0]])


# `a[1:] = b`, `a[...] = b`, `a[0, :] += b`: an array stored into a slice
_SLICE_STORE = re.compile(r"^\s*\w+\[[^\]]*(:|\.\.\.)[^\]]*\]\s*\+?=\s")
ROW, COL, TIME = dg.Dim("row", size=3), dg.Dim("col", size=2), dg.Dim("time", size=4)


def _slice_stores(source):
    return [line for line in source.splitlines() if _SLICE_STORE.match(line)]


def test_no_printed_kernel_stores_an_array_into_a_slice():
    """A slice store makes Numba compile its shape-mismatch message (about 4.5 CPU s once per cold process):
    allocations, set/inc of slices, loop states and traces and the flat entry's gradient copy element by
    element instead, with the same values."""
    x, v = dg.tensor("x", shape=(None, 3)), dg.tensor("v", shape=(3,))
    n = dg.tensor("n", shape=(), dtype="int64")
    outs = [
        dg.core.set_subtensor(x[1:], v),
        dg.core.inc_subtensor(x[::2, 1:], v[1:]),
        dg.core.set_subtensor(x[:, None][1:], v[None]),
        dg.core.full((n, 3), 2.5) + x[0],
    ]
    f = dg.function([x, v, n], outs, backend="numba", jit_graph=True)
    xv, vv = np.arange(15.0).reshape(5, 3), np.array([1.0, -2.0, 4.0])
    want = dg.function([x, v, n], outs, backend="python")(xv, vv, np.int64(2))
    for got, w in zip(f(xv, vv, np.int64(2)), want):
        np.testing.assert_array_equal(got, w)

    s0, e = dg.labeled("s0", dims=(ROW,)), dg.labeled("e", dims=(TIME, ROW))
    last, path = dg.scan(lambda s, step: 0.5 * s + step, s0, sequences=[e], dim=TIME)
    fw = dg.function([s0, e], [last, path], backend="numba", jit_graph=True)
    s0v, ev = np.array([1.0, -1.0, 2.0]), np.arange(12.0).reshape(4, 3)
    states = [s0v]
    for step in ev:
        states.append(0.5 * states[-1] + step)
    got_last, got_path = fw(s0v, ev)
    np.testing.assert_array_equal(got_path, np.array(states[1:]))
    np.testing.assert_array_equal(got_last, states[-1])

    a = dg.labeled("a", dims=(ROW, COL))
    cost = (dg.sin(a) * dg.constant(np.arange(6.0).reshape(3, 2), dims=(ROW, COL))).sum()
    flat = dg.flat_value_and_grad(cost, [a], backend="numba", jit_graph=True)
    theta = np.linspace(-1.0, 1.0, 6)
    value, grad = flat(theta)
    np.testing.assert_allclose(grad, np.cos(theta) * np.arange(6.0), rtol=1e-15)
    assert flat.function.tiers.state == "jitted"
    for source in (f.source, fw.source, flat_text("0" * 24, [(3, 2), (), (5,)], ["float64"] * 3, 0, 1, "cache=True")):
        assert not _slice_stores(source), _slice_stores(source)
