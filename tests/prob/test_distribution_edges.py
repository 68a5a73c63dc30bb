"""Log densities at the edges of their domains, on every backend, against closed forms in mpmath.

Tiny and huge parameters and values (1e-300 to 1e300), infinite parameters (the limit of the density as they
grow) and huge shapes (gamma and inverse gamma at 1e100, where scipy loses every digit too, so scipy is no
reference here). One compiled function per backend evaluates every distribution (another its gradients).
"""

import functools
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dimgraph as dg

mp = pytest.importorskip("mpmath")

inf, nan = math.inf, math.nan

# name -> parameter names, in signature order (the value x comes last in every row)
SCALAR = {
    "normal": ("mu", "sigma"),
    "halfnormal": ("sigma",),
    "lognormal": ("mu", "sigma"),
    "student_t": ("nu", "mu", "sigma"),
    "cauchy": ("alpha", "beta"),
    "uniform": ("lower", "upper"),
    "exponential": ("lam",),
    "gamma": ("alpha", "beta"),
    "invgamma": ("alpha", "beta"),
    "beta": ("alpha", "beta"),
    "bernoulli": ("p",),
    "binomial": ("n", "p"),
    "poisson": ("mu",),
    "negative_binomial": ("n", "p"),
}
FILLER = {  # a valid row for the distributions a call does not look at
    "normal": (0.0, 1.0, 0.5),
    "halfnormal": (1.0, 0.5),
    "lognormal": (0.0, 1.0, 0.5),
    "student_t": (3.0, 0.0, 1.0, 0.5),
    "cauchy": (0.0, 1.0, 0.5),
    "uniform": (0.0, 1.0, 0.5),
    "exponential": (1.0, 0.5),
    "gamma": (2.0, 1.0, 0.5),
    "invgamma": (2.0, 1.0, 0.5),
    "beta": (2.0, 2.0, 0.5),
    "bernoulli": (0.5, 1.0),
    "binomial": (5.0, 0.5, 2.0),
    "poisson": (2.0, 1.0),
    "negative_binomial": (2.0, 0.5, 1.0),
}


# --- the reference: closed forms in mpmath, at the precision a case needs (each term exact to `dps` digits)
def _xlogy(a, y):
    return mp.mpf(0) if a == 0 else a * mp.log(y)


def _terms(name, row):
    """The log density's terms at `row` (parameters..., x) as mpmath numbers; None outside the support."""
    *p, x = (mp.mpf(v) for v in row)
    lg, log, pi = mp.loggamma, mp.log, mp.pi
    if name == "normal":
        mu, s = p
        return [-(((x - mu) / s) ** 2) / 2, -log(s), -log(2 * pi) / 2]
    if name == "halfnormal":
        (s,) = p
        return None if x < 0 else [log(2 / pi) / 2, -log(s), -((x / s) ** 2) / 2]
    if name == "lognormal":
        mu, s = p
        return None if x <= 0 else [-log(x), -log(s), -log(2 * pi) / 2, -(((log(x) - mu) / s) ** 2) / 2]
    if name == "student_t":
        nu, mu, s = p
        z = (x - mu) / s
        return [lg((nu + 1) / 2), -lg(nu / 2), -log(nu * pi) / 2, -log(s), -(nu + 1) / 2 * log(1 + z * z / nu)]
    if name == "cauchy":
        a, b = p
        return [-log(pi), -log(b), -log(1 + ((x - a) / b) ** 2)]
    if name == "uniform":
        lo, hi = p
        return None if not lo <= x <= hi else [-log(hi - lo)]
    if name == "exponential":
        (lam,) = p
        return None if x < 0 else [log(lam), -lam * x]
    if name == "gamma":
        a, b = p
        return None if x < 0 else [a * log(b), -lg(a), _xlogy(a - 1, x), -b * x]
    if name == "invgamma":
        a, b = p
        return None if x <= 0 else [a * log(b), -lg(a), -(a + 1) * log(x), -b / x]
    if name == "beta":
        a, b = p
        if not 0 <= x <= 1:
            return None
        return [_xlogy(a - 1, x), _xlogy(b - 1, 1 - x), -lg(a), -lg(b), lg(a + b)]
    if name == "bernoulli":
        (q,) = p
        return None if x not in (0, 1) else [_xlogy(x, q), _xlogy(1 - x, 1 - q)]
    if name == "binomial":
        n, q = p
        if not (0 <= x <= n and x == mp.floor(x)):
            return None
        return [lg(n + 1), -lg(x + 1), -lg(n - x + 1), _xlogy(x, q), _xlogy(n - x, 1 - q)]
    if name == "poisson":
        (mu,) = p
        return None if not (x >= 0 and x == mp.floor(x)) else [_xlogy(x, mu), -mu, -lg(x + 1)]
    if name == "negative_binomial":
        n, q = p
        if not (x >= 0 and x == mp.floor(x)):
            return None
        return [lg(x + n), -lg(n), -lg(x + 1), n * log(q), _xlogy(x, 1 - q)]
    raise KeyError(name)


