"""Run-time checks of the JAX backend: conditions on data that the other backends raise on.

Inside `jax.jit` nothing can raise on a value, so an op's implementation calls
`runtime_check(ok, ErrorClass, message)` with a traced boolean. While the
compiled graph function is traced, a collector gathers these; the jitted
function returns them as one boolean vector (`Flags`, whose messages travel as
static pytree data), and the caller raises the first failed one, in graph
order, before any output is returned or any shared variable is updated.

A condition known while tracing (shapes, constants) raises at once. Outside a
compiled dimgraph function (`f.jax_fn` under the user's own `jit`/`grad`), data
checks are skipped and JAX's semantics apply (out-of-range indices clamp).
"""

from __future__ import annotations

import contextvars

import jax
import jax.numpy as jnp
import numpy as np

_ACTIVE = contextvars.ContextVar("dimgraph_jax_checks", default=None)


def runtime_check(ok, error, message, detail=None):
    """Require the 0-d boolean `ok`; when it is false the call raises `error(message)`.

    `detail`, a 0-d integer computed with the check (the offending index), fills the
    `{}` in `message` when the check fails.
    """
    if not isinstance(ok, jax.core.Tracer):
        if not bool(np.asarray(ok)):
            raise error(message.format(*([] if detail is None else [int(np.asarray(detail))])))
        return
    collector = _ACTIVE.get()
    if collector is not None:
        collector.append((ok, error, message, detail))


@jax.tree_util.register_pytree_node_class
class Flags:
    """The outcome of each run-time check (a bool vector) with its error class and message (static)."""

    def __init__(self, values, errors, details=None):
        self.values = values
        self.errors = errors
        self.details = details  # the checks' integer details (0 where none), or None

    def tree_flatten(self):
        return (self.values, self.details), self.errors

    @classmethod
    def tree_unflatten(cls, errors, children):
        return cls(children[0], errors, children[1])

    def raise_failed(self):
        values = np.asarray(self.values)
        details = None if self.details is None else np.asarray(self.details)
        for k, (ok, (error, message)) in enumerate(zip(values, self.errors)):
            if not ok:
                raise error(message if details is None else message.format(int(details[k])))


class collect:
    """Context manager: gathers the checks traced inside it; `.flags()` packs them (None when none)."""

    def __enter__(self):
        self.checks = []
        self._token = _ACTIVE.set(self.checks)
        return self

    def __exit__(self, *exc):
        _ACTIVE.reset(self._token)

    def flags(self):
        if not self.checks:
            return None
        values = jnp.stack([jnp.asarray(ok, dtype=bool).reshape(()) for ok, _, _, _ in self.checks])
        if all(d is None for *_, d in self.checks):
            return Flags(values, tuple((error, message) for _, error, message, _ in self.checks))
        # NOTE: with details, every message is a template (the others' braces escaped)
        details = jnp.stack([jnp.zeros((), int) if d is None else jnp.asarray(d).reshape(()).astype(int) for *_, d in self.checks])
        errors = tuple((e, m if d is not None else m.replace("{", "{{").replace("}", "}}")) for _, e, m, d in self.checks)
        return Flags(values, errors, details)
