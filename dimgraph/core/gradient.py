"""Reverse-mode differentiation: `grad`, `value_and_grad`, `jacobian`, `hessian`.

Gradients are graphs built from each op's `L_op` (vector-Jacobian product),
so they are rewritten, fused and compiled with the cost itself (one function
computes a logp and its gradient in shared loops). The walk is iterative, in
reverse topological order over the nodes that lie between the cost and the
variables asked for; contributions of several clients are summed.
These take positional variables; `dg.grad` and friends (`dimgraph.lower.gradient`)
lower labeled costs first and give labeled gradients back.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.basic import as_tensor, constant, is_float
from dimgraph.core.extra import Assert, arange
from dimgraph.core.graph import Variable, toposort
from dimgraph.core.math import add, cast, eq
from dimgraph.core.scalar import NoDerivative
from dimgraph.core.shape import product, shape_of
from dimgraph.core.shape_ops import broadcast_to, expand_dims, reshape, zeros_like
from dimgraph.core.type import TensorType
from dimgraph.core.vectorize import vectorize_graph
from dimgraph.errors import NonDifferentiable


def _label(var) -> str:
    return repr(var.name) if var.name else str(var)


def vjp(outputs, output_grads, wrt, disconnected="raise"):
    """Gradients of `sum(output * output_grad)` over `outputs` w.r.t. each of `wrt`.

    A `wrt` the outputs do not depend on is an error (`disconnected="raise"`),
    zeros (`"zero"`) or None (`"none"`, for L_ops built from inner graphs).
    """
    wanted = {id(w) for w in wrt}
    nodes = toposort(outputs)
    # Variables that depend on some `wrt`: only those carry gradients worth building.
    reaches = set(wanted)
    for node in nodes:
        if any(id(i) in reaches for i in node.inputs):
            reaches.update(id(o) for o in node.outputs)
    parts = {}  # id(variable) -> list of gradient contributions
    for out, g in zip(outputs, output_grads):
        if id(out) in reaches and is_float(out):
            parts.setdefault(id(out), []).append(g)

    def total(var):
        found = parts.get(id(var))
        if not found:
            return None
        g = found[0] if len(found) == 1 else add(*found) if len(found) == 2 else _sum_all(found)
        if g.type.dtype != var.type.dtype:
            g = cast(g, var.type.dtype)
        parts[id(var)] = [g]
        return g

    for node in reversed(nodes):
        if not any(id(i) in reaches and is_float(i) for i in node.inputs):
            continue
        out_grads = [total(o) if is_float(o) else None for o in node.outputs]
        if all(g is None for g in out_grads):
            continue
        out_grads = [g if g is not None else zeros_like(o) for g, o in zip(out_grads, node.outputs)]
        try:
            in_grads = node.op.L_op(node.inputs, node.outputs, out_grads)
        except NonDifferentiable as err:
            path = [_label(w) for w in wrt if id(w) in wanted]
            raise NonDifferentiable(f"{err} (on the path from the cost to {', '.join(path)})") from None
        if len(in_grads) != len(node.inputs):
            raise AssertionError(
                f"internal error: {node.op}.L_op gave {len(in_grads)} gradients for {len(node.inputs)} inputs"
            )
        for i, g in zip(node.inputs, in_grads):
            if g is None or id(i) not in reaches or not is_float(i):
                continue
            if isinstance(g, NoDerivative):  # only an error when the gradient must flow through this input
                path = ", ".join(_label(w) for w in wrt)
                raise NonDifferentiable(f"{node.op}: {g.reason} (on the path from the cost to {path})")
            parts.setdefault(id(i), []).append(as_tensor(g))

    grads = []
    for w in wrt:
        g = total(w)
        if g is None and disconnected != "none":
            if disconnected == "raise":
                raise ValueError(
                    f"grad: the cost does not depend on {_label(w)} (pass disconnected='zero' to get zeros)"
                )
            g = zeros_like(w)
        elif g is not None and disconnected != "none":
            g = _same_shape_as(g, w)
        grads.append(g)
    return grads


def _same_shape_as(g, w):
    """`g`, checked at run time to have `w`'s length on each axis `w`'s type leaves open.

    A gradient's shape comes from what the cost reads, which need not be `w` itself
    (`(x * c).sum()` gives `c`); without the forward pass nothing else checks that
    `w` fits. Where the shapes are provably equal the rewrites drop the check.
    """
    shape_g, shape_w = shape_of(g), shape_of(w)
    conds = [
        eq(shape_g[a], shape_w[a]) for a, s in enumerate(w.type.shape) if s is None and shape_g[a] is not shape_w[a]
    ]
    if not conds:
        return g
    message = (
        f"grad: {_label(w)} has another length than the cost's graph needs on an axis its type leaves open "
        "(computing the cost itself would raise ShapeError)"
    )
    return Assert(message)(g, *conds)


def _sum_all(terms):
    while len(terms) > 1:  # a balanced tree: short dependency chains, easy to fuse
        terms = [add(terms[k], terms[k + 1]) if k + 1 < len(terms) else terms[k] for k in range(0, len(terms), 2)]
    return terms[0]


def check_wrt(wrt, what):
    single = not isinstance(wrt, (list, tuple))
    wrt = [wrt] if single else list(wrt)
    for k, w in enumerate(wrt):
        if not isinstance(w, Variable):
            raise TypeError(f"{what}: wrt[{k}] must be a graph variable, got {type(w).__name__}")
        if not is_float(w):
            raise TypeError(
                f"{what}: wrt {_label(w)} has dtype {w.type.dtype}; gradients exist only for float variables"
            )
    return wrt, single


def check_cost(cost, what):
    if not isinstance(cost, Variable):
        cost = as_tensor(cost)
    if cost.type.ndim != 0:
        raise ValueError(f"{what}: the cost must be 0-d (a scalar), got {_label(cost)} of type {cost.type}")
    if not is_float(cost):
        raise TypeError(f"{what}: the cost must be a float scalar, got {_label(cost)} of dtype {cost.type.dtype}")
    return cost


def grad(cost, wrt, disconnected="raise"):
    """Gradient of a 0-d `cost` w.r.t. a variable (one result) or a list of variables (a list).

    `disconnected="raise"` (default) makes a variable the cost does not depend
    on an error; `"zero"` gives zeros for it.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(3,))
    >>> grad((x ** 2).sum(), x).eval({x: np.array([1.0, 2.0, 3.0])})
    array([2., 4., 6.])
    """
    if disconnected not in ("raise", "zero"):
        raise ValueError(f"grad: disconnected must be 'raise' or 'zero', got {disconnected!r}")
    wrt, single = check_wrt(wrt, "grad")
    cost = check_cost(cost, "grad")
    grads = vjp([cost], [constant(np.ones((), dtype=cost.type.dtype))], wrt, disconnected)
    grads = [named_after(w, g) for w, g in zip(wrt, grads)]
    return grads[0] if single else grads


def named_after(wrt, g):
    """`g` named `grad_<wrt's name>` (the output's name in DataArrays, datasets and dprint) where it has no name
    and is computed here: a gradient that is some named input or shared value itself keeps that name."""
    if wrt.name and g.name is None and g.owner is not None:
        g.name = f"grad_{wrt.name}"
    return g


def value_and_grad(cost, wrt, disconnected="raise"):
    """`(cost, grad(cost, wrt))`: one graph, so a function computing both shares their work.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(2,))
    >>> v, g = value_and_grad((x ** 3).sum(), x)
    >>> dg.function([x], [v, g])(np.array([1.0, 2.0]))
    [array(9.), array([ 3., 12.])]
    """
    return cost, grad(cost, wrt, disconnected)


def jacobian(y, x, disconnected="zero"):
    """d y / d x with shape y.shape + x.shape, for positional `y` and float `x`.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(2,))
    >>> jacobian(x ** 2, x).eval({x: np.array([1.0, 3.0])})
    array([[2., 0.],
           [0., 6.]])
    """
    y, x = as_tensor(y), as_tensor(x)
    if not is_float(x):
        raise TypeError(f"jacobian: x {_label(x)} has dtype {x.type.dtype}; gradients exist only for float variables")
    return jacobian_positional(y, x, disconnected)


def jacobian_positional(y, x, disconnected):
    """`jacobian` once `x` is known to be float (`dimgraph.lower.gradient` calls it after lowering y and x).

    One reverse pass with a symbolic cotangent, batched over the rows of an
    identity by `vectorize_graph` (as `jax.jacrev`), so the graph stays the
    size of one gradient whatever the size of `y`.
    """
    if not is_float(y):
        raise TypeError(f"jacobian: y {_label(y)} must be float, got dtype {y.type.dtype}")
    y_shape = tuple(shape_of(y))
    n = int(np.prod(y.type.shape, dtype=np.int64)) if None not in y.type.shape else product(y_shape)
    cotangent = TensorType(y.type.dtype, y.type.shape).make_variable(name="cotangent")
    (g,) = vjp([y], [cotangent], [x], disconnected)
    rows = arange(n)
    eye = cast(eq(expand_dims(rows, 1), expand_dims(rows, 0)), y.type.dtype)
    (batched,) = vectorize_graph([g], {cotangent: reshape(eye, (n,) + y_shape)})
    if batched.type.ndim == x.type.ndim:  # the gradient does not depend on the cotangent (disconnected)
        batched = broadcast_to(batched, (n,) + tuple(shape_of(x)))
    return reshape(batched, y_shape + tuple(shape_of(x)))


def hessian(cost, x):
    """Second derivatives of a 0-d `cost` w.r.t. `x`, with shape x.shape + x.shape.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(2,))
    >>> hessian((x ** 3).sum(), x).eval({x: np.array([1.0, 2.0])})
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    return jacobian(grad(cost, x), x)
