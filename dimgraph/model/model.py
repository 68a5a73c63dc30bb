"""`dg.Model`: a Bayesian model from named random variables, written once, used for every inference task.

A model is a thin layer over the public face, not a second graph system. Each
random variable is a labeled input (its constrained value) and a `dg.dist`
distribution whose parameters are expressions of the variables defined before
it; observed variables and data are labeled inputs whose values the model
holds. From that one definition come:
- the log density on the unconstrained space (`logp`, `logp_fn`): every value
  replaced by its transform's `backward` of an unconstrained input, plus the
  log-Jacobians, compiled by `flat_value_and_grad` into one flat vector;
- prior draws, ancestral, over a `draw` dim (`dimgraph.model.predictive`);
- posterior quantities (constrained values, deterministics, predictive draws,
  pointwise log-likelihoods) as compiled functions mapped over a posterior's
  (chain, draw) dims: one call each;
- samples from an existing sampler (`dimgraph.model.samplers`).
NOTE: the compiled functions are cached on the model and dropped when a
variable is added; data is an input of each, so new data never recompiles.
"""

from __future__ import annotations

import inspect
import warnings
import weakref

import numpy as np

from dimgraph.compile.flat import FlatParams, flat_value_and_grad
from dimgraph.compile.function import function
from dimgraph.errors import InputError
from dimgraph.labeled.basic import constant, is_dataarray
from dimgraph.prob.base import Distribution
from dimgraph.prob.registry import DISTRIBUTIONS
from dimgraph.prob.transforms import transform_for
from dimgraph.labeled.vectorize import vectorize_graph
from dimgraph.model.variables import DataVariable, Deterministic, Entries, FreeVariable, ObservedVariable, variable_dims
from dimgraph.labeled.shape import transpose
from dimgraph.core.graph import graph_inputs
from dimgraph.labeled.math import as_operand
from dimgraph.model import predictive
from dimgraph.model import samplers


