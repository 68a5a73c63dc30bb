"""Matrix functions: `Cholesky`, `Solve`, `SolveTriangular`, `Inv`, `Det`, `SlogDet`, `Eigh`.

Each op is defined on its core axes only (a matrix, a right-hand side) and
declares them as a gufunc `signature`; the functions in `dimgraph.core.linalg`
(`cholesky`, `solve`, ...) map it over leading batch axes with `Blockwise`, whose
gradient is the core `L_op` vectorized. `perform_batched` is the stacked NumPy/SciPy
call that `Blockwise.perform` uses instead of a Python loop.

Failure rule (the same on every backend): a matrix that is not positive
definite gives a Cholesky factor of NaNs, a singular matrix gives the
non-finite values LAPACK's LU produces (as `jax.numpy.linalg`), never an
exception in the middle of a batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dimgraph.core.basic import as_tensor
from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.extra import arange
from dimgraph.core.graph import Apply, Op
from dimgraph.core.math import cast, eq, ge, le, mul, sub, true_div, where
from dimgraph.core.shape import shape_of
from dimgraph.core.shape_ops import expand_dims
from dimgraph.core.type import TensorType
from dimgraph.errors import ShapeError
from dimgraph.lazy import scipy_linalg


def _float_matrix(op, x, what="a"):
    """`x` as a float matrix (ints become float64) after checking it is square where known."""
    x = as_tensor(x)
    if x.type.ndim != 2:
        raise ValueError(f"{op}: {what} must be a matrix (2 core axes), got {x!r}")
    if np.dtype(x.type.dtype).kind not in "f":
        if np.dtype(x.type.dtype).kind == "c":
            raise TypeError(f"{op}: complex matrices are not supported, got {x!r}")
        x = cast(x, "float64")
    m, n = x.type.shape
    if m is not None and n is not None and m != n:
        raise ShapeError(f"{op}: {what} must be square, got shape {x.type.shape}")
    return x


def _check_square(op, a):
    if a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"{op}: the matrix must be square, got shape {a.shape[-2:]}")


def _mT(x):
    nd = x.type.ndim
    return DimShuffle(nd, tuple(range(nd - 2)) + (nd - 1, nd - 2))(x)


def _tri_mask(x, lower):
    """A boolean (m, m) graph: True on and below (lower) or above the diagonal of `x`'s core matrix."""
    n = shape_of(x)[-1]
    i = arange(n)
    rows, cols = expand_dims(i, 1), expand_dims(i, 0)
    return ge(rows, cols) if lower else le(rows, cols)


def _tri(x, lower):
    return where(_tri_mask(x, lower), x, np.zeros((), dtype=x.type.dtype))


def _eye_like(x):
    i = arange(shape_of(x)[-1])
    return cast(eq(expand_dims(i, 1), expand_dims(i, 0)), x.type.dtype)


def _nan_on_failure(fn, a, *rest):
    """`fn` over a stack of matrices, with NaNs for the ones LAPACK refuses (see the module's failure rule)."""
    try:
        return fn(a, *rest)
    except np.linalg.LinAlgError:
        pass
    out = None
    for idx in np.ndindex(*a.shape[:-2]):
        try:
            r = np.asarray(fn(a[idx], *[x[idx] for x in rest]))
        except np.linalg.LinAlgError:
            r = None
        if out is None and r is not None:
            out = np.full(a.shape[:-2] + r.shape, np.nan, dtype=r.dtype)
        if r is not None:
            out[idx] = r
    return out if out is not None else np.full(a.shape, np.nan, dtype=a.dtype)


class _Stacked:
    """`perform` of the matrix ops: their stacked call, a lone matrix being a stack of one."""

    def perform(self, node, inputs):
        return self.perform_batched(node, inputs)


