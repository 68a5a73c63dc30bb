"""Joining and splitting along an axis: `Join` (concatenate), `Split` (several outputs), and `stack`.

Result dtypes follow NumPy (`np.result_type` of the pieces). Sizes along the
joined axis add up symbolically when unknown; every other axis must agree, and
an unknown size that disagrees at run time is a `ShapeError`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dimgraph.core.basic import as_tensor, is_float
from dimgraph.core.graph import Apply, Op
from dimgraph.core.shape import build, normalize_axis, shape_entry_as_variable, static_or_symbolic, to_static
from dimgraph.core.shape_ops import expand_dims, pin_shape
from dimgraph.core.subtensor import getitem
from dimgraph.core.type import TensorType
from dimgraph.errors import ShapeError


def _check_other_axes(op_name, axis, tensors):
    for ax in range(tensors[0].type.ndim):
        if ax == axis:
            continue
        sizes = {t.type.shape[ax] for t in tensors} - {None}
        if len(sizes) > 1:
            raise ShapeError(
                f"{op_name}: all inputs must have the same size on axis {ax} (every axis but {axis}); "
                f"got shapes {[str(t.type) for t in tensors]}"
            )


@dataclass(frozen=True)
class Join(Op):
    """Concatenation of its inputs along `axis` (as `np.concatenate`)."""

    axis: int

    def make_node(self, *tensors):
        tensors = [as_tensor(t) for t in tensors]
        if not tensors:
            raise ValueError(f"{self}: need at least one input")
        ndims = {t.type.ndim for t in tensors}
        if len(ndims) > 1:
            types = [str(t.type) for t in tensors]
            raise ValueError(f"{self}: all inputs must have the same number of axes, got {types}")
        ndim = ndims.pop()
        if not 0 <= self.axis < ndim:
            raise ValueError(f"{self}: axis {self.axis} is out of range for inputs with {ndim} axes")
        _check_other_axes(str(self), self.axis, tensors)
        dtype = np.result_type(*[t.type.dtype for t in tensors]).name
        return build(self, tensors, [dtype])

    def infer_shape(self, inputs, input_shapes):
        out = []
        for ax in range(inputs[0].type.ndim):
            if ax == self.axis:
                total = 0
                for sh in input_shapes:
                    total = total + sh[ax]
                out.append(total)
            else:
                known = [sh[ax] for sh, t in zip(input_shapes, inputs) if t.type.shape[ax] is not None]
                out.append(known[0] if known else input_shapes[0][ax])
        return [tuple(out)]

    def check_shapes(self, shapes):
        """The run-time rule every backend checks: the input `shapes` agree on every axis but `axis`."""
        for ax in range(len(shapes[0])):
            if ax != self.axis and len({sh[ax] for sh in shapes}) > 1:
                raise ShapeError(
                    f"{self}: inputs have sizes {[sh[ax] for sh in shapes]} on axis {ax}; only axis {self.axis} may differ"
                )

    def perform(self, node, inputs):
        self.check_shapes([i.shape for i in inputs])
        return [np.concatenate(inputs, axis=self.axis).astype(node.outputs[0].type.dtype, copy=False)]

    def L_op(self, inputs, outputs, output_grads):
        """The output gradient cut back into the inputs' pieces along `axis` by slices (None for
        integer inputs); bounds are ints where the sizes are static, else sums of the inputs' sizes,
        and each piece keeps the static shape its input has."""
        (g,) = output_grads
        out, start = [], 0
        for t in inputs:
            stop = start + static_or_symbolic(t)[self.axis]
            if not is_float(t):
                out.append(None)
            elif len(inputs) == 1:
                out.append(g.astype(t.type.dtype))
            else:
                piece = getitem(g, (slice(None),) * self.axis + (slice(start, stop),))
                out.append(pin_shape(piece.astype(t.type.dtype), t))
            start = stop
        return out


@dataclass(frozen=True)
class Split(Op):
    """Pieces of the input along `axis` with the given sizes; `sizes[k]` is an int or None (a 0-d int input).

    The sizes must add up to the axis length (checked statically where known,
    else at run time with a `ShapeError`).
    """

    axis: int
    sizes: tuple

    def make_node(self, x, *sizes):
        x = as_tensor(x)
        sizes = [as_tensor(s) for s in sizes]
        if not 0 <= self.axis < x.type.ndim:
            raise ValueError(f"{self}: axis {self.axis} is out of range for {x!r}")
        n_sym = sum(s is None for s in self.sizes)
        if len(sizes) != n_sym:
            raise TypeError(f"{self}: expected {n_sym} symbolic size inputs, got {len(sizes)}")
        for s in sizes:
            if s.type.ndim != 0 or np.dtype(s.type.dtype).kind not in "iu":
                raise TypeError(f"{self}: sizes must be 0-d integers, got {s!r}")
        if any(s is not None and s < 0 for s in self.sizes):
            raise ValueError(f"{self}: sizes must be non-negative")
        n = x.type.shape[self.axis]
        if n is not None and n_sym == 0 and sum(self.sizes) != n:
            raise ShapeError(
                f"{self}: sizes {self.sizes} add up to {sum(self.sizes)}, but axis {self.axis} of {x!r} has size {n}"
            )
        shapes = self.infer_shape([x, *sizes], [static_or_symbolic(x)] + [()] * len(sizes))
        types = [TensorType(x.type.dtype, tuple(to_static(e) for e in sh)) for sh in shapes]
        return Apply(self, [x, *sizes], types)

    def _size_entries(self, size_inputs):
        it = iter(size_inputs)
        out = []
        for s in self.sizes:
            if s is None:
                v = next(it)
                static = to_static(v)
                out.append(static if static is not None else v)
            else:
                out.append(s)
        return out

    def infer_shape(self, inputs, input_shapes):
        x_shape = input_shapes[0]
        return [
            tuple(e if ax == self.axis else x_shape[ax] for ax in range(len(x_shape)))
            for e in self._size_entries(inputs[1:])
        ]

    def check_sizes(self, sizes, length):
        """The run-time rule every backend checks: the pieces' `sizes` are non-negative and add up to `length`."""
        if any(s < 0 for s in sizes) or sum(sizes) != length:
            raise ShapeError(f"{self}: sizes {sizes} do not add up to the length {length} of axis {self.axis}")

    def perform(self, node, inputs):
        x, *sizes = inputs
        sizes = [int(s) for s in self._size_entries(sizes)]
        self.check_sizes(sizes, x.shape[self.axis])
        return [np.array(p) for p in np.split(x, np.cumsum(sizes)[:-1], axis=self.axis)]

    def L_op(self, inputs, outputs, output_grads):
        """The pieces' gradients joined back along `axis`; the size inputs get None."""
        x = inputs[0]
        if not is_float(x):
            return [None] * len(inputs)
        gx = output_grads[0] if len(output_grads) == 1 else Join(self.axis)(*output_grads)
        return [pin_shape(gx.astype(x.type.dtype), x)] + [None] * (len(inputs) - 1)


