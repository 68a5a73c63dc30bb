"""C emitters for control flow: `Loop`/`Scan` as C loops, `IfElse` as a C branch, a kept `OpFromGraph` as a C call.

Each inner graph is a `Program` of its own (`inner.py`), printed into the same
translation unit with a static entry function; the node's kernel calls it from C.

- A loop's kernel copies the initial states into the last-state outputs, which
  are the state buffers, and runs the steps in C: check the while-condition,
  write the step number into the body's `i` buffer, restore the buffers the
  body's plan initialized (a reduction's identity), call the body, copy each
  new state into its state buffer (through a scratch buffer where it is a view
  of a state), and copy the traced states into row `step` of their traces.
  The body is planned once per call, before C runs: its buffers are the same
  every step, and a sequence read `c[i]` copies the step's slice in C
  (`inner.step_subtensor`). No Python runs per step.
- A body whose plan needs a value that changes across steps (an index array
  or a reshape target computed from a state) cannot be planned once: that loop
  runs as a host step instead, a `ctypes` callback from C stepping in Python
  and calling the body compiled on its own. `LoopStats.host_loops` counts them.
- `IfElse` plans both branches (neither runs while planning); C tests the
  condition and calls the taken branch only, then copies its outputs. A branch
  whose plan fails (a shape error in a branch not taken) fails only when taken.

A plan that fails raises when the loop's first step (or the branch) would run,
so a loop of zero steps never raises what its body would.
"""

from __future__ import annotations

import ctypes
import functools
import itertools
import threading

import numpy as np

from dimgraph.backends.c.inner import InnerProgram, StepDependent
from dimgraph.backends.c.loops import copy_code, nest
from dimgraph.backends.c.program import HOST_EVALUATION
from dimgraph.backends.c.registry import CImpl, MissingEmitter, c_impl
from dimgraph.core.fgraph import FunctionGraph
from dimgraph.core.ifelse import IfElse
from dimgraph.core.loop import LoopOp, check_state_shape
from dimgraph.core.opfromgraph import OpFromGraph
from dimgraph.core.type import TensorType


class LoopStats:
    """How many loop calls ran stepping in Python (the host-step fallback); tests read it."""

    host_loops = 0


# -- host steps (the fallback for bodies that cannot be planned once) ------------------------------

_JOBS = {}  # key -> the host step waiting for the C call in progress to reach it
_KEYS = itertools.count(1)
_FAILED = threading.local()


@ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int64)
def _host_step(key):
    job = _JOBS.pop(key, None)
    try:
        job()
        return 0
    except BaseException as err:  # noqa: BLE001 - raised again by the caller, as itself
        _FAILED.error = err
        return 1


_ADDRESS = ctypes.cast(_host_step, ctypes.c_void_p).value


class _Deferred:
    """A node's planning error (or a host step's), kept per thread until C reports that what failed would run.

    `error_entry(message)` goes into the node's error table: C returning that
    code raises the kept exception as itself.
    """

    def __init__(self):
        self.local = threading.local()

    def keep(self, err):
        self.local.error = err

    def raised(self, message):
        err = getattr(self.local, "error", None) or getattr(_FAILED, "error", None)
        self.local.error = _FAILED.error = None
        return err if err is not None else RuntimeError(message)

    def error_entry(self, message):
        return (self.raised, message)


def _host_job(op, node, body_fn):
    """The Python stepping of `op` (the reference semantics), writing into the planned outputs."""
    ns, traced, until = op.n_states, op._traced(), getattr(op, "until", None)

    def job(ins, outs):
        n, states, consts = int(ins[0]), [np.array(s) for s in ins[1 : 1 + ns]], list(ins[1 + ns :])
        for step in range(n):
            if until is not None and not states[until]:
                break
            new = body_fn()([np.asarray(step, dtype=np.int64), *states, *consts])
            for k, (old, nv) in enumerate(zip(states, new)):
                check_state_shape(op.name, k, np.shape(old), np.shape(nv))
            states = new
            for m, k in enumerate(traced):
                outs[ns + m][step] = states[k]
        for k in range(ns):
            outs[k][...] = states[k]

    return job


@functools.lru_cache(maxsize=64)
def _host_body(op):
    return _lazy_compiled(op.body)


