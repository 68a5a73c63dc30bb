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

A loop whose states are all 0-d and whose body is scalar arithmetic over them,
over 0-d constants and over positions read from 1-d constants (`c[i]`: the
sequences, and the stored traces in a backward pass) is printed as one flat
loop instead (`scalar_loop`): states are local scalars, the body's fused
expression is inlined, nothing is allocated per step, and a division by a
value fixed for the loop is a product with its reciprocal, taken once (as the
fused reductions do; the result may differ from the division in the last bit). That is the shape of a
time-series log density and of its gradient. Reads at `step + c` or `c - step` are bounds-checked
once, before the loop (`_checked_once`), and read unchecked inside it.
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends.numba import cache
from dimgraph.backends.numba.ops import KERNEL_FOOTER, KERNEL_HEADER, copy_lines, numba_kernel
from dimgraph.backends.numba.scalar import flatten, np_type, render_step
from dimgraph.core.elemwise import Elemwise
from dimgraph.core.graph import Constant
from dimgraph.core.ifelse import IfElse
from dimgraph.core.loop import LoopOp
from dimgraph.core.opfromgraph import OpFromGraph
from dimgraph.core.scalar import ScalarOp
from dimgraph.core.subtensor import Subtensor
from dimgraph.core.type import TensorType

INNER_HEADER = (
    "from dimgraph.backends.numba.cache import constant as _constant\n"
    "from dimgraph.backends.numba.cache import load_module as _load_module\n\n"
)


def print_inner(graph, fname):
    """Source of a jitted `fname(*inputs) -> tuple of outputs` running `graph`'s kernels in order."""
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
            text = KERNEL_HEADER + numba_kernel(node.op, node) + KERNEL_FOOTER
            printed[key] = (cache.load_module("k", text).digest, text)
        digest, text = printed[key]
        if digest not in kernels:
            kernels[digest] = f"{fname}_k{len(kernels)}"
            # the kernel's own text, so this module loads it (and keeps it alive) whatever else is loaded
            header.append(f'{kernels[digest]} = _load_module("k", {text!r}).kernel')
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
        + f'\n\n\n@numba.njit(cache=True, error_model="numpy")\ndef {fname}({params}):\n'
        + "\n".join(body + [f"    return ({results})"])
        + "\n"
    )


def _ret(items):
    return items[0] if len(items) == 1 else "(" + "".join(f"{i}, " for i in items) + ")"


_MUL = ScalarOp("mul")


class _NotScalar(Exception):
    """The body has a node the scalar loop printer does not inline."""


