"""Helpers for users testing their own graphs: `verify_grad` and `numeric_grad` (central finite differences)."""

from __future__ import annotations

import numpy as np


def verify_grad(fn, inputs, eps=1e-6, rtol=1e-5, atol=1e-7, backend=None, n_directions=3, seed=0):
    """Check `dg.grad` of the scalar graph `fn(*variables)` at the values `inputs` against finite differences.

    For a few random directions d (per float input) the compiled directional
    derivative <grad, d> is compared with (cost(x + eps d) - cost(x - eps d)) / (2 eps).
    Raises AssertionError naming the input and both numbers when they differ by
    more than `rtol * |fd| + atol * (1 + |cost|)`; returns the gradients otherwise.

    >>> import dimgraph as dg, numpy as np
    >>> from dimgraph.testing import verify_grad
    >>> grads = verify_grad(lambda x: (dg.sin(x) * x).sum(), [np.array([0.5, 1.0])])
    >>> np.round(grads[0], 4)
    array([0.9182, 1.3818])
    """
    import dimgraph as dg

    values = [np.asarray(v) for v in inputs]
    variables = [dg.tensor(f"input{k}", shape=v.shape, dtype=v.dtype.name) for k, v in enumerate(values)]
    cost = fn(*variables)
    wrt = [v for v in variables if np.dtype(v.type.dtype).kind == "f"]
    kwargs = {} if backend is None else {"backend": backend}
    f = dg.function(variables, [cost, *dg.grad(cost, wrt, disconnected="zero")], **kwargs)
    out = f(*values)
    value, grads = float(out[0]), out[1:]
    rng = np.random.default_rng(seed)
    floats = [k for k, v in enumerate(variables) if np.dtype(v.type.dtype).kind == "f"]
    for k, g in zip(floats, grads):
        x = values[k].astype(np.float64)
        for _ in range(n_directions):
            d = rng.normal(size=x.shape)
            shifted = []
            for sign in (1, -1):
                vals = list(values)
                vals[k] = (x + sign * eps * d).astype(values[k].dtype)
                shifted.append(float(f(*vals)[0]))
            fd = (shifted[0] - shifted[1]) / (2 * eps)
            analytic = float(np.sum(g * d))
            if not abs(fd - analytic) <= rtol * abs(fd) + atol * (1 + abs(value)):
                raise AssertionError(
                    f"verify_grad: input {k}: the gradient gives {analytic!r} along a random direction, "
                    f"finite differences give {fd!r}"
                )
    return list(grads)


def numeric_grad(f, values, k, eps=1e-6):
    """Central differences of the scalar `f(*values)` w.r.t. `values[k]`, one entry at a time (small inputs).

    >>> import numpy as np
    >>> from dimgraph.testing import numeric_grad
    >>> np.round(numeric_grad(lambda a, b: (a ** 2 * b).sum(), [np.array([1.0, 2.0]), 3.0], 0), 6)
    array([ 6., 12.])
    """
    x = np.asarray(values[k], dtype=np.float64)
    out = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        for sign in (1, -1):
            vals = list(values)
            shifted = x.copy()
            shifted[idx] += sign * eps
            vals[k] = shifted
            out[idx] += sign * float(np.asarray(f(*vals))) / (2 * eps)
    return out