def _evaluate_on_host(node, inputs):
    """A loop's outputs when the plan needs them before the C call (the steps a while loop took, which
    size `dg.while_loop`'s trace): stepped in Python on the body compiled by C, so its draws are C's."""
    op = node.op
    ns, n = op.n_states, int(inputs[0])
    outs = [np.empty(np.shape(s), dtype=o.type.dtype) for s, o in zip(inputs[1 : 1 + ns], node.outputs)]
    outs += [
        np.empty((n,) + np.shape(inputs[1 + k]), dtype=node.outputs[ns + m].type.dtype)
        for m, k in enumerate(op._traced())
    ]
    _host_job(op, node, _host_body(op))(inputs, outs)
    return outs


HOST_EVALUATION[LoopOp] = _evaluate_on_host


def _lazy_compiled(graph):
    """The inner graph compiled as a function of its own, on first use (only the host-step fallback needs it)."""
    box = []

    def get():
        if not box:
            box.append(c_impl(FunctionGraph(graph.inputs, graph.outputs, clone=True), None).run)
        return box[0]

    return get


# -- code helpers ----------------------------------------------------------------------------------


def _copy_row(o, src, dst, row):
    """dst[row, ...] = src[...] (dst has one more leading axis)."""
    nd = o.ndim(src)
    strides = {src: [o.stride(src, a) for a in range(nd)], dst: [o.stride(dst, a + 1) for a in range(nd)]}
    base = f"{row} * {o.stride(dst, 0)}"
    return nest(
        [o.shape(src, a) for a in range(nd)],
        strides,
        lambda q: [f"{o.ptr(dst)}[{base} + {q[dst]}] = ({o.ctype(dst)}){o.ptr(src)}[{q[src]}];"],
        prefix="r",
    )


def _call(o, inner, first, error_base):
    """C lines calling `inner`'s entry on the tables in operands first..first+3 (P, M, R, restore list)."""
    p, m, r, z = first, first + 1, first + 2, first + 3
    return [
        f"for (int64_t z_ = 0; z_ + 2 < {o.shape(z, 0)}; z_ += 3) "
        f"memcpy((void *)(uintptr_t){o.ptr(z)}[z_], (const void *)(uintptr_t){o.ptr(z)}[z_ + 1], (size_t){o.ptr(z)}[z_ + 2]);",
        f"{{ const int rc_ = {inner.program.entry}((char **){o.ptr(p)}, {o.ptr(m)}, {o.ptr(r)}); if (rc_) return {error_base} + rc_; }}",
    ]


_TABLES = [("uint64", 1), ("int64", 1), ("uint8", 1), ("uint64", 1)]  # an inner call's P, M, R and restore list


def _tensor(node, v, what):
    if not isinstance(v.type, TensorType):
        raise MissingEmitter(f"c backend: {node.op}: {what} of type {v.type} has no C representation (only tensors do)")
    return v.type.dtype, v.type.ndim


# -- Loop and Scan ---------------------------------------------------------------------------------


