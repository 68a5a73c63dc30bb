"""The numba backend's jitted graph (`graphjit.py`), flat entry and C-callable logp + gradient (`flatjit.py`).

Values are checked against the python backend (the NumPy reference); the tiers by what a
function reports (`f.summary()`, `f.timings`) and by which entry its calls take.
"""

import ctypes
import time

import numba
import numpy as np
import pytest
import xarray as xr
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import dimgraph as dg
from dimgraph.backends.numba import flatjit, graphjit, threads
from dimgraph.backends.numba.ops import numba_kernel, objmode_kernel

county, obs = dg.Dim("county", size=4), dg.Dim("obs", size=9)
MU, LOG_S, LOG_SY = dg.labeled("mu", dims=()), dg.labeled("log_s", dims=()), dg.labeled("log_sy", dims=())
Z = dg.labeled("z", dims=(county,))
IDX = dg.labeled("idx", dims=(obs,), dtype="int64")
Y = dg.labeled("y", dims=(obs,))
PARAMS = [MU, LOG_S, Z, LOG_SY]
# A varying-intercept model: views, DimShuffles, 0-d arithmetic (HalfNormal's support checks), a gather, sums.
A = MU + dg.exp(LOG_S) * Z
COST = (
    dg.dist.normal(A.isel(county=IDX), dg.exp(LOG_SY)).logp(Y).sum()
    + dg.dist.normal(0.0, 1.0).logp(Z).sum()
    + dg.dist.normal(0.0, 5.0).logp(MU)
    + dg.dist.halfnormal(1.0).logp(dg.exp(LOG_S))
    + LOG_S
    + dg.dist.halfnormal(2.0).logp(dg.exp(LOG_SY))
    + LOG_SY
)
DATA = {"idx": np.array([0, 1, 2, 3, 0, 1, 2, 3, 3]), "y": np.linspace(-1.0, 2.0, 9)}


@pytest.fixture(scope="module")
def flat_fns():
    """The model's flat value-and-gradient, jitted at the first call and on the python backend."""
    jitted = dg.flat_value_and_grad(COST, PARAMS, inputs=[IDX, Y], backend="numba", jit_graph=True)
    reference = dg.flat_value_and_grad(COST, PARAMS, inputs=[IDX, Y], backend="python")
    return jitted, reference


@given(arrays(np.float64, 7, elements=st.floats(-3, 3)))
def test_the_jitted_flat_entry_matches_the_python_backend(flat_fns, theta):
    jitted, reference = flat_fns
    value, grad = jitted(theta, **DATA)
    assert jitted._entry is not None and "the jitted graph" in jitted.function.summary()
    want_value, want_grad = reference(theta, **DATA)
    assert isinstance(value, float) and value == pytest.approx(want_value, rel=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-11, atol=1e-12)


def test_the_entries_refuse_other_types_by_a_typed_error(flat_fns):
    """The jitted graph and the flat entry refuse types they were not compiled for by dimgraph's
    `NoMatchingEntry` (no message text read), which the calls answer by their checked path."""
    jitted, reference = flat_fns
    theta = np.linspace(-1, 1, 7).astype(np.float32)
    jitted(theta.astype(np.float64), **DATA)
    arrays = jitted.data.arrays(DATA)
    with pytest.raises(dg.errors.NoMatchingEntry, match="No matching definition"):
        jitted._with_data(arrays)(theta)
    params = [a.astype(np.float32) for a in jitted.layout.arrays(theta.astype(np.float64))]
    jitted_graph = []
    jitted.function.tiers.promote(lambda fast, *_: jitted_graph.append(fast))  # (ready: called at once)
    with pytest.raises(dg.errors.NoMatchingEntry):
        jitted_graph[0](*params, *arrays)
    want = reference(theta, **DATA)
    for value, grad in (jitted.bind(**DATA)(theta), jitted(theta, **DATA)):
        assert value == pytest.approx(want[0], rel=1e-12)
        np.testing.assert_allclose(grad, want[1], rtol=1e-11, atol=1e-12)


def test_the_jitted_graph_runs_no_node_by_perform(flat_fns):
    jitted, _ = flat_fns
    assert jitted.function.timings["perform"] == ()
    assert "run by Python perform: none" in jitted.function.summary()


