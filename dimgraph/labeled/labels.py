"""Label lookup: the one place where `sel` keys (labels) become integer positions.

Coordinates are static facts of Dims, so every label is resolved here, when the
graph is built; the compiled kernel only ever sees positions. `positions(dim,
key)` is the single entry point (`sel`, `.loc` and labeled label indexers all
come through it); a ProductDim's tuple and level labels extend it here.

Rules (pandas/xarray): a scalar label gives one position (the dim is dropped);
a list or array of labels gives positions of the same shape; a slice of labels
is inclusive at both ends and works on sorted and unsorted coords as
`pandas.Index.slice_indexer` does; a key that pandas matches to several
labels (a partial date string) keeps the dim. A Dim without coords has the
labels 0..n-1, and `sel` on it is positional as xarray's `sel` on a dim without
an index: negative labels count from the end, a slice excludes its stop.
"""

from __future__ import annotations

import numpy as np

from dimgraph.errors import DimError
from dimgraph.labeled.dims import Dim
from dimgraph.lazy import pandas as pd


class LabelNotFound(KeyError, IndexError):
    """A label (or a position used as a label) that the dim does not have.

    A `KeyError` as pandas raises for labels; also an `IndexError`, which is
    what xarray raises for a position outside a dim without coords.
    """

    def __str__(self):
        return str(self.args[0]) if self.args else ""


def _shown(labels, limit=5):
    labels = list(labels)
    more = f", ... ({len(labels)} in all)" if len(labels) > limit else ""
    return "[" + ", ".join(map(repr, labels[:limit])) + more + "]"


def _is_scalar_label(key, dim) -> bool:
    if isinstance(key, tuple):
        return isinstance(getattr(dim, "coords", None), pd.MultiIndex)
    return np.ndim(key) == 0 and not isinstance(key, (list, slice))


def _as_label_array(key) -> np.ndarray:
    arr = np.asarray(key)
    if arr.dtype.kind == "f" and arr.size == 0:
        arr = arr.astype(np.int64)
    return arr


def _item(v):
    """A NumPy scalar as the Python/pandas value an Index looks up (datetimes as Timestamps, not dates)."""
    if isinstance(v, np.datetime64):
        return pd.Timestamp(v)
    if isinstance(v, np.timedelta64):
        return pd.Timedelta(v)
    return v.item() if isinstance(v, np.generic) else v


def positions(dim: Dim, key, method=None, tolerance=None):
    """The positions along `dim` of the labels in `key`: an int, a slice, or an int64 array of key's shape.

    Missing labels raise `LabelNotFound` (a KeyError) naming the dim and every
    label not found. `method` ("nearest", "pad"/"ffill", "backfill"/"bfill")
    and `tolerance` pick inexact matches as `pandas.Index.get_indexer` does
    (not for slices, as xarray).

    >>> import dimgraph as dg
    >>> from dimgraph.labeled.labels import positions
    >>> country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    >>> positions(country, "Chile"), positions(country, ["Chile", "USA"]).tolist()
    (2, [2, 0])
    >>> positions(country, slice("Italy", "Chile"))
    slice(1, 3, None)
    >>> positions(dg.Dim("age", size=5), 2)
    2
    """
    if method is None and tolerance is None and isinstance(key, (tuple, list)):
        from dimgraph.labeled.stacking import tuple_positions  # tuples on product/MultiIndex dims

        found = tuple_positions(dim, key)
        if found is not None:
            return found
    if method is not None or tolerance is not None:
        if isinstance(key, slice):
            raise TypeError(f"sel: `method` cannot be used with a slice (dim {dim.name!r}), as in xarray")
        if dim.coords is None and dim.size is None:
            raise DimError(f"sel: dim {dim.name!r} has neither coords nor a size, so `method` has no labels to match")
        return _inexact_positions(dim, key, method, tolerance)
    if isinstance(key, slice):
        return _slice_positions(dim, key)
    if dim.coords is None:
        return _positions_without_coords(dim, key)
    index = dim.labels
    if _is_scalar_label(key, dim):
        key = _item(key)
        try:
            loc = index.get_loc(key)
        except (KeyError, TypeError, pd.errors.InvalidIndexError):
            loc = None
        if isinstance(loc, slice) or (isinstance(loc, np.ndarray) and loc.dtype == bool):
            # one key for several labels (a partial date string, "2020-01"): the dim stays, as in pandas
            return np.arange(len(index), dtype=np.int64)[loc]
        if not isinstance(loc, (int, np.integer)):
            raise LabelNotFound(f"sel: dim {dim.name!r} has no label {key!r}{_labels_hint(dim)}")
        return int(loc)
    arr = _as_label_array(key)
    if arr.size == 0:
        return np.zeros(arr.shape, dtype=np.int64)
    flat = arr.reshape(-1)
    try:
        found = index.get_indexer(flat)
    except (TypeError, ValueError):
        found = np.array([index.get_loc(v) if v in index else -1 for v in flat.tolist()], dtype=np.int64)
    missing = flat[found < 0]
    if missing.size:
        raise LabelNotFound(
            f"sel: dim {dim.name!r} has no labels {_shown(list(dict.fromkeys(missing.tolist())))}{_labels_hint(dim)}"
        )
    return found.astype(np.int64).reshape(arr.shape)


