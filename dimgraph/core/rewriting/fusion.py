"""fusion: Elemwise chains into one `Elemwise(Composite)` loop, siblings into multi-output loops,
a reduction of an Elemwise into one `CAReduceElemwise`, a 1-d Elemwise with its gathered
inputs, reductions and scatter-adds into one `IndexedLoop`, and gathers along one axis of
an n-d array into the elementwise or reducing loop that reads them (`GatherElemwise`).

Groups are formed first and built once (linear in the graph; no Composite is
rebuilt per absorbed node). The rules that keep fused kernels fast and exact:
- a node joins a group only if its output has the group's exact static shape,
  so nothing computed at low rank (e.g. `log1p(b * b)` broadcast along a new
  axis) is recomputed at full rank; low-rank values enter as kernel inputs;
- a producer is absorbed into a consumer's group only if every client of it is
  in the group; otherwise it is joined as a multi-output kernel (its value is
  still produced once) or left alone: work is never duplicated;
- siblings are merged only if they read a common input of the full shape (so
  their run-time shapes are equal) and no path leaves one and enters the other;
- a kernel has at most MAX_INPUTS inputs, MAX_STEPS scalar steps and MAX_STREAMS
  inputs (and outputs) that are arrays rather than broadcast scalars.
"""

from __future__ import annotations

from dimgraph.core.elemwise import Elemwise
from dimgraph.core.fused import CAReduceElemwise, GatherElemwise, IndexedLoop
from dimgraph.core.graph import ancestors
from dimgraph.core.reduce import CAReduce
from dimgraph.core.rewriting.engine import node_rewriter
from dimgraph.core.scalar import Composite
from dimgraph.core.subtensor import ARRAY, FULL_SLICE, AdvancedIncSubtensor, AdvancedSubtensor

MAX_INPUTS = 32
# A loop body's compile time grows faster than its length: an elementwise chain of 1,000
# ops compiled in 8.8 s as 256-step kernels and in 2.8 s as 64-step ones (same run time).
MAX_STEPS = 64
# Numba's and LLVM's compile time grows faster than linearly with the number of arrays a
# loop reads and writes: a chain of 50 blocks `tanh(h * w_i + b_i)` with its gradient
# compiled in 18.6 s as 15-block kernels and in 5.1 s as 3-block ones, running no slower
# (the loop bodies that do not fit the registers are not faster). Scalars do not count, nor
# outputs read only by full reductions and scatter-adds (they become accumulators, see
# fuse_reduce and fuse_indexed_loops: a log-density's gradient terms stay in one pass).
MAX_STREAMS = 6


def _streams(variables, fgraph=None):
    """How many of `variables` are arrays a loop reads or writes element by element.

    Gathers `table[idx]` through the same index arrays are one stream: the loop reads them
    in place (`fuse_indexed_loops`), the index arrays element by element, the tables at random.
    """
    keys = set()
    for v in variables:
        if all(s == 1 for s in v.type.shape) or (fgraph is not None and _accumulated(fgraph, v)):
            continue
        g = v.owner
        if g is not None and type(g.op) is AdvancedSubtensor and _point_index(g.op.index, g.inputs[0], g.inputs[1:]):
            keys.add(tuple(id(i) for i in g.inputs[1:]))
        else:
            keys.add(id(v))
    return len(keys)


def _accumulated(fgraph, v):
    clients = _clients(fgraph, v)
    return bool(clients) and all(
        c != "output"
        and ((type(c.op) is CAReduce and len(c.op.axis) == v.type.ndim) or type(c.op) is AdvancedIncSubtensor)
        for c, _ in clients
    )


def _steps_of(node):
    sop = node.op.scalar_op
    return len(sop.steps) if isinstance(sop, Composite) else 1


def _is_elemwise(node):
    return node is not None and isinstance(node.op, Elemwise)


