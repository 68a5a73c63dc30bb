"""Helpers for kernels that leave nopython mode or need NumPy's length rules.

`perform_caller` returns a function running an op's NumPy `perform` (the python
backend's code), for the ops whose numba entry is `objmode`. Generated source
names the op by a key (`register_perform`): no pickled bytes in the text. The
registry lives in the process that printed the text; a process that loads the
text without printing it (a warm start from a pickled plan) registers the
entries the text names first (`needed`, then `restore`).
"""

from __future__ import annotations

import hashlib
import math
import pickle
import re

import numba
import numpy as np

_PERFORMS: dict = {}  # key -> (op, input types), registered by the printer before a module loads


def register_perform(op, in_types) -> str:
    """The key under which a kernel module finds `op` on inputs of `in_types` (stable across processes)."""
    key = hashlib.blake2b(pickle.dumps((op, tuple(in_types)), protocol=4), digest_size=12).hexdigest()
    _PERFORMS.setdefault(key, (op, tuple(in_types)))
    return key


_KEY = re.compile(r'perform_caller\(\\?"([0-9a-f]{24})\\?"\)')


def needed(texts) -> tuple:
    """The registry entries `(key, op, input types)` that the generated `texts` look up (loop kernels
    carry their bodies' texts inside theirs, so every key in them is found)."""
    keys = dict.fromkeys(k for text in texts for k in _KEY.findall(text))
    return tuple((key, *_PERFORMS[key]) for key in keys)


def restore(entries):
    """Register `entries` (from `needed`, in another process) before the texts naming them load."""
    for key, op, in_types in entries:
        _PERFORMS.setdefault(key, (op, tuple(in_types)))


def perform_caller(key: str):
    """`fn(*arrays) -> output or tuple of outputs` running the registered op's `perform` on its input types."""
    op, in_types = _PERFORMS[key]
    node = op.make_node(*[t.make_variable() for t in in_types])
    n_out = len(node.outputs)

    def call(*arrays):
        outs = [np.asarray(o, dtype=v.type.dtype) for o, v in zip(op.perform(node, list(arrays)), node.outputs)]
        return outs[0] if n_out == 1 else tuple(outs)

    return call


@numba.njit(cache=True)
def arange(start, stop, step, like):
    """`np.arange(start, stop, step)` as `like`'s dtype: length ceil((stop - start) / step), NumPy's fill."""
    if step == 0:
        raise ValueError("arange: step must not be zero")
    n = int(math.ceil((float(stop) - float(start)) / float(step)))
    n = max(n, 0)
    out = np.empty(n, dtype=type(like))
    for i in range(n):
        out[i] = start + i * step
    return out
