"""The mlir backend (IREE, llvm-cpu) next to numba, c and jax: compile time, per-call time, dynamic dims, f64 exp/log.

    .venv/bin/python benchmarks/mlir.py              # small sizes, few repeats (about two minutes)
    .venv/bin/python benchmarks/mlir.py --full       # run.py's full sizes (1e6 observations)
    .venv/bin/python benchmarks/mlir.py --only sampler exp

Rows:
- the sampler suite's models (benchmarks/sampler_models.py): logp + gradient through
  `flat_value_and_grad`, checked against numba to 1e-12 first;
- W1, W2, W4 of benchmarks/run.py: the hierarchical logp + gradient (`hier`), the fused broadcast +
  reduce (`bcast`) and the tanh blocks + gradient (`tanh`);
- dynamic dims: W1 built once, then called on a new data length (the first call at the new
  length, against the steady call: a backend that recompiles per shape shows it there);
- f64 and f32 `exp(x).sum()` / `log(x).sum()` over 1e6 elements against NumPy.

Compile: build + first call, in this process, with a fresh empty `DIMGRAPH_CACHE_DIR` (cold; numba's
runtime helpers included). Per call: the median of repeated calls after a warm-up. Ratios are to numba.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
os.environ["DIMGRAPH_CACHE_DIR"] = tempfile.mkdtemp(prefix="dimgraph-bench-mlir-")  # cold compiles

import numpy as np  # noqa: E402

import dimgraph as dg  # noqa: E402
from benchmarks import run as workloads  # noqa: E402
from benchmarks.timing import median_time  # noqa: E402

BACKENDS = ("numba", "c", "jax", "mlir")
RUN_NAMES = {"W1": "hier", "W2": "bcast", "W4": "tanh"}


def _row(label, times, unit="ms", scale=1e3):
    base = times.get("numba")
    cells = []
    for b in BACKENDS:
        t = times.get(b)
        if t is None:
            cells.append(f"{b} -")
        elif isinstance(t, str):
            cells.append(f"{b} {t}")
        else:
            ratio = f" ({t / base:.2f}x)" if base and b != "numba" else ""
            cells.append(f"{b} {t * scale:.3g} {unit}{ratio}")
    print(f"| {label} | " + " | ".join(cells) + " |", flush=True)


def sampler_rows(repeats):
    import sampler_models

    for name, make in sampler_models.MODELS.items():
        model = make()
        compile_s, call_s = {}, {}
        want = None
        for b in BACKENDS:
            t0 = time.perf_counter()
            try:
                fn = model.flat(b)
                value, grad = fn(model.theta, **model.data)
            except Exception as err:  # a backend that cannot run the model says why, in its cell
                compile_s[b] = call_s[b] = f"refused ({type(err).__name__})"
                continue
            compile_s[b] = time.perf_counter() - t0
            if want is None:
                want = (value, grad)
            else:
                np.testing.assert_allclose(value, want[0], rtol=1e-12)
                np.testing.assert_allclose(grad, want[1], rtol=1e-10, atol=1e-12 * np.abs(want[1]).max())
            bound = fn.bind(**model.data)
            call_s[b] = median_time(lambda: bound(model.theta), repeats, number=20)
        _row(f"{name}: compile cold", compile_s, "s", 1)
        _row(f"{name}: logp + grad per call", call_s, "us", 1e6)


def workload_rows(size, repeats):
    for label, name in RUN_NAMES.items():
        compile_s, call_s = {}, {}
        for b in BACKENDS:
            t0 = time.perf_counter()
            try:
                f, args = workloads.build(name, b, size)
                f(*args)
            except Exception as err:
                compile_s[b] = call_s[b] = f"refused ({type(err).__name__})"
                continue
            compile_s[b] = time.perf_counter() - t0
            call_s[b] = median_time(lambda: f(*args), repeats)
        _row(f"{label} ({name}): compile cold", compile_s, "s", 1)
        _row(f"{label} ({name}): per call", call_s)


def dynamic_rows(size, repeats):
    """W1 with its observation dim of unknown size: one build, then data of a new length."""
    n0 = size["N_OBS"]
    first, steady = {}, {}
    for b in BACKENDS:
        mu, beta, log_sigma = dg.tensor("mu", shape=(100,)), dg.scalar("beta"), dg.scalar("log_sigma")
        x, y, g = dg.vector("x"), dg.vector("y"), dg.tensor("g", shape=(None,), dtype="int64")
        z = (y - (mu[g] + beta * x)) / dg.exp(log_sigma)
        logp = (-0.5 * z * z - log_sigma).sum()
        value, grads = dg.value_and_grad(logp, [mu, beta, log_sigma])
        f = dg.function([mu, beta, log_sigma, x, y, g], [value, *grads], backend=b)
        rng = np.random.default_rng(0)

        def data(n):
            return [
                rng.normal(size=100),
                np.array(0.3),
                np.array(-0.2),
                rng.normal(size=n),
                rng.normal(size=n),
                rng.integers(0, 100, n),
            ]

        f(*data(n0))
        new = data(n0 + 17)
        t0 = time.perf_counter()
        f(*new)
        first[b] = time.perf_counter() - t0
        steady[b] = median_time(lambda: f(*new), repeats)
    _row(f"W1, new length {n0 + 17}: first call", first)
    _row(f"W1, new length {n0 + 17}: steady call", steady)


def transcendental_rows(repeats, n=1_000_000):
    for dtype in ("float64", "float32"):
        for fname in ("exp", "log"):
            x = dg.tensor("x", shape=(None,), dtype=dtype)
            out = getattr(dg, fname)(x).sum()
            data = np.random.default_rng(0).uniform(0.1, 2.0, n).astype(dtype)
            times = {}
            for b in BACKENDS:
                f = dg.function([x], out, backend=b)
                f(data)
                times[b] = median_time(lambda: f(data), repeats)
            ref = getattr(np, fname)
            numpy_t = median_time(lambda: ref(data).sum(), repeats)
            _row(f"{fname}(x).sum(), {dtype}, n={n:.0e} (numpy {numpy_t * 1e3:.3g} ms)", times)
    # f64 exp as numba's own polynomial (`mlir/scalar.py`'s VECTOR_EXP) instead of IREE's math.exp
    from dimgraph.backends.mlir import scalar

    x = dg.tensor("x", shape=(None,))
    data = np.random.default_rng(0).uniform(0.1, 2.0, n)
    scalar.VECTOR_EXP[0] = True
    try:
        f = dg.function([x], dg.exp(x).sum(), backend="mlir")
    finally:
        scalar.VECTOR_EXP[0] = False
    f(data)
    _row("exp(x).sum(), float64, polynomial exp on mlir", {"mlir": median_time(lambda: f(data), repeats)})


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--full", action="store_true", help="run.py's full sizes")
    parser.add_argument("--only", nargs="*", default=["sampler", "workloads", "dynamic", "exp"])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    size = workloads.sizes(quick=not args.full)
    print(f"sizes {size}, {args.repeats} repeats; cache {os.environ['DIMGRAPH_CACHE_DIR']}\n")
    print("| row | " + " | ".join(BACKENDS) + " |\n|---|" + "---|" * len(BACKENDS))
    if "sampler" in args.only:
        sampler_rows(args.repeats)
    if "workloads" in args.only:
        workload_rows(size, args.repeats)
    if "dynamic" in args.only:
        dynamic_rows(size, args.repeats)
    if "exp" in args.only:
        transcendental_rows(args.repeats)


if __name__ == "__main__":
    main()