def test_the_flat_entry_keeps_the_checks_and_conversions(flat_fns):
    jitted, reference = flat_fns
    theta = np.linspace(-1, 1, 7)
    want = reference(theta, **DATA)
    # other dtypes, DataArrays and a non-contiguous theta take the general path, with the same result
    labeled = {"idx": xr.DataArray(DATA["idx"].astype(np.int32), dims="obs"), "y": list(DATA["y"])}
    for th, data in ((theta, labeled), (np.repeat(theta, 2)[::2], DATA), (theta.tolist(), DATA)):
        value, grad = jitted(th, **data)
        assert value == pytest.approx(want[0], rel=1e-12)
        np.testing.assert_allclose(grad, want[1], rtol=1e-11, atol=1e-12)
    with pytest.raises(dg.InputError, match="'y'"):
        jitted(theta, idx=DATA["idx"], y=np.zeros(8))
    with pytest.raises(dg.InputError, match="missing inputs \\['y'\\]"):
        jitted(theta, idx=DATA["idx"])
    with pytest.raises(dg.InputError, match="expected a vector of 7"):
        jitted(np.zeros(6), **DATA)
    with pytest.raises(IndexError, match="input 'idx': index 7 is out of bounds for dim 'county' with size 4"):
        jitted(theta, idx=np.full(9, 7), y=DATA["y"])


def test_the_flat_entry_binds_the_last_calls_data(flat_fns):
    """A sampler passes the same arrays at every call: they stay bound to the entry, their later writes seen."""
    jitted, reference = flat_fns
    theta = np.linspace(-1, 1, 7)
    data = {"idx": DATA["idx"].copy(), "y": DATA["y"].copy()}
    jitted(theta, **data)  # (the first call of the function jits the graph; the entry takes the next ones)
    jitted(theta, **data)
    call = jitted._bound[0]
    assert jitted(theta, **data) == (
        pytest.approx(reference(theta, **data)[0], rel=1e-12),
        pytest.approx(reference(theta, **data)[1]),
    )
    assert jitted._bound[0] is call  # the same arrays: nothing converted or checked again
    data["y"][:] = np.arange(9.0)  # written in place: the bound entry reads the new values
    data["idx"][0] = 3
    value, grad = jitted(theta, **data)
    want_value, want_grad = reference(theta, **data)
    assert value == pytest.approx(want_value, rel=1e-12) and jitted._bound[0] is call
    np.testing.assert_allclose(grad, want_grad, rtol=1e-11, atol=1e-12)
    value, grad = jitted(theta, idx=data["idx"], y=data["y"] * 2)  # another array: bound in its place
    assert jitted._bound[0] is not call and jitted._bound[1][1][1] is not data["y"]
    assert value == pytest.approx(reference(theta, idx=data["idx"], y=data["y"] * 2)[0], rel=1e-12)
    held = jitted._bound
    value, _ = jitted(theta, idx=data["idx"].tolist(), y=data["y"])  # converted data: a copy, not held
    assert jitted._bound is held and value == pytest.approx(reference(theta, **data)[0], rel=1e-12)
    data["idx"][0] = 7  # out of the county dim: the bound entry's IndexError names the input
    with pytest.raises(IndexError, match="input 'idx': index 7 is out of bounds for dim 'county' with size 4"):
        jitted(theta, **data)


def test_bind_calls_the_compiled_entry_on_theta_alone(flat_fns):
    jitted, reference = flat_fns
    logp = jitted.bind(**DATA)
    theta = np.linspace(-1, 1, 7)
    want_value, want_grad = reference(theta, **DATA)
    for th in (theta, theta, theta.tolist(), theta.astype(np.float32).astype(np.float64), np.repeat(theta, 2)[::2]):
        value, grad = logp(th)  # the compiled entry; a list or a strided vector take the checked path
        assert value == pytest.approx(want_value, rel=1e-6) and np.allclose(grad, want_grad, rtol=1e-6)
    assert logp._call is not None and logp._call.args[-len(DATA) :][0] is DATA["idx"]  # bound as they are: no copy
    with pytest.raises(dg.InputError, match=r"theta: expected a vector of 7 values .*got shape \(8,\)"):
        logp(np.zeros(8))  # refused by the entry, named by the checked path
    with pytest.raises(dg.InputError, match="theta: expected real numbers"):
        logp(np.zeros(7, dtype=complex))
    with pytest.raises(IndexError, match="input 'idx': index 7 is out of bounds for dim 'county' with size 4"):
        jitted.bind(idx=np.full(9, 7), y=DATA["y"])(theta)


