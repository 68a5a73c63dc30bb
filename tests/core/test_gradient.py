"""Gradients: the L_ops of elementwise, reduction and shape ops against finite differences, and `dg.grad` itself.

Per-op checks use `vjp_checks.NodeVJP` (one compiled vector-Jacobian product
per op and backend; hypothesis varies data and sizes). The framework tests
check `grad`/`value_and_grad`/`jacobian`/`hessian` on composed graphs against
central differences of the compiled cost (float64, EPS 1e-6, tolerance
1e-6 relative), and every error case.
"""

import numpy as np
import pytest
from hypothesis import strategies as st
from vjp_checks import NodeVJP, given

import dimgraph as dg
from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.reduce import CAReduce
from dimgraph.core.scalar import SCALAR_SPECS, Cast, Composite, NoDerivative, ScalarOp
from dimgraph.core.shape_ops import broadcast_to, reshape
from dimgraph.testing import numeric_grad

F64 = "float64"
seeds = st.integers(0, 2**32 - 1)

# Each op's inputs are drawn from a range where it is smooth (no poles, branch cuts or jumps nearby).
DOMAIN = {
    "log": (0.5, 3),
    "log2": (0.5, 3),
    "log10": (0.5, 3),
    "sqrt": (0.5, 3),
    "gammaln": (0.5, 4),
    "digamma": (0.5, 4),
    "log1p": (-0.4, 3),
    "arcsin": (-0.8, 0.8),
    "arccos": (-0.8, 0.8),
    "tan": (-1.0, 1.0),
    "reciprocal": (0.5, 3),
    "pow": (0.5, 2),
    "true_div": (0.5, 3),
    "mod": (0.5, 3),
    "logit": (0.1, 0.9),
    "log1mexp": (-3, -0.1),
    "xlogy": (0.5, 3),
    "betaln": (0.5, 4),
}
# Ops with a float derivative (a derivative of 0 included) in every input; where's condition has none,
# and stop_gradient deliberately passes none (`test_stop_gradient`).
SMOOTH = sorted(
    n for n, s in SCALAR_SPECS.items()
    if s.grad is not None and not isinstance(s.grad, NoDerivative)
    and n not in {"where", "gammainc", "gammaincc", "betainc", "betaincc", "stop_gradient"}
)  # fmt: skip


def draw(seed, shape, name):
    lo, hi = DOMAIN.get(name, (-2, 2))
    return np.random.default_rng(seed).uniform(lo, hi, size=shape)


@pytest.mark.parametrize("name", SMOOTH)
@given(n=st.integers(0, 3), seed=seeds)
def test_elemwise(backend, name, n, seed):
    """Every scalar op with a derivative; the second input broadcasts along axis 0 (its gradient is summed)."""
    op = ScalarOp(name)
    specs = [("x", (None, 3), F64)] + [("y", (1, 3), F64)] * (op.nin - 1)
    case = NodeVJP(("elemwise", name), backend, lambda *xs: Elemwise(op)(*xs), specs)
    values = [draw(seed, (n, 3), name)] + [draw(seed + 1, (1, 3), name)] * (op.nin - 1)
    case.check(values, seed)


@given(n=st.integers(0, 4), seed=seeds)
def test_where_and_cast(backend, n, seed):
    """where: no gradient to the condition; a float cast passes the gradient back in the input's dtype."""
    specs = [("c", (None,), "bool"), ("a", (None,), F64), ("b", (None,), F64)]
    case = NodeVJP("where", backend, lambda c, a, b: Elemwise(ScalarOp("where"))(c, a, b), specs)
    rng = np.random.default_rng(seed)
    case.check([rng.random(n) < 0.5, rng.normal(size=n), rng.normal(size=n)], seed)
    cast = NodeVJP("cast32", backend, lambda x: Elemwise(Cast(dtype="float32"))(x), [("x", (None,), F64)])
    (g,) = cast.f(rng.normal(size=n), np.ones(n, np.float32))[1:]
    assert g.dtype == np.float64 and np.array_equal(g, np.ones(n))


