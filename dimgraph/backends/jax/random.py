"""JAX entries for random draws: the state words name a `jax.random` key (threefry), folded with the counter.

The key is the two key words folded to 64 bits, then the counter's halves folded in
(`jax.random.fold_in`), so each (key, counter) is its own stream and the next state
is the counter plus one, as on every backend. The numbers are jax.random's: the
same seed gives the same numbers here, other numbers than NumPy's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from dimgraph.backends.jax.registry import jax_impl, static_int
from dimgraph.core.random import RandomDraw

_LOW = np.uint64(0xFFFFFFFF)


def key_of(state):
    """The jax.random key of the stream the state words name."""
    state = jnp.asarray(state, dtype=jnp.uint64)
    mixed = state[0] ^ (state[1] * jnp.uint64(0x9E3779B97F4A7C15))
    raw = jnp.stack([(mixed >> 32).astype(jnp.uint32), (mixed & _LOW).astype(jnp.uint32)])
    key = jax.random.wrap_key_data(raw, impl="threefry2x32")
    key = jax.random.fold_in(key, (state[2] & _LOW).astype(jnp.uint32))
    return jax.random.fold_in(key, (state[2] >> 32).astype(jnp.uint32))


def _draw(kind, key, size, params):
    f64 = jnp.float64
    if kind == "uniform":
        return jax.random.uniform(key, size, dtype=f64)
    if kind == "normal":
        return jax.random.normal(key, size, dtype=f64)
    if kind == "gamma":
        a = jnp.broadcast_to(jnp.asarray(params[0], f64), size)
        bad = ~(a > 0)
        return jnp.where(bad, jnp.nan, jax.random.gamma(key, jnp.where(bad, 1.0, a), size, dtype=f64))
    if kind == "poisson":
        lam = jnp.broadcast_to(jnp.asarray(params[0], f64), size)
        bad = ~((lam >= 0) & (lam < 1e18))
        draws = jax.random.poisson(key, jnp.where(bad, 0.0, lam), size, dtype=jnp.int64)
        return jnp.where(bad, -1, draws)
    n = jnp.broadcast_to(jnp.asarray(params[0]), size)
    p = jnp.broadcast_to(jnp.asarray(params[1], f64), size)
    bad = ~((n >= 0) & (p >= 0) & (p <= 1))
    draws = jax.random.binomial(key, jnp.where(bad, 0, n).astype(f64), jnp.where(bad, 0.5, p), size, dtype=f64)
    return jnp.where(bad, -1, draws.astype(jnp.int64))


@jax_impl.register(RandomDraw)
def _random_draw(op, node):
    nparams, dtype = op.nparams, node.outputs[1].type.dtype

    def draw(inputs):
        state, rest = inputs[0], inputs[1:]
        size = tuple(static_int(s, op, "size") for s in rest[nparams:])
        draws = _draw(op.kind, key_of(state), size, rest[:nparams])
        following = jnp.asarray(state, dtype=jnp.uint64).at[2].add(jnp.uint64(1))
        return [following, draws.astype(dtype)]

    return draw