class _Groups:
    """Disjoint groups of Elemwise nodes with a common output shape, by union of group ids."""

    def __init__(self, fgraph):
        self.fgraph = fgraph
        self.order = fgraph.toposort()
        self.pos = {node: k for k, node in enumerate(self.order)}
        self.gid = {}  # node -> group id
        self.members = {}  # group id -> list of nodes
        self.shape = {}  # group id -> static output shape
        self.next_id = 0

    def new(self, node):
        g = self.next_id
        self.next_id += 1
        self.gid[node] = g
        self.members[g] = [node]
        self.shape[g] = node.outputs[0].type.shape
        return g

    def add(self, g, node):
        self.gid[node] = g
        self.members[g].append(node)

    def union(self, a, b):
        if len(self.members[a]) < len(self.members[b]):
            a, b = b, a
        moved = self.members.pop(b)
        for n in moved:
            self.gid[n] = a
        self.members[a].extend(moved)
        self.shape.pop(b)
        return a

    def inputs(self, nodes):
        """The variables the group reads from outside (by identity, in first-use order)."""
        inside = set(nodes)
        seen, out = set(), []
        for n in nodes:
            for i in n.inputs:
                if (i.owner is None or i.owner not in inside) and id(i) not in seen:
                    seen.add(id(i))
                    out.append(i)
        return out

    def steps(self, nodes):
        return sum(_steps_of(n) for n in nodes)

    def path_through_outside(self, a_nodes, b_nodes):
        """Whether some node outside both groups lies on a path from a group to the other."""
        a, b = set(a_nodes), set(b_nodes)
        return self._reaches(a, b) or self._reaches(b, a)

    def _reaches(self, src, dst):
        """A path src -> (outside node)+ -> dst, found by walking back from dst.

        Another group becomes one kernel, so entering any of its nodes enters all of
        them (their inputs are walked too): a path may go into it at one node and
        leave at another. That is also why the walk is not pruned by toposort
        position: a kernel can leave at a node placed before the one it was entered by.
        """
        stack, seen = [], set()
        for n in dst:
            for i in n.inputs:
                o = i.owner
                if o is not None and o not in src and o not in dst:
                    stack.append(o)
        while stack:
            o = stack.pop()
            if o in seen:
                continue
            g = self.gid.get(o)
            kernel = self.members[g] if g is not None else [o]
            seen.update(kernel)
            for k in kernel:
                for i in k.inputs:
                    p = i.owner
                    if p is None or p in seen:
                        continue
                    if p in src:
                        return True
                    if p not in dst:
                        stack.append(p)
        return False


def _clients(fgraph, var):
    return fgraph.clients.get(var, [])


def _form_chains(G):
    """Vertical groups: from each unassigned Elemwise (outputs first), absorb producers read only inside."""
    fgraph = G.fgraph
    for node in reversed(G.order):
        if not _is_elemwise(node) or node in G.gid:
            continue
        g = G.new(node)
        shape = G.shape[g]
        members = {node}
        ext = {id(i): i for i in node.inputs}
        n_steps = _steps_of(node)
        stack = [node]
        while stack:
            m = stack.pop()
            for inp in m.inputs:
                p = inp.owner
                if not _is_elemwise(p) or p in G.gid or any(o.type.shape != shape for o in p.outputs):
                    continue
                if not all(c != "output" and c in members for o in p.outputs for c, _ in _clients(fgraph, o)):
                    continue
                new_ext = dict(ext)
                for o in p.outputs:
                    new_ext.pop(id(o), None)
                for i in p.inputs:
                    if i.owner is None or i.owner not in members:
                        new_ext[id(i)] = i
                if len(new_ext) > MAX_INPUTS or n_steps + _steps_of(p) > MAX_STEPS:
                    continue
                if _streams(new_ext.values()) > MAX_STREAMS:
                    continue
                ext, n_steps = new_ext, n_steps + _steps_of(p)
                members.add(p)
                G.add(g, p)
                stack.append(p)


