"""What a compiled function shows in a REPL and a notebook: inputs and outputs with dims,
backend, graph size and compile time (`repr(f)`, `f._repr_html_()`), and what runs its calls
(`f.summary()`)."""

from __future__ import annotations

import html

FUSED_OPS = ("Composite", "CAReduceElemwise", "IndexedLoop")  # ops that are one fused loop in generated code


def graph_size(fgraph) -> tuple:
    """(nodes, fused kernels) of the rewritten graph."""
    nodes = list(fgraph.nodes) if hasattr(fgraph, "nodes") else fgraph.toposort()
    fused = sum(
        type(n.op).__name__ in FUSED_OPS or type(getattr(n.op, "scalar_op", None)).__name__ == "Composite"
        for n in nodes
    )
    return len(nodes), fused


def _var(v, k) -> str:
    return f"{v.name or f'input {k}'}: {v.type}"


def _facts(f) -> str:
    nodes, fused = graph_size(f.fgraph)
    seconds = getattr(f, "compile_time", None)
    timing = "" if seconds is None else f", compiled in {seconds:.2f} s"
    return f"{f.backend}, {nodes} nodes ({fused} fused kernels){timing}"


def function_repr(f) -> str:
    """`<dimgraph.Function (mu: float64(county: 3)) -> (float64()) | numba, 3 nodes (1 fused kernels), ...>`."""
    ins = ", ".join(_var(v, k) for k, v in enumerate(f.inputs))
    outs = ", ".join(str(o.type) if not o.name else f"{o.name}: {o.type}" for o in f.outputs)
    return f"<dimgraph.Function ({ins}) -> ({outs}) | {_facts(f)}>"


def function_html(f) -> str:
    """A small table of the inputs and outputs with their dims, and the compile facts below it."""
    rows = []
    for kind, variables in (("input", f.inputs), ("output", f.outputs)):
        for k, v in enumerate(variables):
            dims = getattr(v.type, "dims", None)
            shape = (
                ", ".join(f"{d.name}: {'?' if d.size is None else d.size}" for d in dims)
                if dims is not None
                else ", ".join("?" if n is None else str(n) for n in v.type.shape)
            )
            cells = (
                kind,
                v.name or f"{kind} {k}",
                v.type.dtype,
                shape,
                "labeled" if dims is not None else "positional",
            )
            rows.append("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("", "name", "dtype", "dims / shape", "kind"))
    return (
        "<div><b>dimgraph.Function</b>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"<small>{html.escape(_facts(f))}</small></div>"
    )


def function_summary(f) -> str:
    """Lines of `f.summary()`: facts, the backend's own (`Tiers.describe`), the ops run by `perform`,
    seconds per compile phase."""
    nodes, fused = graph_size(f.fgraph)
    lines = [f"dimgraph.Function: {f.backend}, {nodes} nodes ({fused} fused kernels)"]
    lines += [f"{k}: {v}" for k, v in (f.tiers.describe() if f.tiers is not None else {}).items()]
    performs = f.timings.get("perform") or ()
    lines.append(f"run by Python perform: {', '.join(performs) if performs else 'none'}")
    phases = [f"{k} {v:.3f} s" for k, v in f.timings.items() if isinstance(v, float)]
    lines.append(f"compile: {', '.join(phases)}; {f.compile_time:.3f} s in all")
    return "\n".join(lines)
