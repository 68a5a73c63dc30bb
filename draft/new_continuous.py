_LOG2, _LOG_PI, _LOG_HALF = math.log(2.0), math.log(math.pi), math.log(0.5)
_BESSEL_SERIES_UP_TO = 15.0


def log_i0(x):
    """log I0(|x|), the modified Bessel function of the first kind and order 0, to about 1e-15.

    Below 15 the power series sum q^k / (k!)^2, q = x^2 / 4 (42 terms, by Horner's rule); above it Hankel's
    asymptotic series e^x / sqrt(2 pi x) sum ((2k - 1)!!)^2 / (k! (8x)^k) (30 terms).
    """
    x = lmath.elemwise("abs", x)
    small = x < _BESSEL_SERIES_UP_TO
    xs = lmath.where(small, x, 0.0)
    series = _horner(_I0_SERIES, xs * xs / 4)
    xl = lmath.where(small, _BESSEL_SERIES_UP_TO, x)
    large = xl - 0.5 * lmath.log(2 * math.pi * xl) + lmath.log(_horner(_I0_ASYMPTOTIC, 1.0 / xl))
    return lmath.where(small, lmath.log(series), large)


def _horner(coefs, t):
    """sum coefs[k] t^k."""
    out = coefs[-1] + 0 * t
    for c in coefs[-2::-1]:
        out = out * t + c
    return out


_I0_SERIES = [1 / math.factorial(k) ** 2 for k in range(42)]
_I0_ASYMPTOTIC = [1.0]
for _k in range(1, 30):
    _I0_ASYMPTOTIC.append(_I0_ASYMPTOTIC[-1] * (2 * _k - 1) ** 2 / (8 * _k))


def _abs(x):
    return lmath.elemwise("abs", x)


@register("flat")
class Flat(Distribution):
    """The improper uniform density on the real line: log density 0 everywhere (PyMC's `Flat`). No draws.

    >>> import dimgraph as dg
    >>> float(dg.dist.flat().logp(12.5).eval(backend="python"))
    0.0
    """

    names = ()
    support = constraints.real

    def valid(self):
        return None

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        inside = self.support.contains(x)
        return lmath.where(x == x, 0.0, 0.0) if inside is None else lmath.where(inside, 0.0, -np.inf)

    def sample(self, state, dims):
        raise NoDrawsError(f"{self.registered_name}: an improper density has no draws (give the variable a proper prior to draw from it)")

    # PyMC's convention: half the mass on either side of every finite point
    def log_cdf(self, x):
        return lmath.where(x == -np.inf, -np.inf, lmath.where(x == np.inf, 0.0, -_LOG2))

    def log_sf(self, x):
        return lmath.where(x == -np.inf, 0.0, lmath.where(x == np.inf, -np.inf, -_LOG2))


@register("halfflat")
class HalfFlat(Flat):
    """The improper uniform density on x > 0: log density 0 there, -inf elsewhere (PyMC's `HalfFlat`). No draws."""

    support = constraints.positive

    def log_cdf(self, x):
        return lmath.where(x == np.inf, 0.0, -np.inf)

    def log_sf(self, x):
        return lmath.where(x <= 0, 0.0, lmath.where(x == np.inf, -np.inf, 0.0))


@register("asymmetric_laplace")
class AsymmetricLaplace(Distribution):
    """Location `mu`, rate `b`, asymmetry `kappa` (PyMC's `AsymmetricLaplace(kappa, mu, b)`; scipy's
    `laplace_asymmetric(kappa, mu, 1 / b)`): P(X > mu) = 1 / (1 + kappa^2).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.asymmetric_laplace(2.0, 0.0, 1.0).logp(0.5).eval(backend="python")), 6)
    -2.609438
    """

    names, defaults = ("kappa", "mu", "b"), {"mu": 0.0, "b": 1.0}
    support = constraints.real
    positive = ("kappa", "b")

    def log_density(self, x, kappa, mu, b):
        z = (x - mu) * b
        return lmath.where(z >= 0, -z * kappa, z / kappa)

    def normalizer(self, kappa, mu, b):
        return lmath.log(b) + lmath.log(kappa) - lmath.log1p(kappa * kappa)

    def sample(self, state, dims, kappa, mu, b):
        state, u = primitive_draw("uniform", state, dims=dims)
        state, v = primitive_draw("uniform", state, dims=dims)
        return state, mu + (-lmath.log1p(-u) / kappa + lmath.log1p(-v) * kappa) / b  # a difference of exponentials

    def _below(self, kappa):  # log P(X <= mu)
        return 2 * lmath.log(kappa) - lmath.log1p(kappa * kappa)

    def log_cdf(self, x, kappa, mu, b):
        z = (x - mu) * b
        left = self._below(kappa) + lmath.minimum(z, 0.0) / kappa
        right = lmath.log1mexp(-lmath.log1p(kappa * kappa) - lmath.maximum(z, 0.0) * kappa)
        return lmath.where(z < 0, left, right)

    def log_sf(self, x, kappa, mu, b):
        z = (x - mu) * b
        right = -lmath.log1p(kappa * kappa) - lmath.maximum(z, 0.0) * kappa
        left = lmath.log1mexp(self._below(kappa) + lmath.minimum(z, 0.0) / kappa)
        return lmath.where(z >= 0, right, left)

    def icdf_exp(self, lp, kappa, mu, b):
        below = self._below(kappa)
        left = kappa * (lmath.minimum(lp, below) - below)
        right = -(lmath.log1mexp(lmath.maximum(lp, below)) + lmath.log1p(kappa * kappa)) / kappa
        return mu + lmath.where(lp < below, left, right) / b

    def isf_exp(self, lq, kappa, mu, b):
        above = -lmath.log1p(kappa * kappa)
        right = -(lmath.minimum(lq, above) - above) / kappa
        left = kappa * (lmath.log1mexp(lmath.maximum(lq, above)) - self._below(kappa))
        return mu + lmath.where(lq <= above, right, left) / b


