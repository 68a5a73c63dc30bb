"""`dg.value_and_grad` through chains of indexing, set/inc, join/split, matmul/einsum and cumulative ops.

The per-op checks live in test_gradient_indexing / test_gradient_products;
here the L_ops meet each other and the elementwise/reduction L_ops inside one
reverse pass, and the compiled value-and-gradient function is compared with
per-element central differences of the cost (python backend), float64.
Tolerance: |fd - grad| <= 1e-6 * (1 + |cost|) per element (EPS = 1e-6; the
costs are smooth, so truncation error is O(EPS^2) and rounding ~1e-10).
"""

import numpy as np
from hypothesis import strategies as st
from vjp_checks import given

import dimgraph as dg
from dimgraph.core import concatenate, cumprod, cumsum, einsum, inc_subtensor, set_subtensor, split_sizes

EPS = 1e-6
_CACHE = {}


def _hierarchical():
    """Hierarchical normal logp: group means mu indexed by group_idx (repeats), log-sigma, N(0, 1) prior."""
    mu = dg.tensor("mu", shape=(None,))
    log_sigma = dg.scalar("log_sigma")
    y = dg.tensor("y", shape=(None,))
    idx = dg.tensor("idx", shape=(None,), dtype="int64")
    z = (y - mu[idx]) * dg.exp(-log_sigma)
    n = dg.core.cast(y.shape[0], "float64")
    logp = -0.5 * (z**2).sum() - n * log_sigma - 0.5 * (mu**2).sum()
    return [mu, log_sigma], [y, idx], logp


def _indexing_chain():
    x = dg.tensor("x", shape=(None, 3))
    v = dg.tensor("v", shape=(None, 3))
    idx = dg.tensor("idx", shape=(None,), dtype="int64")
    z = inc_subtensor(x[idx], v)  # repeats accumulate
    z = set_subtensor(z[1:, ::2], dg.tanh(z[:-1, ::2]))  # overwritten region and a shifted read
    m = z[::-1]
    m = dg.where(m[:, :1] > 0.0, m, 0.0)  # (boolean-mask reads: test_gradient_indexing; jax needs static masks)
    return [x, v], [idx], dg.sin(m).sum() + (z[idx] ** 2).sum()


def _product_chain():
    a = dg.tensor("a", shape=(3, None))
    b = dg.tensor("b", shape=(None, 2))
    c = dg.tensor("c", shape=(2, None))
    n = dg.scalar("n", "int64")
    ab = a @ b  # (3, 2)
    j = concatenate([ab, einsum("ij,kj->ik", a, c)], axis=0)  # (3 + 3, 2)
    p, q = split_sizes(cumsum(j, axis=0), [n, 6 - n], axis=0)
    r = cumprod(1.0 + 0.1 * dg.tanh(j), axis=1)
    return [a, b, c], [n], (p**2).sum() - dg.log1p(q**2).sum() + (r @ np.ones(2)).sum() + einsum("ii->", ab[:2, :2])


CHAINS = {"hierarchical": _hierarchical, "indexing": _indexing_chain, "products": _product_chain}


def _compiled(name, backend):
    key = (name, backend)
    if key not in _CACHE:
        wrt, data, cost = CHAINS[name]()
        value, grads = dg.value_and_grad(cost, wrt)
        f = dg.function(wrt + data, [value, *grads], backend=backend)
        cost_py = dg.function(wrt + data, cost, backend="python")
        _CACHE[key] = (f, cost_py, len(wrt))
    return _CACHE[key]


def _check(name, backend, params, data):
    f, cost_py, n_wrt = _compiled(name, backend)
    value, *grads = f(*params, *data)
    expected = cost_py(*params, *data)
    np.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12)
    for k, (p, g) in enumerate(zip(params, grads)):
        assert g.shape == np.shape(p)
        fd = np.zeros(np.shape(p))
        for pos in np.ndindex(np.shape(p)):
            plus = [q.copy() for q in params]
            minus = [q.copy() for q in params]
            plus[k][pos] += EPS
            minus[k][pos] -= EPS
            fd[pos] = (cost_py(*plus, *data) - cost_py(*minus, *data)) / (2 * EPS)
        np.testing.assert_allclose(
            g, fd, rtol=1e-6, atol=1e-6 * (1 + abs(float(expected))), err_msg=f"{name}: input {k}"
        )


@given(groups=st.integers(1, 4), n_obs=st.integers(0, 12), seed=st.integers(0, 2**32 - 1))
def test_hierarchical_logp(backend, groups, n_obs, seed):
    """The `mu[group_idx]` pattern: repeated group positions accumulate in mu's gradient."""
    rng = np.random.default_rng(seed)
    params = [rng.normal(size=groups), np.array(rng.normal())]
    data = [rng.normal(size=n_obs), rng.integers(-groups, groups, size=n_obs)]
    _check("hierarchical", backend, params, data)


@given(rows=st.integers(1, 4), k=st.integers(0, 5), seed=st.integers(0, 2**32 - 1))
def test_indexing_chain(backend, rows, k, seed):
    rng = np.random.default_rng(seed)
    params = [rng.normal(size=(rows, 3)), rng.normal(size=(k, 3))]
    _check("indexing", backend, params, [rng.integers(-rows, rows, size=k)])


@given(k=st.integers(0, 3), n=st.integers(0, 6), seed=st.integers(0, 2**32 - 1))
def test_product_chain(backend, k, n, seed):
    rng = np.random.default_rng(seed)
    params = [rng.normal(size=(3, k)), rng.normal(size=(k, 2)), rng.normal(size=(2, k))]
    _check("products", backend, params, [np.array(n)])


def test_verify_grad_on_indexing_and_products(backend):
    """`dimgraph.testing.verify_grad` (a user's check) through a gather with repeats, a set, a join and einsum."""
    from dimgraph.testing import verify_grad

    idx = np.array([2, 0, 2, 2, -1])

    def cost(mu, w):
        z = set_subtensor(mu[idx][1:3], w[:2])
        return einsum("i,i->", concatenate([z, w]), concatenate([w, z])) + cumsum(z).sum()

    rng = np.random.default_rng(0)
    grads = verify_grad(cost, [rng.normal(size=3), rng.normal(size=5)], backend=backend)
    assert grads[0].shape == (3,) and grads[1].shape == (5,)


def test_hessian_through_scatter_gradients(backend):
    """Second order: the gradients of gathers, slices and cumsum are scatters/cumsums whose own L_ops
    give the exact Hessian (repeated positions count twice on the diagonal)."""
    mu = dg.tensor("mu", shape=(3,))
    idx = np.array([0, 2, 2, 2])
    cost = (mu[idx] ** 2).sum() + (cumsum(mu) ** 3).sum() + einsum("i,i->", mu[::-1], mu)
    f = dg.function([mu], dg.hessian(cost, mu), backend=backend)
    m = np.array([0.5, -1.0, 2.0])
    lower = np.tril(np.ones((3, 3)))
    expected = np.diag(2.0 * np.bincount(idx, minlength=3)) + lower.T @ np.diag(6 * lower @ m) @ lower
    expected += 2 * np.eye(3)[::-1]
    np.testing.assert_allclose(f(m), expected, rtol=1e-12)
