"""Vectorizing graphs: `vectorize_graph` and the registry of batching rules (`vectorize_node`).

`vectorize_graph(outputs, replace={x: x_batched})` rebuilds `outputs` with
each replaced input given new leading (batch) axes, like `jax.vmap` with every
batch axis on the left. The walk is one topological pass: a node none of whose
inputs is batched is kept as it is; otherwise its rule (`vectorize_node`,
keyed by Op type) gets the node's new inputs, where every batched input has
exactly `nb` leading batch axes (fewer are padded with length-1 axes on the
left, so batch axes broadcast as in Elemwise) and the others are unchanged.
A rule returns the node's new outputs; an output is batched when it has more
axes than the original (shape ops such as `ShapeI` give unbatched results).

Ops that batch natively have their own rule; every other op falls back to
`Blockwise` over all its axes (`blockwise.signature_of`); an op that cannot
be batched (an output size that would depend on batched data) is an error
naming it.
"""

from __future__ import annotations

import string
from functools import singledispatch

import numpy as np

from dimgraph.core import extra, join, linalg, reduce, shape_ops, subtensor
from dimgraph.core.basic import as_tensor
from dimgraph.core.blockwise import Blockwise, signature_of
from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.fused import CAReduceElemwise, GatherElemwise, IndexedLoop
from dimgraph.core.graph import Variable, rebuild_node, toposort
from dimgraph.core.join import stack
from dimgraph.core.reduce import all as reduce_all
from dimgraph.core.shape import Shape, ShapeI, product, shape_entry_as_variable
from dimgraph.core.shape import static_or_symbolic as shape_of  # never walks into (labeled) owners
from dimgraph.core.shape_ops import broadcast_to, expand_dims, reshape, squeeze, transpose
from dimgraph.errors import ShapeError


class NotBatchable(ValueError):
    """An op whose result cannot get batch axes (its output shape would vary with batched data)."""


def pad(x, nb):
    """`x` with `nb` leading length-1 axes (an unbatched input made to line up with batched ones)."""
    return DimShuffle(x.type.ndim, ("x",) * nb + tuple(range(x.type.ndim)))(x) if nb else x


def batch_shape(inputs, batched, nb):
    """The symbolic batch shape shared by the batched inputs (a static size other than 1 wins)."""
    out = []
    for ax in range(nb):
        cands = [(x.type.shape[ax], x) for x, b in zip(inputs, batched) if b]
        known = [s for s, _ in cands if s not in (None, 1)]
        if known:
            out.append(known[0])
        elif all(s == 1 for s, _ in cands):
            out.append(1)
        else:
            out.append(shape_of(next(x for s, x in cands if s is None))[ax])
    return tuple(out)


def full_batch(x, shape, nb):
    """`x` (batched or padded) broadcast to the batch `shape` on its first `nb` axes, core axes as they are."""
    if all(s == t for s, t in zip(x.type.shape[:nb], shape) if isinstance(t, int)) and all(
        isinstance(t, int) or s is None for s, t in zip(x.type.shape[:nb], shape)
    ):
        return x
    return broadcast_to(x, tuple(shape) + tuple(shape_of(x)[nb:]))


@singledispatch
def vectorize_node(op, node, inputs, batched, nb):
    """The outputs of `node` with `nb` batch axes (see the module docstring); default: Blockwise."""
    return blockwise_fallback(op, node, inputs, batched, nb)


def blockwise_fallback(op, node, inputs, batched, nb):
    sig = getattr(op, "signature", None)
    if not isinstance(sig, str):
        sig = signature_of(node)
    return Blockwise(op, sig)(*[x if b else pad(x, nb) for x, b in zip(inputs, batched)])


def _out_list(res):
    return list(res) if isinstance(res, (list, tuple)) else [res]