@pytest.mark.parametrize("name", ["gammainc", "gammaincc"])
@given(n=st.integers(0, 3), seed=seeds)
def test_incomplete_gamma_in_x(backend, name, n, seed):
    """P(a, x) and Q(a, x) differentiate in x (the shape a a constant here; its derivative is not implemented)."""
    a = np.array([[0.7, 1.9, 3.5]])
    case = NodeVJP(("elemwise", name), backend, lambda x: Elemwise(ScalarOp(name))(dg.core.constant(a), x),
                   [("x", (None, 3), F64)])  # fmt: skip
    case.check([np.random.default_rng(seed + 1).uniform(0.2, 5, size=(n, 3))], seed)


@pytest.mark.parametrize("name", ["betainc", "betaincc"])
@given(n=st.integers(0, 3), seed=seeds)
def test_incomplete_beta_in_x(backend, name, n, seed):
    """I_x(a, b) and its complement differentiate in x (the beta density; the shapes constants here)."""
    a, b = np.array([[0.7, 2.5, 40.0]]), np.array([[1.6, 0.9, 55.0]])
    case = NodeVJP(
        ("elemwise", name),
        backend,
        lambda x: Elemwise(ScalarOp(name))(dg.core.constant(a), dg.core.constant(b), x),
        [("x", (None, 3), F64)],
    )
    case.check([np.random.default_rng(seed + 1).uniform(0.05, 0.95, size=(n, 3))], seed)


def test_incomplete_beta_in_the_shapes_is_not_differentiable():
    """As gammainc's shape: no derivative in a or b, an error naming the op and the input; x alone is fine."""
    a, b, x = dg.scalar("a"), dg.scalar("b"), dg.scalar("x")
    with pytest.raises(dg.NonDifferentiable, match="betainc.*shapes a and b.*'a'"):
        dg.grad(dg.betainc(a, 2.0, x), a)
    with pytest.raises(dg.NonDifferentiable, match="betaincc.*shapes a and b.*'b'"):
        dg.grad(dg.betaincc(2.0, b, x), b)
    g = dg.function([x], dg.grad(dg.betaincc(2.5, 0.5, x), x), backend="python")(0.3)
    np.testing.assert_allclose(g, -beta_pdf(0.3, 2.5, 0.5), rtol=1e-12)


def beta_pdf(x, a, b):
    from scipy.stats import beta

    return beta.pdf(x, a, b)


def test_incomplete_gamma_in_a_is_not_differentiable():
    """The row says: no derivative in a. Asking for it names the op and the reason; x alone is fine."""
    a, x = dg.scalar("a"), dg.scalar("x")
    with pytest.raises(dg.NonDifferentiable, match="gammainc.*shape a.*'a'"):
        dg.grad(dg.gammainc(a, x), a)
    g = dg.grad(dg.gammaincc(2.5, x), x)
    np.testing.assert_allclose(dg.function([x], g, backend="python")(1.5), -stats_gamma_pdf(2.5, 1.5), rtol=1e-12)


def stats_gamma_pdf(a, x):
    from scipy.stats import gamma

    return gamma.pdf(x, a)


def test_composite(backend):
    """A fused kernel differentiates its scalar DAG (gradients are usually taken before fusion)."""
    comp = Composite(
        in_dtypes=(F64, F64),
        steps=((ScalarOp("mul"), (0, 1)), (ScalarOp("exp"), (2,)), (ScalarOp("sin"), (0,))),
        outs=(3, 4),
    )
    case = NodeVJP("composite", backend, lambda x, y: Elemwise(comp)(x, y), [("x", (None,), F64), ("y", (1,), F64)])
    for seed in range(3):
        case.check([draw(seed, (4,), "x"), draw(seed + 9, (1,), "y")], seed)


