"""The registry matrix: every op has its entry in every registry, and every hole is named.

- every core Op class (discovered in every `dimgraph.core` module, new ones
  included) x the numba, c and jax backends: a registered implementation, or
  the op is expanded by that backend's cleanup rewrites, or it is listed in
  `UNSUPPORTED` with the reason;
- every labeled op x the lowering registry;
- every scalar-op row x each backend's scalar table x a declared derivative x
  a test oracle (`tests/scalar_oracles.py`).

The checker is tested too: an injected op, labeled op or scalar row is reported.
"""

import importlib
import pkgutil
import sys

import pytest
from scalar_oracles import ORACLES

import dimgraph
from dimgraph.core.graph import Op
from dimgraph.core.scalar import SCALAR_SPECS
from dimgraph.labeled.ops import LabeledOp

# Base classes that are never a node's op (their subclasses are).
ABSTRACT = {"Op", "LabeledOp"}
# Ops a backend cannot run, with the reason; a hole not listed here is a failure.
UNSUPPORTED: dict = {"numba": {}, "c": {}, "jax": {}}
# Ops whose numba entry runs (for some nodes) the op's Python `perform` in object mode inside the jitted
# graph, each with why it cannot have a nopython form and what that costs: none.
NO_NOPYTHON_FORM: dict = {
    # A Blockwise of IfElse or a loop (vectorized control flow): per batch element a loop's traces may differ in
    # length (a ShapeError) and an untaken branch must not run; its `perform` keeps both. Cost: one Python call
    # per such node per call. Every other Blockwise is a nopython batch loop.
    "Blockwise": "vectorized IfElse / loops run per element by perform",
    "dimgraph.backends.numba.linalg._blockwise": "vectorized IfElse / loops run per element by perform",
}


def _modules(package):
    """Every module of `package` (so ops in new modules are found without listing them)."""
    pkg = importlib.import_module(package)
    names = [package] + [m.name for m in pkgutil.walk_packages(pkg.__path__, package + ".")]
    return [importlib.import_module(n) for n in names if ".rewriting" not in n]


def _classes(package, base):
    found = {}
    for mod in _modules(package):
        for obj in vars(mod).values():
            if isinstance(obj, type) and issubclass(obj, base) and obj.__module__ == mod.__name__:
                if obj.__name__ not in ABSTRACT:
                    found[f"{obj.__module__}.{obj.__qualname__}"] = obj
    return found


CORE_OPS = _classes("dimgraph.core", Op)
LABELED_OPS = _classes("dimgraph.labeled", LabeledOp)


def _registry(backend):
    """(the backend's op registry, the set of op classes its cleanup rewrites expand before it sees them)."""
    if backend == "numba":
        from dimgraph.backends import numba as module
        from dimgraph.backends.numba.ops import numba_kernel as registry
    elif backend == "c":
        from dimgraph.backends import c as module
        from dimgraph.backends.c.registry import c_impl as registry
    else:
        from dimgraph.backends import jax as module
        from dimgraph.backends.jax import compiler  # noqa: F401  (imports the op families, registering them)
        from dimgraph.backends.jax.registry import jax_impl as registry
    expanded = {t for rw in module.BACKEND.cleanups for t in rw.tracks}
    return registry, expanded


def op_holes(backend, classes):
    """Names of the op classes with no entry in `backend`'s registry (neither expanded nor declared unsupported)."""
    registry, expanded = _registry(backend)
    default = registry.dispatch(object)
    return sorted(
        name
        for name, cls in classes.items()
        if registry.dispatch(cls) is default and cls not in expanded and cls.__name__ not in UNSUPPORTED[backend]
    )


def lowering_holes(classes):
    from dimgraph.lower.rules import lowering

    default = lowering.dispatch(object)
    return sorted(name for name, cls in classes.items() if lowering.dispatch(cls) is default)


