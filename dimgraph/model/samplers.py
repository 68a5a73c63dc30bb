"""Bridges from a model's compiled log density to external samplers (optional: `pip install dimgraph[samplers]`).

nutpie: on the numba backend, nutpie's chains call the model's C-callable log
density and gradient (`FlatFunction.cfunc`, the data bound) with no Python and no
GIL in between, as nutpie runs PyMC's models: the bridge hands its address to
nutpie's native model (`nutpie._lib.PyMcModel`, the class `compile_pymc_model`
builds; nutpie has no public constructor for a C function, so a nutpie without
it takes the next route). Otherwise (other backends) nutpie's public
`nutpie.compiled_pyfunc.from_pyfunc` calls the model's `LogpFunction` from
Python, one chain at a time holding the GIL. Either way a draw is the flat
unconstrained vector as it is, and the constrained values and deterministics of
every draw come after sampling from one compiled call mapped over (chain, draw).
blackjax: NUTS on the jax backend's `jax_fn` of the log density (JAX
differentiates it), window adaptation per chain, then all chains' draws in one
vmapped `jax.lax.scan`.
"""

from __future__ import annotations

import dataclasses
import functools
import threading
from typing import Any

import numpy as np

from dimgraph.compile.function import function
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
    # the first call (kernel compiles, the fast path switched on) in one thread, before the chains'; a log
    # density that is not finite there is a bad parameter or data: `check_point` names it before sampling
    # (its function of every term compiles only then)
    if not np.isfinite(fn(start)[0]):
        model.check_point(start, backend)
    # nutpie: what comes after the draws compiles while the chains run, for `backend` as given (the same cache key)
    run = functools.partial(_nutpie, backend=backend) if sampler == "nutpie" else _blackjax
    theta, stats = run(model, fn, draws, tune, chains, seed, **kwargs)
    posterior = model.constrain(theta, backend, batch_dims=("chain", "draw"))
    posterior = posterior.assign_coords(chain=np.arange(theta.shape[0]), draw=np.arange(theta.shape[1]))
    groups = {"posterior": posterior, "sample_stats": stats}
    if model.entries.observed:
        groups["log_likelihood"] = model.log_likelihood(posterior, backend)
    groups.update(data_groups(model.entries))
    return results.container(groups)


def _compile_after_draws(model, size, backend, chains, draws):
    """A thread compiling what comes after the draws while nutpie's chains run (GIL-free on numba): the
    constrained values and deterministics and the pointwise log-likelihood, each called once on zeros shaped
    as the draws (at most 2 chains x 2 draws: the same array layouts, so the same kernels), which compiles their
    kernels then. The calls after sampling are the same compiled functions (the same results); an error here
    is left to them, raised in the caller's thread."""
    zeros = np.zeros((min(chains, 2), min(draws, 2), size))

    def compile_now():
        try:
            with np.errstate(all="ignore"):  # thread-local: a zero draw's floating-point warnings are not the user's
                posterior = model.constrain(zeros, backend, batch_dims=("chain", "draw"))
                if model.entries.observed:
                    model.log_likelihood(posterior, backend)
        except Exception:  # noqa: BLE001, S110 - the same call after sampling raises it where it is seen
            pass

    thread = threading.Thread(target=compile_now, name="dimgraph-after-draws", daemon=True)
    thread.start()
    return thread


def _nutpie(model, fn, draws, tune, chains, seed, backend=None, cores=None, progress_bar=False, **kwargs):
    try:
        import nutpie
    except ImportError:
        raise ImportError(
            "sample: sampler 'nutpie' needs the nutpie package: pip install 'dimgraph[samplers]'"
        ) from None
    compiled = _nutpie_native(model, fn)
    if compiled is None:
        compiled = _nutpie_pyfunc(model, fn)
    if seed is None:  # fresh entropy, as NumPy's
        seed = int(np.random.SeedSequence().generate_state(1)[0])
    after = _compile_after_draws(model, fn.size, backend, chains, draws)  # once the C function is built
    trace = nutpie.sample(
        compiled,
        draws=draws,
        tune=tune,
        chains=chains,
        seed=seed,
        cores=cores or chains,
        progress_bar=progress_bar,
        save_warmup=False,
        **kwargs,
    )
    after.join()
    return np.asarray(trace.posterior["theta"].values), trace.sample_stats


def _nutpie_pyfunc(model, fn):
    """nutpie's model of a Python logp-and-gradient function (`fn`, the data bound)."""
    from nutpie.compiled_pyfunc import from_pyfunc

    size = fn.size

    def make_logp_fn():
        return lambda x, **_: fn(x)  # the model's data is bound in `fn`, in dims order

    def make_expand_fn(*_):
        return lambda x, **__: {"theta": np.array(x, dtype=np.float64)}

    return from_pyfunc(
        size,
        make_logp_fn,
        make_expand_fn,
        [np.dtype("float64")],
        [(size,)],
        ["theta"],
        make_initial_point_fn=lambda s: _start(model, fn, int(s)),
    )


