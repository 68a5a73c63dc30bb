"""C emitters of linear algebra: the matrix functions of `dimgraph.core.matrix` (alone or inside a
`Blockwise`) and the products of `dimgraph.core.linalg` (MatMul, Einsum).

LAPACK comes from the library SciPy already ships: `scipy.linalg.cython_lapack`
exports its Fortran routines as PyCapsules (`__pyx_capi__`), whose pointers are
passed to the kernel in a small uint64 operand, so the generated C needs no
header and no link flag. Per matrix, the kernel copies the operands into a
column-major work buffer, calls the routine and copies the result out through
the output's strides; the batch is one flat loop whose index is unravelled
over the batch axes (broadcast inputs have stride 0 there, made in the plan).
Failures follow `dimgraph.core.matrix`: a Cholesky or solve that LAPACK
refuses gives NaNs.

A Blockwise of any other core op has no C code: the cleanup rewrite
`unroll_blockwise` turns it into one core op per batch element (static batch
sizes) before emission; one it leaves (unknown or large batch) runs its
`perform` on the host, as numba's objmode does.

Products: the plan makes every operand a strided view over all the loop's
letters (stride 0 where an operand lacks one), so MatMul is row updates and
Einsum a reduction loop (`reduce.reduce_code`) of the operands' product.
"""

from __future__ import annotations

import ctypes
import functools

import numpy as np

from dimgraph.backends.c.loops import elem_strides, nest, strided
from dimgraph.backends.c.reduce import NOMEM, collapse_trailing, reduce_code
from dimgraph.backends.c.registry import CImpl, c_impl
from dimgraph.backends.c.scalar import compute_ctype
from dimgraph.core.blockwise import Blockwise, runtime_batch
from dimgraph.core.broadcast import letter_sizes
from dimgraph.core.linalg import Einsum, MatMul, matmul_batch
from dimgraph.core.matrix import Cholesky, Det, Eigh, Inv, SlogDet, Solve, SolveTriangular
from dimgraph.errors import ShapeError

MATRIX_OPS = (Cholesky, SolveTriangular, Solve, Inv, Det, SlogDet, Eigh)
ROUTINES = {
    Cholesky: "potrf",
    SolveTriangular: "trtrs",
    Solve: "gesv",
    Inv: "gesv",
    Det: "getrf",
    SlogDet: "getrf",
    Eigh: "syev",
}
SIGNATURES = {  # C prototypes of the Fortran routines (T: the element type)
    "potrf": "void (*)(char *, int *, T *, int *, int *)",
    "trtrs": "void (*)(char *, char *, char *, int *, int *, T *, int *, T *, int *, int *)",
    "gesv": "void (*)(int *, int *, T *, int *, int *, T *, int *, int *)",
    "getrf": "void (*)(int *, int *, T *, int *, int *, int *)",
    "syev": "void (*)(char *, char *, int *, T *, int *, T *, T *, int *, int *)",
}


@functools.lru_cache(maxsize=None)
def lapack_pointer(name: str) -> int:
    """The address of LAPACK routine `name` (e.g. "dpotrf") in the library SciPy links."""
    from scipy.linalg import cython_lapack

    capsule = cython_lapack.__pyx_capi__[name]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return int(get_pointer(capsule, get_name(capsule)))


def _prefix(dtype):
    return {"float64": "d", "float32": "s"}[np.dtype(dtype).name]


def _core_nd(op):
    """The core axes of the op's inputs and of its outputs."""
    if isinstance(op, (Solve, SolveTriangular)):
        return (2, op.b_ndim), (op.b_ndim,)
    return (2,), {Cholesky: (2,), Inv: (2,), Det: (0,), SlogDet: (0, 0), Eigh: (1, 2)}[type(op)]


