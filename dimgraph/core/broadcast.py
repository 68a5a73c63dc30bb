"""Run-time broadcasting: the one rule every backend checks, and its error message.

A graph's types fix which axes broadcast: only an axis of static size 1
stretches. An axis of unknown static size never stretches at run time, even
when the data gives it size 1: sizes that differ there are a `ShapeError`,
not a silent broadcast (the gradient of such an op sums over exactly the
static size-1 axes, and every backend's loops advance exactly the others).
Operands are aligned on the right, as NumPy aligns them.

`perform` implementations, the C planner and the jax closures call
`broadcast_shape` (`node_shape` for an Elemwise-like node, `letter_sizes`
for einsum, `common_size` for one axis) on the run-time shapes; the numba
kernels print their guards with `mismatch_message` (without sizes: the
message is a constant of the kernel's text).

>>> broadcast_shape("add", [(None, 1), (None, None)], [(3, 1), (3, 4)])
(3, 4)
>>> broadcast_shape("add", [(None,), (None,)], [(3,), (1,)])
Traceback (most recent call last):
...
dimgraph.errors.ShapeError: add: axis 0 has different sizes: input 1 has 1 where input 0 has 3; only axes of static size 1 broadcast (declare the size as 1 where you mean to broadcast)
"""

from __future__ import annotations

import numpy as np

from dimgraph.errors import ShapeError

HINT = "only axes of static size 1 broadcast (declare the size as 1 where you mean to broadcast)"


def mismatch_message(what, axis, expected=None, came=None, where="across inputs") -> str:
    """`what: axis has different sizes: ...`; `expected`/`came` are (name, size) pairs, or None when unknown."""
    if expected is None:
        return f"{what}: {axis} has different sizes {where}; {HINT}"
    return f"{what}: {axis} has different sizes: {came[0]} has {came[1]} where {expected[0]} has {expected[1]}; {HINT}"


def common_size(what, axis, statics, sizes, names) -> int:
    """The size of one broadcast axis: the run-time `sizes` of the operands whose static size is not 1 must agree.

    `statics[k]` is operand k's static size on the axis (None: unknown), `names[k]` its name in the message.
    """
    expected = None
    for static, size, name in zip(statics, sizes, names):
        if static == 1:
            continue
        if expected is None:
            expected = (name, size)
        elif size != expected[1]:
            raise ShapeError(mismatch_message(what, axis, expected, (name, size)))
    return 1 if expected is None else expected[1]


def broadcast_shape(what, static_shapes, shapes, names=None, axis_kind="axis") -> tuple:
    """The broadcast of the run-time `shapes` (right-aligned) where only axes of static size 1 stretch.

    `what` names the op, `names` the operands (default "input k"), `axis_kind` the axes ("batch axis").
    """
    names = [f"input {k}" for k in range(len(shapes))] if names is None else names
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for ax in range(ndim):
        present = [k for k, sh in enumerate(shapes) if ax >= ndim - len(sh)]
        out.append(
            common_size(
                what,
                f"{axis_kind} {ax}",
                [static_shapes[k][ax - ndim + len(shapes[k])] for k in present],
                [shapes[k][ax - ndim + len(shapes[k])] for k in present],
                [names[k] for k in present],
            )
        )
    return tuple(out)


def node_shape(node, values) -> tuple:
    """The run-time shape of an Elemwise-like node's output (its inputs have the output's ndim) for input `values`."""
    return broadcast_shape(str(node.op), [i.type.shape for i in node.inputs], [np.shape(v) for v in values])


def letter_sizes(what, terms, static_shapes, shapes) -> dict:
    """Einsum's broadcast: the size of each letter over the operands that have it (`terms[k]` names operand k's axes)."""
    seen = {}
    for k, (term, statics, sizes) in enumerate(zip(terms, static_shapes, shapes)):
        for c, s, n in zip(term, statics, sizes):
            seen.setdefault(c, []).append((s, n, f"input {k}"))
    return {c: common_size(what, f"letter {c!r}", *zip(*entries)) for c, entries in seen.items()}
