"""One graph as C: its kernels, the entry function calling them, and the per-call plan of its buffers.

A `Program` is printed once, at compile time: every node's `CImpl` (from the
registry, or from `impl_of` where an inner graph needs a node done its own
way), one static function per distinct kernel text, and an entry function

    int <prefix>_run(char **P, const int64_t *M, const unsigned char *R)

calling the kernels in topological order (`P`: operand data pointers; `M`:
their shapes and strides in elements; `R[n]`: whether node n's kernel runs).
The whole graph is the program with prefix `dg` (entry `dg_run`); the inner
graphs of loops and branches are programs of their own, with a static entry
named after their text, printed into the same translation unit and called
from C (`control.py`).

`Program.plan(ctx)` runs in Python before each call: it walks the nodes,
computes every shape, allocates outputs and intermediates as NumPy arrays,
makes views by strides, and fills the `P`, `M`, `R` tables. Values the plan
needs (a reshape target, an index array) come from the inputs or are evaluated
by `Context` with the ops' reference `perform` (or, for the ops in
`HOST_EVALUATION`, the way C computes them).
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends.c.registry import Operands, c_impl
from dimgraph.core.graph import Constant, Variable


def preludes_of(impl):
    """An impl's file-scope C: one text, or a tuple of texts (each printed once per translation unit)."""
    return impl.prelude if isinstance(impl.prelude, tuple) else (impl.prelude,)


