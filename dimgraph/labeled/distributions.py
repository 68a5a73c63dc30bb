"""Named distributions on labeled variables: log densities and draws with the same parameters.

`dg.dist.normal(mu, sigma)` is a `Distribution`: its parameters are labeled
(numbers and DataArrays are taken too) and broadcast by dim name.
- `logp(x)`: the log density (log pmf for counts), dims as xarray broadcasts x
  and the parameters. Computed in log space (`gammaln`/`betaln`
  normalizers, `log1p`), `-inf` outside the support.
  NOTE: invalid parameters (sigma <= 0, p outside [0, 1], ...) give NaN, never
  a number that looks valid; `check="raise"` makes the compiled function raise
  instead (an assert in the graph).
- `draw(state, extra_dims=())`: `(next state, draws)`, the draws on
  `extra_dims` then the parameters' dims (NaN, or -1 for counts, where the
  parameters are invalid: the rule of the primitives), from primitive draws
  (`dimgraph.labeled.random`) and plain math, so they differentiate with
  respect to location/scale parameters where the draw is reparameterized.

Parameter names follow PyMC (`mu`, `sigma`, `alpha`, `beta`, `lam`, `p`, `n`);
the count distributions follow scipy.stats (`nbinom(n, p)` counts failures).
"""

from __future__ import annotations

import math

import numpy as np

from dimgraph.core import reduce as core_reduce
from dimgraph.labeled import linalg, math as lmath
from dimgraph.labeled.dims import resolve_dims
from dimgraph.labeled.shape import arange
from dimgraph.labeled.random import draw_dims, labeled_params, primitive_draw
from dimgraph.core.extra import assert_op
from dimgraph.labeled.basic import from_positional

_LOG_2PI = math.log(2 * math.pi)


def xlog1py(x, y):
    """x * log1p(y), 0 where x == 0 (also at y == -1)."""
    return lmath.where(x == 0, 0.0, x * lmath.log1p(lmath.where(x == 0, 0.0, y)))


def softmax(x, dim=None, axis=None):
    """exp(x) normalized to sum 1 over `dim` (stable: computed as exp(log_softmax)); positional tensors take
    `axis` as scipy.special.softmax.

    >>> import dimgraph as dg, numpy as np
    >>> k = dg.Dim("k", size=2)
    >>> dg.softmax(dg.constant(np.array([0.0, 1000.0]), dims=(k,)), k).eval().values.tolist()
    [0.0, 1.0]
    """
    if not lmath.any_labeled((x,)):
        return core_reduce.softmax(x, axis=axis if axis is not None else dim)
    return lmath.exp(log_softmax(x, dim))


def log_softmax(x, dim=None, axis=None):
    """x - logsumexp(x) over `dim`: the log of the softmax, finite where softmax underflows; positional
    tensors take `axis` as scipy.special.log_softmax.

    >>> import dimgraph as dg, numpy as np
    >>> k = dg.Dim("k", size=2)
    >>> dg.log_softmax(dg.constant(np.array([0.0, 1000.0]), dims=(k,)), "k").eval().values.tolist()
    [-1000.0, 0.0]
    >>> x = dg.tensor("x", shape=(2,))
    >>> dg.function([x], dg.log_softmax(x, axis=0))(np.array([0.0, 1000.0])).tolist()
    [-1000.0, 0.0]
    """
    if not lmath.any_labeled((x,)):
        return core_reduce.log_softmax(x, axis=axis if axis is not None else dim)
    x = lmath.as_operand(x, "log_softmax")
    (dim,) = resolve_dims(x.dims, dim, "log_softmax")
    return (x - lmath.logsumexp(x, dim)).transpose(*x.dims)


def _abs(x):
    return lmath.elemwise("abs", x)


def _as_float(x):
    return x if np.dtype(x.type.dtype).kind == "f" else lmath.astype(x, "float64")


def _loggamma(state, alpha, dims):
    """(next state, log of a Gamma(alpha, 1) draw), exact for tiny alpha.

    alpha < 1: log G(alpha) = log G(alpha + 1) + log(U) / alpha, so small shapes do not underflow to 0.
    """
    small = alpha < 1
    state, g = primitive_draw("gamma", state, lmath.where(small, alpha + 1, alpha), dims=dims)
    state, u = primitive_draw("uniform", state, dims=dims)
    boost = lmath.where(small, lmath.log1p(-u) / alpha, 0.0)
    return state, lmath.log(g) + boost