@functools.lru_cache(maxsize=None)
def reference(name, row, dps=40):
    """(log density, the sum of its terms' sizes) at `row` (floats, or decimal strings taken exactly), both as
    floats: -inf outside the support."""
    with mp.workdps(dps):
        terms = _terms(name, row)
        if terms is None:
            return -inf, 0.0
        return float(mp.fsum(terms)), float(mp.fsum(abs(t) for t in terms))


# --- one compiled function per backend for every distribution, one more for its gradients
def _graph():
    inputs, outputs = {}, {}
    for name, names in SCALAR.items():
        case = dg.Dim(f"case_{name}")
        vs = [dg.labeled(f"{name}_{k}", dims=(case,)) for k in (*names, "x")]
        inputs[name] = vs
        outputs[name] = getattr(dg.dist, name)(*vs[:-1]).logp(vs[-1])
    return inputs, outputs


@functools.lru_cache(maxsize=None)
def logp_function(backend):
    inputs, outputs = _graph()
    return dg.function([v for vs in inputs.values() for v in vs], list(outputs.values()), backend=backend)


DIFFERENTIATED = ("cauchy", "student_t", "gamma", "invgamma")  # the new branches with finite values


@functools.lru_cache(maxsize=None)
def grad_function(backend):
    """d logp / d (every parameter and x), per case: the gradient of the sum over the cases."""
    inputs, outputs = _graph()
    grads = [g for name in DIFFERENTIATED for g in dg.grad(outputs[name].sum(), inputs[name])]
    return dg.function([v for name in DIFFERENTIATED for v in inputs[name]], grads, backend=backend)


def _columns(rows_by_name, names=SCALAR):
    """The inputs of the compiled functions: each distribution's rows as columns, padded with a filler row to
    one length of at least 16 (jax compiles once per shape: the hypothesis tests then share one)."""
    length = max([16, *(len(rows) for rows in rows_by_name.values())])
    values = []
    for name in names:
        rows = list(rows_by_name.get(name, []))
        table = np.array(rows + [FILLER[name]] * (length - len(rows)), dtype=float)
        values += [table[:, j] for j in range(table.shape[1])]
    return values


def logp(backend, rows_by_name):
    """{name: logp at each row} on `backend`."""
    out = logp_function(backend)(*_columns(rows_by_name))
    return {name: got.values for name, got in zip(SCALAR, out)}


def logp_grads(backend, rows_by_name):
    """{name: array (rows, parameters + x) of d logp / d each input} on `backend`."""
    out = iter(grad_function(backend)(*_columns(rows_by_name, DIFFERENTIATED)))
    return {name: np.stack([next(out).values for _ in range(len(SCALAR[name]) + 1)], axis=1) for name in DIFFERENTIATED}


def _by_name(cases):
    rows = {}
    for name, row, *_ in cases:
        rows.setdefault(name, []).append(tuple(float(v) for v in row))
    return rows


