"""What every distribution shares: the `Distribution` base (parameters, `logp`, draws, tails) and its helpers.

`dg.dist.normal(mu, sigma)` is a `Distribution`: its parameters are labeled
(numbers and DataArrays are taken too) and broadcast by dim name.
- `logp(x)`: the log density (log pmf for counts), dims as xarray broadcasts x
  and the parameters. Computed in log space (`gammaln`/`betaln`
  normalizers, `log1p`), `-inf` outside the support.
  NOTE: invalid parameters (sigma <= 0, p outside [0, 1], ...) give NaN, never
  a number that looks valid; `check="raise"` makes the compiled function raise
  instead (an assert in the graph).
  NOTE: infinite parameters give the limit of the log density as they grow:
  -inf where the density vanishes (`gamma(inf, 1)`, `normal(0, inf)`), the
  limiting distribution's where there is one (`student_t(inf, mu, sigma)` is
  normal), +inf where it grows without bound (`exponential(inf).logp(0)`), NaN
  only where the limit depends on how the parameters grow (`gamma(inf, inf)`).
- `draw(state, extra_dims=())`: `(next state, draws)`, the draws on
  `extra_dims` then the parameters' dims (NaN, or -1 for counts, where the
  parameters are invalid: the rule of the primitives), from primitive draws
  (`dimgraph.labeled.random`) and plain math, so they differentiate with
  respect to location/scale parameters where the draw is reparameterized.
- `support`: the values it puts mass on (a `dimgraph.prob.constraints` value),
  stated once: the mask of `logp` and, through `dg.transforms.biject_to`, the
  transform a model samples it with.

Parameter names follow PyMC (`mu`, `sigma`, `alpha`, `beta`, `lam`, `p`, `n`);
the count distributions follow scipy.stats (`nbinom(n, p)` counts failures).
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.extra import assert_op
from dimgraph.labeled import math as lmath
from dimgraph.labeled.basic import from_positional
from dimgraph.labeled.dims import resolve_dims, unify_dims
from dimgraph.labeled.random import draw_dims, labeled_params, primitive_draw


def _abs(x):
    return lmath.elemwise("abs", x)


def _finite(v, stand_in=1.0):
    """`v` with `stand_in` where it is +-inf: what a formula sees where a `where` takes the limit instead, so
    neither the branch not taken nor its gradient is NaN (NaN stays NaN: it is no limit)."""
    return lmath.where(lmath.isinf(v), stand_in, v)


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
    # `support`: a `dimgraph.prob.constraints` value, as a class attribute or (where it depends on the parameters
    # or dims) a property; each distribution states its own
    registered_name = None  # set by `@register`

    @property
    def discrete(self):
        """Whether the values are whole numbers (a pmf); a gradient sampler cannot move them."""
        return self.support.discrete

    alternatives: tuple = ()  # PyMC's other parameterizations: (the names given, the names they replace, convert)

    def _from_alternative(self, args, kwargs, what):
        """`kwargs` with an alternative parameterization (beta's mu/sigma, normal's tau, ...) converted to the
        distribution's own parameters; an error naming both where they are mixed."""
        for given, replaced, convert in self.alternatives:
            used = [k for k in given if k in kwargs]
            if not used:
                continue
            if any(k not in kwargs for k in given):
                raise TypeError(f"{what}: give {' and '.join(replaced)}, or {' and '.join(given)}")
            if any(k in kwargs or k in self.names[: len(args)] for k in replaced):
                raise TypeError(f"{what}: give {' and '.join(replaced)} or {' and '.join(given)}, not both")
            values = dict(zip(given, labeled_params({k: kwargs.pop(k) for k in given}, what)))
            return {**kwargs, **convert(**values)}
        return kwargs

    def __init__(self, *args, **kwargs):
        what = type(self).__name__.lower()
        kwargs = self._from_alternative(args, kwargs, self.registered_name or what)
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
        labeled = labeled_params({k: values[k] for k in self.names}, what)
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
        inside = self.support.contains(x)
        if inside is None:  # the real line: the formula gives -inf at +-inf by itself
            density = self.log_density(x, **p)
        else:  # the formula is evaluated at a safe point outside, so no NaN reaches the gradient
            density = lmath.where(inside, self.log_density(lmath.where(inside, x, self.safe_value), **p), -np.inf)
        norm, valid, what = self.normalizer(**p), self.valid(**p), type(self).__name__.lower()
        if valid is None:  # no parameter constraints (no `positive`, no `valid` of its own)
            return density if norm is None else density + norm
        if norm is None:
            return _invalid_to_nan(density, valid, check, what)
        if check == "raise":
            return _invalid_to_nan(density + norm, valid, check, what)
        return density + (norm + _nan_unless(valid))  # the parameters' terms first: one add per element

    safe_value = 0.5  # where `log_density` is evaluated outside the support (its value is masked)
    positive: tuple = ()  # the parameters that must be > 0 (the default `valid`)

    def valid(self, **p):
        """Where the parameters are valid."""
        return _positive(*(p[k] for k in self.positive))

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

    # --- tail probabilities (distributions that have them define log_cdf/log_sf, and for draws of their
    # truncations icdf_exp/isf_exp: the quantile of exp(lp), of the lower and the upper tail)
    def logcdf(self, x):
        """log P(X <= x): -inf below the support, 0 above it, NaN for invalid parameters.

        >>> import dimgraph as dg
        >>> round(float(dg.dist.normal(0.0, 1.0).logcdf(-40.0).eval(backend="python")), 6)  # scipy.stats.norm.logcdf(-40)
        -804.608442
        """
        return self._tail("log_cdf", x)

    def logsf(self, x):
        """log P(X > x), the log survival function, accurate where the cdf rounds to 1.

        >>> import dimgraph as dg
        >>> round(float(dg.dist.exponential(2.0).logsf(30.0).eval(backend="python")), 6)
        -60.0
        """
        return self._tail("log_sf", x)

    def _tail(self, kind, x):
        if not hasattr(self, kind):
            what = type(self).__name__.lower()
            raise TypeError(
                f"{what}: has no {kind.replace('_', '')} (univariate distributions with an elementary, "
                "incomplete-gamma or incomplete-beta cdf have one)"
            )
        x = lmath.as_operand(x, kind.replace("_", ""))
        if np.dtype(x.type.dtype).kind not in "biuf":
            what = type(self).__name__.lower()
            raise TypeError(f"{what}.{kind.replace('_', '')}: x must be numbers; got {x.type.dtype} values")
        out = getattr(self, kind)(x, **self.params)
        valid = self.valid(**self.params)
        return out if valid is None else out + _nan_unless(valid)


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


