"""Cases ported from PyTensor's own tests (tests/test_ifelse.py, tests/scan/test_basic.py,
tests/compile/test_builders.py, tests/tensor/test_blockwise.py), on every backend.

Values against NumPy/SciPy (or the numbers PyTensor's tests assert), gradients
against central finite differences of a NumPy oracle. Each compiled function is
built once per backend (`_compiled`) and called on several inputs. Where
dimgraph deliberately differs from PyTensor the test says so:
- `dg.ifelse` promotes branch dtypes as NumPy does (PyTensor raises TypeError);
- a non-0-d condition is a ValueError (PyTensor: TypeError);
- a scan has no `outputs_info=None` outputs or `go_backwards`: a map is a state
  the step overwrites, a backward scan reads a reversed sequence.
"""

import numpy as np
import pytest
import scipy.linalg

import dimgraph as dg
from dimgraph.core.blockwise import Blockwise, blockwise
from dimgraph.core.matrix import Cholesky, Inv, Solve

_CACHE = {}


def _compiled(key, backend, build):
    """`dg.function(*build(), backend=backend)`, built once per (key, backend)."""
    if (key, backend) not in _CACHE:
        inputs, outputs = build()
        _CACHE[key, backend] = dg.function(inputs, outputs, backend=backend)
    return _CACHE[key, backend]


def _fd_grad(cost, args, k, eps=1e-6):
    """Central finite differences of the NumPy `cost(*args)` with respect to args[k]."""
    args = [np.array(a, dtype=float) if i == k else a for i, a in enumerate(args)]
    x = args[k]
    g = np.zeros_like(x)
    for idx in np.ndindex(x.shape):
        old = x[idx]
        x[idx] = old + eps
        up = cost(*args)
        x[idx] = old - eps
        down = cost(*args)
        x[idx] = old
        g[idx] = (up - down) / (2 * eps)
    return g


RNG = np.random.default_rng(20260)


def _u(*shape):
    return RNG.uniform(size=shape)


# -- ifelse (tests/test_ifelse.py) ------------------------------------------------------------------


def test_ifelse_const_false_branch(backend):
    def build():
        c, x = dg.scalar("c", dtype="int32"), dg.vector("x")
        return [c, x], dg.ifelse(c, x, dg.core.constant(np.array([2.0, 3.0])))

    f = _compiled("const_false", backend, build)
    np.testing.assert_array_equal(f(0, np.array([1.0, 2.0])), [2.0, 3.0])
    np.testing.assert_array_equal(f(1, np.array([1.0, 2.0])), [1.0, 2.0])


def _two_vectors(key, backend):
    def build():
        c, x, y = dg.scalar("c", dtype="int32"), dg.vector("x"), dg.vector("y")
        return [c, x, y], dg.ifelse(c, x, y)

    return _compiled(key, backend, build)


@pytest.mark.parametrize("lengths", [(7, 3), (0, 5), (4, 4)])
def test_ifelse_lazy_if_branches_of_different_lengths(backend, lengths):
    f = _two_vectors("lazy_if", backend)
    vx, vy = _u(lengths[0]), _u(lengths[1])
    np.testing.assert_array_equal(f(1, vx, vy), vx)
    np.testing.assert_array_equal(f(0, vx, vy), vy)


def test_ifelse_not_lazy_if_inplace_big_branch(backend):
    def build():
        c, x, y = dg.scalar("c", dtype="int32"), dg.vector("x"), dg.vector("y")
        y2 = y
        for k in range(200):
            y2 = y2 + float(k)
        return [c, x, y], dg.ifelse(c, x, y2)

    f = _compiled("big_branch", backend, build)
    vx, vy = _u(5), _u(8)
    np.testing.assert_allclose(f(1, vx, vy), vx)
    np.testing.assert_allclose(f(0, vx, vy), vy + sum(range(200)), rtol=1e-12)


def test_ifelse_mixed_dtype_outputs(backend):
    def build():
        x1, y1 = dg.vector("x1", dtype="int32"), dg.vector("y1", dtype="int32")
        x2, y2 = dg.vector("x2"), dg.vector("y2")
        c = dg.scalar("c", dtype="int32")
        return [c, x1, x2, y1, y2], dg.ifelse(c, [x1, x2], [y1, y2])

    f = _compiled("mixed_dtype", backend, build)
    vx1, vx2 = (_u(6) * 3).astype("int32"), _u(6)
    vy1, vy2 = (_u(2) * 3).astype("int32"), _u(2)
    o1, o2 = f(1, vx1, vx2, vy1, vy2)
    assert o1.dtype == np.int32 and o2.dtype == np.float64
    np.testing.assert_array_equal(o1, vx1)
    np.testing.assert_array_equal(o2, vx2)
    o1, o2 = f(0, vx1, vx2, vy1, vy2)
    np.testing.assert_array_equal(o1, vy1)
    np.testing.assert_array_equal(o2, vy2)


