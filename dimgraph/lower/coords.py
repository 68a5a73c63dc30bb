"""Non-dimension coordinates of labeled outputs, as xarray would attach them.

xarray keeps a coordinate for the labels an indexing step picked: `x.sel(country="USA")`
carries a scalar `country` coord, `mu.isel(group=idx)` a `group` coord along idx's dims,
`squeeze` the label of each dim it drops.
Such coords follow the value through later steps while their dims survive, and are
dropped where two operands disagree on them (xarray's rule for arithmetic).

They never enter the compiled graph: `output_coords(var, inputs)` reads them off the
labeled graph once, at compile time, as recipes the output wrapper evaluates per
call (static labels, or the labels an input indexer array selects).
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.graph import Constant, toposort
from dimgraph.labeled.indexing import Isel, IselUpdate, entry_inputs
from dimgraph.labeled.ops import BroadcastTo, FromPositional, Squeeze, is_labeled


class StaticCoord:
    """Labels known when the graph is built."""

    __slots__ = ("dims", "values")

    def __init__(self, dims, values):
        self.dims, self.values = dims, values

    def same_as(self, other):
        return (
            isinstance(other, StaticCoord)
            and self.dims == other.dims
            and np.shape(self.values) == np.shape(other.values)
            and bool(np.all(np.asarray(self.values) == np.asarray(other.values)))
        )

    def evaluate(self, inputs):
        return self.dims, self.values


class PickedCoord:
    """Labels of one dim at some positions, where the labels or the positions arrive with the data.

    `labels`: a `pandas.Index`, or `(dim name, positions of the inputs that carry that dim)`
    (the index of the first DataArray among them that has one). `positions`: static ints,
    or `("input", k)` for an indexer array given as function input k. No labels at run time
    (NumPy inputs) -> no coord, as xarray.
    """

    __slots__ = ("dims", "labels", "positions")

    def __init__(self, dims, labels, positions):
        self.dims, self.labels, self.positions = dims, labels, positions

    def same_as(self, other):
        return isinstance(other, PickedCoord) and other is self

    def evaluate(self, inputs):
        labels = self.labels
        if isinstance(labels, tuple):
            name, carriers = labels
            labels = next(
                (inputs[k].indexes[name] for k in carriers if name in getattr(inputs[k], "indexes", {})), None
            )
            if labels is None:
                return None
        positions = self.positions
        if isinstance(positions, tuple):
            raw = inputs[positions[1]]
            positions = raw.transpose(*self.dims).values if hasattr(raw, "dims") else raw
        return self.dims, np.asarray(labels)[np.asarray(positions, dtype=np.int64)]


class InputCoords:
    """The non-index coords that the DataArray given for input `k` carries (known only per call).

    `intact`: the names of the input's dims that reach the output with every position in place
    (no selection, reorder or rename on the way); a coord is kept when its dims are among
    them and its sizes match the output's, as xarray arithmetic keeps operands' coords.
    """

    __slots__ = ("k", "intact", "labels")

    def __init__(self, k, intact, labels):
        self.k, self.intact = k, frozenset(intact)
        self.labels = labels  # {dim name: the Dim's coords}: the order the input was gathered into

    @property
    def dims(self):
        return tuple(sorted(self.intact))

    def same_as(self, other):
        return isinstance(other, InputCoords) and other.k == self.k and other.intact == self.intact

    def narrowed(self, names):
        return self if self.intact <= names else InputCoords(self.k, self.intact & names, self.labels)

    def evaluate(self, inputs, sizes):
        """[(name, coord variable)] of the input DataArray's non-index coords that fit the output."""
        raw = inputs[self.k]
        coords = getattr(raw, "coords", None)
        if coords is None or not len(coords):
            return []
        indexed = raw.indexes  # (built anew each time it is read)
        if len(coords) == len(indexed):
            return []
        out = []
        for name, coord in coords.items():
            if name in indexed or not set(coord.dims) <= self.intact:
                continue
            if all(sizes.get(d) == n for d, n in zip(coord.dims, coord.shape)):
                out.append((name, self._in_dim_order(raw, coord.variable)))
        return out

    def _in_dim_order(self, raw, coord):
        """`coord` gathered as the input was, where the DataArray held a Dim's labels in another order."""
        for d in coord.dims:
            labels, index = self.labels.get(d), raw.indexes.get(d)
            if labels is not None and index is not None and not index.equals(labels):
                coord = coord.isel({d: index.get_indexer(labels)})
        return coord


