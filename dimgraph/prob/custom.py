"""A distribution from the user's own functions: `dg.dist.custom(logp=..., draw=..., **params)`.

What the catalog lacks, as PyMC's `CustomDist`: the log density is any labeled
expression of the value and the parameters (labeled, broadcast by name), the
draws (optional) a function of an RNG state in the style of `Distribution.draw`.
The support says which values have mass (`-inf` outside) and, through
`biject_to`, how a model samples the variable, unless `transform=` names one.
"""

from __future__ import annotations

import numpy as np

from dimgraph.errors import NoDrawsError
from dimgraph.labeled import math as lmath
from dimgraph.labeled.dims import Dim, fmt_dims, unify_dims
from dimgraph.labeled.random import draw_dims
from dimgraph.prob import constraints
from dimgraph.prob.base import Distribution, _check_option
from dimgraph.prob.registry import register


@register("custom")
class Custom(Distribution):
    """A density given by `logp(value, **params)`, draws by `draw(state, extra_dims, **params)` (optional).

    `params`: the parameters, by name (numbers, DataArrays or labeled variables); `support`: a
    `dg.constraints` value (default the real line; `nonnegative_integer` and the other integer ones make it
    discrete); `transform`: a transform name or object for `m.rv`, where biject_to(support) is not the one
    wanted; `dims`: the dims of a value beyond the parameters' (a vector-valued density); `logcdf`/`logsf`:
    optional functions of (x, **params), for `censored`. `draw` returns `(next state, draws)` on `extra_dims`
    then the parameters' dims (and `dims`), as `dg.dist.<name>(...).draw(state, extra_dims)` does.

    >>> import dimgraph as dg
    >>> def laplace_logp(x, mu, b):
    ...     return -abs(x - mu) / b - dg.log(2 * b)
    >>> def laplace_draw(state, extra_dims, mu, b):
    ...     return dg.dist.laplace(mu, b).draw(state, extra_dims)
    >>> d = dg.dist.custom(logp=laplace_logp, draw=laplace_draw, mu=0.0, b=2.0)
    >>> round(float(d.logp(1.0).eval(backend="python")), 6)  # scipy.stats.laplace(0, 2).logpdf(1)
    -1.886294
    """

    def __init__(self, logp, draw=None, *, support=None, transform=None, dims=(), logcdf=None, logsf=None, **params):
        what = "custom"
        if not callable(logp):
            raise TypeError(f"{what}: logp must be a function of (value, **params), got {logp!r}")
        for key, fn in (("draw", draw), ("logcdf", logcdf), ("logsf", logsf)):
            if fn is not None and not callable(fn):
                raise TypeError(f"{what}: {key} must be a function or None, got {fn!r}")
        support = constraints.real if support is None else support
        if not isinstance(support, constraints.Constraint):
            raise TypeError(f"{what}: support must be a dg.constraints value (real, positive, ...), got {support!r}")
        dims = (dims,) if isinstance(dims, (Dim, str)) else tuple(dims)  # a lone string is one dim name
        if any(not isinstance(d, Dim) for d in dims):
            raise TypeError(f"{what}: dims must be Dim objects, got {[getattr(d, 'name', d) for d in dims]}")
        self.names = tuple(params)
        super().__init__(**params)
        self._logp, self._draw, self._logcdf, self._logsf = logp, draw, logcdf, logsf
        self._support, self.preferred_transform, self.dims = support, transform, dims
        if logcdf is not None:
            self.log_cdf = lambda x, **p: logcdf(x, **p)
        if logsf is not None:
            self.log_sf = lambda x, **p: logsf(x, **p)

    @property
    def support(self):
        return self._support

    def valid(self, **p):
        return None

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        density = lmath.as_operand(self._logp(x, **self.params), "custom logp")
        inside = self.support.contains(x)
        return density if inside is None else lmath.where(inside, density, -np.inf)

    @property
    def value_dims(self):
        """The dims of a value without extra dims: the parameters' and `dims`."""
        own = unify_dims("custom", list(self.params.values())) if self.params else ()
        return own + tuple(d for d in self.dims if d not in own)

    def draw(self, state, extra_dims=()):
        if self._draw is None:
            raise NoDrawsError("custom: no draw function was given (dg.dist.custom(logp=..., draw=...) draws)")
        want = draw_dims(list(self.params.values()), extra_dims, "custom draw")
        want = want + tuple(d for d in self.dims if d not in want)
        out = self._draw(state, tuple(extra_dims), **self.params)
        if not (isinstance(out, tuple) and len(out) == 2):
            raise TypeError(f"custom draw: the draw function must return (next state, draws), got {out!r}")
        state, value = out
        value = lmath.as_operand(value, "custom draw")
        if set(value.dims) != set(want):
            raise ValueError(
                f"custom draw: the draws are on {fmt_dims(value.dims)}; expected {fmt_dims(want)} "
                "(extra_dims, then the parameters' dims and dims)"
            )
        return state, value.transpose(*want)
