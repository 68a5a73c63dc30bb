"""Discrete latent variables marginalized by name: the model's log density summed over their supports.

A marginalized latent `z` on dims D keeps its place in the model (prior draws
give it) but leaves the sampled parameters. Its support is a Dim (`z_support`,
a twin of a categorical's dim, with its coords; the integers of a bounded
count). The latent's own log density and those of the terms that read it (its
dependents: observed variables, continuous or other marginalized variables)
are rebuilt with `z` swapped for every support value (`vectorize_graph` over
the support Dim, one more dim on every term), each dependent summed over its
dims beyond D, and the sum reduced by `logsumexp` over the support Dim: one
term on D. That is the marginal only if `z`'s entries stay apart between `z`
and its dependents: no op on the way reduces, cumulates, differences, shifts,
rolls, gathers along or contracts one of D; the graph is read and any such
op is an error naming the latent, the op and the dim.

Latents read by one dependent are marginalized together (one support Dim
each, their product enumerated: at most `MAX_PRODUCT_SUPPORT` values per entry
of D); they need the same dims. The joint on (D, supports) also gives, per
posterior draw, the latents' conditional probabilities and their draws
(`latent_probabilities`, `recover`), normalized in NumPy after one compiled
call mapped over (chain, draw).

A `markov_chain` latent couples its entries along time by design: its
dependents' densities at every state are the emissions, summed by the forward
algorithm (`ChainGroup`, one `dg.scan` step per time step in log space); its
posterior states come from the same pieces per draw (`hmm_posterior`).
"""

from __future__ import annotations

import numpy as np

from dimgraph.compile.function import function
from dimgraph.core.graph import ancestors, toposort
from dimgraph.labeled.basic import constant
from dimgraph.labeled.dims import Dim, fmt_dims
from dimgraph.labeled.indexing import Isel
from dimgraph.labeled.math import logsumexp
from dimgraph.labeled.ops import (
    BroadcastTo,
    ExpandDims,
    FullLike,
    LabeledCumulative,
    LabeledDiff,
    LabeledElemwise,
    LabeledReduce,
    Squeeze,
    Transpose,
)
from dimgraph.labeled.vectorize import vectorize_graph
from dimgraph.lower.control import scan
from dimgraph.model import hmm_posterior
from dimgraph.prob.constraints import IntegerInterval
from dimgraph.prob.discrete import Categorical
from dimgraph.prob.factories import Truncated
from dimgraph.prob.timeseries import MarkovChain

MAX_PRODUCT_SUPPORT = 4096  # support values per entry of latents marginalized together


# --- supports
def support_values(dist, what):
    """(support values as int64, their labels) of a discrete distribution whose support is finite and known now:
    a categorical's or a Markov chain's positions (labeled by their dim's coords), else the whole numbers between
    the bounds of its `support` (constants)."""
    if isinstance(dist, (Categorical, MarkovChain)):
        return np.arange(dist.dim.size), dist.dim.coords
    name = type(dist).__name__.lower()
    support = dist.support
    if not isinstance(support, IntegerInterval):
        raise TypeError(f"{what}: a {name} is not discrete; only discrete variables are summed out")
    lower, upper = support.lower, support.upper
    if isinstance(dist, Truncated) and lower is None:
        lower = dist.base.support.lower
    if lower is None or upper is None:
        base = type(dist.base).__name__.lower() if isinstance(dist, Truncated) else name
        raise TypeError(
            f"{what}: a {name} has no finite support to sum over; bound it: truncated({base}(...), upper=N)"
        )
    lower = int(np.min(_constant(lower, f"{what}: the lower end of {name}'s support")))
    upper = int(np.max(_constant(upper, f"{what}: the upper end of {name}'s support")))
    return np.arange(lower, upper + 1), None


def _constant(var, what):
    if isinstance(var, (int, float, np.number)):
        return np.asarray(var)
    if not hasattr(var, "data"):
        raise ValueError(f"{what} must be a number (a constant), not an expression of the model's variables")
    return np.asarray(var.data)