# --- the points the issue names, and more of each kind: (name, (parameters..., x), digits the reference needs)
PRECISE = [
    # |z| past 1e154: z * z overflowed inside log1p
    ("cauchy", (0, 1e-300, 1e-10), 40),
    ("cauchy", (0, 1e-100, 1e100), 40),
    ("cauchy", (1e300, 1e-300, -1e300), 40),  # z itself overflows: log|z| from the logs
    ("cauchy", (2.0, 5.0, 1e6), 40),
    ("student_t", (1, 0, 1e-300, 1e-10), 40),
    ("student_t", (3.0, 5.0, 1e-200, -1e200), 40),
    ("student_t", (1e300, 0, 1e-300, 1e-10), 700),  # nu huge too: log1p(z^2 / nu) from both scales
    ("student_t", (2.5, -1.0, 0.5, 1e155), 40),
    # huge shapes: the gammaln term cancels against the log terms (scipy is as wrong as the plain formula)
    ("gamma", (1e100, 1, 1e100), 150),
    ("gamma", (1e300, 1e300, 1.0), 350),
    ("gamma", (1e20, 3.0, 3.3e19), 60),
    ("gamma", (1e5, 1e3, 100.0), 60),
    ("gamma", (50.0, 2.0, 20.0), 40),
    ("gamma", (19.999, 0.5, 30.0), 40),  # either side of the switch to Stirling's series
    ("gamma", (20.0, 0.5, 30.0), 40),
    ("gamma", (1e300, 1e-300, 1e-300), 350),  # beta * x underflows: r from its log
    # 1 / 1e-100 rounds to the double 1e100, the shape, so the two cancel exactly: the value at the decimal point
    # (the doubles are 1e-17 off it, which moves the exact log density by 1e66: it is that ill-conditioned)
    ("invgamma", ("1e100", 1, "1e-100"), 150),
    ("invgamma", (2.0**332, 1, 2.0**-332), 150),
    ("invgamma", (1e10, 1, 1e-10), 60),  # jax gave 33.61984634 for 33.619837862
    ("invgamma", (1e100, 1e100, 1.5), 150),
    ("invgamma", (1e250, 1e100, 1e-200), 300),  # beta / x overflows
    ("invgamma", (30.0, 2.0, 0.05), 40),
]


def test_the_precise_cases_need_more_than_double():
    """The reference itself: at 15 digits the plain formula cancels (so matching it, or scipy, proves nothing)."""
    row = (1e100, 1.0, 1e100)
    assert reference("gamma", row, 150)[0] == pytest.approx(-116.04819318290696, rel=1e-14)
    assert abs(reference("gamma", row, 15)[0] - reference("gamma", row, 150)[0]) > 1.0


def test_log_densities_keep_their_digits_at_the_edges(backend):
    got = logp(backend, _by_name(PRECISE))
    seen = {}
    for name, row, dps in PRECISE:
        k = seen[name] = seen.get(name, -1) + 1
        want = reference(name, tuple(row), dps)[0]
        assert got[name][k] == pytest.approx(want, rel=1e-12, abs=1e-12), (name, row)