class Distribution:
    """Parameters on named dims with a log density (`logp`) and draws (`draw`)."""

    names: tuple = ()  # parameter names, in signature order
    defaults: dict = {}
    discrete = False

    def __init__(self, *args, **kwargs):
        what = type(self).__name__.lower()
        values = dict(zip(self.names, args))
        for k, v in kwargs.items():
            if k not in self.names:
                raise TypeError(f"{what}: unexpected parameter {k!r}; the parameters are {list(self.names)}")
            if k in values:
                raise TypeError(f"{what}: parameter {k!r} given twice")
            values[k] = v
        if len(args) > len(self.names):
            raise TypeError(f"{what}: takes {len(self.names)} parameters {list(self.names)}, got {len(args)}")
        for k in self.names:
            if k not in values:
                if k not in self.defaults:
                    raise TypeError(f"{what}: missing parameter {k!r}")
                values[k] = self.defaults[k]
        labeled = labeled_params([values[k] for k in self.names], what)
        self.params = dict(zip(self.names, labeled))

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self.params.items())
        return f"{type(self).__name__}({inner})"

    # --- log density
    def logp(self, x, check="nan"):
        """The log density at `x` (labeled, a DataArray or a number); NaN (or an error) for invalid parameters."""
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        p = self.params
        inside = self.support(x, **p)
        if inside is None:  # the real line: the formula gives -inf at +-inf by itself
            density = self.log_density(x, **p)
        else:  # the formula is evaluated at a safe point outside, so no NaN reaches the gradient
            density = lmath.where(inside, self.log_density(lmath.where(inside, x, self.safe_value), **p), -np.inf)
        norm, valid, what = self.normalizer(**p), self.valid(**p), type(self).__name__.lower()
        if norm is None:
            return _invalid_to_nan(density, valid, check, what)
        if check == "raise":
            return _invalid_to_nan(density + norm, valid, check, what)
        return density + (norm + _nan_unless(valid))  # the parameters' terms first: one add per element

    safe_value = 0.5
    positive: tuple = ()  # the parameters that must be > 0 (the default `valid`)
    domain = "real"  # the default `support`: "real", or finite x >= 0 ("nonnegative") or x > 0 ("positive")

    def valid(self, **p):
        """Where the parameters are valid."""
        return _positive(*(p[k] for k in self.positive))

    def support(self, x, **p):
        """Where x is in the support (None: everywhere)."""
        if self.domain == "real":
            return None
        return ((x >= 0) if self.domain == "nonnegative" else (x > 0)) & lmath.isfinite(x)

    def log_density(self, x, **p):
        """The log density's terms in x (all of it unless `normalizer` gives the parameters' own terms)."""
        raise NotImplementedError(type(self).__name__)

    def normalizer(self, **p):
        """The terms of the log density that depend on the parameters alone, kept out of `log_density` so
        they are summed on the parameters' dims (None: `log_density` is all of it)."""
        return None

    # --- draws
    def draw(self, state, extra_dims=()):
        """`(next state, draws)` from RNG `state`, on `extra_dims` then the parameters' dims.

        >>> import dimgraph as dg
        >>> s = dg.rng_state("s")
        >>> nxt, k = dg.dist.poisson(4.0).draw(s, extra_dims=(dg.Dim("obs", size=3),))
        >>> following, counts = dg.function([s], [nxt, k], backend="python")(dg.seed_state(0))
        >>> counts.dims, int(following[2])
        (('obs',), 1)
        """
        dims = draw_dims(list(self.params.values()), extra_dims, f"{type(self).__name__.lower()} draw")
        state, value = self.sample(state, dims, **self.params)
        return state, _invalid_draws(value, self.valid(**self.params)).transpose(*self._out_dims(dims))

    def _out_dims(self, dims):
        return dims


def _check_option(check):
    if check not in ("nan", "raise"):
        raise ValueError(f"logp: check must be 'nan' or 'raise', got {check!r}")


def _invalid_to_nan(density, valid, check, what):
    """`density` where the parameters are `valid`: NaN elsewhere (`check="nan"`) or a run-time error (`"raise"`)."""
    if check == "raise":
        return _checked(density, valid, f"{what} logp: invalid parameters")
    return density + _nan_unless(valid)


def _invalid_draws(value, valid):
    """Draws where the parameters are valid, NaN (float draws) or -1 (counts) elsewhere, as the primitives give."""
    if valid is None:
        return value
    if np.dtype(value.type.dtype).kind == "f":
        return value + _nan_unless(valid)
    return lmath.where(valid, value, -1)


