"""Linear algebra: the product ops `MatMul` (NumPy matmul, batch broadcasting) and `Einsum`, and the functions.

The functions are `matmul`, `dot`, `tensordot`, `einsum` and the matrix
functions (`cholesky`, `solve`, ..., whose ops live in `dimgraph.core.matrix`)
mapped over leading batch axes with `Blockwise`; `cho_solve`, `trace` and
`diagonal` are graphs of other ops.

Batch axes broadcast as in Elemwise: only a static size 1 (or a missing
leading axis) stretches; an unknown size that turns out to be 1 against a
longer one is a run-time `ShapeError`. `Einsum` keeps its subscripts in one
normal form (explicit output, ellipses spelled out as letters, letters
renamed in order of appearance), so equal contractions are equal ops.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

import numpy as np

from dimgraph.core import operands
from dimgraph.core.basic import as_tensor, constant, is_float
from dimgraph.core.blockwise import blockwise
from dimgraph.core.broadcast import broadcast_shape, letter_sizes
from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.extra import arange
from dimgraph.core.graph import Op
from dimgraph.core.math import cast, eq, mul
from dimgraph.core.matrix import Cholesky, Det, Eigh, Inv, SlogDet, Solve, SolveTriangular
from dimgraph.core.reduce import sum as reduce_sum
from dimgraph.core.reduce import sum_to
from dimgraph.core.shape import build, product, static_or_symbolic, to_static
from dimgraph.core.shape_ops import broadcast_to, expand_dims, pin_shape, reshape, squeeze, transpose
from dimgraph.errors import ShapeError


def _broadcast_static(op_name, shapes, static_shapes):
    """Right-aligned broadcast of batch shapes; entries ints or symbolic."""
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for ax in range(ndim):
        cands = []
        for sh, st in zip(shapes, static_shapes):
            k = ax - (ndim - len(sh))
            if k >= 0:
                cands.append((sh[k], st[k]))
        known = {st for _, st in cands if st not in (None, 1)}
        if len(known) > 1:
            raise ShapeError(f"{op_name}: batch axes cannot broadcast: shapes {[tuple(st) for st in static_shapes]}")
        if known:
            out.append(known.pop())
        elif all(st == 1 for _, st in cands):
            out.append(1)
        else:
            out.append(next(e for e, st in cands if st is None))
    return tuple(out)


def matmul_batch(op, a_type, b_type, a_shape, b_shape):
    """The run-time batch shape of `a @ b` (the axes before the matrix ones), the contracted axes checked;
    only batch axes of static size 1 stretch."""
    if a_shape[-1] != (b_shape[0] if len(b_shape) == 1 else b_shape[-2]):
        raise ShapeError(f"matmul: the contracted axes differ: shapes {tuple(a_shape)} and {tuple(b_shape)}")
    statics, shapes = [], []
    for t, shape in ((a_type, a_shape), (b_type, b_shape)):
        statics.append(t.shape[:-2] if t.ndim > 1 else ())
        shapes.append(tuple(shape[:-2]) if len(shape) > 1 else ())
    return broadcast_shape(str(op), statics, shapes, axis_kind="batch axis")


@dataclass(frozen=True)
class MatMul(Op):
    """`a @ b` with NumPy semantics: 1-d operands are promoted and their axis dropped; batch axes broadcast."""

    def make_node(self, a, b):
        a, b = as_tensor(a), as_tensor(b)
        if a.type.ndim == 0 or b.type.ndim == 0:
            raise ValueError(f"matmul: operands must have at least 1 axis, got {a.type} and {b.type}")
        k_a = a.type.shape[-1]
        k_b = b.type.shape[0] if b.type.ndim == 1 else b.type.shape[-2]
        if k_a is not None and k_b is not None and k_a != k_b:
            raise ShapeError(f"matmul: the contracted axes differ: {k_a} in {a!r} and {k_b} in {b!r}")
        try:
            dtype = np.matmul.resolve_dtypes((np.dtype(a.type.dtype), np.dtype(b.type.dtype), None))[-1].name
        except TypeError as err:
            raise TypeError(f"matmul is not defined for dtypes {a.type.dtype} and {b.type.dtype}: {err}") from None
        return build(self, [a, b], [dtype])

    @staticmethod
    def _batch(x_type, shape):
        return tuple(shape[:-2]), tuple(x_type.shape[:-2])

    def infer_shape(self, inputs, input_shapes):
        a, b = inputs
        sa, sb = input_shapes
        ba, sta = self._batch(a.type, sa) if a.type.ndim > 1 else ((), ())
        bb, stb = self._batch(b.type, sb) if b.type.ndim > 1 else ((), ())
        batch = _broadcast_static("matmul", [ba, bb], [sta, stb])
        rows = (sa[-2],) if a.type.ndim > 1 else ()
        cols = (sb[-1],) if b.type.ndim > 1 else ()
        return [batch + rows + cols]

    def perform(self, node, inputs):
        a, b = inputs
        ta, tb = node.inputs[0].type, node.inputs[1].type
        matmul_batch(self, ta, tb, a.shape, b.shape)
        return [np.asarray(np.matmul(a, b), dtype=node.outputs[0].type.dtype)]

    def L_op(self, inputs, outputs, output_grads):
        """`g @ b^T` and `a^T @ g` on operands promoted to 2-d, summed over broadcast batch axes.

        A 1-d operand is promoted as NumPy does (a: a leading axis, b: a trailing one), the output
        gradient gets the dropped axes back, and the promoted axis is dropped from the result.
        """
        a, b = inputs
        (g,) = output_grads
        a2 = expand_dims(a, 0) if a.type.ndim == 1 else a
        b2 = expand_dims(b, 1) if b.type.ndim == 1 else b
        g2 = g
        if a.type.ndim == 1:
            g2 = expand_dims(g2, g2.type.ndim - (0 if b.type.ndim == 1 else 1))
        if b.type.ndim == 1:
            g2 = expand_dims(g2, g2.type.ndim)
        out = []
        if is_float(a):
            ga = sum_to(matmul(g2, _swap_last(b2)), a2)
            out.append(squeeze(ga, 0) if a.type.ndim == 1 else ga)
        else:
            out.append(None)
        if is_float(b):
            gb = sum_to(matmul(_swap_last(a2), g2), b2)
            out.append(squeeze(gb, 1) if b.type.ndim == 1 else gb)
        else:
            out.append(None)
        return out

    def __str__(self):
        return "MatMul"


def matmul(a, b):
    """Matrix product with NumPy's `matmul` rules (1-d operands, broadcasting batch axes).

    >>> import dimgraph as dg, numpy as np
    >>> a = dg.tensor("a", shape=(5, None, 3))
    >>> (a @ np.ones(3)).type.shape
    (5, None)
    """
    if operands.hands_to_labeled((a, b)):  # a DataArray operand: xarray's `@`, over dims
        return operands.LABELED["dot"](a, b)
    return MatMul()(a, b)


def _swap_last(x):
    nd = x.type.ndim
    return DimShuffle(nd, tuple(range(nd - 2)) + (nd - 1, nd - 2))(x)


def dot(a, b):
    """`np.dot`: scalars multiply, 1-d and 2-d operands use matmul, else contract a's last with b's second-to-last axis.

    >>> import dimgraph as dg, numpy as np
    >>> dg.core.dot(np.ones((2, 3)), np.ones(3)).eval().tolist()
    [3.0, 3.0]
    """
    a, b = as_tensor(a), as_tensor(b)
    if a.type.ndim == 0 or b.type.ndim == 0:
        return mul(a, b)
    if b.type.ndim <= 2:
        return matmul(a, b)
    return tensordot(a, b, axes=([a.type.ndim - 1], [b.type.ndim - 2]))


def tensordot(a, b, axes=2):
    """Sum of products over the given axes (as `np.tensordot`), through reshape and one matmul.

    >>> import dimgraph as dg, numpy as np
    >>> dg.core.tensordot(np.ones((2, 3, 4)), np.ones((3, 4, 5))).type.shape
    (2, 5)
    """
    a, b = as_tensor(a), as_tensor(b)
    if isinstance(axes, (int, np.integer)):
        n = int(axes)
        if n < 0 or n > min(a.type.ndim, b.type.ndim):
            raise ValueError(f"tensordot: axes={n} is out of range for {a.type} and {b.type}")
        axes_a, axes_b = list(range(a.type.ndim - n, a.type.ndim)), list(range(n))
    else:
        axes_a, axes_b = axes
        axes_a = [axes_a] if isinstance(axes_a, (int, np.integer)) else list(axes_a)
        axes_b = [axes_b] if isinstance(axes_b, (int, np.integer)) else list(axes_b)
    if len(axes_a) != len(axes_b):
        raise ValueError(f"tensordot: axes lists differ in length: {axes_a} and {axes_b}")
    axes_a = [int(x) % a.type.ndim if -a.type.ndim <= x < a.type.ndim else _bad_axis(x, a) for x in axes_a]
    axes_b = [int(x) % b.type.ndim if -b.type.ndim <= x < b.type.ndim else _bad_axis(x, b) for x in axes_b]
    for xa, xb in zip(axes_a, axes_b):
        sa, sb = a.type.shape[xa], b.type.shape[xb]
        if sa is not None and sb is not None and sa != sb:
            raise ShapeError(f"tensordot: shape mismatch for sum: axis {xa} of a has {sa}, axis {xb} of b has {sb}")
    free_a = [x for x in range(a.type.ndim) if x not in axes_a]
    free_b = [x for x in range(b.type.ndim) if x not in axes_b]
    sa, sb = static_or_symbolic(a), static_or_symbolic(b)
    at = transpose(a, free_a + axes_a)
    bt = transpose(b, axes_b + free_b)
    m = product([sa[x] for x in free_a])
    k = product([sa[x] for x in axes_a])
    n = product([sb[x] for x in free_b])
    out = matmul(reshape(at, (m, k)), reshape(bt, (k, n)))
    return reshape(out, tuple(sa[x] for x in free_a) + tuple(sb[x] for x in free_b))


def _bad_axis(x, v):
    raise ValueError(f"tensordot: axis {x} is out of range for {v!r} with {v.type.ndim} axes")


# ---------------------------------------------------------------------------
# einsum


def normalize_subscripts(subscripts, ndims):
    """The einsum subscripts in normal form: explicit output, no ellipsis, letters renamed by first use.

    >>> normalize_subscripts("...ij,...jk", (3, 2))
    'abc,cd->abd'
    """
    subscripts = subscripts.replace(" ", "")
    if "->" in subscripts:
        lhs, out = subscripts.split("->")
        explicit = True
    else:
        lhs, out, explicit = subscripts, None, False
    terms = lhs.split(",")
    if len(terms) != len(ndims):
        raise ValueError(f"einsum: {len(terms)} operand subscripts in {subscripts!r} but {len(ndims)} operands")
    used = set(subscripts) - set(",->.")
    bad = [c for c in used if c not in string.ascii_letters]
    if bad:
        raise ValueError(f"einsum: invalid subscript characters {bad} in {subscripts!r}")
    spare = [c for c in string.ascii_letters if c not in used]
    n_ell = 0
    for term, nd in zip(terms, ndims):
        if "..." in term:
            n_ell = max(n_ell, nd - len(term.replace("...", "")))
    ell_letters = spare[:n_ell]
    expanded = []
    for term, nd in zip(terms, ndims):
        if term.count("...") > 1 or "." in term.replace("...", ""):
            raise ValueError(f"einsum: invalid ellipsis in {term!r}")
        if "..." in term:
            k = nd - len(term.replace("...", ""))
            if k < 0:
                raise ValueError(f"einsum: operand subscripts {term!r} have more letters than the operand's {nd} axes")
            term = term.replace("...", "".join(ell_letters[n_ell - k :]))
        if len(term) != nd:
            raise ValueError(f"einsum: subscripts {term!r} name {len(term)} axes but the operand has {nd}")
        expanded.append(term)
    if explicit:
        if "..." in out:
            out = out.replace("...", "".join(ell_letters))
        elif n_ell:
            raise ValueError(f"einsum: output subscripts {out!r} must contain '...' when the inputs do")
        if len(set(out)) != len(out):
            raise ValueError(f"einsum: output subscripts {out!r} repeat a letter")
        missing = [c for c in out if not any(c in t for t in expanded)]
        if missing:
            raise ValueError(f"einsum: output letters {missing} do not appear in the inputs")
    else:
        counts = {}
        for t in expanded:
            for c in t:
                counts[c] = counts.get(c, 0) + 1
        out = "".join(ell_letters) + "".join(sorted(c for c, k in counts.items() if k == 1 and c not in ell_letters))
    rename = {}
    for c in "".join(expanded) + out:
        rename.setdefault(c, string.ascii_letters[len(rename)])
    return ",".join("".join(rename[c] for c in t) for t in expanded) + "->" + "".join(rename[c] for c in out)


def _letter_sizes(op_name, terms, shapes, static_shapes):
    """For each letter: its size (int or symbolic), the first known non-1 size winning."""
    sizes = {}
    for term, sh, st in zip(terms, shapes, static_shapes):
        for c, e, s in zip(term, sh, st):
            sizes.setdefault(c, []).append((e, s))
    out = {}
    for c, cands in sizes.items():
        known = {s for _, s in cands if s not in (None, 1)}
        if len(known) > 1:
            raise ShapeError(f"einsum: letter {c!r} has sizes {sorted(known)} across the operands ({op_name})")
        if known:
            out[c] = known.pop()
        elif all(s == 1 for _, s in cands):
            out[c] = 1
        else:
            out[c] = next(e for e, s in cands if s is None)
    return out


@dataclass(frozen=True)
class Einsum(Op):
    """`np.einsum` with normalised `subscripts` (see `normalize_subscripts`); size-1 axes broadcast."""

    subscripts: str

    @property
    def terms(self):
        return self.subscripts.split("->")[0].split(",")

    @property
    def output(self):
        return self.subscripts.split("->")[1]

    def make_node(self, *operands):
        operands = [as_tensor(o) for o in operands]
        terms = self.terms
        if len(terms) != len(operands) or any(len(t) != o.type.ndim for t, o in zip(terms, operands)):
            raise ValueError(f"{self}: operands {[str(o.type) for o in operands]} do not fit the subscripts")
        dtype = np.einsum(self.subscripts, *[np.zeros((1,) * o.type.ndim, o.type.dtype) for o in operands]).dtype.name
        return build(self, operands, [dtype])

    def infer_shape(self, inputs, input_shapes):
        sizes = _letter_sizes(self.subscripts, self.terms, input_shapes, [i.type.shape for i in inputs])
        return [tuple(sizes[c] for c in self.output)]

    def perform(self, node, inputs):
        terms = self.terms
        target = letter_sizes(str(self), terms, [v.type.shape for v in node.inputs], [x.shape for x in inputs])
        # letters repeated within one operand (diagonals) must not broadcast; give NumPy full sizes
        args = []
        for term, x in zip(terms, inputs):
            if len(set(term)) != len(term) and any(x.shape[k] != target[c] for k, c in enumerate(term)):
                x = np.broadcast_to(x, tuple(target[c] for c in term))
            args.append(x)
        return [np.asarray(np.einsum(self.subscripts, *args), dtype=node.outputs[0].type.dtype)]

    def L_op(self, inputs, outputs, output_grads):
        """For each operand, one einsum of the output gradient with the other operands, to its subscripts.

        Letters repeated within the operand (diagonals) get fresh letters tied to the first by
        identity matrices. A letter only this operand has is summed in the einsum and broadcast
        back; an axis of static size 1 that broadcasts against longer ones is summed (dropped from
        the einsum's output, or, on a diagonal, summed afterwards).
        """
        (g,) = output_grads
        terms, out_term = self.terms, self.output
        shapes = [static_or_symbolic(i) for i in inputs]
        sizes = _letter_sizes(self.subscripts, terms, shapes, [i.type.shape for i in inputs])
        used = set("".join(terms) + out_term)
        spare = iter(c for c in string.ascii_letters if c not in used)
        grads = []
        for k, (term, x) in enumerate(zip(terms, inputs)):
            if not is_float(x):
                grads.append(None)
                continue
            others = [(t, v) for j, (t, v) in enumerate(zip(terms, inputs)) if j != k] + [(out_term, g)]
            elsewhere = set("".join(t for t, _ in others))
            target, eyes, seen = [], [], set()
            only_here, dropped, post_sum = [], [], []
            for ax, c in enumerate(term):
                broadcast = x.type.shape[ax] == 1 and _static(sizes[c]) != 1
                if c in seen:
                    fresh = next(spare)
                    eyes.append((c + fresh, _eye(sizes[c], x.type.dtype)))
                    target.append(fresh)
                elif term.count(c) > 1:
                    seen.add(c)
                    target.append(c)
                elif c not in elsewhere:
                    only_here.append(ax)
                    continue
                elif broadcast:
                    dropped.append(ax)
                    continue
                else:
                    target.append(c)
                if broadcast:
                    post_sum.append(ax)
            operands = others + eyes
            spec = ",".join(t for t, _ in operands) + "->" + "".join(target)
            gx = einsum(spec, *[v for _, v in operands])
            if only_here or dropped:
                gx = expand_dims(gx, sorted(only_here + dropped))
            if post_sum:
                gx = reduce_sum(gx, axis=tuple(post_sum), keepdims=True)
            if any(s == 1 and t != 1 for s, t in zip(gx.type.shape, x.type.shape)):
                # letters only x has, or that every other operand has with static size 1
                gx = broadcast_to(gx, shapes[k])
            grads.append(pin_shape(gx.astype(x.type.dtype), x))
        return grads


def _static(entry):
    return to_static(entry) if not isinstance(entry, int) else entry


def _eye(n, dtype):
    """An n x n identity of `dtype` (a constant when n is static)."""
    if _static(n) is not None:
        return constant(np.eye(_static(n), dtype=dtype))
    r = arange(0, n, 1, dtype="int64")
    return eq(expand_dims(r, 1), expand_dims(r, 0)).astype(dtype)


def einsum(subscripts, *operands):
    """Einstein summation as `np.einsum` (implicit or explicit output, `...` for broadcast axes).

    >>> import dimgraph as dg, numpy as np
    >>> a = dg.tensor("a", shape=(None, 3))
    >>> y = dg.core.einsum("ij,j->i", a, np.arange(3.0))
    >>> y.owner.op.subscripts, y.eval({a: np.ones((2, 3))}).tolist()
    ('ab,b->a', [3.0, 3.0])
    """
    operands = [as_tensor(o) for o in operands]
    return Einsum(normalize_subscripts(subscripts, tuple(o.type.ndim for o in operands)))(*operands)


# -- matrix functions: the ops of `matrix.py` over batch axes (first), core axes last --


def _apply(op, *inputs):
    """`op` over the batch axes of `inputs`, cast first to one float dtype (ints become float64)."""
    inputs = [as_tensor(x) for x in inputs]
    for x in inputs:
        if np.dtype(x.type.dtype).kind == "c":
            raise TypeError(f"{type(op).__name__.lower()}: complex matrices are not supported, got {x!r}")
    dtype = np.result_type(*[x.type.dtype if np.dtype(x.type.dtype).kind == "f" else "float64" for x in inputs]).name
    return blockwise(op, op.signature, *[x if x.type.dtype == dtype else cast(x, dtype) for x in inputs])


def _b_ndim(b, b_ndim):
    if b_ndim is None:
        return 1 if as_tensor(b).type.ndim == 1 else 2
    if b_ndim not in (1, 2):
        raise ValueError(f"b_ndim must be 1 (a vector right-hand side) or 2 (a matrix), got {b_ndim!r}")
    return b_ndim


def cholesky(a, lower=True):
    """The Cholesky factor of each matrix in `a` (trailing two axes); NaNs where one is not positive definite.

    >>> import dimgraph as dg, numpy as np
    >>> a = dg.tensor("a", shape=(2, 2))
    >>> dg.function([a], dg.core.linalg.cholesky(a))(np.array([[4.0, 2.0], [2.0, 5.0]]))
    array([[2., 0.],
           [1., 2.]])
    """
    return _apply(Cholesky(lower), a)


def solve(a, b, b_ndim=None):
    """`x` with `a @ x = b`; `b` is a stack of vectors (`b_ndim=1`) or of matrices (default: 1 for a 1-d `b`, else 2).

    >>> import dimgraph as dg, numpy as np
    >>> a, b = dg.tensor("a", shape=(2, 2)), dg.tensor("b", shape=(2,))
    >>> dg.function([a, b], dg.core.linalg.solve(a, b))(np.diag([2.0, 4.0]), np.ones(2))
    array([0.5 , 0.25])
    """
    return _apply(Solve(_b_ndim(b, b_ndim)), a, b)


def solve_triangular(a, b, lower=True, trans=False, unit_diagonal=False, b_ndim=None):
    """`x` with `a @ x = b` (`trans=True`: `a.T @ x = b`) reading only the `lower` (or upper) triangle of `a`.

    >>> import dimgraph as dg, numpy as np
    >>> a, b = dg.tensor("a", shape=(2, 2)), dg.tensor("b", shape=(2,))
    >>> dg.function([a, b], dg.core.linalg.solve_triangular(a, b))(np.array([[2.0, 0.0], [1.0, 1.0]]), np.array([2.0, 3.0]))
    array([1., 2.])
    """
    return _apply(SolveTriangular(bool(lower), bool(trans), bool(unit_diagonal), _b_ndim(b, b_ndim)), a, b)


def cho_solve(c_and_lower, b, b_ndim=None):
    """`x` with `a @ x = b` from the Cholesky factor of `a`: scipy's `(c, lower)` pair, or a bare lower factor.

    `lower=True`: `a = c @ c.T`; `lower=False`: `a = c.T @ c` (scipy's convention). Two triangular solves.

    >>> import dimgraph as dg, numpy as np
    >>> c, b = dg.tensor("c", shape=(2, 2)), dg.tensor("b", shape=(2,))
    >>> upper = np.array([[2.0, 1.0], [0.0, 1.0]])  # a = upper.T @ upper = [[4, 2], [2, 2]]
    >>> dg.function([c, b], dg.core.linalg.cho_solve((c, False), b))(upper, np.array([6.0, 4.0]))
    array([1., 1.])
    """
    c, lower = cholesky_pair("cho_solve", c_and_lower)
    b_ndim = _b_ndim(b, b_ndim)
    # lower: c y = b, then c.T x = y; upper: c.T y = b, then c x = y
    y = solve_triangular(c, b, lower=lower, trans=not lower, b_ndim=b_ndim)
    return solve_triangular(c, y, lower=lower, trans=lower, b_ndim=b_ndim)


def cholesky_pair(what, c_and_lower):
    """`(factor, lower)` from scipy's `(c, lower)` pair, or from a bare factor (then lower)."""
    if isinstance(c_and_lower, (tuple, list)):
        if len(c_and_lower) != 2:
            raise TypeError(
                f"{what}: give the factor c, or scipy's pair (c, lower); got a sequence of {len(c_and_lower)} items"
            )
        c, lower = c_and_lower
        if not isinstance(lower, (bool, np.bool_, int, np.integer)) or lower not in (0, 1):
            raise TypeError(f"{what}: lower in (c, lower) must be a bool, got {lower!r}")
        return c, bool(lower)
    return c_and_lower, True


def inv(a):
    """The inverse of each matrix in `a`."""
    return _apply(Inv(), a)


def det(a):
    """The determinant of each matrix in `a`."""
    return _apply(Det(), a)


def slogdet(a):
    """`(sign, logabsdet)` of each matrix in `a`."""
    return tuple(_apply(SlogDet(), a))


def eigh(a, lower=True):
    """`(eigenvalues, eigenvectors)` of each symmetric matrix in `a` (ascending; vectors are columns)."""
    return tuple(_apply(Eigh(lower), a))


def diagonal(a):
    """The diagonal of each matrix in `a` (the trailing two axes), as a trailing axis."""
    return einsum("...ii->...i", _float_or_same(a))


def trace(a):
    """The sum of the diagonal of each matrix in `a`."""
    return einsum("...ii->...", _float_or_same(a))


def _float_or_same(a):
    a = as_tensor(a)
    if a.type.ndim < 2:
        raise ValueError(f"diagonal/trace: need at least 2 axes, got {a!r}")
    return a
