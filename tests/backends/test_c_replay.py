"""The c backend's replayed plans (`backends/c/replay.py`): repeated calls give what planning every call gives.

Each graph is compiled once per module; every call is checked against the python backend
(NumPy), with calls that must replay (same shapes), plan again (new shapes, new values of
an input the plan reads) or never keep a plan (a failure kept for C, a large input).
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import dimgraph as dg
from dimgraph.backends.c import replay


def _pair(inputs, outputs):
    return dg.function(inputs, outputs, backend="c"), dg.function(inputs, outputs, backend="python")


def _replayer(f):
    return next(c.cell_contents for c in f._compiled.run.__closure__ if isinstance(c.cell_contents, replay.Replayer))


def _assert_same(a, b):
    for x, y in zip(a, b):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def gather_model():
    """A reduction (a buffer the plan initializes), a gather and its scatter-add gradient, a matmul."""
    x, w = dg.tensor("x", shape=(None,)), dg.tensor("w", shape=(3, 3))
    idx = dg.tensor("idx", shape=(None,), dtype="int64")
    cost = (dg.exp(x[idx]) * 0.5).sum() + (w @ w).sum() + x.max()
    return _pair([x, w, idx], [cost, dg.grad(cost, x), dg.grad(cost, w)])


@given(
    arrays(np.float64, 6, elements=st.floats(-3, 3)),
    arrays(np.float64, (3, 3), elements=st.floats(-3, 3)),
    arrays(np.int64, 9, elements=st.integers(-6, 5)),
)
def test_replayed_calls_agree_with_numpy(gather_model, x, w, idx):
    c, py = gather_model
    first = c(x, w, idx)
    assert _replayer(c).current is not None
    _assert_same(first, py(x, w, idx))
    again = c(x + 1.0, w * 2.0, idx)  # same shapes and index values: the kept plan runs
    _assert_same(again, py(x + 1.0, w * 2.0, idx))
    moved = c(x[::-1].copy(), w.T, idx[::-1])  # other index values, a transposed input: still NumPy's values
    _assert_same(moved, py(x[::-1].copy(), w.T, idx[::-1]))


def test_outputs_are_fresh_arrays_and_new_shapes_plan_again(gather_model):
    c, py = gather_model
    w, idx = np.eye(3), np.array([0, 1, 1])
    a = c(np.arange(3.0), w, idx)
    b = c(np.arange(3.0) + 1, w, idx)
    assert not np.may_share_memory(a[1], b[1])  # the buffers are used again: outputs are copied out
    _assert_same(a, py(np.arange(3.0), w, idx))
    longer = c(np.arange(5.0), w, np.array([4, 0]))
    _assert_same(longer, py(np.arange(5.0), w, np.array([4, 0])))
    assert _replayer(c).current.key[0][1] == (5,)


def test_an_index_out_of_range_after_replays_is_still_an_index_error(gather_model):
    c, _ = gather_model
    for _ in range(2):
        c(np.zeros(3), np.eye(3), np.array([0, 2]))
    with pytest.raises(IndexError, match="out of bounds"):
        c(np.zeros(3), np.eye(3), np.array([0, 3]))


def test_a_plan_that_reads_values_that_change_stops_being_kept():
    """`x[:n]`: the plan reads n; the same n replays, after MAX_MISSES calls with new values it plans every call."""
    x, n = dg.tensor("x", shape=(None,)), dg.tensor("n", shape=(), dtype="int64")
    c, py = _pair([x, n], x[:n] * 2)
    rep, x0 = _replayer(c), np.arange(8.0)
    for k in (3, 3):
        np.testing.assert_array_equal(c(x0 + k, np.int64(k)), py(x0 + k, np.int64(k)))
    assert rep.current is not None
    for k in range(replay.MAX_MISSES + 1):
        np.testing.assert_array_equal(c(x0, np.int64(k)), py(x0, np.int64(k)))
    assert not rep.enabled and rep.current is None
    np.testing.assert_array_equal(c(x0, np.int64(5)), py(x0, np.int64(5)))


def test_large_inputs_are_planned_every_call():
    x = dg.tensor("x", shape=(None,))
    c, _ = _pair([x], (x * 2).sum())
    big = np.ones(replay.REPLAY_LIMIT + 1)
    assert float(c(big)) == 2 * big.size and _replayer(c).current is None


def test_a_scan_replays_and_agrees_with_numpy():
    t = dg.Dim("t")
    rho = dg.labeled("rho", dims=())
    seq = dg.labeled("seq", dims=(t,))
    _, path = dg.scan(lambda s, e: rho * s + e, init=dg.zeros_like(rho), sequences=seq, dim=t)
    cost = (path**2).sum()
    c, py = _pair([rho, seq], [cost.to_positional(), dg.grad(cost, rho).to_positional()])
    e = np.random.default_rng(0).normal(size=20)
    for r in (0.5, -0.3, 0.9):
        _assert_same(c(r, e), py(r, e))
    assert _replayer(c).current is not None


def test_threads_calling_at_once_each_get_their_own_values(gather_model):
    """The kept plan serves one thread at a time; the others plan their calls as before."""
    from concurrent.futures import ThreadPoolExecutor

    c, py = gather_model
    w, idx = np.eye(3), np.array([0, 2, 1, 1])
    xs = [np.linspace(-1, 1, 4) * k for k in range(40)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda x: c(x, w, idx), xs))
    for x, got in zip(xs, results):
        _assert_same(got, py(x, w, idx))


def test_a_plan_cheaper_than_the_copies_is_not_kept():
    """`x + 1` on 60,000 elements plans in microseconds; copying its input in and output out would cost more."""
    x = dg.tensor("x", shape=(None,))
    c, _ = _pair([x], x + 1)
    big = np.arange(60000.0)
    np.testing.assert_array_equal(c(big), big + 1)
    assert _replayer(c).current is None
    np.testing.assert_array_equal(c(big * 2), big * 2 + 1)


def test_replays_restore_initialized_buffers_and_see_read_values_changed_in_place():
    """dg_replay restores a reduction's identity before every run (a max that falls after one that rose),
    and compares the values the plan read by content: an index array changed in place plans again."""
    x, n = dg.tensor("x", shape=(None,)), dg.tensor("n", shape=(), dtype="int64")
    c, py = _pair([x, n], [x[:n].max(), x[:n].sum()])
    rep, x0, count = _replayer(c), np.arange(6.0), np.array(4)
    for shift in (0.0, 5.0, -20.0, -3.0):
        _assert_same(c(x0 + shift, count), py(x0 + shift, count))
    assert rep.current is not None
    count[...] = 2  # the same array, a new value: the kept plan's read differs
    _assert_same(c(x0, count), py(x0, count))
    assert rep.current.key[1] == (np.dtype(np.int64), ())
    views = dg.function([x], x[1:], backend="c")  # no kernel runs: a view, copied out
    for k in range(3):
        np.testing.assert_array_equal(views(x0 + k), x0[1:] + k)
