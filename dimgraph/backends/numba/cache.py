"""The on-disk cache of generated modules and of the machine code Numba compiles for them.

Every generated module (a kernel or a graph function) is a file named by a
digest of its text plus the Numba, dimgraph and Python versions, in a private
directory under `$DIMGRAPH_CACHE_DIR` (`dimgraph.backends.diskcache`: mode 0700,
refused when another user could write to it). The module that runs is always
compiled from the text in memory; the file is only its name on disk, and a file
whose content differs from the text (damage) is discarded with a `CacheWarning`
and written again.

Numba keeps the machine code of every jitted function (the generated ones and
dimgraph's own helpers in `runtime.py`, `views.py`, `fallback.py`) in the
`__pycache__` of that directory, never in the installed package, through
`VerifiedCache`: each index and data file carries the HMAC-SHA256 of its content
and of its name under the user's cache key (`diskcache.secret`), and a file
that does not match (damaged, or made elsewhere), or fails to load, is
discarded with a warning and compiled again: never a crash, never another
function's code. A hit loads the machine code without refreshing Numba's
typing and lowering registries (a compile refreshes them itself).

Memory: a module stays loaded while a compiled function uses it (the registry
holds modules weakly) plus the last `RECENT` modules loaded, so compiling and
dropping many functions does not grow the process without bound. Generated
modules are not entered in `sys.modules`.

A disk that refuses a write (full, read-only) turns writing off for the rest of
the process with one `CacheWarning` (`diskcache.store`): kernels compile and run
from the text in memory, and whatever the cache already holds still loads.

Concurrency: files are written to a temporary name, fsynced and renamed into
place (atomic on POSIX), so a reader sees a whole file or none; a file is
rewritten only when damaged. No lock is taken.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import hashlib
import hmac
import io
import os
import pickle
import sys
import weakref
from pathlib import Path

import numba
import numpy as np
from numba.core import caching
from numba.core.compiler_lock import global_compiler_lock
from numba.core.dispatcher import Dispatcher
from numba.core.runtime import rtsys

from dimgraph.backends import diskcache, ziggurat
from dimgraph.backends.numba import bounds, fallback, native, runtime, views
from dimgraph.backends.numba import random as random_helpers  # the samplers RandomDraw kernels call
from dimgraph.core import scalar, special
from dimgraph.version import __version__

SEAL = "hmac-sha256"  # how `_VerifiedFile` seals Numba's files: a change must not meet files sealed the old way
_LOADED = weakref.WeakValueDictionary()  # digest -> module, while something in this process uses it
RECENT = 64
_recent = collections.deque(maxlen=RECENT)  # the modules loaded last, kept for a recompile of the same graph


@functools.lru_cache(maxsize=None)
def version_tag() -> str:
    """Versions that invalidate the cache, including a digest of the helpers kernels call.

    Numba's cache does not notice a change in a function that a cached function
    calls, so the helper modules' text is part of every key.
    """
    helpers = hashlib.blake2b(SEAL.encode(), digest_size=6)
    for mod in (runtime, views, bounds, fallback, native, scalar, special, random_helpers, ziggurat):
        helpers.update(Path(mod.__file__).read_bytes())
    return (
        f"numba{numba.__version__}-dimgraph{__version__}-py{sys.version_info[0]}{sys.version_info[1]}"
        f"-{helpers.hexdigest()}"
    )


def cache_dir() -> Path:
    """Where generated modules live: a private directory, created on first use."""
    return diskcache.private_dir(version_tag())


def digest(text: str) -> str:
    """A digest of `text` and the versions, stable across processes (no salted `hash`)."""
    return hashlib.blake2b((version_tag() + "\n" + text).encode(), digest_size=12).hexdigest()


def _ensure_file(path: Path, text: str):
    """`path` holding exactly `text`: written when missing, rewritten (with a warning) when damaged."""
    data = text.encode()
    try:
        found = path.read_bytes()
    except FileNotFoundError:
        found = None
    if found == data:
        return
    if found is not None:
        diskcache.discard(path, "its content differs from the generated text it is named after")
    diskcache.store(path, data)  # a full disk: the module runs from `text` all the same, uncached


def load_module(kind: str, text: str):
    """The module for generated `text` (written to the cache when new), imported once while in use."""
    key = digest(text)
    mod = _LOADED.get(key)
    if mod is None:
        path = cache_dir() / f"{kind}_{key}.py"
        _ensure_file(path, text)
        mod = type(sys)(f"dimgraph_generated_{kind}_{key}")
        mod.__file__ = str(path)
        # NOTE: the code comes from `text`, not from the file: a file changed after the check above
        # changes only Numba's source stamp (a cache miss), never the code that runs.
        # NOTE: a cycle through the module's globals keeps the module loaded exactly as long as a
        # function (a dispatcher, whose globals these are) uses it; the registry holds it weakly.
        mod.__dict__["__module_object__"] = mod
        mod.digest = key
        exec(compile(text, str(path), "exec"), mod.__dict__)
        for value in list(vars(mod).values()):
            if isinstance(value, Dispatcher):
                verified(value)
        _LOADED[key] = mod
        if "numba.objmode(" in text:
            # NOTE: kept in `sys.modules` for the life of the process: Numba looks the globals of
            # object-mode code up by module name when it runs (a warm process's cached code, or
            # code compiled outside `_importable`); object-mode kernels are few (loop bodies only).
            sys.modules[mod.__name__] = mod
    _recent.append(mod)
    return mod


def loaded(key: str):
    """An already loaded generated module, by digest (a jitted graph's entries refer to it so)."""
    return _LOADED[key]


def kernel(key: str):
    """The kernel dispatcher of an already loaded kernel module (graph modules refer to kernels by digest)."""
    return _LOADED[key].kernel


def verified(dispatcher: Dispatcher) -> Dispatcher:
    """`dispatcher` with its machine-code cache kept by `VerifiedCache` (a dispatcher without one is left alone)."""
    if isinstance(dispatcher._cache, caching.FunctionCache) and not isinstance(dispatcher._cache, VerifiedCache):
        dispatcher._cache = VerifiedCache(dispatcher.py_func)
        if "__module_object__" in dispatcher.py_func.__globals__:  # a generated module: see `_importable`
            dispatcher.compile = functools.partial(_compile_importable, dispatcher.compile, dispatcher.py_func)
    return dispatcher


def load_cached(dispatcher: Dispatcher, sig) -> bool:
    """Add `dispatcher`'s machine code for `sig` from the disk cache, if there; never compile."""
    with global_compiler_lock, _importable(dispatcher.py_func):
        cres = dispatcher._cache.load_overload(sig, dispatcher.targetctx)
        if cres is None:
            return False
        dispatcher.add_overload(cres)
        return True


@contextlib.contextmanager
def typed(dispatcher: Dispatcher):
    """Inside the block, `dispatcher.compile` types and compiles afresh (and saves as usual), never loading
    the disk cache's machine code: for a compile that must record what its typing finds (`native.recording`)."""
    with global_compiler_lock:
        dispatcher._cache.loads = False
        try:
            yield
        finally:
            dispatcher._cache.loads = True


def _sites_path(graph_key: str, sig) -> Path:
    return cache_dir() / f"s_{graph_key}_{digest(repr(tuple(sig)))}.pkl"


def save_sites(graph_key: str, sig, sites):
    """Record beside the cache the kernel each call site of the jitted graph `graph_key` compiled for `sig`
    calls: `sites` as `[(kernel dispatcher, its argument types), ...]` (`native.recording`), kept as kernel
    digests, sealed by an HMAC under this user's cache key (`diskcache.content_digest`)."""
    path = _sites_path(graph_key, sig)
    payload = pickle.dumps([(d.py_func.__globals__["digest"], args) for d, args in sites], protocol=-1)
    seal = diskcache.content_digest(path.name, payload, path.parent).encode()
    diskcache.store(path, seal + b"\n" + payload)


def load_sites(graph_key: str, sig):
    """The record `save_sites` left for the jitted graph `graph_key` compiled for `sig`, as
    `[(kernel dispatcher, argument types), ...]` (the kernels' modules already loaded); None when there is none. A
    record that fails its seal or does not load is discarded with a `CacheWarning`, so the graph compiles
    again (its code cached without a record is never used: the table could not be filled)."""
    path = _sites_path(graph_key, sig)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    seal, _, payload = data.partition(b"\n")
    if not hmac.compare_digest(seal, diskcache.content_digest(path.name, payload, path.parent).encode()):
        diskcache.discard(path, "its seal does not match its content")
        return None
    try:
        record = pickle.loads(payload)
    except Exception as e:  # noqa: BLE001 - damage the seal cannot see (a truncated write sealed whole is not one)
        diskcache.discard(path, f"it failed loading: {type(e).__name__}")
        return None
    return [(kernel(key), tuple(args)) for key, args in record]


def _compile_importable(compile, py_func, sig):
    # NOTE: under Numba's own (reentrant) compiler lock, so no other thread's compile sees the
    # modules come and go.
    with global_compiler_lock, _importable(py_func):
        return compile(sig)


class _Damaged(Exception):
    pass


class _Locator(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
    """Numba's files for any function dimgraph jits: `cache_dir()/__pycache__`.

    The directory is fixed when the function's cache is made: Numba names the files once
    from it, so the directory made before a write must be that one even when
    `$DIMGRAPH_CACHE_DIR` changed since (the helpers' caches are made at import).
    """

    def __init__(self, py_func, py_file):
        self._py_file = py_file
        self._lineno = py_func.__code__.co_firstlineno
        self._path = str(cache_dir() / "__pycache__")

    def get_cache_path(self):
        return self._path

    def ensure_cache_path(self):
        os.makedirs(self._path, mode=0o700, exist_ok=True)

    def get_source_stamp(self):
        try:
            return super().get_source_stamp()
        except FileNotFoundError:  # a generated module a full disk did not take: nothing cached can match
            return None

    @classmethod
    def from_function(cls, py_func, py_file):
        generated = "__module_object__" in getattr(py_func, "__globals__", {})
        ours = generated or os.path.abspath(py_file).startswith(_PACKAGE_DIR)
        return cls(py_func, py_file) if ours and (generated or os.path.exists(py_file)) else None


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))) + os.sep  # dimgraph/


