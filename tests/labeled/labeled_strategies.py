"""Hypothesis strategies shared by the labeled tests: dims (sized, labeled, or sized by the data) and data on them."""

import numpy as np
import xarray as xr
from hypothesis import settings
from hypothesis import strategies as st

import dimgraph as dg

NAMES = ("a", "b", "c")


def few(share=3):
    """A `share`-th of the profile's examples, at least 4: for tests that compile once per example."""
    return max(4, settings().max_examples // share)


def examples(backend, share=3):
    """Hypothesis examples for `backend`: all of them on python, `few(share)` where each example compiles."""
    return settings().max_examples if backend == "python" else few(share)


@st.composite
def dims_strategy(
    draw, min_n=1, names=NAMES, sizes=(0, 1, 2, 3, 3), kinds=("size", "coords", "coords", "unknown"), shuffle=True
):
    """`(dims, sizes)`: `min_n` to `len(names)` dims, each with a static size, coords (drawn in any order)
    or an unknown size; `sizes` maps each name to the size its data has. `shuffle`: the dims in a drawn order."""
    n = draw(st.integers(min_n, len(names)))
    dims, data_sizes = [], {}
    for name in names[:n]:
        size = draw(st.sampled_from(sizes))
        kind = draw(st.sampled_from(kinds))
        if kind == "coords":
            dims.append(dg.Dim(name, coords=draw(st.permutations([f"{name}{k}" for k in range(size)]))))
        else:
            dims.append(dg.Dim(name, size=size if kind == "size" else None))
        data_sizes[name] = size
    return (tuple(draw(st.permutations(dims))) if shuffle else dims), data_sizes


def wide_values(rng, shape, dtype):
    """Floats in [-5, 5); integers in [-50, 50); booleans half true."""
    if dtype == "bool":
        return rng.uniform(size=shape) > 0.5
    return (rng.uniform(-5, 5, shape) * (10 if np.dtype(dtype).kind in "iu" else 1)).astype(dtype)


def dataarray(rng, dims, sizes, dtype="float64", data_coords=False, values=wide_values):
    """A DataArray of `values(rng, shape, dtype)` on `dims` with their coords; `data_coords`: the dims
    sized by the data get labels from it too."""
    shape = tuple(sizes[d.name] for d in dims)
    coords = {d.name: d.coords for d in dims if d.coords is not None}
    if data_coords:
        coords.update({d.name: [f"u{k}" for k in range(sizes[d.name])] for d in dims if d.size is None})
    return xr.DataArray(values(rng, shape, dtype), dims=[d.name for d in dims], coords=coords)
