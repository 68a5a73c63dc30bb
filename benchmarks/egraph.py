"""The e-graph rewrite mode against the phase order (issue 21): cost-model value, numba time per call, rewrite time.

    .venv/bin/python benchmarks/egraph.py            # every graph, in one run
    .venv/bin/python benchmarks/egraph.py --quick    # smaller data, fewer random graphs
    .venv/bin/python benchmarks/egraph.py --only switch w2

For each graph: the modeled cost (`dimgraph.core.rewriting.egraph.graph_cost`, on the
graph after fusion, both modes priced by the same model), the best of 9 numba calls,
the median of 3 `rewrite_graph` runs, and for the e-graph how saturation ended. The random
graphs are drawn from the rewrite-correctness hypothesis suite
(tests/core/rewriting/test_rewrite_random_graphs.py) with a fixed seed; for them the
table gives totals, and how many rewritten graphs differ between the modes (those are
timed on numba; an identical graph is the same program). Results are checked against each other before timing.
"""

from __future__ import annotations

import argparse
import io
import math
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

import dimgraph as dg  # noqa: E402
from benchmarks.timing import best_call  # noqa: E402
from dimgraph.backends import get_backend  # noqa: E402
from dimgraph.core.fgraph import FunctionGraph  # noqa: E402
from dimgraph.core.rewriting import rewrite_graph  # noqa: E402
from dimgraph.core.rewriting.egraph import graph_cost  # noqa: E402
from dimgraph.printing import dprint  # noqa: E402

MODES = {"phase order": "default", "e-graph": {"egraph": True}}
# The lazy switch hinges on how dense the mask is; the switch graphs also run with the true density given.
HINTS = {"switch": 0.023, "switch_even": 0.5}
HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def normal_logp(v, mu, sigma):
    return (-0.5 * ((v - mu) / sigma) ** 2 - dg.log(sigma) - HALF_LOG_2PI).sum()


# -- the graphs: (inputs, outputs, data) ---------------------------------------------------------


def w1(quick):
    """Hierarchical logp + gradient (benchmarks/run.py workload 1)."""
    n_obs, n_group = (10_000, 10) if quick else (1_000_000, 100)
    rng = np.random.default_rng(0)
    mu, beta, log_sigma = dg.tensor("mu", shape=(n_group,)), dg.scalar("beta"), dg.scalar("log_sigma")
    x, y, g = dg.tensor("x", shape=(None,)), dg.tensor("y", shape=(None,)), dg.tensor("g", shape=(None,), dtype="int64")
    r = (y - (mu[g] + beta * x)) / dg.exp(log_sigma)
    n = dg.core.cast(dg.core.shape_of(x)[0], "float64")
    logp, grads = dg.value_and_grad((-0.5 * r * r).sum() - n * (log_sigma + HALF_LOG_2PI), [mu, beta, log_sigma])
    data = (
        rng.normal(size=n_group),
        np.asarray(0.3),
        np.asarray(-0.2),
        rng.normal(size=n_obs),
        rng.normal(size=n_obs),
        rng.integers(0, n_group, n_obs),
    )
    return [mu, beta, log_sigma, x, y, g], [logp, *grads], data


def radon(quick):
    """The radon model (non-centered varying intercepts and slopes by county): logp + gradient."""
    n_obs, n_county = (919, 85) if quick else (91_900, 85)
    rng = np.random.default_rng(1)
    mu_a, mu_b = dg.scalar("mu_a"), dg.scalar("mu_b")
    log_sa, log_sb, log_sy = dg.scalar("log_sigma_a"), dg.scalar("log_sigma_b"), dg.scalar("log_sigma_y")
    za, zb = dg.tensor("z_a", shape=(n_county,)), dg.tensor("z_b", shape=(n_county,))
    floor, county, y = (
        dg.tensor("floor", shape=(None,)),
        dg.tensor("county", shape=(None,), dtype="int64"),
        dg.tensor("y", shape=(None,)),
    )
    a = mu_a + dg.exp(log_sa) * za
    b = mu_b + dg.exp(log_sb) * zb
    theta = a[county] + b[county] * floor
    sy = dg.exp(log_sy)
    logp = normal_logp(y, theta, sy) + normal_logp(za, 0.0, 1.0) + normal_logp(zb, 0.0, 1.0)
    logp = logp + normal_logp(mu_a, 0.0, 10.0) + normal_logp(mu_b, 0.0, 10.0) + log_sa + log_sb + log_sy
    wrt = [mu_a, mu_b, log_sa, log_sb, log_sy, za, zb]
    value, grads = dg.value_and_grad(logp, wrt)
    data = tuple(np.asarray(v) for v in (1.5, -0.6, -0.5, -1.0, -0.3)) + (
        rng.normal(size=n_county),
        rng.normal(size=n_county),
        rng.integers(0, 2, n_obs).astype(float),
        rng.integers(0, n_county, n_obs),
        rng.normal(1.3, 0.8, n_obs),
    )
    return wrt + [floor, county, y], [value, *grads], data