def _inexact_positions(dim, key, method, tolerance):
    scalar = _is_scalar_label(key, dim)
    arr = _as_label_array([_item(key)] if scalar else key)
    flat = arr.reshape(-1)
    try:
        found = dim.labels.get_indexer(flat, method=method, tolerance=tolerance)
    except (TypeError, ValueError) as e:
        raise LabelNotFound(f"sel: dim {dim.name!r}: cannot match {key!r} with method={method!r}: {e}") from None
    missing = flat[found < 0]
    if missing.size:
        raise LabelNotFound(
            f"sel: dim {dim.name!r} has no labels matching {_shown(list(dict.fromkeys(missing.tolist())))} "
            f"(method={method!r}, tolerance={tolerance!r}){_labels_hint(dim)}"
        )
    return int(found[0]) if scalar else found.astype(np.int64).reshape(arr.shape)


def _labels_hint(dim):
    if dim.coords is None:
        return (
            f" (it has no coords, so its labels are the positions 0..{dim.size - 1}, or -{dim.size}..-1 from the end)"
        )
    return f"; its labels are {_shown(dim.coords.tolist())}"


def _slice_positions(dim: Dim, key: slice):
    """A label slice as a positional slice: inclusive (pandas) with coords, positional without."""
    if dim.coords is None:
        for part in (key.start, key.stop, key.step):
            if part is not None and not isinstance(part, (int, np.integer)):
                raise LabelNotFound(
                    f"sel: dim {dim.name!r} has no coords, so a slice on it takes positions; got {key!r}"
                )
        return slice(*[None if p is None else int(p) for p in (key.start, key.stop, key.step)])
    try:
        found = dim.coords.slice_indexer(_item(key.start), _item(key.stop), _item(key.step))
    except KeyError as e:
        raise LabelNotFound(f"sel: dim {dim.name!r}: cannot slice by {key!r}: {e.args[0] if e.args else e}") from None
    except TypeError as e:
        raise LabelNotFound(f"sel: dim {dim.name!r}: cannot slice its labels by {key!r} ({e})") from None
    if not isinstance(found, slice):  # pandas gives an array for some unsorted cases
        return np.asarray(found, dtype=np.int64)
    return slice(*[None if p is None else int(p) for p in (found.start, found.stop, found.step)])


def _positions_without_coords(dim: Dim, key):
    """Labels of a dim without coords are its positions: xarray's `sel` there is `isel` (negatives count from the end).

    Positions outside the dim are refused now when its size is known, else by the
    run-time bounds check of the gather.
    """
    arr = _as_label_array(key)
    if arr.dtype.kind not in "iu":
        bad = arr.reshape(-1)[:5].tolist()
        raise LabelNotFound(
            f"sel: dim {dim.name!r} has no coords, so its labels are its positions (integers); {_shown(bad)} are not"
        )
    if dim.size is not None:
        bad = arr[(arr < -dim.size) | (arr >= dim.size)]
        if bad.size:
            shown = repr(int(arr)) if arr.ndim == 0 else "s " + _shown(sorted(set(bad.tolist())))
            raise LabelNotFound(
                f"sel: dim {dim.name!r} has no label{shown if arr.ndim else ' ' + shown}{_labels_hint(dim)}"
            )
    return int(arr) if arr.ndim == 0 else arr.astype(np.int64)
