"""Warm start by digest: a process that compiled the same graph before skips lowering, rewriting and codegen.

`graph_digest` encodes the user's graph canonically (structure, op parameters,
types with their dims and coords, constants by content, variable names) together
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
import enum
import functools
import hashlib
import logging
import os
import pickle
import sys
from pathlib import Path

import numpy as np

from dimgraph.backends import diskcache
from dimgraph.core.graph import Constant, ancestors, data_bytes, toposort
from dimgraph.core.type import Type
from dimgraph.labeled.dims import Dim, derivation_of

_log = logging.getLogger("dimgraph")
FORMAT = "dimgraph-warm-2"  # bump when the record's layout or the encoding changes (2: HMAC header)
_HEADER = 64  # hex SHA-256 of (key, payload), then the pickled payload


@dataclasses.dataclass(frozen=True)
class Record:
    """What a warm start needs besides the user's graph: the backend's plan and the I/O specs."""

    plan: object  # the backend's (`run.plan`, rebuilt by the backend module's `build(plan)`)
    in_specs: list
    out_specs: list
    checks: list


class _Refused(Exception):
    """Something in the graph that the encoder cannot vouch for: no digest."""


def _ours(cls) -> bool:
    return cls.__module__ == "dimgraph" or cls.__module__.startswith("dimgraph.")


class _Encoder:
    """Canonical nested tuples of plain values (ints, strs, bytes) for a graph's static content."""

    def __init__(self):
        self.memo = {}  # id(op, type or dim) -> its encoding (an op is often used by many nodes)
        self.types = {}  # type -> its encoding

    def __call__(self, x):
        if x is None or type(x) in (bool, int, str, bytes):
            return x
        if type(x) is float:
            return ("f", x.hex())
        if type(x) is complex:
            return ("c", x.real.hex(), x.imag.hex())
        if type(x) in (tuple, list):
            return (type(x).__name__,) + tuple(self(e) for e in x)
        if type(x) is dict:
            return ("dict",) + tuple(sorted(((self(k), self(v)) for k, v in x.items()), key=repr))
        if type(x) in (set, frozenset):
            return ("set",) + tuple(sorted((self(e) for e in x), key=repr))
        if isinstance(x, np.ndarray) and not x.dtype.hasobject:
            return ("array", x.dtype.str, x.shape, hashlib.blake2b(data_bytes(x), digest_size=16).digest())
        if isinstance(x, np.generic):
            return ("scalar", x.dtype.str, x.tobytes())
        if isinstance(x, np.dtype):
            return ("dtype", x.str)
        if isinstance(x, slice):
            return ("slice", self(x.start), self(x.stop), self(x.step))
        if isinstance(x, enum.Enum) and _ours(type(x)):
            return ("enum", type(x).__qualname__, x.name)
        if isinstance(x, type) and (_ours(x) or (x.__module__ == "builtins" and issubclass(x, BaseException))):
            return ("class", x.__module__, x.__qualname__)  # builtin exceptions: the error class an Assert raises
        if type(x).__name__ in ("Index", "RangeIndex", "MultiIndex") and type(x).__module__.startswith("pandas"):
            from dimgraph.labeled.dims import _coords_digest

            return ("index", type(x).__name__, self(x.name), _coords_digest(x))
        if dataclasses.is_dataclass(x) and _ours(type(x)):
            found = self.memo.get(id(x))
            if found is None:
                # NOTE: types are memoized by value too (many variables hold equal types): their fields
                # (dtype names, sizes, Dims compared with their coords' digest) encode alike when equal.
                by_value = isinstance(x, Type)
                found = self.types.get(x) if by_value else None
                if found is None:
                    found = self._dataclass(x)
                    if by_value:
                        self.types[x] = found
                self.memo[id(x)] = found
            return found
        raise _Refused(f"{type(x).__module__}.{type(x).__qualname__}")

    def _dataclass(self, x):
        if isinstance(x, Dim) and derivation_of(x) is not None:
            raise _Refused(f"dim {x.name!r} takes its labels from a function")
        skip = ("coords",) if isinstance(x, Dim) else ()  # a Dim's coords are in its `_digest`
        values = tuple((f.name, self(getattr(x, f.name))) for f in dataclasses.fields(x) if f.name not in skip)
        return (type(x).__module__, type(x).__qualname__) + values


