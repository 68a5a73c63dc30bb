"""Every docstring example in the package runs and prints what it shows (the examples users copy)."""

import doctest
import importlib
import pkgutil

import pytest

import dimgraph

MODULES = sorted(m.name for m in pkgutil.walk_packages(dimgraph.__path__, "dimgraph."))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS, report=True)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed (see the output above)"


def test_readme_tour_runs(capsys):
    """The README's tour is code users paste: it must run as printed."""
    import pathlib
    import re

    readme = (pathlib.Path(__file__).parent.parent / "README.md").read_text()
    for block in re.findall(r"```python\n(.*?)```", readme, re.S):
        exec(compile(block, "README.md", "exec"), {})
    assert "sum{obs}" in capsys.readouterr().out  # the tour's dg.dprint shows dims on the printed graph


def test_every_public_labeled_variable_method_has_a_docstring():
    """`help(x.sum)` and friends read the method's own docstring (never a section comment or nothing)."""
    import inspect

    from dimgraph.labeled.variable import LabeledConstant, LabeledVariable

    public = ["__getitem__", "__matmul__"]
    for cls in (LabeledVariable, LabeledConstant):
        names = [n for n in dir(cls) if not n.startswith("_") or n in public]
        undocumented = [n for n in names if not inspect.getdoc(getattr(cls, n)) and callable(getattr(cls, n))]
        props = [n for n in names if isinstance(inspect.getattr_static(cls, n), property)]
        props = [n for n in props if not getattr(cls, n).__doc__]
        assert not undocumented and not props, (cls.__name__, undocumented, props)
