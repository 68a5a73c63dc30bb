"""Vectorizing labeled graphs: `vectorize_graph` with labeled replacements, and `vectorize(fn, ...)`.

The rule: for every entry of the batch dims, a result is what the graph gives
for that entry's inputs (values, dims and coords). With named dims a batch dim
is just another name: labeled ops already apply to every dim they are not told
about, so most of a labeled graph is batched by rebuilding it on the
replacements (each op re-derives its dims by name). The ops that need a rule
are those whose parameters list one entry per dim (isel, rename), those that
name their result's dims (transpose, broadcast: the batch dims of every input
reach the result), the indexed updates (each entry updates its own copy of the
target, so the target is repeated over the batch dims of the value and the
positions), and the exits to positional code: `to_positional` puts every batch
dim first, the positional ops in between batch through
`dimgraph.core.vectorize`, and `from_positional` names those leading axes
again. Results then put the batch dims first, their own dims after.
"""

from __future__ import annotations

from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.graph import Variable, ancestors, rebuild_node
from dimgraph.core.vectorize import vectorize_graph as positional_vectorize_graph
from dimgraph.errors import DimError
from dimgraph.labeled.basic import as_labeled, is_dataarray
from dimgraph.labeled.combine import Concat, concat_dims
from dimgraph.labeled.dims import clash, dim_refs, fmt_dims
from dimgraph.labeled.indexing import Isel, IselUpdate, MaskPositions, entry_inputs
from dimgraph.labeled.ops import (
    Arange,
    BroadcastTo,
    FromPositional,
    LabeledOp,
    Relabel,
    ToPositional,
    Transpose,
    is_labeled,
)
from dimgraph.labeled.shape import broadcast_to_dims
from dimgraph.labeled.twins import twin_of
from dimgraph.labeled.type import LabeledType


def _batch_dims(replace):
    """The dims the replacements add, in order of first appearance (a clash of sizes or coords refused)."""
    batch, seen = [], {}
    for old, new in replace.items():
        if not is_labeled(new):
            raise TypeError(f"vectorize_graph: the replacement for the labeled {old!r} must be labeled, got {new!r}")
        if old.type.dtype != new.type.dtype:
            raise TypeError(
                f"vectorize_graph: the replacement for {old!r} has dtype {new.type.dtype}, expected {old.type.dtype}"
            )
        have = {d.name: d for d in new.type.dims}
        for d in old.type.dims:
            if d.name not in have:
                raise DimError(f"vectorize_graph: the replacement {new!r} for {old!r} lacks its dim {d.name!r}")
            if have[d.name] != d:
                raise clash("vectorize_graph", d.name, d, repr(old.name or old), have[d.name], repr(new.name or new))
        core = {d.name for d in old.type.dims}
        for d in new.type.dims:
            if d.name in core:
                continue
            prev = seen.setdefault(d.name, d)
            if prev != d:
                raise clash("vectorize_graph", d.name, prev, "a replacement", d, repr(new.name or new))
            if prev is d and d not in batch:
                batch.append(d)
    return tuple(batch)


def _check_batch_names_are_new(outputs, replace, names):
    """A batch dim must be new to the graph: one named like a dim the graph already has would be broadcast
    against it by name (the same dim), not mapped over (PyTensor refuses it too)."""
    if not names:
        return

    graph = ancestors(list(outputs) if isinstance(outputs, (list, tuple)) else [outputs])
    for v in sorted(graph, key=lambda v: v.owner is not None):  # name an input of the graph where one has it
        if v in replace or not is_labeled(v):
            continue
        taken = sorted(names & {d.name for d in v.type.dims})
        if taken:
            raise DimError(
                f"vectorize_graph: the replacements add the dims {taken}, which the graph already has (in "
                f"{v.name or repr(v)}); a batch dim must be new: rename it (e.g. {taken[0]!r} -> {taken[0] + '_batch'!r})"
            )


