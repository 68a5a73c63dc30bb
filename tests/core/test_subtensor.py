"""Indexing against NumPy: basic (`Subtensor`), advanced (`AdvancedSubtensor`) and their set/inc ops.

Indices are drawn by hypothesis (NumPy's own `basic_indices` strategy for basic
indexing; integer arrays on one or several axes, adjacent or not, with slices,
ints and newaxis between them, and boolean masks for advanced indexing). Parts
of the index are randomly made symbolic (0-d int64 inputs, or index-array
inputs), and input sizes randomly declared unknown, so both the static and the
run-time shape paths are checked against the actual result.
"""

import numpy as np
import pytest
from conftest import BACKENDS
from core_checks import arrays, check_outputs, declared, shapes
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dimgraph as dg
from dimgraph.core import inc_subtensor, set_subtensor
from dimgraph.core.subtensor import AdvancedSubtensor, Subtensor, slice_length

# ---------------------------------------------------------------------------
# helpers: make parts of a NumPy index symbolic


class Symbolizer:
    """Turns ints in an index into graph inputs; collects (input, value) pairs."""

    def __init__(self, draw, p=True):
        self.draw, self.inputs, self.values, self.p = draw, [], [], p

    def scalar(self, v):
        if v is None or not self.p or not self.draw(st.booleans()):
            return v
        s = dg.tensor(f"s{len(self.inputs)}", shape=(), dtype=self.draw(st.sampled_from(["int64", "int32"])))
        self.inputs.append(s)
        self.values.append(np.asarray(v, dtype=s.type.dtype))
        return s

    def array(self, arr, static_one_axes=()):
        """An index array as a constant (NumPy array) or an input with some sizes declared unknown."""
        if not self.p or not self.draw(st.booleans()):
            return arr
        decl = tuple(s if (k in static_one_axes or self.draw(st.booleans())) else None for k, s in enumerate(arr.shape))
        v = dg.tensor(f"i{len(self.inputs)}", shape=decl, dtype=arr.dtype.name)
        self.inputs.append(v)
        self.values.append(arr)
        return v

    def index(self, index):
        items = index if isinstance(index, tuple) else (index,)
        out = []
        for it in items:
            if isinstance(it, slice):
                out.append(slice(self.scalar(it.start), self.scalar(it.stop), self.scalar(it.step)))
            elif isinstance(it, (int, np.integer)) and not isinstance(it, bool):
                out.append(self.scalar(int(it)))
            else:
                out.append(it)
        return tuple(out) if isinstance(index, tuple) else out[0]


def _normalize_for_add_at(index):
    """Boolean masks as their nonzero positions (what np.add.at needs)."""
    items = index if isinstance(index, tuple) else (index,)
    out = []
    for it in items:
        if isinstance(it, np.ndarray) and it.dtype == bool:
            out.extend(np.nonzero(it))
        else:
            out.append(it)
    return tuple(out)


# ---------------------------------------------------------------------------
# basic indexing


@st.composite
def basic_case(draw):
    shape = draw(shapes(0, 3, 0, 4))
    index = draw(hnp.basic_indices(shape, min_dims=0, allow_newaxis=True, allow_ellipsis=True))
    return shape, index


@given(basic_case(), st.data())
def test_basic_getitem(case, data):
    shape, index = case
    decl = data.draw(declared(shape))
    dtype = data.draw(st.sampled_from(["float64", "int8", "bool"]))
    x = dg.tensor("x", shape=decl, dtype=dtype)
    sym = Symbolizer(data.draw)
    y = x[sym.index(index)]
    a = data.draw(arrays(dtype, shape))
    expected = a[index]
    assert isinstance(y.owner.op, Subtensor)
    if None not in decl and not sym.inputs:
        assert y.type.shape == expected.shape  # fully static when every size and part is known
    check_outputs("python", [x, *sym.inputs], y, [a, *sym.values], expected, exact=True)


def test_basic_getitem_compiled_once(backend):
    """A fixed symbolic-slice graph over many data draws (shared compilation, every backend)."""
    x = dg.tensor("x", shape=(None, 3))
    start, stop, step = (dg.tensor(n, shape=(), dtype="int64") for n in ("start", "stop", "step"))
    outs = [x[start:stop:step, -1], x[::-1, 1:], x[None, 1, ...], x[start], x[:, stop:]]

    @given(st.integers(2, 5), st.integers(-7, 7), st.sampled_from([-3, -2, -1, 1, 2, 3]), st.data())
    def check(n, e, s, data):
        a = data.draw(arrays("float64", (n, 3)))
        b = data.draw(st.integers(-n, n - 1))
        expected = [a[b:e:s, -1], a[::-1, 1:], a[None, 1, ...], a[b], a[:, e:]]
        check_outputs(backend, [x, start, stop, step], outs, [a, b, e, s], expected, key=("basic_fixed",))

    check()


