"""Compiling generated C into a shared library, cached on disk by the digest of what was compiled.

The cache key is a SHA-256 of the source text, the compiler (path and
`--version`), the flags, the CPU (the flags include `-march=native`) and
`BACKEND_VERSION`: never Python's salted `hash()`, so a second process finds the
library and loads it without compiling. The library lives at
`$DIMGRAPH_CACHE_DIR/c/<key>.so` (default `~/.cache/dimgraph/c`, or under
`$XDG_CACHE_HOME`), a private directory (`diskcache.private_dir`), with the
HMAC of the key and its bytes under the user's cache key in `<key>.sha256`
(`diskcache.content_digest`): a library is loaded only when it matches, so a
damaged, swapped or planted one is recompiled, never run.
A cache whose disk refuses writes (full, read-only) costs caching, not the
compile: the library is built in a temporary directory and loaded from there.
Concurrent compiles of one key each write a private temporary file, fsync it
and rename it into place atomically, so a reader never sees a half-written
library.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from functools import lru_cache
from pathlib import Path

from dimgraph.backends import diskcache
from dimgraph.errors import BackendUnavailable

BACKEND_VERSION = "2"  # 2: records are HMACs under the user's cache key (`diskcache.secret`)
# NOTE: -O2, not -O3: on a 4-node graph -O3 took 1.65 s against 0.72 s and the loops here gain little
# from it; the unit-stride loops that matter carry `omp simd`. -ffp-contract=off keeps a*b+c two
# roundings, as NumPy computes it; -fwrapv makes integer overflow wrap, as NumPy's does.
FLAGS = (
    "-O2",
    "-march=native",
    "-std=gnu11",
    "-fPIC",
    "-shared",
    "-fwrapv",
    "-fno-math-errno",
    "-ffp-contract=off",
    "-fopenmp-simd",
)
LIBS = ("-lm",)

_loaded = {}  # key -> ctypes library, so one process dlopens each library once
_lock = threading.Lock()
stats = {"compiled": 0, "loaded_from_disk": 0, "compile_seconds": 0.0}


class CCompileError(RuntimeError):
    """The system compiler rejected the generated source."""


def cache_dir() -> Path:
    """`$DIMGRAPH_CACHE_DIR/c`, private to this user (see `dimgraph.backends.diskcache`)."""
    return diskcache.private_dir("c")


def find_compiler() -> list:
    """The compiler command: `$CC` if set (it must exist), else `cc`, `gcc` or `clang` on PATH."""
    cc = os.environ.get("CC")
    if cc:
        cmd = shlex.split(cc)
        if not cmd or shutil.which(cmd[0]) is None:
            raise BackendUnavailable(
                f"c backend: the C compiler {cc!r} (from the CC environment variable) was not found; "
                "set CC to an installed C compiler, e.g. CC=gcc, or unset it to search PATH for cc, gcc, clang"
            )
        return [shutil.which(cmd[0])] + cmd[1:]
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return [path]
    raise BackendUnavailable(
        "c backend: no C compiler found (looked for $CC, then cc, gcc and clang on PATH); "
        "install one or set the CC environment variable to its path, e.g. CC=/usr/bin/gcc"
    )


@lru_cache(maxsize=None)
def _compiler_identity(cmd: tuple) -> str:
    try:
        res = subprocess.run([*cmd, "--version"], capture_output=True, text=True, timeout=30)
        version = res.stdout.splitlines()[0] if res.stdout else ""
    except OSError:
        version = ""
    return f"{' '.join(cmd)}|{version}"


@lru_cache(maxsize=None)
def _cpu_identity() -> str:
    model = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("model name", "flags")):
                    model += line
                    if line.startswith("flags"):
                        break
    except OSError:
        pass
    return f"{platform.machine()}|{hashlib.sha256(model.encode()).hexdigest()[:16]}"


def cache_key(source: str, cmd) -> str:
    h = hashlib.sha256()
    for part in (BACKEND_VERSION, _compiler_identity(tuple(cmd)), " ".join(FLAGS + LIBS), _cpu_identity(), source):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:32]


def load(source: str):
    """The ctypes library built from `source`: from this process, from the disk cache, or compiled now.

    A library on disk is loaded only when its bytes match the digest recorded beside it
    (`<key>.sha256`) when it was compiled; a mismatch, a missing record or a library the
    loader rejects is discarded with a warning and compiled again.
    """
    cmd = find_compiler()
    key = cache_key(source, cmd)
    with _lock:
        if key in _loaded:
            return _loaded[key], key
    directory = cache_dir()
    lib_path = directory / f"{key}.so"
    lib = _load_verified(lib_path, key)
    if lib is None:
        lib = _compile_and_load(source, cmd, directory, key)
    else:
        stats["loaded_from_disk"] += 1
    with _lock:
        _loaded[key] = lib
    return lib, key


def _load_verified(lib_path: Path, key: str):
    """The library at `lib_path` when it is the one compiled for `key`, else None (damage discarded)."""
    record = lib_path.with_suffix(".sha256")
    try:
        data = lib_path.read_bytes()
    except FileNotFoundError:
        return None
    try:
        expected = record.read_bytes().strip()
    except FileNotFoundError:
        expected = None
    if (
        expected != diskcache.content_digest(key, data, lib_path.parent).encode()
    ):  # bytes: a damaged record need not be text
        why = (
            "no digest was recorded for it"
            if expected is None
            else f"its content does not match the digest in {record.name}"
        )
        diskcache.discard(lib_path, why)
        return None
    try:
        return ctypes.CDLL(str(lib_path))
    except OSError as e:
        diskcache.discard(lib_path, f"the loader refused it: {e}")
        return None


def _compile_and_load(source, cmd, directory: Path, key: str):
    """Compile into the cache; when its disk refuses the write (full, read-only: warned once by
    `diskcache.refuse_writes`), into a temporary directory removed as soon as the library is loaded."""
    if not diskcache.writes_refused():
        try:
            _compile(source, cmd, directory, key)
        except OSError as e:  # anything else (a compiler gone) fails again below, and is raised there
            diskcache.refuse_writes(e)
        else:
            return ctypes.CDLL(str(directory / f"{key}.so"))
    scratch = Path(tempfile.mkdtemp(prefix="dimgraph-c-"))
    try:
        _compile(source, cmd, scratch, key)
        return ctypes.CDLL(str(scratch / f"{key}.so"))  # NOTE: a loaded library outlives its file
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _compile(source, cmd, directory, key):
    start = time.perf_counter()
    src_path = directory / f"{key}.c"
    diskcache.write_atomic(src_path, source.encode())
    fd, tmp_lib = tempfile.mkstemp(prefix=f".{key}.", suffix=".so", dir=directory)
    os.close(fd)
    args = [*cmd, *FLAGS, "-o", tmp_lib, str(src_path), *LIBS]
    try:
        res = subprocess.run(args, capture_output=True, text=True)
        if res.returncode != 0:
            raise CCompileError(
                f"c backend: the C compiler failed on the generated source {src_path}\n"
                f"command: {' '.join(shlex.quote(a) for a in args)}\n"
                f"compiler output:\n{res.stderr.strip() or res.stdout.strip()}"
            )
        diskcache.fsync_file(tmp_lib)
        # NOTE: the digest is written first: a library renamed into place without its record is
        # discarded by the next reader, never loaded unverified.
        data = Path(tmp_lib).read_bytes()
        diskcache.write_atomic(directory / f"{key}.sha256", diskcache.content_digest(key, data, directory).encode())
        os.replace(tmp_lib, directory / f"{key}.so")
    finally:
        if os.path.exists(tmp_lib):
            os.unlink(tmp_lib)
    stats["compiled"] += 1
    stats["compile_seconds"] += time.perf_counter() - start
