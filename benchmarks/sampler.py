"""The sampler suite: what a gradient-based sampler feels, per logp + gradient call, on models of
the sizes samplers run (`sampler_models.py`: radon-style hierarchical regression, eight schools
non-centered, LKJ correlated varying effects (the catalog-free form and the one a user writes with
`linalg.diagonal`, `dot` and `sel`), an AR(1) through `dg.scan`, and, written as users write them
when the catalog does not help, crossed effects read by two data indexers, a random walk by `cumsum`
and a mixture by `logsumexp`).

For each model: dimgraph's `flat_value_and_grad` on each backend, the same density as a user's
`dg.Model` (`m.logp_fn()`, numba: "dg model"), hand NumPy, hand `numba.njit`,
hand `jax.jit(jax.value_and_grad(...))` on NumPy inputs, and PyMC 6's compiled
`logp_dlogp_function` (numba mode) where PyMC is importable, all in this process. First every
implementation's log density and gradient are checked against hand NumPy (1e-8 relative) at the
model's test point; then per-call medians of interleaved rounds, compile times (cold: empty
caches; warm: the caches the cold process left; fresh processes, CPU seconds) and nutpie's wall
time (4 chains x 2000: 1000 tune + 1000 draws) through `nutpie.from_pyfunc` and through nutpie's
native model calling `fn.cfunc` (the route `dg.Model.sample` takes on numba) beside
`nutpie.compile_pymc_model`; and `m.sample` end to end (the user's `dg.Model`, compile included, 4 chains x
(1000 tune + 1000 draws)) beside PyMC + nutpie (`compile_pymc_model` + `nutpie.sample`), cold and warm
caches, fresh processes.

    make bench-sampler                                      # PyMC and nutpie rows: runs in .venv-peers
    .venv/bin/python benchmarks/sampler.py --no-compile     # dimgraph and hand rows only (Python 3.11)
    .venv-peers/bin/python benchmarks/sampler.py --models radon --backends jax c --no-nutpie
    .venv-peers/bin/python benchmarks/sampler.py --no-per-call --no-compile --no-nutpie    # m.sample rows only
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(HERE), str(ROOT)]

from sampler_models import MODELS  # noqa: E402
from timing import warm_up  # noqa: E402

BACKENDS = ("numba", "jax", "c")
RTOL = 1e-8
# On a loaded 2-core machine XLA's concurrency-optimized thunk schedule costs small graphs 1.5-2.5x (thread
# hand-offs between thunks of a few microseconds); the flag is process-wide, so it is an option here.
SEQUENTIAL_XLA = "--xla_cpu_enable_concurrency_optimized_scheduler=false"


def has(module):
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def implementations(model, backends, with_pymc):
    """{label: theta -> (logp, grad)} on the model's data; the compile of each is paid here."""
    impls = {}
    for backend in backends:
        fn = model.flat(backend)
        impls[f"dg {backend}"] = fn.bind(**model.data)  # the data bound once, as a sampler holds them
    if "numba" in backends and model.dg_model is not None:
        impls["dg model"] = model_function(model)
    impls["hand numpy"] = model.numpy_fn
    impls["hand numba"] = model.numba_fn
    if has("jax"):
        import jax

        with jax.enable_x64(True):
            jitted = jax.jit(jax.value_and_grad(model.jax_logp))
            jitted(model.theta, *model.jax_data)  # trace and compile under x64

        def hand_jax(theta):
            with jax.enable_x64(True):
                value, grad = jitted(theta, *model.jax_data)
            return float(value), np.asarray(grad)

        impls["hand jax"] = hand_jax
    if with_pymc:
        impls["pymc numba"] = pymc_function(model)
    return impls


def in_order(point, order):
    """The flat vector of `point`'s arrays in `order`."""
    return np.concatenate([np.ravel(point[n]) for n in order]).astype(np.float64)