def scalar_loop(op, node):
    """Source of a loop kernel keeping 0-d states in local scalars, or None when the body is not all scalar."""
    body, ns = op.body, op.n_states
    if any(not (isinstance(t, TensorType) and t.ndim == 0) for t in body.input_types[1 : 1 + ns]):
        return None
    env = {id(body.inputs[0]): "step"}
    for k, v in enumerate(body.inputs[1 : 1 + ns]):
        env[id(v)] = f"x{k}"
    header, pre, lines, arrays, reciprocal = [], [], [], {}, {}
    for j, v in enumerate(body.inputs[1 + ns :]):
        if isinstance(v.type, TensorType) and v.type.ndim == 0:
            env[id(v)] = f"q{j}"
            pre.append(f"    q{j} = c{j}[()]")
        else:
            arrays[id(v)] = f"c{j}"

    def val(v):
        found = env.get(id(v))
        if found is not None:
            return found
        if isinstance(v, Constant) and np.ndim(v.data) == 0:
            data = np.asarray(v.data)
            name = env[id(v)] = f"e{len(header)}"
            header.append(f'{name}_array = _constant("{data.dtype.name}", (), "{data.tobytes().hex()}")')
            pre.append(f"    {name} = {name}_array[()]")
            invariant.add(name)
            return name
        raise _NotScalar

    invariant = {name for name in env.values() if name.startswith("q")}
    affine = {"step": (1, "0")}  # int64 values c * step + offset (offset fixed for the loop)
    reads = []  # (array, index, value name) of each c[i] read
    count = 0
    try:
        for inner in body.nodes():
            if isinstance(inner.op, Elemwise) and all(v.type.ndim == 0 for v in inner.inputs + inner.outputs):
                steps, outs = flatten(inner.op.scalar_op, len(inner.inputs))
                names = [val(i) for i in inner.inputs]
                dtypes = [i.type.dtype for i in inner.inputs]
                for step_op, refs in steps:
                    args, arg_dtypes = [names[r] for r in refs], [dtypes[r] for r in refs]
                    if step_op.name == "true_div" and arg_dtypes == ["float64", "float64"] and args[1] in invariant:
                        # x / c with c fixed for the loop -> x * (1 / c), the reciprocal taken once
                        if args[1] not in reciprocal:
                            reciprocal[args[1]] = f"inv_{args[1]}"
                            pre.append(f"    inv_{args[1]} = 1.0 / {args[1]}")
                        args, step_op = [args[0], reciprocal[args[1]]], _MUL
                    expr, dtype = render_step(step_op, args, arg_dtypes)
                    lines.append(f"w{count} = {expr}")
                    _track_affine(affine, invariant, step_op.name, args, arg_dtypes, f"w{count}")
                    names.append(f"w{count}")
                    dtypes.append(dtype)
                    count += 1
                for o, r in zip(inner.outputs, outs):
                    env[id(o)] = names[r]
            elif (
                isinstance(inner.op, Subtensor)
                and inner.op.index == ("?",)
                and id(inner.inputs[0]) in arrays
                and inner.inputs[0].type.ndim == 1
            ):
                arr, idx = arrays[id(inner.inputs[0])], val(inner.inputs[1])
                reads.append((arr, idx, f"w{count}"))
                lines.append(f"w{count} = {arr}[rt_views.check_index({idx}, {arr}.shape[0], 0)]")
                env[id(inner.outputs[0])] = f"w{count}"
                count += 1
            else:
                return None
        results = [val(o) for o in body.outputs]
    except _NotScalar:
        return None
    traced, until = op._traced(), getattr(op, "until", None)
    consts = "".join(f"c{j}, " for j in range(op.n_consts))
    src = [f"def kernel(n, {''.join(f's{k}, ' for k in range(ns))}{consts}):", "    steps = n[()]"]
    src += [f"    x{k} = s{k}[()]" for k in range(ns)] + pre
    for m, k in enumerate(traced):
        src.append(f"    tr{m} = np.empty((steps,), dtype={np_type(node.outputs[ns + m].type.dtype)})")
    if until is None and reads and all(idx in affine for _, idx, _ in reads):
        src += _checked_once(reads, affine, lines)
    src.append("    for step in range(steps):")
    if until is not None:
        src += [f"        if not x{until}:", "            break"]
    src += ["        " + line for line in lines]
    src.append(f"        {''.join(f'x{k}, ' for k in range(ns))}= {''.join(r + ', ' for r in results)}")
    src += [f"        tr{m}[step] = x{k}" for m, k in enumerate(traced)]
    for k in range(ns):
        src += [f"    o{k} = np.empty((), dtype={np_type(body.input_types[1 + k].dtype)})", f"    o{k}[()] = x{k}"]
    src.append(f"    return {_ret([f'o{k}' for k in range(ns)] + [f'tr{m}' for m in range(len(traced))])}")
    return INNER_HEADER + "\n".join(header) + "\n\n\n" + "\n".join(src) + "\n"


def _track_affine(affine, invariant, name, args, dtypes, out):
    """Record `out` as c * step + offset when it is an int64 sum or difference of such a value and a loop constant."""
    if name not in ("add", "sub") or dtypes != ["int64", "int64"]:
        return
    a, b = args
    if a in affine and b in invariant:
        c, off = affine[a]
        affine[out] = (c, f"({off} {'+' if name == 'add' else '-'} {b})")
    elif b in affine and a in invariant:
        c, off = affine[b]
        affine[out] = (c, f"({a} + {off})") if name == "add" else (-c, f"({a} - {off})")


def _checked_once(reads, affine, lines):
    """Bounds of every read checked before the loop, which then reads unchecked.

    Each read's position is c * step + offset with c = +-1, so its range over the
    steps is known: if every range lies inside its array, no step can fail. Else
    a loop of the index checks alone runs first and raises the error the first
    failing step would (the body has no other way to fail, and no while
    condition can stop it earlier); a position it lets through (a negative one
    counting from the end) is read as NumPy reads it.
    """
    inside, checks = [], []
    for arr, idx, _ in reads:
        c, off = affine[idx]
        lo, hi = (off, f"{off} + steps - 1") if c == 1 else (f"{off} - steps + 1", off)
        inside.append(f"{lo} >= 0 and {hi} < {arr}.shape[0]")
        checks.append(f"            rt_views.check_index({off} {'+' if c == 1 else '-'} step, {arr}.shape[0], 0)")
    for k, line in enumerate(lines):
        for arr, idx, out in reads:
            if line.startswith(f"{out} = "):
                lines[k] = f"{out} = {arr}[{idx}]"
    return [
        f"    if steps > 0 and not ({' and '.join(f'({x})' for x in inside)}):",
        "        for step in range(steps):",
        *checks,
    ]


@numba_kernel.register(LoopOp)  # Loop and Scan
def _loop(op, node):
    flat = scalar_loop(op, node)
    if flat is not None:
        return flat
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
        lines.append(f"        r{k} = r[{k}]")
        lines += copy_lines(f"t{k}", f"r{k}", node.inputs[1 + k].type.ndim, indent="        ")
    for k in range(ns):
        lines.append(f"        s{k}, t{k} = t{k}, s{k}")
    for m, k in enumerate(traced):
        lines += copy_lines(f"tr{m}", f"s{k}", node.inputs[1 + k].type.ndim, indent="        ", lead=("step",))
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
