"""Time series over a named time Dim: random walks, autoregressions, GARCH(1, 1), Euler-Maruyama SDEs and
discrete-state Markov chains (the hidden states of a hidden Markov model).

Each distribution's value lives on `time=` (a Dim with a static size: the
initial value(s) then the steps, PyMC's `steps + 1` points), after its batch
dims and before the event dims of a multivariate innovation:
- `random_walk(init_dist, innovation_dist, time=t)`: x_0 ~ init, x_t - x_(t-1) ~ innovation
  (any distribution; a multivariate one makes a vector walk on its event dims);
- `gaussian_random_walk(mu, sigma, init_dist, time=t)`, `mv_gaussian_random_walk(mu, cov=,
  tau=, chol=, dims=(row, col), init_dist, time=t)`, `mv_student_t_random_walk(nu, mu, ...)`:
  the walks of a normal, multivariate normal and multivariate Student-t innovation;
- `ar(rho, sigma, constant=0, init_dist, lag=, time=t)`: x_t = constant + sum_i rho_i x_(t-i) + eps_t,
  the first p values from `init_dist`;
- `garch11(omega, alpha_1, beta_1, initial_vol, time=t)`: x_t ~ N(0, sigma_t),
  sigma_t^2 = omega + alpha_1 x_(t-1)^2 + beta_1 sigma_(t-1)^2, sigma_0 = initial_vol;
- `euler_maruyama(dt, sde_fn, sde_pars, init_dist, time=t)`: x_t ~ N(x_(t-1) + f dt, g sqrt(dt))
  with `(f, g) = sde_fn(x_(t-1), *sde_pars)`.
Parameters must not be on the time dim; they broadcast with each other by name. Log densities read the
value's lags by slicing; draws cumulate innovations drawn beforehand. The linear recursions (an AR's values,
a GARCH's variances, in draws and log density alike) need no loop: `_linear_recurrence` composes them in
log2(n) doublings. Euler-Maruyama draws apply the user's `sde_fn` step by step, in one `dg.scan`.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.random import rng_state
from dimgraph.errors import DimError
from dimgraph.labeled import math as lmath
from dimgraph.labeled.basic import constant, labeled
from dimgraph.labeled.dims import Dim, as_dim_tuple, fmt_dims, resolve_dims
from dimgraph.labeled.random import labeled_params, primitive_draw
from dimgraph.labeled.shape import arange
from dimgraph.lower.control import scan
from dimgraph.prob import constraints
from dimgraph.prob.base import Distribution, _check_option, _invalid_to_nan
from dimgraph.prob.continuous import Normal
from dimgraph.prob.multivariate import MultivariateNormal, MvStudentT
from dimgraph.prob.registry import register


# --- the dims of a draw
def natural_dims(dist):
    """The dims of a draw of `dist` without extra dims (its batch dims, then its event dims)."""
    _, probe = dist.draw(rng_state("probe"))
    return tuple(probe.dims)


def event_dims(dist):
    """The dims `dist.logp` reduces: a multivariate distribution's vector (or matrix) dims, () for a univariate one."""
    dims = natural_dims(dist)
    density = dist.logp(labeled("probe", dims, dtype="int64" if dist.discrete else "float64"))
    return tuple(d for d in dims if d not in density.dims)


def draw_onto(dist, state, dims):
    """`(next state, draws of dist)` on `dims` (which hold its batch dims) then its event dims."""
    extra = tuple(d for d in dims if d not in natural_dims(dist))
    state, value = dist.draw(state, extra_dims=extra)
    return state, value.transpose(*dims, *[d for d in value.dims if d not in dims])


def _time_dim(time, what, first=1):
    if not isinstance(time, Dim):
        raise TypeError(f"{what}: give the time dim as time=, a Dim, got {time!r}")
    if time.size is None or time.size <= first:
        raise DimError(
            f"{what}: the time dim {time.name!r} needs a static size above {first} (the initial value(s) and at least one step), got {time.size}"
        )
    return time


def _off_time(dist, time, what, role):
    for d in natural_dims(dist):
        if d == time or d.name == time.name:
            raise DimError(
                f"{what}: {role}'s parameters must not be on the time dim {time.name!r}; a walk's steps share them"
            )


