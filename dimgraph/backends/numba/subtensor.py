"""numba kernels for indexing: basic indexing and its set/inc, one integer index array and its set/inc.

Other forms (several index arrays, boolean masks) run the op's NumPy `perform`
(`ops.objmode_kernel`: by the driver, or in object mode inside jitted code).
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends.numba.ops import _tuple, numba_kernel, objmode_kernel
from dimgraph.backends.numba.scalar import np_type
from dimgraph.core import subtensor as sub
from dimgraph.core.broadcast import mismatch_message


def _basic_key_src(index, first_scalar):
    """(checks, key) source for a basic index; scalar inputs are s{k} from `first_scalar`."""
    checks, key, k, axis = [], [], first_scalar, 0
    for e in index:
        if e == sub.NEWAXIS:
            key.append("None")
            continue
        if isinstance(e, tuple):
            parts = []
            for p in e[1:]:
                if p == sub.SYMBOLIC:
                    parts.append(f"s{k}.item()")
                    k += 1
                else:
                    parts.append("None" if p is None else str(int(p)))
            key.append(":".join(parts))
        else:
            pos = f"s{k}.item()" if e == sub.SYMBOLIC else str(int(e))
            if e == sub.SYMBOLIC:
                k += 1
            checks.append(f"    i{axis} = rt_views.check_index({pos}, x.shape[{axis}], {axis})")
            key.append(f"i{axis}")
        axis += 1
    return checks, key, k


@numba_kernel.register(sub.Subtensor)
def _subtensor(op, node):
    n_scalars = len(node.inputs) - 1
    checks, key, _ = _basic_key_src(op.index, 0)
    args = ["x"] + [f"s{k}" for k in range(n_scalars)]
    item = f"x[{', '.join(key) if key else '()'}]"
    # Numba gives a scalar for a 0-d read; the graph's type (and the caller) wants a 0-d array.
    body = checks + [f"    return np.asarray({item})" if node.outputs[0].type.ndim == 0 else f"    return {item}"]
    if all(e == sub.NEWAXIS or e == sub.FULL_SLICE for e in op.index):
        # only new axes: a reshape-like view that keeps a C-contiguous array C-typed
        shape, strides, axis = [], [], 0
        for e in op.index:
            if e == sub.NEWAXIS:
                shape.append("1")
                strides.append("0")
            else:
                shape.append(f"x.shape[{axis}]")
                strides.append(f"x.strides[{axis}]")
                axis += 1
        body = [f"    return rt_views.expand_view(x, {_tuple(shape)}, {_tuple(strides)})"]
    return f"def kernel({', '.join(args)}):\n" + "\n".join(body) + "\n"

@numba_kernel.register(sub.IncSubtensor)
def _inc_subtensor(op, node):
    if sub.NEWAXIS in op.index:
        return objmode_kernel(op, node)
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
                message = mismatch_message(str(op), f"axis {k} of the value", where="from the selection's")
                body.append(f"    if v.shape[{k}] != sel.shape[{offset} + {k}]:")
                body.append(f"        raise ShapeError({message!r})")
        body.append(f"    sel[...] {sym} v" if op.mode == "set" else "    sel += v")
    body.append("    return out")
    return f"def kernel({', '.join(args)}):\n" + "\n".join(body) + "\n"

def _single_int_array(op, node, first):
    """The axis of the one integer index array when all other entries are full slices, else None."""
    entries = list(op.index)
    arrays = [k for k, e in enumerate(entries) if e == sub.ARRAY]
    if len(arrays) != 1 or any(e != sub.FULL_SLICE for k, e in enumerate(entries) if k != arrays[0]):
        return None
    if np.dtype(node.inputs[first].type.dtype).kind not in "iu":
        return None
    return arrays[0]

@numba_kernel.register(sub.AdvancedSubtensor)
def _advanced_subtensor(op, node):
    axis = _single_int_array(op, node, 1)
    if axis is None:
        return objmode_kernel(op, node)
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

@numba_kernel.register(sub.AdvancedIncSubtensor)
def _advanced_inc_subtensor(op, node):
    axis = _single_int_array(op, node, 2)
    if axis is None:
        return objmode_kernel(op, node)
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
