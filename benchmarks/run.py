"""The main benchmark suite (issue 18): labeled workloads as the README teaches, next to hand-written code.

    .venv/bin/python benchmarks/run.py                 # every workload (a few minutes)
    .venv/bin/python benchmarks/run.py --quick         # small sizes, few repeats
    .venv/bin/python benchmarks/run.py --only hier sel # some workloads
    .venv/bin/python benchmarks/run.py --backends numba c jax

Per call: the median of repeated calls after a warm-up call; "vs hand" is the
ratio to the hand-written `numba.njit` loop of the same run. Compile: a fresh
process builds the model and calls it once, with an empty `DIMGRAPH_CACHE_DIR`
(cold) and then with the filled one (warm); the figure is build + first call
less one steady call, in wall seconds and in the process's CPU seconds (steadier
on a shared machine). Excluded: `import dimgraph`, xarray's own start-up (its
import and first DataArray, 0.5-1 s with dask installed), which any xarray session
pays before it compiles anything, and making the inputs' random data.
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

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

from benchmarks.timing import median_time  # noqa: E402

# Each model is source text, run in this process for per-call times and in fresh processes
# for compile times. It defines `f` (from `BACKEND`) and `args` (NumPy arrays in declared dim order).
MODELS = {
    "hier": """
import math
obs, group = dg.Dim("obs", size=N_OBS), dg.Dim("group", size=100)
mu = dg.labeled("mu", dims=(group,)); beta = dg.labeled("beta", dims=()); log_sigma = dg.labeled("log_sigma", dims=())
x, y = dg.labeled("x", dims=(obs,)), dg.labeled("y", dims=(obs,)); g = dg.labeled("g", dims=(obs,), dtype="int64")
z = (y - (mu.isel(group=g) + beta * x)) / dg.exp(log_sigma)
logp = (-0.5 * math.log(2 * math.pi) - log_sigma - 0.5 * z * z).sum()
value, grads = dg.value_and_grad(logp, [mu, beta, log_sigma])
f = dg.function([mu, beta, log_sigma, x, y, g], [value, *grads], backend=BACKEND)
rng = np.random.default_rng(0)
args = [rng.normal(size=100), np.array(0.3), np.array(-0.2), rng.normal(size=N_OBS), rng.normal(size=N_OBS),
        rng.integers(0, 100, N_OBS)]
""",
    "softmax": """
obs, feature, category = dg.Dim("obs", size=N_OBS), dg.Dim("feature", size=20), dg.Dim("category", size=5)
X = dg.labeled("X", dims=(obs, feature)); y = dg.labeled("y", dims=(obs, category))
W = dg.labeled("W", dims=(feature, category)); b = dg.labeled("b", dims=(category,))
logits = dg.dot(X, W, dim="feature") + b
logp = (y * (logits - dg.logsumexp(logits, "category"))).sum()
value, grads = dg.value_and_grad(logp, [W, b])
f = dg.function([W, b, X, y], [value, *grads], backend=BACKEND)
rng = np.random.default_rng(0)
args = [rng.normal(size=(20, 5)), rng.normal(size=5), rng.normal(size=(N_OBS, 20)), np.eye(5)[rng.integers(0, 5, N_OBS)]]
""",
    "tanh": """
row, col = dg.Dim("row", size=64), dg.Dim("col", size=32)
x = dg.labeled("x", dims=(row, col))
ws = [dg.labeled(f"w{i}", dims=(col,)) for i in range(BLOCKS)]
bs = [dg.labeled(f"b{i}", dims=(col,)) for i in range(BLOCKS)]
h = x
for w, b in zip(ws, bs):
    h = dg.tanh(h * w + b)
cost = h.sum()
f = dg.function([x, *ws, *bs], [cost, *dg.grad(cost, ws + bs)], backend=BACKEND)
rng = np.random.default_rng(0)
args = [rng.normal(size=(64, 32))] + [rng.normal(size=32) * 0.1 for _ in range(2 * BLOCKS)]
""",
    "scalar": """
