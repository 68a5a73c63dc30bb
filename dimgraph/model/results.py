"""Results in ArviZ's layout: named groups of `xarray.Dataset`s whose variables lead with (chain, draw).

Where arviz (before 1.0) is installed the groups come back as its
`InferenceData`, so `az.summary`, `az.plot_trace`, ... take them directly;
otherwise as an `xarray.DataTree` with one child per group (ArviZ 1.0's own
container). Both give a group by attribute (`idata.posterior`).
"""

from __future__ import annotations


def container(groups):
    """The groups `{name: Dataset}` as InferenceData (arviz before 1.0 installed) or an xarray DataTree."""
    try:
        import arviz
    except ImportError:
        arviz = None
    if arviz is not None and _before_1(arviz.__version__):  # (1.x keeps the name `InferenceData` for its DataTree)
        return arviz.InferenceData(**groups)
    import xarray as xr

    return xr.DataTree.from_dict(dict(groups))


def _before_1(version: str) -> bool:
    return int(version.split(".")[0]) < 1


def group(results, name):
    """The Dataset of group `name` in an InferenceData, a DataTree, or a bare Dataset or group node (taken as that group)."""
    import xarray as xr

    if isinstance(results, xr.Dataset):
        return results
    if isinstance(results, xr.DataTree):
        if name not in results.children and results.data_vars:  # a group's own node (`idata.posterior`)
            return results.to_dataset()
        if name not in results.children:
            raise KeyError(f"the results have no {name!r} group; they have {list(results.children)}")
        return results[name].to_dataset()
    found = getattr(results, name, None)
    if found is None:
        raise KeyError(
            f"the results have no {name!r} group; they have {list(getattr(results, 'groups', lambda: [])())}"
        )
    return found


def add_groups(results, groups):
    """`results` with `groups` added (replacing groups of the same name), in place where the container allows."""
    import xarray as xr

    if isinstance(results, xr.DataTree):
        for name, ds in groups.items():
            results[name] = xr.DataTree(ds)
        return results
    results.extend(type(results)(**groups), join="right")
    return results


def with_chain(ds, chains=1):
    """`ds` (dims (draw, ...)) with a leading chain dim of length 1 and integer draw coords: the prior's layout."""
    import numpy as np

    ds = ds.expand_dims(chain=np.arange(chains))
    return ds.assign_coords(draw=np.arange(ds.sizes["draw"]))
