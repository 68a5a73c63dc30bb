"""Per-call cost of what a sampler calls on the numba backend: medians of many calls, one process.

Models of sampler size: a radon-style hierarchical regression (919 houses x 85 counties,
varying intercept and slope, HalfNormal scales, 175 parameters), eight schools non-centered,
an AR(1) `dg.scan` over T = 1000 steps; and the call floor of a 0-d `x + 1` graph
(trusted, checked, DataArray out).

    .venv/bin/python benchmarks/call_path.py [--backend numba] [--jit-graph True|False] [--only radon]

Each function is first called until its calls have settled (numba: the jitted graph, compiled
on a background thread once hot), then timed: medians of rounds of many calls. Run it with
`PYTHONPATH=<a checkout>` to compare checkouts in one session (interleave them: a shared
machine's load moves every figure).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import dimgraph as dg


def settle(call, function, seconds=120.0):
    """Call until the function's calls have settled on their entry (numba: the jitted graph, compiled
    after `graphjit.HOT_CALLS` calls on a background thread); returns the seconds that took."""
    t0 = time.perf_counter()
    tiers = function.tiers
    if tiers is None:
        call()
        return time.perf_counter() - t0
    from dimgraph.backends.numba import graphjit

    for _ in range(graphjit.HOT_CALLS + 1):
        call()
    while tiers.state == "compiling" and time.perf_counter() - t0 < seconds:
        time.sleep(0.01)
    call()
    return time.perf_counter() - t0


def median_us(fn, n=2000, rounds=5):
    """Median over `rounds` of the mean per-call microseconds of `n` calls."""
    fn()
    per = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        per.append((time.perf_counter() - t0) / n * 1e6)
    return float(np.median(per))


def radon(rng):
    county, obs = dg.Dim("county", size=85), dg.Dim("obs", size=919)
    mu_a, mu_b = dg.labeled("mu_a", dims=()), dg.labeled("mu_b", dims=())
    log_sa, log_sb, log_sy = (dg.labeled(n, dims=()) for n in ("log_sigma_a", "log_sigma_b", "log_sigma_y"))
    za, zb = dg.labeled("za", dims=(county,)), dg.labeled("zb", dims=(county,))
    idx = dg.labeled("county_idx", dims=(obs,), dtype="int64")
    floor, y = dg.labeled("floor", dims=(obs,)), dg.labeled("y", dims=(obs,))
    sa, sb, sy = dg.exp(log_sa), dg.exp(log_sb), dg.exp(log_sy)
    a, b = mu_a + sa * za, mu_b + sb * zb
    y_hat = a.isel(county=idx) + b.isel(county=idx) * floor
    logp = (
        dg.dist.normal(y_hat, sy).logp(y).sum()
        + dg.dist.normal(0.0, 1.0).logp(za).sum()
        + dg.dist.normal(0.0, 1.0).logp(zb).sum()
        + dg.dist.normal(0.0, 10.0).logp(mu_a)
        + dg.dist.normal(0.0, 10.0).logp(mu_b)
        + dg.dist.halfnormal(1.0).logp(sa)
        + log_sa
        + dg.dist.halfnormal(1.0).logp(sb)
        + log_sb
        + dg.dist.halfnormal(1.0).logp(sy)
        + log_sy
    )
    params = [mu_a, mu_b, log_sa, log_sb, log_sy, za, zb]
    data = {
        "county_idx": rng.integers(0, 85, 919),
        "floor": rng.integers(0, 2, 919).astype(float),
        "y": rng.normal(size=919),
    }
    return logp, params, [idx, floor, y], data


def eight_schools(rng):
    school = dg.Dim("school", size=8)
    mu, log_tau = dg.labeled("mu", dims=()), dg.labeled("log_tau", dims=())
    theta_t = dg.labeled("theta_t", dims=(school,))
    y, sigma = dg.labeled("y", dims=(school,)), dg.labeled("sigma", dims=(school,))
    tau = dg.exp(log_tau)
    logp = (
        dg.dist.normal(0.0, 5.0).logp(mu)
        + dg.dist.halfnormal(5.0).logp(tau)
        + log_tau
        + dg.dist.normal(0.0, 1.0).logp(theta_t).sum()
        + dg.dist.normal(mu + tau * theta_t, sigma).logp(y).sum()
    )
    data = {"y": np.array([28.0, 8, -3, 7, -1, 1, 18, 12]), "sigma": np.array([15.0, 10, 16, 11, 9, 11, 10, 18])}
    return logp, [mu, log_tau, theta_t], [y, sigma], data


def ar1(rng, T=1000):
    t, step_dim = dg.Dim("t", size=T), dg.Dim("step", size=T - 1)
    rho, log_s = dg.labeled("rho", dims=()), dg.labeled("log_s", dims=())
    y = dg.labeled("y", dims=(t,))
    s = dg.exp(log_s)

    def step(acc, prev, cur):
        return acc + dg.dist.normal(rho * prev, s).logp(cur), cur

    (total, _), _ = dg.scan(
        step,
        init=(dg.constant(0.0), y.isel(t=0)),
        sequences=[y.isel(t=slice(1, None)).rename({"t": "step"})],
        dim=step_dim,
    )
    logp = total + dg.dist.normal(0.0, 1.0).logp(rho) + dg.dist.normal(0.0, 1.0).logp(log_s)
    return logp, [rho, log_s], [y], {"y": np.cumsum(rng.normal(size=T)) * 0.1}


MODELS = {"radon": radon, "eight_schools": eight_schools, "ar1": ar1}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="numba")
    parser.add_argument("--only", default=None)
    parser.add_argument("--jit-graph", default="default", choices=["default", "True", "False"])
    args = parser.parse_args()
    options = {} if args.jit_graph == "default" else {"jit_graph": args.jit_graph == "True"}
    rng = np.random.default_rng(0)
    x = dg.scalar("x")
    f = dg.function([x], x + 1, backend=args.backend, **options)
    arr = np.array(1.0)
    settle(lambda: f(arr), f)
    xl = dg.labeled("x", dims=())
    fl = dg.function([xl], xl + 1, backend=args.backend, **options)
    settle(lambda: fl(arr), fl)
    import numba

    plain = numba.njit(lambda v: v + 1.0)
    plain(arr)
    print(
        f"x + 1: plain numba.njit {median_us(lambda: plain(arr), 20000):.2f} us, "
        f"trusted {median_us(lambda: f(arr, trust_input=True), 20000):.2f} us, "
        f"checked {median_us(lambda: f(arr), 20000):.2f} us, "
        f"DataArray out {median_us(lambda: fl(arr), 20000):.2f} us"
    )
    for name, make in MODELS.items():
        if args.only and name != args.only:
            continue
        cost, params, inputs, data = make(rng)
        t0 = time.perf_counter()
        fn = dg.flat_value_and_grad(cost, params, inputs=inputs, backend=args.backend, **options)
        theta = rng.normal(size=fn.size) * 0.1
        fn(theta, **data)
        compile_s = time.perf_counter() - t0
        settle_s = settle(
            lambda: fn(theta, **data), getattr(fn, "flat_function", fn.function)
        )  # c, jax, python: the flat graph
        n = 200 if name == "ar1" else 2000
        flat = median_us(lambda: fn(theta, **data), n)
        pos = fn.function
        arrays = [np.asarray(a) for a in fn.layout.arrays(theta)] + [np.asarray(data[v.name]) for v in inputs]
        trusted = median_us(lambda: pos(*arrays, trust_input=True), n)
        print(
            f"{name}: {fn.size} params, compile + first call {compile_s:.2f} s, settled after {settle_s:.2f} s; "
            f"per call: flat_value_and_grad {flat:.1f} us, trusted positional {trusted:.1f} us"
        )


if __name__ == "__main__":
    main()
