"""One rule for mixing operands: 0-d positional values join labeled results in either order; other
positional values are a TypeError pointing to dg.from_positional; NumPy ufuncs dispatch to dimgraph."""

import operator

import numpy as np
import pytest
import xarray as xr

import dimgraph as dg
from dimgraph.core.operands import UFUNC_OPS
from dimgraph.core.variable import TensorVariable
from dimgraph.labeled.variable import LabeledVariable

c = dg.Dim("c", coords=["a", "b", "d"])
ARITHMETIC = [operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
              operator.pow, operator.lt, operator.le, operator.gt, operator.ge, operator.eq, operator.ne]  # fmt: skip
BITWISE = [operator.and_, operator.or_, operator.xor]
M_DATA = xr.DataArray([0.5, 1.5, 3.0], dims="c", coords={"c": ["a", "b", "d"]})
K_DATA = xr.DataArray([1, 6, 12], dims="c", coords={"c": ["a", "b", "d"]})


@pytest.fixture(scope="module")
def mixed():
    """Every operator with a 0-d positional operand on either side of a labeled one."""
    s, k = dg.scalar("s"), dg.scalar("k", dtype="int64")
    m, n = dg.labeled("m", dims=(c,)), dg.labeled("n", dims=(c,), dtype="int64")
    outs = [op(s, m) for op in ARITHMETIC] + [op(m, s) for op in ARITHMETIC]
    outs += [op(k, n) for op in BITWISE] + [op(n, k) for op in BITWISE]
    return [s, k, m, n], outs


def test_zero_d_positional_operands_give_labeled_results(mixed, backend):
    inputs, outs = mixed
    assert all(isinstance(o, LabeledVariable) and o.dims == (c,) for o in outs)
    got = dg.function(inputs, outs, backend=backend)(2.5, 10, M_DATA, K_DATA)
    want = [op(2.5, M_DATA) for op in ARITHMETIC] + [op(M_DATA, 2.5) for op in ARITHMETIC]
    want += [op(10, K_DATA) for op in BITWISE] + [op(K_DATA, 10) for op in BITWISE]
    for g, w in zip(got, want):
        xr.testing.assert_allclose(g, w)
        assert g.dtype == w.dtype


def test_matmul_with_a_zero_d_positional_operand():
    s, m = dg.scalar("s"), dg.labeled("m", dims=(c,))
    got = dg.function([s, m], [s @ m, m @ s], backend="python")(2.5, M_DATA)
    xr.testing.assert_allclose(got[0], xr.dot(xr.DataArray(2.5), M_DATA))
    xr.testing.assert_allclose(got[1], xr.dot(M_DATA, xr.DataArray(2.5)))


@pytest.mark.parametrize("op", ARITHMETIC + BITWISE + [operator.matmul], ids=lambda op: op.__name__)
def test_positional_operands_with_axes_point_to_from_positional(op):
    t = dg.tensor("t", shape=(3,), dtype="int64")
    n = dg.labeled("n", dims=(c,), dtype="int64")
    for left, right in [(t, n), (n, t)]:
        with pytest.raises(TypeError, match=r"positional tensor with 1 axes \(t: .*dg.from_positional"):
            op(left, right)


def test_dataarray_operands():
    m = dg.labeled("m", dims=(c,))
    out = m * M_DATA
    assert isinstance(out, LabeledVariable) and out.dims == (c,)
    xr.testing.assert_allclose(dg.function([m], out, backend="python")(M_DATA), M_DATA * M_DATA)
    # xarray's own operators never hand over (pydata/xarray#9944): the error says how to write it
    with pytest.raises(TypeError, match=r"dg.as_labeled\(da\) <op> x"):
        M_DATA * m
    xr.testing.assert_allclose(dg.function([m], dg.as_labeled(M_DATA) - m, backend="python")(M_DATA), 0 * M_DATA)


