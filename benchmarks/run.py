"""The main benchmark suite (issue 7): five workloads, dimgraph next to hand-written references.

    .venv/bin/python benchmarks/run.py            # full sizes (several minutes)
    .venv/bin/python benchmarks/run.py --quick    # small sizes, a smoke run
    .venv/bin/python benchmarks/run.py --only 2 3 # some workloads

Prints, per workload, the median time of each implementation and its ratio to
the fastest reference (hand-written numba.njit loop, hand-written jax.jit,
PyTensor when installed). Compile-time workloads run in fresh processes with
an empty (cold) and then a filled (warm) `DIMGRAPH_CACHE_DIR`.
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
import textwrap
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import dimgraph as dg  # noqa: E402

REFERENCES = ("hand numba", "hand jax", "pytensor")


def median_time(fn, repeats, number=1):
    fn()  # warm-up (compiles lazily jitted code)
    times = []
    for _ in range(repeats):
        gc.disable()
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
        gc.enable()
    return statistics.median(times)


def table(title, rows, unit="ms"):
    """rows: list of (name, seconds or None, note)."""
    scale = {"ms": 1e3, "us": 1e6, "s": 1.0}[unit]
    refs = [t for name, t, _ in rows if name in REFERENCES and t is not None]
    best = min(refs) if refs else None
    print(f"\n### {title}\n")
    print(f"| implementation | median {unit} | ratio to fastest reference | note |")
    print("|---|---:|---:|---|")
    for name, t, note in rows:
        value = "n/a" if t is None else f"{t * scale:.3g}"
        ratio = "" if (t is None or best is None) else f"{t / best:.2f}"
        print(f"| {name} | {value} | {ratio} | {note} |")
    sys.stdout.flush()


def _jax():
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        return jax
    except Exception:  # noqa: BLE001 - jax is optional
        return None


def _pytensor_note():
    try:
        import pytensor  # noqa: F401

        return "installed (not wired in this suite yet)"
    except ImportError:
        return "not installed"


# --------------------------------------------------------------------------------------------
# workload 1: hierarchical logp + gradient


def workload1(quick):
    import numba
    import xarray as xr

    n_obs, n_group = (10_000, 10) if quick else (1_000_000, 100)
    rng = np.random.default_rng(0)
    group_idx = rng.integers(0, n_group, n_obs)
    xv = rng.normal(size=n_obs)
    yv = rng.normal(size=n_obs)
    mu_v, beta_v, ls_v = rng.normal(size=n_group), 0.3, -0.2
    half_log_2pi = 0.5 * math.log(2 * math.pi)

    mu = dg.tensor("mu", shape=(n_group,))
    beta = dg.scalar("beta")
    log_sigma = dg.scalar("log_sigma")
    x = dg.tensor("x", shape=(None,))
    y = dg.tensor("y", shape=(None,))
    g = dg.tensor("g", shape=(None,), dtype="int64")
    sigma = dg.exp(log_sigma)
    pred = mu[g] + beta * x
    r = (y - pred) / sigma
    n = dg.core.cast(dg.core.shape_of(x)[0], "float64")
    logp, grads = dg.value_and_grad((-0.5 * r * r).sum() - n * (log_sigma + half_log_2pi), [mu, beta, log_sigma])
    how = "dg.value_and_grad"
    args = (mu_v, np.asarray(beta_v), np.asarray(ls_v), xv, yv, group_idx)
    rows = []
    compile_times = {}
    for backend in ("numba", "python"):
        t0 = time.perf_counter()
        f = dg.function([mu, beta, log_sigma, x, y, g], [logp, *grads], backend=backend)
        f(*args)
        compile_times[backend] = time.perf_counter() - t0
        rows.append((f"dimgraph {backend}", median_time(lambda f=f: f(*args), 3 if quick else 7), how))
        if backend == "numba":
            rows.append(("dimgraph numba, trusted", median_time(lambda f=f: f(*args, trust_input=True), 7), ""))

    def numpy_eager():
        s = math.exp(ls_v)
        rr = (yv - (mu_v[group_idx] + beta_v * xv)) / s
        w = rr / s
        return (
            (-0.5 * rr * rr).sum() - n_obs * (ls_v + half_log_2pi),
            np.bincount(group_idx, w, minlength=n_group),
            (w * xv).sum(),
            (rr * rr).sum() - n_obs,
        )

    rows.append(("numpy eager", median_time(numpy_eager, 7), ""))
    mu_x = xr.DataArray(mu_v, dims="group")
    x_x, y_x = xr.DataArray(xv, dims="obs"), xr.DataArray(yv, dims="obs")
    g_x = xr.DataArray(group_idx, dims="obs")

    def xarray_eager():
        s = math.exp(ls_v)
        rr = (y_x - (mu_x.isel(group=g_x) + beta_v * x_x)) / s
        w = rr / s
        return (
            float((-0.5 * rr * rr).sum()) - n_obs * (ls_v + half_log_2pi),
            w.groupby(g_x).sum(),
            (w * x_x).sum(),
            (rr * rr).sum() - n_obs,
        )

    rows.append(("xarray eager", median_time(xarray_eager, 3), ""))

    @numba.njit(cache=True, fastmath=False)
    def hand(mu, beta, ls, x, y, g):
        s = math.exp(ls)
        inv = 1.0 / s
        lp = 0.0
        dmu = np.zeros(mu.shape[0])
        db = 0.0
        ss = 0.0
        for i in range(x.shape[0]):
            rr = (y[i] - (mu[g[i]] + beta * x[i])) * inv
            w = rr * inv
            lp += rr * rr
            ss += rr * rr
            dmu[g[i]] += w
            db += w * x[i]
        n = x.shape[0]
        return -0.5 * lp - n * (ls + 0.9189385332046727), dmu, db, ss - n

    rows.append(("hand numba", median_time(lambda: hand(mu_v, beta_v, ls_v, xv, yv, group_idx), 7), "one fused loop"))
    jax = _jax()
    if jax is not None:
        import jax.numpy as jnp

        def logp_j(params, x, y, g):
            mu, beta, ls = params
            rr = (y - (mu[g] + beta * x)) / jnp.exp(ls)
            return (-0.5 * rr * rr).sum() - x.shape[0] * (ls + half_log_2pi)

        vg = jax.jit(jax.value_and_grad(logp_j))
        params = (jnp.asarray(mu_v), jnp.asarray(beta_v), jnp.asarray(ls_v))
        xj, yj, gj = jnp.asarray(xv), jnp.asarray(yv), jnp.asarray(group_idx)

        def run_jax():
            v, gr = vg(params, xj, yj, gj)
            return jax.block_until_ready(gr)

        rows.append(("hand jax", median_time(run_jax, 7), "jax.jit(value_and_grad)"))
    rows.append(("pytensor", None, _pytensor_note()))
    table(f"1. hierarchical logp + gradient (obs={n_obs}, group={n_group}), per call", rows)
    print(f"\nfirst-call (rewrite + codegen + compile, this process) numba: {compile_times['numba']:.2f} s")
    return rows


# --------------------------------------------------------------------------------------------
# workload 2: fused broadcast + reduce


def workload2(quick):
    import numba
    import xarray as xr

    nx = ny = 400 if quick else 2000
    rng = np.random.default_rng(1)
    av, bv = rng.normal(size=nx) * 0.1, rng.normal(size=ny) * 0.1
    a = dg.tensor("a", shape=(None,))
    b = dg.tensor("b", shape=(None,))
    out = (dg.exp(a[:, None] + b[None, :]) * dg.log1p(b * b)[None, :]).sum(axis=1)
    rows = []
    for backend in ("numba", "python"):
        f = dg.function([a, b], out, backend=backend)
        rows.append((f"dimgraph {backend}", median_time(lambda f=f: f(av, bv), 5 if quick else 9), ""))
        if backend == "numba":
            numba_fn = f
    rows.append(("numpy eager", median_time(lambda: (np.exp(av[:, None] + bv[None, :]) * np.log1p(bv * bv)).sum(1), 9), ""))
    ax, bx = xr.DataArray(av, dims="x"), xr.DataArray(bv, dims="y")
    rows.append(("xarray eager", median_time(lambda: (np.exp(ax + bx) * np.log1p(bx * bx)).sum("y"), 5), ""))

    @numba.njit(cache=True)
    def hand(a, b):
        out = np.empty(a.shape[0])
        for i in range(a.shape[0]):
            acc = 0.0
            for j in range(b.shape[0]):
                acc += math.exp(a[i] + b[j]) * math.log1p(b[j] * b[j])
            out[i] = acc
        return out

    rows.append(("hand numba", median_time(lambda: hand(av, bv), 5), "naive fused loop"))

    @numba.njit(cache=True)
    def hand_hoisted(a, b):
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

    rows.append(("hand numba", median_time(lambda: hand_hoisted(av, bv), 9), "log1p hoisted"))
    jax = _jax()
    if jax is not None:
        import jax.numpy as jnp

        fj = jax.jit(lambda a, b: (jnp.exp(a[:, None] + b[None, :]) * jnp.log1p(b * b)[None, :]).sum(1))
        aj, bj = jnp.asarray(av), jnp.asarray(bv)
        rows.append(("hand jax", median_time(lambda: jax.block_until_ready(fj(aj, bj)), 9), "jax.jit"))
    rows.append(("pytensor", None, _pytensor_note()))
    table(f"2. fused broadcast + reduce (x={nx}, y={ny}), per call", rows)
    ours, eager = _peak_extra_memory(nx, ny)
    print(f"\npeak RSS growth during one call (fresh process, /proc VmHWM): dimgraph numba {ours / 1e6:.2f} MB, "
          f"numpy eager {eager / 1e6:.1f} MB (one x*y float64 temporary is {nx * ny * 8 / 1e6:.1f} MB)")
    del numba_fn
    return rows


def _peak_extra_memory(nx, ny):
    """Peak RSS growth during one call, in a fresh process (Linux /proc; 0 elsewhere)."""
    code = textwrap.dedent(
        f"""
        import numpy as np, dimgraph as dg, json
        a = dg.tensor("a", shape=(None,)); b = dg.tensor("b", shape=(None,))
        f = dg.function([a, b], (dg.exp(a[:, None] + b[None, :]) * dg.log1p(b * b)[None, :]).sum(axis=1))
        av, bv = np.zeros({nx}), np.zeros({ny})
        f(av, bv)
        def status(key):
            for line in open("/proc/self/status"):
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
        def peak(fn):
            open("/proc/self/clear_refs", "w").write("5")
            base = status("VmRSS")
            fn()
            return status("VmHWM") - base
        ours = peak(lambda: f(av, bv))
        eager = peak(lambda: (np.exp(av[:, None] + bv[None, :]) * np.log1p(bv * bv)[None, :]).sum(1))
        print(json.dumps([ours, eager]))
        """
    )
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
        return json.loads(out.stdout.strip().splitlines()[-1])
    except Exception:  # noqa: BLE001 - best effort, Linux only
        return 0, 0


# --------------------------------------------------------------------------------------------
# workload 3: call overhead


def workload3(quick):
    import numba

    x = dg.tensor("x", shape=(1,))
    data = np.ones(1)
    rows = []
    number = 2000 if quick else 20000
    for backend in ("numba", "python"):
        f = dg.function([x], x + 1, backend=backend)
        rows.append((f"dimgraph {backend}", median_time(lambda f=f: f(data), 7, number), ""))
        rows.append((f"dimgraph {backend}, trusted", median_time(lambda f=f: f(data, trust_input=True), 7, number), ""))
    rows.append(("numpy eager", median_time(lambda: data + 1, 7, number), ""))

    @numba.njit(cache=True)
    def hand(x):
        return x + 1

    rows.append(("hand numba", median_time(lambda: hand(data), 7, number), ""))
    jax = _jax()
    if jax is not None:
        fj = jax.jit(lambda x: x + 1)
        xj = jax.numpy.asarray(data)
        rows.append(("hand jax", median_time(lambda: jax.block_until_ready(fj(xj)), 7, number // 4), ""))
    rows.append(("pytensor", None, _pytensor_note()))
    table("3. call overhead: x + 1 on a length-1 input", rows, unit="us")
    return rows


# --------------------------------------------------------------------------------------------
# workload 4: compile time (cold and warm, fresh processes)

_MODEL_SRC = """
import time, json
t0 = time.perf_counter()
import numpy as np
import dimgraph as dg
t1 = time.perf_counter()
x = dg.tensor("x", shape=(64, 32))
h = x
ws, bs = [], []
for i in range({blocks}):
    w = dg.tensor(f"w{{i}}", shape=(32,))
    b = dg.tensor(f"b{{i}}", shape=(32,))
    ws.append(w); bs.append(b)
    h = dg.tanh(h * w + b)
