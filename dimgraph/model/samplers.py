"""Bridges from a model's compiled log density to external samplers (optional: `pip install dimgraph[samplers]`).

nutpie: its public `nutpie.compiled_pyfunc.from_pyfunc` takes a logp-and-gradient function on the
flat unconstrained vector (the model's `LogpFunction`: the data already in
dims order, no checks per call, so each call goes straight to the compiled kernels) and
an expand function per draw; ours keeps the flat vector as it is, and the
constrained values and deterministics of every draw come after sampling from
one compiled call mapped over (chain, draw). Chains run in nutpie's threads;
the numba kernels release the GIL while they run.
"""

from __future__ import annotations

import numpy as np

from dimgraph.model import results
from dimgraph.model.predictive import data_groups

SAMPLERS = ("nutpie",)


def sample(model, sampler, draws, tune, chains, seed, backend, **kwargs):
    if sampler not in SAMPLERS:
        raise ValueError(f"sample: unknown sampler {sampler!r}; the samplers are {list(SAMPLERS)}")
    fn = model.logp_fn(backend)
    start = model.initial_point(jitter=0)
    model.check_point(start, backend)  # bad parameters or data: an error before sampling
    fn(start)  # the first call (kernel compiles, the fast path switched on) in one thread, before the chains'
    theta, stats = _nutpie(model, fn, draws, tune, chains, seed, **kwargs)
    posterior = model.constrain(theta, backend, batch_dims=("chain", "draw"))
    posterior = posterior.assign_coords(chain=np.arange(theta.shape[0]), draw=np.arange(theta.shape[1]))
    groups = {"posterior": posterior, "sample_stats": stats}
    if model._observed:
        groups["log_likelihood"] = model.log_likelihood(posterior, backend)
    groups.update(data_groups(model))
    return results.container(groups)


def _nutpie(model, fn, draws, tune, chains, seed, cores=None, progress_bar=False, **kwargs):
    try:
        import nutpie
        from nutpie.compiled_pyfunc import from_pyfunc
    except ImportError:
        raise ImportError("sample: sampler 'nutpie' needs the nutpie package: pip install 'dimgraph[samplers]'") from None
    size = fn.size

    def make_logp_fn():
        return lambda x, **_: fn(x)  # the model's data is bound in `fn`, in dims order

    def make_expand_fn(*_):
        return lambda x, **__: {"theta": np.array(x, dtype=np.float64)}

    compiled = from_pyfunc(
        size, make_logp_fn, make_expand_fn, [np.dtype("float64")], [(size,)], ["theta"],
        make_initial_point_fn=lambda s: _start(model, fn, int(s)),
    )
    if seed is None:  # fresh entropy, as NumPy's
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    trace = nutpie.sample(
        compiled, draws=draws, tune=tune, chains=chains, seed=seed, cores=cores or chains,
        progress_bar=progress_bar, save_warmup=False, **kwargs,
    )
    return np.asarray(trace.posterior["theta"].values), trace.sample_stats


def _start(model, fn, seed, tries=10):
    """A chain's start: the jittered point of `seed` where the log density is finite, else (after `tries`)
    the unjittered one, which `sample` checked."""
    rng = np.random.default_rng(seed)
    for _ in range(tries):
        theta = model.initial_point(seed=rng)
        if np.isfinite(fn(theta)[0]):
            return theta
    return model.initial_point(jitter=0)