def test_a_bound_array_reshaped_in_place_is_checked_again():
    house, item = dg.Dim("house"), dg.Dim("item")  # sizes known only from the data
    mu = dg.labeled("mu", dims=())
    x, y = dg.labeled("x", dims=(house, item)), dg.labeled("y", dims=(house,))
    fn = dg.flat_value_and_grad(
        ((y - mu * x.sum("item")) ** 2).sum(), [mu], inputs=[x, y], backend="numba", jit_graph=True
    )
    xv, yv = np.ones((4, 3)), np.arange(4.0)
    for _ in range(2):
        assert fn(np.array([1.0]), x=xv, y=yv)[0] == pytest.approx(float(((yv - 3.0) ** 2).sum()))
    assert fn._bound is not None
    xv.shape = (3, 4)  # the same object, now 3 houses: the size check runs again
    with pytest.raises(dg.InputError, match="disagree on the size of dim 'house'"):
        fn(np.array([1.0]), x=xv, y=yv)


def test_the_flat_entry_checks_dataarray_labels():
    house = dg.Dim("house")  # a coord-less dim of run-time size: labels of DataArrays must agree
    mu = dg.labeled("mu", dims=())
    x, y = dg.labeled("x", dims=(house,)), dg.labeled("y", dims=(house,))
    fn = dg.flat_value_and_grad(((y - mu * x) ** 2).sum(), [mu], inputs=[x, y], backend="numba", jit_graph=True)
    xv, yv = np.arange(4.0), np.arange(4.0) * 2
    assert fn(np.array([1.0]), x=xv, y=yv) == (pytest.approx(14.0), pytest.approx(np.array([-28.0])))
    assert fn._entry is not None
    value, grad = fn(np.array([1.0]), x=xr.DataArray(xv, dims="house"), y=xr.DataArray(yv, dims="house"))
    assert value == 14.0 and grad.tolist() == [-28.0]
    with pytest.raises(dg.InputError, match="label dim 'house' differently"):
        fn(np.array([1.0]), x=xr.DataArray(xv, dims="house", coords={"house": [0, 1, 2, 3]}),
           y=xr.DataArray(yv, dims="house", coords={"house": [3, 2, 1, 0]}))  # fmt: skip
    with pytest.raises(dg.InputError, match="disagree on the size of dim 'house'"):
        fn(np.array([1.0]), x=xv, y=yv[:3])


def test_the_c_callable_logp_and_gradient_match_the_python_call(flat_fns):
    jitted, reference = flat_fns
    c = jitted.cfunc(**DATA)
    ptr = ctypes.POINTER(ctypes.c_double)
    for theta in (np.zeros(7), np.linspace(-2, 1, 7)):
        grad, logp = np.full(7, np.nan), np.full(1, np.nan)
        args = (theta.ctypes.data_as(ptr), grad.ctypes.data_as(ptr), logp.ctypes.data_as(ptr), c.data)
        assert c.ctypes(7, *args) == 0
        want_value, want_grad = reference(theta, **DATA)
        assert logp[0] == pytest.approx(want_value, rel=1e-12)
        np.testing.assert_allclose(grad, want_grad, rtol=1e-11, atol=1e-12)
    assert c.ctypes(6, *args) == -1  # the wrong size: refused (fatal, in nutpie's convention), nothing written
    # the address is the same function, callable from C through ctypes' own prototype
    proto = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64, ptr, ptr, ptr, ctypes.c_void_p)
    theta = np.full(7, 0.25)
    grad, logp = np.empty(7), np.empty(1)
    assert (
        proto(c.address)(7, theta.ctypes.data_as(ptr), grad.ctypes.data_as(ptr), logp.ctypes.data_as(ptr), c.data) == 0
    )
    assert logp[0] == pytest.approx(reference(theta, **DATA)[0], rel=1e-12)
    assert "int64 n, const double* x, double* grad, double* logp, void* data" in c.signature


