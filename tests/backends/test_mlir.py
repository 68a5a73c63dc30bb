"""The mlir backend (IREE): the sampler suite's models against numba, a representative selection of the
per-backend op checks against NumPy (one compiled module, so the file costs a few compiles), dynamic dims
(a new data length runs without a recompile), the disk cache, and refusals by name.

The backend runs a subset of the ops, so it is not in the default `backend` fixture (tests/conftest.py);
docs/mlir.md lists what it runs and what it refuses.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("iree.compiler")
pytest.importorskip("iree.runtime")

import dimgraph as dg  # noqa: E402
from dimgraph.backends.mlir import build  # noqa: E402
from dimgraph.backends.mlir.registry import MlirUnsupported  # noqa: E402
from dimgraph.core.join import concatenate  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import sampler_models  # noqa: E402

# The sampler models the mlir backend runs. Refused by name: lkj_user (the hand-written LKJ reads a diagonal
# through Einsum), crossed (a scatter by two index arrays) and random_walk (Cumsum).
MLIR_MODELS = ["ar1", "eight_schools", "lkj", "mixture", "radon"]


@pytest.mark.parametrize("name", MLIR_MODELS)
def test_sampler_models_logp_and_gradient_equal_numba(name):
    model = sampler_models.MODELS[name]()
    want_value, want_grad = model.flat("numba")(model.theta, **model.data)
    value, grad = model.flat("mlir")(model.theta, **model.data)
    np.testing.assert_allclose(value, want_value, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-12, atol=1e-12 * np.abs(want_grad).max())


def test_the_hand_written_lkj_is_refused_by_name():
    model = sampler_models.MODELS["lkj_user"]()
    with pytest.raises(MlirUnsupported, match="Einsum"):
        model.flat("mlir")(model.theta, **model.data)


def test_crossed_effects_by_two_indexers_are_refused_by_name():
    model = sampler_models.MODELS["crossed"]()
    with pytest.raises(MlirUnsupported, match="only one index array"):
        model.flat("mlir")(model.theta, **model.data)


def test_a_cumsum_walk_is_refused_by_name():
    model = sampler_models.MODELS["random_walk"]()
    with pytest.raises(MlirUnsupported, match="Cumsum"):
        model.flat("mlir")(model.theta, **model.data)


X = dg.tensor("x", shape=(None, 3))
V = dg.vector("v", size=3)
IDX = dg.tensor("idx", shape=(None,), dtype="int64")
T = dg.vector("t", size=5)


def _reference(x, v, idx, t):
    gathered = t[idx]
    return [
        np.log1p(np.abs(x)) + np.expm1(x / 4) * v - np.tanh(x),  # a fused elementwise loop, broadcast v
        np.where(x > 0, np.sqrt(np.abs(x)), np.exp(x)) / (1 + np.exp(-x)),  # select, sigmoid-like
        np.logaddexp(x, v),
        np.maximum(x, v).sum(axis=0),
        x.max(axis=1),
        (x * x).sum(),
        x.T,
        np.concatenate([v, t]),
        x.reshape(-1)[1:-1:2],
        gathered * 2.0,
        np.bincount(np.where(idx < 0, idx + 5, idx), minlength=5).astype(float),
    ]


@pytest.fixture(scope="module")
def ops_function():
    x, v, idx, t = X, V, IDX, T
    gathered = t[idx]
    outs = [
        dg.log1p(abs(x)) + dg.expm1(x / 4) * v - dg.tanh(x),
        dg.where(x > 0, dg.sqrt(abs(x)), dg.exp(x)) / (1 + dg.exp(-x)),
        dg.logaddexp(x, v),
        dg.maximum(x, v).sum(axis=0),
        x.max(axis=1),
        (x * x).sum(),
        x.T,
        concatenate([v, t]),
        x.reshape((-1,))[1:-1:2],
        gathered * 2.0,
        dg.grad(gathered.sum(), t),  # the scatter-add of a gather's gradient
    ]
    return dg.function([x, v, idx, t], outs, backend="mlir")


def _data(n, seed):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)), rng.normal(size=3), rng.integers(-5, 5, size=2 * n), rng.normal(size=5)


@pytest.mark.parametrize("n", [4, 9])
def test_ops_equal_numpy_for_every_data_length_without_a_recompile(ops_function, n, monkeypatch):
    calls = []
    monkeypatch.setattr(build, "compile_module", lambda *a: calls.append(a))
    x, v, idx, t = _data(n, n)
    got = ops_function(x, v, idx, t)
    want = _reference(x, v, idx, t)
    for k, (g, w) in enumerate(zip(got, want)):
        np.testing.assert_allclose(g, w, rtol=1e-13, atol=1e-15, err_msg=f"output {k}")
    assert calls == []  # one module serves every length


def test_an_index_out_of_bounds_is_an_index_error(ops_function):
    x, v, idx, t = _data(3, 0)
    idx[1] = 7
    with pytest.raises(IndexError, match="out of bounds"):
        ops_function(x, v, idx, t)


def test_mismatched_dynamic_sizes_are_a_shape_error():
    a, b = dg.vector("a"), dg.vector("b")
    f = dg.function([a, b], a * b, backend="mlir")
    np.testing.assert_array_equal(f(np.arange(3.0), np.arange(3.0)), np.arange(3.0) ** 2)
    with pytest.raises(dg.errors.ShapeError):
        f(np.arange(3.0), np.arange(4.0))


def test_a_scan_runs_as_a_loop():
    x0, rho = dg.scalar("x0"), dg.scalar("rho")
    eps = dg.vector("eps")
    final, trace = dg.scan(lambda s, e: rho * s + e, x0, sequences=eps)
    f = dg.function([x0, rho, eps], [final, trace], backend="mlir")
    e = np.array([0.5, -1.0, 2.0, 0.25])
    state, want = 1.0, []
    for step in e:
        state = 0.8 * state + step
        want.append(state)
    last, traced = f(1.0, 0.8, e)
    # LLVM may contract rho * s + e into one fused multiply-add (one rounding, where NumPy rounds twice)
    np.testing.assert_allclose(last, want[-1], rtol=1e-13)
    np.testing.assert_allclose(traced, want, rtol=1e-13)


def test_the_compiled_module_is_cached_on_disk(tmp_path, monkeypatch):
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", str(tmp_path))
    y = dg.vector("y")
    f = dg.function([y], dg.exp(y).sum() * 3.0, backend="mlir")
    key = f._compiled.cache_key
    assert (tmp_path / "mlir" / f"{key}.vmfb").exists() and (tmp_path / "mlir" / f"{key}.sha256").exists()
    calls = []
    from iree import compiler

    monkeypatch.setattr(compiler, "compile_str", lambda *a, **k: calls.append(a))
    g = dg.function([y], dg.exp(y).sum() * 3.0, backend="mlir")
    np.testing.assert_allclose(g(np.arange(3.0)), 3 * np.exp(np.arange(3.0)).sum(), rtol=1e-15)
    assert calls == []


def test_an_unsupported_scalar_op_is_refused_by_name_at_compile():
    y = dg.vector("y")
    with pytest.raises(MlirUnsupported, match="'sin'") as info:
        dg.function([y], [dg.sin(y) + 1.0], backend="mlir")
    assert isinstance(info.value, NotImplementedError)


def test_an_op_without_an_emitter_is_refused_by_name_at_compile():
    a = dg.matrix("a", shape=(3, 3))
    with pytest.raises(MlirUnsupported, match="mlir backend: op .*not supported"):
        dg.function([a], [dg.linalg.cholesky(a)], backend="mlir")


def test_a_while_loop_and_an_ifelse_run_as_scf_while_and_scf_if():
    x, k = dg.scalar("x"), dg.scalar("k")
    doubled = dg.while_loop(lambda v: v < 100.0, lambda v: v * 2.0, init=x, max_steps=1000)
    chosen = dg.ifelse(k > 0, dg.exp(x) + 1.0, x * 3.0)
    f = dg.function([x, k], [doubled, chosen], backend="mlir")
    for xv, kv in [(3.0, 1.0), (150.0, -1.0), (0.5, 0.0)]:
        y, c = f(xv, kv)
        want = xv
        while want < 100.0:
            want *= 2.0
        assert float(y) == want
        np.testing.assert_allclose(c, np.exp(xv) + 1.0 if kv > 0 else xv * 3.0, rtol=1e-15)


def test_bool_and_strided_arrays_cross_the_boundary():
    x, b = dg.tensor("x", shape=(None, 3)), dg.tensor("b", shape=(None,), dtype="bool")
    f = dg.function([x, b], [x.T * 2, ~b, x > 0], backend="mlir")
    a = np.arange(12.0).reshape(4, 3)[:, ::-1]
    mask = np.array([True, False])
    transposed, inverted, positive = f(a, mask)
    np.testing.assert_array_equal(transposed, a.T * 2)
    assert inverted.dtype == np.bool_ and inverted.tolist() == [False, True]
    np.testing.assert_array_equal(positive, a > 0)


FORMULA_OPS = ["log1p", "expm1", "sinh", "tanh", "log2", "log10", "exp", "log", "cosh", "sigmoid", "softplus"]


def test_transcendentals_are_within_3_ulp_of_numpy_specials_included():
    """log1p, expm1, sinh, tanh, log2, log10 are printed from exp and log (IREE's own are off by 1e-4 or do
    not link); every one is within 3 ulp of NumPy/SciPy over tiny, moderate and large arguments."""
    import scipy.special as sp

    x = dg.tensor("x", shape=(None,))
    f = dg.function([x], [getattr(dg, name)(x) for name in FORMULA_OPS], backend="mlir")
    d = np.concatenate([np.linspace(-0.99, 0.99, 401), np.geomspace(1e-300, 710, 600), -np.geomspace(1e-300, 30, 400),
                        [0.0, -0.0, np.inf, -np.inf, np.nan]])  # fmt: skip
    reference = {"sigmoid": sp.expit, "softplus": lambda v: np.logaddexp(0.0, v)}
    for name, got in zip(FORMULA_OPS, f(d)):
        with np.errstate(all="ignore"):
            want = reference.get(name, getattr(np, name, None))(d)
        finite = np.isfinite(want) & (want != 0)
        ulp = np.abs(got[finite] - want[finite]) / np.spacing(np.abs(want[finite]))
        assert ulp.max() <= 3, (name, ulp.max())
        np.testing.assert_array_equal(got[~finite], want[~finite], err_msg=name)


def test_matmul_with_promoted_vectors_and_broadcast_batches():
    a, b = dg.tensor("a", shape=(None, 1, 4, 3)), dg.tensor("b", shape=(2, None, 5))
    v = dg.vector("v", size=3)
    f = dg.function([a, b, v], [a @ b, a[0, 0] @ v, v @ b[1, :3]], backend="mlir")
    rng = np.random.default_rng(0)
    x, y, z = rng.normal(size=(3, 1, 4, 3)), rng.normal(size=(2, 3, 5)), rng.normal(size=3)
    for got, want in zip(f(x, y, z), [x @ y, x[0, 0] @ z, z @ y[1, :3]]):
        np.testing.assert_allclose(got, want, rtol=1e-13)


def test_gammaln_and_digamma_printed_from_their_series_match_scipy():
    import scipy.special as sp

    x = dg.tensor("x", shape=(None,))
    f = dg.function([x], [dg.gammaln(x), dg.digamma(x)], backend="mlir")
    d = np.concatenate(
        [
            np.geomspace(1e-300, 1e300, 400),
            np.linspace(-30.5, 30.5, 801),
            [0.0, -0.0, -3.0, 1.0, 2.0, np.inf, -np.inf, np.nan],
        ]
    )
    for got, want in zip(f(d), [sp.gammaln(d), sp.digamma(d)]):
        finite = np.isfinite(want)
        np.testing.assert_array_equal(got[~finite], want[~finite])
        big = finite & (np.abs(want) > 0.1)
        np.testing.assert_allclose(got[big], want[big], rtol=1e-12)
        np.testing.assert_allclose(got[finite & ~big], want[finite & ~big], rtol=0, atol=1e-14)


def test_split_and_basic_set_and_inc():
    from dimgraph.core.join import split
    from dimgraph.core.subtensor import inc_subtensor, set_subtensor

    x = dg.vector("x")
    f = dg.function([x], [*split(x, [1, 4]), inc_subtensor(x[1:3], 10.0), set_subtensor(x[::2], -1.0)], backend="mlir")
    for n in (6, 3):  # positions past the end give short pieces, as np.split
        data = np.arange(float(n))
        got = f(data)
        for g, w in zip(got[:3], np.split(data, [1, 4])):
            np.testing.assert_array_equal(g, w)
        inc, setv = data.copy(), data.copy()
        inc[1:3] += 10.0
        setv[::2] = -1.0
        np.testing.assert_array_equal(got[3], inc)
        np.testing.assert_array_equal(got[4], setv)