def _window(x, time, start, stop, steps):
    """`x` at time positions start..stop-1, on the Dim `steps` (so windows of one series line up)."""
    return x.isel({time.name: slice(start, stop)}).rename({time.name: steps})


def _on_time(x, time, what):
    x = lmath.as_operand(x, "logp")
    if time not in x.dims:
        raise DimError(f"{what}: the value must be on the time dim {time.name!r}, got dims {fmt_dims(x.dims)}")
    return x


def _sum_over(density, dims):
    dims = [d for d in dims if d in density.dims]
    return density.sum(dims) if dims else density


def _join(head, head_dim, tail, steps, time):
    """The series on `time`: `head` (on `head_dim`, or one value where it is None) then `tail` (on `steps`)."""
    p = 1 if head_dim is None else head_dim.size
    n = time.size
    pos = arange(time)
    tail_t = tail.isel({steps: constant(np.maximum(np.arange(n) - p, 0), dims=(time,))})
    if head_dim is not None:
        head = head.isel({head_dim: constant(np.minimum(np.arange(n), p - 1), dims=(time,))})
    return lmath.where(pos < p, head, tail_t)


def _linear_recurrence(a, b, steps, pair=None):
    """s_t = a_t s_(t-1) + b_t along `steps` from s_(-1) = 0, by log2(n) doublings (Hillis and Steele's scan:
    the pairs (a, b) compose associatively), so a linear recursion needs no loop. `a` is a number per step, or
    with `pair=(row, col)` a matrix on it acting on vectors on row."""
    n = steps.size
    pos = arange(steps)
    if pair is None:
        identity, matvec, matmul = 1.0, lambda m, v: m * v, lambda m, k: m * k
    else:
        row, col = pair
        inner = Dim(f"_{row.name}_{col.name}_inner", size=row.size)
        identity = lmath.where(arange(row) == arange(col), 1.0, 0.0)
        matvec = lambda m, v: (m * v.rename({row: col})).sum(col)
        matmul = lambda m, k: (m.rename({col: inner}) * k.rename({row: inner})).sum(inner)
    a = a + 0.0 * pos
    offset = 1
    while offset < n:
        back = constant(np.maximum(np.arange(n) - offset, 0), dims=(steps,))
        has = pos >= offset
        a_prev = lmath.where(has, a.isel({steps.name: back}), identity)
        b_prev = lmath.where(has, b.isel({steps.name: back}), 0.0)
        b = matvec(a, b_prev) + b
        if 2 * offset < n:
            a = matmul(a, a_prev)
        offset *= 2
    return b


def _and(*flags):
    out = None
    for f in flags:
        if f is not None:
            out = f if out is None else out & f
    return out


def _valid_of(dist):
    return dist.valid(**dist.params)


def _default_init(init_dist, what):
    if init_dist is None:
        return Normal(0.0, 100.0)  # PyMC's default (it warns); a wide normal on each initial value
    if not isinstance(init_dist, Distribution):
        raise TypeError(f"{what}: init_dist must be a dg.dist distribution, got {init_dist!r}")
    return init_dist