def from_order(vector, order, point):
    """`vector` (`point`'s arrays in `order`) back in `point`'s own order: this model's flat layout."""
    start, parts = 0, {}
    for n in order:
        parts[n] = vector[start : start + np.size(point[n])]
        start += np.size(point[n])
    return np.concatenate([np.ravel(parts[n]) for n in point])


def model_function(model):
    """A user's `dg.Model` of the same density: `m.logp_fn()` (numba), timed on its own flat vector (built once)."""
    m = model.dg_model()
    fn, to_point = m.logp_fn(), model.dg_point or model.pymc_point
    order = m.unconstrained_names
    cached = {}

    def dg_model(theta):
        key = theta.tobytes()
        if key not in cached:
            cached.clear()
            cached[key] = in_order(to_point(theta), order)
        return fn(cached[key])

    def check(theta):
        value, grad = fn(in_order(to_point(theta), order))
        return float(value), from_order(grad, order, to_point(theta))

    dg_model.check = check
    return dg_model


def pymc_function(model):
    """PyMC 6's compiled logp + gradient (numba mode) taking dimgraph's flat layout: the PyMC vector
    is built once here in PyMC's order; the timed call is the compiled function on that vector."""
    f = model.pymc_model().logp_dlogp_function(ravel_inputs=True, mode="NUMBA")
    f.set_extra_values({})
    order = [v.name for v in f._grad_vars]
    call = f._pytensor_function
    call.trust_input = True

    def to_pymc(theta):
        point = model.pymc_point(theta)
        return np.concatenate([np.ravel(point[n]) for n in order]).astype(np.float64)

    def from_pymc(grad, theta):
        point, start, parts = model.pymc_point(theta), 0, {}
        for n in order:
            parts[n] = grad[start : start + np.size(point[n])]
            start += np.size(point[n])
        return np.concatenate([np.ravel(parts[n]) for n in point])

    cached = {}

    def pymc(theta):
        key = theta.tobytes()
        if key not in cached:  # the conversion is not what a sampler pays: it holds PyMC's vector
            cached.clear()
            cached[key] = to_pymc(theta)
        value, grad = call(cached[key])
        return float(value), grad

    pymc.check = lambda theta: (lambda v, g: (float(v), from_pymc(g, theta)))(*call(to_pymc(theta)))
    return pymc


def check_agreement(model, impls):
    """Every implementation's value and gradient against hand NumPy's at the test point."""
    ref_value, ref_grad = model.numpy_fn(model.theta)
    scale = max(1.0, float(np.max(np.abs(ref_grad))))
    for label, fn in impls.items():
        value, grad = getattr(fn, "check", fn)(model.theta)
        if abs(value - ref_value) > RTOL * abs(ref_value):
            raise AssertionError(f"{model.name}: {label} logp {value!r} != hand NumPy's {ref_value!r}")
        worst = float(np.max(np.abs(np.asarray(grad) - ref_grad)))
        if worst > RTOL * scale:
            raise AssertionError(f"{model.name}: {label} gradient differs from hand NumPy's by {worst:.3g}")


def per_call(impls, theta, rounds, budget=0.02):
    """Median seconds per call over `rounds` interleaved rounds (each implementation ~`budget` s a round)."""
    numbers = {}
    for label, fn in impls.items():
        warm_up(functools.partial(fn, theta))  # a sampler's first calls: numba's jitted graph takes over (timing.py)
        t0 = time.perf_counter()
        fn(theta)
        numbers[label] = max(1, int(budget / max(time.perf_counter() - t0, 1e-7)))
    samples = {label: [] for label in impls}
    for _ in range(rounds):
        for label, fn in impls.items():
            n = numbers[label]
            gc.disable()
            try:
                t0 = time.perf_counter()
                for _ in range(n):
                    fn(theta)
                samples[label].append((time.perf_counter() - t0) / n)
            finally:
                gc.enable()
    return {label: statistics.median(s) for label, s in samples.items()}, {
        label: min(s) for label, s in samples.items()
    }


