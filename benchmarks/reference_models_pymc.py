"""The LKJ varying-effects and mixture reference models (tests/model/test_reference_models.py) against PyMC 6.

Two environments, two steps: dimgraph writes the models' data, one unconstrained
point and its log densities (with and without Jacobians); PyMC (6.4, `pymc.dims`)
builds the same models (the versions printed in docs/models.md) and evaluates
them at that point. PyMC's two-point simplex is softmax([y, -y]) where ours is
softmax([y, 0]): it gets y / 2 (same weights; its Jacobian is log 2 larger).

    python benchmarks/reference_models_pymc.py --dump /tmp/ref.npz          # dimgraph's environment
    .venv-pymc/bin/python benchmarks/reference_models_pymc.py --pymc /tmp/ref.npz   # PyMC's (Python >= 3.12)
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def dump(path):
    sys.path.insert(0, ROOT)
    from tests.model import test_reference_models as ref

    out = {"group_idx": ref.GROUP_IDX, "x": ref.X_EFFECTS, "y": ref.Y_EFFECTS, "y_mix": ref.Y_MIX}
    for name, build in (("lkj", ref.lkj_effects_model), ("mix", ref.mixture_model)):
        m = build()
        theta = np.random.default_rng(5).uniform(-1, 1, m.layout.size)
        out[f"{name}_theta"] = theta
        out[f"{name}_logp"] = m.logp_fn("python")(theta)[0]
        out[f"{name}_logp_nojac"] = m.logp_fn("python", jacobian=False)(theta)[0]
    np.savez(path, **out)


def pymc_models(d):
    import pymc as pm
    import pymc.dims as pmd

    group_idx, x_obs, y, effects = d["group_idx"], d["x"], d["y"], ["intercept", "x1", "x2"]
    with pm.Model(coords={"effect": effects, "effect_": effects, "group": range(30), "obs": range(600)}) as lkj:
        group_idx_ = pmd.Data("group_idx", group_idx, dims="obs")
        x_ = pmd.Data("x", x_obs, dims=("obs", "effect"))
        chol, _, _ = pm.LKJCholeskyCov("chol", n=3, eta=2.0, sd_dist=pm.Exponential.dist(1.0))
        chol = pmd.as_xtensor(chol, dims=("effect", "effect_"))
        mu = pmd.Normal("mu", 0.0, 5.0, dims="effect")
        z = pmd.Normal("z", 0.0, 1.0, dims=("group", "effect_"))
        beta = pmd.Deterministic("beta", mu + (chol * z).sum("effect_"))
        sigma = pmd.HalfNormal("sigma", 1.0)
        mean = (beta.isel(group=group_idx_) * x_).sum("effect")
        pmd.Normal("y", mean, sigma, observed=pmd.as_xtensor(y, dims=("obs",)), dims="obs")

    y = d["y_mix"]
    with pm.Model(coords={"comp": ["low", "high"], "obs": range(200)}) as mix:
        w = pmd.Dirichlet("w", pmd.as_xtensor(np.ones(2), dims=("comp",)), core_dims="comp")
        mu = pm.Normal("mu", 0.0, 3.0, dims="comp", transform=pm.distributions.transforms.ordered)
        sigma = pmd.HalfNormal("sigma", 2.0, dims="comp")
        pm.NormalMixture("y", w=w.values, mu=mu, sigma=sigma.values, observed=y, dims="obs")
    return {"lkj": lkj, "mix": mix}


def compare(path):
    d = np.load(path)
    for name, model in pymc_models(d).items():
        point, start, theta = {}, 0, d[f"{name}_theta"]
        for v in model.value_vars:
            shape = model.initial_point()[v.name].shape
            size = int(np.prod(shape))
            point[v.name] = theta[start : start + size].reshape(shape) / (2 if v.name == "w_simplex__" else 1)
            start += size
        for jacobian, key in ((True, "logp"), (False, "logp_nojac")):
            theirs, ours = float(model.compile_logp(jacobian=jacobian)(point)), float(d[f"{name}_{key}"])
            if jacobian and "w_simplex__" in point:
                theirs -= np.log(2.0)  # the Jacobian of y -> y / 2
            print(
                f"{name:4s} jacobian={jacobian!s:5s} PyMC {theirs:.10f} dimgraph {ours:.10f} "
                f"relative difference {abs(theirs - ours) / abs(ours):.1e}"
            )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", metavar="NPZ", help="write the data, point and dimgraph's log densities")
    parser.add_argument("--pymc", metavar="NPZ", help="evaluate the PyMC versions at the dumped point")
    args = parser.parse_args()
    if args.dump:
        dump(args.dump)
    if args.pymc:
        compare(args.pymc)