def softmax_regression(quick):
    """Multinomial logistic regression: log-likelihood written naively (log of exp over a sum) + gradient."""
    n, d, k = (2_000, 10, 5) if quick else (100_000, 20, 10)
    rng = np.random.default_rng(2)
    X, W, b = dg.tensor("X", shape=(None, d)), dg.tensor("W", shape=(d, k)), dg.tensor("b", shape=(k,))
    onehot = dg.tensor("onehot", shape=(None, k))
    z = X @ W + b
    e = dg.exp(z)
    loglik = (onehot * dg.log(e / e.sum(axis=1, keepdims=True))).sum()
    value, grads = dg.value_and_grad(loglik, [W, b])
    labels = rng.integers(0, k, n)
    data = (rng.normal(size=(n, d)), rng.normal(size=(d, k)) * 0.1, np.zeros(k), np.eye(k)[labels])
    return [X, W, b, onehot], [value, *grads], data


def w2(quick):
    """Fused broadcast + reduce (benchmarks/run.py workload 2)."""
    nx = ny = 400 if quick else 2000
    rng = np.random.default_rng(3)
    a, b = dg.tensor("a", shape=(None,)), dg.tensor("b", shape=(None,))
    out = (dg.exp(a[:, None] + b[None, :]) * dg.log1p(b * b)[None, :]).sum(axis=1)
    return [a, b], [out], (rng.normal(size=nx) * 0.1, rng.normal(size=ny) * 0.1)


def switch(quick):
    """The meeting's example: a where whose taken branch is costly and rarely selected."""
    n = 100_000 if quick else 1_000_000
    rng = np.random.default_rng(4)
    x, y = dg.tensor("x", shape=(None,)), dg.tensor("y", shape=(None,))
    out = dg.where(x > 2.0, dg.exp(x) * dg.log1p(y * y) + dg.sin(x), dg.sqrt(abs(y)))
    return [x, y], [out], (rng.normal(size=n), rng.normal(size=n))


def switch_even(quick):
    """The same where with both branches costly and the mask half true: the lazy form's worst case."""
    n = 100_000 if quick else 1_000_000
    rng = np.random.default_rng(5)
    x, y = dg.tensor("x", shape=(None,)), dg.tensor("y", shape=(None,))
    out = dg.where(x > 0.0, dg.exp(x) * dg.sin(y), dg.log1p(y * y) * dg.cos(x))
    return [x, y], [out], (rng.normal(size=n), rng.normal(size=n))


GRAPHS = {
    "w1": w1,
    "radon": radon,
    "softmax": softmax_regression,
    "w2": w2,
    "switch": switch,
    "switch_even": switch_even,
}


def random_graphs(count):
    """`count` graphs drawn (fixed seed) from the rewrite-correctness suite's strategy."""
    from hypothesis import given, settings

    sys.path.insert(0, os.path.join(ROOT, "tests", "core", "rewriting"))
    from test_rewrite_random_graphs import graphs

    cases = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None)
    @given(graphs())
    def collect(case):
        cases.append(case)

    collect()
    return cases[:count]


# -- measuring -----------------------------------------------------------------------------------


def rewrite(inputs, outputs, mode, repeats=3):
    """(rewritten fgraph, median seconds in rewrite_graph) for the numba backend's rewrite set."""
    times = []
    for _ in range(repeats):
        fgraph = FunctionGraph(inputs, outputs)
        t0 = time.perf_counter()
        rewrite_graph(fgraph, mode, backend=get_backend("numba"))
        times.append(time.perf_counter() - t0)
    return fgraph, statistics.median(times)