REDUCE_CASES = [
    ("add", (0,)),
    ("add", (0, 2)),
    ("mul", (1,)),
    ("mul", (0, 1, 2)),
    ("maximum", (2,)),
    ("minimum", (0, 1)),
]


@pytest.mark.parametrize("reducer, axis", REDUCE_CASES, ids=[f"{r}{a}" for r, a in REDUCE_CASES])
@given(shape=st.tuples(st.integers(1, 3), st.integers(1, 3), st.integers(1, 3)), seed=seeds)
def test_careduce(backend, reducer, axis, shape, seed):
    case = NodeVJP(
        ("reduce", reducer, axis), backend, lambda x: CAReduce(reducer, axis)(x), [("x", (None, None, None), F64)]
    )
    case.check(
        [
            np.random.default_rng(seed).uniform(0.5, 1.5, size=shape)
            * np.sign(np.random.default_rng(seed + 1).normal(size=shape))
        ],
        seed,
    )


def test_prod_with_zeros_and_max_ties(backend):
    """prod: exact products of the others when entries are 0; max/min: ties share the gradient equally."""
    x = dg.tensor("x", shape=(None,))
    f = dg.function([x], [dg.grad(x.prod(), x), dg.grad(x.max(), x), dg.grad(x.min(), x)], backend=backend)
    gp, gmax, gmin = f(np.array([2.0, 0.0, 3.0, 4.0]))
    np.testing.assert_array_equal(gp, [0.0, 24.0, 0.0, 0.0])
    gp, gmax, gmin = f(np.array([0.0, 5.0, 0.0, 5.0]))
    np.testing.assert_array_equal(gp, np.zeros(4))
    np.testing.assert_array_equal(gmax, [0.0, 0.5, 0.0, 0.5])
    np.testing.assert_array_equal(gmin, [0.5, 0.0, 0.5, 0.0])


