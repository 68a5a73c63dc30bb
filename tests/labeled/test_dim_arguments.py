"""A lone string passed where dims are expected is ONE dim name, in every public function.

API.md: "a lone string is one dim name, never a sequence of one-letter names".
The functions are found by introspection (every public callable with a
`dims`/`dim`/`extra_dims`/`core_dims_*`/`dims_order`/`batch_dims`/`exclude` parameter), so a new one
without a case here fails `test_every_function_taking_dims_is_checked`.
"""

import inspect

import numpy as np
import pytest
import xarray as xr

import dimgraph as dg
from dimgraph.labeled.variable import LabeledVariable

DIM_PARAMS = {"dims", "dim", "extra_dims", "core_dims_in", "core_dims_out", "dims_order", "batch_dims", "exclude"}
A, B, AB = dg.Dim("a", size=2), dg.Dim("b", size=2), dg.Dim("ab", size=3)


def _takes_dims(fn):
    try:
        return any(p in DIM_PARAMS for p in inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return False


def _public_functions_taking_dims():
    found = {
        f"dg.{n}" for n in dir(dg) if not n.startswith("_") and callable(getattr(dg, n)) and _takes_dims(getattr(dg, n))
    }
    found |= {f"dg.linalg.{n}" for n in dg.linalg.__all__ if _takes_dims(getattr(dg.linalg, n))}
    found |= {
        f"dg.dist.{n}"
        for n in dir(dg.dist)
        if not n.startswith("_") and n[0].islower() and _takes_dims(getattr(dg.dist, n))
    }
    found |= {
        f"x.{n}" for n in dir(LabeledVariable) if not n.startswith("_") and _takes_dims(getattr(LabeledVariable, n))
    }
    found |= {
        f"rng.{n}" for n in dir(dg.RandomStream) if not n.startswith("_") and _takes_dims(getattr(dg.RandomStream, n))
    }
    found |= {
        f"dist.{n}"
        for n in dir(dg.dist.Distribution)
        if not n.startswith("_") and _takes_dims(getattr(dg.dist.Distribution, n))
    }
    found |= {
        f"FlatParams.{n}"
        for n in dir(dg.FlatParams)
        if not n.startswith("_") and _takes_dims(getattr(dg.FlatParams, n))
    }
    return found


def _x():
    return dg.labeled("x", dims=(A, B))


def _align_excluding():
    """`exclude="ab"` leaves the dim ab alone (were it "a", "b", ab would be joined to one label)."""
    p = dg.labeled("p", dims=(dg.Dim("ab", coords=[1, 2, 3]),))
    q = dg.labeled("q", dims=(dg.Dim("ab", coords=[3, 4, 5]),))
    p2, q2 = dg.align(p, q, exclude="ab")
    assert p2.dims == p.dims and q2.dims == q.dims
    return p2


def _mvn(dims):
    return dg.dist.multivariate_normal(dg.constant(np.zeros(2), dims=(A,)), cov=_x(), dims=dims)


_RNG_METHODS = [
    n
    for n in dir(dg.RandomStream)
    if not n.startswith("_") and _takes_dims(getattr(dg.RandomStream, n)) and n != "draw"
]
_LINALG_UNARY = ["cholesky", "inv", "det", "slogdet", "eigh", "trace", "diagonal"]
_REDUCTIONS = [
    "all",
    "any",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "logsumexp",
    "max",
    "mean",
    "min",
    "prod",
    "std",
    "sum",
    "var",
]

# each case passes the lone string "ab" where dims go, on a variable with dims (a, b)
CASES = {
    "dg.ProductDim": lambda: dg.ProductDim("cell", "ab"),
    "dg.align": _align_excluding,
    "dg.arange": lambda: dg.arange("ab"),
    "dg.as_labeled": lambda: dg.as_labeled(xr.DataArray(np.zeros((2, 2)), dims=("a", "b")), dims="ab"),
    "dg.concat": lambda: dg.concat([_x(), _x()], "ab"),
    "dg.constant": lambda: dg.constant(np.zeros((2, 2)), dims="ab"),
    "dg.dot": lambda: dg.dot(_x(), _x(), dim="ab"),
    "dg.from_positional": lambda: dg.from_positional(dg.tensor("t", shape=(2, 2)), dims="ab"),
    "dg.labeled": lambda: dg.labeled("y", dims="ab"),
    "dg.log_softmax": lambda: dg.log_softmax(_x(), "ab"),
    "dg.logsumexp": lambda: dg.logsumexp(_x(), "ab"),
    "dg.scan": lambda: dg.scan(lambda s, e: s + e, init=dg.constant(0.0, dims=()), sequences=_x(), dim="ab"),
    "dg.shared": lambda: dg.shared(np.zeros((2, 2)), dims="ab"),
    "dg.softmax": lambda: dg.softmax(_x(), "ab"),
    "dg.vectorize": lambda: dg.vectorize(lambda v: v.sum(), ["ab"], [()])(_x()),
    "dg.while_loop": lambda: dg.while_loop(
        lambda s: s < 1, lambda s: s + 1, dg.constant(0.0, dims=()), 3, trace=True, dim="ab"
    )[1],
    "dg.linalg.solve": lambda: dg.linalg.solve(_x(), dg.labeled("v", dims=(A,)), dims="ab"),
    "dg.linalg.solve_triangular": lambda: dg.linalg.solve_triangular(_x(), dg.labeled("v", dims=(A,)), dims="ab"),
    "dg.linalg.cho_solve": lambda: dg.linalg.cho_solve(_x(), dg.labeled("v", dims=(A,)), dims="ab"),
    "dg.dist.categorical": lambda: dg.dist.categorical(_x(), dim="ab"),
    "dg.dist.dirichlet": lambda: dg.dist.dirichlet(_x(), dim="ab"),
    "dg.dist.multivariate_normal": lambda: _mvn("ab"),
    "dg.dist.lkj_corr": lambda: dg.dist.lkj_corr(2.0, dims="ab"),
    "dg.dist.lkj_cholesky_corr": lambda: dg.dist.lkj_cholesky_corr(2.0, dims="ab"),
    "dg.dist.lkj_cholesky_cov": lambda: dg.dist.lkj_cholesky_cov(2.0, dg.dist.halfnormal(1.0), dims="ab"),
    "dg.dist.mixture": lambda: dg.dist.mixture(_x(), [dg.dist.normal(0.0, 1.0)] * 2, dim="ab"),
    "dg.dist.markov_chain": lambda: dg.dist.markov_chain(_x(), _x(), dim="ab", next_dim="b", time=dg.Dim("t", size=3)),
    "dg.dist.car": lambda: dg.dist.car(0.0, np.eye(2), 0.5, 1.0, dim="ab"),
    "dg.dist.icar": lambda: dg.dist.icar(np.ones((2, 2)) - np.eye(2), dim="ab"),
    "dg.dist.custom": lambda: dg.dist.custom(lambda v: -v * v, dims="ab").logp(_x()),
    "dg.dist.multinomial": lambda: dg.dist.multinomial(3, _x(), dim="ab"),
    "dg.dist.normal_mixture": lambda: dg.dist.normal_mixture(_x(), 0.0, 1.0, dim="ab"),
    "dg.dist.ordered_multinomial": lambda: dg.dist.ordered_multinomial(0.0, _x(), 3, dim="ab", cut_dim="ab"),
    "dg.dist.dirichlet_multinomial": lambda: dg.dist.dirichlet_multinomial(3, _x(), dim="ab"),
    "dg.dist.stick_breaking_weights": lambda: dg.dist.stick_breaking_weights(1.0, dim="ab"),
    "dg.dist.interpolated": lambda: dg.dist.interpolated(_x(), _x(), dim="ab"),
    "dg.dist.ordered_logistic": lambda: dg.dist.ordered_logistic(0.0, _x(), dim="ab"),
    "dg.dist.ordered_probit": lambda: dg.dist.ordered_probit(0.0, _x(), dim="ab"),
    "dg.dist.mv_student_t": lambda: dg.dist.mv_student_t(
        3.0, dg.constant(np.zeros(2), dims=(A,)), scale=_x(), dims="ab"
    ),
    "dg.dist.wishart": lambda: dg.dist.wishart(3.0, _x(), dims="ab"),
    "dg.dist.inverse_wishart": lambda: dg.dist.inverse_wishart(3.0, _x(), dims="ab"),
    "dg.dist.kronecker_normal": lambda: dg.dist.kronecker_normal(0.0, covs=[_x()], dims="ab"),
    "dg.dist.mv_gaussian_random_walk": lambda: dg.dist.mv_gaussian_random_walk(
        0.0, cov=_x(), dims="ab", time=dg.Dim("t", size=3)
    ),
    "dg.dist.mv_student_t_random_walk": lambda: dg.dist.mv_student_t_random_walk(
        3.0, 0.0, scale=_x(), dims="ab", time=dg.Dim("t", size=3)
    ),
    "dg.dist.zerosum_normal": lambda: dg.dist.zerosum_normal(1.0, dims="ab").draw(dg.rng_state("s"))[1],
    "dist.draw": lambda: dg.dist.normal(0.0, 1.0).draw(dg.rng_state("s"), extra_dims="ab"),
    "rng.draw": lambda: dg.rng(0).draw(dg.dist.normal(0.0, 1.0), extra_dims="ab"),
    "FlatParams.unravel": lambda: dg.FlatParams([_x()]).unravel(np.zeros((3, 4)), batch_dims="ab")["x"].isel(a=0, b=0),
    "x.diff": lambda: _x().diff("ab"),
    "x.dot": lambda: _x().dot(_x(), dim="ab"),
    "x.expand_dims": lambda: _x().expand_dims("ab"),
    "x.squeeze": lambda: _x().squeeze("ab"),
    "x.stack": lambda: _x().stack(new="ab"),
    "x.to_positional": lambda: _x().to_positional("ab"),
    "x.transpose": lambda: _x().transpose("ab"),
    "x.unstack": lambda: _x().unstack("ab"),
    **{f"dg.linalg.{n}": (lambda n=n: getattr(dg.linalg, n)(_x(), dims="ab")) for n in _LINALG_UNARY},
    **{f"x.{n}": (lambda n=n: getattr(_x(), n)("ab")) for n in _REDUCTIONS},
    **{f"rng.{n}": (lambda n=n: _rng_case(n)) for n in _RNG_METHODS},
}


def _rng_params(name):
    """Valid parameters of `rng.<name>`, so that only `extra_dims` is at fault."""
    half = dg.constant(np.full(2, 0.5), dims=(A,))
    if name in ("categorical", "dirichlet"):
        return (half,), {"dim": A}
    if name == "multivariate_normal":
        return (dg.constant(np.zeros(2), dims=(A,)),), {"cov": dg.constant(np.eye(2), dims=(A, B)), "dims": (A, B)}
    if name in ("lkj_corr", "lkj_cholesky_corr"):
        return (2.0,), {"dims": (A, B)}
    if name == "lkj_cholesky_cov":
        return (2.0, dg.dist.halfnormal(1.0)), {"dims": (A, B)}
    if name == "mixture":
        return (half, [dg.dist.normal(0.0, 1.0)] * 2), {"dim": A}
    if name in ("truncated", "censored"):
        return (dg.dist.normal(0.0, 1.0),), {"lower": 0.0}
    if name == "zerosum_normal":
        return (1.0,), {"dims": (A,)}
    if name == "markov_chain":
        return (half, dg.constant(np.full((2, 2), 0.5), dims=(A, B))), {
            "dim": A,
            "next_dim": B,
            "time": dg.Dim("t", size=3),
        }
    return tuple(0.5 for _ in getattr(dg.dist, name).names), {}


def _rng_case(name):
    args, kwargs = _rng_params(name)
    return getattr(dg.rng(0), name)(*args, **kwargs, extra_dims="ab")


def test_every_function_taking_dims_is_checked():
    missing = _public_functions_taking_dims() - set(CASES)
    assert not missing, f"public functions taking dims without a lone-string case: {sorted(missing)}"


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_lone_string_is_one_dim_name(name):
    """Given the lone string "ab" where dims go (the variable has dims a and b): a result on the one dim 'ab', or an error naming 'ab'."""
    try:
        out = CASES[name]()
    except (dg.DimError, TypeError, ValueError) as err:
        assert "'ab'" in str(err) or "['ab']" in str(err), str(err)
    else:
        assert [getattr(d, "name", d) for d in out.dims] == ["ab"], out.dims


def test_a_lone_string_names_the_dim_of_that_name_in_compiled_results(backend):
    """Where a dim named "ab" exists, the lone string selects it (not a and b), vs xarray."""
    x = dg.labeled("x", dims=(A, B, AB))
    outs = [
        x.sum("ab"),
        dg.vectorize(lambda v: v.cumsum("ab"), ["ab"], ["ab"])(x),
        dg.softmax(x, "ab"),
        x.transpose("ab", ...),
    ]
    data = xr.DataArray(np.random.default_rng(0).normal(size=(2, 2, 3)), dims=("a", "b", "ab"))
    got = dg.function([x], outs, backend=backend)(data)
    soft = np.exp(data) / np.exp(data).sum("ab")
    for g, e in zip(
        got, [data.sum("ab"), data.cumsum("ab").transpose("a", "b", "ab"), soft, data.transpose("ab", ...)]
    ):
        assert g.dims == e.dims
        np.testing.assert_allclose(g.values, e.values, rtol=1e-12)
