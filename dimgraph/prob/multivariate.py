"""Distributions of vectors and matrices: Dirichlet, multivariate normal, the LKJ family, the zero-sum normal.

- `dirichlet(a, dim=k)`: points on the simplex over `k`.
- `multivariate_normal(mu, cov=|chol=, dims=(row, col))`: vectors on row.
- `lkj_corr(eta, dims=(row, col))`: correlation matrices with density
  proportional to det(C)^(eta - 1) (Lewandowski, Kurowicka and Joe 2009),
  with PyMC's normalizer.
- `lkj_cholesky_corr(eta, dims)`: the same law on the lower Cholesky factor
  of the correlation matrix (the form a sampler works with).
- `lkj_cholesky_cov(eta, sd_dist, dims)`: the lower Cholesky factor of a
  covariance matrix whose correlations are LKJ(eta) and whose standard
  deviations (row norms) follow `sd_dist` (PyMC's `LKJCholeskyCov`, same density).
- `zerosum_normal(sigma, dims)`: normals constrained to sum to zero over
  `dims` (PyMC's `ZeroSumNormal`).

Matrices live on two named dims of one static size, (row, col); `eta` and
the other parameters broadcast over any further dims. `packed=True` stores
the free entries on one dim instead (PyMC's packed layouts: the upper
triangle of a correlation, the lower triangle with the diagonal of a Cholesky
factor, row by row); `pack`/`unpack` convert. Draws use the onion method.
"""

from __future__ import annotations

import math

import numpy as np

from dimgraph.core.graph import Variable
from dimgraph.errors import DimError
from dimgraph.labeled import linalg
from dimgraph.labeled import math as lmath
from dimgraph.labeled.basic import constant, is_dataarray
from dimgraph.labeled.dims import Dim, as_dim_tuple, fmt_dims, resolve_dims
from dimgraph.labeled.math import softmax
from dimgraph.labeled.random import draw_dims, labeled_params, primitive_draw
from dimgraph.labeled.shape import arange
from dimgraph.prob import constraints
from dimgraph.prob.base import (
    Distribution,
    _check_option,
    _CoreDim,
    _count,
    _finite,
    _invalid_draws,
    _invalid_to_nan,
    _loggamma,
    draw_on,
    param_dims,
)
from dimgraph.prob.continuous import Beta
from dimgraph.prob.discrete import OrderedLogistic, _is_count
from dimgraph.prob.registry import register

_LOG_PI, _HALF_LOG_2PI = math.log(math.pi), 0.5 * math.log(2 * math.pi)
_LOG_2PI = math.log(2 * math.pi)


@register("dirichlet")
class Dirichlet(_CoreDim):
    """Points on the simplex over `dim` with concentrations `a`."""

    names = ("a",)
    safe_value = 0.5

    @property
    def support(self):
        return constraints.simplex(self.dim)

    def valid(self, a):
        return (a > 0).all(self.dim)

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        a = self.params["a"]
        inside = self.support.contains(x)
        safe = lmath.where(inside, x, 1.0 / (self.dim.size or 2))
        a_f = _finite(a)
        norm = lmath.gammaln(a_f.sum(self.dim)) - lmath.gammaln(a_f).sum(self.dim)
        density = norm + lmath.xlogy(a_f - 1, safe).sum(self.dim)
        # concentrations at inf: the mass goes to the face where every other component is 0, and leaves any
        # point off it (or on it where a finite a > 1 zeroes the density, or an infinite one's component is 0);
        # on it the density grows without bound for one such component (or where a finite a < 1 has a pole),
        # and depends on how two or more grow (NaN)
        infinite, finite = lmath.isinf(a), lmath.isfinite(a)
        off = ((finite & ((safe > 0) | (a > 1))) | (infinite & (safe == 0))).any(self.dim)
        pole = (finite & (safe == 0) & (a < 1)).any(self.dim) | (_count(infinite, self.dim) == 1)
        limit = lmath.where(off, -np.inf, lmath.where(pole, np.inf, np.nan))
        density = lmath.where(inside, lmath.where(infinite.any(self.dim), limit, density), -np.inf)
        return _invalid_to_nan(density, self.valid(a), check, "dirichlet")

    def sample(self, state, dims, a):
        state, lg = _loggamma(state, a, dims)
        return state, softmax(lg, self.dim)


@register("multivariate_normal")
class MultivariateNormal(Distribution):
    """Vectors on `dims[0]` with mean `mu` and covariance `cov` (or the precision `tau`, or the lower Cholesky
    factor `chol` of the covariance) on `dims` (PyMC's `MvNormal`).

    The matrix needs two dims of one size, (row, col); `mu`, `x` and the draws live on
    row. The log density solves with the Cholesky factor (no determinant); a precision is
    inverted once, as PyMC does.

    >>> import dimgraph as dg, numpy as np
    >>> i, j = dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> cov = dg.constant(np.array([[2.0, 0.5], [0.5, 1.0]]), dims=(i, j))
    >>> mvn = dg.dist.multivariate_normal(dg.constant(np.zeros(2), dims=(i,)), cov=cov, dims=(i, j))
    >>> round(float(mvn.logp(dg.constant(np.array([1.0, -1.0]), dims=(i,))).eval(backend="python")), 6)  # scipy: -3.260542
    -3.260542
    """

    names = ("mu", "chol")
    support = constraints.real

    def __init__(self, mu, cov=None, tau=None, chol=None, dims=None):
        self.dims, chol = scale_factor("multivariate_normal", {"cov": cov, "tau": tau, "chol": chol}, dims)
        (mu,) = labeled_params({"mu": mu}, "multivariate_normal")
        _on_row("multivariate_normal", mu, self.dims[0])
        self.params = {"mu": mu, "chol": chol}

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        row, col = self.dims
        mu, chol = self.params["mu"], self.params["chol"]
        d = x - mu
        far = lmath.isinf(d)  # a mean (or value) component at +-inf: the density vanishes
        z = linalg.solve_triangular(chol, _finite(d, 0.0), dims=self.dims)  # on col: L z = x - mu
        diag = linalg.diagonal(chol, dims=self.dims)
        k = row.size
        density = -0.5 * (z * z).sum(col) - lmath.log(diag).sum(row) - 0.5 * k * _LOG_2PI
        density = lmath.where(far.any(row), -np.inf, density)
        return _invalid_to_nan(density, self.valid(mu, chol), check, "multivariate_normal")

    def valid(self, mu, chol):
        """A Cholesky factor with a positive diagonal (inf: a variance without bound, so the density vanishes; a
        covariance that is not positive definite gives NaNs)."""
        diag = linalg.diagonal(chol, dims=self.dims)
        return (diag > 0).all(self.dims[0])

    def sample(self, state, dims, mu, chol):
        row, col = self.dims
        state, z = primitive_draw("normal", state, dims=tuple(d for d in dims if d != row))
        return state, (chol * z).sum(col) + mu

    def _out_dims(self, dims):
        return tuple(d for d in dims if d != self.dims[1])


def lkj_log_normalizer(eta, n):
    """The log normalizer of LKJ(eta) for n x n matrices, -log c with PyMC's closed form of log c:
    (n - 1) gammaln(eta + (n - 1) / 2) - sum over k = 1..n-1 of (k log(pi) / 2 + gammaln(eta + (n - 1 - k) / 2)).

    PyMC adds log c itself (pymc#1042), which leaves its density unnormalized unless eta is
    constant; here the density integrates to 1, so eta may be a random variable.
    """
    out = (n - 1) * lmath.gammaln(eta + 0.5 * (n - 1))
    for k in range(1, n):
        out = out - (0.5 * k * _LOG_PI + lmath.gammaln(eta + 0.5 * (n - 1 - k)))
    return out


def _matrix_dims(dims, what):
    dims = as_dim_tuple(dims, what) if dims is not None else ()
    if len(dims) != 2 or dims[0] == dims[1]:
        raise TypeError(f"{what}: give the matrix dims as dims=(row, col), two different Dims, got {dims!r}")
    row, col = dims
    if row.size is None or row.size != col.size or row.size < 2:
        raise DimError(f"{what}: the matrix dims need one static size >= 2, got {fmt_dims(dims)}")
    return row, col


