"""Backends: a registry by name; each turns a rewritten FunctionGraph into a callable.

A backend is registered with a loader (so optional dependencies load only when
asked for). `compile(fgraph)` returns `fn(list_of_arrays) -> list_of_arrays`, the
arrays in `fgraph.inputs` / `fgraph.outputs` order; input checks happen before.
"""

from __future__ import annotations

import importlib

_LOADERS = {
    "python": "dimgraph.backends.python",
    "numba": "dimgraph.backends.numba",
    "c": "dimgraph.backends.c",
    "jax": "dimgraph.backends.jax",
}
DEFAULT_BACKEND = "numba"


def register_backend(name: str, module: str):
    """Register a backend module (it must define `compile(fgraph, **options)`)."""
    _LOADERS[name] = module


def available_backends() -> list:
    return sorted(_LOADERS)


def get_backend(name=None):
    """The backend module for `name` (None: the default)."""
    name = DEFAULT_BACKEND if name is None else name
    if name not in _LOADERS:
        raise ValueError(f"unknown backend {name!r}; registered backends: {available_backends()}")
    return importlib.import_module(_LOADERS[name])
