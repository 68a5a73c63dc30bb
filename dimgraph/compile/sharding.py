"""`shard=` of `dg.function` resolved into positional per-input specs, so that no backend reads Dims.

A key that is a Dim (or a dim name) shards that dim of every labeled input that
has it over the named mesh axis; a key that is an input variable (positional or
labeled) takes one mesh-axis entry (a name, a tuple of names, or None) per axis
of the input's positional layout. The result maps input positions to one entry
per axis (the jax backend's `Placement` lays them on the mesh).
"""

from __future__ import annotations

from dimgraph.core.graph import Variable
from dimgraph.errors import DimError


def resolve_shard(shard, inputs) -> dict:
    """{input position: tuple of mesh-axis entries, one per axis} for `shard` over the function's `inputs`."""
    if not isinstance(shard, dict):
        raise TypeError(f"shard= must be a dict {{dim or input: mesh axis}}, got {type(shard).__name__}")
    specs = {}
    for key, value in shard.items():
        if isinstance(key, Variable):
            _shard_input(specs, inputs, key, value)
        else:
            _shard_dim(specs, inputs, key, value)
    return specs


def _shard_input(specs, inputs, var, value):
    k = next((k for k, v in enumerate(inputs) if v is var), None)
    if k is None:
        raise ValueError(f"shard=: {var!r} is not an input of this function")
    ndim = var.type.ndim if hasattr(var.type, "ndim") else len(var.dims)
    entries = (value,) if isinstance(value, str) else tuple(value)
    if len(entries) > ndim:
        raise ValueError(
            f"shard=: the spec {value!r} for {var!r} has {len(entries)} entries but the input has {ndim} axes"
        )
    specs[k] = tuple(entries) + (None,) * (ndim - len(entries))


def _shard_dim(specs, inputs, key, axis_name):
    name = key if isinstance(key, str) else getattr(key, "name", None)
    if name is None:
        raise TypeError(f"shard= keys must be dims, dim names or input variables, got {key!r}")
    if not isinstance(axis_name, str):
        raise TypeError(f"shard=: dim {name!r} must map to a mesh axis name, got {axis_name!r}")
    found = False
    for k, v in enumerate(inputs):
        dims = getattr(v, "dims", None)
        if not dims:
            continue
        names = [getattr(d, "name", d) for d in dims]
        if name in names:
            spec = list(specs.get(k, (None,) * len(names)))
            spec[names.index(name)] = axis_name
            specs[k] = tuple(spec)
            found = True
    if not found:
        have = sorted({getattr(d, "name", d) for v in inputs for d in (getattr(v, "dims", None) or ())})
        raise DimError(f"shard=: no input has dim {name!r}; the inputs' dims are {have}")