def _matrix_impl(op, node, nb):
    """The CImpl of matrix op `op` over `nb` leading batch axes of `node`'s operands."""
    dtype = node.outputs[0].type.dtype
    in_nd, out_nd = _core_nd(op)
    n_in, n_out = len(node.inputs), len(node.outputs)
    types = [(v.type.dtype, nb + k) for v, k in zip(node.inputs, in_nd)]
    types += [(o.type.dtype, nb + k) for o, k in zip(node.outputs, out_nd)]
    types += [("uint64", 1), (dtype, 1), ("int32", 1)]
    pointer = np.array([lapack_pointer(_prefix(dtype) + ROUTINES[type(op)])], dtype=np.uint64)
    name = getattr(op, "function_name", type(op).__name__.lower())  # solve_triangular, not solvetriangular

    def plan(ctx, ins):
        a = ins[0]
        n = a.shape[-1]
        if a.shape[-2] != n:
            raise ShapeError(f"{name}: the matrix must be square, got shape {a.shape[-2:]}")
        if n_in == 2 and ins[1].shape[nb] != n:
            raise ShapeError(f"{name}: a is {n}x{n} but b has {ins[1].shape[nb]} rows")
        batch = runtime_batch(op, node, ins, nb)
        views = [np.broadcast_to(x, batch + x.shape[nb:]) for x in ins]
        nrhs = 1 if n_in == 1 or in_nd[1] == 1 else ins[1].shape[nb + 1]
        core_shapes = {Cholesky: [(n, n)], Inv: [(n, n)], Det: [()], SlogDet: [(), ()], Eigh: [(n,), (n, n)]}.get(
            type(op), [ins[-1].shape[nb:]]
        )
        outs = [np.empty(batch + tuple(s), dtype=o.type.dtype) for s, o in zip(core_shapes, node.outputs)]
        work = np.empty(n * n + max(n * nrhs, n * n) + n + max(1, 66 * n), dtype=dtype)
        ipiv = np.empty(max(n, 1), dtype=np.int32)
        return outs, views + outs + [pointer, work, ipiv], True

    def code(o):
        t = o.ctype(n_in)
        fp, work, ipiv = n_in + n_out, n_in + n_out + 1, n_in + n_out + 2
        first_out = n_in
        lines = [
            f"const int64_t nb_total = {' * '.join(o.shape(first_out, ax) for ax in range(nb)) or '1'};",
            f"int n = (int){o.shape(0, nb)};",
            "int lda = n > 0 ? n : 1, info = 0;",
            f"{t} *A = {o.ptr(work)};",
            f"{t} *Bf = A + (int64_t)n * n;",
            f"int *piv = (int *){o.ptr(ipiv)};",
            f"{SIGNATURES[ROUTINES[type(op)]].replace('T', t).replace('(*)', '(*lapack)')} = "
            f"({SIGNATURES[ROUTINES[type(op)]].replace('T', t)})(uintptr_t){o.ptr(fp)}[0];",
            "for (int64_t t_ = 0; t_ < nb_total; t_++) {",
            "  int64_t rem_ = t_;",
        ]
        offs = list(range(n_in + n_out))
        lines += [f"  int64_t q{j} = 0;" for j in offs]
        for ax in reversed(range(nb)):
            lines.append(f"  {{ const int64_t i_ = rem_ % {o.shape(first_out, ax)}; rem_ /= {o.shape(first_out, ax)};")
            lines += [f"    q{j} += i_ * {o.stride(j, ax)};" for j in offs]
            lines.append("  }")

        def el(j, i, k=None):
            """Element (i, k) of operand j's core (a vector when k is None, a scalar when both are)."""
            if i is None:
                return f"{o.ptr(j)}[q{j}]"
            if k is None:
                return f"{o.ptr(j)}[q{j} + ({i}) * {o.stride(j, nb)}]"
            return f"{o.ptr(j)}[q{j} + ({i}) * {o.stride(j, nb)} + ({k}) * {o.stride(j, nb + 1)}]"

        lines.append(
            f"  for (int j_ = 0; j_ < n; j_++) for (int i_ = 0; i_ < n; i_++) A[i_ + (int64_t)j_ * n] = {el(0, 'i_', 'j_')};"
        )
        body = _body(op, el, n_in, t, f"(int){o.shape(1, nb + 1)}" if n_in == 2 and in_nd[1] == 2 else "1")
        lines += ["  " + line for line in body]
        lines.append("}")
        return "\n".join(lines)

    return CImpl(types, code, plan)