class _LKJ(Distribution):
    """Shared by the LKJ family: `eta`, the matrix dims, the packed layout."""

    layout = "tril"  # the packed entries: "triu" (strictly above the diagonal), "tril" (strictly below), "tril_diag"
    what = "lkj"

    def __init__(self, eta, dims=None, packed=False):
        self.dims = _matrix_dims(dims, self.what)
        (eta,) = labeled_params({"eta": eta}, self.what)
        if set(eta.dims) & set(self.dims):
            raise DimError(
                f"{self.what}: eta must not be on the matrix dims {fmt_dims(self.dims)}, got dims {eta.dims}"
            )
        self.params = {"eta": eta}
        self.n = self.dims[0].size
        self.packed_dim = self._packed_dim() if packed else None

    def valid(self, **_):
        return self.params["eta"] > 0

    # --- packed layout
    def _positions(self):
        return {
            "triu": np.triu_indices(self.n, 1),
            "tril": np.tril_indices(self.n, -1),
            "tril_diag": np.tril_indices(self.n),
        }[self.layout]

    def _packed_dim(self):
        row, col = self.dims
        rows, cols = self._positions()
        labels = [f"{row.labels[i]},{col.labels[j]}" for i, j in zip(rows, cols)]
        return Dim(f"{row.name}_{col.name}", coords=labels)

    def pack(self, matrix):
        """The packed entries of `matrix` (on the matrix dims) on `packed_dim`."""
        if self.packed_dim is None:
            raise TypeError(f"{self.what}: pack needs packed=True")
        rows, cols = self._positions()
        row, col = self.dims
        p = self.packed_dim
        return lmath.as_operand(matrix, "pack").isel({row: constant(rows, dims=(p,)), col: constant(cols, dims=(p,))})

    def _gather(self, packed):
        """The packed value at each matrix position (0 where the layout has none) and the mask of those positions."""
        rows, cols = self._positions()
        table = np.zeros((self.n, self.n), dtype=np.int64)
        mask = np.zeros((self.n, self.n), dtype=bool)
        table[rows, cols], mask[rows, cols] = np.arange(len(rows)), True
        if self.layout == "triu":  # a correlation is symmetric: the lower triangle mirrors the upper
            table[cols, rows], mask[cols, rows] = np.arange(len(rows)), True
        values = lmath.as_operand(packed, "unpack").isel({self.packed_dim: constant(table, dims=self.dims)})
        values = lmath.where(constant(mask, dims=self.dims), values, 0.0)
        return values.transpose(*[d for d in values.dims if d not in self.dims], *self.dims)

    def _matrix(self, x):
        """The value as a matrix on the matrix dims (unpacked if packed)."""
        x = lmath.as_operand(x, "logp")
        if self.packed_dim is not None:
            if self.packed_dim not in x.dims:
                raise DimError(f"{self.what}: the packed value must be on {self.packed_dim.name!r}, got dims {x.dims}")
            return self.unpack(x)
        missing = [d.name for d in self.dims if d not in x.dims]
        if missing:
            raise DimError(
                f"{self.what}: the value must be on the matrix dims {fmt_dims(self.dims)}, got dims {x.dims}"
            )
        return x

    def _diagonal_mask(self):
        row, col = self.dims
        return arange(row) == arange(col)

    def _lower(self, x, strict=False):
        """`x` with the entries above (and with `strict` on) the diagonal set to 0."""
        row, col = self.dims
        keep = (arange(col) < arange(row)) if strict else (arange(col) <= arange(row))
        return lmath.where(keep, x, 0.0)

    def _onion(self, state, dims, eta):
        """`(next state, the Cholesky factor of an LKJ(eta) correlation)` on `dims` then (row, col), by the onion method:
        row k of the factor is sqrt(y) u on the first k columns and sqrt(1 - y) on the diagonal, with
        y ~ Beta(k / 2, eta + (n - 1 - k) / 2) and u uniform on the unit sphere."""
        row, col = self.dims
        k = lmath.astype(arange(row), "float64")
        first = k == 0
        beta = Beta(lmath.where(first, 1.0, k / 2), eta + (self.n - 1 - k) / 2)
        state, y = draw_on(beta, state, (*dims, row))
        y = lmath.where(first, 0.0, y)
        state, z = primitive_draw("normal", state, dims=(*dims, row, col))
        z = self._lower(z, strict=True)
        norm = lmath.sqrt((z * z).sum(col))
        direction = z / lmath.where(first, 1.0, norm)
        chol = lmath.sqrt(y) * direction + lmath.where(self._diagonal_mask(), lmath.sqrt(1 - y), 0.0)
        return state, chol.transpose(*dims, row, col)

    def _corr_from_chol(self, chol):
        """L L^T on the matrix dims."""
        row, col = self.dims
        inner = Dim(f"_{row.name}_{col.name}_inner", size=self.n)
        left = chol.rename({col: inner})
        right = chol.rename({col: inner}).rename({row: col})
        return (left * right).sum(inner).transpose(*[d for d in chol.dims if d not in self.dims], row, col)

    def draw(self, state, extra_dims=()):
        what = f"{self.what} draw"
        dims = draw_dims(list(self.params.values()), extra_dims, what)
        state, value = self._draw_matrix(state, dims)
        value = _invalid_draws(value, self.valid())
        if self.packed_dim is not None:
            return state, self.pack(value).transpose(*dims, self.packed_dim)
        return state, value.transpose(*dims, *self.dims)


@register("lkj_corr")
class LKJCorr(_LKJ):
    """Correlation matrices on `dims=(row, col)` with density proportional to det(C)^(eta - 1) (PyMC's `LKJCorr`).

    Outside the support (not positive definite, or a diagonal that is not 1): -inf.
    The log density reads the lower triangle (as a Cholesky factorization does).

    >>> import dimgraph as dg, numpy as np
    >>> i, j = dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> c = dg.constant(np.array([[1.0, 0.5], [0.5, 1.0]]), dims=(i, j))
    >>> round(float(dg.dist.lkj_corr(2.0, dims=(i, j)).logp(c).eval(backend="python")), 6)  # log(3/4 (1 - 0.25))
    -0.575364
    """

    layout, what = "triu", "lkj_corr"

    @property
    def support(self):
        return constraints.corr_matrix(self.dims)

    def unpack(self, packed):
        """The symmetric matrix with unit diagonal whose upper triangle is `packed` (PyMC's order)."""
        return self._gather(packed) + lmath.where(self._diagonal_mask(), 1.0, 0.0)

    def logp(self, x, check="nan"):
        _check_option(check)
        x = self._matrix(x)
        row, col = self.dims
        unit = (lmath.elemwise("abs", linalg.diagonal(x, dims=self.dims) - 1) <= 1e-12).all(row)
        diag = linalg.diagonal(linalg.cholesky(x, dims=self.dims), dims=self.dims)
        log_det = 2 * lmath.log(diag).sum(row)
        inside = unit & lmath.isfinite(log_det)
        eta = self.params["eta"]
        density = lmath.where(inside, (eta - 1) * lmath.where(inside, log_det, 0.0), -np.inf)
        return _invalid_to_nan(density + lkj_log_normalizer(eta, self.n), self.valid(), check, "lkj_corr")

    def _draw_matrix(self, state, dims):
        state, chol = self._onion(state, dims, self.params["eta"])
        return state, self._corr_from_chol(chol)