@c_impl.register(LoopOp)  # Loop and Scan
def _loop(op, node):
    ns, traced, until = op.n_states, op._traced(), getattr(op, "until", None)
    inner = InnerProgram(op.body, varying=range(1 + ns))
    body_fn = _lazy_compiled(op.body)
    job = _host_job(op, node, body_fn)
    state_types = [_tensor(node, v, f"state {k}") for k, v in enumerate(node.outputs[:ns])]
    init_types = [_tensor(node, v, f"initial state {k}") for k, v in enumerate(node.inputs[1 : 1 + ns])]
    body_types = [_tensor(node, v, f"the body's output {k}") for k, v in enumerate(op.body.outputs)]
    # operands: host key, host address, n, body tables, i buffer, flags, then per state
    # (initial, state/last, body output, scratch), then the traces
    types = [("int64", 0), ("int64", 0), (node.inputs[0].type.dtype, 0), *_TABLES, ("int64", 0), ("int64", 1)]
    for k in range(ns):
        types += [init_types[k], state_types[k], body_types[k], state_types[k]]
    types += [(node.outputs[ns + m].type.dtype, node.outputs[ns + m].type.ndim) for m in range(len(traced))]
    S = 9  # the first state operand
    init_j, state_j, out_j, tmp_j = (
        (lambda k: S + 4 * k),
        (lambda k: S + 4 * k + 1),
        (lambda k: S + 4 * k + 2),
        (lambda k: S + 4 * k + 3),
    )
    trace_j = lambda m: S + 4 * ns + m  # noqa: E731
    deferred = _Deferred()

    def plan(ctx, ins):
        n = int(ctx.host_value(node.inputs[0]))
        finals = [np.empty(np.shape(s), dtype=dt) for s, (dt, _) in zip(ins[1 : 1 + ns], state_types)]
        traces = [np.empty((n,) + np.shape(ins[1 + k]), dtype=types[trace_j(m)][0]) for m, k in enumerate(traced)]
        outs = finals + traces
        step = np.zeros((), np.int64)
        flags = np.zeros(ns + 1, np.int64)  # per state: its new value is a view of a state; last: the plan failed
        key = 0
        deferred.keep(None)
        try:
            tables, body_outs = inner.plan(
                ctx, [step, *finals, *ins[1 + ns :]], [None] * (1 + ns) + node.inputs[1 + ns :], restore=True
            )
            for k, (b, f) in enumerate(zip(body_outs, finals)):
                check_state_shape(op.name, k, f.shape, b.shape)
                flags[k] = any(np.may_share_memory(b, s) for s in finals)
        except StepDependent:
            ctx.no_replay()  # the host step is registered for this call only
            key = next(_KEYS)
            _JOBS[key] = lambda: job(ins, outs)
            LoopStats.host_loops += 1
            tables, body_outs = inner.empty_tables(), finals
        except Exception as err:  # noqa: BLE001 - raised by C if a step runs
            ctx.no_replay()  # the error is kept for this call only
            deferred.keep(err)
            flags[ns] = 1
            tables, body_outs = inner.empty_tables(), finals
        head = [np.array(key, np.int64), np.array(_ADDRESS, np.int64), np.asarray(ins[0]), *tables, step, flags]
        per_state = []
        for k in range(ns):
            tmp = np.empty_like(finals[k]) if flags[k] else finals[k]
            per_state += [ins[1 + k], finals[k], body_outs[k], tmp]
        return outs, head + per_state + traces, True

    def code(o):
        lines = [
            f"if ({o.ptr(0)}[0]) {{  /* a body planned per step: stepped in Python */",
            "  typedef int (*dg_host_step)(int64_t);",
            f"  const int rc_ = ((dg_host_step)(uintptr_t){o.ptr(1)}[0])({o.ptr(0)}[0]);",
            f"  if (rc_) {o.fail(0)}",
            "  return 0;",
            "}",
            f"const int64_t steps_ = (int64_t){o.ptr(2)}[0];",
            f"int64_t *i_ = {o.ptr(7)};",
            f"const int64_t *flag_ = {o.ptr(8)};",
        ]
        for k in range(ns):
            lines += ["{"] + copy_code(o, init_j(k), state_j(k)) + ["}"]
        lines.append("for (int64_t s_ = 0; s_ < steps_; s_++) {")
        step = []
        if until is not None:
            step.append(f"if (!{o.ptr(state_j(until))}[0]) break;")
        step += [f"if (flag_[{ns}]) {o.fail(0)}", "*i_ = s_;"]
        step += _call(o, inner, 3, 1)
        for k in range(ns):
            step += [f"if (flag_[{k}]) {{"] + copy_code(o, out_j(k), tmp_j(k)) + ["}"]
        for k in range(ns):
            step += [f"if (flag_[{k}]) {{"] + copy_code(o, tmp_j(k), state_j(k)) + ["} else {"]
            step += copy_code(o, out_j(k), state_j(k)) + ["}"]
        for m, k in enumerate(traced):
            step += ["{"] + _copy_row(o, state_j(k), trace_j(m), "s_") + ["}"]
        lines += ["  " + line for line in step] + ["}"]
        return "\n".join(lines)

    return CImpl(
        types,
        code,
        plan,
        errors=[deferred.error_entry(f"{op}: a step failed")] + inner.program.errors,
        prelude=inner.preludes,
    )


# -- IfElse and OpFromGraph ------------------------------------------------------------------------


def _branch_plan(inner, ctx, args, sources):
    """(tables, outputs, failed) of one branch planned on `args`; a failure is kept for C to raise if taken."""
    try:
        tables, outs = inner.plan(ctx, args, sources)
        return tables, outs, None
    except Exception as err:  # noqa: BLE001 - raised by C if this branch is taken
        return inner.empty_tables(), None, err


