"""`TensorVariable`: positional variables with NumPy's operators and methods.

Operators build graph nodes through `dimgraph.core.math`; `==` is elementwise
(as NumPy), while hashing stays by identity so variables remain dict keys.
"""

from __future__ import annotations

from dimgraph.core import extra, linalg, math, operands, reduce, shape_ops
from dimgraph.core.graph import Constant, Variable
from dimgraph.core.shape import shape_of
from dimgraph.core.subtensor import getitem


class TensorOperators:
    """NumPy-style operators shared by tensor variables and tensor constants."""

    __slots__ = ()
    __array_priority__ = 1000  # NumPy arrays defer to us; labeled variables (higher) outrank us

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        """`np.exp(t)` is `dg.exp(t)` (NEP 13); ufuncs without a dimgraph op are a TypeError naming it."""
        return operands.array_ufunc(self, ufunc, method, inputs, kwargs, math.elemwise)

    __array__ = operands.no_array

    # arithmetic
    def __add__(self, other):
        return math.add(self, other)

    def __radd__(self, other):
        return math.add(other, self)

    def __sub__(self, other):
        return math.sub(self, other)

    def __rsub__(self, other):
        return math.sub(other, self)

    def __mul__(self, other):
        return math.mul(self, other)

    def __rmul__(self, other):
        return math.mul(other, self)

    def __truediv__(self, other):
        return math.true_div(self, other)

    def __rtruediv__(self, other):
        return math.true_div(other, self)

    def __floordiv__(self, other):
        return math.floor_div(self, other)

    def __rfloordiv__(self, other):
        return math.floor_div(other, self)

    def __mod__(self, other):
        return math.mod(self, other)

    def __rmod__(self, other):
        return math.mod(other, self)

    def __pow__(self, other):
        return math.pow(self, other)

    def __rpow__(self, other):
        return math.pow(other, self)

    def __neg__(self):
        return math.neg(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return math.abs(self)

    # comparison and logic
    def __eq__(self, other):
        return math.eq(self, other)

    def __ne__(self, other):
        return math.neq(self, other)

    def __lt__(self, other):
        return math.lt(self, other)

    def __le__(self, other):
        return math.le(self, other)

    def __gt__(self, other):
        return math.gt(self, other)

    def __ge__(self, other):
        return math.ge(self, other)

    def __and__(self, other):
        return math.bitwise_and(self, other)

    def __rand__(self, other):
        return math.bitwise_and(other, self)

    def __or__(self, other):
        return math.bitwise_or(self, other)

    def __ror__(self, other):
        return math.bitwise_or(other, self)

    def __xor__(self, other):
        return math.bitwise_xor(self, other)

    def __rxor__(self, other):
        return math.bitwise_xor(other, self)

    def __invert__(self):
        return math.invert(self)

    __hash__ = Variable.__hash__

    # linear algebra and indexing
    def __matmul__(self, other):
        return linalg.matmul(self, other)

    def __rmatmul__(self, other):
        return linalg.matmul(other, self)

    def __getitem__(self, index):
        return getitem(self, index)

    def __iter__(self):
        raise TypeError(f"symbolic tensor {self!r} cannot be iterated; index it with x[i]")

    def __len__(self):
        raise TypeError(f"len() of symbolic tensor {self!r}; use x.shape[0] (static when known)")

    # properties
    @property
    def dtype(self):
        return self.type.dtype

    @property
    def ndim(self):
        return self.type.ndim

    @property
    def shape(self):
        """Ints where known statically, symbolic int64 scalars elsewhere."""
        return shape_of(self)

    @property
    def T(self):
        return shape_ops.transpose(self)

    # methods
    def sum(self, axis=None, keepdims=False):
        return reduce.sum(self, axis, keepdims)

    def prod(self, axis=None, keepdims=False):
        return reduce.prod(self, axis, keepdims)

    def max(self, axis=None, keepdims=False):
        return reduce.max(self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        return reduce.min(self, axis, keepdims)

    def all(self, axis=None, keepdims=False):
        return reduce.all(self, axis, keepdims)

    def any(self, axis=None, keepdims=False):
        return reduce.any(self, axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        return reduce.mean(self, axis, keepdims)

    def var(self, axis=None, keepdims=False, ddof=0):
        return reduce.var(self, axis, keepdims, ddof)

    def std(self, axis=None, keepdims=False, ddof=0):
        return reduce.std(self, axis, keepdims, ddof)

    def argmax(self, axis=None, keepdims=False):
        return reduce.argmax(self, axis, keepdims)

    def argmin(self, axis=None, keepdims=False):
        return reduce.argmin(self, axis, keepdims)

    def reshape(self, *shape):
        if len(shape) == 1 and not isinstance(shape[0], (int, Variable)):
            shape = shape[0]
        return shape_ops.reshape(self, shape)

    def transpose(self, *axes):
        if len(axes) == 1 and not isinstance(axes[0], int):
            axes = axes[0]
        return shape_ops.transpose(self, axes or None)

    def flatten(self):
        return shape_ops.flatten(self)

    def astype(self, dtype):
        return math.cast(self, dtype)

    def squeeze(self, axis=None):
        return shape_ops.squeeze(self, axis)

    def clip(self, lower=None, upper=None):
        return math.clip(self, lower, upper)

    def round(self, decimals=0):
        return math.round(self, decimals)

    def cumsum(self, axis=None):
        return extra.cumsum(self, axis)

    def cumprod(self, axis=None):
        return extra.cumprod(self, axis)

    def dot(self, other):
        return linalg.dot(self, other)


for _name in operands.BINARY_OPERATORS:  # a labeled operand takes over: `s * m` and `m * s` are both labeled
    setattr(TensorOperators, _name, operands.deferring(getattr(TensorOperators, _name)))


class TensorVariable(TensorOperators, Variable):
    __slots__ = ()


class TensorConstant(TensorOperators, Constant):
    __slots__ = ()
