"""Labeled outputs of compiled functions (DataArray out) and the checks across inputs.

(`dimgraph.labeled.io.LabeledInput` converts each input.) `size_checks` catch a dim of unknown size
that two inputs give different sizes. All of it runs before any computation.
`LabeledOutput.wrap` builds the DataArray: coords from the Dims, or for a Dim
without coords from the input DataArray that brought that dim; string labels
as `<U` arrays; the variable's name; non-index coords the input DataArrays
carry along dims that reach the output untouched (xarray arithmetic's rule).
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.graph import Constant, ancestors
from dimgraph.core.subtensor import SYMBOLIC
from dimgraph.errors import IndexOutOfBounds, InputError
from dimgraph.labeled.basic import is_dataarray
from dimgraph.labeled.dims import ProductDim, derivation_of
from dimgraph.labeled.indexing import Isel, IselUpdate, entry_inputs, n_inputs
from dimgraph.labeled.io import first_difference
from dimgraph.labeled.ops import LabeledDiff, Relabel, is_labeled
from dimgraph.labeled.twins import positional_twin
from dimgraph.lazy import pandas as pd
from dimgraph.lower.combine import ProductLabels
from dimgraph.lower.coords import InputCoords, PickedCoord, output_coords


class LabeledOutput:
    """Wraps a result array as a DataArray with the output's dims and coords."""

    __slots__ = ("dims", "name", "sources", "extra", "from_inputs", "static", "products", "_per_call", "_templates")

    def __init__(self, var, inputs):
        self.dims = var.type.dims
        self.name = var.name
        # For each dim without coords: (positions of the labeled inputs that carry it or the dim it
        # was derived from or renamed from, that dim's name, the label maps from that dim's labels
        # to this dim's, innermost first).
        self.sources = {}
        graph = ancestors([var])
        used = {id(v) for v in graph}  # as xarray: labels come only from the data this output is made of
        inputs = [v if id(v) in used else None for v in inputs]
        kept = _label_maps(graph)
        for d in self.dims:
            if d.coords is not None:
                continue
            source, maps, seen = d, [], {d}
            while True:
                carriers = [k for k, v in enumerate(inputs) if is_labeled(v) and source in v.type.dims]
                derivation = derivation_of(source) or kept.get(source)
                if carriers or derivation is None or derivation[0] in seen:
                    break
                seen.add(derivation[0])
                source, labels_from = derivation
                maps.append(labels_from)
            self.sources[d.name] = (carriers, source.name, maps[::-1])
        extra = output_coords(var, inputs)  # non-dimension coords, as xarray's indexing leaves them
        self.extra = {n: c for n, c in extra.items() if not isinstance(c, InputCoords)}
        # non-dimension coords the input DataArrays bring (known per call), as xarray arithmetic keeps them
        self.from_inputs = [c for c in extra.values() if isinstance(c, InputCoords)]
        # Dim coords as xarray would hold them: strings as NumPy `<U` arrays (a pandas Index holds them as objects)
        self.static = {
            d.name: coord_values(d.coords) for d in self.dims if d.coords is not None and not isinstance(d, ProductDim)
        }
        # ProductDims of run-time size: their MultiIndex is made per call (dimgraph.lower.combine)
        self.products = {
            d.name: ProductLabels(d, inputs) for d in self.dims if isinstance(d, ProductDim) and d.coords is None
        }
        self._per_call = any(isinstance(c, PickedCoord) for c in self.extra.values()) or bool(self.products)
        # NOTE: building a DataArray with indexes costs ~0.5 ms; a shallow copy of a template made
        # once per shape costs ~0.07 ms, so calls whose coords are all static reuse one.
        self._templates = {}

    def wrap(self, value, inputs):
        import xarray as xr

        found, brought = {}, _brought(self.from_inputs, inputs, self.dims, value.shape) if self.from_inputs else {}
        for axis, d in enumerate(self.dims):
            carriers, source_name, maps = self.sources.get(d.name, ((), d.name, ()))
            for k in carriers:
                raw = inputs[k]
                index = raw.indexes.get(source_name) if is_dataarray(raw) else None
                for labels_from in maps:
                    index = None if index is None else labels_from(index)
                if index is not None and len(index) == value.shape[axis]:
                    found[d.name] = coord_values(index.rename(d.name))
                    break
        per_call = found or brought or self._per_call
        template = None if per_call else self._templates.get(value.shape)
        if template is not None:
            return _from_template(template, value)
        coords = {}
        for d in self.dims:
            if isinstance(d, ProductDim) and d.coords is not None:
                coords.update(xr.Coordinates.from_pandas_multiindex(d.coords, d.name))
            elif d.coords is not None:
                coords[d.name] = self.static[d.name]
        coords.update(found)
        for axis, d in enumerate(self.dims):
            product = self.products.get(d.name)
            index = None if product is None or d.name in found else product.index(value.shape[axis], inputs)
            if index is not None:
                coords.update(xr.Coordinates.from_pandas_multiindex(index, d.name))
        for name, coord in self.extra.items():
            found_coord = coord.evaluate(inputs)
            if found_coord is not None:
                coords[name] = found_coord
        for name, coord in brought.items():
            coords.setdefault(name, coord)
        out = xr.DataArray(value, dims=[d.name for d in self.dims], coords=coords or None, name=self.name)
        if not per_call and len(self._templates) < 8:
            self._templates[value.shape] = out.copy(deep=False, data=np.empty_like(value))
        return out


