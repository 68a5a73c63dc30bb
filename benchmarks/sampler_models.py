"""The sampler suite's models, each written four ways on the same data: labeled dimgraph (as the
README teaches: `dg.Dim`, `dg.labeled`, `dg.dist` log densities, `dg.flat_value_and_grad`), hand
NumPy with its gradient by hand, hand `numba.njit`, and `jax.value_and_grad` of a hand `jax.numpy`
log density; plus PyMC 6 (`pymc_model`) where PyMC is installed (`make bench-peers-env`).

Every log density is PyMC's exactly, Jacobians of its default transforms included (positive
scales sampled on the log scale, the LKJ Cholesky factor's diagonal on the log scale), so the
implementations are checked against each other and against PyMC to 1e-8 before anything is timed.
Each model's `theta` is dimgraph's flat layout (`fn.ravel` order); `pymc_point` maps it to
PyMC's value variables by name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

import dimgraph as dg

LOG_2PI = math.log(2 * math.pi)
HALF_LOG_2_OVER_PI = 0.5 * math.log(2 / math.pi)


@dataclass
class Model:
    name: str
    cost: object  # the labeled 0-d log density
    params: list  # labeled parameters, in flat order
    data_vars: list  # labeled data inputs
    data: dict  # {name: NumPy array}, the data by input name
    theta: np.ndarray  # a test point in dimgraph's flat layout
    numpy_fn: Callable  # theta -> (logp, grad), hand NumPy
    numba_fn: Callable  # theta -> (logp, grad), hand numba.njit (data bound)
    jax_logp: Callable  # (theta, *data) -> logp in jax.numpy
    jax_data: tuple  # the data arguments of `jax_logp`, NumPy arrays
    pymc_model: Callable | None = None  # () -> pm.Model
    pymc_point: Callable | None = None  # theta -> {value variable name: array}
    dg_model: Callable | None = None  # () -> dg.Model: the same log density as a user's `dg.Model` (`m.sample`)
    dg_point: Callable | None = None  # theta -> {unconstrained name: array} of `dg_model` (default: pymc_point)

    def model_theta(self, m, theta):
        """`theta` (this model's flat layout) in `m`'s flat layout (`m.unconstrained_names`): the same point."""
        point = (self.dg_point or self.pymc_point)(theta)
        return np.concatenate([np.ravel(point[n]) for n in m.unconstrained_names]).astype(np.float64)

    def flat(self, backend):
        return dg.flat_value_and_grad(self.cost, self.params, inputs=self.data_vars, backend=backend)


def _halfnormal_log(log_s, scale):
    """HalfNormal(scale) at exp(log_s), with the log transform's Jacobian (+ log_s), and its derivative."""
    s = np.exp(log_s)
    value = HALF_LOG_2_OVER_PI - math.log(scale) - 0.5 * (s / scale) ** 2 + log_s
    return value, 1.0 - (s / scale) ** 2


# ---------------------------------------------------------------------------------------------- radon
def radon(n_obs=919, n_county=85, seed=0):
    """Varying intercept and slope: y ~ N(a[county] + b[county] * floor, sigma_y), a ~ N(mu_a, sigma_a),
    b ~ N(mu_b, sigma_b), HalfNormal(5) scales: 5 + 2 * 85 = 175 parameters, 919 observations."""
    import numba

    rng = np.random.default_rng(seed)
    county_idx = rng.integers(0, n_county, n_obs).astype(np.int64)
    floor = rng.integers(0, 2, n_obs).astype(np.float64)
    y = rng.normal(1.5, 0.5, n_county)[county_idx] - 0.7 * floor + rng.normal(0, 0.7, n_obs)

    county = dg.Dim("county", coords=[f"county{k}" for k in range(n_county)])
    obs = dg.Dim("obs")
    mu_a, mu_b = dg.labeled("mu_a", dims=()), dg.labeled("mu_b", dims=())
    log_sigma_a, log_sigma_b, log_sigma_y = (
        dg.labeled(n, dims=()) for n in ("log_sigma_a", "log_sigma_b", "log_sigma_y")
    )
    a, b = dg.labeled("a", dims=(county,)), dg.labeled("b", dims=(county,))
    idx = dg.labeled("county_idx", dims=(obs,), dtype="int64")
    floor_v, y_v = dg.labeled("floor", dims=(obs,)), dg.labeled("y", dims=(obs,))
    sigma_a, sigma_b, sigma_y = dg.exp(log_sigma_a), dg.exp(log_sigma_b), dg.exp(log_sigma_y)
    scale = dg.dist.halfnormal(5.0)
    y_hat = a.isel(county=idx) + b.isel(county=idx) * floor_v
    cost = (
        dg.dist.normal(0.0, 10.0).logp(mu_a)
        + dg.dist.normal(0.0, 10.0).logp(mu_b)
        + scale.logp(sigma_a) + log_sigma_a  # the log transform's Jacobian
        + scale.logp(sigma_b) + log_sigma_b
        + scale.logp(sigma_y) + log_sigma_y
        + dg.dist.normal(mu_a, sigma_a).logp(a).sum()
        + dg.dist.normal(mu_b, sigma_b).logp(b).sum()
        + dg.dist.normal(y_hat, sigma_y).logp(y_v).sum()
    )  # fmt: skip
    params = [mu_a, mu_b, log_sigma_a, log_sigma_b, log_sigma_y, a, b]
    theta = np.concatenate(
        [[1.0, -0.5, -0.7, -1.2, -0.3], rng.normal(1.5, 0.4, n_county), rng.normal(-0.7, 0.2, n_county)]
    )
    K = n_county

    def numpy_fn(theta):
        ma, mb, lsa, lsb, lsy = theta[:5]
        av, bv = theta[5 : 5 + K], theta[5 + K :]
        sa, sb, sy = np.exp(lsa), np.exp(lsb), np.exp(lsy)
        grad = np.empty_like(theta)
        hn_a, d_a = _halfnormal_log(lsa, 5.0)
        hn_b, d_b = _halfnormal_log(lsb, 5.0)
        hn_y, d_y = _halfnormal_log(lsy, 5.0)
        za, zb = (av - ma) / sa, (bv - mb) / sb
        r = (y - av[county_idx] - bv[county_idx] * floor) / sy
        logp = (
            -0.5 * (ma / 10) ** 2 - 0.5 * (mb / 10) ** 2 - 2 * (math.log(10.0) + 0.5 * LOG_2PI)
            + hn_a + hn_b + hn_y
            - 0.5 * za @ za - K * (lsa + 0.5 * LOG_2PI)
            - 0.5 * zb @ zb - K * (lsb + 0.5 * LOG_2PI)
            - 0.5 * r @ r - len(y) * (lsy + 0.5 * LOG_2PI)
        )  # fmt: skip
        dr = r / sy  # d logp / d y_hat
        grad[0] = -ma / 100 + za.sum() / sa
        grad[1] = -mb / 100 + zb.sum() / sb
        grad[2] = d_a + za @ za - K
        grad[3] = d_b + zb @ zb - K
        grad[4] = d_y + r @ r - len(y)
        grad[5 : 5 + K] = -za / sa + np.bincount(county_idx, dr, K)
        grad[5 + K :] = -zb / sb + np.bincount(county_idx, dr * floor, K)
        return logp, grad

    @numba.njit(cache=False, fastmath=False)
    def _numba(theta, county_idx, floor, y):
        ma, mb, lsa, lsb, lsy = theta[0], theta[1], theta[2], theta[3], theta[4]
        sa, sb, sy = np.exp(lsa), np.exp(lsb), np.exp(lsy)
        grad = np.zeros_like(theta)
        logp = -0.5 * (ma / 10) ** 2 - 0.5 * (mb / 10) ** 2 - 2 * (math.log(10.0) + 0.5 * LOG_2PI)
        for k, ls in ((2, lsa), (3, lsb), (4, lsy)):
            s = np.exp(ls)
            logp += HALF_LOG_2_OVER_PI - math.log(5.0) - 0.5 * (s / 5.0) ** 2 + ls
            grad[k] = 1.0 - (s / 5.0) ** 2
        grad[0] = -ma / 100
        grad[1] = -mb / 100
        ssa = ssb = 0.0
        for j in range(K):
            za = (theta[5 + j] - ma) / sa
            zb = (theta[5 + K + j] - mb) / sb
            ssa += za * za
            ssb += zb * zb
            grad[0] += za / sa
            grad[1] += zb / sb
            grad[5 + j] = -za / sa
            grad[5 + K + j] = -zb / sb
        ssr = 0.0
        for i in range(y.shape[0]):
            c = county_idx[i]
            r = (y[i] - theta[5 + c] - theta[5 + K + c] * floor[i]) / sy
            ssr += r * r
            grad[5 + c] += r / sy
            grad[5 + K + c] += r / sy * floor[i]
        logp += -0.5 * ssa - K * (lsa + 0.5 * LOG_2PI) - 0.5 * ssb - K * (lsb + 0.5 * LOG_2PI)
        logp += -0.5 * ssr - y.shape[0] * (lsy + 0.5 * LOG_2PI)
        grad[2] += ssa - K
        grad[3] += ssb - K
        grad[4] += ssr - y.shape[0]
        return logp, grad

    def jax_logp(theta, county_idx, floor, y):
        import jax.numpy as jnp

        ma, mb, lsa, lsb, lsy = theta[0], theta[1], theta[2], theta[3], theta[4]
        av, bv = theta[5 : 5 + K], theta[5 + K :]
        sa, sb, sy = jnp.exp(lsa), jnp.exp(lsb), jnp.exp(lsy)

        def normal(x, mu, s):
            return jnp.sum(-0.5 * ((x - mu) / s) ** 2 - jnp.log(s) - 0.5 * LOG_2PI)

        def halfnormal_log(ls):
            return HALF_LOG_2_OVER_PI - math.log(5.0) - 0.5 * (jnp.exp(ls) / 5.0) ** 2 + ls

        return (
            normal(ma, 0.0, 10.0) + normal(mb, 0.0, 10.0)
            + halfnormal_log(lsa) + halfnormal_log(lsb) + halfnormal_log(lsy)
            + normal(av, ma, sa) + normal(bv, mb, sb)
            + normal(y, av[county_idx] + bv[county_idx] * floor, sy)
        )  # fmt: skip

    def pymc_model():
        import pymc as pm

        with pm.Model(coords={"county": [f"county{k}" for k in range(K)]}) as m:
            ma = pm.Normal("mu_a", 0.0, 10.0)
            mb = pm.Normal("mu_b", 0.0, 10.0)
            sa = pm.HalfNormal("sigma_a", 5.0)
            sb = pm.HalfNormal("sigma_b", 5.0)
            sy = pm.HalfNormal("sigma_y", 5.0)
            av = pm.Normal("a", ma, sa, dims="county")
            bv = pm.Normal("b", mb, sb, dims="county")
            pm.Normal("y", av[county_idx] + bv[county_idx] * floor, sy, observed=y)
        return m

    def pymc_point(theta):
        names = ["mu_a", "mu_b", "sigma_a_log__", "sigma_b_log__", "sigma_y_log__"]
        point = {n: np.asarray(v) for n, v in zip(names, theta[:5])}
        point.update(a=theta[5 : 5 + K], b=theta[5 + K :])
        return point

    def dg_model():
        m = dg.Model()
        ma, mb = m.normal("mu_a", 0.0, 10.0), m.normal("mu_b", 0.0, 10.0)
        sa, sb, sy = (m.halfnormal(n, 5.0) for n in ("sigma_a", "sigma_b", "sigma_y"))
        av = m.normal("a", ma, sa, dims=(county,))
        bv = m.normal("b", mb, sb, dims=(county,))
        ci, fl = m.data("county_idx", county_idx, dims=(obs,)), m.data("floor", floor, dims=(obs,))
        m.observe("y", dg.dist.normal(av.isel(county=ci) + bv.isel(county=ci) * fl, sy), data=y, dims=(obs,))
        return m

    data = {"county_idx": county_idx, "floor": floor, "y": y}
    return Model(
        "radon", cost, params, [idx, floor_v, y_v], data, theta, numpy_fn,
        lambda t: _numba(t, county_idx, floor, y), jax_logp, (county_idx, floor, y), pymc_model, pymc_point, dg_model,
    )  # fmt: skip


# ------------------------------------------------------------------------------------- eight schools
def eight_schools():
    """Non-centered: y ~ N(mu + tau * theta_tilde, sigma), mu ~ N(0, 5), tau ~ HalfCauchy(5),
    theta_tilde ~ N(0, 1): 10 parameters."""
    import numba

    y = np.array([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0])
    sigma = np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0])
    school = dg.Dim("school", coords=["A", "B", "C", "D", "E", "F", "G", "H"])
    mu, log_tau = dg.labeled("mu", dims=()), dg.labeled("log_tau", dims=())
    theta_tilde = dg.labeled("theta_tilde", dims=(school,))
    y_v, sigma_v = dg.labeled("y", dims=(school,)), dg.labeled("sigma", dims=(school,))
    tau = dg.exp(log_tau)
    half_cauchy = dg.dist.cauchy(0.0, 5.0).logp(tau) + math.log(2.0)  # HalfCauchy(5) on tau >= 0
    cost = (
        dg.dist.normal(0.0, 5.0).logp(mu)
        + half_cauchy + log_tau
        + dg.dist.normal(0.0, 1.0).logp(theta_tilde).sum()
        + dg.dist.normal(mu + tau * theta_tilde, sigma_v).logp(y_v).sum()
    )  # fmt: skip
    theta = np.array([4.0, 1.2, 0.3, -0.2, 0.1, 0.5, -0.8, 0.0, 1.1, -0.4])
    const = -math.log(5.0) - 0.5 * LOG_2PI + math.log(2.0) - math.log(math.pi) - math.log(5.0) - 8 * 0.5 * LOG_2PI

    def numpy_fn(theta):
        m, lt, tt = theta[0], theta[1], theta[2:]
        t = np.exp(lt)
        r = (y - m - t * tt) / sigma
        logp = (
            const - 0.5 * (m / 5) ** 2 - np.log1p((t / 5) ** 2) + lt - 0.5 * tt @ tt
            + np.sum(-0.5 * r * r - np.log(sigma) - 0.5 * LOG_2PI)
        )  # fmt: skip
        dr = r / sigma
        grad = np.empty(10)
        grad[0] = -m / 25 + dr.sum()
        grad[1] = -2 * (t / 5) ** 2 / (1 + (t / 5) ** 2) + 1 + t * (dr @ tt)
        grad[2:] = -tt + t * dr
        return logp, grad

    @numba.njit
    def _numba(theta, y, sigma):
        m, lt = theta[0], theta[1]
        t = np.exp(lt)
        u = (t / 5) ** 2
        logp = const - 0.5 * (m / 5) ** 2 - np.log1p(u) + lt
        grad = np.empty(10)
        grad[0] = -m / 25
        grad[1] = -2 * u / (1 + u) + 1
        for j in range(8):
            tt = theta[2 + j]
            r = (y[j] - m - t * tt) / sigma[j]
            logp += -0.5 * tt * tt - 0.5 * r * r - np.log(sigma[j]) - 0.5 * LOG_2PI
            dr = r / sigma[j]
            grad[0] += dr
            grad[1] += t * dr * tt
            grad[2 + j] = -tt + t * dr
        return logp, grad

    def jax_logp(theta, y, sigma):
        import jax.numpy as jnp

        m, lt, tt = theta[0], theta[1], theta[2:]
        t = jnp.exp(lt)
        r = (y - m - t * tt) / sigma
        return (
            const
            - 0.5 * (m / 5) ** 2
            - jnp.log1p((t / 5) ** 2)
            + lt
            - 0.5 * tt @ tt
            + jnp.sum(-0.5 * r * r - jnp.log(sigma) - 0.5 * LOG_2PI)
        )

    def pymc_model():
        import pymc as pm

        with pm.Model(coords={"school": list("ABCDEFGH")}) as m:
            mu_ = pm.Normal("mu", 0.0, 5.0)
            tau_ = pm.HalfCauchy("tau", 5.0)
            tt = pm.Normal("theta_tilde", 0.0, 1.0, dims="school")
            pm.Normal("y", mu_ + tau_ * tt, sigma, observed=y)
        return m

    def pymc_point(theta):
        return {"mu": np.asarray(theta[0]), "tau_log__": np.asarray(theta[1]), "theta_tilde": theta[2:]}

    def dg_model():
        m = dg.Model()
        mu_ = m.normal("mu", 0.0, 5.0)
        tau_ = m.halfcauchy("tau", 5.0)
        tt = m.normal("theta_tilde", 0.0, 1.0, dims=(school,))
        m.observe("y", dg.dist.normal(mu_ + tau_ * tt, m.data("sigma", sigma, dims=(school,))), data=y, dims=(school,))
        return m

    return Model(
        "eight_schools", cost, [mu, log_tau, theta_tilde], [y_v, sigma_v], {"y": y, "sigma": sigma}, theta,
        numpy_fn, lambda t: _numba(t, y, sigma), jax_logp, (y, sigma), pymc_model, pymc_point, dg_model,
    )  # fmt: skip