@register("chi_squared")
class ChiSquared(Distribution):
    """Gamma(nu / 2, 1 / 2) (PyMC's `ChiSquared(nu)`, scipy's `chi2(nu)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.chi_squared(3.0).logp(2.0).eval(backend="python")), 6)
    -1.723657
    """

    names = ("nu",)
    support = constraints.nonnegative
    positive = ("nu",)

    def _gamma(self, nu):
        return {"alpha": nu / 2, "beta": 0.5}

    def log_density(self, x, nu):
        return Gamma.log_density(self, x, **self._gamma(nu))

    def sample(self, state, dims, nu):
        state, g = primitive_draw("gamma", state, nu / 2, dims=dims)
        return state, 2 * g

    def log_cdf(self, x, nu):
        return Gamma.log_cdf(self, x, **self._gamma(nu))

    def log_sf(self, x, nu):
        return Gamma.log_sf(self, x, **self._gamma(nu))

    def icdf_exp(self, lp, nu):
        return Gamma.icdf_exp(self, lp, **self._gamma(nu))

    def isf_exp(self, lq, nu):
        return Gamma.isf_exp(self, lq, **self._gamma(nu))


def _real_quantile(reached, loc, scale):
    """x = loc + scale sinh(s) where the monotone `reached(x)` turns true, by bisection on s in [-710, 710]."""
    s = bisect(lambda s: reached(loc + scale * lmath.sinh(s)), -710.0 + 0 * loc * scale, 710.0)
    return loc + scale * lmath.sinh(s)


def _positive_quantile(reached, like):
    """x = exp(t) where the monotone `reached(x)` turns true, by bisection on t in [-745, 710]."""
    return lmath.exp(bisect(lambda t: reached(lmath.exp(t)), -745.0 + 0 * like, 710.0))


@register("ex_gaussian")
class ExGaussian(Distribution):
    """Normal(mu, sigma) plus Exponential(1 / nu) (PyMC's `ExGaussian(mu, sigma, nu)`; scipy's
    `exponnorm(nu / sigma, mu, sigma)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.ex_gaussian(0.0, 1.0, 2.0).logp(1.0).eval(backend="python")), 6)
    -1.69211
    """

    names = ("mu", "sigma", "nu")
    support = constraints.real
    positive = ("sigma", "nu")

    def _shifted(self, x, mu, sigma, nu):
        """log of exp((mu - x) / nu + sigma^2 / (2 nu^2)) Phi((x - mu) / sigma - sigma / nu)."""
        r = sigma / nu
        return (mu - x) / nu + 0.5 * r * r + log_ndtr((x - mu) / sigma - r)

    def log_density(self, x, mu, sigma, nu):
        return self._shifted(x, mu, sigma, nu)

    def normalizer(self, mu, sigma, nu):
        return -lmath.log(nu)

    def sample(self, state, dims, mu, sigma, nu):
        state, z = primitive_draw("normal", state, dims=dims)
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, mu + sigma * z - nu * lmath.log1p(-u)

    def log_cdf(self, x, mu, sigma, nu):
        return log_diff_exp(log_ndtr((x - mu) / sigma), self._shifted(x, mu, sigma, nu))

    def log_sf(self, x, mu, sigma, nu):
        return lmath.logaddexp(log_ndtr((mu - x) / sigma), self._shifted(x, mu, sigma, nu))

    def icdf_exp(self, lp, mu, sigma, nu):
        return _real_quantile(lambda x: self.log_cdf(x, mu, sigma, nu) >= lp, mu, sigma + nu)

    def isf_exp(self, lq, mu, sigma, nu):
        return _real_quantile(lambda x: self.log_sf(x, mu, sigma, nu) <= lq, mu, sigma + nu)


