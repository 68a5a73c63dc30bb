"""Modules imported on first use, so that `import dimgraph` stays cheap (pandas alone takes 0.3-0.5 s).

`from dimgraph.lazy import pandas as pd` gives an object whose attributes are the
module's, imported when the first one is read (label lookups, coords, outputs).
"""

from __future__ import annotations

import importlib


class LazyModule:
    """A stand-in for module `name`: the first attribute read imports it."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr):
        module = importlib.import_module(self._name)
        return getattr(module, attr)

    def __repr__(self):
        return f"<lazy module {self._name!r}>"


pandas = LazyModule("pandas")
scipy_linalg = LazyModule("scipy.linalg")
