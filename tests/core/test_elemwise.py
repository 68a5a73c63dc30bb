"""Elemwise and DimShuffle against NumPy (and scipy.special for the special functions).

Every scalar op in SCALAR_SPECS runs on every test dtype where NumPy defines it
(where NumPy raises, building the graph must raise TypeError too). Values are
compared in the output dtype: rtol is a few ulps of that dtype (core_checks.RTOL);
the special functions are compared with scipy computed in float64 and cast to
the output dtype, with rtol = atol = 1e-8 in float64; next to a pole (digamma,
trigamma and gammaln at non-positive integers, tan) the tolerance also allows the
change one rounding of x makes there (`POLE_DERIVATIVES`).
"""

import numpy as np
import pytest
import scipy.special as sp
from core_checks import DTYPES, arrays, check_outputs, declared, rtol_for, shapes, values_for
from hypothesis import given
from hypothesis import strategies as st
from scalar_oracles import BINARY, SPECIAL, SPECIAL_BINARY, SPECIAL_TERNARY, UNARY

import dimgraph as dg
from dimgraph.core.math import elemwise
from dimgraph.core.scalar import SCALAR_SPECS


def test_every_scalar_op_has_an_oracle():
    assert set(UNARY) | set(BINARY) | set(SPECIAL_TERNARY) | {"where"} == set(SCALAR_SPECS)


def _numpy_defines(fn, *dtypes):
    try:
        with np.errstate(all="ignore"):
            fn(*[np.ones(1, d) for d in dtypes])
        return True
    except TypeError:
        return False


def _tol(name, dtype):
    if name in SPECIAL or name in SPECIAL_BINARY or name in SPECIAL_TERNARY:
        return dict(rtol=max(1e-8, rtol_for(dtype, 4)), atol=1e-8 if dtype == "float64" else rtol_for(dtype, 4))
    if name in ("tan", "sinh", "cosh", "exp", "exp2", "expm1", "pow"):
        return dict(rtol=rtol_for(dtype, 4), atol=0)
    return dict(rtol=rtol_for(dtype, 4), atol=rtol_for(dtype))


# Next to a pole the result is ill-conditioned: one rounding of x moves it by |x f'(x)| eps.
# These functions are compared within that (the derivative from scipy) on top of their tolerance.
POLE_DERIVATIVES = {
    "digamma": lambda x: sp.polygamma(1, x),
    "trigamma": lambda x: sp.polygamma(2, x),
    "gammaln": sp.digamma,
    "tan": lambda x: 1 + np.tan(x) ** 2,
}


def _conditioned_atol(name, data, atol, dtype):
    if name not in POLE_DERIVATIVES or np.dtype(dtype).kind != "f":
        return atol
    x = data.astype(np.float64)
    with np.errstate(all="ignore"):
        spread = np.abs(x * POLE_DERIVATIVES[name](x)) * np.finfo(dtype).eps * 4
    return np.maximum(atol, np.where(np.isfinite(spread), spread, 0.0))  # at a pole itself: NaN/inf, compared exactly


def _elements(dtype):
    return values_for(dtype, -10, 10, finite=False)


UNDEFINED_UNARY = [(n, d) for n in sorted(UNARY) for d in DTYPES if not _numpy_defines(UNARY[n], d)]


