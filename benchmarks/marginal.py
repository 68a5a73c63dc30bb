"""Marginalized discrete latents (issue 38) beside pymc-extras: `m.marginalize` / `marginalize=True` in a
`dg.Model` against `pymc_extras.marginalize` of the same PyMC model.

Models: a three-component normal mixture written with its label (`z ~ categorical(softmax(logits))` on
1000 observations, `y ~ N(mu[z], sigma[z])`: the same density as `sampler_models.mixture`, which sums the
label by hand with `logsumexp`), and a change point (`tau ~ discrete_uniform` over 110 years, Poisson counts
at an early and a late rate). First both marginal log densities and gradients are checked against hand
NumPy (1e-8 relative) at a test point; then, per logp + gradient call (numba; medians of interleaved
rounds, one process): dimgraph's `m.logp_fn()`, pymc-extras' marginal model compiled by PyMC 6
(`logp_dlogp_function`, numba mode), and for the mixture hand `numba.njit` and dimgraph's hand
`logsumexp` form; compile + first call in fresh processes (cold: empty caches, warm: what the cold one
left; CPU s, model definition and marginalization included, imports and data excluded); and
`m.sample` against `nutpie.compile_pymc_model` + `nutpie.sample` of the marginal model (4 chains x (1000
tune + 1000 draws), compile included, wall s), with the posterior means both give.

    .venv-peers/bin/python benchmarks/marginal.py                       # every row (pymc-extras: make bench-peers-env)
    .venv-peers/bin/python benchmarks/marginal.py --models mixture --no-sample
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
from scipy import special

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]

import sampler  # noqa: E402
import sampler_models  # noqa: E402

import dimgraph as dg  # noqa: E402

RTOL = 1e-8


@dataclass
class Marginal:
    name: str
    dg_model: Callable  # () -> dg.Model with the latent marginalized
    pymc_model: Callable  # () -> the pymc-extras marginal model
    numpy_fn: Callable  # theta -> (logp, grad), hand NumPy, in the dg.Model's flat layout
    theta: np.ndarray  # a test point, in the dg.Model's flat layout
    names: tuple  # the dg.Model's unconstrained names == PyMC's value variables
    summary: tuple  # posterior variables whose means are compared
    numba_fn: Callable | None = None  # hand numba.njit of the same density
    hand_logsumexp: object | None = None  # a `sampler_models.Model` summing the latent by hand


def mixture():
    base = sampler_models.mixture()
    y = base.data["y"]
    N = len(y)
    comp, obs = dg.Dim("comp", coords=["low", "mid", "high"]), dg.Dim("obs", size=N)

    def dg_model():
        m = dg.Model()
        logits = m.normal("logits", 0.0, 1.0, dims=(comp,))
        mu = m.normal("mu", dg.constant(sampler_models.MIXTURE_MEANS, dims=(comp,)), 1.0, dims=(comp,))
        sigma = m.halfnormal("sigma", 2.0, dims=(comp,))
        w = dg.exp(logits - dg.logsumexp(logits, "comp"))
        z = m.categorical("z", w, dim=comp, dims=(obs,), marginalize=True)
        m.observe("y", dg.dist.normal(mu.isel(comp=z), sigma.isel(comp=z)), data=y, dims=(obs,))
        return m

    def pymc_model():
        import pymc as pm
        import pymc_extras as pmx

        with pm.Model(coords={"comp": ["low", "mid", "high"], "obs": range(N)}) as model:
            logits = pm.Normal("logits", 0.0, 1.0, dims="comp")
            mu = pm.Normal("mu", sampler_models.MIXTURE_MEANS, 1.0, dims="comp")
            sigma = pm.HalfNormal("sigma", 2.0, dims="comp")
            z = pm.Categorical("z", p=pm.math.softmax(logits), dims="obs")
            pm.Normal("y", mu[z], sigma[z], observed=y, dims="obs")
        return pmx.marginalize(model, ["z"])

    return Marginal(
        "mixture", dg_model, pymc_model, base.numpy_fn, base.theta, ("logits", "mu", "sigma_log__"),
        ("mu", "sigma"), base.numba_fn, base,
    )  # fmt: skip


def change_point(first=1851, n_years=112, switch=1890, seed=7):
    rng = np.random.default_rng(seed)
    years = np.arange(first, first + n_years)
    counts = rng.poisson(np.where(years < switch, 3.0, 1.0))
    lower, upper = first + 1, first + n_years - 2  # tau: the first year at the late rate
    taus = np.arange(lower, upper + 1)
    early_mask = (years[None, :] < taus[:, None]).astype(float)  # (tau, year)
    log_fact = float(special.gammaln(counts + 1).sum())
    year = dg.Dim("year", coords=years)

    def numpy_fn(theta):
        le, ll = theta
        e, late = math.exp(le), math.exp(ll)
        per_e, per_l = counts * le - e, counts * ll - late  # log Poisson terms less log c!
        terms = early_mask @ per_e + (1 - early_mask) @ per_l - log_fact - math.log(len(taus))
        top = terms.max()
        lse = top + math.log(np.exp(terms - top).sum())
        resp = np.exp(terms - lse)
        prior = 2 * math.log(0.5) - 0.5 * e - 0.5 * late + le + ll  # Exponential(0.5), log transforms
        grad = np.array(
            [
                1 - 0.5 * e + resp @ (early_mask @ (counts - e)),
                1 - 0.5 * late + resp @ ((1 - early_mask) @ (counts - late)),
            ]
        )
        return prior + lse, grad

    def dg_model():
        m = dg.Model()
        tau = m.discrete_uniform("tau", lower, upper, marginalize=True)
        early, late = m.exponential("early", 0.5), m.exponential("late", 0.5)
        rate = dg.where(dg.constant(years, dims=(year,)) < tau, early, late)
        m.observe("disasters", dg.dist.poisson(rate), data=counts, dims=(year,))
        return m

    def pymc_model():
        import pymc as pm
        import pymc_extras as pmx

        with pm.Model() as model:
            tau = pm.DiscreteUniform("tau", lower, upper)
            early, late = pm.Exponential("early", 0.5), pm.Exponential("late", 0.5)
            pm.Poisson("disasters", pm.math.switch(years < tau, early, late), observed=counts)
        return pmx.marginalize(model, ["tau"])

    return Marginal(
        "change_point", dg_model, pymc_model, numpy_fn, np.array([0.9, -0.1]), ("early_log__", "late_log__"),
        ("early", "late"),
    )  # fmt: skip


MODELS = {"mixture": mixture, "change_point": change_point}


def implementations(model):
    """{label: theta -> (logp, grad)}, each with a `check` taking the dg.Model's layout."""
    m = model.dg_model()
    impls = {"dg m.marginalize": m.logp_fn()}
    if model.hand_logsumexp is not None:
        base = model.hand_logsumexp
        impls["dg hand logsumexp"] = base.flat("numba").bind(**base.data)
    if model.numba_fn is not None:
        impls["hand numba"] = model.numba_fn
    impls["pymc-extras numba"] = pymc_extras_function(model, m)
    return impls