class Latent:
    """A marginalized variable: its model entry, its support Dim and the support values."""

    def __init__(self, entry):
        what = f"marginalize {entry.name!r}"
        self.entry = entry
        self.name = entry.name
        unsized = [d.name for d in entry.dims if d.size is None]
        if unsized:
            raise ValueError(f"{what}: dims {unsized} have no size; a marginalized variable needs static sizes")
        values, labels = support_values(entry.dist, what)
        self.values = values.astype("int64")
        self.dim = Dim(f"{entry.name}_support", coords=values if labels is None else labels)

    @property
    def value(self):
        return self.entry.value

    @property
    def dims(self):
        return self.entry.dims

    def spread(self):
        """The support values on (support dim, *dims): what the latent is swapped for."""
        shape = (self.dim.size, *(d.size for d in self.dims))
        values = np.broadcast_to(self.values.reshape((-1,) + (1,) * len(self.dims)), shape).copy()
        return constant(values, dims=(self.dim, *self.dims))


# --- which entries may not mix
def check_entries_stay_apart(latent, term, dependent):
    """Raise a ValueError when an op between `latent` and the term `dependent` mixes entries along its dims."""
    names = {d.name for d in latent.dims}
    if not names:
        return
    tainted = {id(latent.value)}
    for node in toposort([term]):
        touched = [(k, x) for k, x in enumerate(node.inputs) if id(x) in tainted]
        if not touched:
            continue
        mixed = _mixed_dim(node, touched, names)
        if mixed is not None:
            how, dim = mixed
            raise ValueError(
                f"{latent.name} on {fmt_dims(latent.dims)}: {how} mixes the entries of {dim!r} before {dependent!r}; "
                f"marginalizing {latent.name!r} entry by entry needs them apart (the marginal would be wrong)"
            )
        tainted.update(id(o) for o in node.outputs)


_POINTWISE = (LabeledElemwise, Transpose, ExpandDims, BroadcastTo, FullLike)


def _mixed_dim(node, touched, names):
    """(what the op does, the dim) where `node` mixes a latent-carrying input along one of `names`, else None."""
    op = node.op
    if isinstance(op, _POINTWISE):
        return None
    if isinstance(op, Squeeze):
        return None  # only size-1 dims go
    if isinstance(op, LabeledReduce):
        hit = [d.name for d in op.dims if d.name in names]
        return (f"{op.kind} over {hit[0]!r}", hit[0]) if hit else None
    if isinstance(op, (LabeledCumulative, LabeledDiff)):
        return (f"{op} along {op.dim.name!r}", op.dim.name) if op.dim.name in names else None
    if isinstance(op, Isel):
        if all(k > 0 for k, _ in touched):
            return None  # the latent indexes: pointwise along the indexer's dims
        x = node.inputs[0]
        for d, entry in zip(x.type.dims, op.entries):
            if d.name in names and not (entry[0] == "slice" and entry[1:4] == (None, None, None) and entry[4] == d):
                return (f"an index, shift or roll along {d.name!r} ({op})", d.name)
        return None
    for _, x in touched:
        hit = [d.name for d in getattr(x.type, "dims", ()) if d.name in names]
        if hit:
            return (f"{op} on {hit[0]!r}", hit[0])
    return None


# --- groups of latents and their marginal terms
class Group:
    """Latents marginalized together (they share a dependent) and the terms that read them."""

    def __init__(self, latents, terms):
        self.latents, self.terms = latents, terms  # terms: {name: elementwise log density}
        self.dims = latents[0].dims
        names = [z.name for z in latents]
        for z in latents[1:]:
            if {d.name for d in z.dims} != {d.name for d in self.dims}:
                raise ValueError(
                    f"marginalize: {names} share a dependent, so they are marginalized together, which needs the same "
                    f"dims; {latents[0].name!r} is on {fmt_dims(self.dims)}, {z.name!r} on {fmt_dims(z.dims)}"
                )
        size = int(np.prod([z.dim.size for z in latents]))
        if size > MAX_PRODUCT_SUPPORT:
            raise ValueError(
                f"marginalize: {names} are marginalized together over {size} support values per entry, above the "
                f"{MAX_PRODUCT_SUPPORT} enumerated"
            )
        for z in latents:
            for name, term in terms.items():
                if any(v is z.value for v in ancestors([term])):
                    check_entries_stay_apart(z, term, name)

    @property
    def name(self):
        return "+".join(z.name for z in self.latents)

    @property
    def support_dims(self):
        return tuple(z.dim for z in self.latents)

    def joint(self):
        """The log density of the latents and their dependents on (dims, support dims), each dependent summed over
        its other dims."""
        keep = {d.name for d in self.dims}
        total = None
        for term in self.terms.values():
            extra = [d for d in term.dims if d.name not in keep]
            part = term.sum(extra) if extra else term
            total = part if total is None else total + part
        total = vectorize_graph(total, {z.value: z.spread() for z in self.latents})
        return total.transpose(*self.dims, *self.support_dims)

    def marginal(self):
        """The marginal log density on the latents' dims."""
        return logsumexp(self.joint(), list(self.support_dims))


