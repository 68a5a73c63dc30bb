"""Bridges from a model's compiled log density to external samplers (optional: `pip install dimgraph[samplers]`).

nutpie: its public `nutpie.compiled_pyfunc.from_pyfunc` takes a logp-and-gradient function on the
flat unconstrained vector (the model's `LogpFunction`: the data already in
dims order, no checks per call, so each call goes straight to the compiled kernels) and
an expand function per draw; ours keeps the flat vector as it is, and the
constrained values and deterministics of every draw come after sampling from
one compiled call mapped over (chain, draw). Chains run in nutpie's threads;
the numba kernels release the GIL while they run.
blackjax: NUTS on the jax backend's `jax_fn` of the log density (JAX
differentiates it), window adaptation per chain, then all chains' draws in one
vmapped `jax.lax.scan`.
"""

from __future__ import annotations

import numpy as np

from dimgraph.model import results
from dimgraph.model.predictive import data_groups

SAMPLERS = ("nutpie", "blackjax")


def sample(model, sampler, draws, tune, chains, seed, backend, **kwargs):
    if sampler not in SAMPLERS:
        raise ValueError(f"sample: unknown sampler {sampler!r}; the samplers are {list(SAMPLERS)}")
    if sampler == "blackjax" and backend not in (None, "jax"):
        raise ValueError(f"sample: sampler 'blackjax' runs the jax backend's function, got backend={backend!r}")
    backend = "jax" if sampler == "blackjax" else backend
    fn = model.logp_fn(backend)
    start = model.initial_point(jitter=0)
    model.check_point(start, backend)  # bad parameters or data: an error before sampling
    fn(start)  # the first call (kernel compiles, the fast path switched on) in one thread, before the chains'
    run = _nutpie if sampler == "nutpie" else _blackjax
    theta, stats = run(model, fn, draws, tune, chains, seed, **kwargs)
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


def _blackjax(model, fn, draws, tune, chains, seed, target_accept=0.8):
    """NUTS from blackjax on `jax_fn` of the model's log density: window adaptation per chain, then the
    chains' draws in one `jax.lax.scan` vmapped over chains, all under 64-bit JAX."""
    import xarray as xr

    try:
        import blackjax
        import jax
    except ImportError:
        raise ImportError("sample: sampler 'blackjax' needs blackjax and jax: pip install blackjax") from None
    from dimgraph.compile.function import function

    layout, data = model.layout, model._data_arrays()
    graph = model._function(
        ("blackjax logp",),
        lambda: function([v.free for v in model.sampled] + model._inputs(), model.logp().to_positional(), backend="jax"),
    )
    jax_fn = graph.jax_fn

    def logdensity(theta):
        return jax_fn(*[theta[where].reshape(shape) for where, shape in zip(layout.slices, layout.shapes)], *data)

    if seed is None:  # fresh entropy, as NumPy's
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    with jax.enable_x64(True):
        keys = jax.random.split(jax.random.key(int(seed)), 2 * chains)
        adapt = blackjax.window_adaptation(blackjax.nuts, logdensity, target_acceptance_rate=target_accept)
        states, parameters = [], []
        for c in range(chains):
            (state, params), _ = adapt.run(keys[c], _start(model, fn, int(seed) + c), num_steps=tune)
            states.append(state)
            parameters.append(params)

        def one_chain(key, state, step_size, inverse_mass_matrix):
            step = blackjax.nuts(logdensity, step_size=step_size, inverse_mass_matrix=inverse_mass_matrix).step

            def body(state, key):
                state, info = step(key, state)
                return state, (state.position, info.is_divergent, info.num_integration_steps, info.energy, info.acceptance_rate)

            return jax.lax.scan(body, state, jax.random.split(key, draws))[1]

        stack = lambda *xs: jax.numpy.stack(xs)  # noqa: E731 - the chains' states and parameters, stacked
        state = jax.tree_util.tree_map(stack, *states)
        step_size = jax.numpy.stack([p["step_size"] for p in parameters])
        mass = jax.numpy.stack([p["inverse_mass_matrix"] for p in parameters])
        theta, diverging, n_steps, energy, accept = jax.jit(jax.vmap(one_chain))(keys[chains:], state, step_size, mass)
        dims = ("chain", "draw")
        stats = xr.Dataset(
            {"diverging": (dims, np.asarray(diverging)), "n_steps": (dims, np.asarray(n_steps)),
             "energy": (dims, np.asarray(energy)), "acceptance_rate": (dims, np.asarray(accept)),
             "step_size": (dims, np.repeat(np.asarray(step_size)[:, None], draws, axis=1))},
            coords={"chain": np.arange(chains), "draw": np.arange(draws)},
        )
        return np.asarray(theta), stats
