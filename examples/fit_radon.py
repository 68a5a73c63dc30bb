"""A radon-style hierarchical model, used as a modeler would: MAP with scipy through one flat
vector, a posterior predictive over (chain, draw), a Dataset in, DataArrays out, a picture of the
compiled graph, and the compiled model sent to worker processes.

Houses sit in counties (string coords); each county has its own intercept, drawn
around a state-wide mean (non-centered: `a = mu_a + sigma_a * z`), and a first-floor
measurement reads lower than a basement one. The data are simulated here.
"""

import functools
import multiprocessing
import pathlib
import tempfile

import numpy as np
import pandas as pd
import xarray as xr
from scipy import optimize

import dimgraph as dg

NAMES = ["AITKIN", "ANOKA", "BECKER", "BELTRAMI", "BENTON", "BIG STONE", "BLUE EARTH", "BROWN"]
county = dg.Dim("county", coords=NAMES)
house = dg.Dim("house")  # the number of houses comes with the data

mu_a, log_sigma_a = dg.labeled("mu_a", dims=()), dg.labeled("log_sigma_a", dims=())
z = dg.labeled("z", dims=(county,))  # standardized county offsets
b, log_sigma_y = dg.labeled("b", dims=()), dg.labeled("log_sigma_y", dims=())
county_idx = dg.labeled("county_idx", dims=(house,), dtype="int64")  # each house's county, a position
floor = dg.labeled("floor", dims=(house,))
y = dg.labeled("log_radon", dims=(house,))
PARAMS = [mu_a, log_sigma_a, z, b, log_sigma_y]


def normal_logp(x, mean, sd):
    return -0.5 * ((x - mean) / sd) ** 2


a = (mu_a + dg.exp(log_sigma_a) * z).rename("a")  # dims (county,)
y_hat = (a.isel(county=county_idx) + b * floor).rename("y_hat")  # dims (house,)
logp = (
    (normal_logp(y, y_hat, dg.exp(log_sigma_y)) - log_sigma_y).sum()
    + normal_logp(z, 0.0, 1.0).sum()
    + normal_logp(mu_a, 0.0, 2.0)
    + normal_logp(log_sigma_a, -1.0, 0.5)  # county intercepts spread by about exp(-1) = 0.37
    + normal_logp(b, 0.0, 1.0)
    + normal_logp(log_sigma_y, 0.0, 1.0)
).rename("logp")


def simulate(rng, n=300):
    true_a = rng.normal(1.5, 0.4, size=len(NAMES))
    names = rng.choice(NAMES, size=n)
    idx = pd.Index(NAMES).get_indexer(names)
    floor_d = rng.integers(0, 2, size=n).astype(float)
    return xr.Dataset(
        {
            "county_idx": ("house", idx),
            "floor": ("house", floor_d),
            "log_radon": ("house", true_a[idx] - 0.7 * floor_d + rng.normal(0, 0.6, size=n)),
        },
        coords={"county_name": ("house", names)},
    )


def main():
    rng = np.random.default_rng(42)
    data = simulate(rng)

    # MAP: scipy on one flat float64 vector; the gradient comes with the value.
    neg_logp = dg.flat_value_and_grad(-logp, PARAMS, inputs=[county_idx, floor, y])
    objective = functools.partial(neg_logp, **data.data_vars)  # data by name
    result = optimize.minimize(objective, np.zeros(neg_logp.size), jac=True, method="BFGS")
    fit = neg_logp.unravel(result.x)  # named DataArrays; z carries the county names
    print(f"MAP in {result.nit} BFGS steps; floor effect b = {float(fit['b']):.2f} (simulated: -0.70)")

    # A Dataset fills the data inputs by name; the parameters come by keyword.
    logp_fn = dg.function(PARAMS + [county_idx, floor, y], [logp, a])
    logp_map, a_map = logp_fn(data, **fit)
    print(f"logp at the MAP: {float(logp_map):.2f}; county intercepts:")
    print(a_map.to_series().round(2).to_string())

    # A picture of the compiled model: Graphviz DOT text (in a notebook, `dg.to_dot(logp_fn)` shows
    # itself as SVG when the graphviz package is installed).
    picture = dg.to_dot(logp_fn)
    path = pathlib.Path(tempfile.gettempdir()) / "fit_radon.dot"
    path.write_text(picture)
    print(f"the compiled graph as a picture: {path} ({picture.count(' -> ')} edges; dot -Tsvg renders it)")

    # Posterior predictive over (chain, draw). Stand-in posterior: the Laplace approximation at the
    # MAP (a sampler would give real draws), its Hessian the finite-difference Jacobian of the gradient.
    def grad_at(theta):
        return objective(theta)[1]

    eye = np.eye(neg_logp.size)
    hessian = np.array([(grad_at(result.x + 1e-5 * e) - grad_at(result.x - 1e-5 * e)) / 2e-5 for e in eye])
    draws = rng.multivariate_normal(result.x, np.linalg.inv((hessian + hessian.T) / 2), size=(2, 250))
    posterior = neg_logp.unravel(draws, batch_dims=("chain", "draw"))  # DataArrays (chain, draw, ...)
    predict = dg.function(PARAMS + [county_idx, floor], y_hat, map_extra_dims=True)  # maps over chain, draw
    pred = predict(*(posterior[p.name] for p in PARAMS), data.county_idx, data.floor)  # (chain, draw, house)
    pred = pred.assign_coords(county_name=data.county_name)
    summary = xr.Dataset({
        "predicted": pred.mean(("chain", "draw")).groupby("county_name").mean(),
        "observed": data.log_radon.groupby("county_name").mean(),
    })  # fmt: skip
    print(summary.to_dataframe().round(2).to_string())

    # The compiled objective pickles: worker processes get the graph and load the compiled code.
    starts = [result.x + rng.normal(0, 0.1, neg_logp.size) for _ in range(4)]
    with multiprocessing.get_context("spawn").Pool(2) as pool:  # e.g. one restart or one chain per process
        values = pool.map(objective, starts)
    print("-logp at 4 jittered starts, from 2 worker processes:", [round(v, 1) for v, _ in values])


if __name__ == "__main__":
    main()