def vectorize_graph(outputs, replace, aligned=()):
    """`outputs` rebuilt with each key of `replace` swapped for its value (`jax.vmap` of a graph).

    Positional: the replacements may carry new leading axes (see
    `dimgraph.core.vectorize.vectorize_graph`). Labeled: they may carry new
    dims (batch dims), each replacement its own. For every entry of the batch
    dims a result is what the graph gives for that entry's inputs (values,
    dims and coords), whichever inputs carry which batch dims; a batch dim two
    inputs carry is one dim, matched element by element. A result has the
    batch dims it depends on first (in order of first appearance over the
    replacements), then its own dims in its own order, as PyTensor's xtensor
    and `dg.vectorize` order them.
    A batch dim must be new to the graph, except those named in `aligned`: the
    graph's own dim of that name is the same dim, matched element by element
    (xarray's rule; ancestral draws on a `draw` dim read the earlier variables' draws so).

    >>> import dimgraph as dg, numpy as np
    >>> obs, chain = dg.Dim("obs", size=3), dg.Dim("chain", size=2)
    >>> x, mu = dg.labeled("x", dims=(obs,)), dg.labeled("mu", dims=())
    >>> mus = dg.labeled("mus", dims=(chain,))
    >>> y = dg.vectorize_graph((x - mu) ** 2, {mu: mus})
    >>> y.dims == (chain, obs)
    True
    >>> dg.function([x, mus], y)(np.arange(3.0), np.array([0.0, 1.0])).values.tolist()
    [[0.0, 1.0, 4.0], [1.0, 0.0, 1.0]]
    """
    if not any(is_labeled(k) for k in replace):
        return positional_vectorize_graph(outputs, replace)
    single = isinstance(outputs, Variable)
    outs = [outputs] if single else list(outputs)
    batch = _batch_dims(replace)
    names = {d.name for d in batch}
    _check_batch_names_are_new(outs, replace, names - {getattr(d, "name", d) for d in aligned})

    given, rebuilt = dict(replace), {}

    def rebuild_loop(results_of):
        """A labeled loop's results rebuilt on the batched values, by name (`results_of` is kept on each result
        by `dg.scan` and `dg.while_loop`), once for all its results; None where it cannot be (then its loop is
        vectorized as is)."""
        loop, k = results_of
        if id(loop) not in rebuilt:
            rebuilt[id(loop)] = loop.vectorized(
                lambda values, more={}: vectorize_graph(list(values), {**given, **more}, aligned), list(given.values())
            )
        results = rebuilt[id(loop)]
        return None if results is None else [results[k]]

    def rule(node, ins):
        if not isinstance(node.op, LabeledOp):
            return None
        if all(a is b for a, b in zip(ins, node.inputs)):
            return node.outputs
        op = node.op
        if isinstance(op, FromPositional) and "labeled_loop" in node.outputs[0].tag:
            rebuilt_result = rebuild_loop(node.outputs[0].tag["labeled_loop"])
            if rebuilt_result is not None:
                return rebuilt_result
        if isinstance(op, ToPositional):
            (x,) = ins
            extra = [d for d in x.type.dims if d.name in names and d not in op.dims]
            if not extra:
                return rebuild_node(node, ins).outputs
            return [_to_batched_positional(x, op.dims, batch)]
        if isinstance(op, FromPositional):
            (t,) = ins
            nb = t.type.ndim - node.inputs[0].type.ndim
            if not nb:
                return rebuild_node(node, ins).outputs
            # a length-1 axis of a batch dim of another size is one the result does not depend on: dropped
            kept = [ax for ax in range(nb) if t.type.shape[ax] != 1 or batch[ax].size == 1]
            if len(kept) < nb:
                t = DimShuffle(t.type.ndim, tuple(kept) + tuple(range(nb, t.type.ndim)))(t)
            return [FromPositional(tuple(batch[ax] for ax in kept) + tuple(op.dims))(t)]
        batched = _batched_node(node, ins, batch)
        return batched if batched is not None else rebuild_node(node, ins).outputs

    replace = dict(replace)
    for old, new in list(replace.items()):  # graphs made by lowering (labeled gradients) read the positional twin
        twin = twin_of(old)
        if twin is not None and twin not in replace:
            replace[twin] = _to_batched_positional(new, old.type.dims, batch)
    new_outs = positional_vectorize_graph(outs, replace, node_rule=rule)
    new_outs = [_batch_first(new, old, batch) for new, old in zip(new_outs, outs)]
    return new_outs[0] if single else new_outs


def _batch_first(new, old, batch):
    """`new` (the vectorized `old`) with the dims it gained first, in `batch` order, then `old`'s dims in their order."""
    if not is_labeled(new) or not is_labeled(old):
        return new
    had = {d.name for d in old.type.dims}
    have = {d.name: d for d in new.type.dims}
    gained = tuple(d for d in batch if d.name in have and d.name not in had)
    target = gained + tuple(have[n] for n in old.type.names)
    return new if new.type.dims == target else Transpose(target)(new)


