"""Bijections between a distribution's support and unconstrained space, with their log-Jacobians.

A sampler moves on the whole real space; a scale lives on (0, inf), a
probability on (0, 1), a simplex on a face of the cube. A `Transform` maps
between the two on labeled variables:
- `forward(x)`: constrained value -> unconstrained `y` (dims: `free_dims`);
- `backward(y)`: unconstrained -> constrained, on the constrained dims;
- `log_jac_det(y)`: log |det d backward / d y|, what the density gains when it is
  written in `y`. Elementwise transforms give it per element (y's dims); the others
  reduce their core dims (one number per batch element).

Transforms that change a dim's length (simplex, zero-sum: n -> n - 1; Cholesky
correlation: (n, n) -> n (n - 1) / 2; Cholesky covariance: (n, n) -> n (n + 1) / 2) put their free coordinates on a new
Dim named after the constrained one (`<dim>__free`). A simplex's density is
taken with respect to its first n - 1 coordinates (the Dirichlet's), a zero-sum
vector's with respect to the hyperplane's own measure (the isometry below has
log-Jacobian 0), a correlation matrix's with respect to its strictly lower
entries.

A distribution's default transform follows from its support: `biject_to`
keeps one bijection per kind of constraint (`dimgraph.prob.constraints`),
registered beside the transform with `@bijection_for(ConstraintClass)`. A
user's override is a Transform or the name of one (`transform="log"`); each
Transform class builds itself from a name (`from_name`) with what it needs of
the distribution and the variable's dims.
"""

from __future__ import annotations

import math

import numpy as np

from dimgraph.labeled import linalg
from dimgraph.labeled import math as lmath
from dimgraph.labeled.basic import constant
from dimgraph.labeled.dims import Dim, resolve_dims
from dimgraph.labeled.shape import arange
from dimgraph.prob import constraints

_LOG2 = math.log(2.0)


def free_dim(dim, size):
    """The Dim of the free coordinates of `dim`: `<name>__free` with `size` positions."""
    return Dim(f"{dim.name}__free", size=size)


def _swap_dims(dims, old, new):
    return tuple(new if d == old else d for d in dims)


def _gather(x, dim, positions, on):
    """`x` at integer `positions` of `dim` (a constant on the Dim `on`), in place of `dim`."""
    index = constant(np.asarray(positions, dtype=np.int64), dims=(on,))
    return x.isel({dim.name: index}).transpose(*_swap_dims(x.dims, dim, on))


def _open(bound, side):
    """A constraint's bound for `Interval`: `side` (-inf or inf) where it is None (an open side)."""
    return side if bound is None else bound


def _core_dims(cls, dist, what):
    """The core dims a transform named by a user takes from the distribution (`dims`)."""
    core = getattr(dist, "dims", None)
    if core is None:
        raise ValueError(
            f"{what}: the {cls.name!r} transform needs the distribution's dims; give transform=dg.transforms.{cls.__name__}(dims)"
        )
    return core


def _sized(dim, what):
    if dim.size is None:
        raise ValueError(f"{what}: the dim {dim.name!r} needs a static size")
    return dim.size


class Transform:
    """constrained <-> unconstrained on labeled variables; see the module docstring."""

    name = "transform"

    def free_dims(self, dims):
        """The unconstrained variable's dims for a constrained variable on `dims`."""
        return tuple(dims)

    def forward(self, x):
        raise NotImplementedError(type(self).__name__)

    def backward(self, y):
        raise NotImplementedError(type(self).__name__)

    def log_jac_det(self, y):
        raise NotImplementedError(type(self).__name__)

    @classmethod
    def from_name(cls, dist, dims, what):
        """The transform a user names (`transform="log"`) for a variable on `dims` drawn from `dist`."""
        return cls()

    def __repr__(self):
        return f"{type(self).__name__}()"


class Identity(Transform):
    """The real line as it is."""

    name = "identity"

    def forward(self, x):
        return lmath.as_operand(x, "forward")

    def backward(self, y):
        return lmath.as_operand(y, "backward")

    def log_jac_det(self, y):
        return 0.0 * lmath.as_operand(y, "log_jac_det")


class Log(Transform):
    """(0, inf) <-> R: x = exp(y)."""

    name = "log"

    def forward(self, x):
        return lmath.log(x)

    def backward(self, y):
        return lmath.exp(y)

    def log_jac_det(self, y):
        return lmath.as_operand(y, "log_jac_det")


