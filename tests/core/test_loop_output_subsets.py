"""A loop's outputs do not depend on which of them are compiled: every subset gives the values a plain
Python loop gives, on every backend.

The rewrites that prune a loop (dead states, unread traces, `trace[-1]` as the last state, constants of
an accumulation hoisted out) see only the outputs compiled; a wrong pruning shows up as a subset whose
values differ from the whole (issue 36: a while loop's trace of `y` alone ended in the value of a
replay whose step counter had been hoisted out of the loop).
"""

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dimgraph as dg

_CACHE = {}
FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=8)

x = dg.vector("x")
c = dg.scalar("c")


def _flagged_search():
    """The issue's loop: step to the first entry above 3, recording `x[i] + 1` (the step reads the counter)."""
    step = lambda i, done, y: (i + 1, x[i] > 3, x[i] + 1)
    cond = lambda i, done, y: ~done & (i < x.shape[0])
    init = [np.int64(0), np.bool_(False), np.float64(0.0)]
    finals, traces = dg.while_loop(cond, step, init=init, max_steps=100, trace=True)
    return [*finals, *traces, traces[2][-1]]


def _flagged_search_oracle(xv, cv):
    i, done, y, rows = 0, False, 0.0, []
    while not done and i < len(xv):
        i, done, y = i + 1, bool(xv[i] > 3), xv[i] + 1
        rows.append((i, done, y))
    ti, td, ty = (np.array([r[k] for r in rows], dtype=d) for k, d in enumerate(("int64", "bool", "float64")))
    return [np.int64(i), np.bool_(done), np.float64(y), ti, td, ty, ty[-1]]


def _counted_sum():
    """A scan whose accumulator reads a counter that only accumulates a constant (`k + 1`)."""
    step = lambda k, s, e: (k + 1, s + e * k.astype("float64") - c)
    (k, s), (kt, st_) = dg.scan(step, init=[dg.core.constant(np.int64(0)), dg.core.constant(0.0)], sequences=x)
    return [k, s, kt, st_, st_[-1]]


def _counted_sum_oracle(xv, cv):
    k, s, ks, ss = 0, 0.0, [], []
    for e in xv:
        k, s = k + 1, s + e * k - cv
        ks.append(k)
        ss.append(s)
    return [np.int64(k), np.float64(s), np.array(ks, dtype="int64"), np.array(ss), np.float64(ss[-1])]


def _doubling_until():
    """A while loop whose step count and doubling value feed an accumulator, traced."""
    step = lambda k, v, acc: (k + 1, v * 2.0, acc + v + c)
    cond = lambda k, v, acc: acc < 50.0
    finals, traces = dg.while_loop(
        cond, step, init=[np.int64(0), np.float64(1.0), np.float64(0.0)], max_steps=40, trace=True
    )
    return [*finals, *traces]


def _doubling_until_oracle(xv, cv):
    k, v, acc, rows = 0, 1.0, 0.0, []
    while acc < 50.0 and k < 40:
        k, v, acc = k + 1, v * 2.0, acc + v + cv
        rows.append((k, v, acc))
    ti, tv, ta = (np.array([r[j] for r in rows], dtype=d) for j, d in enumerate(("int64", "float64", "float64")))
    return [np.int64(k), np.float64(v), np.float64(acc), ti, tv, ta]


LOOPS = {
    "flagged_search": (_flagged_search(), _flagged_search_oracle),
    "counted_sum": (_counted_sum(), _counted_sum_oracle),
    "doubling_until": (_doubling_until(), _doubling_until_oracle),
}


def _compiled(name, subset, backend):
    key = (name, subset, backend)
    if key not in _CACHE:
        outputs = LOOPS[name][0]
        _CACHE[key] = dg.function([x, c], [outputs[k] for k in subset], backend=backend)
    return _CACHE[key]


def _check(name, subset, backend, xv, cv):
    want = LOOPS[name][1](xv, cv)
    got = _compiled(name, subset, backend)(xv, cv)
    for k, g in zip(subset, got):
        assert np.shape(g) == np.shape(want[k]), (name, subset, k)
        np.testing.assert_allclose(g, want[k], rtol=1e-13, err_msg=f"{name}: output {k} compiled with {subset}")


def _data(hit, n):
    xv = np.zeros(n)
    if hit < n:
        xv[hit] = 4.0
    return xv


@pytest.mark.parametrize("name", sorted(LOOPS))
def test_every_single_output_compiled_alone_matches_a_python_loop(backend, name):
    n_out = len(LOOPS[name][0])
    for subset in [tuple(range(n_out)), *((k,) for k in range(n_out))]:
        _check(name, subset, backend, _data(23, 50), 0.25)


def test_the_issue_trace_alone_ends_with_the_last_step():
    """Compiled alone, y's trace ends with x[23] + 1 (it ended with 1: its replay read a frozen counter)."""
    finals, traces = dg.while_loop(
        lambda i, done, y: ~done & (i < 50),
        lambda i, done, y: (i + 1, x[i] > 3, x[i] + 1),
        init=[np.int64(0), np.bool_(False), np.float64(0.0)],
        max_steps=100,
        trace=True,
    )
    got = dg.function([x], traces[2], backend="python")(_data(23, 50))
    assert got.shape == (24,) and got[-1] == 5.0 and np.all(got[:-1] == 1.0)


@FIXTURE_OK
@given(data=st.data())
def test_any_subset_of_a_loops_outputs_matches_a_python_loop(backend, data):
    name = data.draw(st.sampled_from(sorted(LOOPS)), label="loop")
    n_out = len(LOOPS[name][0])
    subsets = [s for r in range(1, n_out + 1) for s in itertools.combinations(range(n_out), r)]
    subset = data.draw(st.sampled_from(subsets), label="outputs")
    n = data.draw(st.integers(1, 12), label="n")
    hit = data.draw(st.integers(0, n), label="hit")  # n: no entry above 3, the loop runs to the end
    cv = data.draw(st.sampled_from([0.0, 0.25, -1.5]), label="c")
    _check(name, subset, backend, _data(hit, n), cv)
