"""Concurrent draws: threads sharing a context, and copies of a function sent to workers.

Many threads call one drawing function on the default context (what every call
without `ctx=` uses): every draw must be new, and the state must end where as
many calls in a row would leave it. A copy of a function (pickled, or in a forked
child) starts from the parent's state and so draws the parent's next numbers;
contexts from `spawn`, sent along, give each worker its own stream. Every backend.
"""

import pickle
import threading

import numpy as np
import pytest

import dimgraph as dg

N_THREADS, N_CALLS = 8, 25


def _hammer(call, n_threads=N_THREADS, n_calls=N_CALLS):
    """`call()` from `n_threads` threads, `n_calls` times each, all started together; the results."""
    results, errors = [], []
    start = threading.Barrier(n_threads)

    def work():
        start.wait()
        try:
            mine = [call() for _ in range(n_calls)]
        except Exception as err:  # noqa: BLE001 - reported below with the thread's results
            errors.append(err)
            return
        results.extend(mine)

    threads = [threading.Thread(target=work) for _ in range(n_threads)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert len(results) == n_threads * n_calls
    return results


@pytest.fixture(scope="module")
def drawing():
    """Per backend: a stream, a function drawing 3 normals and a counter update from it, and its state."""
    made = {}

    def get(backend):
        if backend not in made:
            rng = dg.rng(2024)
            obs = dg.Dim("obs", size=3)
            count = dg.shared(np.array(0, dtype="int64"), name="count")
            y = rng.normal(0.0, 1.0, extra_dims=(obs,))
            f = dg.function([], y, updates={count: count + 1}, backend=backend, return_numpy=True)
            made[backend] = (f, rng.states[0], count)
        return made[backend]

    return get


def test_threads_on_the_default_context_each_draw_anew_and_advance_once(backend, drawing):
    f, state, count = drawing(backend)
    start = state.get()
    count.set(0)
    draws = _hammer(f)
    total = N_THREADS * N_CALLS
    assert len({d.tobytes() for d in draws}) == total  # every call drew its own numbers
    assert int(count.get()) == total  # and each call's update landed exactly once
    threaded_end = state.get()
    state.set(start)  # the same calls in a row, from the same state: the same draws, the same end state
    in_a_row = [f() for _ in range(total)]
    assert {d.tobytes() for d in draws} == {d.tobytes() for d in in_a_row}
    np.testing.assert_array_equal(threaded_end, state.get())


def test_threads_with_their_own_spawned_contexts_draw_independent_streams(backend, drawing):
    f, _, _ = drawing(backend)
    contexts = dg.SharedContext(seed=5).spawn(N_THREADS)
    mine = threading.local()
    lock = threading.Lock()
    free = list(contexts)

    def call():
        if not hasattr(mine, "ctx"):
            with lock:
                mine.ctx = free.pop()
        return f(ctx=mine.ctx)

    draws = _hammer(call)
    assert len({d.tobytes() for d in draws}) == N_THREADS * N_CALLS


def test_copies_draw_the_parents_next_numbers_unless_given_spawned_contexts(backend, drawing):
    """What docs/api.md says of workers: copies repeat the parent's stream; spawned contexts sent along do not."""
    f, state, _ = drawing(backend)
    copies = [pickle.loads(pickle.dumps(f)) for _ in range(2)]
    first = [c() for c in copies]
    np.testing.assert_array_equal(first[0], first[1])  # each copy draws the parent's next numbers ...
    np.testing.assert_array_equal(first[0], f())  # ... which the parent draws too
    contexts = dg.SharedContext(seed=11).spawn(2)
    sent = [pickle.loads(pickle.dumps((f, ctx))) for ctx in contexts]
    draws = [g(ctx=c) for g, c in sent]
    assert not np.array_equal(draws[0], draws[1])
    np.testing.assert_array_equal(draws[1], f(ctx=contexts[1]))  # reproducible: a worker's stream is its context's