@pytest.mark.parametrize("cast", [False, True], ids=["plain", "cast_input"])
def test_ifelse_grad_lazy_if(backend, cast):
    def build():
        c, x, y = dg.scalar("c", dtype="int32"), dg.vector("x"), dg.vector("y")
        a, b = (x.astype("float32"), y.astype("float32")) if cast else (x, y)
        z = dg.ifelse(c, a, b)
        return [c, x, y], dg.grad(z.sum(), [x, y])

    f = _compiled(("grad_lazy_if", cast), backend, build)
    vx, vy = _u(9), _u(4)
    gx, gy = f(1, vx, vy)
    assert gx.shape == vx.shape and gy.shape == vy.shape
    np.testing.assert_array_equal(gx, 1.0)
    np.testing.assert_array_equal(gy, 0.0)
    gx, gy = f(0, vx, vy)
    np.testing.assert_array_equal(gx, 0.0)
    np.testing.assert_array_equal(gy, 1.0)


def test_ifelse_multiple_out_and_its_gradient(backend):
    def build():
        c = dg.scalar("c", dtype="int32")
        vs = [dg.vector(n) for n in ("x1", "x2", "y1", "y2")]
        z = dg.ifelse(c, vs[:2], vs[2:])
        return [c, *vs], [*z, *dg.grad(z[0].sum() + z[1].sum(), vs)]

    f = _compiled("multiple_out", backend, build)
    values = [_u(n) for n in (3, 5, 2, 7)]
    for c, taken in [(1, (0, 1)), (0, (2, 3))]:
        o1, o2, *grads = f(c, *values)
        np.testing.assert_array_equal(o1, values[taken[0]])
        np.testing.assert_array_equal(o2, values[taken[1]])
        for k, (g, v) in enumerate(zip(grads, values)):
            assert g.shape == v.shape
            np.testing.assert_array_equal(g, 1.0 if k in taken else 0.0)


def test_ifelse_multiple_out_crash_constant_condition(backend):
    """Four outputs of different ranks under a condition known at build time (last rows of scan-like traces)."""

    def build():
        ft0, fm1 = dg.tensor("ft0", shape=(None, None, None)), dg.matrix("fm1")
        ft2, fm3 = dg.tensor("ft2", shape=(None, None, None)), dg.matrix("fm3")
        ps = [dg.matrix("p0"), dg.vector("p1"), dg.matrix("p2"), dg.vector("p3")]
        acc = dg.core.constant(np.int8(1)) >= 0
        outs = dg.ifelse(acc, [ft0[-1], fm1[-1], ft2[-1], fm3[-1]], ps)
        return [ft0, fm1, ft2, fm3, *ps], outs

    f = _compiled("multiple_out_crash", backend, build)
    ins = [_u(19, 4, 8), _u(19, 8), _u(19, 8, 3), _u(19, 3)]
    ps = [_u(4, 8), _u(8), _u(8, 3), _u(3)]
    for got, v in zip(f(*ins, *ps), ins):
        np.testing.assert_array_equal(got, v[-1])


def test_ifelse_dtype_mismatch_promotes_as_numpy(backend):
    """PyTensor raises TypeError for float64 vs int8 branches; dimgraph promotes as NumPy (deliberate)."""

    def build():
        c, x = dg.scalar("c", dtype="int32"), dg.vector("x")
        y = (x * 10).astype("int8")
        return [c, x], [dg.ifelse(c, x, y), dg.ifelse(c, y, x)]

    f = _compiled("dtype_mismatch", backend, build)
    data = _u(5)
    a, b = f(0, data)
    assert a.dtype == b.dtype == np.float64
    np.testing.assert_array_equal(a, (data * 10).astype("int8"))
    np.testing.assert_array_equal(b, data)


@pytest.mark.parametrize("other", [(None, 1), (1, None)], ids=["col", "row"])
def test_ifelse_ndim_mismatch_is_a_type_error(other):
    c, x = dg.scalar("c", dtype="int32"), dg.vector("x", size=5)
    y = dg.tensor("y", shape=other)
    for a, b in [(x, y), (y, x)]:
        with pytest.raises(TypeError, match="then branch.*else branch"):
            dg.ifelse(c, a, b)


def test_ifelse_wrong_n_outs_and_nonscalar_condition():
    x = dg.vector("x")
    with pytest.raises(ValueError, match="then branch has 2 values but the else branch 1"):
        dg.ifelse(dg.scalar("c", dtype="int32"), [x, x], [x])
    with pytest.raises(ValueError, match="condition must be 0-d"):  # PyTensor: TypeError
        dg.ifelse(dg.vector("c", dtype="int32"), x, x)