def install_locator():
    """Put `_Locator` first in Numba's own list of cache locators, once per process.

    For the functions Numba jits for dimgraph (helpers, `overload`s) whose caches Numba
    makes itself; it declines every function outside dimgraph, so users' caches stay
    where Numba puts them. The backend calls it where it sets up, before the kernel
    families' helpers are jitted. Numba has no public hook for this: it edits Numba's
    private `CacheImpl._locator_classes` list.
    """
    if _Locator not in caching.CacheImpl._locator_classes:
        caching.CacheImpl._locator_classes.insert(0, _Locator)


class _VerifiedImpl(caching.CompileResultCacheImpl):
    _locator_classes = [_Locator]


class _VerifiedFile(caching.IndexDataCacheFile):
    """Numba's index and data files, each prefixed with the HMAC-SHA256 of its name and content under
    this user's cache key (`diskcache.secret`): a file made elsewhere fails as damage does."""

    def _seal(self, path, payload: bytes) -> bytes:
        name = os.path.basename(path).encode()
        key = diskcache.secret(os.path.dirname(path))
        return hmac.new(key, name + b"\0" + payload, hashlib.sha256).digest() + payload

    def _unseal(self, path, data: bytes) -> bytes:
        payload = data[32:]
        if len(data) < 32 or self._seal(path, payload)[:32] != data[:32]:
            raise _Damaged(path)
        return payload

    def _save_index(self, overloads):
        payload = pickle.dumps(self._version, protocol=-1) + self._dump((self._source_stamp, overloads))
        with self._open_for_write(self._index_path) as f:
            f.write(self._seal(self._index_path, payload))

    def _load_index(self):
        try:
            with open(self._index_path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return {}
        payload = self._unseal(self._index_path, data)
        version, rest = _split_pickle(payload)
        if version != self._version:
            return {}
        stamp, overloads = pickle.loads(rest)
        return overloads if stamp == self._source_stamp else {}

    def _save_data(self, name, data):
        path = self._data_path(name)
        with self._open_for_write(path) as f:
            f.write(self._seal(path, self._dump(data)))

    def _load_data(self, name):
        path = self._data_path(name)
        with open(path, "rb") as f:
            data = f.read()
        return pickle.loads(self._unseal(path, data))


def _split_pickle(payload: bytes):
    stream = io.BytesIO(payload)
    first = pickle.load(stream)
    return first, stream.read()


class VerifiedCache(caching.FunctionCache):
    """Numba's per-function cache, in dimgraph's private directory, verified before anything loads.

    A file that fails verification or loading is discarded (with a `CacheWarning`
    naming it) and the function is compiled again and saved afresh.
    """

    _impl_class = _VerifiedImpl

    def __init__(self, py_func):
        super().__init__(py_func)
        self.loads = True  # False: `load_overload` finds nothing (`typed`)
        self._cache_file = _VerifiedFile(
            cache_path=self._cache_path,
            filename_base=self._impl.filename_base,
            source_stamp=self._cache_file._source_stamp,
        )

    def save_overload(self, sig, data):
        # NOTE: a disk that refuses the write (full, read-only) costs this process its caching, not
        # the compile: `diskcache.refuse_writes` warns once and later saves are skipped.
        if diskcache.writes_refused():
            return
        try:
            super().save_overload(sig, data)
        except OSError as e:
            diskcache.refuse_writes(e)

    def load_overload(self, sig, target_context):
        # NOTE: Numba's own `load_overload` first refreshes the target context: it imports and
        # installs every typing and lowering registry (0.4-0.5 CPU s, once per process, scipy's
        # BLAS included). Loading machine code needs only the runtime's symbols (NRT); a compile,
        # which needs the registries, refreshes the context itself (`numba.core.compiler`).
        if not self.loads:
            return None
        rtsys.initialize(target_context)
        try:
            with self._guard_against_spurious_io_errors():
                return self._load_overload(sig, target_context)
        except Exception as e:  # damage of any kind: a truncated pickle, another function's file, a bad key
            where = e.args[0] if isinstance(e, _Damaged) else self._cache_file._index_path
            diskcache.discard(Path(where), f"it failed verification or loading: {type(e).__name__}")
            if where != self._cache_file._index_path:
                diskcache.discard(Path(self._cache_file._index_path), "it refers to a discarded file")
            return None


@contextlib.contextmanager
def _importable(py_func):
    """`py_func`'s module in `sys.modules` while Numba compiles it (it records the module by
    name, and imports it by that name to rebuild cached code).

    Generated modules are not kept in `sys.modules` (that would keep every one alive):
    they enter it only while one of their functions compiles.
    """
    # NOTE: every loaded module, since a graph's machine code refers to its kernels' modules too.
    added = [m for m in list(_LOADED.values()) if m.__name__ not in sys.modules]
    sys.modules.update((m.__name__, m) for m in added)
    try:
        yield
    finally:
        for m in added:
            if sys.modules.get(m.__name__) is m:
                del sys.modules[m.__name__]


def _verify_helpers():
    """Give dimgraph's own jitted helpers the verified cache in the private directory (not the package's)."""
    for module in (runtime, views, bounds, fallback, random_helpers):
        for value in vars(module).values():
            if isinstance(value, Dispatcher):
                verified(value)


_verify_helpers()


def constant(dtype: str, shape: tuple, hexdata: str):
    """A small constant printed into generated source (Numba freezes it into the machine code)."""
    arr = np.frombuffer(bytes.fromhex(hexdata), dtype=dtype).reshape(shape).copy()
    arr.setflags(write=False)
    return arr
