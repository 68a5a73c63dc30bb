"""Derivatives of the scalar ops, as tensor expressions: what `Elemwise.L_op` multiplies the incoming gradient by.

`SCALAR_GRADS[name](inputs, output, gz)` returns one entry per input: the
gradient flowing to that input at full (broadcast) shape, or None where the
op is flat (comparisons, rounding) or the input is not a number that varies
(the condition of `where`). Ties: `maximum`/`minimum` send the gradient to the
first argument where both are equal (a valid subgradient, as NumPy's choice
of that argument's value).
"""

from __future__ import annotations

import math

import numpy as np

from dimgraph.core import math as m
from dimgraph.core.shape_ops import zeros_like
from dimgraph.errors import NonDifferentiable


def _flat(inputs, z, gz):
    return [zeros_like(gz) if np.dtype(i.type.dtype).kind in "fc" else None for i in inputs]


def _pow(inputs, z, gz):
    x, y = inputs
    dx = gz * y * m.elemwise("pow", x, y - 1)
    # d/dy x**y = log(x) x**y; at x == 0 the limit of that product is 0 (for y > 0)
    safe = m.where(x > 0, x, 1)
    dy = gz * m.where(x > 0, m.log(safe) * z, 0)
    return [dx, dy]


def _mod(inputs, z, gz):
    x, y = inputs
    return [gz, -gz * m.floor(m.elemwise("true_div", x, y))]


def _maximum(inputs, z, gz):
    x, y = inputs
    first = x >= y
    return [m.where(first, gz, 0), m.where(first, 0, gz)]


def _minimum(inputs, z, gz):
    x, y = inputs
    first = x <= y
    return [m.where(first, gz, 0), m.where(first, 0, gz)]


def _trigamma(inputs, z, gz):
    raise NonDifferentiable("trigamma: its derivative (tetragamma) is not implemented; input 0 has no gradient")


LN2, LN10 = math.log(2.0), math.log(10.0)
TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)

SCALAR_GRADS = {
    "add": lambda i, z, gz: [gz, gz],
    "sub": lambda i, z, gz: [gz, -gz],
    "mul": lambda i, z, gz: [gz * i[1], gz * i[0]],
    "true_div": lambda i, z, gz: [gz / i[1], -gz * i[0] / m.square(i[1])],
    "floor_div": _flat,
    "mod": _mod,
    "pow": _pow,
    "neg": lambda i, z, gz: [-gz],
    "abs": lambda i, z, gz: [gz * m.sign(i[0])],
    "sign": _flat,
    "reciprocal": lambda i, z, gz: [-gz * m.square(z)],
    "maximum": _maximum,
    "minimum": _minimum,
    "exp": lambda i, z, gz: [gz * z],
    "exp2": lambda i, z, gz: [gz * z * LN2],
    "log": lambda i, z, gz: [gz / i[0]],
    "log2": lambda i, z, gz: [gz / (i[0] * LN2)],
    "log10": lambda i, z, gz: [gz / (i[0] * LN10)],
    "log1p": lambda i, z, gz: [gz / (1 + i[0])],
    "expm1": lambda i, z, gz: [gz * (z + 1)],
    "sqrt": lambda i, z, gz: [gz * 0.5 / z],
    "square": lambda i, z, gz: [gz * 2 * i[0]],
    "sin": lambda i, z, gz: [gz * m.cos(i[0])],
    "cos": lambda i, z, gz: [-gz * m.sin(i[0])],
    "tan": lambda i, z, gz: [gz * (1 + m.square(z))],
    "arcsin": lambda i, z, gz: [gz / m.sqrt(1 - m.square(i[0]))],
    "arccos": lambda i, z, gz: [-gz / m.sqrt(1 - m.square(i[0]))],
    "arctan": lambda i, z, gz: [gz / (1 + m.square(i[0]))],
    "sinh": lambda i, z, gz: [gz * m.cosh(i[0])],
    "cosh": lambda i, z, gz: [gz * m.sinh(i[0])],
    "tanh": lambda i, z, gz: [gz * (1 - m.square(z))],
    "arctan2": lambda i, z, gz: [
        gz * i[1] / (m.square(i[0]) + m.square(i[1])),
        -gz * i[0] / (m.square(i[0]) + m.square(i[1])),
    ],
    "sigmoid": lambda i, z, gz: [gz * z * (1 - z)],
    "softplus": lambda i, z, gz: [gz * m.sigmoid(i[0])],
    "erf": lambda i, z, gz: [gz * TWO_OVER_SQRT_PI * m.exp(-m.square(i[0]))],
    "erfc": lambda i, z, gz: [-gz * TWO_OVER_SQRT_PI * m.exp(-m.square(i[0]))],
    "gammaln": lambda i, z, gz: [gz * m.digamma(i[0])],
    "digamma": lambda i, z, gz: [gz * m.trigamma(i[0])],
    "trigamma": _trigamma,
    "logaddexp": lambda i, z, gz: [gz * m.exp(i[0] - z), gz * m.exp(i[1] - z)],
    "round": _flat,
    "floor": _flat,
    "ceil": _flat,
    "trunc": _flat,
    "where": lambda i, z, gz: [None, m.where(i[0], gz, 0), m.where(i[0], 0, gz)],
    "identity": lambda i, z, gz: [gz],
}


def elemwise_grads(scalar_op, inputs, outputs, output_grads):
    """`Elemwise.L_op`: the scalar derivative at full shape, summed back over each input's broadcast axes."""
    from dimgraph.core.elemwise import Elemwise
    from dimgraph.core.gradient import vjp
    from dimgraph.core.scalar import Cast, Composite
    from dimgraph.core.subtensor import is_float, sum_to

    if isinstance(scalar_op, Composite):  # differentiate its scalar DAG as a tensor graph
        values = list(inputs)
        for op, refs in scalar_op.steps:
            values.append(Elemwise(op)(*[values[r] for r in refs]))
        return vjp([values[r] for r in scalar_op.outs], output_grads, inputs, disconnected="none")
    (x_out,), (gz,) = outputs, output_grads
    if isinstance(scalar_op, Cast):
        return [m.cast(gz, inputs[0].type.dtype) if is_float(inputs[0]) else None]
    rule = SCALAR_GRADS.get(scalar_op.name)
    if rule is None:
        raise NonDifferentiable(f"elementwise {scalar_op.name} has no gradient")
    grads = rule(inputs, x_out, gz)
    return [sum_to(g, i) if g is not None and is_float(i) else None for g, i in zip(grads, inputs)]