def _log_sigmoid_slope(y):
    """log(sigmoid(y) * (1 - sigmoid(y))) = -softplus(-y) - softplus(y), finite for every y."""
    return -lmath.softplus(-y) - lmath.softplus(y)


class LogOdds(Transform):
    """(0, 1) <-> R: x = sigmoid(y)."""

    name = "logodds"

    def forward(self, x):
        return lmath.log(x) - lmath.log1p(-x)

    def backward(self, y):
        return lmath.sigmoid(y)

    def log_jac_det(self, y):
        return _log_sigmoid_slope(y)


class Interval(Transform):
    """(lower, upper) <-> R; an infinite bound makes it a log transform from the other one (both: identity).

    Both finite: x = lower + (upper - lower) sigmoid(y); upper infinite: x = lower + exp(y);
    lower infinite: x = upper - exp(-y). The bounds broadcast by dim name.
    """

    name = "interval"

    def __init__(self, lower, upper):
        self.lower, self.upper = lmath.operands([lower, upper], "interval")

    def __repr__(self):
        return f"Interval(lower={self.lower!r}, upper={self.upper!r})"

    @classmethod
    def from_name(cls, dist, dims, what):
        support = dist.support
        if not isinstance(support, constraints.Interval) or (support.lower is None and support.upper is None):
            raise ValueError(
                f"{what}: the 'interval' transform needs a distribution with a lower or upper bound; "
                f"the support of {dist!r} is {support!r}"
            )
        return cls(_open(support.lower, -np.inf), _open(support.upper, np.inf))

    def _parts(self):
        lo, up = self.lower, self.upper
        has_lo, has_up = lmath.isfinite(lo), lmath.isfinite(up)
        # the bounds where they are finite, harmless numbers elsewhere: no inf reaches an unused branch's gradient
        return has_lo, has_up, lmath.where(has_lo, lo, 0.0), lmath.where(has_up, up, 1.0)

    def forward(self, x):
        has_lo, has_up, lo, up = self._parts()
        both = lmath.log(x - lo) - lmath.log(up - x)
        above = lmath.log(lmath.where(has_lo, x - lo, 1.0))
        below = -lmath.log(lmath.where(has_up, up - x, 1.0))
        return lmath.where(has_lo & has_up, both, lmath.where(has_lo, above, lmath.where(has_up, below, x)))

    def backward(self, y):
        has_lo, has_up, lo, up = self._parts()
        both = lo + (up - lo) * lmath.sigmoid(y)
        above = lo + lmath.exp(lmath.where(has_lo & ~has_up, y, 0.0))
        below = up - lmath.exp(lmath.where(has_up & ~has_lo, -y, 0.0))
        return lmath.where(has_lo & has_up, both, lmath.where(has_lo, above, lmath.where(has_up, below, y)))

    def log_jac_det(self, y):
        has_lo, has_up, lo, up = self._parts()
        both = lmath.log(up - lo) + _log_sigmoid_slope(y)
        return lmath.where(has_lo & has_up, both, lmath.where(has_lo, y, lmath.where(has_up, -y, 0.0 * y)))


class Simplex(Transform):
    """The simplex over `dim` (n points, sum 1) <-> R^(n-1): x = softmax([y, 0]) (additive log-ratios).

    The density is taken with respect to the first n - 1 coordinates, whose Jacobian
    determinant is the product of all n coordinates: log|det J| = sum(log x).
    """

    name = "simplex"

    def __init__(self, dim):
        self.dim = dim
        self.n = _sized(dim, "simplex")
        self.free = free_dim(dim, self.n - 1)

    def __repr__(self):
        return f"Simplex(dim={self.dim.name!r})"

    @classmethod
    def from_name(cls, dist, dims, what):
        dim = getattr(dist, "dim", None)
        if dim is None and len(dims) == 1:
            dim = dims[0]
        if dim is None:
            raise ValueError(
                f"{what}: the {cls.name!r} transform needs one dim; give transform=dg.transforms.{cls.__name__}(dim)"
            )
        return cls(dim)

    def free_dims(self, dims):
        return _swap_dims(dims, self.dim, self.free)

    def _padded_log(self, y):
        """log x on `dim`: [y, 0] minus its logsumexp."""
        last = arange(self.dim) == self.n - 1
        padded = lmath.where(last, 0.0, _gather(y, self.free, [*range(self.n - 1), 0], self.dim))
        return padded - lmath.logsumexp(padded, self.dim)

    def forward(self, x):
        x = lmath.as_operand(x, "forward")
        (dim,) = resolve_dims(x.dims, self.dim, "simplex forward")
        logs = lmath.log(x)
        return _gather(logs, dim, range(self.n - 1), self.free) - logs.isel({dim.name: self.n - 1})

    def backward(self, y):
        y = lmath.as_operand(y, "backward")
        return lmath.exp(self._padded_log(y)).transpose(*_swap_dims(y.dims, self.free, self.dim))

    def log_jac_det(self, y):
        return self._padded_log(lmath.as_operand(y, "log_jac_det")).sum(self.dim)


