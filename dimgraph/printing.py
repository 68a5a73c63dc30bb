"""`dg.dprint`: the graph as indented text, one node per line, with types and static shapes."""

from __future__ import annotations

import sys
import textwrap

from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.fused import CAReduceElemwise
from dimgraph.core.graph import Constant
from dimgraph.core.reduce import CAReduce


def dprint(obj, file=None, depth=None, width=120):
    """Print the graph of a variable, a list of variables, a FunctionGraph or a compiled function.

    Each line shows the op, the output's name and type (with dim names on the axes
    of positional values computed from labeled inputs, as in a labeled gradient); a
    node seen before is shown once and then referred to by its id (`*N`). Lines
    longer than `width` (a fused kernel's expression) continue on indented lines.

    >>> import dimgraph as dg
    >>> x = dg.tensor("x", shape=(3,))
    >>> dg.dprint(x + 1)  # doctest: +NORMALIZE_WHITESPACE
    add   float64(3)  *0
     |x   float64(3)
     |DimShuffle{x}   float64(1)  *1
     | |1.   float64()
    """
    fgraph = getattr(obj, "fgraph", None)
    if fgraph is not None or hasattr(obj, "toposort"):
        outputs = (fgraph or obj).outputs
    else:
        outputs = obj if isinstance(obj, (list, tuple)) else [obj]
    # a compiled function's rewritten outputs print under the names of the outputs they compute
    user = getattr(obj, "outputs", None) if fgraph is not None else None
    titles = [o.name for o in user] if user is not None and len(user) == len(outputs) else [None] * len(outputs)
    ids, lines, names = {}, [], {}
    for out, title in zip(outputs, titles):
        if title:
            lines.append(f"output {title!r}:")
        stack = [(out, 0)]
        while stack:
            var, level = stack.pop()
            prefix, node = " |" * level, var.owner
            if node is None:
                lines.extend(_wrapped(f"{prefix}{_label(var)}   {_type(var, names)}", prefix, width))
                continue
            seen = node in ids
            if not seen:
                ids[node] = len(ids)
            index = f".{var.index}" if len(node.outputs) > 1 else ""
            name = f" '{var.name}'" if var.name else ""
            note = "  (seen above)" if seen else ""
            text = f"{prefix}{node.op}{index}{name}   {_type(var, names)}  *{ids[node]}{note}"
            lines.extend(_wrapped(text, prefix, width))
            if not seen and (depth is None or level + 1 < depth):
                stack.extend((i, level + 1) for i in reversed(node.inputs))
    print("\n".join(lines), file=file or sys.stdout)


def _wrapped(text, prefix, width):
    """`text` cut into lines of at most `width` characters, continuations indented under the op."""
    if len(text) <= width:
        return [text]
    indent = prefix + "   . "
    return textwrap.wrap(
        text, max(width, len(indent) + 20), subsequent_indent=indent, break_on_hyphens=False, drop_whitespace=True
    )


def _type(var, names):
    """The type, with the dim name of each axis where the graph comes from labeled inputs."""
    axes = axis_names(var, names)
    if axes is None or not hasattr(var.type, "shape"):
        return str(var.type)
    sizes = ("?" if n is None else str(n) for n in var.type.shape)
    return f"{var.type.dtype}({', '.join(s if a is None else f'{a}: {s}' for a, s in zip(axes, sizes))})"


def axis_names(var, memo):
    """Dim names of a positional variable's axes, followed from the positional twins of labeled inputs.

    Elemwise takes each axis's name from an input that does not stretch there,
    DimShuffle moves names, reductions drop theirs; anything else is unnamed (None).
    """
    todo, out = [var], None
    while todo:
        v = todo[-1]
        if id(v) in memo:
            todo.pop()
            continue
        node = v.owner
        if node is None or "dims" in v.tag:
            memo[id(v)] = v.tag.get("dims")
            todo.pop()
            continue
        pending = [i for i in node.inputs if id(i) not in memo]
        if pending:
            todo.extend(pending)
            continue
        todo.pop()
        ins = [memo[id(i)] for i in node.inputs]
        op, names = node.op, None
        if isinstance(op, Elemwise):  # every output has the broadcast shape
            names = tuple(
                next((n[a] for n, i in zip(ins, node.inputs) if n is not None and i.type.shape[a] != 1), None)
                for a in range(v.type.ndim)
            )
        elif isinstance(op, DimShuffle) and ins[0] is not None:
            names = tuple(None if o == "x" else ins[0][o] for o in op.order)
        elif isinstance(op, (CAReduce, CAReduceElemwise)) and ins[0] is not None and len(node.outputs) == 1:
            names = tuple(n for a, n in enumerate(ins[0]) if a not in op.axis)
        if names is not None and len(names) != v.type.ndim:
            names = None
        memo[id(v)] = names if names and any(n is not None for n in names) else None
    out = memo[id(var)]
    return out


def _label(var):
    if isinstance(var, Constant):
        return repr(var).split(":")[0]
    return var.name or f"<{type(var).__name__}>"
