"""Differential tests: random labeled programs against xarray on the same data.

Each example draws 2-4 Dims (sizes 0-3, some with coords, some of unknown size),
inputs over random subsets of them in random orders, and a random program of
math, reductions, scans and shape ops applied step by step to both a labeled
variable and an xarray.DataArray. One compiled function per example; results are
compared on values, dims, dim order, coords and dtype. Whatever xarray refuses
is skipped; whatever xarray does, dimgraph must do the same (the one designed
difference: two different Dims of one name are a DimError, where xarray aligns).
"""

import os
import warnings

import numpy as np
import scipy.special
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from labeled_strategies import dataarray, dims_strategy, few

import dimgraph as dg

NAMES = ("a", "bb", "c", "d")


def small_values(rng, shape, dtype):
    """Floats in [-2, 2); integers in [-3, 3]; booleans half true."""
    if np.dtype(dtype).kind == "f":
        return rng.uniform(-2, 2, shape).astype(dtype)
    if dtype == "bool":
        return rng.uniform(size=shape) > 0.5
    return rng.integers(-3, 4, shape).astype(dtype)


DIMS = dims_strategy(min_n=2, names=NAMES, kinds=("size", "coords", "unknown"), shuffle=False)


@st.composite
def inputs_strategy(draw, dims, sizes, n_min=1, n_max=3, dtypes=("float64", "float32", "int64", "bool")):
    n = draw(st.integers(n_min, n_max))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    pairs = []
    for k in range(n):
        sub = draw(st.lists(st.sampled_from(dims), unique=True, max_size=len(dims)))
        dtype = draw(st.sampled_from(dtypes))
        var = dg.labeled(f"in{k}", dims=tuple(sub), dtype=dtype)
        pairs.append((var, dataarray(rng, sub, sizes, dtype, data_coords=True, values=small_values)))
    return pairs


UNARY = {
    "exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1, "sqrt": np.sqrt, "square": np.square,
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "tanh": np.tanh, "sigmoid": scipy.special.expit,
    "softplus": lambda x: np.logaddexp(x, 0) if x.dtype.kind in "fc" else np.logaddexp(x.astype("float64"), 0.0),
    "erf": scipy.special.erf, "erfc": scipy.special.erfc,
    "isnan": np.isnan, "isfinite": np.isfinite, "floor": np.floor, "ceil": np.ceil, "sign": np.sign,
}  # fmt: skip
SCIPY_BASED = {"sigmoid", "erf", "erfc"}
POSITIVE_ONLY = {"gammaln": scipy.special.gammaln, "digamma": scipy.special.digamma}
BINARY = {
    "add": (lambda a, b: a + b, lambda a, b: a + b),
    "sub": (lambda a, b: a - b, lambda a, b: a - b),
    "mul": (lambda a, b: a * b, lambda a, b: a * b),
    "div": (lambda a, b: a / b, lambda a, b: a / b),
    "pow": (lambda a, b: a**b, lambda a, b: a**b),
    "gt": (lambda a, b: a > b, lambda a, b: a > b),
    "eq": (lambda a, b: a == b, lambda a, b: a == b),
    "and": (lambda a, b: a & b, lambda a, b: a & b),
    "maximum": (dg.maximum, np.maximum),
    "minimum": (dg.minimum, np.minimum),
    "logaddexp": (dg.logaddexp, np.logaddexp),
}
REDUCTIONS = ["sum", "mean", "prod", "max", "min", "std", "var", "all", "any", "logsumexp", "argmax", "argmin"]


def xr_reduce(kind, da, names):
    if kind == "logsumexp":
        names = list(da.dims) if names is None else names
        axes = tuple(range(-len(names), 0))

        def lse(v):
            if v.size == 0:  # scipy fails on several empty axes; the sum of nothing is 0, its log -inf
                return np.full(v.shape[: v.ndim - len(axes)], -np.inf, dtype=v.dtype)
            return scipy.special.logsumexp(v, axis=axes) if axes else scipy.special.logsumexp(v[..., None], axis=-1)

        return xr.apply_ufunc(lse, da.astype("float64") if da.dtype.kind not in "fc" else da, input_core_dims=[names])
    if kind in ("argmax", "argmin"):
        return getattr(da, kind)(names[0], skipna=False)
    if kind in ("all", "any"):
        return getattr(da, kind)(names)
    return getattr(da, kind)(names, skipna=False)