def test_dataarray_with_positional_operands():
    """A DataArray right of a positional variable is labeled data: the labeled rule applies (0-d joins)."""
    s, t = dg.scalar("s"), dg.tensor("t", shape=(3,))
    outs = [s + M_DATA, s * M_DATA, np.maximum(s, M_DATA), dg.core.where(s > 0, M_DATA, s), s @ M_DATA]
    assert all(isinstance(o, LabeledVariable) and o.dims == (c,) for o in outs)
    got = dg.function([s], outs, backend="python")(2.0)
    for g, w in zip(got, [2.0 + M_DATA, 2.0 * M_DATA, np.maximum(2.0, M_DATA), M_DATA, 2.0 * M_DATA]):
        xr.testing.assert_allclose(g, w)
    for op in (operator.add, operator.matmul):
        with pytest.raises(TypeError, match=r"positional tensor with 1 axes \(t: .*dg.from_positional"):
            op(t, M_DATA)
    for op in (operator.add, operator.lt):  # left of it: xarray's operator gets there first
        with pytest.raises(TypeError, match=r"dg.as_labeled\(da\) <op> x"):
            op(M_DATA, s)


@pytest.mark.parametrize("var", [dg.labeled("m", dims=(c,)), dg.tensor("t", shape=(3,))], ids=["labeled", "positional"])
def test_variables_have_no_array_values(var):
    """NumPy functions that would coerce a variable to an array say it is symbolic (not a 0-d object array)."""
    for coerce in (np.asarray, lambda v: np.where(v > 0, v, 0), lambda v: xr.DataArray(v, dims="c")):
        with pytest.raises(TypeError, match="is a symbolic dimgraph variable: it has values only once compiled"):
            coerce(var)


def test_numpy_arrays_and_scalars():
    m = dg.labeled("m", dims=(c,))
    assert isinstance(np.float64(2.0) * m, LabeledVariable) and isinstance(m * np.float64(2.0), LabeledVariable)
    for left, right in [(np.ones(3), m), (m, np.ones(3))]:
        with pytest.raises(TypeError, match=r"shape \(3,\) has no dims; use dg.constant"):
            left * right


@pytest.mark.parametrize("name", sorted(UFUNC_OPS), ids=str)
def test_numpy_ufuncs_dispatch_to_dimgraph(name):
    ufunc = getattr(np, name)
    m = dg.labeled(
        "m", dims=(c,), dtype="int64" if name in ("bitwise_and", "bitwise_or", "bitwise_xor", "invert") else "float64"
    )
    t = dg.tensor("t", shape=(3,), dtype=m.dtype.name)
    args = (m,) * ufunc.nin
    labeled, positional = ufunc(*args), ufunc(*(t,) * ufunc.nin)
    assert isinstance(labeled, LabeledVariable) and labeled.dims == (c,)
    assert isinstance(positional, TensorVariable)
    data = K_DATA if m.dtype.kind == "i" else M_DATA
    with np.errstate(all="ignore"):
        want = ufunc(*(data,) * ufunc.nin)
    xr.testing.assert_allclose(dg.function([m], labeled, backend="python")(data), want)
    np.testing.assert_allclose(dg.function([t], positional, backend="python")(data.values), want.values)


def test_numpy_ufunc_mixing_positional_scalar_and_labeled():
    s, m = dg.scalar("s"), dg.labeled("m", dims=(c,))
    out = np.add(s, m)
    assert isinstance(out, LabeledVariable)
    xr.testing.assert_allclose(dg.function([s, m], out, backend="python")(1.0, M_DATA), M_DATA + 1)


@pytest.mark.parametrize("var", [dg.labeled("m", dims=(c,)), dg.tensor("t", shape=(3,))], ids=["labeled", "positional"])
def test_numpy_ufuncs_without_a_dimgraph_op_are_pointed_errors(var):
    with pytest.raises(TypeError, match="numpy.hypot has no dimgraph counterpart"):
        np.hypot(var, var)
    with pytest.raises(TypeError, match=r"numpy.add.reduce does not apply .* \(x.sum"):
        np.add.reduce(var)
    with pytest.raises(TypeError, match=r"numpy.exp\(..., out=\)"):
        np.exp(var, out=np.empty(3))
