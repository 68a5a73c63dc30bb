"""IREE: the MLIR module compiled for the CPU (`llvm-cpu`), cached on disk, loaded into a runtime context.

The compiled module (a `.vmfb` flatbuffer) is cached under `$DIMGRAPH_CACHE_DIR/mlir`
by the digest of the MLIR text, the compiler's version and its flags, with an HMAC
record beside it (`diskcache.content_digest`): a damaged or planted file is
recompiled, never loaded. f64 stays f64 (`--iree-input-demote-f64-to-f32=false`),
i64 stays i64, and the code is built for this machine's CPU.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from dimgraph.backends import diskcache
from dimgraph.errors import BackendUnavailable

BACKEND_VERSION = "1"
FLAGS = (
    "--iree-input-demote-f64-to-f32=false",
    "--iree-input-demote-i64-to-i32=false",
    "--iree-llvmcpu-target-cpu=host",
)


def _iree():
    try:
        from iree import compiler, runtime
    except ImportError as err:
        raise BackendUnavailable(
            "mlir backend: IREE is not installed; install the extra: pip install 'dimgraph[mlir]' "
            f"(iree-base-compiler and iree-base-runtime) ({err})"
        ) from None
    return compiler, runtime


def toolchain() -> str:
    """The IREE compiler's version (part of every cache key)."""
    from importlib.metadata import version

    _iree()
    return f"iree-base-compiler {version('iree-base-compiler')}"


def cache_dir() -> Path:
    """`$DIMGRAPH_CACHE_DIR/mlir`, private to this user (see `dimgraph.backends.diskcache`)."""
    return diskcache.private_dir("mlir")


def compile_module(text: str) -> tuple:
    """(the compiled flatbuffer bytes for `text`, its cache key): from the disk cache, or compiled now."""
    compiler, _ = _iree()
    key = hashlib.sha256("\0".join([BACKEND_VERSION, toolchain(), *FLAGS, text]).encode()).hexdigest()[:32]
    directory = cache_dir()
    path, record = directory / f"{key}.vmfb", directory / f"{key}.sha256"
    if path.exists() and record.exists():
        data = path.read_bytes()
        if record.read_bytes() == diskcache.content_digest(key, data, directory).encode():
            return data, key
        diskcache.discard(path, f"its content does not match the digest in {record.name}")
    data = bytes(compiler.compile_str(text, target_backends=["llvm-cpu"], extra_args=list(FLAGS)))
    if diskcache.store(path, data):
        diskcache.store(record, diskcache.content_digest(key, data, directory).encode())
    return data, key


def load(data: bytes):
    """The module's `main` as a callable of NumPy arrays, in a local synchronous runtime context."""
    _, runtime = _iree()
    ctx = runtime.SystemContext(config=runtime.Config("local-sync"))
    ctx.add_vm_module(runtime.VmModule.copy_buffer(ctx.instance, data))
    return ctx.modules.module["main"]