# --- infinite parameters: the limit where it exists, -inf where the density vanishes, NaN where it depends
_NORMAL_AT = {  # student_t(nu=inf) is the normal: its log density there, from mpmath
    (-2.1, 0.01, -2.1): 3.6862316527834182,
    (0.0, 1.0, 1.0): -1.4189385332046727,
    (3.0, 2.0, -1.0): reference("normal", (3.0, 2.0, -1.0))[0],
    (0.0, 1.0, 1e60): reference("normal", (0.0, 1.0, 1e60))[0],  # the normal's own value far out, -5e119
    (0.0, 1.0, 1e100): reference("normal", (0.0, 1.0, 1e100))[0],  # -5e199 (a stand-in nu gave -5.8e151)
    (0.0, 1e-300, 1.0): -inf,  # z = 1e300: -5e599 is below every double (a stand-in nu gave -4.95e152)
}
INFINITE = [  # (name, (parameters..., x), log density)
    ("normal", (inf, 1, 0), -inf),
    ("normal", (-inf, 1, 1e300), -inf),
    ("normal", (0, inf, 1e300), -inf),
    ("normal", (inf, inf, 0.5), -inf),  # the density is below 1 / sigma wherever the mean goes
    ("normal", (-inf, 1, inf), -inf),
    ("normal", (inf, 1, inf), nan),  # value and mean both at +inf: depends on how
    ("halfnormal", (inf, 0.5), -inf),
    ("lognormal", (inf, 1, 0.5), -inf),
    ("lognormal", (-inf, 1, 0.5), -inf),
    ("lognormal", (0, inf, 0.5), -inf),
    ("lognormal", (inf, inf, 0.5), -inf),
    *[("student_t", (inf, *row), want) for row, want in _NORMAL_AT.items()],
    ("student_t", (3, inf, 1, 0), -inf),
    ("student_t", (3, 0, inf, 1), -inf),
    ("student_t", (inf, inf, 1, 0), -inf),
    ("student_t", (inf, 0, inf, 0), -inf),
    ("student_t", (inf, inf, inf, 0), -inf),
    ("cauchy", (inf, 1, 0), -inf),
    ("cauchy", (0, inf, 0), -inf),
    ("cauchy", (inf, inf, 0), -inf),
    ("cauchy", (inf, 1, -inf), -inf),
    ("cauchy", (inf, 1, inf), nan),
    ("uniform", (-inf, 0, -1), -inf),
    ("uniform", (0, inf, inf), -inf),
    ("uniform", (-inf, inf, 0), -inf),
    ("uniform", (0, inf, -1), -inf),
    ("exponential", (inf, 0), inf),  # all the mass at 0: the density there grows without bound
    ("exponential", (inf, 1e-300), -inf),
    ("gamma", (inf, 0.5, 1.0), -inf),
    ("gamma", (inf, 0.5, 0.0), -inf),
    ("gamma", (2.0, inf, 0.0), -inf),
    ("gamma", (1.0, inf, 0.0), inf),
    ("gamma", (0.5, inf, 0.0), inf),
    ("gamma", (0.5, inf, 1.0), -inf),
    ("gamma", (inf, inf, 1.0), nan),  # the mass goes where alpha / beta says
    ("gamma", (inf, inf, 0.0), -inf),
    ("invgamma", (0.01, inf, 0.9), -inf),
    ("invgamma", (inf, 1.0, 0.9), -inf),
    ("invgamma", (inf, inf, 0.9), nan),
    ("beta", (inf, 2.0, 0.5), -inf),
    ("beta", (inf, 2.0, 1.0), -inf),
    ("beta", (inf, 1.0, 1.0), inf),
    ("beta", (inf, 0.5, 1.0), inf),
    ("beta", (2.0, inf, 0.0), -inf),
    ("beta", (0.5, inf, 0.0), inf),
    ("beta", (0.5, inf, 0.5), -inf),
    ("beta", (inf, inf, 0.5), nan),
    ("beta", (inf, inf, 0.0), -inf),
    ("bernoulli", (inf, 1), nan),  # not a limit: p is a probability
    ("binomial", (inf, 0.3, 5), -inf),
    ("binomial", (inf, 0.0, 0), 0.0),
    ("binomial", (inf, 0.0, 3), -inf),
    ("binomial", (10, 0.3, inf), -inf),
    ("poisson", (inf, 3), -inf),
    ("poisson", (inf, 0), -inf),
    ("poisson", (2.0, inf), -inf),
    ("negative_binomial", (inf, 0.5, 3), -inf),
    ("negative_binomial", (inf, 1.0, 0), 0.0),
    ("negative_binomial", (inf, 1.0, 2), -inf),
]


def test_infinite_parameters_give_the_limit(backend):
    got = logp(backend, _by_name(INFINITE))
    seen = {}
    for name, row, want in INFINITE:
        k = seen[name] = seen.get(name, -1) + 1
        value = got[name][k]
        if math.isnan(want):
            assert np.isnan(value), (name, row, value)
        else:
            assert value == pytest.approx(want, rel=1e-13), (name, row)


# student_t(inf, mu, sigma) is the normal: (mu, sigma, x) from the centre to where z * z overflows
NORMAL_LIMIT_POINTS = [
    (0.0, 1.0, 0.0),
    (-2.1, 0.01, -2.095),
    (3.0, 2.0, -1.0),
    (0.0, 1.0, 1e60),
    (0.0, 1.0, 1e100),
    (0.0, 1.0, -1e100),
    (0.0, 1.0, 1.3e154),
    (5.0, 1e-300, 5.0),
    (0.0, 1e-300, 1.0),
    (0.0, 1e-300, 1e-300),
    (0.0, 1e-100, 1e100),
    (1e300, 1e300, -1e300),
    (-4.0, 1e300, 1e300),
    (0.0, 1e-10, 1e145),
]


def test_student_t_with_infinite_nu_is_the_normal_bit_for_bit(backend):
    rows = {"normal": NORMAL_LIMIT_POINTS, "student_t": [(inf, *p) for p in NORMAL_LIMIT_POINTS]}
    got = logp(backend, rows)
    n = len(NORMAL_LIMIT_POINTS)
    np.testing.assert_array_equal(got["student_t"][:n], got["normal"][:n])
    for p, value in zip(NORMAL_LIMIT_POINTS, got["student_t"]):
        assert value == pytest.approx(reference("normal", p)[0], rel=1e-13), p  # -inf where the true value underflows


