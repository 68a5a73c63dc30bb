"""Vectorizing labeled graphs: `vectorize_graph` with labeled replacements, and `vectorize(fn, ...)`.

With named dims a batch dim is just another name: labeled ops already apply
to every dim they are not told about, so most of a labeled graph is batched by
rebuilding it on the replacements (each op re-derives its dims by name, in
xarray's order). The exits to positional code are where batching needs a
rule: `to_positional` puts every batch dim first, the positional ops in
between batch through `dimgraph.core.vectorize`, and `from_positional` names
those leading axes again.
"""

from __future__ import annotations

from dimgraph.core.graph import Variable, ancestors, rebuild_node
from dimgraph.core.vectorize import vectorize_graph as positional_vectorize_graph
from dimgraph.errors import DimError
from dimgraph.labeled.dims import clash, dim_refs, fmt_dims
from dimgraph.labeled.ops import BroadcastTo, FromPositional, LabeledOp, Relabel, ToPositional, Transpose, is_labeled
from dimgraph.labeled.twins import twin_of
from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.shape import static_or_symbolic as shape_of
from dimgraph.core.shape_ops import broadcast_to
from dimgraph.labeled.basic import as_labeled, is_dataarray
from dimgraph.labeled.combine import Concat, concat_dims
from dimgraph.labeled.indexing import Isel, IselUpdate, entry_inputs
from dimgraph.labeled.shape import arange, broadcast_to_dims
from dimgraph.labeled.type import LabeledType