@register("lkj_cholesky_corr")
class LKJCholeskyCorr(_LKJ):
    """Lower Cholesky factors L of LKJ(eta) correlation matrices L L^T on `dims=(row, col)` (numpyro's `LKJCholesky`).

    The density of L is the LKJ density of L L^T times the Jacobian of L -> L L^T:
    normalizer + sum over rows k of (2 eta - 3 + n - k) log L[k, k]. Entries above the
    diagonal are not read; rows that are not unit vectors or a non-positive diagonal: -inf.

    >>> import dimgraph as dg, numpy as np
    >>> i, j = dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> L = dg.constant(np.array([[1.0, 0.0], [0.6, 0.8]]), dims=(i, j))
    >>> round(float(dg.dist.lkj_cholesky_corr(1.0, dims=(i, j)).logp(L).eval(backend="python")), 6)  # uniform L[1, 0] on (-1, 1)
    -0.693147
    """

    layout, what = "tril", "lkj_cholesky_corr"

    @property
    def support(self):
        return constraints.corr_cholesky(self.dims)

    def unpack(self, packed):
        """The factor whose strictly lower triangle is `packed`; the diagonal makes each row a unit vector."""
        below = self._gather(packed)
        col = self.dims[1]
        diag = lmath.sqrt(1 - (below * below).sum(col))
        return below + lmath.where(self._diagonal_mask(), diag, 0.0)

    def logp(self, x, check="nan"):
        _check_option(check)
        row, col = self.dims
        chol = self._lower(self._matrix(x))
        diag = linalg.diagonal(chol, dims=self.dims)
        unit = (lmath.elemwise("abs", (chol * chol).sum(col) - 1) <= 1e-12).all(row)
        inside = unit & (diag > 0).all(row)
        eta = self.params["eta"]
        k = lmath.astype(arange(row), "float64")
        terms = ((2 * eta - 3 + self.n - k) * lmath.log(lmath.where(inside, diag, 1.0))).sum(row)
        density = lmath.where(inside, terms, -np.inf) + lkj_log_normalizer(eta, self.n)
        return _invalid_to_nan(density, self.valid(), check, "lkj_cholesky_corr")

    def _draw_matrix(self, state, dims):
        return self._onion(state, dims, self.params["eta"])


@register("lkj_cholesky_cov")
class LKJCholeskyCov(_LKJ):
    """Lower Cholesky factors of covariance matrices diag(s) C diag(s) with C ~ LKJ(eta) and each s ~ `sd_dist`
    (PyMC's `LKJCholeskyCov`: the same density, the packed form is PyMC's value).

    `sd_dist` is a univariate `dg.dist` distribution (its parameters may be on row). The
    standard deviations are the row norms of the factor (`stds`), the correlations its
    normalized product (`corr`). Entries above the diagonal are not read; a non-positive
    diagonal: -inf.

    >>> import dimgraph as dg, numpy as np
    >>> i, j = dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> cov = dg.dist.lkj_cholesky_cov(2.0, dg.dist.halfnormal(1.0), dims=(i, j))
    >>> L = dg.constant(np.array([[1.0, 0.0], [0.3, 0.4]]), dims=(i, j))
    >>> cov.stds(L).eval(backend="python").values.tolist()
    [1.0, 0.5]
    """

    layout, what = "tril_diag", "lkj_cholesky_cov"

    @property
    def support(self):
        return constraints.cov_cholesky(self.dims, self.packed_dim)

    def __init__(self, eta, sd_dist, dims=None, packed=False):
        if not isinstance(sd_dist, Distribution):
            raise TypeError(f"lkj_cholesky_cov: sd_dist must be a univariate dg.dist distribution, got {sd_dist!r}")
        super().__init__(eta, dims, packed)
        col = self.dims[1]
        for name, p in sd_dist.params.items():
            if col in p.dims:
                raise DimError(f"lkj_cholesky_cov: sd_dist's {name!r} must not be on the column dim {col.name!r}")
        self.sd_dist = sd_dist

    def valid(self, **_):
        """eta > 0 and `sd_dist`'s parameters valid on every row."""
        sd_ok = self.sd_dist.valid(**self.sd_dist.params)
        row = self.dims[0]
        if sd_ok is not None and row in sd_ok.dims:
            sd_ok = sd_ok.all(row)
        return super().valid() if sd_ok is None else super().valid() & sd_ok

    def unpack(self, packed):
        """The lower triangular factor whose lower triangle with the diagonal is `packed` (PyMC's order)."""
        return self._gather(packed)

    def stds(self, chol):
        """The standard deviations, on row: the row norms of the factor."""
        chol = self._lower(self._matrix(chol))
        return lmath.sqrt((chol * chol).sum(self.dims[1]))

    def corr(self, chol):
        """The correlation matrix of the factor, on (row, col)."""
        chol = self._lower(self._matrix(chol))
        s = lmath.sqrt((chol * chol).sum(self.dims[1]))
        return self._corr_from_chol(chol / s)

    def logp(self, x, check="nan"):
        _check_option(check)
        row, col = self.dims
        chol = self._lower(self._matrix(x))
        diag = linalg.diagonal(chol, dims=self.dims)
        inside = (diag > 0).all(row)
        std = lmath.sqrt((chol * chol).sum(col))
        log_corr_diag = lmath.log(lmath.where(inside, diag, 1.0)) - lmath.log(lmath.where(inside, std, 1.0))
        eta = self.params["eta"]
        k = lmath.astype(arange(row), "float64")
        terms = ((2 * eta - 3 + self.n - k) * log_corr_diag).sum(row)  # LKJ on the correlation's factor
        terms = terms + (log_corr_diag - k * lmath.log(lmath.where(inside, std, 1.0))).sum(row)  # Jacobian to L
        terms = terms + self.sd_dist.logp(lmath.where(inside, std, 1.0)).sum(row)
        density = lmath.where(inside, terms, -np.inf) + lkj_log_normalizer(eta, self.n)
        return _invalid_to_nan(density, self.valid(), check, "lkj_cholesky_cov")

    def draw(self, state, extra_dims=()):
        dims = draw_dims(list(self.params.values()), extra_dims, "lkj_cholesky_cov draw")
        row = self.dims[0]
        dims = dims + tuple(d for d in param_dims(self.sd_dist) if d not in dims and d != row)
        state, sd = draw_on(self.sd_dist, state, (*dims, row))
        state, chol = self._onion(state, dims, self.params["eta"])
        value = _invalid_draws(chol * sd, self.valid()).transpose(*dims, *self.dims)
        if self.packed_dim is not None:
            return state, self.pack(value).transpose(*dims, self.packed_dim)
        return state, value


@register("zerosum_normal")
class ZeroSumNormal(Distribution):
    """Normals with scale `sigma` constrained to sum to zero over `dims` (PyMC's `ZeroSumNormal`).

    The density is the normal one on the subspace: sum of -(x / sigma)^2 / 2 minus
    prod(n_d - 1) (log(2 pi) / 2 + log sigma); -inf off it. `sigma` must not be on `dims`.

    >>> import dimgraph as dg, numpy as np
    >>> g = dg.Dim("g", size=3)
    >>> x = dg.constant(np.array([1.0, -0.5, -0.5]), dims=(g,))
    >>> round(float(dg.dist.zerosum_normal(1.0, dims=(g,)).logp(x).eval(backend="python")), 6)
    -2.587877
    """

    names, defaults = ("sigma",), {"sigma": 1.0}
    positive = ("sigma",)

    @property
    def support(self):
        return constraints.zero_sum(self.dims)

    def __init__(self, sigma=1.0, dims=None):
        super().__init__(sigma)
        dims = as_dim_tuple(dims, "zerosum_normal") if dims is not None else ()
        if not dims:
            raise TypeError("zerosum_normal: give the dims to sum to zero over as dims=(...)")
        if any(d.size is None for d in dims):
            raise DimError(f"zerosum_normal: the zero-sum dims need static sizes, got {fmt_dims(dims)}")
        if set(dims) & set(self.params["sigma"].dims):
            raise DimError(
                f"zerosum_normal: sigma must not be on the zero-sum dims {fmt_dims(dims)}, got {self.params['sigma'].dims}"
            )
        self.dims = dims

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        missing = [d.name for d in self.dims if d not in x.dims]
        if missing:
            raise DimError(
                f"zerosum_normal: the value must be on the zero-sum dims {fmt_dims(self.dims)}, got dims {x.dims}"
            )
        sigma = self.params["sigma"]
        free = math.prod(d.size - 1 for d in self.dims)
        z = x / sigma
        density = (-0.5 * z * z).sum(list(self.dims)) - free * (_HALF_LOG_2PI + lmath.log(sigma))
        scale = 1 + lmath.elemwise("abs", x).max(list(self.dims))
        zero = None
        for d in self.dims:
            rest = [e for e in self.dims if e != d]
            ok = lmath.elemwise("abs", x.mean(d)) <= 1e-9 * scale
            ok = ok.all(rest) if rest else ok
            zero = ok if zero is None else zero & ok
        return _invalid_to_nan(lmath.where(zero, density, -np.inf), self.valid(**self.params), check, "zerosum_normal")

    def draw(self, state, extra_dims=()):
        sigma = self.params["sigma"]
        dims = draw_dims([sigma], extra_dims, "zerosum_normal draw") + self.dims
        state, z = primitive_draw("normal", state, dims=dims)
        for d in self.dims:
            z = z - z.mean(d)
        return state, _invalid_draws((z * sigma).transpose(*dims), self.valid(**self.params))