def _xr(fn, *args):
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        return fn(*args)


@st.composite
def step(draw, pool, dims, sizes):
    """One random operation on pairs from `pool`: (description, labeled fn, xarray fn, operands)."""
    x = draw(st.sampled_from(pool))
    lab, da = x
    kind = draw(st.sampled_from(["unary", "binary", "scalar", "where", "reduce", "scan", "shape", "shape", "astype"]))
    if kind == "unary":
        name = draw(st.sampled_from(sorted(UNARY)))
        if name in SCIPY_BASED and da.dtype == bool:
            return None  # scipy picks float32/float64 loops for bool; dimgraph follows np.exp's rule (float16)
        return name, lambda: getattr(dg, name)(lab), lambda: UNARY[name](da)
    if kind == "binary":
        name = draw(st.sampled_from(sorted(BINARY)))
        y_lab, y_da = draw(st.sampled_from(pool))
        f_lab, f_xr = BINARY[name]
        return name, lambda: f_lab(lab, y_lab), lambda: f_xr(da, y_da)
    if kind == "scalar":
        name = draw(st.sampled_from(["add", "sub", "mul", "div", "gt", "maximum"]))
        value = draw(st.sampled_from([2, -1, 0.5, 1.5, True]))
        f_lab, f_xr = BINARY[name]
        if draw(st.booleans()):
            return f"{name} scalar", lambda: f_lab(lab, value), lambda: f_xr(da, value)
        return f"scalar {name}", lambda: f_lab(value, lab), lambda: f_xr(value, da)
    if kind == "where":
        c_lab, c_da = draw(st.sampled_from(pool))
        y_lab, y_da = draw(st.sampled_from(pool))
        if draw(st.booleans()):
            return "where", lambda: dg.where(c_lab > 0, lab, y_lab), lambda: xr.where(c_da > 0, da, y_da)
        other = draw(st.sampled_from([0, 1.5]))
        return "where method", lambda: lab.where(c_lab > 0, other), lambda: da.where(c_da > 0, other)
    if kind == "reduce":
        red = draw(st.sampled_from(REDUCTIONS))
        if red in ("argmax", "argmin"):
            if not lab.dims:
                return None
            names = [draw(st.sampled_from(lab.dims)).name]
        elif draw(st.integers(0, 3)) == 0:
            names = None
        else:
            names = (
                [d.name for d in draw(st.lists(st.sampled_from(lab.dims), unique=True, max_size=lab.ndim))]
                if lab.dims
                else []
            )
        empty = any(da.sizes[n] == 0 for n in (names if names is not None else [d.name for d in lab.dims]))
        if red in ("max", "min", "argmax", "argmin") and empty:
            return None
        reduced = names if names is not None else [d.name for d in lab.dims]
        if red == "logsumexp" and any(da.sizes[d.name] == 0 and d.size is None for d in lab.dims if d.name in reduced):
            return None
        ref = names if names is None or draw(st.booleans()) else [d for d in lab.dims if d.name in names]
        if ref is not None and len(ref) == 1 and draw(st.booleans()):
            ref = ref[0]  # a lone name or Dim
        if red == "logsumexp":
            return f"logsumexp {names}", lambda: dg.logsumexp(lab, ref), lambda: xr_reduce(red, da, names)
        if red in ("argmax", "argmin") and isinstance(ref, list):  # a list gives xarray's dict {dim: positions}
            return f"{red} {names}", lambda: getattr(lab, red)(ref)[names[0]], lambda: xr_reduce(red, da, names)
        return f"{red} {names}", lambda: getattr(lab, red)(ref), lambda: xr_reduce(red, da, names)
    if kind == "scan":
        if not lab.dims:
            return None
        d = draw(st.sampled_from(lab.dims))
        which = draw(st.sampled_from(["cumsum", "cumprod", "diff"]))
        if which == "diff":
            n = draw(st.integers(0, 2))
            return f"diff {d.name} {n}", lambda: lab.diff(d.name, n), lambda: da.diff(d.name, n)
        return f"{which} {d.name}", lambda: getattr(lab, which)(d), lambda: getattr(da, which)(d.name, skipna=False)
    if kind == "astype":
        dtype = draw(st.sampled_from(["float32", "float64"] + (["int64", "bool"] if da.dtype.kind in "bi" else [])))
        return f"astype {dtype}", lambda: lab.astype(dtype), lambda: da.astype(dtype)
    which = draw(
        st.sampled_from(
            ["transpose", "transpose ...", "rename", "expand_dims", "broadcast_like", "squeeze", "broadcast"]
        )
    )
    if which == "transpose":
        order = draw(st.permutations(lab.dims))
        return (
            "transpose",
            lambda: lab.transpose(*[d.name for d in order]),
            lambda: da.transpose(*[d.name for d in order]),
        )
    if which == "transpose ...":
        if not lab.dims:
            return None
        d = draw(st.sampled_from(lab.dims))
        return "transpose ...", lambda: lab.transpose(..., d), lambda: da.transpose(..., d.name)
    if which == "rename":
        if not lab.dims:
            return None
        d = draw(st.sampled_from(lab.dims))
        if d.name.startswith("r_"):
            return None
        return (
            f"rename {d.name}",
            lambda: lab.rename({d.name: "r_" + d.name}),
            lambda: da.rename({d.name: "r_" + d.name}),
        )
    if which == "expand_dims":
        free = [d for d in dims if d.name not in lab.type.names and d.size is not None]
        if not free:
            return None
        d = draw(st.sampled_from(free))
        spec = {d.name: list(d.coords) if d.coords is not None else d.size}
        return f"expand_dims {d.name}", lambda: lab.expand_dims(d), lambda: da.expand_dims(spec)
    if which in ("broadcast_like", "broadcast"):
        y_lab, y_da = draw(st.sampled_from(pool))
        if which == "broadcast":
            return "broadcast", lambda: dg.broadcast(lab, y_lab)[0], lambda: xr.broadcast(da, y_da)[0]
        return "broadcast_like", lambda: lab.broadcast_like(y_lab), lambda: da.broadcast_like(y_da)
    ones = [d for d in lab.dims if d.size == 1]
    if not ones:
        return None
    return "squeeze", lambda: lab.squeeze(), lambda: da.squeeze([d.name for d in ones])


