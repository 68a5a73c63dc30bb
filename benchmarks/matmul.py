"""The numba backend's printed `a @ b` kernel vs the host path it replaced (NumPy's `np.matmul` through `perform`).

    .venv/bin/python benchmarks/matmul.py                  # sizes 10, 100, 1000 (about a minute)
    .venv/bin/python benchmarks/matmul.py --sizes 10 100

Both are timed in turns (one call each per round, medians), so the load of a
shared machine hits both alike. The driver keeps the kernel where it is faster
per call (see `dimgraph/backends/numba/matmul.py`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# case -> (a's shape, b's shape) from the size n
CASES = {
    "mm": lambda n: ((n, n), (n, n)),
    "mv": lambda n: ((n, n), (n,)),
    "batch 4": lambda n: ((4, n, n), (n, n)),
}


def pair(dtype, shapes):
    import dimgraph as dg
    from dimgraph.backends.numba import KERNEL_FOOTER, KERNEL_HEADER, cache
    from dimgraph.backends.numba.host import host_call
    from dimgraph.backends.numba.matmul import matmul_kernel
    from dimgraph.core import MatMul

    a, b = (dg.tensor(name, shape=(None,) * len(s), dtype=dtype) for name, s in zip("ab", shapes))
    node = MatMul().make_node(a, b)
    kernel = cache.load_module("k", KERNEL_HEADER + matmul_kernel(node.op, node) + KERNEL_FOOTER).kernel
    return host_call(node), kernel


def in_turns(fns, args, rounds):
    times = [[] for _ in fns]
    for fn in fns:
        fn(*args)  # warm-up (and the kernel's compile)
    for _ in range(rounds):
        for t, fn in zip(times, fns):
            t0 = time.perf_counter()
            fn(*args)
            t.append(time.perf_counter() - t0)
    return [statistics.median(t) for t in times]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", nargs="*", type=int, default=[10, 100, 1000])
    parser.add_argument("--dtypes", nargs="*", default=["float64", "float32", "int64"])
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"numpy {np.__version__}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}\n")
    print("| dtype | case | n | host (NumPy) us | printed kernel us | kernel / host |")
    print("|---|---|---:|---:|---:|---:|")
    for dtype in args.dtypes:
        for case, shapes_of in CASES.items():
            for n in args.sizes:
                shapes = shapes_of(n)
                work = np.prod(shapes[0]) * (shapes[1][-1] if len(shapes[1]) > 1 else 1)
                if work > 4e9 / (1 if dtype.startswith("float") else 8):
                    continue  # NumPy's integer matmul has no BLAS: seconds per call
                host, kernel = pair(dtype, shapes)
                values = [rng.integers(-3, 4, s).astype(dtype) for s in shapes]
                assert np.array_equal(host(*values), kernel(*values))
                rounds = 201 if work < 1e7 else 9 if work < 2e9 else 3
                t_host, t_kernel = in_turns([host, kernel], values, rounds)
                print(
                    f"| {dtype} | {case} | {n} | {t_host * 1e6:.1f} | {t_kernel * 1e6:.1f} | {t_kernel / t_host:.2f} |"
                )
                sys.stdout.flush()


if __name__ == "__main__":
    main()
