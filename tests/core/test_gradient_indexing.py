"""Gradients (`L_op`) of indexing: basic and advanced reads, set and inc, against finite differences.

Each test builds one graph structure per backend (index parts and index
arrays are graph inputs, sizes mostly unknown), so hypothesis varies sizes
(0 and 1 included), positions (negative ones, repeats), steps and data
without recompiling. See `vjp_checks` for the oracle and its tolerance.
"""

import numpy as np
import pytest
from hypothesis import strategies as st
from vjp_checks import NodeVJP, given

import dimgraph as dg
from dimgraph.core import inc_subtensor, set_subtensor

F64, I64 = "float64", "int64"
seeds = st.integers(0, 2**32 - 1)


def normal(seed, shape):
    return np.random.default_rng(seed).normal(size=shape)


@st.composite
def slice_parts(draw, n):
    """(start, stop, step) with negative and out-of-range bounds, as ints."""
    step = draw(st.sampled_from([1, 2, 3, -1, -2]))
    start = draw(st.integers(-n - 2, n + 2))
    stop = draw(st.integers(-n - 2, n + 2))
    return start, stop, step


# ---------------------------------------------------------------------------
# basic reads

STATIC_BASIC = {
    "rows": lambda x: x[1:4],
    "step_neg_int": lambda x: x[::-2, 1],
    "last": lambda x: x[-1],
    "newaxis_neg_slice": lambda x: x[None, :, -2:0:-1],
    "empty": lambda x: x[3:1],
    "ellipsis_step": lambda x: x[..., ::3],
    "point": lambda x: x[2, -1],
}


@pytest.mark.parametrize("name", sorted(STATIC_BASIC))
@given(seed=seeds)
def test_basic_static(backend, name, seed):
    case = NodeVJP(("basic", name), backend, STATIC_BASIC[name], [("x", (5, 4), F64)])
    case.check([normal(seed, (5, 4))], seed)


@given(data=st.data(), seed=seeds)
def test_basic_symbolic_bounds(backend, data, seed):
    """x[a:b:c, k] with every part an input and unknown sizes (0 and 1 included)."""

    def build(x, a, b, c, k):
        return x[a:b:c, k]

    specs = [("x", (None, None), F64), ("a", (), I64), ("b", (), I64), ("c", (), I64), ("k", (), I64)]
    case = NodeVJP("basic_symbolic", backend, build, specs)
    n = data.draw(st.integers(0, 5))
    m = data.draw(st.integers(1, 4))
    start, stop, step = data.draw(slice_parts(n))
    k = data.draw(st.integers(-m, m - 1))
    case.check([normal(seed, (n, m)), start, stop, step, k], seed)


CONSTANT_SLICES = {
    "tail": lambda x: x[1:],
    "head": lambda x: x[:-1],
    "last_cols": lambda x: x[:, -2:],
    "clamped": lambda x: x[-10:2],
    "empty": lambda x: x[:, 3:1],
}


@pytest.mark.parametrize("name", sorted(CONSTANT_SLICES))
@given(rows=st.integers(0, 5), cols=st.integers(0, 5), seed=seeds)
def test_constant_slice_of_unknown_sizes(backend, name, rows, cols, seed):
    """One constant-bound slice on an axis of unknown size (its gradient is g between zeros: a Join)."""
    case = NodeVJP(("const_slice", name), backend, CONSTANT_SLICES[name], [("x", (None, None), F64)])
    case.check([normal(seed, (rows, cols))], seed)


@given(n=st.integers(0, 4), seed=seeds)
def test_basic_gradient_is_scatter(backend, n, seed):
    """The gradient of x[::-2] is the cotangent placed back at the read positions, zeros elsewhere."""
    case = NodeVJP("basic_scatter", backend, lambda x: x[::-2], [("x", (None,), F64)])
    x = normal(seed, (n,))
    (g,) = case.check([x], seed)
    w = np.random.default_rng(seed).normal(size=x[::-2].shape)
    expected = np.zeros(n)
    expected[::-2] = w
    np.testing.assert_array_equal(g, expected)


# ---------------------------------------------------------------------------
# basic set / inc