def assert_matches(out, expected, what):
    assert isinstance(out, xr.DataArray), what
    assert out.dims == expected.dims, f"{what}: dims {out.dims} vs xarray {expected.dims}"
    assert out.dtype == expected.dtype, f"{what}: dtype {out.dtype} vs xarray {expected.dtype}"
    for name in expected.dims:
        ours, theirs = out.indexes.get(name), expected.indexes.get(name)
        assert (ours is None) == (theirs is None), f"{what}: coords of {name!r}: {ours} vs {theirs}"
        if ours is not None:
            assert ours.equals(theirs), f"{what}: coords of {name!r}: {list(ours)} vs {list(theirs)}"
    tol = 2e-4 if out.dtype == np.float32 else 1e-9
    np.testing.assert_allclose(out.values, expected.values, rtol=tol, atol=tol, equal_nan=True, err_msg=what)


def _clash(err):
    return "two different dims named" in str(err)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_random_programs_match_xarray(backend, data):
    dims, sizes = data.draw(DIMS)
    pool = data.draw(inputs_strategy(dims, sizes, 1, 3))
    inputs = list(pool)
    history = []
    for _ in range(data.draw(st.integers(1, 5))):
        op = data.draw(step(pool, dims, sizes))
        if op is None:
            continue
        what, f_lab, f_xr = op
        try:
            expected = _xr(f_xr)
        except (TypeError, ValueError, KeyError):
            continue  # xarray (NumPy) refuses: nothing to compare
        try:
            result = f_lab()
        except dg.DimError as err:
            if _clash(err):
                continue
            raise
        history.append(what)
        pool.append((result, expected))
    outputs = pool[len(inputs) :] or inputs[:1]
    f = dg.function([v for v, _ in inputs], [v for v, _ in outputs], backend=backend)
    got = f(*[da for _, da in inputs])
    for k, (out, (_, expected)) in enumerate(zip(got, outputs)):
        assert_matches(out, expected, f"step {k} of {history}")
    if os.environ.get("DIMGRAPH_TEST_VERBOSE"):
        print("program:", history)


