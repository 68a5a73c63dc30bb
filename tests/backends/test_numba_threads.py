"""numba kernels split over threads (`backends/numba/threads.py`): the same results as one pass, the same
errors, no deadlock after fork, and `dg.config.threads = 1` turns it off."""

import math
import os
import select
import signal
import threading

import numpy as np
import pytest

import dimgraph as dg
from dimgraph.backends.numba import threads
from dimgraph.core.fused import IndexedLoop
from dimgraph.errors import IndexOutOfBounds, ShapeError

N = 2 * threads.MIN_WORK + 7  # a loop large enough to split, not a multiple of the block count
GROUPS = 100


def _hierarchical():
    """A log-density over a gather with its gradient: one IndexedLoop (sums and a scatter over axis 0)."""
    # mu of static size: its gradient's scatter base is a large constant, stored read-only
    mu, x, y = dg.tensor("mu", shape=(GROUPS,)), dg.vector("x"), dg.vector("y")
    g = dg.vector("g", dtype="int64")
    ls = dg.scalar("ls")
    z = (y - mu[g] * x) / dg.exp(ls)
    logp = (-0.5 * math.log(2 * math.pi) - ls - 0.5 * z * z).sum()
    return [mu, ls, x, y, g], [logp, *dg.grad(logp, [mu, ls])]


def _rows():
    """A costly elementwise loop, a max over the inner axis and a sum over the outer one."""
    a, b = dg.matrix("a"), dg.matrix("b")
    e = dg.exp(a) * dg.log1p(b * b)
    return [a, b], [e, e.max(axis=1), e.sum(axis=0)]


def _partial():
    """A costly 1-d loop summed and kept (no gathers): one IndexedLoop writing full rows and a sum."""
    x, y = dg.vector("x"), dg.vector("y")
    e = dg.exp(x) * dg.log1p(y * y)
    return [x, y], [e.sum(), e * 2.0]


def _hier_args(rng, n=N, groups=None):
    groups = groups or GROUPS
    return [
        rng.normal(size=groups),
        np.array(0.3),
        rng.normal(size=n),
        rng.normal(size=n),
        rng.integers(-groups, groups, n),
    ]


@pytest.fixture(scope="module")
def compiled():
    """Each graph compiled split (two threads) and whole (`threads = 1`), and called once (a first call
    runs whole: it compiles the kernel once, not in every thread)."""
    saved = dg.config.threads
    out = {}
    rng = np.random.default_rng(9)
    first = {
        "hier": _hier_args(rng, n=10),
        "rows": [rng.normal(size=(2, 4)), rng.normal(size=(2, 4))],
        "partial": [rng.normal(size=3), rng.normal(size=3)],
    }
    try:
        for name, make in (("hier", _hierarchical), ("rows", _rows), ("partial", _partial)):
            for count in (2, 1):
                dg.config.threads = count
                inputs, outputs = make()
                out[name, count] = dg.function(inputs, outputs, backend="numba")
                out[name, count](*first[name])
    finally:
        dg.config.threads = saved
    return out