def coord_values(index):
    """The labels of `index` as xarray keeps them for a list of labels: strings as a `<U` array."""
    if index.dtype.kind in "OT" and len(index) and pd.api.types.infer_dtype(index, skipna=False) == "string":
        return np.asarray(index, dtype=str)
    return index


def _brought(recipes, inputs, dims, shape) -> dict:
    """{name: coord} from the input DataArrays' non-index coords; coords two inputs disagree on are dropped."""
    sizes = {d.name: n for d, n in zip(dims, shape)}
    out, dropped = {}, set()
    for recipe in recipes:
        for name, coord in recipe.evaluate(inputs, sizes):
            if name in dropped or name in sizes:
                continue
            prev = out.get(name)
            if prev is None:
                out[name] = coord
            elif not prev.equals(coord):
                del out[name]
                dropped.add(name)
    return out


def _label_maps(graph) -> dict:
    """{new Dim: (old Dim, label map)} for every dim without coords that a rename, slice or diff in `graph` made.

    A renamed dim keeps the labels its input DataArray gave the old one (as xarray's
    `rename`), though as a Dim it is simply the new name; a slice, a selection of
    static positions or a `diff` of a dim of fixed size keeps the labels at those
    positions (as xarray's), though the Dim holds only its size. Two steps that make
    one Dim in different ways leave it without labels (they would disagree).
    """
    out = {}
    for new, old, labels_from in _label_steps(graph):
        if new.coords is None and old.coords is None and new != old:
            if out.setdefault(new, (old, labels_from)) != (old, labels_from):
                out[new] = None
    return {new: how for new, how in out.items() if how is not None}


def _label_steps(graph):
    """(new dim, old dim, label map) for each dim that a rename, slice, selection or diff in `graph` made."""
    for v in graph:
        node = v.owner
        if node is None:
            continue
        if isinstance(node.op, Relabel):
            for old, new in zip(node.inputs[0].type.dims, node.op.dims):
                if new.name != old.name:
                    yield new, old, _same_labels
        elif isinstance(node.op, LabeledDiff) and node.op.n:
            (new,) = [d for d in node.outputs[0].type.dims if d.name == node.op.dim.name]
            n = node.op.n
            yield new, node.op.dim, _Positions(slice(n, None) if node.op.label == "upper" else slice(n - 1, -1))
        elif isinstance(node.op, Isel):
            entries = node.op.entries
            for old, entry, ins in zip(node.inputs[0].type.dims, entries, entry_inputs(entries, node.inputs[1:])):
                if entry[0] == "slice" and not any(p is SYMBOLIC for p in entry[1:4]):
                    yield entry[4], old, _Positions(slice(*entry[1:4]))
                elif (
                    entry[0] == "index"
                    and isinstance(ins[0], Constant)
                    and [d.name for d in ins[0].type.dims] == [old.name]
                ):
                    yield ins[0].type.dims[0], old, _Positions(np.asarray(ins[0].data))


class _Positions:
    """The labels at some positions, `index[part]` (a slice or an int array); equal parts compare equal."""

    __slots__ = ("part",)

    def __init__(self, part):
        self.part = part

    def _key(self):
        p = self.part
        return (p.start, p.stop, p.step) if isinstance(p, slice) else ("at", p.tobytes())

    def __eq__(self, other):
        return isinstance(other, _Positions) and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __call__(self, index):
        return index[self.part]


def _same_labels(index):
    return index


def _from_template(template, value):
    """`template.copy(deep=False, data=value)` without its re-validation (about 22 us -> 3 us).

    Builds the Variable and the DataArray on xarray's `fastpath` (the template's dims,
    coords and indexes are already valid); the attrs, coord variables and index dict
    are fresh shallow copies, so changing one output's attrs or coords leaves the
    template and later outputs alone.
    """
    import xarray as xr

    variable = template.variable
    attrs = None if variable._attrs is None else dict(variable._attrs)
    return xr.DataArray(
        xr.Variable(variable.dims, value, attrs, fastpath=True),
        coords={k: c.copy(deep=False) for k, c in template._coords.items()},
        name=template.name,
        indexes=dict(template._indexes),
        fastpath=True,
    )


