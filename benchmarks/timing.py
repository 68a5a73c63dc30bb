"""Timing helpers shared by the benchmarks: per-call wall-clock times after one warm-up call."""

from __future__ import annotations

import gc
import statistics
import time


def call_times(fn, repeats, number=1):
    """Seconds per call of `fn` in each of `repeats` rounds of `number` calls, after a warm-up call;
    the garbage collector is paused while a round runs, so a collection lands in no measurement."""
    fn()
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