class Ordered(Transform):
    """Increasing values along `dim` <-> R^n: x_0 = y_0, x_k = x_(k-1) + exp(y_k)."""

    name = "ordered"

    def __init__(self, dim):
        self.dim = dim
        self.n = _sized(dim, "ordered")

    def __repr__(self):
        return f"Ordered(dim={self.dim.name!r})"

    @classmethod
    def from_name(cls, dist, dims, what):
        dim = getattr(dist, "dim", None)
        if dim is None and len(dims) == 1:
            dim = dims[0]
        if dim is None:
            raise ValueError(
                f"{what}: the {cls.name!r} transform needs one dim; give transform=dg.transforms.{cls.__name__}(dim)"
            )
        return cls(dim)

    def forward(self, x):
        x = lmath.as_operand(x, "forward")
        first = arange(self.dim) == 0
        previous = _gather(x, self.dim, [0, *range(self.n - 1)], self.dim)
        return lmath.where(first, x, lmath.log(lmath.where(first, 1.0, x - previous))).transpose(*x.dims)

    def backward(self, y):
        y = lmath.as_operand(y, "backward")
        first = arange(self.dim) == 0
        return lmath.where(first, y, lmath.exp(y)).cumsum(self.dim).transpose(*y.dims)

    def log_jac_det(self, y):
        y = lmath.as_operand(y, "log_jac_det")
        return lmath.where(arange(self.dim) == 0, 0.0, y).sum(self.dim)


class ZeroSum(Transform):
    """Values summing to zero over each of `dims` <-> R^(n-1) per dim, by a Householder reflection.

    The reflection H swaps the unit vector (1, ..., 1)/sqrt(n) with -e_n, so it maps
    the zero-sum hyperplane onto {x_n = 0} isometrically: x = H [y, 0], y = (H x)[:n-1],
    log|det J| = 0 with respect to the hyperplane's own measure. Per element:
    x_k = y_k - s / (n + sqrt(n)) (k < n), x_n = -s / sqrt(n), s = sum(y).
    """

    name = "zerosum"

    def __init__(self, dims):
        self.dims = (dims,) if isinstance(dims, Dim) else tuple(dims)
        self.free = {d: free_dim(d, _sized(d, "zerosum") - 1) for d in self.dims}

    def __repr__(self):
        return f"ZeroSum(dims={[d.name for d in self.dims]})"

    @classmethod
    def from_name(cls, dist, dims, what):
        return cls(_core_dims(cls, dist, what))

    def free_dims(self, dims):
        for d in self.dims:
            dims = _swap_dims(dims, d, self.free[d])
        return dims

    def forward(self, x):
        x = lmath.as_operand(x, "forward")
        for d in self.dims:
            n = d.size
            last = x.isel({d.name: n - 1})
            x = _gather(x, d, range(n - 1), self.free[d]) - last / (math.sqrt(n) + 1)
        return x

    def backward(self, y):
        y = lmath.as_operand(y, "backward")
        for d in self.dims:
            n, free = d.size, self.free[d]
            s = y.sum(free)
            padded = _gather(y, free, [*range(n - 1), 0], d)
            y = lmath.where(arange(d) == n - 1, -s / math.sqrt(n), padded - s / (n + math.sqrt(n))).transpose(
                *padded.dims
            )
        return y

    def log_jac_det(self, y):
        y = lmath.as_operand(y, "log_jac_det")
        return 0.0 * y.sum(tuple(self.free.values()))


