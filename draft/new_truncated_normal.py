class TruncatedNormal(Truncated):
    """Normal(mu, sigma) restricted to [lower, upper] (PyMC's `TruncatedNormal`; scipy's `truncnorm`): the
    normal's `truncated`, with its tails taken from whichever side keeps precision.

    >>> import dimgraph as dg
    >>> round(float(dg.dist.truncated_normal(0.0, 1.0, lower=0.0).logp(1.0).eval(backend="python")), 6)  # halfnormal
    -0.725791
    """

    names = ("mu", "sigma", "lower", "upper")

    def __init__(self, mu=0.0, sigma=1.0, lower=None, upper=None):
        super().__init__(Normal(mu, sigma), lower=lower, upper=upper)

    # the base's probability between the lower bound and x (x and the upper bound), from the tail that keeps it
    def log_cdf(self, x, lower=None, upper=None):
        base, x = self.base, lmath.clip(x, lower, upper)
        if lower is None:
            return base.logcdf(x) - self.log_mass()
        high = base.logcdf(lower) > _LOG_HALF
        between = lmath.where(high, log_diff_exp(base.logsf(lower), base.logsf(x)), log_diff_exp(base.logcdf(x), base.logcdf(lower)))
        return lmath.where(x < lower, -np.inf, between - self.log_mass())

    def log_sf(self, x, lower=None, upper=None):
        base, x = self.base, lmath.clip(x, lower, upper)
        if upper is None:
            return base.logsf(x) - self.log_mass()
        high = base.logcdf(x) > _LOG_HALF
        between = lmath.where(high, log_diff_exp(base.logsf(x), base.logsf(upper)), log_diff_exp(base.logcdf(upper), base.logcdf(x)))
        return between - self.log_mass()