def test_a_first_call_runs_whole():
    """The first call of a split kernel is one pass (so only one thread compiles it); later ones split."""
    calls = []

    def kernel(x):
        calls.append(len(x))
        return x * 2

    splitter = threads.Splitter(lambda: kernel, threads.Split((True,), (False,), ("rows",)), 2)
    x = np.arange(threads.MIN_WORK + 1.0)
    np.testing.assert_array_equal(splitter(x), x * 2)
    assert calls == [len(x)]
    np.testing.assert_array_equal(splitter(x), x * 2)
    assert sorted(calls[1:]) == [len(x) // 2, len(x) - len(x) // 2]


def test_split_matches_one_pass(compiled):
    rng = np.random.default_rng(0)
    args = _hier_args(rng)
    split, whole = compiled["hier", 2](*args), compiled["hier", 1](*args)
    assert "_splitter(" in compiled["hier", 2].source and "_splitter(" not in compiled["hier", 1].source
    for s, w in zip(split, whole):
        # the sums add blocks in another order: within a few ulps per term of N terms
        np.testing.assert_allclose(s, w, rtol=1e-12, atol=N * 1e-13)
    np.testing.assert_array_equal(compiled["hier", 2](*args)[1], split[1])  # the same bits on every call
    # the blocks have the whole call's argument types (a read-only base included): one compiled version
    kernel = compiled["hier", 2]._compiled.tiers.driver.__globals__["k0"]
    assert len(kernel.signatures) == 1, kernel.signatures
    a, b = rng.normal(size=(N // 4, 4)), rng.normal(size=(N // 4, 4))
    (e, emax, esum), (we, wmax, wsum) = compiled["rows", 2](a, b), compiled["rows", 1](a, b)
    np.testing.assert_array_equal(e, we)  # rows are computed alone: the same bits
    np.testing.assert_array_equal(emax, wmax)
    np.testing.assert_allclose(esum, wsum, rtol=1e-12)
    np.testing.assert_allclose(e, np.exp(a) * np.log1p(b * b), rtol=1e-14)
    np.testing.assert_array_equal(emax, e.max(axis=1))
    np.testing.assert_allclose(esum, e.sum(axis=0), rtol=1e-12)


def test_a_costly_loop_summed_and_kept_splits_and_matches_one_pass(compiled):
    """The IndexedLoop of a costly expression with a full-length result splits by rows like the Elemwise it
    replaces: the rows bit for bit, the sum within the reordering of its terms."""
    (loop,) = [n for n in compiled["partial", 2].fgraph.nodes if isinstance(n.op, IndexedLoop)]
    assert threads.split_of(loop) is not None and "_splitter(" in compiled["partial", 2].source
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=N), rng.normal(size=N)
    (total, kept), (whole_total, whole_kept) = compiled["partial", 2](x, y), compiled["partial", 1](x, y)
    np.testing.assert_array_equal(kept, whole_kept)
    np.testing.assert_allclose(kept, np.exp(x) * np.log1p(y * y) * 2.0, rtol=1e-14)
    np.testing.assert_allclose(total, whole_total, rtol=1e-12)
    np.testing.assert_allclose(total, (np.exp(x) * np.log1p(y * y)).sum(), rtol=1e-12)


def test_small_and_empty_calls_run_whole(compiled):
    rng = np.random.default_rng(1)
    for n in (0, 1, 1000):
        args = _hier_args(rng, n=n)
        for s, w in zip(compiled["hier", 2](*args), compiled["hier", 1](*args)):
            np.testing.assert_array_equal(s, w)


def test_errors_are_those_of_one_pass(compiled):
    rng = np.random.default_rng(2)
    args = _hier_args(rng)
    args[4][N - 3] = 199  # out of range, in the last block only
    args[4][N - 1] = -177
    for f in (compiled["hier", 2], compiled["hier", 1]):
        with pytest.raises(IndexOutOfBounds, match="199"):
            f(*args)
    args[4][5] = 333  # now the first block fails too: its error is raised, after every block has ended
    for f in (compiled["hier", 2], compiled["hier", 1]):
        with pytest.raises(IndexOutOfBounds, match="333"):
            f(*args)
    args = _hier_args(rng)
    args[3] = args[3][:-1]  # y one shorter than x: the kernel's own guard, not a split of mismatched blocks
    for f in (compiled["hier", 2], compiled["hier", 1]):
        with pytest.raises(ShapeError, match="axis 0"):
            f(*args)


def test_concurrent_callers(compiled):
    rng = np.random.default_rng(3)
    args = _hier_args(rng)
    expected = compiled["hier", 2](*args)
    results = [None] * 4

    def call(k):
        results[k] = compiled["hier", 2](*args)

    workers = [threading.Thread(target=call, args=(k,)) for k in range(4)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(timeout=60)
    for r in results:
        for a, b in zip(r, expected):
            np.testing.assert_array_equal(a, b)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_no_deadlock_after_fork(compiled):
    """A child forked while the pool exists starts its own and computes the same values."""
    rng = np.random.default_rng(4)
    args = _hier_args(rng)
    expected = compiled["hier", 2](*args)  # the pool exists now
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: compute, report, exit without running pytest's teardown
        try:
            value = compiled["hier", 2](*args)[0]
            os.write(write, np.float64(value).tobytes())
        finally:
            os._exit(0)
    os.close(write)
    ready = []
    try:
        ready, _, _ = select.select([read], [], [], 120)
        assert ready, "the forked child did not answer in 120 s (deadlock)"
        value = np.frombuffer(os.read(read, 8), dtype=np.float64)[0]
    finally:
        os.close(read)
        if not ready:
            os.kill(pid, signal.SIGKILL)  # a hung child must not hang the suite too
        os.waitpid(pid, 0)
    assert value == expected[0]


@pytest.mark.parametrize("bad", [-1, 1.5, "2", True])
def test_bad_thread_setting_is_named(bad):
    x = dg.vector("x")
    saved = dg.config.threads
    dg.config.threads = bad
    try:
        with pytest.raises(ValueError, match="dg.config.threads must be an int >= 0"):
            dg.function([x], dg.exp(x), backend="numba")
    finally:
        dg.config.threads = saved