# --- the matrix of a multivariate location-scale family
def scale_factor(what, given, dims):
    """`(dims, lower Cholesky factor of the scale matrix)` from exactly one of {"cov": ..., "tau": ..., "chol": ...}
    (the name of the first is the family's: `cov` for the normal, `scale` for the Student-t); `tau` is a precision."""
    present = {k: v for k, v in given.items() if v is not None}
    if len(present) != 1:
        raise TypeError(f"{what}: give exactly one of {', '.join(f'{k}=' for k in given)}")
    ((kind, matrix),) = present.items()
    (matrix,) = labeled_params({kind: matrix}, what)
    dims = linalg._core_dims(what, matrix, dims)
    if kind == "chol":
        return dims, matrix
    if kind == "tau":
        matrix = linalg.inv(matrix, dims=dims)
    return dims, linalg.cholesky(matrix, dims=dims)


def _on_row(what, mu, row):
    if row not in mu.dims and mu.type.ndim:
        raise TypeError(f"{what}: mu must be on the row dim {row.name!r} (or a number), got dims {fmt_dims(mu.dims)}")


def _positive_diagonal(chol, dims):
    return (linalg.diagonal(chol, dims=dims) > 0).all(dims[0])


def _quadratic(chol, d, dims):
    """(sum of z^2 with L z = d, sum of log diag L): the Mahalanobis term and half the log determinant."""
    z = linalg.solve_triangular(chol, d, dims=dims)
    return (z * z).sum(dims[1]), lmath.log(linalg.diagonal(chol, dims=dims)).sum(dims[0])


@register("mv_student_t")
class MvStudentT(Distribution):
    """Vectors on `dims[0]` with `nu` degrees of freedom, location `mu` and scale matrix `scale` (or its
    precision `tau`, or its lower Cholesky factor `chol`) on `dims=(row, col)` (PyMC's `MvStudentT`).

    >>> import dimgraph as dg, numpy as np
    >>> i, j = dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> t = dg.dist.mv_student_t(3.0, 0.0, scale=dg.constant(np.eye(2), dims=(i, j)), dims=(i, j))
    >>> round(float(t.logp(dg.constant(np.array([1.0, -1.0]), dims=(i,))).eval(backend="python")), 6)  # scipy: -3.114941
    -3.114941
    """

    names = ("nu", "mu", "chol")
    support = constraints.real

    def __init__(self, nu, mu=0.0, scale=None, tau=None, chol=None, dims=None):
        self.dims, chol = scale_factor("mv_student_t", {"scale": scale, "tau": tau, "chol": chol}, dims)
        nu, mu = labeled_params({"nu": nu, "mu": mu}, "mv_student_t")
        _on_row("mv_student_t", mu, self.dims[0])
        if set(nu.dims) & set(self.dims):
            raise DimError(f"mv_student_t: nu must not be on the matrix dims {fmt_dims(self.dims)}")
        self.params = {"nu": nu, "mu": mu, "chol": chol}

    def valid(self, nu, mu, chol):
        return (nu > 0) & _positive_diagonal(chol, self.dims)

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        nu, mu, chol = self.params["nu"], self.params["mu"], self.params["chol"]
        k = self.dims[0].size
        quad, half_logdet = _quadratic(chol, x - mu, self.dims)
        norm = lmath.gammaln(0.5 * (nu + k)) - lmath.gammaln(0.5 * nu) - 0.5 * k * (lmath.log(nu) + _LOG_PI)
        density = norm - half_logdet - 0.5 * (nu + k) * lmath.log1p(quad / nu)
        return _invalid_to_nan(density, self.valid(**self.params), check, "mv_student_t")

    def sample(self, state, dims, nu, mu, chol):
        row, col = self.dims
        state, z = primitive_draw("normal", state, dims=tuple(d for d in dims if d != row))
        state, g = primitive_draw("gamma", state, 0.5 * nu, dims=tuple(d for d in dims if d not in self.dims))
        return state, (chol * z).sum(col) / lmath.sqrt(2 * g / nu) + mu

    def _out_dims(self, dims):
        return tuple(d for d in dims if d != self.dims[1])


class _Counts(Distribution):
    """Counts over the categories `dim` summing to `n`: the multinomial family."""

    support = constraints.nonnegative_integer

    def __init__(self, n, weights, dim=None):
        what = type(self).__name__.lower()
        n, weights = labeled_params({"n": n, self.names[1]: weights}, what)
        if dim is None:
            raise TypeError(
                f"{what}: give the categories' dim of {self.names[1]!r} as dim= (one of {fmt_dims(weights.dims)})"
            )
        (self.dim,) = resolve_dims(weights.dims, [dim], what)
        if self.dim in n.dims:
            raise DimError(f"{what}: n must not be on the categories' dim {self.dim.name!r}")
        if self.dim.size is None:
            raise DimError(f"{what}: the categories' dim {self.dim.name!r} needs a static size")
        self.params = {"n": n, self.names[1]: weights}

    def _inside(self, x, n):
        return (_is_count(x) & lmath.isfinite(lmath.astype(x, "float64"))).all(self.dim) & (x.sum(self.dim) == n)

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        if self.dim not in x.dims:
            raise DimError(
                f"{type(self).__name__.lower()}: the value must be on the categories' dim {self.dim.name!r}, got dims {fmt_dims(x.dims)}"
            )
        n = lmath.astype(self.params["n"], "float64")
        inside = self._inside(x, n)
        safe = lmath.where(inside, lmath.astype(x, "float64"), 0.0)
        density = lmath.where(inside, self.log_pmf(safe, lmath.where(inside, n, 0.0)), -np.inf)
        return _invalid_to_nan(density, self.valid(**self.params), check, type(self).__name__.lower())

    def _multinomial_log_pmf(self, x, n, log_p):
        """log n! + sum over dim of x log p - log x! (0 log 0 = 0: a category of probability 0 may count 0)."""
        terms = lmath.where(x == 0, 0.0, x * lmath.where(x == 0, 0.0, log_p))
        return lmath.gammaln(n + 1) + (terms - lmath.gammaln(x + 1)).sum(self.dim)

    def _multinomial(self, state, dims, n, p):
        """Counts by sequential binomials: category k takes Binomial(n left, p_k / mass left)."""
        pos = arange(self.dim)
        left, mass = lmath.astype(n, "int64") + 0 * lmath.astype(p.sum(self.dim), "int64"), 1.0 + 0.0 * p.sum(self.dim)
        counts = None
        batch = tuple(d for d in dims if d != self.dim)
        for k in range(self.dim.size):
            p_k = p.isel({self.dim.name: k})
            if k < self.dim.size - 1:
                share = lmath.clip(p_k / lmath.where(mass > 0, mass, 1.0), 0.0, 1.0)
                state, c = primitive_draw("binomial", state, left, share, dims=batch)
            else:
                c = left + 0 * lmath.astype(p_k, "int64")
            counts = lmath.where(pos == k, c, 0 if counts is None else counts)
            left, mass = left - c, mass - p_k
        return state, counts


@register("multinomial")
class Multinomial(_Counts):
    """Counts over `dim` of `n` draws with probabilities `p` on `dim` (normalized over it, as `categorical`;
    PyMC's `Multinomial`).

    >>> import dimgraph as dg, numpy as np
    >>> k = dg.Dim("k", size=3)
    >>> m = dg.dist.multinomial(4, dg.constant(np.array([0.2, 0.3, 0.5]), dims=(k,)), dim=k)
    >>> round(float(m.logp(dg.constant(np.array([1, 1, 2]), dims=(k,))).eval(backend="python")), 6)  # scipy: log 0.18
    -1.714798
    """

    names = ("n", "p")

    def __init__(self, n, p, dim=None):
        super().__init__(n, p, dim)

    def valid(self, n, p):
        return (p >= 0).all(self.dim) & (p.sum(self.dim) > 0) & _is_count(n)

    def log_pmf(self, x, n):
        p = self.params["p"]
        return self._multinomial_log_pmf(x, n, lmath.log(p) - lmath.log(p.sum(self.dim)))

    def sample(self, state, dims, n, p):
        return self._multinomial(state, dims, n, p / p.sum(self.dim))


