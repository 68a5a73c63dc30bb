"""Flat parameter vectors: ravel/unravel round trips and (value, flat gradient) for scipy.optimize."""

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy import optimize

import dimgraph as dg

group = dg.Dim("group", coords=["north", "south", "east"])
k = dg.Dim("k", size=2)
obs = dg.Dim("obs")
MU = dg.labeled("mu", dims=(group, k))
LOG_SIGMA = dg.scalar("log_sigma")
LAYOUT = dg.FlatParams([MU, LOG_SIGMA])


@given(arrays(np.float64, 7, elements=st.floats(-1e6, 1e6)))
def test_ravel_unravel_round_trip(theta):
    values = LAYOUT.unravel(theta)
    assert values["mu"].dims == ("group", "k") and values["mu"].group.values.tolist() == ["north", "south", "east"]
    np.testing.assert_array_equal(values["mu"].values, theta[:6].reshape(3, 2))
    np.testing.assert_array_equal(LAYOUT.ravel(values), theta)
    # a DataArray in another dim order is put in dims order
    values["mu"] = values["mu"].transpose("k", "group")
    np.testing.assert_array_equal(LAYOUT.ravel(values), theta)


def _negative_logp():
    y = dg.labeled("y", dims=(obs, group))
    sigma = dg.exp(LOG_SIGMA)
    resid = (y - MU.sum("k")) / sigma
    return (0.5 * resid**2).sum() + y.sizes["obs"] * 3 * LOG_SIGMA, y


DATA = xr.DataArray(
    np.random.default_rng(1).normal([1.0, -2.0, 0.5], 0.7, size=(40, 3)),
    dims=("obs", "group"),
    coords={"group": ["north", "south", "east"]},
)


def test_value_and_flat_gradient_against_finite_differences(backend):
    cost, y = _negative_logp()
    fn = dg.flat_value_and_grad(cost, [MU, LOG_SIGMA], inputs=[y], backend=backend)
    theta = np.linspace(-0.5, 0.7, 7)
    value, grad = fn(theta, y=DATA)
    assert isinstance(value, float) and grad.shape == (7,) and grad.dtype == np.float64
    eps = 1e-6
    numeric = [(fn(theta + eps * e, y=DATA)[0] - fn(theta - eps * e, y=DATA)[0]) / (2 * eps) for e in np.eye(7)]
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)


def test_scipy_minimize_with_jac_finds_the_maximum_likelihood():
    cost, y = _negative_logp()
    fn = dg.flat_value_and_grad(cost, [MU, LOG_SIGMA], inputs=[y], backend="numba")
    result = optimize.minimize(lambda theta: fn(theta, y=DATA), np.zeros(fn.size), jac=True, method="BFGS")
    assert result.success
    fit = fn.unravel(result.x)
    means = DATA.mean("obs")
    xr.testing.assert_allclose(fit["mu"].sum("k"), means, rtol=1e-5)
    np.testing.assert_allclose(np.exp(fit["log_sigma"]), float(np.sqrt(((DATA - means) ** 2).mean())), rtol=1e-5)


def test_float32_parameters_take_any_vector():
    """A float32 parameter gets its slice rounded to float32 (the function would refuse inexact float64 data)."""
    mu32, y = dg.labeled("mu32", dims=(group,), dtype="float32"), dg.labeled("y", dims=(group,))
    fn = dg.flat_value_and_grad(((mu32 - y) ** 2).sum() + LOG_SIGMA**2, [mu32, LOG_SIGMA], inputs=[y], backend="python")
    theta, data = np.array([0.1, 0.2, 0.3, 0.4]), np.array([1.0, 2.0, 3.0])
    value, grad = fn(theta, y=data)
    rounded = theta[:3].astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(value, ((rounded - data) ** 2).sum() + 0.4**2, rtol=1e-6)
    np.testing.assert_allclose(grad, np.append(2 * (rounded - data), 0.8), rtol=1e-6)
    assert fn.unravel(theta)["mu32"].dtype == np.float32