def test_the_c_callable_function_says_when_a_point_is_not_finite():
    """Return codes in nutpie's convention: 3 when the gradient, 4 when only the log density is not finite
    (positive: the sampler rejects the point and goes on); both are written."""
    g = dg.Dim("g", size=2)
    mu, floor = dg.labeled("mu", dims=(g,)), dg.labeled("floor", dims=())
    fn = dg.flat_value_and_grad(dg.log(mu).sum() + dg.log(floor), [mu], inputs=[floor], backend="numba", jit_graph=True)
    ptr = ctypes.POINTER(ctypes.c_double)

    def call(c, theta):
        grad, logp = np.full(2, 7.0), np.full(1, 7.0)
        code = c.ctypes(2, theta.ctypes.data_as(ptr), grad.ctypes.data_as(ptr), logp.ctypes.data_as(ptr), c.data)
        return code, logp[0], grad

    fine = fn.cfunc(floor=1.0)
    code, logp, grad = call(fine, np.array([1.0, 2.0]))
    assert code == 0 and logp == pytest.approx(np.log(2.0)) and grad.tolist() == [1.0, 0.5]
    code, logp, grad = call(fine, np.array([0.0, 2.0]))
    assert code == 3 and logp == -np.inf and grad[0] == np.inf
    code, logp, grad = call(fn.cfunc(floor=0.0), np.array([1.0, 2.0]))
    assert code == 4 and logp == -np.inf and grad.tolist() == [1.0, 0.5]


def test_the_c_callable_function_reuses_the_flat_entry_compiled_for_a_read_only_constant():
    """A big constant is a read-only array: the C function reads its copy typed so (`as_readonly`), so the
    flat entry and the jitted graph compile once, for the Python and the C entry both; a matrix parameter's
    gradient is copied into the flat vector in C order."""
    row, col = dg.Dim("row", size=3), dg.Dim("col", size=40)
    w = dg.labeled("w", dims=(row, col))
    y = dg.labeled("y", dims=(col,))
    weights = dg.constant(np.linspace(0.5, 2.0, 120).reshape(3, 40), dims=(row, col))  # too large to print
    cost = -(((w * weights).sum("row") - y) ** 2).sum() - (w**2).sum()
    fn = dg.flat_value_and_grad(cost, [w], inputs=[y], backend="numba", jit_graph=True)
    reference = dg.flat_value_and_grad(cost, [w], inputs=[y], backend="python")
    data = {"y": np.linspace(-1.0, 1.0, 40)}
    theta = np.linspace(-1.0, 1.0, 120)
    value, grad = fn(theta, **data)
    c = fn.cfunc(**data)
    ptr = ctypes.POINTER(ctypes.c_double)
    c_grad, c_logp = np.empty(120), np.empty(1)
    assert c.ctypes(120, theta.ctypes.data_as(ptr), c_grad.ctypes.data_as(ptr), c_logp.ctypes.data_as(ptr), c.data) == 0
    want_value, want_grad = reference(theta, **data)
    assert c_logp[0] == value and value == pytest.approx(want_value, rel=1e-12)
    np.testing.assert_array_equal(c_grad, grad)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-11, atol=1e-12)
    flat = c._cfunc._pyfunc.__globals__["flat"]  # the flat entry the C function calls: compiled for the same types
    assert flat.signatures == fn._entry.func.signatures and len(flat.signatures) == 1
    graph_address, table, big = flat.signatures[0][:3]  # the graph's address, its kernels' addresses, the constant
    assert graph_address == numba.int64 and table == numba.int64[::1]
    assert not big.mutable  # the big constant, read-only as passed


def _defined(library):
    """The names of the functions a compiled library's LLVM module defines."""
    return [
        line.split("@", 1)[1].split("(", 1)[0]
        for line in library.get_llvm_str().splitlines()
        if line.startswith("define")
    ]