# --- gradients on the new branches, against high-precision differences of the reference
GRADIENTS = [  # (name, (parameters..., x)): every input differentiated (test_distributions.py: the other points)
    ("cauchy", (0.3, 1e-3, 5e3)),  # |z| > 1: 2 log|z| + log1p(1 / z^2)
    ("cauchy", (0.0, 1e-100, 1e100)),
    ("student_t", (4.0, 0.3, 1e-3, 5e3)),
    ("student_t", (2.5, -1.0, 2.0, -7.0)),
    ("gamma", (50.0, 2.0, 20.0)),  # Stirling's series
    ("gamma", (1e6, 3.0, 3.4e5)),
    ("gamma", (19.5, 2.0, 9.0)),
    ("invgamma", (50.0, 2.0, 0.05)),
    ("invgamma", (1e6, 1e6, 1.1)),
    ("invgamma", (3.0, 2.0, 0.5)),
]
NORMAL_LIMIT_GRADIENTS = [(-2.1, 0.01, -2.095), (3.0, 2.0, -1.0)]  # student_t(inf, mu, sigma) at x


def _reference_gradient(name, row, j):
    """d log density / d row[j] at `row`, by mpmath's differences at 60 digits."""

    def f(*v):  # at the precision mp.diff asks for: its steps are far below 60 digits
        return mp.fsum(_terms(name, v))

    def along(t):  # a relative step, so a parameter of 1e-100 stays positive
        point = [mp.mpf(v) for v in row]
        point[j] = point[j] * (1 + t) if row[j] else t
        return f(*point)

    with mp.workdps(60):
        return float(mp.diff(along, 0) / (row[j] or 1))


def test_gradients_match_high_precision_differences(backend):
    rows = _by_name(GRADIENTS)
    rows["student_t"] += [(inf, *r) for r in NORMAL_LIMIT_GRADIENTS]
    got = logp_grads(backend, rows)
    seen = {}
    for name, row in GRADIENTS:
        k = seen[name] = seen.get(name, -1) + 1
        for j in range(len(row)):
            want = _reference_gradient(name, row, j)
            assert got[name][k, j] == pytest.approx(want, rel=1e-8, abs=1e-12), (name, row, j)
    for i, r in enumerate(NORMAL_LIMIT_GRADIENTS):  # the normal limit: d / d(mu, sigma, x), 0 for nu
        g = got["student_t"][seen["student_t"] + 1 + i]
        np.testing.assert_allclose(g[1:], [_reference_gradient("normal", r, j) for j in range(3)], rtol=1e-10)
        assert g[0] == 0.0


# --- any parameters from 1e-300 to 1e300: a finite log density wherever the true one is finite
def _log_uniform(lo=-300.0, hi=300.0):
    return st.floats(lo, hi).map(lambda e: 10.0**e)


_SIGNED = st.tuples(st.sampled_from([-1.0, 1.0]), _log_uniform()).map(lambda t: t[0] * t[1])
_POSITIVE = _log_uniform()
_UNIT = st.tuples(st.booleans(), _log_uniform(-300.0, -1e-3)).map(
    lambda t: 1.0 - t[1] if t[0] and t[1] > 1e-16 else t[1]
)
_COUNT = st.one_of(st.just(0.0), _log_uniform(0.0, 300.0).map(math.floor).map(float))


@st.composite
def _uniform_row(draw):
    lower, width, frac = draw(_SIGNED), draw(_POSITIVE), draw(st.floats(0.0, 1.0))
    upper = lower + width
    if upper == lower:
        upper = np.nextafter(lower, inf)
    return lower, upper, min(max(lower + frac * (upper - lower), lower), upper)


@st.composite
def _binomial_row(draw):
    n, p, frac = draw(_log_uniform(0.0, 300.0).map(math.floor).map(float)), draw(_UNIT), draw(st.floats(0.0, 1.0))
    return n, p, float(min(math.floor(frac * n), n))