def test_flat_errors():
    with pytest.raises(ValueError, match=r"real-valued \(float32 or float64\): 'k' has dtype int64"):
        dg.FlatParams([dg.labeled("k", dims=(group,), dtype="int64")])
    with pytest.raises(ValueError, match=r"static sizes: 'y'"):
        dg.FlatParams([dg.labeled("y", dims=(obs,))])
    with pytest.raises(ValueError, match="two parameters are named 'mu'"):
        dg.FlatParams([MU, MU])
    with pytest.raises(dg.InputError, match=r"expected a vector of 7 values .* got shape \(6,\)"):
        LAYOUT.unravel(np.zeros(6))
    with pytest.raises(dg.InputError, match=r"missing values for \['log_sigma'\]"):
        LAYOUT.ravel({"mu": np.zeros((3, 2))})
    with pytest.raises(dg.InputError, match=r"'log_sigma' needs shape \(\)"):
        LAYOUT.ravel({"mu": np.zeros((3, 2)), "log_sigma": np.zeros(2)})
    with pytest.raises(dg.InputError, match="input 'mu'"):
        LAYOUT.ravel({"mu": xr.DataArray(np.zeros((3, 2)), dims=("group", "j")), "log_sigma": 0.0})


def test_unravel_batches_of_vectors_into_dataarrays_with_batch_dims():
    thetas = np.arange(2 * 5 * 7.0).reshape(2, 5, 7)
    draws = LAYOUT.unravel(thetas, batch_dims=("chain", "draw"))
    assert draws["mu"].dims == ("chain", "draw", "group", "k") and draws["log_sigma"].dims == ("chain", "draw")
    assert draws["mu"].group.values.tolist() == ["north", "south", "east"]
    for c in range(2):
        for d in range(5):
            one = LAYOUT.unravel(thetas[c, d])
            xr.testing.assert_equal(draws["mu"].isel(chain=c, draw=d, drop=True), one["mu"])
            assert float(draws["log_sigma"][c, d]) == float(one["log_sigma"])
    with pytest.raises(dg.InputError, match=r"expected shape \(\*\('chain', 'draw'\), 7\)"):
        LAYOUT.unravel(np.zeros((2, 7)), batch_dims=("chain", "draw"))


def test_parameters_read_inside_a_scan_body_take_their_slice_of_theta(backend):
    """A scan's body reads the parameters it closes over from theta too: value and gradient vs NumPy."""
    t = dg.Dim("t")
    rho, mu = dg.scalar("rho"), dg.labeled("mu", dims=(group,))
    prev, nxt = dg.labeled("prev", dims=(t, group)), dg.labeled("next", dims=(t, group))
    _, pred = dg.scan(lambda state, p: mu + rho * (p - mu), init=dg.zeros_like(mu), sequences=prev, dim=t)
    fn = dg.flat_value_and_grad(-0.5 * ((nxt - pred) ** 2).sum(), [mu, rho], inputs=[prev, nxt], backend=backend)
    x = np.random.default_rng(3).normal(size=(6, 3))

    def numpy_logp(theta):
        m, r = theta[:3], theta[3]
        return -0.5 * np.sum((x[1:] - m - r * (x[:-1] - m)) ** 2)

    theta = np.array([0.2, -0.1, 0.4, 0.6])
    value, grad = fn(theta, prev=x[:-1], next=x[1:])
    np.testing.assert_allclose(value, numpy_logp(theta), rtol=1e-12)
    eps = 1e-6
    numeric = [(numpy_logp(theta + eps * e) - numpy_logp(theta - eps * e)) / (2 * eps) for e in np.eye(4)]
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-8)


def test_function_takes_each_parameter_and_gives_each_gradient(backend):
    """`fn.function(*parameter arrays, *data)`: the parameters apart, one gradient per parameter, in its shape."""
    cost, y = _negative_logp()
    fn = dg.flat_value_and_grad(cost, [MU, LOG_SIGMA], inputs=[y], backend=backend)
    theta = np.linspace(-0.5, 0.7, 7)
    value, grad = fn(theta, y=DATA)
    by_param = fn.function(*LAYOUT.arrays(theta), DATA.transpose("obs", "group").values, trust_input=True)
    assert by_param[0] == value and by_param[1].shape == (3, 2) and by_param[2].shape == ()
    np.testing.assert_array_equal(np.concatenate([by_param[1].ravel(), [by_param[2]]]), grad)
    trusted_value, trusted_grad = fn(theta, trust_input=True, y=DATA.transpose("obs", "group").values)
    assert trusted_value == value
    np.testing.assert_array_equal(trusted_grad, grad)