def test_ifelse_of_a_piecewise_constant_has_a_zero_gradient(backend):
    """PyTensor's test_grad_int_value: a loss that is 0 or 1 by a condition on the parameters."""

    def build():
        w, b, x, y = dg.vector("w"), dg.scalar("b"), dg.vector("x"), dg.scalar("y")
        score = dg.core.dot(w, x) + b
        loss = dg.ifelse(score * y > 0, 0.0, 1.0)
        return [w, b, x, y], [loss, *dg.grad(loss, [w, b], disconnected="zero")]

    f = _compiled("grad_int_value", backend, build)
    w, x = _u(10), _u(10)
    loss, gw, gb = f(w, 0.3, x, -1.0)
    assert float(loss) == 1.0
    np.testing.assert_array_equal(gw, np.zeros(10))
    assert float(gb) == 0.0


@pytest.mark.parametrize(
    "x_shape, y_shape, x_val, y_val, exp_shape",
    [
        ((2,), (3,), np.r_[1.0, 2.0], np.r_[1.0, 2.0, 3.0], (None,)),
        ((None,), (3,), np.r_[1.0, 2.0], np.r_[1.0, 2.0, 3.0], (None,)),
        ((3,), (None,), np.r_[1.0, 2.0, 3.0], np.r_[1.0, 2.0], (None,)),
        ((2, 1), (None, 1), np.c_[[1.0, 2.0]], np.c_[[1.0, 2.0, 3.0]], (None, 1)),
        ((3,), (3,), np.r_[1.0, 2.0, 3.0], np.r_[1.0, 2.0, 3.0], (3,)),
        ((1,), (3,), np.r_[1.0], np.r_[1.0, 2.0, 3.0], (None,)),
    ],
)
def test_ifelse_static_branch_shapes(backend, x_shape, y_shape, x_val, y_val, exp_shape):
    def build():
        x, y = dg.tensor("x", shape=x_shape), dg.tensor("y", shape=y_shape)
        c = dg.scalar("c", dtype="int32")
        z = dg.ifelse(c, x, y)
        assert z.type.shape == exp_shape
        return [c, x, y], z

    f = _compiled(("static_shapes", x_shape, y_shape), backend, build)
    np.testing.assert_array_equal(f(0, x_val, y_val), y_val)
    np.testing.assert_array_equal(f(1, x_val, y_val), x_val)


def _fails(x):
    """`x`, or an error when it is computed (PyTensor's NotImplementedOp): a branch that must not run."""
    return dg.core.assert_op(x, dg.core.constant(False), msg="this branch must not run")


def test_ifelse_lazy_an_untaken_branch_that_fails_does_not_run(backend):
    def build():
        a, b, c = dg.scalar("a"), dg.scalar("b"), dg.scalar("c")
        return [a, b, c], dg.ifelse(dg.core.neq(a, 0), _fails(b), c)

    f = _compiled("lazy_c", backend, build)
    assert float(f(0.0, 1.0, 2.0)) == 2.0
    with pytest.raises(AssertionError, match="must not run"):
        f(1.0, 1.0, 2.0)


def test_ifelse_nested_with_a_failing_untaken_branch(backend):
    """PyTensor's test_nested: t4 = if x1 == x2: x1 elif x1 == 5: x2 elif c2: t3 else t3 + 0.5."""

    def build():
        x1, x2, c1, c2 = dg.scalar("x1"), dg.scalar("x2"), dg.scalar("c1"), dg.scalar("c2")
        t1 = dg.ifelse(dg.core.neq(c1, 0), x1, _fails(x2))
        t2 = t1 * 10
        t3 = dg.ifelse(dg.core.neq(c2, 0), t2, x1 + t1)
        t4 = dg.ifelse(
            dg.core.eq(x1, x2), x1, dg.ifelse(dg.core.eq(x1, 5), x2, dg.ifelse(dg.core.neq(c2, 0), t3, t3 + 0.5))
        )
        return [c1, c2, x1, x2], t4

    f = _compiled("nested", backend, build)
    assert float(f(1.0, 0.0, 10.0, 0.0)) == 20.5
    assert float(f(1.0, 1.0, 10.0, 0.0)) == 100.0
    assert float(f(0.0, 0.0, 3.0, 3.0)) == 3.0  # x1 == x2: t1 (and its failing branch) never computed
    with pytest.raises(AssertionError, match="must not run"):
        f(0.0, 0.0, 10.0, 0.0)


