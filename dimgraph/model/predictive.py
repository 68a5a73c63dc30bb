"""Draws from a model's definition: the prior (ancestral, over a `draw` dim) and the posterior predictive.

Prior: each variable is drawn in definition order with `draw` as an extra dim,
its distribution's parameters rebuilt on the draws of the variables before it
(`vectorize_graph` swaps each value input for its draws), the RNG state threaded
from one draw to the next: one compiled call gives every variable.
Posterior predictive and pointwise log-likelihoods are compiled functions of
the constrained values, mapped over a posterior's (chain, draw) dims
(`map_extra_dims`): one call for every draw, each element drawing anew.
The observed data are inputs of the draws too: a dim only they carry (an
`obs` Dim without a size) takes its length from the current data.
"""

from __future__ import annotations

import warnings

from dimgraph.compile.function import function
from dimgraph.errors import NoDrawsError
from dimgraph.core.random import rng_state, seed_state
from dimgraph.labeled.dims import Dim
from dimgraph.labeled.vectorize import vectorize_graph
from dimgraph.model import results


def _named(var, name, dims):
    out = var.transpose(*dims)
    out.name = name
    return out


def _draw(state, entry, extra, replace, dims):
    """(next state, draws of `entry` on `extra` + its dims) with the earlier variables' values replaced."""
    try:
        nxt, x = entry.dist.draw(state, extra_dims=extra + entry.extra_dims)
    except NoDrawsError as err:
        kind = "observed" if hasattr(entry, "var") else "rv"
        raise NoDrawsError(f"{kind} {entry.name!r}: {err}") from None
    if replace:
        x, nxt = vectorize_graph([x, nxt], replace, aligned=extra)
    return nxt, x.transpose(*dims)


def _prior_function(model, draws, backend):
    sample = Dim("draw", size=draws)
    state = start = rng_state("prior_state")
    replace, outputs = {}, {}
    for v in list(model._free.values()) + list(model._observed.values()):
        value = v.value if v.name in model._free else v.var
        state, x = _draw(state, v, (sample,), replace, (sample, *v.dims))
        replace[value] = x
        outputs[v.name] = x
    dets = vectorize_graph(list(model._deterministics.values()), replace, aligned=(sample,)) if model._deterministics else []
    for name, d in zip(model._deterministics, dets):
        outputs[name] = d if sample in d.dims else d.expand_dims(sample)
    named = [_named(x, name, (sample, *(d for d in x.dims if d != sample))) for name, x in outputs.items()]
    return function([start] + model._inputs(), named, backend=backend, output="dataset")


def prior(model, draws, seed, backend):
    if model.potentials:
        warnings.warn(
            f"prior_predictive: the potentials {model.potentials} are ignored: the draws come from the distributions "
            "alone, as PyMC's sample_prior_predictive draws them", UserWarning, stacklevel=3)
    fn = model._function(("prior", draws, backend), lambda: _prior_function(model, draws, backend))
    ds = results.with_chain(fn(seed_state(seed), *model._data_arrays()))
    latent = list(model._free) + list(model._deterministics)
    groups = {"prior": ds[latent], "prior_predictive": ds[list(model._observed)]}
    return results.container({**groups, **data_groups(model)})


def data_groups(model):
    import xarray as xr

    groups = {}
    if model._observed:
        groups["observed_data"] = xr.Dataset({n: v.as_dataarray() for n, v in model._observed.items()})
    if model._data:
        groups["constant_data"] = xr.Dataset({n: v.as_dataarray() for n, v in model._data.items()})
    return groups


def _posterior_inputs(model):
    return [v.value for v in model._free.values()] + [v.var for v in model._data.values()]


def _posterior_values(model, posterior):
    missing = [n for n in model._free if n not in posterior]
    if missing:
        raise KeyError(f"the posterior lacks the random variables {missing}; it has {list(posterior.data_vars)}")
    return [posterior[n] for n in model._free] + [v.array for v in model._data.values()]


def _predictive_function(model, backend):
    state = start = rng_state("predictive_state")
    replace, named = {}, []
    for v in model._observed.values():
        state, x = _draw(state, v, (), replace, v.dims)
        replace[v.var] = x
        named.append(_named(x, v.name, v.dims))
    inputs = _posterior_inputs(model) + [v.var for v in model._observed.values()] + [start]
    return function(inputs, named, backend=backend, map_extra_dims=True, output="dataset")


def posterior(model, idata, seed, backend, extend):
    if not model._observed:
        raise ValueError("posterior_predictive: the model has no observed variables")
    post = results.group(idata, "posterior")
    fn = model._function(("posterior_predictive", backend), lambda: _predictive_function(model, backend))
    draws = fn(*_posterior_values(model, post), *[v.array for v in model._observed.values()], seed_state(seed))
    groups = {"posterior_predictive": draws.assign_coords({k: post.coords[k] for k in ("chain", "draw") if k in post.coords})}
    groups.update(data_groups(model))
    if extend:
        return results.add_groups(idata, groups)
    return results.container(groups)


def _log_likelihood_function(model, backend):
    named = [_named(v.dist.logp(v.var), v.name, [d for d in v.dims if d in v.dist.logp(v.var).dims])
             for v in model._observed.values()]
    inputs = _posterior_inputs(model) + [v.var for v in model._observed.values()]
    return function(inputs, named, backend=backend, map_extra_dims=True, output="dataset")


def log_likelihood(model, posterior, backend):
    fn = model._function(("log_likelihood", backend), lambda: _log_likelihood_function(model, backend))
    out = fn(*_posterior_values(model, posterior), *[v.array for v in model._observed.values()])
    return out.assign_coords({k: posterior.coords[k] for k in ("chain", "draw") if k in posterior.coords})