@register("dirichlet_multinomial")
class DirichletMultinomial(_Counts):
    """Counts over `dim` of `n` draws with probabilities drawn from Dirichlet(`a`) (PyMC's `DirichletMultinomial`).

    >>> import dimgraph as dg, numpy as np
    >>> k = dg.Dim("k", size=2)
    >>> dm = dg.dist.dirichlet_multinomial(2, dg.constant(np.array([1.0, 1.0]), dims=(k,)), dim=k)
    >>> round(float(dm.logp(dg.constant(np.array([1, 1]), dims=(k,))).eval(backend="python")), 6)  # uniform on 3 outcomes
    -1.098612
    """

    names = ("n", "a")

    def __init__(self, n, a, dim=None):
        super().__init__(n, a, dim)

    def valid(self, n, a):
        return (a > 0).all(self.dim) & _is_count(n)

    def log_pmf(self, x, n):
        a = self.params["a"]
        total = a.sum(self.dim)
        norm = lmath.gammaln(n + 1) + lmath.gammaln(total) - lmath.gammaln(n + total)
        return norm + (lmath.gammaln(x + a) - lmath.gammaln(a) - lmath.gammaln(x + 1)).sum(self.dim)

    def sample(self, state, dims, n, a):
        state, lg = _loggamma(state, a, dims)
        return self._multinomial(state, dims, n, softmax(lg, self.dim))


@register("ordered_multinomial")
class OrderedMultinomial(_Counts):
    """Counts over the K categories `dim` of `n` ordinal outcomes, each `eta` plus logistic noise cut at the
    K - 1 increasing `cutpoints` on `cut_dim`, as `ordered_logistic` (PyMC's `OrderedMultinomial(eta, cutpoints,
    n)`). `dim` is a Dim of size K, or a name for one.

    >>> import dimgraph as dg, numpy as np
    >>> cut = dg.Dim("cut", size=2)
    >>> d = dg.dist.ordered_multinomial(0.5, dg.constant(np.array([-1.0, 1.0]), dims=(cut,)), 4, dim="k", cut_dim=cut)
    >>> round(float(d.logp(dg.constant(np.array([1, 2, 1]), dims=(d.dim,))).eval(backend="python")), 6)
    -1.832391
    """

    names = ("eta", "cutpoints", "n")

    def __init__(self, eta, cutpoints, n, dim=None, cut_dim=None):
        what = "ordered_multinomial"
        eta, cutpoints, n = labeled_params({"eta": eta, "cutpoints": cutpoints, "n": n}, what)
        if cut_dim is None:
            raise TypeError(f"{what}: give the cutpoints' dim as cut_dim= (one of {fmt_dims(cutpoints.dims)})")
        self.ordinal = OrderedLogistic(eta, cutpoints, dim=cut_dim)
        size = self.ordinal.dim.size + 1
        if dim is None:
            raise TypeError(f"{what}: give the categories' dim as dim= (a Dim of size {size}, or a name for one)")
        category = Dim(dim, size=size) if isinstance(dim, str) else dim
        if not isinstance(category, Dim) or category.size != size:
            raise DimError(
                f"{what}: {self.ordinal.dim.size} cutpoints make {size} categories, so dim= must be a Dim of "
                f"size {size} or a name; got {dim!r}"
            )
        if any(category in v.dims for v in (eta, cutpoints, n)):
            raise DimError(f"{what}: eta, cutpoints and n must not be on the categories' dim {category.name!r}")
        self.log_p = self.ordinal.logp(arange(category))  # log P(category k) on (dim, eta's dims)
        super().__init__(n, lmath.exp(self.log_p), category)
        self.params = {"eta": eta, "cutpoints": cutpoints, "n": n}

    def valid(self, eta, cutpoints, n):
        increasing = self.ordinal.valid(eta, cutpoints)
        return _is_count(n) if increasing is None else increasing & _is_count(n)

    def log_pmf(self, x, n):
        return self._multinomial_log_pmf(x, n, self.log_p)

    def _out_dims(self, dims):
        return tuple(self.dim if d == self.ordinal.dim else d for d in dims)

    def sample(self, state, dims, eta, cutpoints, n):
        return self._multinomial(state, self._out_dims(dims), n, lmath.exp(self.log_p))


@register("stick_breaking_weights")
class StickBreakingWeights(Distribution):
    """The K + 1 weights on `dim` of K sticks broken off a unit stick, each a Beta(1, `alpha`) share of what is
    left, the last weight the rest (PyMC's `StickBreakingWeights(alpha, K)`, K = dim's size - 1).

    >>> import dimgraph as dg, numpy as np
    >>> k = dg.Dim("k", size=3)
    >>> w = dg.constant(np.array([0.5, 0.25, 0.25]), dims=(k,))
    >>> round(float(dg.dist.stick_breaking_weights(1.0, dim=k).logp(w).eval(backend="python")), 6)  # log 2
    0.693147
    """

    names = ("alpha",)
    positive = ("alpha",)

    @property
    def support(self):
        return constraints.simplex(self.dim)

    def __init__(self, alpha, dim=None):
        super().__init__(alpha)
        if not isinstance(dim, Dim) or dim.size is None or dim.size < 2:
            raise TypeError(
                f"stick_breaking_weights: give the weights' dim as dim=, a Dim of static size K + 1 >= 2, got {dim!r}"
            )
        if dim in self.params["alpha"].dims:
            raise DimError(f"stick_breaking_weights: alpha must not be on the weights' dim {dim.name!r}")
        self.dim = dim

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        if self.dim not in x.dims:
            raise DimError(
                f"stick_breaking_weights: the value must be on {self.dim.name!r}, got dims {fmt_dims(x.dims)}"
            )
        alpha, k, dim = self.params["alpha"], self.dim.size - 1, self.dim
        inside = ((x > 0) & (x < 1)).all(dim) & (lmath.elemwise("abs", x.sum(dim) - 1) <= 1e-9)
        safe = lmath.where(inside, x, 1.0 / (k + 1))
        backwards = constant(np.arange(k, -1, -1), dims=(dim,))
        tails = safe.isel({dim.name: backwards}).cumsum(dim)  # sum_(j >= k) x_j, read from the last weight
        last = safe.isel({dim.name: k})
        density = -lmath.log(tails).sum(dim) + k * lmath.log(alpha) + alpha * lmath.log(last)
        return _invalid_to_nan(
            lmath.where(inside, density, -np.inf), self.valid(alpha=alpha), check, "stick_breaking_weights"
        )

    def sample(self, state, dims, alpha):
        dim, k = self.dim, self.dim.size - 1
        # log of a Beta(1, alpha) share and of what it leaves: v = 1 - U^(1 / alpha)
        state, u = primitive_draw("uniform", state, dims=(*dims, dim))
        log_rest = lmath.log1p(-u) / alpha  # log(1 - v), U uniform on [0, 1): 1 - U in (0, 1]
        log_v = lmath.log(-lmath.expm1(log_rest))
        pos = arange(dim)
        log_rest = lmath.where(pos < k, log_rest, 0.0)
        before = log_rest.cumsum(dim) - log_rest  # log of the stick left before break k
        return state, lmath.exp(before + lmath.where(pos < k, log_v, 0.0))

    def _out_dims(self, dims):
        return (*dims, self.dim)


def _adjacency(W, dim, what):
    """The adjacency matrix as a NumPy array (data: the graph is fixed), checked against `dim`."""
    if isinstance(W, Variable):
        if not hasattr(W, "data"):
            raise TypeError(
                f"{what}: W must be data (a NumPy array, a DataArray or a constant): the graph is fixed, got {W!r}"
            )
        W = W.data
    W = np.asarray(W.values if is_dataarray(W) else W, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"{what}: W must be a square matrix, got shape {W.shape}")
    if not np.allclose(W, W.T):
        raise ValueError(f"{what}: W must be symmetric")
    if not isinstance(dim, Dim):
        raise TypeError(f"{what}: give the nodes' dim as dim=, a Dim, got {dim!r}")
    if dim.size != W.shape[0]:
        raise DimError(f"{what}: W is {W.shape[0]} x {W.shape[0]} but the nodes' dim {dim.name!r} has size {dim.size}")
    return W