def nopython_holes(registry, classes, package="dimgraph.backends.numba"):
    """Names of the op classes whose numba entry calls `objmode_kernel` (an object-mode `perform`), and of
    the backend's functions that call it, unless `NO_NOPYTHON_FORM` names them."""
    import inspect

    default = registry.dispatch(object)
    holes = set()
    for name, cls in classes.items():
        entry = registry.dispatch(cls)
        if entry is not default and "objmode_kernel(" in inspect.getsource(entry):
            holes.add(cls.__name__)
    modules = (
        _modules(package)
        if hasattr(importlib.import_module(package), "__path__")
        else [importlib.import_module(package)]
    )
    for mod in modules:
        for fname, fn in vars(mod).items():
            if inspect.isfunction(fn) and fn.__module__ == mod.__name__ and fname != "objmode_kernel":
                if "objmode_kernel(" in inspect.getsource(fn):
                    holes.add(f"{mod.__name__}.{fname}")
    return sorted(h for h in holes if h not in NO_NOPYTHON_FORM)


def _scalar_tables():
    from dimgraph.backends.c.scalar import TEMPLATES
    from dimgraph.backends.jax.scalar import JAX_SCALAR
    from dimgraph.backends.numba.scalar import SCALAR_TEMPLATES

    return {"numba": SCALAR_TEMPLATES, "c": TEMPLATES, "jax": JAX_SCALAR}


def scalar_holes(rows):
    """`name: what is missing` for every row lacking a backend table entry, a declared derivative or an oracle."""
    tables = _scalar_tables()
    holes = {}
    for name, spec in rows.items():
        missing = [f"{b} table" for b, table in tables.items() if name not in table]
        # comparisons and bitwise ops give no float output: no gradient flows through them
        float_out = spec.rule != "ufunc" or any(t[-1] in "efdgFDG" for t in spec.ufunc.types)
        if spec.grad is None and float_out:
            missing.append("derivative (a function, FLAT or NoDerivative)")
        if name not in ORACLES:
            missing.append("oracle")
        if missing:
            holes[name] = missing
    return holes


def test_discovery_finds_ops_in_every_module():
    """Ops of the fused, linalg and extra modules are seen without being listed."""
    modules = {cls.__module__ for cls in CORE_OPS.values()}
    assert {"dimgraph.core.elemwise", "dimgraph.core.fused", "dimgraph.core.linalg", "dimgraph.core.extra"} <= modules
    assert len(LABELED_OPS) >= 10


@pytest.mark.parametrize("backend", ["numba", "c", "jax"])
def test_every_core_op_has_an_implementation(backend):
    holes = op_holes(backend, CORE_OPS)
    assert not holes, f"{backend} backend has no implementation for {holes} (register one, or name it in UNSUPPORTED)"


def test_every_numba_op_has_a_nopython_form():
    """No op leaves the jitted graph for Python: every numba entry prints nopython code for every node."""
    from dimgraph.backends.numba.ops import numba_kernel

    holes = nopython_holes(numba_kernel, CORE_OPS)
    assert not holes, f"numba entries with an object-mode form: {holes} (print a nopython kernel, or name why not)"


def test_the_nopython_check_reports_an_object_mode_entry():
    from functools import singledispatch

    from dimgraph.backends.numba.ops import objmode_kernel

    @singledispatch
    def registry(op, node):
        raise NotImplementedError

    class Fake(Op):
        pass

    @registry.register(Fake)
    def _fake(op, node):
        return objmode_kernel(op, node)

    assert nopython_holes(registry, {"tests.Fake": Fake}, package="dimgraph.backends.numba.ops") == ["Fake"]


def test_unsupported_lists_no_stale_names():
    names = {cls.__name__ for cls in CORE_OPS.values()}
    for backend, listed in UNSUPPORTED.items():
        assert set(listed) <= names, f"{backend}: {sorted(set(listed) - names)} are no ops any more"