# -------------------------------------------------------------------------- LKJ correlated effects
def lkj(n_obs=600, n_group=30, n_effect=3, eta=2.0, seed=1):
    """Correlated varying effects: y ~ N(sum_e x[:, e] * (mu[e] + beta[e, group]), sigma),
    beta = L z with z ~ N(0, 1) on (group, effect), L ~ LKJCholeskyCov(eta=2, sd_dist=Exponential(1))
    (PyMC's packed, log-diagonal layout), mu ~ N(0, 5), sigma ~ HalfNormal(1): 6 + 90 + 3 + 1 = 100
    parameters. The LKJ log density is written by hand from elementwise ops, gathers and sums."""
    import numba

    E, G = n_effect, n_group
    rng = np.random.default_rng(seed)
    group_idx = rng.integers(0, G, n_obs).astype(np.int64)
    X = np.column_stack([np.ones(n_obs), rng.normal(size=(n_obs, E - 1))])
    y = X @ np.array([1.0, 0.5, -0.3]) + rng.normal(0, 0.3, (G, E))[group_idx].sum(1) + rng.normal(0, 0.5, n_obs)
    rows, cols = np.tril_indices(E)  # PyMC's packed order: row-major lower triangle
    n_packed = len(rows)
    diag_pos = np.cumsum(np.arange(1, E + 1)) - 1
    table = np.zeros((E, E), np.int64)
    table[rows, cols] = np.arange(n_packed)
    lower = np.zeros((E, E))
    lower[rows, cols] = 1.0
    is_diag = np.zeros(n_packed)
    is_diag[diag_pos] = 1.0
    k = np.arange(1, E)
    norm = (E - 1) * math.lgamma(eta + 0.5 * (E - 1)) - float(
        np.sum(0.5 * k * math.log(math.pi) + np.array([math.lgamma(eta + 0.5 * (E - 1 - kk)) for kk in k]))
    )
    a_coef = 2 * eta - 3 + E - np.arange(E)  # LKJ's power of each row's diagonal correlation
    row_weight = np.arange(E).astype(float)

    effect = dg.Dim("effect", coords=["intercept", "x1", "x2"])
    effect_c = dg.Dim("effect_c", size=E)  # the Cholesky factor's column dim
    packed = dg.Dim("packed", size=n_packed)
    group = dg.Dim("group", coords=[f"g{j}" for j in range(G)])
    obs = dg.Dim("obs")
    chol_packed = dg.labeled("chol_packed", dims=(packed,))
    z = dg.labeled("z", dims=(group, effect_c))
    mu = dg.labeled("mu", dims=(effect,))
    log_sigma = dg.labeled("log_sigma", dims=())
    gidx = dg.labeled("group_idx", dims=(obs,), dtype="int64")
    x_v, y_v = dg.labeled("x", dims=(obs, effect)), dg.labeled("y", dims=(obs,))
    diag_mask = dg.constant(is_diag, dims=(packed,))
    values = dg.where(diag_mask > 0, dg.exp(chol_packed), chol_packed)  # the diagonal lives on the log scale
    L = values.isel(packed=dg.constant(table, dims=(effect, effect_c))) * dg.constant(lower, dims=(effect, effect_c))
    sd = dg.sqrt((L * L).sum(effect_c))  # the rows' norms: the effects' standard deviations
    log_corr_diag = chol_packed.isel(packed=dg.constant(diag_pos, dims=(effect,))) - dg.log(sd)
    lkj_logp = (
        norm
        + (dg.constant(a_coef + 1.0, dims=(effect,)) * log_corr_diag).sum()  # LKJ and the correlations' Jacobian
        - (dg.constant(row_weight, dims=(effect,)) * dg.log(sd)).sum()  # the scales' Jacobian
        + dg.dist.exponential(1.0).logp(sd).sum()
        + (chol_packed * diag_mask).sum()  # the log transform of the diagonal
    )
    beta = (L * z).sum(effect_c)  # (group, effect)
    coef = mu + beta.isel(group=gidx)  # (obs, effect)
    y_hat = (x_v * coef).sum(effect)
    cost = (
        lkj_logp
        + dg.dist.normal(0.0, 1.0).logp(z).sum()
        + dg.dist.normal(0.0, 5.0).logp(mu).sum()
        + dg.dist.halfnormal(1.0).logp(dg.exp(log_sigma)) + log_sigma
        + dg.dist.normal(y_hat, dg.exp(log_sigma)).logp(y_v).sum()
    )  # fmt: skip
    theta = np.concatenate([[-0.5, 0.1, -0.8, -0.2, 0.05, -1.1], rng.normal(0, 1, G * E), [1.0, 0.4, -0.2], [-0.6]])
    n_z = G * E
    c_norm = (
        norm - n_z * 0.5 * LOG_2PI - E * (math.log(5.0) + 0.5 * LOG_2PI) + HALF_LOG_2_OVER_PI - n_obs * 0.5 * LOG_2PI
    )

    def unpack(theta):
        vals = theta[:n_packed].copy()
        vals[diag_pos] = np.exp(vals[diag_pos])
        L = np.zeros((E, E))
        L[rows, cols] = vals
        return L

    def numpy_fn(theta):
        Lm = unpack(theta)
        zm = theta[n_packed : n_packed + n_z].reshape(G, E)
        m = theta[n_packed + n_z : n_packed + n_z + E]
        ls = theta[-1]
        s = math.exp(ls)
        sd2 = (Lm * Lm).sum(1)
        sd = np.sqrt(sd2)
        log_cd = theta[diag_pos] - np.log(sd)
        beta = zm @ Lm.T  # (G, E)
        coef = m + beta[group_idx]
        r = (y - (X * coef).sum(1)) / s
        logp = (
            c_norm + (a_coef + 1) @ log_cd - row_weight @ np.log(sd) - sd.sum() + theta[diag_pos].sum()
            - 0.5 * np.sum(zm * zm) - 0.5 * m @ m / 25 - 0.5 * s * s + ls - 0.5 * r @ r - n_obs * ls
        )  # fmt: skip
        dyhat = r / s
        dcoef = X * dyhat[:, None]  # (obs, E)
        dbeta = np.zeros((G, E))
        np.add.at(dbeta, group_idx, dcoef)
        dL = dbeta.T @ zm  # d logp / d L through beta
        dL -= ((a_coef + 1 + row_weight) / sd2 + 1 / sd)[:, None] * Lm  # through sd
        grad = np.empty_like(theta)
        dvals = dL[rows, cols]
        dvals[diag_pos] = dvals[diag_pos] * np.exp(theta[diag_pos]) + a_coef + 2
        grad[:n_packed] = dvals
        grad[n_packed : n_packed + n_z] = (-zm + dbeta @ Lm).ravel()
        grad[n_packed + n_z : n_packed + n_z + E] = -m / 25 + dcoef.sum(0)
        grad[-1] = -s * s + 1 + r @ r - n_obs
        return logp, grad

    @numba.njit
    def _numba(theta, group_idx, X, y):
        Lm = np.zeros((E, E))
        for p in range(n_packed):
            Lm[rows[p], cols[p]] = theta[p]
        for e in range(E):
            Lm[e, e] = np.exp(theta[diag_pos[e]])
        m = theta[n_packed + n_z : n_packed + n_z + E]
        ls = theta[-1]
        s = np.exp(ls)
        logp = c_norm - 0.5 * s * s + ls - n_obs * ls
        grad = np.zeros_like(theta)
        dL = np.zeros((E, E))
        sd2 = np.zeros(E)
        for e in range(E):
            for c in range(e + 1):
                sd2[e] += Lm[e, c] * Lm[e, c]
            sd = np.sqrt(sd2[e])
            logp += (a_coef[e] + 1) * (theta[diag_pos[e]] - np.log(sd)) - row_weight[e] * np.log(sd) - sd
            logp += theta[diag_pos[e]] - 0.5 * m[e] * m[e] / 25
            w = (a_coef[e] + 1 + row_weight[e]) / sd2[e] + 1 / sd
            for c in range(e + 1):
                dL[e, c] = -w * Lm[e, c]
            grad[n_packed + n_z + e] = -m[e] / 25
        beta = np.zeros((G, E))
        for g in range(G):
            for e in range(E):
                acc = 0.0
                for c in range(e + 1):
                    acc += Lm[e, c] * theta[n_packed + g * E + c]
                beta[g, e] = acc
                zz = theta[n_packed + g * E + e]
                logp -= 0.5 * zz * zz
        dbeta = np.zeros((G, E))
        ssr = 0.0
        for i in range(y.shape[0]):
            g = group_idx[i]
            pred = 0.0
            for e in range(E):
                pred += X[i, e] * (m[e] + beta[g, e])
            r = (y[i] - pred) / s
            ssr += r * r
            for e in range(E):
                d = X[i, e] * r / s
                dbeta[g, e] += d
                grad[n_packed + n_z + e] += d
        logp -= 0.5 * ssr
        grad[-1] = -s * s + 1 + ssr - n_obs
        for g in range(G):
            for c in range(E):
                acc = -theta[n_packed + g * E + c]
                for e in range(c, E):
                    acc += dbeta[g, e] * Lm[e, c]
                    dL[e, c] += dbeta[g, e] * theta[n_packed + g * E + c]
                grad[n_packed + g * E + c] = acc
        for p in range(n_packed):
            grad[p] = dL[rows[p], cols[p]]
        for e in range(E):
            grad[diag_pos[e]] = grad[diag_pos[e]] * Lm[e, e] + a_coef[e] + 2
        return logp, grad

    def jax_logp(theta, group_idx, X, y):
        import jax.numpy as jnp

        vals = theta[:n_packed]
        vals = vals.at[diag_pos].set(jnp.exp(vals[diag_pos]))
        Lm = jnp.zeros((E, E)).at[rows, cols].set(vals)
        zm = theta[n_packed : n_packed + n_z].reshape(G, E)
        m = theta[n_packed + n_z : n_packed + n_z + E]
        ls = theta[-1]
        s = jnp.exp(ls)
        sd = jnp.sqrt((Lm * Lm).sum(1))
        log_cd = theta[diag_pos] - jnp.log(sd)
        coef = m + (zm @ Lm.T)[group_idx]
        r = (y - (X * coef).sum(1)) / s
        return (
            c_norm + (a_coef + 1) @ log_cd - row_weight @ jnp.log(sd) - sd.sum() + theta[diag_pos].sum()
            - 0.5 * jnp.sum(zm * zm) - 0.5 * m @ m / 25 - 0.5 * s * s + ls - 0.5 * r @ r - n_obs * ls
        )  # fmt: skip

    def pymc_model():
        import pymc as pm

        coords = {"effect": ["intercept", "x1", "x2"], "group": [f"g{j}" for j in range(G)]}
        with pm.Model(coords=coords) as m:
            chol, _, _ = pm.LKJCholeskyCov(
                "chol", n=E, eta=eta, sd_dist=pm.Exponential.dist(1.0, size=E), compute_corr=True
            )
            zv = pm.Normal("z", 0.0, 1.0, dims=("group", "effect"))
            muv = pm.Normal("mu", 0.0, 5.0, dims="effect")
            sv = pm.HalfNormal("sigma", 1.0)
            betav = zv @ chol.T
            pm.Normal("y", (X * (muv + betav[group_idx])).sum(1), sv, observed=y)
        return m

    def pymc_point(theta):
        return {
            "chol_cholesky-cov-packed__": theta[:n_packed],
            "z": theta[n_packed : n_packed + n_z].reshape(G, E),
            "mu": theta[n_packed + n_z : n_packed + n_z + E],
            "sigma_log__": np.asarray(theta[-1]),
        }

    def dg_model():  # the catalog's LKJ-Cholesky prior (PyMC's packed layout), as a `dg.Model` user writes it
        m = dg.Model()
        chol = m.rv("chol", dg.dist.lkj_cholesky_cov(eta, dg.dist.exponential(1.0), dims=(effect, effect_c)))
        zv = m.normal("z", 0.0, 1.0, dims=(group, effect_c))
        muv = m.normal("mu", 0.0, 5.0, dims=(effect,))
        sv = m.halfnormal("sigma", 1.0)
        gi, xv = m.data("group_idx", group_idx, dims=(obs,)), m.data("x", X, dims=(obs, effect))
        betav = (chol * zv).sum(effect_c)  # (effect, group)
        m.observe("y", dg.dist.normal((xv * (muv + betav.isel(group=gi))).sum(effect), sv), data=y, dims=(obs,))
        return m

    def dg_point(theta):
        return {("chol_cholesky_cov__" if n.startswith("chol") else n): v for n, v in pymc_point(theta).items()}

    params = [chol_packed, z, mu, log_sigma]
    return Model(
        "lkj", cost, params, [gidx, x_v, y_v], {"group_idx": group_idx, "x": X, "y": y}, theta, numpy_fn,
        lambda t: _numba(t, group_idx, X, y), jax_logp, (group_idx, X, y), pymc_model, pymc_point, dg_model, dg_point,
    )  # fmt: skip