x = dg.labeled("x", dims=())
f = dg.function([x], x + 1, backend=BACKEND)
args = [np.array(1.5)]
""",
    "sel": """
import pandas as pd
country = dg.Dim("country", coords=pd.Index([f"c{i:03d}" for i in range(200)]))
time_ = dg.Dim("time", size=N_TIME)
data = dg.labeled("data", dims=(country, time_))
picked = [f"c{i:03d}" for i in SEL_ROWS]  # 50 labels in no particular order
f = dg.function([data], data.sel(country=picked).sum("time"), backend=BACKEND)
args = [np.random.default_rng(0).normal(size=(200, N_TIME))]
""",
    "bcast": """
xd, yd = dg.Dim("x", size=N_XY), dg.Dim("y", size=N_XY)
a, b = dg.labeled("a", dims=(xd,)), dg.labeled("b", dims=(yd,))
f = dg.function([a, b], (dg.exp(a + b) * dg.log1p(b * b)).sum("y"), backend=BACKEND)
rng = np.random.default_rng(1)
args = [rng.normal(size=N_XY) * 0.1, rng.normal(size=N_XY) * 0.1]
""",
}

TITLES = {
    "hier": "hierarchical logp + gradient (obs {N_OBS}, group 100; `isel` gather, `dg.value_and_grad`)",
    "softmax": "softmax regression logp + gradient (obs {N_OBS}, feature 20, category 5; `dg.dot`, `logsumexp`)",
    "tanh": "{BLOCKS} tanh blocks over (row 64, col 32) + `dg.grad` of every weight",
    "scalar": "`x + 1` on a 0-d labeled input (the call path of a small model)",
    "sel": '`data.sel(country=50 labels, unsorted).sum("time")`, data (country 200, time {N_TIME})',
    "bcast": '`(exp(a + b) * log1p(b * b)).sum("y")` over (x {N_XY}, y {N_XY}), no x*y temporary',
}


SEL_ROWS = np.random.default_rng(7).permutation(200)[:50]  # the `sel` workload's labels: an arbitrary list


def sizes(quick):
    if quick:
        return dict(N_OBS=10_000, BLOCKS=5, N_TIME=1_000, N_XY=300)
    return dict(N_OBS=1_000_000, BLOCKS=20, N_TIME=10_000, N_XY=2000)


def build(name, backend, size):
    import dimgraph as dg

    scope = dict(size, dg=dg, np=np, BACKEND=backend, SEL_ROWS=SEL_ROWS)
    exec(textwrap.dedent(MODELS[name]), scope)  # noqa: S102 - the models above
    return scope["f"], scope["args"]


# -- hand-written references ------------------------------------------------------------------


def hand_numba(name, args):
    """A `numba.njit` loop computing the same outputs (the call on `args`), or None."""
    import math

    import numba

    if name == "hier":

        @numba.njit(cache=True)
        def hier(mu, beta, ls, x, y, g):
            inv = 1.0 / math.exp(ls)
            lp, dmu, db = 0.0, np.zeros(mu.shape[0]), 0.0
            for i in range(x.shape[0]):
                z = (y[i] - (mu[g[i]] + beta * x[i])) * inv
                lp += z * z
                dmu[g[i]] += z * inv
                db += z * inv * x[i]
            n = x.shape[0]
            return -0.5 * lp - n * (ls + 0.9189385332046727), dmu, db, lp - n

        return lambda: hier(args[0], float(args[1]), float(args[2]), *args[3:])
    if name == "tanh":

        @numba.njit(cache=True)
        def tanh_blocks(x, ws, bs):
            n = len(ws)
            hs = np.empty((n + 1,) + x.shape)
            hs[0] = x
            for i in range(n):
                hs[i + 1] = np.tanh(hs[i] * ws[i] + bs[i])
            g = np.ones(x.shape)
            dws, dbs = np.empty((n, x.shape[1])), np.empty((n, x.shape[1]))
            for i in range(n - 1, -1, -1):
                d = g * (1.0 - hs[i + 1] * hs[i + 1])
                dws[i] = (d * hs[i]).sum(axis=0)
                dbs[i] = d.sum(axis=0)
                g = d * ws[i]
            return hs[n].sum(), dws, dbs

        half = (len(args) - 1) // 2
        ws, bs = np.array(args[1 : 1 + half]), np.array(args[1 + half :])
        return lambda: tanh_blocks(args[0], ws, bs)
    if name == "scalar":

        @numba.njit(cache=True)
        def plus_one(x):
            return x + 1

        return lambda: plus_one(args[0])
    if name == "sel":
        # fastmath lets the row sum keep vector partial sums: what a hand-tuned loop writes
        @numba.njit(cache=True, fastmath=True)
        def sel_sum(data, rows):
            out = np.empty(rows.shape[0])
            for k in range(rows.shape[0]):
                row = data[rows[k]]
                acc = 0.0
                for t in range(row.shape[0]):
                    acc += row[t]
                out[k] = acc
            return out

        rows = SEL_ROWS.copy()
        return lambda: sel_sum(args[0], rows)
    if name == "bcast":

        @numba.njit(cache=True)
        def bcast(a, b):
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

        return lambda: bcast(*args)
    return None


def eager_numpy(name, args):
    """NumPy written the obvious way, or None."""
    if name == "hier":
        mu, beta, ls, x, y, g = args
        s = np.exp(ls)

        def run():
            z = (y - (mu[g] + beta * x)) / s
            w = z / s
            return (-0.5 * z * z).sum(), np.bincount(g, w, minlength=mu.shape[0]), (w * x).sum(), (z * z).sum()

        return run
    if name == "softmax":
        W, b, X, Y = args

        def run():
            logits = X @ W + b
            m = logits.max(1, keepdims=True)
            lse = m + np.log(np.exp(logits - m).sum(1, keepdims=True))
            d = Y - np.exp(logits - lse) * Y.sum(1, keepdims=True)
            return (Y * (logits - lse)).sum(), X.T @ d, d.sum(0)

        return run
    if name == "scalar":
        return lambda: args[0] + 1
    if name == "sel":
        return lambda: args[0][SEL_ROWS].sum(1)
    if name == "bcast":
        a, b = args
        return lambda: (np.exp(a[:, None] + b[None, :]) * np.log1p(b * b)).sum(1)
    return None


def eager_xarray(name, args):
    import xarray as xr

    if name == "sel":
        data = xr.DataArray(args[0], dims=("country", "time"), coords={"country": [f"c{i:03d}" for i in range(200)]})
        picked = [f"c{i:03d}" for i in SEL_ROWS]
        return lambda: data.sel(country=picked).sum("time")
    if name == "bcast":
        a, b = xr.DataArray(args[0], dims="x"), xr.DataArray(args[1], dims="y")
        return lambda: (np.exp(a + b) * np.log1p(b * b)).sum("y")
    if name == "scalar":
        x = xr.DataArray(args[0])
        return lambda: x + 1
    return None


def hand_jax(name, args, numpy_in=False):
    try:
        import jax
        import jax.numpy as jnp

        jax.config.update("jax_enable_x64", True)
    except Exception:  # noqa: BLE001 - jax is optional
        return None
    if name == "hier":
        import math

        def logp(params, x, y, g):
            mu, beta, ls = params
            z = (y - (mu[g] + beta * x)) / jnp.exp(ls)
            return (-0.5 * math.log(2 * math.pi) - ls - 0.5 * z * z).sum()

        vg = jax.jit(jax.value_and_grad(logp))
        if numpy_in:  # NumPy arrays, as dimgraph's jax backend is given them: the copy to the device counted
            return lambda: jax.block_until_ready(vg(tuple(args[:3]), *args[3:]))
        params = tuple(jnp.asarray(a) for a in args[:3])
        rest = [jnp.asarray(a) for a in args[3:]]
        return lambda: jax.block_until_ready(vg(params, *rest))
    if name == "bcast":
        fj = jax.jit(lambda a, b: (jnp.exp(a[:, None] + b[None, :]) * jnp.log1p(b * b)[None, :]).sum(1))
        a, b = (jnp.asarray(v) for v in args)
        return lambda: jax.block_until_ready(fj(a, b))
    if name == "sel":
        rows = jnp.asarray(SEL_ROWS)
        fj = jax.jit(lambda d: d[rows].sum(1))
        d = jnp.asarray(args[0])
        return lambda: jax.block_until_ready(fj(d))
    return None


# -- per call ---------------------------------------------------------------------------------


def per_call(name, size, backends, quick):
    repeats = 3 if quick else 7
    number = {"scalar": 2000 if quick else 20000}.get(name, 1)
    rows = []
    args = None
    for backend in backends:
        if backend == "python" and name in ("tanh",) and not quick:
            continue
        f, args = build(name, backend, size)
        rows.append((f"dimgraph {backend}", median_time(lambda: f(*args), repeats, number)))
        if backend == "numba":
            rows.append(
                ("dimgraph numba, trust_input", median_time(lambda: f(*args, trust_input=True), repeats, number))
            )
            if name in ("hier", "bcast"):  # the speed-up of splitting kernels over threads
                import dimgraph as dg

                saved, dg.config.threads = dg.config.threads, 1
                try:
                    one, _ = build(name, backend, size)
                finally:
                    dg.config.threads = saved
                rows.append(("dimgraph numba, threads=1", median_time(lambda: one(*args), repeats, number)))
            if name == "scalar":
                import xarray as xr

                xa = [xr.DataArray(a) for a in args]
                rows.append(("dimgraph numba, DataArray in", median_time(lambda: f(*xa), repeats, number)))
    refs = [
        ("hand numba", hand_numba(name, args)),
        ("numpy", eager_numpy(name, args)),
        ("xarray", eager_xarray(name, args)),
        ("hand jax", hand_jax(name, args)),
    ]
    if name == "hier":
        refs.append(("hand jax, NumPy in", hand_jax(name, args, numpy_in=True)))
    for label, fn in refs:
        if fn is not None:
            rows.append((label, median_time(fn, repeats, number)))
    return rows


def print_table(title, rows, unit):
    scale = {"ms": 1e3, "us": 1e6}[unit]
    hand = dict(rows).get("hand numba")
    print(f"\n### {title}, per call\n")
    print(f"| implementation | median {unit} | vs hand numba |")
    print("|---|---:|---:|")
    for label, t in rows:
        ratio = f"{t / hand:.2f}x" if hand else ""
        print(f"| {label} | {t * scale:.3g} | {ratio} |")
    sys.stdout.flush()


# -- compile, fresh processes ---------------------------------------------------------------------

_FRESH = """
import json, sys, time
sys.path.insert(0, {root!r})
w0, c0 = time.perf_counter(), time.process_time()
import numpy as np
import dimgraph as dg
import xarray
xarray.DataArray(np.zeros(1))  # what any xarray session has paid: pandas, and xarray's probe for dask
imported = time.perf_counter()
scope = dict({size!r}, dg=dg, np=np, BACKEND={backend!r})
exec({data!r}, scope)  # the inputs' data: not compile time
w1, c1 = time.perf_counter(), time.process_time()
exec({model!r}, scope)
f, args = scope["f"], scope["args"]
f(*args)
w2, c2 = time.perf_counter(), time.process_time()
f(*args)
w3, c3 = time.perf_counter(), time.process_time()
print(json.dumps(dict(import_wall=imported - w0, wall=(w2 - w1) - (w3 - w2), cpu=(c2 - c1) - (c3 - c2),
                      kernels=len(getattr(f._compiled, "kernel_digests", ())), timings=getattr(f, "timings", {{}}))))