@given(
    st.integers(0, 12),
    st.one_of(st.none(), st.integers(-15, 15)),
    st.one_of(st.none(), st.integers(-15, 15)),
    st.one_of(st.none(), st.integers(-4, 4).filter(bool)),
)
def test_slice_length_matches_python(n, start, stop, step):
    assert slice_length(n, start, stop, step) == len(range(n)[start:stop:step])


def test_slice_length_symbolic_matches_python():
    n, b, e, s = (dg.tensor(k, shape=(), dtype="int64") for k in "nbes")
    cases = [(n, b, e, s), (n, None, e, -1), (n, b, None, 2), (n, -2, None, None), (n, b, e, None)]
    lengths = [slice_length(*c) for c in cases]
    f = dg.function(
        [n, b, e, s],
        lengths,
        backend="python",
    )

    @given(st.integers(0, 12), st.integers(-15, 15), st.integers(-15, 15), st.integers(-4, 4).filter(bool))
    def check(nv, bv, ev, sv):
        got = [int(v) for v in f(nv, bv, ev, sv)]
        want = [
            len(range(nv)[bv:ev:sv]),
            len(range(nv)[:ev:-1]),
            len(range(nv)[bv::2]),
            len(range(nv)[-2:]),
            len(range(nv)[bv:ev]),
        ]
        assert got == want

    check()


def test_constant_index_out_of_range_names_axis():
    x = dg.tensor("x", shape=(3, 4))
    with pytest.raises(IndexError, match="axis 1 with size 4"):
        x[0, 4]
    with pytest.raises(IndexError, match="axis 0 with size 3"):
        x[-4]
    with pytest.raises(IndexError, match="axis 1 with size 4"):
        x[:, [0, 5]]
    with pytest.raises(IndexError, match="too many indices"):
        x[0, 0, 0]
    with pytest.raises(IndexError, match="single ellipsis"):
        x[..., ...]
    with pytest.raises(ValueError, match="step cannot be zero"):
        x[::0]
    with pytest.raises(IndexError, match="boolean index did not match"):
        x[np.ones(2, bool)]


def test_runtime_index_out_of_range_is_index_error(backend):
    x = dg.tensor("x", shape=(None,))
    i = dg.tensor("i", shape=(), dtype="int64")
    idx = dg.tensor("idx", shape=(None,), dtype="int64")
    f = dg.function([x, i, idx], [x[i], x[idx]], backend=backend)
    np.testing.assert_allclose(f(np.arange(3.0), -3, np.array([2, 0]))[1], [2.0, 0.0])
    with pytest.raises(IndexError):
        f(np.arange(3.0), 3, np.array([0]))
    with pytest.raises(IndexError):
        f(np.arange(3.0), 0, np.array([3]))


def test_runtime_mask_of_another_length_is_index_error(backend):
    """A boolean mask shorter or longer than the axis it covers is refused (the C backend read a short one as a prefix)."""
    x, m = dg.tensor("x", shape=(None, 2)), dg.tensor("m", shape=(None,), dtype="bool")
    f = dg.function([x, m], [x[m], dg.core.set_subtensor(x[m], 0.0)], backend=backend)
    xv = np.arange(6.0).reshape(3, 2)
    got, put = f(xv, np.array([True, False, True]))
    np.testing.assert_array_equal(got, xv[[0, 2]])
    np.testing.assert_array_equal(put, [[0, 0], [2, 3], [0, 0]])
    for mv in (np.ones(2, bool), np.ones(4, bool)):
        with pytest.raises(IndexError, match="boolean index did not match"):
            f(xv, mv)


def test_index_str_and_equality():
    x = dg.tensor("x", shape=(None, None))
    a, b = x[1:, ::-1], x[1:, ::-1]
    assert a.owner.op == b.owner.op and hash(a.owner.op) == hash(b.owner.op)
    assert str(a.owner.op) == "Subtensor[1:, ::-1]"
    assert x[..., 0].owner.op == x[:, 0].owner.op
    assert x[dg.core.constant(np.int64(1))].owner.op == x[1].owner.op  # constants fold into the op


# ---------------------------------------------------------------------------
# advanced indexing


