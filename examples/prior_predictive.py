"""The hierarchical model with library log densities: simulate from the prior, fit by MAP, predict.

1. Prior predictive: `dg.rng` draws the group effects, the noise scale and a
   data set, all labeled (observations on `obs`, groups by name).
2. MAP: the log posterior is written with `dg.dist.<name>(...).logp(...)`;
   scipy minimizes it with the compiled gradient (unconstrained log sigma).
3. Posterior predictive: new observations drawn around the MAP fit over a
   `draw` dim, returned as DataArrays with coords.
"""

import numpy as np
import xarray as xr
from scipy.optimize import minimize

import dimgraph as dg

group = dg.Dim("group", coords=["north", "south", "east", "west"])
obs = dg.Dim("obs", size=200)
draw = dg.Dim("draw", size=500)
rng = dg.rng(2026)

# --- 1. simulate one data set from the prior
mu0 = rng.normal(0.0, 2.0)  # the grand mean, dims ()
mu = rng.normal(mu0, 1.0, extra_dims=(group,))  # the group effects, dims (group,)
sigma = rng.halfnormal(1.0)
group_idx = rng.categorical(dg.constant(np.full(4, 0.25), dims=(group,)), dim=group, extra_dims=(obs,))
y = rng.normal(mu.isel(group=group_idx), sigma)  # dims (obs,)
true_mu, true_sigma, idx, data = dg.function([], [mu, sigma, group_idx, y])()
print("true group effects:", true_mu.round(2).values.tolist(), "sigma:", round(float(true_sigma), 3))

# --- 2. MAP with library log densities
mu0_v = dg.labeled("mu0", dims=())
mu_v = dg.labeled("mu", dims=(group,))
log_sigma = dg.labeled("log_sigma", dims=())
idx_v = dg.labeled("group_idx", dims=(obs,), dtype="int64")
y_v = dg.labeled("y", dims=(obs,))
sigma_v = dg.exp(log_sigma)
logp = (
    dg.dist.normal(0.0, 2.0).logp(mu0_v)
    + dg.dist.normal(mu0_v, 1.0).logp(mu_v).sum()
    + dg.dist.halfnormal(1.0).logp(sigma_v)
    + log_sigma  # the Jacobian of sigma = exp(log_sigma)
    + dg.dist.normal(mu_v.isel(group=idx_v), sigma_v).logp(y_v).sum()
)
value, grads = dg.value_and_grad(-logp, [mu0_v, mu_v, log_sigma])
f = dg.function([mu0_v, mu_v, log_sigma, idx_v, y_v], [value, *grads])


def objective(theta):
    v, g0, g, gs = f(theta[0], theta[1:5], theta[5], idx, data)
    return float(v), np.concatenate([[float(g0)], g.values, [float(gs)]])


fit = minimize(objective, np.zeros(6), jac=True, method="L-BFGS-B")
map_mu = xr.DataArray(fit.x[1:5], dims="group", coords={"group": group.coords})
map_sigma = float(np.exp(fit.x[5]))
print("MAP group effects: ", map_mu.round(2).values.tolist(), "sigma:", round(map_sigma, 3))

# --- 3. posterior predictive draws (around the MAP point) over `draw`, with coords
mu_in = dg.labeled("mu", dims=(group,))
sigma_in = dg.labeled("sigma", dims=())
predictive = rng.normal(mu_in, sigma_in, extra_dims=(draw,))  # dims (draw, group)
pp = dg.function([mu_in, sigma_in], predictive)(map_mu, map_sigma)
print(pp.dims, pp.sizes)
print("predictive means by group:", pp.mean("draw").round(2).values.tolist())
observed = xr.DataArray(data.values, dims="obs").groupby(xr.DataArray(group.coords[idx.values], dims="obs")).mean()
print("observed means by group:  ", observed.sel(group=list(group.coords)).round(2).values.tolist())
assert np.allclose(pp.mean("draw"), map_mu, atol=5 * map_sigma / np.sqrt(draw.size))
