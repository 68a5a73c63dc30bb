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
_RANGES = contextvars.ContextVar("dimgraph_jax_ranges", default={})
_CHECKED = contextvars.ContextVar("dimgraph_jax_checked", default=None)


class known_range:
    """Context manager: while a loop body is traced, its step number `value` is known to lie in [0, `n`),
    so a read `c[i]` of a sequence at least `n` long needs no run-time check (`range_of`)."""

    def __init__(self, value, n):
        self.value, self.n = value, n

    def __enter__(self):
        self._token = _RANGES.set({**_RANGES.get(), id(self.value): (self.value, 0, self.n)})
        return self

    def __exit__(self, *exc):
        _RANGES.reset(self._token)


def shifted_range(op_name, a, b, result):
    """Note the range of `result` = `a - b` or `a + b` (`op_name`) where one side has a known range and the other
    is a static int (a reversed loop reads `c[n - 1 - i]`); only inside a body traced with `known_range`."""
    ranges = _RANGES.get()
    if not ranges or op_name not in ("add", "sub"):
        return
    ra, rb = range_of(a), range_of(b)
    if ra is not None and _static_int(b) is not None:
        k = _static_int(b)
        lo, hi = (ra[0] + k, ra[1] + k) if op_name == "add" else (ra[0] - k, ra[1] - k)
    elif rb is not None and _static_int(a) is not None:
        k = _static_int(a)
        lo, hi = (rb[0] + k, rb[1] + k) if op_name == "add" else (k - rb[1] + 1, k - rb[0] + 1)
    else:
        return
    ranges[id(result)] = (result, lo, hi)


def _static_int(value):
    if isinstance(value, jax.core.Tracer):
        return None
    a = np.asarray(value)
    return int(a) if a.ndim == 0 and a.dtype.kind in "iu" else None


def range_of(value):
    """`(lo, hi)`: the half-open range `value` is known to lie in while tracing, or None."""
    found = _RANGES.get().get(id(value))
    return found[1:] if found is not None and found[0] is value else None


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


def checked_before(value, *facts):
    """Whether a check on the traced `value` with these `facts` (an axis size) was already traced in this
    graph: a gather and its gradient's scatter by one index array need one bounds check per call, not two.
    Records it otherwise (the value is held, so its id stays its own while the graph is traced)."""
    seen = _CHECKED.get()
    if seen is None:
        return False
    key = (id(value), *facts)
    if key in seen:
        return True
    seen[key] = value
    return False


class collect:
    """Context manager: gathers the checks traced inside it; `.flags()` packs them (None when none)."""

    def __enter__(self):
        self.checks = []
        self._tokens = _ACTIVE.set(self.checks), _CHECKED.set({})
        return self

    def __exit__(self, *exc):
        _ACTIVE.reset(self._tokens[0])
        _CHECKED.reset(self._tokens[1])

    def flags(self):
        if not self.checks:
            return None
        values = jnp.stack([jnp.asarray(ok, dtype=bool).reshape(()) for ok, _, _, _ in self.checks])
        if all(d is None for *_, d in self.checks):
            return Flags(values, tuple((error, message) for _, error, message, _ in self.checks))
        # NOTE: with details, every message is a template (the others' braces escaped)
        details = jnp.stack(
            [jnp.zeros((), int) if d is None else jnp.asarray(d).reshape(()).astype(int) for *_, d in self.checks]
        )
        errors = tuple(
            (e, m if d is not None else m.replace("{", "{{").replace("}", "}}")) for _, e, m, d in self.checks
        )
        return Flags(values, errors, details)
