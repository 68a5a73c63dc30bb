"""Backends: a registry by name; each turns a rewritten FunctionGraph into a callable.

Every backend module declares its contract as `BACKEND`, a `Backend`: its
name, the compile options it accepts, the fused ops it can run (rewrites that
produce them are opt-in), rewrites it cannot run and clean-up rewrites run
last. `BACKEND.compile(fgraph, **options)` returns `fn(list_of_arrays) ->
list_of_arrays`, the arrays in `fgraph.inputs` / `fgraph.outputs` order (input
checks happen before); an option it does not accept is a TypeError naming the
ones it does, on every backend. Modules load only when asked for, so optional
dependencies (jax) cost nothing until used.

>>> get_backend("c").options, get_backend("python").name
((), 'python')
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

_LOADERS = {
    "python": "dimgraph.backends.python",
    "numba": "dimgraph.backends.numba",
    "c": "dimgraph.backends.c",
    "jax": "dimgraph.backends.jax",
}
DEFAULT_BACKEND = "numba"


@dataclass(frozen=True)
class Backend:
    """What a backend module declares (as `BACKEND`) and what `dg.function` and `rewrite_graph` read."""

    name: str
    module: str  # the module whose `compile(fgraph, **options)` builds the callable
    options: tuple = ()  # the compile options it accepts
    rewrites_opt_in: tuple = ()  # the opt-in rewrites (`dimgraph.core.rewriting.OPT_IN`) whose fused ops it runs
    rewrites_exclude: tuple = ()  # rewrite names or tags it cannot run
    cleanups: tuple = ()  # rewrites run last (e.g. expanding an op it has no kernel for)

    def check_options(self, options):
        """A TypeError naming the accepted options when `options` holds another (before any work)."""
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            accepted = ", ".join(self.options) if self.options else "none"
            raise TypeError(f"{self.name} backend: unknown options {unknown}; accepted: {accepted}")

    def compile(self, fgraph, **options):
        """`fn(list of arrays) -> list of arrays` running `fgraph`."""
        self.check_options(options)
        return importlib.import_module(self.module).compile(fgraph, **options)


def register_backend(name: str, module: str):
    """Register a backend module (it must define `BACKEND`, a `Backend`, and `compile(fgraph, **options)`)."""
    _LOADERS[name] = module


def available_backends() -> list:
    return sorted(_LOADERS)


def get_backend(name=None) -> Backend:
    """The contract of backend `name` (None: the default)."""
    name = DEFAULT_BACKEND if name is None else name
    if name not in _LOADERS:
        raise ValueError(f"unknown backend {name!r}; registered backends: {available_backends()}")
    return importlib.import_module(_LOADERS[name]).BACKEND
