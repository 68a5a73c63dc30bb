"""Compile progress of the numba backend: seconds per kernel, and log lines while a compile is slow.

Numba compiles a kernel when the driver first calls it. During a function's first
call a `KernelTimer` listens to Numba's compile events (which also cover loading
machine code from the disk cache), adds each kernel's seconds to `timings`, and,
once the call has run longer than `PROGRESS_AFTER` seconds, logs each kernel done
(`logging.getLogger("dimgraph.numba")`, level INFO) so a long compile says what it does.
"""

from __future__ import annotations

import logging
import time

from numba.core import event

logger = logging.getLogger("dimgraph.numba")
PROGRESS_AFTER = 2.0  # seconds of first call before compile progress is logged


class KernelTimer(event.Listener):
    """Adds the compile seconds of the dispatchers in `names` ({dispatcher: "k3 (comment)"}) to `timings`."""

    def __init__(self, names, timings):
        self.names = {id(d): name for d, name in names.items()}
        self.timings = timings
        self.started = time.perf_counter()
        self.starts = {}
        self.done = 0

    def on_start(self, ev):
        key = id(ev.data["dispatcher"])
        if key in self.names:
            self.starts[key] = time.perf_counter()

    def on_end(self, ev):
        key = id(ev.data["dispatcher"])
        t0 = self.starts.pop(key, None)
        if t0 is None:
            return
        now = time.perf_counter()
        name = self.names[key]
        self.timings[name] = self.timings.get(name, 0.0) + (now - t0)
        self.done += 1
        if now - self.started > PROGRESS_AFTER:
            logger.info(
                "numba: kernel %s compiled in %.2f s (%d of %d, %.1f s so far)",
                name, now - t0, self.done, len(self.names), now - self.started,
            )

    def __enter__(self):
        event.register("numba:compile", self)
        return self

    def __exit__(self, *exc):
        event.unregister("numba:compile", self)
        return False
