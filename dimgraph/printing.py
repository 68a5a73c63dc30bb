"""`dg.dprint`: the graph as indented text, one node per line, with types and static shapes."""

from __future__ import annotations

import sys

from dimgraph.core.graph import Constant


def dprint(obj, file=None, depth=None):
    """Print the graph of a variable, a list of variables, a FunctionGraph or a compiled function.

    Each line shows the op, the output's name and type; a node seen before is
    shown once and then referred to by its id (`*N`).

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
    ids, lines = {}, []
    for out in outputs:
        stack = [(out, 0)]
        while stack:
            var, level = stack.pop()
            prefix, node = " |" * level, var.owner
            if node is None:
                lines.append(f"{prefix}{_label(var)}   {_type(var)}")
                continue
            seen = node in ids
            if not seen:
                ids[node] = len(ids)
            index = f".{var.index}" if len(node.outputs) > 1 else ""
            name = f" '{var.name}'" if var.name else ""
            note = "  (seen above)" if seen else ""
            lines.append(f"{prefix}{node.op}{index}{name}   {_type(var)}  *{ids[node]}{note}")
            if not seen and (depth is None or level + 1 < depth):
                stack.extend((i, level + 1) for i in reversed(node.inputs))
    print("\n".join(lines), file=file or sys.stdout)


def _type(var):
    return str(var.type)


def _label(var):
    if isinstance(var, Constant):
        return repr(var).split(":")[0]
    return var.name or f"<{type(var).__name__}>"