# ------------------------------------------------------------------------------------------ AR(1)
def ar1(T=1000, seed=2):
    """y_t ~ N(mu + rho (y_{t-1} - mu), sigma) given y_0, the predictions carried by `dg.scan`;
    mu ~ N(0, 1), rho ~ N(0, 0.5), sigma ~ HalfNormal(1): 3 parameters, T = 1000."""
    import numba

    rng = np.random.default_rng(seed)
    y = np.empty(T)
    y[0] = 0.3
    for t in range(1, T):
        y[t] = 0.2 + 0.6 * (y[t - 1] - 0.2) + rng.normal(0, 0.5)
    time_ = dg.Dim("time")
    mu, rho, log_sigma = dg.labeled("mu", dims=()), dg.labeled("rho", dims=()), dg.labeled("log_sigma", dims=())
    y_prev, y_next = dg.labeled("y_prev", dims=(time_,)), dg.labeled("y_next", dims=(time_,))

    def step(prediction, previous):  # the state: this step's prediction, from the observation before
        return mu + rho * (previous - mu)

    _, predictions = dg.scan(step, init=dg.zeros_like(mu), sequences=y_prev, dim=time_)
    sigma = dg.exp(log_sigma)
    cost = (
        dg.dist.normal(0.0, 1.0).logp(mu)
        + dg.dist.normal(0.0, 0.5).logp(rho)
        + dg.dist.halfnormal(1.0).logp(sigma) + log_sigma
        + dg.dist.normal(predictions, sigma).logp(y_next).sum()
    )  # fmt: skip
    theta = np.array([0.1, 0.5, -0.6])
    n = T - 1
    c0 = -0.5 * LOG_2PI - math.log(0.5) - 0.5 * LOG_2PI + HALF_LOG_2_OVER_PI - n * 0.5 * LOG_2PI

    def numpy_fn(theta):
        m, rh, ls = theta
        s = math.exp(ls)
        r = (y[1:] - m - rh * (y[:-1] - m)) / s
        logp = c0 - 0.5 * m * m - 2 * rh * rh - 0.5 * s * s + ls - 0.5 * r @ r - n * ls
        dr = r / s
        grad = np.array([-m + (1 - rh) * dr.sum(), -4 * rh + dr @ (y[:-1] - m), -s * s + 1 + r @ r - n])
        return logp, grad

    @numba.njit
    def _numba(theta, y):
        m, rh, ls = theta[0], theta[1], theta[2]
        s = np.exp(ls)
        ssr = sdr = sdx = 0.0
        for t in range(1, y.shape[0]):
            x = y[t - 1] - m
            r = (y[t] - m - rh * x) / s
            ssr += r * r
            sdr += r
            sdx += r * x
        grad = np.empty(3)
        grad[0] = -m + (1 - rh) * sdr / s
        grad[1] = -4 * rh + sdx / s
        grad[2] = -s * s + 1 + ssr - n
        return c0 - 0.5 * m * m - 2 * rh * rh - 0.5 * s * s + ls - 0.5 * ssr - n * ls, grad

    def jax_logp(theta, y_prev, y_next):
        import jax
        import jax.numpy as jnp

        m, rh, ls = theta[0], theta[1], theta[2]
        s = jnp.exp(ls)
        _, pred = jax.lax.scan(lambda c, prev: (c, m + rh * (prev - m)), 0.0, y_prev)
        r = (y_next - pred) / s
        return c0 - 0.5 * m * m - 2 * rh * rh - 0.5 * s * s + ls - 0.5 * r @ r - n * ls

    def pymc_model():  # vectorized, as a PyMC user writes it (no scan)
        import pymc as pm

        with pm.Model() as model:
            m = pm.Normal("mu", 0.0, 1.0)
            rh = pm.Normal("rho", 0.0, 0.5)
            s = pm.HalfNormal("sigma", 1.0)
            pm.Normal("y", m + rh * (y[:-1] - m), s, observed=y[1:])
        return model

    def pymc_point(theta):
        return {"mu": np.asarray(theta[0]), "rho": np.asarray(theta[1]), "sigma_log__": np.asarray(theta[2])}

    data = {"y_prev": y[:-1].copy(), "y_next": y[1:].copy()}

    def dg_model():
        m = dg.Model()
        m_, rh = m.normal("mu", 0.0, 1.0), m.normal("rho", 0.0, 0.5)
        s = m.halfnormal("sigma", 1.0)
        previous = m.data("y_prev", data["y_prev"], dims=(time_,))
        _, pred = dg.scan(lambda p, prev: m_ + rh * (prev - m_), init=dg.zeros_like(m_), sequences=previous, dim=time_)
        m.observe("y", dg.dist.normal(pred, s), data=data["y_next"], dims=(time_,))
        return m

    return Model(
        "ar1", cost, [mu, rho, log_sigma], [y_prev, y_next], data, theta, numpy_fn, lambda t: _numba(t, y),
        jax_logp, (data["y_prev"], data["y_next"]), pymc_model, pymc_point, dg_model,
    )  # fmt: skip


