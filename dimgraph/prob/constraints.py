"""Supports: the set of values a distribution puts its mass on, stated once per distribution (`support`).

A constraint answers two questions: which values lie inside (`contains(x)`,
the mask a log density is `-inf` outside; None where every value does), and,
through `dimgraph.prob.transforms.biject_to`, which bijection maps it onto the
real space a gradient sampler moves in. Discrete supports (`discrete=True`)
have no bijection: their variables are observed or marginalized.

Static supports are values (`real`, `positive`, `nonnegative`,
`unit_interval`, `nonnegative_integer`, `boolean`, `integer`); those that
depend on a distribution's parameters or dims are built from them
(`interval(lower, upper)`, `integer_interval(lower, upper)`, `simplex(dim)`,
`corr_matrix(dims)`, `corr_cholesky(dims)`, `cov_cholesky(dims, packed_dim)`,
`zero_sum(dims)`), usually in a `support` property.
"""

from __future__ import annotations

import numpy as np

from dimgraph.labeled import math as lmath
from dimgraph.labeled.dims import fmt_dims


class Constraint:
    """A set of values; `discrete` ones hold whole numbers only."""

    discrete = False

    def __repr__(self):
        return type(self).__name__.lower()


class Real(Constraint):
    """Every value, +-inf included (a density's formula gives -inf there by itself)."""

    def contains(self, x):
        return None


class Interval(Constraint):
    """[lower, upper]; a bound of None is an open side (-inf or inf). Bounds are numbers or labeled variables."""

    def __init__(self, lower=None, upper=None):
        self.lower, self.upper = lower, upper

    def __repr__(self):
        return f"interval(lower={self.lower!r}, upper={self.upper!r})"

    def contains(self, x):
        out = None
        if self.lower is not None:
            out = x >= self.lower
        if self.upper is not None:
            out = (x <= self.upper) if out is None else out & (x <= self.upper)
        return out


class Positive(Interval):
    """Finite x > 0."""

    def __init__(self):
        super().__init__(0.0, None)

    def __repr__(self):
        return "positive"

    def contains(self, x):
        return (x > 0) & lmath.isfinite(x)


class Nonnegative(Interval):
    """Finite x >= 0."""

    def __init__(self):
        super().__init__(0.0, None)

    def __repr__(self):
        return "nonnegative"

    def contains(self, x):
        return (x >= 0) & lmath.isfinite(x)


class UnitInterval(Interval):
    """[0, 1]."""

    def __init__(self):
        super().__init__(0.0, 1.0)

    def __repr__(self):
        return "unit_interval"


class IntegerInterval(Interval):
    """The whole numbers in [lower, upper] (a bound of None is an open side); a pmf's support."""

    discrete = True

    def __repr__(self):
        return f"integer_interval(lower={self.lower!r}, upper={self.upper!r})"

    def contains(self, x):
        whole = (lmath.floor(x) == x) & lmath.isfinite(x) if np.dtype(x.type.dtype).kind == "f" else None
        bounded = super().contains(x)
        return bounded if whole is None else whole if bounded is None else bounded & whole


class Simplex(Constraint):
    """Points of the simplex over `dim`: components in [0, 1] (summing to 1)."""

    def __init__(self, dim):
        self.dim = dim

    def __repr__(self):
        return f"simplex({self.dim.name!r})"

    def contains(self, x):
        return ((x >= 0) & (x <= 1)).all(self.dim)


class _OnDims(Constraint):
    """A set of matrices or arrays on the named core `dims`."""

    def __init__(self, dims):
        self.dims = tuple(dims)

    def __repr__(self):
        return f"{_NAMES[type(self)]}({fmt_dims(self.dims)})"


class CorrMatrix(_OnDims):
    """Correlation matrices on dims (row, col)."""


class CorrCholesky(_OnDims):
    """Lower Cholesky factors of correlation matrices on dims (row, col)."""


class CovCholesky(_OnDims):
    """Lower Cholesky factors of covariance matrices on dims (row, col), or their packed entries on `packed_dim`."""

    def __init__(self, dims, packed_dim=None):
        super().__init__(dims)
        self.packed_dim = packed_dim


class ZeroSum(_OnDims):
    """Arrays summing to zero over each of `dims`."""


_NAMES = {CorrMatrix: "corr_matrix", CorrCholesky: "corr_cholesky", CovCholesky: "cov_cholesky", ZeroSum: "zero_sum"}

real = Real()
positive = Positive()
nonnegative = Nonnegative()
unit_interval = UnitInterval()
nonnegative_integer = IntegerInterval(0, None)
boolean = IntegerInterval(0, 1)
integer = IntegerInterval(None, None)
interval = Interval
integer_interval = IntegerInterval
simplex = Simplex
corr_matrix = CorrMatrix
corr_cholesky = CorrCholesky
cov_cholesky = CovCholesky
zero_sum = ZeroSum


def union(supports, lowest, highest):
    """The smallest support of this catalog holding each of `supports` (a mixture's components'): the common
    one, an interval spanning theirs (bounds merged by `lowest`/`highest`; None where any side is open), or
    the real line (the integers when all are discrete)."""
    first, kinds = supports[0], {type(s) for s in supports}
    discrete = {s.discrete for s in supports}
    if kinds <= {Positive, Nonnegative}:
        return positive if kinds == {Positive} else nonnegative
    if len(kinds) == 1 and kinds <= {Real, UnitInterval}:
        return first
    if all(isinstance(s, Interval) for s in supports) and len(discrete) == 1:
        lows, highs = [s.lower for s in supports], [s.upper for s in supports]
        lower = None if any(v is None for v in lows) else lowest(lows)
        upper = None if any(v is None for v in highs) else highest(highs)
        return IntegerInterval(lower, upper) if first.discrete else Interval(lower, upper)
    if len(kinds) == 1 and all(vars(s) == vars(first) for s in supports):
        return first  # one simplex, one set of matrices
    return integer if discrete == {True} else real