@st.composite
def advanced_case(draw):
    """x shape, a NumPy index with int arrays (broadcasting), maybe masks, slices, ints and newaxis."""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.integers(1, 4)) for _ in range(ndim))
    bshape = draw(shapes(0, 2, 1, 3))  # the broadcast shape of the index arrays
    n_arr = draw(st.integers(1, ndim))
    axes = sorted(draw(st.lists(st.integers(0, ndim - 1), min_size=n_arr, max_size=n_arr, unique=True)))
    items = []
    ones = {}
    for ax in range(ndim):
        if ax in axes:
            k = draw(st.integers(0, len(bshape)))
            ashape = tuple(s if draw(st.booleans()) else 1 for s in bshape[len(bshape) - k :])
            arr = draw(hnp.arrays(np.int64, ashape, elements=st.integers(-shape[ax], shape[ax] - 1)))
            ones[len(items)] = [j for j, s in enumerate(ashape) if s == 1]
            items.append(arr)
        else:
            kind = draw(st.sampled_from(["slice", "int", "full"]))
            if kind == "slice":
                items.append(slice(draw(st.integers(-4, 4)), None, draw(st.sampled_from([None, 1, 2, -1]))))
            elif kind == "int":
                items.append(draw(st.integers(-shape[ax], shape[ax] - 1)))
            else:
                items.append(slice(None))
    for _ in range(draw(st.integers(0, 1))):
        pos = draw(st.integers(0, len(items)))
        items.insert(pos, None)
        ones = {(k + 1 if k >= pos else k): v for k, v in ones.items()}
    if draw(st.booleans()) and len(items) > 1 and items[-1] is not None and isinstance(items[-1], slice):
        items = items[:-1] + [Ellipsis]  # an ellipsis standing for the trailing axes
    return shape, tuple(items), ones


@given(advanced_case(), st.data())
def test_advanced_getitem(case, data):
    shape, index, ones = case
    decl = data.draw(declared(shape))
    x = dg.tensor("x", shape=decl, dtype="int32")
    sym = Symbolizer(data.draw)
    dg_index = tuple(sym.array(it, ones[k]) if isinstance(it, np.ndarray) else it for k, it in enumerate(index))
    y = x[dg_index]
    a = data.draw(arrays("int32", shape))
    expected = a[index]
    # 0-d index arrays alone are integers (basic indexing), as in NumPy
    advanced = any(isinstance(it, np.ndarray) and it.ndim for it in index)
    assert isinstance(y.owner.op, AdvancedSubtensor if advanced else Subtensor)
    if None not in decl and not sym.inputs:
        assert y.type.shape == expected.shape
    check_outputs("python", [x, *sym.inputs], y, [a, *sym.values], expected, exact=True)


@given(st.data())
def test_boolean_mask(data):
    shape = data.draw(shapes(1, 3, 0, 4))
    k = data.draw(st.integers(1, len(shape)))
    mask = data.draw(hnp.arrays(np.bool_, shape[:k]))
    lead = data.draw(st.booleans()) and len(shape) > k
    x = dg.tensor("x", shape=data.draw(declared(shape)))
    m = dg.tensor("m", shape=data.draw(declared(mask.shape)), dtype="bool")
    a = data.draw(arrays("float64", shape))
    outs = [x[m], x[mask]]
    expected = [a[mask], a[mask]]
    if lead:  # a mask after a full slice
        mask2 = data.draw(hnp.arrays(np.bool_, shape[1:2]))
        outs.append(x[:, mask2])
        expected.append(a[:, mask2])
    assert outs[1].type.shape[0] == int(mask.sum())  # a constant mask has a static count
    check_outputs("python", [x, m], outs, [a, mask], expected, exact=True)


def test_advanced_fixed_graph(backend):
    """Common cases in one compiled function: one array on any axis, adjacent arrays, separated arrays, a mask."""
    x = dg.tensor("x", shape=(None, 4, None))
    i = dg.tensor("i", shape=(None,), dtype="int64")
    j = dg.tensor("j", shape=(2, 1), dtype="int32")
    m = dg.tensor("m", shape=(None,), dtype="bool")
    outs = [x[i], x[:, [0, 3]], x[..., i], x[i, 1:, i], x[j, :, i], x[0, :, j], x[m], x[:, j, i]]

    @given(st.integers(1, 3), st.integers(1, 3), st.data())
    def check(n0, n2, data):
        n = min(n0, n2)
        a = data.draw(arrays("float64", (n0, 4, n2)))
        iv = data.draw(hnp.arrays(np.int64, (n,), elements=st.integers(0, n - 1)))
        jv = data.draw(hnp.arrays(np.int32, (2, 1), elements=st.integers(0, n - 1)))
        mv = data.draw(hnp.arrays(np.bool_, (n0,)))
        expected = [a[iv], a[:, [0, 3]], a[..., iv], a[iv, 1:, iv], a[jv, :, iv], a[0, :, jv], a[mv], a[:, jv, iv]]
        check_outputs(backend, [x, i, j, m], outs, [a, iv, jv, mv], expected, key=("adv_fixed",), exact=True)

    check()