def fmt_us(seconds):
    return f"{seconds * 1e6:.1f}" if seconds < 1e-3 else f"{seconds * 1e6:.0f}"


def print_per_call(results, labels, what="medians of interleaved rounds"):
    print(f"\n### Per logp + gradient call, us ({what}, one process)\n")
    print(
        "| model | "
        + " | ".join(labels)
        + " | numba / PyMC | numba / hand numba | model / numba | jax / hand jax | c / hand NumPy |"
    )
    print("|---|" + "---:|" * (len(labels) + 5))
    for name, times in results.items():
        cells = [fmt_us(times[k]) if k in times else "" for k in labels]

        def ratio(a, b):
            return f"{times[a] / times[b]:.2f}x" if a in times and b in times else ""

        ratios = [
            ratio("dg numba", "pymc numba"),
            ratio("dg numba", "hand numba"),
            ratio("dg model", "dg numba"),
            ratio("dg jax", "hand jax"),
            ratio("dg c", "hand numpy"),
        ]
        print(f"| {name} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    sys.stdout.flush()


# -- compile, fresh processes ---------------------------------------------------------------------

_FRESH = """
import json, os, sys, time
sys.path[:0] = [{here!r}, {root!r}]

def cpu():  # this process's CPU seconds and its children's (the c backend's compiler, pytensor's)
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system

import numpy as np
import sampler_models
which, name = {which!r}, {name!r}
model = sampler_models.MODELS[name]()  # imports (dimgraph, numba, pymc) and the data: not compile time
if which == "pymc":
    import pymc
    pm_model = model.pymc_model()
w1, c1 = time.perf_counter(), cpu()
if which == "pymc":
    f = pm_model.logp_dlogp_function(ravel_inputs=True, mode="NUMBA")
    f.set_extra_values({{}})
    x = np.concatenate([np.ravel(v) for v in pm_model.initial_point().values()])
    call = lambda: f(x)
elif which == "model":  # a user's `dg.Model`: `m.logp_fn()` on numba, the default backend
    m = model.dg_model()
    fn, x = m.logp_fn(), model.model_theta(m, model.theta)
    call = lambda: fn(x)
else:
    fn = model.flat(which)
    call = lambda: fn(model.theta, **model.data)
call()
w2, c2 = time.perf_counter(), cpu()
call()
w3, c3 = time.perf_counter(), cpu()
print(json.dumps(dict(wall=(w2 - w1) - (w3 - w2), cpu=(c2 - c1) - (c3 - c2))))
"""


def fresh(which, name, env, template=_FRESH):
    code = template.format(here=str(HERE), root=str(ROOT), which=which, name=name)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=1200)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def compile_times(names, whats, repeats):
    """{(model, what): (cold CPU s, warm CPU s)}: medians of `repeats` cold/warm pairs of fresh processes."""
    out = {}
    for name in names:
        for which in whats:
            pairs = []
            for _ in range(repeats):
                with tempfile.TemporaryDirectory() as tmp:
                    env = dict(os.environ, DIMGRAPH_CACHE_DIR=tmp, PYTENSOR_FLAGS=f"base_compiledir={tmp}/pytensor",
                               NUMBA_CACHE_DIR=f"{tmp}/numba")  # fmt: skip
                    pairs.append((fresh(which, name, env)["cpu"], fresh(which, name, env)["cpu"]))
            out[name, which] = tuple(statistics.median(p[k] for p in pairs) for k in (0, 1))
            print(
                f"  compile {name} {which}: cold {out[name, which][0]:.2f} / warm {out[name, which][1]:.2f} CPU s",
                flush=True,
            )
    return out


# -- m.sample end to end, fresh processes ---------------------------------------------------------

