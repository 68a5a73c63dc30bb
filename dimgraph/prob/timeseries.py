"""Distributions over a time Dim: sequences whose steps depend on the steps before, each registered (`@register`).

`markov_chain`: a discrete-state Markov chain, the hidden states of a hidden Markov model. The initial probabilities are on the state dim, the transition matrix on
(state, next state) with rows normalized over the next state; the matrix may
also carry the time dim (the transition into step t is its slice t; slice 0
is not read). Any other dim of either is a batch dim: independent chains
(sequences, sites). Values are the state positions on (time, *batch dims).
The log density picks each step's entries by comparing positions (no
gathers), so it is differentiable in both parameters. Draws need no loop: each
step's next state is drawn for every previous state at once, and the path is
the prefix composition of those maps (ceil(log2 T) rounds).
"""

from __future__ import annotations

import numpy as np

from dimgraph.errors import DimError
from dimgraph.labeled import math as lmath
from dimgraph.labeled.dims import Dim, fmt_dims, resolve_dims
from dimgraph.labeled.random import labeled_params, primitive_draw
from dimgraph.labeled.shape import arange
from dimgraph.prob import constraints
from dimgraph.prob.base import Distribution, _check_option, _invalid_to_nan
from dimgraph.prob.registry import register


@register("markov_chain")
class MarkovChain(Distribution):
    """States on `time` from initial probabilities `init` (on `dim`) and transitions `trans` (on `dim`, `next_dim`).

    >>> import dimgraph as dg, numpy as np
    >>> state, nxt, time = dg.Dim("state", size=2), dg.Dim("next", size=2), dg.Dim("time", size=3)
    >>> chain = dg.dist.markov_chain(dg.constant(np.array([0.5, 0.5]), dims=(state,)),
    ...                              dg.constant(np.array([[0.9, 0.1], [0.2, 0.8]]), dims=(state, nxt)),
    ...                              dim=state, next_dim=nxt, time=time)
    >>> path = dg.constant(np.array([0, 0, 1]), dims=(time,))
    >>> round(float(chain.logp(path).eval(backend="python")), 6)  # log(0.5 * 0.9 * 0.1)
    -3.101093
    """

    names = ("init", "trans")

    def __init__(self, init, trans, dim=None, next_dim=None, time=None):
        init, trans = labeled_params({"init": init, "trans": trans}, "markov_chain")
        self.params = {"init": init, "trans": trans}
        if dim is None or next_dim is None:
            raise TypeError("markov_chain: give the state dim as dim= and the transition matrix's next-state dim as next_dim=")
        (self.dim,) = resolve_dims(init.dims, dim, "markov_chain", "init")
        (self.next_dim,) = resolve_dims(trans.dims, next_dim, "markov_chain", "trans")
        if self.dim not in trans.dims:
            raise DimError(f"markov_chain: trans must be on the state dim {self.dim.name!r} and {self.next_dim.name!r}, got {fmt_dims(trans.dims)}")
        if self.next_dim.size != self.dim.size:
            raise DimError(f"markov_chain: next_dim {self.next_dim!r} must have the state dim's size {self.dim.size}")
        if not isinstance(time, Dim) or time.size is None:
            raise TypeError(f"markov_chain: time= must be a Dim with a size (the chain's steps), got {time!r}")
        self.time = time
        clash = [d for d in (*init.dims, *trans.dims) if d.name == time.name and d != time]
        if clash or time in init.dims:
            raise DimError(f"markov_chain: init must not vary along time, and trans's time dim must be {time!r}")

    @property
    def support(self):
        return constraints.integer_interval(0, self.dim.size - 1)

    @property
    def time_varying(self):
        return self.time in self.params["trans"].dims

    def log_init(self):
        """log P(s_0) on (dim, *batch): `init` normalized over the states."""
        init = self.params["init"]
        return lmath.log(init) - lmath.log(init.sum(self.dim))

    def log_trans(self):
        """log P(s_t = next | s_{t-1} = dim) on (dim, next_dim, [time], *batch): rows normalized."""
        trans = self.params["trans"]
        return lmath.log(trans) - lmath.log(trans.sum(self.next_dim))

    def valid(self, init, trans):
        return (init >= 0).all(self.dim) & (trans >= 0).all([self.dim, self.next_dim]) & (init.sum(self.dim) > 0)

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        here = arange(self.dim) == x
        first = lmath.where(here, self.log_init(), 0.0).sum(self.dim).isel({self.time.name: 0})
        prev = x.shift({self.time.name: 1}, fill_value=0)
        row = lmath.where(arange(self.dim) == prev, self.log_trans(), 0.0).sum(self.dim)
        step = lmath.where(arange(self.next_dim) == x, row, 0.0).sum(self.next_dim)
        later = lmath.where(arange(self.time) > 0, step, 0.0).sum(self.time)
        inside = ((x >= 0) & (x < self.dim.size)).all(self.time)
        density = lmath.where(inside, first + later, -np.inf)
        return _invalid_to_nan(density, self.valid(**self.params), check, "markov_chain")

    def draw(self, state, extra_dims=()):
        """Every step's next state drawn beforehand for every previous state (Gumbel-max over the row), then the
        path as the prefix composition of those maps, doubling the span each round: ceil(log2 T) rounds of a
        gather, no loop over time."""
        init, trans = self.params["init"], self.params["trans"]
        core = {self.dim.name, self.next_dim.name, self.time.name}
        batch = tuple(dict.fromkeys(d for d in (*init.dims, *trans.dims) if d.name not in core))
        rows = lmath.where(arange(self.time) == 0, lmath.log(init.rename({self.dim.name: self.next_dim})),
                           lmath.log(trans))
        state, u = primitive_draw("uniform", state, dims=(*extra_dims, self.time, self.dim, self.next_dim, *batch))
        maps = (rows - lmath.log(-lmath.log(u))).argmax(self.next_dim)  # on (..., time, dim): the next state
        into = self.dim.rename(f"{self.dim.name}__into")
        identity = arange(self.dim)
        span = 1
        while span < self.time.size:
            earlier = maps.shift({self.time.name: span}, fill_value=0)
            earlier = lmath.where(arange(self.time) >= span, earlier, identity)
            later = maps.rename({self.dim.name: into})
            maps = lmath.where(arange(into) == earlier, later, 0).sum(into)
            span *= 2
        path = maps.isel({self.dim.name: 0})
        return state, _invalid_int(path, self.valid(**self.params)).transpose(*extra_dims, self.time, *batch)


def _invalid_int(value, valid):
    return lmath.where(valid, value, -1)
