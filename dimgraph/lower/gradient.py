"""The front door of differentiation: `dg.grad`, `dg.value_and_grad`, `dg.jacobian`, `dg.hessian`.

Positional variables go straight to `dimgraph.core.gradient`; a labeled cost
is lowered first, differentiated positionally, and its gradients come back
with exactly the dims of the variables they are taken with respect to.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core import gradient as core
from dimgraph.core.basic import constant, is_float
from dimgraph.core.gradient import check_cost, check_wrt, jacobian_positional, named_after, vjp
from dimgraph.labeled.basic import from_positional
from dimgraph.labeled.ops import is_labeled
from dimgraph.lower import lower


def label(var) -> str:
    return repr(var.name) if var.name else str(var)


def grad(cost, wrt, disconnected="raise"):
    """Gradient of a 0-d `cost` w.r.t. a variable (one result) or a list of variables (a list).

    `disconnected="raise"` (default) makes a variable the cost does not depend
    on an error; `"zero"` gives zeros for it. Labeled variables get labeled
    gradients with exactly their dims.

    >>> import dimgraph as dg, numpy as np
    >>> i = dg.Dim("i", coords=["a", "b"])
    >>> x = dg.labeled("x", dims=(i,))
    >>> g = dg.grad((x ** 2).sum(), x)
    >>> dg.function([x], g)(np.array([1.0, 3.0])).values
    array([2., 6.])
    """
    if disconnected not in ("raise", "zero"):
        raise ValueError(f"grad: disconnected must be 'raise' or 'zero', got {disconnected!r}")
    single = not isinstance(wrt, (list, tuple))
    wrt_list = [wrt] if single else list(wrt)
    if not (is_labeled(cost) or any(is_labeled(w) for w in wrt_list)):
        return core.grad(cost, wrt, disconnected)
    wrt_list, _ = check_wrt(wrt_list, "grad")
    grads = _labeled_grad(cost, wrt_list, disconnected)
    return grads[0] if single else grads


def _labeled_grad(cost, wrt, disconnected):
    """Lower the labeled cost, differentiate positionally, put the wrt dims back."""
    pos_cost, *pos_wrt = lower([cost, *wrt], inputs=wrt)
    pos_cost = check_cost(pos_cost, "grad")
    one = constant(np.ones((), dtype=pos_cost.type.dtype))
    grads = vjp([pos_cost], [one], pos_wrt, disconnected)
    return [
        named_after(w, _lowered_from(from_positional(g, w.type.dims), cost) if is_labeled(w) else g)
        for g, w in zip(grads, wrt)
    ]


def _lowered_from(result, source):
    """`result`, noting the labeled graph it was computed from positionally: `dg.function` reads the
    labeled indexers there to name the input and dim of an out-of-range position (`lower.io.indexer_checks`)."""
    result.tag["lowered_from"] = (source,)
    return result


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
    if is_labeled(y) or is_labeled(x):
        return _labeled_jacobian(y, x, disconnected)
    return core.jacobian(y, x, disconnected)


def _labeled_jacobian(y, x, disconnected):
    if not (is_labeled(y) and is_labeled(x)):
        raise TypeError("jacobian: give y and x both labeled or both positional")
    if not is_float(x):
        raise TypeError(f"jacobian: x {label(x)} has dtype {x.type.dtype}; gradients exist only for float variables")
    pos_y, pos_x = lower([y, x], inputs=[x])
    jac = jacobian_positional(pos_y, pos_x, disconnected)
    taken = {d.name for d in y.type.dims}
    x_dims = []
    for d in x.type.dims:
        new = d
        while new.name in taken:
            new = new.rename(new.name + "_")
        taken.add(new.name)
        x_dims.append(new)
    return _lowered_from(from_positional(jac, tuple(y.type.dims) + tuple(x_dims)), y)


def hessian(cost, x):
    """Second derivatives of a 0-d `cost` w.r.t. `x`: shape x.shape + x.shape (`jacobian(grad(cost, x), x)`).

    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(2,))
    >>> dg.function([x], dg.hessian((x ** 3).sum(), x))(np.array([1.0, 2.0]))
    array([[ 6.,  0.],
           [ 0., 12.]])
    """
    return jacobian(grad(cost, x), x)