def test_ifelse_pushout_cases(backend):
    """PyTensor's test_pushout1/2/3, test_merge, test_merge_ifs_true_false: values only."""

    def build():
        x1, x2, y1, y2, w1, w2 = (dg.scalar(n) for n in ("x1", "x2", "y1", "y2", "w1", "w2"))
        c = dg.scalar("c", dtype="int32")
        x, y = dg.ifelse(c, [x1, y1], [x2, y2])
        out1 = x * dg.ifelse(c, w1, w2) * y
        out2 = x * dg.ifelse(x > y, w1, w2) * y
        a, b = dg.ifelse(c, [x1, y1], [2.0, y2])
        out3 = a * dg.ifelse(c, 0.3, 0.2) * b
        out4 = dg.ifelse(c, x1 + 1, y1 + 1) + dg.ifelse(c, x1 + 2, y1 + 2)
        inner = dg.ifelse(c, x1, x2) + dg.ifelse(c, y1, y2)
        out5 = dg.ifelse(c, inner + w1, inner + w2)
        return [x1, x2, y1, y2, w1, w2, c], [out1, out2, out3, out4, out5]

    f = _compiled("pushout", backend, build)
    v = dict(zip(("x1", "x2", "y1", "y2", "w1", "w2"), _u(6)))
    for c in (1, 0):
        got = f(*v.values(), c)
        x, y = (v["x1"], v["y1"]) if c else (v["x2"], v["y2"])
        want = [
            x * y * (v["w1"] if c else v["w2"]),
            x * y * (v["w1"] if x > y else v["w2"]),
            v["x1"] * v["y1"] * 0.3 if c else 2 * v["y2"] * 0.2,
            2 * v["x1"] + 3 if c else 2 * v["y1"] + 3,
            x + y + (v["w1"] if c else v["w2"]),
        ]
        np.testing.assert_allclose([float(g) for g in got], want, rtol=1e-12)


def test_ifelse_repeated_outputs(backend):
    """PyTensor's test_remove_useless_inputs1/2: branches that repeat their values."""

    def build():
        c = dg.scalar("c", dtype="int32")
        x1, x2, y1, y2 = (dg.vector(n) for n in ("x1", "x2", "y1", "y2"))
        return [c, x1, x2, y1, y2], dg.ifelse(c, [x1, x1, x1, x2, x2], [y1, y1, y2, y2, y2])

    f = _compiled("repeated_outputs", backend, build)
    vals = [_u(2), _u(3), _u(4), _u(5)]
    for c, want in [(1, [0, 0, 0, 1, 1]), (0, [2, 2, 3, 3, 3])]:
        for got, k in zip(f(c, *vals), want):
            np.testing.assert_array_equal(got, vals[k])


def test_ifelse_untaken_branch_indexing_out_of_range_is_not_run(backend):
    """A branch reading x[5] of a 3-vector must not fail when the other branch is taken (jax traces lazily)."""

    def build():
        i, x = dg.scalar("i", dtype="int64"), dg.vector("x")
        return [i, x], dg.ifelse(i < 3, x[2] * 2, x[5])

    f = _compiled("untaken_oob", backend, build)
    assert float(f(0, np.arange(3.0))) == 4.0
    assert float(f(7, np.arange(6.0))) == 5.0