@c_impl.register(IfElse)
def _ifelse(op, node):
    branches = [InnerProgram(op.then_graph), InnerProgram(op.else_graph)]
    outs_t = [_tensor(node, v, f"output {j}") for j, v in enumerate(node.outputs)]
    nout = len(outs_t)
    b_types = [
        [_tensor(node, v, f"branch output {j}") for j, v in enumerate(g.outputs)]
        for g in (op.then_graph, op.else_graph)
    ]
    # operands: cond, flags, then tables, else tables, then outputs, else outputs, outputs
    types = [(node.inputs[0].type.dtype, 0), ("int64", 1), *_TABLES, *_TABLES, *b_types[0], *b_types[1], *outs_t]
    first_out = 10 + 2 * nout
    n_then_errors = len(branches[0].program.errors)
    failed = [_Deferred(), _Deferred()]  # a branch whose plan failed raises that when taken

    def plan(ctx, ins):
        planned = [_branch_plan(b, ctx, list(ins[1:]), node.inputs[1:]) for b in branches]
        shapes = [None if p[1] is None else [a.shape for a in p[1]] for p in planned]
        if shapes[0] is not None and shapes[1] is not None and shapes[0] != shapes[1]:
            taken = 0 if bool(ctx.host_value(node.inputs[0])) else 1
            shapes = [shapes[taken]] * 2
        known = shapes[0] if shapes[0] is not None else shapes[1]
        if known is None:
            known = [tuple(0 if s is None else s for s in v.type.shape) for v in node.outputs]
        outs = [np.empty(sh, dt) for sh, (dt, _) in zip(known, outs_t)]
        flags = np.zeros(2, np.int64)
        operands = [np.asarray(ins[0]), flags]
        branch_outs = []
        for b, (tables, bouts, err) in enumerate(planned):
            flags[b] = err is not None
            failed[b].keep(err)
            if err is not None:
                ctx.no_replay()  # the error is kept for this call only
            operands += tables
            branch_outs += (
                list(bouts) if bouts is not None and [a.shape for a in bouts] == [o.shape for o in outs] else outs
            )
        return outs, operands + branch_outs + outs, True

    def code(o):
        lines = [f"if ({o.ptr(0)}[0]) {{", f"  if ({o.ptr(1)}[0]) {o.fail(0)}"]
        lines += ["  " + line for line in _call(o, branches[0], 2, 2)]
        for j in range(nout):
            lines += ["  {"] + ["    " + x for x in copy_code(o, 10 + j, first_out + j)] + ["  }"]
        lines += ["} else {", f"  if ({o.ptr(1)}[1]) {o.fail(1)}"]
        lines += ["  " + line for line in _call(o, branches[1], 6, 2 + n_then_errors)]
        for j in range(nout):
            lines += ["  {"] + ["    " + x for x in copy_code(o, 10 + nout + j, first_out + j)] + ["  }"]
        lines.append("}")
        return "\n".join(lines)

    errors = [
        failed[0].error_entry(f"{op}: the then branch failed"),
        failed[1].error_entry(f"{op}: the else branch failed"),
    ]
    errors += branches[0].program.errors + branches[1].program.errors
    return CImpl(types, code, plan, errors=errors, prelude=branches[0].preludes + branches[1].preludes)


@c_impl.register(OpFromGraph)
def _op_from_graph(op, node):
    inner = InnerProgram(op.graph)
    outs_t = [_tensor(node, v, f"output {j}") for j, v in enumerate(node.outputs)]
    g_types = [_tensor(node, v, f"inner output {j}") for j, v in enumerate(op.graph.outputs)]
    nout = len(outs_t)
    types = [*_TABLES, *g_types, *outs_t]

    def plan(ctx, ins):
        tables, g_outs = inner.plan(ctx, list(ins), node.inputs)
        outs = [np.empty(a.shape, dt) for a, (dt, _) in zip(g_outs, outs_t)]
        return outs, list(tables) + list(g_outs) + outs, True

    def code(o):
        lines = list(_call(o, inner, 0, 0))
        for j in range(nout):
            lines += ["{"] + copy_code(o, 4 + j, 4 + nout + j) + ["}"]
        return "\n".join(lines)

    return CImpl(types, code, plan, errors=inner.program.errors, prelude=inner.preludes)
