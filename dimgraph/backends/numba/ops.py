"""Per-op kernels of the numba backend: the registry keyed by Op type, and the elementwise, reduce and shape entries.

`numba_kernel(op, node)` returns the source of one function `def kernel(...)`
taking the node's inputs (arrays; 0-d arrays for scalars) and returning its
output (a tuple for several). Entries read the op's static parameters while
printing, so the text is the whole truth about the kernel: kernels with equal
text are compiled once per process and cached on disk by Numba (see `cache.py`).
Elemwise-like ops go through the loop printer (`loops.py`); the rest are short
templates over Numba's NumPy support. The other op families register theirs in
modules mirroring `dimgraph.core` (`fused`, `subtensor`, `join`, `extra`,
`linalg`, `control`, `random`). An op with no entry fails when the graph is
compiled, naming the op and the backend.
"""

from __future__ import annotations

from functools import singledispatch

import numpy as np

from dimgraph.backends.numba.fallback import register_perform
from dimgraph.backends.numba.loops import loop_kernel
from dimgraph.backends.numba.scalar import flatten, np_type
from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.reduce import Argmax, CAReduce
from dimgraph.core.shape import Shape, ShapeI
from dimgraph.core.shape_ops import Alloc, Reshape


class ObjmodeKernel(str):
    """The source of a kernel that only calls the op's NumPy `perform` (through `numba.objmode`).

    The top-level driver runs such a node by `perform` directly instead of compiling it.
    """


def objmode_kernel(op, node) -> str:
    """A kernel that calls `op.perform` in object mode; output types are declared from the node.

    The driver runs such a node by `perform` directly (`ObjmodeKernel`); the text serves
    kernels that call it from jitted code (loop bodies). It names the op by a key
    (`fallback.register_perform`), never by pickled bytes.
    """
    key = register_perform(op, [i.type for i in node.inputs])
    args = [f"x{k}" for k in range(len(node.inputs))]
    outs = [f"o{k}" for k in range(len(node.outputs))]
    types = [
        f"_t{k} = numba.types.Array(numba.from_dtype(np.dtype('{o.type.dtype}')), {o.type.ndim}, 'A')"
        for k, o in enumerate(node.outputs)
    ]
    decl = ", ".join(f"o{k}=_t{k}" for k in range(len(outs)))
    return ObjmodeKernel(
        "from dimgraph.backends.numba.fallback import perform_caller\n\n"
        f'_perform = perform_caller("{key}")\n'
        + "\n".join(types)
        + f"\n\n\ndef kernel({', '.join(args)}):\n"
        f"    with numba.objmode({decl}):\n"
        f"        {', '.join(outs)} = _perform({', '.join(args)})\n"
        f"    return {', '.join(outs)}\n"
    )


@singledispatch
def numba_kernel(op, node) -> str:
    """Source of `def kernel(*inputs)` computing `node`'s outputs."""
    raise NotImplementedError(
        f"numba backend: no implementation for op {type(op).__name__} ({op}); "
        "register one with dimgraph.backends.numba.ops.numba_kernel.register"
    )


def _bcast(var):
    return tuple(s == 1 for s in var.type.shape)


def print_loop(op, loop_inputs, in_dtypes, sinks, **options):
    """The loop kernel of `op.scalar_op` over `loop_inputs` read as `in_dtypes` (Elemwise and the fused loops).

    `sinks(outs)` pairs the flat refs of the composite's outputs with what each becomes (see `loop_kernel`).
    """
    steps, outs = flatten(op.scalar_op, len(loop_inputs))
    bcast = [_bcast(i) for i in loop_inputs]
    return loop_kernel(bcast, list(in_dtypes), steps, sinks(outs), op_name=str(op), **options)


@numba_kernel.register(Elemwise)
def _elemwise(op, node):
    dtypes = [i.type.dtype for i in node.inputs]
    return print_loop(op, node.inputs, dtypes, lambda outs: [(r, None) for r in outs])


@numba_kernel.register(CAReduce)
def _careduce(op, node):
    out_dtype = node.outputs[0].type.dtype
    # one input: nothing broadcasts, so static sizes of 1 need no special indexing (fewer distinct kernels)
    return loop_kernel(
        [(False,) * node.inputs[0].type.ndim],
        [node.inputs[0].type.dtype],
        (),
        [(0, (op.scalar_op, op.axis, out_dtype))],
        op_name=str(op),
    )


def _tuple(items):
    return "(" + "".join(f"{i}, " for i in items) + ")"


@numba_kernel.register(DimShuffle)
def _dimshuffle(op, node):
    shape = _tuple("1" if o == "x" else f"x.shape[{o}]" for o in op.order)
    strides = _tuple("0" if o == "x" else f"x.strides[{o}]" for o in op.order)
    kept = [o for o in op.order if o != "x"]
    helper = "rt_views.expand_view" if kept == sorted(kept) else "rt_views.strided_view"
    return f"def kernel(x):\n    return {helper}(x, {shape}, {strides})\n"


@numba_kernel.register(Reshape)
def _reshape(op, node):
    args = [f"s{k}" for k in range(op.ndim)]
    shape = _tuple(f"{a}.item()" for a in args)
    return f"def kernel(x, {', '.join(args)}):\n    return rt_views.reshape(x, {shape})\n" if args else (
        "def kernel(x):\n    return rt_views.reshape(x, ())\n"
    )


@numba_kernel.register(Alloc)
def _alloc(op, node):
    n = len(node.inputs) - 1
    args = [f"s{k}" for k in range(n)]
    shape = _tuple(f"{a}.item()" for a in args)
    dtype = np_type(node.outputs[0].type.dtype)
    return (
        f"def kernel(v{''.join(', ' + a for a in args)}):\n"
        f"    out = np.empty({shape}, dtype={dtype})\n"
        f"    out[...] = np.broadcast_to(v, {shape})\n"
        "    return out\n"
    )


@numba_kernel.register(ShapeI)
def _shape_i(op, node):
    return f"def kernel(x):\n    out = np.empty((), dtype=np.int64)\n    out[()] = x.shape[{op.i}]\n    return out\n"


@numba_kernel.register(Shape)
def _shape(op, node):
    nd = node.inputs[0].type.ndim
    lines = ["def kernel(x):", f"    out = np.empty(({nd},), dtype=np.int64)"]
    lines += [f"    out[{k}] = x.shape[{k}]" for k in range(nd)]
    return "\n".join(lines + ["    return out"]) + "\n"


@numba_kernel.register(Argmax)
def _argmax(op, node):
    nd = node.inputs[0].type.ndim
    order = [a for a in range(nd) if a != op.axis] + [op.axis]
    shape = _tuple(f"x.shape[{a}]" for a in order)
    strides = _tuple(f"x.strides[{a}]" for a in order)
    better = "v > best" if op.mode == "max" else "v < best"
    out_shape = _tuple(f"x.shape[{a}]" for a in order[:-1])
    return f"""def kernel(x):
    y = rt_views.strided_view(x, {shape}, {strides})
    out = np.empty({out_shape}, dtype=np.int64)
    n = y.shape[-1]
    for idx in np.ndindex(out.shape):
        row = y[idx]
        best = row[0]
        pos = 0
        for i in range(1, n):
            if best != best:
                break
            v = row[i]
            if {better} or v != v:
                best = v
                pos = i
        out[idx] = pos
    return out
"""
