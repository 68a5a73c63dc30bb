"""Labeled indexing: `isel`, `sel`, `x[...]`, `x.loc[...]` and the functional updates `.set`/`.inc`.

Where it sits: users call these on labeled variables; they build one `Isel`
node (or `IselUpdate` for `.set`/`.inc`), which `dimgraph.lower.indexing`
lowers to the core `Subtensor`/`AdvancedSubtensor` ops. Every label is turned
into positions here, when the graph is built (`labels.positions`), so `sel` is
`isel` on static positions and the compiled kernel never sees a label.

Semantics are xarray's:
- an int drops the dim; a slice keeps it (a new Dim holding the selected
  coords, or its size; symbolic bounds make a dim of run-time size); a plain
  list/array of positions keeps the dim name (outer indexing: each dim
  independently);
- a labeled integer indexer indexes pointwise (vectorized indexing): the
  result has the indexer's dims in place of the indexed dim; several
  labeled indexers broadcast together by dim name;
- a boolean mask on one dim keeps the positions where it is true; a symbolic
  mask makes a dim whose size is known only at run time.

The result dims are xarray's: for each dim of `x` in order, a sliced dim
stays where it was, an indexed dim is replaced by its indexer's dims (each
dim once, in order of first appearance). A dim of `x` kept by a slice that
an indexer also carries is indexed pointwise with it (as xarray does).

On a dim sized by the data, slices, position lists and static masks make
derived dims (`dims.derived_dim`), so outputs carry the labels an input
DataArray gives the selected positions.

Known differences from xarray: outputs carry coords only on dims (xarray
would also keep the indexed dim's coord as a non-dimension coordinate); a
selection that repeats a label of a dim with coords is a DimError (a Dim's
coords are unique), where a labeled indexer does the same selection fine; the
dim a symbolic mask leaves has no coords (its positions are known only at run
time); `sel` on a Dim without coords takes its labels as positions when the graph
is built, so a compiled function refuses (InputError) a DataArray that labels
that dim otherwise, where xarray would look its labels up.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from dimgraph.core.graph import Apply, Constant, Variable
from dimgraph.core.subtensor import SYMBOLIC
from dimgraph.errors import DimError
from dimgraph.labeled.basic import as_labeled, constant, from_positional, is_dataarray
from dimgraph.labeled.dims import Dim, ProductDim, clash, derived_dim, fmt_dims, resolve_dims, unify_dims
from dimgraph.labeled.labels import positions
from dimgraph.labeled.math import as_operand, astype, operands
from dimgraph.labeled.ops import Arange, LabeledOp, is_labeled
from dimgraph.labeled.type import LabeledType

# ---------------------------------------------------------------------------
# ops


def n_inputs(entry) -> int:
    """How many inputs an entry reads: an indexer, or the symbolic parts of a slice."""
    if entry[0] == "index":
        return 1
    if entry[0] == "slice":
        return sum(p == SYMBOLIC for p in entry[1:4])
    return 0


def entry_inputs(entries, inputs) -> list:
    """The inputs of each entry, in entry order (indexers and symbolic slice parts interleave)."""
    out, k = [], 0
    for e in entries:
        n = n_inputs(e)
        out.append(list(inputs[k : k + n]))
        k += n
    return out


def _check_entries(what, entries, x, inputs):
    if len(entries) != x.type.ndim:
        raise DimError(f"{what}: {len(entries)} index entries for the {x.type.ndim} dims {fmt_dims(x.type.dims)}")
    if sum(n_inputs(e) for e in entries) != len(inputs):
        raise TypeError(f"{what}: the entries {entries} do not match the {len(inputs)} index inputs given")
    for e, ins in zip(entries, entry_inputs(entries, inputs)):
        if e[0] == "slice":
            for v in ins:
                if not is_labeled(v) or v.type.ndim != 0 or np.dtype(v.type.dtype).kind not in "iu":
                    raise TypeError(f"{what}: symbolic slice parts must be 0-d labeled integers, got {v!r}")


def selection_dims(what, entries, x_dims, inputs) -> tuple:
    """The dims of `x[entries]`: xarray's order (sliced dims in place, indexed dims -> the indexers' dims)."""
    indexers = [ins[0] for e, ins in zip(entries, entry_inputs(entries, inputs)) if e[0] == "index"]
    for v in indexers:
        if not is_labeled(v) or np.dtype(v.type.dtype).kind not in "iu":
            raise TypeError(f"{what}: indexers must be labeled integer variables, got {v!r}")
    unify_dims(what, indexers)  # indexers broadcast by dim name: one Dim per name
    indexed_names = {d.name for v in indexers for d in v.type.dims}
    out, where = {}, {}
    it = iter(indexers)
    for d, e in zip(x_dims, entries):
        if e[0] == "int":
            continue
        if e[0] == "slice":
            new = e[4]
            if new.name in indexed_names:
                raise DimError(f"{what}: the sliced dim {new.name!r} is also an indexer's dim; index it pointwise")
            found = [new]
            label = f"the slice of {d.name!r}"
        elif e[0] == "index":
            v = next(it)
            found = list(v.type.dims)
            label = f"the indexer of {d.name!r}"
        else:
            raise TypeError(f"{what}: invalid index entry {e!r}")
        for nd in found:
            prev = out.get(nd.name)
            if prev is None:
                out[nd.name], where[nd.name] = nd, label
            elif prev != nd:
                raise clash(what, nd.name, prev, where[nd.name], nd, label)
    return tuple(out.values())


def _entries_str(entries):
    """`1, ::-1, idx`: one part per dim, as a NumPy index would read."""
    parts = []
    for e in entries:
        if e[0] == "int":
            parts.append(str(e[1]))
        elif e[0] == "slice":
            parts.append(":".join("" if p is None else str(p) for p in e[1:4]).rstrip(":") or ":")
        else:
            parts.append("idx")
    return ", ".join(parts)


@dataclass(frozen=True)
class Isel(LabeledOp):
    """`x` indexed by position: `entries` has one entry per dim of `x`, and the indexers are inputs.

    An entry is `("int", k)` (drops the dim), `("slice", start, stop, step, new_dim)`
    (keeps the dim as `new_dim`; a part `SYMBOLIC` reads the next input, a 0-d
    labeled integer) or `("index",)` (the next input, a labeled integer array,
    indexes that dim pointwise). `.set`/`.inc` of the result read this node.
    `by_label`: the names of dims without coords that `sel` indexed, its labels
    taken as positions (a compiled function refuses data that labels them otherwise).
    `drop`: the labels of dims an int drops are not kept as scalar coords (xarray's `drop=True`).
    """

    entries: tuple
    by_label: tuple = ()
    drop: bool = False

    def make_node(self, x, *indexers):
        if not is_labeled(x):
            raise TypeError(f"isel: expected a labeled variable, got {x!r}")
        _check_entries("isel", self.entries, x, indexers)
        dims = selection_dims("isel", self.entries, x.type.dims, indexers)
        return Apply(self, [x, *indexers], [LabeledType(x.type.dtype, dims)])

    def __str__(self):
        return f"isel[{_entries_str(self.entries)}]"


@dataclass(frozen=True)
class IselUpdate(LabeledOp):
    """The whole of `x` with the selection `Isel(entries)` set to (`mode="set"`) or incremented by `v`.

    `v` has dims among the selection's (it is broadcast by name over the others);
    `inc` accumulates at repeated positions, as `np.add.at`.
    """

    entries: tuple
    mode: str = "set"
    by_label: tuple = ()

    def make_node(self, x, v, *indexers):
        if self.mode not in ("set", "inc"):
            raise ValueError(f"IselUpdate: mode must be 'set' or 'inc', got {self.mode!r}")
        if not is_labeled(x) or not is_labeled(v):
            raise TypeError(f"{self.mode}: expected labeled variables, got {x!r} and {v!r}")
        _check_entries(self.mode, self.entries, x, indexers)
        sel = selection_dims(self.mode, self.entries, x.type.dims, indexers)
        by_name = {d.name: d for d in sel}
        for d in v.type.dims:
            if d.name not in by_name:
                raise DimError(
                    f"{self.mode}: the value has dim {d.name!r}, which the selection {fmt_dims(sel)} lacks; "
                    "a value is broadcast over the selection, never the other way"
                )
            if by_name[d.name] != d:
                raise clash(self.mode, d.name, d, "the value", by_name[d.name], "the selection")
        if v.type.dtype != x.type.dtype:
            raise TypeError(f"{self.mode}: the value has dtype {v.type.dtype}, expected {x.type.dtype} (x's dtype)")
        return Apply(self, [x, v, *indexers], [LabeledType(x.type.dtype, x.type.dims)])

    def __str__(self):
        return f"{self.mode}[{_entries_str(self.entries)}]"


@dataclass(frozen=True)
class MaskPositions(LabeledOp):
    """The positions where a 1-d boolean mask is true (int64), on `dim` (whose size is known at run time, or a
    Dim of known size the selection was matched with by name: the count is checked then)."""

    dim: Dim

    def make_node(self, mask):
        if not is_labeled(mask) or mask.type.dtype != "bool" or mask.type.ndim != 1:
            raise TypeError(f"mask positions: expected a 1-d labeled boolean mask, got {mask!r}")
        return Apply(self, [mask], [LabeledType("int64", (self.dim,))])

    def __str__(self):
        return f"nonzero{{{self.dim.name}}}"


# ---------------------------------------------------------------------------
# building index entries


def _var_label(x):
    return repr(x.name) if x.name else "the variable"


def _check_position(k, dim, what):
    if dim.size is not None and not -dim.size <= k < dim.size:
        raise IndexError(f"{what}: position {k} is out of range for dim {dim.name!r} of size {dim.size}")


def _check_positions(arr, dim, what):
    if dim.size is None or arr.size == 0:
        return
    bad = arr[(arr < -dim.size) | (arr >= dim.size)]
    if bad.size:
        shown = sorted(set(bad.tolist()))[:5]
        raise IndexError(f"{what}: positions {shown} are out of range for dim {dim.name!r} of size {dim.size}")


def _normal(p):
    return None if p is None else int(p)


def sliced_dim(dim: Dim, sl: slice) -> Dim:
    """The dim `dim[sl]` leaves: the selected coords, the new size, or a derived dim of unknown size."""
    start, stop, step = _normal(sl.start), _normal(sl.stop), _normal(sl.step)
    if dim.size is not None:
        if dim.coords is not None:
            return Dim(dim.name, coords=dim.coords[start:stop:step])
        return Dim(dim.name, size=len(range(dim.size)[start:stop:step]))
    if start in (None, 0) and stop is None and step in (None, 1):
        return dim
    text = ":".join("" if p is None else str(p) for p in (start, stop, step)).rstrip(":")
    return derived_dim(dim, f"isel({dim.origin or dim.name}, {text})", lambda index: index[start:stop:step])


def selected_dim(dim: Dim, pos: np.ndarray, what) -> Dim:
    """The dim an outer (1-d) selection of positions leaves: the selected coords, or the new size.

    On a dim sized by the data it is a derived dim, so outputs carry the labels
    that the input DataArray's coords give the selected positions (as xarray).
    """
    if dim.coords is None and dim.size is None:
        shown = ", ".join(map(str, pos[:6].tolist())) + (
            f", ... #{hashlib.blake2b(pos.tobytes(), digest_size=6).hexdigest()}" if len(pos) > 6 else ""
        )
        taken = pos.copy()
        return derived_dim(dim, f"isel({dim.origin or dim.name}, [{shown}])", lambda index: index[taken])
    if dim.coords is None:
        return Dim(dim.name, size=len(pos))
    coords = dim.coords[pos]
    if coords.has_duplicates:
        dups = coords[coords.duplicated()].unique().tolist()[:3]
        raise DimError(
            f"{what}: the selection repeats the labels {dups} of dim {dim.name!r}, and a Dim's coords are "
            "unique; to repeat them, index with a labeled indexer on a new dim (vectorized indexing)"
        )
    return Dim(dim.name, coords=coords)


def _outer(dim, pos, what):
    """A plain 1-d array of positions as a labeled constant on the dim it leaves."""
    pos = np.asarray(pos, dtype=np.int64)
    _check_positions(pos, dim, what)
    if dim.size is not None:
        pos = np.where(pos < 0, pos + dim.size, pos)
    return constant(pos, dims=(selected_dim(dim, pos, what),))


def _mask(dim, value, what):
    """A boolean mask on `dim`: static ones become positions now, symbolic ones a run-time count."""
    if is_labeled(value):
        if value.type.ndim != 1 or value.type.dims[0].name != dim.name:
            raise IndexError(
                f"{what}: a boolean indexer of dim {dim.name!r} must be on that dim alone, got dims {fmt_dims(value.type.dims)}"
            )
        if value.type.dims[0] != dim:
            raise clash(what, dim.name, value.type.dims[0], "the mask", dim, "the variable")
    if isinstance(value, Constant) or not isinstance(value, Variable):
        arr = np.asarray(value.data if isinstance(value, Constant) else value)
        if arr.ndim != 1 or (dim.size is not None and arr.shape[0] != dim.size):
            raise IndexError(
                f"{what}: a boolean mask on dim {dim.name!r} must be 1-d with {dim.size} entries, got shape {arr.shape}"
            )
        if dim.size is not None:
            return _outer(dim, np.flatnonzero(arr), what)
        # the data brings the dim's size: the mask stays a constant on the dim, so a length mismatch is
        # caught; the positions are static, so the labels the data gives them follow
        taken = np.flatnonzero(arr)
        shown = "".join("1" if b else "0" for b in arr[:32].tolist()) + ("..." if arr.size > 32 else "")
        digest = hashlib.blake2b(np.packbits(arr).tobytes(), digest_size=6).hexdigest()
        new = derived_dim(dim, f"isel({dim.origin or dim.name}, mask {shown} #{digest})", lambda index: index[taken])
        return MaskPositions(new)(constant(arr, dims=(dim,)))
    if is_labeled(value):
        mask = value
    else:
        if value.type.ndim != 1:
            raise IndexError(f"{what}: a boolean mask on dim {dim.name!r} must be 1-d, got {value!r}")
        mask = from_positional(value, (dim,))
    new = Dim(dim.name, origin=f"isel({dim.origin or dim.name}, mask {mask.name or hex(id(mask))})")
    return MaskPositions(new)(mask)


def _is_mask_positions(var) -> bool:
    return var.owner is not None and isinstance(var.owner.op, MaskPositions)


def adopt_mask_dim(var, dims_by_name):
    """The positions of a symbolic mask put on the Dim of the same name in `dims_by_name` (another indexer's,
    or an update value's), as xarray matches them by name: the mask's count is checked against that Dim's
    size when the function runs. Anything else is returned as it is."""
    if not _is_mask_positions(var):
        return var
    own = var.owner.op.dim
    other = dims_by_name.get(own.name)
    if other is None or other == own or own.size is not None or other.size is None:
        return var
    return MaskPositions(other)(var.owner.inputs[0])


def _labeled_indexer(dim, value, what):
    kind = np.dtype(value.type.dtype).kind
    if kind == "b":
        return _mask(dim, value, what)
    if kind not in "iu":
        raise IndexError(f"{what}: indexers of dim {dim.name!r} must be integers or booleans, got {value!r}")
    if isinstance(value, Constant):
        _check_positions(np.asarray(value.data), dim, what)
    return value


def _entry(dim, value, what):
    """One index entry for `dim`: ("int", k), ("slice", ...), or ("index", labeled indexer)."""
    if isinstance(value, tuple):
        value = _named_indexer(dim, value, what)
    if is_dataarray(value):
        value = as_labeled(value)
    if isinstance(value, slice):
        return _slice_entry(dim, value, what)
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{what}: a boolean scalar is not an index (dim {dim.name!r}); use a boolean array")
    if isinstance(value, (int, np.integer)):
        _check_position(int(value), dim, what)
        return ("int", int(value)), None
    if is_labeled(value):
        return ("index",), _labeled_indexer(dim, value, what)
    if isinstance(value, Variable):  # positional
        kind = np.dtype(value.type.dtype).kind
        if kind == "b":
            return ("index",), _mask(dim, value, what)
        if value.type.ndim == 0 and kind in "iu":
            if isinstance(value, Constant):
                _check_position(int(value.data), dim, what)
                return ("int", int(value.data)), None
            return ("index",), from_positional(value, ())
        raise TypeError(
            f"{what}: a positional tensor {value!r} cannot index dim {dim.name!r}; give it dims with "
            "dg.from_positional(t, dims) (vectorized indexing), or use a 0-d integer"
        )
    arr = np.asarray(value)
    if arr.dtype.kind == "f" and arr.size == 0:
        arr = arr.astype(np.int64)
    if arr.dtype.kind == "b":
        return ("index",), _mask(dim, arr, what)
    if arr.dtype.kind not in "iu":
        raise IndexError(f"{what}: dim {dim.name!r} takes integer positions, got {value!r}")
    if arr.ndim == 0:
        _check_position(int(arr), dim, what)
        return ("int", int(arr)), None
    if arr.ndim > 1:
        raise IndexError(
            f"{what}: a plain array with {arr.ndim} axes cannot index dim {dim.name!r}; give it dims "
            "with dg.constant(array, dims=...) (vectorized indexing)"
        )
    return ("index",), _outer(dim, arr, what)


def _named_indexer(dim, value, what):
    """xarray's `(dims, positions)` indexer: positional positions (an array or a tensor) given dim names.

    A labeled indexer already has dims; naming it again is refused (rename it instead), as PyTensor's xtensor does.
    """
    if len(value) != 2:
        raise IndexError(f"{what}: a tuple indexer of dim {dim.name!r} is (dims, positions), got {len(value)} items")
    names, data = value
    names = (names,) if isinstance(names, (str, Dim)) else tuple(names)
    if not all(isinstance(n, (str, Dim)) for n in names):
        raise IndexError(f"{what}: a tuple indexer of dim {dim.name!r} names its dims with strings, got {names!r}")
    if is_labeled(data) or is_dataarray(data):
        raise IndexError(
            f"{what}: the labeled indexer {_var_label(data)} already has dims; naming it with a tuple "
            f"({tuple(getattr(n, 'name', n) for n in names)}) is not supported: use .rename() on it instead"
        )
    positional = data if isinstance(data, Variable) else None
    shape = positional.type.shape if positional is not None else np.shape(data)
    if len(shape) != len(names):
        raise IndexError(
            f"{what}: the tuple indexer of dim {dim.name!r} names {len(names)} dims for positions with {len(shape)} axes"
        )
    dims = tuple(n if isinstance(n, Dim) else Dim(n, size=size) for n, size in zip(names, shape))
    if positional is not None:
        return from_positional(positional, dims)
    arr = np.asarray(data)
    return constant(arr.astype(np.int64) if arr.dtype.kind == "f" and arr.size == 0 else arr, dims=dims)


def _slice_part(dim, p, what):
    """A slice bound or step: an int, None, or a 0-d labeled int64 (from a 0-d integer variable)."""
    if p is None:
        return None
    if isinstance(p, (int, np.integer)) and not isinstance(p, (bool, np.bool_)):
        return int(p)
    if isinstance(p, Variable) and p.type.ndim == 0 and np.dtype(p.type.dtype).kind in "iu":
        if isinstance(p, Constant):
            return int(p.data)
        return p if is_labeled(p) else from_positional(p, ())
    raise TypeError(f"{what}: slice bounds of dim {dim.name!r} must be ints, None or 0-d integer variables, got {p!r}")


def _slice_entry(dim, value, what):
    parts = [_slice_part(dim, p, what) for p in (value.start, value.stop, value.step)]
    if isinstance(parts[2], int) and parts[2] == 0:
        raise ValueError(f"{what}: slice step cannot be zero (dim {dim.name!r})")
    symbolic = [p for p in parts if isinstance(p, Variable)]
    if not symbolic:
        sl = slice(*parts)
        return ("slice", sl.start, sl.stop, sl.step, sliced_dim(dim, sl)), []
    shown = ":".join("" if p is None else p.name or "?" if isinstance(p, Variable) else str(p) for p in parts)
    # one variable (as the user gave it) as a bound makes one dim: x[:n] and x.isel(t=slice(None, n)) agree
    given = (value.start, value.stop, value.step)
    tag = hashlib.blake2b(
        repr([id(g) if isinstance(p, Variable) else p for p, g in zip(parts, given)]).encode(), digest_size=6
    ).hexdigest()
    new = Dim(dim.name, origin=f"isel({dim.origin or dim.name}, {shown.rstrip(':')} #{tag})")
    entry = ("slice", *[SYMBOLIC if isinstance(p, Variable) else p for p in parts], new)
    return entry, symbolic


def _slice_as_indexer(dim, entry, parts):
    """The positions of a slice entry as a labeled integer indexer on the sliced dim."""
    new = entry[4]
    if dim.size is not None and not parts:
        return constant(np.arange(dim.size)[entry[1] : entry[2] : entry[3]], dims=(new,))
    full = Arange(dim)()
    if new == dim:
        return full
    return Isel((entry,))(full, *parts)


def _key_dict(x, indexers, kwargs, what, missing_dims="raise"):
    if indexers is not None and not isinstance(indexers, dict):
        raise TypeError(f"{what}: give a dict {{dim: index}} or keyword arguments, got {indexers!r}")
    if missing_dims not in ("raise", "warn", "ignore"):
        raise ValueError(f"{what}: missing_dims must be 'raise', 'warn' or 'ignore', got {missing_dims!r}")
    given = dict(indexers or {})
    for k, v in kwargs.items():
        if k in given:
            raise DimError(f"{what}: dim {k!r} is given twice")
        given[k] = v
    out = {}
    names = set(x.type.names)
    for ref, value in given.items():
        name = ref.name if isinstance(ref, Dim) else ref
        if missing_dims != "raise" and name not in names:
            if missing_dims == "warn":
                import warnings

                warnings.warn(f"{what}: {_var_label(x)} has no dim {name!r}; its key is ignored", stacklevel=4)
            continue
        (d,) = resolve_dims(x.type.dims, ref, what, _var_label(x))
        if d in out:
            raise DimError(f"{what}: dim {d.name!r} is given twice")
        out[d] = value
    return out


def _as_x(x, what):
    return as_operand(x, what)


def isel(x, indexers=None, drop=False, missing_dims="raise", **kwargs):
    """`x` indexed by position along named dims (xarray's `isel`), keys a Dim or a name.

    Ints drop the dim; slices and plain lists keep it (with the selected coords);
    labeled integer indexers index pointwise, their dims replacing the indexed dim.
    A key naming no dim of `x` is a DimError (`missing_dims="ignore"`/`"warn"`: skipped).
    `drop=True`: the labels of dims an int drops are not kept as scalar coords.

    >>> import dimgraph as dg, numpy as np
    >>> group, obs = dg.Dim("group", coords=["a", "b", "c"]), dg.Dim("obs")
    >>> mu = dg.labeled("mu", dims=(group,))
    >>> group_idx = dg.labeled("group_idx", dims=(obs,), dtype="int64")
    >>> y = mu.isel(group=group_idx)
    >>> y.dims == (obs,)
    True
    >>> dg.function([mu, group_idx], y)(np.array([1.0, 2.0, 3.0]), np.array([2, 0, 2])).values.tolist()
    [3.0, 1.0, 3.0]
    >>> mu.isel(group=[2, 0]).dims
    (Dim('group', coords=['c', 'a']),)
    """
    x = _as_x(x, "isel")
    return _isel(x, _key_dict(x, indexers, kwargs, "isel", missing_dims), drop=drop)


def _isel(x, keys, by_label=(), drop=False):
    """`x` indexed by `keys` ({Dim of x: key}); `by_label` as `Isel.by_label`."""
    entries, values = [], []  # values: the inputs of each entry
    for d in x.type.dims:
        if d in keys:
            e, v = _entry(d, keys[d], "isel")
            v = v if isinstance(v, list) else [] if v is None else [v]
        else:
            e, v = ("slice", None, None, None, d), []
        entries.append(e)
        values.append(v)
    indexer_dims = {
        nd.name: nd
        for e, v in zip(entries, values)
        if e[0] == "index" and not _is_mask_positions(v[0])
        for nd in v[0].type.dims
    }
    values = [[adopt_mask_dim(i, indexer_dims) for i in v] for v in values]
    indexed_names = {nd.name for e, v in zip(entries, values) if e[0] == "index" for nd in v[0].type.dims}
    for k, (d, e) in enumerate(zip(x.type.dims, entries)):
        if e[0] == "slice" and e[4].name in indexed_names:
            entries[k], values[k] = ("index",), [_slice_as_indexer(d, e, values[k])]
    return Isel(tuple(entries), tuple(by_label), bool(drop))(x, *[v for vs in values for v in vs])


def _sel_value(dim, value, what, method=None, tolerance=None):
    """A `sel` key for `dim` as an `isel` key: labels -> positions (static), masks and positions pass."""
    if is_dataarray(value):
        value = as_labeled(value)
    if is_labeled(value) or isinstance(value, Variable):
        if np.dtype(value.type.dtype).kind == "b":
            return value
        if isinstance(value, Constant):
            pos = positions(dim, np.asarray(value.data), method, tolerance)
            return constant(pos, dims=value.type.dims) if is_labeled(value) else int(pos) if np.ndim(pos) == 0 else pos
        if dim.coords is None and method is None and np.dtype(value.type.dtype).kind in "iu":
            return value  # the labels of a dim without coords are its positions
        raise TypeError(
            f"{what}: labels for dim {dim.name!r} must be known when the graph is built (constants); "
            f"got the symbolic {value!r}; index by position with isel instead"
        )
    if not isinstance(value, (slice, tuple)) and not (
        isinstance(value, list) and value and isinstance(value[0], tuple)
    ):
        arr = np.asarray(value)
        if arr.dtype.kind == "b" and arr.ndim == 1:
            return arr
        if arr.ndim > 1:
            raise IndexError(
                f"{what}: a plain array with {arr.ndim} axes cannot select on dim {dim.name!r}; give it dims "
                "with dg.constant(labels, dims=...) (vectorized selection)"
            )
    return positions(dim, value, method, tolerance)


def sel(x, indexers=None, method=None, tolerance=None, drop=False, **kwargs):
    """`x` selected by label along named dims (xarray's `sel`); labels become positions at build time.

    A label drops the dim; a list of labels or a slice of labels (inclusive)
    keeps it with the selected coords; a labeled constant of labels selects
    pointwise. A dim without coords has the labels 0..n-1. A missing label is
    a KeyError naming the dim and the labels. `method`/`tolerance` match
    inexact labels as in xarray ("nearest", "pad"/"ffill", "backfill"/"bfill").

    >>> import dimgraph as dg, numpy as np
    >>> country, obs = dg.Dim("country", coords=["USA", "Italy", "Chile"]), dg.Dim("obs")
    >>> x = dg.constant(np.array([1.0, 2.0, 3.0]), dims=(country,))
    >>> x.sel(country=["Chile", "USA"]).eval().values.tolist()
    [3.0, 1.0]
    >>> x.sel(country=slice("Italy", "Chile")).dims
    (Dim('country', coords=['Italy', 'Chile']),)
    >>> where = dg.constant(np.array(["USA", "USA", "Chile"]), dims=(obs,))
    >>> x.sel(country=where).eval().values.tolist()
    [1.0, 1.0, 3.0]
    """
    x = _as_x(x, "sel")
    if indexers is None or isinstance(indexers, dict):  # keys naming levels of product dims: dimgraph.labeled.stacking
        from dimgraph.labeled.stacking import select_levels, split_level_keys

        plain, levels = split_level_keys(x, {**(indexers or {}), **kwargs})
        if levels:
            if method is not None or tolerance is not None:
                raise TypeError("sel: `method`/`tolerance` cannot be used with the levels of a product dim")
            x, indexers, kwargs = select_levels(x, levels), plain, {}
    keys = {d: _sel_value(d, v, "sel", method, tolerance) for d, v in _key_dict(x, indexers, kwargs, "sel").items()}
    # NOTE: a ProductDim always has labels; asking for its coords would build its MultiIndex
    by_label = [
        d.name for d, v in keys.items() if not isinstance(d, ProductDim) and d.coords is None and not _is_mask(v)
    ]
    return _isel(x, keys, by_label, drop)


def _is_mask(key) -> bool:
    if isinstance(key, Variable):
        return np.dtype(key.type.dtype).kind == "b"
    return isinstance(key, np.ndarray) and key.dtype.kind == "b"


def _positional_keys(x, key, what):
    """A `[...]` key (one item or a tuple, Ellipsis allowed) as {dim: item} in dim order."""
    if isinstance(key, dict):
        return key
    items = key if isinstance(key, tuple) else (key,)
    if sum(k is Ellipsis for k in items) > 1:
        raise IndexError(f"{what}: an index can only have a single ellipsis ('...')")
    n = sum(k is not Ellipsis for k in items)
    if n > x.type.ndim:
        raise IndexError(
            f"{what}: too many indices: {x!r} has {x.type.ndim} dims {fmt_dims(x.type.dims)}, {n} were given"
        )
    if any(k is Ellipsis for k in items):
        at = next(j for j, k in enumerate(items) if k is Ellipsis)
        items = items[:at] + (slice(None),) * (x.type.ndim - n) + items[at + 1 :]
    return {d: k for d, k in zip(x.type.dims, items) if not _is_full_slice(k)}


def _is_full_slice(k):
    return isinstance(k, slice) and k.start is None and k.stop is None and k.step is None


def getitem(x, key):
    """`x[key]`: positional indexing in dim order (a dict key is `isel`), as `DataArray.__getitem__`.

    >>> import dimgraph as dg, numpy as np
    >>> a, b = dg.Dim("a", size=3), dg.Dim("b", size=4)
    >>> x = dg.constant(np.arange(12.0).reshape(3, 4), dims=(a, b))
    >>> x[1, ::2].eval().values.tolist()
    [4.0, 6.0]
    >>> x[..., -1].dims
    (Dim('a', size=3),)
    """
    x = _as_x(x, "getitem")
    return isel(x, _positional_keys(x, key, "getitem"))


class LocIndexer:
    """`x.loc[...]`: `sel` with a dict, or with a tuple of keys in dim order."""

    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x

    def __getitem__(self, key):
        return sel(self.x, _positional_keys(self.x, key, "loc"))

    def __setitem__(self, key, value):
        raise TypeError(
            "labeled variables are immutable: x.loc[...] = v cannot assign; "
            "use y = x.loc[...].set(v), which returns the updated whole"
        )


# ---------------------------------------------------------------------------
# functional updates


def update(sub, value, mode):
    """The whole variable that `sub` (an isel/sel/[...]/loc result) was selected from, updated there."""
    owner = getattr(sub, "owner", None)
    if owner is None or not isinstance(owner.op, Isel):
        raise TypeError(
            f"{mode}: {sub!r} is not the result of isel/sel/x[...]/x.loc[...]; "
            f"call .{mode}(v) right on an indexing result, e.g. x.isel(a=0).{mode}(v)"
        )
    x, *indexers = owner.inputs
    dtype = np.dtype(x.type.dtype)
    (v,) = operands([value], mode) if not isinstance(value, (bool, int, float, complex)) else [None]
    if v is not None:  # a value's dim named like a mask's selection is that selection's dim (checked at run time)
        indexers = [adopt_mask_dim(i, {d.name: d for d in v.type.dims}) for i in indexers]
    if v is None:
        v = constant(np.asarray(value, dtype=np.result_type(dtype, value)))
    if v.type.dtype != dtype.name:
        if not np.can_cast(v.type.dtype, dtype, "same_kind"):
            raise TypeError(
                f"{mode}: cannot cast the value of dtype {v.type.dtype} to {dtype.name} (the variable's dtype) "
                "under the same_kind rule; cast it explicitly"
            )
        v = astype(v, dtype.name)
    return IselUpdate(owner.op.entries, mode, owner.op.by_label)(x, v, *indexers)


def set_selection(sub, value):
    """The whole variable with the selection `sub` replaced by `value` (broadcast by dim name).

    >>> import dimgraph as dg, numpy as np
    >>> country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    >>> x = dg.constant(np.zeros(3), dims=(country,))
    >>> x.sel(country="Italy").set(5.0).eval().values.tolist()
    [0.0, 5.0, 0.0]
    """
    return update(sub, value, "set")


def inc_selection(sub, value):
    """The whole variable with `value` added to the selection `sub`; repeated positions accumulate.

    >>> import dimgraph as dg, numpy as np
    >>> i, obs = dg.Dim("i", size=3), dg.Dim("obs", size=3)
    >>> x = dg.constant(np.zeros(3), dims=(i,))
    >>> idx = dg.constant(np.array([0, 0, 2]), dims=(obs,))
    >>> x.isel(i=idx).inc(1.0).eval().values.tolist()
    [2.0, 0.0, 1.0]
    """
    return update(sub, value, "inc")


__all__ = [
    "Isel",
    "IselUpdate",
    "MaskPositions",
    "isel",
    "sel",
    "getitem",
    "LocIndexer",
    "set_selection",
    "inc_selection",
]
