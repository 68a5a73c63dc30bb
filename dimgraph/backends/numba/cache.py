"""The on-disk cache of generated modules; Numba's compiled output sits next to them.

Every generated module (a kernel or a graph function) is a file named by a
digest of its text plus the Numba, dimgraph and Python versions, under
`$DIMGRAPH_CACHE_DIR` (default: `~/.cache/dimgraph`, or `$XDG_CACHE_HOME/dimgraph`).
The functions in it are `njit(cache=True)`, so Numba keeps their machine code in
the `__pycache__` folder beside the file: a second process that prints the same
text imports the file and loads the machine code instead of compiling.

Concurrency: a file is written to a temporary name and renamed into place
(atomic on POSIX), and only when it does not exist yet, so its content is
always complete and its timestamp (which Numba's index checks) does not change
under a reader. Numba writes its own cache files the same way. No lock is taken.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import numba
import numpy as np

from dimgraph.version import __version__

_LOADED: dict = {}  # digest -> module, for this process


@functools.lru_cache(maxsize=None)
def version_tag() -> str:
    """Versions that invalidate the cache, including a digest of the helpers kernels call.

    Numba's cache does not notice a change in a function that a cached function
    calls, so the helper modules' text is part of every key.
    """
    from dimgraph.backends.numba import fallback, runtime, views
    from dimgraph.core import scalar, special

    helpers = hashlib.blake2b(digest_size=6)
    for mod in (runtime, views, fallback, scalar, special):
        helpers.update(Path(mod.__file__).read_bytes())
    return (
        f"numba{numba.__version__}-dimgraph{__version__}-py{sys.version_info[0]}{sys.version_info[1]}"
        f"-{helpers.hexdigest()}"
    )


def cache_dir() -> Path:
    """Where generated modules live (created on first use)."""
    root = os.environ.get("DIMGRAPH_CACHE_DIR")
    if root is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "dimgraph")
    path = Path(root) / version_tag()
    path.mkdir(parents=True, exist_ok=True)
    return path


def digest(text: str) -> str:
    """A digest of `text` and the versions, stable across processes (no salted `hash`)."""
    return hashlib.blake2b((version_tag() + "\n" + text).encode(), digest_size=12).hexdigest()


def _write_once(path: Path, text: str):
    if path.exists():
        return
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".py")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def load_module(kind: str, text: str):
    """The module for generated `text` (written to the cache when new), imported once per process."""
    key = digest(text)
    mod = _LOADED.get(key)
    if mod is not None:
        return mod
    path = cache_dir() / f"{kind}_{key}.py"
    _write_once(path, text)
    name = f"dimgraph_generated_{kind}_{key}"
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    try:
        spec.loader.exec_module(mod)
    except BaseException:
        del sys.modules[name]
        raise
    mod.digest = key
    _LOADED[key] = mod
    return mod


def kernel(key: str):
    """The kernel dispatcher of an already loaded kernel module (graph modules refer to kernels by digest)."""
    return _LOADED[key].kernel


def constant(dtype: str, shape: tuple, hexdata: str):
    """A small constant printed into generated source (Numba freezes it into the machine code)."""
    arr = np.frombuffer(bytes.fromhex(hexdata), dtype=dtype).reshape(shape).copy()
    arr.setflags(write=False)
    return arr