def graph_digest(inputs, outputs, backend_module, settings) -> str | None:
    """A digest naming the compiled form of `outputs` as a function of `inputs`, or None.

    `settings` are the other arguments that change what gets compiled (backend, its
    options, rewrites, output form); `dimgraph.config`'s switches are added. None when
    something cannot be digested.
    """
    tag = getattr(backend_module, "warm_tag", None)
    if tag is None or not _registries_are_ours(backend_module):
        return None
    from dimgraph import config

    switches = {k: v for k, v in vars(config).items() if not k.startswith("_") and type(v) in (bool, int, float, str)}
    encode = _Encoder()
    try:
        head = (FORMAT, _source_fingerprint(), tag(), encode(settings), encode(switches))
        return _digest(encode, inputs, outputs, head)
    except _Refused as why:
        _log.debug("dimgraph: no warm-start digest (%s)", why)
        return None
    except Exception as e:  # noqa: BLE001 - a value the encoder misjudged: compile the usual way, never fail here
        _log.debug("dimgraph: no warm-start digest (%s: %s)", type(e).__name__, e)
        return None


def _digest(encode, inputs, outputs, head):
    refs = {id(v): ("input", k) for k, v in enumerate(inputs)}
    for k, v in enumerate(inputs):  # a labeled input's positional stand-in (`dg.grad` builds on it)
        twin = v.tag.get("positional")
        if twin is not None:
            refs.setdefault(id(twin), ("twin", k, _variable(encode, twin)))
    items = [head]
    items += [("input", _variable(encode, v)) for v in inputs]

    def ref(v):
        found = refs.get(id(v))
        if found is not None:
            return found
        if isinstance(v, Constant):
            data = np.asarray(v.data)
            found = refs[id(v)] = ("constant", _variable(encode, v), encode(data))
            return found
        raise _Refused(f"{v.name or v!r} is neither an input, a constant nor computed (a shared variable?)")

    # NOTE: a labeled gradient's labeled source (`lowered_from`) is digested too: the checks made from
    # it (which labels an input may carry) differ between sources that lower to one positional graph.
    sources = _gradient_sources(outputs)
    for k, node in enumerate(toposort(list(outputs) + sources)):
        items.append(("node", encode(node.op), tuple(ref(i) for i in node.inputs)))
        for out in node.outputs:
            refs[id(out)] = ("out", k, out.index)
            items.append(("output", _variable(encode, out)))
    items.append(("outputs", tuple(ref(v) for v in outputs), tuple(ref(v) for v in sources)))
    return hashlib.blake2b(repr(items).encode(), digest_size=16).hexdigest()


def _gradient_sources(outputs):
    """The labeled graphs that gradients among `outputs` were lowered from (`lowered_from`), transitively."""
    sources, seen, roots = [], set(), list(outputs)
    while roots:
        roots = [s for v in ancestors(roots) for s in v.tag.get("lowered_from", ())]
        roots = [s for s in roots if id(s) not in seen and not seen.add(id(s))]
        sources += roots
    return sources


def _variable(encode, v):
    if not _ours(type(v)):
        raise _Refused(f"a variable of class {type(v).__qualname__}")
    return type(v).__qualname__, encode(v.type), v.name


def _registries_are_ours(backend_module) -> bool:
    """Whether every rewrite and every kernel printer in use comes from dimgraph (whose source is digested)."""
    db = sys.modules.get("dimgraph.core.rewriting.db")  # not imported yet: it holds dimgraph's rewrites only
    functions = [rw.fn for rw in db.all_rewriters().values()] if db is not None else []
    for registry in getattr(backend_module, "REGISTRIES", ()):
        functions += list(registry.values())
    return all(getattr(fn, "__module__", "").startswith("dimgraph.") for fn in functions)


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