def size_checks(inputs, outputs, labels):
    """Checks that the inputs sharing a dim of unknown size agree on it (and with the labeled constants
    the outputs read that fix it: the first one read fixes it)."""
    carriers = {}
    for k, v in enumerate(inputs):
        if is_labeled(v):
            for axis, d in enumerate(v.type.dims):
                if d.size is None:
                    carriers.setdefault(d, []).append((k, axis))
    checks = []
    shared_labels = {}
    for k, v in enumerate(inputs):
        if is_labeled(v):
            for d in v.type.dims:
                if d.coords is None:
                    shared_labels.setdefault(d, []).append(k)
    for d, ks in shared_labels.items():
        if len(ks) > 1:
            checks.append(_CoordsCheck(d.name, ks, labels))
    fixed_by = {}
    for v in read_by(outputs):
        if isinstance(v, Constant) and is_labeled(v):
            for d, n in zip(v.type.dims, positional_twin(v).type.shape):
                if d.size is None:
                    fixed_by.setdefault(d, n)
    for d, where in carriers.items():
        fixed = fixed_by.get(d)
        if len(where) > 1 or fixed is not None:
            checks.append(_SizeCheck(d.name, where, labels, fixed))
    return checks


def read_by(outputs):
    """What `outputs` read: their ancestors, and those of the labeled graphs their gradients were lowered
    from (`lowered_from`: a gradient is computed on the positional graph, whose labeled ops it no longer shows)."""
    found, seen, roots = [], set(), list(outputs)
    while roots:
        more = []
        for v in ancestors(roots):
            if id(v) not in seen:
                seen.add(id(v))
                found.append(v)
                more += v.tag.get("lowered_from", ())
        roots = more
    return found


def label_checks(inputs, outputs, labels):
    """Checks that no input DataArray labels a dim that `sel` indexed by position (its Dim has no coords).

    xarray would look those labels up; the graph took them as positions 0..n-1
    when it was built, so such data would be silently misread: refuse it.
    """
    selected = {}
    for v in read_by(outputs):
        node = v.owner
        if node is not None and isinstance(node.op, (Isel, IselUpdate)) and node.op.by_label:
            for d in node.inputs[0].type.dims:
                if d.name in node.op.by_label:
                    selected[d] = True
    checks = []
    for d in selected:
        ks = [k for k, v in enumerate(inputs) if is_labeled(v) and d in v.type.dims]
        if ks:
            checks.append(_PositionalLabelsCheck(d.name, ks, labels))
    return checks


def indexer_checks(inputs, outputs, labels):
    """Checks that each labeled integer input indexing a dim (`isel`'s pointwise indexers) stays within it.

    They name the input and the dim, where a kernel could only name an axis of its
    positional graph. They run only after the backend raised an IndexError
    (`on_failure`): every backend's kernels check each position anyway, and a pass
    over the indexer before each call cost a quarter of a hierarchical model's call.
    A failed call changes no state, so the error is the same as if raised first.
    """
    position = {id(v): k for k, v in enumerate(inputs)}
    carriers = {}
    for k, v in enumerate(inputs):
        if is_labeled(v):
            for axis, d in enumerate(v.type.dims):
                carriers.setdefault(d, (k, axis))
    checks, seen = [], set()
    for v in read_by(outputs):
        node = v.owner
        if node is None or not isinstance(node.op, (Isel, IselUpdate)) or id(node) in seen:
            continue
        seen.add(id(node))
        x = node.inputs[0]
        indexers = iter(node.inputs[1 if isinstance(node.op, Isel) else 2 :])
        for d, entry in zip(x.type.dims, node.op.entries):
            read = [next(indexers, None) for _ in range(n_inputs(entry))]
            if entry[0] != "index":
                continue
            (indexer,) = read
            k = position.get(id(indexer))
            if k is not None and (d.size is not None or d in carriers):
                checks.append(_IndexerCheck(k, d.name, d.size, carriers.get(d), labels, x.name))
    return checks


class _IndexerCheck:
    __slots__ = ("k", "name", "size", "carrier", "labels", "of")
    on_failure = True  # run to name the input once the backend raised an IndexError (see `indexer_checks`)

    def __init__(self, k, name, size, carrier, labels, of):
        self.k, self.name, self.size, self.carrier, self.labels, self.of = k, name, size, carrier, labels, of

    def __call__(self, arrays, raw, ctx=None):
        n = self.size if self.size is not None else arrays[self.carrier[0]].shape[self.carrier[1]]
        positions = arrays[self.k]
        bad = (positions < -n) | (positions >= n)
        if bad.any():
            of = f" of {self.of!r}" if self.of else ""
            raise IndexOutOfBounds(
                f"input {self.labels[self.k]!r}: index {int(np.asarray(positions)[bad].flat[0])} is out of bounds "
                f"for dim {self.name!r}{of} with size {n}"
            )