@pytest.fixture(scope="module")
def squared_distance():
    """fn(theta, y) = sum((mu - y)**2) over the 7 values of LAYOUT, per backend (compiled once)."""
    compiled = {}

    def get(backend):
        if backend not in compiled:
            y = dg.labeled("y", dims=(group, k))
            compiled[backend] = dg.flat_value_and_grad(
                ((MU - y) ** 2).sum() + LOG_SIGMA**2, [MU, LOG_SIGMA], inputs=[y], backend=backend
            )
        return compiled[backend]

    return get


@pytest.mark.parametrize(
    "theta, got",
    [
        (np.array([1 + 5j] + [2 + 0j] * 6), "complex128"),  # was computed with the imaginary part dropped
        (np.zeros(7, dtype=np.complex64), "complex64"),  # complex even when the imaginary parts are 0
        (np.array(["1.5"] * 7), "<U3"),  # was NumPy's ValueError, naming nothing
        (["a"] + [0.0] * 6, "<U32"),
        (np.ones(7, dtype=bool), "bool"),
        (np.array([object()] * 7), "object"),
    ],
)
def test_flat_vector_of_other_than_real_numbers_is_refused_naming_theta(backend, squared_distance, theta, got):
    fn = squared_distance(backend)
    with pytest.raises(
        dg.InputError,
        match=rf"theta: expected real numbers \(float or int\), a vector of 7 values .*got an array of dtype {got}",
    ):
        fn(theta, y=np.zeros((3, 2)))
    with pytest.raises(dg.InputError, match="theta: expected real numbers"):
        fn.unravel(theta)


def test_flat_vector_of_ints_is_taken_exactly(backend, squared_distance):
    value, grad = squared_distance(backend)(np.arange(7), y=np.zeros((3, 2)))
    assert value == float((np.arange(7) ** 2).sum()) and grad.tolist() == (2.0 * np.arange(7)).tolist()


def test_ravel_refuses_a_complex_parameter_value_naming_it():
    with pytest.raises(dg.InputError, match=r"ravel: 'log_sigma': expected real numbers .*complex128"):
        LAYOUT.ravel({"mu": np.zeros((3, 2)), "log_sigma": 1 + 2j})
    with pytest.raises(dg.InputError, match=r"theta: expected real numbers .*<U1"):
        LAYOUT.unravel(np.array([["a"] * 7] * 2), batch_dims=("draw",))


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # `backend` is a name, nothing to reset
@given(arrays(np.float64, 7, elements=st.floats(-1e3, 1e3)))
def test_bound_data_give_the_unbound_calls_values(backend, squared_distance, theta):
    fn = squared_distance(backend)
    y = np.linspace(-1.0, 1.0, 6).reshape(3, 2)
    value, grad = fn.bind(y=y)(theta)
    want_value, want_grad = fn(theta, y=y)
    assert value == want_value and fn.bind(y=y).size == 7
    np.testing.assert_array_equal(grad, want_grad)


def test_bind_names_the_data_it_refuses_before_any_call(backend, squared_distance):
    fn = squared_distance(backend)
    with pytest.raises(
        dg.InputError, match=r"bind: binds the data inputs \['y'\]; missing \['y'\], unexpected \['z'\]"
    ):
        fn.bind(z=np.zeros((3, 2)))
    with pytest.raises(dg.InputError, match="'y'"):
        dg.flat_value_and_grad(((MU - dg.labeled("y", dims=(group, k))) ** 2).sum(), [MU], inputs=[dg.labeled("y", dims=(group, k))],
                               backend=backend).bind(y=np.zeros(3))  # fmt: skip
    with pytest.raises(dg.InputError, match=r"theta: expected a vector of 7 values .*got shape \(6,\)"):
        fn.bind(y=np.zeros((3, 2)))(np.zeros(6))


