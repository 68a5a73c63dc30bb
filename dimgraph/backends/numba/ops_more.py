"""numba kernels for indexing, joins, scans, ranges, asserts, fused reductions and linear algebra.

Printed kernels cover the common forms (basic indexing and its set/inc, one
integer index array, concatenation and split, cumulative ops, matrix products
of 1-d/2-d operands, fused reduce-of-elemwise and indexed loops).
The remaining forms (several index arrays, boolean masks, batched products,
einsum, decompositions) run the op's NumPy `perform` inside the jitted graph
through `numba.objmode`: correct everywhere, at Python speed for that node.
Those entries are registered explicitly (`_objmode`), so an op nobody registered
still fails at compile time naming itself and the backend.
"""

from __future__ import annotations

import pickle

import numpy as np

from dimgraph.backends.numba.ops import _tuple, numba_kernel, print_loop
from dimgraph.backends.numba.scalar import np_type
from dimgraph.core.fused import CAReduceElemwise, IndexedLoop


def _objmode_kernel(op, node) -> str:
    """A kernel that calls `op.perform` in object mode; output types are declared from the node."""
    payload = pickle.dumps((op, [i.type for i in node.inputs]), protocol=4).hex()
    args = [f"x{k}" for k in range(len(node.inputs))]
    outs = [f"o{k}" for k in range(len(node.outputs))]
    types = [
        f"_t{k} = numba.types.Array(numba.from_dtype(np.dtype('{o.type.dtype}')), {o.type.ndim}, 'A')"
        for k, o in enumerate(node.outputs)
    ]
    decl = ", ".join(f"o{k}=_t{k}" for k in range(len(outs)))
    return (
        "from dimgraph.backends.numba.fallback import perform_caller\n\n"
        f'_perform = perform_caller("{payload}")\n'
        + "\n".join(types)
        + f"\n\n\ndef kernel({', '.join(args)}):\n"
        f"    with numba.objmode({decl}):\n"
        f"        {', '.join(outs)} = _perform({', '.join(args)})\n"
        f"    return {', '.join(outs)}\n"
    )


def _objmode(op_type):
    numba_kernel.register(op_type)(_objmode_kernel)


# -- fused loops (reduce-of-elemwise, indexed loops) -------------------------


@numba_kernel.register(CAReduceElemwise)
def _careduce_elemwise(op, node):
    sink, dtypes = (op.reducer, tuple(op.axis)), [i.type.dtype for i in node.inputs]
    sinks = lambda outs: [(r, sink + (o.type.dtype,)) for r, o in zip(outs, node.outputs)]  # noqa: E731
    return print_loop(op, node.inputs, dtypes, sinks, reciprocals=True)


@numba_kernel.register(IndexedLoop)
def _indexed_loop(op, node):
    loop_inputs, tables, scatters = op.split_inputs(node.inputs)
    table_of = dict(zip([v for v, g in enumerate(op.gathered) if g], tables))
    sinks, scatter_at, scatter_of = [], {}, iter(scatters)
    for k, ((out, kind, reducer), o) in enumerate(zip(op.results, node.outputs)):
        dtype = o.type.dtype
        sinks.append((out, None if kind == "full" else (reducer, (0,), dtype) if kind == "reduce" else ("scatter", dtype)))
        if kind == "scatter":  # the same index array into a table of the same static length: one check
            base, idx = next(scatter_of)
            for v, table in table_of.items():
                if loop_inputs[v] is idx and table.type.shape[0] is not None and table.type.shape == base.type.shape:
                    scatter_at[k] = v
    return print_loop(
        op,
        loop_inputs,
        op.scalar_op.in_dtypes,
        lambda outs: [(outs[out], sink) for out, sink in sinks],
        gathered=op.gathered,
        scatter_at=scatter_at,
        reciprocals=True,
    )


# -- indexing ----------------------------------------------------------------
try:
    from dimgraph.core import subtensor as _sub
except ImportError:  # pragma: no cover
    _sub = None