def test_index_arrays_of_unknown_size_do_not_stretch(backend):
    x = dg.tensor("x", shape=(4, 4))
    i = dg.tensor("i", shape=(None,), dtype="int64")
    f = dg.function([x, i], x[i, [0, 1, 2]], backend=backend)
    np.testing.assert_allclose(f(np.eye(4), np.array([0, 1, 2])), [1.0, 1.0, 1.0])
    with pytest.raises(dg.ShapeError):
        f(np.eye(4), np.array([1]))
    with pytest.raises(IndexError, match="shape mismatch"):
        x[np.zeros(2, int), np.zeros(3, int)]


# ---------------------------------------------------------------------------
# set / inc


@st.composite
def value_for(draw, target_shape, dtype):
    """A value broadcasting to `target_shape`: maybe fewer axes, maybe size-1 axes (declared static)."""
    k = draw(st.integers(0, len(target_shape)))
    vshape = tuple(s if draw(st.booleans()) else 1 for s in target_shape[len(target_shape) - k :])
    vals = draw(arrays(dtype, vshape))
    decl = tuple(s if s == 1 or draw(st.booleans()) else None for s in vshape)
    return vals, decl


@pytest.mark.parametrize("mode", ["set", "inc"])
@given(case=basic_case(), data=st.data())
def test_basic_set_inc(mode, case, data):
    _check_basic_set_inc("python", mode, case, data)


@pytest.mark.parametrize("backend", [b for b in BACKENDS if b != "python"])
@pytest.mark.parametrize("mode", ["set", "inc"])
@settings(max_examples=8)  # a compile per example
@given(case=basic_case(), data=st.data())
def test_basic_set_inc_compiled(backend, mode, case, data):
    _check_basic_set_inc(backend, mode, case, data)


def _check_basic_set_inc(backend, mode, case, data):
    shape, index = case
    x = dg.tensor("x", shape=data.draw(declared(shape)))
    sym = Symbolizer(data.draw)
    sub = x[sym.index(index)]
    a = data.draw(arrays("float64", shape))
    vals, vdecl = data.draw(value_for(a[index].shape, "float64"))
    v = dg.tensor("v", shape=vdecl)
    y = (set_subtensor if mode == "set" else inc_subtensor)(sub, v)
    expected = a.copy()
    if mode == "set":
        expected[index] = vals
    else:
        expected[index] += vals
    assert y.type.shape == x.type.shape
    check_outputs(backend, [x, v, *sym.inputs], y, [a, vals, *sym.values], expected)


@pytest.mark.parametrize("mode", ["set", "inc"])
@given(case=advanced_case(), data=st.data())
def test_advanced_set_inc(mode, case, data):
    shape, index, ones = case
    x = dg.tensor("x", shape=data.draw(declared(shape)), dtype="int64")
    sym = Symbolizer(data.draw)
    dg_index = tuple(sym.array(it, ones[k]) if isinstance(it, np.ndarray) else it for k, it in enumerate(index))
    sub = x[dg_index]
    a = data.draw(arrays("int64", shape))
    vals, vdecl = data.draw(value_for(a[index].shape, "int64"))
    v = dg.tensor("v", shape=vdecl, dtype="int64")
    y = (set_subtensor if mode == "set" else inc_subtensor)(sub, v)
    expected = a.copy()
    if mode == "set":
        # with repeated positions NumPy keeps the last write: compare only when positions are unique
        pos = np.arange(a.size).reshape(shape)[index]
        if len(np.unique(pos)) != pos.size:
            return
        expected[index] = vals
    else:
        # repeated positions accumulate; values broadcast explicitly because NumPy 2.4's ufunc.at
        # mis-adds values that broadcast over index axes (np.add.at([0], [[0, 0], [0, 0]], [5, 3]) != 16)
        np.add.at(expected, _normalize_for_add_at(index), np.broadcast_to(vals, a[index].shape))
    check_outputs("python", [x, v, *sym.inputs], y, [a, vals, *sym.values], expected)


