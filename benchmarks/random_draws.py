"""Random draws and library log densities (issue 17): one run, medians, ratios.

    .venv/bin/python benchmarks/random_draws.py            # full sizes
    .venv/bin/python benchmarks/random_draws.py --quick    # small sizes, a smoke run

1. 1e6 normal draws with a mean per group, broadcast over (group=100, obs=10,000):
   `rng.normal(mu, sigma, extra_dims=(obs,))` on each backend next to NumPy's
   Generator (`default_rng().normal(mu[:, None], sigma, size=...)`) and a
   jitted `jax.random.normal`.
2. The hierarchical model's logp + gradient (1e6 obs, 100 groups) written with
   `dg.dist.normal(...).logp(y)` next to the same model with the hand-written
   formula, both labeled, numba backend.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import dimgraph as dg  # noqa: E402


def _jax():
    """jax with float64 enabled, or None where it is not installed (the hand-written jax row is then left out)."""
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return jax


def interleaved_medians(fns, repeats, clock=None):
    """Median seconds per call of each function, timed in turns (one call each per round) so that load
    changes hit all alike. `clock=time.process_time` (single-threaded code only: it adds up threads) moves
    less than wall time on a loaded machine."""
    import gc
    import statistics
    import time

    clock = clock or time.perf_counter
    for fn in fns.values():
        fn()  # warm-up
    times = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            gc.disable()
            t0 = clock()
            fn()
            times[name].append(clock() - t0)
            gc.enable()
    return {name: statistics.median(ts) for name, ts in times.items()}


def table(title, rows):
    """rows: (name, seconds, note); ratios to the first row."""
    print(f"\n### {title}\n")
    print(f"| implementation | median ms | ratio to {rows[0][0]} | note |")
    print("|---|---:|---:|---|")
    for name, t, note in rows:
        print(f"| {name} | {t * 1e3:.3g} | {t / rows[0][1]:.2f} | {note} |")
    sys.stdout.flush()


def draws(quick):
    n_group, n_obs = (10, 1000) if quick else (100, 10_000)
    group, obs = dg.Dim("group", size=n_group), dg.Dim("obs", size=n_obs)
    mu_v = np.linspace(-1, 1, n_group)
    repeats = 5 if quick else 15
    generator = np.random.default_rng(0)
    fns = {"numpy Generator": lambda: generator.normal(mu_v[:, None], 0.5, size=(n_group, n_obs))}
    notes = {"numpy Generator": "PCG64, ziggurat"}
    mu = dg.labeled("mu", dims=(group,))
    for backend in ("numba", "c", "jax", "python"):
        f = dg.function([mu], dg.rng(0).normal(mu, 0.5, extra_dims=(obs,)), backend=backend)
        fns[f"dimgraph {backend}"] = lambda f=f: f(mu_v)
        notes[f"dimgraph {backend}"] = "DataArray out, state advanced"
    jax = _jax()
    if jax is not None:
        import jax.numpy as jnp

        @jax.jit
        def normal(key, m):
            key, sub = jax.random.split(key)
            return key, m[:, None] + 0.5 * jax.random.normal(sub, (n_group, n_obs), dtype=jnp.float64)

        state = [jax.random.PRNGKey(0)]
        mu_j = jnp.asarray(mu_v)

        def run_jax():
            state[0], out = normal(state[0], mu_j)
            out.block_until_ready()

        fns["hand jax"] = run_jax
        notes["hand jax"] = "jax.random.normal, jit"
    medians = interleaved_medians(fns, repeats)
    rows = [(name, medians[name], notes[name]) for name in fns]
    table(f"1. normal draws, group={n_group} x obs={n_obs}, per call", rows)


def hierarchical(quick):
    n_obs, n_group = (10_000, 10) if quick else (1_000_000, 100)
    rng = np.random.default_rng(0)
    args = (
        rng.normal(size=n_group),
        0.3,
        -0.2,
        rng.normal(size=n_obs),
        rng.normal(size=n_obs),
        rng.integers(0, n_group, n_obs),
    )
    group, obs = dg.Dim("group", size=n_group), dg.Dim("obs")

    def model(library):
        mu = dg.labeled("mu", dims=(group,))
        beta = dg.labeled("beta", dims=())
        log_sigma = dg.labeled("log_sigma", dims=())
        x, y = dg.labeled("x", dims=(obs,)), dg.labeled("y", dims=(obs,))
        g = dg.labeled("g", dims=(obs,), dtype="int64")
        pred = mu.isel(group=g) + beta * x
        if library:
            logp = dg.dist.normal(pred, dg.exp(log_sigma)).logp(y).sum()
        else:
            r = (y - pred) / dg.exp(log_sigma)
            logp = (-0.5 * r * r - log_sigma - 0.5 * math.log(2 * math.pi)).sum()
        value, grads = dg.value_and_grad(logp, [mu, beta, log_sigma])
        return dg.function([mu, beta, log_sigma, x, y, g], [value, *grads])

    repeats = 5 if quick else 21
    fns = {
        "hand-written formula": lambda f=model(False): f(*args),
        "dg.dist.normal(...).logp": lambda f=model(True): f(*args),
    }
    medians = interleaved_medians(fns, repeats, clock=time.process_time)  # numba: one thread
    rows = [(name, medians[name], "numba, CPU time") for name in fns]
    table(f"2. hierarchical logp + gradient (obs={n_obs}, group={n_group}), per call", rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    opts = parser.parse_args()
    draws(opts.quick)
    hierarchical(opts.quick)
