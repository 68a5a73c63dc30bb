"""Every DimError / TypeError a labeled graph raises while it is built, with what the message names."""

import numpy as np
import pytest
import xarray as xr

import dimgraph as dg

a, b, one, obs = dg.Dim("a", size=2), dg.Dim("b", coords=["p", "q", "r"]), dg.Dim("one", size=1), dg.Dim("obs")
x = dg.labeled("x", dims=(a, b, one))


@pytest.mark.parametrize(
    "build, error, message",
    [
        (lambda: x.transpose("a", "b"), dg.DimError, "missing \\['one'\\]"),
        (lambda: x.transpose(..., "a", ...), dg.DimError, "only once"),
        (lambda: x.transpose("a", "zz", ...), dg.DimError, "has no dim 'zz'; its dims are \\(a: 2, b: 3, one: 1\\)"),
        (lambda: x.squeeze("a"), dg.DimError, "dim 'a' has size 2, not 1"),
        (lambda: x.expand_dims(a), dg.DimError, "already has a dim named 'a'"),
        (lambda: x.expand_dims("new"), TypeError, "Dim objects"),
        (lambda: x.rename({"a": "b"}), dg.DimError, "appears twice"),
        (lambda: x.rename({"a": dg.Dim("c", size=5)}), dg.DimError, "size 2; its new dim"),
        (lambda: x.argmax(), dg.DimError, "give `dim`"),
        (lambda: x.argmax(["a", "zz"]), dg.DimError, "has no dim 'zz'"),
        (lambda: x.cumsum("zz"), dg.DimError, "has no dim 'zz'"),
        (lambda: x.diff("a", label="middle"), ValueError, "'upper' or 'lower'"),
        (lambda: x.max("a").mean(dg.Dim("b", size=3)), dg.DimError, "two different dims named 'b'"),
        (lambda: dg.labeled("e", dims=(dg.Dim("z", size=0),)).max(), dg.DimError, "empty dim 'z'"),
        (lambda: x + np.ones(3), TypeError, "dg.constant"),
        (lambda: x + dg.tensor("t", shape=(2,)), TypeError, "dg.from_positional"),
        (lambda: dg.constant(np.ones(3), dims=(a,)), dg.DimError, "dim 'a' has size 2"),
        (lambda: dg.constant(np.ones((2, 3)), dims=(a,)), dg.DimError, "shape \\(2, 3\\)"),
        (lambda: dg.constant(np.ones(2)), TypeError, "give `dims`"),
        (
            lambda: dg.from_positional(dg.tensor("t", shape=(3,)), (a,)),
            dg.DimError,
            "axis 0 .* size 3, but dim 'a' has size 2",
        ),
        (lambda: dg.from_positional(dg.tensor("t", shape=(3,)), (a, b)), dg.DimError, "1 axes but 2 dims"),
        (
            lambda: dg.as_labeled(xr.DataArray(np.ones(3), dims="a"), dims=(a,)),
            dg.DimError,
            "two different dims named 'a'",
        ),
        (lambda: dg.as_labeled(np.ones(3)), TypeError, "DataArray"),
        (lambda: x.to_positional(["a"]), dg.DimError, "every dim"),
        (lambda: x.diff("a", n=-1), ValueError, "non-negative"),
        (lambda: dg.broadcast(x, dg.labeled("y", dims=(dg.Dim("a", size=3),))), dg.DimError, "size=2.*size=3"),
        (lambda: x.sum(3), TypeError, "Dim or its name"),
    ],
)
def test_build_errors(build, error, message):
    with pytest.raises(error, match=message):
        build()


def test_diff_of_unknown_dim_is_a_different_dim():
    y = dg.labeled("y", dims=(obs,))
    d = y.diff("obs")
    assert d.dims[0].name == "obs" and d.dims[0] != obs
    with pytest.raises(dg.DimError, match="derived"):
        d + y
    assert y.diff("obs", n=0).dims == (obs,)


def test_as_labeled_and_constant_from_dataarray():
    da = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("a", "b"), coords={"b": ["p", "q", "r"]})
    c = dg.as_labeled(da)
    assert c.dims == (dg.Dim("a", size=2), b)
    c2 = dg.as_labeled(da.T, dims=(a, b))
    assert c2.dims == (a, b)
    out = (c + c2).eval()
    np.testing.assert_allclose(out.values, 2 * da.values)
    assert list(out.indexes["b"]) == ["p", "q", "r"]