def vectorize_graph(outputs, replace, node_rule=None):
    """`outputs` rebuilt with each key of `replace` swapped for its value, which may carry new leading axes.

    Positional: a replacement has the replaced variable's axes plus any number
    of new leading (batch) axes; batch axes of different replacements broadcast
    from the right, as NumPy's. Results that depend on a batched input get the
    batch axes first; the others are returned as they are. Labeled graphs go
    through `dg.vectorize_graph` (`dimgraph.labeled.vectorize`), which passes a
    `node_rule(node, new_inputs)` for the nodes whose variables are not tensors.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(3,))
    >>> y = (x ** 2).sum()
    >>> xs = dg.tensor("xs", shape=(2, 3))
    >>> dg.function([xs], vectorize_graph([y], {x: xs})[0])(np.arange(6.0).reshape(2, 3))
    array([ 5., 50.])
    """
    single = isinstance(outputs, Variable)
    outs = [outputs] if single else list(outputs)
    memo, nbs = {}, {}
    for old, new in replace.items():
        if node_rule is None:
            new = as_tensor(new)
            _check_replacement(old, new)
        memo[id(old)] = new
        nbs[id(old)] = new.type.ndim - old.type.ndim
    for node in toposort(outs, blockers=list(replace)):
        ins = [memo.get(id(i), i) for i in node.inputs]
        in_nb = [nbs.get(id(i), 0) for i in node.inputs]
        nb = max(in_nb, default=0)
        new_outs = node_rule(node, ins) if node_rule is not None else None
        if new_outs is not None:
            new_outs = _out_list(new_outs)
        elif nb == 0:
            new_outs = rebuild_node(node, ins).outputs
        else:
            padded = [pad(x, nb - k) if k else x for x, k in zip(ins, in_nb)]
            new_outs = _out_list(vectorize_node(node.op, node, padded, [k > 0 for k in in_nb], nb))
        for o, n in zip(node.outputs, new_outs):
            memo[id(o)] = n
            nbs[id(o)] = n.type.ndim - o.type.ndim
    result = [memo.get(id(o), o) for o in outs]
    return result[0] if single else result


def _check_replacement(old, new):
    if old.type.dtype != new.type.dtype:
        raise TypeError(
            f"vectorize_graph: the replacement for {old!r} has dtype {new.type.dtype}, expected {old.type.dtype}"
        )
    extra = new.type.ndim - old.type.ndim
    if extra < 0:
        raise ValueError(f"vectorize_graph: the replacement {new!r} for {old!r} has fewer axes than it")
    for k, (s, t) in enumerate(zip(old.type.shape, new.type.shape[extra:])):
        if s is not None and t is not None and s != t:
            raise ShapeError(
                f"vectorize_graph: the replacement {new!r} for {old!r} must end with its shape {old.type.shape}; "
                f"axis {extra + k} has size {t}"
            )


# -- rules: ops that batch natively ---------------------------------------------


def _entries(shape):
    return [shape_entry_as_variable(e) for e in shape]


def _shift(axes, nb):
    return tuple(a + nb for a in axes)


def _pad_all(inputs, batched, nb):
    return [x if b else pad(x, nb) for x, b in zip(inputs, batched)]


@vectorize_node.register(Elemwise)
def _elemwise(op, node, inputs, batched, nb):
    return op(*_pad_all(inputs, batched, nb))


@vectorize_node.register(DimShuffle)
def _dimshuffle(op, node, inputs, batched, nb):
    order = tuple(range(nb)) + tuple(o if o == "x" else o + nb for o in op.order)
    return DimShuffle(op.input_ndim + nb, order)(inputs[0])


@vectorize_node.register(ShapeI)
def _shape_i(op, node, inputs, batched, nb):
    return ShapeI(op.i + nb)(inputs[0])


@vectorize_node.register(Shape)
def _shape(op, node, inputs, batched, nb):
    (x,) = inputs
    return stack([ShapeI(k)(x) for k in range(nb, x.type.ndim)]) if x.type.ndim > nb else Shape()(node.inputs[0])


@vectorize_node.register(reduce.CAReduce)
def _careduce(op, node, inputs, batched, nb):
    return reduce.CAReduce(op.scalar_op, _shift(op.axis, nb))(inputs[0])


@vectorize_node.register(CAReduceElemwise)
def _careduce_elemwise(op, node, inputs, batched, nb):
    return _out_list(CAReduceElemwise(op.scalar_op, op.reducer, _shift(op.axis, nb))(*_pad_all(inputs, batched, nb)))


@vectorize_node.register(GatherElemwise)
def _gather_elemwise(op, node, inputs, batched, nb):
    n = op.scalar_op.nin
    if any(b for b, a in zip(batched[:n], op.gather_axes) if a is not None):  # batched positions
        return blockwise_fallback(op, node, inputs, batched, nb)
    loop = [
        x if a is not None else (x if b else pad(x, nb)) for x, b, a in zip(inputs[:n], batched[:n], op.gather_axes)
    ]
    tables = _pad_all(inputs[n:], batched[n:], nb)
    axes = tuple(None if a is None else a + nb for a in op.gather_axes)
    return _out_list(GatherElemwise(op.scalar_op, axes, op.reducer, _shift(op.axis, nb))(*loop, *tables))


