"""Sharding for the JAX backend: inputs placed over a device mesh by dim (or axis), XLA does the rest.

`dg.function(..., backend="jax", shard={obs: "data"}, mesh=None)` (the compile
layer resolves the keys into per-input specs, `dimgraph.compile.sharding`, so
this backend never reads Dims):
- a key that is a Dim (or a dim name) shards that dim of every labeled input
  that has it over the named mesh axis;
- a key that is an input variable (positional or labeled) takes a
  `jax.sharding.PartitionSpec` (or a tuple: a mesh axis name, a tuple of names,
  or None per axis of the input's positional layout).
Each sharded input is put on the mesh with `jax.sharding.NamedSharding` before
the jitted call; GSPMD propagates the layout through the graph, so results equal
the unsharded ones (outputs come back gathered, or sharded with output="jax").
`mesh` defaults to a one-axis mesh over all devices named by the one mesh axis
used; its axes are used as `AxisType.Auto` (GSPMD propagation). An axis whose length does not divide evenly over its mesh axes is placed
replicated on that call (uneven sharding is not supported by `device_put`).
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec


def _entry_names(entry):
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, (tuple, list)) else (entry,)


class Placement:
    """Per fgraph input, the mesh axes (or None) of each axis; `place(arrays)` puts them on the mesh."""

    def __init__(self, specs, mesh=None):
        """`specs`: {input position: mesh-axis entry per axis}, as `dimgraph.compile.sharding` resolves `shard=`."""
        used = sorted({n for spec in specs.values() for e in spec for n in _entry_names(e)})
        if mesh is None:
            if len(used) != 1:
                raise ValueError(f"shard= names the mesh axes {used}; pass mesh= (a jax.sharding.Mesh) to lay them out")
            mesh = jax.make_mesh((len(jax.devices()),), tuple(used))
        if not isinstance(mesh, Mesh):
            raise TypeError(f"mesh= must be a jax.sharding.Mesh, got {type(mesh).__name__}")
        # Auto axes: XLA propagates the layout through every op. (Explicit axes, make_mesh's default,
        # type each array's sharding and make ops like a contraction over a sharded axis ask for an
        # out_sharding the graph cannot give.)
        mesh = Mesh(mesh.devices, mesh.axis_names, axis_types=(AxisType.Auto,) * len(mesh.axis_names))
        unknown = [n for n in used if n not in mesh.axis_names]
        if unknown:
            raise ValueError(
                f"shard= names mesh axes {unknown} that the mesh does not have; it has {list(mesh.axis_names)}"
            )
        self.mesh = mesh
        self.specs = specs  # input position -> tuple of mesh-axis entries, one per axis
        self._cache = {}

    def sharding_for(self, k, shape):
        """The NamedSharding of input `k` for an array of `shape` (uneven axes replicated)."""
        spec = tuple(
            e if shape[ax] % int(np.prod([self.mesh.shape[n] for n in _entry_names(e)], dtype=np.int64)) == 0 else None
            for ax, e in enumerate(self.specs[k])
        )
        sharding = self._cache.get(spec)
        if sharding is None:
            sharding = self._cache[spec] = NamedSharding(self.mesh, PartitionSpec(*spec))
        return sharding

    def place(self, arrays):
        arrays = list(arrays)
        for k in self.specs:
            arrays[k] = jax.device_put(arrays[k], self.sharding_for(k, np.shape(arrays[k])))
        return arrays