def _checked(value, valid, message):
    """`value` where it is used, after a run-time check that `valid` holds everywhere."""
    flag = (valid.all() if valid.type.ndim else valid).to_positional()
    ok = from_positional(assert_op(flag, flag, msg=message), ())
    return lmath.where(ok, value, np.nan)


def _nan_unless(valid):
    """0 where the parameters are valid, NaN elsewhere: computed on the parameters' dims and added to the
    density, so a model with scalar parameters pays one add per element, not a select (nor one in its gradient)."""
    return lmath.where(valid, 0.0, np.nan)


def _positive(*vs):
    out = None
    for v in vs:
        c = v > 0
        out = c if out is None else out & c
    return out


def _prob(p):
    return (p >= 0) & (p <= 1)


class Normal(Distribution):
    names, defaults = ("mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    positive = ("sigma",)

    def log_density(self, x, mu, sigma):
        z = (x - mu) / sigma
        return -0.5 * z * z

    def normalizer(self, mu, sigma):
        return -lmath.log(sigma) - 0.5 * _LOG_2PI

    def sample(self, state, dims, mu, sigma):
        state, z = primitive_draw("normal", state, dims=dims)
        return state, z * sigma + mu


class HalfNormal(Distribution):
    names, defaults = ("sigma",), {"sigma": 1.0}
    positive = ("sigma",)
    domain = "nonnegative"

    def log_density(self, x, sigma):
        z = x / sigma
        return -0.5 * z * z

    def normalizer(self, sigma):
        return 0.5 * math.log(2 / math.pi) - lmath.log(sigma)

    def sample(self, state, dims, sigma):
        state, z = primitive_draw("normal", state, dims=dims)
        return state, _abs(z) * sigma


class LogNormal(Distribution):
    names, defaults = ("mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    safe_value = 1.0
    positive = ("sigma",)
    domain = "positive"

    def log_density(self, x, mu, sigma):
        lx = lmath.log(x)
        z = (lx - mu) / sigma
        return -0.5 * z * z - lx

    def normalizer(self, mu, sigma):
        return -lmath.log(sigma) - 0.5 * _LOG_2PI

    def sample(self, state, dims, mu, sigma):
        state, z = primitive_draw("normal", state, dims=dims)
        return state, lmath.exp(z * sigma + mu)


class StudentT(Distribution):
    names, defaults = ("nu", "mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    positive = ("nu", "sigma")

    def log_density(self, x, nu, mu, sigma):
        z = (x - mu) / sigma
        return -(nu + 1) / 2 * lmath.log1p(z * z / nu)

    def normalizer(self, nu, mu, sigma):
        # gammaln((nu + 1) / 2) - gammaln(nu / 2) = log(pi) / 2 - betaln(nu / 2, 1 / 2): no cancellation for large nu
        return -lmath.betaln(nu / 2, 0.5) - 0.5 * lmath.log(nu) - lmath.log(sigma)

    def sample(self, state, dims, nu, mu, sigma):
        state, z = primitive_draw("normal", state, dims=dims)
        state, g = primitive_draw("gamma", state, nu / 2, dims=dims)  # chi2(nu) / 2
        return state, z * lmath.sqrt(nu / (2 * g)) * sigma + mu


class Cauchy(Distribution):
    names, defaults = ("alpha", "beta"), {"alpha": 0.0, "beta": 1.0}
    positive = ("beta",)

    def log_density(self, x, alpha, beta):
        z = (x - alpha) / beta
        return -lmath.log1p(z * z)

    def normalizer(self, alpha, beta):
        return -math.log(math.pi) - lmath.log(beta)

    def sample(self, state, dims, alpha, beta):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, lmath.tan(math.pi * (u - 0.5)) * beta + alpha


class Uniform(Distribution):
    names, defaults = ("lower", "upper"), {"lower": 0.0, "upper": 1.0}

    def valid(self, lower, upper):
        return lower < upper

    def support(self, x, lower, upper):
        return (x >= lower) & (x <= upper)

    def log_density(self, x, lower, upper):
        return -lmath.log(upper - lower) + 0 * x

    def sample(self, state, dims, lower, upper):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, u * (upper - lower) + lower


class Exponential(Distribution):
    names, defaults = ("lam",), {"lam": 1.0}
    positive = ("lam",)
    domain = "nonnegative"

    def log_density(self, x, lam):
        return lmath.log(lam) - lam * x

    def sample(self, state, dims, lam):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, -lmath.log1p(-u) / lam


class Gamma(Distribution):
    """Shape `alpha`, rate `beta` (PyMC); scipy's `gamma(alpha, scale=1/beta)`."""

    names, defaults = ("alpha", "beta"), {"beta": 1.0}
    safe_value = 1.0
    positive = ("alpha", "beta")
    domain = "nonnegative"

    def log_density(self, x, alpha, beta):
        return alpha * lmath.log(beta) - lmath.gammaln(alpha) + lmath.xlogy(alpha - 1, x) - beta * x

    def sample(self, state, dims, alpha, beta):
        state, g = primitive_draw("gamma", state, alpha, dims=dims)
        return state, g / beta


class InverseGamma(Distribution):
    """Shape `alpha`, scale `beta` (PyMC); scipy's `invgamma(alpha, scale=beta)`."""

    names, defaults = ("alpha", "beta"), {"beta": 1.0}
    safe_value = 1.0
    positive = ("alpha", "beta")
    domain = "positive"

    def log_density(self, x, alpha, beta):
        return alpha * lmath.log(beta) - lmath.gammaln(alpha) - (alpha + 1) * lmath.log(x) - beta / x

    def sample(self, state, dims, alpha, beta):
        state, g = primitive_draw("gamma", state, alpha, dims=dims)
        return state, 1.0 / g * beta


class Beta(Distribution):
    names = ("alpha", "beta")
    positive = ("alpha", "beta")

    def support(self, x, alpha, beta):
        return (x >= 0) & (x <= 1)

    def log_density(self, x, alpha, beta):
        return lmath.xlogy(alpha - 1, x) + xlog1py(beta - 1, -x) - lmath.betaln(alpha, beta)

    def sample(self, state, dims, alpha, beta):
        # X / (X + Y) = sigmoid(log X - log Y), from log-gammas: no 0/0 for tiny shapes
        state, lx = _loggamma(state, alpha, dims)
        state, ly = _loggamma(state, beta, dims)
        return state, lmath.sigmoid(lx - ly)


class Bernoulli(Distribution):
    names = ("p",)
    discrete = True

    def valid(self, p):
        return _prob(p)

    def support(self, x, p):
        return (x == 0) | (x == 1)

    def log_density(self, x, p):
        return lmath.xlogy(x, p) + xlog1py(1 - x, -p)

    def sample(self, state, dims, p):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, lmath.astype(u < p, "int64")


def _is_count(x):
    return (x >= 0) & (lmath.floor(x) == x) if np.dtype(x.type.dtype).kind == "f" else x >= 0


class Binomial(Distribution):
    names = ("n", "p")
    discrete = True

    def valid(self, n, p):
        return _prob(p) & _is_count(n)

    def support(self, x, n, p):
        return _is_count(x) & (x <= n)

    def log_density(self, x, n, p):
        x, n = _as_float(x), _as_float(n)
        # log C(n, x) = -log(n + 1) - betaln(n - x + 1, x + 1)
        return -lmath.log1p(n) - lmath.betaln(n - x + 1, x + 1) + lmath.xlogy(x, p) + xlog1py(n - x, -p)

    def sample(self, state, dims, n, p):
        return primitive_draw("binomial", state, n, p, dims=dims)


class Poisson(Distribution):
    names = ("mu",)
    discrete = True

    def valid(self, mu):
        return (mu >= 0) & lmath.isfinite(mu)

    def support(self, x, mu):
        return _is_count(x)

    def log_density(self, x, mu):
        x = _as_float(x)
        return lmath.xlogy(x, mu) - mu - lmath.gammaln(x + 1)

    def sample(self, state, dims, mu):
        return primitive_draw("poisson", state, mu, dims=dims)


class NegativeBinomial(Distribution):
    """Failures before the `n`-th success with success probability `p` (scipy.stats.nbinom, NumPy)."""

    names = ("n", "p")
    discrete = True

    def valid(self, n, p):
        return (n > 0) & (p > 0) & (p <= 1)

    def support(self, x, n, p):
        return _is_count(x)

    def log_density(self, x, n, p):
        x = _as_float(x)
        # log C(x + n - 1, x) = -log(x + n) - betaln(n, x + 1)
        return -lmath.log(x + n) - lmath.betaln(n, x + 1) + n * lmath.log(p) + xlog1py(x, -p)

    def sample(self, state, dims, n, p):
        state, g = primitive_draw("gamma", state, n, dims=dims)  # Poisson-gamma mixture
        return primitive_draw("poisson", state, g * (1 - p) / p, dims=dims)


class _CoreDim(Distribution):
    """A distribution whose parameter has a core dim (`dim=`): the categories or the simplex."""

    def __init__(self, *args, dim=None, **kwargs):
        super().__init__(*args, **kwargs)
        first = next(iter(self.params.values()))
        if dim is None:
            raise TypeError(f"{type(self).__name__.lower()}: give the core dim of {self.names[0]!r} as dim= (one of {first.dims})")
        (self.dim,) = resolve_dims(first.dims, dim, type(self).__name__.lower())


class Categorical(_CoreDim):
    """Index along `dim` drawn with probabilities `p` (normalized over `dim`)."""

    names = ("p",)
    discrete = True

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        p = self.params["p"]
        logp = lmath.log(p) - lmath.log(p.sum(self.dim))
        hit = arange(self.dim) == x
        picked = lmath.where(hit, logp, 0.0).sum(self.dim)
        inside = hit.any(self.dim)
        density = lmath.where(inside, picked, -np.inf)
        return _invalid_to_nan(density, self.valid(p), check, "categorical")

    def valid(self, p):
        return ((p >= 0) & lmath.isfinite(p)).all(self.dim) & (p.sum(self.dim) > 0)

    def sample(self, state, dims, p):
        # Gumbel-max: argmax over dim of log p + G, G = -log(-log U)
        state, u = primitive_draw("uniform", state, dims=dims)
        gumbel = -lmath.log(-lmath.log(u))
        return state, (gumbel + lmath.log(p)).argmax(self.dim)

    def _out_dims(self, dims):
        return tuple(d for d in dims if d != self.dim)


class Dirichlet(_CoreDim):
    """Points on the simplex over `dim` with concentrations `a`."""

    names = ("a",)
    safe_value = 0.5

    def support(self, x, a):
        return ((x >= 0) & (x <= 1)).all(self.dim)

    def valid(self, a):
        return (a > 0).all(self.dim)

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        a = self.params["a"]
        inside = self.support(x, a)
        safe = lmath.where(inside, x, 1.0 / (self.dim.size or 2))
        norm = lmath.gammaln(a.sum(self.dim)) - lmath.gammaln(a).sum(self.dim)
        density = lmath.where(inside, norm + lmath.xlogy(a - 1, safe).sum(self.dim), -np.inf)
        return _invalid_to_nan(density, self.valid(a), check, "dirichlet")

    def sample(self, state, dims, a):
        state, lg = _loggamma(state, a, dims)
        return state, softmax(lg, self.dim)


DISTRIBUTIONS = {
    "normal": Normal,
    "halfnormal": HalfNormal,
    "lognormal": LogNormal,
    "student_t": StudentT,
    "cauchy": Cauchy,
    "uniform": Uniform,
    "exponential": Exponential,
    "gamma": Gamma,
    "invgamma": InverseGamma,
    "beta": Beta,
    "bernoulli": Bernoulli,
    "binomial": Binomial,
    "poisson": Poisson,
    "negative_binomial": NegativeBinomial,
    "categorical": Categorical,
    "dirichlet": Dirichlet,
}


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

    def __init__(self, mu, cov=None, chol=None, dims=None):
        if (cov is None) == (chol is None):
            raise TypeError("multivariate_normal: give exactly one of cov= and chol=")
        mu, matrix = labeled_params([mu, cov if chol is None else chol], "multivariate_normal")
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
        z = linalg.solve_triangular(chol, x - mu, dims=self.dims)  # on col: L z = x - mu
        diag = linalg.diagonal(chol, dims=self.dims)
        k = row.size
        density = -0.5 * (z * z).sum(col) - lmath.log(diag).sum(row) - 0.5 * k * _LOG_2PI
        return _invalid_to_nan(density, self.valid(mu, chol), check, "multivariate_normal")

    def valid(self, mu, chol):
        """A Cholesky factor with a positive finite diagonal (a covariance that is not positive definite gives NaNs)."""
        diag = linalg.diagonal(chol, dims=self.dims)
        return ((diag > 0) & lmath.isfinite(diag)).all(self.dims[0])

    def sample(self, state, dims, mu, chol):
        row, col = self.dims
        state, z = primitive_draw("normal", state, dims=tuple(d for d in dims if d != row))
        return state, (chol * z).sum(col) + mu

    def _out_dims(self, dims):
        return tuple(d for d in dims if d != self.dims[1])


DISTRIBUTIONS["multivariate_normal"] = MultivariateNormal