def _body(op, el, n_in, t, nrhs):
    """C statements for one matrix: A holds it column-major; results go to operands n_in, n_in + 1."""
    out, out2 = n_in, n_in + 1
    if isinstance(op, Cholesky):
        keep = "i_ >= j_" if op.lower else "i_ <= j_"
        return [
            f"char uplo = '{'L' if op.lower else 'U'}';",
            "lapack(&uplo, &n, A, &lda, &info);",
            f"for (int i_ = 0; i_ < n; i_++) for (int j_ = 0; j_ < n; j_++) {el(out, 'i_', 'j_')} = info ? ({t})NAN : ({keep} ? A[i_ + (int64_t)j_ * n] : ({t})0);",
        ]
    if isinstance(op, (Solve, SolveTriangular)):
        vector = op.b_ndim == 1
        rhs = [f"int nrhs = {nrhs};"]
        load = (
            f"for (int i_ = 0; i_ < n; i_++) Bf[i_] = {el(1, 'i_')};"
            if vector
            else f"for (int c_ = 0; c_ < nrhs; c_++) for (int i_ = 0; i_ < n; i_++) Bf[i_ + (int64_t)c_ * n] = {el(1, 'i_', 'c_')};"
        )
        if isinstance(op, Solve):
            call = ["lapack(&n, &nrhs, A, &lda, piv, Bf, &lda, &info);"]
        else:
            call = [
                f"char uplo = '{'L' if op.lower else 'U'}', tr = '{'T' if op.trans else 'N'}', dg = '{'U' if op.unit_diagonal else 'N'}';",
                "lapack(&uplo, &tr, &dg, &n, &nrhs, A, &lda, Bf, &lda, &info);",
            ]
        store = (
            f"for (int i_ = 0; i_ < n; i_++) {el(out, 'i_')} = info ? ({t})NAN : Bf[i_];"
            if vector
            else f"for (int c_ = 0; c_ < nrhs; c_++) for (int i_ = 0; i_ < n; i_++) {el(out, 'i_', 'c_')} = info ? ({t})NAN : Bf[i_ + (int64_t)c_ * n];"
        )
        return rhs + [load] + call + [store]
    if isinstance(op, Inv):
        return [
            "int nrhs = n;",
            f"for (int64_t k_ = 0; k_ < (int64_t)n * n; k_++) Bf[k_] = ({t})0;",
            f"for (int i_ = 0; i_ < n; i_++) Bf[i_ + (int64_t)i_ * n] = ({t})1;",
            "lapack(&n, &nrhs, A, &lda, piv, Bf, &lda, &info);",
            f"for (int i_ = 0; i_ < n; i_++) for (int j_ = 0; j_ < n; j_++) {el(out, 'i_', 'j_')} = info ? ({t})NAN : Bf[i_ + (int64_t)j_ * n];",
        ]
    if isinstance(op, (Det, SlogDet)):
        lines = [
            "lapack(&n, &n, A, &lda, piv, &info);",
            "double sign_ = 1.0, logdet_ = 0.0, det_ = 1.0;",
            "for (int i_ = 0; i_ < n; i_++) {",
            "  const double d_ = (double)A[i_ + (int64_t)i_ * n];",
            "  if (piv[i_] != i_ + 1) { sign_ = -sign_; det_ = -det_; }",
            "  det_ *= d_;",
            "  if (d_ < 0) sign_ = -sign_;",
            "  if (d_ == 0) sign_ = 0.0;",
            "  logdet_ += log(fabs(d_));",
            "}",
        ]
        if isinstance(op, Det):
            return lines + [f"{el(out, None)} = ({t})det_;"]
        return lines + [f"{el(out, None)} = ({t})sign_;", f"{el(out2, None)} = ({t})logdet_;"]
    if isinstance(op, Eigh):
        return [
            f"char jobz = 'V', uplo = '{'L' if op.lower else 'U'}';",
            f"{t} *W = Bf + (int64_t)n * n;",
            "int lwork = 66 * (n > 0 ? n : 1);",
            "lapack(&jobz, &uplo, &n, A, &lda, W, W + n, &lwork, &info);",
            f"for (int i_ = 0; i_ < n; i_++) {el(out, 'i_')} = info ? ({t})NAN : W[i_];",
            f"for (int i_ = 0; i_ < n; i_++) for (int j_ = 0; j_ < n; j_++) {el(out2, 'i_', 'j_')} = info ? ({t})NAN : A[i_ + (int64_t)j_ * n];",
        ]
    raise AssertionError(f"internal error: no C body for {op}")