def pymc_extras_function(model, m):
    """The marginal PyMC model's compiled logp + gradient (numba mode) on its own flat vector (built once)."""
    f = model.pymc_model().logp_dlogp_function(ravel_inputs=True, mode="NUMBA")
    f.set_extra_values({})
    order = [v.name for v in f._grad_vars]
    call = f._pytensor_function
    call.trust_input = True
    layout = dict(zip(m.layout.names, m.layout.slices))

    def point(theta):
        return {n: theta[layout[n]] for n in m.layout.names}

    cached = {}

    def pymc(theta):
        key = theta.tobytes()
        if key not in cached:
            cached.clear()
            cached[key] = sampler.in_order(point(theta), order)
        value, grad = call(cached[key])
        return float(value), grad

    def check(theta):
        value, grad = call(sampler.in_order(point(theta), order))
        return float(value), sampler.from_order(grad, order, point(theta))

    pymc.check = check
    return pymc


def check_agreement(model, impls):
    ref_value, ref_grad = model.numpy_fn(model.theta)
    scale = max(1.0, float(np.max(np.abs(ref_grad))))
    for label, fn in impls.items():
        value, grad = getattr(fn, "check", fn)(model.theta)
        if abs(value - ref_value) > RTOL * abs(ref_value):
            raise AssertionError(f"{model.name}: {label} logp {value!r} != hand NumPy's {ref_value!r}")
        worst = float(np.max(np.abs(np.asarray(grad) - ref_grad)))
        if worst > RTOL * scale:
            raise AssertionError(f"{model.name}: {label} gradient differs from hand NumPy's by {worst:.3g}")