@pytest.mark.parametrize("name, dtype", UNDEFINED_UNARY)
def test_unary_undefined_like_numpy(name, dtype):
    """Where NumPy raises TypeError for a dtype, building the graph does too."""
    with pytest.raises(TypeError):
        elemwise(name, dg.tensor("x", shape=(None, None), dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unary(backend, dtype):
    """Every unary op defined for `dtype`, in one compiled function."""
    names = [n for n in sorted(UNARY) if (n, dtype) not in UNDEFINED_UNARY]
    x = dg.tensor("x", shape=(None, None), dtype=dtype)
    outs = [elemwise(n, x) for n in names]

    @given(arrays(dtype, shapes(2, 2, 0, 3), elements=_elements(dtype)))
    def check(data):
        with np.errstate(all="ignore"):
            expected = [np.asarray(UNARY[n](data)) for n in names]
        tols = [_tol(n, e.dtype) for n, e in zip(names, expected)]
        atols = [_conditioned_atol(n, data, t["atol"], e.dtype) for n, t, e in zip(names, tols, expected)]
        check_outputs(
            backend,
            [x],
            outs,
            [data],
            expected,
            key=("unary", dtype),
            names=names,
            rtol=[t["rtol"] for t in tols],
            atol=atols,
        )

    check()


BINARY_DTYPE_PAIRS = [(d, d) for d in DTYPES] + [
    ("int8", "float32"),
    ("int32", "int64"),
    ("bool", "int8"),
    ("float32", "float64"),
    ("int64", "float32"),
    ("int8", "int32"),
]
UNDEFINED_BINARY = [(n, p) for n in sorted(BINARY) for p in BINARY_DTYPE_PAIRS if not _numpy_defines(BINARY[n], *p)]


@pytest.mark.parametrize("name, dtypes", UNDEFINED_BINARY)
def test_binary_undefined_like_numpy(name, dtypes):
    with pytest.raises(TypeError):
        elemwise(name, dg.tensor("x", shape=(None,), dtype=dtypes[0]), dg.tensor("y", shape=(None,), dtype=dtypes[1]))


@pytest.mark.parametrize("dtypes", BINARY_DTYPE_PAIRS, ids=lambda p: "-".join(p))
def test_binary(backend, dtypes):
    """Every binary op defined for the dtype pair, in one compiled function; y's static size 1 broadcasts."""
    names = [n for n in sorted(BINARY) if (n, dtypes) not in UNDEFINED_BINARY]
    x = dg.tensor("x", shape=(None, 3), dtype=dtypes[0])
    y = dg.tensor("y", shape=(1, None), dtype=dtypes[1])
    # integer powers need small non-negative exponents (NumPy raises on negative ones)
    e = dg.tensor("e", shape=(1, None), dtype=dtypes[1])
    outs = [elemwise(n, x, e if n == "pow" else y) for n in names]
    int_exp = np.dtype(dtypes[1]).kind in "iu"

    @given(st.data())
    def check(data):
        n = data.draw(st.integers(0, 3))
        a = data.draw(arrays(dtypes[0], (n, 3), elements=_elements(dtypes[0])))
        b = data.draw(arrays(dtypes[1], (1, 3), elements=_elements(dtypes[1])))
        ev = data.draw(
            arrays(dtypes[1], (1, 3), elements=values_for(dtypes[1], 0, 3) if int_exp else _elements(dtypes[1]))
        )
        if np.dtype(dtypes[0]).kind in "iu" and int_exp:
            a = np.clip(a, -4, 4).astype(dtypes[0])  # keep integer powers in range
        with np.errstate(all="ignore"):
            expected = [np.asarray(BINARY[nm](a, ev if nm == "pow" else b)) for nm in names]
        tols = [_tol(nm, ex.dtype) for nm, ex in zip(names, expected)]
        check_outputs(
            backend,
            [x, y, e],
            outs,
            [a, b, ev],
            expected,
            key=("binary", dtypes),
            names=names,
            rtol=[t["rtol"] for t in tols],
            atol=[t["atol"] for t in tols],
        )

    check()


@pytest.mark.parametrize("dtypes", [("float64",) * 3, ("float32",) * 3, ("int64", "int8", "float32")], ids="-".join)
def test_ternary_special_functions(backend, dtypes):
    """betainc and betaincc (shapes a, b and x broadcast; x beyond [0, 1], nan and inf included), dtypes as NumPy's."""
    a = dg.tensor("a", shape=(None, 1), dtype=dtypes[0])
    b = dg.tensor("b", shape=(None, 1), dtype=dtypes[1])
    x = dg.tensor("x", shape=(1, 3), dtype=dtypes[2])
    names = sorted(SPECIAL_TERNARY)
    outs = [elemwise(n, a, b, x) for n in names]

    @given(st.data())
    def check(data):
        n = data.draw(st.integers(0, 3))
        av = data.draw(arrays(dtypes[0], (n, 1), elements=values_for(dtypes[0], 0, 10, finite=False)))
        bv = data.draw(arrays(dtypes[1], (n, 1), elements=values_for(dtypes[1], 0, 10, finite=False)))
        xv = data.draw(arrays(dtypes[2], (1, 3), elements=values_for(dtypes[2], -0.25, 1.25, finite=False)))
        expected = [np.asarray(SPECIAL_TERNARY[nm](av, bv, xv)) for nm in names]
        tols = [_tol(nm, ex.dtype) for nm, ex in zip(names, expected)]
        check_outputs(
            backend,
            [a, b, x],
            outs,
            [av, bv, xv],
            expected,
            key=("ternary", dtypes),
            names=names,
            rtol=[t["rtol"] for t in tols],
            atol=[t["atol"] for t in tols],
        )

    check()


@pytest.mark.parametrize(
    "dtypes", [("bool", "int8", "float32"), ("bool", "int64", "int64"), ("bool", "float32", "float64")]
)
def test_where(backend, dtypes):
    c = dg.tensor("c", shape=(None,), dtype=dtypes[0])
    a = dg.tensor("a", shape=(None,), dtype=dtypes[1])
    b = dg.tensor("b", shape=(1,), dtype=dtypes[2])
    out = dg.where(c, a, b)

    @given(st.data())
    def check(data):
        n = data.draw(st.integers(0, 4))
        cv = data.draw(arrays(dtypes[0], (n,)))
        av = data.draw(arrays(dtypes[1], (n,)))
        bv = data.draw(arrays(dtypes[2], (1,)))
        check_outputs(backend, [c, a, b], out, [cv, av, bv], np.where(cv, av, bv), key=("where", dtypes), exact=True)

    check()


# NEP 50: Python scalars are weak, NumPy scalars and arrays are not.
NEP50_CASES = [
    ("int8", lambda x: x + 1),
    ("int8", lambda x: x * 2),
    ("int8", lambda x: x / 2),
    ("int32", lambda x: x // 3),
    ("int32", lambda x: 7 % x),
    ("float32", lambda x: x + 1.5),
    ("float32", lambda x: 2.0**x),
    ("float32", lambda x: x * 3),
    ("int64", lambda x: x + 1.5),
    ("int8", lambda x: x + 1.5),
    ("bool", lambda x: x + 1),
    ("bool", lambda x: x & True),
    ("float32", lambda x: x + np.float64(1)),
    ("int8", lambda x: x + np.int32(1)),
    ("float32", lambda x: dg.maximum(x, 0) if isinstance(x, dg.core.Variable) else np.maximum(x, 0)),
    ("int8", lambda x: dg.where(x > 2, x, 100) if isinstance(x, dg.core.Variable) else np.where(x > 2, x, 100)),
    ("int32", lambda x: x < 2.5),
]


def test_python_scalars_follow_nep50(backend):
    """All cases in one compiled function, one input per dtype."""
    dtypes = sorted({d for d, _ in NEP50_CASES})
    xs = {d: dg.tensor(f"x_{d}", shape=(None,), dtype=d) for d in dtypes}
    outs = [fn(xs[d]) for d, fn in NEP50_CASES]

    @given(st.data())
    def check(data):
        n = data.draw(st.integers(0, 3))
        vals = {d: data.draw(arrays(d, (n,), elements=values_for(d, 1, 5))) for d in dtypes}
        with np.errstate(all="ignore"):
            expected = [np.asarray(fn(vals[d])) for d, fn in NEP50_CASES]
        check_outputs(
            backend,
            list(xs.values()),
            outs,
            list(vals.values()),
            expected,
            key=("nep50",),
            rtol=[rtol_for(e.dtype, 4) for e in expected],
            names=[f"case {k}" for k in range(len(outs))],
        )

    check()


@given(st.data())
def test_broadcasting_static_shapes(data):
    """Static shapes after broadcasting (with sizes 0 and 1 and unknown sizes) match NumPy's result."""
    shape = data.draw(shapes(0, 3, 0, 3))
    ndim_b = data.draw(st.integers(0, len(shape)))
    b_shape = tuple(data.draw(st.sampled_from([1, s])) for s in shape[len(shape) - ndim_b :])
    a_decl = data.draw(declared(shape))
    b_decl = tuple(1 if s == 1 else d for s, d in zip(b_shape, data.draw(declared(b_shape))))
    x = dg.tensor("x", shape=a_decl)
    y = dg.tensor("y", shape=b_decl)
    out = x * y + 1.0
    a = data.draw(arrays("float64", shape))
    b = data.draw(arrays("float64", b_shape))
    check_outputs("python", [x, y], out, [a, b], a * b + 1.0)


def test_runtime_broadcast_of_unknown_size_is_shape_error(backend):
    x = dg.tensor("x", shape=(None,))
    y = dg.tensor("y", shape=(3,))
    f = dg.function([x, y], x + y, backend=backend)
    np.testing.assert_allclose(f(np.ones(3), np.ones(3)), 2.0)
    with pytest.raises(dg.ShapeError):
        f(np.ones(1), np.ones(3))


def test_static_size_mismatch_is_shape_error():
    with pytest.raises(dg.ShapeError, match="axis 0"):
        dg.tensor("x", shape=(2,)) + dg.tensor("y", shape=(3,))


def test_special_function_edges():
    """inf, nan, the poles and tiny arguments (they raised OverflowError / ZeroDivisionError before)."""
    x = np.array([np.inf, np.nan, 0.0, -0.0, -1.0, -2.5, 1.4616321449683622, 3.0, 1.2e-225, -1e-200, 5e-324])
    v = dg.tensor("v", shape=(None,))
    f = dg.function([v], [dg.digamma(v), elemwise("trigamma", v), dg.gammaln(v)], backend="python")
    dig, tri, lg = f(x)
    np.testing.assert_allclose(dig, sp.digamma(x), rtol=1e-10, atol=1e-12, equal_nan=True)
    np.testing.assert_allclose(tri, sp.polygamma(1, x), rtol=1e-10, equal_nan=True)
    # scipy's gammaln(5e-324) is inf; the true value -log(5e-324) = 744.44 is what we give
    np.testing.assert_allclose(lg[:-1], sp.gammaln(x[:-1]), rtol=1e-10, equal_nan=True)
    np.testing.assert_allclose(lg[-1], -np.log(5e-324), rtol=1e-10)


# ---------------------------------------------------------------------------
# DimShuffle


@given(st.data())
def test_dimshuffle(data):
    shape = data.draw(shapes(0, 3, 0, 3))
    decl = data.draw(declared(shape))
    perm = data.draw(st.permutations(range(len(shape))))
    n_new = data.draw(st.integers(0, 2))
    order = list(perm)
    for _ in range(n_new):
        order.insert(data.draw(st.integers(0, len(order))), "x")
    # drop axes of static size 1
    droppable = [a for a in perm if decl[a] == 1]
    drop = set(data.draw(st.lists(st.sampled_from(droppable), unique=True))) if droppable else set()
    order = [o for o in order if o not in drop]
    x = dg.tensor("x", shape=decl, dtype="int32")
    op = dg.core.DimShuffle(len(shape), tuple(order))
    y = op(x)
    a = data.draw(arrays("int32", shape))
    kept = [o for o in order if o != "x"]
    expected = np.transpose(a, kept + sorted(drop)).reshape([a.shape[k] for k in kept])
    expected = np.expand_dims(expected, [k for k, o in enumerate(order) if o == "x"])
    check_outputs("python", [x], y, [a], expected)


def test_dimshuffle_rejects_dropping_non_broadcastable():
    with pytest.raises(ValueError, match="cannot drop axis 0"):
        dg.core.DimShuffle(2, (1,))(dg.tensor("x", shape=(None, 3)))


@given(st.data())
def test_transpose_expand_squeeze_helpers(data):
    shape = data.draw(shapes(1, 3, 0, 3))
    x = dg.tensor("x", shape=data.draw(declared(shape)))
    a = data.draw(arrays("float64", shape))
    axes = data.draw(st.permutations(range(len(shape))))
    new_axis = data.draw(st.integers(-len(shape) - 1, len(shape)))
    outs = [dg.core.transpose(x, axes), x.T, dg.core.expand_dims(x, new_axis)]
    expected = [np.transpose(a, axes), a.T, np.expand_dims(a, new_axis)]
    ones = dg.tensor("o", shape=(1,) + tuple(data.draw(declared(shape))))
    outs.append(dg.core.squeeze(ones, 0))
    check_outputs("python", [x, ones], outs, [a, a[None]], expected + [a])