def test_each_layer_calls_the_one_below_by_address_without_linking_its_code(monkeypatch, tmp_path):
    """The flat entry calls the jitted graph, and the C function the flat entry, through the callee's native
    entry point (`native.call`): neither compiles nor holds the code under it again, results are the
    graph's bit for bit, and a kernel's error reaches the caller with its message through both layers."""
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", str(tmp_path))  # nothing cached: every layer compiles here
    jitted = dg.flat_value_and_grad(COST, PARAMS, inputs=[IDX, Y], backend="numba", jit_graph=True)
    theta = np.linspace(-1.0, 1.0, 7)
    value, grad = jitted(theta, **DATA)
    c = jitted.cfunc(**DATA)
    tiers = jitted.function._compiled.tiers
    flat = jitted._entry.func
    (flat_sig,) = flat.signatures
    flat_code = _defined(flat.overloads[flat_sig].library)
    c_code = _defined(c._cfunc._library)
    assert any("dimgraph_generated_f_" in name for name in flat_code)
    assert not any("dimgraph_generated_g_" in name or "dimgraph_generated_k_" in name for name in flat_code)
    assert not any("dimgraph_generated_" in name for name in c_code if "logp_dlogp" not in name)
    # the graph's own result, bit for bit, from the flat entry and the C function
    cuts = np.cumsum([0, 1, 1, 4, 1])
    params = [theta[a:b].reshape(s) for a, b, s in zip(cuts[:-1], cuts[1:], [(), (), (4,), ()])]
    out = tiers._entry(*params, *DATA.values())
    assert value == out[0][()] and grad.tolist() == np.concatenate([np.ravel(g) for g in out[1:]]).tolist()
    ptr = ctypes.POINTER(ctypes.c_double)
    c_grad, c_logp = np.empty(7), np.empty(1)
    args = (theta.ctypes.data_as(ptr), c_grad.ctypes.data_as(ptr), c_logp.ctypes.data_as(ptr), c.data)
    assert c.ctypes(7, *args) == 0 and c_logp[0] == value and c_grad.tolist() == grad.tolist()
    # a bad position, met by the gather kernel: the flat entry raises its error; the C function says so
    bad = dict(DATA, idx=np.array([0, 1, 2, 3, 0, 1, 2, 3, 9]))
    with pytest.raises(IndexError, match="9"):
        jitted._entry(*bad.values(), theta)
    bound_idx = c._arrays[len(tiers.bigs)]  # the first data array, after the graph's table and constants
    assert bound_idx.tolist() == DATA["idx"].tolist()
    bound_idx[-1] = 9  # the C function reads the bound array in place: past `cfunc`'s checks
    assert c.ctypes(7, *args) == flatjit.FAILED
    bound_idx[-1] = 3
    assert c.ctypes(7, *args) == 0 and c_logp[0] == value


def test_cfunc_errors():
    python = dg.flat_value_and_grad(COST, PARAMS, inputs=[IDX, Y], backend="python")
    with pytest.raises(NotImplementedError, match="needs the numba backend.*'python'"):
        python.cfunc(**DATA)
    numba_fn = dg.flat_value_and_grad(COST, PARAMS, inputs=[IDX, Y], backend="numba", jit_graph=False)
    with pytest.raises(dg.InputError, match=r"missing \['y'\], unexpected \['w'\]"):
        numba_fn.cfunc(idx=DATA["idx"], w=1.0)
    with pytest.raises(dg.InputError, match="'y'"):
        numba_fn.cfunc(idx=DATA["idx"], y=np.zeros(3))


def _wait_for(f, state, seconds=120):
    tiers = f._compiled.tiers
    deadline = time.monotonic() + seconds
    while tiers.state != state and time.monotonic() < deadline:
        time.sleep(0.02)
    return tiers.state


def test_calls_switch_to_the_jitted_graph_once_hot(monkeypatch, tmp_path):
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", str(tmp_path))  # nothing cached: the jitted graph compiles
    monkeypatch.setattr(graphjit, "HOT_CALLS", 3)
    x = dg.tensor("x", shape=(None, 3))
    s = dg.scalar("s")
    f = dg.function([x, s], [(x.T * s).sum(axis=0), dg.exp(s) + 1.0], backend="numba")
    xv = np.arange(12.0).reshape(4, 3)
    for _ in range(3):
        f(xv, 0.5)
    assert "driver" in f.summary()
    assert _wait_for(f, "jitted") == "jitted"
    assert f._fast is f._compiled.tiers._entry and f.timings["jit graph"] > 0
    want = [(xv.T * 0.5).sum(axis=0), np.exp(0.5) + 1.0]
    for got, w in zip(f(xv, 0.5), want):
        np.testing.assert_allclose(got, w, rtol=1e-15)
    # types it was not compiled for (Fortran order, float32 data) run the driver: no compile on the hot path
    for data in (np.asfortranarray(xv), xv.astype(np.float32), xv[:, ::1][::2]):
        np.testing.assert_allclose(f(data, np.float64(0.5))[0], (np.asarray(data, float).T * 0.5).sum(axis=0))
    assert len(f._compiled.tiers._graph.signatures) == 1
    # the same graph compiled again takes the jitted graph from the disk cache at its first call
    g = dg.function([x, s], [(x.T * s).sum(axis=0), dg.exp(s) + 1.0], backend="numba")
    g(xv, 0.5)
    assert g._compiled.tiers.state == "jitted" and g._compiled.tiers.calls == 1


