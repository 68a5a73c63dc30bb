"""The positional fast path of `Function.__call__` gives what the general path gives."""

import numpy as np
import pytest

import dimgraph as dg


def _compiled(backend, cache={}):  # noqa: B006 - one compile per backend for the module
    if backend not in cache:
        x = dg.tensor("x", shape=(2,))
        y = dg.tensor("y", shape=(None, 3), dtype="int64")
        cache[backend] = (
            dg.function([x], x + 1, backend=backend),
            dg.function([x], [x * 2], backend=backend),
            dg.function([x, y], [x.sum() + y.sum(), y * 2], backend=backend),
        )
    return cache[backend]


@pytest.mark.parametrize("trust", [False, True])
def test_fast_path_matches_named_call(backend, trust):
    f1, f_list, f2 = _compiled(backend)
    x = np.array([1.5, -2.0])
    y = np.arange(6, dtype="int64").reshape(2, 3)
    np.testing.assert_array_equal(f1(x, trust_input=trust), x + 1)
    out = f_list(x, trust_input=trust)
    assert isinstance(out, list) and len(out) == 1
    np.testing.assert_array_equal(out[0], x * 2)
    a, b = f2(x, y, trust_input=trust)
    named = f2(x=x, y=y)
    np.testing.assert_array_equal(a, named[0])
    np.testing.assert_array_equal(b, named[1])
    np.testing.assert_array_equal(b, y * 2)
    assert a.dtype == np.float64 and b.dtype == np.int64


def test_fast_path_converts_and_checks(backend):
    f1, _, f2 = _compiled(backend)
    np.testing.assert_array_equal(f1([1.0, 2.0]), [2.0, 3.0])  # a list is converted
    np.testing.assert_array_equal(f1(np.array([1, 2], dtype="int32")), [2.0, 3.0])  # safe cast
    np.testing.assert_array_equal(f1(np.array([1.0, 2.0], dtype=">f8")), [2.0, 3.0])  # byte order
    np.testing.assert_array_equal(f1(np.arange(4.0)[::2]), [1.0, 3.0])  # strided view
    with pytest.raises(dg.InputError, match="shape"):
        f1(np.ones(3))
    with pytest.raises(dg.InputError, match="axes"):
        f1(np.ones((2, 1)))
    with pytest.raises(dg.InputError):
        f2(np.ones(2), np.full((1, 3), 0.5))  # 0.5 does not survive a cast to int64
    a, b = f2(np.ones(2), np.zeros((0, 3), dtype="int64"))  # size 0
    assert float(a) == 2.0 and b.shape == (0, 3)


def _labeled(backend, cache={}):  # noqa: B006 - one compile per backend for the module
    if backend not in cache:
        import pandas as pd

        a, b = dg.Dim("a", size=2), dg.Dim("b", coords=pd.Index(["u", "v", "w"]))
        x = dg.labeled("x", dims=(a, b))
        s = dg.labeled("s", dims=())
        outs = [(x * s).sum("a"), x + 1.0]
        cache[backend] = (
            dg.function([x, s], outs, backend=backend),
            dg.function([x, s], outs, backend=backend, return_numpy=True),
        )
    return cache[backend]


@pytest.mark.parametrize("trust", [False, True])
def test_labeled_fast_path_matches_the_general_path(backend, trust):
    xr = pytest.importorskip("xarray")
    f, _ = _labeled(backend)
    xv, sv = np.arange(6.0).reshape(2, 3), np.array(2.0)
    f(xv, sv)  # the first call takes the general path
    fast = f(xv, sv, trust_input=trust)
    named = f(x=xv, s=sv)  # keywords: the general path
    xa = xr.DataArray(xv.T, dims=("b", "a"), coords={"b": ["u", "v", "w"]})
    from_dataarray = f(xa, sv, trust_input=trust)  # a transposed DataArray input
    for got in (fast, from_dataarray):
        for g, w in zip(got, named):
            xr.testing.assert_identical(g, w)
    np.testing.assert_array_equal(fast[0].values, (xv * 2.0).sum(0))
    assert list(fast[0].coords["b"].values) == ["u", "v", "w"]


def test_return_numpy_gives_the_arrays_of_the_dataarrays(backend):
    f, f_np = _labeled(backend)
    xv, sv = np.arange(6.0).reshape(2, 3), np.array(0.5)
    for _ in range(2):  # the first call and the fast path
        got, want = f_np(xv, sv), f(xv, sv)
        assert all(type(g) is np.ndarray for g in got)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w.values)
    with pytest.raises(dg.InputError, match="'x'"):
        f_np(np.ones((3, 2)), sv)