class Model:
    """Named random variables, deterministics, data and observations: a model from one definition.

    >>> import dimgraph as dg, numpy as np
    >>> obs = dg.Dim("obs", size=4)
    >>> m = dg.Model()
    >>> mu = m.normal("mu", 0.0, 10.0)
    >>> sigma = m.halfnormal("sigma", 1.0)              # sampled as log(sigma), Jacobian added
    >>> y = m.observe("y", dg.dist.normal(mu, sigma), data=np.array([0.8, 1.1, 1.3, 0.9]), dims=(obs,))
    >>> m.free_variables, m.unconstrained_names
    (['mu', 'sigma'], ['mu', 'sigma_log__'])
    >>> fit = m.map()
    >>> round(float(fit["mu"]), 2), round(float(fit["sigma"]), 2)
    (1.02, 0.19)
    >>> m.prior_predictive(100, seed=0).prior_predictive["y"].dims
    ('chain', 'draw', 'obs')
    """

    def __init__(self):
        self._free: dict[str, FreeVariable] = {}
        self._observed: dict[str, ObservedVariable] = {}
        self._data: dict[str, DataVariable] = {}
        self._deterministics: dict[str, Deterministic] = {}
        self._cache: dict = {}
        self._bound = weakref.WeakSet()  # what `set_data` rebinds: the LogpFunctions handed out

    # --- definition
    def rv(self, name, dist, dims=None, transform=None):
        """A random variable `name` drawn from `dist` (a `dg.dist` distribution); returns its labeled value.

        `dims`: the variable's dims (the distribution's dims plus any new ones it is
        repeated along); default the distribution's. `transform`: how a sampler moves
        it, a name from `dg.transforms` ("log", "interval", ...) or a Transform;
        default the bijection onto the distribution's support (`dg.transforms.biject_to(dist.support)`).

        >>> import dimgraph as dg
        >>> group = dg.Dim("group", coords=["a", "b", "c"])
        >>> m = dg.Model()
        >>> w = m.rv("w", dg.dist.normal(0.0, 1.0), dims=(group,), transform="ordered")
        >>> w.dims == (group,), m.unconstrained_names
        (True, ['w_ordered__'])
        """
        what = f"rv {name!r}"
        self._check_name(name, what)
        if not isinstance(dist, Distribution):
            raise TypeError(f"{what}: expected a dg.dist distribution, got {dist!r}")
        dims, extra = variable_dims(dist, dims, what)
        if dist.discrete and transform is not None:
            raise ValueError(f"{what}: {type(dist).__name__} is discrete; a transform applies to continuous variables")
        _check_constant_params(dist, what)
        if not dist.discrete:
            unsized = [d.name for d in dims if d.size is None]
            if unsized:
                raise ValueError(f"{what}: dims {unsized} have no size; a sampled variable needs static sizes (give the Dim a size or coords)")
        bound = None if dist.discrete else transform_for(dist, dims, transform, what)
        var = FreeVariable(name, dist, dims, extra, bound)
        self._free[name] = var
        self._cache.clear()
        return var.value

    def deterministic(self, name, value):
        """Keep `value` (an expression of the model's variables) in the results under `name`; returns it."""
        self._check_name(name, f"deterministic {name!r}")
        value = as_operand(value, f"deterministic {name!r}")
        self._deterministics[name] = Deterministic(name, value)
        self._cache.clear()
        return value

    def data(self, name, value, dims=None, dtype=None):
        """A data input `name` holding `value` (swap it with `set_data`, no recompile); returns the labeled input.

        `dims`: Dims in the order of a NumPy `value` (a DataArray is matched by dim
        name); a Dim without a size takes the data's. `dtype`: default int64 for
        integer data, else float64.

        >>> import dimgraph as dg, numpy as np
        >>> house = dg.Dim("house")                        # no size: each data set brings its own
        >>> m = dg.Model()
        >>> b = m.normal("b", 0.0, 1.0)
        >>> floor = m.data("floor", np.array([0.0, 1.0, 1.0]), dims=(house,))
        >>> y = m.observe("y", dg.dist.normal(b * floor, 1.0), data=np.array([0.1, 0.9, 1.2]))
        >>> before = m.logp_fn()(np.array([1.0]))[0]
        >>> m.set_data(floor=np.zeros(2), y=np.zeros(2))   # new values and a new length, same compiled function
        >>> round(m.logp_fn()(np.array([1.0]))[0] - before, 6)
        0.948939
        """
        what = f"data {name!r}"
        self._check_name(name, what)
        array = np.asarray(value.values if is_dataarray(value) else value)
        if dims is None and array.ndim:
            raise TypeError(f"{what}: give dims=, one Dim per axis of the data (shape {array.shape})")
        dims = () if dims is None else ((dims,) if hasattr(dims, "name") else tuple(dims))
        if dtype is None:
            kind = array.dtype.kind
            dtype = {"b": "bool", "i": "int64", "u": "int64"}.get(kind, "float64")
        var = DataVariable(name, dims, dtype, value)
        self._data[name] = var
        self._cache.clear()
        return var.var

    def observe(self, name, dist, data, dims=None):
        """Observed data `name` drawn from `dist`; returns the labeled input holding it.

        `dims`: the data's dims (the distribution's plus any it is repeated along);
        default the distribution's. The data is checked against them now.
        """
        what = f"observed {name!r}"
        self._check_name(name, what)
        if not isinstance(dist, Distribution):
            raise TypeError(f"{what}: expected a dg.dist distribution, got {dist!r}")
        dims, extra = variable_dims(dist, dims, what)
        _check_constant_params(dist, what)
        var = ObservedVariable(name, dist, dims, extra, data)
        self._observed[name] = var
        self._cache.clear()
        return var.var

    def set_data(self, values=None, **kwargs):
        """New values for data or observed variables by name (checked against their dims); nothing recompiles."""
        values = {**(values or {}), **kwargs}
        holders = {**self._data, **self._observed}
        unknown = [n for n in values if n not in holders]
        if unknown:
            raise KeyError(f"set_data: {unknown} are not data of this model; its data are {list(holders)}")
        for name, value in values.items():  # check all before changing any
            DataVariable(name, holders[name].dims, holders[name].var.type.dtype, value)
        for name, value in values.items():
            holders[name].set(value)
        for fn in list(self._bound):  # pushed, not polled: a call reads no data it was not given
            fn.rebind()

    def _check_name(self, name, what):
        if not isinstance(name, str) or not name:
            raise TypeError(f"{what}: a name must be a non-empty string")
        kinds = {"random variable": self._free, "observed variable": self._observed, "data": self._data,
                 "deterministic": self._deterministics}
        for kind, entries in kinds.items():
            if name in entries:
                raise ValueError(f"{what}: the name {name!r} is already taken by the {kind} {name!r}")

    # --- what the model holds
    @property
    def entries(self) -> Entries:
        """The model's entries, read-only: `free`, `observed`, `deterministics` and `data`, each a tuple of entry
        objects in definition order (`dimgraph.model.variables`); what its helpers read.

        >>> import dimgraph as dg
        >>> m = dg.Model()
        >>> mu = m.normal("mu", 0.0, 1.0)
        >>> [(v.name, v.transform) for v in m.entries.free]
        [('mu', Identity())]
        """
        return Entries(
            tuple(self._free.values()), tuple(self._observed.values()), tuple(self._deterministics.values()),
            tuple(self._data.values()),
        )

    def __getstate__(self):
        return {k: v for k, v in vars(self).items() if k != "_bound"}

    def __setstate__(self, state):
        vars(self).update(state)
        self._bound = weakref.WeakSet(fn for fn in self._cache.values() if isinstance(fn, LogpFunction))

    def compiled(self, key, build):
        """The function `build()` makes, made once per model definition under `key` (adding a variable drops them)."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    @property
    def free_variables(self) -> list:
        """The random variables' names, in definition order."""
        return list(self._free)

    @property
    def observed_variables(self) -> list:
        return list(self._observed)

    @property
    def deterministics(self) -> list:
        return list(self._deterministics)

    @property
    def data_names(self) -> list:
        """The data and observed inputs, in the order the compiled functions take them."""
        return list(self._data) + list(self._observed)

    @property
    def sampled(self) -> list:
        """The free variables a sampler moves (the continuous ones)."""
        return [v for v in self._free.values() if v.free is not None]

    @property
    def unconstrained_names(self) -> list:
        """The names of the unconstrained parameters, in the flat vector's order."""
        return [v.free.name for v in self.sampled]

    def __getitem__(self, name):
        """The labeled variable named `name` (random, observed, data or deterministic)."""
        if name in self._free:
            return self._free[name].value
        for entries in (self._observed, self._data):
            if name in entries:
                return entries[name].var
        if name in self._deterministics:
            return self._deterministics[name].value
        raise KeyError(f"{name!r} is not a variable of this model; it has {self.names}")

    def __getattr__(self, name):
        """`m.normal(name, *params, dims=None, transform=None, **params)`, ...: a random variable drawn from
        `dg.dist.<name>` (see `Model.rv`), for each distribution in the registry whose constructor takes no `dims=`
        of its own (multivariate_normal, the LKJ family, ... go through `Model.rv`)."""
        cls = DISTRIBUTIONS.get(name)
        if cls is None or name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        if "dims" in inspect.signature(cls).parameters:
            raise AttributeError(f"Model.{name}: {cls.__name__} takes its own dims=; use m.rv(name, dg.dist.{name}(...), dims=...)")

        def rv(rv_name, *params, dims=None, transform=None, **kwargs):
            return self.rv(rv_name, cls(*params, **kwargs), dims=dims, transform=transform)

        rv.__name__ = name
        rv.__doc__ = f"A random variable drawn from `dg.dist.{name}` ({', '.join(cls.names)}); see `Model.rv`."
        return rv

    def __dir__(self):
        methods = [n for n, cls in DISTRIBUTIONS.items() if "dims" not in inspect.signature(cls).parameters]
        return sorted({*super().__dir__(), *methods})

    @property
    def names(self) -> list:
        return list(self._free) + list(self._deterministics) + list(self._data) + list(self._observed)

    def __repr__(self):
        lines = [f"<dg.Model: {len(self._free)} random, {len(self._observed)} observed, {len(self._deterministics)} deterministic>"]
        for v in self._free.values():
            lines.append(f"  {v.name} ~ {v.dist!r} on {[d.name for d in v.dims]} ({v.transform.name if v.transform else 'discrete'})")
        for v in self._observed.values():
            lines.append(f"  {v.name} ~ {v.dist!r} observed on {[d.name for d in v.dims]}")
        return "\n".join(lines)

    # --- log densities
    def logp_terms(self):
        """{name: the variable's log density summed over its dims}, on the constrained values."""
        terms = {v.name: v.dist.logp(v.value).sum() for v in self._free.values()}
        terms.update({v.name: v.dist.logp(v.var).sum() for v in self._observed.values()})
        return terms

    def constrained_values(self):
        """{constrained value input: its expression in the unconstrained inputs} for the sampled variables."""
        return {v.value: v.transform.backward(v.free).transpose(*v.dims) for v in self.sampled}

    def logp(self, jacobian=True):
        """The model's log density as a 0-d labeled graph of the unconstrained inputs and the data.

        `jacobian=True` adds each transform's log-Jacobian: the density a sampler needs;
        without it, the constrained density at the transformed point (what MAP maximizes).
        """
        discrete = [v.name for v in self._free.values() if v.free is None]
        if discrete:
            raise ValueError(f"logp: the random variables {discrete} are discrete; a gradient sampler needs them observed or marginalized")
        if not self._free and not self._observed:
            raise ValueError("logp: the model has no random or observed variables")
        total = sum(self.logp_terms().values(), constant(0.0))
        total = vectorize_graph(total, self.constrained_values()) if self._free else total
        if jacobian:
            for v in self.sampled:
                total = total + v.transform.log_jac_det(v.free).sum()
        return total

    def logp_fn(self, backend=None, jacobian=True):
        """The unconstrained log density and its gradient over one flat vector: `fn(theta) -> (logp, grad)`.

        Built on `dg.flat_value_and_grad`; `fn.names` are the unconstrained parameters
        in order, `fn.ravel` / `fn.unravel` convert from and to named DataArrays, and
        the model's current data is used at each call.

        >>> import dimgraph as dg, numpy as np
        >>> m = dg.Model()
        >>> s = m.exponential("s", 1.0)
        >>> fn = m.logp_fn()
        >>> fn.names, fn(np.array([0.0]))      # log(exp(-1)) + Jacobian 0 at log s = 0; gradient 1 - e^0
        (['s_log__'], (-1.0, array([0.])))
        """
        key = ("logp", backend, jacobian)
        if key not in self._cache:
            params = [v.free for v in self.sampled]
            flat = flat_value_and_grad(self.logp(jacobian), params, inputs=self.entries.inputs(), backend=backend)
            fn = self._cache[key] = LogpFunction(flat, self.entries)
            self._bound.add(fn)
        return self._cache[key]

    def constrain_fn(self, backend=None):
        """A compiled map from the unconstrained parameters (and data) to every free variable's constrained value
        and every deterministic, mapped over extra dims such as (chain, draw)."""

        def build():
            values = self.constrained_values()
            outs = [values[v.value] for v in self.sampled]
            dets = vectorize_graph([d.value for d in self._deterministics.values()], values) if self._deterministics else []
            named = [_named(o, n) for o, n in zip(outs + list(dets), [v.name for v in self.sampled] + self.deterministics)]
            params = [v.free for v in self.sampled]
            return function(params + self.entries.inputs(), named, backend=backend, map_extra_dims=True, output="dataset")

        return self.compiled(("constrain", backend), build)

    @property
    def layout(self):
        """The `dg.FlatParams` of the unconstrained parameters: the flat vector's layout."""
        return self.compiled(("layout",), lambda: FlatParams([v.free for v in self.sampled]))

    def initial_point(self, seed=None, jitter=1.0) -> np.ndarray:
        """A flat unconstrained start: zeros plus uniform(-jitter, jitter) noise (`seed`: an int, a Generator or None)."""
        n = self.layout.size
        return np.random.default_rng(seed).uniform(-jitter, jitter, size=n) if jitter else np.zeros(n)

    def check_point(self, theta, backend=None):
        """Raise a ValueError naming every variable whose log density is not finite at the flat point `theta`
        (a parameter outside its support, data outside the distribution's): the check before any sampling."""
        fn = self.compiled(("terms", backend), lambda: self._terms_function(backend))
        values = fn(*self.layout.arrays(self.layout.check(theta)), *self.entries.arrays())
        bad = {name: float(v) for name, v in zip(self._terms_names(), values) if not np.isfinite(v)}
        if bad:
            details = "; ".join(f"{name!r}: log density {v}" + _why(v) for name, v in bad.items())
            raise ValueError(f"the model's log density is not finite at the starting point: {details}")

    def _terms_names(self):
        return list(self._free) + list(self._observed)

    def _terms_function(self, backend):
        terms = self.logp_terms()
        graphs = [terms[n] for n in self._terms_names()]
        graphs = vectorize_graph(graphs, self.constrained_values()) if self.sampled else graphs
        params = [v.free for v in self.sampled]
        return function(params + self.entries.inputs(), [g.to_positional() for g in graphs], backend=backend)

    def map(self, theta0=None, method="L-BFGS-B", backend=None, **options):
        """The maximum a posteriori point through `scipy.optimize.minimize`: an `xarray.Dataset` of the
        constrained values and deterministics (the mode of the constrained density: no Jacobian).

        `options` go to `minimize`. A failed optimization is a RuntimeError with scipy's message.
        """
        try:
            from scipy.optimize import minimize
        except ImportError:
            raise ImportError("map needs scipy: pip install scipy (or 'dimgraph[samplers]')") from None
        fn = self.logp_fn(backend, jacobian=False)
        theta0 = self.initial_point(jitter=0) if theta0 is None else np.asarray(theta0, dtype=float)
        self.check_point(theta0, backend)

        def negative(theta):
            value, grad = fn(theta)
            return -value, -grad

        fit = minimize(negative, theta0, jac=True, method=method, **options)
        if not np.isfinite(fit.fun):
            raise RuntimeError(f"map: the optimizer failed: {fit.message}")
        if not fit.success:
            warnings.warn(f"map: the optimizer stopped before converging: {fit.message}", RuntimeWarning, stacklevel=2)
        return self.constrain(fit.x, backend)

    def constrain(self, theta, backend=None, batch_dims=()):
        """The constrained values and deterministics (an `xarray.Dataset`) at flat unconstrained `theta`
        (with `batch_dims`, a stack of points such as `("chain", "draw")`)."""
        params = self.layout.unravel(theta, batch_dims=batch_dims)
        return self.constrain_fn(backend)(*params.values(), *self.entries.arrays())

    # --- predictive draws and sampling
    def prior_predictive(self, draws=500, seed=None, backend=None):
        """`draws` prior draws of every variable, deterministic and observed variable, ancestrally, in one call.

        Returns an ArviZ-layout container (`InferenceData` where arviz is installed, else
        an `xarray.DataTree`) with groups `prior`, `prior_predictive` and `observed_data`,
        each variable on (chain, draw, its dims).
        """
        return predictive.prior(self, draws, seed, backend)

    def posterior_predictive(self, idata, seed=None, backend=None, extend_inferencedata=False):
        """Draws of the observed variables at every (chain, draw) of `idata`'s posterior, in one compiled call.

        Returns a container with `posterior_predictive` and `observed_data`; with
        `extend_inferencedata=True` those groups are added to `idata` instead (returned).
        """
        return predictive.posterior(self, idata, seed, backend, extend_inferencedata)

    def log_likelihood(self, posterior, backend=None):
        """The pointwise log density of each observed variable at every draw of `posterior` (an `xarray.Dataset`)."""
        return predictive.log_likelihood(self, posterior, backend)

    def sample(self, draws=1000, tune=1000, chains=4, seed=None, sampler="nutpie", backend=None, **kwargs):
        """Posterior draws from an external sampler: an ArviZ-layout container with `posterior` (constrained
        values and deterministics on (chain, draw, dims) with coords), `sample_stats`, `log_likelihood` and
        `observed_data`.

        `sampler="nutpie"` (the `dimgraph[samplers]` extra) runs nutpie's NUTS on the
        compiled logp and gradient: on numba (the default backend) its chains call the compiled C
        function with no Python in between, as nutpie runs PyMC's models (`dimgraph.model.samplers`);
        `kwargs` go to `nutpie.sample` (`cores`, `progress_bar`, ...).
        `sampler="blackjax"` runs blackjax's NUTS on the jax backend (`target_accept=`).
        The starting points are checked first: a log density that is not finite there is a
        ValueError naming the variable.
        """
        return samplers.sample(self, sampler, draws=draws, tune=tune, chains=chains, seed=seed, backend=backend, **kwargs)


