"""Rewrite + compile time (python backend) of an n-node elementwise chain, and its growth exponent.

    .venv/bin/python benchmarks/rewrite_scaling.py [--sizes 100 1000 5000 10000] [--repeats 3]

The chain alternates tanh(y) and y * 1.0001 + 0.5 on a vector, so every phase
has work (merge, folding of the padded constants, fusion into kernels of up to
MAX_STEPS steps). Times are medians over repeats; the exponent is the slope of
log(time) against log(n) by least squares (1.0 = linear). Times are process CPU
time after a `gc.collect()`, since the benchmark machine is shared.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time

import numpy as np

import dimgraph as dg


def chain(n):
    x = dg.vector("x")
    y = x
    for i in range(n):
        y = dg.tanh(y) if i % 3 == 0 else (y * 1.0001 if i % 3 == 1 else y + 0.5)
    return x, y


def measure(n, repeats, rewrites="default"):
    times = []
    for _ in range(repeats):
        x, y = chain(n)
        gc.collect()
        t0 = time.process_time()  # CPU time: the machine is shared, wall time is noisy
        f = dg.function([x], y, backend="python", rewrites=rewrites)
        times.append(time.process_time() - t0)
    f(np.zeros(3))  # the compiled function runs
    return statistics.median(times), len(f.fgraph.nodes)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000, 10000])
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args(argv)
    sys.setrecursionlimit(1000)  # the default: nothing may recurse per node
    rows = []
    print(f"{'n':>7} {'rewrite+compile s':>18} {'rewrites=none s':>16} {'nodes after':>12}")
    for n in args.sizes:
        t, nodes = measure(n, args.repeats)
        t0, _ = measure(n, args.repeats, rewrites="none")
        rows.append((n, t))
        print(f"{n:>7} {t:>18.4f} {t0:>16.4f} {nodes:>12}")
    ns = np.log([r[0] for r in rows])
    ts = np.log([r[1] for r in rows])
    slope = np.polyfit(ns, ts, 1)[0]
    print(f"fitted growth exponent (time ~ n^k): k = {slope:.2f}")
    times = dict(rows)
    pairs = [(1000, 10000)] if {1000, 10000} <= set(times) else []
    pairs += [(rows[-2][0], rows[-1][0])] if len(rows) >= 2 else []
    for n1, n2 in dict.fromkeys(pairs):
        print(f"exponent between n={n1} and n={n2}: {np.log(times[n2] / times[n1]) / np.log(n2 / n1):.2f}")


if __name__ == "__main__":
    main()