# ---------------------------------------------------------------------------------------- lkj_user
def lkj_user(**kwargs):
    """`lkj` as a user writes it when the catalog does not help (issue 37): the Cholesky factor's
    diagonal by `dg.linalg.diagonal`, the effects by `dg.dot`, and the linear predictor from `sel` of
    the three effects, each times its own data column. The same log density as `lkj` (its hand NumPy,
    numba, jax and PyMC forms serve here), so only dimgraph's graph differs."""
    base = lkj(**kwargs)
    chol_packed, z, mu, log_sigma = base.params
    gidx, x_v, y_v = base.data_vars
    effect, effect_c = x_v.dims[1], z.dims[1]
    obs, packed = x_v.dims[0], chol_packed.dims[0]
    E = effect.size
    rows, cols = np.tril_indices(E)
    diag_pos = np.cumsum(np.arange(1, E + 1)) - 1
    table = np.zeros((E, E), np.int64)
    table[rows, cols] = np.arange(len(rows))
    lower = np.zeros((E, E))
    lower[rows, cols] = 1.0
    is_diag = np.zeros(len(rows))
    is_diag[diag_pos] = 1.0
    eta = 2.0
    k = np.arange(1, E)
    norm = (E - 1) * math.lgamma(eta + 0.5 * (E - 1)) - float(
        np.sum(0.5 * k * math.log(math.pi) + np.array([math.lgamma(eta + 0.5 * (E - 1 - kk)) for kk in k]))
    )
    columns = [dg.labeled(f"x_{name}", dims=(obs,)) for name in effect.coords]
    diag_mask = dg.constant(is_diag, dims=(packed,))

    def hand_lkj(chol_packed):
        """(L, its log density with the Jacobians) from the packed factor, log diagonal."""
        values = dg.where(diag_mask > 0, dg.exp(chol_packed), chol_packed)
        L = values.isel(packed=dg.constant(table, dims=(effect, effect_c))) * dg.constant(
            lower, dims=(effect, effect_c)
        )
        sd = dg.sqrt(dg.dot(L, L, dim="effect_c"))
        log_corr_diag = dg.log(dg.linalg.diagonal(L, dims=(effect, effect_c))) - dg.log(sd)
        return L, (
            norm
            + (dg.constant(2 * eta - 3 + E - np.arange(E) + 1.0, dims=(effect,)) * log_corr_diag).sum()
            - (dg.constant(np.arange(E).astype(float), dims=(effect,)) * dg.log(sd)).sum()
            + dg.dist.exponential(1.0).logp(sd).sum()
            + (chol_packed * diag_mask).sum()
        )

    def predictor(L, z, mu, gidx, columns):
        beta = dg.dot(L, z, dim="effect_c")  # (effect, group)
        coef = (mu + beta).isel(group=gidx)  # (effect, obs)
        return sum(coef.sel(effect=name) * column for name, column in zip(effect.coords, columns))

    L, lkj_logp = hand_lkj(chol_packed)
    cost = (
        lkj_logp
        + dg.dist.normal(0.0, 1.0).logp(z).sum()
        + dg.dist.normal(0.0, 5.0).logp(mu).sum()
        + dg.dist.halfnormal(1.0).logp(dg.exp(log_sigma)) + log_sigma
        + dg.dist.normal(predictor(L, z, mu, gidx, columns), dg.exp(log_sigma)).logp(y_v).sum()
    )  # fmt: skip
    x = base.data["x"]
    data = {"group_idx": base.data["group_idx"], "y": base.data["y"]}
    data.update((f"x_{name}", np.ascontiguousarray(x[:, j])) for j, name in enumerate(effect.coords))

    def dg_model():  # the factor's prior written by hand as a potential on a flat packed vector
        m = dg.Model()
        packed_v = m.flat("chol_packed", dims=(packed,))
        L_m, lkj_m = hand_lkj(packed_v)
        m.potential("lkj", lkj_m)
        zv = m.normal("z", 0.0, 1.0, dims=z.dims)
        muv = m.normal("mu", 0.0, 5.0, dims=(effect,))
        sv = m.halfnormal("sigma", 1.0)
        gi = m.data("group_idx", data["group_idx"], dims=(obs,))
        cols = [m.data(f"x_{name}", data[f"x_{name}"], dims=(obs,)) for name in effect.coords]
        m.observe("y", dg.dist.normal(predictor(L_m, zv, muv, gi, cols), sv), data=data["y"], dims=(obs,))
        return m

    def dg_point(theta):
        return {("chol_packed" if n.startswith("chol") else n): v for n, v in base.pymc_point(theta).items()}

    return Model(
        "lkj_user", cost, base.params, [gidx, y_v, *columns], data, base.theta, base.numpy_fn, base.numba_fn,
        base.jax_logp, base.jax_data, base.pymc_model, base.pymc_point, dg_model, dg_point,
    )  # fmt: skip