def _basic_key_src(index, first_scalar):
    """(checks, key) source for a basic index; scalar inputs are s{k} from `first_scalar`."""
    checks, key, k, axis = [], [], first_scalar, 0
    for e in index:
        if e == _sub.NEWAXIS:
            key.append("None")
            continue
        if isinstance(e, tuple):
            parts = []
            for p in e[1:]:
                if p == _sub.SYMBOLIC:
                    parts.append(f"s{k}.item()")
                    k += 1
                else:
                    parts.append("None" if p is None else str(int(p)))
            key.append(":".join(parts))
        else:
            pos = f"s{k}.item()" if e == _sub.SYMBOLIC else str(int(e))
            if e == _sub.SYMBOLIC:
                k += 1
            checks.append(f"    i{axis} = rt_views.check_index({pos}, x.shape[{axis}], {axis})")
            key.append(f"i{axis}")
        axis += 1
    return checks, key, k


if _sub is not None:

    @numba_kernel.register(_sub.Subtensor)
    def _subtensor(op, node):
        n_scalars = len(node.inputs) - 1
        checks, key, _ = _basic_key_src(op.index, 0)
        args = ["x"] + [f"s{k}" for k in range(n_scalars)]
        item = f"x[{', '.join(key) if key else '()'}]"
        # Numba gives a scalar for a 0-d read; the graph's type (and the caller) wants a 0-d array.
        body = checks + [f"    return np.asarray({item})" if node.outputs[0].type.ndim == 0 else f"    return {item}"]
        if all(e == _sub.NEWAXIS or e == _sub.FULL_SLICE for e in op.index):
            # only new axes: a reshape-like view that keeps a C-contiguous array C-typed
            shape, strides, axis = [], [], 0
            for e in op.index:
                if e == _sub.NEWAXIS:
                    shape.append("1")
                    strides.append("0")
                else:
                    shape.append(f"x.shape[{axis}]")
                    strides.append(f"x.strides[{axis}]")
                    axis += 1
            body = [f"    return rt_views.expand_view(x, {_tuple(shape)}, {_tuple(strides)})"]
        return f"def kernel({', '.join(args)}):\n" + "\n".join(body) + "\n"

    @numba_kernel.register(_sub.IncSubtensor)
    def _inc_subtensor(op, node):
        if _sub.NEWAXIS in op.index:
            return _objmode_kernel(op, node)
        n_scalars = len(node.inputs) - 2
        checks, key, _ = _basic_key_src(op.index, 0)
        args = ["x", "v"] + [f"s{k}" for k in range(n_scalars)]
        item = f"out[{', '.join(key) if key else '()'}]"
        sym = "+=" if op.mode == "inc" else "="
        body = checks + ["    out = x.copy()"]
        v_type = node.inputs[1].type
        if node.outputs[0].type.ndim - sum(not isinstance(e, tuple) for e in op.index) == 0:
            body.append(f"    {item} {sym} v[()]")  # a single element
        else:
            body.append(f"    sel = {item}")
            offset = f"sel.ndim - {v_type.ndim}"
            for k, size in enumerate(v_type.shape):
                if size is None:  # as the python backend: only a static size 1 broadcasts
                    message = f"{op}: axis {k} of the value and the selection differ in size; only axes of static size 1 broadcast"
                    body.append(f"    if v.shape[{k}] != sel.shape[{offset} + {k}]:")
                    body.append(f"        raise ShapeError({message!r})")
            body.append(f"    sel[...] {sym} v" if op.mode == "set" else "    sel += v")
        body.append("    return out")
        return f"def kernel({', '.join(args)}):\n" + "\n".join(body) + "\n"

    def _single_int_array(op, node, first):
        """The axis of the one integer index array when all other entries are full slices, else None."""
        entries = list(op.index)
        arrays = [k for k, e in enumerate(entries) if e == _sub.ARRAY]
        if len(arrays) != 1 or any(e != _sub.FULL_SLICE for k, e in enumerate(entries) if k != arrays[0]):
            return None
        if np.dtype(node.inputs[first].type.dtype).kind not in "iu":
            return None
        return arrays[0]

    @numba_kernel.register(_sub.AdvancedSubtensor)
    def _advanced_subtensor(op, node):
        axis = _single_int_array(op, node, 1)
        if axis is None:
            return _objmode_kernel(op, node)
        dtype = np_type(node.outputs[0].type.dtype)
        if node.inputs[0].type.ndim == 1:  # a plain gather: one loop
            return f"""def kernel(x, idx):
    n = x.shape[0]
    out = np.empty(idx.shape, dtype={dtype})
    ii = rt_views.reshape(idx, (-1,))
    oo = out.reshape((-1,))
    for b in range(ii.shape[0]):
        oo[b] = x[rt_views.check_index(ii[b], n, 0)]
    return out
"""
        return f"""def kernel(x, idx):
    n = x.shape[{axis}]
    pre = 1
    for a in range({axis}):
        pre *= x.shape[a]
    post = 1
    for a in range({axis + 1}, x.ndim):
        post *= x.shape[a]
    out = np.empty(x.shape[:{axis}] + idx.shape + x.shape[{axis + 1}:], dtype={dtype})
    x3 = rt_views.reshape(x, (pre, n, post))
    ii = rt_views.reshape(idx, (-1,))
    m = ii.shape[0]
    o3 = out.reshape((pre, m, post))
    for b in range(m):
        k = rt_views.check_index(ii[b], n, {axis})
        for a in range(pre):
            for c in range(post):
                o3[a, b, c] = x3[a, k, c]
    return out
"""

    @numba_kernel.register(_sub.AdvancedIncSubtensor)
    def _advanced_inc_subtensor(op, node):
        axis = _single_int_array(op, node, 2)
        if axis is None:
            return _objmode_kernel(op, node)
        update = "o3[a, k, c] += v3[a, b, c]" if op.mode == "inc" else "o3[a, k, c] = v3[a, b, c]"
        v_type, i_type = node.inputs[1].type, node.inputs[2].type
        if node.inputs[0].type.ndim == 1 and i_type.ndim == 1 and v_type.ndim == 1 and v_type.shape[0] != 1:
            # a plain scatter of a full-length value: one loop, no broadcast copy
            sym = "+=" if op.mode == "inc" else "="
            return f"""def kernel(x, v, idx):
    n = x.shape[0]
    if v.shape[0] != idx.shape[0]:
        raise ShapeError('{type(op).__name__}: the value and the index array differ in length')
    out = x.copy()
    for b in range(idx.shape[0]):
        out[rt_views.check_index(idx[b], n, 0)] {sym} v[b]
    return out
"""
        return f"""def kernel(x, v, idx):
    n = x.shape[{axis}]
    pre = 1
    for a in range({axis}):
        pre *= x.shape[a]
    post = 1
    for a in range({axis + 1}, x.ndim):
        post *= x.shape[a]
    out = x.copy()
    ii = rt_views.reshape(idx, (-1,))
    m = ii.shape[0]
    sel = x.shape[:{axis}] + idx.shape + x.shape[{axis + 1}:]
    v3 = np.ascontiguousarray(np.broadcast_to(v, sel)).reshape((pre, m, post))
    o3 = out.reshape((pre, n, post))
    for b in range(m):
        k = rt_views.check_index(ii[b], n, {axis})
        for a in range(pre):
            for c in range(post):
                {update}
    return out
"""


