"""The package's layers: every module imports only from its own layer or the layers below it.

    errors, config, version, lazy, progress  <-  core  <-  labeled  <-  lower  <-  prob  <-  backends (core only)
    <-  compile, printing, dotgraph  <-  the public face (dimgraph/__init__.py, dimgraph.model and the top-level front doors)

`prob` (distributions, supports, transforms) is labeled math: it reads `labeled`
(and `lower`'s loops, `dg.scan`, for draws that step) and nothing above it (the
backends, which see only core, never read it).

Every import is read from the source (function-level ones included, so a
cycle broken by a lazy import still counts). No import cycle may span two
packages (`dimgraph.core`, `dimgraph.labeled`, ...), neither through the
imports that run when a module loads nor through function-level ones. Inside
`dimgraph.labeled` and `dimgraph.prob` every import is at module level, except
the few named in `LAZY_IN_LABELED`, each with the circle it would close. Labeled values become
positional one way only: the lowering pass is built by `dimgraph.lower.lower`
and named nowhere else.
"""

import ast
import pathlib

import pytest

import dimgraph

PACKAGE = pathlib.Path(dimgraph.__file__).parent

ORDER = ["base", "core", "labeled", "lower", "prob", "backends", "compile", "face"]
BASE = {"dimgraph.errors", "dimgraph.config", "dimgraph.version", "dimgraph.lazy", "dimgraph.progress"}
# backends see only core (and base): a backend never reads Dims, labeled ops or the compile layer
ALLOWED_BY_BACKENDS = {"base", "core", "backends"}
# Upward imports allowed by name (`Variable.eval` reaches compile through `core.graph.register_evaluator`, no exception).
EXCEPTIONS = set()
# The function-level imports left inside dimgraph.labeled, each with the load-time circle it would close.
LAZY_IN_LABELED = {
    (
        "dimgraph.labeled.type",
        "dimgraph.labeled.variable",
    ): "a type makes its variables, whose operators import every labeled op module, which import types",
    (
        "dimgraph.labeled.basic",
        "dimgraph.labeled.variable",
    ): "labeled constants are LabeledConstant, whose operators import the op modules, which import basic",
    (
        "dimgraph.labeled.basic",
        "dimgraph.labeled.stacking",
    ): "stacking builds on basic; basic reads a DataArray's MultiIndex into a ProductDim only",
    (
        "dimgraph.labeled.indexing",
        "dimgraph.labeled.stacking",
    ): "stacking selects with isel/sel; indexing reads product-dim levels only for a level selection",
    (
        "dimgraph.labeled.labels",
        "dimgraph.labeled.stacking",
    ): "stacking finds positions with labels; labels reads tuple labels of a product dim only",
    (
        "dimgraph.labeled.math",
        "dimgraph.labeled.stacking",
    ): "stacking builds on math's operands; argmax over several dims stacks them only then",
    (
        "dimgraph.labeled.math",
        "dimgraph.labeled.shape",
    ): "shape builds on math's operands; argmax of a 0-d variable only needs full_like",
}


# Function-level imports that close no load-time circle, by package, each with why it stays lazy for now.
# Every other function-level import in the package must close one (`test_every_lazy_import_closes_a_circle`).
LAZY_WITHOUT_CIRCLE = {
    "dimgraph.backends": {
        ("dimgraph.backends.jax", "dimgraph.backends.jax.compiler"),  # jax itself loads only when the backend is used
    },
    "dimgraph.core": {
        # the loop rewrites: hoisting this module's lazy imports together broke the package's load (through its
        # rewrite_graph import, which closes a circle); these four are yet to be hoisted one by one
        ("dimgraph.core.rewriting.control", "dimgraph.core.graph"),
        ("dimgraph.core.rewriting.control", "dimgraph.core.math"),
        ("dimgraph.core.rewriting.control", "dimgraph.core.shape_ops"),
        ("dimgraph.core.rewriting.control", "dimgraph.core.basic"),
    },
    "dimgraph.arguments": {
        ("dimgraph.arguments", "dimgraph.compile.function")
    },  # the face's argument kinds name Function
    "dimgraph.testing": {("dimgraph.testing", "dimgraph")},  # a test helper reads the public face
}


# The one entry into lowering: the pass class is built by this function of this module, and named nowhere else.
LOWERING_PASS = "_Lowering"
LOWERING_ENTRY = ("dimgraph.lower", "lower")