def _why(value):
    if value != value:
        return " (NaN: a parameter is outside its support)"
    return " (-inf: a value, or observed data, is outside the distribution's support)"


def _named(var, name):
    out = transpose(var, *var.dims)
    out.name = name
    return out


def _check_constant_params(dist, what):
    """Parameters given as numbers must be valid (sigma > 0, ...): an error naming the variable now, not NaNs later."""
    params = getattr(dist, "params", {})
    valid = dist.valid(**params) if params else None
    if valid is None or any(not hasattr(v, "data") for v in graph_inputs([valid])):
        return
    if not bool(np.all(valid.eval(backend="python").values)):
        raise ValueError(f"{what}: the parameters of {type(dist).__name__} are outside their support: {_shown(dist)}")


def _shown(dist):
    """`Name(param=value, ...)`, a factory's inner distributions shown the same way (base, sd_dist, components)."""
    parts = [f"{k}={_short(v)}" for k, v in getattr(dist, "params", {}).items()]
    inner = {"base": getattr(dist, "base", None), "sd_dist": getattr(dist, "sd_dist", None)}
    inner.update({f"component_{k}": c for k, c in enumerate(getattr(dist, "components", ()))})
    parts += [f"{key}={_shown(d)}" for key, d in inner.items() if d is not None]
    return f"{type(dist).__name__}({', '.join(parts)})"


