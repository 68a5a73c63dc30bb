"""The `python` backend: the NumPy reference. Runs each node's `perform` in a precomputed order.

Dispatch goes through a registry keyed by Op type (`python_impl`); the default
entry is the op's own `perform`. Storage slots are assigned once at compile time,
so a call is a flat loop over (function, input slots, output slots).
"""

from __future__ import annotations

from functools import singledispatch

from dimgraph.backends import Backend, Compiled
from dimgraph.core.graph import Constant
from dimgraph.core.rewriting import OPT_IN

# It runs every op's perform, the fused ones included.
BACKEND = Backend("python", __name__, rewrites_opt_in=OPT_IN)


@singledispatch
def python_impl(op, node):
    """A callable `(list of input arrays) -> list of output arrays` for `node`."""
    return lambda inputs: op.perform(node, inputs)


def compile(fgraph, **options):
    slot = {}
    storage = []

    def slot_of(var):
        if var not in slot:
            slot[var] = len(storage)
            storage.append(var.data if isinstance(var, Constant) else None)
        return slot[var]

    input_slots = [slot_of(v) for v in fgraph.inputs]
    program = []
    for node in fgraph.toposort():
        ins = [slot_of(i) for i in node.inputs]
        outs = [slot_of(o) for o in node.outputs]
        program.append((python_impl(node.op, node), ins, outs, node))
    output_slots = [slot_of(v) for v in fgraph.outputs]
    template = list(storage)

    def run(args):
        values = list(template)
        for s, a in zip(input_slots, args):
            values[s] = a
        for fn, ins, outs, node in program:
            results = fn([values[i] for i in ins])
            for s, r, var in zip(outs, results, node.outputs):
                _check_result(node, var, r)
                values[s] = r
        return [values[s] for s in output_slots]

    return Compiled(run)


def _check_result(node, var, value):
    """The reference backend verifies every op's result against its static type."""
    dtype, shape = var.type.dtype, var.type.shape
    if (
        value.dtype != dtype
        or value.ndim != len(shape)
        or any(s is not None and s != v for s, v in zip(shape, value.shape))
    ):
        raise RuntimeError(
            f"internal error: {node.op} returned {value.dtype}{value.shape} but its type says {var.type}"
        )


# The rest of the backend contract (`dimgraph.backends.BackendModule`): no warm start (each process compiles afresh).
from_plan = None
warm_tag = None
REGISTRIES = (python_impl.registry,)
