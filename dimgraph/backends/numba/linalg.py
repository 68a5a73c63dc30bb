"""numba kernels for `Blockwise`, the matrix functions of `dimgraph.core.matrix`, and `a @ b`.

A matrix op (alone, or inside a Blockwise) prints a batch loop around one
call per matrix: Cholesky and triangular solves are short loops printed with
the kernel (the NaN failure rule of `core.matrix` needs no exception), the
others call Numba's `np.linalg` (LAPACK) on a contiguous copy of each matrix,
with a failed factorisation turned into NaNs. The helpers are printed into the
kernel's text, so the text stays the whole cache key. Outside loop bodies the
`np.linalg` ones run by NumPy in the driver instead (`lapack_on_host`), and so do einsums
(`einsum_on_host`: BLAS products; their printed loops serve jitted code). A Blockwise of any
other core op is a batch loop around that op's own kernel (`_batched_core`).
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends.numba.matmul import matmul_kernel
from dimgraph.backends.numba.ops import numba_kernel, objmode_kernel
from dimgraph.backends.numba.scalar import np_type
from dimgraph.core.blockwise import Blockwise
from dimgraph.core.broadcast import mismatch_message
from dimgraph.core.ifelse import IfElse
from dimgraph.core.linalg import Einsum, MatMul
from dimgraph.core.loop import LoopOp
from dimgraph.core.matrix import Cholesky, Det, Eigh, Inv, SlogDet, Solve, SolveTriangular

HELPERS = """
@numba.njit(cache=True)
def _chol(a, lower):
    n = a.shape[0]
    out = np.zeros((n, n), dtype=a.dtype)
    for j in range(n):
        s = a[j, j]
        for k in range(j):
            s -= out[j, k] * out[j, k]
        if not s > 0:
            out.fill(np.nan)  # not `out[:, :] = np.nan`: see `_store`
            return out
        d = np.sqrt(s)
        out[j, j] = d
        for i in range(j + 1, n):
            t = a[i, j] if lower else a[j, i]
            for k in range(j):
                t -= out[i, k] * out[j, k]
            out[i, j] = t / d
    return out if lower else out.T.copy()


@numba.njit(cache=True)
def _trsolve(a, b, lower, trans, unit):
    n = a.shape[0]
    m = a.T if trans else a
    low = lower != trans
    x = b.copy()
    for c in range(x.shape[1]):
        if low:
            for i in range(n):
                s = x[i, c]
                for k in range(i):
                    s -= m[i, k] * x[k, c]
                x[i, c] = s if unit else s / m[i, i]
        else:
            for i in range(n - 1, -1, -1):
                s = x[i, c]
                for k in range(i + 1, n):
                    s -= m[i, k] * x[k, c]
                x[i, c] = s if unit else s / m[i, i]
    return x


@numba.njit(cache=True)
def _solve(a, b):
    try:
        return np.linalg.solve(np.ascontiguousarray(a), np.ascontiguousarray(b))
    except Exception:
        return np.full(b.shape, np.nan, dtype=b.dtype)


@numba.njit(cache=True)
def _inv(a):
    try:
        return np.linalg.inv(np.ascontiguousarray(a))
    except Exception:
        return np.full(a.shape, np.nan, dtype=a.dtype)


@numba.njit(cache=True)
def _eigh(a, lower):
    return np.linalg.eigh(np.ascontiguousarray(a if lower else a.T))
