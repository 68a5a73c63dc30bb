"""Graph identity: one stable structural digest (SHA-256 over a canonical encoding).

One encoding serves every place that asks "is this the same graph?":
- `Apply.key` and `Constant.key` (what a variable computes: op digest plus the
  inputs' keys), and the merge pass, which keys nodes by their op's digest;
- `InnerGraph` equality (`dimgraph.core.graph.graph_digest` over its placeholders by position: one
  topological walk, then two digests compared, never two graphs side by side);
- the warm-start record's name (`dimgraph.compile.warm`, strict: every value in
  the graph must mean the same in another process; control flow is refused).

`Encoder` turns a value into nested tuples of plain values (ints, strs, bytes)
whose `repr` is canonical: floats by their hex, arrays by dtype, shape and a
digest of their bytes (-0.0 and 0.0 differ), dataclasses (ops, types, dims) by
class and compared fields, an `InnerGraph` by its own digest. A value with no
such content (a function, an object array, an unknown object) is encoded by
`hash()` and marks the encoding *unstable*: fine within one process (merging),
refused by a strict encoder (caches), which raises `Unstable` instead.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib

import numpy as np

from dimgraph.core.type import Type

DIGEST_SIZE = 16  # bytes of SHA-256 kept: collisions are out of reach at any graph size


class Unstable(Exception):
    """A value whose encoding would not mean the same in another process (strict encoders raise it)."""


def ours(cls) -> bool:
    """Whether `cls` is defined in dimgraph (whose source the warm start fingerprints)."""
    return cls.__module__ == "dimgraph" or cls.__module__.startswith("dimgraph.")


def sha(encoded) -> bytes:
    """The digest of an encoding (nested tuples of plain values)."""
    return hashlib.sha256(repr(encoded).encode()).digest()[:DIGEST_SIZE]


def data_digest(arr) -> bytes:
    """The digest of an array's bytes, hashed in place (a copy only when it is not C-contiguous)."""
    flat = np.ascontiguousarray(arr).reshape(-1).view(np.uint8)
    return hashlib.sha256(flat).digest()[:DIGEST_SIZE]


class Encoder:
    """Canonical nested tuples of plain values for a value's static content.

    `strict`: raise `Unstable` on anything whose meaning is process-local, and on
    classes defined outside dimgraph. Otherwise such values are encoded by `hash()`
    and `why_unstable` says why (the first such value met).
    """

    def __init__(self, strict=False):
        self.strict = strict
        self.why_unstable = None
        self.memo = {}  # id(op, type or dim) -> its encoding (an op is often used by many nodes)
        self.types = {}  # type -> its encoding

    def unstable(self, why, x):
        if self.strict:
            raise Unstable(why)
        self.why_unstable = self.why_unstable or why
        return ("local", type(x).__module__, type(x).__qualname__, hash(x))

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
        if isinstance(x, np.ndarray):
            if x.dtype.hasobject:
                if self.strict:
                    raise Unstable("an object array (no bytes that stand for its content)")
                self.why_unstable = self.why_unstable or "an object array"
                return ("objects", x.shape, tuple(self(e) for e in x.reshape(-1).tolist()))
            return ("array", x.dtype.str, x.shape, data_digest(x))
        if isinstance(x, np.generic):
            return ("scalar", x.dtype.str, x.tobytes())
        if isinstance(x, np.dtype):
            return ("dtype", x.str)
        if isinstance(x, slice):
            return ("slice", self(x.start), self(x.stop), self(x.step))
        if isinstance(x, enum.Enum) and ours(type(x)):
            return ("enum", type(x).__qualname__, x.name)
        if isinstance(x, type) and (ours(x) or (x.__module__ == "builtins" and issubclass(x, BaseException))):
            return ("class", x.__module__, x.__qualname__)  # builtin exceptions: the error class an Assert raises
        if type(x).__name__ in ("Index", "RangeIndex", "MultiIndex") and type(x).__module__.startswith("pandas"):
            values = x.to_numpy()
            labels = tuple(self(v) for v in values.tolist()) if values.dtype.hasobject else self(values)
            return ("index", type(x).__name__, self(x.name), self(list(x.names)), labels)
        digest = getattr(x, "structural_digest", None)  # an InnerGraph: digested once, when built
        if digest is not None and not isinstance(x, type):
            if self.strict:
                # NOTE: not that its digest is unstable: backends register host callbacks while printing a
                # body (numba's object-mode steps), which a warm start that skips printing would miss.
                raise Unstable("an inner graph (control flow is compiled afresh in each process)")
            if x.why_unstable is not None:
                return self.unstable(f"an inner graph holding {x.why_unstable}", x)
            return ("graph", digest)
        if dataclasses.is_dataclass(x) and not isinstance(x, type):
            if not ours(type(x)):
                if self.strict:
                    raise Unstable(f"{type(x).__module__}.{type(x).__qualname__}")
                self.why_unstable = self.why_unstable or f"{type(x).__module__}.{type(x).__qualname__}"
            found = self.memo.get(id(x))
            if found is None:
                # NOTE: types are memoized by value too (many variables hold equal types): their fields
                # (dtype names, sizes, Dims compared with their coords' digest) encode alike when equal.
                by_value = _is_type(x)
                found = self.types.get(x) if by_value else None
                if found is None:
                    found = self._dataclass(x)
                    if by_value:
                        self.types[x] = found
                self.memo[id(x)] = found
            return found
        return self.unstable(f"{type(x).__module__}.{type(x).__qualname__}", x)

    def _dataclass(self, x):
        local = getattr(x, "digest_caveat", None)  # a value with content kept beside it (a derived Dim's labels)
        why = local() if local is not None else None
        if why is not None:
            self.unstable(why, x)
        fields = tuple((f.name, self(getattr(x, f.name))) for f in dataclasses.fields(x) if f.compare)
        return (type(x).__module__, type(x).__qualname__) + fields


def _is_type(x) -> bool:
    return isinstance(x, Type)


@functools.lru_cache(maxsize=1 << 14)
def op_digest(op) -> bytes:
    """The digest of an op's compared parameters, once per distinct op value (merging keys nodes by it).

    Ops are hashable values, so this is a cache by value: rewrites make fresh but equal ops all the time.
    """
    return sha(Encoder()(op))