class _Graph:
    """The edges of an adjacency matrix (its lower triangle) as index constants on an `edge` dim."""

    def __init__(self, W, dim):
        rows, cols = np.nonzero(np.tril(W, -1))
        self.edge = Dim(f"{dim.name}__edge", size=len(rows))
        self.first = constant(rows.astype(np.int64), dims=(self.edge,))
        self.second = constant(cols.astype(np.int64), dims=(self.edge,))
        self.weight = constant(W[rows, cols], dims=(self.edge,))
        self.dim = dim

    def ends(self, x):
        return x.isel({self.dim.name: self.first}), x.isel({self.dim.name: self.second})


def _on_nodes(x, dim, what):
    x = lmath.as_operand(x, "logp")
    if dim not in x.dims:
        raise DimError(f"{what}: the value must be on the nodes' dim {dim.name!r}, got dims {fmt_dims(x.dims)}")
    return x


@register("car")
class CAR(Distribution):
    """A conditional autoregression on the graph `W` over the nodes' `dim` (PyMC's `CAR`): normal with mean `mu`
    and precision tau (D - alpha W), D the diagonal of W's row sums.

    `W` is data (a symmetric matrix of non-negative weights, every node with a neighbor); the log
    density is the multivariate normal's (PyMC's omits the constant (sum log D - n log 2 pi) / 2).

    >>> import dimgraph as dg, numpy as np
    >>> node = dg.Dim("node", size=2)
    >>> car = dg.dist.car(0.0, np.array([[0, 1], [1, 0]]), 0.5, 1.0, dim=node)
    >>> round(float(car.logp(dg.constant(np.zeros(2), dims=(node,))).eval(backend="python")), 6)  # scipy: multivariate_normal(0, inv(Q))
    -1.981718
    """

    names = ("mu", "alpha", "tau")
    support = constraints.real

    def __init__(self, mu, W, alpha, tau, dim=None):
        super().__init__(mu, alpha, tau)
        self.W = _adjacency(W, dim, "car")
        self.dim = dim
        degree = self.W.sum(axis=1)
        if (degree <= 0).any():
            raise ValueError(
                f"car: every node needs a neighbor; node(s) {np.flatnonzero(degree <= 0).tolist()} have none in W"
            )
        for name in ("alpha", "tau"):
            if dim in self.params[name].dims:
                raise DimError(f"car: {name} must not be on the nodes' dim {dim.name!r}")
        self.graph = _Graph(self.W, dim)
        scaled = self.W / np.sqrt(np.outer(degree, degree))
        self._eig = Dim(f"{dim.name}__eig", size=dim.size)
        self._lam = constant(np.linalg.eigvalsh(scaled), dims=(self._eig,))
        self._degree = constant(degree, dims=(dim,))
        self._log_degree = float(np.log(degree).sum())

    def valid(self, mu, alpha, tau):
        return (alpha > -1) & (alpha < 1) & (tau > 0)

    def logp(self, x, check="nan"):
        _check_option(check)
        x = _on_nodes(x, self.dim, "car")
        mu, alpha, tau = (self.params[k] for k in self.names)
        z = x - mu
        a, b = self.graph.ends(z)
        quad = (self._degree * z * z).sum(self.dim) - 2 * alpha * (self.graph.weight * a * b).sum(self.graph.edge)
        n = self.dim.size
        logdet = n * lmath.log(tau) + self._log_degree + lmath.log1p(-alpha * self._lam).sum(self._eig)
        density = 0.5 * (logdet - n * _LOG_2PI) - 0.5 * tau * quad
        return _invalid_to_nan(density, self.valid(mu, alpha, tau), check, "car")

    def sample(self, state, dims, mu, alpha, tau):
        other = Dim(f"{self.dim.name}__col", size=self.dim.size)
        matrix = (self.dim, other)
        D = constant(np.diag(self.W.sum(axis=1)), dims=matrix)
        precision = tau * (D - alpha * constant(self.W, dims=matrix))
        chol = linalg.cholesky(precision, dims=matrix)
        state, z = primitive_draw("normal", state, dims=tuple(other if d == self.dim else d for d in dims))
        return state, linalg.solve_triangular(chol, z, dims=matrix, trans=True) + mu  # L^T x = z: covariance Q^-1

    def draw(self, state, extra_dims=()):
        dims = draw_dims(list(self.params.values()), extra_dims, "car draw")
        dims = dims + (() if self.dim in dims else (self.dim,))
        state, value = self.sample(state, dims, **self.params)
        return state, _invalid_draws(value, self.valid(**self.params)).transpose(*dims)


def _components(W):
    """The number of connected components of the graph W."""
    n = W.shape[0]
    seen, count = np.zeros(n, dtype=bool), 0
    for start in range(n):
        if seen[start]:
            continue
        count += 1
        stack = [start]
        seen[start] = True
        while stack:
            i = stack.pop()
            for j in np.flatnonzero(W[i]):
                if not seen[j]:
                    seen[j] = True
                    stack.append(j)
    return count


@register("icar")
class ICAR(Distribution):
    """The intrinsic conditional autoregression on the graph `W` over `dim` (PyMC's `ICAR`): the density of
    -sum over edges of (x_i - x_j)^2 / (2 sigma^2), with the soft constraint sum(x) ~ N(0, zero_sum_stdev n).

    `W` is data: a symmetric 0/1 adjacency matrix. Where the graph is connected the density is a proper
    normal and normalized here: PyMC's log density plus -(n - 1) log sigma + (sum of log of the nonzero
    Laplacian eigenvalues + log n - (n - 1) log 2 pi) / 2, the terms PyMC omits (so a random sigma is
    not biased); with C > 1 components n - 1 becomes n - C, and the density is improper (no draws).

    >>> import dimgraph as dg, numpy as np
    >>> node = dg.Dim("node", size=2)
    >>> icar = dg.dist.icar(np.array([[0, 1], [1, 0]]), dim=node)
    >>> round(float(icar.logp(dg.constant(np.array([0.5, -0.5]), dims=(node,))).eval(backend="python")), 6)
    4.569878
    """

    names, defaults = ("sigma", "zero_sum_stdev"), {"sigma": 1.0, "zero_sum_stdev": 0.001}
    support = constraints.real
    positive = ("sigma", "zero_sum_stdev")

    def __init__(self, W, sigma=1.0, zero_sum_stdev=0.001, dim=None):
        super().__init__(sigma, zero_sum_stdev)
        self.W = _adjacency(W, dim, "icar")
        if not np.isin(self.W, (0.0, 1.0)).all():
            raise ValueError("icar: W must hold only 0s and 1s")
        self.dim = dim
        for name, v in self.params.items():
            if dim in v.dims:
                raise DimError(f"icar: {name} must not be on the nodes' dim {dim.name!r}")
        self.graph = _Graph(self.W, dim)
        n = dim.size
        self.components = _components(self.W)
        laplacian = np.diag(self.W.sum(axis=1)) - self.W
        lam, vectors = np.linalg.eigh(laplacian)
        free = np.argsort(lam)[self.components :]  # the Laplacian's null space: one direction per component
        self._rank = n - self.components
        self._constant = 0.5 * (np.log(lam[free]).sum() + math.log(n) - self._rank * _LOG_2PI)
        self._eig = Dim(f"{dim.name}__eig", size=self._rank)
        self._root = constant(vectors[:, free] / np.sqrt(lam[free]), dims=(dim, self._eig))  # L^+^(1/2)

    def logp(self, x, check="nan"):
        _check_option(check)
        x = _on_nodes(x, self.dim, "icar")
        sigma, s = self.params["sigma"], self.params["zero_sum_stdev"]
        n = self.dim.size
        a, b = self.graph.ends(x)
        d = a - b
        pairwise = -0.5 * (d * d).sum(self.graph.edge) / (sigma * sigma)
        total = x.sum(self.dim) / (s * n)
        zero_sum = -0.5 * total * total - 0.5 * _LOG_2PI - lmath.log(s * n)  # PyMC's soft constraint
        density = pairwise + zero_sum - self._rank * lmath.log(sigma) + self._constant
        return _invalid_to_nan(density, self.valid(**self.params), check, "icar")

    def draw(self, state, extra_dims=()):
        if self.components > 1:
            raise ValueError(
                f"icar: the graph has {self.components} connected components, so the density is improper along "
                f"{self.components - 1} directions (PyMC's too) and has no draws; connect the graph or model each component"
            )
        p = self.params
        dims = draw_dims(list(p.values()), extra_dims, "icar draw")
        state, z = primitive_draw("normal", state, dims=(*dims, self._eig))
        state, z0 = primitive_draw("normal", state, dims=dims)
        value = p["sigma"] * (self._root * z).sum(self._eig) + p["zero_sum_stdev"] * z0  # covariance Q^-1
        return state, _invalid_draws(value, self.valid(**p)).transpose(*dims, self.dim)


