"""The loop-nest printer: Elemwise, CAReduce and reduce-of-elemwise kernels as explicit loops.

A kernel is one loop nest over the output (or reduced input) shape in C order, so
the innermost loop is the contiguous one. Broadcasting is static: an input axis of
static size 1 is never advanced (index 0), every other axis must match at run
time (a `ShapeError` otherwise, as the python backend raises).

Each value (input load or scalar step) is computed at its own rank:
- it is emitted in the loop of the innermost axis it depends on (loop-invariant
  values sit outside the inner loops), and
- an expensive value that skips an outer axis (e.g. `log1p(b * b)` with `b` on
  the inner axis only) is computed once into a small temporary of its own rank
  before the main nest, instead of once per element of the full output.

Reduced outputs accumulate in a local when the reduced axes are the innermost
ones (no full-size temporary), or into the output array otherwise; a reduction
over the rows of a matrix with a few static columns keeps one local per column
(`column_reduce_kernel`).
"""

from __future__ import annotations

import numpy as np

from dimgraph.backends.numba.scalar import _cast_expr, np_type, render_step
from dimgraph.core.broadcast import mismatch_message
from dimgraph.core.scalar import ScalarOp, is_cheap


class _Src:
    def __init__(self):
        self.lines = []
        self.level = 1

    def __call__(self, line):
        self.lines.append("    " * self.level + line)


def _idx(names):
    return "[" + ", ".join(names) + "]" if names else "[()]"


def _identity(reducer, dtype):
    dtype = np.dtype(dtype)
    if reducer == "add":
        return "0"
    if reducer == "mul":
        return "1"
    if reducer == "and":
        return "True"
    if reducer == "or":
        return "False"
    if dtype.kind == "b":
        return "False" if reducer == "maximum" else "True"
    if dtype.kind == "f":
        return "-np.inf" if reducer == "maximum" else "np.inf"
    info = np.iinfo(dtype)
    return str(info.min if reducer == "maximum" else info.max)


_COMBINE = {
    "add": "({0} + {1})",
    "mul": "({0} * {1})",
    "maximum": "rt.maximum({0}, {1})",
    "minimum": "rt.minimum({0}, {1})",
    "and": "({0} and {1})",
    "or": "({0} or {1})",
}


def _combine(reducer, acc, val, dtype):
    if np.dtype(dtype).kind == "b" and reducer in ("add", "mul", "maximum", "minimum"):
        reducer = {"add": "or", "mul": "and", "maximum": "or", "minimum": "and"}[reducer]
    expr = _COMBINE[reducer].format(acc, val)
    if np.dtype(dtype).name in ("float64", "int64") and reducer in ("add", "mul", "maximum", "minimum"):
        return expr  # the accumulator and the value have the dtype: so does Numba's result
    return f"{np_type(dtype)}({expr})"


def guard_lines(checks, indent) -> list:
    """Lines testing `checks` [(condition, raise statement)]: one `if a or b:` per distinct raise.

    Numba lowers every `raise` site with its own exception constant and cleanup path: a
    31-input kernel compiled in 3 s with a guard per input, 1.6 s with one per error.
    Conditions keep their order, so the first failing check raises, as before.
    """
    by_raise = {}
    for cond, stmt in checks:
        by_raise.setdefault(stmt, []).append(cond)
    lines = []
    for stmt, conds in by_raise.items():
        test = conds[0] if len(conds) == 1 else " or ".join(f"({c})" for c in conds)
        lines += [f"{indent}if {test}:", f"{indent}    {stmt}"]
    return lines