# ------------------------------------------------------------------------------------- crossed effects
def crossed(n_obs=1000, n_batch=20, n_machine=12, seed=3):
    """Crossed effects indexed by two data indexers (issue 37's most common multilevel shape, written as a
    user writes it): y ~ N(mu + alpha[batch] + gamma[machine] + sigma_c * z[batch, machine], sigma_y), the
    cell effect read by `cell.isel(batch=b, machine=k)`; alpha ~ N(0, sigma_a), gamma ~ N(0, sigma_g),
    z ~ N(0, 1), mu ~ N(0, 5), HalfNormal(1) scales: 5 + 20 + 12 + 240 = 277 parameters, 1000 observations."""
    import numba

    B, M, N = n_batch, n_machine, n_obs
    rng = np.random.default_rng(seed)
    b_idx = rng.integers(0, B, N).astype(np.int64)
    k_idx = rng.integers(0, M, N).astype(np.int64)
    y = (
        2.0 + rng.normal(0, 0.5, B)[b_idx] + rng.normal(0, 0.3, M)[k_idx]
        + rng.normal(0, 0.2, (B, M))[b_idx, k_idx] + rng.normal(0, 0.4, N)
    )  # fmt: skip
    batch = dg.Dim("batch", coords=[f"b{j}" for j in range(B)])
    machine = dg.Dim("machine", coords=[f"m{j}" for j in range(M)])
    obs = dg.Dim("obs")
    mu = dg.labeled("mu", dims=())
    scales = [dg.labeled(f"log_sigma_{n}", dims=()) for n in "agcy"]
    alpha, gamma = dg.labeled("alpha", dims=(batch,)), dg.labeled("gamma", dims=(machine,))
    z = dg.labeled("z_cell", dims=(batch, machine))
    b_v = dg.labeled("batch_idx", dims=(obs,), dtype="int64")
    k_v = dg.labeled("machine_idx", dims=(obs,), dtype="int64")
    y_v = dg.labeled("y", dims=(obs,))
    sa, sg, sc, sy = (dg.exp(ls) for ls in scales)
    cell = sc * z
    y_hat = mu + alpha.isel(batch=b_v) + gamma.isel(machine=k_v) + cell.isel(batch=b_v, machine=k_v)
    half = dg.dist.halfnormal(1.0)
    cost = (
        dg.dist.normal(0.0, 5.0).logp(mu)
        + sum(half.logp(dg.exp(ls)) + ls for ls in scales)
        + dg.dist.normal(0.0, sa).logp(alpha).sum()
        + dg.dist.normal(0.0, sg).logp(gamma).sum()
        + dg.dist.normal(0.0, 1.0).logp(z).sum()
        + dg.dist.normal(y_hat, sy).logp(y_v).sum()
    )  # fmt: skip
    params = [mu, *scales, alpha, gamma, z]
    theta = np.concatenate(
        [[1.8, -0.7, -1.1, -1.5, -0.9], rng.normal(0, 0.5, B), rng.normal(0, 0.3, M), rng.normal(0, 1, B * M)]
    )
    o_a, o_g, o_z = 5, 5 + B, 5 + B + M
    const = -math.log(5.0) - 0.5 * LOG_2PI - (B + M + B * M + N) * 0.5 * LOG_2PI

    def numpy_fn(theta):
        m, lsa, lsg, lsc, lsy = theta[:5]
        al, ga, zm = theta[o_a:o_g], theta[o_g:o_z], theta[o_z:].reshape(B, M)
        s_a, s_g, s_c, s_y = np.exp([lsa, lsg, lsc, lsy])
        hn = [_halfnormal_log(ls, 1.0) for ls in (lsa, lsg, lsc, lsy)]
        r = (y - m - al[b_idx] - ga[k_idx] - s_c * zm[b_idx, k_idx]) / s_y
        logp = (
            const - 0.5 * (m / 5) ** 2 + sum(v for v, _ in hn)
            - 0.5 * al @ al / s_a**2 - B * lsa - 0.5 * ga @ ga / s_g**2 - M * lsg
            - 0.5 * np.sum(zm * zm) - 0.5 * r @ r - N * lsy
        )  # fmt: skip
        dy = r / s_y
        dcell = np.bincount(b_idx * M + k_idx, dy, B * M).reshape(B, M)
        grad = np.empty_like(theta)
        grad[0] = -m / 25 + dy.sum()
        grad[1] = hn[0][1] + al @ al / s_a**2 - B
        grad[2] = hn[1][1] + ga @ ga / s_g**2 - M
        grad[3] = hn[2][1] + s_c * np.sum(zm * dcell)
        grad[4] = hn[3][1] + r @ r - N
        grad[o_a:o_g] = -al / s_a**2 + np.bincount(b_idx, dy, B)
        grad[o_g:o_z] = -ga / s_g**2 + np.bincount(k_idx, dy, M)
        grad[o_z:] = (-zm + s_c * dcell).ravel()
        return logp, grad

    @numba.njit
    def _numba(theta, b_idx, k_idx, y):
        m = theta[0]
        s_a, s_g, s_c, s_y = np.exp(theta[1]), np.exp(theta[2]), np.exp(theta[3]), np.exp(theta[4])
        grad = np.zeros_like(theta)
        logp = const - 0.5 * (m / 5) ** 2
        for j in range(1, 5):
            s = np.exp(theta[j])
            logp += HALF_LOG_2_OVER_PI - 0.5 * s * s + theta[j]
            grad[j] = 1.0 - s * s
        grad[0] = -m / 25
        ssa = 0.0
        for j in range(B):
            a = theta[o_a + j]
            ssa += a * a
            grad[o_a + j] = -a / (s_a * s_a)
        ssg = 0.0
        for j in range(M):
            g = theta[o_g + j]
            ssg += g * g
            grad[o_g + j] = -g / (s_g * s_g)
        ssz = 0.0
        for j in range(B * M):
            zz = theta[o_z + j]
            ssz += zz * zz
            grad[o_z + j] = -zz
        ssr = szd = 0.0
        for i in range(y.shape[0]):
            b, k = b_idx[i], k_idx[i]
            zc = theta[o_z + b * M + k]
            r = (y[i] - m - theta[o_a + b] - theta[o_g + k] - s_c * zc) / s_y
            d = r / s_y
            ssr += r * r
            szd += zc * d
            grad[0] += d
            grad[o_a + b] += d
            grad[o_g + k] += d
            grad[o_z + b * M + k] += s_c * d
        logp += -0.5 * ssa / (s_a * s_a) - B * theta[1] - 0.5 * ssg / (s_g * s_g) - M * theta[2]
        logp += -0.5 * ssz - 0.5 * ssr - y.shape[0] * theta[4]
        grad[1] += ssa / (s_a * s_a) - B
        grad[2] += ssg / (s_g * s_g) - M
        grad[3] += s_c * szd
        grad[4] += ssr - y.shape[0]
        return logp, grad

    def jax_logp(theta, b_idx, k_idx, y):
        import jax.numpy as jnp

        m, ls = theta[0], theta[1:5]
        s = jnp.exp(ls)
        al, ga, zm = theta[o_a:o_g], theta[o_g:o_z], theta[o_z:].reshape(B, M)
        r = (y - m - al[b_idx] - ga[k_idx] - s[2] * zm[b_idx, k_idx]) / s[3]
        return (
            const - 0.5 * (m / 5) ** 2 + jnp.sum(HALF_LOG_2_OVER_PI - 0.5 * s * s + ls)
            - 0.5 * al @ al / s[0] ** 2 - B * ls[0] - 0.5 * ga @ ga / s[1] ** 2 - M * ls[1]
            - 0.5 * jnp.sum(zm * zm) - 0.5 * r @ r - y.shape[0] * ls[3]
        )  # fmt: skip

    def pymc_model():
        import pymc as pm

        coords = {"batch": [f"b{j}" for j in range(B)], "machine": [f"m{j}" for j in range(M)]}
        with pm.Model(coords=coords) as model:
            m = pm.Normal("mu", 0.0, 5.0)
            s_a, s_g, s_c, s_y = (pm.HalfNormal(f"sigma_{n}", 1.0) for n in "agcy")
            al = pm.Normal("alpha", 0.0, s_a, dims="batch")
            ga = pm.Normal("gamma", 0.0, s_g, dims="machine")
            zm = pm.Normal("z_cell", 0.0, 1.0, dims=("batch", "machine"))
            pm.Normal("y", m + al[b_idx] + ga[k_idx] + s_c * zm[b_idx, k_idx], s_y, observed=y)
        return model

    def pymc_point(theta):
        point = {"mu": np.asarray(theta[0])}
        point.update((f"sigma_{n}_log__", np.asarray(theta[1 + j])) for j, n in enumerate("agcy"))
        point.update(alpha=theta[o_a:o_g], gamma=theta[o_g:o_z], z_cell=theta[o_z:].reshape(B, M))
        return point

    def dg_model():
        m = dg.Model()
        mv = m.normal("mu", 0.0, 5.0)
        s_a, s_g, s_c, s_y = (m.halfnormal(f"sigma_{n}", 1.0) for n in "agcy")
        al = m.normal("alpha", 0.0, s_a, dims=(batch,))
        ga = m.normal("gamma", 0.0, s_g, dims=(machine,))
        zm = m.normal("z_cell", 0.0, 1.0, dims=(batch, machine))
        b_, k_ = m.data("batch_idx", b_idx, dims=(obs,)), m.data("machine_idx", k_idx, dims=(obs,))
        mean = mv + al.isel(batch=b_) + ga.isel(machine=k_) + (s_c * zm).isel(batch=b_, machine=k_)
        m.observe("y", dg.dist.normal(mean, s_y), data=y, dims=(obs,))
        return m

    data = {"batch_idx": b_idx, "machine_idx": k_idx, "y": y}
    return Model(
        "crossed", cost, params, [b_v, k_v, y_v], data, theta, numpy_fn, lambda t: _numba(t, b_idx, k_idx, y),
        jax_logp, (b_idx, k_idx, y), pymc_model, pymc_point, dg_model,
    )  # fmt: skip


