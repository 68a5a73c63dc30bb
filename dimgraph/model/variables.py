"""The entries of a `dg.Model`: free random variables, observed variables, deterministics and data, each named once.

A free variable is a labeled input holding its constrained value (what the
user's expressions read) plus, when a sampler moves it, a second input on the
unconstrained space and the `Transform` between them. Observed variables and
data are labeled inputs whose values the model keeps (in dims order, checked
when they are set), so new data never needs a recompile. `Entries` is the
read-only view of all of them that the model's helpers (predictive draws,
samplers, `LogpFunction`) read.
"""

from __future__ import annotations

from typing import NamedTuple

from dimgraph.core.random import rng_state
from dimgraph.errors import InputError, NoDrawsError
from dimgraph.labeled.basic import is_dataarray, labeled
from dimgraph.labeled.dims import Dim, fmt_dims
from dimgraph.labeled.io import LabeledInput
from dimgraph.prob.base import param_dims


def natural_dims(dist):
    """The dims a draw of `dist` has without extra dims (the parameters' dims, core dims resolved)."""
    try:
        _, probe = dist.draw(rng_state("probe"))
    except NoDrawsError:  # a density without draws (flat, a custom one): its parameters' dims and its own
        own = getattr(dist, "value_dims", None)
        return tuple(own) if own is not None else param_dims(dist)
    return tuple(probe.dims)


def variable_dims(dist, dims, what):
    """(the variable's dims, the extra dims a draw needs): `dims` must hold every dim of the distribution."""
    natural = natural_dims(dist)
    if dims is None:
        return natural, ()
    dims = (dims,) if isinstance(dims, Dim) else tuple(dims)
    wrong = [d for d in dims if not isinstance(d, Dim)]
    if wrong:
        raise TypeError(f"{what}: dims must be Dim objects (a new dim enters a model as a Dim), got {wrong}")
    missing = [d.name for d in natural if d not in dims]
    if missing:
        raise ValueError(
            f"{what}: dims {fmt_dims(dims)} lack the distribution's dims {missing} (its parameters are on {fmt_dims(natural)})"
        )
    return dims, tuple(d for d in dims if d not in natural)


class FreeVariable:
    """A random variable the model samples: `value` (constrained input), `free` (unconstrained input) and `transform`."""

    def __init__(self, name, dist, dims, extra_dims, transform):
        self.name, self.dist, self.extra_dims, self.transform = name, dist, extra_dims, transform
        self.value = labeled(name, dims, dtype="int64" if dist.discrete else "float64")
        self.free = None
        if transform is not None:
            suffix = "" if transform.name == "identity" else f"_{transform.name}__"
            self.free = labeled(f"{name}{suffix}", transform.free_dims(dims))

    @property
    def dims(self):
        return self.value.dims

    def __repr__(self):
        return f"FreeVariable({self.name!r}, {self.dist!r}, dims={fmt_dims(self.dims)}, transform={self.transform!r})"


class ModelData(LabeledInput):
    """A model's data converted as a labeled input's, with advice a model user can follow."""

    __slots__ = ()
    extra_dims_hint = (
        " (a model's data keeps the dims it was defined with: select or reduce the extra dims first, e.g. "
        "value.isel({dim}=0) or value.mean({dim!r}), or define the data with them, m.data(name, value, dims=...))"
    )


class DataVariable:
    """A labeled input whose value the model holds: `array` in dims order, `value` as the user gave it."""

    def __init__(self, name, dims, dtype, value):
        self.name = name
        self.var = labeled(name, dims, dtype=dtype)
        self.set(value)

    def set(self, value):
        """Check `value` against the variable's dims (InputError naming it) and keep it."""
        try:
            self.array = ModelData(self.name, self.var.type).convert(value)
        except InputError as err:
            raise InputError(f"data {err}") from None
        self.value = value

    @property
    def dims(self):
        return self.var.dims

    def as_dataarray(self):
        """The value as a DataArray with the variable's dims and the coords of those that have them."""
        import xarray as xr  # not at import time: `import dimgraph` loads no xarray

        if is_dataarray(self.value):
            return self.value.transpose(*(d.name for d in self.dims))
        coords = {d.name: d.coords for d in self.dims if d.coords is not None}
        return xr.DataArray(self.array, dims=[d.name for d in self.dims], coords=coords, name=self.name)


class ObservedVariable(DataVariable):
    """Data drawn from `dist`: its log density counts in the model's, draws give the predictive."""

    def __init__(self, name, dist, dims, extra_dims, value):
        self.dist, self.extra_dims = dist, extra_dims
        super().__init__(name, dims, "int64" if dist.discrete else "float64", value)


class Deterministic:
    """An expression of the model's variables kept in the results under `name`."""

    def __init__(self, name, value):
        self.name, self.value = name, value

    @property
    def dims(self):
        return self.value.dims

    def __repr__(self):
        return f"Deterministic({self.name!r}, dims={fmt_dims(self.dims)})"


class Entries(NamedTuple):
    """A model's entries, each a tuple in definition order: what its helpers read (never its private fields)."""

    free: tuple
    observed: tuple
    deterministics: tuple
    data: tuple

    @property
    def sampled(self) -> tuple:
        """The free variables a gradient sampler moves (the continuous ones)."""
        return tuple(v for v in self.free if v.free is not None)

    @property
    def holders(self) -> tuple:
        """The entries whose values the model holds, in the order its compiled functions take them: data, then observed."""
        return self.data + self.observed

    def inputs(self) -> list:
        """The labeled inputs of `holders`."""
        return [v.var for v in self.holders]

    def arrays(self) -> list:
        """The current values of `holders` (arrays in dims order)."""
        return [v.array for v in self.holders]
