"""Vectorization benchmarks (issue 15): posterior predictive over extra dims, batched linalg, jacobian.

    .venv/bin/python benchmarks/vectorize.py            # all three (a few minutes cold)
    .venv/bin/python benchmarks/vectorize.py --only 2   # one of them
    .venv/bin/python benchmarks/vectorize.py --quick    # small sizes

1. Posterior predictive of a hierarchical model (country and age effects, 200
   observations) over (chain = 4, draw = 1000): a dimgraph function compiled
   for one draw and called with the posterior's DataArrays (`map_extra_dims`),
   vs `xarray.apply_ufunc(..., vectorize=True)` over the NumPy model, vs
   `jax.jit(jax.vmap(jax.vmap(model)))` of the hand-written model.
2. Batched `cholesky` + `solve` of (batch = 1000, 10 x 10) matrices: dimgraph
   per backend vs `numpy.linalg` (batched) and `jax.jit`.
3. `dg.jacobian` of a 100-output function: compile (first call) and run time
   vs the former Python loop (one reverse pass per output, concatenated; not
   on numba, where it compiles for minutes) and `jax.jit(jax.jacrev(f))`.

Times: medians of wall-clock over repeated calls after one warm-up call;
"first call" includes rewriting, code generation and compilation (numba with
its disk cache warm for the shared kernels, so a cold cache is slower).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import xarray as xr

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import dimgraph as dg  # noqa: E402
from benchmarks.timing import first_call, median_time  # noqa: E402

# -- 1. posterior predictive --------------------------------------------------------------


def predictive(chains, draws, n_obs, repeats, backends):
    import jax
    import jax.numpy as jnp

    country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    age = dg.Dim("age", size=4)
    obs = dg.Dim("obs", size=n_obs)
    rng = np.random.default_rng(0)
    cidx_np, aidx_np = rng.integers(0, 3, n_obs), rng.integers(0, 4, n_obs)
    y_np = rng.normal(size=n_obs)

    ce = dg.labeled("country_effect", dims=(country,))
    ae = dg.labeled("age_effect", dims=(age,))
    sigma = dg.labeled("sigma", dims=())
    y = dg.labeled("y", dims=(obs,))
    eta = ce.isel(country=dg.constant(cidx_np, dims=(obs,))) + ae.isel(age=dg.constant(aidx_np, dims=(obs,)))
    loglik = (-0.5 * ((y - eta) / sigma) ** 2 - dg.log(sigma)).sum("obs")

    post = {
        "country_effect": xr.DataArray(
            rng.normal(size=(chains, draws, 3)), dims=("chain", "draw", "country"), coords={"country": country.coords}
        ),
        "age_effect": xr.DataArray(rng.normal(size=(chains, draws, 4)), dims=("chain", "draw", "age")),
        "sigma": xr.DataArray(rng.uniform(0.5, 2, size=(chains, draws)), dims=("chain", "draw")),
    }
    y_da = xr.DataArray(y_np, dims="obs")
    rows = {}
    for backend in backends:

        def make(backend=backend):
            f = dg.function([ce, ae, sigma, y], [eta, loglik], backend=backend, map_extra_dims=True)
            return lambda: f(post["country_effect"], post["age_effect"], post["sigma"], y_da)

        first, call = first_call(make)
        rows[f"dimgraph {backend}"] = (median_time(call, repeats), first)

    def model_np(c, a, s):
        e = c[cidx_np] + a[aidx_np]
        return e, (-0.5 * ((y_np - e) / s) ** 2 - np.log(s)).sum()

    def via_xarray():
        return xr.apply_ufunc(
            model_np, post["country_effect"], post["age_effect"], post["sigma"],
            input_core_dims=[["country"], ["age"], []], output_core_dims=[["obs"], []], vectorize=True,
        )  # fmt: skip

    first, _ = first_call(lambda: via_xarray)
    rows["xarray.apply_ufunc(vectorize=True)"] = (median_time(via_xarray, max(1, repeats // 5)), first)

    cj, aj, yj = jnp.asarray(cidx_np), jnp.asarray(aidx_np), jnp.asarray(y_np)

    def model_jax(c, a, s):
        e = c[cj] + a[aj]
        return e, (-0.5 * ((yj - e) / s) ** 2 - jnp.log(s)).sum()

    with jax.enable_x64(True):
        vm = jax.jit(jax.vmap(jax.vmap(model_jax)))
        args = [jnp.asarray(post[k].values) for k in ("country_effect", "age_effect", "sigma")]

        def via_jax():
            e, ll = vm(*args)
            return np.asarray(e), np.asarray(ll)

        first, _ = first_call(lambda: via_jax)
        rows["jax.jit(vmap(vmap(model))) (arrays in, NumPy out)"] = (median_time(via_jax, repeats), first)
    return rows  # the values agree: tests/labeled/test_vectorize.py checks map_extra_dims against apply_ufunc


# -- 2. batched cholesky + solve ----------------------------------------------------------------


def batched_linalg(batch, m, repeats, backends):
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(1)
    g = rng.normal(size=(batch, m, m))
    A = g @ np.swapaxes(g, 1, 2) + m * np.eye(m)
    b = rng.normal(size=(batch, m))
    rows = {}
    for backend in backends:

        def make(backend=backend):
            a_ = dg.tensor("a", shape=(None, m, m))
            b_ = dg.tensor("b", shape=(None, m))
            f = dg.function([a_, b_], [dg.linalg.cholesky(a_), dg.linalg.solve(a_, b_, b_ndim=1)], backend=backend)
            return lambda: f(A, b)

        first, call = first_call(make)
        rows[f"dimgraph {backend}"] = (median_time(call, repeats), first)
        L, x = call()
        np.testing.assert_allclose(L, np.linalg.cholesky(A), rtol=1e-8)
        np.testing.assert_allclose(x, np.linalg.solve(A, b[..., None])[..., 0], rtol=1e-8)

    def numpy_call():
        return np.linalg.cholesky(A), np.linalg.solve(A, b[..., None])[..., 0]

    rows["numpy.linalg (batched)"] = (median_time(numpy_call, repeats), 0.0)
    with jax.enable_x64(True):
        jf = jax.jit(lambda a, v: (jnp.linalg.cholesky(a), jnp.linalg.solve(a, v[..., None])[..., 0]))
        Aj, bj = jnp.asarray(A), jnp.asarray(b)

        def jax_call():
            L, x = jf(Aj, bj)
            return np.asarray(L), np.asarray(x)

        first, _ = first_call(lambda: jax_call)
        rows["jax.jit (arrays in, NumPy out)"] = (median_time(jax_call, repeats), first)
    return rows


# -- 3. jacobian ---------------------------------------------------------------------------


def _loop_jacobian(y, x):
    """The former dg.jacobian: one reverse pass per element of y, concatenated."""
    from dimgraph.core.gradient import vjp

    n = y.type.shape[0]
    rows = [dg.core.reshape(vjp([y[k]], [dg.core.constant(1.0)], [x])[0], (1, x.type.shape[0])) for k in range(n)]
    return dg.core.concatenate(rows, axis=0)


def jacobian(n, repeats, backends):
    import jax
    import jax.numpy as jnp

    rng = np.random.default_rng(2)
    W = rng.normal(size=(n, n)) / np.sqrt(n)
    xv = rng.normal(size=n)
    rows = {}
    for backend in backends:
        for label, build in (("dg.jacobian", dg.jacobian), ("loop of reverse passes", _loop_jacobian)):
            if build is _loop_jacobian and backend == "numba":
                continue  # the loop's 100 printed passes take minutes to compile with numba

            def make(backend=backend, build=build):
                x = dg.tensor("x", shape=(n,))
                y = dg.tanh(dg.core.constant(W) @ x) * dg.exp(x).sum()
                f = dg.function([x], build(y, x), backend=backend)
                return lambda: f(xv)

            first, call = first_call(make)
            rows[f"{label}, {backend}"] = (median_time(call, repeats), first)
    with jax.enable_x64(True):
        Wj = jnp.asarray(W)
        jf = jax.jit(jax.jacrev(lambda x: jnp.tanh(Wj @ x) * jnp.exp(x).sum()))
        xj = jnp.asarray(xv)
        first, call = first_call(lambda: lambda: np.asarray(jf(xj)))
        rows["jax.jit(jax.jacrev(f))"] = (median_time(call, repeats), first)
    return rows


def show(title, rows):
    print(f"\n{title}\n")
    print("| implementation | ms per call | first call (s) |")
    print("|---|---:|---:|")
    for name, (per_call, first) in rows.items():
        print(f"| {name} | {per_call * 1e3:.3g} | {first:.2f} |")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", nargs="*", type=int, default=[1, 2, 3])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backends", nargs="*", default=["numba", "c", "jax"])
    args = parser.parse_args()
    repeats = 3 if args.quick else 15
    if 1 in args.only:
        draws = 100 if args.quick else 1000
        show(
            f"1. posterior predictive, chain = 4, draw = {draws}, 200 obs",
            predictive(4, draws, 200, repeats, args.backends),
        )
    if 2 in args.only:
        show("2. cholesky + solve, batch = 1000, 10 x 10", batched_linalg(1000, 10, repeats, args.backends))
    if 3 in args.only:
        n = 20 if args.quick else 100
        show(f"3. jacobian of a {n}-output function", jacobian(n, repeats, args.backends))


if __name__ == "__main__":
    main()