@register("random_walk")
class RandomWalk(Distribution):
    """x_0 ~ `init_dist`, x_t = x_(t-1) + e_t with e_t ~ `innovation_dist`, on `time` (PyMC's `RandomWalk`).

    A multivariate innovation (a `multivariate_normal` on row) makes a vector walk on (time, row); the
    initial value is then a draw of `init_dist` on row (a univariate one is repeated along it).

    >>> import dimgraph as dg, numpy as np
    >>> t = dg.Dim("t", size=3)
    >>> walk = dg.dist.random_walk(dg.dist.normal(0.0, 1.0), dg.dist.laplace(0.0, 1.0), time=t)
    >>> x = dg.constant(np.array([0.5, 1.5, 1.0]), dims=(t,))
    >>> round(float(walk.logp(x).eval(backend="python")), 6)  # N(0.5; 0, 1) + Laplace(1) + Laplace(-0.5)
    -3.930233
    """

    def __init__(self, init_dist=None, innovation_dist=None, time=None):
        what = type(self).__name__.lower()
        self.time = _time_dim(time, what)
        self.init_dist = _default_init(init_dist, what)
        if not isinstance(innovation_dist, Distribution):
            raise TypeError(f"{what}: innovation_dist must be a dg.dist distribution, got {innovation_dist!r}")
        if self.init_dist.discrete != innovation_dist.discrete:
            raise TypeError(f"{what}: init_dist and innovation_dist must both be continuous or both discrete")
        self.innovation_dist = innovation_dist
        _off_time(self.init_dist, self.time, what, "init_dist")
        _off_time(innovation_dist, self.time, what, "innovation_dist")
        self.steps = Dim(f"{self.time.name}__steps", size=self.time.size - 1)
        self.event = event_dims(innovation_dist)
        self.params = {f"init_{k}": v for k, v in self.init_dist.params.items()}
        self.params.update({f"innovation_{k}": v for k, v in innovation_dist.params.items()})

    def __repr__(self):
        return f"{type(self).__name__}({self.init_dist!r}, {self.innovation_dist!r}, time={self.time.name!r})"

    @property
    def support(self):
        """Whole numbers where the steps are counts, the real line otherwise."""
        return constraints.integer if self.innovation_dist.discrete else constraints.real

    def valid(self, **_):
        return _and(_valid_of(self.init_dist), _valid_of(self.innovation_dist))

    def logp(self, x, check="nan"):
        _check_option(check)
        what = type(self).__name__.lower()
        x = _on_time(x, self.time, what)
        n, steps = self.time.size, self.steps
        first = _sum_over(self.init_dist.logp(x.isel({self.time.name: 0}), check=check), self.event)
        increments = _window(x, self.time, 1, n, steps) - _window(x, self.time, 0, n - 1, steps)
        rest = self.innovation_dist.logp(increments, check=check).sum(steps)
        return first + rest

    def _batch_dims(self, extra_dims):
        dims = as_dim_tuple(extra_dims, f"{type(self).__name__.lower()} draw")
        for dist in (self.init_dist, self.innovation_dist):
            dims = dims + tuple(d for d in natural_dims(dist) if d not in dims and d not in self.event)
        return dims

    def draw(self, state, extra_dims=()):
        batch = self._batch_dims(extra_dims)
        state, x0 = draw_onto(self.init_dist, state, (*batch, *self.event))
        state, e = draw_onto(self.innovation_dist, state, (*batch, self.steps, *self.event))
        walk = _join(x0, None, e, self.steps, self.time).cumsum(self.time)
        return state, walk.transpose(*batch, self.time, *self.event)


@register("gaussian_random_walk")
class GaussianRandomWalk(RandomWalk):
    """A random walk with normal steps of mean `mu` and scale `sigma` (PyMC's `GaussianRandomWalk`).

    `init_dist` defaults to normal(0, 100), as PyMC's.

    >>> import dimgraph as dg, numpy as np
    >>> t = dg.Dim("t", size=3)
    >>> walk = dg.dist.gaussian_random_walk(0.0, 1.0, init_dist=dg.dist.normal(0.0, 1.0), time=t)
    >>> round(float(walk.logp(dg.constant(np.array([0.0, 1.0, 1.0]), dims=(t,))).eval(backend="python")), 6)
    -3.256816
    """

    def __init__(self, mu=0.0, sigma=1.0, init_dist=None, time=None):
        super().__init__(init_dist, Normal(mu, sigma), time)


@register("mv_gaussian_random_walk")
class MvGaussianRandomWalk(RandomWalk):
    """A vector random walk on (time, row) with multivariate normal steps (PyMC's `MvGaussianRandomWalk`).

    The steps take `mu` and one of `cov=`, `tau=` (precision) or `chol=` on `dims=(row, col)`, as
    `multivariate_normal`; `init_dist` defaults to normal(0, 100) on each component.

    >>> import dimgraph as dg, numpy as np
    >>> t, i, j = dg.Dim("t", size=2), dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> walk = dg.dist.mv_gaussian_random_walk(0.0, cov=dg.constant(np.eye(2), dims=(i, j)), dims=(i, j),
    ...                                        init_dist=dg.dist.normal(0.0, 1.0), time=t)
    >>> x = dg.constant(np.zeros((2, 2)), dims=(t, i))
    >>> round(float(walk.logp(x).eval(backend="python")), 6)  # four standard normals at 0
    -3.675754
    """

    def __init__(self, mu=0.0, cov=None, tau=None, chol=None, dims=None, init_dist=None, time=None):
        super().__init__(init_dist, MultivariateNormal(mu, cov=cov, tau=tau, chol=chol, dims=dims), time)


