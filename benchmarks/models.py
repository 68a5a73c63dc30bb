"""`dg.Model` on a radon-sized model (85 counties, 919 houses, varying intercept and slope, non-centered).

Prints: the model's definition + logp compile time, the logp + gradient per call,
and, where nutpie is installed, `m.sample` wall time (4 chains x (1000 tune +
1000 draws), compile included) and `m.posterior_predictive` over those 4000
draws (first call, compile included, and a second call). With `--pymc` and PyMC
installed, the same model in PyMC through nutpie's `compile_pymc_model` and
`pm.sample_posterior_predictive`.

    python benchmarks/models.py            # dimgraph only
    python benchmarks/models.py --pymc     # also PyMC (its own environment's numba)
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from benchmarks.timing import median_time  # noqa: E402

K, N = 85, 919


def radon_data(seed=0):
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, K, N)
    floor = rng.integers(0, 2, N).astype(float)
    y = 1.5 - 0.6 * floor + rng.normal(0, 0.3, K)[idx] + rng.normal(0, 0.7, N)
    return idx, floor, y


def dimgraph_model(idx, floor, y):
    """The reference radon model of the tests (`tests/model/test_reference_models.py`) on these data."""
    from tests.model.test_reference_models import radon_model

    return radon_model([f"c{k}" for k in range(K)], idx, floor, y)


def run_dimgraph(data):
    t0 = time.perf_counter()
    m = dimgraph_model(*data)
    fn = m.logp_fn()
    theta = m.initial_point(seed=0)
    fn(theta)
    print(f"dimgraph: define + compile logp {time.perf_counter() - t0:.2f} s")
    print(f"dimgraph: logp + gradient {median_time(lambda: fn(theta), 7, 200) * 1e6:.0f} us per call")
    if importlib.util.find_spec("nutpie") is None:
        print("dimgraph: nutpie not installed, no sampling")
        return
    t0 = time.perf_counter()
    idata = m.sample(draws=1000, tune=1000, chains=4, seed=1)
    print(
        f"dimgraph: sample 4 x (1000 + 1000) {time.perf_counter() - t0:.1f} s, "
        f"{int(idata.sample_stats['diverging'].sum())} divergences"
    )
    for label in ("first", "second"):
        t0 = time.perf_counter()
        m.posterior_predictive(idata, seed=2)
        print(f"dimgraph: posterior predictive, {label} call {time.perf_counter() - t0:.2f} s")


def run_pymc(data):
    import nutpie
    import pymc as pm

    idx, floor, y = data
    t0 = time.perf_counter()
    with pm.Model(coords={"county": [f"c{k}" for k in range(K)]}) as model:
        ci, fl = pm.Data("county_idx", idx), pm.Data("floor", floor)
        mu_a, sigma_a = pm.Normal("mu_a", 0, 5), pm.HalfNormal("sigma_a", 1)
        mu_b, sigma_b = pm.Normal("mu_b", 0, 5), pm.HalfNormal("sigma_b", 1)
        z_a, z_b = pm.Normal("z_a", 0, 1, dims="county"), pm.Normal("z_b", 0, 1, dims="county")
        a = pm.Deterministic("a", mu_a + sigma_a * z_a, dims="county")
        b = pm.Deterministic("b", mu_b + sigma_b * z_b, dims="county")
        sigma_y = pm.Exponential("sigma_y", 1)
        pm.Normal("log_radon", a[ci] + b[ci] * fl, sigma_y, observed=y)
    idata = nutpie.sample(nutpie.compile_pymc_model(model), draws=1000, tune=1000, chains=4, seed=1, progress_bar=False)
    print(
        f"pymc: compile + sample 4 x (1000 + 1000) {time.perf_counter() - t0:.1f} s, "
        f"{int(idata.sample_stats['diverging'].sum())} divergences"
    )
    with model:
        for label in ("first", "second"):
            t0 = time.perf_counter()
            pm.sample_posterior_predictive(idata, progressbar=False, random_seed=2)
            print(f"pymc: sample_posterior_predictive, {label} call {time.perf_counter() - t0:.2f} s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pymc", action="store_true", help="also run the PyMC version")
    args = parser.parse_args()
    warnings.simplefilter("ignore", FutureWarning)
    data = radon_data()
    if args.pymc:
        run_pymc(data)
    else:
        run_dimgraph(data)
