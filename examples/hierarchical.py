"""A hierarchical model with labeled indexing: per-observation group effects and selections by country name.

`mu.isel(group=group_idx)` is xarray's vectorized indexing (the result lives on
`obs`); `sel` resolves country names to positions when the graph is built, so
the compiled function only gathers by position.
"""

import numpy as np
import xarray as xr

import dimgraph as dg

group = dg.Dim("group", coords=["north", "south", "east"])
country = dg.Dim("country", coords=["USA", "Italy", "Chile", "Peru"])
obs = dg.Dim("obs")  # the number of observations comes with the data

mu = dg.labeled("mu", dims=(group,))  # one effect per group
beta = dg.labeled("beta", dims=(country,))  # one effect per country
sigma = dg.labeled("sigma", dims=())
group_idx = dg.labeled("group_idx", dims=(obs,), dtype="int64")  # each observation's group (a position)
y = dg.labeled("y", dims=(obs,))

# Each observation's country, by name: a constant of labels, resolved to positions now.
countries = dg.constant(np.array(["USA", "Chile", "Chile", "Peru", "Italy", "USA"]), dims=(obs,))

pred = mu.isel(group=group_idx) + beta.sel(country=countries)  # dims (obs,)
logp = (-0.5 * ((y - pred) / sigma) ** 2 - dg.log(sigma)).sum()
americas = beta.sel(country=["USA", "Chile", "Peru"]).mean()  # a list of labels keeps the dim
beta_no_italy = beta.loc["Italy"].set(0.0)  # a functional update: the whole of beta

dg.dprint(pred)
print("lowered:", dg.lower(pred))  # positions only: the kernel never sees a label

f = dg.function([mu, beta, sigma, group_idx, y], [pred, logp, americas, beta_no_italy])
rng = np.random.default_rng(0)
mu_d = xr.DataArray(rng.normal(size=3), dims="group", coords={"group": group.coords})
beta_d = xr.DataArray(rng.normal(size=4), dims="country", coords={"country": country.coords})
idx_d = xr.DataArray([0, 2, 1, 1, 0, 2], dims="obs")
y_d = xr.DataArray(rng.normal(size=6), dims="obs")
pred_v, logp_v, americas_v, beta_v = f(mu_d, beta_d, 1.5, idx_d, y_d)

# The same in xarray, eagerly:
want = mu_d.isel(group=idx_d) + beta_d.sel(
    country=xr.DataArray(["USA", "Chile", "Chile", "Peru", "Italy", "USA"], dims="obs")
)
np.testing.assert_allclose(pred_v.values, want.values)
np.testing.assert_allclose(logp_v.values, (-0.5 * ((y_d - want) / 1.5) ** 2 - np.log(1.5)).sum().values)
print(pred_v)
print("americas:", float(americas_v), "beta without Italy:", beta_v.values.tolist())

try:
    beta.sel(country=["USA", "Spain"])
except KeyError as err:
    print("KeyError:", err)
