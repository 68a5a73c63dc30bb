"""Quickstart: named dims in, a compiled function, a DataArray out (and a peek at the positional layer)."""

import numpy as np
import xarray as xr

import dimgraph as dg

# Dims are values: a name, and a size or coords. A new dim enters a graph only as a Dim object.
country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
age = dg.Dim("age", coords=[20, 30, 40, 50])
obs = dg.Dim("obs")  # size known only when data arrives

country_effect = dg.labeled("country_effect", dims=(country,))
age_effect = dg.labeled("age_effect", dims=(age,))
effect = country_effect + age_effect  # broadcast by name: dims (country, age)
print("effect:", effect)

# A per-observation log-likelihood, reduced over the observations.
y = dg.labeled("y", dims=(obs, country))
loglik = (-0.5 * (y - effect.mean("age")) ** 2).sum("obs")
dg.dprint(loglik)

f = dg.function([country_effect, age_effect, y], [effect, loglik])
eff, ll = f(
    xr.DataArray([1.0, 2.0, 3.0], dims="country", coords={"country": ["USA", "Italy", "Chile"]}),
    np.array([0.0, 0.1, 0.2, 0.3]),  # a NumPy array in declared dim order works too
    xr.DataArray(np.ones((2, 3)), dims=("obs", "country"), coords={"obs": ["a", "b"]}).T,  # transposed by name
)
print(eff)
print(ll.sel(country="Italy").item())

try:
    f(np.zeros(3), np.zeros(4), xr.DataArray(np.ones((2, 2)), dims=("obs", "country")))
except dg.InputError as err:
    print("InputError:", err)

# The positional layer underneath: what the labeled graph lowers to (dims became axes).
positional = dg.lower(effect)
print("lowered:", positional, "shape", positional.type.shape)
t = dg.tensor("t", shape=(None, 3))
print(dg.function([t], dg.logsumexp(t, axis=1))(np.zeros((2, 3))))