def _count(flags, dim):
    """How many of the booleans `flags` hold along `dim`."""
    return lmath.where(flags, 1.0, 0.0).sum(dim)


class _CoreDim(Distribution):
    """A distribution whose parameter has a core dim (`dim=`): the categories or the simplex."""

    def __init__(self, *args, dim=None, **kwargs):
        super().__init__(*args, **kwargs)
        first = next(iter(self.params.values()))
        if dim is None:
            raise TypeError(
                f"{type(self).__name__.lower()}: give the core dim of {self.names[0]!r} as dim= (one of {first.dims})"
            )
        (self.dim,) = resolve_dims(first.dims, dim, type(self).__name__.lower())


def param_dims(dist):
    """The dims of everything `dist` is built from (its parameters, its base's, its components')."""
    dims = unify_dims("draw", list(dist.params.values())) if dist.params else ()
    for inner in _inner(dist):
        dims = dims + tuple(d for d in param_dims(inner) if d not in dims)
    return dims


def _inner(dist):
    if hasattr(dist, "base"):
        return [dist.base]
    return list(getattr(dist, "components", ()))


def draw_on(dist, state, dims):
    """`(next state, draws of dist)` on `dims` (which hold its parameters' dims), in that order."""
    own = param_dims(dist)
    state, value = dist.draw(state, extra_dims=tuple(d for d in dims if d not in own))
    return state, value.transpose(*[d for d in dims if d in value.dims])
