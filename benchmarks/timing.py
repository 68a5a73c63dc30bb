"""Timing helpers shared by the benchmarks: per-call wall-clock times after a warm-up."""

from __future__ import annotations

import gc
import statistics
import sys
import time

# Warm-up: calls for up to this many seconds (at most `WARM_CALLS`), as a sampler's or optimizer's
# first calls, then the numba backend's background compiles finish (its jitted graph, once hot).
WARM_SECONDS = 1.0
WARM_CALLS = 250


def warm_up(fn):
    """Call `fn` as a hot loop begins, and let background compiles end (they would run in the timed rounds)."""
    t0 = time.perf_counter()
    for _ in range(WARM_CALLS):
        fn()
        if time.perf_counter() - t0 > WARM_SECONDS:
            break
    graphjit = sys.modules.get("dimgraph.backends.numba.graphjit")
    if graphjit is not None:
        graphjit.wait_for_compiles()


def call_times(fn, repeats, number=1):
    """Seconds per call of `fn` in each of `repeats` rounds of `number` calls, after a warm-up (`warm_up`);
    the garbage collector is paused while a round runs, so a collection lands in no measurement."""
    warm_up(fn)
    times = []
    for _ in range(repeats):
        gc.disable()
        try:
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            times.append((time.perf_counter() - t0) / number)
        finally:
            gc.enable()
    return times


def median_time(fn, repeats, number=1):
    """The median of `call_times`."""
    return statistics.median(call_times(fn, repeats, number))


def best_call(fn, repeats=9):
    """The fastest of `repeats` calls: the box is shared, and interference only ever adds time."""
    return min(call_times(fn, repeats))


def first_call(make):
    """`(seconds, fn)`: the time to build `fn = make()` and call it once (rewriting, codegen, compilation)."""
    t0 = time.perf_counter()
    fn = make()
    fn()
    return time.perf_counter() - t0, fn