cost = h.sum()
outs = [cost] + (dg.grad(cost, ws + bs) if hasattr(dg, "grad") else [])
f = dg.function([x] + ws + bs, outs, backend="numba")
t2 = time.perf_counter()
rng = np.random.default_rng(0)
args = [rng.normal(size=(64, 32))] + [rng.normal(size=32) * 0.1 for _ in range(2 * {blocks})]
f(*args)
t3 = time.perf_counter()
print(json.dumps({{"import": t1 - t0, "build+rewrite+codegen": t2 - t1, "first call": t3 - t2,
                  "compile": t3 - t1, "kernels": len(f._run.kernel_digests) if hasattr(f._run, "kernel_digests") else 0,
                  "nodes": len(f.fgraph.nodes), "jitted driver": bool(getattr(f._run, "jitted", False))}}))
"""


def _fresh(code, env):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=1200)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def workload4(quick):
    blocks = 10 if quick else 50
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, DIMGRAPH_CACHE_DIR=tmp)
        cold = _fresh(_MODEL_SRC.format(blocks=blocks), env)
        warm = _fresh(_MODEL_SRC.format(blocks=blocks), env)
    how = "with dg.grad" if hasattr(dg, "grad") else "forward only (dg.grad not available yet)"
    rows = [
        ("dimgraph numba, cold", cold["compile"], f"{cold['nodes']} nodes after rewrites, {cold['kernels']} kernels, "
         f"driver {'jitted' if cold['jitted driver'] else 'run from Python'}; {how}"),
        ("dimgraph numba, warm", warm["compile"], f"build+rewrite+codegen {warm['build+rewrite+codegen']:.2f} s (Numba "
         f"import included), first call {warm['first call']:.2f} s (Numba start-up, cache loads)"),
        ("pytensor", None, _pytensor_note()),
    ]
    table(f"4. compile time of {blocks} tanh blocks over (64, 32), fresh processes (import excluded)", rows, unit="s")
    return rows


# --------------------------------------------------------------------------------------------
# workload 5: rewrite + compile scaling


def workload5(quick):
    sizes = (100, 300, 1000) if quick else (100, 1000, 5000)
    code = """