def _nutpie_native(model, fn):
    """nutpie's native model of the model's log density (`fn`), or None where that route is closed."""
    if fn.flat.function.backend != "numba" or not fn.size:
        return None
    entries = model.entries
    data = dict(zip((v.name for v in entries.holders), entries.arrays()))
    cfunc = fn.flat.cfunc(**data)
    if not cfunc.jitted:  # the jitted graph did not compile (named by a warning): nutpie's Python route
        return None
    return nutpie_native_model(cfunc, fn.size, lambda s: _start(model, fn, int(s)))


def nutpie_native_model(cfunc, size, initial_point):
    """A nutpie model whose chains call `cfunc` (a `CFunction` from `FlatFunction.cfunc`, its data bound)
    from nutpie's threads without Python, a draw being the flat vector (`"theta"`); `initial_point(seed)`
    gives a chain's start. None where this nutpie lacks the native model's constructors."""
    try:
        native = _native_model_class()
    except (ImportError, AttributeError):
        return None
    compiled = native(dims={}, logp=cfunc, expand=_copy_theta(), size=size, init=initial_point)
    try:
        compiled._make_model(np.zeros(size))  # the private constructors take what this bridge gives
    except TypeError:
        return None
    return compiled


@functools.cache
def _native_model_class():
    """A `nutpie.sample.CompiledModel` whose chains call a `CFunction` (`FlatFunction.cfunc`): nutpie's
    native model, built as `nutpie.compile_pymc` builds PyMC's."""
    from nutpie import _lib
    from nutpie.sample import CompiledModel

    for name in ("LogpFunc", "ExpandFunc", "PyMcModel", "PyVariable", "PySampler"):
        getattr(_lib, name)  # an AttributeError where this nutpie has none

    @dataclasses.dataclass(frozen=True)
    class NativeModel(CompiledModel):
        logp: Any  # the CFunction: its `address` and its bound data's `data` pointer, kept alive here
        expand: Any  # the C function writing a draw: the flat vector as it is
        size: int
        init: Any  # seed -> a chain's starting vector

        @property
        def n_dim(self):
            return self.size

        @property
        def shapes(self):
            return {"theta": (self.size,)}

        @property
        def coords(self):
            return {}

        def _make_model(self, init_mean):
            logp = _lib.LogpFunc(self.logp.address, self.logp.data, self)
            expand = _lib.ExpandFunc(self.size, self.size, self.expand.address, self.logp.data, self)
            dim_sizes = {}  # `new_variables` names the vector's dim in it; the trace reads it back
            variables = _lib.PyVariable.new_variables(["theta"], ["float64"], [(self.size,)], dim_sizes, {})
            return _lib.PyMcModel(logp, expand, variables, self.size, dim_sizes, {}, self.init, None)

        def _make_sampler(self, settings, init_mean, cores, *rest):
            return _lib.PySampler.from_pymc(settings, cores, self._make_model(init_mean), *rest)

    return NativeModel


@functools.cache
def _copy_theta():
    """The C function nutpie calls for each draw kept: `int64(n, n_out, const double* x, double* out, void*)`
    copying the flat vector."""
    import numba
    from numba import types

    signature = types.int64(
        types.uint64, types.uint64, types.CPointer(types.float64), types.CPointer(types.float64), types.voidptr
    )

    @numba.cfunc(signature, cache=True)
    def copy(n, n_out, x, out, data):
        if n != n_out:
            return -1
        for i in range(n):
            out[i] = x[i]
        return 0

    return copy


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
        raise ImportError(
            "sample: sampler 'blackjax' needs blackjax and jax: pip install 'dimgraph[blackjax]'"
        ) from None
    entries = model.entries
    layout, data = model.layout, entries.arrays()
    graph = model.compiled(
        ("blackjax logp",),
        lambda: function(
            [v.free for v in entries.sampled] + entries.inputs(), model.logp().to_positional(), backend="jax"
        ),
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
                return state, (
                    state.position,
                    info.is_divergent,
                    info.num_integration_steps,
                    info.energy,
                    info.acceptance_rate,
                )

            return jax.lax.scan(body, state, jax.random.split(key, draws))[1]

        stack = lambda *xs: jax.numpy.stack(xs)  # noqa: E731 - the chains' states and parameters, stacked
        state = jax.tree_util.tree_map(stack, *states)
        step_size = jax.numpy.stack([p["step_size"] for p in parameters])
        mass = jax.numpy.stack([p["inverse_mass_matrix"] for p in parameters])
        theta, diverging, n_steps, energy, accept = jax.jit(jax.vmap(one_chain))(keys[chains:], state, step_size, mass)
        dims = ("chain", "draw")
        stats = xr.Dataset(
            {
                "diverging": (dims, np.asarray(diverging)),
                "n_steps": (dims, np.asarray(n_steps)),
                "energy": (dims, np.asarray(energy)),
                "acceptance_rate": (dims, np.asarray(accept)),
                "step_size": (dims, np.repeat(np.asarray(step_size)[:, None], draws, axis=1)),
            },
            coords={"chain": np.arange(chains), "draw": np.arange(draws)},
        )
        return np.asarray(theta), stats