def test_set_inc_fixed_graph(backend):
    x = dg.tensor("x", shape=(None, 3))
    i = dg.tensor("i", shape=(None,), dtype="int64")
    v = dg.tensor("v", shape=(None, 3))
    m = dg.tensor("m", shape=(None,), dtype="bool")
    outs = [
        inc_subtensor(x[i], v),
        set_subtensor(x[1:, ::2], 5.0),
        inc_subtensor(x[i, 0], 1),
        set_subtensor(x[m], 0.0),
        inc_subtensor(x[:, None, -1], 2.5),
    ]

    @given(st.integers(2, 4), st.integers(0, 4), st.data())
    def check(n, k, data):
        a = data.draw(arrays("float64", (n, 3)))
        iv = data.draw(hnp.arrays(np.int64, (k,), elements=st.integers(-n, n - 1)))
        vv = data.draw(arrays("float64", (k, 3)))
        mv = data.draw(hnp.arrays(np.bool_, (n,)))
        e = [a.copy() for _ in outs]
        np.add.at(e[0], iv, vv)
        e[1][1:, ::2] = 5.0
        np.add.at(e[2], (iv, 0), 1.0)
        e[3][mv] = 0.0
        e[4][:, None, -1] += 2.5
        check_outputs(backend, [x, i, v, m], outs, [a, iv, vv, mv], e, key=("setinc_fixed",))

    check()


def test_set_inc_errors_and_dtypes():
    x = dg.tensor("x", shape=(3, 4), dtype="int32")
    with pytest.raises(TypeError, match="indexed tensor"):
        set_subtensor(x, 1)
    with pytest.raises(TypeError, match="same_kind"):
        set_subtensor(x[0], dg.tensor("f", shape=(4,)))
    with pytest.raises(TypeError, match="same_kind"):
        inc_subtensor(x[0], 1.5)
    with pytest.raises(ValueError, match="cannot broadcast|has 3 axes"):
        set_subtensor(x[0], dg.tensor("w", shape=(3,), dtype="int32"))
    with pytest.raises(ValueError):
        set_subtensor(x[0], dg.tensor("w", shape=(1, 1, 4), dtype="int32"))
    y = set_subtensor(x[0], dg.tensor("w", shape=(4,), dtype="int8"))  # a same_kind cast
    assert y.type == x.type
    assert inc_subtensor(x[:, [0, 0]], 1).type == x.type


def test_value_of_unknown_size_does_not_stretch(backend):
    x = dg.tensor("x", shape=(3,))
    v = dg.tensor("v", shape=(None,))
    f = dg.function([x, v], [set_subtensor(x[:], v), inc_subtensor(x[[0, 1, 2]], v)], backend=backend)
    f(np.zeros(3), np.ones(3))
    with pytest.raises(dg.ShapeError):
        f(np.zeros(3), np.ones(1))


def test_zero_d_reads_come_back_as_zero_d_arrays(backend):
    """A read of one element is a 0-d array of the input's dtype on every backend (not a Python scalar)."""
    x = dg.tensor("x", shape=(3,), dtype="int16")
    i = dg.tensor("i", shape=(), dtype="int64")
    m = dg.tensor("m", shape=(3, 4), dtype="int16")
    f = dg.function([x, i, m], [x[1], x[i], m[i, -1], m[i][2]], backend=backend)
    out = f(np.arange(3, dtype=np.int16), np.array(2), np.arange(12, dtype=np.int16).reshape(3, 4))
    for value, expected in zip(out, [1, 2, 11, 10]):
        assert isinstance(value, np.ndarray) and value.shape == () and value.dtype == np.int16
        assert value == expected


def test_zero_d_advanced_reads_are_zero_d(backend):
    """Integer-array indexing with 0-d index arrays gives a 0-d result, as NumPy."""
    from dimgraph.core import subtensor as S

    x = dg.tensor("x", shape=(3,))
    i = dg.tensor("i", shape=(), dtype="int64")
    m = dg.tensor("m", shape=(3, 4))
    outs = [S.AdvancedSubtensor((S.ARRAY,))(x, i), S.AdvancedSubtensor((S.ARRAY, S.ARRAY))(m, i, i)]
    f = dg.function([x, i, m], outs, backend=backend, rewrites="none")
    a, k, b = np.arange(3.0), np.array(2), np.arange(12.0).reshape(3, 4)
    for value, expected in zip(f(a, k, b), [a[k], b[k, k]]):
        assert isinstance(value, np.ndarray) and value.shape == () and value == expected
