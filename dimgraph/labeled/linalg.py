"""`dg.linalg`: linear algebra on labeled variables, with the matrix's `dims=(row, col)` named.

Every dim other than the core ones is a batch dim: the function maps over it,
broadcasting batch dims across operands by name, and results carry the batch
dims first and the core dims last (as API.md fixes). Core dims of results:

- `cholesky`, `inv`: `(row, col)`, like the input.
- `solve(a, b)`, `solve_triangular(a, b)`, `cho_solve`: `b` is indexed by `row`
  (its other dims are batch dims, so a matrix right-hand side is a batch of
  vectors); `x` by `col`. With `trans=True`, `b` by `col` and `x` by `row`.
- `eigh`: eigenvalues on `col`, eigenvectors `(row, col)` (column k is the
  vector of eigenvalue k); `diagonal`: `row`; `det`, `slogdet`, `trace`: none.

Positional variables (no dims) go to the positional functions of
`dg.core.linalg`, with the matrix in the last two axes (`b_ndim` says whether
a positional `b` is a stack of vectors or of matrices; labeled ones need not). Float32 stays
float32; integers compute in float64. Failures follow `dimgraph.core.matrix`:
NaNs for a matrix that is not positive definite, never an exception mid-batch.
"""

from __future__ import annotations

import numpy as np

from dimgraph.core import linalg as core
from dimgraph.core.matrix import Cholesky, Det, Eigh, Inv, SlogDet, Solve, SolveTriangular
from dimgraph.errors import DimError
from dimgraph.labeled.blockwise import apply_blockwise
from dimgraph.labeled.dims import dim_refs, fmt_dims, resolve_dims
from dimgraph.labeled.ops import is_labeled

__all__ = ["cholesky", "solve", "solve_triangular", "cho_solve", "inv", "det", "slogdet", "eigh", "trace", "diagonal"]


def _float(x):
    if np.dtype(x.type.dtype).kind == "f":
        return x
    if np.dtype(x.type.dtype).kind == "c":
        raise TypeError(f"dg.linalg: complex matrices are not supported, got {x!r}")
    return x.astype("float64")


def _core_dims(what, x, dims):
    """The (row, col) Dims of `x` named by `dims` (Dim objects or names; a lone string is one name)."""
    refs = dim_refs(dims, what)
    label = x.name or "the variable"
    if refs is None or len(refs) != 2:
        got = "nothing" if refs is None else f"{len(refs)} dim(s) {[getattr(r, 'name', r) for r in refs]}"
        raise DimError(
            f"{what}: give dims=(row, col), the two dims of the matrix, got {got}; {label} has {fmt_dims(x.type.dims)}"
        )
    if len({getattr(r, "name", r) for r in refs}) == 1:
        raise DimError(f"{what}: the row and col dims must differ, got {getattr(refs[0], 'name', refs[0])!r} twice")
    out = resolve_dims(x.type.dims, refs, what, label)
    if out[0].size is not None and out[1].size is not None and out[0].size != out[1].size:
        raise DimError(
            f"{what}: the matrix must be square, but dim {out[0].name!r} has size {out[0].size} and {out[1].name!r} {out[1].size}"
        )
    return out


def _unary(what, op, a, dims, outs):
    """`op` on the matrix of `a`; `outs(row, col)` gives each output's core dims."""
    if not is_labeled(a):
        return None
    a = _float(a)
    row, col = _core_dims(what, a, dims)
    return apply_blockwise(op, op.signature, [a], [(row, col)], outs(row, col), name=what)


def cholesky(a, dims=None, lower=True):
    """The Cholesky factor of the matrix of `a` (NaNs where it is not positive definite).

    >>> import dimgraph as dg, numpy as np
    >>> i, j = dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> a = dg.constant(np.array([[4.0, 2.0], [2.0, 5.0]]), dims=(i, j))
    >>> dg.linalg.cholesky(a, dims=(i, j)).eval().values
    array([[2., 0.],
           [1., 2.]])
    """
    res = _unary("cholesky", Cholesky(bool(lower)), a, dims, lambda r, c: [(r, c)])
    return core.cholesky(a, lower) if res is None else res