@pytest.mark.parametrize("mode", ["set", "inc"])
@pytest.mark.parametrize("value", ["full", "row", "broadcast_row", "scalar"])
@given(data=st.data(), seed=seeds)
def test_basic_set_inc(backend, mode, value, data, seed):
    """x[a:b:c] set/inc by v (full, missing leading axis, static size-1 axis, or 0-d): grads to x and v."""
    fn = set_subtensor if mode == "set" else inc_subtensor
    v_shape = {"full": (None, 3), "row": (3,), "broadcast_row": (1, 3), "scalar": ()}[value]

    def build(x, v, a, b, c):
        return fn(x[a:b:c], v)

    specs = [("x", (None, 3), F64), ("v", v_shape, F64), ("a", (), I64), ("b", (), I64), ("c", (), I64)]
    case = NodeVJP(("basic_set_inc", mode, value), backend, build, specs)
    n = data.draw(st.integers(0, 5))
    start, stop, step = data.draw(slice_parts(n))
    sel = len(range(n)[start:stop:step])
    v = normal(seed + 1, {"full": (sel, 3), "row": (3,), "broadcast_row": (1, 3), "scalar": ()}[value])
    gx, gv = case.check([normal(seed, (n, 3)), v, start, stop, step], seed)
    if mode == "set":  # the overwritten region gets no gradient
        assert np.all(gx[start:stop:step] == 0)


# ---------------------------------------------------------------------------
# advanced reads


@st.composite
def positions(draw, n, shape):
    """Integer positions in [-n, n) of `shape` (repeats likely); empty when n == 0."""
    size = int(np.prod(shape))
    if n == 0:
        return np.zeros(shape if size == 0 else (0,) * len(shape), dtype=np.int64)
    flat = draw(st.lists(st.integers(-n, n - 1), min_size=size, max_size=size))
    return np.array(flat, dtype=np.int64).reshape(shape)


ADVANCED = {
    # name: (build, x static shape, index array static shapes)
    "rows": (lambda x, i: x[i], (None, None), [(None,)]),
    "cols": (lambda x, i: x[:, i], (None, None), [(None,)]),
    "vector": (lambda x, i: x[i], (None,), [(None,)]),
    "rows_2d_index": (lambda x, i: x[i], (None, None), [(None, None)]),
    "rows_then_slice": (lambda x, i: x[i, 1:], (None, None), [(None,)]),
    "pair": (lambda x, i, j: x[i, j], (None, None), [(None,), (None,)]),
    "outer_pair": (lambda x, i, j: x[i[:, None], j], (None, None), [(None,), (None,)]),
    "split_pair": (lambda x, i, j: x[i, :, j], (None, 2, None), [(None,), (None,)]),
}


def _draw_indices(data, name, x_shape):
    _, _, idx_shapes = ADVANCED[name]
    if name == "rows_2d_index":
        return [data.draw(positions(x_shape[0], (data.draw(st.integers(0, 3)), data.draw(st.integers(0, 3)))))]
    if name == "cols":
        return [data.draw(positions(x_shape[1], (data.draw(st.integers(0, 6)),)))]
    if name in ("pair", "split_pair"):
        k = data.draw(st.integers(0, 6))
        return [data.draw(positions(x_shape[0], (k,))), data.draw(positions(x_shape[-1], (k,)))]
    if name == "outer_pair":
        return [
            data.draw(positions(x_shape[0], (data.draw(st.integers(0, 4)),))),
            data.draw(positions(x_shape[1], (data.draw(st.integers(0, 4)),))),
        ]
    return [data.draw(positions(x_shape[0], (data.draw(st.integers(0, 6)),)))]


def _x_shape(data, name):
    x_static = ADVANCED[name][1]
    lo = 1 if name in ("pair", "split_pair", "outer_pair") else 0
    return tuple(s if s is not None else data.draw(st.integers(lo, 4)) for s in x_static)


@pytest.mark.parametrize("name", sorted(ADVANCED))
@given(data=st.data(), seed=seeds)
def test_advanced_read(backend, name, data, seed):
    """Integer-array reads with repeats and negative positions: the gradient accumulates as np.add.at."""
    build, x_static, idx_shapes = ADVANCED[name]
    specs = [("x", x_static, F64)] + [(f"i{k}", s, I64) for k, s in enumerate(idx_shapes)]
    case = NodeVJP(("advanced", name), backend, build, specs)
    x_shape = _x_shape(data, name)
    idx = _draw_indices(data, name, x_shape)
    x = normal(seed, x_shape)
    (g,) = case.check([x] + idx, seed)
    # exact oracle: the cotangent added at the read positions
    w = np.random.default_rng(seed).normal(size=build(x, *idx).shape)
    expected = np.zeros_like(x)
    key = {
        "rows": lambda i: (i,),
        "cols": lambda i: (slice(None), i),
        "vector": lambda i: (i,),
        "rows_2d_index": lambda i: (i,),
        "rows_then_slice": lambda i: (i, slice(1, None)),
        "pair": lambda i, j: (i, j),
        "outer_pair": lambda i, j: (i[:, None], j),
        "split_pair": lambda i, j: (i, slice(None), j),
    }[name](*idx)
    np.add.at(expected, key, w)
    np.testing.assert_allclose(g, expected, rtol=1e-12, atol=1e-12)