class ChainGroup:
    """A marginalized Markov chain (a hidden Markov model's states): the forward algorithm over its time dim.

    The dependents' log densities, swapped for every state (the support Dim), are the
    emissions on (time, *batch, support); alpha_t = logsumexp over the previous state of
    alpha_{t-1} + log P, plus the emission at t, one `dg.scan` step per time step in log
    space, so a log-likelihood far beyond exp's range stays finite with its gradient.
    """

    def __init__(self, latent, terms):
        self.latents, self.terms = [latent], terms
        self.latent, self.dist = latent, latent.entry.dist
        self.time = self.dist.time
        self.dims = tuple(d for d in latent.dims if d != self.time)  # the batch dims: chains apart
        self.next = latent.dim.rename(f"{latent.dim.name}_next")
        for name, term in terms.items():
            check_entries_stay_apart(latent, term, name)

    @property
    def name(self):
        return self.latent.name

    def emission(self):
        """The dependents' log density at each state: on (time, *batch, support)."""
        z = self.latent
        total = None
        for term in self.terms.values():
            extra = [d for d in term.dims if d not in z.dims]
            part = term.sum(extra) if extra else term
            total = part if total is None else total + part
        if total is None:
            total = constant(np.zeros((z.dim.size,) + tuple(d.size for d in z.dims)), dims=(z.dim, *z.dims))
        else:
            total = vectorize_graph(total, {z.value: z.spread()})
        return total.transpose(self.time, *self.dims, z.dim)

    def log_init(self):
        return _spread_to(
            self.dist.log_init().rename({self.dist.dim.name: self.latent.dim}), (*self.dims, self.latent.dim)
        )

    def log_trans(self):
        lt = self.dist.log_trans().rename({self.dist.dim.name: self.latent.dim, self.dist.next_dim.name: self.next})
        lead = (self.time,) if self.dist.time_varying else ()
        return _spread_to(lt, (*lead, *self.dims, self.latent.dim, self.next))

    def marginal(self):
        """log p(dependents | parameters) per chain: on the batch dims."""
        e, li, lt = self.emission(), self.log_init(), self.log_trans()
        S, order = self.latent.dim, (*self.dims, self.latent.dim)
        alpha = (li + e.isel({self.time.name: 0})).transpose(*order)
        if self.time.size > 1:
            later = slice(1, None)
            sequences = [e.isel({self.time.name: later})]
            if self.dist.time_varying:
                sequences.append(lt.isel({self.time.name: later}))

            def step(a, e_t, *lt_t):
                moved = logsumexp(a + (lt_t[0] if lt_t else lt), [S]).rename({self.next.name: S})
                return (moved + e_t).transpose(*order)

            alpha, _ = scan(step, alpha, sequences=sequences, dim=self.time.name, name=f"forward {self.name!r}")
        return logsumexp(alpha, [S])


def _spread_to(x, dims):
    """`x` broadcast to `dims` (it holds a subset of them), in that order."""
    missing = [d for d in dims if d not in x.dims]
    if missing:
        x = x + constant(np.zeros([d.size for d in missing]), dims=tuple(missing))
    return x.transpose(*dims)