_SAMPLE = """
import json, os, sys, time, warnings
sys.path[:0] = [{here!r}, {root!r}]
warnings.simplefilter("ignore")

def cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system

import numpy as np
import nutpie
import sampler_models
which, name = {which!r}, {name!r}
model = sampler_models.MODELS[name]()  # imports and the data: not counted
if which == "pymc":
    import pymc
w1, c1 = time.perf_counter(), cpu()
if which == "pymc":  # PyMC + nutpie: the model, compile_pymc_model (numba), nutpie.sample
    compiled = nutpie.compile_pymc_model(model.pymc_model())
    w2 = time.perf_counter()
    trace = nutpie.sample(compiled, chains=4, tune=1000, draws=1000, cores=4, seed=1, progress_bar=False)
    divergences = int(trace.sample_stats["diverging"].sum())
else:  # a user's dg.Model, m.sample (nutpie over the compiled C function on numba)
    m = model.dg_model()
    w2 = w1
    idata = m.sample(draws=1000, tune=1000, chains=4, seed=1, cores=4)
    divergences = int(idata.sample_stats["diverging"].sum())
w3, c3 = time.perf_counter(), cpu()
print(json.dumps(dict(wall=w3 - w1, cpu=c3 - c1, compile=w2 - w1, divergences=divergences)))
"""


def sample_times(names, repeats):
    """{(model, what): ((cold wall, cold CPU), (warm wall, warm CPU))} for `m.sample` ("dg") and PyMC + nutpie
    ("pymc"), 4 chains x (1000 tune + 1000 draws), compile included: medians of `repeats` cold/warm pairs of
    fresh processes (cold: empty dimgraph, pytensor and Numba caches; warm: what the cold process left)."""
    out = {}
    for name in names:
        for which in ("dg", "pymc"):
            pairs = []
            for _ in range(repeats):
                with tempfile.TemporaryDirectory() as tmp:
                    env = dict(os.environ, DIMGRAPH_CACHE_DIR=tmp, PYTENSOR_FLAGS=f"base_compiledir={tmp}/pytensor",
                               NUMBA_CACHE_DIR=f"{tmp}/numba")  # fmt: skip
                    pairs.append([fresh(which, name, env, _SAMPLE) for _ in ("cold", "warm")])
            out[name, which] = tuple(
                tuple(statistics.median(p[k][key] for p in pairs) for key in ("wall", "cpu")) for k in (0, 1)
            )
            (cw, cc), (ww, wc) = out[name, which]
            print(f"  sample {name} {which}: cold {cw:.2f} s ({cc:.2f} CPU s) / warm {ww:.2f} s ({wc:.2f} CPU s), "
                  f"{pairs[0][0]['divergences']} divergences", flush=True)  # fmt: skip
    return out