"""


def _core_call(op, args):
    """(statement computing r0, r1, ... from the core arrays `args`, core output shapes as expressions)."""
    a = args[0]
    if isinstance(op, Cholesky):
        return f"r0 = _chol({a}, {op.lower})", [f"{a}.shape"]
    if isinstance(op, SolveTriangular):
        b = args[1]
        call = f"_trsolve({a}, {b}, {op.lower}, {op.trans}, {op.unit_diagonal})"
        if op.b_ndim == 1:
            call = f"_trsolve({a}, np.ascontiguousarray({b}).reshape(({b}.shape[0], 1)), {op.lower}, {op.trans}, {op.unit_diagonal})[:, 0]"
        return f"r0 = {call}", [f"{b}.shape"]
    if isinstance(op, Solve):
        return f"r0 = _solve({a}, {args[1]})", [f"{args[1]}.shape"]
    if isinstance(op, Inv):
        return f"r0 = _inv({a})", [f"{a}.shape"]
    if isinstance(op, Det):
        return f"r0 = np.linalg.det(np.ascontiguousarray({a}))", ["()"]
    if isinstance(op, SlogDet):
        return f"r0, r1 = np.linalg.slogdet(np.ascontiguousarray({a}))", ["()", "()"]
    if isinstance(op, Eigh):
        return f"r0, r1 = _eigh({a}, {op.lower})", [f"({a}.shape[0],)", f"{a}.shape"]
    raise AssertionError(f"internal error: no printed call for {op}")


MATRIX_OPS = (Cholesky, SolveTriangular, Solve, Inv, Det, SlogDet, Eigh)
# The ops whose kernels call Numba's `np.linalg`: its first compile costs seconds of CPU per op
# on a cold cache (5 s for the first one), where NumPy's stacked gufuncs are as fast per call.
# The driver runs them by NumPy (`perform_batched`); a loop body, which must be jitted, prints them.
LAPACK_OPS = (Solve, Inv, Det, SlogDet, Eigh)


def lapack_on_host(node) -> bool:
    """Whether the driver runs `node` (one of `LAPACK_OPS`, alone or in a Blockwise) by NumPy."""
    op = node.op
    return isinstance(op.core_op if isinstance(op, Blockwise) else op, LAPACK_OPS)


def _square_checks(op, node, nb):
    name = type(op).__name__.lower()
    lines = [
        f"    if x0.shape[{nb}] != x0.shape[{nb + 1}]:",
        f'        raise ShapeError("{name}: the matrix must be square")',
    ]
    if len(node.inputs) == 2:
        lines += [
            f"    if x1.shape[{nb}] != x0.shape[{nb}]:",
            f'        raise ShapeError("{name}: b must have as many rows as a")',
        ]
    return lines


def _matrix_kernel(op, node, nb):
    n_in = len(node.inputs)
    params = [f"x{k}" for k in range(n_in)]
    lines = [HELPERS, f"def kernel({', '.join(params)}):"] + _square_checks(op, node, nb)
    if nb == 0:
        stmt, _ = _core_call(op, params)
        lines.append("    " + stmt)
        outs = [f"np.asarray(r{j}, dtype={np_type(o.type.dtype)})" for j, o in enumerate(node.outputs)]
        lines.append(f"    return {', '.join(outs)}")
        return "\n".join(lines) + "\n"
    batch = []
    for ax in range(nb):
        static = [v.type.shape[ax] for v in node.inputs]
        src = next((k for k, s in enumerate(static) if s != 1), None)
        batch.append("1" if src is None else f"x{src}.shape[{ax}]")
        for k, s in enumerate(static):
            if s is None and k != src:
                lines += [
                    f"    if x{k}.shape[{ax}] != {batch[-1]}:",
                    f"        raise ShapeError({mismatch_message(str(op), f'batch axis {ax}')!r})",
                ]
    lines.append(f"    batch = ({''.join(b + ', ' for b in batch)})")
    core_args = []
    for k, v in enumerate(node.inputs):
        idx = ", ".join("0" if v.type.shape[ax] == 1 else f"i{ax}" for ax in range(nb))
        core_args.append(f"x{k}[{idx}]")
    _, shapes = _core_call(op, params)  # core output shapes from the inputs' core axes
    for j, (o, sh) in enumerate(zip(node.outputs, shapes)):
        sh = sh.replace(".shape", f".shape[{nb}:]")
        lines.append(f"    out{j} = np.empty(batch + {sh}, dtype={np_type(o.type.dtype)})")
    stmt, _ = _core_call(op, core_args)
    indent = "    "
    for ax in range(nb):
        lines.append(f"{indent}for i{ax} in range(batch[{ax}]):")
        indent += "    "
    lines.append(indent + stmt)
    for j, o in enumerate(node.outputs):
        lines += _store(f"out{j}", f"r{j}", nb, o.type.ndim - nb, indent)
    lines.append(f"    return {', '.join(f'out{j}' for j in range(len(node.outputs)))}")
    return "\n".join(lines) + "\n"


def _store(out, r, nb, core_ndim, indent):
    """Lines writing core result `r` into `out` at batch index (i0, ...), element by element.

    NOTE: `out[i] = r` (an array stored into a slice) makes Numba compile its shape-mismatch
    error path, about 3 s of CPU on a cold cache; loops over the elements cost nothing of it.
    """
    lines, inner = [], indent
    for ax in range(core_ndim):
        lines.append(f"{inner}for j{ax} in range({r}.shape[{ax}]):")
        inner += "    "
    at = ", ".join([f"i{ax}" for ax in range(nb)] + [f"j{ax}" for ax in range(core_ndim)])
    src = f"{r}[{', '.join(f'j{ax}' for ax in range(core_ndim))}]" if core_ndim else r
    return lines + [f"{inner}{out}[{at}] = {src}"]


def _register_core(op_type):
    @numba_kernel.register(op_type)
    def _(op, node):
        return _matrix_kernel(op, node, 0)


for _type in MATRIX_OPS:
    _register_core(_type)


@numba_kernel.register(Blockwise)
def _blockwise(op, node):
    if isinstance(op.core_op, MATRIX_OPS):
        return _matrix_kernel(op.core_op, node, op.batch_ndim(node))
    if isinstance(op.core_op, (IfElse, LoopOp)):
        # Control flow per batch element: a loop's traces may differ in length between elements (a ShapeError),
        # and a lazy branch must stay unrun; the op's own `perform` keeps both (registered with the plan).
        return objmode_kernel(op, node)
    return _batched_core(op, node, op.batch_ndim(node))


def _batched_core(op, node, nb):
    """A batch loop around the core op's own kernel (`_core`, printed from the registry for the core
    node's types): the outputs are allocated from the first element's results, then filled element by
    element (`_store`)."""
    core = op.core_node(node.inputs)
    src = numba_kernel(core.op, core).replace("def kernel(", "def _core(", 1)
    lines = [src, "_core = numba.njit(cache=True)(_core)", "", ""]
    params = [f"x{k}" for k in range(len(node.inputs))]
    lines.append(f"def kernel({', '.join(params)}):")
    batch = []
    for ax in range(nb):
        static = [v.type.shape[ax] for v in node.inputs]
        src_k = next((k for k, s in enumerate(static) if s != 1), None)
        batch.append("1" if src_k is None else f"x{src_k}.shape[{ax}]")
        for k, s in enumerate(static):
            if s is None and k != src_k:
                lines += [
                    f"    if x{k}.shape[{ax}] != {batch[-1]}:",
                    f"        raise ShapeError({mismatch_message(str(op), f'batch axis {ax}')!r})",
                ]
    lines.append(f"    batch = ({''.join(b + ', ' for b in batch)})")

    def parts(at):
        out = []
        for k, (v, c) in enumerate(zip(node.inputs, core.inputs)):
            idx = ", ".join("0" if v.type.shape[ax] == 1 else at[ax] for ax in range(nb))
            read = f"x{k}[{idx}]" if nb else f"x{k}"
            out.append(f"np.asarray({read})" if c.type.ndim == 0 and nb else read)
        return ", ".join(out)

    outs = [f"r{j}" for j in range(len(node.outputs))]
    got = "".join(o + ", " for o in outs)
    lines.append(f"    n = {' * '.join(['1'] + [f'batch[{ax}]' for ax in range(nb)])}")
    first = ["0"] * nb
    lines.append("    if n == 0:")
    for j, c in enumerate(core.outputs):
        shape = "".join(("0" if s is None else str(s)) + ", " for s in c.type.shape)
        lines.append(f"        return_{j} = np.empty(batch + ({shape}), dtype={np_type(c.type.dtype)})")
    lines.append(f"        return {', '.join(f'return_{j}' for j in range(len(outs)))}")
    lines.append(f"    ({got}) = _core({parts(first)})" if len(outs) > 1 else f"    r0 = _core({parts(first)})")
    for j, c in enumerate(core.outputs):
        lines.append(f"    out{j} = np.empty(batch + r{j}.shape, dtype={np_type(c.type.dtype)})")
    indent = "    "
    for ax in range(nb):
        lines.append(f"{indent}for i{ax} in range(batch[{ax}]):")
        indent += "    "
    at = [f"i{ax}" for ax in range(nb)]
    lines.append(f"{indent}({got}) = _core({parts(at)})" if len(outs) > 1 else f"{indent}r0 = _core({parts(at)})")
    for j, c in enumerate(core.outputs):
        if c.type.ndim == 0:
            lines.append(f"{indent}out{j}[{', '.join(at) if at else '()'}] = r{j}[()]")
        else:
            lines += _store(f"out{j}", f"r{j}", nb, c.type.ndim, indent)
    lines.append(f"    return {', '.join(f'out{j}' for j in range(len(outs)))}")
    return "\n".join(lines) + "\n"


numba_kernel.register(MatMul)(matmul_kernel)


@numba_kernel.register(Einsum)
def _einsum(op, node):
    """Plain loops over every letter, a product summed into the output (size-1 axes broadcast). The driver
    runs einsums by `host.py` instead (BLAS through a contraction path, `einsum_on_host`); this kernel
    serves jitted code: the jitted graph and loop bodies."""
    out_dtype = node.outputs[0].type.dtype
    terms, output = op.terms, op.output
    letters = list(dict.fromkeys("".join(terms) + output))
    args = [f"x{k}" for k in range(len(terms))]
    lines = [f"def kernel({', '.join(args)}):"]
    message = mismatch_message("einsum", "a letter")
    for c in letters:
        lines.append(f"    n_{c} = 1")
        for k, term in enumerate(terms):
            for a, t in enumerate(term):
                if t == c:
                    lines += [
                        f"    if x{k}.shape[{a}] != 1:",
                        f"        if n_{c} != 1 and n_{c} != x{k}.shape[{a}]:",
                        f"            raise ShapeError({message!r})",
                        f"        n_{c} = x{k}.shape[{a}]",
                    ]
    shape = "(" + "".join(f"n_{c}, " for c in output) + ")"
    lines.append(f"    out = np.zeros({shape}, dtype={np_type(out_dtype)})")
    indent = "    "
    for c in letters:
        lines.append(f"{indent}for i_{c} in range(n_{c}):")
        indent += "    "
    factors = []
    for k, term in enumerate(terms):
        index = ", ".join(f"i_{t} if x{k}.shape[{a}] != 1 else 0" for a, t in enumerate(term))
        factors.append(f"x{k}[{index}]" if term else f"x{k}[()]")
    target = f"out[{', '.join(f'i_{c}' for c in output)}]" if output else "out[()]"
    if np.dtype(out_dtype).kind == "b":  # NumPy's boolean einsum: an or of ands
        lines.append(f"{indent}{target} = {target} or ({' and '.join(factors)})")
    else:
        lines.append(f"{indent}{target} += {' * '.join(factors)}")
    lines.append("    return out")
    return "\n".join(lines) + "\n"


def einsum_on_host(node) -> bool:
    """Whether the driver runs `node` by NumPy (`host.py`): an einsum, by BLAS products along a contraction path."""
    return isinstance(node.op, Einsum)
