"""The backend contract (`dimgraph.backends.BackendModule`): every registered backend implements it.

Callers reach a backend only through its `Backend` (compile, build, warm_tag,
registries); this checks each module declares all of it, consistently, and
that a warm-start backend's `build(plan)` rebuilds what `compile` made.
"""

import importlib
import sys
import types

import numpy as np
import pytest

import dimgraph as dg
from dimgraph import backends
from dimgraph.backends import BackendModule, Compiled, available_backends, get_backend
from dimgraph.core.fgraph import FunctionGraph
from dimgraph.core.rewriting import OPT_IN


@pytest.mark.parametrize("name", available_backends())
def test_every_backend_module_implements_the_contract(name):
    backend = get_backend(name)
    module = importlib.import_module(backend.module)
    assert isinstance(module, BackendModule)
    assert backend.implementation() is module and module.BACKEND is backend and backend.name == name
    assert set(backend.rewrites_opt_in) <= set(OPT_IN), "an opt-in rewrite that does not exist"
    assert (module.from_plan is None) == (module.warm_tag is None), "a warm start needs both from_plan and warm_tag"
    assert backend.registries and all(isinstance(k, type) for r in backend.registries for k in r)
    tag = backend.warm_tag()
    assert tag is None or (isinstance(tag, str) and tag)


def test_a_plan_rebuilds_what_compile_made():
    """numba's warm start: `from_plan(plan)` runs the graph `compile` generated, with the same values."""
    backend = get_backend("numba")
    x = dg.vector("x", size=4)
    fg = FunctionGraph([x], [dg.exp(x).sum() * 2.0, x[1:] - x[:-1]], clone=True)
    compiled = backend.compile(fg)
    rebuilt = backend.build(compiled.plan)
    assert isinstance(rebuilt, Compiled)
    data = np.linspace(-1, 1, 4)
    for got, want in zip(rebuilt.run([data]), [np.exp(data).sum() * 2.0, np.diff(data)]):
        np.testing.assert_allclose(got, want, rtol=1e-14)


def test_a_backend_without_a_warm_start_refuses_to_build():
    with pytest.raises(TypeError, match="python backend: it has no warm start"):
        get_backend("python").build(object())


def test_a_module_missing_part_of_the_contract_is_named(monkeypatch):
    module = types.ModuleType("dimgraph_test_partial_backend")
    module.BACKEND = backends.Backend("partial", module.__name__)
    module.compile = lambda fgraph, **options: Compiled(lambda args: args)
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(backends._LOADERS, "partial", module.__name__)
    with pytest.raises(
        TypeError,
        match=r"partial backend: module dimgraph_test_partial_backend does not define \['REGISTRIES', 'from_plan', 'warm_tag'\]",
    ):
        get_backend("partial").compile(FunctionGraph([], []))
    assert not isinstance(module, BackendModule)


def test_a_compiled_whose_tiers_miss_part_of_the_protocol_is_refused(monkeypatch):
    """`Compiled.tiers` is a `dimgraph.backends.Tiers` (numba's `graphjit.Tiers`) or None, checked at compile."""
    module = importlib.import_module(get_backend("python").module)
    monkeypatch.setattr(module, "compile", lambda fgraph, **options: Compiled(lambda args: args, tiers=object()))
    with pytest.raises(TypeError, match="python backend: its Compiled.tiers does not implement"):
        get_backend("python").compile(FunctionGraph([], []))
    x = dg.scalar("x")
    assert isinstance(dg.function([x], x + 1, backend="numba").tiers, backends.Tiers)