def test_a_graph_whose_kernels_split_over_threads_stays_on_the_driver(monkeypatch):
    monkeypatch.setattr(graphjit, "HOT_CALLS", 2)
    monkeypatch.setattr(threads, "MIN_WORK", 10)
    monkeypatch.setattr(dg.config, "threads", 2)
    x = dg.tensor("x", shape=(None,))
    f = dg.function([x], dg.tanh(x) * 2.0, backend="numba")
    xv = np.linspace(-1, 1, 100)
    for _ in range(4):
        np.testing.assert_allclose(f(xv), np.tanh(xv) * 2.0, rtol=1e-15)
    assert f._compiled.tiers.state == "driver" and "split over threads" in f.summary()


def test_jit_graph_false_stays_on_the_driver_and_a_bad_value_is_refused(monkeypatch):
    monkeypatch.setattr(graphjit, "HOT_CALLS", 2)
    x = dg.scalar("x")
    f = dg.function([x], x * 3.0, backend="numba", jit_graph=False)
    for _ in range(3):
        assert float(f(2.0)) == 6.0
    assert f._compiled.tiers.state == "driver" and "the Python driver" in f.summary()
    with pytest.raises(TypeError, match="jit_graph must be None, True or False, got 'yes'"):
        dg.function([x], x * 3.0, backend="numba", jit_graph="yes")


EINSUMS = [  # (subscripts, operand shapes): contractions, a diagonal, an outer product, size-1 broadcasts, a full sum
    ("ij,jk->ik", [(3, 4), (4, 2)]),
    ("aa->a", [(3, 3)]),
    ("aab,b->", [(2, 2, 3), (3,)]),
    ("i,j->ij", [(3,), (2,)]),
    ("ij,ij->i", [(3, 1), (1, 4)]),
    ("ijk,kj->i", [(2, 3, 4), (4, 3)]),
]


@pytest.mark.parametrize("subscripts, shapes", EINSUMS)
def test_einsums_in_the_jitted_graph_match_numpy(subscripts, shapes):
    operands = [dg.tensor(f"x{k}", shape=s) for k, s in enumerate(shapes)]
    f = dg.function(operands, dg.core.einsum(subscripts, *operands) * 2.0, backend="numba", jit_graph=True)
    values = [np.random.default_rng(k).normal(size=s) for k, s in enumerate(shapes)]
    np.testing.assert_allclose(f(*values), 2.0 * np.einsum(subscripts, *values), rtol=1e-13)
    assert f.timings["perform"] == () and f._compiled.tiers.state == "jitted"


class _Doubled(dg.core.graph.Op):
    """An op registered here with an object-mode numba entry only (every op of dimgraph's has a nopython
    form, `tests/test_registries.py`): how a node without one is named."""

    def make_node(self, x):
        return dg.core.graph.Apply(self, [x], [x.type])

    def perform(self, node, inputs):
        return [inputs[0] * 2.0]


@numba_kernel.register(_Doubled)
def _doubled(op, node):
    return objmode_kernel(op, node)


def test_a_node_without_a_nopython_form_is_named_and_warned_about():
    x = dg.tensor("x", shape=(3,))
    with pytest.warns(dg.PerformanceWarning, match="_Doubled"):
        f = dg.function([x], _Doubled()(x) + 1.0, backend="numba", jit_graph=True)
    xv = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(f(xv), xv * 2.0 + 1.0)
    assert f.timings["perform"] == ("_Doubled",) and "run by Python perform: _Doubled" in f.summary()
    # by default such a graph stays on the driver, which runs the node by its perform
    g = dg.function([x], _Doubled()(x) + 1.0, backend="numba")
    assert not g._compiled.tiers.available


def test_a_hot_function_warns_about_nodes_run_by_perform(monkeypatch):
    monkeypatch.setattr(graphjit, "HOT_CALLS", 3)
    x = dg.tensor("x", shape=(3, 4))
    f = dg.function([x], _Doubled()(x) * 2.0, backend="numba")
    xv = np.arange(12.0).reshape(3, 4)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", dg.PerformanceWarning)
        for _ in range(2):  # a few calls stay quiet
            np.testing.assert_array_equal(f(xv), xv * 4.0)
    with pytest.warns(dg.PerformanceWarning, match="_Doubled"):
        f(xv)
    assert f.timings["perform"] == ("_Doubled",) and "_Doubled" in f.summary()