ROWS = {  # a strategy for one row (parameters..., x) inside the support, per distribution
    "normal": st.tuples(_SIGNED, _POSITIVE, _SIGNED),
    "halfnormal": st.tuples(_POSITIVE, _POSITIVE),
    "lognormal": st.tuples(_SIGNED, _POSITIVE, _POSITIVE),
    "student_t": st.tuples(_POSITIVE, _SIGNED, _POSITIVE, _SIGNED),
    "cauchy": st.tuples(_SIGNED, _POSITIVE, _SIGNED),
    "uniform": _uniform_row(),
    "exponential": st.tuples(_POSITIVE, _POSITIVE),
    "gamma": st.tuples(_POSITIVE, _POSITIVE, _POSITIVE),
    "invgamma": st.tuples(_POSITIVE, _POSITIVE, _POSITIVE),
    "beta": st.tuples(_POSITIVE, _POSITIVE, _UNIT),
    "bernoulli": st.tuples(_UNIT, st.sampled_from([0.0, 1.0])),
    "binomial": _binomial_row(),
    "poisson": st.tuples(_POSITIVE, _COUNT),
    "negative_binomial": st.tuples(_POSITIVE, _UNIT, _COUNT),
}


@pytest.mark.parametrize("name", list(SCALAR))
def test_log_density_is_finite_wherever_the_true_one_is(backend, name):
    """Log-uniform parameters from 1e-300 to 1e300, 16 rows per call: where the true log density is finite (and
    fits a double), logp is finite and as close as the formula's terms allow (their sizes times 1e-9)."""

    @given(st.lists(ROWS[name], min_size=16, max_size=16))
    def check(rows):
        got = logp(backend, {name: rows})[name]
        for row, value in zip(rows, got):
            want, size = reference(name, row)
            if not (math.isfinite(want) and abs(want) < 1e300):
                continue
            assert math.isfinite(value), (name, row, value, want)
            assert abs(value - want) <= 1e-9 * (size + abs(want) + 1), (name, row, value, want)

    check()


# --- the distributions with a core dim, on k = 3: categorical, dirichlet, multivariate_normal (diagonal covariance)
K = dg.Dim("k", size=3)
K2 = K.rename("k2")


@functools.lru_cache(maxsize=None)
def vector_function(backend):
    case_c, case_d, case_m = dg.Dim("case_c"), dg.Dim("case_d"), dg.Dim("case_m")
    p, x = dg.labeled("cat_p", dims=(case_c, K)), dg.labeled("cat_x", dims=(case_c,), dtype="int64")
    a, s = dg.labeled("dir_a", dims=(case_d, K)), dg.labeled("dir_x", dims=(case_d, K))
    mu, cov, y = (
        dg.labeled(n, dims=(case_m, *d)) for n, d in [("mvn_mu", (K,)), ("mvn_cov", (K, K2)), ("mvn_x", (K,))]
    )
    outputs = [
        dg.dist.categorical(p, dim=K).logp(x),
        dg.dist.dirichlet(a, dim=K).logp(s),
        dg.dist.multivariate_normal(mu, cov=cov, dims=(K, K2)).logp(y),
    ]
    return dg.function([p, x, a, s, mu, cov, y], outputs, backend=backend)


VECTOR_FILLER = {"categorical": ((1.0, 1.0, 1.0), 0), "dirichlet": ((2.0, 2.0, 2.0), (0.2, 0.3, 0.5))}
VECTOR_FILLER["multivariate_normal"] = ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0), (0.0, 0.0, 0.0))


def vector_logp(backend, cases):
    """{name: logp per case}; categorical cases are (p, x), dirichlet (a, x), multivariate_normal (mu, the
    covariance's diagonal, x)."""
    length = max([16, *(len(c) for c in cases.values())])  # one shape for jax, as `_columns`
    rows = {
        name: list(cases.get(name, [])) + [filler] * (length - len(cases.get(name, [])))
        for name, filler in VECTOR_FILLER.items()
    }
    cat, dirichlet, mvn = rows["categorical"], rows["dirichlet"], rows["multivariate_normal"]
    values = [
        np.array([c[0] for c in cat], dtype=float),
        np.array([c[1] for c in cat], dtype=np.int64),
        np.array([c[0] for c in dirichlet], dtype=float),
        np.array([c[1] for c in dirichlet], dtype=float),
        np.array([c[0] for c in mvn], dtype=float),
        np.array([np.diag(c[1]) for c in mvn], dtype=float),
        np.array([c[2] for c in mvn], dtype=float),
    ]
    out = vector_function(backend)(*values)
    return {name: got.values for name, got in zip(VECTOR_FILLER, out)}


