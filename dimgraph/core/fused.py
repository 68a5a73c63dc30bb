"""`CAReduceElemwise`: reductions of a fused elementwise expression, with no full-size temporary.

The fusion phase (`dimgraph.core.rewriting.fusion`) turns `sum(f(a, b, ...))`,
where `f` is an Elemwise read only by the reduction, into one node: the scalar
`Composite` `f` is evaluated and reduced block by block. Inputs broadcast like
Elemwise inputs (equal ndim, only static size 1 stretches), so low-rank inputs
stay low rank and backends broadcast them by strides.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dimgraph.core.basic import as_tensor
from dimgraph.core.broadcast import node_shape
from dimgraph.core.elemwise import Elemwise
from dimgraph.core.graph import Op
from dimgraph.core.reduce import REDUCERS, CAReduce
from dimgraph.core.scalar import Composite
from dimgraph.core.shape import build
from dimgraph.core.subtensor import ARRAY, FULL_SLICE, AdvancedIncSubtensor, AdvancedSubtensor
from dimgraph.core.type import TensorType
from dimgraph.errors import IndexOutOfBounds, ShapeError

# The ufunc that combines two partial reductions.
COMBINE = {
    "add": np.add,
    "mul": np.multiply,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "and": np.logical_and,
    "or": np.logical_or,
}

BLOCK_ELEMENTS = 1 << 16  # elements of the elementwise result evaluated at once by `perform`


@dataclass(frozen=True)
class CAReduceElemwise(Op):
    """`reducer` over `axis` of every output of `scalar_op` applied elementwise to the inputs.

    A multi-output `scalar_op` gives one reduced output per composite output:
    the sum of a log-density term and the sums of its gradient terms come from
    one loop over the data.

    >>> import dimgraph as dg, numpy as np
    >>> from dimgraph.core.scalar import Composite, ScalarOp
    >>> sq = Composite(in_dtypes=("float64",), steps=((ScalarOp("square"), (0,)),), outs=(1,))
    >>> x = dg.vector("x")
    >>> float(CAReduceElemwise(sq, "add", (0,))(x).eval({x: np.arange(3.0)}))
    5.0
    """

    scalar_op: Composite
    reducer: str
    axis: tuple

    def __post_init__(self):
        if self.reducer not in REDUCERS:
            raise ValueError(f"CAReduceElemwise: unknown reducer {self.reducer!r}; known: {sorted(REDUCERS)}")

    @property
    def elemwise(self):
        return Elemwise(self.scalar_op)

    def make_node(self, *inputs):
        inputs = [as_tensor(i) for i in inputs]
        dtypes = tuple(i.type.dtype for i in inputs)
        if dtypes != tuple(self.scalar_op.in_dtypes):
            raise TypeError(f"{self}: expected input dtypes {self.scalar_op.in_dtypes}, got {dtypes}")
        # Elemwise validates arity, ndim and static broadcasting; its output types are the unreduced arrays.
        full = self.elemwise.make_node(*inputs).outputs
        ndim = full[0].type.ndim
        if any(not 0 <= a < ndim for a in self.axis):
            raise ValueError(f"{self}: axes {self.axis} out of range for {full[0].type}")
        if self.reducer in ("maximum", "minimum") and any(full[0].type.shape[a] == 0 for a in self.axis):
            raise ValueError(f"{self}: cannot reduce an empty axis (no identity for {self.reducer})")
        out_dtypes = [REDUCERS[self.reducer](np.zeros((1,), dtype=f.type.dtype)).dtype.name for f in full]
        return build(self, inputs, out_dtypes)

    def infer_shape(self, inputs, input_shapes):
        full = self.elemwise.infer_shape(inputs, input_shapes)[0]
        return [tuple(s for a, s in enumerate(full) if a not in self.axis)] * self.scalar_op.nout

    def perform(self, node, inputs):
        node_shape(node, inputs)
        dtypes = [o.type.dtype for o in node.outputs]
        shape = np.broadcast_shapes(*[np.shape(i) for i in inputs])
        n = shape[0] if shape else 1
        row = int(np.prod(shape[1:])) if len(shape) > 1 else 1
        step = max(1, BLOCK_ELEMENTS // max(row, 1))
        if not shape or n <= step:
            return self._reduce_block(inputs, shape, dtypes)
        parts = []
        for start in range(0, n, step):
            sl = slice(start, min(n, start + step))
            block_inputs = [i[sl] if np.shape(i)[0] != 1 else i for i in inputs]
            parts.append(self._reduce_block(block_inputs, (sl.stop - sl.start,) + tuple(shape[1:]), dtypes))
        outs = []
        for k, dtype in enumerate(dtypes):
            if 0 in self.axis:
                out = parts[0][k]
                for p in parts[1:]:
                    out = COMBINE[self.reducer](out, p[k])
            else:
                out = np.concatenate([p[k] for p in parts], axis=0)
            outs.append(np.asarray(out, dtype=dtype))
        return outs

    def _reduce_block(self, inputs, shape, dtypes):
        reduce = REDUCERS[self.reducer]
        results = self.scalar_op.impl(*inputs)
        return [
            np.asarray(reduce(np.broadcast_to(r, shape), axis=self.axis), dtype=dt) for r, dt in zip(results, dtypes)
        ]

    def L_op(self, inputs, outputs, output_grads):
        """Unfuse: differentiate `reducer(Elemwise(scalar_op)(*inputs))` through their own L_ops."""
        from dimgraph.core.gradient import vjp  # cycle: gradient -> vectorize, whose rules batch these ops

        full = self.elemwise(*inputs)
        full = full if isinstance(full, (list, tuple)) else [full]
        reduced = [CAReduce(self.reducer, tuple(self.axis))(f) for f in full]
        return vjp(reduced, output_grads, list(inputs), disconnected="none")

    def __str__(self):
        return f"{self.reducer}_reduce{{axis={list(self.axis)}}}({self.scalar_op})"


@dataclass(frozen=True)
class IndexedLoop(Op):
    """One pass over a 1-d loop: some inputs read through index arrays, results reduced or scattered.

    The hierarchical-model pattern `mu[g] + beta * x` with the log-density summed
    and its gradient scattered back into `mu` (`dmu[g] += w`) is, op by op, a gather,
    a multi-output Elemwise, several sums and a scatter-add, with a full-length
    temporary between each. This op is all of it as one loop with no temporary:

    - composite input k reads `inputs[k][j]`, or when `gathered[k]` is a count n > 0
      (True counts as 1), `table_k[inputs[k][j], idx_2[j], ..., idx_n[j]]`: an n-d table
      read through n index arrays, one per axis (`cell[batch_idx, machine_idx]`). The
      tables follow the composite inputs, in order; then the further index arrays
      `idx_2 .. idx_n` of each gathered input, in order;
    - each entry of `results` is `(out, kind, reducer)` for composite output `out`:
      kind "full" (the 1-d array itself), "reduce" (`reducer` over the loop axis, 0-d)
      or "scatter" (`base` with `base[idx_1[j], ..., idx_n[j]] += value[j]`, as `np.add.at`,
      n the entry's third field, None for 1; a base and its n index arrays per scatter
      come last).

    Index arrays wrap negatives and raise IndexError out of range, as NumPy; the index
    arrays of one gathered input (or of one scatter) broadcast alike: all of static
    length 1 or none.

    >>> import dimgraph as dg, numpy as np
    >>> from dimgraph.core.scalar import Composite, ScalarOp
    >>> double = Composite(in_dtypes=("float64",), steps=((ScalarOp("add"), (0, 0)),), outs=(1,))
    >>> loop = IndexedLoop(double, gathered=(True,), results=((0, "reduce", "add"), (0, "scatter", None)))
    >>> table, idx = dg.vector("table"), dg.vector("idx", dtype="int64")
    >>> total, scattered = loop(idx, table, dg.core.zeros((3,)), idx)
    >>> data = {table: np.array([1.0, 2.0, 3.0]), idx: np.array([2, 2, 0])}
    >>> float(total.eval(data)), scattered.eval(data).tolist()
    (14.0, [2.0, 0.0, 12.0])
    >>> cell, rows, cols = dg.matrix("cell"), dg.vector("rows", dtype="int64"), dg.vector("cols", dtype="int64")
    >>> pairs = IndexedLoop(double, gathered=(2,), results=((0, "full", None), (0, "scatter", 2)))
    >>> value, grad = pairs(rows, cell, cols, dg.core.zeros((2, 2)), rows, cols)
    >>> data = {cell: np.array([[1.0, 2.0], [3.0, 4.0]]), rows: np.array([1, -1]), cols: np.array([0, 1])}
    >>> value.eval(data).tolist(), grad.eval(data).tolist()
    ([6.0, 8.0], [[0.0, 0.0], [6.0, 8.0]])
    """

    scalar_op: Composite
    gathered: tuple
    results: tuple

    def __post_init__(self):
        if len(self.gathered) != self.scalar_op.nin:
            raise ValueError(f"IndexedLoop: {len(self.gathered)} gathered flags for {self.scalar_op.nin} inputs")
        if any(int(g) < 0 for g in self.gathered):
            raise ValueError(f"IndexedLoop: negative index-array counts in {self.gathered}")
        for out, kind, reducer in self.results:
            if not 0 <= out < self.scalar_op.nout or kind not in ("full", "reduce", "scatter"):
                raise ValueError(f"IndexedLoop: bad result {(out, kind, reducer)!r}")
            if kind == "reduce" and reducer not in REDUCERS:
                raise ValueError(f"IndexedLoop: unknown reducer {reducer!r}; known: {sorted(REDUCERS)}")
            if kind == "scatter" and not (reducer is None or (isinstance(reducer, int) and reducer >= 1)):
                raise ValueError(f"IndexedLoop: a scatter indexes None or n >= 1 axes, got {reducer!r}")

    @property
    def n_tables(self):
        return sum(bool(g) for g in self.gathered)

    def split_inputs(self, inputs):
        """(loop inputs, [(table, index arrays)] per gathered input, [(base, index arrays)] per scatter).

        A gathered input's first index array is its loop input.
        """
        nin = self.scalar_op.nin
        loop, rest = list(inputs[:nin]), iter(inputs[nin:])
        tables = [next(rest) for _ in range(self.n_tables)]
        gathers = []
        for v, table in zip([v for v, g in enumerate(self.gathered) if g], tables):
            gathers.append((table, (loop[v], *[next(rest) for _ in range(int(self.gathered[v]) - 1)])))
        scatters = []
        for _, kind, n in self.results:
            if kind == "scatter":
                base = next(rest)
                scatters.append((base, tuple(next(rest) for _ in range(n or 1))))
        return loop, gathers, scatters

    def make_node(self, *inputs):
        inputs = [as_tensor(i) for i in inputs]
        more = sum(int(g) - 1 for g in self.gathered if g)
        n_scatter_inputs = sum(1 + (n or 1) for _, kind, n in self.results if kind == "scatter")
        expected = self.scalar_op.nin + self.n_tables + more + n_scatter_inputs
        if len(inputs) != expected:
            raise TypeError(f"{self}: takes {expected} inputs, got {len(inputs)}")
        loop, gathers, scatters = self.split_inputs(inputs)
        indexed = [(table, idxs) for table, idxs in gathers + scatters]
        vectors = loop + [i for _, idxs in indexed for i in idxs]
        if any(v.type.ndim != 1 for v in vectors):
            raise TypeError(
                f"{self}: every input must be 1-d but the tables and scatter bases (one axis per index array), "
                f"got {[str(v.type) for v in vectors]}"
            )
        for table, idxs in indexed:
            if table.type.ndim != len(idxs):
                raise TypeError(f"{self}: {len(idxs)} index arrays into a {table.type.ndim}-d array {table.type}")
            for v in idxs:
                if np.dtype(v.type.dtype).kind not in "iu":
                    raise TypeError(f"{self}: index arrays must be integers, got {v.type}")
            if len({v.type.shape[0] == 1 for v in idxs}) > 1:
                raise TypeError(
                    f"{self}: index arrays into one array broadcast alike, got {[str(v.type) for v in idxs]}"
                )
        table_of = iter(gathers)
        dtypes = tuple(next(table_of)[0].type.dtype if g else v.type.dtype for v, g in zip(loop, self.gathered))
        if dtypes != tuple(self.scalar_op.in_dtypes):
            raise TypeError(f"{self}: expected loop input dtypes {self.scalar_op.in_dtypes}, got {dtypes}")
        sizes = {v.type.shape[0] for v in loop} - {None, 1}
        if len(sizes) > 1:
            raise ShapeError(f"{self}: the loop inputs have different static lengths {sorted(sizes)}")
        elem_dtypes = self.scalar_op.output_dtypes(list(dtypes))
        scatter_of = iter(scatters)
        out_dtypes = []
        for out, kind, reducer in self.results:
            if kind == "full":
                out_dtypes.append(elem_dtypes[out])
            elif kind == "reduce":
                out_dtypes.append(REDUCERS[reducer](np.zeros((1,), dtype=elem_dtypes[out])).dtype.name)
            else:
                base, _ = next(scatter_of)
                if base.type.dtype != elem_dtypes[out]:
                    raise TypeError(f"{self}: a scatter base has dtype {base.type.dtype}, the value {elem_dtypes[out]}")
                out_dtypes.append(base.type.dtype)
        return build(self, inputs, out_dtypes)

    def infer_shape(self, inputs, input_shapes):
        nin = self.scalar_op.nin
        known = [sh[0] for sh, v in zip(input_shapes[:nin], inputs[:nin]) if v.type.shape[0] != 1]
        n = known[0] if known else 1
        shape_of_input = dict(zip(map(id, inputs), input_shapes))
        bases = iter(self.split_inputs(inputs)[2])
        shapes = []
        for _, kind, _ in self.results:
            shapes.append((n,) if kind == "full" else () if kind == "reduce" else shape_of_input[id(next(bases)[0])])
        return shapes

    def perform(self, node, inputs):
        loop, gathers, scatters = self.split_inputs(inputs)
        loop_vars = node.inputs[: self.scalar_op.nin]
        lengths = {len(v) for v, var in zip(loop, loop_vars) if var.type.shape[0] != 1}
        if len(lengths) > 1:
            raise ShapeError(
                f"{self}: the loop inputs have lengths {sorted(lengths)}; only inputs of static length 1 broadcast"
            )
        n = lengths.pop() if lengths else 1
        for _, idxs in gathers:
            if len({len(i) for i in idxs}) > 1:  # NumPy's error: the index arrays do not broadcast together
                raise IndexError(
                    f"{self}: shape mismatch: indexing arrays could not be broadcast together with lengths "
                    f"{[len(i) for i in idxs]}"
                )
        table_of = iter(gathers)
        values = [_take(*next(table_of), n) if g else v for v, g in zip(loop, self.gathered)]
        full = self.scalar_op.impl(*values)
        full = [np.broadcast_to(f, (n,)) for f in full]
        scatter_of = iter(scatters)
        outs = []
        for (out, kind, reducer), var in zip(self.results, node.outputs):
            if kind == "full":
                outs.append(np.array(full[out], dtype=var.type.dtype))
            elif kind == "reduce":
                outs.append(np.asarray(REDUCERS[reducer](full[out]), dtype=var.type.dtype))
            else:
                base, idxs = next(scatter_of)
                if any(len(idx) != n for idx in idxs):
                    raise ShapeError(f"{self}: a scatter index array has length {len(idxs[0])}, the loop {n}")
                result = base.copy()
                np.add.at(result, _key(base, idxs), full[out])
                outs.append(result)
        return outs

    def L_op(self, inputs, outputs, output_grads):
        """Unfuse: differentiate the gathers, Elemwise, reductions and scatters through their own L_ops."""
        from dimgraph.core.gradient import vjp  # cycle: gradient -> vectorize, whose rules batch these ops

        return vjp(self.unfused(inputs), output_grads, list(inputs), disconnected="none")

    def unfused(self, inputs):
        """The outputs rebuilt from primitive ops (gathers, Elemwise, CAReduce, AdvancedIncSubtensor)."""
        loop, gathers, scatters = self.split_inputs(inputs)
        table_of = iter(gathers)
        values = []
        for v, g in zip(loop, self.gathered):
            if g:
                table, idxs = next(table_of)
                v = AdvancedSubtensor((ARRAY,) * len(idxs))(table, *idxs)
            values.append(v)
        full = self.elemwise(*values)
        full = full if isinstance(full, (list, tuple)) else [full]
        scatter_of = iter(scatters)
        outs = []
        for out, kind, reducer in self.results:
            if kind == "full":
                outs.append(full[out])
            elif kind == "reduce":
                outs.append(CAReduce(reducer, (0,))(full[out]))
            else:
                base, idxs = next(scatter_of)
                outs.append(AdvancedIncSubtensor((ARRAY,) * len(idxs), "inc")(base, full[out], *idxs))
        return outs

    @property
    def elemwise(self):
        return Elemwise(self.scalar_op)

    def __str__(self):
        kinds = ", ".join(
            f"{kind}{'[' + str(r) + ']' if r and r != 1 else ''}(o{out})" for out, kind, r in self.results
        )
        gathers = "" if all(int(g) <= 1 for g in self.gathered) else f"gather={[int(g) for g in self.gathered]}, "
        return f"indexed_loop{{{gathers}{kinds}}}({self.scalar_op})"


def _positions(idx, n, axis=0):
    """Index array `idx` into a length-`n` axis, negatives wrapped; IndexError out of range, as NumPy."""
    idx = np.asarray(idx).astype(np.int64, copy=False)  # `idx + n` of a narrow dtype would overflow
    bad = (idx < -n) | (idx >= n)
    if np.any(bad):
        raise IndexOutOfBounds(int(idx[bad][0]), n, axis)
    return np.where(idx < 0, idx + n, idx)


def _key(table, idxs):
    """The NumPy key reading `table` at the checked positions of one index array per axis."""
    return tuple(_positions(idx, table.shape[a], a) for a, idx in enumerate(idxs))


def _take(table, idxs, n):
    """`table[idxs[0][j], idxs[1][j], ...]` for j < n (index arrays of static length 1 broadcast)."""
    return table[tuple(np.broadcast_to(p, (n,)) if len(p) == 1 else p for p in _key(table, idxs))]


@dataclass(frozen=True)
class GatherElemwise(Op):
    """`scalar_op` elementwise over inputs some of which are read through an index array along one axis, maybe reduced.

    `data.sel(country=labels).sum("time")` is, op by op, a gather `data[idx]` (a
    temporary of the selection's size) and a sum. This op reads `data[idx[j0], j1]`
    inside the loop instead, so nothing is materialized:

    - composite input k reads `inputs[k]`, or when `gather_axes[k]` is an axis `a`,
      `table_k` at the loop position with axis `a` replaced by `inputs[k][j_a]`
      (`inputs[k]` is then a 1-d integer index array; the tables follow the
      composite inputs, in order, as in `IndexedLoop`);
    - the loop shape broadcasts as Elemwise, a gathered input taking its index
      array's length on the gathered axis;
    - with a `reducer`, every composite output is reduced over `axis`
      (as `CAReduceElemwise`), else the outputs are the full arrays.

    Index arrays wrap negatives and raise IndexError naming the axis out of range, as NumPy.

    >>> import dimgraph as dg, numpy as np
    >>> from dimgraph.core.scalar import Composite
    >>> ident = Composite(in_dtypes=("float64",), steps=(), outs=(0,))
    >>> rows = GatherElemwise(ident, gather_axes=(0,), reducer="add", axis=(1,))
    >>> data, idx = dg.matrix("data"), dg.vector("idx", dtype="int64")
    >>> rows(idx, data).eval({data: np.arange(6.0).reshape(3, 2), idx: np.array([2, -3])}).tolist()
    [9.0, 1.0]
    """

    scalar_op: Composite
    gather_axes: tuple
    reducer: str | None = None
    axis: tuple = ()

    def __post_init__(self):
        if len(self.gather_axes) != self.scalar_op.nin:
            raise ValueError(f"GatherElemwise: {len(self.gather_axes)} gather axes for {self.scalar_op.nin} inputs")
        if self.reducer is not None and self.reducer not in REDUCERS:
            raise ValueError(f"GatherElemwise: unknown reducer {self.reducer!r}; known: {sorted(REDUCERS)}")
        if self.reducer is None and self.axis:
            raise ValueError("GatherElemwise: reduced axes given without a reducer")

    def split_inputs(self, inputs):
        """(composite-position inputs (index arrays where gathered), tables) from the node's flat input list."""
        nin = self.scalar_op.nin
        return list(inputs[:nin]), list(inputs[nin:])

    def loop_types(self, inputs):
        """Per composite input, the type it is read as in the loop (a table with its index array's length)."""
        loop, tables = self.split_inputs(inputs)
        table_of = iter(tables)
        types = []
        for v, a in zip(loop, self.gather_axes):
            if a is None:
                types.append(v.type)
            else:
                t = next(table_of).type
                types.append(TensorType(t.dtype, t.shape[:a] + (v.type.shape[0],) + t.shape[a + 1 :]))
        return types

    def make_node(self, *inputs):
        inputs = [as_tensor(i) for i in inputs]
        n_tables = sum(a is not None for a in self.gather_axes)
        if len(inputs) != self.scalar_op.nin + n_tables:
            raise TypeError(f"{self}: takes {self.scalar_op.nin + n_tables} inputs, got {len(inputs)}")
        loop, tables = self.split_inputs(inputs)
        table_of = iter(tables)
        for v, a in zip(loop, self.gather_axes):
            if a is None:
                continue
            t = next(table_of)
            if v.type.ndim != 1 or np.dtype(v.type.dtype).kind not in "iu":
                raise TypeError(f"{self}: index arrays must be 1-d integers, got {v.type}")
            if not 0 <= a < t.type.ndim:
                raise ValueError(f"{self}: gather axis {a} out of range for the table {t.type}")
        dtypes = tuple(t.dtype for t in self.loop_types(inputs))
        if dtypes != tuple(self.scalar_op.in_dtypes):
            raise TypeError(f"{self}: expected input dtypes {self.scalar_op.in_dtypes}, got {dtypes}")
        # Elemwise validates ndim and static broadcasting of the inputs as the loop reads them
        full = self.elemwise.make_node(*[t.make_variable() for t in self.loop_types(inputs)]).outputs
        if any(not 0 <= a < full[0].type.ndim for a in self.axis):
            raise ValueError(f"{self}: axes {self.axis} out of range for {full[0].type}")
        if self.reducer in ("maximum", "minimum") and any(full[0].type.shape[a] == 0 for a in self.axis):
            raise ValueError(f"{self}: cannot reduce an empty axis (no identity for {self.reducer})")
        if self.reducer is None:
            out_dtypes = [f.type.dtype for f in full]
        else:
            out_dtypes = [REDUCERS[self.reducer](np.zeros((1,), dtype=f.type.dtype)).dtype.name for f in full]
        return build(self, inputs, out_dtypes)

    def infer_shape(self, inputs, input_shapes):
        loop, tables = self.split_inputs(input_shapes)
        table_of = iter(tables)
        shapes = []
        for sh, a in zip(loop, self.gather_axes):
            if a is None:
                shapes.append(tuple(sh))
            else:
                t = tuple(next(table_of))
                shapes.append(t[:a] + (sh[0],) + t[a + 1 :])
        dummies = [t.make_variable() for t in self.loop_types(inputs)]
        full = self.elemwise.infer_shape(dummies, shapes)[0]
        return [tuple(s for a, s in enumerate(full) if a not in self.axis)] * self.scalar_op.nout

    def perform(self, node, inputs):
        loop, tables = self.split_inputs(inputs)
        table_of = iter(tables)
        values = []
        for v, a in zip(loop, self.gather_axes):
            if a is not None:
                table = next(table_of)
                v = np.take(table, _positions(v, table.shape[a], a), axis=a)
            values.append(v)
        dummies = [t.make_variable() for t in self.loop_types(node.inputs)]
        if self.reducer is None:
            inner = self.elemwise.make_node(*dummies)
            node_shape(inner, values)
            full = self.scalar_op.impl(*values)
            shape = np.broadcast_shapes(*[np.shape(v) for v in values])
            return [np.array(np.broadcast_to(f, shape), dtype=o.type.dtype) for f, o in zip(full, node.outputs)]
        op = CAReduceElemwise(self.scalar_op, self.reducer, tuple(self.axis))
        return op.perform(op.make_node(*dummies), values)

    def L_op(self, inputs, outputs, output_grads):
        """Unfuse: differentiate the gathers, Elemwise and reductions through their own L_ops."""
        from dimgraph.core.gradient import vjp  # cycle: gradient -> vectorize, whose rules batch these ops

        return vjp(self.unfused(inputs), output_grads, list(inputs), disconnected="none")

    def unfused(self, inputs):
        """The outputs rebuilt from primitive ops (AdvancedSubtensor gathers, Elemwise, CAReduce)."""
        loop, tables = self.split_inputs(inputs)
        table_of = iter(tables)
        values = []
        for v, a in zip(loop, self.gather_axes):
            if a is not None:  # the table's axes after `a` are kept whole
                t = next(table_of)
                v = AdvancedSubtensor((FULL_SLICE,) * a + (ARRAY,) + (FULL_SLICE,) * (t.type.ndim - a - 1))(t, v)
            values.append(v)
        if self.scalar_op.steps or self.scalar_op.outs != (0,):
            full = self.elemwise(*values)
            full = full if isinstance(full, (list, tuple)) else [full]
        else:  # the identity: a reduction of the gather alone
            full = values
        if self.reducer is None:
            return list(full)
        return [CAReduce(self.reducer, tuple(self.axis))(f) for f in full]

    @property
    def elemwise(self):
        return Elemwise(self.scalar_op)

    def __str__(self):
        axes = ",".join("-" if a is None else str(a) for a in self.gather_axes)
        red = f", {self.reducer}{list(self.axis)}" if self.reducer else ""
        return f"gather_elemwise{{gather=[{axes}]{red}}}({self.scalar_op})"