class _LinearSolve(_Stacked):
    """What the solves share: `b` is a stack of vectors (`b_ndim=1`) or of matrices, and `x` has its shape."""

    function_name = "solve"  # in errors

    @property
    def signature(self):
        return "(m,m),(m)->(m)" if self.b_ndim == 1 else "(m,m),(m,k)->(m,k)"

    def make_node(self, a, b):
        name = self.function_name
        a = _float_matrix(name, a)
        b = as_tensor(b)
        if b.type.ndim != self.b_ndim:
            raise ValueError(f"{name}: b must have {self.b_ndim} core axes (b_ndim={self.b_ndim}), got {b!r}")
        if np.dtype(b.type.dtype).kind not in "f":
            b = cast(b, "float64")
        dtype = np.result_type(a.type.dtype, b.type.dtype).name
        a, b = cast(a, dtype), cast(b, dtype)
        m, mb = a.type.shape[0], b.type.shape[0]
        if m is not None and mb is not None and m != mb:
            raise ShapeError(f"{name}: a is {a.type.shape[0]}x{a.type.shape[1]} but b has {mb} rows")
        return Apply(self, [a, b], [TensorType(dtype, b.type.shape)])

    def infer_shape(self, inputs, input_shapes):
        return [input_shapes[1]]

    def solve_stack(self, node, solve, a, b):
        """`solve(a, rhs)` over the stack (a vector `b` as a one-column matrix), NaNs where LAPACK refuses."""
        _check_square(self.function_name, a)
        if a.shape[-1] != b.shape[a.ndim - 2]:
            raise ShapeError(
                f"{self.function_name}: a is {a.shape[-2]}x{a.shape[-1]} but b has {b.shape[a.ndim - 2]} rows"
            )
        x = _nan_on_failure(solve, a, b[..., None] if self.b_ndim == 1 else b)
        return [(x[..., 0] if self.b_ndim == 1 else x).astype(node.outputs[0].type.dtype, copy=False)]


@dataclass(frozen=True)
class Cholesky(_Stacked, Op):
    """The triangular factor `L` of a symmetric positive definite `a` (`a = L @ L.T`; upper: `U.T @ U`)."""

    lower: bool = True

    signature = "(m,m)->(m,m)"

    def make_node(self, a):
        a = _float_matrix("cholesky", a)
        return Apply(self, [a], [a.type])

    def infer_shape(self, inputs, input_shapes):
        return [input_shapes[0]]

    def perform_batched(self, node, inputs):
        (a,) = inputs
        _check_square("cholesky", a)
        chol = lambda m: np.linalg.cholesky(m, upper=not self.lower)  # noqa: E731
        return [_nan_on_failure(chol, a).astype(a.dtype, copy=False)]

    def L_op(self, inputs, outputs, output_grads):
        """Murray (2016): with P = Phi(L^T Lbar) (lower part, halved diagonal), Abar = sym(L^-T P L^-1)."""
        from dimgraph.core.linalg import matmul, solve_triangular  # cycle: the linalg functions apply these ops

        (a,) = inputs
        (chol,) = outputs
        (g,) = output_grads
        L, gL = (chol, g) if self.lower else (_mT(chol), _mT(g))
        phi = _tri(matmul(_mT(L), gL), lower=True)
        phi = sub(phi, mul(mul(phi, _eye_like(phi)), np.asarray(0.5, dtype=a.type.dtype)))
        s = solve_triangular(L, _mT(solve_triangular(L, phi, lower=True, trans=True)), lower=True, trans=True)
        return [mul(np.asarray(0.5, dtype=a.type.dtype), s + _mT(s))]


@dataclass(frozen=True)
class SolveTriangular(_LinearSolve, Op):
    """`x` with `a @ x = b` (`trans`: `a.T @ x = b`) for a triangular `a`; `b` is a vector (`b_ndim=1`) or a matrix."""

    lower: bool = True
    trans: bool = False
    unit_diagonal: bool = False
    b_ndim: int = 2

    function_name = "solve_triangular"

    def perform_batched(self, node, inputs):
        solve = lambda m, rhs: scipy_linalg.solve_triangular(  # noqa: E731
            m, rhs, lower=self.lower, trans=int(self.trans), unit_diagonal=self.unit_diagonal, check_finite=False
        )
        return self.solve_stack(node, solve, *inputs)

    def L_op(self, inputs, outputs, output_grads):
        a, b = inputs
        (x,) = outputs
        (g,) = output_grads
        gb = SolveTriangular(self.lower, not self.trans, self.unit_diagonal, self.b_ndim)(a, g)
        outer = _outer(gb, x) if not self.trans else _outer(x, gb)
        ga = _tri(-outer, lower=self.lower)
        if self.unit_diagonal:
            ga = ga - ga * _eye_like(ga)
        return [ga, gb]


def _outer(u, v):
    """`u @ v.T` for matrices, the outer product for vectors (the core-axes shape of a solve's `a` gradient)."""
    from dimgraph.core.linalg import matmul  # cycle: the linalg functions apply these ops

    if u.type.ndim == 1:
        return expand_dims(u, 1) * expand_dims(v, 0)
    return matmul(u, _mT(v))


@dataclass(frozen=True)
class Solve(_LinearSolve, Op):
    """`x` with `a @ x = b` for a general square `a` (LU with partial pivoting)."""

    b_ndim: int = 2

    def perform_batched(self, node, inputs):
        return self.solve_stack(node, np.linalg.solve, *inputs)

    def L_op(self, inputs, outputs, output_grads):
        a, b = inputs
        (x,) = outputs
        (g,) = output_grads
        gb = Solve(self.b_ndim)(_mT(a), g)
        return [-_outer(gb, x), gb]