"""


def split_model(name):
    """(graph text, data text) of a model: its lines from the first `rng = ` or `args = ` on make the data."""
    lines = textwrap.dedent(MODELS[name]).splitlines(keepends=True)
    k = next(k for k, line in enumerate(lines) if line.startswith(("rng = ", "args = ")))
    return "".join(lines[:k]), "".join(lines[k:])


def fresh(name, backend, size, env):
    model, data = split_model(name)
    code = _FRESH.format(root=ROOT, size=size, backend=backend, model=model, data=data)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=1200)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def compile_times(name, size, backends, repeats=1):
    print(f"\n### {TITLES[name].format(**size)}, compile (fresh processes, import excluded)\n")
    print(
        "| backend | cold wall s | cold CPU s | cold CPU s, helpers cached | warm wall s | warm CPU s | numba kernels |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for backend in backends:
        if backend == "python":
            continue
        runs = []
        # each repeat: a cold process on an empty cache, a warm one on the cache it left, and (numba) a
        # cold one whose cache holds only dimgraph's runtime helpers (what a user's every model after
        # the first pays: the helpers are compiled once per cache)
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as helpers_only:
                env = dict(os.environ, DIMGRAPH_CACHE_DIR=tmp)
                cold, warm = fresh(name, backend, size, env), fresh(name, backend, size, env)
                later = cold
                if backend == "numba":
                    _copy_helper_caches(tmp, helpers_only)
                    later = fresh(name, backend, size, dict(os.environ, DIMGRAPH_CACHE_DIR=helpers_only))
                runs.append((cold, warm, later))
        med = {
            (k, which): statistics.median(r[w][k] for r in runs)
            for k in ("wall", "cpu")
            for w, which in enumerate(("cold", "warm", "later"))
        }
        kernels = runs[0][0]["kernels"] if backend == "numba" else ""
        later = f"{med['cpu', 'later']:.2f}" if backend == "numba" else ""
        print(
            f"| {backend} | {med['wall', 'cold']:.2f} | {med['cpu', 'cold']:.2f} | {later} | {med['wall', 'warm']:.2f} | "
            f"{med['cpu', 'warm']:.2f} | {kernels} |"
        )
        sys.stdout.flush()


def _copy_helper_caches(cache_dir, into):
    """Numba's cache files of dimgraph's runtime helpers (not of the graph's `k_*` kernels) from one cache to another."""
    import shutil

    for root, _, files in os.walk(cache_dir):
        if os.path.basename(root) != "__pycache__":
            continue
        target = os.path.join(into, os.path.relpath(root, cache_dir))
        for f in files:
            if not f.startswith("k_") and f.endswith((".nbi", ".nbc")):
                os.makedirs(target, exist_ok=True)
                shutil.copy2(os.path.join(root, f), target)


def import_time(repeats=5):
    code = "import time; t = time.perf_counter(); import dimgraph; print(time.perf_counter() - t)"
    times = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
        times.append(float(out.stdout.strip()))
    check = "import sys, dimgraph; print(sorted(m for m in ('numba', 'jax', 'scipy', 'llvmlite') if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, cwd=ROOT, check=True)
    print(
        f"\n### import dimgraph (fresh processes)\n\nmedian {statistics.median(times):.2f} s over {repeats}; "
        f"heavy modules imported: {loaded.stdout.strip()}"
    )


COMPILED = ("hier", "softmax", "tanh")
UNITS = {"scalar": "us", "sel": "ms"}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes, few repeats")
    parser.add_argument("--only", nargs="*", default=list(MODELS) + ["import"])
    parser.add_argument("--backends", nargs="*", default=["numba", "c", "jax"])
    parser.add_argument("--no-compile", action="store_true", help="skip the fresh-process compile timings")
    parser.add_argument("--compile-only", action="store_true", help="only the fresh-process compile timings")
    parser.add_argument(
        "--compile-repeats", type=int, default=1, help="cold/warm process pairs per compile row (medians)"
    )
    args = parser.parse_args()
    import dimgraph as dg

    backends = [b for b in args.backends if b in dg.backends.available_backends()]
    size = sizes(args.quick)
    print(
        f"dimgraph {dg.__version__}, numpy {np.__version__}, {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.1f}; backends {backends}"
    )
    for name in args.only:
        if name == "import":
            import_time()
            continue
        if not args.compile_only:
            rows = per_call(name, size, backends, args.quick)
            print_table(TITLES[name].format(**size), rows, UNITS.get(name, "ms"))
        if name in COMPILED and not args.no_compile:
            compile_times(name, size, backends, args.compile_repeats)


if __name__ == "__main__":
    main()
