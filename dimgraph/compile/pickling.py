"""Pickling compiled functions by value, so they can travel to worker processes.

A `Function` holds closures and, on some backends, machine code or ctypes
pointers that no pickler can carry. What it pickles instead is its recipe: the
user's input and output variables (graph variables pickle as plain objects, so
the whole graph travels with them), the backend's name, the updates, the
rewrite spec and the backend options. Unpickling calls `dg.function` again on
that recipe; the backends' disk caches (numba's generated modules, c's shared
libraries) make this a load rather than a compile when the cache directory is
shared, as it is for workers on one machine. The values the default context holds
for the function's shared variables (`w.set(...)`, updates, RNG states) travel
with it, so the copy computes what the original would.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Recipe:
    """What `dg.function` was called with: enough to build the same function again."""

    inputs: list
    outputs: Any  # as given: one variable (returned bare) or a list
    backend: str
    updates: dict
    rewrites: Any
    options: dict


def shared_values(function) -> dict:
    """{shared variable: value} for the function's shared variables the default context holds a value for."""
    from dimgraph.core.shared import DEFAULT_CONTEXT

    return {s: DEFAULT_CONTEXT._values[s] for s in function._shared if s in DEFAULT_CONTEXT._values}


def rebuild(recipe: Recipe, values=None):
    """A compiled function from its recipe and shared values (the unpickling half of `Function.__reduce__`)."""
    from dimgraph.compile.function import function
    from dimgraph.core.shared import DEFAULT_CONTEXT

    DEFAULT_CONTEXT._values.update(values or {})  # the unpickled variables are new objects: nothing is overwritten
    return function(
        recipe.inputs,
        recipe.outputs,
        backend=recipe.backend,
        updates=recipe.updates or None,
        rewrites=recipe.rewrites,
        **recipe.options,
    )