def _merge_siblings(G):
    """Horizontal groups: kernels reading a common full-shape variable become one multi-output kernel."""
    fgraph = G.fgraph
    for var in list(fgraph.clients):
        groups = []
        owner = var.owner
        if _is_elemwise(owner) and owner in G.gid and G.shape[G.gid[owner]] == var.type.shape:
            groups.append(G.gid[owner])  # a producer read by several kernels joins them
        for c, _ in _clients(fgraph, var):
            if c != "output" and c in G.gid and G.shape[G.gid[c]] == var.type.shape and G.gid[c] not in groups:
                groups.append(G.gid[c])
        if len(groups) < 2:
            continue
        acc = groups[0]
        for g in groups[1:]:
            if g not in G.members or acc not in G.members or g == acc:
                continue
            a, b = G.members[acc], G.members[g]
            merged = a + b
            inputs, outputs = G.inputs(merged), _outputs_of(fgraph, merged)
            if len(inputs) > MAX_INPUTS or G.steps(merged) > MAX_STEPS or len(outputs) > MAX_INPUTS:
                continue
            if _streams(inputs) > MAX_STREAMS or _streams(outputs, fgraph) > MAX_STREAMS:
                continue
            if G.path_through_outside(a, b):
                continue
            acc = G.union(acc, g)


def _outputs_of(fgraph, nodes):
    """Outputs of a group read outside it (or graph outputs), in node order."""
    inside = set(nodes)
    outs = []
    for n in nodes:
        for o in n.outputs:
            if any(c == "output" or c not in inside for c, _ in _clients(fgraph, o)):
                outs.append(o)
    return outs


def composite_of(nodes, inputs, outputs):
    """The Composite computing `outputs` of the Elemwise `nodes` (topologically sorted) from `inputs`."""
    ref = {id(v): k for k, v in enumerate(inputs)}
    nin = len(inputs)
    steps = []
    for n in nodes:
        sop = n.op.scalar_op
        in_refs = [ref[id(i)] for i in n.inputs]
        if isinstance(sop, Composite):  # inline: inner input r -> in_refs[r], inner step j -> base + j
            base = nin + len(steps)
            outer = in_refs + list(range(base, base + len(sop.steps)))
            steps.extend((op, tuple(outer[r] for r in refs)) for op, refs in sop.steps)
            for o, r in zip(n.outputs, sop.outs):
                ref[id(o)] = outer[r]
        else:
            steps.append((sop, tuple(in_refs)))
            ref[id(n.outputs[0])] = nin + len(steps) - 1
    return Composite(
        in_dtypes=tuple(v.type.dtype for v in inputs), steps=tuple(steps), outs=tuple(ref[id(o)] for o in outputs)
    )


def fuse_elemwise(fgraph, ctx, rewriter, multi_output=True):
    """Build one Elemwise(Composite) per group of two or more Elemwise nodes."""
    G = _Groups(fgraph)
    _form_chains(G)
    if multi_output:
        _merge_siblings(G)
    for g, nodes in list(G.members.items()):
        if len(nodes) < 2:
            continue
        nodes = sorted(nodes, key=G.pos.__getitem__)
        inputs = G.inputs(nodes)
        outputs = _outputs_of(fgraph, nodes)
        comp = composite_of(nodes, inputs, outputs)
        new = Elemwise(comp).make_node(*inputs).outputs
        ctx.replace(rewriter, nodes[-1], list(zip(outputs, new)))


class _Tagged:
    tags = frozenset({"multi_output_fusion", "fusion"})


class _MultiReduce:  # a backend without multi-output CAReduceElemwise kernels excludes this tag
    tags = frozenset({"multi_output_reduce_fusion", "reduce_fusion", "fusion"})


def elemwise_fusion(fgraph, ctx, rewriter):
    """Chains, and (unless "multi_output_fusion" is excluded) siblings, into Elemwise(Composite)."""
    fuse_elemwise(fgraph, ctx, rewriter, multi_output=ctx.spec.enabled(_Tagged))


