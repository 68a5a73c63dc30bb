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

from dimgraph.errors import DimError
from dimgraph.labeled import linalg, math as lmath
from dimgraph.labeled.basic import constant
from dimgraph.labeled.dims import Dim, as_dim_tuple, fmt_dims
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
    """Vectors on `dims[0]` with mean `mu` and covariance `cov` (or its lower Cholesky factor `chol`) on `dims`.

    The matrix needs two dims of one size, (row, col); `mu`, `x` and the draws live on
    row. The log density solves with the Cholesky factor (no inverse, no determinant).

    >>> import dimgraph as dg, numpy as np
    >>> i, j = dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> cov = dg.constant(np.array([[2.0, 0.5], [0.5, 1.0]]), dims=(i, j))
    >>> mvn = dg.dist.multivariate_normal(dg.constant(np.zeros(2), dims=(i,)), cov=cov, dims=(i, j))
    >>> round(float(mvn.logp(dg.constant(np.array([1.0, -1.0]), dims=(i,))).eval(backend="python")), 6)  # scipy: -3.260542
    -3.260542
    """

    names = ("mu", "chol")
    support = constraints.real

    def __init__(self, mu, cov=None, chol=None, dims=None):
        if (cov is None) == (chol is None):
            raise TypeError("multivariate_normal: give exactly one of cov= and chol=")
        given = {"mu": mu, "cov": cov} if chol is None else {"mu": mu, "chol": chol}
        mu, matrix = labeled_params(given, "multivariate_normal")
        self.dims = linalg._core_dims("multivariate_normal", matrix, dims)
        row, col = self.dims
        if row not in mu.dims and mu.type.ndim:
            raise TypeError(f"multivariate_normal: mu must be on the row dim {row.name!r}, got dims {mu.dims}")
        chol = linalg.cholesky(matrix, dims=self.dims) if chol is None else matrix
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
            raise DimError(f"{self.what}: eta must not be on the matrix dims {fmt_dims(self.dims)}, got dims {eta.dims}")
        self.params = {"eta": eta}
        self.n = self.dims[0].size
        self.packed_dim = self._packed_dim() if packed else None

    def valid(self, **_):
        return self.params["eta"] > 0

    # --- packed layout
    def _positions(self):
        return {"triu": np.triu_indices(self.n, 1), "tril": np.tril_indices(self.n, -1), "tril_diag": np.tril_indices(self.n)}[self.layout]

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
            raise DimError(f"{self.what}: the value must be on the matrix dims {fmt_dims(self.dims)}, got dims {x.dims}")
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
            raise DimError(f"zerosum_normal: sigma must not be on the zero-sum dims {fmt_dims(dims)}, got {self.params['sigma'].dims}")
        self.dims = dims

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        missing = [d.name for d in self.dims if d not in x.dims]
        if missing:
            raise DimError(f"zerosum_normal: the value must be on the zero-sum dims {fmt_dims(self.dims)}, got dims {x.dims}")
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
