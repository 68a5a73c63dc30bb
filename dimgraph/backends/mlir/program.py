"""A FunctionGraph as one MLIR module: `func.func @main(inputs) -> (outputs)`.

Each node is printed by its registry entry in topological order; graph
constants become `arith.constant dense<"0x...">` (the bytes, so every value
round-trips); an input's dim of unknown size is a dynamic dim (`?`), so one
compiled module serves every data length. Bool tensors cross the boundary as
i8 (NumPy's bool bytes) and are i1 inside. Run-time checks are `cf.assert`s
(`Emitter.fail_if`).
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends.mlir.emitter import Emitter, Value, generic, tensor_type
from dimgraph.backends.mlir.registry import MlirUnsupported, mlir_impl
from dimgraph.core.graph import Constant, toposort
from dimgraph.core.type import TensorType


def boundary_dtype(dtype) -> str:
    """The dtype a tensor has at the module's boundary (bool travels as uint8)."""
    return "uint8" if np.dtype(dtype).kind == "b" else np.dtype(dtype).name


def constant(e: Emitter, c: Constant) -> Value:
    """A graph constant as `arith.constant dense<"0x<bytes>">` (bool as its uint8 bytes, then compared)."""
    dtype = np.dtype(c.type.dtype)
    store = np.dtype("uint8") if dtype.kind == "b" else dtype.newbyteorder("<")
    data = np.asarray(c.data)
    if data.ndim != c.type.ndim:  # a constant kept as a one-element array for a 0-d type
        data = data.reshape(tuple(-1 if s is None else s for s in c.type.shape))
    data = np.array(data, dtype=store, order="C")  # (ascontiguousarray would make a 0-d array 1-d)
    dims = tuple(int(s) for s in data.shape)
    if data.size == 0:
        raise MlirUnsupported(f"mlir backend: an empty constant {c!r} is not supported")
    body = f'dense<"0x{data.tobytes().hex().upper()}">'
    raw = Value(
        e.op(f"arith.constant {body} : {tensor_type(dims, store)}", "k"),
        store.name if dtype.kind == "b" else dtype.name,
        dims,
    )
    return _to_bool(e, raw) if dtype.kind == "b" else raw


def emit_graph(e: Emitter, inputs, values, outputs) -> list:
    """Print the nodes between `inputs` (given as `values`) and `outputs` into `e`; the outputs' Values."""
    env = {id(v): val for v, val in zip(inputs, values)}

    def value_of(var):
        if id(var) not in env:
            if isinstance(var, Constant):
                env[id(var)] = constant(e, var)
            else:
                raise MlirUnsupported(f"mlir backend: the graph reads {var!r}, which is neither an input nor computed")
        return env[id(var)]

    for node in toposort(outputs, blockers=inputs):
        for var in (*node.inputs, *node.outputs):
            if not isinstance(var.type, TensorType):
                raise MlirUnsupported(
                    f"mlir backend: op {node.op} has a {type(var.type).__name__} operand (only tensors are supported)"
                )
        ins = [value_of(v) for v in node.inputs]
        outs = mlir_impl(node.op, node, e, ins)
        if len(outs) != len(node.outputs):
            raise AssertionError(
                f"mlir backend: the emitter of {node.op} returned {len(outs)} values for {len(node.outputs)} outputs"
            )
        for var, val in zip(node.outputs, outs):
            env[id(var)] = as_type(e, val, var.type)
    return [value_of(v) for v in outputs]


def as_type(e: Emitter, val: Value, ttype) -> Value:
    """`val` with the static sizes its graph type declares (a `tensor.cast` where the emitter had them dynamic)."""
    if np.dtype(val.dtype) != np.dtype(ttype.dtype):
        raise AssertionError(f"mlir backend: computed {val.dtype} where the graph has {ttype.dtype}")
    dims = tuple(int(s) if s is not None else d for s, d in zip(ttype.shape, val.dims))
    return e.cast(val, dims)


def module_text(fgraph) -> tuple:
    """(the MLIR module of `fgraph`, the error table [(exception class, message)])."""
    errors: list = []
    e = Emitter(errors, indent=4)
    args, values = [], []
    for k, var in enumerate(fgraph.inputs):
        if not isinstance(var.type, TensorType):
            raise MlirUnsupported(
                f"mlir backend: input {k} is a {type(var.type).__name__} (only tensors are supported)"
            )
        name = f"%arg{k}"
        bdt = boundary_dtype(var.type.dtype)
        args.append(f"{name}: {tensor_type(tuple(var.type.shape), bdt)}")
        raw = Value(name, bdt, e.dims_of(name, var.type.shape, bdt))
        values.append(_to_bool(e, raw) if var.type.dtype == "bool" else raw)
    outs = emit_graph(e, fgraph.inputs, values, fgraph.outputs)
    results = []
    for var, val in zip(fgraph.outputs, outs):
        if var.type.dtype == "bool":
            val = _from_bool(e, val)
        results.append(e.cast(val, tuple(var.type.shape)) if val.ndim else val)
    names = [v.name for v in results]
    types = [tensor_type(tuple(var.type.shape), boundary_dtype(var.type.dtype)) for var in fgraph.outputs]
    text = (
        f"module {{\n  func.func @main({', '.join(args)}) -> ({', '.join(types)}) {{\n"
        + e.text()
        + f"\n    return {', '.join(names)} : {', '.join(types)}\n  }}\n}}\n"
    )
    return text, errors


def _to_bool(e, v: Value) -> Value:
    ident = [f"d{k}" for k in range(v.ndim)]
    init = e.empty(v.dims, "bool")
    (name,) = generic(
        e,
        v.ndim,
        [(v, ident)],
        [(init, tensor_type(v.dims, "bool"), ident)],
        lambda b, a, o: [b.op(f"arith.cmpi ne, {a[0]}, {b.const(0, 'i8')} : i8")],
        stem="b",
    )
    return Value(name, "bool", v.dims)


def _from_bool(e, v: Value) -> Value:
    ident = [f"d{k}" for k in range(v.ndim)]
    init = e.empty(v.dims, "uint8")
    (name,) = generic(
        e,
        v.ndim,
        [(v, ident)],
        [(init, tensor_type(v.dims, "uint8"), ident)],
        lambda b, a, o: [b.op(f"arith.extui {a[0]} : i1 to i8")],
        stem="b",
    )
    return Value(name, "uint8", v.dims)
