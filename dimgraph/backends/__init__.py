"""Backends: a registry by name; each turns a rewritten FunctionGraph into a callable.

Every backend module implements `BackendModule` (checked when it is loaded):
it declares itself as `BACKEND`, a `Backend`: its name, the compile options it
accepts, the fused ops it can run (rewrites that produce them are opt-in),
rewrites it cannot run and clean-up rewrites run last; and it defines
`compile`, `from_plan` and `warm_tag` (its warm start, or None) and `REGISTRIES`.
Callers go through the `Backend`, never through the module's attributes.
`BACKEND.compile(fgraph, **options)` returns a `Compiled`, whose
`run(list_of_arrays) -> list_of_arrays` takes and gives the arrays in
`fgraph.inputs` / `fgraph.outputs` order (input checks happen before); an
option it does not accept is a TypeError naming the ones it does, on every
backend. Modules load only when asked for, so optional dependencies (jax) cost
nothing until used.

>>> get_backend("c").options, get_backend("python").name
((), 'python')
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, Protocol, runtime_checkable

from dimgraph.backends import memory

_LOADERS = {
    "python": "dimgraph.backends.python",
    "numba": "dimgraph.backends.numba",
    "c": "dimgraph.backends.c",
    "jax": "dimgraph.backends.jax",
    "mlir": "dimgraph.backends.mlir",
}
DEFAULT_BACKEND = "numba"


@runtime_checkable
class Tiers(Protocol):
    """The entries of a backend whose calls change entry over time (numba's `graphjit.Tiers`: the Python
    driver, then the jitted graph), and the flat entries built on its faster one (`Backend.flat_entry`).

    `promote(callback)` calls `callback(fast, run, fallback, seconds)` once the faster entry is ready:
    its `fast(*arrays)` and `run(list)`, `fallback(arrays)` answering a `dimgraph.errors.NoMatchingEntry`
    that `fast` raised (arguments of types it was not compiled for), and its compile seconds.
    For a graph of outputs `[value, *gradients]` over inputs `[*parameters, *data]`,
    `flat(shapes, dtypes, callback)` calls `callback(entry)` once `entry(*data, theta) -> (value, gradient)`
    is compiled (parameters of `shapes` and `dtypes` laid out in one float64 `theta`; a `theta` or data
    of other types raise `NoMatchingEntry`), and `cfunc(shapes, dtypes, params, data)` is the C-callable
    log density and gradient with `data` bound.
    """

    kernel_timings: dict  # {kernel: seconds}, filled by the first call
    performs: tuple  # the ops run by their Python `perform` (`f.timings["perform"]`)

    def promote(self, callback): ...

    def describe(self) -> dict:
        """{what: value} for `Function.summary()` (which entry calls take, what did not compile)."""

    def flat(self, shapes, dtypes, callback): ...

    def cfunc(self, shapes, dtypes, params, data): ...


@dataclass(frozen=True)
class Compiled:
    """What a backend's compile returns: the callable, and what `Function` reads beside it.

    A backend with more to show (kernel digests, jit caches) returns a subclass
    with those fields; `Function` keeps it as `f._compiled`.
    """

    run: Callable  # run(list of arrays) -> list of arrays
    source: str | None = None  # the generated source, shown by `Function.source` (None: nothing is printed)
    # fast(*arrays) -> bare array, or tuple for several outputs: the entry `Function` calls directly
    fast: Callable | None = None
    # {attribute: make(function)}: extras set on the `Function` (jax: jax_fn)
    exports: dict = field(default_factory=dict)
    plan: object = (
        None  # what `Backend.build(plan, **options)` rebuilds this from in a warm process (None: no warm start)
    )
    tiers: Tiers | None = None  # a faster entry later, and flat entries on it (numba); None: `fast` is the one


@dataclass(frozen=True)
class Backend:
    """What a backend module declares (as `BACKEND`) and what `dg.function` and `rewrite_graph` read."""

    name: str
    module: str  # the module whose `compile(fgraph, **options)` returns the `Compiled`
    options: tuple = ()  # the compile options it accepts
    rewrites_opt_in: tuple = ()  # the opt-in rewrites (`dimgraph.core.rewriting.OPT_IN`) whose fused ops it runs
    rewrites_exclude: tuple = ()  # rewrite names or tags it cannot run
    cleanups: tuple = ()  # rewrites run last (e.g. expanding an op it has no kernel for)
    # Its `Compiled.tiers` has flat entries (numba): `flat_value_and_grad` compiles the graph of [value, *grads]
    # and the backend compiles theta's unpacking around it; for the others it compiles the flat graph itself.
    flat_entry: bool = False

    def check_options(self, options):
        """A TypeError naming the accepted options when `options` holds another (before any work)."""
        unknown = sorted(set(options) - set(self.options))
        if unknown:
            accepted = ", ".join(self.options) if self.options else "none"
            raise TypeError(f"{self.name} backend: unknown options {unknown}; accepted: {accepted}")

    def implementation(self) -> "BackendModule":
        """The backend's module, checked against `BackendModule` (a TypeError names what it lacks)."""
        module = importlib.import_module(self.module)
        missing = [name for name in (*BackendModule.__annotations__, "compile") if not hasattr(module, name)]
        if missing:
            raise TypeError(
                f"{self.name} backend: module {self.module} does not define {missing} (see dimgraph.backends.BackendModule)"
            )
        return module

    def compile(self, fgraph, **options) -> Compiled:
        """The `Compiled` running `fgraph` (a `MemoryError` first when it holds a value this machine cannot)."""
        self.check_options(options)
        memory.check_graph(fgraph)
        compiled = self.implementation().compile(fgraph, **options)
        if not isinstance(compiled, Compiled):
            raise TypeError(
                f"{self.name} backend: compile returned {type(compiled).__name__}, not a dimgraph.backends.Compiled"
            )
        if compiled.tiers is not None and not isinstance(compiled.tiers, Tiers):
            raise TypeError(f"{self.name} backend: its Compiled.tiers does not implement dimgraph.backends.Tiers")
        return compiled

    def build(self, plan, **options) -> Compiled:
        """The `Compiled` rebuilt from a `Compiled.plan` this backend made (in this process or another), with
        the backend options the function was compiled with (numba: `jit_graph`)."""
        from_plan = self.implementation().from_plan
        if from_plan is None:
            raise TypeError(f"{self.name} backend: it has no warm start, so nothing is rebuilt from a plan")
        return from_plan(plan, **options)

    def warm_tag(self) -> str | None:
        """The toolchain's versions that name this backend's warm-start records, or None: no warm start."""
        tag = self.implementation().warm_tag
        return None if tag is None else tag()

    @property
    def registries(self) -> tuple:
        """The backend's op registries (Op type -> entry), whose entries a warm start requires to be dimgraph's."""
        return tuple(self.implementation().REGISTRIES)