def _short(v):
    data = np.asarray(getattr(v, "data", None))
    return data.item() if data.ndim == 0 else f"array{data.shape}"


class LogpFunction:
    """`fn(theta) -> (logp, gradient)` on a model's flat unconstrained vector, with the model's current data.

    The data is bound once (`flat.bind`); the model's `set_data` calls `rebind`, so a call passes theta
    alone to the bound function and reads nothing else.
    """

    def __init__(self, flat, entries):
        self.flat, self.entries = flat, entries
        self._call = None  # `flat.bind` of the current data, made at the first call and by `rebind`

    def __getstate__(self):
        return {**vars(self), "_call": None}  # bound again at the first call

    def rebind(self):
        """Bind the entries' current data (the model calls it from `set_data`); returns the bound function."""
        names = [v.name for v in self.entries.holders]
        self._call = self.flat.bind(**dict(zip(names, self.entries.arrays())))
        return self._call

    @property
    def names(self) -> list:
        """The unconstrained parameters, in the vector's order."""
        return list(self.flat.layout.names)

    @property
    def size(self) -> int:
        return self.flat.layout.size

    def __call__(self, theta):
        call = self._call
        if call is None:
            call = self.rebind()
        return call(theta)  # on numba, once jitted: one compiled call of theta (the data checked once)

    def ravel(self, values) -> np.ndarray:
        """One flat vector from `{unconstrained name: value}`."""
        return self.flat.ravel(values)

    def unravel(self, theta, batch_dims=()) -> dict:
        """`{unconstrained name: DataArray}` from a flat vector (or a stack of them on `batch_dims`)."""
        return self.flat.unravel(theta, batch_dims)

    def __repr__(self):
        return f"<LogpFunction of {self.names} (size {self.size}), backend {self.flat.function.backend!r}>"
