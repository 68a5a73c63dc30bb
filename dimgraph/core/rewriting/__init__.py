"""Graph rewrites run by `dg.function` between building the graph and code generation."""

from __future__ import annotations


def rewrite_graph(fgraph, rewrites="default"):
    """Rewrite `fgraph` in place. `rewrites="none"` keeps the graph as written."""
    if rewrites not in ("default", "none"):
        raise ValueError(f"rewrites: expected 'default' or 'none', got {rewrites!r}")
    return fgraph