def _batch_dims(replace):
    """The dims the replacements add, in order of first appearance (a clash of sizes or coords refused)."""
    batch, seen = [], {}
    for old, new in replace.items():
        if not is_labeled(new):
            raise TypeError(f"vectorize_graph: the replacement for the labeled {old!r} must be labeled, got {new!r}")
        if old.type.dtype != new.type.dtype:
            raise TypeError(f"vectorize_graph: the replacement for {old!r} has dtype {new.type.dtype}, expected {old.type.dtype}")
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
    dims; every result that depends on them gets them, in xarray's order.
    A batch dim must be new to the graph, except those named in `aligned`: the
    graph's own dim of that name is the same dim, matched element by element
    (xarray's rule; ancestral draws on a `draw` dim read the earlier variables' draws so).

    >>> import dimgraph as dg, numpy as np
    >>> obs, chain = dg.Dim("obs", size=3), dg.Dim("chain", size=2)
    >>> mu = dg.labeled("mu", dims=())
    >>> y = (dg.labeled("x", dims=(obs,)) - mu) ** 2
    >>> mus = dg.labeled("mus", dims=(chain,))
    >>> dg.vectorize_graph(y, {mu: mus}).dims == (obs, chain)
    True
    """
    if not any(is_labeled(k) for k in replace):
        return positional_vectorize_graph(outputs, replace)
    single = isinstance(outputs, Variable)
    batch = _batch_dims(replace)
    names = {d.name for d in batch}
    _check_batch_names_are_new(outputs, replace, names - {getattr(d, "name", d) for d in aligned})

    def rule(node, ins):
        if not isinstance(node.op, LabeledOp):
            return None
        if all(a is b for a, b in zip(ins, node.inputs)):
            return node.outputs
        op = node.op
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
            stretched = [ax for ax in range(nb) if t.type.shape[ax] == 1 and batch[ax].size not in (1, None)]
            if stretched:  # a result that did not depend on some batch dim: it broadcasts along it

                shape = shape_of(t)
                t = broadcast_to(t, tuple(batch[ax].size if ax in stretched else shape[ax] for ax in range(t.type.ndim)))
            return [FromPositional(tuple(batch[:nb]) + tuple(op.dims))(t)]
        relabeled = _positional_params(node, ins)
        return relabeled if relabeled is not None else rebuild_node(node, ins).outputs

    replace = dict(replace)
    for old, new in list(replace.items()):  # graphs made by lowering (labeled gradients) read the positional twin
        twin = twin_of(old)
        if twin is not None and twin not in replace:
            replace[twin] = _to_batched_positional(new, old.type.dims, batch)
    outs = positional_vectorize_graph([outputs] if single else list(outputs), replace, node_rule=rule)
    return outs[0] if single else outs


def _positional_params(node, ins):
    """The outputs of the labeled ops whose parameters list one entry per dim, for inputs with extra dims."""
    op, x = node.op, ins[0]
    old = node.inputs[0].type.dims if is_labeled(node.inputs[0]) else ()
    extra = tuple(d for d in x.type.dims if d not in old) if is_labeled(x) else ()
    if isinstance(op, Concat):
        dims, joined, new = concat_dims(ins, op.dim if op.new else op.dim.name)
        return [Concat(joined, new, dims)(*ins)]
    if not extra:
        return None
    if isinstance(op, Isel):
        return [_batched_isel(op, old, x, ins[1:])]
    if isinstance(op, IselUpdate):
        by_dim = dict(zip(old, op.entries))
        entries = tuple(by_dim.get(d, ("slice", None, None, None, d)) for d in x.type.dims)
        return [IselUpdate(entries, op.mode, op.by_label)(*ins)]
    if isinstance(op, Transpose):
        return [Transpose(extra + tuple(op.dims))(x)]
    if isinstance(op, BroadcastTo):
        return [BroadcastTo(extra + tuple(op.dims))(*ins)]
    if isinstance(op, Relabel):
        renamed = dict(zip(old, op.dims))
        return [Relabel(tuple(renamed.get(d, d) for d in x.type.dims))(x)]
    return None


def _batched_isel(op, old, x, indexers):
    """`Isel` of `x` with new dims: each is kept whole, or, where an indexer carries it too (a batch dim both
    gained, such as ancestral draws indexing earlier draws), indexed pointwise by its positions."""
    by_dim = dict(zip(old, zip(op.entries, entry_inputs(op.entries, indexers))))
    indexed = {d.name for v in indexers if is_labeled(v) for d in v.type.dims}
    entries, inputs = [], []
    for d in x.type.dims:
        if d in by_dim:
            entry, given = by_dim[d]
        elif d.name in indexed:
            entry, given = ("index",), [arange(d)]
        else:
            entry, given = ("slice", None, None, None, d), []
        entries.append(entry)
        inputs += given
    return Isel(tuple(entries), op.by_label, op.drop)(x, *inputs)


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
    appearance over the inputs), then its core dims. It is one graph, compiled
    and differentiated with the rest (as `xarray.apply_ufunc(..., vectorize=True)`
    or Penzai's `nmap`, but symbolic).

    >>> import dimgraph as dg, numpy as np
    >>> obs, chain = dg.Dim("obs", size=3), dg.Dim("chain", size=2)
    >>> center = dg.vectorize(lambda x: x - x.mean("obs"), [("obs",)], [("obs",)])
    >>> x = dg.labeled("x", dims=(obs, chain))
    >>> center(x).dims == (chain, obs)
    True
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
                raise DimError(f"vectorize: input {k} ({x.name or 'unnamed'}) has no core dims {missing}; its dims are {fmt_dims(x.type.dims)}")
            stand_ins.append(LabeledType(x.type.dtype, tuple(have[c] for c in core)).make_variable(name=x.name))
            batch += [d for d in x.type.dims if d.name not in core and d not in batch]
        clashing = sorted({d.name for d in batch} & {c for dims in core_in + core_out for c in dims})
        if clashing:
            raise DimError(f"vectorize: the dims {clashing} are batch dims of one input and core dims of another input or output")
        res = fn(*stand_ins)
        single = not isinstance(res, (tuple, list))
        res = [res] if single else list(res)
        if len(res) != len(core_out):
            raise TypeError(f"vectorize: the function returned {len(res)} outputs, core_dims_out names {len(core_out)}")
        for k, (r, core) in enumerate(zip(res, core_out)):
            if not is_labeled(r) or sorted(d.name for d in r.type.dims) != sorted(core):
                dims = fmt_dims(r.type.dims) if is_labeled(r) else repr(r)
                raise DimError(f"vectorize: output {k} of the function has dims {dims}, but core_dims_out[{k}] is {core}")
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