@register("mv_student_t_random_walk")
class MvStudentTRandomWalk(RandomWalk):
    """A vector random walk with multivariate Student-t steps (PyMC's `MvStudentTRandomWalk`): `nu`, `mu`
    and one of `scale=`, `tau=` or `chol=` on `dims=(row, col)`, as `mv_student_t`.

    >>> import dimgraph as dg, numpy as np
    >>> t, i, j = dg.Dim("t", size=2), dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> walk = dg.dist.mv_student_t_random_walk(3.0, 0.0, scale=dg.constant(np.eye(2), dims=(i, j)), dims=(i, j), time=t)
    >>> walk.draw(dg.rng_state("s"))[1].dims
    (Dim('t', size=2), Dim('i', size=2))
    """

    def __init__(self, nu, mu=0.0, scale=None, tau=None, chol=None, dims=None, init_dist=None, time=None):
        super().__init__(init_dist, MvStudentT(nu, mu, scale=scale, tau=tau, chol=chol, dims=dims), time)


@register("ar")
class AR(Distribution):
    """An autoregression of order p (PyMC's `AR`): x_t = constant + sum_(i=1..p) rho_i x_(t-i) + eps_t,
    eps_t ~ N(0, sigma), the first p values iid from `init_dist` (default normal(0, 100), as PyMC's).

    `rho` holds the coefficients on the lag dim `lag=` (rho at lag position 0 multiplies x_(t-1));
    without `lag=` it is an AR(1) and every dim of `rho` a batch dim. `constant` is a value (PyMC's `constant=True` reads it from
    `rho[0]`: here it is its own parameter, 0 by default).

    >>> import dimgraph as dg, numpy as np
    >>> t = dg.Dim("t", size=3)
    >>> ar1 = dg.dist.ar(0.5, 1.0, init_dist=dg.dist.normal(0.0, 1.0), time=t)
    >>> x = dg.constant(np.array([1.0, 0.5, 0.25]), dims=(t,))
    >>> round(float(ar1.logp(x).eval(backend="python")), 6)  # N(1; 0, 1) + 2 N(0; 0, 1)
    -3.256816
    """

    names = ("rho", "sigma", "constant")
    support = constraints.real

    def __init__(self, rho, sigma=1.0, constant=0.0, init_dist=None, lag=None, time=None):
        super().__init__(rho, sigma, constant)
        rho = self.params["rho"]
        if lag is None:  # an AR(1): every dim of rho is a batch dim
            self.lag, self.order = None, 1
        else:
            (self.lag,) = resolve_dims(rho.dims, [lag], "ar: lag")
            if self.lag.size is None:
                raise DimError(f"ar: the lag dim {self.lag.name!r} needs a static size (the order p)")
            self.order = self.lag.size
        self.time = _time_dim(time, "ar", first=self.order)
        for name in ("sigma", "constant"):
            if self.lag is not None and self.lag in self.params[name].dims:
                raise DimError(f"ar: {name} must not be on the lag dim {self.lag.name!r}")
        for name, p in self.params.items():
            if self.time in p.dims or self.time.name in {d.name for d in p.dims}:
                raise DimError(f"ar: {name} must not be on the time dim {self.time.name!r}")
        self.init_dist = _default_init(init_dist, "ar")
        _off_time(self.init_dist, self.time, "ar", "init_dist")
        if event_dims(self.init_dist):
            raise TypeError("ar: init_dist must be univariate (it draws each of the first p values)")
        self.steps = Dim(f"{self.time.name}__steps", size=self.time.size - self.order)
        self.head = Dim(f"{self.time.name}__init", size=self.order)
        self.params.update({f"init_{k}": v for k, v in self.init_dist.params.items()})

    def valid(self, sigma, **_):
        return _and(sigma > 0, _valid_of(self.init_dist))

    def _coefficient(self, i):
        rho = self.params["rho"]
        return rho if self.lag is None else rho.isel({self.lag.name: i})

    def logp(self, x, check="nan"):
        _check_option(check)
        x = _on_time(x, self.time, "ar")
        n, p, steps = self.time.size, self.order, self.steps
        first = self.init_dist.logp(_window(x, self.time, 0, p, self.head), check=check).sum(self.head)
        mean = self.params["constant"]
        for i in range(1, p + 1):
            mean = mean + self._coefficient(i - 1) * _window(x, self.time, p - i, n - i, steps)
        rest = Normal(mean, self.params["sigma"]).logp(_window(x, self.time, p, n, steps), check=check).sum(steps)
        return first + rest

    def _recursion(self, head, innovation):
        """x_t for t >= p on `steps`, from the first p values (on `head`) and constant + eps_t (on `steps`):
        the state (x_t, ..., x_(t-p+1)) follows s_t = A s_(t-1) + b_t with A the companion matrix of rho."""
        p, steps = self.order, self.steps
        last = head.isel({self.head.name: p - 1})
        if p == 1:
            rho = self._coefficient(0)
            first = arange(steps) == 0
            return _linear_recurrence(rho, innovation + lmath.where(first, rho * last, 0.0), steps)
        row, col = Dim(f"{self.time.name}__lag_row", size=p), Dim(f"{self.time.name}__lag_col", size=p)
        rho = self.params["rho"].rename({self.lag: col})
        shift = lmath.where(arange(row) == arange(col) + 1, 1.0, 0.0)
        companion = lmath.where(arange(row) == 0, rho, shift)
        start = head.isel({self.head.name: constant(np.arange(p - 1, -1, -1), dims=(col,))})  # (x_(p-1), ..., x_0)
        pushed = (companion * start).sum(col)
        on_first = lmath.where(arange(row) == 0, innovation, 0.0)
        b = on_first + lmath.where(arange(steps) == 0, pushed, 0.0)
        return _linear_recurrence(companion, b, steps, pair=(row, col)).isel({row.name: 0})

    def draw(self, state, extra_dims=()):
        p = self.params
        dims = as_dim_tuple(extra_dims, "ar draw")
        own = [v for k, v in p.items() if not k.startswith("init_")]
        for v in own:
            dims = dims + tuple(d for d in v.dims if d not in dims and d != self.lag)
        dims = dims + tuple(d for d in natural_dims(self.init_dist) if d not in dims)
        state, head = draw_onto(self.init_dist, state, (*dims, self.head))
        state, z = primitive_draw("normal", state, dims=(self.steps, *dims))
        innovation = p["constant"] + z * p["sigma"]
        trace = self._recursion(head, innovation)
        series = _join(head, self.head, trace, self.steps, self.time)
        return state, (series + lmath.where(self.valid(**p), 0.0, np.nan)).transpose(*dims, self.time)


