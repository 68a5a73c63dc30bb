"""The c backend next to the others: per-call times of a few workloads, and compile times cold/warm.

    .venv/bin/python benchmarks/backends_c.py            # default sizes (about a minute)
    .venv/bin/python benchmarks/backends_c.py --quick    # small sizes

Per-call: median of repeated calls after a warm-up call. Compile: a fresh process
builds the same graph with an empty `DIMGRAPH_CACHE_DIR` (cold), then another
process with the filled one (warm); the time is that of `dg.function` alone.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import dimgraph as dg  # noqa: E402

BACKENDS = [b for b in ("python", "numba", "c") if b in dg.backends.available_backends()]


def median_time(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def workloads(quick):
    n = 200 if quick else 1000
    x = dg.tensor("x", shape=(None, None))
    y = dg.tensor("y", shape=(None,))
    xv = np.random.default_rng(0).standard_normal((n, n))
    yv = np.random.default_rng(1).standard_normal(n)
    m = 100 if quick else 400
    a = dg.tensor("a", shape=(None, None))
    av = np.random.default_rng(2).standard_normal((m, m))
    small = dg.tensor("s", shape=(None,))
    return [
        (f"fused elemwise {n}x{n}", [x, y], dg.exp(x) * y + dg.log1p(x * x), (xv, yv)),
        (f"logsumexp rows {n}x{n}", [x], dg.core.logsumexp(x, axis=1), (xv,)),
        (f"sum of squares {n}x{n}", [x], (x * x).sum(), (xv,)),
        (f"matmul {m}x{m}", [a], dg.core.matmul(a, a), (av,)),
        ("x + 1, 10 elements (call overhead)", [small], small + 1, (np.ones(10),)),
    ]


COMPILE_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    import dimgraph as dg
    x = dg.tensor("x", shape=(None, None)); y = dg.tensor("y", shape=(None,))
    outs = [dg.exp(x) * y + dg.log1p(x * x), dg.core.logsumexp(x, axis=1), (x * y).sum(axis=0), x.T[1:] @ x[1:]]
    t = time.perf_counter()
    dg.function([x, y], outs, backend=sys.argv[1])
    print(json.dumps(time.perf_counter() - t))
    """
)


def compile_times(backend):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, DIMGRAPH_CACHE_DIR=cache, PYTHONPATH=ROOT)
        out = []
        for _ in ("cold", "warm"):
            res = subprocess.run([sys.executable, "-c", COMPILE_SCRIPT, backend], env=env, capture_output=True, text=True)
            out.append(json.loads(res.stdout.strip().splitlines()[-1]) if res.returncode == 0 else float("nan"))
        return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    print(f"{os.cpu_count()} cores; backends {BACKENDS}")
    for name, inputs, out, values in workloads(args.quick):
        cells = []
        for backend in BACKENDS:
            f = dg.function(inputs, out, backend=backend)
            cells.append(f"{backend} {median_time(lambda f=f: f(*values), 5 if 'overhead' not in name else 200) * 1e3:9.3f} ms")
        print(f"{name:40s} " + "  ".join(cells))
    for backend in BACKENDS:
        cold, warm = compile_times(backend)
        print(f"compile (4-output graph) {backend:8s} cold {cold:7.3f} s   warm {warm:7.3f} s")


if __name__ == "__main__":
    main()
