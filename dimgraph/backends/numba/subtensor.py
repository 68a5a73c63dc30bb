"""numba kernels for indexing: basic indexing and its set/inc, one integer index array and its set/inc
(short loops), and every other advanced index (several index arrays, boolean masks, slices and new
axes mixed: `general_advanced`), all in nopython mode.

A basic set/inc with new axes runs the op's NumPy `perform` (`ops.objmode_kernel`: by the driver, or
in object mode inside jitted code).
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends.numba.ops import _tuple, copy_lines, numba_kernel
from dimgraph.backends.numba.scalar import np_type
from dimgraph.core import subtensor as sub
from dimgraph.core.broadcast import mismatch_message
from dimgraph.core.graph import Constant


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


def _without_new_axes(op, node):
    """(index, value's static shape, lines) of a set/inc with new axes written as one without: the value
    comes as `v0`, and its axes that meet a new axis of the selection (size 1 there, checked) are read at
    0 into `v`."""
    selected = [e == sub.NEWAXIS for e in op.index if isinstance(e, tuple) or e == sub.NEWAXIS]
    v_shape = node.inputs[1].type.shape
    off = len(selected) - len(v_shape)
    key, lines, kept = [], [], []
    for k, size in enumerate(v_shape):
        if selected[off + k]:
            message = mismatch_message(str(op), f"axis {k} of the value", where="from the selection's new axis")
            lines += [f"    if v0.shape[{k}] != 1:", f"        raise ShapeError({message!r})"]
            key.append("0")
        else:
            key.append(":")
            kept.append(size)
    if "0" not in key:
        lines.append("    v = v0")
    else:
        read = f"v0[{', '.join(key)}]"
        lines.append(f"    v = {read}" if kept else f"    v = np.asarray({read})")
    return tuple(e for e in op.index if e != sub.NEWAXIS), tuple(kept), lines


@numba_kernel.register(sub.IncSubtensor)
def _inc_subtensor(op, node):
    index, v_shape, lines = op.index, node.inputs[1].type.shape, []
    if sub.NEWAXIS in op.index:
        index, v_shape, lines = _without_new_axes(op, node)
    n_scalars = len(node.inputs) - 2
    checks, key, _ = _basic_key_src(index, 0)
    args = ["x", "v0" if lines else "v"] + [f"s{k}" for k in range(n_scalars)]
    item = f"out[{', '.join(key) if key else '()'}]"
    sym = "+=" if op.mode == "inc" else "="
    body = lines + checks + ["    out = x.copy()"]
    sel_ndim = node.outputs[0].type.ndim - sum(not isinstance(e, tuple) for e in index)
    if sel_ndim == 0:
        body.append(f"    {item} {sym} v[()]")  # a single element
    else:
        body.append(f"    sel = {item}")
        off = sel_ndim - len(v_shape)  # the value's axes are the selection's last ones
        for k, size in enumerate(v_shape):
            if size is None:  # as the python backend: only a static size 1 broadcasts
                message = mismatch_message(str(op), f"axis {k} of the value", where="from the selection's")
                body.append(f"    if v.shape[{k}] != sel.shape[{off + k}]:")
                body.append(f"        raise ShapeError({message!r})")
        read = ", ".join("0" if size == 1 else f"j{off + k}" for k, size in enumerate(v_shape))
        body += copy_lines("sel", "v", sel_ndim, src_at=read, assign=sym)
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
        return general_advanced(op, node, 1)
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
        return general_advanced(op, node, 2)
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


# ---------------------------------------------------------------------------------------------------------
# every other advanced index: several index arrays, boolean masks, slices and new axes mixed


SLICE_BOUNDS = '''
@numba.njit(cache=True)
def _slice(start, stop, step, n, has_start, has_stop):
    """(first position, length) of `range(n)[start:stop:step]` (`slice.indices`' clamping)."""
    if step > 0:
        lo, hi = 0, n
    else:
        lo, hi = -1, n - 1
    if not has_start:
        start = lo if step > 0 else hi
    elif start < 0:
        start = max(start + n, lo)
    else:
        start = min(start, hi)
    if not has_stop:
        stop = hi if step > 0 else lo
    elif stop < 0:
        stop = max(stop + n, lo)
    else:
        stop = min(stop, hi)
    if step > 0:
        return start, max((stop - start + step - 1) // step, 0)
    return start, max((start - stop - step - 1) // (-step), 0)
'''


def general_advanced(op, node, first):
    """A nopython kernel for any advanced index (`first`: the position of the first index input, 1 for the
    read and 2 for set/inc): masks become their positions (`np.nonzero`), the index arrays broadcast as
    NumPy's (only their axes of static size 1 stretch, as the python backend), and one loop nest per
    selected element reads (or writes) `x` at its coordinates, in the selection's C order (a repeated
    position accumulates for `inc`; the last write wins for `set`, as NumPy)."""
    inc = first == 2
    name = type(op).__name__
    x_type = node.inputs[0].type
    inputs = iter(enumerate(node.inputs[first:]))
    lines, parts, axis, arrays = [], [], 0, []  # parts: ("basic", start, step, length, x axis) or ("adv",)
    for e in op.index:
        if e == sub.NEWAXIS:
            parts.append(("basic", "0", "0", "1", None))
            continue
        if e == sub.ARRAY:
            k, var = next(inputs)
            if var.type.dtype == "bool":
                d = var.type.ndim
                for j in range(d):
                    lines += [
                        f"    if i{k}.shape[{j}] != x.shape[{axis + j}]:",
                        f"        raise IndexError('{name}: boolean index did not match the indexed array along axis {axis + j}')",
                    ]
                lines.append(f"    nz{k} = np.nonzero(i{k})")
                static = int(np.count_nonzero(var.data)) if isinstance(var, Constant) else None
                for j in range(d):
                    arrays.append((f"nz{k}[{j}]", 1, (static,), axis + j, False))
                axis += d
            else:
                arrays.append((f"i{k}", var.type.ndim, var.type.shape, axis, True))
                axis += 1
            if not parts or parts[-1][0] != "adv":
                parts.append(("adv",))
            else:
                parts.append(("adv-more",))
            continue
        bounds = []
        for p, default in zip(e[1:], ("0", "0", "1")):
            if p == sub.SYMBOLIC:
                k, _ = next(inputs)
                bounds.append(f"i{k}.item()")
            else:
                bounds.append(default if p is None else str(int(p)))
        start, stop, step = bounds
        lines.append(
            f"    st{axis}, ln{axis} = _slice({start}, {stop}, {step}, x.shape[{axis}], {e[1] is not None}, {e[2] is not None})"
        )
        lines.append(f"    sp{axis} = {step}")
        if e[3] == sub.SYMBOLIC:
            lines += [f"    if sp{axis} == 0:", f"        raise ValueError('{name}: slice step cannot be zero')"]
        parts.append(("basic", f"st{axis}", f"sp{axis}", f"ln{axis}", axis))
        axis += 1
    parts = [p for p in parts if p[0] != "adv-more"]
    # the broadcast shape of the index arrays: NumPy's rule, and only static sizes of 1 stretch
    nd = max(a[1] for a in arrays)
    bshape = []
    for j in range(nd):
        lines.append(f"    B{j} = 1")
        for ref, ndim, _, _, _ in arrays:
            k = j - (nd - ndim)
            if k >= 0:
                lines += [
                    f"    if {ref}.shape[{k}] != 1:",
                    f"        if B{j} != 1 and B{j} != {ref}.shape[{k}]:",
                    f"            raise IndexError('{name}: shape mismatch: indexing arrays could not be broadcast together')",
                    f"        B{j} = {ref}.shape[{k}]",
                ]
        for n_arr, (ref, ndim, static, _, _) in enumerate(arrays):
            k = j - (nd - ndim)
            if k >= 0 and static[k] != 1:
                message = mismatch_message(
                    name, f"axis {j} of the index arrays", where=f"(index array {n_arr} does not stretch)"
                )
                lines += [f"    if {ref}.shape[{k}] != B{j}:", f"        raise ShapeError({message!r})"]
        bshape.append(f"B{j}")
    lines.append(f"    nB = {' * '.join(bshape) if bshape else '1'}")
    for n_arr, (ref, ndim, _, _, _) in enumerate(arrays):
        lines.append(f"    f{n_arr} = rt_views.reshape({ref}, ({ref}.size,))")
    # adjacent arrays and masks are one part: one part keeps its place, several go first (NumPy's rule)
    basics = [p for p in parts if p[0] == "basic"]
    order = parts if sum(p[0] == "adv" for p in parts) == 1 else [("adv",)] + basics
    work = [("nB" if p[0] == "adv" else p[3]) for p in order]
    sel = []
    for p in order:
        sel += bshape if p[0] == "adv" else [p[3]]
    sel_shape = _tuple(sel)
    work_shape = _tuple(work)
    dtype = np_type(node.outputs[0].type.dtype)
    if inc:
        v_type = node.inputs[1].type
        off = len(sel) - v_type.ndim
        for k, size in enumerate(v_type.shape):
            if size != 1:
                message = mismatch_message(name, f"axis {k} of the value", where="from the selection's")
                lines += [f"    if v.shape[{k}] != {sel[off + k]}:", f"        raise ShapeError({message!r})"]
        lines.append("    out = x.copy()")
        if sel:
            lines.append(f"    vr = np.ascontiguousarray(np.broadcast_to(v, {sel_shape})).reshape({work_shape})")
        else:
            lines.append(f"    vr = rt_views.reshape(v, {work_shape})")
    else:
        lines.append(f"    out = np.empty({sel_shape}, dtype={dtype})")
        lines.append(f"    outr = out.reshape({work_shape})")
    coords = [None] * x_type.ndim
    loop_vars, indent = [], "    "
    for p in order:
        if p[0] == "adv":
            lines.append(f"{indent}for b in range(nB):")
            indent += "    "
            loop_vars.append("b")
            rest = "b"
            # unravel b over the broadcast shape, from the last axis
            for j in reversed(range(nd)):
                lines.append(f"{indent}c{j} = {rest} % B{j}")
                if j:
                    lines.append(f"{indent}r{j} = {rest} // B{j}")
                    rest = f"r{j}"
            for n_arr, (ref, ndim, _, x_axis, check) in enumerate(arrays):
                terms = []
                for k in range(ndim):
                    j = k + nd - ndim
                    stride = " * ".join([f"{ref}.shape[{q}]" for q in range(k + 1, ndim)]) or "1"
                    terms.append(f"(c{j} if {ref}.shape[{k}] != 1 else 0) * {stride}")
                pos = f"f{n_arr}[{' + '.join(terms) if terms else '0'}]"
                coords[x_axis] = f"rt_views.check_index({pos}, x.shape[{x_axis}], {x_axis})" if check else pos
        else:
            var = f"j{len(loop_vars)}"
            lines.append(f"{indent}for {var} in range({p[3]}):")
            indent += "    "
            loop_vars.append(var)
            if p[4] is not None:
                coords[p[4]] = f"{p[1]} + {var} * {p[2]}"
    at = ", ".join(coords)
    here = ", ".join(loop_vars)
    if inc:
        lines.append(f"{indent}out[{at}] {'+=' if op.mode == 'inc' else '='} vr[{here}]")
    else:
        lines.append(f"{indent}outr[{here}] = x[{at}]")
    args = ["x", "v"] if inc else ["x"]
    args += [f"i{k}" for k in range(len(node.inputs) - first)]
    return SLICE_BOUNDS + f"\n\ndef kernel({', '.join(args)}):\n" + "\n".join(lines) + "\n    return out\n"