def loop_kernel(
    in_bcast,
    in_dtypes,
    steps,
    outputs,
    op_name="Elemwise",
    gathered=None,
    scatter_at=None,
    reciprocals=False,
    more_indices=None,
) -> str:
    """Source of `def kernel(x0, x1, ...)` computing `steps` over inputs with broadcast patterns.

    in_bcast: per input a tuple of bools (True where the static size is 1).
    steps: flat scalar steps `(scalar_op, refs)`, refs < nin naming inputs.
    outputs: per output `(ref, None)` for an elementwise result,
        `(ref, (reducer, axes, dtype))` for a reduction of that value over `axes`, or
        (1-d loops) `(ref, ("scatter", dtype))` or `(ref, ("scatter", dtype, n))`: arguments
        `b{k}, i{k}` (and `i{k}_1 .. i{k}_{n-1}`) give a base array and one index array per axis
        of it, and the output is `b{k}` with `b{k}[i{k}[j], i{k}_1[j], ...] += value`.
    gathered: per input None, or the axis `a` along which it is read through the 1-d index
        array `x{v}` from a table `t{v}` (arguments after the inputs): the loop reads `t{v}` at
        its position with `j{a}` replaced by `x{v}[j{a}]` (IndexedLoop, GatherElemwise); the
        input's broadcast pattern is the table's with the index array's on axis `a`. Each
        index value is checked once: in the loop over axis 0 (`k{v}`), or for an inner axis
        into a small array of positions (`kp{v}`) before the loops.
    scatter_at: {scatter output k: gathered input v} where `i{k}` is `x{v}` (and so on per axis)
        and the base has the table's shape, so the positions checked for the read serve the write too.
    more_indices: (1-d loops) {gathered input v: m} where the table `t{v}` has 1 + m axes, read at
        `t{v}[x{v}[j], x{v}_1[j], ..., x{v}_m[j]]` (arguments after the tables, in input order).
    reciprocals: print divisions by loop-invariant values as products (see below).
    """
    nin = len(in_bcast)
    gathered = gathered or (None,) * nin
    more_indices = more_indices or {}
    used = {r for _, refs in steps for r in refs} | {ref for ref, _ in outputs}
    scatter_at = {k: v for k, v in (scatter_at or {}).items() if v in used}
    if len(op_name) > 60:
        op_name = op_name[:57] + "..."
    ndim = len(in_bcast[0]) if nin else 0
    # -- static facts per value: dtype, axes it varies over, expensive subtree
    dtypes = list(in_dtypes)
    axes = [frozenset(a for a, one in enumerate(b) if not one) for b in in_bcast]
    costly = [False] * nin
    exprs = [None] * nin
    names = [f"a{v}" for v in range(nin)]
    for op, refs in steps:
        v = len(dtypes)
        expr, dt = render_step(op, [names[r] for r in refs], [dtypes[r] for r in refs])
        dtypes.append(dt)
        exprs.append(expr)
        names.append(f"s{v - nin}")
        axes.append(frozenset().union(*[axes[r] for r in refs]))
        costly.append(not is_cheap(op) or any(costly[r] for r in refs))
    # A float division by a value that is the same for the whole nest (`(y - mu) / sigma`)
    # is printed as a product with the reciprocal, computed once (see `reciprocal_exact`).
    # The loop is then printed twice, which costs compile time: only the loops that reduce
    # or gather (a log-density and its gradient) ask for it.
    fast_divisions = {}
    for k, (op, refs) in enumerate(steps if reciprocals else ()):
        v = nin + k
        if op.name == "true_div" and dtypes[v] in ("float32", "float64") and not axes[refs[1]]:
            if dtypes[refs[0]] == dtypes[refs[1]] == dtypes[v]:
                fast_divisions[v] = render_step(_MUL, [names[refs[0]], f"q{refs[1]}"], [dtypes[v], dtypes[v]])[0]
    consumers = [[] for _ in dtypes]
    for k, (op, refs) in enumerate(steps):
        for r in refs:
            consumers[r].append(nin + k)
    out_refs = {ref for ref, _ in outputs}

    def is_prefix(s):
        return s == frozenset(range(max(s) + 1)) if s else True

    temps = [
        v
        for v in range(nin, len(dtypes))
        if costly[v] and not is_prefix(axes[v]) and (v in out_refs or any(axes[c] != axes[v] for c in consumers[v]))
    ]
    temp_set = set(temps)

    src = _Src()
    args = [f"x{k}" for k in range(nin)] + [f"t{k}" for k in range(nin) if gathered[k] is not None]
    args += [f"x{v}_{a}" for v, m in sorted(more_indices.items()) for a in range(1, m + 1)]
    for k, (_, red) in enumerate(outputs):
        if _is_scatter(red):
            args += [f"b{k}", f"i{k}"] + [f"i{k}_{a}" for a in range(1, _scatter_axes(red))]
    src.lines.append(f"def kernel({', '.join(args)}):")
    for k in range(nin):
        if gathered[k] is not None:
            src(f"tn{k} = t{k}.shape[{gathered[k]}]")
        for a in range(1, more_indices.get(k, 0) + 1):
            src(f"tn{k}_{a} = t{k}.shape[{a}]")

    def size(k, ax):
        if gathered[k] is None:
            return f"x{k}.shape[{ax}]"
        return f"x{k}.shape[0]" if gathered[k] == ax else f"t{k}.shape[{ax}]"

    # -- sizes and the run-time broadcast check
    checks = []
    for ax in range(ndim):
        owners = [k for k in range(nin) if not in_bcast[k][ax]]
        src(f"n{ax} = {size(owners[0], ax)}" if owners else f"n{ax} = 1")
        message = mismatch_message(op_name, f"axis {ax}")
        checks += [(f"{size(k, ax)} != n{ax}", f"raise ShapeError({message!r})") for k in owners[1:]]
    for v, m in sorted(more_indices.items()):
        if not in_bcast[v][0]:
            message = op_name + ": shape mismatch: indexing arrays could not be broadcast together"
            checks += [
                (f"x{v}_{a}.shape[0] != x{v}.shape[0]", f"raise IndexError({message!r})") for a in range(1, m + 1)
            ]
    for k, (ref, red) in enumerate(outputs):
        if _is_scatter(red):
            message = op_name + ": a scatter index array and the loop differ in length"
            names_k = [f"i{k}"] + [f"i{k}_{a}" for a in range(1, _scatter_axes(red))]
            checks += [(f"{i}.shape[0] != n0", f"raise ShapeError({message!r})") for i in names_k]
        elif red is not None and red[0] in ("maximum", "minimum") and red[1]:
            message = f"zero-size array to reduction operation {red[0]} which has no identity"
            checks += [(f"n{a} == 0", f"raise ValueError({message!r})") for a in red[1]]
    src.lines += guard_lines(checks, "    ")
    # a gather along an inner, varying axis: its index values checked once, before the loops
    inline = [g is not None and (g == 0 or in_bcast[k][g]) for k, g in enumerate(gathered)]
    for k, g in enumerate(gathered):
        if g is not None and not inline[k] and k in used:
            src(f"kp{k} = np.empty((x{k}.shape[0],), dtype=np.intp)")
            src(f"for jk in range(x{k}.shape[0]):")
            src(f"    kp{k}[jk] = rt_views.check_index(x{k}[jk], tn{k}, {g})")

    def shape_of(ax_set, keep=None):
        keep = range(ndim) if keep is None else keep
        entries = [f"n{a}" if a in ax_set else "1" for a in keep]
        return "(" + "".join(e + ", " for e in entries) + ")"

    def load(v, loop_axes):
        """The expression reading value v (an input or a temp) inside loops over `loop_axes`."""
        if ndim == 0:
            return f"{'x' if v < nin else 'p'}{v}.item()"
        if v < nin and gathered[v] is not None:  # the table at the checked position
            g = gathered[v]
            if v in more_indices:  # one checked position per axis of the table
                return f"t{v}" + _idx([f"k{v}"] + [f"k{v}_{a}" for a in range(1, more_indices[v] + 1)])
            at = f"k{v}" if inline[v] else f"kp{v}[j{g}]"
            return f"t{v}" + _idx([at if a == g else "0" if in_bcast[v][a] else f"j{a}" for a in range(ndim)])
        if v < nin:
            return f"x{v}" + _idx(["0" if in_bcast[v][a] else f"j{a}" for a in range(ndim)])
        return f"p{v}" + _idx([f"j{a}" if a in axes[v] else "0" for a in range(ndim)])

    def emit_nest(loop_axes, targets, stop, body_end, fast=None):
        """Loops over `loop_axes`, computing `targets` (and what they need), values at their own depth.

        `stop`: values read from memory (temps) instead of computed. `body_end(depth)` is
        called when entering each depth (0..len) and after leaving it, for stores.
        `fast`: {division step: its expression as a product with `q{divisor}`}; the loops are
        then printed twice, the product version taken when every reciprocal is exact enough.
        """
        need, stack = set(), list(targets)
        while stack:
            v = stack.pop()
            if v in need:
                continue
            need.add(v)
            if v >= nin and v not in stop:
                stack.extend(steps[v - nin][1])
        pos = {a: i for i, a in enumerate(loop_axes)}

        def depth(v):
            return 1 + max(pos[a] for a in axes[v]) if axes[v] else 0

        by_depth = [[] for _ in range(len(loop_axes) + 1)]
        # k{v}, the checked position of an index value (it may serve a scatter too): computed
        # once per index value, in the loop over the gathered axis, before the values that read it
        positions = [[] for _ in range(len(loop_axes) + 1)]
        for v in sorted(need):
            by_depth[depth(v)].append(v)
            if v < nin and inline[v]:
                g = gathered[v]
                positions[0 if in_bcast[v][g] else pos[g] + 1].append(v)

        def position(v):
            at = "0" if in_bcast[v][gathered[v]] else f"j{gathered[v]}"
            src(f"k{v} = rt_views.check_index(x{v}[{at}], tn{v}, {gathered[v]})")
            for a in range(1, more_indices.get(v, 0) + 1):
                src(f"k{v}_{a} = rt_views.check_index(x{v}_{a}[{at}], tn{v}_{a}, {a})")

        def values(d, expr_of):
            for v in positions[d]:
                if v not in by_depth[d]:  # read deeper in the nest
                    position(v)
            for v in by_depth[d]:
                if v in positions[d]:
                    position(v)
                if v < nin or v in stop:
                    src(f"{names[v]} = {load(v, loop_axes)}")
                else:
                    src(f"{names[v]} = {expr_of(v)}")

        def loops(expr_of):
            for d, axis in enumerate(loop_axes):
                src(f"for j{axis} in range(n{axis}):")
                src.level += 1
                body_end(d + 1, "enter")
                values(d + 1, expr_of)
            body_end(len(loop_axes), "inner")
            for d in reversed(range(1, len(loop_axes))):
                src.level -= 1
                body_end(d, "exit")
            if loop_axes:
                src.level -= 1

        body_end(0, "enter")
        values(0, exprs.__getitem__)
        divisions = [v for v in (fast or {}) if v in need and v not in stop and depth(v) > 0]
        if divisions:
            divisors = sorted({steps[v - nin][1][1] for v in divisions})
            for b in divisors:
                src(f"q{b} = {np_type(dtypes[b])}(1) / {names[b]}")
            exact = " and ".join(f"rt.reciprocal_exact({names[b]}, {_normal_range(dtypes[b])})" for b in divisors)
            src(f"if {exact}:")
            src.level += 1
            loops(lambda v: fast[v] if v in divisions else exprs[v])
            src.level -= 1
            src("else:")
            src.level += 1
            loops(exprs.__getitem__)
            src.level -= 1
        else:
            loops(exprs.__getitem__)
        if loop_axes:
            body_end(0, "exit")

    # -- temporaries of lower rank, computed before the main nest
    for t in temps:
        src(f"p{t} = np.empty({shape_of(axes[t])}, dtype={np_type(dtypes[t])})")
        t_axes = sorted(axes[t])

        def store_temp(d, when, t=t, t_axes=t_axes):
            if when == "inner":
                src(f"p{t}" + _idx([f"j{a}" if a in axes[t] else "0" for a in range(ndim)]) + f" = {names[t]}")

        emit_nest(t_axes, [t], temp_set - {t}, store_temp)

    # -- outputs
    # A costly sum over the innermost axis goes through a row buffer: the loop that fills
    # it has no loop-carried dependence, so LLVM vectorizes it (the math included).
    # Not in a loop with indexed reads or writes: it does not vectorize, and the buffer would be full size.
    indexed = any(g == ndim - 1 for g in gathered) or any(_is_scatter(red) for _, red in outputs)
    row_buffers = {
        k
        for k, (ref, red) in enumerate(outputs)
        if red is not None
        and red[0] == "add"
        and tuple(red[1]) == (ndim - 1,)
        and costly[ref]
        and np.dtype(red[2]).kind == "f"
        and not indexed
    }
    # A plain load summed over the innermost axis (x.sum(last dim), data.sel(...).sum("time")) is one call
    # of `rt.sum_row` on the row: its additions may be reassociated into vector partial sums.
    direct_rows = {
        k
        for k, (ref, red) in enumerate(outputs)
        if red is not None
        and red[0] == "add"
        and tuple(red[1]) == (ndim - 1,)
        and ref < nin
        and dtypes[ref] == red[2] == "float64"
        and not in_bcast[ref][ndim - 1]
        and gathered[ref] != ndim - 1
        and k not in row_buffers
        and not any(_is_scatter(r) for _, r in outputs)
    }

    def row_of(k, v):
        """The innermost row that value v (an input) is read from, at the current outer positions."""
        table, g = (f"t{v}", gathered[v]) if gathered[v] is not None else (f"x{v}", None)
        at = f"kr{k}" if g is not None and inline[v] else f"kp{v}[j{g}]"
        index = [at if a == g else "0" if in_bcast[v][a] else ":" if a == ndim - 1 else f"j{a}" for a in range(ndim)]
        return table + "[" + ", ".join(index) + "]"

    ret = []
    for k, (ref, red) in enumerate(outputs):
        if red is None:
            src(f"o{k} = np.empty({shape_of(range(ndim))}, dtype={np_type(dtypes[ref])})")
        elif _is_scatter(red):
            src(f"o{k} = b{k}.copy()")
            if k not in scatter_at:  # else the write reuses the gather's checked positions
                for a in range(_scatter_axes(red)):
                    src(f"on{k}{'_' + str(a) if a else ''} = o{k}.shape[{a}]")
        else:
            reducer, r_axes, out_dtype = red
            kept = [a for a in range(ndim) if a not in r_axes]
            if _suffix(r_axes, ndim):
                src(f"o{k} = np.empty({shape_of(range(ndim), kept)}, dtype={np_type(out_dtype)})")
            else:
                init = _identity(reducer, out_dtype)
                src(f"o{k} = np.full({shape_of(range(ndim), kept)}, {init}, dtype={np_type(out_dtype)})")
        if k in row_buffers:
            src(f"buf{k} = np.empty((n{ndim - 1},), dtype={np_type(red[2])})")
        ret.append(f"o{k}")

    def stores(d, when):
        for k, (ref, red) in enumerate(outputs):
            if red is None:
                if when == "inner":
                    src(f"o{k}" + _idx([f"j{a}" for a in range(ndim)]) + f" = {names[ref]}")
                continue
            if _is_scatter(red):
                if when == "inner":
                    val = _cast_expr(names[ref], dtypes[ref], red[1])
                    if k in scatter_at:
                        v = scatter_at[k]
                        at = ", ".join([f"k{v}"] + [f"k{v}_{a}" for a in range(1, more_indices.get(v, 0) + 1)])
                    else:
                        at = ", ".join(
                            f"rt_views.check_index(i{k}{suffix}[j0], on{k}{suffix}, {a})"
                            for a, suffix in enumerate([""] + [f"_{a}" for a in range(1, _scatter_axes(red))])
                        )
                    src(f"o{k}[{at}] += {val}")
                continue
            reducer, r_axes, out_dtype = red
            kept_idx = _idx([f"j{a}" for a in range(ndim) if a not in r_axes])
            val = _cast_expr(names[ref], dtypes[ref], out_dtype)
            if k in direct_rows:
                g = gathered[ref]
                if g is not None and inline[ref] and when == "enter" and d == (0 if in_bcast[ref][g] else g + 1):
                    # the row's checked position, once per index value (in the loop over the gathered axis)
                    src(f"kr{k} = rt_views.check_index(x{ref}[{'0' if in_bcast[ref][g] else f'j{g}'}], tn{ref}, {g})")
                if (when == "inner" and rows_only) or (when == "exit" and d == ndim - 1 and not rows_only):
                    src(f"o{k}{kept_idx} = rt.sum_row({row_of(k, ref)})")
                continue
            if k in row_buffers:
                last = ndim - 1
                if when == "inner":
                    src(f"buf{k}[j{last}] = {val}")
                if when == "exit" and d == last:
                    src(f"o{k}{kept_idx} = {np_type(out_dtype)}(rt.sum_buffer(buf{k}))")
            elif _suffix(r_axes, ndim):
                first = ndim - len(r_axes)
                if when == "enter" and d == first:
                    src(f"acc{k} = {np_type(out_dtype)}({_identity(reducer, out_dtype)})")
                if when == "inner":
                    src(f"acc{k} = {_combine(reducer, f'acc{k}', val, out_dtype)}")
                if (when == "exit" and d == first) or (when == "inner" and first == ndim):
                    src(f"o{k}{kept_idx} = acc{k}")
            elif when == "inner":
                src(f"o{k}{kept_idx} = {_combine(reducer, f'o{k}{kept_idx}', val, out_dtype)}")

    targets = [ref for k, (ref, _) in enumerate(outputs) if k not in direct_rows]
    rows_only = not targets  # every output is a row sum: no loop over the innermost axis at all
    emit_nest(list(range(ndim - 1 if rows_only else ndim)), targets, temp_set, stores, fast=fast_divisions)
    src(f"return {ret[0]}" if len(ret) == 1 else f"return {', '.join(ret)}")
    return "\n".join(src.lines) + "\n"