@register("garch11")
class GARCH11(Distribution):
    """GARCH(1, 1) returns (PyMC's `GARCH11`): x_t ~ N(0, sigma_t) with
    sigma_t^2 = omega + alpha_1 x_(t-1)^2 + beta_1 sigma_(t-1)^2 and x_0 ~ N(0, initial_vol).

    >>> import dimgraph as dg, numpy as np
    >>> t = dg.Dim("t", size=2)
    >>> g = dg.dist.garch11(0.5, 0.25, 0.25, 1.0, time=t)
    >>> x = dg.constant(np.array([2.0, 0.0]), dims=(t,))
    >>> round(float(g.logp(x).eval(backend="python")), 6)  # N(2; 0, 1) + N(0; 0, sqrt(0.5 + 0.25 * 4 + 0.25))
    -4.117685
    """

    names = ("omega", "alpha_1", "beta_1", "initial_vol")
    support = constraints.real
    positive = ("omega", "initial_vol")

    def __init__(self, omega, alpha_1, beta_1, initial_vol, time=None):
        super().__init__(omega, alpha_1, beta_1, initial_vol)
        self.time = _time_dim(time, "garch11")
        for name, v in self.params.items():
            if self.time.name in {d.name for d in v.dims}:
                raise DimError(f"garch11: {name} must not be on the time dim {self.time.name!r}")
        self.steps = Dim(f"{self.time.name}__steps", size=self.time.size - 1)

    def valid(self, omega, alpha_1, beta_1, initial_vol):
        return (omega > 0) & (alpha_1 >= 0) & (beta_1 >= 0) & (initial_vol > 0)

    def _variance(self, a, b):
        """sigma_t^2 for t >= 1 on `steps` from sigma_t^2 = a_t sigma_(t-1)^2 + b_t, sigma_0 = initial_vol: linear in
        the variances, so no loop."""
        v0 = self.params["initial_vol"] ** 2
        first = arange(self.steps) == 0
        return _linear_recurrence(a, b + lmath.where(first, a * v0, 0.0), self.steps)

    def logp(self, x, check="nan"):
        _check_option(check)
        x = _on_time(x, self.time, "garch11")
        n, p = self.time.size, self.params
        first = Normal(0.0, p["initial_vol"]).logp(x.isel({self.time.name: 0}))
        before = _window(x, self.time, 0, n - 1, self.steps)
        vol = lmath.sqrt(self._variance(p["beta_1"], p["omega"] + p["alpha_1"] * before * before))
        rest = Normal(0.0, vol).logp(_window(x, self.time, 1, n, self.steps)).sum(self.steps)
        return _invalid_to_nan(first + rest, self.valid(**p), check, "garch11")

    def draw(self, state, extra_dims=()):
        p = self.params
        dims = as_dim_tuple(extra_dims, "garch11 draw")
        for v in p.values():
            dims = dims + tuple(d for d in v.dims if d not in dims)
        state, z = primitive_draw("normal", state, dims=(self.time, *dims))
        x0 = z.isel({self.time.name: 0}) * p["initial_vol"]
        before = _window(z, self.time, 0, self.time.size - 1, self.steps)  # x_(t-1)^2 = sigma_(t-1)^2 z_(t-1)^2
        variance = self._variance(p["alpha_1"] * before * before + p["beta_1"], p["omega"] + 0.0 * before)
        trace = lmath.sqrt(variance) * _window(z, self.time, 1, self.time.size, self.steps)
        series = _join(x0, None, trace, self.steps, self.time)
        return state, (series + lmath.where(self.valid(**p), 0.0, np.nan)).transpose(*dims, self.time)