def test_ifelse_gradients_vs_finite_differences(backend):
    def build():
        c, x, w = dg.scalar("c", dtype="int32"), dg.vector("x", size=3), dg.scalar("w")
        z = dg.ifelse(c, dg.sin(x) * w, dg.exp(x).sum() * x)
        cost = (z**2).sum()
        return [c, x, w], [cost, *dg.grad(cost, [x, w])]

    def oracle(c, x, w):
        z = np.sin(x) * w if c else np.exp(x).sum() * x
        return float((z**2).sum())

    f = _compiled("ifelse_fd", backend, build)
    x, w = RNG.normal(size=3), 0.7
    for c in (1, 0):
        cost, gx, gw = f(c, x, w)
        np.testing.assert_allclose(cost, oracle(c, x, w), rtol=1e-12)
        np.testing.assert_allclose(gx, _fd_grad(oracle, [c, x, w], 1), rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(gw, _fd_grad(oracle, [c, x, np.array(w)], 2), rtol=1e-6, atol=1e-8)


# -- scan (tests/scan/test_basic.py) --------------------------------------------------------------


@pytest.mark.parametrize("n", [0, 3])
def test_scan_no_steps_returns_the_initial_state(backend, n):
    def build():
        x0, n_steps = dg.vector("x0", size=2), dg.scalar("n", dtype="int64")
        final, trace = dg.scan(lambda x: x * 2.0 + 1.0, init=x0, n_steps=n_steps)
        return [x0, n_steps], [final, trace]

    f = _compiled("no_step", backend, build)
    x0 = np.array([1.0, -2.0])
    final, trace = f(x0, n)
    want = [x0]
    for _ in range(n):
        want.append(want[-1] * 2 + 1)
    np.testing.assert_array_equal(final, want[-1])
    assert trace.shape == (n, 2)
    np.testing.assert_array_equal(trace, np.array(want[1:]).reshape(n, 2))


def test_scan_only_nonseq_inputs_and_gradient(backend):
    def build():
        inp = dg.matrix("inp")
        _, tr = dg.scan(lambda prev: inp, init=dg.core.zeros_like(inp), n_steps=2)
        return [inp], [tr, dg.grad(tr.sum(), [inp])[0]]

    f = _compiled("only_nonseq", backend, build)
    v = np.array([[1.0, 2.0], [3.0, 4.0]])
    tr, gr = f(v)
    np.testing.assert_array_equal(tr, np.repeat(v[None], 2, axis=0))
    np.testing.assert_array_equal(gr, np.full((2, 2), 2.0))


def _rnn_oracle(u, x0, w_in, w):
    out, x = [], x0
    for u_t in u:
        x = u_t * w_in + x * w
        out.append(x)
    return np.array(out)


@pytest.mark.parametrize("backwards", [False, True], ids=["forwards", "go_backwards"])
def test_scan_one_sequence_one_output_weights_values_and_gradients(backend, backwards):
    def build():
        u, x0, w_in, w = dg.vector("u"), dg.scalar("x0"), dg.scalar("w_in"), dg.scalar("w")
        seq = u[::-1] if backwards else u
        _, out = dg.scan(lambda x, u_t: u_t * w_in + x * w, init=x0, sequences=seq)
        cost = (out**2).sum()
        return [u, x0, w_in, w], [out, cost, *dg.grad(cost, [u, x0, w_in, w])]

    def cost(u, x0, w_in, w):
        return float((_rnn_oracle(u[::-1] if backwards else u, x0, w_in, w) ** 2).sum())

    f = _compiled(("rnn", backwards), backend, build)
    args = [RNG.uniform(-5, 5, size=4), np.array(RNG.uniform()), np.array(RNG.uniform()), np.array(RNG.uniform())]
    out, c, *grads = f(*args)
    np.testing.assert_allclose(out, _rnn_oracle(args[0][::-1] if backwards else args[0], *args[1:]), rtol=1e-12)
    np.testing.assert_allclose(c, cost(*args), rtol=1e-12)
    for k, g in enumerate(grads):
        np.testing.assert_allclose(g, _fd_grad(cost, args, k), rtol=1e-6, atol=1e-7)


def test_scan_n_steps_smaller_than_the_sequence(backend):
    """PyTensor's test_infer_shape_nsteps_smaller_seq_length: 20 steps over a 30-long sequence."""

    def build():
        x = dg.vector("x")
        (_, _), (o1, o2) = dg.scan(
            lambda a, y, x_t: (x_t + 1, y + x_t), init=[dg.core.constant(0.0), x[0]], sequences=x, n_steps=20
        )
        return [x], [o1, o2, o1.shape[0], o2.shape[0]]

    f = _compiled("n_steps_short", backend, build)
    vx = _u(30)
    o1, o2, n1, n2 = f(vx)
    assert int(n1) == int(n2) == 20
    np.testing.assert_allclose(o1, vx[:20] + 1, rtol=1e-12)
    np.testing.assert_allclose(o2, vx[0] + np.cumsum(vx[:20]), rtol=1e-12)


def test_scan_n_steps_longer_than_a_sequence_is_a_shape_error_before_the_loop(backend):
    def build():
        x, n = dg.vector("x"), dg.scalar("n", dtype="int64")
        final, _ = dg.scan(lambda s, x_t: s + x_t, init=dg.core.constant(0.0), sequences=x, n_steps=n)
        return [x, n], final

    f = _compiled("n_steps_long", backend, build)
    assert float(f(np.arange(5.0), 3)) == 3.0
    with pytest.raises(dg.ShapeError, match="n_steps must be at most the length of sequence 0"):
        f(np.arange(2.0), 3)
    with pytest.raises(dg.ShapeError, match="n_steps is 5 but sequence 0 has 4 steps"):
        dg.scan(lambda s, x_t: s + x_t, init=dg.core.constant(0.0), sequences=dg.vector("y", size=4), n_steps=5)


def test_scan_grad_sitsot(backend):
    def build():
        inp = dg.vector("inp")
        _, out = dg.scan(lambda x: x * 2.0, init=inp, n_steps=5)
        return [inp], dg.grad(out.sum(), [inp])[0]

    f = _compiled("grad_sitsot", backend, build)
    np.testing.assert_array_equal(f(_u(3)), np.full(3, 2.0 + 4 + 8 + 16 + 32))


def test_scan_grad_mitsot_as_window_states(backend):
    """Taps [-2] on a state (PyTensor's mit-sot) as the window (x[t-2], x[t-1]), beside a sit-sot."""

    def build():
        input0, input1 = dg.matrix("input0", shape=(2, 3)), dg.vector("input1", size=3)

        def step(m2, m1, s):
            out = (m2 + s) ** 1.02
            return m1, out, out

        (_, _, _), (_, mit, sit) = dg.scan(step, init=[input0[0], input0[1], input1], n_steps=3)
        cost = mit.sum() + sit.sum()
        return [input0, input1], [cost, *dg.grad(cost, [input0, input1])]

    def cost(input0, input1):
        m2, m1, s, total = input0[0], input0[1], input1, 0.0
        for _ in range(3):
            out = (m2 + s) ** 1.02
            m2, m1, s = m1, out, out
            total += 2 * out.sum()
        return total

    f = _compiled("grad_mitsot", backend, build)
    args = [_u(2, 3), _u(3)]
    c, g0, g1 = f(*args)
    np.testing.assert_allclose(c, cost(*args), rtol=1e-12)
    np.testing.assert_allclose(g0, _fd_grad(cost, args, 0), rtol=1e-6)
    np.testing.assert_allclose(g1, _fd_grad(cost, args, 1), rtol=1e-6)


def test_scan_grad_multiple_seqs_different_nsteps_and_grad_of_grad(backend):
    """The shortest sequence sets the steps: a polynomial with a 1000-long power sequence (38 and 42)."""

    def build():
        c, x = dg.vector("c"), dg.scalar("x")
        _, components = dg.scan(
            lambda prev, coeff, power: coeff * x**power, init=dg.core.constant(0.0), sequences=[c, dg.core.arange(1000)]
        )
        d_p = dg.grad(components.sum(), [x])[0]
        return [c, x], [d_p, dg.grad(d_p, [x])[0]]

    f = _compiled("poly", backend, build)
    d_p, dd_p = f(np.array([1.0, 2.0, -3.0, 4.0]), 2.0)
    assert float(d_p) == 38.0
    assert float(dd_p) == 42.0


def test_scan_inner_grad(backend):
    """A scan whose step takes a gradient of an outer graph (rows of a Hessian)."""

    def build():
        x, a = dg.vector("x"), dg.matrix("A")
        gy = dg.grad(0.5 * dg.core.dot(x * x, dg.core.dot(a, x)), [x])[0]
        _, hy = dg.scan(
            lambda prev, i: dg.grad(gy[i] * 0.9, [x])[0],
            init=dg.core.zeros_like(x),
            sequences=[dg.core.arange(gy.shape[0])],
        )
        return [x, a], hy

    f = _compiled("inner_grad", backend, build)
    out = f(np.array([1.0, 1.0]), np.array([[1.0, 1.0], [1.0, 0.0]]))
    np.testing.assert_allclose(out, [[3.6, 1.8], [1.8, 0.9]], rtol=1e-12)


def test_scan_vectorized_blockwise_scan(backend):
    """PyTensor's test_blockwise_scan: vectorize_graph of a scalar scan over a vector of initial states."""

    def build():
        x, x_vec = dg.tensor("x", shape=()), dg.vector("x_vec")
        _, out = dg.scan(lambda v: v + 1.0, init=x, n_steps=10)
        return [x_vec], dg.vectorize_graph(out, {x: x_vec})

    f = _compiled("blockwise_scan", backend, build)
    np.testing.assert_allclose(f(np.array([1.0, 2.0, 3.0])), np.arange(2, 12) + np.arange(3).reshape(-1, 1))


def test_scan_gradient_of_a_vectorized_scan(backend):
    """PyTensor's test_scan_gradient_core_type, and a recurrence: the gradient of a vectorized scan compiles."""

    def build():
        seq, vec_seq = dg.tensor("seq", shape=(3, 1)), dg.tensor("vec_seq", shape=(None, 3, 1))
        _, out = dg.scan(lambda prev, s: s, init=dg.core.zeros((1,)), sequences=[seq])
        vec_out = dg.vectorize_graph(out, {seq: vec_seq})
        w, ws = dg.scalar("w"), dg.vector("ws")
        u = dg.vector("u", size=4)
        final, _ = dg.scan(lambda s, u_t: dg.tanh(w * s + u_t), init=dg.core.constant(0.5), sequences=u)
        batched = dg.vectorize_graph(final, {w: ws})
        return [vec_seq, ws, u], [dg.grad(vec_out.sum(), [vec_seq])[0], batched, *dg.grad((batched**2).sum(), [ws, u])]

    def cost(ws, u):
        total = 0.0
        for w in ws:
            s = 0.5
            for u_t in u:
                s = np.tanh(w * s + u_t)
            total += s**2
        return total

    f = _compiled("vectorized_scan_grad", backend, build)
    ws, u = np.array([0.3, -0.8, 1.1]), RNG.normal(size=4)
    g_seq, batched, g_ws, g_u = f(np.ones((4, 3, 1)), ws, u)
    np.testing.assert_array_equal(g_seq, np.ones((4, 3, 1)))
    np.testing.assert_allclose((batched**2).sum(), cost(ws, u), rtol=1e-12)
    np.testing.assert_allclose(g_ws, _fd_grad(cost, [ws, u], 0), rtol=1e-6)
    np.testing.assert_allclose(g_u, _fd_grad(cost, [ws, u], 1), rtol=1e-6)


def test_scan_while(backend):
    """PyTensor's test_while: stop once the state passes a bound (a while loop)."""

    def build():
        x = dg.scalar("x")
        final, trace = dg.while_loop(lambda v: v < 50.0, lambda v: v * 2.0 + 1.0, init=x, max_steps=100, trace=True)
        return [x], [final, trace]

    f = _compiled("while", backend, build)
    final, trace = f(1.0)
    np.testing.assert_array_equal(trace, [3.0, 7.0, 15.0, 31.0, 63.0])
    assert float(final) == 63.0


# -- OpFromGraph (tests/compile/test_builders.py) -------------------------------------------------


@pytest.mark.parametrize("inline", [False, True])
def test_ofg_straightforward_grad_and_grad_grad(backend, inline):
    def build():
        x, y, z = dg.matrix("x"), dg.matrix("y"), dg.matrix("z")
        op = dg.op_from_graph([x, y, z], [x + y * z], inline=inline)
        straight = op(x, y, z) - op(y, z, x)
        f1 = op(x, y, z)
        f1 = f1 - dg.grad(f1.sum(), [y])[0]
        f2 = f1 - dg.grad(f1.sum(), [y])[0]
        return [x, y, z], [straight, f1, f2]

    f = _compiled(("ofg_basic", inline), backend, build)
    straight, f1, f2 = f(np.ones((2, 2)), np.full((2, 2), 3.0), np.full((2, 2), 5.0))
    np.testing.assert_array_equal(straight, np.full((2, 2), 8.0))
    np.testing.assert_array_equal(f1, np.full((2, 2), 11.0))
    np.testing.assert_allclose(f2, np.full((2, 2), 6.0), rtol=1e-12)


@pytest.mark.parametrize("inline", [False, True])
def test_ofg_size_changes(backend, inline):
    def build():
        x, y, z = dg.matrix("x"), dg.matrix("y"), dg.matrix("z")
        op = dg.op_from_graph([x, y], [dg.core.dot(x, y)], inline=inline)
        return [x, y, z], op(x, op(y, z))

    f = _compiled(("ofg_size", inline), backend, build)
    res = f(np.ones((2, 3)), np.full((3, 4), 3.0), np.full((4, 5), 5.0))
    assert res.shape == (2, 5)
    np.testing.assert_array_equal(res, np.full((2, 5), 180.0))


def test_ofg_nested(backend):
    def build():
        x, y = dg.vector("x"), dg.vector("y")
        op_ft = dg.op_from_graph([x, y], [x + y, x - y])
        op_ift = dg.op_from_graph([x, y], [x / 2, y / 2])
        xx, yy = dg.vector("xx"), dg.vector("yy")
        return [xx, yy], op_ift(*op_ft(xx, yy))

    f = _compiled("ofg_nested", backend, build)
    xv, yv = _u(16), _u(16)
    xv2, yv2 = f(xv, yv)
    np.testing.assert_allclose(xv2, (xv + yv) / 2, rtol=1e-12)
    np.testing.assert_allclose(yv2, (xv - yv) / 2, rtol=1e-12)


def test_ofg_pullback_override(backend):
    """A user gradient replaces the derived one (PyTensor's test_pullback_override: sigmoid's grad, then a fake one)."""

    def build():
        x = dg.vector("x")
        sig = dg.op_from_graph([x], [1.0 / (1.0 + dg.exp(-x))], grad=lambda ins, gs: [gs[0] * 2.0])
        y = sig(x)
        return [x], [y, dg.grad(y.sum(), [x])[0]]

    f = _compiled("ofg_pullback", backend, build)
    xv = RNG.normal(size=5)
    y, g = f(xv)
    np.testing.assert_allclose(y, scipy.special.expit(xv), rtol=1e-12)
    np.testing.assert_array_equal(g, np.full(5, 2.0))


def test_ofg_gradient_vs_finite_differences(backend):
    def build():
        a, b = dg.matrix("a", shape=(3, 3)), dg.vector("b", size=3)
        op = dg.op_from_graph([a, b], [dg.core.dot(dg.tanh(a), b), (a**2).sum()], inline=False)
        y, s = op(a, b)
        cost = (y**2).sum() + s
        return [a, b], [cost, *dg.grad(cost, [a, b])]

    def cost(a, b):
        return float(((np.tanh(a) @ b) ** 2).sum() + (a**2).sum())

    f = _compiled("ofg_fd", backend, build)
    args = [RNG.normal(size=(3, 3)), RNG.normal(size=3)]
    c, ga, gb = f(*args)
    np.testing.assert_allclose(c, cost(*args), rtol=1e-12)
    np.testing.assert_allclose(ga, _fd_grad(cost, args, 0), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(gb, _fd_grad(cost, args, 1), rtol=1e-6, atol=1e-8)


# -- Blockwise (tests/tensor/test_blockwise.py) ---------------------------------------------------


def _posdef(shape):
    x = RNG.normal(size=shape)
    return np.einsum("...ij,...kj->...ik", x, x) + 3 * np.eye(shape[-1])


BLOCK_OPS = {  # core op, signature, NumPy oracle
    "cholesky": (Cholesky(lower=True), "(m,m)->(m,m)", np.linalg.cholesky),
    "inv": (Inv(), "(m,m)->(m,m)", np.linalg.inv),
    "solve_vector": (Solve(b_ndim=1), "(m,m),(m)->(m)", lambda a, b: np.linalg.solve(a, b[..., None])[..., 0]),
    "solve_matrix": (Solve(b_ndim=2), "(m,m),(m,n)->(m,n)", np.linalg.solve),
}
CORE_SHAPES = {"(m,m)": (3, 3), "(m)": (3,), "(m,n)": (3, 2)}


@pytest.mark.parametrize("name", sorted(BLOCK_OPS))
@pytest.mark.parametrize("batch", [((), ()), ((3,), ()), ((1,), (4,)), ((2, 3), (3,))], ids=str)
def test_blockwise_values_and_gradients_vs_numpy(backend, name, batch):
    op, sig, ref = BLOCK_OPS[name]
    core_shapes = [CORE_SHAPES[a] for a in sig.split("->")[0].replace("),(", ")|(").split("|")]
    shapes = [b + c for b, c in zip(batch, core_shapes)]
    weights = np.linspace(0.5, 1.5, CORE_SHAPES[sig.split("->")[1]][-1])  # a cost that weighs the outputs unevenly

    def build():
        # a batch axis of size 1 is declared so (only those broadcast, as in PyTensor)
        ins = [
            dg.tensor(f"x{k}", shape=tuple(1 if n == 1 else None for n in b) + (None,) * len(c))
            for k, (b, c) in enumerate(zip(batch, core_shapes))
        ]
        out = blockwise(op, sig, *ins)
        cost = (out * dg.core.constant(weights)).sum()
        return ins, [out, *dg.grad(cost, ins)]

    def cost(*args):
        return float((ref(*args) * weights).sum())

    f = _compiled(("blockwise", name, batch), backend, build)
    args = [_posdef(shapes[0])] + [RNG.normal(size=s) for s in shapes[1:]]
    out, *grads = f(*args)
    np.testing.assert_allclose(out, ref(*args), rtol=1e-9, atol=1e-12)
    for k, g in enumerate(grads):
        fd = _fd_grad(cost, args, k)
        if name == "cholesky":  # the factor reads the lower triangle only: compare symmetric directions
            g, fd = g + np.swapaxes(g, -1, -2), fd + np.swapaxes(fd, -1, -2)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6)


def test_blockwise_vectorize_falls_back_to_blockwise_and_rebatches():
    mat, tns = dg.matrix("mat"), dg.tensor("tns", shape=(None, None, None))
    out = dg.vectorize_graph(Inv()(mat), {mat: tns})
    assert isinstance(out.owner.op, Blockwise) and isinstance(out.owner.op.core_op, Inv)
    assert out.owner.inputs[0] is tns
    tns4 = dg.tensor("tns4", shape=(5, None, None, None))
    again = dg.vectorize_graph(out, {tns: tns4})
    assert again.owner.op == out.owner.op and again.owner.inputs[0] is tns4
    a = _posdef((5, 2, 3, 3))
    np.testing.assert_allclose(dg.function([tns4], again)(a), np.linalg.inv(a), rtol=1e-10)


def test_blockwise_runtime_broadcast_only_where_the_size_one_is_static(backend):
    """PyTensor's test_runtime_broadcast: a batch axis of unknown size that turns out 1 does not stretch."""

    def build():
        a, a1 = dg.tensor("a", shape=(None, 3, 3)), dg.tensor("a1", shape=(1, 3, 3))
        b = dg.tensor("b", shape=(None, 3))
        return [a, a1, b], [
            blockwise(Solve(b_ndim=1), "(m,m),(m)->(m)", a, b),
            blockwise(Solve(b_ndim=1), "(m,m),(m)->(m)", a1, b),
        ]

    f = _compiled("runtime_broadcast", backend, build)
    a, a1, b = _posdef((4, 3, 3)), _posdef((1, 3, 3)), RNG.normal(size=(4, 3))
    x, x1 = f(a, a1, b)
    np.testing.assert_allclose(x, np.linalg.solve(a, b[..., None])[..., 0], rtol=1e-10)
    np.testing.assert_allclose(x1, np.linalg.solve(a1, b[..., None])[..., 0], rtol=1e-10)
    with pytest.raises(dg.ShapeError, match="batch axis 0"):
        f(a1, a1, b)


def test_blockwise_of_an_assert(backend):
    """PyTensor's test_cop_with_params: a Blockwise of a check."""

    def build():
        x = dg.tensor("x", shape=(5, None, None))
        ok = dg.core.all(x >= 0, axis=(1, 2))
        checked = Blockwise(dg.core.extra.Assert("x must be non-negative"), "(a,b),()->(a,b)")(x, ok)
        return [x], checked.sum()

    f = _compiled("blockwise_assert", backend, build)
    assert float(f(np.ones((5, 2, 2)))) == 20.0
    with pytest.raises(AssertionError, match="non-negative"):
        f(-np.ones((5, 2, 2)))