def _narrow(coords, names, touched=frozenset()):
    """`coords` with each InputCoords limited to the dims in `names` and not in `touched`."""
    keep = names - touched
    return {n: c.narrowed(keep) if isinstance(c, InputCoords) else c for n, c in coords.items()}


def _merge(parts, out_dims):
    """xarray's merge of operands' non-index coords: equal ones kept, conflicting ones dropped."""
    names = {d.name for d in out_dims}
    merged, dropped = {}, set()
    for coords in parts:
        for name, coord in coords.items():
            if name in dropped:
                continue
            prev = merged.get(name)
            if prev is None:
                merged[name] = coord
            elif isinstance(prev, InputCoords) and isinstance(coord, InputCoords):
                merged[name] = prev.narrowed(coord.intact)  # one input reached by two paths: what both kept
            elif not prev.same_as(coord):
                del merged[name]
                dropped.add(name)
    merged = _narrow(merged, names)
    return {n: c for n, c in merged.items() if n not in names and set(c.dims) <= names}


def _isel_coords(node, found, inputs, positions):
    x, *indexers = node.inputs
    touched = {d.name for d, e in zip(x.type.dims, node.op.entries) if e[0] != "slice" or e[1:4] != (None, None, None)}
    out = _narrow(found.get(id(x), {}), {d.name for d in x.type.dims}, touched)
    for d, entry, ins in zip(x.type.dims, node.op.entries, entry_inputs(node.op.entries, indexers)):
        if d.coords is not None:
            labels = d.coords
        else:
            carriers = tuple(k for k, v in enumerate(inputs) if is_labeled(v) and d in v.type.dims)
            if not carriers:
                continue
            labels = (d.name, carriers)
        if entry[0] == "int":
            if node.op.drop:
                continue
            at, dims = entry[1], ()
        elif entry[0] == "index":
            (v,) = ins
            dims = tuple(n.name for n in v.type.dims)
            while v.owner is not None and isinstance(v.owner.op, FromPositional):
                v = v.owner.inputs[0]  # a positional indexer given as an input
            if d.name in dims:
                continue  # the labels become the index of that dim, carried by its Dim
            if isinstance(v, Constant):
                at = np.asarray(v.data, dtype=np.int64)
            elif v.owner is None and id(v) in positions:
                at = ("input", positions[id(v)])
            else:
                continue
        else:
            continue
        if isinstance(labels, tuple) or isinstance(at, tuple):
            out[d.name] = PickedCoord(dims, labels, at)
        else:
            out[d.name] = StaticCoord(dims, np.asarray(labels)[at])
    return out


def _squeeze_coords(node, found, inputs):
    """xarray keeps the label of a squeezed dim as a scalar coord (static, or from the input DataArray)."""
    x = node.inputs[0]
    out = dict(found.get(id(x), {}))
    for d in node.op.dims:
        if d.coords is not None:
            out[d.name] = StaticCoord((), d.coords[0])
            continue
        carriers = tuple(k for k, v in enumerate(inputs) if is_labeled(v) and d in v.type.dims)
        if carriers:
            out[d.name] = PickedCoord((), (d.name, carriers), 0)
    return out


def output_coords(var, inputs) -> dict:
    """{name: StaticCoord | PickedCoord} for labeled output `var` of a function with `inputs`."""
    positions = {id(v): k for k, v in enumerate(inputs)}
    found = {
        id(v): {
            ("input", k): InputCoords(
                k, (d.name for d in v.type.dims), {d.name: d.coords for d in v.type.dims if d.coords is not None}
            )
        }
        for k, v in enumerate(inputs)
        if is_labeled(v)
    }
    for node in toposort([var]):
        if not all(is_labeled(o) for o in node.outputs):
            continue
        if isinstance(node.op, Isel):
            coords = _isel_coords(node, found, inputs, positions)
        elif isinstance(node.op, IselUpdate):
            coords = dict(found.get(id(node.inputs[0]), {}))
        elif isinstance(node.op, Squeeze):
            coords = _squeeze_coords(node, found, inputs)
        else:
            coords = {}
            operands = (
                node.inputs[:1] if isinstance(node.op, BroadcastTo) else node.inputs
            )  # xarray: the others bring only their indexes
            for parts in (found.get(id(i)) for i in operands if is_labeled(i)):
                coords = _merge([coords, parts or {}], node.outputs[0].type.dims) if coords or parts else {}
        for o in node.outputs:
            found[id(o)] = _merge([coords], o.type.dims)
    return found.get(id(var), {})