def measure(name, inputs, outputs, data, time_calls=True):
    rows, results = [], {}
    modes = dict(MODES)
    fraction = HINTS.get(name, 0.5)
    if name in HINTS:
        modes[f"e-graph, mask_fraction={fraction}"] = {"egraph": {"mask_fraction": fraction}}
    for label, mode in modes.items():
        fgraph, seconds = rewrite(inputs, outputs, mode)
        report = getattr(fgraph.rewrite_trace, "egraph", None)
        cost = graph_cost(fgraph, mask_fraction=fraction)
        per_call = None
        if time_calls:
            f = dg.function(inputs, outputs, rewrites=mode, backend="numba")
            with np.errstate(all="ignore"):
                results[label] = [np.asarray(v) for v in f(*data)]
            per_call = best_call(lambda f=f: f(*data))
        status = "" if report is None else f"{report.status}, {report.iterations} rounds, {report.enodes} e-nodes"
        rows.append((name, label, cost, per_call, seconds, status))
    for label in results:
        for got, want in zip(results[label], results["phase order"]):
            np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-9)
    return rows


def graph_text(fgraph):
    """The rewritten graph as printed (inputs are shared between modes, so equal text means equal graphs)."""
    buf = io.StringIO()
    dprint(fgraph.outputs, file=buf)
    return buf.getvalue()


def print_rows(rows):
    print(
        "| graph | mode | modeled cost | kernels | elements | transcendental | masked | numba ms/call (best of 9) | rewrite ms | e-graph |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, label, cost, per_call, seconds, status in rows:
        call = "" if per_call is None else f"{per_call * 1e3:.3g}"
        print(
            f"| {name} | {label} | {cost.total:.4g} | {cost.kernels} | {cost.elements:.3g} | {cost.transcendental:.3g} "
            f"| {cost.masked:.3g} "
            f"| {call} | {seconds * 1e3:.1f} | {status} |"
        )
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", nargs="*", default=None, help=f"some of {sorted(GRAPHS)} and 'random'")
    parser.add_argument("--random", type=int, default=None, help="how many random graphs (default 40, quick 15)")
    args = parser.parse_args()
    names = args.only or [*GRAPHS, "random"]
    rows = []
    for name in names:
        if name == "random":
            continue
        inputs, outputs, data = GRAPHS[name](args.quick)
        rows += measure(name, inputs, outputs, data)
    print_rows(rows)
    if "random" in names:
        count = args.random or (15 if args.quick else 40)
        totals = {label: [0.0, 0.0, 0.0] for label in MODES}
        changed = cheaper = fallbacks = different = 0
        for inputs, values, outputs in random_graphs(count):
            per, printed = {}, {}
            for label, mode in MODES.items():
                fgraph, seconds = rewrite(inputs, outputs, mode)
                cost = graph_cost(fgraph).total
                totals[label][0] += cost
                totals[label][1] += seconds
                report = getattr(fgraph.rewrite_trace, "egraph", None)
                fallbacks += bool(report is not None and report.fallback)
                per[label] = cost
                printed[label] = graph_text(fgraph)
            changed += per["e-graph"] != per["phase order"]
            cheaper += per["e-graph"] < per["phase order"]
            if (
                printed["e-graph"] != printed["phase order"]
            ):  # the same graph is the same numba program: time the others
                different += 1
                for label, mode in MODES.items():
                    f = dg.function(inputs, outputs, rewrites=mode, backend="numba")
                    with np.errstate(all="ignore"):
                        totals[label][2] += best_call(lambda f=f: f(*values))
        print(
            f"\nrandom graphs from the rewrite-correctness suite: {count} graphs, e-graph cost differs on {changed}, "
            f"lower on {cheaper}; rewritten graphs differ on {different}; fallbacks {fallbacks}"
        )
        for label, (cost, seconds, calls) in totals.items():
            print(
                f"- {label}: total modeled cost {cost:.4g}, total rewrite time {seconds * 1e3:.0f} ms, "
                f"numba time per call summed over the {different} differing graphs {calls * 1e6:.1f} us"
            )


if __name__ == "__main__":
    main()