def concatenate(tensors, axis=0):
    """The tensors joined along an existing `axis` (NumPy semantics and dtype promotion).

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(None, 2))
    >>> y = dg.core.concatenate([x, np.ones((1, 2))])
    >>> y.type.shape, y.eval({x: np.zeros((2, 2))}).shape
    ((None, 2), (3, 2))
    """
    tensors = [as_tensor(t) for t in tensors]
    if not tensors:
        raise ValueError("concatenate: need at least one array")
    if tensors[0].type.ndim == 0:
        raise ValueError("concatenate: zero-dimensional arrays cannot be concatenated")
    (axis,) = normalize_axis(axis, tensors[0].type.ndim)
    return Join(axis)(*tensors)


def stack(tensors, axis=0):
    """The tensors (equal shapes) joined along a new `axis` (as `np.stack`).

    >>> import dimgraph as dg, numpy as np
    >>> dg.core.stack([np.zeros(3), np.ones(3)], axis=1).type.shape
    (3, 2)
    """
    tensors = [as_tensor(t) for t in tensors]
    if not tensors:
        raise ValueError("stack: need at least one array")
    ndims = {t.type.ndim for t in tensors}
    if len(ndims) > 1:
        raise ValueError(f"stack: all input arrays must have the same shape, got {[str(t.type) for t in tensors]}")
    ndim = ndims.pop()
    (axis,) = normalize_axis(axis, ndim + 1)
    for ax in range(ndim):
        sizes = {t.type.shape[ax] for t in tensors} - {None}
        if len(sizes) > 1:
            raise ShapeError(f"stack: all input arrays must have the same shape, got {[str(t.type) for t in tensors]}")
    return Join(axis)(*[expand_dims(t, axis) for t in tensors])


def split(x, indices_or_sections, axis=0):
    """Pieces of `x` along `axis`, as `np.split`.

    `indices_or_sections` is a number of equal sections (the axis length must
    divide) or a list of split positions. Equal sections and increasing
    in-range positions give one `Split` node; other positions give slices.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(6,))
    >>> [p.type.shape for p in dg.core.split(x, [1, 4])]
    [(1,), (3,), (2,)]
    """
    x = as_tensor(x)
    (axis,) = normalize_axis(axis, x.type.ndim)
    n = x.type.shape[axis]
    if isinstance(indices_or_sections, (int, np.integer)):
        k = int(indices_or_sections)
        if k <= 0:
            raise ValueError("split: number of sections must be larger than 0")
        if n is not None:
            if n % k:
                raise ShapeError(f"split: array split does not result in an equal division ({n} into {k} sections)")
            return _split_list(Split(axis, (n // k,) * k)(x))
        piece = static_or_symbolic(x)[axis] // k
        return _split_list(Split(axis, (None,) * k)(x, *[piece] * k))
    positions = [int(i) for i in indices_or_sections]
    bounds = [0, *positions, None]
    pieces = [(bounds[j], bounds[j + 1]) for j in range(len(bounds) - 1)]
    if n is not None:
        sizes = [len(range(n)[slice(a, b)]) for a, b in pieces]
        if sum(sizes) == n:
            return _split_list(Split(axis, tuple(sizes))(x))
    index = [slice(None)] * x.type.ndim
    out = []
    for a, b in pieces:
        index[axis] = slice(a, b)
        out.append(getitem(x, tuple(index)))
    return out


def _split_list(outs):
    return list(outs) if isinstance(outs, (list, tuple)) else [outs]


def split_sizes(x, sizes, axis=0):
    """Pieces of `x` along `axis` of the given `sizes` (ints or 0-d int variables adding up to the length)."""
    x = as_tensor(x)
    (axis,) = normalize_axis(axis, x.type.ndim)
    static, inputs = [], []
    for s in sizes:
        known = to_static(s)
        if known is not None:
            static.append(int(known))
        else:
            static.append(None)
            var = shape_entry_as_variable(s)
            inputs.append(var if var.type.dtype == "int64" else var.astype("int64"))
    return _split_list(Split(axis, tuple(static))(x, *inputs))