@register("gumbel")
class Gumbel(Distribution):
    """Location `mu`, scale `beta` (PyMC's `Gumbel(mu, beta)`, scipy's `gumbel_r(mu, beta)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.gumbel(0.0, 2.0).logp(1.0).eval(backend="python")), 6)
    -1.80001
    """

    names, defaults = ("mu", "beta"), {"mu": 0.0, "beta": 1.0}
    support = constraints.real
    positive = ("beta",)

    def log_density(self, x, mu, beta):
        z = (x - mu) / beta
        return -z - lmath.exp(-z)

    def normalizer(self, mu, beta):
        return -lmath.log(beta)

    def sample(self, state, dims, mu, beta):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, mu - beta * lmath.log(-lmath.log1p(-u))

    def log_cdf(self, x, mu, beta):
        return -lmath.exp((mu - x) / beta)

    def log_sf(self, x, mu, beta):
        return lmath.log1mexp(-lmath.exp((mu - x) / beta))

    def icdf_exp(self, lp, mu, beta):
        return mu - beta * lmath.log(-lp)

    def isf_exp(self, lq, mu, beta):
        return mu - beta * lmath.log(-lmath.log1mexp(lq))


@register("kumaraswamy")
class Kumaraswamy(Distribution):
    """a b x^(a-1) (1 - x^a)^(b-1) on (0, 1) (PyMC's `Kumaraswamy(a, b)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.kumaraswamy(2.0, 3.0).logp(0.5).eval(backend="python")), 6)  # log(6 * 0.5 * 0.75^2)
    0.523248
    """

    names = ("a", "b")
    support = constraints.unit_interval
    positive = ("a", "b")

    def log_density(self, x, a, b):  # at 0 and 1 the limits (xlogy: 0 where the power is 0)
        return lmath.xlogy(a - 1, x) + xlog1py(b - 1, -(x**a))

    def normalizer(self, a, b):
        return lmath.log(a) + lmath.log(b)

    def sample(self, state, dims, a, b):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, self.isf_exp(lmath.log1p(-u), a, b)

    def log_sf(self, x, a, b):  # (1 - x^a)^b
        return lmath.where(x <= 0, 0.0, b * lmath.log1p(-(lmath.clip(x, 0.0, 1.0) ** a)))

    def log_cdf(self, x, a, b):
        return lmath.log1mexp(self.log_sf(x, a, b))

    def icdf_exp(self, lp, a, b):
        return self.isf_exp(lmath.log1mexp(lp), a, b)

    def isf_exp(self, lq, a, b):
        return (-lmath.expm1(lq / b)) ** (1.0 / a)