# ---------------------------------------------------------------------------------- cumsum random walk
def random_walk(T=300, seed=4):
    """A Gaussian random walk written by `cumsum` (no catalog distribution): level = mu0 + sigma_w *
    cumsum(eps), eps ~ N(0, 1), y ~ N(level, sigma_y); mu0 ~ N(0, 5), HalfNormal(1) scales: 303 parameters."""
    import numba

    rng = np.random.default_rng(seed)
    y = 1.0 + np.cumsum(rng.normal(0, 0.3, T)) + rng.normal(0, 0.5, T)
    time_ = dg.Dim("time", size=T)
    mu0 = dg.labeled("mu0", dims=())
    log_sw, log_sy = dg.labeled("log_sigma_w", dims=()), dg.labeled("log_sigma_y", dims=())
    eps = dg.labeled("eps", dims=(time_,))
    y_v = dg.labeled("y", dims=(time_,))
    level = mu0 + dg.exp(log_sw) * eps.cumsum("time")
    half = dg.dist.halfnormal(1.0)
    cost = (
        dg.dist.normal(0.0, 5.0).logp(mu0)
        + half.logp(dg.exp(log_sw)) + log_sw
        + half.logp(dg.exp(log_sy)) + log_sy
        + dg.dist.normal(0.0, 1.0).logp(eps).sum()
        + dg.dist.normal(level, dg.exp(log_sy)).logp(y_v).sum()
    )  # fmt: skip
    theta = np.concatenate([[1.1, -1.0, -0.8], rng.normal(0, 1, T)])
    const = -math.log(5.0) - 0.5 * LOG_2PI + 2 * HALF_LOG_2_OVER_PI - 2 * T * 0.5 * LOG_2PI

    def numpy_fn(theta):
        m, lsw, lsy, e = theta[0], theta[1], theta[2], theta[3:]
        sw, sy = math.exp(lsw), math.exp(lsy)
        walk = np.cumsum(e)
        r = (y - m - sw * walk) / sy
        logp = (
            const - 0.5 * (m / 5) ** 2 - 0.5 * sw * sw + lsw - 0.5 * sy * sy + lsy - 0.5 * e @ e - 0.5 * r @ r - T * lsy
        )
        dl = r / sy
        grad = np.empty_like(theta)
        grad[0] = -m / 25 + dl.sum()
        grad[1] = 1 - sw * sw + sw * (walk @ dl)
        grad[2] = 1 - sy * sy + r @ r - T
        grad[3:] = -e + sw * np.cumsum(dl[::-1])[::-1]
        return logp, grad

    @numba.njit
    def _numba(theta, y):
        m, lsw, lsy = theta[0], theta[1], theta[2]
        sw, sy = np.exp(lsw), np.exp(lsy)
        grad = np.empty_like(theta)
        dl = np.empty(T)
        walk = ssr = sse = swd = sdl = 0.0
        for t in range(T):
            e = theta[3 + t]
            walk += e
            r = (y[t] - m - sw * walk) / sy
            sse += e * e
            ssr += r * r
            dl[t] = r / sy
            swd += walk * dl[t]
            sdl += dl[t]
        back = 0.0
        for t in range(T - 1, -1, -1):
            back += dl[t]
            grad[3 + t] = -theta[3 + t] + sw * back
        grad[0] = -m / 25 + sdl
        grad[1] = 1 - sw * sw + sw * swd
        grad[2] = 1 - sy * sy + ssr - T
        logp = const - 0.5 * (m / 5) ** 2 - 0.5 * sw * sw + lsw - 0.5 * sy * sy + lsy - 0.5 * sse - 0.5 * ssr - T * lsy
        return logp, grad

    def jax_logp(theta, y):
        import jax.numpy as jnp

        m, lsw, lsy, e = theta[0], theta[1], theta[2], theta[3:]
        sw, sy = jnp.exp(lsw), jnp.exp(lsy)
        r = (y - m - sw * jnp.cumsum(e)) / sy
        return (
            const - 0.5 * (m / 5) ** 2 - 0.5 * sw * sw + lsw - 0.5 * sy * sy + lsy - 0.5 * e @ e - 0.5 * r @ r - T * lsy
        )

    def pymc_model():
        import pymc as pm
        import pytensor.tensor as pt

        with pm.Model(coords={"time": range(T)}) as model:
            m = pm.Normal("mu0", 0.0, 5.0)
            sw, sy = pm.HalfNormal("sigma_w", 1.0), pm.HalfNormal("sigma_y", 1.0)
            e = pm.Normal("eps", 0.0, 1.0, dims="time")
            pm.Normal("y", m + sw * pt.cumsum(e), sy, observed=y)
        return model

    def pymc_point(theta):
        names = ("mu0", "sigma_w_log__", "sigma_y_log__")
        return {**{n: np.asarray(v) for n, v in zip(names, theta[:3])}, "eps": theta[3:]}

    def dg_model():
        m = dg.Model()
        mv = m.normal("mu0", 0.0, 5.0)
        sw, sy = m.halfnormal("sigma_w", 1.0), m.halfnormal("sigma_y", 1.0)
        e = m.normal("eps", 0.0, 1.0, dims=(time_,))
        m.observe("y", dg.dist.normal(mv + sw * e.cumsum("time"), sy), data=y, dims=(time_,))
        return m

    return Model(
        "random_walk", cost, [mu0, log_sw, log_sy, eps], [y_v], {"y": y}, theta, numpy_fn, lambda t: _numba(t, y),
        jax_logp, (y,), pymc_model, pymc_point, dg_model,
    )  # fmt: skip


