"""Shared variables and the contexts that hold their values.

A shared variable is a graph input whose value lives in a `SharedContext`
(a default one unless the caller passes `ctx=`). Compiled functions read the
values at call time and write updates only after every output was computed,
so a call that raises changes nothing.
"""

from __future__ import annotations

import threading

import numpy as np

from dimgraph.core.io import TensorInput
from dimgraph.core.random import seed_sequence
from dimgraph.core.type import TensorType
from dimgraph.core.variable import TensorVariable


class SharedContext:
    """A store of shared-variable values; functions called with `ctx=` read and update only it.

    RNG states (`dg.rng`) start in each context from the context's `seed` (fresh
    entropy when None) and the stream's own seed, so two contexts draw independent
    numbers; the default context uses the streams' seeds alone.

    Thread safety: a call that updates a context (draws, `updates=`) reads, runs and
    writes back under the context's `lock`, so threads sharing one context (the
    default one included) each draw their own numbers and advance the state once per
    call; such calls run one at a time. For parallel draws, give each thread its own
    context from `ctx.spawn(n)`.
    """

    def __init__(self, seed=None):
        self._values = {}
        self.seed_sequence = seed_sequence(seed, "SharedContext")
        self.lock = threading.RLock()

    def __getstate__(self):
        return {"_values": self._values, "seed_sequence": self.seed_sequence}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.lock = threading.RLock()

    def get(self, var):
        found = self._values.get(var, _UNSET)
        if found is _UNSET:
            start = getattr(var, "initial_value_in", None)
            found = var.initial_value if start is None else start(self)
        return found

    def spawn(self, n):
        """`n` child contexts (for processes or chains): the values set here, and independent RNG streams.

        Children draw from `SeedSequence.spawn`, so `SharedContext(seed=s).spawn(n)` is reproducible.

        >>> import dimgraph as dg, numpy as np
        >>> rng = dg.rng(0)
        >>> f = dg.function([], rng.normal(0.0, 1.0))
        >>> a, b = dg.SharedContext(seed=1).spawn(2)
        >>> float(f(ctx=a)) != float(f(ctx=b))
        True
        """
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"SharedContext.spawn: n must be an int (the number of children), got {n!r}")
        if n < 0:
            raise ValueError(f"SharedContext.spawn: n must be >= 0 (the number of children), got {n}")
        root = self.seed_sequence if self.seed_sequence is not None else np.random.SeedSequence()
        children = []
        for seq in root.spawn(n):
            child = SharedContext(seq)
            child._values = {k: v for k, v in self._values.items() if getattr(k, "initial_value_in", None) is None}
            children.append(child)
        return children

    def set(self, var, value):
        value = var.input_spec.convert(value).copy()
        with self.lock:
            self._values[var] = value

    def __contains__(self, var):
        return var in self._values


_UNSET = object()
DEFAULT_CONTEXT = SharedContext.__new__(SharedContext)  # no SeedSequence: RNG streams start from their own seeds
DEFAULT_CONTEXT.__setstate__({"_values": {}, "seed_sequence": None})


class SharedMixin:
    """Value access shared by positional and labeled shared variables."""

    __slots__ = ()

    def get(self, ctx=None):
        """The current value in `ctx` (default: the global context); a copy, so callers cannot mutate it."""
        return np.array((ctx or DEFAULT_CONTEXT).get(self))

    def set(self, value, ctx=None):
        """Store `value` (checked like a function input) in `ctx` (default: the global context)."""
        (ctx or DEFAULT_CONTEXT).set(self, value)

    @property
    def input_spec(self):
        return TensorInput(self.name, self.type)

    @property
    def storage_key(self):
        """The variable whose value a context stores (a labeled shared variable stores its positional twin)."""
        return self


class SharedTensor(SharedMixin, TensorVariable):
    __slots__ = ("initial_value",)


def shared(value, name=None, dtype=None):
    """A positional shared variable initialised to (a copy of) `value` (`dg.shared` also makes labeled ones)."""
    arr = np.array(value, dtype=dtype)
    var = SharedTensor(TensorType(arr.dtype.name, arr.shape), name=name)
    arr.setflags(write=False)
    var.initial_value = arr
    return var