def inv(a, dims=None):
    """The inverse of the matrix of `a`, on the same `(row, col)` dims."""
    res = _unary("inv", Inv(), a, dims, lambda r, c: [(r, c)])
    return core.inv(a) if res is None else res


def det(a, dims=None):
    """The determinant of the matrix of `a` (batch dims only)."""
    res = _unary("det", Det(), a, dims, lambda r, c: [()])
    return core.det(a) if res is None else res


def slogdet(a, dims=None):
    """`(sign, logabsdet)` of the matrix of `a`.

    >>> import dimgraph as dg, numpy as np
    >>> i, j = dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> sign, logdet = dg.linalg.slogdet(dg.constant(np.diag([2.0, 3.0]), dims=(i, j)), dims=(i, j))
    >>> float(logdet.eval()) == float(np.log(6.0))
    True
    """
    res = _unary("slogdet", SlogDet(), a, dims, lambda r, c: [(), ()])
    return core.slogdet(a) if res is None else res


def eigh(a, dims=None, lower=True):
    """`(eigenvalues on col, eigenvectors on (row, col))` of the symmetric matrix of `a` (reads its `lower` triangle)."""
    res = _unary("eigh", Eigh(bool(lower)), a, dims, lambda r, c: [(c,), (r, c)])
    return core.eigh(a, lower) if res is None else res


def _solve_like(what, op_of, a, b, dims, trans=False):
    if not (is_labeled(a) and is_labeled(b)):
        if is_labeled(a) or is_labeled(b):
            raise TypeError(f"{what}: give a and b both labeled or both positional")
        return None
    a, b = _float(a), _float(b)
    row, col = _core_dims(what, a, dims)
    b_dim, x_dim = (col, row) if trans else (row, col)
    if not any(d.name == b_dim.name for d in b.type.dims):
        raise DimError(
            f"{what}: b must have the dim {b_dim.name!r} (the matrix's {'col' if trans else 'row'} dim); b has {fmt_dims(b.type.dims)}"
        )
    if any(d.name == x_dim.name for d in b.type.dims):
        raise DimError(f"{what}: b has the dim {x_dim.name!r}, which the result is indexed by; rename it first")
    op = op_of(1)
    return apply_blockwise(op, op.signature, [a, b], [(row, col), (b_dim,)], [(x_dim,)], name=what)


def solve(a, b, dims=None, b_ndim=None):
    """`x` with `a @ x = b` over the matrix dims of `a`: `b` on `row`, `x` on `col`; other dims of `b` are batch dims.

    xarray-einstats' convention (the one ArviZ users know) is taken too: `dims=[row, col]` with `b` on
    `col` (a vector: `x` on `row`, the dim of the two that `b` does not have, with its coords), and
    `dims=[row, col, rhs]` with `b` a matrix on (`row` or `col`, `rhs`): `x` on (the other one, `rhs`),
    put last.

    >>> import dimgraph as dg, numpy as np
    >>> i, j = dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> a = dg.constant(np.diag([2.0, 4.0]), dims=(i, j))
    >>> dg.linalg.solve(a, dg.constant(np.ones(2), dims=(i,)), dims=(i, j)).eval().values
    array([0.5 , 0.25])
    >>> dg.linalg.solve(a, dg.constant(np.ones(2), dims=(j,)), dims=["i", "j"]).dims  # einstats: b on col
    (Dim('i', size=2),)
    """
    if is_labeled(a) and is_labeled(b) and _einstats_form(b, dims):
        return _einstats_solve(a, b, dims)
    res = _solve_like("solve", Solve, a, b, dims)
    return core.solve(a, b, b_ndim) if res is None else res


def _dim_name(d):
    return d.name if hasattr(d, "name") else d


def _einstats_form(b, dims) -> bool:
    """xarray-einstats' `dims`: three names, or two where `b` has the col dim and not the row dim."""
    if not isinstance(dims, (list, tuple)) or len(dims) not in (2, 3):
        return False
    names = [_dim_name(d) for d in dims]
    have = {d.name for d in b.type.dims}
    return len(names) == 3 or (names[1] in have and names[0] not in have)


