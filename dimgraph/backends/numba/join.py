"""numba kernels for concatenation and split."""

from __future__ import annotations

from dimgraph.backends.numba.loops import guard_lines
from dimgraph.backends.numba.ops import _tuple, numba_kernel
from dimgraph.core import join


@numba_kernel.register(join.Join)
def _join_kernel(op, node):
    args = [f"x{k}" for k in range(len(node.inputs))]
    if len(args) == 1:
        return "def kernel(x0):\n    return x0.copy()\n"
    nd = node.inputs[0].type.ndim
    checks = [
        (
            f"{a}.shape[{ax}] != x0.shape[{ax}]",
            f"raise ShapeError('Join: axis {ax} of the inputs has different sizes (only axis {op.axis} may differ)')",
        )
        for ax in range(nd)
        if ax != op.axis
        for a in args[1:]
    ]
    return (
        f"def kernel({', '.join(args)}):\n"
        + "".join(line + "\n" for line in guard_lines(checks, "    "))
        + f"    return np.concatenate({_tuple(args)}, axis={op.axis})\n"
    )


@numba_kernel.register(join.Split)
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
