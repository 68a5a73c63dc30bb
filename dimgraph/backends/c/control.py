"""C emitters for control flow: `Loop`/`Scan` and `IfElse` run as host steps called from the C entry function.

This backend plans every buffer in Python before its one C call, and a loop
body's plan depends on values that change each step (the step number indexes
the sequences), so a loop cannot be one planned C kernel. Instead the loop's
kernel calls back into Python (a `ctypes` callback whose address is an operand)
when the C entry reaches it, so every value upstream has been computed by C; the
host step runs the loop, each step one call of the body compiled by this same
backend (its kernels are C; the stepping costs a few microseconds of Python),
and writes the results into the buffers the plan gave the node's outputs.
`IfElse` does the same with the taken branch only, a kept `OpFromGraph` with its graph. An exception in a host
step travels back through the C return code and is raised as itself.

Output buffers are allocated by the plan: a loop's last states have their
initial states' shapes (a state keeps its shape), its traces `(n, *shape)` with
n read while planning; an IfElse whose output sizes are not all static is
evaluated while planning (with the reference `perform`, the taken branch only).
"""

from __future__ import annotations

import ctypes
import itertools
import threading

import numpy as np

from dimgraph.backends.c.registry import CImpl, c_impl
from dimgraph.core.fgraph import FunctionGraph
from dimgraph.core.ifelse import IfElse
from dimgraph.core.loop import LoopOp, check_state_shape
from dimgraph.core.opfromgraph import OpFromGraph

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

CODE = (
    "typedef int (*dg_host_step)(int64_t);\n"
    "const int rc = ((dg_host_step)(uintptr_t)(((const int64_t *)P[1])[0]))(((const int64_t *)P[0])[0]);\n"
    "if (rc) return rc;\n"
)


def _raised(message):
    """The exception the host step raised (the error table maps the return code here)."""
    err = getattr(_FAILED, "error", None)
    _FAILED.error = None
    return err if err is not None else RuntimeError(message)


def _impl(node, outputs_of, job_of):
    """A CImpl whose kernel calls `job_of(ins, outs)` back from C; `outputs_of(ctx, ins)` allocates the outputs."""
    operands = [("int64", 0), ("int64", 0)] + [(v.type.dtype, v.type.ndim) for v in node.inputs + node.outputs]

    def plan(ctx, ins):
        outs = outputs_of(ctx, ins)
        if outs is None:  # evaluated while planning
            return [ctx.host_value(o) for o in node.outputs], [], False
        key = next(_KEYS)
        _JOBS[key] = lambda: job_of(ins, outs)
        head = [np.array(key, dtype=np.int64), np.array(_ADDRESS, dtype=np.int64)]
        return outs, head + list(ins) + list(outs), True

    return CImpl(operands, lambda o: CODE, plan, errors=[(_raised, f"{node.op}: a host step failed")])


def _compiled(graph):
    from dimgraph.backends.c import compile as c_compile

    return c_compile(FunctionGraph(graph.inputs, graph.outputs, clone=True)).run


@c_impl.register(LoopOp)  # Loop and Scan
def _loop(op, node):
    body = _compiled(op.body)
    ns, traced, until = op.n_states, op._traced(), getattr(op, "until", None)
    dtypes = [o.type.dtype for o in node.outputs]

    def outputs_of(ctx, ins):
        n = int(ctx.host_value(node.inputs[0]))
        finals = [np.empty(np.shape(s), dtype=dt) for s, dt in zip(ins[1 : 1 + ns], dtypes)]
        return finals + [np.empty((n,) + np.shape(ins[1 + k]), dtype=dtypes[ns + m]) for m, k in enumerate(traced)]

    def job(ins, outs):
        n, states, consts = int(ins[0]), [np.array(s) for s in ins[1 : 1 + ns]], list(ins[1 + ns :])
        for step in range(n):
            if until is not None and not states[until]:
                break
            new = body([np.asarray(step, dtype=np.int64), *states, *consts])
            for k, (old, nv) in enumerate(zip(states, new)):
                check_state_shape(op.name, k, np.shape(old), np.shape(nv))
            states = new
            for m, k in enumerate(traced):
                outs[ns + m][step] = states[k]
        for k in range(ns):
            outs[k][...] = states[k]

    return _impl(node, outputs_of, job)


@c_impl.register(IfElse)
def _ifelse(op, node):
    then_fn, else_fn = _compiled(op.then_graph), _compiled(op.else_graph)
    static = all(None not in o.type.shape for o in node.outputs)

    def outputs_of(ctx, ins):
        if not static:
            return None
        return [np.empty(o.type.shape, dtype=o.type.dtype) for o in node.outputs]

    def job(ins, outs):
        results = (then_fn if bool(ins[0]) else else_fn)(list(ins[1:]))
        for out, r in zip(outs, results):
            out[...] = r

    return _impl(node, outputs_of, job)


@c_impl.register(OpFromGraph)
def _op_from_graph(op, node):
    fn = _compiled(op.graph)
    static = all(None not in o.type.shape for o in node.outputs)

    def outputs_of(ctx, ins):
        return [np.empty(o.type.shape, dtype=o.type.dtype) for o in node.outputs] if static else None

    def job(ins, outs):
        for out, r in zip(outs, fn(list(ins))):
            out[...] = r

    return _impl(node, outputs_of, job)