_COMPILE = """
import json, os, sys, time, warnings
sys.path[:0] = [{here!r}, {root!r}]
warnings.simplefilter("ignore")

def cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system

import numpy as np
import marginal
which, name = {which!r}, {name!r}
model = marginal.MODELS[name]()
if which == "pymc":
    import pymc, pymc_extras
w1, c1 = time.perf_counter(), cpu()
if which == "pymc":  # the PyMC model, pymc_extras.marginalize, PyMC's numba compile
    mm = model.pymc_model()
    f = mm.logp_dlogp_function(ravel_inputs=True, mode="NUMBA")
    f.set_extra_values({{}})
    x = np.concatenate([np.ravel(v) for v in mm.initial_point().values()])
    call = lambda: f(x)
else:  # the dg.Model (its latent marginalized) and m.logp_fn() on numba
    fn = model.dg_model().logp_fn()
    call = lambda: fn(model.theta)
call()
w2, c2 = time.perf_counter(), cpu()
call()
w3, c3 = time.perf_counter(), cpu()
print(json.dumps(dict(wall=(w2 - w1) - (w3 - w2), cpu=(c2 - c1) - (c3 - c2))))
"""

_SAMPLE = """
import json, os, sys, time, warnings
sys.path[:0] = [{here!r}, {root!r}]
warnings.simplefilter("ignore")

def cpu():
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system

import numpy as np
import nutpie
import marginal
which, name = {which!r}, {name!r}
model = marginal.MODELS[name]()
if which == "pymc":
    import pymc, pymc_extras
w1, c1 = time.perf_counter(), cpu()
if which == "pymc":
    compiled = nutpie.compile_pymc_model(model.pymc_model())
    posterior = nutpie.sample(compiled, chains=4, tune=1000, draws=1000, cores=4, seed=1, progress_bar=False).posterior
else:
    posterior = model.dg_model().sample(draws=1000, tune=1000, chains=4, seed=1, cores=4).posterior
w2, c2 = time.perf_counter(), cpu()
means = {{n: np.asarray(posterior[n].mean(("chain", "draw"))).ravel().tolist() for n in model.summary}}
sds = {{n: np.asarray(posterior[n].std(("chain", "draw"))).ravel().tolist() for n in model.summary}}
print(json.dumps(dict(wall=w2 - w1, cpu=c2 - c1, means=means, sds=sds)))
"""


def fresh_pairs(names, template, repeats):
    """{(model, which): [(cold, warm) result dicts]} over `repeats` cold/warm pairs of fresh processes."""
    out = {}
    for name in names:
        for which in ("dg", "pymc"):
            out[name, which] = []
            for _ in range(repeats):
                with tempfile.TemporaryDirectory() as tmp:
                    env = dict(os.environ, DIMGRAPH_CACHE_DIR=tmp, PYTENSOR_FLAGS=f"base_compiledir={tmp}/pytensor",
                               NUMBA_CACHE_DIR=f"{tmp}/numba")  # fmt: skip
                    out[name, which].append([sampler.fresh(which, name, env, template) for _ in ("cold", "warm")])
            print(f"  {name} {which}: {out[name, which]}", flush=True)
    return out


