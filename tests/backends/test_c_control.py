"""The c backend runs loops and branches in C: no Python per step, errors of steps or branches that never run never raise.

Values are checked against the python backend (the reference `perform`).
"""

import re

import numpy as np
import pytest

import dimgraph as dg
from dimgraph.backends.c.control import LoopStats
from dimgraph.core.loop import loop_from_graph


def _both(inputs, outputs):
    return dg.function(inputs, outputs, backend="c"), dg.function(inputs, outputs, backend="python")


def _assert_same(fc, fp, *args):
    for got, want in zip(fc(*args), fp(*args)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_scans_gradients_while_loops_and_branches_step_in_c():
    y, rho, s0 = dg.vector("y"), dg.scalar("rho"), dg.scalar("s0")
    lp, trace = dg.scan(
        lambda acc, a, b: acc - 0.5 * (a - rho * b) ** 2, init=dg.core.constant(0.0), sequences=[y[1:], y[:-1]]
    )
    walk, path = dg.scan(lambda s, e: dg.tanh(s) + e, init=s0, sequences=y)
    until = dg.while_loop(lambda s: s < 50.0, lambda s: s * 2.0 + 1.0, init=s0, max_steps=100)
    branch = dg.ifelse(rho > 0, lp * 2.0, dg.exp(walk))
    outs = [lp, trace, dg.grad(lp, rho), walk, path, dg.grad(walk, s0), until, branch]
    before = LoopStats.host_loops
    fc, fp = _both([y, rho, s0], outs)
    entries = re.findall(r"static int (dg_inner_\w+)_run\(", fc.source)
    assert len(entries) == 7  # two scans, their two gradient scans, the while loop, the two branches
    yv = np.random.default_rng(0).normal(size=30)
    for r in (0.7, -0.3):
        _assert_same(fc, fp, yv, r, 0.25)
    _assert_same(fc, fp, yv[:1], 0.7, 0.25)  # zero steps for the first scan
    assert LoopStats.host_loops == before


def test_a_body_planned_per_step_runs_its_steps_in_python():
    """An index array computed from a state: the body cannot be planned once, so the loop steps in Python."""
    c = dg.vector("c")
    k0 = dg.vector("k0", dtype="int64", size=2)

    def step(k, acc):
        return (k + 1) % 3, acc + c[k].sum()

    (kf, accf), (_, acct) = dg.scan(step, init=[k0, dg.core.constant(0.0)], n_steps=5)
    fc, fp = _both([c, k0], [kf, accf, acct])
    before = LoopStats.host_loops
    _assert_same(fc, fp, np.array([1.0, 10.0, 100.0]), np.array([0, 2]))
    assert LoopStats.host_loops == before + 1


def test_a_body_that_cannot_run_fails_only_when_a_step_runs():
    s0, c, n = dg.vector("s0"), dg.vector("c"), dg.scalar("n", dtype="int64")
    final, _ = dg.scan(lambda s: s + c, init=s0, n_steps=n)
    fc, fp = _both([s0, c, n], [final])
    s, bad = np.ones(3), np.ones(4)
    np.testing.assert_array_equal(fc(s, bad, 0)[0], fp(s, bad, 0)[0])
    for f in (fc, fp):
        with pytest.raises(ValueError):
            f(s, bad, 2)


def test_a_branch_that_cannot_run_fails_only_when_taken():
    x, c, flag = dg.vector("x"), dg.vector("c"), dg.scalar("flag", dtype="bool")
    out = dg.ifelse(flag, x + c, x * 2.0)
    fc, fp = _both([x, c, flag], [out])
    x_v, bad = np.ones(3), np.ones(4)
    np.testing.assert_array_equal(fc(x_v, bad, False)[0], [2.0, 2.0, 2.0])
    for f in (fc, fp):
        with pytest.raises(ValueError):
            f(x_v, bad, True)


def test_a_sequence_read_past_its_end_raises_index_error():
    """The step's slice is bounds-checked in C, as NumPy indexing checks it."""
    seq, n = dg.vector("seq"), dg.scalar("n", dtype="int64")
    i, s, q = dg.scalar("i", dtype="int64"), dg.scalar("s"), dg.vector("q")
    (final,) = loop_from_graph(i, [s], [q], [s + q[i]], n, [dg.core.constant(0.0)], [seq])
    fc, fp = _both([seq, n], [final])
    np.testing.assert_allclose(fc(np.arange(4.0), 4)[0], 6.0)
    for f in (fc, fp):
        with pytest.raises(IndexError):
            f(np.arange(4.0), 5)


def test_a_loop_and_a_branch_inside_a_loop_body_run_in_c():
    x0, c = dg.vector("x0", size=3), dg.scalar("c")

    def outer_step(s):
        inner, _ = dg.scan(lambda t: t * 0.5 + c, init=s, n_steps=3)
        return dg.ifelse(inner.sum() > 1.0, inner - 1.0, inner * 2.0)

    final, trace = dg.scan(outer_step, init=x0, n_steps=5)
    fc, fp = _both([x0, c], [final, trace])
    before = LoopStats.host_loops
    for cv in (0.4, -0.2):
        _assert_same(fc, fp, np.array([0.1, 0.7, -0.3]), cv)
    assert LoopStats.host_loops == before