@register("euler_maruyama")
class EulerMaruyama(Distribution):
    """The Euler-Maruyama discretization of dX = f(X) dt + g(X) dW (PyMC's `EulerMaruyama`):
    x_t ~ N(x_(t-1) + f dt, g sqrt(dt)) with `(f, g) = sde_fn(x_(t-1), *sde_pars)`, x_0 ~ `init_dist`.

    `sde_fn` takes labeled values and returns the drift and the diffusion (numbers or labeled values);
    `sde_pars` are its parameters (numbers or variables: random ones are the usual case).

    >>> import dimgraph as dg, numpy as np
    >>> t = dg.Dim("t", size=3)
    >>> ou = dg.dist.euler_maruyama(0.1, lambda x, k: (-k * x, 1.0), (2.0,), init_dist=dg.dist.normal(0.0, 1.0), time=t)
    >>> ou.draw(dg.rng_state("s"))[1].dims
    (Dim('t', size=3),)
    """

    support = constraints.real

    def __init__(self, dt, sde_fn, sde_pars=(), init_dist=None, time=None):
        if not callable(sde_fn):
            raise TypeError(
                f"euler_maruyama: sde_fn must be a function (x, *sde_pars) -> (drift, diffusion), got {sde_fn!r}"
            )
        self.sde_fn = sde_fn
        pars = tuple(sde_pars) if isinstance(sde_pars, (tuple, list)) else (sde_pars,)
        self.sde_pars = tuple(labeled_params({f"sde_pars[{k}]": v for k, v in enumerate(pars)}, "euler_maruyama"))
        (dt,) = labeled_params({"dt": dt}, "euler_maruyama")
        self.time = _time_dim(time, "euler_maruyama")
        for name, v in [("dt", dt), *((f"sde_pars[{k}]", v) for k, v in enumerate(self.sde_pars))]:
            if self.time.name in {d.name for d in v.dims}:
                raise DimError(f"euler_maruyama: {name} must not be on the time dim {self.time.name!r}")
        self.init_dist = _default_init(init_dist, "euler_maruyama")
        _off_time(self.init_dist, self.time, "euler_maruyama", "init_dist")
        self.steps = Dim(f"{self.time.name}__steps", size=self.time.size - 1)
        self.params = {"dt": dt, **{f"sde_par_{k}": v for k, v in enumerate(self.sde_pars)}}
        self.params.update({f"init_{k}": v for k, v in self.init_dist.params.items()})

    def valid(self, dt, **_):
        return _and(dt > 0, _valid_of(self.init_dist))

    def _transition(self, previous):
        drift, diffusion = self.sde_fn(previous, *self.sde_pars)
        dt = self.params["dt"]
        return previous + drift * dt, diffusion * lmath.sqrt(dt)

    def logp(self, x, check="nan"):
        _check_option(check)
        x = _on_time(x, self.time, "euler_maruyama")
        n = self.time.size
        first = self.init_dist.logp(x.isel({self.time.name: 0}), check=check)
        mean, scale = self._transition(_window(x, self.time, 0, n - 1, self.steps))
        rest = Normal(mean, scale).logp(_window(x, self.time, 1, n, self.steps)).sum(self.steps)
        return _invalid_to_nan(first + rest, self.valid(**self.params), check, "euler_maruyama")

    def draw(self, state, extra_dims=()):
        dims = as_dim_tuple(extra_dims, "euler_maruyama draw")
        for v in (self.params["dt"], *self.sde_pars):
            dims = dims + tuple(d for d in v.dims if d not in dims)
        dims = dims + tuple(d for d in natural_dims(self.init_dist) if d not in dims)
        state, x0 = draw_onto(self.init_dist, state, dims)
        probe_mean, probe_scale = self._transition(x0)
        dims = dims + tuple(
            d
            for d in (*lmath.as_operand(probe_mean, "drift").dims, *lmath.as_operand(probe_scale, "diffusion").dims)
            if d not in dims
        )
        x0 = x0 + 0.0 * lmath.as_operand(probe_mean, "drift") + 0.0 * lmath.as_operand(probe_scale, "diffusion")
        state, z = primitive_draw("normal", state, dims=(self.steps, *dims))

        def step(x, zt):
            mean, scale = self._transition(x)
            return (mean + scale * zt).transpose(*dims)

        _, trace = scan(step, init=x0.transpose(*dims), sequences=z, dim=self.steps)
        series = _join(x0, None, trace, self.steps, self.time)
        return state, (series + lmath.where(self.valid(**self.params), 0.0, np.nan)).transpose(*dims, self.time)