def _gained(new, old, batch):
    """The batch dims `new` (the vectorized version of `old`) carries beyond `old`'s dims, in `batch` order."""
    if not is_labeled(new):
        return ()
    had = set(old.type.dims) if is_labeled(old) else set()
    return tuple(d for d in batch if d in new.type.dims and d not in had)


def _union(groups):
    out = []
    for g in groups:
        out += [d for d in g if d not in out]
    return tuple(out)


def _batched_node(node, ins, batch):
    """The outputs of a labeled node on batched inputs where rebuilding it by name is not enough, else None."""
    op = node.op
    gained = [_gained(new, old, batch) for new, old in zip(ins, node.inputs)]
    if isinstance(op, Concat):
        dims, joined, new = concat_dims(ins, op.dim if op.new else op.dim.name)
        return [Concat(joined, new, dims)(*ins)]
    x = ins[0]
    if not any(gained) and not (is_labeled(x) and x.type.dims != node.inputs[0].type.dims):
        return None  # (a replacement in another dim order still needs the ops that list one entry per dim)
    if isinstance(op, Isel):
        entries, inputs = _batched_entries(node, x, ins[1:], batch)
        return [Isel(entries, op.by_label, op.drop)(x, *inputs)]
    if isinstance(op, IselUpdate):
        # every batch entry updates its own x: x is repeated over the batch dims of the value and the indexers
        missing = tuple(d for d in _union(gained[1:]) if d not in x.type.dims)
        if missing:
            carriers = [v for v, g in zip(ins[1:], gained[1:]) if set(g) & set(missing)]
            x = BroadcastTo(_ordered(batch, missing + x.type.dims))(x, *carriers)
        entries, inputs = _batched_entries(node, x, ins[2:], batch)
        return [IselUpdate(entries, op.mode, op.by_label)(x, ins[1], *inputs)]
    if isinstance(op, MaskPositions):
        raise DimError(
            f"vectorize_graph: a boolean mask on the batch dims {[d.name for d in gained[0]]} selects a number of "
            f"positions that varies with them ({op}); index by integer positions instead"
        )
    if isinstance(op, Transpose):
        return [Transpose(gained[0] + tuple(op.dims))(x)]
    if isinstance(op, BroadcastTo):
        # the batch dims of the variables broadcast to reach the result too, as a loop over the entries would give
        extra = tuple(d for d in _union(gained) if d not in op.dims)
        return [BroadcastTo(extra + tuple(op.dims))(*ins)]
    if isinstance(op, Relabel):
        renamed = dict(zip(node.inputs[0].type.dims, op.dims))
        return [Relabel(tuple(renamed.get(d, d) for d in x.type.dims))(x)]
    return None


def _ordered(batch, dims):
    """`dims` with the batch dims among them first, in `batch` order, the others after in their order."""
    return tuple(d for d in batch if d in dims) + tuple(d for d in dims if d not in batch)


def _batched_entries(node, x, index_inputs, batch):
    """The index entries (and their inputs) of `node`'s selection for the batched `x`.

    The original dims keep their entries; a batch dim of `x` is kept whole by a
    full slice, or matched element by element (an arange indexer) where an
    indexer carries it too, as `isel` does for a dim an indexer shares.
    """
    op = node.op
    old = node.inputs[0].type.dims
    skip = 1 if isinstance(op, Isel) else 2
    per_dim = dict(
        zip(old, zip(op.entries, entry_inputs(op.entries, index_inputs), entry_inputs(op.entries, node.inputs[skip:])))
    )
    for d, (entry, new_parts, old_parts) in per_dim.items():
        varying = _union(_gained(p, o, batch) for p, o in zip(new_parts, old_parts)) if entry[0] == "slice" else ()
        if varying:
            raise DimError(
                f"vectorize_graph: the slice bounds of dim {d.name!r} in {op} vary with the batch dims "
                f"{[b.name for b in varying]}; the selection's length would vary along them"
            )
    indexed = {dd.name for entry, parts, _ in per_dim.values() if entry[0] == "index" for dd in parts[0].type.dims}
    entries, inputs = [], []
    for d in x.type.dims:
        if d in per_dim:
            entry, parts, _ = per_dim[d]
        elif d.name in indexed:
            entry, parts = ("index",), [Arange(d)()]
        else:
            entry, parts = ("slice", None, None, None, d), []
        entries.append(entry)
        inputs += parts
    return tuple(entries), inputs