# Columns up to this many (a static count) are reduced over the rows with one accumulator each.
FEW_COLUMNS = 8


def column_reduce_kernel(reducer, in_dtype, out_dtype, n_columns, op_name) -> str:
    """Source of `def kernel(x0)` reducing the rows of a matrix with `n_columns` (static, few) columns.

    The loop nest would combine each element into the output in memory, a chain through
    the store of every column (2.2 us for (600, 3), against 0.8 us here): one accumulator
    per column, in registers, in one pass over the rows. Each column is combined in the
    same order as the nest does, so the result has the same bits.
    """
    out_type = np_type(out_dtype)
    src = _Src()
    src.lines.append("def kernel(x0):")
    src("n0 = x0.shape[0]")
    message = f"{op_name}: axis 1 of the input is not of its static size {n_columns}"
    checks = [(f"x0.shape[1] != {n_columns}", f"raise ShapeError({message!r})")]
    if reducer in ("maximum", "minimum"):
        empty = f"zero-size array to reduction operation {reducer} which has no identity"
        checks.append(("n0 == 0", f"raise ValueError({empty!r})"))
    src.lines += guard_lines(checks, "    ")
    for c in range(n_columns):
        src(f"acc{c} = {out_type}({_identity(reducer, out_dtype)})")
    src("for j0 in range(n0):")
    for c in range(n_columns):
        val = _cast_expr(f"x0[j0, {c}]", in_dtype, out_dtype)
        src(f"    acc{c} = {_combine(reducer, f'acc{c}', val, out_dtype)}")
    src(f"o0 = np.empty(({n_columns},), dtype={out_type})")
    for c in range(n_columns):
        src(f"o0[{c}] = acc{c}")
    src("return o0")
    return "\n".join(src.lines) + "\n"


_MUL = ScalarOp("mul")


def _normal_range(dtype):
    """The divisors whose reciprocal is a normal number of `dtype`: |b| in [tiny, 1 / tiny]."""
    tiny = np.finfo(dtype).tiny
    return f"{float(tiny)!r}, {float(1 / tiny)!r}"


def _is_scatter(red):
    return red is not None and red[0] == "scatter"


def _scatter_axes(red):
    """How many axes of its base a scatter sink indexes (one index array each)."""
    return red[2] if len(red) > 2 else 1


def _suffix(r_axes, ndim):
    return tuple(r_axes) == tuple(range(ndim - len(r_axes), ndim))