class CholeskyCorr(Transform):
    """Lower Cholesky factors of correlation matrices on dims (row, col) <-> R^(n(n-1)/2).

    Each strictly lower entry is tanh(y) (a canonical partial correlation z), scaled by
    the room its row has left: L_ij = z_ij sqrt(prod_(k<j) (1 - z_ik^2)), and L_ii the
    room left at the diagonal, so every row has unit norm. Row by row the map is
    triangular, hence log|det J| = sum_(i>j) log(1 - z_ij^2) + 1/2 log prod_(k<j) (1 - z_ik^2).
    """

    name = "cholesky_corr"

    def __init__(self, dims):
        self.row, self.col = dims
        self.n = _sized(self.row, "cholesky_corr")
        if _sized(self.col, "cholesky_corr") != self.n:
            raise ValueError(f"cholesky_corr: dims {self.row.name!r} and {self.col.name!r} need one size")
        self.free = Dim(f"{self.row.name}_{self.col.name}__free", size=self.n * (self.n - 1) // 2)
        rows, cols = np.tril_indices(self.n, -1)  # the strictly lower entries row by row: (1, 0), (2, 0), (2, 1), ...
        packed = np.zeros((self.n, self.n), dtype=np.int64)
        packed[rows, cols] = np.arange(rows.size)
        self._packed = constant(packed, dims=(self.row, self.col))
        self._rows = constant(rows.astype(np.int64), dims=(self.free,))
        self._cols = constant(cols.astype(np.int64), dims=(self.free,))
        self._lower = arange(self.row) > arange(self.col)
        self._diag = arange(self.row) == arange(self.col)

    def __repr__(self):
        return f"{type(self).__name__}(dims=({self.row.name!r}, {self.col.name!r}))"

    @classmethod
    def from_name(cls, dist, dims, what):
        return cls(_core_dims(cls, dist, what))

    def free_dims(self, dims):
        kept = tuple(d for d in dims if d not in (self.row, self.col))
        return kept + (self.free,)

    def _unpack(self, y):
        """(z on (row, col), log(1 - z^2) there, and its exclusive cumulative sum along col)."""
        y = lmath.where(self._lower, y.isel({self.free.name: self._packed}), 0.0)
        z = lmath.tanh(y)
        log_room = 2.0 * (_LOG2 - y - lmath.softplus(-2.0 * y))  # log(1 - tanh(y)^2), no cancellation
        log_room = lmath.where(self._lower, log_room, 0.0)
        return z, log_room, log_room.cumsum(self.col) - log_room

    def _batch_core(self, y):
        return tuple(d for d in y.dims if d != self.free) + (self.row, self.col)

    def backward(self, y):
        y = lmath.as_operand(y, "backward")
        z, _, room = self._unpack(y)
        scale = lmath.exp(0.5 * room)
        chol = lmath.where(self._lower, z * scale, lmath.where(self._diag, scale, 0.0))
        return chol.transpose(*self._batch_core(y))

    def forward(self, x):
        x = lmath.as_operand(x, "forward")
        square = x * x
        room = 1.0 - (square.cumsum(self.col) - square)
        z = x / lmath.sqrt(lmath.where(self._lower, room, 1.0))
        z = lmath.where(self._lower, z, 0.0)
        y = 0.5 * (lmath.log1p(z) - lmath.log1p(-z))
        return y.isel({self.row.name: self._rows, self.col.name: self._cols}).transpose(*self.free_dims(x.dims))

    def log_jac_det(self, y):
        y = lmath.as_operand(y, "log_jac_det")
        _, log_room, room = self._unpack(y)
        return lmath.where(self._lower, log_room + 0.5 * room, 0.0).sum((self.row, self.col))


class Corr(CholeskyCorr):
    """Correlation matrices on dims (row, col) <-> R^(n(n-1)/2): C = L L^T with L from `CholeskyCorr`.

    C's strictly lower entries in row order depend triangularly on L's, with
    dC_ij / dL_ij = L_jj, so log|det J| gains sum_j (n - 1 - j) log L_jj.
    """

    name = "corr"

    def backward(self, y):
        chol = super().backward(y)
        inner = Dim(f"{self.col.name}__inner", size=self.n)
        left = chol.rename({self.col.name: inner.name})
        right = chol.rename({self.row.name: self.col.name, self.col.name: inner.name})
        return (left * right).sum(inner.name).transpose(*self._batch_core(lmath.as_operand(y, "backward")))

    def forward(self, x):
        return super().forward(linalg.cholesky(lmath.as_operand(x, "forward"), dims=(self.row, self.col)))

    def log_jac_det(self, y):
        y = lmath.as_operand(y, "log_jac_det")
        _, _, room = self._unpack(y)
        weight = constant(np.arange(self.n - 1, -1, -1, dtype=np.float64), dims=(self.col,))
        extra = lmath.where(self._diag, 0.5 * room * weight, 0.0).sum((self.row, self.col))
        return super().log_jac_det(y) + extra


class CholeskyCov(Transform):
    """Lower Cholesky factors of covariance matrices <-> R^(n(n+1)/2): the diagonal on the log scale.

    The free coordinates are the lower triangle with the diagonal in row order (PyMC's packed
    order, `np.tril_indices`), the diagonal ones the logs of L_ii, so log|det J| is their sum.
    The constrained value is the matrix on dims (row, col), or, for a distribution built with
    `packed=True`, those entries on its packed dim.
    """

    name = "cholesky_cov"

    def __init__(self, dims, packed_dim=None):
        self.row, self.col = dims
        self.n = _sized(self.row, "cholesky_cov")
        if _sized(self.col, "cholesky_cov") != self.n:
            raise ValueError(f"cholesky_cov: dims {self.row.name!r} and {self.col.name!r} need one size")
        self.packed_dim = packed_dim
        self.free = Dim(f"{self.row.name}_{self.col.name}__free", size=self.n * (self.n + 1) // 2)
        rows, cols = np.tril_indices(self.n)
        table = np.zeros((self.n, self.n), dtype=np.int64)
        table[rows, cols] = np.arange(rows.size)
        self._table = constant(table, dims=(self.row, self.col))
        self._rows = constant(rows.astype(np.int64), dims=(self.free,))
        self._cols = constant(cols.astype(np.int64), dims=(self.free,))
        self._on_diag = constant(rows == cols, dims=(self.free,))
        self._lower = arange(self.row) >= arange(self.col)

    def __repr__(self):
        return f"{type(self).__name__}(dims=({self.row.name!r}, {self.col.name!r}))"

    @classmethod
    def from_name(cls, dist, dims, what):
        return cls(_core_dims(cls, dist, what), getattr(dist, "packed_dim", None))

    def _core(self):
        return (self.packed_dim,) if self.packed_dim is not None else (self.row, self.col)

    def free_dims(self, dims):
        return tuple(d for d in dims if d not in self._core()) + (self.free,)

    def backward(self, y):
        y = lmath.as_operand(y, "backward")
        entries = lmath.where(self._on_diag, lmath.exp(y), y)
        batch = tuple(d for d in y.dims if d != self.free)
        if self.packed_dim is not None:
            return entries.rename({self.free.name: self.packed_dim}).transpose(*batch, self.packed_dim)
        chol = lmath.where(self._lower, entries.isel({self.free.name: self._table}), 0.0)
        return chol.transpose(*batch, self.row, self.col)

    def forward(self, x):
        x = lmath.as_operand(x, "forward")
        if self.packed_dim is not None:
            entries = x.rename({self.packed_dim.name: self.free})
        else:
            entries = x.isel({self.row.name: self._rows, self.col.name: self._cols})
        y = lmath.where(self._on_diag, lmath.log(lmath.where(self._on_diag, entries, 1.0)), entries)
        return y.transpose(*self.free_dims(x.dims))

    def log_jac_det(self, y):
        y = lmath.as_operand(y, "log_jac_det")
        return lmath.where(self._on_diag, y, 0.0).sum(self.free)


class PositiveDefinite(CholeskyCov):
    """Symmetric positive definite matrices on dims (row, col) <-> R^(n(n+1)/2): X = L L^T with L from
    `CholeskyCov` (lower triangular, its diagonal on the log scale).

    X's lower triangle depends triangularly on L's, log|det dX/dL| = n log 2 + sum_i (n - i) log L_ii
    (rows from 0), so with log L_ii = y_ii the log-Jacobian is n log 2 + sum_i (n - i + 1) y_ii.
    """

    name = "positive_definite"

    def __init__(self, dims):
        super().__init__(dims)
        rows, cols = np.tril_indices(self.n)
        self._diag_weight = constant(np.where(rows == cols, self.n - rows + 1.0, 0.0), dims=(self.free,))

    @classmethod
    def from_name(cls, dist, dims, what):
        return cls(_core_dims(cls, dist, what))

    def backward(self, y):
        chol = super().backward(y)
        inner = Dim(f"_{self.row.name}_{self.col.name}_inner", size=self.n)
        product = (chol.rename({self.col: inner}) * chol.rename({self.col: inner}).rename({self.row: self.col})).sum(
            inner
        )
        return product.transpose(*[d for d in product.dims if d not in (self.row, self.col)], self.row, self.col)

    def forward(self, x):
        return super().forward(linalg.cholesky(lmath.as_operand(x, "forward"), dims=(self.row, self.col)))

    def log_jac_det(self, y):
        y = lmath.as_operand(y, "log_jac_det")
        return (self._diag_weight * y).sum(self.free) + self.n * math.log(2.0)


TRANSFORMS = {
    t.name: t
    for t in (
        Identity,
        Log,
        LogOdds,
        Interval,
        Simplex,
        Ordered,
        ZeroSum,
        CholeskyCorr,
        Corr,
        CholeskyCov,
        PositiveDefinite,
    )
}
"""{name: Transform class}: the names a user's `transform=` may give."""

_BIJECTIONS = {}


def bijection_for(kind):
    """Decorator: `fn(constraint) -> Transform` is the bijection onto the real space for constraints of class `kind`."""

    def decorate(fn):
        _BIJECTIONS[kind] = fn
        return fn

    return decorate


def biject_to(support):
    """The Transform from the real space onto `support` (a `dimgraph.prob.constraints` value): a distribution's
    default transform. The nearest registered class of the constraint's decides.

    >>> import dimgraph as dg
    >>> dg.transforms.biject_to(dg.dist.halfnormal(1.0).support)
    Log()
    """
    if not isinstance(support, constraints.Constraint):
        raise TypeError(f"biject_to: expected a support (a dimgraph.prob.constraints value), got {support!r}")
    if support.discrete:
        raise ValueError(f"biject_to: the support {support!r} is discrete; no bijection maps it onto the real space")
    for kind in type(support).__mro__:
        if kind in _BIJECTIONS:
            return _BIJECTIONS[kind](support)
    raise TypeError(f"biject_to: no bijection is registered for {type(support).__name__} ({support!r})")


bijection_for(constraints.Real)(lambda c: Identity())
bijection_for(constraints.Positive)(lambda c: Log())
bijection_for(constraints.Nonnegative)(lambda c: Log())
bijection_for(constraints.UnitInterval)(lambda c: LogOdds())
bijection_for(constraints.Interval)(lambda c: Interval(_open(c.lower, -np.inf), _open(c.upper, np.inf)))
bijection_for(constraints.Simplex)(lambda c: Simplex(c.dim))
bijection_for(constraints.ZeroSum)(lambda c: ZeroSum(c.dims))
bijection_for(constraints.CorrCholesky)(lambda c: CholeskyCorr(c.dims))
bijection_for(constraints.CorrMatrix)(lambda c: Corr(c.dims))
bijection_for(constraints.CovCholesky)(lambda c: CholeskyCov(c.dims, c.packed_dim))
bijection_for(constraints.PositiveDefinite)(lambda c: PositiveDefinite(c.dims))


def transform_for(dist, dims, spec=None, what="transform"):
    """The Transform a model samples a variable on `dims` drawn from `dist` with: `spec` a Transform, the name
    of one (built from the distribution and `dims`), or None (the bijection onto the distribution's support).

    >>> import dimgraph as dg
    >>> k = dg.Dim("k", size=3)
    >>> dg.transforms.transform_for(dg.dist.normal(0.0, 1.0), (k,), "ordered")
    Ordered(dim='k')
    """
    if isinstance(spec, Transform):
        return spec
    if spec is None:
        return biject_to(dist.support)
    if not isinstance(spec, str) or spec not in TRANSFORMS:
        raise ValueError(f"{what}: unknown transform {spec!r}; the transforms are {sorted(TRANSFORMS)} or a Transform")
    return TRANSFORMS[spec].from_name(dist, dims, what)