def print_sample(times, names):
    print(
        "\n### m.sample end to end vs PyMC + nutpie (compile_pymc_model + nutpie.sample): 4 chains x (1000 tune + "
        "1000 draws), wall s (CPU s), cold / warm caches, fresh processes; imports and data excluded\n"
    )
    print(
        "| model | dg m.sample cold | PyMC + nutpie cold | cold ratio | dg m.sample warm | PyMC + nutpie warm | warm ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name in names:
        (dcw, dcc), (dww, dwc) = times[name, "dg"]
        (pcw, pcc), (pww, pwc) = times[name, "pymc"]
        print(f"| {name} | {dcw:.2f} ({dcc:.2f}) | {pcw:.2f} ({pcc:.2f}) | {dcw / pcw:.2f}x "
              f"| {dww:.2f} ({dwc:.2f}) | {pww:.2f} ({pwc:.2f}) | {dww / pww:.2f}x |")  # fmt: skip


def print_compile(times, names, whats):
    print(
        "\n### Compile + first call, CPU s (children's included), cold / warm (fresh processes; imports and data excluded)\n"
    )
    ratios = [w for w in whats if w != "pymc"] if "pymc" in whats else []
    print("| model | " + " | ".join(whats) + "".join(f" | {w} / pymc cold | {w} / pymc warm" for w in ratios) + " |")
    print("|---|" + "---:|" * (len(whats) + 2 * len(ratios)))
    for name in names:
        cells = [f"{times[name, w][0]:.2f} / {times[name, w][1]:.2f}" for w in whats]
        for w in ratios:
            cells += [f"{times[name, w][k] / times[name, 'pymc'][k]:.2f}x" for k in (0, 1)]
        print(f"| {name} | " + " | ".join(cells) + " |")


# -- nutpie ---------------------------------------------------------------------------------------


def nutpie_times(model, backends, with_pymc, chains=4, tune=1000, draws=1000):
    """{label: (compile s, sampling wall s, leapfrog steps)} for nutpie over dimgraph's flat function
    (`from_pyfunc`) and over PyMC's model (`compile_pymc_model`), 4 chains of tune + draws iterations, 2 cores.
    The steps (warmup and draws) differ between runs whose start or adaptation differ (a hierarchical model's
    funnel): wall per step is the figure that compares the compiled functions."""
    import nutpie
    from nutpie.compiled_pyfunc import from_pyfunc  # public, not re-exported by the package

    from dimgraph.model.samplers import nutpie_native_model

    out = {}
    for backend in backends:
        t0 = time.perf_counter()
        compiled = _nutpie_model(from_pyfunc, model.flat(backend), model)
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        trace = nutpie.sample(compiled, chains=chains, tune=tune, draws=draws, cores=2, seed=1, progress_bar=False)
        out[f"dg {backend}, from_pyfunc"] = (compile_s, time.perf_counter() - t0, _steps(trace))
        if backend == "numba":  # the route `dg.Model.sample` takes: nutpie calls the C-callable function
            t0 = time.perf_counter()
            fn = model.flat(backend)
            start = lambda seed: np.random.default_rng(seed).normal(0, 0.5, fn.size)  # noqa: E731
            compiled = nutpie_native_model(fn.cfunc(**model.data), fn.size, start)
            compile_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            trace = nutpie.sample(compiled, chains=chains, tune=tune, draws=draws, cores=2, seed=1, progress_bar=False)
            out["dg numba, native (fn.cfunc)"] = (compile_s, time.perf_counter() - t0, _steps(trace))
    if with_pymc:
        t0 = time.perf_counter()
        compiled = nutpie.compile_pymc_model(model.pymc_model())
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        trace = nutpie.sample(compiled, chains=chains, tune=tune, draws=draws, cores=2, seed=1, progress_bar=False)
        out["pymc, compile_pymc_model"] = (compile_s, time.perf_counter() - t0, _steps(trace))
    return out


def _steps(trace):
    """The leapfrog steps of a nutpie trace, warmup and draws."""
    return int(trace.warmup_sample_stats["n_steps"].sum()) + int(trace.sample_stats["n_steps"].sum())


def _nutpie_model(from_pyfunc, fn, model):
    """nutpie's model over `fn` (a `flat_value_and_grad`): it calls `fn(theta, **data)` for logp and gradient."""
    fn(model.theta, **model.data)  # the first call compiles (numba's kernels)
    layout = fn.layout

    def make_expand_fn(*_, **__):
        def expand(theta, **data):
            return {n: np.asarray(theta[w]).reshape(sh) for n, sh, w in zip(layout.names, layout.shapes, layout.slices)}

        return expand

    return from_pyfunc(
        fn.size, lambda: fn, make_expand_fn, [np.dtype("float64")] * len(layout.names), layout.shapes, layout.names,
        shared_data=dict(model.data), make_initial_point_fn=lambda seed: np.random.default_rng(seed).normal(0, 0.5, fn.size),
    )  # fmt: skip


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS) + ["python"])
    parser.add_argument("--rounds", type=int, default=15, help="interleaved rounds per model (median)")
    parser.add_argument("--no-compile", action="store_true", help="skip the fresh-process compile rows")
    parser.add_argument("--compile-repeats", type=int, default=1)
    parser.add_argument(
        "--compile-whats", nargs="+", choices=list(BACKENDS) + ["model", "pymc"],
        help="what the compile rows build (default: the backends, `model` (a dg.Model's logp_fn) and pymc)",
    )  # fmt: skip
    parser.add_argument("--per-call", action=argparse.BooleanOptionalAction, default=True,
                        help="the per-call rows (--no-per-call: compile / sample rows only)")  # fmt: skip
    parser.add_argument("--no-sample", action="store_true", help="skip the m.sample vs PyMC + nutpie rows")
    parser.add_argument("--sample-repeats", type=int, default=1)
    parser.add_argument("--no-nutpie", action="store_true", help="skip nutpie's wall times")
    parser.add_argument("--nutpie-backends", nargs="+", default=["numba", "c"], choices=list(BACKENDS))
    parser.add_argument("--no-pymc", action="store_true", help="leave PyMC out even where it is installed")
    parser.add_argument(
        "--xla-sequential", action="store_true",
        help="run XLA's CPU thunks in sequence (XLA_FLAGS=--xla_cpu_enable_concurrency_optimized_scheduler=false), "
        "for every JAX row: dimgraph's and the hand-written one",
    )  # fmt: skip
    args = parser.parse_args()
    if args.xla_sequential:
        os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + SEQUENTIAL_XLA).strip()
    backends = [b for b in args.backends if b != "jax" or has("jax")]
    with_pymc = has("pymc") and not args.no_pymc
    print(f"Python {sys.version.split()[0]}; backends {backends}; PyMC {'yes' if with_pymc else 'not installed (make bench-peers-env)'}; "
          f"XLA_FLAGS={os.environ.get('XLA_FLAGS', '')!r}")  # fmt: skip
    if with_pymc:
        import pymc
        import pytensor

        print(f"pymc {pymc.__version__}, pytensor {pytensor.__version__}")
    labels = [f"dg {b}" for b in backends] + (["dg model"] if "numba" in backends else [])
    labels += ["hand numpy", "hand numba"] + (["hand jax"] if has("jax") else [])
    labels += ["pymc numba"] if with_pymc else []
    results, fastest = {}, {}
    for name in args.models if args.per_call else ():
        model = MODELS[name]()
        impls = implementations(model, backends, with_pymc)
        check_agreement(model, impls)
        print(
            f"{name}: {model.theta.size} parameters; every implementation agrees with hand NumPy to {RTOL:g}",
            flush=True,
        )
        results[name], fastest[name] = per_call(impls, model.theta, args.rounds)
    if results:
        print_per_call(results, labels)
        print_per_call(fastest, labels, "fastest round: on a shared machine interference only adds time")
    if not args.no_compile:
        whats = args.compile_whats or (
            [b for b in backends if b != "python"] + ["model"] + (["pymc"] if with_pymc else [])
        )
        times = compile_times(args.models, whats, args.compile_repeats)
        print_compile(times, args.models, whats)
    if not args.no_sample and has("nutpie") and with_pymc:
        print_sample(sample_times(args.models, args.sample_repeats), args.models)
    if not args.no_nutpie and has("nutpie") and "radon" in args.models:
        print("\n### nutpie, radon, 4 chains x (1000 tune + 1000 draws), 2 cores\n")
        print("| route | compile s | sampling wall s | leapfrog steps | wall us per step (2 cores) |")
        print("|---|---:|---:|---:|---:|")
        for label, (c, w, n) in nutpie_times(MODELS["radon"](), args.nutpie_backends, with_pymc).items():
            print(f"| {label} | {c:.2f} | {w:.2f} | {n} | {w / n * 1e6:.2f} |")


if __name__ == "__main__":
    main()