def groups(model, elementwise_terms):
    """The marginalized latents of `model` in groups, given every term's elementwise log density by name."""
    free = {v.name: v for v in model.entries.free}
    latents = {n: Latent(free[n]) for n in model.marginalized}
    reads = {
        name: [z for z in latents.values() if any(v is z.value for v in ancestors([t]))]
        for name, t in elementwise_terms.items()
    }
    parent = {n: n for n in latents}

    def root(n):
        while parent[n] != n:
            n = parent[n]
        return n

    for zs in reads.values():
        for z in zs[1:]:
            parent[root(z.name)] = root(zs[0].name)
    out = []
    for top in dict.fromkeys(root(n) for n in latents):
        members = [z for n, z in latents.items() if root(n) == top]
        terms = {name: elementwise_terms[name] for name, zs in reads.items() if any(z in members for z in zs)}
        chains = [z for z in members if isinstance(z.entry.dist, MarkovChain)]
        if chains and len(members) > 1:
            raise ValueError(
                f"marginalize: the Markov chain {chains[0].name!r} shares a dependent with "
                f"{[z.name for z in members if z is not chains[0]]}; a chain is marginalized alone"
            )
        if chains:
            out.append(ChainGroup(chains[0], {n: t for n, t in terms.items() if n != chains[0].name}))
        else:
            out.append(Group(members, terms))
    return out


def split_terms(model):
    """({name: summed log density} of the terms no latent reads, [groups]): the model's log density in parts."""
    entries = model.entries
    elementwise = {v.name: v.dist.logp(v.value) for v in entries.free}
    elementwise.update({v.name: v.dist.logp(v.var) for v in entries.observed})
    found = groups(model, elementwise) if model.marginalized else []
    taken = {name for g in found for name in [*g.terms, *(z.name for z in g.latents)]}
    plain = {name: t.sum() for name, t in elementwise.items() if name not in taken}
    return plain, found


def pointwise_name(model, group):
    """The name the group's pointwise term has among the log-likelihoods: its observed dependents joined."""
    observed = [n for n in group.terms if n in model.observed_variables]
    return "+".join(observed) if observed else None


def reads_latent(model, var):
    """Whether `var` (an expression) reads a marginalized latent."""
    values = {id(v.value) for v in model.entries.free if v.name in model.marginalized}
    return any(id(v) in values for v in ancestors([var]))


# --- after sampling
def _joint_function(model, group, backend):
    inputs = [v.value for v in model.sampled] + model.entries.inputs()
    joint = group.joint()
    joint.name = "joint"
    return function(inputs, [joint], backend=backend, map_extra_dims=True, output="dataset")


def joint_draws(model, group, posterior, backend):
    """The group's joint log density at every draw of `posterior`: a DataArray on (chain, draw, dims, supports)."""
    fn = model.compiled(("marginal_joint", group.name, backend), lambda: _joint_function(model, group, backend))
    values = [posterior[v.name] for v in model.sampled] + model.entries.arrays()
    missing = [v.name for v in model.sampled if v.name not in posterior]
    if missing:
        raise KeyError(f"the posterior lacks the random variables {missing}; it has {list(posterior.data_vars)}")
    out = fn(*values)["joint"]
    return out.assign_coords({k: posterior.coords[k] for k in ("chain", "draw") if k in posterior.coords})


def group_of(model, name, what):
    if name not in model.marginalized:
        raise KeyError(f"{what}: {name!r} is not a marginalized variable; those are {list(model.marginalized)}")
    _, found = split_terms(model)
    return next(g for g in found if name in [z.name for z in g.latents])


def probabilities(joint, group, name):
    """P(latent `name` = each support value | the rest) from the group's joint (NumPy, normalized in log space)."""
    others = [z.dim.name for z in group.latents if z.name != name]
    log = _logsumexp_np(joint, others) if others else joint
    return np.exp(log - _logsumexp_np(log, [next(z.dim.name for z in group.latents if z.name == name)]))


def _logsumexp_np(da, dims):
    top = da.max(dims)
    top = top.where(np.isfinite(top), 0.0)
    return np.log(np.exp(da - top).sum(dims)) + top


