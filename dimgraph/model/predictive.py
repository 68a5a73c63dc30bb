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
from dimgraph.core.random import rng_state, seed_state
from dimgraph.errors import NoDrawsError
from dimgraph.labeled.dims import Dim
from dimgraph.labeled.vectorize import vectorize_graph
from dimgraph.model import marginal, results


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


def _prior_function(entries, draws, backend):
    sample = Dim("draw", size=draws)
    state = start = rng_state("prior_state")
    replace, outputs = {}, {}
    for v, value in [(v, v.value) for v in entries.free] + [(v, v.var) for v in entries.observed]:
        state, x = _draw(state, v, (sample,), replace, (sample, *v.dims))
        replace[value] = x
        outputs[v.name] = x
    dets = (
        vectorize_graph([d.value for d in entries.deterministics], replace, aligned=(sample,))
        if entries.deterministics
        else []
    )
    for entry, d in zip(entries.deterministics, dets):
        outputs[entry.name] = d if sample in d.dims else d.expand_dims(sample)
    named = [_named(x, name, (sample, *(d for d in x.dims if d != sample))) for name, x in outputs.items()]
    return function([start] + entries.inputs(), named, backend=backend, output="dataset")


def prior(model, draws, seed, backend):
    if model.potentials:
        warnings.warn(
            f"prior_predictive: the potentials {model.potentials} are ignored: the draws come from the distributions "
            "alone, as PyMC's sample_prior_predictive draws them",
            UserWarning,
            stacklevel=3,
        )
    entries = model.entries
    fn = model.compiled(("prior", draws, backend), lambda: _prior_function(entries, draws, backend))
    ds = results.with_chain(fn(seed_state(seed), *entries.arrays()))
    latent = [v.name for v in entries.free + entries.deterministics]
    groups = {"prior": ds[latent], "prior_predictive": ds[[v.name for v in entries.observed]]}
    return results.container({**groups, **data_groups(entries)})


def data_groups(entries):
    import xarray as xr  # not at import time: `import dimgraph` loads no xarray

    groups = {}
    if entries.observed:
        groups["observed_data"] = xr.Dataset({v.name: v.as_dataarray() for v in entries.observed})
    if entries.data:
        groups["constant_data"] = xr.Dataset({v.name: v.as_dataarray() for v in entries.data})
    return groups


def _posterior_inputs(entries, skip=()):
    """The free variables' values (but those named in `skip`) and the data inputs."""
    return [v.value for v in entries.free if v.name not in skip] + [v.var for v in entries.data]


def _posterior_values(entries, posterior, skip=()):
    names = [v.name for v in entries.free if v.name not in skip]
    missing = [n for n in names if n not in posterior]
    if missing:
        raise KeyError(f"the posterior lacks the random variables {missing}; it has {list(posterior.data_vars)}")
    return [posterior[n] for n in names] + [v.array for v in entries.data]


def _predictive_function(entries, backend):
    state = start = rng_state("predictive_state")
    replace, named = {}, []
    for v in entries.observed:
        state, x = _draw(state, v, (), replace, v.dims)
        replace[v.var] = x
        named.append(_named(x, v.name, v.dims))
    inputs = _posterior_inputs(entries) + [v.var for v in entries.observed] + [start]
    return function(inputs, named, backend=backend, map_extra_dims=True, output="dataset")


def posterior(model, idata, seed, backend, extend):
    entries = model.entries
    if not entries.observed:
        raise ValueError("posterior_predictive: the model has no observed variables")
    post = results.group(idata, "posterior")
    if any(n not in post for n in model.marginalized):  # the latents drawn from their conditionals first
        post = model.recover(post, seed=seed, backend=backend)
    fn = model.compiled(("posterior_predictive", backend), lambda: _predictive_function(entries, backend))
    draws = fn(*_posterior_values(entries, post), *[v.array for v in entries.observed], seed_state(seed))
    groups = {
        "posterior_predictive": draws.assign_coords({k: post.coords[k] for k in ("chain", "draw") if k in post.coords})
    }
    groups.update(data_groups(entries))
    if extend:
        return results.add_groups(idata, groups)
    return results.container(groups)


def _log_likelihood_function(model, backend):
    entries = model.entries
    _, found = marginal.split_terms(model)
    taken = {n for g in found for n in g.terms}
    named = [
        _named(v.dist.logp(v.var), v.name, [d for d in v.dims if d in v.dist.logp(v.var).dims])
        for v in entries.observed
        if v.name not in taken
    ]
    named += [
        _named(g.marginal(), marginal.pointwise_name(model, g), g.dims)
        for g in found
        if marginal.pointwise_name(model, g)
    ]
    inputs = _posterior_inputs(entries, model.marginalized) + [v.var for v in entries.observed]
    return function(inputs, named, backend=backend, map_extra_dims=True, output="dataset")


def log_likelihood(model, posterior, backend):
    entries = model.entries
    fn = model.compiled(("log_likelihood", backend), lambda: _log_likelihood_function(model, backend))
    out = fn(*_posterior_values(entries, posterior, model.marginalized), *[v.array for v in entries.observed])
    return out.assign_coords({k: posterior.coords[k] for k in ("chain", "draw") if k in posterior.coords})
