"""`dg.rng(seed)`: a stream of shared RNG states that threads itself through the graphs it draws into.

Every draw from a `RandomStream` gets its own shared RNG state (a child of the
stream's `SeedSequence`) and registers the draw's next state as that state's
default update, so a compiled function advances exactly the states it draws
from, in the context it is called with, and only when the call succeeds.
The threading stays visible: the state is an input of the compiled graph and
its next state an output. For explicit control use a state variable
(`dg.rng_state`) and `dg.dist.<name>(...).draw(state)`, which returns
`(next state, draws)`; `RandomStream.next_state(x)` gives the next state of a
stream draw (seed 001's question: nothing about the next state is hidden).
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.graph import graph_inputs
from dimgraph.core.random import RNGStateType, seed_sequence, seed_state
from dimgraph.core.shared import SharedTensor
from dimgraph.prob.registry import DISTRIBUTIONS


class SharedRNGState(SharedTensor):
    """A shared RNG state whose start value in a context comes from its seed and the context's seed."""

    __slots__ = ("seed_sequence", "default_update")

    def initial_value_in(self, ctx):
        if ctx.seed_sequence is None:
            return self.initial_value
        entropy = [*ctx.seed_sequence.generate_state(4), *self.seed_sequence.generate_state(4)]
        value = seed_state(np.random.SeedSequence(entropy))
        ctx._values[self] = value
        return value


def shared_rng_state(seed_sequence, name=None):
    """A shared RNG state started from `seed_sequence` in the default context."""
    var = SharedRNGState(RNGStateType(), name=name)
    var.seed_sequence = seed_sequence
    value = seed_state(seed_sequence)
    value.setflags(write=False)
    var.initial_value = value
    var.default_update = None
    return var


class RandomStream:
    """Labeled draws from shared RNG states: `rng = dg.rng(seed)`, then `rng.normal(mu, sigma, extra_dims=(obs,))`.

    Each method takes the parameters of `dg.dist.<name>` and `extra_dims`, a tuple of
    new Dims placed first; the draws are labeled. Compiled functions advance the
    states they draw from after each successful call (in the context called with).

    >>> import dimgraph as dg, numpy as np
    >>> obs = dg.Dim("obs", size=3)
    >>> rng = dg.rng(42)
    >>> y = rng.normal(0.0, 1.0, extra_dims=(obs,))
    >>> f = dg.function([], y)
    >>> first, second = f(), f()
    >>> first.dims, bool((first != second).all())
    (('obs',), True)
    """

    def __init__(self, seed=None):
        self.seed_sequence = seed_sequence(seed, "dg.rng")
        self.states = []  # the shared states, one per draw made so far

    def draw(self, dist, extra_dims=()):
        """Draws of the distribution `dist` (a `dg.dist` object) on `extra_dims` then its parameters' dims."""
        (seq,) = self.seed_sequence.spawn(1)
        state = shared_rng_state(seq, name=f"rng_state_{len(self.states)}")
        next_state, value = dist.draw(state, extra_dims)
        state.default_update = next_state
        value.tag["rng_next_state"] = next_state
        self.states.append(state)
        return value

    @staticmethod
    def next_state(x):
        """The RNG state after the stream draw `x` (to thread it on by hand, e.g. into a loop)."""
        found = x.tag.get("rng_next_state")
        if found is None:
            raise ValueError(f"next_state: {x!r} is not a draw of a dg.rng stream")
        return found

    def __getattr__(self, name):
        """`rng.<name>(*params, extra_dims=(), **params)`: draws of `dg.dist.<name>`, looked up in the registry."""
        cls = DISTRIBUTIONS.get(name)
        if cls is None:
            raise AttributeError(
                f"{type(self).__name__} has no attribute {name!r}; the distributions are {sorted(DISTRIBUTIONS)}"
            )

        def draws(*args, extra_dims=(), **kwargs):
            return self.draw(cls(*args, **kwargs), extra_dims)

        draws.__name__ = name
        draws.__doc__ = f"Labeled draws of `dg.dist.{name}` on `extra_dims` then the parameters' dims."
        return draws

    def __dir__(self):
        return sorted({*super().__dir__(), *DISTRIBUTIONS})

    def __repr__(self):
        return f"RandomStream(draws={len(self.states)})"


def rng(seed=None):
    """A `RandomStream` seeded by `seed` (an int, a SeedSequence, or None for fresh entropy)."""
    return RandomStream(seed)


def default_updates(outputs, explicit):
    """{shared RNG state: its next state} for the stream states `outputs` draw from, except `explicit` ones."""
    return {
        v: v.default_update
        for v in graph_inputs(outputs)
        if isinstance(v, SharedRNGState) and v.default_update is not None and v not in explicit
    }