@dataclass(frozen=True)
class Inv(_Stacked, Op):
    """The inverse of a square matrix."""

    signature = "(m,m)->(m,m)"

    def make_node(self, a):
        a = _float_matrix("inv", a)
        return Apply(self, [a], [a.type])

    def infer_shape(self, inputs, input_shapes):
        return [input_shapes[0]]

    def perform_batched(self, node, inputs):
        (a,) = inputs
        _check_square("inv", a)
        return [_nan_on_failure(np.linalg.inv, a).astype(a.dtype, copy=False)]

    def L_op(self, inputs, outputs, output_grads):
        from dimgraph.core.linalg import matmul  # cycle: the linalg functions apply these ops

        (inv,) = outputs
        (g,) = output_grads
        inv_t = _mT(inv)
        return [-matmul(matmul(inv_t, g), inv_t)]


@dataclass(frozen=True)
class Det(_Stacked, Op):
    """The determinant of a square matrix."""

    signature = "(m,m)->()"

    def make_node(self, a):
        a = _float_matrix("det", a)
        return Apply(self, [a], [TensorType(a.type.dtype, ())])

    def infer_shape(self, inputs, input_shapes):
        return [()]

    def perform_batched(self, node, inputs):
        (a,) = inputs
        _check_square("det", a)
        return [np.asarray(np.linalg.det(a), dtype=a.dtype)]

    def L_op(self, inputs, outputs, output_grads):
        """d det(A) = det(A) A^-T."""
        (a,) = inputs
        (det,) = outputs
        (g,) = output_grads
        return [(g * det) * _mT(Inv()(a))]


@dataclass(frozen=True)
class SlogDet(_Stacked, Op):
    """`(sign, log|det|)` of a square matrix (no overflow where `det` would)."""

    signature = "(m,m)->(),()"

    def make_node(self, a):
        a = _float_matrix("slogdet", a)
        t = TensorType(a.type.dtype, ())
        return Apply(self, [a], [t, t])

    def infer_shape(self, inputs, input_shapes):
        return [(), ()]

    def perform_batched(self, node, inputs):
        (a,) = inputs
        _check_square("slogdet", a)
        sign, logdet = np.linalg.slogdet(a)
        return [np.asarray(sign, dtype=a.dtype), np.asarray(logdet, dtype=a.dtype)]

    def L_op(self, inputs, outputs, output_grads):
        """d log|det A| = A^-T; the sign is piecewise constant (no gradient)."""
        (a,) = inputs
        _, g = output_grads
        return [g * _mT(Inv()(a))]


@dataclass(frozen=True)
class Eigh(_Stacked, Op):
    """Eigenvalues (ascending) and eigenvectors (columns) of a symmetric matrix, reading its `lower` triangle."""

    lower: bool = True

    signature = "(m,m)->(m),(m,m)"

    def make_node(self, a):
        a = _float_matrix("eigh", a)
        m = a.type.shape[0] if a.type.shape[0] is not None else a.type.shape[1]
        return Apply(self, [a], [TensorType(a.type.dtype, (m,)), TensorType(a.type.dtype, (m, m))])

    def infer_shape(self, inputs, input_shapes):
        m = input_shapes[0][-1]
        return [(m,), (m, m)]

    def perform_batched(self, node, inputs):
        (a,) = inputs
        _check_square("eigh", a)
        w, v = np.linalg.eigh(a, UPLO="L" if self.lower else "U")
        return [w.astype(a.dtype, copy=False), v.astype(a.dtype, copy=False)]

    def L_op(self, inputs, outputs, output_grads):
        """Abar = V (diag(wbar) + F * (V^T Vbar)) V^T, F_ij = 1/(w_j - w_i) off the diagonal, symmetrized."""
        from dimgraph.core.linalg import matmul  # cycle: the linalg functions apply these ops

        w, v = outputs
        gw, gv = output_grads
        diff = sub(expand_dims(w, 0), expand_dims(w, 1))
        zero = np.zeros((), dtype=w.type.dtype)
        off = eq(_eye_like(v), zero)
        f = where(
            off, true_div(np.ones((), dtype=w.type.dtype), where(off, diff, np.ones((), dtype=w.type.dtype))), zero
        )
        inner = f * matmul(_mT(v), gv) + _eye_like(v) * expand_dims(gw, 0)
        ga = matmul(matmul(v, inner), _mT(v))
        return [np.asarray(0.5, dtype=w.type.dtype) * (ga + _mT(ga))]


MATRIX_OPS = (Cholesky, SolveTriangular, Solve, Inv, Det, SlogDet, Eigh)
