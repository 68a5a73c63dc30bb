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
from dimgraph.core.graph import graph_inputs
from dimgraph.labeled.basic import constant, is_dataarray
from dimgraph.labeled.math import as_operand, astype
from dimgraph.labeled.shape import transpose
from dimgraph.labeled.vectorize import vectorize_graph
from dimgraph.model import marginal, predictive, results, samplers
from dimgraph.model.variables import DataVariable, Deterministic, Entries, FreeVariable, ObservedVariable, variable_dims
from dimgraph.prob.base import Distribution
from dimgraph.prob.registry import DISTRIBUTIONS
from dimgraph.prob.transforms import transform_for


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
        self._marginalized: list = []  # names of the discrete variables summed out of the log density
        self._potentials: dict = {}
        self._cache: dict = {}
        self._bound = weakref.WeakSet()  # what `set_data` rebinds: the LogpFunctions handed out

    # --- definition
    def rv(self, name, dist, dims=None, transform=None, marginalize=False):
        """A random variable `name` drawn from `dist` (a `dg.dist` distribution); returns its labeled value.

        `dims`: the variable's dims (the distribution's dims plus any new ones it is
        repeated along); default the distribution's. `transform`: how a sampler moves
        it, a name from `dg.transforms` ("log", "interval", ...) or a Transform;
        default the bijection onto the distribution's support (`dg.transforms.biject_to(dist.support)`).
        `marginalize=True`: a discrete variable summed out of the log density (see `Model.marginalize`).

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
                raise ValueError(
                    f"{what}: dims {unsized} have no size; a sampled variable needs static sizes (give the Dim a size or coords)"
                )
        if transform is None:  # a custom density's own choice, else the bijection onto its support
            transform = getattr(dist, "preferred_transform", None)
        bound = None if dist.discrete else transform_for(dist, dims, transform, what)
        var = FreeVariable(name, dist, dims, extra, bound)
        self._check_dim_names(name, var.dims, what)
        if marginalize:
            marginal.Latent(var)  # a support to sum over, or an error before the model changes
        self._free[name] = var
        if marginalize:
            self._marginalized.append(name)
        self._cache.clear()
        return var.value

    def marginalize(self, *names):
        """Sum the discrete random variables `names` out of the log density: they leave the sampled parameters.

        Each is summed over its support (a Dim `<name>_support`, with a categorical's
        coords or the integers of a bounded count), entry by entry along its dims,
        together with the terms that read it (`dimgraph.model.marginal`). Prior draws
        keep it; `recover` and `latent_probabilities` give it after sampling.

        >>> import dimgraph as dg, numpy as np
        >>> obs, state = dg.Dim("obs", size=3), dg.Dim("state", size=2)
        >>> m = dg.Model()
        >>> mu = m.normal("mu", dg.constant(np.array([-1.0, 1.0]), dims=(state,)), 1.0)
        >>> z = m.categorical("z", dg.constant(np.array([0.5, 0.5]), dims=(state,)), dim=state, dims=(obs,))
        >>> y = m.observe("y", dg.dist.normal(mu.isel(state=z), 1.0), data=np.array([-1.2, 0.9, 1.4]), dims=(obs,))
        >>> m.marginalize("z")
        >>> m.logp_fn().names
        ['mu']
        """
        unknown = [n for n in names if n not in self._free]
        if unknown:
            raise KeyError(
                f"marginalize: {unknown} are not random variables of this model; those are {list(self._free)}"
            )
        for n in names:
            if not self._free[n].dist.discrete:
                raise ValueError(
                    f"marginalize {n!r}: {type(self._free[n].dist).__name__} is continuous; only discrete "
                    "variables are summed out"
                )
            marginal.Latent(self._free[n])
        self._marginalized.extend(n for n in names if n not in self._marginalized)
        self._cache.clear()

    def deterministic(self, name, value):
        """Keep `value` (an expression of the model's variables) in the results under `name`; returns it."""
        self._check_name(name, f"deterministic {name!r}")
        value = as_operand(value, f"deterministic {name!r}")
        self._check_dim_names(name, value.dims, f"deterministic {name!r}")
        self._deterministics[name] = Deterministic(name, value)
        self._cache.clear()
        return value

    def potential(self, name, expr):
        """Add `expr` (a labeled expression of the model's variables and data) to the log density, summed over
        its dims; returns it. As PyMC's `Potential`: a prior or a soft constraint the catalog has no distribution
        for, felt by `logp`, `map` and `sample`. Draws never see it: the prior predictive draws the
        distributions alone (and warns), the posterior predictive draws from a posterior that has felt it.

        >>> import dimgraph as dg
        >>> m = dg.Model()
        >>> x = m.normal("x", 0.0, 1.0)
        >>> _ = m.potential("keep_positive", dg.log(dg.sigmoid(10 * x)))
        >>> round(float(m.logp_fn()(np.array([0.0]))[0]), 6)  # N(0, 1).logpdf(0) + log(1/2)
        -1.612086
        """
        what = f"potential {name!r}"
        self._check_name(name, what)
        if not hasattr(expr, "type") and not is_dataarray(expr) and not isinstance(expr, (int, float, np.ndarray)):
            raise TypeError(
                f"{what}: expected a labeled expression of the model's variables (or numbers), got {expr!r}"
            )
        value = as_operand(expr, what)
        if np.dtype(value.type.dtype).kind not in "iuf":
            raise TypeError(f"{what}: a log density term must be real numbers, got {value.type.dtype} values")
        self._potentials[name] = value if np.dtype(value.type.dtype).kind == "f" else astype(value, "float64")
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
        self._check_dim_names(name, var.dims, what)
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
        self._check_dim_names(name, var.dims, what)
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
        kinds = {
            "random variable": self._free,
            "observed variable": self._observed,
            "data": self._data,
            "deterministic": self._deterministics,
            "potential": self._potentials,
        }
        for kind, entries in kinds.items():
            if name in entries:
                raise ValueError(f"{what}: the name {name!r} is already taken by the {kind} {name!r}")

    def _check_dim_names(self, name, dims, what):
        """Refuse a variable named like a dim of the model, or a dim named like a variable, in either order:
        variables and dims share one namespace in the results (an xarray Dataset), where one would replace
        the other (prior draws vanished, or sampling failed later with xarray's MergeError)."""
        kinds = {
            "random variable": self._free,
            "observed variable": self._observed,
            "data": self._data,
            "deterministic": self._deterministics,
        }
        hint = "rename the variable or the Dim (a variable and a dim may not share a name)"
        for d in dims:
            if d.name == name:
                raise ValueError(f"{what}: the variable's name {name!r} is also the name of its dim {d!r}; {hint}")
            for kind, entries in kinds.items():
                if d.name in entries:
                    raise ValueError(f"{what}: its dim {d!r} has the name of the {kind} {d.name!r}; {hint}")
        for kind, entries in kinds.items():
            for other, entry in entries.items():
                for d in entry.dims:
                    if d.name == name:
                        raise ValueError(
                            f"{what}: the name {name!r} is the name of the dim {d!r} of the {kind} {other!r}; {hint}"
                        )

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
            tuple(self._free.values()),
            tuple(self._observed.values()),
            tuple(self._deterministics.values()),
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
    def marginalized(self) -> tuple:
        """The names of the discrete random variables summed out of the log density (`marginalize`)."""
        return tuple(self._marginalized)

    @property
    def observed_variables(self) -> list:
        return list(self._observed)

    @property
    def deterministics(self) -> list:
        return list(self._deterministics)

    @property
    def potentials(self) -> list:
        """The names of the terms `potential` added to the log density, in definition order."""
        return list(self._potentials)

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
        """`m.normal(name, *params, dims=None, transform=None, marginalize=False, **params)`, ...: a random variable drawn from
        `dg.dist.<name>` (see `Model.rv`), for each distribution in the registry whose constructor takes no `dims=`
        of its own (multivariate_normal, the LKJ family, ... go through `Model.rv`)."""
        cls = DISTRIBUTIONS.get(name)
        if cls is None or name.startswith("_"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        if "dims" in inspect.signature(cls).parameters:
            raise AttributeError(
                f"Model.{name}: {cls.__name__} takes its own dims=; use m.rv(name, dg.dist.{name}(...), dims=...)"
            )

        def rv(rv_name, *params, dims=None, transform=None, marginalize=False, **kwargs):
            try:
                dist = cls(*params, **kwargs)
            except (TypeError, ValueError) as err:  # the distribution names the parameter; this names the variable
                raise type(err)(f"rv {rv_name!r}: {err}") from None
            return self.rv(rv_name, dist, dims=dims, transform=transform, marginalize=marginalize)

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
        lines = [
            f"<dg.Model: {len(self._free)} random, {len(self._observed)} observed, {len(self._deterministics)} deterministic>"
        ]
        for v in self._free.values():
            how = v.transform.name if v.transform else "marginalized" if v.name in self._marginalized else "discrete"
            lines.append(f"  {v.name} ~ {v.dist!r} on {[d.name for d in v.dims]} ({how})")
        for v in self._observed.values():
            lines.append(f"  {v.name} ~ {v.dist!r} observed on {[d.name for d in v.dims]}")
        return "\n".join(lines)

    # --- log densities
    def logp_terms(self):
        """{name: the variable's log density summed over its dims}, on the constrained values; marginalized
        variables and the terms that read them give one marginal term, named by the variables (`"z"`, `"z1+z2"`);
        each potential is its own term."""
        plain, found = marginal.split_terms(self)
        terms = {**plain, **{g.name: g.marginal().sum() for g in found}}
        terms.update({name: value.sum() for name, value in self._potentials.items()})
        return terms

    def constrained_values(self):
        """{constrained value input: its expression in the unconstrained inputs} for the sampled variables."""
        return {v.value: v.transform.backward(v.free).transpose(*v.dims) for v in self.sampled}

    def logp(self, jacobian=True):
        """The model's log density as a 0-d labeled graph of the unconstrained inputs and the data.

        `jacobian=True` adds each transform's log-Jacobian: the density a sampler needs;
        without it, the constrained density at the transformed point (what MAP maximizes).
        """
        discrete = [v.name for v in self._free.values() if v.free is None and v.name not in self._marginalized]
        if discrete:
            raise ValueError(
                f"logp: the random variables {discrete} are discrete; a gradient sampler needs them observed or marginalized"
            )
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
            kept = self._sampled_deterministics()
            dets = vectorize_graph([self._deterministics[n].value for n in kept], values) if kept else []
            named = [_named(o, n) for o, n in zip(outs + list(dets), [v.name for v in self.sampled] + kept)]
            params = [v.free for v in self.sampled]
            return function(
                params + self.entries.inputs(), named, backend=backend, map_extra_dims=True, output="dataset"
            )

        return self.compiled(("constrain", backend), build)

    def _sampled_deterministics(self):
        """The deterministics computed from the sampled parameters (those reading a marginalized variable come
        with its recovery)."""
        return [n for n, d in self._deterministics.items() if not marginal.reads_latent(self, d.value)]

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
        names, fn = self.compiled(("terms", backend), lambda: self._terms_function(backend))
        values = fn(*self.layout.arrays(self.layout.check(theta)), *self.entries.arrays())
        bad = {name: float(v) for name, v in zip(names, values) if not np.isfinite(v)}
        if bad:
            details = "; ".join(
                f"{name!r}: log density {v}" + _why(v, self._observed.get(name)) for name, v in bad.items()
            )
            raise ValueError(f"the model's log density is not finite at the starting point: {details}")

    def _terms_function(self, backend):
        terms = self.logp_terms()
        graphs = (
            vectorize_graph(list(terms.values()), self.constrained_values()) if self.sampled else list(terms.values())
        )
        params = [v.free for v in self.sampled]
        return list(terms), function(
            params + self.entries.inputs(), [g.to_positional() for g in graphs], backend=backend
        )

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
        return samplers.sample(
            self, sampler, draws=draws, tune=tune, chains=chains, seed=seed, backend=backend, **kwargs
        )

    # --- marginalized variables after sampling
    def latent_probabilities(self, name, idata, backend=None):
        """P(`name` = each support value | the data, the draw) at every draw of `idata`'s posterior: a DataArray
        on (chain, draw, *its dims, its support dim) with the support's coords (a Markov chain: the smoothed
        marginals P(s_t | all the data), forward-backward)."""
        group = marginal.group_of(self, name, "latent_probabilities")
        posterior = results.group(idata, "posterior")
        if isinstance(group, marginal.ChainGroup):  # forward-backward: the smoothed marginals
            return marginal.chain_probabilities(self, group, posterior, backend)
        out = marginal.probabilities(marginal.joint_draws(self, group, posterior, backend), group, name)
        out.name = name
        return out

    def viterbi(self, name, idata, backend=None):
        """The most probable path of the marginalized Markov chain `name` at every draw of `idata`'s posterior:
        a DataArray on (chain, draw, *its dims) of state positions."""
        group = marginal.group_of(self, name, "viterbi")
        if not isinstance(group, marginal.ChainGroup):
            raise TypeError(
                f"viterbi: {name!r} is a {type(group.latents[0].entry.dist).__name__.lower()}, not a "
                "markov_chain; latent_probabilities gives its conditional probabilities"
            )
        return marginal.chain_viterbi(self, group, results.group(idata, "posterior"), backend)

    def recover(self, idata, seed=None, backend=None):
        """`idata` with draws of every marginalized variable (from its conditional given the data and each
        posterior draw; a Markov chain's paths by forward filtering, backward sampling) and the deterministics that read them added to the posterior (a Dataset given: a new one).

        >>> import dimgraph as dg, numpy as np, xarray as xr
        >>> m = dg.Model()
        >>> mu = m.normal("mu", 0.0, 5.0)
        >>> z = m.bernoulli("z", 0.5, marginalize=True)
        >>> y = m.observe("y", dg.dist.normal(mu * z, 1.0), data=np.array(3.0))
        >>> posterior = xr.Dataset({"mu": (("chain", "draw"), np.full((1, 4000), 3.0))})  # draws of mu
        >>> round(float(m.recover(posterior, seed=1)["z"].mean()), 2)  # P(z = 1 | y = 3, mu = 3) = 0.989
        0.99
        """
        import xarray as xr

        posterior = results.group(idata, "posterior")
        rng = np.random.default_rng(seed)
        draws = {}
        _, found = marginal.split_terms(self)
        for group in found:
            if isinstance(group, marginal.ChainGroup):  # forward filtering, backward sampling
                draws.update(marginal.chain_draws(self, group, posterior, backend, rng))
                continue
            joint = marginal.joint_draws(self, group, posterior, backend)
            draws.update(marginal.draw_latents(joint, group, rng))
        new = posterior.assign(draws)
        dets = [n for n in self._deterministics if n not in self._sampled_deterministics()]
        if dets:
            new = new.assign(self._recovered_deterministics(dets, backend)(*self._recovery_values(new)))
        return new if isinstance(idata, xr.Dataset) else results.add_groups(idata, {"posterior": new})

    def _recovery_values(self, posterior):
        return [posterior[n] for n in self._free] + [v.array for v in self._data.values()]

    def _recovered_deterministics(self, names, backend):
        def build():
            inputs = [v.value for v in self._free.values()] + [v.var for v in self._data.values()]
            outs = [_named(self._deterministics[n].value, n) for n in names]
            return function(inputs, outs, backend=backend, map_extra_dims=True, output="dataset")

        return self.compiled(("recovered_deterministics", backend), build)


def _why(value, observed=None):
    """Why a variable's log density is `value` (not finite); `observed`: its ObservedVariable, if it is one."""
    if value != value:
        holes = 0 if observed is None or observed.array.dtype.kind != "f" else int(np.isnan(observed.array).sum())
        if holes:
            return (
                f" (NaN: the observed data holds {holes} NaN value(s), which are no observations; drop them, "
                "or give the missing entries their own random variable)"
            )
        return " (NaN: a parameter is outside its support)"
    if value > 0:
        return " (+inf: the density is unbounded there, a value at a pole such as exponential(inf) at 0)"
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