def shared_size_checks(inputs, outputs, labels):
    """Checks that an input and a labeled shared variable the outputs read agree on a dim of unknown size.

    The shared value's size is known only when the call reads it from its context,
    so the check runs then, before any work (else the kernel would fail with a ShapeError).
    """
    carriers = {}
    for k, v in enumerate(inputs):
        if is_labeled(v):
            for axis, d in enumerate(v.type.dims):
                if d.size is None:
                    carriers.setdefault(d, (k, axis))
    checks = []
    given = {id(v) for v in inputs}
    for v in read_by(outputs):
        twin = getattr(v, "shared_twin", None)
        if twin is None or id(v) in given:
            continue
        for axis, d in enumerate(v.type.dims):
            if d in carriers:
                checks.append(_SharedSizeCheck(d.name, carriers[d], labels, v.name or "a shared variable", twin, axis))
    return checks


class _SharedSizeCheck:
    __slots__ = ("name", "where", "labels", "shared_name", "twin", "axis")

    def __init__(self, name, where, labels, shared_name, twin, axis):
        self.name, self.where, self.labels = name, where, labels
        self.shared_name, self.twin, self.axis = shared_name, twin, axis

    def __call__(self, arrays, raw, ctx=None):
        k, a = self.where
        n = arrays[k].shape[a]
        m = np.shape(ctx.get(self.twin))[self.axis]
        if n != m:
            raise InputError(
                f"input {self.labels[k]!r}: dim {self.name!r} has size {n}, but the shared variable "
                f"{self.shared_name!r} has size {m} along it"
            )


class _PositionalLabelsCheck:
    __slots__ = ("name", "ks", "labels")
    labels_only = True  # reads only DataArrays' labels: NumPy data passes it (a fast path skips it then)

    def __init__(self, name, ks, labels):
        self.name, self.ks, self.labels = name, ks, labels

    def __call__(self, arrays, raw, ctx=None):
        import pandas as pd

        for k in self.ks:
            index = raw[k].indexes.get(self.name) if is_dataarray(raw[k]) else None
            if index is not None and not index.equals(pd.RangeIndex(len(index))):
                shown = ", ".join(map(repr, index[:4].tolist())) + (", ..." if len(index) > 4 else "")
                raise InputError(
                    f"input {self.labels[k]!r}: dim {self.name!r} has the labels [{shown}] in the DataArray, but the "
                    f"graph selects on it with sel/.loc while its Dim has no coords, so those labels were taken as "
                    f"positions 0..n-1; declare the Dim with coords, or select with isel"
                )


class _SizeCheck:
    __slots__ = ("name", "where", "labels", "fixed")

    def __init__(self, name, where, labels, fixed):
        self.name, self.where, self.labels, self.fixed = name, where, labels, fixed

    def __call__(self, arrays, raw, ctx=None):
        (k0, a0), *rest = self.where
        n0 = arrays[k0].shape[a0]
        if self.fixed is not None and n0 != self.fixed:
            raise InputError(
                f"input {self.labels[k0]!r}: dim {self.name!r} has size {n0}, but a constant in the graph gives it size {self.fixed}"
            )
        for k, a in rest:
            n = arrays[k].shape[a]
            if n != n0:
                raise InputError(
                    f"inputs {self.labels[k0]!r} and {self.labels[k]!r} disagree on the size of dim {self.name!r}: "
                    f"{n0} in {self.labels[k0]!r}, {n} in {self.labels[k]!r}"
                )


class _CoordsCheck:
    """Two input DataArrays that label one coord-less dim differently would be silently misaligned: refuse."""

    __slots__ = ("name", "ks", "labels")
    labels_only = True  # reads only DataArrays' labels: NumPy data passes it (a fast path skips it then)

    def __init__(self, name, ks, labels):
        self.name, self.ks, self.labels = name, ks, labels

    def __call__(self, arrays, raw, ctx=None):
        first = None
        for k in self.ks:
            index = raw[k].indexes.get(self.name) if is_dataarray(raw[k]) else None
            if index is None:
                continue
            if first is None:
                first = (k, index)
            elif len(index) == len(first[1]) and not index.equals(first[1]):
                k0 = first[0]
                raise InputError(
                    f"inputs {self.labels[k0]!r} and {self.labels[k]!r} label dim {self.name!r} differently "
                    f"({first_difference(first[1], index)}); dimgraph does not align data: reindex one first"
                )
