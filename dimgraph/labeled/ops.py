"""Labeled ops: graph nodes whose outputs carry Dims (a `LabeledType`).

Each op decides its output dims and dtype when the graph is built (xarray's
rules for dims, NumPy 2's for dtypes) and has exactly one lowering to
positional ops in `dimgraph.lower.rules`. They never run themselves: compiling
lowers them first, so a labeled op has no `perform`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dimgraph.core.basic import as_tensor
from dimgraph.core.graph import Apply, Op
from dimgraph.core.scalar import ScalarOp
from dimgraph.core.type import TensorType
from dimgraph.errors import DimError
from dimgraph.labeled.dims import Dim, as_dim_tuple, clash, derived_dim, fmt_dims, unify_dims
from dimgraph.labeled.type import LabeledType


def is_labeled(x) -> bool:
    return isinstance(getattr(x, "type", None), LabeledType)


def _check_labeled(what, x):
    if not is_labeled(x):
        raise TypeError(f"{what}: expected a labeled variable, got {x!r}")
    if x.type.dtype == "object":
        raise TypeError(
            f"{what}: {x!r} is an array of labels; labels are keys for sel/.loc, not values to compute with"
        )
    return x


def _names(dims):
    return ", ".join(d.name for d in dims)


@dataclass(frozen=True)
class LabeledOp(Op):
    """Base of labeled ops: they exist only until lowering."""

    def perform(self, node, inputs):
        raise TypeError(f"{self} is a labeled op; it runs only after lowering (dg.function or dg.lower)")


@dataclass(frozen=True)
class LabeledElemwise(LabeledOp):
    """A scalar op over labeled operands, broadcast by dim name (dims in order of first appearance)."""

    scalar_op: ScalarOp

    def make_node(self, *inputs):
        for x in inputs:
            _check_labeled(str(self), x)
        if len(inputs) != self.scalar_op.nin:
            raise TypeError(f"{self}: takes {self.scalar_op.nin} inputs, got {len(inputs)}")
        dims = unify_dims(str(self.scalar_op), inputs)
        (dtype,) = self.scalar_op.output_dtypes([x.type.dtype for x in inputs])
        return Apply(self, inputs, [LabeledType(dtype, dims)])

    def __str__(self):
        return str(self.scalar_op)


def _float_dtype(dtype):
    return dtype if np.dtype(dtype).kind in "fc" else "float64"


REDUCE_DTYPES = {
    "sum": lambda dt: np.sum(np.zeros(1, dt)).dtype.name,
    "prod": lambda dt: np.prod(np.zeros(1, dt)).dtype.name,
    "max": lambda dt: dt,
    "min": lambda dt: dt,
    "all": lambda dt: "bool",
    "any": lambda dt: "bool",
    "mean": _float_dtype,
    "var": _float_dtype,
    "std": _float_dtype,
    "logsumexp": _float_dtype,
    "argmax": lambda dt: "int64",
    "argmin": lambda dt: "int64",
}


def _check_dims_in(what, x, dims):
    have = {d.name: d for d in x.type.dims}
    for d in dims:
        if d.name not in have:
            raise DimError(
                f"{what}: {x.name or 'the variable'} has no dim {d.name!r}; its dims are {fmt_dims(x.type.dims)}"
            )
        if have[d.name] != d:
            raise clash(what, d.name, d, "the argument", have[d.name], x.name or "the variable")


@dataclass(frozen=True)
class LabeledReduce(LabeledOp):
    """A reduction (`REDUCE_DTYPES` kinds) over `dims`; the other dims keep their order."""

    kind: str
    dims: tuple
    ddof: int = 0
    skipna: bool = False  # NaNs left out (xarray's skipna=True); only float reductions that xarray skips over

    def __post_init__(self):
        if self.kind not in REDUCE_DTYPES:
            raise ValueError(f"LabeledReduce: unknown reduction {self.kind!r}; known: {sorted(REDUCE_DTYPES)}")
        object.__setattr__(self, "dims", as_dim_tuple(self.dims, self.kind))
        if self.kind in ("argmax", "argmin") and len(self.dims) != 1:
            raise DimError(f"{self.kind}: give exactly one dim, got {fmt_dims(self.dims)}")

    def make_node(self, x):
        _check_labeled(str(self), x)
        _check_dims_in(self.kind, x, self.dims)
        if self.kind in ("max", "min", "argmax", "argmin"):
            for d in self.dims:
                if d.size == 0:
                    raise DimError(
                        f"{self.kind}: cannot reduce the empty dim {d.name!r} of {x.name or 'the variable'} (no identity)"
                    )
        out_dims = tuple(d for d in x.type.dims if d not in self.dims)
        return Apply(self, [x], [LabeledType(REDUCE_DTYPES[self.kind](x.type.dtype), out_dims)])

    def __str__(self):
        extra = (f", ddof={self.ddof}" if self.ddof else "") + (", skipna" if self.skipna else "")
        return f"{self.kind}{{{_names(self.dims)}{extra}}}"


@dataclass(frozen=True)
class LabeledCumulative(LabeledOp):
    """Cumulative sum (`mode="add"`) or product (`mode="mul"`) along one dim; dims unchanged."""

    mode: str
    dim: Dim
    skipna: bool = False  # NaNs count as 0 (sum) or 1 (product), as xarray's skipna=True

    def make_node(self, x):
        _check_labeled(str(self), x)
        _check_dims_in(str(self), x, (self.dim,))
        fn = np.cumsum if self.mode == "add" else np.cumprod
        return Apply(self, [x], [LabeledType(fn(np.zeros(1, x.type.dtype)).dtype.name, x.type.dims)])

    def __str__(self):
        return f"cum{'sum' if self.mode == 'add' else 'prod'}{{{self.dim.name}}}"


def diff_dim(dim: Dim, n: int, label: str = "upper") -> Dim:
    """The dim `diff` leaves: n fewer positions, with xarray's upper labels (`label="lower"`: the lower ones).

    NOTE: xarray applies `label` to the first of the n differences only (the
    others keep their upper labels), so "lower" leaves the labels [n-1:-1].
    """
    if n == 0:
        return dim
    if label == "upper":
        cut, text = slice(n, None), f"n={n}"
    else:
        cut, text = slice(n - 1, -1), f"n={n}, label=lower"
    if dim.coords is not None:
        return Dim(dim.name, coords=dim.coords[cut])
    if dim.size is not None:
        return Dim(dim.name, size=max(dim.size - n, 0))
    return derived_dim(dim, f"diff({dim.origin or dim.name}, {text})", lambda index: index[cut])


@dataclass(frozen=True)
class LabeledDiff(LabeledOp):
    """n-th difference along `dim` (bool: `!=`), keeping the upper (or lower) labels as xarray."""

    dim: Dim
    n: int = 1
    label: str = "upper"

    def make_node(self, x):
        _check_labeled(str(self), x)
        _check_dims_in("diff", x, (self.dim,))
        if self.n < 0:
            raise ValueError(f"diff: order n must be non-negative, got {self.n}")
        if self.label not in ("upper", "lower"):
            raise ValueError(f"diff: label must be 'upper' or 'lower', got {self.label!r}")
        dtype = (
            x.type.dtype
            if x.type.dtype == "bool" or self.n == 0
            else ScalarOp("sub").output_dtypes([x.type.dtype] * 2)[0]
        )
        new = diff_dim(self.dim, self.n, self.label)
        dims = tuple(new if d == self.dim else d for d in x.type.dims)
        return Apply(self, [x], [LabeledType(dtype, dims)])

    def __str__(self):
        extra = ", label=lower" if self.label == "lower" else ""
        return f"diff{{{self.dim.name}, n={self.n}{extra}}}"


@dataclass(frozen=True)
class Transpose(LabeledOp):
    """The same data with dims in `dims` order (a permutation of the input's dims)."""

    dims: tuple

    def make_node(self, x):
        _check_labeled(str(self), x)
        if sorted(d.name for d in self.dims) != sorted(x.type.names) or any(d not in x.type.dims for d in self.dims):
            raise DimError(f"transpose: {fmt_dims(self.dims)} is not a permutation of the dims {fmt_dims(x.type.dims)}")
        return Apply(self, [x], [LabeledType(x.type.dtype, self.dims)])

    def __str__(self):
        return f"transpose{{{_names(self.dims)}}}"


@dataclass(frozen=True)
class Relabel(LabeledOp):
    """The same data under other Dims of equal sizes, one per position (`rename`)."""

    dims: tuple

    def make_node(self, x):
        _check_labeled(str(self), x)
        if len(self.dims) != x.type.ndim:
            raise DimError(f"rename: {fmt_dims(self.dims)} does not match the {x.type.ndim} dims of {x!r}")
        for old, new in zip(x.type.dims, self.dims):
            if old.size is not None and new.size is not None and old.size != new.size:
                raise DimError(f"rename: dim {old.name!r} has size {old.size}; its new dim {new!r} has size {new.size}")
        return Apply(self, [x], [LabeledType(x.type.dtype, self.dims)])

    def __str__(self):
        return f"rename{{{_names(self.dims)}}}"


@dataclass(frozen=True)
class ExpandDims(LabeledOp):
    """New dims put first; the data is repeated along them (size 1 when the Dim says so)."""

    new: tuple

    def make_node(self, x):
        _check_labeled(str(self), x)
        for d in self.new:
            if d.name in x.type.names:
                raise DimError(
                    f"expand_dims: {x.name or 'the variable'} already has a dim named {d.name!r} {fmt_dims(x.type.dims)}"
                )
        return Apply(self, [x], [LabeledType(x.type.dtype, self.new + x.type.dims)])

    def __str__(self):
        return f"expand_dims{{{_names(self.new)}}}"


@dataclass(frozen=True)
class Squeeze(LabeledOp):
    """Drops dims of size 1: static, or (a dim sized by the data) checked when the function runs."""

    dims: tuple

    def make_node(self, x):
        _check_labeled(str(self), x)
        _check_dims_in("squeeze", x, self.dims)
        for d in self.dims:
            if d.size not in (1, None):
                raise DimError(f"squeeze: dim {d.name!r} has size {d.size}, not 1")
        return Apply(self, [x], [LabeledType(x.type.dtype, tuple(d for d in x.type.dims if d not in self.dims))])

    def __str__(self):
        return f"squeeze{{{_names(self.dims)}}}"


@dataclass(frozen=True)
class BroadcastTo(LabeledOp):
    """The input repeated over the dims it lacks, with dims in `dims` order (broadcast_like, broadcast).

    `like`: the variables whose dims `x` is broadcast to. They bring those dims' labels
    to the output (xarray's `broadcast_like` takes the other's index), not data: the
    lowering reads only `x`.
    """

    dims: tuple

    def make_node(self, x, *like):
        _check_labeled(str(self), x)
        for v in like:
            _check_labeled(str(self), v)
        target = {d.name: d for d in self.dims}
        for d in x.type.dims:
            if d.name in target and target[d.name] != d:
                raise clash("broadcast", d.name, d, x.name or "the variable", target[d.name], "the target")
        missing = [d.name for d in x.type.dims if d not in self.dims]
        if missing:
            raise DimError(
                f"broadcast: the target dims {fmt_dims(self.dims)} lack {missing} of {x.name or 'the variable'}"
            )
        return Apply(self, [x, *like], [LabeledType(x.type.dtype, self.dims)])

    def __str__(self):
        return f"broadcast{{{_names(self.dims)}}}"


@dataclass(frozen=True)
class FullLike(LabeledOp):
    """An array of the input's dims filled with `fill_value` (as `xarray.full_like`)."""

    fill_value: Any
    dtype: str

    def make_node(self, x):
        _check_labeled(str(self), x)
        return Apply(self, [x], [LabeledType(self.dtype, x.type.dims)])

    def __str__(self):
        return f"full_like{{{self.fill_value!r}, {self.dtype}}}"


@dataclass(frozen=True)
class Arange(LabeledOp):
    """The positions 0..n-1 of `dim` (int64), on that dim."""

    dim: Dim

    def make_node(self):
        return Apply(self, [], [LabeledType("int64", (self.dim,))])

    def __str__(self):
        return f"arange{{{self.dim.name}}}"


@dataclass(frozen=True)
class FromPositional(LabeledOp):
    """A positional tensor read as labeled: axis k gets `dims[k]`."""

    dims: tuple

    def make_node(self, t):
        t = as_tensor(t)
        if t.type.ndim != len(self.dims):
            raise DimError(
                f"from_positional: {t!r} has {t.type.ndim} axes but {len(self.dims)} dims were given {fmt_dims(self.dims)}"
            )
        for ax, (s, d) in enumerate(zip(t.type.shape, self.dims)):
            if s is not None and d.size is not None and s != d.size:
                raise DimError(
                    f"from_positional: axis {ax} of {t!r} has size {s}, but dim {d.name!r} has size {d.size}"
                )
        return Apply(self, [t], [LabeledType(t.type.dtype, self.dims)])

    def __str__(self):
        return f"from_positional{{{_names(self.dims)}}}"


@dataclass(frozen=True)
class ToPositional(LabeledOp):
    """A labeled variable as a positional tensor with axes in `dims` order (the only way out of labels)."""

    dims: tuple

    def make_node(self, x):
        _check_labeled(str(self), x)
        Transpose(self.dims).make_node(x)  # the same permutation check
        return Apply(self, [x], [TensorType(x.type.dtype, tuple(d.size for d in self.dims))])

    def __str__(self):
        return f"to_positional{{{_names(self.dims)}}}"