def _to_batched_positional(x, core_dims, batch):
    """`x` as a positional tensor: every batch dim first (length 1 where `x` lacks it), then `core_dims`."""
    present = tuple(d for d in batch if d in x.type.dims)
    t = ToPositional(present + tuple(core_dims))(x)
    if len(present) == len(batch):
        return t
    order = tuple(present.index(d) if d in present else "x" for d in batch) + tuple(range(len(present), t.type.ndim))
    return DimShuffle(t.type.ndim, order)(t)


def vectorize(fn, core_dims_in, core_dims_out):
    """`fn`, written over the core dims of its inputs, applied over every other dim of them.

    `core_dims_in[k]` names the dims `fn` sees of input k (Dims or names);
    `core_dims_out[k]` those of output k. Every other dim of the inputs is a
    batch dim: every result has all the batch dims first (in order of first
    appearance over the inputs), then its core dims in `core_dims_out` order:
    `vectorize_graph`'s rule, except that a result is repeated along the batch
    dims it does not depend on (as `apply_ufunc`). It is one graph, compiled
    and differentiated with the rest (as `xarray.apply_ufunc(..., vectorize=True)`
    or Penzai's `nmap`, but symbolic).

    >>> import dimgraph as dg, numpy as np
    >>> obs, chain = dg.Dim("obs", size=3), dg.Dim("chain", size=2)
    >>> center = dg.vectorize(lambda x: x - x.mean("obs"), [("obs",)], [("obs",)])
    >>> x = dg.labeled("x", dims=(obs, chain))
    >>> y = center(x)
    >>> y.dims == (chain, obs)
    True
    >>> dg.function([x], y)(np.array([[1.0, 4.0], [2.0, 4.0], [3.0, 7.0]])).values.tolist()
    [[-1.0, 0.0, 1.0], [-1.0, -1.0, 2.0]]
    """
    core_in = [tuple(_name(d) for d in dim_refs(dims, "vectorize") or ()) for dims in core_dims_in]
    core_out = [tuple(_name(d) for d in dim_refs(dims, "vectorize") or ()) for dims in core_dims_out]

    def vectorized(*args):
        if len(args) != len(core_in):
            raise TypeError(f"vectorize: the function takes {len(core_in)} inputs (core_dims_in), got {len(args)}")
        args = [as_labeled(a) if is_dataarray(a) else a for a in args]
        stand_ins, batch = [], []
        for k, (x, core) in enumerate(zip(args, core_in)):
            if not is_labeled(x):
                raise TypeError(f"vectorize: input {k} must be labeled (a labeled variable or a DataArray), got {x!r}")
            have = {d.name: d for d in x.type.dims}
            missing = [c for c in core if c not in have]
            if missing:
                raise DimError(
                    f"vectorize: input {k} ({x.name or 'unnamed'}) has no core dims {missing}; its dims are {fmt_dims(x.type.dims)}"
                )
            stand_ins.append(LabeledType(x.type.dtype, tuple(have[c] for c in core)).make_variable(name=x.name))
            batch += [d for d in x.type.dims if d.name not in core and d not in batch]
        clashing = sorted({d.name for d in batch} & {c for dims in core_in + core_out for c in dims})
        if clashing:
            raise DimError(
                f"vectorize: the dims {clashing} are batch dims of one input and core dims of another input or output"
            )
        res = fn(*stand_ins)
        single = not isinstance(res, (tuple, list))
        res = [res] if single else list(res)
        if len(res) != len(core_out):
            raise TypeError(f"vectorize: the function returned {len(res)} outputs, core_dims_out names {len(core_out)}")
        for k, (r, core) in enumerate(zip(res, core_out)):
            if not is_labeled(r) or sorted(d.name for d in r.type.dims) != sorted(core):
                dims = fmt_dims(r.type.dims) if is_labeled(r) else repr(r)
                raise DimError(
                    f"vectorize: output {k} of the function has dims {dims}, but core_dims_out[{k}] is {core}"
                )
        outs = vectorize_graph(res, dict(zip(stand_ins, args)))
        final = []
        for o, core in zip(outs, core_out):
            have = {d.name: d for d in o.type.dims}
            target = tuple(batch) + tuple(have[c] for c in core)
            if o.type.dims == target:
                final.append(o)
            elif all(d in o.type.dims for d in batch):
                final.append(o.transpose(*[d.name for d in target]))
            else:  # an output that does not depend on some batch dim is repeated along it, as apply_ufunc's
                final.append(broadcast_to_dims(o, target, like=args))
        return final[0] if single else tuple(final)

    return vectorized


def _name(d):
    return d if isinstance(d, str) else d.name