@register("kronecker_normal")
class KroneckerNormal(Distribution):
    """A multivariate normal on several named dims whose covariance is the Kronecker product of one matrix per
    dim, plus sigma^2 I where `sigma` is given (PyMC's `KroneckerNormal`).

    `covs` (or `chols`, their lower Cholesky factors) is a list of matrices, and `dims` the list of their
    (row, col) dims; the value is on every row dim. The log density solves factor by factor (with `sigma`:
    in the factors' eigenbases), never forming the product.

    >>> import dimgraph as dg, numpy as np
    >>> a, a2, b, b2 = dg.Dim("a", size=2), dg.Dim("a2", size=2), dg.Dim("b", size=2), dg.Dim("b2", size=2)
    >>> K = dg.dist.kronecker_normal(0.0, covs=[dg.constant(np.eye(2), dims=(a, a2)), dg.constant(np.eye(2), dims=(b, b2))],
    ...                             dims=[(a, a2), (b, b2)])
    >>> round(float(K.logp(dg.constant(np.zeros((2, 2)), dims=(a, b))).eval(backend="python")), 6)  # 4 standard normals
    -3.675754
    """

    support = constraints.real

    def __init__(self, mu=0.0, covs=None, chols=None, sigma=None, dims=None):
        what = type(self).__name__.lower()
        if (covs is None) == (chols is None):
            raise TypeError(f"{what}: give exactly one of covs= and chols=")
        matrices = list(covs if chols is None else chols)
        if dims is None or len(dims) != len(matrices) or not matrices:
            raise TypeError(
                f"{what}: give dims=[(row, col), ...], one pair per matrix ({len(matrices)} matrices), got {dims!r}"
            )
        given = {"mu": mu, **{f"matrix_{k}": m for k, m in enumerate(matrices)}}
        if sigma is not None:
            given["sigma"] = sigma
        values = labeled_params(given, what)
        mu, matrices = values[0], values[1 : 1 + len(matrices)]
        self.pairs = [linalg._core_dims(what, m, d) for m, d in zip(matrices, dims)]
        rows = [r for r, _ in self.pairs]
        if len(set(rows)) != len(rows):
            raise DimError(f"{what}: each matrix needs its own row dim, got {fmt_dims(rows)}")
        self.sigma = values[-1] if sigma is not None else None
        self.chols = [
            m if chols is not None else linalg.cholesky(m, dims=pair) for m, pair in zip(matrices, self.pairs)
        ]
        self.covs = None if covs is None else matrices
        self.params = {"mu": mu, **{f"chol_{k}": c for k, c in enumerate(self.chols)}}
        if self.sigma is not None:
            self.params["sigma"] = self.sigma

    def valid(self, **_):
        ok = None
        for chol, pair in zip(self.chols, self.pairs):
            c = _positive_diagonal(chol, pair)
            ok = c if ok is None else ok & c
        return ok if self.sigma is None else ok & (self.sigma > 0)

    def _rows(self):
        return [r for r, _ in self.pairs]

    def logp(self, x, check="nan"):
        _check_option(check)
        what = type(self).__name__.lower()
        x = lmath.as_operand(x, "logp")
        missing = [r.name for r in self._rows() if r not in x.dims]
        if missing:
            raise DimError(
                f"{what}: the value must be on the row dims {fmt_dims(self._rows())}, got dims {fmt_dims(x.dims)}"
            )
        d = x - self.params["mu"]
        sizes = [r.size for r in self._rows()]
        total = math.prod(sizes)
        if self.sigma is None:
            logdet = 0.0
            for chol, pair, n in zip(self.chols, self.pairs, sizes):
                d = linalg.solve_triangular(chol, d, dims=pair)  # now on col instead of row
                logdet = logdet + (2.0 * total / n) * lmath.log(linalg.diagonal(chol, dims=pair)).sum(pair[0])
            cols = [c for _, c in self.pairs]
            quad = (d * d).sum(cols)
        else:
            eigs = None
            for chol, pair in zip(self.chols, self.pairs):
                row, col = pair
                inner = Dim(f"_{row.name}_{col.name}_inner", size=row.size)
                cov = (chol.rename({col: inner}) * chol.rename({col: inner}).rename({row: col})).sum(inner)
                lam, vectors = linalg.eigh(cov.transpose(*[e for e in cov.dims if e not in pair], row, col), dims=pair)
                d = (vectors * d).sum(row)  # coordinates in the eigenbasis, on col
                eigs = lam if eigs is None else eigs * lam
            eigs = eigs + self.sigma * self.sigma
            cols = [c for _, c in self.pairs]
            quad = (d * d / eigs).sum(cols)
            logdet = lmath.log(eigs).sum(cols)
        density = -0.5 * (quad + logdet + total * _LOG_2PI)
        return _invalid_to_nan(density, self.valid(), check, what)

    def draw(self, state, extra_dims=()):
        what = type(self).__name__.lower()
        params = list(self.params.values())
        dims = draw_dims(params, extra_dims, f"{what} draw")
        batch = tuple(d for d in dims if d not in {e for pair in self.pairs for e in pair})
        state, z = primitive_draw("normal", state, dims=(*batch, *[c for _, c in self.pairs]))
        for chol, (row, col) in zip(self.chols, self.pairs):
            z = (chol * z).sum(col)  # L z along this factor: col -> row
        value = z + self.params["mu"]
        if self.sigma is not None:
            state, noise = primitive_draw("normal", state, dims=(*batch, *self._rows()))
            value = value + self.sigma * noise
        out = (*batch, *self._rows())
        return state, _invalid_draws(value, self.valid()).transpose(*out)


@register("matrix_normal")
class MatrixNormal(KroneckerNormal):
    """Matrices on (row, col) with mean `mu`, covariance `rowcov` among rows and `colcov` among columns
    (or their Cholesky factors `rowchol`, `colchol`; PyMC's `MatrixNormal`): vec(X) ~ N(vec(mu), colcov (x) rowcov).

    `rowdims=(row, row2)` are the dims of the row matrix, `coldims=(col, col2)` of the column one; the
    value is on (row, col).

    >>> import dimgraph as dg, numpy as np
    >>> r, r2, c, c2 = dg.Dim("r", size=2), dg.Dim("r2", size=2), dg.Dim("c", size=1), dg.Dim("c2", size=1)
    >>> mn = dg.dist.matrix_normal(0.0, rowcov=dg.constant(np.eye(2), dims=(r, r2)), colcov=dg.constant(np.eye(1), dims=(c, c2)),
    ...                            rowdims=(r, r2), coldims=(c, c2))
    >>> round(float(mn.logp(dg.constant(np.zeros((2, 1)), dims=(r, c))).eval(backend="python")), 6)
    -1.837877
    """

    def __init__(self, mu=0.0, rowcov=None, rowchol=None, colcov=None, colchol=None, rowdims=None, coldims=None):
        for side, cov, chol in (("row", rowcov, rowchol), ("col", colcov, colchol)):
            if (cov is None) == (chol is None):
                raise TypeError(f"matrixnormal: give exactly one of {side}cov= and {side}chol=")
        (mu,) = labeled_params({"mu": mu}, "matrixnormal")
        factors = []
        for cov, chol, dims in ((rowcov, rowchol, rowdims), (colcov, colchol, coldims)):
            (m,) = labeled_params({"cov": cov if chol is None else chol}, "matrixnormal")
            pair = linalg._core_dims("matrixnormal", m, dims)
            factors.append(m if chol is not None else linalg.cholesky(m, dims=pair))
        super().__init__(mu, chols=factors, dims=[rowdims, coldims])