@vectorize_node.register(IndexedLoop)
def _indexed_loop(op, node, inputs, batched, nb):
    # The loop is 1-d by construction; its parts (gathers, Elemwise, reductions, scatter-adds)
    # each batch natively, and the fusion rewrites join the batched ones into fused loops again.
    return vectorize_graph(op.unfused(node.inputs), dict(zip(node.inputs, inputs)))


@vectorize_node.register(reduce.Argmax)
def _argmax(op, node, inputs, batched, nb):
    return reduce.Argmax(op.axis + nb, op.mode)(inputs[0])


@vectorize_node.register(extra.CumOp)
def _cumop(op, node, inputs, batched, nb):
    return extra.CumOp(op.axis + nb, op.mode)(inputs[0])


@vectorize_node.register(extra.Assert)
def _assert(op, node, inputs, batched, nb):
    value, *conds = inputs
    conds = [reduce_all(c) if b else c for c, b in zip(conds, batched[1:])]
    return extra.Assert(op.message, op.error)(value, *conds)


@vectorize_node.register(extra.ARange)
def _arange(op, node, inputs, batched, nb):
    raise NotBatchable(f"vectorize_graph: {op} cannot be batched: its length would depend on the batched bounds")


@vectorize_node.register(shape_ops.Reshape)
def _reshape(op, node, inputs, batched, nb):
    x, *shape = inputs
    if any(batched[1:]):
        raise NotBatchable(
            f"vectorize_graph: {op} cannot be batched over its target shape (it depends on the batched inputs)"
        )
    return shape_ops.Reshape(op.ndim + nb)(x, *_entries(shape_of(x)[:nb]), *shape)


@vectorize_node.register(shape_ops.Alloc)
def _alloc(op, node, inputs, batched, nb):
    value, *shape = inputs
    if any(batched[1:]):
        raise NotBatchable(
            f"vectorize_graph: {op} cannot be batched over its target shape (it depends on the batched inputs)"
        )
    core_nd = value.type.ndim - nb
    value = DimShuffle(
        value.type.ndim, tuple(range(nb)) + ("x",) * (len(shape) - core_nd) + tuple(range(nb, value.type.ndim))
    )(value)
    return shape_ops.Alloc()(value, *_entries(shape_of(value)[:nb]), *shape)


@vectorize_node.register(join.Join)
def _join(op, node, inputs, batched, nb):
    shape = batch_shape(inputs, batched, nb)
    pieces = [full_batch(x if b else pad(x, nb), shape, nb) for x, b in zip(inputs, batched)]
    return join.Join(op.axis + nb)(*pieces)


@vectorize_node.register(join.Split)
def _split(op, node, inputs, batched, nb):
    x, *sizes = inputs
    if any(batched[1:]):
        raise NotBatchable(f"vectorize_graph: {op} cannot be batched over its sizes")
    return _out_list(join.Split(op.axis + nb, op.sizes)(x, *sizes))


@vectorize_node.register(linalg.MatMul)
def _matmul(op, node, inputs, batched, nb):
    a_vec, b_vec = node.inputs[0].type.ndim == 1, node.inputs[1].type.ndim == 1
    # a stack of vectors times one matrix is one matrix product: (B.., k) @ (k, n), A @ v_b -> v_b @ A.T
    if batched == [True, False] and a_vec and node.inputs[1].type.ndim == 2:
        return linalg.MatMul()(inputs[0], inputs[1])
    if batched == [False, True] and b_vec and node.inputs[0].type.ndim == 2:
        return linalg.MatMul()(inputs[1], DimShuffle(2, (1, 0))(inputs[0]))
    if node.inputs[0].type.ndim == 2 and node.inputs[1].type.ndim == 2 and batched.count(True) == 1:
        return _one_matmul(*inputs, batched[0], nb)
    a, b = _pad_all(inputs, batched, nb)
    a2 = expand_dims(a, a.type.ndim - 1) if a_vec else a
    b2 = expand_dims(b, b.type.ndim) if b_vec else b
    out = linalg.MatMul()(a2, b2)
    drop = ([out.type.ndim - 2] if a_vec else []) + ([out.type.ndim - 1] if b_vec else [])
    return squeeze(out, tuple(drop)) if drop else out


