"""`import dimgraph` stays cheap: the heavy libraries load when a backend or a label lookup needs them."""

import subprocess
import sys


def test_import_loads_no_heavy_library():
    code = (
        "import sys, dimgraph; "
        "print(sorted(m for m in ('pandas', 'xarray', 'scipy', 'numba', 'llvmlite', 'jax') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]"


def test_lazy_module_imports_on_first_attribute():
    from dimgraph.lazy import LazyModule

    lazy = LazyModule("json")
    assert lazy.dumps({"a": 1}) == '{"a": 1}' and "json" in repr(lazy)
