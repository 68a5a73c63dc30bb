"""Compile progress of the numba backend: seconds per kernel, and log lines while a compile is slow.

Numba compiles a kernel (or loads its machine code from the disk cache) when the
driver first calls it. During a function's first call a `KernelTimer` puts a
timing wrapper around each kernel in the driver's namespace, adds each kernel's
seconds to `timings` and, once the call has run longer than `PROGRESS_AFTER`
seconds, logs each kernel made ready (`logging.getLogger("dimgraph.numba")`,
level INFO), so that a long compile says what it is doing.
"""

from __future__ import annotations

import logging
import time

logger = logging.getLogger("dimgraph.numba")
PROGRESS_AFTER = 2.0  # seconds of first call before compile progress is logged


class KernelTimer:
    """Within `with`: the kernels `names` ({"k3": "k3 (its op)"}) of `namespace` add their seconds to `timings`."""

    def __init__(self, namespace, names, timings):
        self.namespace, self.names, self.timings = namespace, names, timings
        self.started = time.perf_counter()
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
                    if now - self.started > PROGRESS_AFTER:
                        logger.info(
                            "numba: kernel %s ready in %.2f s (%d of %d, %.1f s so far)",
                            label, now - t0, self.ready, len(self.names), now - self.started,
                        )

        return call

    def __enter__(self):
        for name in self.names:
            self.saved[name] = self.namespace[name]
            self.namespace[name] = self._timed(name, self.saved[name])
        return self

    def __exit__(self, *exc):
        self.namespace.update(self.saved)
        return False
