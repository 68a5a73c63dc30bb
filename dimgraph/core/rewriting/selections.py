"""selections: reads of a few entries along one axis done where they are cheap, and their gradients
scattered into small buffers instead of a zeros array of the whole shape.

`coef = table.isel(group=g)` followed by `coef.sel(effect=e)` for each of a few effects is,
op by op, a gather of every effect `(obs, effect)` and a basic read of one column of it per
effect; its gradient is a chain of row scatters into zeros of `(effect, obs)`, transposed and
scattered again by `g`. These rules rewrite both sides (bit for bit, every run-time check kept):

- `subtensor_of_transpose`: a constant basic read of a transposed array is the transpose of a
  read of the array (`x.T[0]` -> `x[:, 0]`), so the reads meet the op that made the array;
- `subtensor_of_gather`: a read that keeps the gathered axis whole reads the table first
  (`table[g][:, 0]` -> `table[:, 0][g]`): one 1-d gather per effect, which the fusion folds into
  the observations' loop (`IndexedLoop`), and no `(obs, effect)` copy;
- `scatter_by_columns`: `X[g, :] += v` with a few static columns, `v` built by scattering rows
  of length obs into zeros at constant positions (the gradient of those reads), is one 1-d
  scatter per column, each of the rows summed for it in chain order (`zeros(obs) + v_0 + ...`,
  the adds that checked each row's length), joined: the 1-d scatters fuse into the loop that
  computes the rows, and no `(effect, obs)` buffer is allocated.
"""

from __future__ import annotations

from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.graph import Constant
from dimgraph.core.join import Join
from dimgraph.core.rewriting.engine import node_rewriter
from dimgraph.core.rewriting.fusion import axis_gather_of
from dimgraph.core.shape import ShapeI, to_static
from dimgraph.core.shape_ops import Alloc
from dimgraph.core.subtensor import (
    ARRAY,
    FULL_SLICE,
    NEWAXIS,
    SYMBOLIC,
    AdvancedIncSubtensor,
    AdvancedSubtensor,
    Subtensor,
)

# A scatter splits into one 1-d scatter per column up to this many static columns.
MAX_COLUMNS = 8


def _constant_entries(node):
    """Whether a Subtensor's index is constant ints and slices only (no symbolic part, no new axis)."""
    if len(node.inputs) != 1:
        return False
    return (
        all(
            isinstance(e, int) or (isinstance(e, tuple) and SYMBOLIC not in e[1:])
            for e in node.op.index
            if e != NEWAXIS
        )
        and NEWAXIS not in node.op.index
    )


def _permutation(node):
    """The order of a DimShuffle that only permutes axes, else None."""
    if node is None or not isinstance(node.op, DimShuffle):
        return None
    order = node.op.order
    return order if "x" not in order and sorted(order) == list(range(node.op.input_ndim)) else None


@node_rewriter([Subtensor], tags=("canonicalize", "selections"))
def subtensor_of_transpose(fgraph, node):
    """x.transpose(order)[index] -> x[index'].transpose(order'), for constant ints and slices."""
    x = node.inputs[0]
    order = _permutation(x.owner)
    if order is None or not _constant_entries(node):
        return None
    (y,) = x.owner.inputs
    index = [None] * len(order)
    for out_axis, entry in enumerate(node.op.index):
        index[order[out_axis]] = entry
    kept = [a for a in range(len(order)) if not isinstance(index[a], int)]  # y's axes left, in y's order
    wanted = [order[i] for i, e in enumerate(node.op.index) if not isinstance(e, int)]
    read = Subtensor(tuple(index))(y)
    new_order = tuple(kept.index(a) for a in wanted)
    out = read if new_order == tuple(range(len(new_order))) else DimShuffle(len(new_order), new_order)(read)
    return out if out.type == node.outputs[0].type else None


def _only_selected(fgraph, var):
    """Whether every reader of `var` is a basic read or a transpose read only by basic reads."""
    for client, _ in fgraph.clients.get(var, {}):
        if client == "output":
            return False
        if _permutation(client) is not None:
            if not all(c != "output" and isinstance(c.op, Subtensor) for c, _ in fgraph.clients[client.outputs[0]]):
                return False
        elif not isinstance(client.op, Subtensor):
            return False
    return True


