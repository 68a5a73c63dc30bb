"""Compile progress of the numba backend: seconds per kernel, and progress shown while a compile is slow.

Numba compiles a kernel (or loads its machine code from the disk cache) when the
driver first calls it. During a function's first call a `KernelTimer` puts a
timing wrapper around each kernel in the driver's namespace, adds each kernel's
seconds to `timings` and, once the call has run longer than `dimgraph.progress.AFTER`
seconds, reports each kernel made ready, k of n (`dimgraph.progress`: a bar in a
notebook, INFO lines on the "dimgraph" logger elsewhere), so that a long compile
says what it is doing.
"""

from __future__ import annotations

import time

from dimgraph.progress import Progress


class KernelTimer:
    """Within `with`: the kernels `names` ({"k3": "k3 (its op)"}) of `namespace` add their seconds to `timings`."""

    def __init__(self, namespace, names, timings):
        self.namespace, self.names, self.timings = namespace, names, timings
        self.progress = Progress(f"{len(names)} numba kernels")
        self.ready = 0
        self.saved = {}

    def _timed(self, name, kernel):
        label = self.names[name]

        def call(*args):
            t0 = time.perf_counter()
            try:
                return kernel(*args)
            finally:
                now = time.perf_counter()
                first = label not in self.timings
                self.timings[label] = self.timings.get(label, 0.0) + (now - t0)
                if first:
                    self.ready += 1
                    self.progress.update(f"kernel {label} ready in {now - t0:.2f} s", self.ready, len(self.names))

        return call

    def __enter__(self):
        for name in self.names:
            self.saved[name] = self.namespace[name]
            self.namespace[name] = self._timed(name, self.saved[name])
        return self

    def __exit__(self, *exc):
        self.namespace.update(self.saved)
        self.progress.close()
        return False
