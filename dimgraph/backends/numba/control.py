"""numba kernels for control flow: `Loop` runs inside the generated code, `IfElse` is an `if` in it.

An inner graph is printed as a jitted function `body_k(...)` calling the
kernels of its nodes (the same registry and the same cached kernel modules as
a whole graph; a loop body is rewritten and fused before it gets here), so a
loop costs no Python per step. Loop states live in two buffers per state that
swap each step (the body's results are copied into the spare one, so a body
returning a state unchanged, or swapping two states, never reads what it just
overwrote); traces are preallocated as `(n, *state shape)` arrays. A state
whose shape changes across a step raises ValueError naming it, as on every
backend.
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends.numba import cache
from dimgraph.backends.numba.ops import numba_kernel
from dimgraph.core.graph import Constant
from dimgraph.core.ifelse import IfElse
from dimgraph.core.loop import Loop, Scan
from dimgraph.core.opfromgraph import OpFromGraph

INNER_HEADER = "from dimgraph.backends.numba.cache import constant as _constant\nfrom dimgraph.backends.numba.cache import kernel as _kernel\n\n"


def print_inner(graph, fname):
    """Source of a jitted `fname(*inputs) -> tuple of outputs` running `graph`'s kernels in order."""
    from dimgraph.backends.numba import KERNEL_FOOTER, KERNEL_HEADER

    names = {id(v): f"a{k}" for k, v in enumerate(graph.inputs)}
    header, body, kernels, printed = [], [], {}, {}

    def ref(var):
        found = names.get(id(var))
        if found is not None:
            return found
        assert isinstance(var, Constant), f"internal error: {var!r} used before it is computed"
        data = np.asarray(var.data, order="C")
        ident = names[id(var)] = f"{fname}_c{len(header)}"
        header.append(f'{ident} = _constant("{data.dtype.name}", {tuple(data.shape)}, "{data.tobytes().hex()}")')
        return ident

    counter = 0
    for node in graph.nodes():
        key = (node.op, tuple(i.type for i in node.inputs), tuple(o.type for o in node.outputs))
        if key not in printed:
            src = numba_kernel(node.op, node)
            printed[key] = cache.load_module("k", KERNEL_HEADER + src + KERNEL_FOOTER).digest
        digest = printed[key]
        if digest not in kernels:
            kernels[digest] = f"{fname}_k{len(kernels)}"
            header.append(f'{kernels[digest]} = _kernel("{digest}")')
        outs = []
        for out in node.outputs:
            names[id(out)] = f"v{counter}"
            outs.append(names[id(out)])
            counter += 1
        args = ", ".join(ref(i) for i in node.inputs)
        body.append(f"    {', '.join(outs)} = {kernels[digest]}({args})")
    results = "".join(ref(o) + ", " for o in graph.outputs)
    params = ", ".join(f"a{k}" for k in range(len(graph.inputs)))
    return (
        "\n".join(header)
        + f"\n\n\n@numba.njit(cache=True, error_model=\"numpy\")\ndef {fname}({params}):\n"
        + "\n".join(body + [f"    return ({results})"])
        + "\n"
    )


def _ret(items):
    return items[0] if len(items) == 1 else "(" + "".join(f"{i}, " for i in items) + ")"


@numba_kernel.register(Scan)
@numba_kernel.register(Loop)
def _loop(op, node):
    ns = op.n_states
    traced = op._traced()
    until = getattr(op, "until", None)
    consts = [f"c{j}" for j in range(op.n_consts)]
    lines = [f"def kernel(n, {''.join(f's{k}, ' for k in range(ns))}{''.join(c + ', ' for c in consts)}):"]
    lines.append("    steps = n[()]")
    lines.append("    i = np.empty((), dtype=np.int64)")
    for k in range(ns):
        lines.append(f"    s{k} = s{k}.copy()")
        lines.append(f"    t{k} = np.empty_like(s{k})")
    for m, k in enumerate(traced):
        dtype = node.outputs[ns + m].type.dtype
        lines.append(f"    tr{m} = np.empty((steps,) + s{k}.shape, dtype=np.{dtype})")
    lines.append("    for step in range(steps):")
    if until is not None:
        lines.append(f"        if not s{until}[()]:")
        lines.append("            break")
    lines.append("        i[()] = step")
    args = ", ".join(["i"] + [f"s{k}" for k in range(ns)] + consts)
    lines.append(f"        r = body({args})")
    for k in range(ns):
        lines.append(f"        if r[{k}].shape != s{k}.shape:")
        lines.append(f'            raise ValueError("{op.name}: state {k} changes its shape across a step")')
    for k in range(ns):
        lines.append(f"        t{k}[...] = r[{k}]")
    for k in range(ns):
        lines.append(f"        s{k}, t{k} = t{k}, s{k}")
    for m, k in enumerate(traced):
        lines.append(f"        tr{m}[step, ...] = s{k}" if node.inputs[1 + k].type.ndim else f"        tr{m}[step] = s{k}[()]")
    outs = [f"s{k}" for k in range(ns)] + [f"tr{m}" for m in range(len(traced))]
    lines.append(f"    return {_ret(outs)}")
    return INNER_HEADER + print_inner(op.body, "body") + "\n\n" + "\n".join(lines) + "\n"


@numba_kernel.register(IfElse)
def _ifelse(op, node):
    args = [f"a{k}" for k in range(len(node.inputs) - 1)]
    n = len(node.outputs)
    lines = [f"def kernel(cond, {''.join(a + ', ' for a in args)}):", "    if cond[()]:"]
    lines.append(f"        r = then_branch({', '.join(args)})")
    lines.append(f"        return {_ret([f'r[{k}].copy()' for k in range(n)])}")
    lines.append(f"    r = else_branch({', '.join(args)})")
    lines.append(f"    return {_ret([f'r[{k}].copy()' for k in range(n)])}")
    return (
        INNER_HEADER
        + print_inner(op.then_graph, "then_branch")
        + "\n\n"
        + print_inner(op.else_graph, "else_branch")
        + "\n\n"
        + "\n".join(lines)
        + "\n"
    )


@numba_kernel.register(OpFromGraph)
def _op_from_graph(op, node):
    args = [f"a{k}" for k in range(len(node.inputs))]
    n = len(node.outputs)
    lines = [f"def kernel({''.join(a + ', ' for a in args)}):", f"    r = graph({', '.join(args)})"]
    lines.append(f"    return {_ret([f'r[{k}]' for k in range(n)])}")
    return INNER_HEADER + print_inner(op.graph, "graph") + "\n\n" + "\n".join(lines) + "\n"
