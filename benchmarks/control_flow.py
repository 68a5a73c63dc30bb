"""Control-flow benchmarks (issue 16): an AR(1) log density + gradient written with `dg.scan`, and merging scans.

    .venv/bin/python benchmarks/control_flow.py            # T = 100,000; k = 10, 100, 1000
    .venv/bin/python benchmarks/control_flow.py --quick    # T = 10,000; k = 10, 100

1. AR(1): logp(y | rho, sigma) = sum_t N(y_t | rho y_{t-1}, sigma) and its gradient
   wrt (rho, sigma), as `dg.scan` over the pairs (y_t, y_{t-1}) + `dg.grad`,
   compiled on the numba (default), c and jax backends. References in the same
   process: a hand-written `numba.njit` loop computing the value and both
   derivatives in one pass, and `jax.value_and_grad` of a `jax.lax.scan` under
   `jax.jit`. Per call: median of repeated calls. Compile: the first call
   (build + rewrite + compile), "cold" in a fresh process with an empty
   `DIMGRAPH_CACHE_DIR`, "warm" in a fresh process with that cache filled.
   PyTensor is not installed here (not an allowed dependency), so it has no row.
2. Merging k identical scans: k scans of one body, each built separately (so
   each has its own inner graph objects), summed; the time to build the
   FunctionGraph and run the merge phase, which must make them one Loop
   (median of 5, after a warm-up merge: the first merge of a process imports
   the rewrite database). Linear means time / k stays flat.
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import dimgraph as dg  # noqa: E402
from benchmarks.timing import median_time  # noqa: E402

HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def ar1_function(backend):
    y, rho, sigma = dg.vector("y"), dg.scalar("rho"), dg.scalar("sigma")

    def step(acc, y_t, y_prev):
        z = (y_t - rho * y_prev) / sigma
        return acc + (-0.5 * z * z - dg.log(sigma) - HALF_LOG_2PI)

    logp, _ = dg.scan(step, init=dg.core.constant(0.0), sequences=[y[1:], y[:-1]])
    return dg.function([y, rho, sigma], [logp, *dg.grad(logp, [rho, sigma])], backend=backend)


def hand_numba():
    import numba

    @numba.njit(cache=True)
    def ar1(y, rho, sigma):
        lp = d_rho = d_sigma = 0.0
        inv = 1.0 / sigma
        for t in range(1, y.shape[0]):
            r = y[t] - rho * y[t - 1]
            z = r * inv
            lp += -0.5 * z * z
            d_rho += z * inv * y[t - 1]
            d_sigma += z * z * inv
        n = y.shape[0] - 1
        return lp - n * (math.log(sigma) + HALF_LOG_2PI), d_rho, d_sigma - n * inv

    return ar1


def hand_jax():
    import jax
    import jax.numpy as jnp

    def logp(params, y):
        rho, sigma = params

        def step(acc, pair):
            y_t, y_prev = pair
            z = (y_t - rho * y_prev) / sigma
            return acc + (-0.5 * z * z - jnp.log(sigma) - HALF_LOG_2PI), None

        acc, _ = jax.lax.scan(step, jnp.zeros((), y.dtype), (y[1:], y[:-1]))
        return acc

    return jax.jit(jax.value_and_grad(logp))


def _first_call_in_fresh_process(backend, T, cache_dir):
    code = (
        "import time, numpy as np; t0 = time.perf_counter();"
        "import sys; sys.path.insert(0, %r); from benchmarks.control_flow import ar1_function;"
        "f = ar1_function(%r); f(np.random.default_rng(0).normal(size=%d), 0.5, 1.2);"
        "print(time.perf_counter() - t0)"
    ) % (os.path.dirname(os.path.dirname(os.path.abspath(__file__))), backend, T)
    env = dict(os.environ, DIMGRAPH_CACHE_DIR=cache_dir)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def ar1_rows(T, repeats):
    rng = np.random.default_rng(0)
    y = np.zeros(T)
    for t in range(1, T):
        y[t] = 0.6 * y[t - 1] + rng.normal()
    args = (y, 0.6, 1.1)
    rows = {}
    ref = None
    for backend in ("numba", "c", "jax"):
        t0 = time.perf_counter()
        f = ar1_function(backend)
        out = f(*args)
        first = time.perf_counter() - t0
        ref = out if ref is None else ref
        np.testing.assert_allclose(out, ref, rtol=1e-9)
        with tempfile.TemporaryDirectory() as cache:
            cold = _first_call_in_fresh_process(backend, T, cache)
            warm = _first_call_in_fresh_process(backend, T, cache)
        rows[f"dimgraph {backend}"] = dict(
            per_call_ms=1e3 * median_time(lambda: f(*args), repeats), first_call_s=first, cold_s=cold, warm_s=warm
        )
    ar1 = hand_numba()
    t0 = time.perf_counter()
    got = ar1(*args)
    first = time.perf_counter() - t0
    np.testing.assert_allclose(got, ref, rtol=1e-9)
    rows["hand numba"] = dict(per_call_ms=1e3 * median_time(lambda: ar1(*args), repeats), first_call_s=first)
    try:
        import jax
        import jax.numpy as jnp

        with jax.enable_x64(True):
            fn = hand_jax()
            yj, params = jnp.asarray(y), (jnp.asarray(0.6), jnp.asarray(1.1))
            t0 = time.perf_counter()
            val, grads = fn(params, yj)
            val.block_until_ready()
            first = time.perf_counter() - t0
            np.testing.assert_allclose([val, *grads], ref, rtol=1e-9)
            per = median_time(lambda: fn(params, yj)[0].block_until_ready(), repeats)
        rows["hand jax.lax.scan"] = dict(per_call_ms=1e3 * per, first_call_s=first)
    except ImportError:
        pass
    return rows


def merge_rows(ks):
    from dimgraph.core.fgraph import FunctionGraph
    from dimgraph.core.loop import Loop
    from dimgraph.core.rewriting import rewrite_graph

    x = dg.scalar("x")

    def one():
        final, _ = dg.scan(lambda s: dg.tanh(s * 0.9 + x) + 0.1 * s, init=x, n_steps=50)
        return final

    def merged(k):
        outs = [one() for _ in range(k)]
        total = outs[0]
        for o in outs[1:]:
            total = total + o
        gc.collect()
        t0 = time.perf_counter()
        fg = FunctionGraph([x], [total])
        rewrite_graph(fg, {"include": ["merge"]})
        elapsed = time.perf_counter() - t0
        loops = sum(isinstance(n.op, dg.core.Scan) or isinstance(n.op, Loop) for n in fg.toposort())
        assert loops == 1, loops
        return elapsed

    merged(2)  # warm-up: the first merge imports the rewrite database (20 ms, once per process)
    rows = {}
    for k in ks:
        elapsed = statistics.median(merged(k) for _ in range(5))
        rows[k] = dict(seconds=elapsed, us_per_scan=1e6 * elapsed / k)
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=20)
    opts = parser.parse_args()
    T = 10_000 if opts.quick else 100_000
    ks = (10, 100) if opts.quick else (10, 100, 1000)
    ar1 = ar1_rows(T, opts.repeats)
    print(f"AR(1) logp + gradient (rho, sigma), T = {T}")
    hand = ar1["hand numba"]["per_call_ms"]
    for name, r in ar1.items():
        extra = "".join(f", {k} {r[k]:.2f} s" for k in ("cold_s", "warm_s") if k in r)
        print(
            f"  {name:20s} {r['per_call_ms']:9.3f} ms/call ({r['per_call_ms'] / hand:5.2f}x hand numba), first call {r['first_call_s']:.2f} s{extra}"
        )
    print("merging k identical scans (FunctionGraph + merge phase)")
    for k, r in merge_rows(ks).items():
        print(f"  k = {k:5d}: {r['seconds'] * 1e3:8.2f} ms, {r['us_per_scan']:7.1f} us per scan")
    if os.environ.get("DG_BENCH_JSON"):
        print(json.dumps(ar1))


if __name__ == "__main__":
    main()
