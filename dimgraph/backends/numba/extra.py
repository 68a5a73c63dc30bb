"""numba kernels for cumulative sums and products, ranges and asserts."""

from __future__ import annotations

from dimgraph.backends.numba.ops import _tuple, numba_kernel
from dimgraph.backends.numba.scalar import np_type
from dimgraph.core import extra


@numba_kernel.register(extra.CumOp)
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
        acc = {dtype}({"0" if op.mode == "add" else "1"})
        for i in range(n):
            acc = {dtype}(acc {sym} {dtype}(row[i]))
            dst[i] = acc
    return out
"""


@numba_kernel.register(extra.ARange)
def _arange(op, node):
    return "from dimgraph.backends.numba.fallback import arange\n\n\ndef kernel(start, stop, step):\n" + (
        f"    return arange(start.item(), stop.item(), step.item(), {np_type(op.dtype)}(0))\n"
    )


@numba_kernel.register(extra.Assert)
def _assert(op, node):
    conds = [f"c{k}" for k in range(len(node.inputs) - 1)]
    message = op.message.encode("utf-8", "surrogatepass").hex()  # any str, lone surrogates included
    test = " and ".join(f"c{k}.item()" for k in range(len(conds))) or "True"
    error = op.error.__name__
    imported = "" if op.error.__module__ == "builtins" else f"from {op.error.__module__} import {error}\n\n"
    return (
        imported + f'_MESSAGE = bytes.fromhex("{message}").decode("utf-8", "surrogatepass")\n\n\n'
        f"def kernel(x{''.join(', ' + c for c in conds)}):\n"
        f"    if not ({test}):\n"
        f"        raise {error}(_MESSAGE)\n"
        "    return x\n"
    )
