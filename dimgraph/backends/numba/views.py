"""Array views for generated kernels, choosing the cheapest form by the array's Numba layout.

A C-contiguous array that only gains or loses length-1 axes stays C-typed
(`reshape`), so the loops that read it keep contiguous, vectorizable indexing;
any other view goes through `as_strided` (layout "A"). The choice is made when
Numba types the call (`overload`), not at run time.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload

from dimgraph.backends.numba.bounds import KernelIndexOutOfBounds, record_position


def expand_view(x, shape, strides):
    """`x` viewed with `shape`/`strides` where only length-1 axes are added or dropped."""
    return np.lib.stride_tricks.as_strided(x, shape, strides)


def strided_view(x, shape, strides):
    """`x` viewed with arbitrary `shape`/`strides` (a transpose, possibly with new axes)."""
    return np.lib.stride_tricks.as_strided(x, shape, strides)


def reshape(x, shape):
    """`np.reshape(x, shape)`: a view of a contiguous array, else a copy."""
    return np.reshape(x, shape)


@overload(expand_view, jit_options={"cache": True})
def _expand_view(x, shape, strides):
    if isinstance(x, types.Array) and x.layout == "C":
        return lambda x, shape, strides: x.reshape(shape)
    return lambda x, shape, strides: np.lib.stride_tricks.as_strided(x, shape, strides)


@overload(strided_view, jit_options={"cache": True})
def _strided_view(x, shape, strides):
    return lambda x, shape, strides: np.lib.stride_tricks.as_strided(x, shape, strides)


@overload(reshape, jit_options={"cache": True})
def _reshape(x, shape):
    if isinstance(x, types.Array) and x.layout == "C":
        return lambda x, shape: x.reshape(shape)
    return lambda x, shape: np.ascontiguousarray(x).reshape(shape)


@numba.njit(cache=True, inline="always")
def check_index(i, n, axis):
    """A position normalized against length `n` (negatives count from the end); IndexError when out of range.

    The numbers travel beside the exception (`bounds.py`): a raise with run-time arguments leaks.
    """
    k = i + n if i < 0 else i
    if k < 0 or k >= n:
        record_position(i, n, axis)
        raise KernelIndexOutOfBounds
    return k