@runtime_checkable
class BackendModule(Protocol):
    """What a backend module defines; `Backend.implementation` checks it when the module is loaded.

    >>> isinstance(importlib.import_module(get_backend("python").module), BackendModule)
    True
    """

    BACKEND: Backend  # its declaration, with `module` naming this module
    REGISTRIES: tuple  # its op registries (`singledispatch(...).registry` mappings)
    from_plan: (
        Callable | None
    )  # from_plan(plan, **options) -> Compiled, rebuilding a `Compiled.plan` in a warm process; None: no warm start
    warm_tag: Callable | None  # warm_tag() -> str, the toolchain's versions in a warm-start digest; None: no warm start

    def compile(self, fgraph, **options) -> Compiled:
        """The `Compiled` running `fgraph` (options already checked against `BACKEND.options`)."""


def register_backend(name: str, module: str):
    """Register a backend module (it must implement `BackendModule`)."""
    _LOADERS[name] = module


def available_backends() -> list:
    return sorted(_LOADERS)


def get_backend(name=None) -> Backend:
    """The contract of backend `name` (None: the default)."""
    name = DEFAULT_BACKEND if name is None else name
    if name not in _LOADERS:
        raise ValueError(f"unknown backend {name!r}; registered backends: {available_backends()}")
    return importlib.import_module(_LOADERS[name]).BACKEND