@pytest.fixture(scope="module")
def gathered():
    """fn(theta, idx, y) = -0.5 sum((y - a[idx] - b)**2) - 0.5 a.a, per backend (compiled once): a gather, and
    two data inputs sharing a dim of no fixed size (a size check at every call)."""
    compiled = {}

    def get(backend):
        if backend not in compiled:
            a, b = dg.labeled("a", dims=(group,)), dg.scalar("b")
            idx, y = dg.labeled("idx", dims=(obs,), dtype="int64"), dg.labeled("y", dims=(obs,))
            cost = -0.5 * ((y - a.isel(group=idx) - b) ** 2).sum() - 0.5 * (a**2).sum()
            compiled[backend] = dg.flat_value_and_grad(cost, [a, b], inputs=[idx, y], backend=backend)
        return compiled[backend]

    return get


def _gathered_numpy(theta, idx, y):
    a, b = theta[:3], theta[3]
    r = y - a[idx] - b
    grad_a = np.zeros(3)
    np.add.at(grad_a, idx, r)
    return -0.5 * r @ r - 0.5 * a @ a, np.append(grad_a - a, r.sum())


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])  # `backend` only names the backend
@given(st.data())
def test_repeated_calls_match_numpy_as_data_change(backend, gathered, data):
    """Calls after the first take the backend's entry (the c backend replays its plan): every call, with
    new values and new lengths, agrees with NumPy."""
    fn = gathered(backend)
    for _ in range(3):
        n = data.draw(st.integers(0, 6))
        theta = data.draw(arrays(np.float64, 4, elements=st.floats(-10, 10)))
        idx = data.draw(arrays(np.int64, n, elements=st.integers(-3, 2)))
        y = data.draw(arrays(np.float64, n, elements=st.floats(-10, 10)))
        value, grad = fn(theta, idx=idx, y=y)
        expected, expected_grad = _gathered_numpy(theta, idx, y)
        np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(grad, expected_grad, rtol=1e-12, atol=1e-12)


def test_later_calls_check_the_data_as_the_first_does(backend, gathered):
    """The checks and messages of a call do not depend on whether it is the first (every backend alike)."""
    fn = gathered(backend)
    theta, idx, y = np.array([0.3, -0.2, 0.5, 0.1]), np.array([0, 2, 2, 1]), np.array([1.0, -1.0, 0.5, 2.0])
    expected = _gathered_numpy(theta, idx, y)
    for _ in range(2):
        with pytest.raises(
            dg.InputError, match="inputs 'idx' and 'y' disagree on the size of dim 'obs': 4 in 'idx', 3 in 'y'"
        ):
            fn(theta, idx=idx, y=y[:3])
        with pytest.raises(IndexError, match="input 'idx': index 3 is out of bounds for dim 'group'"):
            fn(theta, idx=np.array([0, 3, 2, 1]), y=y)
        with pytest.raises(dg.InputError, match=r"missing inputs \['y'\]; the inputs are \['a', 'b', 'idx', 'y'\]"):
            fn(theta, idx=idx)
        with pytest.raises(dg.InputError, match="unexpected input 'z'"):
            fn(theta, idx=idx, y=y, z=y)
        with pytest.raises(dg.InputError, match="'idx'"):
            fn(theta, idx=idx + 0.5, y=y)  # not exactly integers
        value, grad = fn(theta, idx=idx, y=y)
        assert value == pytest.approx(expected[0], rel=1e-12)
        np.testing.assert_allclose(grad, expected[1], rtol=1e-12)
    # exact casts, DataArrays in any dims order, trusted arrays: the same values
    for kwargs in (
        {"idx": idx.astype(np.float64), "y": y.tolist()},
        {"idx": xr.DataArray(idx, dims="obs"), "y": xr.DataArray(y, dims="obs")},
        {"idx": idx, "y": y, "trust_input": True},
    ):
        value, grad = fn(theta, **kwargs)
        assert value == pytest.approx(expected[0], rel=1e-12)
        np.testing.assert_allclose(grad, expected[1], rtol=1e-12)