def test_einsums_and_indexing_once_without_a_nopython_form_run_jitted():
    """A boolean einsum and two index arrays (issue 37: they ran by `perform`) are nopython kernels now."""
    a, b = dg.tensor("a", shape=(3, 3), dtype="bool"), dg.tensor("b", shape=(3,), dtype="bool")
    x = dg.tensor("x", shape=(3, 4))
    i, j = dg.tensor("i", shape=(2,), dtype="int64"), dg.tensor("j", shape=(2,), dtype="int64")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", dg.PerformanceWarning)
        f = dg.function(
            [a, b, x, i, j], [dg.core.einsum("ij,j->i", a, b), x[i, j] * 2.0], backend="numba", jit_graph=True
        )
        av, bv = np.eye(3, dtype=bool), np.array([True, False, True])
        xv, iv, jv = np.arange(12.0).reshape(3, 4), np.array([0, 2]), np.array([1, 3])
        got = f(av, bv, xv, iv, jv)
    np.testing.assert_array_equal(got[0], np.einsum("ij,j->i", av, bv))
    np.testing.assert_array_equal(got[1], xv[iv, jv] * 2.0)
    assert f.timings["perform"] == () and f._compiled.tiers.state == "jitted"


_V, _W, _U = dg.tensor("v", shape=(None, 1)), dg.tensor("w", shape=()), dg.tensor("u", shape=(None,))
_N = dg.tensor("n", shape=(), dtype="int64")
# broadcasts of run-time sizes (not folded): a length-1 axis stretched, a leading axis added, a 0-d value
_BROADCASTS = [
    dg.core.broadcast_to(_V, (2, dg.core.shape_of(_V)[0], _N)),
    dg.core.broadcast_to(_W, (_N,)),
    dg.core.broadcast_to(_U, (_N, 3)),
    dg.core.broadcast_to(_W, ()),
]


@pytest.fixture(scope="module")
def broadcasts():
    return dg.function([_V, _W, _U, _N], _BROADCASTS, backend="numba", jit_graph=True)


@given(st.integers(0, 3), st.integers(0, 3), st.floats(-2, 2), st.sampled_from([1, 3]))
def test_broadcast_to_in_the_jitted_graph_matches_numpy(broadcasts, rows, n, w, u_size):
    """`Alloc`'s kernel (the driver runs it on the host, the jitted graph by loops) against `np.broadcast_to`."""
    v, u = np.arange(float(rows)).reshape(rows, 1), np.linspace(-1.0, 1.0, u_size)
    got = broadcasts(v, np.float64(w), u, np.int64(n))
    expected = [np.broadcast_to(v, (2, rows, n)), np.full(n, w), np.broadcast_to(u, (n, 3)), np.array(w)]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g, e)
    assert broadcasts._compiled.tiers.state == "jitted" and broadcasts.timings["perform"] == ()


def test_broadcast_to_in_the_jitted_graph_refuses_a_size_that_does_not_broadcast(broadcasts):
    with pytest.raises(ValueError, match="cannot broadcast"):
        broadcasts(np.ones((2, 1)), np.float64(1.0), np.ones(2), np.int64(2))


def test_a_trusted_numpy_scalar_is_read_in_a_scan_body(backend):
    step = dg.Dim("step", size=5)
    rho = dg.labeled("rho", dims=())
    y = dg.labeled("y", dims=(step,))
    final, _ = dg.scan(lambda acc, v: acc * rho + v, init=dg.constant(0.0), sequences=[y], dim=step)
    f = dg.function([rho, y], final, backend=backend)
    yv = np.arange(5.0)
    want = 0.0
    for v in yv:
        want = want * 0.5 + v
    assert float(f(np.float64(0.5), yv)) == pytest.approx(want, rel=1e-15)
    assert float(f(np.float64(0.5), yv, trust_input=True)) == pytest.approx(want, rel=1e-15)
    assert float(f(0.5, yv, trust_input=True)) == pytest.approx(want, rel=1e-15)


