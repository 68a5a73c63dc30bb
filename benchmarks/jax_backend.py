"""JAX backend rows for workloads 1 and 2 of the benchmark suite (issue 7): per-call and compile time.

    .venv/bin/python benchmarks/jax_backend.py           # full sizes
    .venv/bin/python benchmarks/jax_backend.py --quick   # small sizes

For each workload: `dg.function(..., backend="jax")` (first call = rewrite +
trace + XLA compile, then the median per call with NumPy in/out and with
`output="jax"`), next to hand-written `jax.jit` of the same math on device
arrays, and, measured in the same process for comparison, the numba backend
and a hand-written `numba.njit` loop. Kept apart from `benchmarks/run.py` (owned by the suite) so the two can
change independently; the graphs are the same as there.
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import dimgraph as dg  # noqa: E402


def median_time(fn, repeats):
    fn()
    times = []
    for _ in range(repeats):
        gc.disable()
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
        gc.enable()
    return statistics.median(times)


def first_call(make, args):
    t0 = time.perf_counter()
    f = make()
    f(*args)
    return f, time.perf_counter() - t0


def workload1(quick, jax):
    import jax.numpy as jnp

    n_obs, n_group = (10_000, 10) if quick else (1_000_000, 100)
    rng = np.random.default_rng(0)
    group_idx = rng.integers(0, n_group, n_obs)
    xv, yv = rng.normal(size=n_obs), rng.normal(size=n_obs)
    mu_v, beta_v, ls_v = rng.normal(size=n_group), 0.3, -0.2
    half_log_2pi = 0.5 * math.log(2 * math.pi)

    mu = dg.tensor("mu", shape=(n_group,))
    beta = dg.scalar("beta")
    log_sigma = dg.scalar("log_sigma")
    x = dg.tensor("x", shape=(None,))
    y = dg.tensor("y", shape=(None,))
    g = dg.tensor("g", shape=(None,), dtype="int64")
    sigma = dg.exp(log_sigma)
    r = (y - (mu[g] + beta * x)) / sigma
    n = dg.core.cast(dg.core.shape_of(x)[0], "float64")
    logp = (-0.5 * r * r).sum() - n * (log_sigma + half_log_2pi)
    if hasattr(dg, "grad"):
        grads, how = dg.grad(logp, [mu, beta, log_sigma]), "dg.grad"
    else:
        w = r / sigma
        grads = [dg.core.inc_subtensor(dg.core.zeros((n_group,))[g], w), (w * x).sum(), (r * r).sum() - n]
        how = "hand-written gradient graph"
    args = (mu_v, np.asarray(beta_v), np.asarray(ls_v), xv, yv, group_idx)
    inputs, outputs = [mu, beta, log_sigma, x, y, g], [logp, *grads]
    rows = []
    f, compile_s = first_call(lambda: dg.function(inputs, outputs, backend="jax"), args)
    rows.append(("dimgraph jax", median_time(lambda: f(*args), 7), f"{how}; first call {compile_s:.2f} s"))
    fd, compile_d = first_call(lambda: dg.function(inputs, outputs, backend="jax", output="jax"), args)
    with jax.enable_x64(True):
        dev = [jnp.asarray(a) for a in args]
    rows.append(("dimgraph jax, output='jax'", median_time(lambda: jax.block_until_ready(fd(*dev)), 7), f"first call {compile_d:.2f} s"))

    def logp_j(params, x, y, g):
        mu, beta, ls = params
        rr = (y - (mu[g] + beta * x)) / jnp.exp(ls)
        return (-0.5 * rr * rr).sum() - x.shape[0] * (ls + half_log_2pi)

    with jax.enable_x64(True):
        vg = jax.jit(jax.value_and_grad(logp_j))
        params = tuple(jnp.asarray(v) for v in (mu_v, beta_v, ls_v))
        xj, yj, gj = (jnp.asarray(v) for v in (xv, yv, group_idx))
        t0 = time.perf_counter()
        jax.block_until_ready(vg(params, xj, yj, gj))
        hand_compile = time.perf_counter() - t0
        hand = median_time(lambda: jax.block_until_ready(vg(params, xj, yj, gj)), 7)
    rows.append(("hand jax", hand, f"jax.jit(value_and_grad) on device arrays; first call {hand_compile:.2f} s"))
    fn, compile_n = first_call(lambda: dg.function(inputs, outputs, backend="numba"), args)
    rows.append(("dimgraph numba", median_time(lambda: fn(*args), 7), f"first call {compile_n:.2f} s"))
    rows.append(("hand numba", *_hand_numba_1(args)))
    return f"1. hierarchical logp + gradient (obs={n_obs}, group={n_group}), per call", rows


def workload2(quick, jax):
    import jax.numpy as jnp

    nx = ny = 400 if quick else 2000
    rng = np.random.default_rng(1)
    av, bv = rng.normal(size=nx) * 0.1, rng.normal(size=ny) * 0.1
    a = dg.tensor("a", shape=(None,))
    b = dg.tensor("b", shape=(None,))
    out = (dg.exp(a[:, None] + b[None, :]) * dg.log1p(b * b)[None, :]).sum(axis=1)
    rows = []
    f, compile_s = first_call(lambda: dg.function([a, b], out, backend="jax"), (av, bv))
    rows.append(("dimgraph jax", median_time(lambda: f(av, bv), 9), f"first call {compile_s:.2f} s"))
    with jax.enable_x64(True):
        fj = jax.jit(lambda a, b: (jnp.exp(a[:, None] + b[None, :]) * jnp.log1p(b * b)[None, :]).sum(1))
        aj, bj = jnp.asarray(av), jnp.asarray(bv)
        t0 = time.perf_counter()
        jax.block_until_ready(fj(aj, bj))
        hand_compile = time.perf_counter() - t0
        hand = median_time(lambda: jax.block_until_ready(fj(aj, bj)), 9)
    rows.append(("hand jax", hand, f"jax.jit on device arrays; first call {hand_compile:.2f} s"))
    fn, compile_n = first_call(lambda: dg.function([a, b], out, backend="numba"), (av, bv))
    rows.append(("dimgraph numba", median_time(lambda: fn(av, bv), 9), f"first call {compile_n:.2f} s"))
    rows.append(("hand numba", *_hand_numba_2(av, bv)))
    return f"2. fused broadcast + reduce (x={nx}, y={ny}), per call", rows


def _hand_numba_1(args):
    import numba

    @numba.njit
    def hand(mu, beta, ls, x, y, g):
        s = math.exp(ls)
        inv = 1.0 / s
        lp, db, ss = 0.0, 0.0, 0.0
        dmu = np.zeros(mu.shape[0])
        for i in range(x.shape[0]):
            rr = (y[i] - (mu[g[i]] + beta * x[i])) * inv
            w = rr * inv
            lp += rr * rr
            ss += rr * rr
            dmu[g[i]] += w
            db += w * x[i]
        n = x.shape[0]
        return -0.5 * lp - n * (ls + 0.9189385332046727), dmu, db, ss - n

    args = tuple(a.item() if np.ndim(a) == 0 else a for a in args)  # scalars as Python floats
    t0 = time.perf_counter()
    hand(*args)
    return median_time(lambda: hand(*args), 7), f"one fused loop; first call {time.perf_counter() - t0:.2f} s"


def _hand_numba_2(av, bv):
    import numba

    @numba.njit
    def hand(a, b):
        lb = np.empty(b.shape[0])
        for j in range(b.shape[0]):
            lb[j] = math.log1p(b[j] * b[j])
        out = np.empty(a.shape[0])
        for i in range(a.shape[0]):
            acc = 0.0
            for j in range(b.shape[0]):
                acc += math.exp(a[i] + b[j]) * lb[j]
            out[i] = acc
        return out

    t0 = time.perf_counter()
    hand(av, bv)
    return median_time(lambda: hand(av, bv), 9), f"log1p hoisted; first call {time.perf_counter() - t0:.2f} s"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    import jax

    print(f"jax {jax.__version__} on {jax.devices()[0].platform}")
    for workload in (workload1, workload2):
        title, rows = workload(args.quick, jax)
        print(f"\n### {title}\n")
        print("| implementation | median ms | note |")
        print("|---|---:|---|")
        for name, t, note in rows:
            print(f"| {name} | {t * 1e3:.3g} | {note} |")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
