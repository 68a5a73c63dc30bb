"""Helpers for kernels that leave nopython mode or need NumPy's length rules.

`perform_caller` rebuilds an op from the bytes printed into a kernel module and
returns a function running its NumPy `perform` (the python backend's code), for
the ops whose numba entry is `objmode`.
"""

from __future__ import annotations

import math
import pickle

import numba
import numpy as np


def perform_caller(payload: str):
    """`fn(*arrays) -> output or tuple of outputs` running `op.perform` on a node of the printed input types."""
    op, in_types = pickle.loads(bytes.fromhex(payload))
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