def _one_matmul(a, b, a_batched, nb):
    """A stack of matrices times one matrix as one 2-d product (a GEMM, not a batch of small ones).

    (B.., m, k) @ (k, n): the stack's rows are one (B*m, k) matrix. (m, k) @ (B.., k, n): the
    stack's columns side by side, (k, B*n), and the result's columns split back into the batch.
    """
    if a_batched:
        shape = shape_of(a)
        out = linalg.MatMul()(reshape(a, (product(shape[: nb + 1]), shape[nb + 1])), b)
        return reshape(out, tuple(shape[: nb + 1]) + (shape_of(b)[1],))
    shape = shape_of(b)
    cols = reshape(
        transpose(b, (nb,) + tuple(range(nb)) + (nb + 1,)), (shape[nb], product(shape[:nb] + (shape[nb + 1],)))
    )
    out = reshape(linalg.MatMul()(a, cols), (shape_of(a)[0],) + tuple(shape[:nb]) + (shape[nb + 1],))
    return transpose(out, tuple(range(1, nb + 1)) + (0, nb + 1))


@vectorize_node.register(linalg.Einsum)
def _einsum(op, node, inputs, batched, nb):
    used = set(op.subscripts)
    free = [c for c in string.ascii_letters if c not in used][:nb]
    if len(free) < nb:
        return blockwise_fallback(op, node, inputs, batched, nb)
    prefix = "".join(free)
    terms = [prefix + t for t in op.terms]
    return linalg.einsum(",".join(terms) + "->" + prefix + op.output, *_pad_all(inputs, batched, nb))


@vectorize_node.register(Blockwise)
def _blockwise(op, node, inputs, batched, nb):
    return _out_list(op(*_pad_all(inputs, batched, nb)))


@vectorize_node.register(subtensor.Subtensor)
def _subtensor(op, node, inputs, batched, nb):
    if any(batched[1:]):  # positions that vary with the batch: a gather per batch element
        return blockwise_fallback(op, node, inputs, batched, nb)
    return subtensor.Subtensor((subtensor.FULL_SLICE,) * nb + tuple(op.index))(*inputs)


def _inc_inputs(node, inputs, batched, nb):
    """x broadcast to the full batch, and the value lined up with x[index] (core axes it lacks after the batch)."""
    x, v = inputs[0], inputs[1]
    x = full_batch(x if batched[0] else pad(x, nb), batch_shape(inputs[:2], batched[:2], nb), nb)
    v = v if batched[1] else pad(v, nb)
    missing = _target_ndim(node) - (v.type.ndim - nb)
    if missing > 0:
        v = DimShuffle(v.type.ndim, tuple(range(nb)) + ("x",) * missing + tuple(range(nb, v.type.ndim)))(v)
    return x, v


def _target_ndim(node):
    """The number of axes of x[index] in the original node."""
    op = node.op
    sub = subtensor.Subtensor if isinstance(op, subtensor.IncSubtensor) else subtensor.AdvancedSubtensor
    return sub(op.index)(node.inputs[0], *node.inputs[2:]).type.ndim


@vectorize_node.register(subtensor.IncSubtensor)
def _inc_subtensor(op, node, inputs, batched, nb):
    if any(batched[2:]):
        return blockwise_fallback(op, node, inputs, batched, nb)
    x, v = _inc_inputs(node, inputs, batched, nb)
    return subtensor.IncSubtensor((subtensor.FULL_SLICE,) * nb + tuple(op.index), op.mode)(x, v, *inputs[2:])


def _arrays_adjacent(index):
    arrays = [k for k, e in enumerate(index) if e == subtensor.ARRAY]
    return not arrays or arrays == list(range(arrays[0], arrays[0] + len(arrays)))


@vectorize_node.register(subtensor.AdvancedSubtensor)
def _advanced_subtensor(op, node, inputs, batched, nb):
    if not any(batched[1:]):
        if not _arrays_adjacent(op.index):
            return blockwise_fallback(op, node, inputs, batched, nb)
        return subtensor.AdvancedSubtensor((subtensor.FULL_SLICE,) * nb + tuple(op.index))(*inputs)
    return _batched_gather(op, node, inputs, batched, nb)


