"""Warm start by digest: a process that compiled the same graph before skips lowering, rewriting and codegen.

`graph_digest` is the graph's structural digest (`dimgraph.core.graph.graph_digest`
with a strict encoder: structure, op parameters, types with their dims and coords,
constants by content, variable names) together
with the backend, its options, the rewrites and a fingerprint of dimgraph's own
source and of the backend's toolchain. The digest names a record on disk: the
backend's plan (numba: the driver's and the kernels' texts, the nodes the driver
runs by NumPy) and the I/O specs a `Function` needs. A later process that builds
the same graph finds the record and hands the plan to the backend, whose own
cache then supplies the machine code.

Only what the encoder understands is digested: ops, types and dims defined in
dimgraph, plain values, arrays and indexes. A graph holding anything else (an op
defined elsewhere, a function, a shared variable, a dim whose labels are derived
by a function, updates), a traced compile, or a rewrite or kernel registered from
outside dimgraph gets no digest and compiles the usual way.

The record follows the disk cache's rules (`dimgraph.backends.diskcache`): a
private directory, atomic writes, and an HMAC of the record's bytes bound to
its key, under the user's cache key (`diskcache.content_digest`), written in
front of them; a record that does not match (damaged, cut short, copied from
another key or another cache, planted with a plain checksum) is discarded with a
`CacheWarning` and the function compiles the usual way, writing it afresh.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import logging
import os
import pickle
import sys
from pathlib import Path

from dimgraph import config
from dimgraph.backends import diskcache
from dimgraph.core.digest import Encoder, Unstable
from dimgraph.core.graph import ancestors
from dimgraph.core.graph import graph_digest as structural_digest
from dimgraph.labeled.twins import twin_of

_log = logging.getLogger("dimgraph")
FORMAT = "dimgraph-warm-4"  # bump when the record's layout or the encoding changes (2: HMAC header, 3: core.digest, 4: Signature)
_HEADER = 64  # hex SHA-256 of (key, payload), then the pickled payload


@dataclasses.dataclass(frozen=True)
class Record:
    """What a warm start needs besides the user's graph: the backend's plan and the function's signature."""

    plan: object  # the backend's (`run.plan`, rebuilt by the backend module's `build(plan)`)
    signature: object  # the `Signature` (its outputs returned as a list: each call says how it returns them)


def graph_digest(inputs, outputs, backend, settings) -> str | None:
    """A digest naming the compiled form of `outputs` as a function of `inputs`, or None.

    `settings` are the other arguments that change what gets compiled (backend, its
    options, rewrites, output form); `dimgraph.config`'s switches are added. None when
    something cannot be digested.
    """
    tag = backend.warm_tag()
    if tag is None or not _registries_are_ours(backend):
        return None
    switches = {k: v for k, v in vars(config).items() if not k.startswith("_") and type(v) in (bool, int, float, str)}
    encode = Encoder(strict=True)
    try:
        head = (FORMAT, _source_fingerprint(), tag, encode(settings), encode(switches))
        return _digest(encode, inputs, outputs, head)
    except Unstable as why:
        _log.debug("dimgraph: no warm-start digest (%s)", why)
        return None
    except Exception as e:  # noqa: BLE001 - a value the encoder misjudged: compile the usual way, never fail here
        _log.debug("dimgraph: no warm-start digest (%s: %s)", type(e).__name__, e)
        return None


def _digest(encode, inputs, outputs, head):
    # NOTE: a labeled input's positional stand-in (`dg.grad` builds on it) is a leaf too, and a labeled
    # gradient's labeled source (`lowered_from`) is digested with the outputs: the checks made from it
    # (which labels an input may carry) differ between sources that lower to one positional graph.
    twins = [(k, twin_of(v)) for k, v in enumerate(inputs) if twin_of(v) is not None]
    sources = _gradient_sources(outputs)
    extra = (head, tuple(k for k, _ in twins), len(outputs))
    leaves = list(inputs) + [twin for _, twin in twins]
    return structural_digest(leaves, list(outputs) + sources, encode, extra, names=True).hex()


def _gradient_sources(outputs):
    """The labeled graphs that gradients among `outputs` were lowered from (`lowered_from`), transitively."""
    sources, seen, roots = [], set(), list(outputs)
    while roots:
        roots = [s for v in ancestors(roots) for s in v.tag.get("lowered_from", ())]
        roots = [s for s in roots if id(s) not in seen and not seen.add(id(s))]
        sources += roots
    return sources


def _registries_are_ours(backend) -> bool:
    """Whether every rewrite and every kernel printer in use comes from dimgraph (whose source is digested).

    A printer registered for an op type defined elsewhere only prints that op, and a graph holding
    it gets no digest anyway (the strict encoder refuses ops that are not dimgraph's): such entries
    leave other graphs' warm starts alone. One registered for a dimgraph type (or `object`) does not.
    """
    db = sys.modules.get("dimgraph.core.rewriting.db")  # not imported yet: it holds dimgraph's rewrites only
    functions = [rw.fn for rw in db.all_rewriters().values()] if db is not None else []
    for registry in backend.registries:
        functions += [fn for key, fn in registry.items() if _ours(key) or key is object]
    return all(_ours(fn) for fn in functions)


def _ours(thing) -> bool:
    return getattr(thing, "__module__", "").startswith("dimgraph.")


@functools.lru_cache(maxsize=None)
def _source_fingerprint() -> str:
    """A fingerprint of dimgraph's source: an edited rewrite or printer must not find an old record.

    Each module's path, size and modification time, as Python's own bytecode cache
    decides whether a `.pyc` is stale (reading every file would cost 5-30 ms per process).
    """
    root = Path(__file__).resolve().parents[1]
    h = hashlib.blake2b(str(root).encode(), digest_size=16)
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                st = os.stat(os.path.join(dirpath, name))
                h.update(f"{os.path.relpath(dirpath, root)}/{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def _path(key: str) -> Path:
    return diskcache.private_dir("warm") / f"w_{key}.pkl"


def load(key: str):
    """The record stored under `key`, or None (missing; damaged ones are discarded with a warning)."""
    path = _path(key)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    payload = data[_HEADER:]
    if data[:_HEADER] != diskcache.content_digest(key, payload, path.parent).encode():
        diskcache.discard(path, "its content does not match the digest recorded for it")
        return None
    try:
        return pickle.loads(payload)
    except Exception as e:  # noqa: BLE001 - verified bytes that no longer unpickle (a class renamed since)
        diskcache.discard(path, f"it failed loading: {type(e).__name__}")
        return None


def save(key: str, record) -> bool:
    """Store `record` under `key` (False when it does not pickle or the disk refuses it: no warm start)."""
    try:
        payload = pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # noqa: BLE001 - a spec holding something unpicklable
        _log.debug("dimgraph: no warm-start record (%s: %s)", type(e).__name__, e)
        return False
    path = _path(key)
    return diskcache.store(path, diskcache.content_digest(key, payload, path.parent).encode() + payload)