def _vector_terms(name, case):
    log, lg = mp.log, mp.loggamma
    if name == "categorical":
        p, k = [mp.mpf(v) for v in case[0]], case[1]
        return [log(p[k]), -log(mp.fsum(p))]
    if name == "dirichlet":
        a, x = [mp.mpf(v) for v in case[0]], [mp.mpf(v) for v in case[1]]
        return [lg(mp.fsum(a)), *(-lg(v) for v in a), *(_xlogy(ak - 1, xk) for ak, xk in zip(a, x))]
    mu, var, x = ([mp.mpf(v) for v in part] for part in case)
    return [t for m, c, v in zip(mu, var, x) for t in (-((v - m) ** 2) / c / 2, -log(c) / 2, -log(2 * mp.pi) / 2)]


@functools.lru_cache(maxsize=None)
def vector_reference(name, case):
    with mp.workdps(40):
        terms = _vector_terms(name, case)
        return float(mp.fsum(terms)), float(mp.fsum(abs(t) for t in terms))


VECTOR_INFINITE = [  # (name, case, log density)
    ("categorical", ((1.0, inf, 2.0), 1), 0.0),  # one weight at inf takes all the mass
    ("categorical", ((1.0, inf, 2.0), 0), -inf),
    ("categorical", ((inf, inf, 2.0), 0), nan),  # two share it as they grow
    ("categorical", ((inf, inf, 2.0), 2), -inf),
    ("dirichlet", ((inf, 2.0, 3.0), (0.2, 0.3, 0.5)), -inf),
    ("dirichlet", ((inf, 0.5, 1.0), (1.0, 0.0, 0.0)), inf),
    ("dirichlet", ((inf, 2.0, 1.0), (1.0, 0.0, 0.0)), -inf),
    ("dirichlet", ((inf, inf, 1.0), (0.5, 0.5, 0.0)), nan),
    ("dirichlet", ((inf, inf, 1.0), (0.5, 0.4, 0.1)), -inf),
    ("multivariate_normal", ((inf, 0.0, 0.0), (2.0, 1.0, 0.8), (0.0, 0.0, 0.0)), -inf),
    ("multivariate_normal", ((0.0, 0.0, 0.0), (2.0, 1.0, 0.8), (0.0, -inf, 0.0)), -inf),
    ("multivariate_normal", ((inf, 0.0, 0.0), (2.0, 1.0, 0.8), (inf, 0.0, 0.0)), nan),
    ("multivariate_normal", ((0.0, 0.0, 0.0), (inf, 1.0, 0.8), (0.0, 1.0, 0.0)), -inf),
]


def test_infinite_parameters_of_the_core_dim_distributions(backend):
    cases = {}
    for name, case, _ in VECTOR_INFINITE:
        cases.setdefault(name, []).append(case)
    got = vector_logp(backend, cases)
    seen = {}
    for name, case, want in VECTOR_INFINITE:
        k = seen[name] = seen.get(name, -1) + 1
        if math.isnan(want):
            assert np.isnan(got[name][k]), (name, case)
        else:
            assert got[name][k] == want, (name, case)


_TRIPLE = st.tuples(_POSITIVE, _POSITIVE, _POSITIVE)
VECTOR_CASES = {
    "categorical": st.tuples(_TRIPLE, st.integers(0, 2)),
    "dirichlet": st.tuples(_TRIPLE, _TRIPLE.map(lambda w: tuple(v / (w[0] + w[1] + w[2]) for v in w))),
    "multivariate_normal": st.tuples(
        st.tuples(_SIGNED, _SIGNED, _SIGNED), _TRIPLE, st.tuples(_SIGNED, _SIGNED, _SIGNED)
    ),
}


@pytest.mark.parametrize("name", list(VECTOR_CASES))
def test_core_dim_log_density_is_finite_wherever_the_true_one_is(backend, name):
    """As for the scalar distributions, with weights, concentrations and variances from 1e-300 to 1e300."""

    @given(st.lists(VECTOR_CASES[name], min_size=16, max_size=16))
    def check(cases):
        got = vector_logp(backend, {name: cases})[name]
        for case, value in zip(cases, got):
            if name == "dirichlet" and min(case[1]) < np.finfo(float).tiny:
                continue  # no interior point (0), or a subnormal one: XLA on CPU flushes those to 0
            want, size = vector_reference(name, case)
            if not (math.isfinite(want) and abs(want) < 1e300):
                continue
            assert math.isfinite(value), (name, case, value, want)
            assert abs(value - want) <= 1e-9 * (size + abs(want) + 1), (name, case, value, want)

    check()
