"""Patterns for algebraic rewrites: `Pat` trees written with the same operators as graphs.

>>> x = Pat.var("x")
>>> r = rule("log1p", log(1 + x), lambda x: dgm.log1p(x))   # log(1 + x) -> log1p(x)

A pattern matches Elemwise nodes by scalar-op name (`add` and `mul` in either
argument order), constants by value (looking through DimShuffles that only
reshape the constant), and `Pat.var`s bind any variable (the same name twice
must bind the same variable). A rule's function gets the bound names as keyword
arguments and returns the replacement, or None to decline. A replacement whose
dtype or static shape differs from the matched output is declined too, so rules
never change a result's type.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core import math as dgm  # noqa: F401  (used by rule functions and doctests)
from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.graph import Constant
from dimgraph.core.rewriting.engine import NodeRewriter, accepts_kwargs, compatible
from dimgraph.core.scalar import SCALAR_SPECS, ScalarOp


def const_data(var):
    """The data of a constant seen through DimShuffles (which keep its values), else None."""
    while var.owner is not None and isinstance(var.owner.op, DimShuffle):
        var = var.owner.inputs[0]
    return var.data if isinstance(var, Constant) else None


def is_scalar_op(node, name):
    """`node` is an Elemwise of the plain scalar op `name` (not a Cast or Composite)."""
    op = node.op
    return isinstance(op, Elemwise) and type(op.scalar_op) is ScalarOp and op.scalar_op.name == name


class Pat:
    """A pattern node: `var` binds anything, `const` matches a value, `elem` an Elemwise, `node` any op."""

    __slots__ = ("kind", "name", "args", "value", "where")

    def __init__(self, kind, name=None, args=(), value=None, where=None):
        self.kind, self.name, self.args, self.value, self.where = kind, name, tuple(args), value, where

    @staticmethod
    def var(name, where=None):
        """Any variable, bound to `name`; `where(var)` may restrict it."""
        return Pat("var", name, where=where)

    @staticmethod
    def const(value):
        """A constant whose every entry equals `value` (NaN never matches)."""
        return Pat("const", value=value)

    @staticmethod
    def elem(name, *args):
        return Pat("elem", name, [_lift(a) for a in args])

    @staticmethod
    def node(op_type, *args, bind=None, where=None):
        """A node of `op_type` (its op bound to `bind`, `where(op)` may restrict it) on `args`."""
        return Pat("node", bind, [_lift(a) for a in args], value=op_type, where=where)

    def __add__(self, o):
        return Pat.elem("add", self, o)

    def __radd__(self, o):
        return Pat.elem("add", o, self)

    def __sub__(self, o):
        return Pat.elem("sub", self, o)

    def __rsub__(self, o):
        return Pat.elem("sub", o, self)

    def __mul__(self, o):
        return Pat.elem("mul", self, o)

    def __rmul__(self, o):
        return Pat.elem("mul", o, self)

    def __truediv__(self, o):
        return Pat.elem("true_div", self, o)

    def __rtruediv__(self, o):
        return Pat.elem("true_div", o, self)

    def __pow__(self, o):
        return Pat.elem("pow", self, o)

    def __neg__(self):
        return Pat.elem("neg", self)

    def __repr__(self):
        if self.kind == "var":
            return self.name
        if self.kind == "const":
            return repr(self.value)
        head = self.name if self.kind == "elem" else self.value.__name__
        return f"{head}({', '.join(map(repr, self.args))})"

    # -- matching ------------------------------------------------------------
    def match(self, var, bound):
        """Bindings extending `bound` when `var` matches, else None."""
        if self.kind == "var":
            prev = bound.get(self.name)
            if prev is not None:
                return bound if prev is var else None
            if self.where is not None and not self.where(var):
                return None
            return {**bound, self.name: var}
        if self.kind == "const":
            data = const_data(var)
            if data is None or data.size == 0 or data.dtype.kind not in "biuf":
                return None
            return bound if bool(np.all(data == self.value)) else None
        node = var.owner
        if node is None:
            return None
        if self.kind == "elem":
            if not is_scalar_op(node, self.name):
                return None
            orders = [node.inputs]
            if self.name in SCALAR_SPECS and SCALAR_SPECS[self.name].commutative and len(node.inputs) == 2:
                orders.append(node.inputs[::-1])
        else:
            if not isinstance(node.op, self.value) or (self.where is not None and not self.where(node.op)):
                return None
            if self.name is not None:
                bound = {**bound, self.name: node.op}
            orders = [node.inputs[: len(self.args)]]
        for inputs in orders:
            b = bound
            for p, v in zip(self.args, inputs):
                b = p.match(v, b)
                if b is None:
                    break
            else:
                return b
        return None


def _lift(x):
    return x if isinstance(x, Pat) else Pat.const(x)


def _elem_fn(name):
    def fn(*args):
        return Pat.elem(name, *args)

    fn.__name__ = name
    return fn


(log, exp, log1p, expm1, sigmoid, softplus, sqrt, square, neg) = map(
    _elem_fn, ["log", "exp", "log1p", "expm1", "sigmoid", "softplus", "sqrt", "square", "neg"]
)


class Rule(NodeRewriter):
    """A pattern rewrite: when `pattern` matches a node's output, `fn(**bindings)` replaces it."""

    def __init__(self, name, pattern, fn, tags=()):
        tracks = (Elemwise,) if pattern.kind == "elem" else (pattern.value,)
        super().__init__(name, self._apply, tracks, tags)
        self.pattern = pattern
        self.fn = fn
        self.params = accepts_kwargs(fn)
        self.root = pattern.name if pattern.kind == "elem" else None

    def _apply(self, fgraph, node):
        if self.root is not None and not is_scalar_op(node, self.root):
            return None
        if len(node.outputs) != 1:
            return None
        out = node.outputs[0]
        bound = self.pattern.match(out, {})
        if bound is None:
            return None
        kwargs = {k: v for k, v in bound.items() if k in self.params}
        if "out" in self.params:
            kwargs["out"] = out
        new = self.fn(**kwargs)
        if new is None or new is out or not compatible(out, new):
            return None
        return new

    def transform(self, fgraph, node):
        return self._apply(fgraph, node)

    def __repr__(self):
        return f"Rule({self.name}: {self.pattern!r})"


def rule(name, pattern, fn, tags=()):
    """A named pattern rewrite (see the module docstring)."""
    return Rule(name, pattern, fn, tags)
