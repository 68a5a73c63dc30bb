"""Loop printing and strided views: what every C emitter family builds its kernels and plans from.

Kernels are plain strided loops over operands addressed through `Operands`
(`registry.py`); plans make each operand a strided NumPy view of the loop's
shape, a stretched axis having stride 0.
"""

from __future__ import annotations

from numpy.lib.stride_tricks import as_strided

# ---------------------------------------------------------------------------
# loop printing


def indent(lines, n=2):
    pad = " " * n
    return [pad + line for line in lines]


def nest(shape, strides, body, prefix="i"):
    """Nested loops over `shape` (C expressions); `strides[j]` lists operand j's stride per axis.

    `body(offsets)` gets the element offset expression of each operand.
    """
    lines, opened = [], 0
    offs = {j: "0" for j in strides}
    for a, n in enumerate(shape):
        lines += indent([f"for (int64_t {prefix}{a} = 0; {prefix}{a} < {n}; {prefix}{a}++) {{"], 2 * opened)
        opened += 1
        new = {}
        for j, st in strides.items():
            name = f"{prefix}q{j}_{a}"
            lines += indent([f"const int64_t {name} = {offs[j]} + {prefix}{a} * {st[a]};"], 2 * opened)
            new[j] = name
        offs = new
    lines += indent(body(offs), 2 * opened)
    for k in reversed(range(opened)):
        lines += indent(["}"], 2 * k)
    return lines


def loop(o, js, body, fast=True, shape_of=None, still=None):
    """A loop over the shape of operand `shape_of` (default: the first of `js`) for operands `js`,
    with a flat path when all are C-contiguous; `still[j]` lists axes operand j does not advance on
    (its static size 1 stretched), so it need not be a broadcast view."""
    j0 = js[0] if shape_of is None else shape_of
    still = still or {}
    nd = o.ndim(j0)
    strides = {j: ["0" if a in still.get(j, ()) else o.stride(j, a) for a in range(nd)] for j in js}
    general = nest([o.shape(j0, a) for a in range(nd)], strides, body)
    if not fast or nd == 0:
        return general
    conds = [f"dg_contig({nd}, {o.shape_ptr(j)}, {o.stride_ptr(j)})" for j in js]
    conds += [f"{o.shape(j0, a)} == 1" for j in js for a in still.get(j, ())]
    flat = [f"const int64_t n_ = {o.size(j0)};", "for (int64_t f_ = 0; f_ < n_; f_++) {"]
    flat += indent(body({j: "f_" for j in js})) + ["}"]
    return [f"if ({' && '.join(conds)}) {{"] + indent(flat) + ["} else {"] + indent(general) + ["}"]


def copy_code(o, src, dst, op="="):
    """dst[...] op= src[...] over their common shape, casting to dst's dtype."""

    def body(q):
        return [f"{o.ptr(dst)}[{q[dst]}] {op} ({o.ctype(dst)}){o.ptr(src)}[{q[src]}];"]

    return loop(o, [src, dst], body)


# ---------------------------------------------------------------------------
# plan helpers


def strided(base, shape, elem_strides):
    """A view of `base`'s memory with `shape` and strides counted in elements."""
    item = base.itemsize
    return as_strided(base, shape=tuple(shape), strides=tuple(int(s) * item for s in elem_strides), writeable=False)


def elem_strides(a):
    return [s // a.itemsize for s in a.strides]