def layer(module: str) -> str:
    if module in BASE:
        return "base"
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in ("core", "labeled", "prob", "lower", "backends", "compile"):
        return parts[1]
    if module in ("dimgraph.printing", "dimgraph.dotgraph"):
        return "compile"  # the text forms of graphs and compiled functions
    return "face"


def module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: pathlib.Path, module: str):
    """(line, imported module) for every import in the file; `from pkg import name` counts pkg.name if a module."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join(anchor + ([base] if base else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                is_module = (PACKAGE.parent / sub.replace(".", "/")).with_suffix(".py").exists() or (
                    PACKAGE.parent / sub.replace(".", "/")
                ).is_dir()
                yield node.lineno, sub if is_module else base


def violations(files):
    """`files`: (path, module name) pairs."""
    found = []
    for path, module in files:
        here = layer(module)
        for line, target in sorted(set(imports_of(path, module))):
            if not target.startswith("dimgraph"):
                continue
            there = layer(target)
            upward = ORDER.index(there) > ORDER.index(here)
            sideways = here == "backends" and there not in ALLOWED_BY_BACKENDS
            if (upward or sideways) and (module, target) not in EXCEPTIONS:
                found.append(f"{path}:{line}: {module} ({here}) imports {target} ({there})")
    return found


def module_level_imports(path: pathlib.Path, module: str):
    """The dimgraph modules `module` imports when it loads: every import outside a function body."""
    tree = ast.parse(path.read_text(), str(path))
    lines, todo = set(), list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            lines.add(node.lineno)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo.extend(ast.iter_child_nodes(node))
    return {t for line, t in imports_of(path, module) if line in lines and t.startswith("dimgraph")}


def package_of(module: str) -> str:
    return ".".join(module.split(".")[:2])


def function_level_imports(path: pathlib.Path, module: str):
    """(line, imported dimgraph module) for every import inside a function body of `module`."""
    inside = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside.update(n.lineno for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return sorted({(line, t) for line, t in imports_of(path, module) if line in inside and t.startswith("dimgraph")})


def all_imports(path: pathlib.Path, module: str):
    return {t for _, t in imports_of(path, module) if t.startswith("dimgraph")}


def import_circles(files, edges=module_level_imports):
    """Each set of two or more modules that import one another in a circle (through `edges`: at load time
    unless told otherwise)."""
    graph = {module: edges(path, module) for path, module in files}

    def reach(start):
        seen, todo = {start}, [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt in graph and nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reached = {m: reach(m) for m in graph}
    circles = {frozenset(w for w in reached[m] if m in reached[w]) for m in graph}
    return sorted(sorted(c) for c in circles if len(c) > 1)


def cycles_across_packages(files, edges=module_level_imports):
    """The import circles whose modules lie in two or more packages."""
    return [c for c in import_circles(files, edges) if len({package_of(m) for m in c}) > 1]


def lowering_uses(files):
    """Where the lowering pass is named outside its entry module, or built outside its entry function:
    `module:line` for each (a second way from labeled to positional values)."""
    found = []
    for path, module in files:
        tree = ast.parse(path.read_text(), str(path))
        builder = {}  # line of a call that builds the pass -> the function it is in
        for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]:
            for n in ast.walk(fn):
                if isinstance(n, ast.Call) and _names_pass(n.func):
                    builder.setdefault(n.lineno, fn.name)  # the outermost function: ast.walk meets it first
        for n in ast.walk(tree):
            named = _names_pass(n) or (
                isinstance(n, ast.alias) and n.name.split(".")[-1].lstrip("_") == LOWERING_PASS.lstrip("_")
            )
            if module != LOWERING_ENTRY[0] and named:
                found.append(f"{module}:{getattr(n, 'lineno', '?')}")
            elif isinstance(n, ast.Call) and _names_pass(n.func) and (module, builder.get(n.lineno)) != LOWERING_ENTRY:
                found.append(f"{module}:{n.lineno}")
    return sorted(set(found))


def _names_pass(node) -> bool:
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return name is not None and name.lstrip("_") == LOWERING_PASS.lstrip("_")


MODULES = [(p, module_name(p)) for p in sorted(PACKAGE.rglob("*.py"))]


def test_no_module_imports_upward():
    found = violations(MODULES)
    assert not found, "imports against the layer order:\n" + "\n".join(found)


def test_no_import_cycle_spans_packages():
    found = cycles_across_packages(MODULES)
    assert not found, "import cycles across packages:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_import_circle_spans_packages_even_through_functions():
    """A lazy import hides a circle from the loader, not from a reader: none may join two packages."""
    found = cycles_across_packages(MODULES, edges=all_imports)
    assert not found, "import circles across packages:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_the_compile_package_has_no_import_circle():
    """The compiled-function boundary reads one way (function -> signature, extra_dims, pickling, chunked,
    warm; flat -> function), lazy imports included."""
    found = [
        c for c in import_circles(MODULES, edges=all_imports) if {package_of(m) for m in c} == {"dimgraph.compile"}
    ]
    assert not found, "import circles inside dimgraph.compile:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_labeled_imports_at_module_level():
    """Inside dimgraph.labeled and dimgraph.prob an import inside a function is one of the named survivors, and each
    survivor is still there."""
    found = {
        (m, t): f"{p}:{line}"
        for p, m in MODULES
        if m.startswith(("dimgraph.labeled", "dimgraph.prob"))
        for line, t in function_level_imports(p, m)
    }
    new = {k: where for k, where in found.items() if k not in LAZY_IN_LABELED}
    assert not new, (
        "function-level imports in dimgraph.labeled/prob (move them to the top, or name the circle):\n"
        + "\n".join(f"{where}: {m} imports {t}" for (m, t), where in new.items())
    )
    assert set(LAZY_IN_LABELED) <= set(found), f"survivors no longer lazy: {set(LAZY_IN_LABELED) - set(found)}"


def test_lowering_has_one_entry():
    """`dimgraph.lower.lower` is the one way from labeled to positional values: `dg.function`, `dg.grad`, `dg.scan`,
    `dg.ifelse`, ... all call it; the pass it runs is built there and named in no other module."""
    assert lowering_uses(MODULES) == []
    entry = PACKAGE / "lower" / "__init__.py"
    builds = [n for n in ast.walk(ast.parse(entry.read_text())) if isinstance(n, ast.Call) and _names_pass(n.func)]
    assert len(builds) == 1, "the entry builds the pass once"


@pytest.mark.parametrize(
    "module, source",
    [
        ("dimgraph.lower.control", "from dimgraph.lower import _Lowering\n"),  # named outside the entry module
        ("dimgraph.compile.injected", "import dimgraph.lower as L\n\n\ndef f(x):\n    return L._Lowering().run([x])\n"),
        ("dimgraph.lower", "def lower_io(inputs):\n    return _Lowering().run(inputs)\n"),  # built outside `lower`
        ("dimgraph.lower", "low = _Lowering()\n"),  # at module level
    ],
)
def test_an_injected_second_way_into_lowering_is_caught(tmp_path, module, source):
    fake = tmp_path / "injected.py"
    fake.write_text(source)
    assert len(lowering_uses([(fake, module)])) == 1


def test_the_exception_is_still_needed():
    """A named exception that no import uses any more must go."""
    used = {(m, t) for p, m in MODULES for _, t in imports_of(p, m)}
    assert EXCEPTIONS <= used


@pytest.mark.parametrize(
    "module, source",
    [
        ("dimgraph.core.injected", "def f():\n    from dimgraph.labeled.ops import is_labeled\n"),  # function-level
        ("dimgraph.labeled.injected", "from dimgraph.compile import function\n"),
        ("dimgraph.labeled.injected", "from dimgraph.prob.registry import DISTRIBUTIONS\n"),  # labeled is below prob
        ("dimgraph.prob.injected", "from dimgraph.compile import function\n"),  # prob is below compile
        ("dimgraph.backends.injected", "from dimgraph.lower.io import LabeledOutput\n"),  # backends see core only
        ("dimgraph.core.injected", "from .. import lower\n"),  # relative
        ("dimgraph.errors", "import dimgraph\n"),  # the package root is the public face
    ],
)
def test_an_injected_violation_is_caught(tmp_path, module, source):
    """The checker itself: each of these imports, in a module of that name, is reported."""
    fake = tmp_path / "injected.py"
    fake.write_text(source)
    assert len(violations([(fake, module)])) == 1


@pytest.mark.parametrize(
    "first, first_source, second, second_source, found",
    [
        (
            "dimgraph.core.injected",
            "from dimgraph.labeled.injected import f\n",
            "dimgraph.labeled.injected",
            "from dimgraph.core.injected import g\n",
            True,
        ),
        # inside a function the import does not run at load time: no cycle (the upward import is another test's)
        (
            "dimgraph.core.injected",
            "def g():\n    from dimgraph.labeled.injected import f\n",
            "dimgraph.labeled.injected",
            "from dimgraph.core.injected import g\n",
            False,
        ),
        # one layer, two packages: only this check sees it
        (
            "dimgraph.compile.injected",
            "from dimgraph.printing_injected import p\n",
            "dimgraph.printing_injected",
            "from dimgraph.compile.injected import f\n",
            True,
        ),
    ],
)
def test_an_injected_cycle_is_caught(tmp_path, first, first_source, second, second_source, found):
    """The cycle finder itself, on two modules that import each other."""
    (tmp_path / "first.py").write_text(first_source)
    (tmp_path / "second.py").write_text(second_source)
    injected = [(tmp_path / "first.py", first), (tmp_path / "second.py", second)]
    assert cycles_across_packages(injected) == ([sorted([first, second])] if found else [])
    assert cycles_across_packages(injected, edges=all_imports) == [sorted([first, second])]  # a lazy import counts here


def test_an_injected_lazy_import_in_labeled_is_caught(tmp_path):
    fake = tmp_path / "injected.py"
    fake.write_text(
        "import numpy\n\n\ndef f():\n    from dimgraph.labeled.shape import transpose\n    return transpose\n"
    )
    assert function_level_imports(fake, "dimgraph.labeled.injected") == [(5, "dimgraph.labeled.shape")]


def _load_path(graph, start, goal):
    """The modules from `start` to `goal` through load-time imports (None: `goal` is not reached)."""
    previous, todo = {start: None}, [start]
    while todo:
        here = todo.pop(0)
        if here == goal:
            path = []
            while here is not None:
                path.append(here)
                here = previous[here]
            return path[::-1]
        for nxt in sorted(graph.get(here, ())):
            if nxt in graph and nxt not in previous:
                previous[nxt] = here
                todo.append(nxt)
    return None


def _package_key(module):
    return module if module.count(".") < 1 else ".".join(module.split(".")[:2])


def test_every_lazy_import_closes_a_circle():
    """A function-level import anywhere in the package is there because a module-level one would close a load-time
    circle (the target's module-level imports reach the importing module: the circle is shown), or it is named in
    `LAZY_WITHOUT_CIRCLE` with why; every named one is still lazy."""
    graph = {m: module_level_imports(p, m) for p, m in MODULES}
    named = set().union(*LAZY_WITHOUT_CIRCLE.values())
    found, unexplained = set(), []
    for path, module in MODULES:
        for line, target in function_level_imports(path, module):
            found.add((module, target))
            if _load_path(graph, target, module) is None and (module, target) not in named:
                unexplained.append(f"{path}:{line}: {module} imports {target} in a function, and closes no circle")
    assert not unexplained, (
        "move these imports to the top of their module (or name why in LAZY_WITHOUT_CIRCLE):\n" + "\n".join(unexplained)
    )
    assert named <= found, f"named in LAZY_WITHOUT_CIRCLE but no longer lazy: {sorted(named - found)}"
    for package, entries in LAZY_WITHOUT_CIRCLE.items():
        assert all(_package_key(m) == package for m, _ in entries), package


def test_the_lazy_import_check_catches_one_that_closes_no_circle(tmp_path):
    fake = tmp_path / "injected.py"
    fake.write_text("def f():\n    from dimgraph.errors import InputError\n")
    graph = {"dimgraph.model.injected": module_level_imports(fake, "dimgraph.model.injected"), "dimgraph.errors": set()}
    ((_, target),) = function_level_imports(fake, "dimgraph.model.injected")
    assert _load_path(graph, target, "dimgraph.model.injected") is None
    graph["dimgraph.errors"] = {
        "dimgraph.model.injected"
    }  # were errors to import the module, the lazy import would be needed
    assert _load_path(graph, target, "dimgraph.model.injected") == ["dimgraph.errors", "dimgraph.model.injected"]
