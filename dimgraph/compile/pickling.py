"""Pickling compiled functions by value, so they can travel to worker processes.

A `Function` holds closures and, on some backends, machine code or ctypes
pointers that no pickler can carry. What it pickles instead is its recipe: the
user's input and output variables (graph variables pickle as plain objects, so
the whole graph travels with them), the backend's name, the updates, the
rewrite spec and the backend options. Unpickling calls `dg.function` again on
that recipe; the backends' disk caches (numba's generated modules, c's shared
libraries) make this a load rather than a compile when the cache directory is
shared, as it is for workers on one machine. The values the default context holds
for the function's shared variables (`w.set(...)`, updates, RNG states) travel
with it and are the copy's variables' initial values, so the copy computes what
the original would (and nothing is stored per unpickled copy). A jax `mesh=` (it holds
Device objects) travels as its device ids and axis names and is made again from
the receiving process's devices.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dimgraph.core.shared import DEFAULT_CONTEXT


@dataclass(frozen=True)
class Recipe:
    """What `dg.function` was called with: enough to build the same function again."""

    inputs: list
    outputs: Any  # as given: one variable (returned bare) or a list
    backend: str
    updates: dict
    rewrites: Any
    options: dict


@dataclass(frozen=True)
class MeshByIds:
    """A `jax.sharding.Mesh` by value: its devices' ids (in the mesh's shape) and its axis names."""

    ids: np.ndarray
    axis_names: tuple

    def mesh(self):
        import jax
        from jax.sharding import Mesh

        by_id = {d.id: d for d in jax.devices()}
        missing = sorted(set(self.ids.flat) - set(by_id))
        if missing:
            raise RuntimeError(
                f"unpickling a function compiled with mesh=: devices {missing} of its mesh are not among this "
                f"process's devices {sorted(by_id)}"
            )
        devices = np.empty(self.ids.shape, dtype=object)
        devices.flat[:] = [by_id[i] for i in self.ids.flat]
        return Mesh(devices, self.axis_names)


def portable(recipe: Recipe) -> Recipe:
    """`recipe` with a jax mesh described by value (Device objects do not pickle)."""
    mesh = recipe.options.get("mesh")
    if mesh is None:
        return recipe
    ids = np.vectorize(lambda d: d.id, otypes=[np.int64])(mesh.devices)
    return replace(recipe, options={**recipe.options, "mesh": MeshByIds(ids, tuple(mesh.axis_names))})


def shared_values(shared) -> dict:
    """{shared variable: value} for those of `shared` the default context holds a value for."""
    return {s: DEFAULT_CONTEXT._values[s] for s in shared if s in DEFAULT_CONTEXT._values}


def restored(recipe: Recipe, values=None) -> Recipe:
    """`recipe` as this process compiles it, with `values` the initial values of its shared variables
    (the unpickling half of `Function.__reduce__`: the shared variables are the copy's own new objects,
    so they start where the original's were)."""
    for var, value in (values or {}).items():
        var.initial_value = value = np.array(value)  # (a jax array, with output="jax", becomes NumPy)
        value.setflags(write=False)
    mesh = recipe.options.get("mesh")
    if isinstance(mesh, MeshByIds):
        return replace(recipe, options={**recipe.options, "mesh": mesh.mesh()})
    return recipe
