"""Reverse-mode differentiation: `grad`, `value_and_grad`, `jacobian`, `hessian`.

Gradients are graphs built from each op's `L_op` (vector-Jacobian product),
so they are rewritten, fused and compiled with the cost itself (one function
computes a logp and its gradient in shared loops). The walk is iterative, in
reverse topological order over the nodes that lie between the cost and the
variables asked for; contributions of several clients are summed.
Labeled costs are lowered first; labeled gradients come back with exactly
the dims of the variables they are taken with respect to.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core.basic import as_tensor, constant
from dimgraph.core.graph import Variable, toposort
from dimgraph.core.scalar import NoDerivative
from dimgraph.errors import NonDifferentiable


def _is_float(var) -> bool:
    return np.dtype(var.type.dtype).kind in "fc"


def _label(var) -> str:
    return repr(var.name) if var.name else str(var)


def vjp(outputs, output_grads, wrt, disconnected="raise"):
    """Gradients of `sum(output * output_grad)` over `outputs` w.r.t. each of `wrt`.

    A `wrt` the outputs do not depend on is an error (`disconnected="raise"`),
    zeros (`"zero"`) or None (`"none"`, for L_ops built from inner graphs).
    """
    from dimgraph.core.math import add, cast

    wanted = {id(w) for w in wrt}
    nodes = toposort(outputs)
    # Variables that depend on some `wrt`: only those carry gradients worth building.
    reaches = set(wanted)
    for node in nodes:
        if any(id(i) in reaches for i in node.inputs):
            reaches.update(id(o) for o in node.outputs)
    parts = {}  # id(variable) -> list of gradient contributions
    for out, g in zip(outputs, output_grads):
        if id(out) in reaches and _is_float(out):
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
        if not any(id(i) in reaches and _is_float(i) for i in node.inputs):
            continue
        out_grads = [total(o) if _is_float(o) else None for o in node.outputs]
        if all(g is None for g in out_grads):
            continue
        from dimgraph.core.shape_ops import zeros_like

        out_grads = [g if g is not None else zeros_like(o) for g, o in zip(out_grads, node.outputs)]
        try:
            in_grads = node.op.L_op(node.inputs, node.outputs, out_grads)
        except NonDifferentiable as err:
            path = [_label(w) for w in wrt if id(w) in wanted]
            raise NonDifferentiable(f"{err} (on the path from the cost to {', '.join(path)})") from None
        if len(in_grads) != len(node.inputs):
            raise AssertionError(f"internal error: {node.op}.L_op gave {len(in_grads)} gradients for {len(node.inputs)} inputs")
        for i, g in zip(node.inputs, in_grads):
            if g is None or id(i) not in reaches or not _is_float(i):
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
            from dimgraph.core.shape_ops import zeros_like

            g = zeros_like(w)
        grads.append(g)
    return grads


def _sum_all(terms):
    from dimgraph.core.math import add

    while len(terms) > 1:  # a balanced tree: short dependency chains, easy to fuse
        terms = [add(terms[k], terms[k + 1]) if k + 1 < len(terms) else terms[k] for k in range(0, len(terms), 2)]
    return terms[0]


def _check_wrt(wrt, what):
    single = not isinstance(wrt, (list, tuple))
    wrt = [wrt] if single else list(wrt)
    for k, w in enumerate(wrt):
        if not isinstance(w, Variable):
            raise TypeError(f"{what}: wrt[{k}] must be a graph variable, got {type(w).__name__}")
        if not _is_float(w):
            raise TypeError(
                f"{what}: wrt {_label(w)} has dtype {w.type.dtype}; gradients exist only for float variables"
            )
    return wrt, single


def _check_cost(cost, what):
    if not isinstance(cost, Variable):
        cost = as_tensor(cost)
    if cost.type.ndim != 0:
        raise ValueError(f"{what}: the cost must be 0-d (a scalar), got {_label(cost)} of type {cost.type}")
    if not _is_float(cost):
        raise TypeError(f"{what}: the cost must be a float scalar, got {_label(cost)} of dtype {cost.type.dtype}")
    return cost


def grad(cost, wrt, disconnected="raise"):
    """Gradient of a 0-d `cost` w.r.t. a variable (one result) or a list of variables (a list).

    `disconnected="raise"` (default) makes a variable the cost does not depend
    on an error; `"zero"` gives zeros for it. Labeled variables get labeled
    gradients with exactly their dims.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(3,))
    >>> g = dg.grad((x ** 2).sum(), x)
    >>> dg.function([x], g)(np.array([1.0, 2.0, 3.0]))
    array([2., 4., 6.])
    """
    if disconnected not in ("raise", "zero"):
        raise ValueError(f"grad: disconnected must be 'raise' or 'zero', got {disconnected!r}")
    wrt, single = _check_wrt(wrt, "grad")
    from dimgraph.labeled.ops import is_labeled

    if is_labeled(cost) or any(is_labeled(w) for w in wrt):
        grads = _labeled_grad(cost, wrt, disconnected)
    else:
        cost = _check_cost(cost, "grad")
        one = constant(np.ones((), dtype=cost.type.dtype))
        grads = vjp([cost], [one], wrt, disconnected)
    return grads[0] if single else grads


def _labeled_grad(cost, wrt, disconnected):
    """Lower the labeled cost, differentiate positionally, put the wrt dims back."""
    from dimgraph.labeled.basic import from_positional
    from dimgraph.labeled.ops import is_labeled
    from dimgraph.lower import Lowering

    low = Lowering()
    for w in wrt:
        if w.owner is None:
            low.get(w)
    (pos_cost,) = low.run([cost])
    pos_cost = _check_cost(pos_cost, "grad")
    pos_wrt = []
    for w in wrt:
        p = low.memo.get(id(w), w if not is_labeled(w) else None)
        if p is None:
            (p,) = low.run([w])
        pos_wrt.append(p)
    one = constant(np.ones((), dtype=pos_cost.type.dtype))
    grads = vjp([pos_cost], [one], pos_wrt, disconnected)
    return [from_positional(g, w.type.dims) if is_labeled(w) else g for g, w in zip(grads, wrt)]


def value_and_grad(cost, wrt, disconnected="raise"):
    """`(cost, grad(cost, wrt))` from one graph, so a compiled function shares and fuses their work.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(2,))
    >>> v, (g,) = dg.value_and_grad(dg.exp(x).sum(), [x])
    >>> dg.function([x], [v, g])(np.zeros(2))
    [array(2.), array([1., 1.])]
    """
    return cost, grad(cost, wrt, disconnected)


def jacobian(y, x, disconnected="zero"):
    """d y / d x with shape y.shape + x.shape (labeled: dims y.dims + x.dims).

    One reverse pass with a symbolic cotangent, batched over the rows of an
    identity by `vectorize_graph` (as `jax.jacrev`), so the graph stays the
    size of one gradient whatever the size of `y`. A labeled
    `x` dim whose name is also one of y's dims is renamed with a trailing
    `"_"` (`obs` -> `obs_`) so the result's dims stay unique.

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(2,))
    >>> dg.function([x], dg.jacobian(x ** 2, x))(np.array([1.0, 3.0]))
    array([[2., 0.],
           [0., 6.]])
    """
    from dimgraph.labeled.ops import is_labeled

    if is_labeled(y) or is_labeled(x):
        return _labeled_jacobian(y, x, disconnected)
    y, x = as_tensor(y), as_tensor(x)
    if not _is_float(x):
        raise TypeError(f"jacobian: x {_label(x)} has dtype {x.type.dtype}; gradients exist only for float variables")
    return _jacobian_positional(y, x, disconnected)


def _jacobian_positional(y, x, disconnected):
    """One reverse pass with a symbolic cotangent, vectorized over the rows of an identity (`jax.jacrev`'s way)."""
    from dimgraph.core.extra import arange
    from dimgraph.core.math import cast, eq
    from dimgraph.core.shape import shape_of
    from dimgraph.core.shape_ops import broadcast_to, expand_dims, reshape
    from dimgraph.core.type import TensorType
    from dimgraph.core.vectorize import vectorize_graph

    if not _is_float(y):
        raise TypeError(f"jacobian: y {_label(y)} must be float, got dtype {y.type.dtype}")
    y_shape = tuple(shape_of(y))
    n = int(np.prod(y.type.shape, dtype=np.int64)) if None not in y.type.shape else _prod(y_shape)
    cotangent = TensorType(y.type.dtype, y.type.shape).make_variable(name="cotangent")
    (g,) = vjp([y], [cotangent], [x], disconnected)
    rows = arange(n)
    eye = cast(eq(expand_dims(rows, 1), expand_dims(rows, 0)), y.type.dtype)
    (batched,) = vectorize_graph([g], {cotangent: reshape(eye, (n,) + y_shape)})
    if batched.type.ndim == x.type.ndim:  # the gradient does not depend on the cotangent (disconnected)
        batched = broadcast_to(batched, (n,) + tuple(shape_of(x)))
    return reshape(batched, y_shape + tuple(shape_of(x)))


def _prod(entries):
    total = 1
    for e in entries:
        total = total * e
    return total


def _labeled_jacobian(y, x, disconnected):
    from dimgraph.labeled.basic import from_positional
    from dimgraph.labeled.ops import is_labeled
    from dimgraph.lower import Lowering

    if not (is_labeled(y) and is_labeled(x)):
        raise TypeError("jacobian: give y and x both labeled or both positional")
    if not _is_float(x):
        raise TypeError(f"jacobian: x {_label(x)} has dtype {x.type.dtype}; gradients exist only for float variables")
    low = Lowering()
    if x.owner is None:
        low.get(x)
    (pos_y,) = low.run([y])
    pos_x = low.memo.get(id(x))
    if pos_x is None:
        (pos_x,) = low.run([x])
    jac = _jacobian_positional(pos_y, pos_x, disconnected)
    taken = {d.name for d in y.type.dims}
    x_dims = []
    for d in x.type.dims:
        new = d
        while new.name in taken:
            new = new.rename(new.name + "_")
        taken.add(new.name)
        x_dims.append(new)
    return from_positional(jac, tuple(y.type.dims) + tuple(x_dims))


def hessian(cost, x):
    """Second derivatives of a 0-d `cost` w.r.t. `x`: shape x.shape + x.shape (`jacobian(grad(cost, x), x)`).

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(2,))
    >>> dg.function([x], dg.hessian((x ** 3).sum(), x))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    return jacobian(grad(cost, x), x)