@register("logitnormal")
class LogitNormal(Distribution):
    """sigmoid(Y) for Y ~ Normal(mu, sigma) (PyMC's `LogitNormal(mu, sigma)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.logitnormal(0.0, 1.0).logp(0.5).eval(backend="python")), 6)  # norm.logpdf(0) + log 4
    0.467356
    """

    names, defaults = ("mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    support = constraints.unit_interval
    positive = ("sigma",)

    def log_density(self, x, mu, sigma):  # 0 at both ends, where the normal's tail vanishes faster than 1/x
        inside = (x > 0) & (x < 1)
        x = lmath.where(inside, x, 0.5)
        z = (lmath.logit(x) - mu) / sigma
        return lmath.where(inside, -0.5 * z * z - lmath.log(x) - lmath.log1p(-x), -np.inf)

    def normalizer(self, mu, sigma):
        return -lmath.log(sigma) - 0.5 * _LOG_2PI

    def sample(self, state, dims, mu, sigma):
        state, z = primitive_draw("normal", state, dims=dims)
        return state, lmath.sigmoid(mu + sigma * z)

    def log_cdf(self, x, mu, sigma):
        return log_ndtr((lmath.logit(lmath.clip(x, 0.0, 1.0)) - mu) / sigma)

    def log_sf(self, x, mu, sigma):
        return log_ndtr((mu - lmath.logit(lmath.clip(x, 0.0, 1.0))) / sigma)

    def icdf_exp(self, lp, mu, sigma):
        return lmath.sigmoid(mu + sigma * ndtri_exp(lp))

    def isf_exp(self, lq, mu, sigma):
        return lmath.sigmoid(mu - sigma * ndtri_exp(lq))


@register("moyal")
class Moyal(Distribution):
    """Location `mu`, scale `sigma`: mu - 2 sigma log|Z| (PyMC's `Moyal(mu, sigma)`, scipy's `moyal(mu, sigma)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.moyal(0.0, 1.0).logp(1.0).eval(backend="python")), 6)
    -1.602853
    """

    names, defaults = ("mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    support = constraints.real
    positive = ("sigma",)

    def log_density(self, x, mu, sigma):
        z = (x - mu) / sigma
        return -0.5 * (z + lmath.exp(-z))

    def normalizer(self, mu, sigma):
        return -lmath.log(sigma) - 0.5 * _LOG_2PI

    def sample(self, state, dims, mu, sigma):
        state, z = primitive_draw("normal", state, dims=dims)
        return state, mu - 2 * sigma * lmath.log(_abs(z))

    # P(X <= x) = 2 Phi(-e), P(X > x) = erf(e / sqrt 2), e = exp(-z / 2)
    def log_cdf(self, x, mu, sigma):
        return _LOG2 + log_ndtr(-lmath.exp((mu - x) / (2 * sigma)))

    def log_sf(self, x, mu, sigma):
        return lmath.log(lmath.erf(lmath.exp((mu - x) / (2 * sigma)) * math.sqrt(0.5)))

    def icdf_exp(self, lp, mu, sigma):
        return mu - 2 * sigma * lmath.log(-ndtri_exp(lp - _LOG2))

    def isf_exp(self, lq, mu, sigma):
        return self.icdf_exp(lmath.log1mexp(lq), mu, sigma)


@register("pareto")
class Pareto(Distribution):
    """alpha m^alpha / x^(alpha + 1) on x >= m (PyMC's `Pareto(alpha, m)`, scipy's `pareto(alpha, scale=m)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.pareto(3.0, 2.0).logp(4.0).eval(backend="python")), 6)  # log(3 * 8 / 4^4)
    -2.367124
    """

    names = ("alpha", "m")
    positive = ("alpha", "m")
    safe_value = 1.0

    @property
    def support(self):
        return constraints.interval(self.params["m"], None)

    def log_density(self, x, alpha, m):
        return -(alpha + 1) * lmath.log(x)

    def normalizer(self, alpha, m):
        return lmath.log(alpha) + alpha * lmath.log(m)

    def sample(self, state, dims, alpha, m):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, self.isf_exp(lmath.log1p(-u), alpha, m)

    def log_sf(self, x, alpha, m):
        return alpha * lmath.minimum(lmath.log(m) - lmath.log(lmath.maximum(x, m)), 0.0)

    def log_cdf(self, x, alpha, m):
        return lmath.log1mexp(self.log_sf(x, alpha, m))

    def icdf_exp(self, lp, alpha, m):
        return self.isf_exp(lmath.log1mexp(lp), alpha, m)

    def isf_exp(self, lq, alpha, m):
        return m * lmath.exp(-lq / alpha)


@register("rice")
class Rice(Distribution):
    """|nu + sigma Z| for a complex normal Z: the Rice distribution (PyMC's `Rice(nu, sigma)`; scipy's
    `rice(nu / sigma, scale=sigma)`). No logcdf (it is Marcum's Q function; PyMC has none either).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.rice(1.0, 2.0).logp(1.5).eval(backend="python")), 6)
    -1.448837
    """

    names, defaults = ("nu", "sigma"), {"sigma": 1.0}
    support = constraints.nonnegative

    def valid(self, nu, sigma):
        return (nu >= 0) & (sigma > 0)

    def log_density(self, x, nu, sigma):
        s2 = sigma * sigma
        return lmath.log(x) - (x * x + nu * nu) / (2 * s2) + log_i0(x * nu / s2)

    def normalizer(self, nu, sigma):
        return -2 * lmath.log(sigma)

    def sample(self, state, dims, nu, sigma):
        state, z1 = primitive_draw("normal", state, dims=dims)
        state, z2 = primitive_draw("normal", state, dims=dims)
        re = nu + sigma * z1
        im = sigma * z2
        return state, lmath.sqrt(re * re + im * im)


@register("skewnormal")
class SkewNormal(Distribution):
    """The normal tilted by Phi(alpha z) (PyMC's `SkewNormal(mu, sigma, alpha)`; scipy's `skewnorm(alpha, mu, sigma)`).
    No logcdf (it needs Owen's T function; PyMC has none either).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.skewnormal(0.0, 1.0, 3.0).logp(0.5).eval(backend="python")), 6)
    -0.360451
    """

    names, defaults = ("mu", "sigma", "alpha"), {"mu": 0.0, "sigma": 1.0, "alpha": 0.0}
    support = constraints.real
    positive = ("sigma",)

    def log_density(self, x, mu, sigma, alpha):
        z = (x - mu) / sigma
        return -0.5 * z * z + log_ndtr(alpha * z)

    def normalizer(self, mu, sigma, alpha):
        return _LOG2 - lmath.log(sigma) - 0.5 * _LOG_2PI

    def sample(self, state, dims, mu, sigma, alpha):
        state, u0 = primitive_draw("normal", state, dims=dims)
        state, v = primitive_draw("normal", state, dims=dims)
        delta = alpha / lmath.sqrt(1 + alpha * alpha)
        return state, mu + sigma * (delta * _abs(u0) + lmath.sqrt(1 - delta * delta) * v)


@register("skew_student_t")
class SkewStudentT(Distribution):
    """Jones and Faddy's skewed t with tail parameters `a`, `b` (PyMC's `SkewStudentT(a, b, mu, sigma)`; scipy's
    `jf_skew_t(a, b, mu, sigma)`); a = b is Student's t with 2a degrees of freedom, scaled by sqrt(2a) / ... .

    >>> import dimgraph as dg
    >>> round(float(dg.dist.skew_student_t(2.0, 3.0, 0.0, 1.0).logp(0.5).eval(backend="python")), 6)
    -1.185519
    """

    names, defaults = ("a", "b", "mu", "sigma"), {"mu": 0.0, "sigma": 1.0}
    support = constraints.real
    positive = ("a", "b", "sigma")

    def _sides(self, z, a, b):
        """(log(1 + z / d), log(1 - z / d)) with d = sqrt(a + b + z^2), each without cancellation."""
        d = lmath.sqrt(a + b + z * z)
        ab = lmath.log(a + b) - lmath.log(d)
        plus = lmath.where(z >= 0, lmath.log1p(z / d), ab - lmath.log(d - lmath.minimum(z, 0.0)))
        minus = lmath.where(z <= 0, lmath.log1p(-z / d), ab - lmath.log(d + lmath.maximum(z, 0.0)))
        return plus, minus

    def log_density(self, x, a, b, mu, sigma):
        plus, minus = self._sides((x - mu) / sigma, a, b)
        return (a + 0.5) * plus + (b + 0.5) * minus

    def normalizer(self, a, b, mu, sigma):
        return -(a + b - 1) * _LOG2 - lmath.betaln(a, b) - 0.5 * lmath.log(a + b) - lmath.log(sigma)

    def sample(self, state, dims, a, b, mu, sigma):
        state, g1 = primitive_draw("gamma", state, a, dims=dims)
        state, g2 = primitive_draw("gamma", state, b, dims=dims)
        z = lmath.sqrt(a + b) * (g1 - g2) / (2 * lmath.sqrt(g1 * g2))
        return state, mu + sigma * z

    # P(X <= x) = I_w(a, b), w = (1 + z / d) / 2; P(X > x) = I_{1 - w}(b, a)
    def log_cdf(self, x, a, b, mu, sigma):
        plus, minus = self._sides((x - mu) / sigma, a, b)
        return log_regularized_beta(a, b, lmath.exp(plus - _LOG2))

    def log_sf(self, x, a, b, mu, sigma):
        plus, minus = self._sides((x - mu) / sigma, a, b)
        return log_regularized_beta(b, a, lmath.exp(minus - _LOG2))

    def icdf_exp(self, lp, a, b, mu, sigma):
        return _real_quantile(lambda x: self.log_cdf(x, a, b, mu, sigma) >= lp, mu, sigma)

    def isf_exp(self, lq, a, b, mu, sigma):
        return _real_quantile(lambda x: self.log_sf(x, a, b, mu, sigma) <= lq, mu, sigma)


@register("triangular")
class Triangular(Distribution):
    """The triangle on [lower, upper] with its mode at `c` (PyMC's `Triangular(lower, c, upper)`; scipy's
    `triang((c - lower) / (upper - lower), lower, upper - lower)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.triangular(0.0, 1.0, 3.0).logp(2.0).eval(backend="python")), 6)  # log(2 * 1 / (3 * 2))
    -1.098612
    """

    names, defaults = ("lower", "c", "upper"), {"lower": 0.0, "c": 0.5, "upper": 1.0}

    @property
    def support(self):
        return constraints.interval(self.params["lower"], self.params["upper"])

    def valid(self, lower, c, upper):
        return (lower <= c) & (c <= upper) & (lower < upper)

    def log_density(self, x, lower, c, upper):
        left = x < c
        rise = lmath.log(lmath.where(left, x - lower, 1.0)) - lmath.log(lmath.where(left, c - lower, 1.0))
        fall = lmath.log(lmath.where(left, 1.0, upper - x)) - lmath.log(lmath.where(left, 1.0, upper - c))
        return lmath.where(left, rise, fall)

    def normalizer(self, lower, c, upper):
        return _LOG2 - lmath.log(upper - lower)

    def sample(self, state, dims, lower, c, upper):
        state, u = primitive_draw("uniform", state, dims=dims)
        return state, self.icdf_exp(lmath.log(u), lower, c, upper)

    def _mode_log_cdf(self, lower, c, upper):
        return lmath.log(c - lower) - lmath.log(upper - lower)

    def log_cdf(self, x, lower, c, upper):
        x = lmath.clip(x, lower, upper)
        left = x <= c
        rise = 2 * lmath.log(x - lower) - lmath.log(upper - lower) - lmath.log(lmath.where(left, c - lower, 1.0))
        fall = lmath.log1p(-((upper - x) ** 2) / ((upper - lower) * lmath.where(left, 1.0, upper - c)))
        return lmath.where(left, rise, fall)

    def log_sf(self, x, lower, c, upper):
        x = lmath.clip(x, lower, upper)
        right = x > c
        fall = 2 * lmath.log(upper - x) - lmath.log(upper - lower) - lmath.log(lmath.where(right, upper - c, 1.0))
        rise = lmath.log1p(-((x - lower) ** 2) / ((upper - lower) * lmath.where(right, 1.0, c - lower)))
        return lmath.where(right, fall, rise)

    def _quantile(self, lp, lq, lower, c, upper):
        left = lp <= self._mode_log_cdf(lower, c, upper)
        span = upper - lower
        rise = lower + lmath.sqrt(lmath.exp(lp) * span * (c - lower))
        fall = upper - lmath.sqrt(lmath.exp(lq) * span * (upper - c))
        return lmath.where(left, rise, fall)

    def icdf_exp(self, lp, lower, c, upper):
        return self._quantile(lp, lmath.log1mexp(lp), lower, c, upper)

    def isf_exp(self, lq, lower, c, upper):
        return self._quantile(lmath.log1mexp(lq), lq, lower, c, upper)


@register("vonmises")
class VonMises(Distribution):
    """exp(kappa cos(x - mu)) / (2 pi I0(kappa)) on [-pi, pi] (PyMC's `VonMises(mu, kappa)`; scipy's
    `vonmises(kappa, mu)`). Draws by Best and Fisher's rejection, 16 rounds (acceptance >= 65%: a draw is
    left unaccepted with probability below 4e-8, and then keeps its last proposal).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.vonmises(0.0, 2.0).logp(0.5).eval(backend="python")), 6)
    -1.105236
    """

    names, defaults = ("mu", "kappa"), {"mu": 0.0, "kappa": 1.0}
    support = constraints.interval(-math.pi, math.pi)
    positive = ("kappa",)
    _ROUNDS = 16

    def log_density(self, x, mu, kappa):
        return kappa * lmath.cos(x - mu)

    def normalizer(self, mu, kappa):
        return -math.log(2 * math.pi) - log_i0(kappa)

    def sample(self, state, dims, mu, kappa):
        # rho = (tau - sqrt(2 tau)) / (2 kappa), tau = 1 + sqrt(1 + 4 kappa^2), without cancellation at small kappa
        root = lmath.sqrt(1 + 4 * kappa * kappa)
        tau = 1 + root
        rho = 2 * kappa * tau / ((root + 1) * (tau + lmath.sqrt(2 * tau)))
        r = (1 + rho * rho) / (2 * rho)
        f = None
        accepted = None
        for _ in range(self._ROUNDS):
            state, u1 = primitive_draw("uniform", state, dims=dims)
            state, u2 = primitive_draw("uniform", state, dims=dims)
            z = lmath.cos(math.pi * u1)
            g = (1 + r * z) / (r + z)
            c = kappa * (r - g)
            ok = (c * (2 - c) - u2 > 0) | (lmath.log(c / u2) + 1 - c >= 0)
            if f is None:
                f, accepted = g, ok
            else:
                f = lmath.where(accepted, f, g)
                accepted = accepted | ok
        state, u3 = primitive_draw("uniform", state, dims=dims)
        theta = lmath.where(u3 < 0.5, -1.0, 1.0) * lmath.arccos(lmath.clip(f, -1.0, 1.0))
        return state, lmath.elemwise("mod", theta + mu + math.pi, 2 * math.pi) - math.pi


@register("wald")
class Wald(Distribution):
    """The inverse Gaussian with mean `mu` and shape `lam`, shifted by `alpha` (PyMC's `Wald(mu, lam, alpha)`;
    scipy's `invgauss(mu / lam, alpha, lam)`).

    >>> import dimgraph as dg
    >>> round(float(dg.dist.wald(1.0, 2.0).logp(0.5).eval(backend="python")), 6)
    -0.188772
    """

    names, defaults = ("mu", "lam", "alpha"), {"alpha": 0.0}
    positive = ("mu", "lam")

    @property
    def support(self):
        return constraints.interval(self.params["alpha"], None)

    def valid(self, mu, lam, alpha):
        return (mu > 0) & (lam > 0) & (alpha >= 0)

    def log_density(self, x, mu, lam, alpha):  # 0 at alpha and at inf
        inside = (x > alpha) & lmath.isfinite(x)
        y = lmath.where(inside, x - alpha, mu)
        d = y - mu
        return lmath.where(inside, -1.5 * lmath.log(y) - lam * d * d / (2 * mu * mu * y), -np.inf)

    def normalizer(self, mu, lam, alpha):
        return 0.5 * (lmath.log(lam) - _LOG_2PI)

    def sample(self, state, dims, mu, lam, alpha):
        # Michael, Schucany and Haas: a root of the chi-square(1) equation, then one of the two by a coin
        state, z = primitive_draw("normal", state, dims=dims)
        state, u = primitive_draw("uniform", state, dims=dims)
        v = z * z
        m2v = mu * mu * v
        y = mu + m2v / (2 * lam) - mu / (2 * lam) * lmath.sqrt(4 * mu * lam * v + m2v * v)
        return state, alpha + lmath.where(u <= mu / (mu + y), y, mu * mu / y)

    def _terms(self, x, mu, lam, alpha):
        y = lmath.maximum(x - alpha, 0.0)
        s = lmath.sqrt(lam / lmath.where(y > 0, y, 1.0))
        return y, s * (y / mu - 1), s * (y / mu + 1)

    # P(Y <= y) = Phi(s (y/mu - 1)) + exp(2 lam / mu) Phi(-s (y/mu + 1)), s = sqrt(lam / y)
    def log_cdf(self, x, mu, lam, alpha):
        y, a, b = self._terms(x, mu, lam, alpha)
        return lmath.where(y > 0, lmath.logaddexp(log_ndtr(a), 2 * lam / mu + log_ndtr(-b)), -np.inf)

    def log_sf(self, x, mu, lam, alpha):
        y, a, b = self._terms(x, mu, lam, alpha)
        return lmath.where(y > 0, log_diff_exp(log_ndtr(-a), 2 * lam / mu + log_ndtr(-b)), 0.0)

    def icdf_exp(self, lp, mu, lam, alpha):
        return alpha + _positive_quantile(lambda y: self.log_cdf(alpha + y, mu, lam, alpha) >= lp, lp * mu)

    def isf_exp(self, lq, mu, lam, alpha):
        return alpha + _positive_quantile(lambda y: self.log_sf(alpha + y, mu, lam, alpha) <= lq, lq * mu)


@register("interpolated")
class Interpolated(Distribution):
    """The density through the points (`x_points`, `pdf_points`) on `dim`, linear between them and normalized by
    its trapezoid area (PyMC's `Interpolated(x_points, pdf_points)`); draws invert its piecewise-quadratic cdf.

    >>> import dimgraph as dg, numpy as np
    >>> k = dg.Dim("k", size=3)
    >>> xp, pp = dg.constant(np.array([0.0, 1.0, 2.0]), dims=(k,)), dg.constant(np.array([0.0, 1.0, 0.0]), dims=(k,))
    >>> round(float(dg.dist.interpolated(xp, pp, dim=k).logp(0.5).eval(backend="python")), 6)  # log(0.5 / 1)
    -0.693147
    """

    names = ("x_points", "pdf_points")

    def __init__(self, *args, dim=None, **kwargs):
        super().__init__(*args, **kwargs)
        xp = self.params["x_points"]
        if dim is None:
            raise TypeError(f"interpolated: give the dim of the points as dim= (one of {xp.dims})")
        (self.dim,) = resolve_dims(xp.dims, dim, "interpolated")
        if self.dim.size is None or self.dim.size < 2:
            raise ValueError(f"interpolated: the points' dim {self.dim.name!r} needs a static size of at least 2")

    @property
    def bounds(self):
        """(the first point, the last point)."""
        xp, last = self.params["x_points"], self.dim.size - 1
        return xp.isel({self.dim.name: 0}), xp.isel({self.dim.name: last})

    @property
    def support(self):
        return constraints.interval(*self.bounds)

    def _out_dims(self, dims):
        return tuple(d for d in dims if d != self.dim)

    def valid(self, x_points, pdf_points):
        return (lmath.diff(x_points, self.dim) > 0).all(self.dim.name) & (pdf_points >= 0).all(self.dim)

    def _segments(self, x_points, pdf_points):
        """Per point i on `dim`: (x_i, x_{i+1}, p_i, p_{i+1}, whether a segment starts there, its area)."""
        d = self.dim.name
        x1 = x_points.shift({d: -1}, fill_value=0.0)
        p1 = pdf_points.shift({d: -1}, fill_value=0.0)
        starts = arange(self.dim) < self.dim.size - 1
        area = lmath.where(starts, (x1 - x_points) * (pdf_points + p1) / 2, 0.0)
        return x1, p1, starts, area

    def _locate(self, x, x_points, pdf_points):
        """The one-hot segment of x along `dim` (the last segment holds the last point) and the segment's pieces."""
        x1, p1, starts, area = self._segments(x_points, pdf_points)
        last = arange(self.dim) == self.dim.size - 2
        hit = starts & (x_points <= x) & ((x < x1) | (last & (x <= x1)))
        return hit, x1, p1, area

    def logp(self, x, check="nan"):
        _check_option(check)
        x = lmath.as_operand(x, "logp")
        xp, pp = self.params["x_points"], self.params["pdf_points"]
        hit, x1, p1, area = self._locate(x, xp, pp)
        width = lmath.where(hit, x1 - xp, 1.0)
        here = lmath.where(hit, pp + (p1 - pp) * (x - xp) / width, 0.0).sum(self.dim)
        density = lmath.where(hit.any(self.dim), lmath.log(here), -np.inf) - lmath.log(area.sum(self.dim))
        return _invalid_to_nan(density, self.valid(xp, pp), check, "interpolated")

    def _log_cdf_of(self, x, x_points, pdf_points):
        hit, x1, p1, area = self._locate(x, x_points, pdf_points)
        before = lmath.cumulative("add", area, self.dim) - area  # the area of the segments below each one
        t = x - x_points
        width = lmath.where(hit, x1 - x_points, 1.0)
        partial = t * pdf_points + (p1 - pdf_points) * t * t / (2 * width)
        inside = lmath.where(hit, before + partial, 0.0).sum(self.dim)
        lo, hi = self.bounds
        mass = lmath.where(x < lo, 0.0, lmath.where(x >= hi, area.sum(self.dim), inside))
        return mass, area.sum(self.dim)

    def log_cdf(self, x, x_points, pdf_points):
        mass, total = self._log_cdf_of(x, x_points, pdf_points)
        return lmath.log(mass) - lmath.log(total)

    def log_sf(self, x, x_points, pdf_points):
        mass, total = self._log_cdf_of(x, x_points, pdf_points)
        return lmath.log(total - mass) - lmath.log(total)

    def _quantile(self, u, x_points, pdf_points):
        """x with F(x) = u: the segment where the running area passes u * area, then the root of its quadratic."""
        x1, p1, starts, area = self._segments(x_points, pdf_points)
        total = area.sum(self.dim)
        after = lmath.cumulative("add", area, self.dim)
        target = u * total
        last = arange(self.dim) == self.dim.size - 2
        hit = starts & (after - area <= target) & ((target < after) | last)
        hit = hit & (lmath.cumulative("add", lmath.where(hit, 1.0, 0.0), self.dim) == 1)  # the first one
        r = target - (after - area)
        width = lmath.where(hit, x1 - x_points, 1.0)
        slope = (p1 - pdf_points) / width
        # (slope / 2) t^2 + p_i t = r, by the root that does not cancel: t = 2 r / (p_i + sqrt(p_i^2 + 2 slope r))
        disc = lmath.sqrt(lmath.maximum(pdf_points * pdf_points + 2 * slope * r, 0.0))
        denom = pdf_points + disc
        t = lmath.where(denom > 0, 2 * r / lmath.where(denom > 0, denom, 1.0), 0.0)
        return lmath.where(hit, x_points + lmath.clip(t, 0.0, x1 - x_points), 0.0).sum(self.dim)

    def sample(self, state, dims, x_points, pdf_points):
        state, u = primitive_draw("uniform", state, dims=tuple(d for d in dims if d != self.dim))
        return state, self._quantile(u, x_points, pdf_points)

    def icdf_exp(self, lp, x_points, pdf_points):
        return self._quantile(lmath.exp(lp), x_points, pdf_points)

    def isf_exp(self, lq, x_points, pdf_points):
        return self._quantile(-lmath.expm1(lq), x_points, pdf_points)