def fuse_reduce(fgraph, ctx, rewriter):
    """reduce(Elemwise(...)) read only by reductions -> CAReduceElemwise (no full-size temporary).

    A multi-output kernel whose every output is read only by the same reduction
    (e.g. the sum of a log-density term and the sums of its gradient terms)
    becomes one multi-output CAReduceElemwise: one pass over the data.
    """
    for e in fgraph.toposort():
        if e not in fgraph.nodes or not _is_elemwise(e):
            continue
        reductions = []
        for o in e.outputs:
            cl = list(_clients(fgraph, o))
            if len(cl) != 1 or cl[0][0] == "output" or not isinstance(cl[0][0].op, CAReduce):
                break
            reductions.append(cl[0][0])
        else:
            if len({(r.op.scalar_op, r.op.axis) for r in reductions}) != 1:
                continue
            if len(reductions) > 1 and not ctx.spec.enabled(_MultiReduce):
                continue
            sop = _as_composite(e)
            red = reductions[0].op
            new = CAReduceElemwise(sop, red.scalar_op, red.axis).make_node(*e.inputs).outputs
            ctx.replace(rewriter, reductions[0], [(r.outputs[0], n) for r, n in zip(reductions, new)])


def _as_composite(e):
    sop = e.op.scalar_op
    if isinstance(sop, Composite):
        return sop
    nin = len(e.inputs)
    return Composite(in_dtypes=tuple(i.type.dtype for i in e.inputs), steps=((sop, tuple(range(nin))),), outs=(nin,))


def _int_vector(v):
    return v.type.ndim == 1 and v.type.dtype[0] in "iu"


def _point_index(index, array, idxs):
    """Whether `array[index]` with `idxs` reads one element per loop step: one 1-d integer array per axis,
    all of static length 1 or none (`cell[batch_idx, machine_idx]`)."""
    return (
        index == (ARRAY,) * array.type.ndim
        and all(_int_vector(i) for i in idxs)
        and len({i.type.shape[0] == 1 for i in idxs}) == 1
    )


def _gather_of(fgraph, e, var):
    """(table, index arrays) when `var` is `table[i1, ..., in]` (one 1-d index array per axis) read only
    by `e`, else None."""
    g = var.owner
    if g is None or type(g.op) is not AdvancedSubtensor:
        return None
    table, *idxs = g.inputs
    if not _point_index(g.op.index, table, idxs):
        return None
    if any(c is not e for c, _ in _clients(fgraph, var)):
        return None
    return table, tuple(idxs)


def _scatter_of(client, pos, value):
    """(base, index arrays) when `client` is `base[i1, ..., in] += value` (one 1-d index array per axis of
    the base), value at input `pos`, else None."""
    op = client.op
    if type(op) is not AdvancedIncSubtensor or op.mode != "inc" or pos != 1:
        return None
    base, _, *idxs = client.inputs
    if not _point_index(op.index, base, idxs):
        return None
    if value.type.shape[0] == 1 and idxs[0].type.shape[0] != 1:  # a broadcast value: not one per loop step
        return None
    return base, tuple(idxs)


