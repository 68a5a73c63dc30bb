"""Resources that issue 20 bounds: memory kept by dropped functions, and the cost of a small gather.

    .venv/bin/python benchmarks/reliability.py            # about 3 minutes
    .venv/bin/python benchmarks/reliability.py --quick    # 20 functions per backend, a smoke run

1. Memory per dropped function: each backend in a fresh process (its own cache
   dir) compiles, calls and drops N structurally different small functions (5
   unary ops drawn from +1, *2, sin, exp: kernels are not shared), after 20
   warm-up functions; the growth of resident memory divided by N. Plain
   `numba.njit` of the same loops is the floor Numba itself keeps (it never
   frees a dispatcher's machine code).
2. A gather of 10 elements from a table of 4e3 and of 4e6 elements on each
   backend: its cost must not follow the table's size.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import timeit

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

BACKENDS = ("python", "numba", "c", "jax")

_MEMORY = textwrap.dedent(
    """
    import gc, os, sys
    import numpy as np
    backend, n = sys.argv[1], int(sys.argv[2])
    OPS = ["v + 1.0", "v * 2.0", "np.sin(v)", "np.exp(v)"]

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def ops_of(k):
        return [OPS[(k >> (2 * j)) % 4] for j in range(5)] + ([OPS[k % 3]] if k >= 1024 else [])

    if backend == "numba.njit":
        import numba

        def make(k):
            body = "".join(f"        v = {op}\\n" for op in ops_of(k))
            src = f"def kernel(x, out):\\n    for i in range(x.shape[0]):\\n        v = x[i]\\n{body}        out[i] = v\\n"
            scope = {"np": np}
            exec(src, scope)
            f = numba.njit(scope["kernel"])
            x = np.arange(3.0)
            f(x, np.empty_like(x))
    else:
        import dimgraph as dg

        def make(k):
            x = dg.tensor("x", shape=(None,))
            v = x
            for op in ops_of(k):
                v = eval(op, {"np": dg, "v": v})
            dg.function([x], v, backend=backend)(np.arange(3.0))

    for k in range(20):
        make(1024 + k)
    gc.collect()
    before = rss()
    for k in range(n):
        make(k)
    gc.collect()
    print((rss() - before) / n / 1024)
    """
)


def memory_per_function(backend, n):
    """KiB of resident memory kept per compiled-and-dropped function, in a fresh process."""
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, DIMGRAPH_CACHE_DIR=cache, PYTHONPATH=ROOT)
        out = subprocess.run(
            [sys.executable, "-c", _MEMORY, backend, str(n)], env=env, capture_output=True, text=True, check=True
        )
    return float(out.stdout.split()[-1])


def gather_ms(backend):
    """Milliseconds per call of `t[i]` with 10 positions, from tables of 4e3 and 4e6 elements (best of 5)."""
    import dimgraph as dg

    t = dg.tensor("t", shape=(None,))
    i = dg.tensor("i", shape=(None,), dtype="int64")
    f = dg.function([t, i], t[i], backend=backend)
    idx = np.arange(0, 4000, 400)
    times = []
    for n in (4_000, 4_000_000):
        table = np.arange(float(n))
        f(table, idx)
        times.append(min(timeit.repeat(lambda: f(table, idx), number=100, repeat=5)) / 100 * 1e3)
    return times


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n = 20 if args.quick else 100
    print(f"memory kept per dropped function ({n} distinct 5-op functions each):")
    for backend in ("numba.njit",) + BACKENDS:
        print(f"  {backend:11s} {memory_per_function(backend, n):7.0f} KiB")
    print("gather of 10 elements, ms per call:   from 4e3   from 4e6")
    for backend in BACKENDS:
        small, large = gather_ms(backend)
        print(f"  {backend:11s} {small:21.4f} {large:10.4f}")


if __name__ == "__main__":
    main()