def med(pairs, k, key):
    return statistics.median(p[k][key] for p in pairs)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--per-call", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--no-sample", action="store_true")
    parser.add_argument("--repeats", type=int, default=1, help="cold/warm process pairs per compile / sample row")
    args = parser.parse_args()
    import pymc
    import pymc_extras

    print(f"Python {sys.version.split()[0]}; pymc {pymc.__version__}, pymc-extras {pymc_extras.__version__}")
    results, labels = {}, []
    for name in args.models if args.per_call else ():
        model = MODELS[name]()
        impls = implementations(model)
        check_agreement(model, impls)
        print(f"{name}: {model.theta.size} parameters; every implementation agrees with hand NumPy to {RTOL:g}")
        results[name], _ = sampler.per_call(impls, model.theta, args.rounds)
        labels += [k for k in impls if k not in labels]
    if results:
        print("\n### Marginal logp + gradient per call, us (numba; medians of interleaved rounds, one process)\n")
        print("| model | " + " | ".join(labels) + " | dg / pymc-extras | dg / hand numba |")
        print("|---|" + "---:|" * (len(labels) + 2))
    for name, t in results.items():
        cells = [sampler.fmt_us(t[k]) if k in t else "" for k in labels]
        ratios = [f"{t['dg m.marginalize'] / t[k]:.2f}x" if k in t else "" for k in ("pymc-extras numba", "hand numba")]
        print(f"| {name} | " + " | ".join(cells + ratios) + " |")
    if not args.no_compile:
        times = fresh_pairs(args.models, _COMPILE, args.repeats)
        print("\n### Compile + first call, CPU s, cold / warm (fresh processes; definition and marginalization in)\n")
        print("| model | dg m.logp_fn() | pymc-extras + PyMC numba | cold ratio | warm ratio |")
        print("|---|---:|---:|---:|---:|")
        for name in args.models:
            d, p = times[name, "dg"], times[name, "pymc"]
            print(f"| {name} | {med(d, 0, 'cpu'):.2f} / {med(d, 1, 'cpu'):.2f} | {med(p, 0, 'cpu'):.2f} / "
                  f"{med(p, 1, 'cpu'):.2f} | {med(d, 0, 'cpu') / med(p, 0, 'cpu'):.2f}x | "
                  f"{med(d, 1, 'cpu') / med(p, 1, 'cpu'):.2f}x |")  # fmt: skip
    if not args.no_sample:
        times = fresh_pairs(args.models, _SAMPLE, args.repeats)
        print("\n### m.sample vs nutpie over pymc-extras' model: 4 chains x (1000 + 1000), compile included, wall s\n")
        print(
            "| model | dg cold / warm | pymc-extras + nutpie cold / warm | cold ratio | warm ratio | posterior means dg | pymc-extras |"
        )
        print("|---|---:|---:|---:|---:|---|---|")
        for name in args.models:
            d, p = times[name, "dg"], times[name, "pymc"]

            def means(pairs):
                return "; ".join(
                    f"{n} " + ", ".join(f"{m:.3f}+-{s:.3f}" for m, s in zip(pairs[0][0]["means"][n], pairs[0][0]["sds"][n]))
                    for n in pairs[0][0]["means"]
                )  # fmt: skip

            print(f"| {name} | {med(d, 0, 'wall'):.2f} / {med(d, 1, 'wall'):.2f} | {med(p, 0, 'wall'):.2f} / "
                  f"{med(p, 1, 'wall'):.2f} | {med(d, 0, 'wall') / med(p, 0, 'wall'):.2f}x | "
                  f"{med(d, 1, 'wall') / med(p, 1, 'wall'):.2f}x | {means(d)} | {means(p)} |")  # fmt: skip


if __name__ == "__main__":
    main()
