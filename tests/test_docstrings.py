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