def test_compile_time_and_repr_include_the_first_call(backend, tmp_path, monkeypatch):
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", str(tmp_path))
    x = dg.tensor("x", shape=(None,))
    f = dg.function([x], dg.sin(x).sum() + 3.0, backend=backend)
    before = f.compile_time
    f(np.zeros(3))
    phases = ("lower", "rewrite", "codegen", "first call", "jit graph")
    assert f.compile_time == pytest.approx(sum(f.timings.get(k) or 0.0 for k in phases))
    assert f.compile_time >= before + f.timings["first call"] - 1e-12 and f.timings["first call"] > 0
    assert f"compiled in {f.compile_time:.2f} s" in repr(f)


def test_the_jitted_graph_draws_and_updates_as_the_driver_does():
    rng = dg.rng(0)
    t = dg.Dim("t", size=4)
    draws = rng.normal(0.0, 1.0, extra_dims=(t,)) + rng.gamma(2.0, 1.0, extra_dims=(t,))
    w = dg.shared(np.zeros(4), name="w")
    v = dg.tensor("v", shape=(4,))
    outs = [draws.values + w.sum(), w * 2.0]
    jitted = dg.function([v], outs, updates={w: w + v}, backend="numba", jit_graph=True)
    driver = dg.function([v], outs, updates={w: w + v}, backend="numba", jit_graph=False)
    ctx_j, ctx_d = dg.SharedContext(5), dg.SharedContext(5)
    for k in range(3):
        got, want = jitted(np.full(4, k), ctx=ctx_j), driver(np.full(4, k), ctx=ctx_d)
        for g, w_ in zip(got, want):
            np.testing.assert_array_equal(g, w_)
        np.testing.assert_array_equal(w.get(ctx=ctx_j), w.get(ctx=ctx_d))
    assert jitted._compiled.tiers.state == "jitted" and driver._compiled.tiers.state == "driver"


# 0-d work of several dtypes next to a loop: the driver runs it on the host, the jitted graph on scalars
# (`ops.scalar_elemwise`), boxed into 0-d arrays only where a loop kernel or a result needs one.
S_X, S_N, S_H = dg.scalar("x"), dg.scalar("n", dtype="int32"), dg.scalar("h", dtype="float32")
S_V = dg.vector("v", size=5)
S_SCALE = dg.exp(S_X) + S_N.astype("float64")
S_OK = dg.isfinite(S_SCALE) & (S_SCALE > 1.0)
S_SAFE = dg.where(S_OK, S_SCALE, 2.0)
S_OUTPUTS = [
    (S_V / S_SAFE).sum() + dg.log1p(dg.maximum(S_X, 0.0)),  # scalars feeding a loop, and a loop's result feeding them
    S_OK,  # a bool result
    (S_N * 3 - 1).astype("int32"),  # an int32 result: its 0-d array keeps the dtype
    S_H * 2 + S_H.astype("float32"),  # float32 arithmetic
    S_SAFE,
]


@pytest.fixture(scope="module")
def scalar_fns():
    inputs = [S_X, S_N, S_H, S_V]
    return (
        dg.function(inputs, S_OUTPUTS, backend="numba", jit_graph=True),
        dg.function(inputs, S_OUTPUTS, backend="python"),
    )


def test_the_jitted_graph_holds_0d_values_as_scalars(scalar_fns):
    jitted, _ = scalar_fns
    text = jitted._compiled.plan.jit_driver
    assert "_0d[()] = " in text  # scalars boxed for the loop kernel and for the results
    assert all(kernel.count("np.empty((), ") == 0 for kernel in jitted._compiled.plan.jit_kernels)


@given(
    st.floats(-700, 700),
    st.integers(-(2**20), 2**20),
    st.floats(-1e6, 1e6, width=32),
    arrays(np.float64, 5, elements=st.floats(-1e6, 1e6)),
)
def test_scalar_kernels_match_the_python_backend(scalar_fns, x, n, h, v):
    jitted, reference = scalar_fns
    args = (x, np.int32(n), np.float32(h), v)
    got, want = jitted(*args), reference(*args)
    assert jitted._compiled.tiers.state == "jitted"
    for g, w in zip(got, want):
        assert type(g) is type(w) and g.dtype == w.dtype and g.shape == w.shape
        np.testing.assert_allclose(g, w, rtol=1e-14 if g.dtype == np.float64 else 1e-6)