def test_gradient_checks_the_length_of_its_variable(backend):
    """A gradient shaped by what the cost reads (`c`, `y`) refuses an `x` that the cost could not take."""
    x, y = dg.tensor("x", shape=(None,)), dg.tensor("y", shape=(None,))
    c = dg.core.constant(np.array([1.0, 2.0, 3.0]))
    f = dg.function([x, y], [dg.grad((x * c).sum(), x), dg.grad((x * y).sum(), x)], backend=backend)
    gc, gy = f(np.ones(3), np.array([4.0, 5.0, 6.0]))
    np.testing.assert_array_equal(gc, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(gy, [4.0, 5.0, 6.0])
    for xv, yv in ((np.ones(4), np.ones(3)), (np.ones(3), np.ones(4))):
        with pytest.raises((AssertionError, dg.ShapeError), match="'x' has another length|axis 0"):
            f(xv, yv)
    square = dg.function([x], dg.grad((x**2).sum(), x), backend=backend)
    assert not any(type(n.op).__name__ == "Assert" for n in square.fgraph.toposort())  # proved: x's own length
    np.testing.assert_array_equal(square(np.array([1.0, -2.0])), [2.0, -4.0])


def test_stop_gradient(backend):
    """stop_gradient is x in value and 0 in gradient; logsumexp's gradient is softmax, ties and -inf included."""
    x = dg.tensor("x", shape=(None,))
    held = dg.stop_gradient(x)
    lse = dg.logsumexp(x)
    f = dg.function([x], [held * x, dg.grad((held * x).sum(), x), lse, dg.grad(lse, x)], backend=backend)
    for v in (np.array([0.5, -2.0, 3.0]), np.array([1.0, 1.0]), np.array([-np.inf, 0.0, 0.0]), np.array([7.0])):
        prod, g, value, g_lse = f(v)
        np.testing.assert_array_equal(prod, v * v)
        np.testing.assert_array_equal(g, v)  # d/dx of stop(x) * x is stop(x), not 2x
        np.testing.assert_allclose(value, np.logaddexp.reduce(v), rtol=1e-15)
        soft = np.exp(v - np.logaddexp.reduce(v))
        np.testing.assert_allclose(g_lse, soft, rtol=1e-15, atol=1e-300)
        if np.isfinite(v).all():
            np.testing.assert_allclose(g_lse, numeric_grad(np.logaddexp.reduce, [v], 0), atol=1e-6)


def test_stop_gradient_labeled(backend):
    """dg.stop_gradient keeps a labeled operand's dims and holds it fixed in dg.grad."""
    i = dg.Dim("i", size=3)
    x = dg.labeled("x", dims=(i,))
    cost = (dg.stop_gradient(dg.exp(x)) * x).sum()
    f = dg.function([x], [dg.stop_gradient(x) + 1, dg.grad(cost, x)], backend=backend)
    v = np.array([0.0, 1.0, -1.0])
    out, g = f(v)
    assert out.dims == ("i",)
    np.testing.assert_array_equal(out.values, v + 1)
    np.testing.assert_allclose(g.values, np.exp(v), rtol=1e-15)


SHAPE_CASES = {
    "transpose": lambda x: DimShuffle(3, (2, 0, 1))(x),
    "expand_drop": lambda x: DimShuffle(3, ("x", 0, 2, "x"))(x),
    "reshape": lambda x: reshape(x, (-1, 2)),
}


@pytest.mark.parametrize("name", sorted(SHAPE_CASES))
@given(n=st.integers(0, 3), seed=seeds)
def test_shape_ops(backend, name, n, seed):
    case = NodeVJP(("shape", name), backend, SHAPE_CASES[name], [("x", (None, 1, 2), F64)])
    case.check([np.random.default_rng(seed).normal(size=(n, 1, 2))], seed)


@given(n=st.integers(0, 3), seed=seeds)
def test_broadcast_to(backend, n, seed):
    """Leading, static size-1 and run-time size-1 axes are summed back."""
    case = NodeVJP(
        "alloc", backend, lambda v, s: broadcast_to(v, (2, s, 3)), [("v", (None, 1), F64), ("s", (), "int64")]
    )
    rng = np.random.default_rng(seed)
    case.check([rng.normal(size=(1, 1)), np.int64(n)], seed)
    case.check([rng.normal(size=(n, 1)), np.int64(n)], seed)


# ---------------------------------------------------------------------------
# the framework


@pytest.fixture(scope="module")
def hierarchical():
    """A hierarchical normal model: group means mu[g], a shared log-scale, observations y."""
    mu = dg.tensor("mu", shape=(None,))
    log_sigma = dg.scalar("log_sigma")
    group = dg.tensor("group", shape=(None,), dtype="int64")
    y = dg.tensor("y", shape=(None,))
    sigma = dg.exp(log_sigma)
    resid = (y - mu[group]) / sigma
    logp = (-0.5 * resid**2 - log_sigma).sum() + (-0.5 * mu**2).sum() + dg.gammaln(sigma + 1)
    return [mu, log_sigma, group, y], logp


@given(n_obs=st.integers(1, 12), n_group=st.integers(1, 4), seed=seeds)
def test_hierarchical_value_and_grad(backend, hierarchical, n_obs, n_group, seed):
    inputs, logp = hierarchical
    mu, log_sigma = inputs[:2]
    f = _compiled(
        ("hier", backend),
        lambda: dg.function(inputs, [logp, *dg.value_and_grad(logp, [mu, log_sigma])[1]], backend=backend),
    )
    cost = _compiled(("hier-cost",), lambda: dg.function(inputs, logp, backend="python"))
    rng = np.random.default_rng(seed)
    vals = [
        rng.normal(size=n_group),
        np.float64(rng.normal() * 0.3),
        rng.integers(0, n_group, n_obs),
        rng.normal(size=n_obs),
    ]
    value, g_mu, g_ls = f(*vals)
    np.testing.assert_allclose(value, cost(*vals), rtol=1e-12)
    np.testing.assert_allclose(g_mu, numeric_grad(cost, vals, 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(g_ls, numeric_grad(cost, vals, 1), rtol=1e-6, atol=1e-6)


_FUNCTIONS = {}


def _compiled(key, make):
    if key not in _FUNCTIONS:
        _FUNCTIONS[key] = make()
    return _FUNCTIONS[key]


def test_value_and_grad_agrees_with_separate_calls(backend):
    x = dg.tensor("x", shape=(3,))
    cost = dg.logsumexp(x * 2) + dg.softplus(x).mean()
    v, (g,) = dg.value_and_grad(cost, [x])
    assert v is cost
    a = np.array([0.3, -1.0, 2.0])
    both = dg.function([x], [v, g], backend=backend)(a)
    np.testing.assert_allclose(both[0], dg.function([x], cost, backend=backend)(a), rtol=1e-14)
    np.testing.assert_allclose(both[1], dg.function([x], dg.grad(cost, x), backend=backend)(a), rtol=1e-14)


def test_jacobian_and_hessian(backend):
    x = dg.tensor("x", shape=(3,))
    a = np.array([0.5, -1.0, 2.0])
    y = dg.core.concatenate([x**2, dg.sin(x[:1]) * x[1:2]])
    jac, hess = dg.function([x], [dg.jacobian(y, x), dg.hessian((x**3).sum() + x[0] * x[2], x)], backend=backend)(a)
    expected = np.zeros((4, 3))
    expected[[0, 1, 2], [0, 1, 2]] = 2 * a
    expected[3] = [np.cos(a[0]) * a[1], np.sin(a[0]), 0.0]
    np.testing.assert_allclose(jac, expected, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(hess, np.diag(6 * a) + np.array([[0, 0, 1], [0, 0, 0], [1, 0, 0]]), rtol=1e-12)


def test_float32_gradients_stay_float32(backend):
    x = dg.tensor("x", shape=(2,), dtype="float32")
    g = dg.grad((dg.exp(x) * 2.0).sum(), x)
    assert g.type.dtype == "float32"
    out = dg.function([x], g, backend=backend)(np.array([0.0, 1.0], np.float32))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, 2 * np.exp([0.0, 1.0]), rtol=1e-6)


def test_errors():
    x = dg.tensor("x", shape=(3,))
    i = dg.tensor("i", shape=(3,), dtype="int64")
    z = dg.tensor("z", shape=(2,))
    with pytest.raises(ValueError, match="0-d"):
        dg.grad(x * 2, x)
    with pytest.raises(TypeError, match="float"):
        dg.grad(i.sum(), x)
    with pytest.raises(TypeError, match="'i'.*int64"):
        dg.grad((x * i).sum(), i)
    with pytest.raises(ValueError, match="does not depend on 'z'.*disconnected='zero'"):
        dg.grad(x.sum(), [x, z])
    with pytest.raises(ValueError, match="disconnected must be"):
        dg.grad(x.sum(), x, disconnected="ignore")
    with pytest.raises(dg.NonDifferentiable, match="trigamma.*'x'"):
        dg.grad(dg.trigamma(x).sum(), x)
    gx, gz = dg.grad(x.sum(), [x, z], disconnected="zero")
    np.testing.assert_array_equal(
        dg.function([x, z], [gx, gz], backend="python")(np.ones(3), np.ones(2))[1], [0.0, 0.0]
    )


def test_fused_reduction(backend):
    """A fused sum/max of a Composite (what the fusion rewrite makes) unfuses for its gradient."""
    from dimgraph.core.fused import CAReduceElemwise

    steps = ((ScalarOp("mul"), (0, 1)), (ScalarOp("sin"), (2,)))
    # The C backend emits single-output fused reductions only (a multi-output one fails in its emitter).
    outs_cases = [(3,)] + ([(3, 2)] if backend != "c" else [])
    for reducer, outs in [(r, o) for r in ("add", "maximum") for o in outs_cases]:
        comp = Composite(in_dtypes=(F64, F64), steps=steps, outs=outs)
        case = NodeVJP(
            ("fused", reducer, outs),
            backend,
            lambda x, y: CAReduceElemwise(comp, reducer, (0,))(x, y),
            [("x", (None, 3), F64), ("y", (1, 3), F64)],
        )
        for seed in range(2):
            case.check([draw(seed, (4, 3), "x"), draw(seed + 5, (1, 3), "y")], seed)


def test_shape_and_argmax_pass_no_gradient(backend):
    """Lengths and positions are flat in the values: a cost built from them alone is disconnected."""
    x = dg.tensor("x", shape=(None,))
    from dimgraph.core.math import cast

    cost = cast(x.shape[0], F64) + cast(x.argmax(), F64)
    with pytest.raises(ValueError, match="does not depend"):
        dg.grad(cost, x)
    g = dg.grad(cost + x.sum(), x, disconnected="zero")
    np.testing.assert_array_equal(dg.function([x], g, backend=backend)(np.array([1.0, 3.0, 2.0])), np.ones(3))
    for out in (x.shape[0], x.argmax()):
        assert out.owner.op.L_op(list(out.owner.inputs), list(out.owner.outputs), [out]) == [None]


# mean/var/std/logsumexp lower to sums, products and elementwise ops; these chains check the lowering's
# gradients (and the broadcasting of their keepdims results) against per-element central differences.
REDUCTION_CHAINS = {
    "mean": lambda x, w: (dg.core.mean(x, axis=1) * w).sum(),
    "var": lambda x, w: (dg.core.var(x, axis=1, ddof=1) * w).sum() + dg.core.var(x),
    "std": lambda x, w: (dg.core.std(x, axis=1, keepdims=True) * x).sum(),
    "logsumexp": lambda x, w: dg.logsumexp(x * 3.0, axis=1).sum() + dg.logsumexp(x),
    "max_min": lambda x, w: (dg.core.max(x, axis=1) * w).sum() + dg.core.min(x),
    "prod": lambda x, w: dg.core.prod(x, axis=1).sum(),
    "clip_where": lambda x, w: dg.where(x > 0, dg.clip(x, -0.5, 0.5) ** 2, dg.maximum(x, w[:, None] * 0.1)).sum(),
    "outer": lambda x, w: (dg.logaddexp(x, w[:, None]) * dg.softplus(-x)).sum() + (dg.erfc(w) * dg.sigmoid(w)).sum(),
    # the x-gradient and the gradient of erfc(w) read the same broadcast of the cost's gradient
    "sibling_kernels": lambda x, w: (dg.erfc(w[None, :]) * x[:, :2]).sum(),
}


@pytest.mark.parametrize("name", sorted(REDUCTION_CHAINS))
@given(seed=seeds)
def test_reduction_chains(backend, name, seed):
    x = dg.tensor("x", shape=(None, None))
    w = dg.tensor("w", shape=(None,))
    cost = REDUCTION_CHAINS[name](x, w)
    f = _compiled(
        ("chain", name, backend),
        lambda: dg.function([x, w], [cost, *dg.grad(cost, [x, w], disconnected="zero")], backend=backend),
    )
    ref = _compiled(("chain-cost", name), lambda: dg.function([x, w], cost, backend="python"))
    rng = np.random.default_rng(seed)
    # distinct magnitudes away from 0: no max/min ties and no kinks of clip/maximum within EPS
    vals = [
        rng.permutation(np.linspace(0.2, 1.4, 6)).reshape(2, 3) * rng.choice([-1, 1], size=(2, 3)),
        rng.uniform(0.5, 1.5, 2),
    ]
    value, gx, gw = f(*vals)
    np.testing.assert_allclose(value, ref(*vals), rtol=1e-12)
    np.testing.assert_allclose(gx, numeric_grad(ref, vals, 0), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(gw, numeric_grad(ref, vals, 1), rtol=1e-6, atol=1e-6)