# ------------------------------------------------------------------------------- logsumexp mixture
MIXTURE_MEANS = np.array([-2.0, 0.0, 3.0])  # the components' prior means (they break the labels' symmetry)


def mixture_data(n_obs=1000, seed=5):
    """A three-component normal mixture's observations."""
    rng = np.random.default_rng(seed)
    label = rng.choice(3, n_obs, p=[0.3, 0.5, 0.2])
    return rng.normal(np.array([-2.2, 0.1, 3.1])[label], np.array([0.6, 0.8, 0.5])[label])


def mixture(n_obs=1000, seed=5):
    """A three-component normal mixture written by `logsumexp` (the label summed out by hand):
    log w = logits - logsumexp(logits), y_i ~ sum_k w_k N(mu_k, sigma_k); logits ~ N(0, 1),
    mu ~ N((-2, 0, 3), 1), sigma ~ HalfNormal(2): 9 parameters, 1000 observations x 3 components."""
    import numba

    y = mixture_data(n_obs, seed)
    K, N = 3, n_obs
    comp = dg.Dim("comp", coords=["low", "mid", "high"])
    obs = dg.Dim("obs")
    logits, mu = dg.labeled("logits", dims=(comp,)), dg.labeled("mu", dims=(comp,))
    log_sigma = dg.labeled("log_sigma", dims=(comp,))
    y_v = dg.labeled("y", dims=(obs,))
    sigma = dg.exp(log_sigma)

    def mixture_logp(logits, mu, sigma, y):
        log_w = logits - dg.logsumexp(logits, "comp")
        return dg.logsumexp(log_w + dg.dist.normal(mu, sigma).logp(y), "comp")  # on obs

    cost = (
        dg.dist.normal(0.0, 1.0).logp(logits).sum()
        + dg.dist.normal(dg.constant(MIXTURE_MEANS, dims=(comp,)), 1.0).logp(mu).sum()
        + (dg.dist.halfnormal(2.0).logp(sigma) + log_sigma).sum()
        + mixture_logp(logits, mu, sigma, y_v).sum()
    )
    theta = np.array([0.1, 0.4, -0.3, -2.1, 0.2, 2.9, -0.4, -0.2, -0.6])
    const = -2 * K * 0.5 * LOG_2PI + K * (HALF_LOG_2_OVER_PI - math.log(2.0)) - N * 0.5 * LOG_2PI

    def numpy_fn(theta):
        lg, m, ls = theta[:K], theta[K : 2 * K], theta[2 * K :]
        s = np.exp(ls)
        top = lg.max()
        log_w = lg - (top + math.log(np.exp(lg - top).sum()))
        zz = (y[:, None] - m) / s
        terms = log_w - 0.5 * zz * zz - ls  # (N, K), less N * 0.5 log 2 pi (in const)
        peak = terms.max(1, keepdims=True)
        lse = peak[:, 0] + np.log(np.exp(terms - peak).sum(1))
        resp = np.exp(terms - lse[:, None])
        R = resp.sum(0)
        logp = const - 0.5 * lg @ lg - 0.5 * (m - MIXTURE_MEANS) @ (m - MIXTURE_MEANS) + np.sum(ls - 0.125 * s * s)
        logp += lse.sum()
        grad = np.empty_like(theta)
        grad[:K] = -lg + R - N * np.exp(log_w)
        grad[K : 2 * K] = -(m - MIXTURE_MEANS) + (resp * zz).sum(0) / s
        grad[2 * K :] = 1 - 0.25 * s * s + (resp * (zz * zz - 1)).sum(0)
        return logp, grad

    @numba.njit
    def _numba(theta, y):
        lg, m, ls = theta[:K], theta[K : 2 * K], theta[2 * K :]
        s = np.exp(ls)
        top = lg.max()
        log_w = lg - (top + np.log(np.exp(lg - top).sum()))
        R, dm, dls = np.zeros(K), np.zeros(K), np.zeros(K)
        terms, zz = np.empty(K), np.empty(K)
        total = 0.0
        for i in range(y.shape[0]):
            peak = -np.inf
            for k in range(K):
                zz[k] = (y[i] - m[k]) / s[k]
                terms[k] = log_w[k] - 0.5 * zz[k] * zz[k] - ls[k]
                peak = max(peak, terms[k])
            acc = 0.0
            for k in range(K):
                terms[k] = np.exp(terms[k] - peak)
                acc += terms[k]
            total += peak + np.log(acc)
            for k in range(K):
                r = terms[k] / acc
                R[k] += r
                dm[k] += r * zz[k]
                dls[k] += r * (zz[k] * zz[k] - 1)
        grad = np.empty_like(theta)
        logp = const + total
        for k in range(K):
            d = m[k] - MIXTURE_MEANS[k]
            logp += -0.5 * lg[k] * lg[k] - 0.5 * d * d + ls[k] - 0.125 * s[k] * s[k]
            grad[k] = -lg[k] + R[k] - y.shape[0] * np.exp(log_w[k])
            grad[K + k] = -d + dm[k] / s[k]
            grad[2 * K + k] = 1 - 0.25 * s[k] * s[k] + dls[k]
        return logp, grad

    def jax_logp(theta, y):
        import jax.numpy as jnp
        from jax.scipy.special import logsumexp

        lg, m, ls = theta[:K], theta[K : 2 * K], theta[2 * K :]
        s = jnp.exp(ls)
        log_w = lg - logsumexp(lg)
        zz = (y[:, None] - m) / s
        prior = -0.5 * lg @ lg - 0.5 * (m - MIXTURE_MEANS) @ (m - MIXTURE_MEANS) + jnp.sum(ls - 0.125 * s * s)
        return const + prior + logsumexp(log_w - 0.5 * zz * zz - ls, axis=1).sum()

    def pymc_model():
        import pymc as pm

        with pm.Model(coords={"comp": ["low", "mid", "high"]}) as model:
            lg = pm.Normal("logits", 0.0, 1.0, dims="comp")
            m = pm.Normal("mu", MIXTURE_MEANS, 1.0, dims="comp")
            s = pm.HalfNormal("sigma", 2.0, dims="comp")
            log_w = lg - pm.math.logsumexp(lg)
            pm.Potential("y", pm.math.logsumexp(log_w + pm.logp(pm.Normal.dist(m, s), y[:, None]), axis=1).sum())
        return model

    def pymc_point(theta):
        return {"logits": theta[:K], "mu": theta[K : 2 * K], "sigma_log__": theta[2 * K :]}

    def dg_model():
        m = dg.Model()
        lg = m.normal("logits", 0.0, 1.0, dims=(comp,))
        mv = m.normal("mu", dg.constant(MIXTURE_MEANS, dims=(comp,)), 1.0, dims=(comp,))
        s = m.halfnormal("sigma", 2.0, dims=(comp,))
        m.potential("mixture", mixture_logp(lg, mv, s, m.data("y", y, dims=(obs,))))
        return m

    return Model(
        "mixture", cost, [logits, mu, log_sigma], [y_v], {"y": y}, theta, numpy_fn, lambda t: _numba(t, y),
        jax_logp, (y,), pymc_model, pymc_point, dg_model,
    )  # fmt: skip


MODELS = {
    "radon": radon, "eight_schools": eight_schools, "lkj": lkj, "lkj_user": lkj_user, "ar1": ar1,
    "crossed": crossed, "random_walk": random_walk, "mixture": mixture,
}  # fmt: skip
