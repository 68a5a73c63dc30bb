"""`xarray.Dataset` in and out of compiled functions.

In: `f(ds)` fills each labeled input from the data variable of the same name
(other inputs come by keyword); the Dataset's other variables are ignored, as a
model's data usually holds more than one function reads. Out:
`dg.function(..., output="dataset")` returns one Dataset holding the outputs
under their names (labeled outputs with their coords, 0-d positional ones as
scalars).
"""

from __future__ import annotations

from dimgraph.errors import InputError
from dimgraph.labeled.ops import is_labeled


def is_dataset(x) -> bool:
    return type(x).__name__ == "Dataset" and hasattr(x, "data_vars")


def bind_dataset(function, ds, rest, kwargs):
    """Keyword arguments for `function` with its labeled inputs taken from `ds` by name."""
    if rest:
        raise InputError(
            f"a Dataset fills the inputs by data-variable name; give the other inputs by keyword, "
            f"got {len(rest)} more positional values"
        )
    kwargs = dict(kwargs)
    for v in function.inputs:
        if is_labeled(v) and v.name in ds.data_vars:
            if v.name in kwargs:
                raise InputError(f"input {v.name!r} given twice (as a Dataset variable and by keyword)")
            kwargs[v.name] = ds[v.name]
    return kwargs


def dataset_names(outputs) -> list:
    """The Dataset variable name of each output; a TypeError before compiling when one cannot be one."""
    names = []
    for k, o in enumerate(outputs):
        if not o.name:
            raise TypeError(f'output="dataset": output {k} ({o!r}) has no name; name it with .rename("name") or, positional, .name = "name"')
        if not is_labeled(o) and o.type.ndim:
            raise TypeError(
                f'output="dataset": output {o.name!r} is positional with {o.type.ndim} axes, so it has no dims; '
                "give it dims with dg.from_positional(t, dims)"
            )
        if o.name in names:
            raise TypeError(f'output="dataset": two outputs are named {o.name!r}')
        names.append(o.name)
    return names


def to_dataset(names, values):
    """One Dataset of the outputs (DataArrays, or 0-d arrays) under their names."""
    import xarray as xr

    return xr.Dataset({n: v if hasattr(v, "dims") else ((), v) for n, v in zip(names, values)})