def fuse_indexed_loops(fgraph, ctx, rewriter):
    """A 1-d Elemwise with gathered inputs or scatter-add clients -> one IndexedLoop, no temporaries.

    `mu[g] + beta * x` read by sums and by the gradient's `zeros[g] += w` becomes
    one pass over the observations (so does `cell[b, k]`, one index array per axis of
    an n-d table, and its gradient's `zeros[b, k] += w`): the gather is folded into the loop's reads,
    each sum into an accumulator, each scatter-add into an indexed update; an
    output also read elsewhere is still written in full. A scatter whose base or
    index depends on the loop itself stays outside (no cycle). A multi-output Elemwise with
    neither, some of whose outputs only sums read (`fuse_reduce` takes it where all are), is one
    too: a prior's log density summed and its gradient kept, one pass and no array per sum.
    """
    for e in fgraph.toposort():
        if e not in fgraph.nodes or not _is_elemwise(e) or e.outputs[0].type.ndim != 1:
            continue
        gathers = [_gather_of(fgraph, e, i) for i in e.inputs]
        results, replaced, scatter_inputs = [], [], []
        forbidden = {e}
        for k, o in enumerate(e.outputs):
            full = False
            for client, pos in _clients(fgraph, o):
                if client == "output":
                    full = True
                elif type(client.op) is CAReduce and tuple(client.op.axis) == (0,):
                    results.append((k, "reduce", client.op.scalar_op))
                    replaced.append(client.outputs[0])
                    forbidden.add(client)
                elif (scatter := _scatter_of(client, pos, o)) is not None:
                    base, idxs = scatter
                    results.append((k, "scatter", None if len(idxs) == 1 else len(idxs)))
                    replaced.append(client.outputs[0])
                    scatter_inputs.extend([base, *idxs])
                    forbidden.add(client)
                else:
                    full = True
            if full:
                results.append((k, "full", None))
                replaced.append(o)
        has_scatter = any(kind == "scatter" for _, kind, _ in results)
        kinds = {kind for _, kind, _ in results}
        if not has_scatter and not any(gathers) and kinds != {"reduce", "full"}:
            continue
        if has_scatter and any(v.owner in forbidden for v in ancestors(scatter_inputs)):
            continue
        loop_inputs = [g[1][0] if g else i for i, g in zip(e.inputs, gathers)]
        tables = [g[0] for g in gathers if g]
        more = [i for g in gathers if g for i in g[1][1:]]
        counts = tuple(False if g is None else True if len(g[1]) == 1 else len(g[1]) for g in gathers)
        op = IndexedLoop(_as_composite(e), counts, tuple(results))
        new = op.make_node(*loop_inputs, *tables, *more, *scatter_inputs).outputs
        if any(old.type != n.type for old, n in zip(replaced, new)):
            continue
        ctx.replace(rewriter, e, list(zip(replaced, new)))


def axis_gather_of(var):
    """(table, idx, axis) when `var` is `table[:, ..., idx]`: one 1-d integer array along `axis`, else None."""
    g = var.owner
    if g is None or type(g.op) is not AdvancedSubtensor or g.op.index.count(ARRAY) != 1:
        return None
    axis = g.op.index.index(ARRAY)
    if any(e != FULL_SLICE for e in g.op.index if e != ARRAY):
        return None
    table, idx = g.inputs
    return (table, idx, axis) if _int_vector(idx) else None


def fuse_gathers(fgraph, ctx, rewriter):
    """Elemwise / CAReduce / CAReduceElemwise reading `table[:, idx]` -> one GatherElemwise: no gathered copy.

    `data.sel(country=labels).sum("time")` reads `data[idx[j0], j1]` in its sum loop
    instead of summing a (labels, time) copy. A gather read elsewhere too still runs
    for those readers (reading the table in place costs what reading the copy did).
    Runs after the 1-d IndexedLoop fusion, which takes the gathers it can use first.
    """
    for node in fgraph.toposort():
        if node not in fgraph.nodes:
            continue
        op = node.op
        if type(op) is Elemwise:
            sop, reducer, axis = _as_composite(node), None, ()
        elif type(op) is CAReduce:
            dtype = node.inputs[0].type.dtype
            sop, reducer, axis = Composite(in_dtypes=(dtype,), steps=(), outs=(0,)), op.scalar_op, tuple(op.axis)
        elif type(op) is CAReduceElemwise:
            sop, reducer, axis = op.scalar_op, op.reducer, tuple(op.axis)
        else:
            continue
        gathers = [axis_gather_of(i) for i in node.inputs]
        if not any(gathers):
            continue
        loop_inputs = [g[1] if g else i for i, g in zip(node.inputs, gathers)]
        tables = [g[0] for g in gathers if g]
        gather_axes = tuple(g[2] if g else None for g in gathers)
        new = GatherElemwise(sop, gather_axes, reducer, axis).make_node(*loop_inputs, *tables).outputs
        if any(old.type != n.type for old, n in zip(node.outputs, new)):
            continue
        ctx.replace(rewriter, node, list(zip(node.outputs, new)))


@node_rewriter([IndexedLoop, GatherElemwise])
def unfuse_indexed_loop(fgraph, node):
    """IndexedLoop or GatherElemwise -> the gathers, Elemwise, reductions and scatters it fuses.

    For a backend with no kernel for them: the fusion never builds one for such a
    backend; this serves graphs where a user built it.
    """
    return node.op.unfused(node.inputs)