def _batched_index(op, node, x, idx, idx_batched, nb):
    """For batched integer index arrays: `(x, index, index inputs, order)` of one advanced index
    that reads (or writes) `x[b][..., idx[b], ...]` for every batch element b; None where it cannot
    (an unbatched mask among them, newaxis, batched slice bounds). A batched mask is `NotBatchable`:
    the number of positions it selects varies with the batch.

    Every index array gets the batch axes first and length-1 axes up to the
    broadcast rank of the originals; `x` (batched, broadcast to the full batch)
    is indexed along its batch axes by aranges. NumPy puts the broadcast index
    axes first when the arrays are not adjacent, which the original index does
    not when its arrays are adjacent after some slices: `order` is then the
    permutation from the indexed layout (batch, index axes, slices before,
    slices after) to the original one with the batch first.
    """
    index, n_idx = tuple(op.index), len(idx)
    roles = []  # per index input: "array" or "slice part"
    for e in index:
        if e == subtensor.ARRAY:
            roles.append("array")
        elif isinstance(e, tuple):
            roles += ["slice part"] * sum(p == subtensor.SYMBOLIC for p in e[1:])
    originals = node.inputs[len(node.inputs) - n_idx :]
    arrays = [k for k, r in enumerate(roles) if r == "array"]
    if any(idx_batched[k] and np.dtype(originals[k].type.dtype).kind == "b" for k in arrays):
        raise NotBatchable(
            f"vectorize_graph: {op} cannot be batched over a boolean mask: the number of positions it selects varies with the batch"
        )
    if (
        subtensor.NEWAXIS in index
        or any(np.dtype(originals[k].type.dtype).kind == "b" for k in arrays)
        or any(b for b, r in zip(idx_batched, roles) if r == "slice part")
    ):
        return None
    rank = max(originals[k].type.ndim for k in arrays)
    idx = list(idx)
    for k in arrays:
        a = idx[k] if idx_batched[k] else pad(idx[k], nb)
        core = originals[k].type.ndim
        idx[k] = DimShuffle(a.type.ndim, tuple(range(nb)) + ("x",) * (rank - core) + tuple(range(nb, a.type.ndim)))(a)
    shape = batch_shape([x] + [idx[k] for k in arrays], [True] + [idx_batched[k] for k in arrays], nb)
    x = full_batch(x, shape, nb)
    ranges = []
    for j in range(nb):
        r = extra.arange(0, shape_entry_as_variable(shape_of(x)[j]), 1, dtype="int64")
        ranges.append(DimShuffle(1, ("x",) * j + (0,) + ("x",) * (nb + rank - j - 1))(r))
    first = index.index(subtensor.ARRAY)
    order = None
    if _arrays_adjacent(index) and first > 0:
        order = list(range(nb)) + [nb + rank + i for i in range(first)] + [nb + i for i in range(rank)]
    return x, (subtensor.ARRAY,) * nb + index, ranges + idx, order


def _with_rest(order, ndim):
    return tuple(order) + tuple(range(len(order), ndim))


def _batched_gather(op, node, inputs, batched, nb):
    """`x[..., idx, ...]` with batched index arrays: one gather (`_batched_index`)."""
    x = inputs[0] if batched[0] else pad(inputs[0], nb)
    found = _batched_index(op, node, x, inputs[1:], batched[1:], nb)
    if found is None:
        return blockwise_fallback(op, node, inputs, batched, nb)
    x, index, idx, order = found
    out = subtensor.AdvancedSubtensor(index)(x, *idx)
    return out if order is None else DimShuffle(out.type.ndim, _with_rest(order, out.type.ndim))(out)


@vectorize_node.register(subtensor.AdvancedIncSubtensor)
def _advanced_inc_subtensor(op, node, inputs, batched, nb):
    if any(batched[2:]):  # batched positions: one scatter (`_batched_index`)
        x, v = _inc_inputs(node, inputs, batched, nb)
        found = _batched_index(op, node, x, inputs[2:], batched[2:], nb)
        if found is None:
            return blockwise_fallback(op, node, inputs, batched, nb)
        x, index, idx, order = found
        if order is not None:  # v is in the original layout; the scatter reads it in the indexed one
            inverse = [order.index(a) for a in range(len(order))]
            v = DimShuffle(v.type.ndim, _with_rest(inverse, v.type.ndim))(v)
        return subtensor.AdvancedIncSubtensor(index, op.mode)(x, v, *idx)
    if not _arrays_adjacent(op.index):
        return blockwise_fallback(op, node, inputs, batched, nb)
    x, v = _inc_inputs(node, inputs, batched, nb)
    return subtensor.AdvancedIncSubtensor((subtensor.FULL_SLICE,) * nb + tuple(op.index), op.mode)(x, v, *inputs[2:])
