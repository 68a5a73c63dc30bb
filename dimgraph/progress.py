"""Progress of a slow compile: a bar in a notebook, a log line elsewhere.

A compile that has run longer than `AFTER` seconds says what it is doing: the
phase (lower, rewrite, codegen, kernels) and, for kernels, how many of how
many are ready. In a Jupyter notebook that is one HTML progress bar updated in
place (`IPython.display`, no widget library needed); anywhere else, INFO lines
on the `"dimgraph"` logger. Quick compiles show nothing.
"""

from __future__ import annotations

import html
import logging
import sys
import time

AFTER = 2.0  # seconds of compiling before progress is shown
logger = logging.getLogger("dimgraph")


def in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython's ZMQ shell), where HTML output renders."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None and hasattr(ipython, "get_ipython") else None
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


class Progress:
    """Reports `update(phase, done, total)` once the compile has run `AFTER` seconds; `close()` ends the bar."""

    def __init__(self, what: str):
        self.what = what
        self.started = time.perf_counter()
        self.handle = None  # the notebook's display handle, once shown
        self.shown = False

    def update(self, phase: str, done: int | None = None, total: int | None = None):
        elapsed = time.perf_counter() - self.started
        if elapsed < AFTER:
            return
        self.shown = True
        count = "" if total is None else f" {done} of {total}"
        if in_notebook():
            self._bar(phase, done, total, elapsed)
        else:
            logger.info("dimgraph: compiling %s: %s%s (%.1f s so far)", self.what, phase, count, elapsed)

    def _bar(self, phase, done, total, elapsed):
        from IPython.display import HTML, display

        value = "" if total is None else f' value="{done}" max="{max(total, 1)}"'
        count = "" if total is None else f" {done} / {total}"
        text = html.escape(f"compiling {self.what}: {phase}{count} ({elapsed:.1f} s)")
        page = HTML(f'<div><progress{value} style="width: 20em"></progress> <code>{text}</code></div>')
        if self.handle is None:
            self.handle = display(page, display_id=True)
        else:
            self.handle.update(page)

    def close(self):
        """Mark the bar done (a compile that showed progress says how long it took)."""
        if self.shown:
            self.update("done")
