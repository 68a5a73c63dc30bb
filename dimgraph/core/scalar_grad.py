"""`Elemwise.L_op`: each scalar op's derivative (its row's `grad`) at full shape, summed back over broadcast axes."""

from __future__ import annotations

from dimgraph.core import math as m
from dimgraph.core.basic import is_float
from dimgraph.core.elemwise import Elemwise
from dimgraph.core.gradient import vjp
from dimgraph.core.reduce import sum_to
from dimgraph.core.scalar import FLAT, SCALAR_SPECS, Cast, Composite, NoDerivative
from dimgraph.core.shape_ops import zeros_like
from dimgraph.errors import NonDifferentiable


def scalar_grads(scalar_op, inputs, output, gz) -> list:
    """Per input: the gradient at full shape, None (no gradient flows) or a `NoDerivative`."""
    rule = SCALAR_SPECS[scalar_op.name].grad
    if rule is None:  # comparisons and logic: no float output, so vjp never asks
        raise NonDifferentiable(f"elementwise {scalar_op.name} has no gradient")
    if rule == FLAT:
        return [zeros_like(gz) if is_float(i) else None for i in inputs]
    if isinstance(rule, NoDerivative):
        return [rule] * len(inputs)
    return rule(m, inputs, output, gz)


def elemwise_grads(scalar_op, inputs, outputs, output_grads):
    """`Elemwise.L_op`: the scalar derivative at full shape, summed back over each input's broadcast axes."""
    if isinstance(scalar_op, Composite):  # differentiate its scalar DAG as a tensor graph
        values = list(inputs)
        for op, refs in scalar_op.steps:
            values.append(Elemwise(op)(*[values[r] for r in refs]))
        return vjp([values[r] for r in scalar_op.outs], output_grads, inputs, disconnected="none")
    (x_out,), (gz,) = outputs, output_grads
    if isinstance(scalar_op, Cast):
        return [m.cast(gz, inputs[0].type.dtype) if is_float(inputs[0]) else None]
    grads = scalar_grads(scalar_op, inputs, x_out, gz)
    return [
        g if isinstance(g, NoDerivative) else sum_to(g, i) if g is not None and is_float(i) else None
        for g, i in zip(grads, inputs)
    ]