def _register_core(op_type):
    @c_impl.register(op_type)
    def _(op, node):
        return _matrix_impl(op, node, 0)


for _type in MATRIX_OPS:
    _register_core(_type)


@c_impl.register(Blockwise)
def _blockwise(op, node):
    if not isinstance(op.core_op, MATRIX_OPS):
        # not unrolled (unknown or large batch): the batch loop runs on the host, the core op's perform per
        # element, on the inputs' values (evaluated by the plan: buffers C fills later hold nothing yet)
        def host(ctx, ins):
            ctx.no_replay()  # computed here, in Python: a replayed run would not compute it again
            return [ctx.host_value(o) for o in node.outputs], [], False

        return CImpl([], None, host)
    return _matrix_impl(op.core_op, node, op.batch_ndim(node))


# ---------------------------------------------------------------------------
# contractions (dimgraph.core.linalg): every operand a strided view over all the loop's letters


class _Product:
    """Values for `reduce_code`: the product of the operands at one position, in the output's compute type."""

    computed = True

    def __init__(self, o, n_in, nd, ct):
        self.o, self.n_in, self.nd, self.ct = o, n_in, nd, ct

    def __call__(self, q, i):
        o, ct = self.o, self.ct

        def at(k):
            return q[k] if i is None else f"{q[k]} + {i} * {o.stride(k, self.nd - 1)}"

        prod = " * ".join(f"(({ct}){o.ptr(k)}[{at(k)}])" for k in range(self.n_in))
        return [f"const {ct} v_ = {prod};"]


@c_impl.register(MatMul)
def _matmul(op, node):
    a_var, b_var = node.inputs
    out = node.outputs[0]
    nb = out.type.ndim - (a_var.type.ndim > 1) - (b_var.type.ndim > 1)
    L = nb + 3
    types = [(a_var.type.dtype, L), (b_var.type.dtype, L), (out.type.dtype, L)]

    def plan(ctx, ins):
        a, b = ins
        batch = matmul_batch(op, a_var.type, b_var.type, a.shape, b.shape)
        a2 = a if a.ndim > 1 else a[None, :]
        b2 = b if b.ndim > 1 else b[:, None]
        m, k, n = a2.shape[-2], a2.shape[-1], b2.shape[-1]
        res = ctx.filled(batch + ((m,) if a.ndim > 1 else ()) + ((n,) if b.ndim > 1 else ()), 0, out.type.dtype)
        full = batch + (m, k, n)
        sa = elem_strides(np.broadcast_to(a2, batch + (m, k)))
        sb = elem_strides(np.broadcast_to(b2, batch + (k, n)))
        so = elem_strides(res.reshape(batch + (m, n)))
        views = [
            strided(a2, full, sa[:nb] + [sa[-2], sa[-1], 0]),
            strided(b2, full, sb[:nb] + [0, sb[-2], sb[-1]]),
            strided(res, full, so[:nb] + [so[-2], 0, so[-1]]),
        ]
        return [res], views, True

    return CImpl(types, _matmul_code(out.type.dtype), plan)