MASKS = {
    "full_mask": (lambda x, m: x[m], (None, None)),
    "row_mask": (lambda x, m: x[m], (None,)),
    "col_mask": (lambda x, m: x[:, m], (None,)),
}


@pytest.mark.parametrize("name", sorted(MASKS))
@given(data=st.data(), seed=seeds)
def test_boolean_mask_read(backend, name, data, seed):
    """Boolean masks given as data (the jax backend needs constant masks: see test_constant_mask_read)."""
    if backend == "jax":
        pytest.skip("jax cannot index with a mask computed from data (data-dependent shape)")
    build, m_static = MASKS[name]
    case = NodeVJP(("mask", name), backend, build, [("x", (None, None), F64), ("m", m_static, "bool")])
    shape = (data.draw(st.integers(0, 4)), data.draw(st.integers(0, 4)))
    m_shape = {"full_mask": shape, "row_mask": shape[:1], "col_mask": shape[1:]}[name]
    size = int(np.prod(m_shape))
    mask = np.array(data.draw(st.lists(st.booleans(), min_size=size, max_size=size)), dtype=bool)
    mask = mask.reshape(m_shape)
    x = normal(seed, shape)
    (g,) = case.check([x, mask], seed)
    sel = mask if name != "col_mask" else np.broadcast_to(mask, shape)
    sel = sel if name != "row_mask" else np.broadcast_to(mask[:, None], shape)
    assert np.all(g[~sel] == 0)


@pytest.mark.parametrize("mask", [[True, False, True], [False, False, False], [True, True, True]])
@given(seed=seeds)
def test_constant_mask_read(backend, mask, seed):
    m = np.array(mask)
    case = NodeVJP(("const_mask", tuple(mask)), backend, lambda x: x[m, 1:], [("x", (3, 4), F64)])
    case.check([normal(seed, (3, 4))], seed)


# ---------------------------------------------------------------------------
# advanced set / inc

ADV_UPDATE = {
    # name: (index builder, value static shape, value shape from (k positions, x shape n, m))
    "rows_full": (lambda x, i: x[i], (None, None), lambda k, n, m: (k, m)),
    "rows_row": (lambda x, i: x[i], (None,), lambda k, n, m: (m,)),
    "rows_col1": (lambda x, i: x[i], (None, 1), lambda k, n, m: (k, 1)),
    "rows_scalar": (lambda x, i: x[i], (), lambda k, n, m: ()),
    "cols_full": (lambda x, i: x[:, i], (None, None), lambda k, n, m: (n, k)),
    "pair_full": (lambda x, i: x[i, i[::-1]], (None,), lambda k, n, m: (k,)),
}


@pytest.mark.parametrize("mode", ["set", "inc"])
@pytest.mark.parametrize("name", sorted(ADV_UPDATE))
@given(data=st.data(), seed=seeds)
def test_advanced_set_inc(backend, mode, name, data, seed):
    """x[idx] set/inc by v with repeated positions: inc gathers for v; set gives v's gradient only to the
    write that was kept (the last, as NumPy), and none to x at the written positions."""
    index, v_static, v_shape = ADV_UPDATE[name]
    fn = set_subtensor if mode == "set" else inc_subtensor

    def build(x, v, i):
        return fn(index(x, i), v)

    specs = [("x", (None, None), F64), ("v", v_static, F64), ("i", (None,), I64)]
    case = NodeVJP(("adv_update", mode, name), backend, build, specs)
    n, m = data.draw(st.integers(1, 4)), data.draw(st.integers(1, 4))
    if name == "pair_full":
        m = n
    k = data.draw(st.integers(0, 6))
    i = data.draw(positions(m if name == "cols_full" else n, (k,)))
    x = normal(seed, (n, m))
    v = normal(seed + 1, v_shape(k, n, m))
    gx, gv = case.check([x, v, i], seed)
    if mode == "set" and name == "rows_full" and k:
        # only the last occurrence of each row position keeps its gradient
        rows = i % n
        last = {int(r): b for b, r in enumerate(rows)}
        for b, r in enumerate(rows):
            if last[int(r)] != b:
                assert np.all(gv[b] == 0)
        assert np.all(gx[rows] == 0)