def test_flat_function_is_one_graph_of_the_vector(backend, gathered):
    """Off numba, `fn.flat_function` is the compiled (theta, *data) -> (value, flat gradient) itself; the
    function pickles and gives the same values after; `cfunc` is numba's."""
    import pickle

    fn = gathered(backend)
    theta, idx, y = np.array([0.3, -0.2, 0.5, 0.1]), np.array([0, 2, 2, 1]), np.array([1.0, -1.0, 0.5, 2.0])
    value, grad = fn(theta, idx=idx, y=y)
    if backend == "numba":
        assert not hasattr(fn, "flat_function")
        return
    assert [v.type.shape for v in fn.flat_function.inputs] == [(4,), (None,), (None,)]
    flat_value, flat_grad = fn.flat_function(theta, idx, y)
    assert float(flat_value) == value
    np.testing.assert_array_equal(flat_grad, grad)
    again = pickle.loads(pickle.dumps(fn))
    assert again(theta, idx=idx, y=y)[0] == value
    np.testing.assert_array_equal(again(theta, idx=idx, y=y)[1], grad)
    with pytest.raises(
        NotImplementedError,
        match=f"cfunc: the C-callable function needs the numba backend; this function runs on '{backend}'",
    ):
        fn.cfunc(idx=idx, y=y)


def test_no_parameters_give_an_empty_gradient(backend):
    y = dg.labeled("y", dims=(k,))
    fn = dg.flat_value_and_grad((y**2).sum(), [], inputs=[y], backend=backend)
    value, grad = fn(np.zeros(0), y=np.array([1.0, 2.0]))
    assert value == 5.0 and grad.shape == (0,) and grad.dtype == np.float64


def test_function_by_parameter_takes_names_and_names_misplaced_inputs(backend, gathered):
    """`fn.function` binds as a compiled function does, on every backend: parameters and data by position or
    by name; too many values, a value given twice and a missing one are named."""
    fn = gathered(backend)
    a, b, idx, y = np.array([0.3, -0.2, 0.5]), np.array(0.1), np.array([0, 2, 2, 1]), np.array([1.0, -1.0, 0.5, 2.0])
    value, grad = _gathered_numpy(np.append(a, b), idx, y)
    for out in (fn.function(a, b, idx, y), fn.function(a, b=b, idx=idx, y=y), fn.function(y=y, idx=idx, b=b, a=a)):
        assert float(out[0]) == pytest.approx(value, rel=1e-12) and out[1].shape == (3,) and out[2].shape == ()
        np.testing.assert_allclose(np.append(out[1], out[2]), grad, rtol=1e-12)
    with pytest.raises(
        dg.InputError, match=r"function takes 4 inputs \['a', 'b', 'idx', 'y'\], got 5 positional values"
    ):
        fn.function(a, b, idx, y, y)
    with pytest.raises(dg.InputError, match=r"input 'b' given twice \(by position and by name\)"):
        fn.function(a, b, idx, y, b=b)
    with pytest.raises(dg.InputError, match=r"missing inputs \['b'\]"):
        fn.function(a, idx=idx, y=y)


def test_build_errors_name_the_parameters(backend):
    """A parameter the cost does not read, a parameter also listed as an input and an input the cost reads
    but nobody gives are refused before compiling, each naming the variable (every backend alike)."""
    y = dg.labeled("y", dims=(group, k))
    cost = ((MU - y) ** 2).sum()
    with pytest.raises(ValueError, match="grad: the cost does not depend on 'log_sigma'"):
        dg.flat_value_and_grad(cost, [MU, LOG_SIGMA], inputs=[y], backend=backend)
    with pytest.raises(ValueError, match="an input is listed twice"):
        dg.flat_value_and_grad(cost, [MU], inputs=[y, MU], backend=backend)
    with pytest.raises(
        dg.InputError, match=r"the outputs depend on input 'y', which is not among the function inputs \['mu'\]"
    ):
        dg.flat_value_and_grad(cost, [MU], backend=backend)
