"""Inner graphs (loop bodies, branches, macros) as C programs called from their node's kernel.

`InnerProgram(graph, varying)` prints the graph as a `Program` with a static
entry named after its text (two nodes with the same body share one function),
for the node's `CImpl.prelude`. `plan(ctx, arrays)` plans it once per call of
the outer function, on the arrays of its inputs, and returns the tables the
node's kernel passes to the entry (`P`, `M`, `R` and a restore list), and the
arrays holding the graph's outputs.

A loop body is planned once and run every step, so its plan must not depend on
what changes across steps: the `varying` inputs (the step number and the
states). Their shapes are fixed (a state keeps its shape), their values are not:
`InnerContext` refuses a value computed from them (`StepDependent`; the loop
then steps in Python). The one such read a body always has, a sequence's slice
`c[i]`, is done in C (`step_subtensor`: the slice is copied into a buffer of its
own, its position checked). Buffers a plan initializes (a reduction starts
from its identity) are restored from a copy before each step.
"""

from __future__ import annotations

import hashlib

import numpy as np

from dimgraph.backends.c.loops import nest
from dimgraph.backends.c.program import Context, Program
from dimgraph.backends.c.registry import CImpl, c_impl
from dimgraph.core.elemwise import Elemwise
from dimgraph.core.fgraph import FunctionGraph
from dimgraph.core.graph import Constant
from dimgraph.core.shape import Shape, ShapeI
from dimgraph.core.subtensor import FULL_SLICE, SYMBOLIC, Subtensor


class StepDependent(Exception):
    """A loop body's plan needs a value that changes across steps."""


def _varying_values(fgraph, placeholders):
    """The variables whose values change across steps: computed from `placeholders`, other than by their shapes."""
    varying = set(placeholders)
    for node in fgraph.toposort():
        if isinstance(node.op, (Shape, ShapeI)):
            continue
        if any(i in varying for i in node.inputs):
            varying.update(node.outputs)
    return varying


def _is_step_read(node, varying):
    """`x[k]` along the first axis with `k` changing across steps (a sequence's slice)."""
    op = node.op
    return (
        isinstance(op, Subtensor)
        and len(node.inputs) == 2
        and node.inputs[1] in varying
        and node.inputs[0] not in varying
        and op.index[0] == SYMBOLIC
        and all(e == FULL_SLICE for e in op.index[1:])
    )


def step_subtensor(node):
    """`x[k]` read in C: the slice at the run-time position `k` is copied into a buffer of its own."""
    x, k = node.inputs
    nd, dt = x.type.ndim, x.type.dtype
    types = [(dt, nd), (k.type.dtype, 0), (dt, nd - 1)]

    def plan(ctx, ins):
        out = np.empty(ins[0].shape[1:], dt)
        return [out], [ins[0], ins[1], out], True

    def code(o):
        lines = [
            f"int64_t k_ = (int64_t){o.ptr(1)}[0];",
            f"if (k_ < 0) k_ += {o.shape(0, 0)};",
            f"if (k_ < 0 || k_ >= {o.shape(0, 0)}) {o.fail(0)}",
            f"const int64_t b_ = k_ * {o.stride(0, 0)};",
        ]
        strides = {0: [o.stride(0, a + 1) for a in range(nd - 1)], 2: [o.stride(2, a) for a in range(nd - 1)]}
        body = lambda q: [f"{o.ptr(2)}[{q[2]}] = {o.ptr(0)}[b_ + {q[0]}];"]  # noqa: E731
        return "\n".join(lines + nest([o.shape(2, a) for a in range(nd - 1)], strides, body))

    message = f"{node.op}: the step's index is out of bounds for the sequence's first axis"
    return CImpl(types, code, plan, errors=[(IndexError, message)])


class InnerProgram:
    """An inner graph as C: `program` (its entry is `program.entry`), `preludes` for the node's CImpl."""

    def __init__(self, graph, varying=()):
        fgraph = FunctionGraph(graph.inputs, graph.outputs, clone=True)
        self.inputs, self.outputs = list(fgraph.inputs), list(fgraph.outputs)
        self.varying = _varying_values(fgraph, [self.inputs[k] for k in varying])
        steps = {node for node in fgraph.toposort() if _is_step_read(node, self.varying)}

        def impl_of(op, node):
            return step_subtensor(node) if node in steps else c_impl(op, node)

        program = Program(fgraph, prefix="@P@", impl_of=impl_of, static=True)
        name = "dg_inner_" + hashlib.sha1(program.text.encode()).hexdigest()[:16]
        program.text = program.text.replace("@P@", name)
        program.entry = program.entry.replace("@P@", name)
        self.program = program
        self.preludes = program.preludes + (program.text,)

    def plan(self, outer, arrays, sources, restore=False):
        """(tables, output arrays) for one call, the graph's inputs being `arrays`; planning errors propagate.

        `sources[k]`: the outer variable input k's value is (None for a varying input).
        `restore`: list the buffers the plan initialized, for the kernel to restore before each run.
        """
        ctx = InnerContext(outer, self.varying)
        for v, a, src in zip(self.inputs, arrays, sources):
            ctx.bufs[v] = a
            if src is not None:
                ctx.sources[v] = src
        ptrs, meta, flags, written = self.program.plan(ctx)
        triples = []
        if restore:
            for node, outs in written:
                if isinstance(node.op, (Elemwise, Subtensor)):
                    continue  # their kernels write every element
                for a in outs:
                    if a.base is None and a.nbytes:
                        copy = a.copy()
                        ctx.alive.append(copy)
                        triples += [a.ctypes.data, copy.ctypes.data, a.nbytes]
        tables = [
            np.array(ptrs, dtype=np.uint64),
            np.array(meta, dtype=np.int64),
            np.frombuffer(bytes(flags), dtype=np.uint8) if flags else np.zeros(0, np.uint8),
            np.array(triples, dtype=np.uint64),
        ]
        ctx.alive.append(tables)
        return tables, [ctx.bufs[v] for v in self.outputs]

    @staticmethod
    def empty_tables():
        return [np.zeros(0, np.uint64), np.zeros(0, np.int64), np.zeros(0, np.uint8), np.zeros(0, np.uint64)]


class InnerContext(Context):
    """Planning an inner graph: values of its inputs come from the outer plan; varying values are refused."""

    def __init__(self, outer, varying):
        super().__init__()
        self.outer, self.varying = outer, varying
        self.alive = outer.alive
        self.fills = outer.fills  # a branch's buffers are restored by the outer replay (a loop body's by C too)
        self.sources = {}  # inner input -> the outer variable holding its value

    def no_replay(self):
        self.outer.no_replay()

    def evaluate(self, variables):
        stack, seen = list(variables), set()
        while stack:
            v = stack.pop()
            if v in self.host or isinstance(v, Constant) or id(v) in seen:
                continue
            seen.add(id(v))
            node = v.owner
            if node is not None and isinstance(node.op, (Shape, ShapeI)) and node.inputs[0] in self.bufs:
                shape = self.bufs[node.inputs[0]].shape
                self.host[v] = np.asarray(shape if isinstance(node.op, Shape) else shape[node.op.i], dtype=np.int64)
                continue
            if v in self.varying:
                raise StepDependent(f"the plan needs the value of {v!r}, which changes across steps")
            if node is None:  # an input: its value is the outer plan's
                self.host[v] = self.outer.host_value(self.sources[v])
                continue
            stack.extend(node.inputs)
        super().evaluate(variables)