def _matmul_code(out_dtype):
    """Loops (batch, i) around row updates out[i, :] += a[i, k] * b[k, :], four k at a time on unit-stride rows.

    The four updates are added in k order, so every element is summed as the plain k loop sums it.
    """
    ct = compute_ctype(out_dtype)

    def code(o):
        L = o.ndim(2)
        t, ta, tb = o.ctype(2), o.ctype(0), o.ctype(1)
        k_ax, j_ax = L - 2, L - 1

        def body(q):
            def term(a, b, j):
                return f"{a} * ({ct}){b}[{j}]"

            blocked = f"(((({ct})po_[j_] + {term('a0_', 'b0_', 'j_')}) + {term('a1_', 'b1_', 'j_')}) + {term('a2_', 'b2_', 'j_')}) + {term('a3_', 'b3_', 'j_')}"
            return [
                f"const {ta} *pa_ = {o.ptr(0)} + {q[0]};",
                f"const {tb} *pb_ = {o.ptr(1)} + {q[1]};",
                f"{t} *restrict po_ = {o.ptr(2)} + {q[2]};",
                f"const int64_t K_ = {o.shape(2, k_ax)}, N_ = {o.shape(2, j_ax)};",
                f"const int64_t sa_ = {o.stride(0, k_ax)}, sbk_ = {o.stride(1, k_ax)}, sbj_ = {o.stride(1, j_ax)}, so_ = {o.stride(2, j_ax)};",
                "int64_t k_ = 0;",
                "if (sbj_ == 1 && so_ == 1) {",
                "  for (; k_ + 4 <= K_; k_ += 4) {",
                f"    const {ct} a0_ = ({ct})pa_[k_ * sa_], a1_ = ({ct})pa_[(k_ + 1) * sa_], "
                f"a2_ = ({ct})pa_[(k_ + 2) * sa_], a3_ = ({ct})pa_[(k_ + 3) * sa_];",
                f"    const {tb} *restrict b0_ = pb_ + k_ * sbk_, *restrict b1_ = b0_ + sbk_, *restrict b2_ = b1_ + sbk_, *restrict b3_ = b2_ + sbk_;",
                '    _Pragma("omp simd")',
                f"    for (int64_t j_ = 0; j_ < N_; j_++) po_[j_] = ({t})({blocked});",
                "  }",
                "}",
                "for (; k_ < K_; k_++) {",
                f"  const {ct} a_ = ({ct})pa_[k_ * sa_];",
                f"  const {tb} *b_ = pb_ + k_ * sbk_;",
                f"  for (int64_t j_ = 0; j_ < N_; j_++) po_[j_ * so_] = ({t})(({ct})po_[j_ * so_] + a_ * ({ct})b_[j_ * sbj_]);",
                "}",
            ]

        strides = {j: [o.stride(j, a) for a in range(L - 2)] for j in range(3)}
        return "\n".join(nest([o.shape(2, a) for a in range(L - 2)], strides, body))

    return code


@c_impl.register(Einsum)
def _einsum(op, node):
    terms, output = op.terms, op.output
    letters = list(output) + sorted({c for t in terms for c in t} - set(output), key=lambda c: "".join(terms).index(c))
    L = len(letters)
    summed = tuple(range(len(output), L))  # the summed letters are the innermost loops
    out = node.outputs[0]
    types = [(i.type.dtype, L) for i in node.inputs] + [(out.type.dtype, L)]
    statics = [i.type.shape for i in node.inputs]

    def plan(ctx, ins):
        target = letter_sizes(str(op), terms, statics, [x.shape for x in ins])
        full = [target[c] for c in letters]
        views = []
        for term, x in zip(terms, ins):
            st = elem_strides(x)
            per = {c: 0 for c in letters}
            for ax, c in enumerate(term):
                if x.shape[ax] == target[c]:
                    per[c] += st[ax]
            views.append(strided(x, full, [per[c] for c in letters]))
        res = ctx.filled([target[c] for c in output], 0, out.type.dtype)
        so = elem_strides(res)
        views.append(strided(res, full, so + [0] * (L - len(output))))
        return [res], collapse_trailing(views, len(summed)), True

    def code(o):
        values = _Product(o, len(terms), L, compute_ctype(out.type.dtype))
        return reduce_code(o, L, len(terms), "add", out.type.dtype, summed, values)

    return CImpl(types, code, plan, errors=NOMEM)