def test_advanced_set_unique_constant_index_has_no_winner_mask():
    """Constant repeat-free positions skip the last-write bookkeeping (no extra scatter in the graph)."""
    x, v = dg.tensor("x", shape=(4, 3)), dg.tensor("v", shape=(2, 3))
    y = set_subtensor(x[[3, 1]], v)
    w = dg.tensor("w", shape=(4, 3))
    _, gv, _ = y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [w])
    ops = [type(n.op).__name__ for n in dg.core.toposort([gv])]
    assert ops.count("AdvancedIncSubtensor") == 0
    y2 = set_subtensor(x[[3, 3]], v)
    _, gv2, _ = y2.owner.op.L_op(y2.owner.inputs, y2.owner.outputs, [w])
    assert [type(n.op).__name__ for n in dg.core.toposort([gv2])].count("AdvancedIncSubtensor") == 1


# ---------------------------------------------------------------------------
# static types, integer inputs, and the hierarchical pattern


def test_integer_inputs_get_no_gradient():
    x = dg.tensor("x", shape=(None,), dtype="int64")
    i = dg.tensor("i", shape=(None,), dtype="int64")
    y = x[i]
    assert y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [dg.tensor("w", shape=(None,), dtype="int64")]) == [
        None,
        None,
    ]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gradient_types_follow_the_input(dtype):
    x = dg.tensor("x", shape=(5, None), dtype=dtype)
    v = dg.tensor("v", shape=(1, None), dtype=dtype)
    i = dg.tensor("i", shape=(None,), dtype="int64")
    for y in [x[1:3], x[i], set_subtensor(x[i], v), inc_subtensor(x[::2], v)]:
        w = dg.tensor("w", shape=y.type.shape, dtype=dtype)
        grads = y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [w])
        for inp, g in zip(y.owner.inputs, grads):
            if inp is x or inp is v:
                assert g.type.dtype == dtype and g.type.shape == inp.type.shape, (y.owner.op, inp, g)
            else:
                assert g is None


def test_group_index_gradient_is_a_printed_numba_scatter():
    """`mu[group_idx]`: the gradient is one AdvancedIncSubtensor with the read's index form, which the
    numba backend prints as a loop (no object-mode fallback)."""
    from dimgraph.backends import available_backends

    if "numba" not in available_backends():
        pytest.skip("numba backend not available")
    mu = dg.tensor("mu", shape=(None,))
    idx = dg.tensor("idx", shape=(None,), dtype="int64")
    y = mu[idx]
    w = dg.tensor("w", shape=(None,))
    (gmu, _) = y.owner.op.L_op(y.owner.inputs, y.owner.outputs, [w])
    f = dg.function([mu, idx, w], gmu, backend="numba")
    assert "objmode" not in (f.source or "")
    rng = np.random.default_rng(0)
    idx_v = rng.integers(0, 7, size=1000)
    w_v = rng.normal(size=1000)
    expected = np.zeros(7)
    np.add.at(expected, idx_v, w_v)
    np.testing.assert_allclose(f(np.zeros(7), idx_v, w_v), expected, rtol=1e-12)


@pytest.mark.parametrize("read", ["constant_position", "symbolic_column"])
def test_single_position_gradient_is_a_printed_numba_scatter(read):
    """`theta[2]` / `x[:, k]` (parameter unpacking): the gradient scatters through the advanced form with
    a 0-d position, which numba prints (a basic IncSubtensor would run in object mode)."""
    from dimgraph.backends import available_backends

    if "numba" not in available_backends():
        pytest.skip("numba backend not available")
    x = dg.tensor("x", shape=(None, None))
    k = dg.scalar("k", "int64")
    y = x[2] if read == "constant_position" else x[:, k]
    cost = ((y - 1.0) ** 2).sum()
    f = dg.function([x, k], dg.grad(cost, x), backend="numba")
    assert "objmode" not in (f.source or "")
    xv = np.random.default_rng(0).normal(size=(4, 3))
    expected = np.zeros_like(xv)
    if read == "constant_position":
        expected[2] = 2 * (xv[2] - 1)
    else:
        expected[:, -1] = 2 * (xv[:, -1] - 1)
    np.testing.assert_allclose(f(xv, -1), expected, rtol=1e-12)