@node_rewriter([Subtensor], tags=("canonicalize", "selections"))
def subtensor_of_gather(fgraph, node):
    """table[..., idx, ...][index] -> table[index'][..., idx, ...] when `index` keeps the gathered axis whole.

    Only when every reader of the gather selects from it: then the gather itself goes away.
    """
    found = axis_gather_of(node.inputs[0])
    if found is None or not _constant_entries(node) or not _only_selected(fgraph, node.inputs[0]):
        return None
    table, idx, axis = found
    index = node.op.index
    if index[axis] != FULL_SLICE:
        return None
    sub = Subtensor(index)(table)
    new_axis = axis - sum(isinstance(e, int) for e in index[:axis])
    gather = AdvancedSubtensor(tuple(ARRAY if a == new_axis else FULL_SLICE for a in range(sub.type.ndim)))
    out = gather(sub, idx)
    return out if out.type == node.outputs[0].type else None


def _row_chain(var, axis):
    """[(position, value)] in chain order when `var` is zeros with rows scattered in at constant positions
    along `axis` (`inc_subtensor(zeros[p0], v0)`, then `[p1]`, ...), each scatter read only by the next;
    with the zeros' Alloc. None otherwise."""
    rows = []
    while True:
        node = var.owner
        if node is None:
            return None
        if isinstance(node.op, Alloc):
            value = node.inputs[0]
            if not isinstance(value, Constant) or value.data.ndim != 0 or value.data != 0:
                return None
            return rows[::-1], node
        if type(node.op) is not AdvancedIncSubtensor or node.op.mode != "inc":
            return None
        index = node.op.index
        if index != tuple(ARRAY if a == axis else FULL_SLICE for a in range(var.type.ndim)):
            return None
        base, value, position = node.inputs
        size = base.type.shape[axis]
        if not isinstance(position, Constant) or position.data.ndim != 0 or size is None:
            return None
        p = int(position.data)
        if not -size <= p < size or value.type.ndim != var.type.ndim - 1:
            return None
        rows.append((p % size, value))
        var = base


def _single_reader(fgraph, var):
    clients = list(fgraph.clients.get(var, {}))
    return len(clients) == 1 and clients[0][0] != "output"


@node_rewriter([AdvancedIncSubtensor], tags=("canonicalize", "selections"))
def scatter_by_columns(fgraph, node):
    """X[idx, :] += v, a few static columns, `v` rows scattered into zeros -> one 1-d scatter per column, joined."""
    op = node.op
    x, v, *idxs = node.inputs
    if op.mode != "inc" or op.index != (ARRAY, FULL_SLICE) or len(idxs) != 1 or idxs[0].type.ndim != 1:
        return None
    columns = x.type.shape[1]
    if columns is None or not 1 <= columns <= MAX_COLUMNS or v.type.ndim != 2:
        return None
    source, row_axis = v, 1
    if _permutation(v.owner) == (1, 0) and _single_reader(fgraph, v):
        source, row_axis = v.owner.inputs[0], 0
    if not _single_reader(fgraph, source):
        return None
    chain = _row_chain(source, row_axis)
    if chain is None or source.type.shape[row_axis] != columns:
        return None
    rows, alloc = chain
    zero, *shape = alloc.inputs
    (length,) = [s for a, s in enumerate(shape) if a != row_axis]
    # The zeros' row length is checked against each row by the chain and against the index by the
    # scatter; where it is the index's own length, the 1-d scatter's check of each row covers both
    # and the zeros need not be allocated (`zero + row` keeps their bits: -0.0 + x is x, 0.0 + x not).
    proved = _is_length_of(length, idxs[0])
    parts = []
    for c in range(columns):
        mine = [row for p, row in rows if p == c]
        value = zero if proved else Alloc()(zero, length)
        for row in mine:  # each row scattered into the zeros' row in turn, as the chain does
            value = value + row
        parts.append(DimShuffle(1, (0, "x"))(AdvancedIncSubtensor((ARRAY,), "inc")(_column(x, c), value, idxs[0])))
    out = Join(1)(*parts)
    return out if out.type == node.outputs[0].type else None


def _is_length_of(entry, idx):
    """Whether the scalar `entry` is the length of the 1-d `idx` (its static size or `ShapeI{0}(idx)`)."""
    static = to_static(entry)
    if static is not None:
        return static == idx.type.shape[0]
    owner = entry.owner
    return owner is not None and isinstance(owner.op, ShapeI) and owner.op.i == 0 and owner.inputs[0] is idx


def _column(x, c):
    """x[:, c]; for zeros of a static shape, zeros of the column's shape (no read of the whole)."""
    alloc = x.owner
    if alloc is not None and isinstance(alloc.op, Alloc) and alloc.inputs[0].type.ndim == 0:
        return Alloc()(alloc.inputs[0], alloc.inputs[1])
    return Subtensor((FULL_SLICE, c))(x)


SELECTIONS = [subtensor_of_transpose, subtensor_of_gather, scatter_by_columns]
