"""Calls that fail at run time: the right error every time, and no memory kept per failure.

A sampler or an optimizer may probe parameters that fail (a bad position from
data) many thousands of times; each failure must leave the process as it found it.
"""

import gc
import os

import numpy as np
import pytest

import dimgraph as dg
from dimgraph.errors import IndexOutOfBounds


def _resident_mib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


@pytest.fixture(scope="module")
def gather():
    """x[i] * 2 summed, per backend: an output allocated before the loop meets the bad position."""
    x = dg.tensor("x", shape=(None,))
    i = dg.tensor("i", shape=(None,), dtype="int64")
    compiled = {}

    def get(backend):
        if backend not in compiled:
            compiled[backend] = dg.function([x, i], [(x[i] * 2.0).sum(), x[i] + 1.0], backend=backend)
        return compiled[backend]

    return get


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="reads the resident size from /proc")
def test_failing_calls_keep_no_memory(backend, gather):
    """numba leaked about 500 bytes per failing call (a raise with run-time arguments: 60,000 calls
    grew the process 168 -> 197 MiB); 25,000 failures may now grow it by under 2 MiB (12 MiB before)."""
    f = gather(backend)
    x, good, bad = np.arange(1000.0), np.arange(1000), np.r_[np.arange(999), 1000]
    assert float(f(x, good)[0]) == 2 * x.sum()

    def fail(n):
        for _ in range(n):
            with pytest.raises(IndexError):
                f(x, bad)

    fail(2000)  # first failures fill caches (exception classes, tracebacks' line caches)
    gc.collect()
    before = _resident_mib()
    fail(25_000 if backend in ("numba", "c") else 2500)
    gc.collect()
    grown = _resident_mib() - before
    assert grown < 2.0, f"{backend}: {grown:.1f} MiB kept by failing calls"
    assert float(f(x, good)[0]) == 2 * x.sum()  # and the function still works


@pytest.mark.parametrize("position", [1000, -1001, 5000])
def test_a_failing_kernel_names_the_position(gather, position):
    """The numbers reach the error though the kernel raises a bare class (`backends/numba/bounds.py`)."""
    x, idx = np.arange(1000.0), np.r_[np.arange(10), position]
    with pytest.raises(IndexOutOfBounds, match=f"index {position} is out of bounds for axis 0 with size 1000"):
        gather("numba")(x, idx)


def test_failing_kernels_in_threads_each_name_their_position(gather):
    """Each thread's numbers travel in its own row: concurrent failures do not swap them."""
    from concurrent.futures import ThreadPoolExecutor

    x = np.arange(1000.0)

    def message(k):
        try:
            gather("numba")(x, np.r_[np.arange(500), 1000 + k])
        except IndexOutOfBounds as e:
            return str(e)
        return None

    with ThreadPoolExecutor(4) as pool:
        messages = list(pool.map(message, range(200)))
    assert messages == [f"index {1000 + k} is out of bounds for axis 0 with size 1000" for k in range(200)]


def test_a_value_larger_than_the_machine_is_refused_before_allocation(backend):
    """jax aborted the interpreter on a draw with a Dim of 10**12 (`Check failed: buffer_.IsConcrete()`,
    exit 134); every backend now raises `MemoryError` naming the value's shape, before allocating:
    at compile time when the shape is static (`backends/memory.py`)."""
    huge = dg.Dim("n", size=10**12)
    draw = dg.rng(0).normal(0.0, 1.0, extra_dims=(huge,))
    with pytest.raises(MemoryError, match=r"normal.*shape \(1000000000000,\) and dtype float64 needs 7.28 TiB"):
        dg.function([], draw, backend=backend)


def test_a_size_known_at_run_time_is_refused_before_allocation(backend):
    """A shape that depends on the data: the jax backend checks it while tracing (NumPy and Numba refuse it themselves)."""
    obs, big = dg.Dim("obs"), dg.Dim("big", size=10**11)
    mu = dg.labeled("mu", dims=(obs,))
    f = dg.function([mu], dg.rng(1).normal(mu, 1.0, extra_dims=(big,)), backend=backend)
    with pytest.raises(MemoryError):
        f(np.zeros(10))
    small = dg.function([mu], dg.rng(1).normal(mu, 1.0, extra_dims=(dg.Dim("big", size=3),)), backend=backend)
    assert dict(small(np.zeros(10)).sizes) == {
        "big": 3,
        "obs": 10,
    }  # the same function at a size that fits draws as before


def test_memory_check_counts_bytes_without_overflow():
    from dimgraph.backends import memory

    memory.check_fits((10**3, 10**3), "float64", "fits")
    with pytest.raises(MemoryError, match="w: an array of shape \\(4294967296, 4294967296\\) and dtype int8"):
        memory.check_fits((2**32, 2**32), "int8", "w")  # 2**64 bytes: an int64 product would wrap to 0