def _log_multigamma(a, p):
    """log of the multivariate gamma function Gamma_p(a)."""
    out = 0.25 * p * (p - 1) * _LOG_PI
    for j in range(p):
        out = out + lmath.gammaln(a - 0.5 * j)
    return out


def _inner(dims):
    row, col = dims
    return Dim(f"_{row.name}_{col.name}_inner", size=row.size)


def _product(a, b, dims, transpose_b=False):
    """a @ b (or a @ b.T) for matrices on `dims=(row, col)`."""
    row, col = dims
    inner = _inner(dims)
    left = a.rename({col: inner})
    right = b.rename({col: inner}).rename({row: col}) if transpose_b else b.rename({row: inner})
    out = (left * right).sum(inner)
    return out.transpose(*[d for d in out.dims if d not in dims], row, col)


def _frobenius_of_solve(chol, b, dims):
    """||L^-1 B||_F^2 for a lower triangular L and a matrix B, both on `dims`."""
    row, col = dims
    inner = _inner(dims)
    z = linalg.solve_triangular(chol, b.rename({col: inner}), dims=dims)  # on (col, inner)
    return (z * z).sum([col, inner])


class _WishartFamily(Distribution):
    """Positive definite matrices on `dims=(row, col)` with `nu` degrees of freedom and a scale matrix `V`."""

    names = ("nu", "V")

    @property
    def support(self):
        return constraints.positive_definite(self.dims)

    def __init__(self, nu, V, dims=None):
        what = type(self).__name__.lower()
        nu, V = labeled_params({"nu": nu, "V": V}, what)
        self.dims = linalg._core_dims(what, V, dims)
        if set(nu.dims) & set(self.dims):
            raise DimError(f"{what}: nu must not be on the matrix dims {fmt_dims(self.dims)}")
        self.params = {"nu": nu, "V": V}
        self.chol_V = linalg.cholesky(V, dims=self.dims)

    def valid(self, nu, V):
        return (nu > self.dims[0].size - 1) & _positive_diagonal(self.chol_V, self.dims)

    def _matrix(self, x):
        x = lmath.as_operand(x, "logp")
        missing = [d.name for d in self.dims if d not in x.dims]
        if missing:
            raise DimError(
                f"{type(self).__name__.lower()}: the value must be on the matrix dims {fmt_dims(self.dims)}, got dims {fmt_dims(x.dims)}"
            )
        return x

    def _inside(self, x, chol_x):
        """Symmetric and positive definite (its Cholesky factor has a finite, positive diagonal)."""
        row, col = self.dims
        mirrored = x.rename({row: col, col: row})
        scale = 1 + lmath.elemwise("abs", x).max([row, col])
        symmetric = (lmath.elemwise("abs", x - mirrored) <= 1e-9 * scale).all([row, col])
        diag = linalg.diagonal(chol_x, dims=self.dims)
        return symmetric & (lmath.isfinite(diag) & (diag > 0)).all(row)

    def _bartlett(self, state, dims, chol):
        """`(next state, L A A^T L^T)`: a Wishart(nu, L L^T) draw by Bartlett's decomposition."""
        row, col = self.dims
        nu = self.params["nu"]
        k = lmath.astype(arange(row), "float64")
        batch = tuple(d for d in dims if d not in self.dims)
        state, g = primitive_draw("gamma", state, 0.5 * (nu - k), dims=(*batch, row))
        state, z = primitive_draw("normal", state, dims=(*batch, row, col))
        below = arange(col) < arange(row)
        diagonal = arange(col) == arange(row)
        A = lmath.where(below, z, 0.0) + lmath.where(diagonal, lmath.sqrt(2 * g), 0.0)
        M = _product(chol, A, self.dims)
        return state, _product(M, M, self.dims, transpose_b=True)

    def draw(self, state, extra_dims=()):
        dims = draw_dims(list(self.params.values()), extra_dims, f"{type(self).__name__.lower()} draw")
        state, value = self._draw_matrix(state, dims)
        batch = tuple(d for d in dims if d not in self.dims)
        return state, _invalid_draws(value, self.valid(**self.params)).transpose(*batch, *self.dims)


@register("wishart")
class Wishart(_WishartFamily):
    """Positive definite matrices on `dims=(row, col)`: the sum of `nu` outer products of N(0, V) vectors
    (PyMC's `Wishart`; scipy.stats.wishart(df=nu, scale=V)). Sampled on the unconstrained space of its
    Cholesky factor (`positive_definite`), which PyMC's is not.

    >>> import dimgraph as dg, numpy as np
    >>> i, j = dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> w = dg.dist.wishart(3.0, dg.constant(np.eye(2), dims=(i, j)), dims=(i, j))
    >>> round(float(w.logp(dg.constant(np.eye(2), dims=(i, j))).eval(backend="python")), 6)  # scipy.stats.wishart(3, I)
    -3.531024
    """

    def logp(self, x, check="nan"):
        _check_option(check)
        x = self._matrix(x)
        row = self.dims[0]
        nu, p = self.params["nu"], row.size
        chol_x = linalg.cholesky(x, dims=self.dims)
        inside = self._inside(x, chol_x)
        safe = lmath.where(inside, chol_x, lmath.where(arange(self.dims[1]) == arange(row), 1.0, 0.0))
        log_det_x = 2 * lmath.log(linalg.diagonal(safe, dims=self.dims)).sum(row)
        log_det_v = 2 * lmath.log(linalg.diagonal(self.chol_V, dims=self.dims)).sum(row)
        trace = _frobenius_of_solve(self.chol_V, safe, self.dims)  # tr(V^-1 X) = ||L_V^-1 L_X||^2
        density = 0.5 * (nu - p - 1) * log_det_x - 0.5 * trace
        norm = -0.5 * nu * p * math.log(2.0) - 0.5 * nu * log_det_v - _log_multigamma(0.5 * nu, p)
        density = lmath.where(inside, density + norm, -np.inf)
        return _invalid_to_nan(density, self.valid(**self.params), check, "wishart")

    def _draw_matrix(self, state, dims):
        return self._bartlett(state, dims, self.chol_V)


@register("inverse_wishart")
class InverseWishart(_WishartFamily):
    """Positive definite matrices on `dims=(row, col)` whose inverse is Wishart(nu, V^-1) (scipy.stats.invwishart(
    df=nu, scale=V); PyMC has none: its docs point to LKJCholeskyCov, which this catalog has too).

    >>> import dimgraph as dg, numpy as np
    >>> i, j = dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> w = dg.dist.inverse_wishart(3.0, dg.constant(np.eye(2), dims=(i, j)), dims=(i, j))
    >>> round(float(w.logp(dg.constant(np.eye(2), dims=(i, j))).eval(backend="python")), 6)  # scipy.stats.invwishart(3, I)
    -3.531024
    """

    def logp(self, x, check="nan"):
        _check_option(check)
        x = self._matrix(x)
        row = self.dims[0]
        nu, p = self.params["nu"], row.size
        chol_x = linalg.cholesky(x, dims=self.dims)
        inside = self._inside(x, chol_x)
        safe = lmath.where(inside, chol_x, lmath.where(arange(self.dims[1]) == arange(row), 1.0, 0.0))
        log_det_x = 2 * lmath.log(linalg.diagonal(safe, dims=self.dims)).sum(row)
        log_det_v = 2 * lmath.log(linalg.diagonal(self.chol_V, dims=self.dims)).sum(row)
        trace = _frobenius_of_solve(safe, self.chol_V, self.dims)  # tr(V X^-1) = ||L_X^-1 L_V||^2
        density = -0.5 * (nu + p + 1) * log_det_x - 0.5 * trace
        norm = 0.5 * nu * log_det_v - 0.5 * nu * p * math.log(2.0) - _log_multigamma(0.5 * nu, p)
        density = lmath.where(inside, density + norm, -np.inf)
        return _invalid_to_nan(density, self.valid(**self.params), check, "inverse_wishart")

    def _draw_matrix(self, state, dims):
        precision_chol = linalg.cholesky(linalg.inv(self.params["V"], dims=self.dims), dims=self.dims)
        state, w = self._bartlett(state, dims, precision_chol)
        return state, linalg.inv(w, dims=self.dims)