class Program:
    """The C text and the plan of one graph (`fgraph`), kernels and entry named from `prefix`."""

    def __init__(self, fgraph, prefix="dg", impl_of=c_impl, static=False):
        nodes = fgraph.toposort()
        impls = [impl_of(node.op, node) for node in nodes]
        kernels, calls, errors, bases = {}, [], [], []
        slot, meta = 0, 0
        for n, (node, impl) in enumerate(zip(nodes, impls)):
            slots, offsets = [], []
            for dtype, ndim in impl.operands:
                slots.append(slot)
                offsets.append(meta)
                slot += 1
                meta += 2 * ndim
            bases.append((slots, offsets))
            if impl.code is None:
                continue
            local = Operands(
                impl.operands, [s - slots[0] for s in slots], [f - offsets[0] for f in offsets] if offsets else [], 0
            )
            code = impl.code(local)
            name = kernels.setdefault(code, (f"{prefix}_kernel{len(kernels)}", _comment(node)))[0]
            p0 = slots[0] if slots else 0
            m0 = offsets[0] if offsets else 0
            calls.append(
                f"  if (R[{n}]) {{ const int rc = {name}(P + {p0}, M + {m0}); if (rc) return {len(errors)} + rc; }}"
            )
            errors.extend(impl.errors)
        functions = []
        for code, (name, comment) in kernels.items():
            functions.append(f"/* {comment} */\nstatic int {name}(char **P, const int64_t *M) {{\n  (void)P; (void)M;")
            functions.extend("  " + line for line in code.splitlines())
            functions.append("  return 0;\n}\n")
        self.entry = f"{prefix}_run"
        self.preludes = tuple(dict.fromkeys(p for impl in impls for p in preludes_of(impl)))
        self.text = (
            "\n".join(functions)
            + f"\n{'static ' if static else ''}int {self.entry}(char **P, const int64_t *M, const unsigned char *R) {{\n"
            + "  (void)P; (void)M; (void)R;\n"
            + "\n".join(calls)
            + "\n  return 0;\n}\n"
        )
        self.nodes, self.impls, self.errors, self.bases = nodes, impls, errors, bases
        self.n_slots, self.n_meta = slot, meta
        self.inputs, self.outputs = list(fgraph.inputs), list(fgraph.outputs)
        self.constants = {}
        for v in [i for node in nodes for i in node.inputs] + self.outputs:
            if isinstance(v, Constant):
                self.constants[v] = np.asarray(v.data, dtype=v.type.dtype)

    def plan(self, ctx):
        """Plan one call on `ctx` (whose `bufs` hold the inputs): (pointers, meta, run flags, written).

        `written` lists the arrays the kernels that run fill (their nodes' own outputs).
        The operand arrays go to `ctx.alive`: they must outlive the C call.
        """
        for v, a in self.constants.items():
            ctx.bufs[v] = ctx.host[v] = a
        ptrs = [0] * self.n_slots
        meta = [0] * self.n_meta
        flags = bytearray(len(self.nodes))
        written = []
        for n, (node, impl, (slots, offsets)) in enumerate(zip(self.nodes, self.impls, self.bases)):
            outs, operands, go = impl.plan(ctx, [ctx.bufs[i] for i in node.inputs])
            for v, a in zip(node.outputs, outs):
                ctx.bufs[v] = a
            if not go:
                continue
            flags[n] = 1
            ctx.alive.append(operands)
            written.append((node, outs))
            for a, s, off in zip(operands, slots, offsets):
                ptrs[s] = a.ctypes.data
                nd = a.ndim
                meta[off : off + nd] = a.shape
                item = a.itemsize
                meta[off + nd : off + 2 * nd] = [st // item for st in a.strides]
        return ptrs, meta, flags, written


def _comment(node):
    return str(node.op).replace("*/", "* /")[:120]


# Op class (subclasses included) -> evaluate(node, input values) -> output values: ops whose value
# before the C call must be the one C computes (a loop drawing random numbers: `perform` draws
# another stream).
HOST_EVALUATION = {}


class Context:
    """One call's planning state: the arrays of every variable, and the values known before C runs.

    What a later call needs to run the same plan again (`replay.py`): the buffers the plan
    initialized (`filled`, restored before each run) and whether the plan did work that C
    does not repeat (`no_replay`: a step in Python, a failure kept for C to raise).
    """

    def __init__(self):
        self.bufs = {}  # variable -> array (filled by C for computed variables)
        self.host = {}  # variable -> value known now (inputs, constants, shapes, evaluated shape graphs)
        self.alive = []  # operand arrays of every planned kernel (inner programs' included)
        self.fills = []  # (array, value): buffers the plan initialized, which kernels accumulate into
        self.replayable = True

    def filled(self, shape, value, dtype):
        """A new buffer of `shape` holding `value` (a reduction's identity), restored before each replayed run."""
        a = np.full(shape, value, dtype)
        self.fills.append((a, value))
        return a

    def no_replay(self):
        """This plan did work C does not repeat: a later call must plan again."""
        self.replayable = False

    def set_host(self, var, value):
        self.host[var] = value

    def host_value(self, var):
        """The value of `var` now, evaluating what it depends on with the ops' reference `perform`."""
        if var in self.host:
            return self.host[var]
        self.evaluate([var])
        return self.host[var]

    def evaluate(self, variables):
        order, seen, stack = [], set(), [(v, False) for v in variables]
        while stack:
            v, expanded = stack.pop()
            if v in self.host or isinstance(v, Constant):
                if isinstance(v, Constant) and v not in self.host:
                    self.host[v] = np.asarray(v.data, dtype=v.type.dtype)
                continue
            node = v.owner
            if node is None:
                raise RuntimeError(f"internal error: c backend needs the value of {v!r}, which is not an input")
            if expanded:
                if id(node) not in seen:
                    seen.add(id(node))
                    order.append(node)
                continue
            stack.append((v, True))
            stack.extend((i, False) for i in node.inputs if i not in self.host)
        for node in order:
            if all(o in self.host for o in node.outputs):
                continue
            evaluate = next((HOST_EVALUATION[c] for c in type(node.op).__mro__ if c in HOST_EVALUATION), None)
            args = [self.host[i] for i in node.inputs]
            values = evaluate(node, args) if evaluate is not None else node.op.perform(node, args)
            for o, val in zip(node.outputs, values):
                self.host[o] = np.asarray(val)

    def infer(self, node, ins):
        """The output shapes of `node` as tuples of ints, for the input arrays `ins`."""
        if all(s is not None for o in node.outputs for s in o.type.shape):
            return [o.type.shape for o in node.outputs]
        shapes = node.op.infer_shape(node.inputs, [a.shape for a in ins])
        symbolic = [e for sh in shapes for e in sh if isinstance(e, Variable)]
        if symbolic:
            self.evaluate(symbolic)
        return [tuple(int(self.host[e]) if isinstance(e, Variable) else int(e) for e in sh) for sh in shapes]