def test_every_labeled_op_has_a_lowering():
    holes = lowering_holes(LABELED_OPS)
    assert not holes, f"labeled ops with no lowering: {holes}"


def test_every_scalar_row_is_complete():
    holes = scalar_holes(SCALAR_SPECS)
    assert not holes, f"scalar ops with holes: {holes}"


@pytest.mark.parametrize("backend", ["numba", "c", "jax"])
def test_an_injected_op_is_reported(backend):
    class Injected(Op):
        pass

    Injected.__module__ = "dimgraph.core.injected"
    assert op_holes(backend, {"dimgraph.core.injected.Injected": Injected}) == ["dimgraph.core.injected.Injected"]


def test_an_injected_labeled_op_and_scalar_row_are_reported():
    from dataclasses import replace

    class InjectedLabeled(LabeledOp):
        pass

    assert lowering_holes({"InjectedLabeled": InjectedLabeled}) == ["InjectedLabeled"]
    row = replace(SCALAR_SPECS["exp"], name="injected", grad=None)
    holes = scalar_holes({"injected": row})
    assert holes == {
        "injected": ["numba table", "c table", "jax table", "derivative (a function, FLAT or NoDerivative)", "oracle"]
    }


def test_package_imports_every_backend_family():
    """The numba, c and jax packages register their op families on import (no registration by reflection)."""
    for backend in ("numba", "c", "jax"):
        registry, _ = _registry(backend)
        assert len(registry.registry) > 20, backend
    assert dimgraph.core is not None


@pytest.mark.parametrize("backend", ["python", "numba", "c", "jax"])
def test_an_unknown_option_is_an_error_naming_the_accepted_ones(backend):
    """One contract for every backend: the options it accepts are declared, anything else fails before any work."""
    from dimgraph.backends import get_backend

    contract = get_backend(backend)
    x = dimgraph.tensor("x", shape=(2,))
    accepted = ", ".join(contract.options) or "none"
    with pytest.raises(TypeError, match=rf"{backend} backend: unknown options \['jitgraph'\]; accepted: {accepted}"):
        dimgraph.function([x], x + 1, backend=backend, jitgraph=True)


@pytest.mark.parametrize("backend", ["python", "numba", "c", "jax"])
def test_every_backend_compiles_to_a_compiled(backend):
    """`compile` returns the typed `Compiled`; its `run` computes the graph and `Function` shows its source."""
    import numpy as np

    from dimgraph.backends import Compiled, get_backend
    from dimgraph.core.fgraph import FunctionGraph

    x = dimgraph.tensor("x", shape=(None,))
    compiled = get_backend(backend).compile(FunctionGraph([x], [x * 2.0]))
    assert isinstance(compiled, Compiled)
    (out,) = compiled.run([np.arange(3.0)])
    np.testing.assert_array_equal(out, [0.0, 2.0, 4.0])
    f = dimgraph.function([x], x * 2.0, backend=backend)
    assert f.source == f._compiled.source
    assert (f.source is None) == (backend in ("python", "jax"))


def test_a_backend_returning_a_bare_callable_is_an_error(monkeypatch):
    import types

    from dimgraph.backends import _LOADERS, Backend

    module = types.ModuleType("bare_backend")
    module.compile = lambda fgraph, **options: lambda arrays: arrays
    module.BACKEND = Backend("bare", "bare_backend")
    module.from_plan = module.warm_tag = None  # the rest of the contract (`BackendModule`): no warm start
    module.REGISTRIES = ()
    monkeypatch.setitem(sys.modules, "bare_backend", module)
    monkeypatch.setitem(_LOADERS, "bare", "bare_backend")  # as `register_backend` does, undone after the test
    x = dimgraph.tensor("x", shape=(2,))
    with pytest.raises(TypeError, match="bare backend: compile returned function, not a dimgraph.backends.Compiled"):
        dimgraph.function([x], x + 1, backend="bare")