@register("markov_chain")
class MarkovChain(Distribution):
    """States on `time` from initial probabilities `init` (on `dim`) and transitions `trans` (on `dim`, `next_dim`).

    >>> import dimgraph as dg, numpy as np
    >>> state, nxt, time = dg.Dim("state", size=2), dg.Dim("next", size=2), dg.Dim("time", size=3)
    >>> chain = dg.dist.markov_chain(dg.constant(np.array([0.5, 0.5]), dims=(state,)),
    ...                              dg.constant(np.array([[0.9, 0.1], [0.2, 0.8]]), dims=(state, nxt)),
    ...                              dim=state, next_dim=nxt, time=time)
    >>> path = dg.constant(np.array([0, 0, 1]), dims=(time,))
    >>> round(float(chain.logp(path).eval(backend="python")), 6)  # log(0.5 * 0.9 * 0.1)
    -3.101093
    """

    names = ("init", "trans")

    def __init__(self, init, trans, dim=None, next_dim=None, time=None):
        init, trans = labeled_params({"init": init, "trans": trans}, "markov_chain")
        self.params = {"init": init, "trans": trans}
        if dim is None or next_dim is None:
            raise TypeError(
                "markov_chain: give the state dim as dim= and the transition matrix's next-state dim as next_dim="
            )
        (self.dim,) = resolve_dims(init.dims, dim, "markov_chain", "init")
        (self.next_dim,) = resolve_dims(trans.dims, next_dim, "markov_chain", "trans")
        if self.dim not in trans.dims:
            raise DimError(
                f"markov_chain: trans must be on the state dim {self.dim.name!r} and {self.next_dim.name!r}, got {fmt_dims(trans.dims)}"
            )
        if self.next_dim.size != self.dim.size:
            raise DimError(f"markov_chain: next_dim {self.next_dim!r} must have the state dim's size {self.dim.size}")
        if not isinstance(time, Dim) or time.size is None:
            raise TypeError(f"markov_chain: time= must be a Dim with a size (the chain's steps), got {time!r}")
        self.time = time
        clash = [d for d in (*init.dims, *trans.dims) if d.name == time.name and d != time]
        if clash or time in init.dims:
            raise DimError(f"markov_chain: init must not vary along time, and trans's time dim must be {time!r}")

    @property
    def support(self):
        return constraints.integer_interval(0, self.dim.size - 1)

    @property
    def time_varying(self):
        return self.time in self.params["trans"].dims

    def log_init(self):
        """log P(s_0) on (dim, *batch): `init` normalized over the states."""
        init = self.params["init"]
        return lmath.log(init) - lmath.log(init.sum(self.dim))

    def log_trans(self):
        """log P(s_t = next | s_{t-1} = dim) on (dim, next_dim, [time], *batch): rows normalized."""
        trans = self.params["trans"]
        return lmath.log(trans) - lmath.log(trans.sum(self.next_dim))

    def valid(self, init, trans):
        return (init >= 0).all(self.dim) & (trans >= 0).all([self.dim, self.next_dim]) & (init.sum(self.dim) > 0)

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        here = arange(self.dim) == x
        first = lmath.where(here, self.log_init(), 0.0).sum(self.dim).isel({self.time.name: 0})
        prev = x.shift({self.time.name: 1}, fill_value=0)
        row = lmath.where(arange(self.dim) == prev, self.log_trans(), 0.0).sum(self.dim)
        step = lmath.where(arange(self.next_dim) == x, row, 0.0).sum(self.next_dim)
        later = lmath.where(arange(self.time) > 0, step, 0.0).sum(self.time)
        inside = ((x >= 0) & (x < self.dim.size)).all(self.time)
        density = lmath.where(inside, first + later, -np.inf)
        return _invalid_to_nan(density, self.valid(**self.params), check, "markov_chain")

    def draw(self, state, extra_dims=()):
        """Every step's next state drawn beforehand for every previous state (Gumbel-max over the row), then the
        path as the prefix composition of those maps, doubling the span each round: ceil(log2 T) rounds of a
        gather, no loop over time."""
        init, trans = self.params["init"], self.params["trans"]
        core = {self.dim.name, self.next_dim.name, self.time.name}
        batch = tuple(dict.fromkeys(d for d in (*init.dims, *trans.dims) if d.name not in core))
        rows = lmath.where(
            arange(self.time) == 0, lmath.log(init.rename({self.dim.name: self.next_dim})), lmath.log(trans)
        )
        state, u = primitive_draw("uniform", state, dims=(*extra_dims, self.time, self.dim, self.next_dim, *batch))
        maps = (rows - lmath.log(-lmath.log(u))).argmax(self.next_dim)  # on (..., time, dim): the next state
        into = self.dim.rename(f"{self.dim.name}__into")
        identity = arange(self.dim)
        span = 1
        while span < self.time.size:
            earlier = maps.shift({self.time.name: span}, fill_value=0)
            earlier = lmath.where(arange(self.time) >= span, earlier, identity)
            later = maps.rename({self.dim.name: into})
            maps = lmath.where(arange(into) == earlier, later, 0).sum(into)
            span *= 2
        path = maps.isel({self.dim.name: 0})
        return state, _invalid_int(path, self.valid(**self.params)).transpose(*extra_dims, self.time, *batch)


def _invalid_int(value, valid):
    return lmath.where(valid, value, -1)