@settings(max_examples=few(5), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_math_function_matches_xarray(backend, data):
    dims, sizes = data.draw(DIMS)
    ((x, da),) = data.draw(inputs_strategy(dims, sizes, 1, 1, dtypes=("float64", "float32", "int64")))
    outs, expected = [], []
    for name, fn in {**UNARY, **POSITIVE_ONLY}.items():
        arg, arg_da = (abs(x) + 0.5, abs(da) + 0.5) if name in POSITIVE_ONLY else (x, da)
        outs.append(getattr(dg, name)(arg))
        expected.append(_xr(fn, arg_da))
    for name in ["round", "abs", "neg", "clip", "logaddexp", "maximum", "minimum", "where"]:
        if name == "round":
            outs.append(dg.round(x * 3.7))
            expected.append(np.round(da * 3.7))
        elif name == "abs":
            outs.append(abs(x))
            expected.append(abs(da))
        elif name == "neg":
            outs.append(-x)
            expected.append(-da)
        elif name == "clip":
            outs.append(dg.clip(x, -1, 1))
            expected.append(da.clip(-1, 1))
        elif name == "where":
            outs.append(dg.where(x > 0, x, 0))
            expected.append(xr.where(da > 0, da, 0))
        else:
            outs.append(getattr(dg, name)(x, 0.5))
            expected.append(_xr(getattr(np, name), da, 0.5))
    f = dg.function([x], outs, backend=backend)
    for out, exp, name in zip(
        f(da),
        expected,
        list(UNARY) + list(POSITIVE_ONLY) + ["round", "abs", "neg", "clip", "logaddexp", "maximum", "minimum", "where"],
    ):
        assert_matches(out, exp, name)


@settings(max_examples=few(5), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_reduction_over_every_dim_choice(backend, data):
    dims, sizes = data.draw(DIMS)
    ((x, da),) = data.draw(inputs_strategy(dims, sizes, 1, 1, dtypes=("float64", "float32", "int64", "bool")))
    outs, expected, labels = [], [], []
    choices = [None] + ([[data.draw(st.sampled_from(x.dims)).name]] if x.dims else [])
    choices += [[d.name for d in x.dims[:2]]] if x.ndim >= 2 else []
    for kind in REDUCTIONS:
        for names in choices:
            if kind in ("argmax", "argmin") and (names is None or len(names) != 1):
                continue
            reduced = names if names is not None else [d.name for d in x.dims]
            if kind in ("max", "min", "argmax", "argmin") and any(sizes[n] == 0 for n in reduced):
                continue
            if kind == "logsumexp" and any(sizes[d.name] == 0 and d.size is None for d in x.dims if d.name in reduced):
                continue  # known limitation: the max shift has no identity on a dim found empty at run time
            try:
                exp = _xr(xr_reduce, kind, da, names)
            except (TypeError, ValueError):
                continue
            if kind in ("argmax", "argmin"):
                outs.append(getattr(x, kind)(names[0]))
            else:
                outs.append(dg.logsumexp(x, names) if kind == "logsumexp" else getattr(x, kind)(names))
            expected.append(exp)
            labels.append(f"{kind} {names}")
    if not outs:
        return
    f = dg.function([x], outs, backend=backend)
    for out, exp, what in zip(f(da), expected, labels):
        assert_matches(out, exp, what)


def test_creation_and_broadcast_ops_match_xarray(backend):
    c = dg.Dim("c", coords=["u", "v"])
    n = dg.Dim("n")
    x = dg.labeled("x", dims=(n, c), dtype="float32")
    da = xr.DataArray(np.arange(6, dtype="float32").reshape(3, 2), dims=("n", "c"), coords={"c": ["u", "v"]})
    cases = {
        "zeros_like": (dg.zeros_like(x), xr.zeros_like(da)),
        "ones_like int": (dg.ones_like(x, dtype="int64"), xr.ones_like(da, dtype="int64")),
        "full_like": (dg.full_like(x, 2.5), xr.full_like(da, 2.5)),
        "arange": (dg.arange(c) + x, xr.DataArray(np.arange(2), dims="c", coords={"c": ["u", "v"]}) + da),
        "expand_dims": (x.expand_dims(dg.Dim("k", size=2)), da.expand_dims({"k": 2})),
        "broadcast": (dg.broadcast(x.sum("n"), x)[0], xr.broadcast(da.sum("n"), da)[0]),
        "T": (x.T, da.T),
        "rename dim": (x.rename(c="cc"), da.rename(c="cc")),
    }
    got = dg.function([x], [v for v, _ in cases.values()], backend=backend)(da)
    for (name, (_, expected)), out in zip(cases.items(), got):
        assert_matches(out, expected, name)


def test_dims_reached_by_broadcasting_keep_their_labels(backend):
    """A dim an output gains only by broadcasting carries the labels its source gives it, as in xarray.

    `w` has no coords of its own: its labels come with the DataArray given for `y`, which the
    broadcasts read only for its dims (not its data); `wc` has coords on the Dim.
    """
    t, w, s = dg.Dim("t"), dg.Dim("w"), dg.Dim("s", size=2)
    wc = dg.Dim("wc", coords=[10, 20, 30])
    x, y, z = dg.labeled("x", dims=(t,)), dg.labeled("y", dims=(w,)), dg.labeled("z", dims=(s, w))
    X = xr.DataArray(np.arange(2.0), dims="t", coords={"t": ["a", "b"]})
    Y = xr.DataArray(np.arange(3.0) - 1, dims="w", coords={"w": [5, 6, 7], "extra": ("w", list("pqr"))})
    Z = xr.DataArray(np.arange(6.0).reshape(2, 3), dims=("s", "w"), coords={"w": [5, 6, 7]})
    cases = {
        "broadcast_like": (x.broadcast_like(y), X.broadcast_like(Y)),
        "broadcast_like of a result": ((2 * x).broadcast_like(z.sum("s")), (2 * X).broadcast_like(Z.sum("s"))),
        "broadcast": (dg.broadcast(x, y)[0], xr.broadcast(X, Y)[0]),
        "broadcast, then math": (dg.broadcast(x, z)[0].sum("t") * 2, xr.broadcast(X, Z)[0].sum("t") * 2),
        "arithmetic": (x + y, X + Y),
        "expand_dims of a Dim with coords": (x.expand_dims(wc), X.expand_dims({"wc": [10, 20, 30]})),
        "vectorize: a batch dim the function ignores": (
            dg.vectorize(lambda a, b: a.sum("t") + 1.0, [("t",), ()], [()])(x, y),
            xr.apply_ufunc(
                lambda a, b: a.sum() + 1.0, X, Y.drop_vars("extra"), input_core_dims=[["t"], []], vectorize=True
            ),
        ),
        "vectorize: batch dims of two inputs": (
            dg.vectorize(lambda a, b: a * 2.0, [("t",), ("s",)], [("t",)])(x, z),
            xr.apply_ufunc(
                lambda a, b: a * 2.0, X, Z, input_core_dims=[["t"], ["s"]], output_core_dims=[["t"]], vectorize=True
            ),
        ),
    }
    got = dg.function([x, y, z], [v for v, _ in cases.values()], backend=backend)(X, Y, Z)
    for (name, (_, expected)), out in zip(cases.items(), got):
        assert_matches(out, expected, name)
        assert set(out.coords) == set(expected.coords), (
            f"{name}: coords {set(out.coords)} vs xarray {set(expected.coords)}"
        )
    plain = dg.function([x, y], x.broadcast_like(y), backend=backend)(X.values, Y.values)
    assert not plain.coords  # NumPy in: no labels, as xarray on bare arrays


def test_reduction_scan_and_dtype_options_match_xarray(backend):
    """Options found to disagree with xarray by differential testing: `...` and lists of dims in reductions and
    scans, argmax/argmin dicts (joint positions over several dims), diff's lower labels, round of integers,
    `where`'s default fill dtype, and Python ints outside a small integer dtype (NEP 50)."""
    a, c = dg.Dim("a", coords=["p", "q", "r"]), dg.Dim("c")
    rng = np.random.default_rng(7)
    das = {
        "x": xr.DataArray(rng.normal(size=(3, 4)), dims=("a", "c"), coords={"a": ["p", "q", "r"], "c": [9, 7, 5, 3]}),
        "i8": xr.DataArray(
            rng.integers(-60, 60, (4, 3)).astype("int8"), dims=("c", "a"), coords={"a": ["p", "q", "r"]}
        ),
        "u8": xr.DataArray(rng.integers(0, 250, (3,)).astype("uint8"), dims=("a",), coords={"a": ["p", "q", "r"]}),
        "z": xr.DataArray(np.float32(1.5)),
    }
    x = dg.labeled("x", dims=(a, c))
    i8 = dg.labeled("i8", dims=(c, a), dtype="int8")
    u8 = dg.labeled("u8", dims=(a,), dtype="uint8")
    z = dg.labeled("z", dims=(), dtype="float32")
    X, I8, U8 = das["x"], das["i8"], das["u8"]
    cases = {
        "sum ...": (x.sum(...), X.sum(...)),
        "std ... ddof=1": (x.std(..., ddof=1), X.std(..., ddof=1)),
        "all ...": ((i8 > 0).all(...), (I8 > 0).all(...)),
        "argmax [a, c] a": (x.argmax(["c", "a"])["a"], X.argmax(["c", "a"])["a"]),
        "argmax [a, c] c": (x.argmax(["c", "a"])["c"], X.argmax(["c", "a"])["c"]),
        "argmin ... c": (i8.argmin(...)["c"], I8.argmin(...)["c"]),
        "argmin [c]": (x.argmin(["c"])["c"], X.argmin(["c"])["c"]),
        "argmax 0-d": (z.argmax(), xr.DataArray(np.int64(0))),  # xarray (with a FutureWarning): the only position
        "cumsum all": (x.cumsum(), X.cumsum()),
        "cumprod [c, a]": (i8.cumprod(["c", "a"]), I8.cumprod(["c", "a"])),
        "diff lower a": (x.diff("a", label="lower"), X.diff("a", label="lower")),
        "diff lower c n=2": (x.diff("c", 2, label="lower"), X.diff("c", 2, label="lower")),
        "round int -1": (i8.round(-1), I8.round(-1)),
        "round int 2": (i8.round(2), I8.round(2)),
        "where int8": (i8.where(i8 > 0), I8.where(I8 > 0)),
        "where uint8": (u8.where(u8 > 100), U8.where(U8 > 100)),
        "int8 > 300": (i8 > 300, I8 > 300),
        "uint8 / -1": (u8 / -1, U8 / -1),
        "clip uint8 wide": (u8.clip(-1, 300), U8.clip(-1, 300)),
    }
    f = dg.function([x, i8, u8, z], [v for v, _ in cases.values()], backend=backend)
    for (name, (_, expected)), out in zip(cases.items(), f(das["x"], das["i8"], das["u8"], das["z"])):
        assert_matches(out, expected, name)
    assert list(x.argmax(["c", "a"])) == ["a", "c"]  # keys in the variable's dim order, as xarray
    assert x.argmax([]) == {}


def test_skipna_matches_xarray(backend):
    """`skipna=True` leaves NaNs out of float reductions and scans as xarray (NumPy's nan-functions):
    all-NaN sums are 0, all-NaN means/maxima/variances NaN, too few values for ddof NaN."""
    a, c = dg.Dim("a", coords=["p", "q", "r"]), dg.Dim("c")
    x = dg.labeled("x", dims=(a, c), dtype="float32")
    i = dg.labeled("i", dims=(c,), dtype="int64")
    data = np.array([[1.0, np.nan, 3.0, 4.0], [np.nan] * 4, [2.0, -1.0, np.nan, 5.0]], dtype="float32")
    X = xr.DataArray(data, dims=("a", "c"), coords={"a": ["p", "q", "r"]})
    I = xr.DataArray(np.array([3, 1, 2, 0]), dims="c")
    cases = {}
    warnings.simplefilter("ignore")  # NumPy warns of all-NaN slices (pytest restores the filters)
    for kind in ("sum", "prod", "mean", "max", "min", "var", "std"):
        for dim in ("c", "a", None):
            cases[f"{kind} {dim}"] = (getattr(x, kind)(dim, skipna=True), getattr(X, kind)(dim, skipna=True))
    cases["std ddof=1"] = (x.std("c", ddof=1, skipna=True), X.std("c", ddof=1, skipna=True))
    cases["var ddof=3"] = (x.var("c", ddof=3, skipna=True), X.var("c", ddof=3, skipna=True))
    cases["cumsum"] = (x.cumsum("c", skipna=True), X.cumsum("c", skipna=True))
    cases["cumprod"] = (x.cumprod("a", skipna=True), X.cumprod("a", skipna=True))
    cases["argmax"] = (x.argmax("a", skipna=True), X.argmax("a", skipna=True))
    cases["argmin dict"] = (x.argmin(["a", "c"], skipna=True)["c"], X.argmin(["a", "c"], skipna=True)["c"])
    cases["int: no NaNs to skip"] = (i.mean(skipna=True), I.mean(skipna=True))
    cases["skipna=False"] = (x.sum("c", skipna=False), X.sum("c", skipna=False))
    f = dg.function([x, i], [v for v, _ in cases.values()], backend=backend)
    for (name, (_, expected)), out in zip(cases.items(), f(X, I)):
        assert_matches(out, expected, name)