def _einstats_solve(a, b, dims):
    """`solve` in xarray-einstats' convention, as dimgraph's own: b's vector dim read as the matrix's rows."""
    names = [_dim_name(d) for d in dims]
    have = {d.name for d in b.type.dims}
    b_name = names[0] if len(names) == 3 and names[0] in have else names[1]
    if b_name not in have:
        raise DimError(
            f"solve: b must have the dim {names[1]!r} or {names[0]!r} (dims={names}); b has {fmt_dims(b.type.dims)}"
        )
    if len(names) == 3 and names[2] not in have:
        raise DimError(
            f"solve: b must have the dim {names[2]!r} (its columns, dims={names}); b has {fmt_dims(b.type.dims)}"
        )
    row, col = _core_dims("solve", a, names[:2])
    if b_name != row.name:  # b on col: read as the rows, and x (on col) labeled by the other dim, row
        b = b.rename({b_name: row})
    x = _solve_like("solve", Solve, a, b, (row, col))
    x_dim = row if b_name == col.name else col
    if x_dim is not col:
        x = x.rename({col.name: row})
    core_names = [x_dim.name] + names[2:]
    return x.transpose(*[d for d in x.dims if d.name not in core_names], *core_names)


def solve_triangular(a, b, dims=None, lower=True, trans=False, unit_diagonal=False, b_ndim=None):
    """`x` with `a @ x = b` (`trans=True`: `a.T @ x = b`) for a triangular matrix `a` (reads its `lower` triangle)."""
    make = lambda nd: SolveTriangular(bool(lower), bool(trans), bool(unit_diagonal), nd)  # noqa: E731
    res = _solve_like("solve_triangular", make, a, b, dims, trans=bool(trans))
    return core.solve_triangular(a, b, lower, trans, unit_diagonal, b_ndim) if res is None else res


def cho_solve(c_and_lower, b, dims=None, b_ndim=None):
    """`x` with `a @ x = b` from the Cholesky factor `c` of `a`: `b` on `row`, `x` on `col`.

    `c_and_lower` is scipy's `(c, lower)` pair (`lower=True`: `a = c c^T`;
    `lower=False`: `a = c^T c`) or the factor alone, read as lower.

    >>> import dimgraph as dg, numpy as np
    >>> i, j = dg.Dim("i", size=2), dg.Dim("j", size=2)
    >>> upper = dg.constant(np.array([[2.0, 1.0], [0.0, 1.0]]), dims=(i, j))  # a = [[4, 2], [2, 2]]
    >>> dg.linalg.cho_solve((upper, False), dg.constant(np.array([6.0, 4.0]), dims=(i,)), dims=(i, j)).eval().values
    array([1., 1.])
    """
    c, lower = core.cholesky_pair("cho_solve", c_and_lower)
    first = lambda nd: SolveTriangular(lower, not lower, False, nd)  # noqa: E731  (lower: c y = b; upper: c^T y = b)
    y = _solve_like("cho_solve", first, c, b, dims)
    if y is None:
        return core.cho_solve((c, lower), b, b_ndim)
    c = _float(c)
    row, col = _core_dims("cho_solve", c, dims)
    op = SolveTriangular(lower, lower, False, 1)  # lower: c^T x = y; upper: c x = y
    return apply_blockwise(op, op.signature, [c, y], [(row, col), (col,)], [(col,)], name="cho_solve")


def diagonal(a, dims=None):
    """The diagonal of the matrix of `a`, on its `row` dim."""
    if not is_labeled(a):
        return core.diagonal(a)
    row, col = _core_dims("diagonal", a, dims)
    return apply_blockwise(core.Einsum("aa->a"), "(m,m)->(m)", [a], [(row, col)], [(row,)], name="diagonal")


def trace(a, dims=None):
    """The sum of the diagonal of the matrix of `a`."""
    if not is_labeled(a):
        return core.trace(a)
    row, col = _core_dims("trace", a, dims)
    return apply_blockwise(core.Einsum("aa->"), "(m,m)->()", [a], [(row, col)], [()], name="trace")