# -- join / split ----------------------------------------------------------------
try:
    from dimgraph.core import join as _join
except ImportError:  # pragma: no cover
    _join = None

if _join is not None:

    @numba_kernel.register(_join.Join)
    def _join_kernel(op, node):
        args = [f"x{k}" for k in range(len(node.inputs))]
        if len(args) == 1:
            return "def kernel(x0):\n    return x0.copy()\n"
        nd = node.inputs[0].type.ndim
        checks = [
            f"    if {a}.shape[{ax}] != x0.shape[{ax}]:\n"
            f"        raise ShapeError('Join: axis {ax} of the inputs has different sizes (only axis {op.axis} may differ)')"
            for a in args[1:]
            for ax in range(nd)
            if ax != op.axis
        ]
        return (
            f"def kernel({', '.join(args)}):\n"
            + "".join(c + "\n" for c in checks)
            + f"    return np.concatenate({_tuple(args)}, axis={op.axis})\n"
        )

    @numba_kernel.register(_join.Split)
    def _split_kernel(op, node):
        n_sym = len(node.inputs) - 1
        args = ["x"] + [f"s{k}" for k in range(n_sym)]
        body, sym, ends = [], iter(range(n_sym)), ["0"]
        for k, size in enumerate(op.sizes):
            body.append(f"    c{k} = {f's{next(sym)}.item()' if size is None else int(size)}")
            ends.append(f"e{k}")
            body.append(f"    e{k} = {ends[-2]} + c{k}")
        bad = " or ".join([f"c{k} < 0" for k in range(len(op.sizes))] + [f"{ends[-1]} != x.shape[{op.axis}]"])
        message = f"{op}: the sizes do not add up to the length of axis {op.axis} (or one is negative)"
        body += [f"    if {bad}:", f"        raise ShapeError({message!r})"]
        outs = []
        for k in range(len(op.sizes)):
            key = ", ".join([":"] * op.axis + [f"{ends[k]}:{ends[k + 1]}"])
            body.append(f"    o{k} = x[{key}].copy()")
            outs.append(f"o{k}")
        body.append(f"    return {', '.join(outs)}")
        return f"def kernel({', '.join(args)}):\n" + "\n".join(body) + "\n"