import time, json, sys
import numpy as np, dimgraph as dg
n = {n}
x = dg.tensor("x", shape=(None,))
h = x
for i in range(n):
    h = dg.sin(h) if i % 2 else h * 1.0001 + 0.5
t0 = time.perf_counter()
f = dg.function([x], h, backend="numba")
f(np.ones(4))
print(json.dumps(time.perf_counter() - t0))
"""
    rows, times = [], []
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, DIMGRAPH_CACHE_DIR=tmp)
        for n in sizes:
            t = _fresh(code.format(n=n), env)
            times.append(t)
            rows.append((f"dimgraph numba, {n} ops", t, "rewrite + codegen + compile + first call, cold cache"))
    slope = np.polyfit(np.log(sizes), np.log(times), 1)[0]
    table("5. rewrite + compile scaling of an elementwise chain", rows, unit="s")
    print(f"\ngrowth exponent (log-log fit over {sizes}): {slope:.2f}")
    return rows, slope


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--only", nargs="*", type=int, default=[1, 2, 3, 4, 5])
    args = parser.parse_args()
    print(f"dimgraph {dg.__version__}, numpy {np.__version__}, {os.cpu_count()} cores; default backend "
          f"{dg.backends.DEFAULT_BACKEND}")
    for k in args.only:
        {1: workload1, 2: workload2, 3: workload3, 4: workload4, 5: workload5}[k](args.quick)


if __name__ == "__main__":
    main()