def draw_latents(joint, group, rng):
    """One draw of the group's latents per entry of `joint` (chain, draw, dims): {name: DataArray of values}."""
    supports = [z.dim.name for z in group.latents]
    lead = [d for d in joint.dims if d not in supports]
    arr = joint.transpose(*lead, *supports).values
    flat = arr.reshape(arr.shape[: len(lead)] + (-1,))
    flat = flat - flat.max(-1, keepdims=True)
    p = np.exp(flat)
    p /= p.sum(-1, keepdims=True)
    u = rng.uniform(size=p.shape[:-1] + (1,))
    pick = np.minimum((np.cumsum(p, -1) < u).sum(-1), p.shape[-1] - 1)
    positions = np.unravel_index(pick, [z.dim.size for z in group.latents])
    import xarray as xr

    coords = {d: joint.coords[d] for d in lead if d in joint.coords}
    return {
        z.name: xr.DataArray(z.values[k], dims=lead, coords=coords, name=z.name)
        for z, k in zip(group.latents, positions)
    }


# --- a hidden Markov model's states after sampling
def _chain_function(model, group, backend):
    inputs = [v.value for v in model.sampled] + model.entries.inputs()
    outs = [group.emission(), group.log_init(), group.log_trans()]
    for out, name in zip(outs, ("log_emit", "log_init", "log_trans")):
        out.name = name
    return function(inputs, outs, backend=backend, map_extra_dims=True, output="dataset")


def chain_pieces(model, group, posterior, backend):
    """(log_init, log_trans, log_emit) as NumPy arrays at every draw, time first, then (chain, draw, *batch)."""
    fn = model.compiled(("marginal_chain", group.name, backend), lambda: _chain_function(model, group, backend))
    missing = [v.name for v in model.sampled if v.name not in posterior]
    if missing:
        raise KeyError(f"the posterior lacks the random variables {missing}; it has {list(posterior.data_vars)}")
    values = [posterior[v.name] for v in model.sampled] + model.entries.arrays()
    out = fn(*values)
    lead = [d for d in ("chain", "draw") if d in out["log_emit"].dims]
    batch, S, nxt, time = [d.name for d in group.dims], group.latent.dim.name, group.next.name, group.time.name
    varying = (time,) if group.dist.time_varying else ()
    return (
        out["log_init"].transpose(*lead, *batch, S).values,
        out["log_trans"].transpose(*varying, *lead, *batch, S, nxt).values,
        out["log_emit"].transpose(time, *lead, *batch, S).values,
        lead,
    )


def _chain_result(group, values, lead, posterior, name, support=False):
    """A DataArray on (lead, *the latent's dims[, support]) from NumPy values on (time, lead, *batch[, support])."""
    import xarray as xr

    dims = [group.time.name, *lead, *(d.name for d in group.dims)] + ([group.latent.dim.name] if support else [])
    out = xr.DataArray(values, dims=dims, name=name)
    if support:
        out = out.assign_coords({group.latent.dim.name: group.latent.dim.coords})
    order = [*lead, *(d.name for d in group.latent.dims)] + ([group.latent.dim.name] if support else [])
    coords = {k: posterior.coords[k] for k in lead if k in posterior.coords}
    return out.transpose(*order).assign_coords(coords)


def chain_probabilities(model, group, posterior, backend):
    li, lt, le, lead = chain_pieces(model, group, posterior, backend)
    probs = hmm_posterior.smoothed(li, lt, le, group.dist.time_varying)
    return _chain_result(group, probs, lead, posterior, group.name, support=True)


def chain_draws(model, group, posterior, backend, rng):
    li, lt, le, lead = chain_pieces(model, group, posterior, backend)
    path = hmm_posterior.sample_paths(li, lt, le, group.dist.time_varying, rng)
    return {group.name: _chain_result(group, group.latent.values[path], lead, posterior, group.name)}


def chain_viterbi(model, group, posterior, backend):
    li, lt, le, lead = chain_pieces(model, group, posterior, backend)
    path = hmm_posterior.viterbi(li, lt, le, group.dist.time_varying)
    return _chain_result(group, group.latent.values[path], lead, posterior, group.name)
