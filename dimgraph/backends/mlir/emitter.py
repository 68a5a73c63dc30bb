"""The MLIR text builder: SSA names, tensor types with dynamic dims, index arithmetic and run-time checks.

A graph value is a `Value`: an SSA tensor name, its NumPy dtype and its dims,
each an int (static) or the SSA name of an `index` (dynamic, read with
`tensor.dim` or computed). Index arithmetic on dims folds in Python when every
operand is an int, so static graphs print static types.

Run-time checks (an index out of bounds, sizes that disagree) are `cf.assert`s
on host values, so IREE stops the call there, before any kernel reads out of
bounds: `Emitter.fail_if(cond, exc, message)` asserts `not cond` with the message
`dimgraph check <k>`, and the caller raises `errors[k - 1]`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dimgraph.backends.mlir.registry import MlirUnsupported
from dimgraph.errors import ShapeError

ELEMENT = {
    "float64": "f64",
    "float32": "f32",
    "int64": "i64",
    "int32": "i32",
    "int16": "i16",
    "int8": "i8",
    "uint64": "i64",
    "uint32": "i32",
    "uint16": "i16",
    "uint8": "i8",
    "bool": "i1",
}


CHECK = "dimgraph check"  # the message prefix of a failed `cf.assert`; the number after it indexes `errors`


def element(dtype) -> str:
    """The MLIR element type of a NumPy dtype (unsigned ints are signless; their ops say unsigned)."""
    name = np.dtype(dtype).name
    if name not in ELEMENT:
        raise MlirUnsupported(f"mlir backend: dtype {name} is not supported (supported: {sorted(ELEMENT)})")
    return ELEMENT[name]


@dataclass(frozen=True)
class Value:
    name: str  # SSA name of the tensor
    dtype: str  # NumPy dtype name
    dims: tuple  # int (static) or str (SSA index)

    @property
    def ndim(self):
        return len(self.dims)

    @property
    def type(self):
        return tensor_type(self.dims, self.dtype)


def tensor_type(dims, dtype) -> str:
    shape = "".join(f"{d}x" if isinstance(d, int) else "?x" for d in dims)
    return f"tensor<{shape}{element(dtype)}>"


def affine(ndim, exprs) -> str:
    """`affine_map<(d0, ..) -> (exprs)>`; exprs are ints (a constant, for a broadcast axis) or dim numbers as 'dK'."""
    dims = ", ".join(f"d{k}" for k in range(ndim))
    return f"affine_map<({dims}) -> ({', '.join(str(e) for e in exprs)})>"


def float_literal(x: float, dtype) -> str:
    """An MLIR float literal that round-trips exactly (hex bit pattern for inf, nan and every finite value)."""
    if np.dtype(dtype).name == "float32":
        return f"0x{np.float32(x).view(np.uint32):08X}"
    return f"0x{np.float64(x).view(np.uint64):016X}"


class Emitter:
    """Lines of one MLIR function body, with fresh names, memoised constants and the checks' table."""

    def __init__(self, errors: list, indent=2):
        self.lines: list = []
        self.errors = errors  # [(exception class, message)], shared by every region of a module
        self.in_body = False  # a linalg body: no host-level check may be printed there
        self.indent = indent
        self._consts: dict = {}
        self._counter = [0]

    def child(self, indent=None):
        """An emitter for a nested region: shares names and the error table, has its own lines and constants."""
        e = Emitter(self.errors, self.indent + 2 if indent is None else indent)
        e._counter = self._counter
        return e

    def fresh(self, stem="v") -> str:
        self._counter[0] += 1
        return f"%{stem}{self._counter[0]}"

    def emit(self, text):
        self.lines.extend(" " * self.indent + line for line in text.split("\n"))

    def op(self, text, stem="v") -> str:
        """Emit `%new = text` and return `%new`."""
        name = self.fresh(stem)
        self.emit(f"{name} = {text}")
        return name

    # -- constants -------------------------------------------------------------------------------
    def const(self, value, mtype) -> str:
        key = (repr(value), mtype)
        if key not in self._consts:
            if mtype.startswith("f"):
                lit = float_literal(value, "float32" if mtype == "f32" else "float64")
            elif mtype == "i1":
                self._consts[key] = self.op(f"arith.constant {'true' if value else 'false'}", "c")
                return self._consts[key]
            else:
                lit = str(int(value))
            self._consts[key] = self.op(f"arith.constant {lit} : {mtype}", "c")
        return self._consts[key]

    def index(self, value) -> str:
        """An SSA `index` for a dim: an int becomes a constant, an SSA name is itself."""
        return self.const(value, "index") if isinstance(value, (int, np.integer)) else value

    # -- index arithmetic that folds on ints -------------------------------------------------------
    def iop(self, name, a, b, fold):
        if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
            return int(fold(int(a), int(b)))
        return self.op(f"arith.{name} {self.index(a)}, {self.index(b)} : index", "i")

    def iadd(self, a, b):
        return a if isinstance(b, int) and b == 0 else self.iop("addi", a, b, lambda x, y: x + y)

    def isub(self, a, b):
        return self.iop("subi", a, b, lambda x, y: x - y)

    def imul(self, a, b):
        if isinstance(b, int) and b == 1:
            return a
        return self.iop("muli", a, b, lambda x, y: x * y)

    def imax(self, a, b):
        return self.iop("maxsi", a, b, max)

    def imin(self, a, b):
        return self.iop("minsi", a, b, min)

    def iceildiv(self, a, b):
        return self.iop("ceildivsi", a, b, lambda x, y: -(-x // y))

    def icmp(self, pred, a, b) -> str | bool:
        py = {
            "slt": lambda x, y: x < y,
            "sge": lambda x, y: x >= y,
            "ne": lambda x, y: x != y,
            "eq": lambda x, y: x == y,
            "sgt": lambda x, y: x > y,
        }
        if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
            return py[pred](int(a), int(b))
        return self.op(f"arith.cmpi {pred}, {self.index(a)}, {self.index(b)} : index", "p")

    def iselect(self, cond, a, b):
        if isinstance(cond, bool):
            return a if cond else b
        return self.op(f"arith.select {cond}, {self.index(a)}, {self.index(b)} : index", "i")

    def product(self, dims):
        total = 1
        for d in dims:
            total = self.imul(total, d)
        return total

    # -- scalars out of 0-d tensors ---------------------------------------------------------------
    def scalar(self, v: Value) -> str:
        """The element of a 0-d tensor."""
        return self.op(f"tensor.extract {v.name}[] : {v.type}", "s")

    def index_of(self, v: Value):
        """A 0-d integer tensor as an SSA `index` (a shape entry, a position)."""
        s = self.scalar(v)
        return self.op(f"arith.index_cast {s} : {element(v.dtype)} to index", "i")

    def from_index(self, i, dtype="int64") -> Value:
        """A 0-d tensor holding the index `i`."""
        et = element(dtype)
        s = self.const(i, et) if isinstance(i, int) else self.op(f"arith.index_cast {i} : index to {et}", "s")
        return Value(self.op(f"tensor.from_elements {s} : {tensor_type((), dtype)}", "t"), np.dtype(dtype).name, ())

    def dims_of(self, name, dims, dtype):
        """The dims of a function argument or loop state of static type `dims` (None: read at run time)."""
        out = []
        for axis, d in enumerate(dims):
            if d is None:
                out.append(self.op(f"tensor.dim {name}, {self.index(axis)} : {tensor_type(dims, dtype)}", "d"))
            else:
                out.append(int(d))
        return tuple(out)

    def empty(self, dims, dtype) -> str:
        dyn = ", ".join(d for d in dims if not isinstance(d, int))
        return self.op(f"tensor.empty({dyn}) : {tensor_type(dims, dtype)}", "e")

    def cast(self, v: Value, dims) -> Value:
        """`v` seen with the dims `dims` (a `tensor.cast` where the static type changes)."""
        dims = tuple(dims)
        new = tensor_type(dims, v.dtype)
        if new == v.type:
            return Value(v.name, v.dtype, dims)
        return Value(self.op(f"tensor.cast {v.name} : {v.type} to {new}", "t"), v.dtype, dims)

    # -- run-time checks ----------------------------------------------------------------------------
    def fail_if(self, cond, exc, message):
        """Record that `cond` (an i1 SSA value, or a Python bool known now) fails with `exc(message)`."""
        if cond is False:
            return
        if cond is True:
            raise exc(message)
        if self.in_body:
            raise MlirUnsupported("mlir backend: a run-time check inside a loop body is not supported")
        self.errors.append((exc, message))
        ok = self.op(f"arith.xori {cond}, {self.const(True, 'i1')} : i1", "p")
        self.emit(f'cf.assert {ok}, "{CHECK} {len(self.errors)}"')

    def same_size(self, a, b, message, exc=None):
        """Fail (ShapeError) when two dims differ at run time; static dims are checked now."""
        self.fail_if(self.icmp("ne", a, b), exc or ShapeError, message)

    def text(self):
        return "\n".join(self.lines)


def generic(e: Emitter, rank, ins, outs, body, iterators=None, stem="g"):
    """Print one `linalg.generic` over `rank` loops and return its result names.

    `ins`: [(Value, exprs)], `outs`: [(init SSA name, tensor type, exprs)], exprs per the operand's axes
    (`"dK"` or a constant 0 for a broadcast axis); `body(b, in_scalars, out_scalars) -> [yielded]`
    prints into a child emitter `b`.
    """
    iterators = iterators or ["parallel"] * rank
    maps = [affine(rank, ex) for _, ex in ins] + [affine(rank, ex) for _, _, ex in outs]
    b = e.child(e.indent + 2)
    b.in_body = True
    in_args = [b.fresh("a") for _ in ins]
    out_args = [b.fresh("o") for _ in outs]
    yielded = body(b, in_args, out_args)
    results = [e.fresh(stem) for _ in outs]
    head = ", ".join(results)
    ins_text = f"ins({', '.join(v.name for v, _ in ins)} : {', '.join(v.type for v, _ in ins)}) " if ins else ""
    out_types = [t for _, t, _ in outs]
    block_args = [f"{a}: {element_of(v.type)}" for a, (v, _) in zip(in_args, ins)]
    block_args += [f"{a}: {element_of(t)}" for a, t in zip(out_args, out_types)]
    ret_types = out_types[0] if len(out_types) == 1 else f"({', '.join(out_types)})"
    e.emit(
        f"{head} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{', '.join(repr(i).replace(chr(39), chr(34)) for i in iterators)}]}} "
        f"{ins_text}outs({', '.join(n for n, _, _ in outs)} : {', '.join(out_types)}) {{"
    )
    e.emit(f"^bb0({', '.join(block_args)}):")
    e.lines.extend(b.lines)
    e.emit(f"  linalg.yield {', '.join(yielded)} : {', '.join(element_of(t) for t in out_types)}")
    e.emit(f"}} -> {ret_types}")
    return results


def element_of(ttype: str) -> str:
    """The element type of a printed tensor type."""
    inner = ttype[len("tensor<") : -1]
    return inner.rsplit("x", 1)[-1] if "x" in inner else inner


def broadcast_exprs(v_dims_static, rank):
    """Indexing exprs of an operand of `rank` axes whose static size-1 axes broadcast (read at 0)."""
    return [0 if s == 1 else f"d{k}" for k, s in enumerate(v_dims_static)]