# -- scans, ranges, asserts ------------------------------------------------------
try:
    from dimgraph.core import extra as _extra
except ImportError:  # pragma: no cover
    _extra = None

if _extra is not None:

    @numba_kernel.register(_extra.CumOp)
    def _cumop(op, node):
        nd = node.inputs[0].type.ndim
        order = [a for a in range(nd) if a != op.axis] + [op.axis]
        dtype = np_type(node.outputs[0].type.dtype)
        sym = "+" if op.mode == "add" else "*"
        shape = _tuple(f"x.shape[{a}]" for a in order)
        strides = _tuple(f"x.strides[{a}]" for a in order)
        ostrides = _tuple(f"out.strides[{a}]" for a in order)
        return f"""def kernel(x):
    out = np.empty(x.shape, dtype={dtype})
    y = rt_views.strided_view(x, {shape}, {strides})
    z = rt_views.strided_view(out, {shape}, {ostrides})
    n = y.shape[-1]
    for idx in np.ndindex(y.shape[:-1]):
        row = y[idx]
        dst = z[idx]
        acc = {dtype}({'0' if op.mode == 'add' else '1'})
        for i in range(n):
            acc = {dtype}(acc {sym} {dtype}(row[i]))
            dst[i] = acc
    return out
"""

    @numba_kernel.register(_extra.ARange)
    def _arange(op, node):
        return "from dimgraph.backends.numba.fallback import arange\n\n\ndef kernel(start, stop, step):\n" + (
            f"    return arange(start.item(), stop.item(), step.item(), {np_type(op.dtype)}(0))\n"
        )

    @numba_kernel.register(_extra.Assert)
    def _assert(op, node):
        conds = [f"c{k}" for k in range(len(node.inputs) - 1)]
        message = op.message.encode("utf-8", "surrogatepass").hex()  # any str, lone surrogates included
        test = " and ".join(f"c{k}.item()" for k in range(len(conds))) or "True"
        return (
            f'_MESSAGE = bytes.fromhex("{message}").decode("utf-8", "surrogatepass")\n\n\n'
            f"def kernel(x{''.join(', ' + c for c in conds)}):\n"
            f"    if not ({test}):\n"
            "        raise AssertionError(_MESSAGE)\n"
            "    return x\n"
        )


# -- linear algebra ----------------------------------------------------------------
try:
    from dimgraph.core import linalg as _linalg
except ImportError:  # pragma: no cover
    _linalg = None

if _linalg is not None:
    from dimgraph.core.graph import Op as _Op

    for _name in dir(_linalg):
        _obj = getattr(_linalg, _name)
        if isinstance(_obj, type) and issubclass(_obj, _Op) and _obj is not _Op and _obj.__module__ == _linalg.__name__:
            _objmode(_obj)
