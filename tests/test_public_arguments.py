"""Every public `dg.*` callable given a wrong argument raises an error naming that argument.

The public names are enumerated from the package, so a new function or class is
covered as soon as it is exported: give it a valid call in `VALID` when its required
arguments are not all operands. Each parameter in turn gets `JUNK` (an object no
parameter accepts) while the others stay valid; the error must be a TypeError or
ValueError (or their kin) whose message names the parameter.
"""

import inspect
import re

import numpy as np
import pytest

import dimgraph as dg
from dimgraph import arguments


class _Junk:
    def __repr__(self):
        return "<junk>"


JUNK = _Junk()
G = dg.Dim("g", coords=["a", "b"])
H = dg.Dim("h", size=3)


def _x():
    return dg.labeled("x", dims=(G,))


def _s():
    return dg.scalar("s")


def _cost():
    x = _x()
    return ((x * x).sum(), x)


# name -> () -> (args, kwargs): a valid call; callables whose required parameters are all operands need none
VALID = {
    "Dim": lambda: (("d",), {"size": 2}),
    "ProductDim": lambda: (("c", (G, H)), {}),
    "FlatParams": lambda: (([_x()],), {}),
    "RandomStream": lambda: ((0,), {}),
    "SharedContext": lambda: ((0,), {}),
    "align": lambda: ((_x(), _x()), {}),
    "broadcast": lambda: ((_x(), _x()), {}),
    "dot": lambda: ((_x(), _x()), {}),
    "arange": lambda: ((G,), {}),
    "as_labeled": lambda: ((_x(),), {}),
    "concat": lambda: (([_x(), _x()], dg.Dim("pieces", size=2)), {}),
    "constant": lambda: ((np.zeros(2),), {"dims": (G,)}),
    "dprint": lambda: ((_x() + 1,), {"file": __import__("io").StringIO()}),
    "flat_value_and_grad": lambda: (lambda c: ((c[0], [c[1]]), {"backend": "python"}))(_cost()),
    "from_positional": lambda: ((dg.vector("v", size=2), (G,)), {}),
    "full_like": lambda: ((_x(), 1.0), {}),
    "function": lambda: (lambda s: (([s], s + 1), {"backend": "python"}))(_s()),
    "grad": lambda: (_cost(), {}),
    "hessian": lambda: (_cost(), {}),
    "value_and_grad": lambda: (_cost(), {}),
    "ifelse": lambda: ((dg.scalar("c", dtype="bool"), _s(), _s()), {}),
    "jacobian": lambda: ((_x() * 2, _x()), {}),
    "labeled": lambda: (("x", (G,)), {}),
    "logsumexp": lambda: ((_x(),), {"dim": "g"}),
    "softmax": lambda: ((_x(),), {"dim": "g"}),
    "log_softmax": lambda: ((_x(),), {"dim": "g"}),
    "lower": lambda: (([_x() + 1],), {}),
    "op_from_graph": lambda: (lambda a: (([a], [a * 2]), {}))(_s()),
    "rng": lambda: ((0,), {}),
    "rng_state": lambda: (("s",), {}),
    "round": lambda: ((_x(),), {"decimals": 1}),
    "scalar": lambda: (("s",), {}),
    "matrix": lambda: (("m",), {}),
    "tensor": lambda: (("t",), {"shape": (None,)}),
    "vector": lambda: (("v",), {"size": 3}),
    "scan": lambda: ((lambda v: v * 2.0, _s()), {"n_steps": 3}),
    "seed_state": lambda: ((0,), {}),
    "shared": lambda: ((np.zeros(2),), {"name": "w", "dims": (G,)}),
    "to_dot": lambda: ((_x() + 1,), {}),
    "vectorize": lambda: ((lambda v: v.sum("g"), [["g"]], [[]]), {}),
    "vectorize_graph": lambda: (lambda x: ((x + 1, {x: dg.labeled("xb", dims=(H, G))}), {}))(_x()),
    "where": lambda: ((_x() > 0, _x(), 0.0), {}),
    "clip": lambda: ((_x(),), {"lower": 0.0, "upper": 1.0}),
    "while_loop": lambda: ((lambda v: v < 10.0, lambda v: v * 2.0, _s()), {"max_steps": 5}),
}
NOT_CALLED_BY_USERS = {"Function"}  # built by dg.function


def _public_callables():
    for name in sorted(n for n in dir(dg) if not n.startswith("_")):
        obj = getattr(dg, name)
        if inspect.ismodule(obj) or not callable(obj) or name in NOT_CALLED_BY_USERS:
            continue
        if inspect.isclass(obj) and issubclass(obj, BaseException):
            continue
        yield name, obj


def _valid_call(name, obj):
    if name in VALID:
        return VALID[name]()
    required = [
        p
        for p in inspect.signature(obj).parameters.values()
        if p.default is p.empty and p.kind == p.POSITIONAL_OR_KEYWORD
    ]
    if not all(arguments.kind_of(name, p.name) == "operand" for p in required):
        raise AssertionError(f"dg.{name} is public: give it a valid call in VALID (tests/test_public_arguments.py)")
    return tuple(_x() for _ in required), {}


CASES = [(name, p.name) for name, obj in _public_callables() for p in inspect.signature(obj).parameters.values()]

I, J = dg.Dim("i", size=2), dg.Dim("j", size=2)


def _matrix():
    return dg.constant(np.eye(2) * 2.0, dims=(I, J))


def _rhs():
    return dg.constant(np.ones(2), dims=(I,))


# dg.linalg.<name> -> a valid call (every name in dg.linalg.__all__ needs one)
LINALG = {
    **{
        n: lambda: ((_matrix(),), {"dims": (I, J)})
        for n in ("cholesky", "det", "diagonal", "eigh", "inv", "slogdet", "trace")
    },
    "solve": lambda: ((_matrix(), _rhs()), {"dims": (I, J)}),
    "solve_triangular": lambda: ((_matrix(), _rhs()), {"dims": (I, J)}),
    "cho_solve": lambda: (((_matrix(), True), _rhs()), {"dims": (I, J)}),
}
LINALG_CASES = [
    (name, p.name)
    for name in dg.linalg.__all__
    for p in inspect.signature(getattr(dg.linalg, name)).parameters.values()
]


@pytest.mark.parametrize("name, param", LINALG_CASES, ids=[f"linalg.{n}-{p}" for n, p in LINALG_CASES])
def test_a_junk_argument_to_linalg_is_named(name, param):
    fn = getattr(dg.linalg, name)
    args, kwargs = LINALG[name]()
    fn(*args, **kwargs)
    params = list(inspect.signature(fn).parameters)
    where = params.index(param)
    args = list(args)
    if where < len(args):
        args[where] = JUNK
    else:
        kwargs[param] = JUNK
    with pytest.raises((TypeError, ValueError)) as caught:
        fn(*args, **kwargs)
    assert re.search(rf"dg\.linalg\.{name}: {param} must be", str(caught.value)), str(caught.value)


def test_every_public_callable_is_covered():
    names = {name for name, _ in _public_callables()}
    assert {
        "exp",
        "function",
        "scan",
        "while_loop",
        "Dim",
        "FlatParams",
        "dprint",
        "to_dot",
        "vectorize_graph",
    } <= names
    for name, obj in _public_callables():
        args, kwargs = _valid_call(name, obj)
        obj(*args, **kwargs)  # the valid call works, so a failure below is the junk argument's


def test_every_public_parameter_has_a_kind():
    """A new parameter name gets a kind in `dimgraph/arguments.py` (BY_NAME, or BY_FUNCTION for this function)."""
    missing = [
        f"dg.{name}({param})"
        for name, param in CASES
        if not inspect.isclass(getattr(dg, name)) and arguments.kind_of(name, param) is None
    ]
    assert missing == []


@pytest.mark.parametrize("name, param", CASES, ids=[f"{n}-{p}" for n, p in CASES])
def test_a_junk_argument_is_named_in_the_error(name, param):
    obj = getattr(dg, name)
    args, kwargs = _valid_call(name, obj)
    args = list(args)
    params = list(inspect.signature(obj).parameters.values())
    where = next(k for k, p in enumerate(params) if p.name == param)
    p = params[where]
    if p.kind == p.VAR_POSITIONAL:
        args.append(JUNK)
    elif p.kind == p.VAR_KEYWORD:
        kwargs["junk_option"] = JUNK
    elif where < len(args) and p.kind != p.KEYWORD_ONLY:
        args[where] = JUNK
    else:
        kwargs[param] = JUNK
    with pytest.raises((TypeError, ValueError, OverflowError, KeyError, IndexError)) as caught:
        obj(*args, **kwargs)
    message = str(caught.value)
    named = param if p.kind != p.VAR_KEYWORD else r"(options|junk_option)"
    assert re.search(rf"\b{named}\b", message), f"dg.{name}({param}=<junk>): {type(caught.value).__name__}: {message}"


@pytest.mark.parametrize(
    "call, error, message",
    [
        (
            lambda: dg.scan(lambda v: v, init=dg.scalar("x"), n_steps="3"),
            TypeError,
            r"dg\.scan: n_steps must be .*got '3'",
        ),
        (
            lambda: dg.while_loop(lambda v: v < 1.0, lambda v: v, init=dg.scalar("x"), max_steps=None),
            TypeError,
            r"max_steps must be .*got None",
        ),
        (lambda: dg.SharedContext(seed=1).spawn(-1), ValueError, r"spawn: n must be >= 0 .*got -1"),
        (lambda: dg.SharedContext(seed=1).spawn(2.5), TypeError, r"spawn: n must be an int"),
        (lambda: dg.rng(0).normal(0.0, "a"), TypeError, r"normal: sigma must be numbers.*got 'a'"),
        (lambda: dg.dist.gamma("x", 1.0), TypeError, r"gamma: alpha must be numbers"),
        (lambda: dg.Dim("n", size=2**63), dg.DimError, r"Dim 'n': size must be a non-negative int below 2\*\*63"),
        (
            lambda: dg.Dim("n", size=2**70),
            dg.DimError,
            r"size must be a non-negative int below 2\*\*63 .* got 1180591620717411303424",
        ),
        (
            lambda: dg.ProductDim("c", (dg.Dim("a", size=2**40), dg.Dim("b", size=2**40))),
            dg.DimError,
            r"ProductDim 'c': its size \d+",
        ),
        (lambda: dg.dprint(None), TypeError, r"dg\.dprint: obj must be"),
        (lambda: dg.to_dot(np.zeros(3)), TypeError, r"dg\.to_dot: obj must be"),
        (lambda: dg.FlatParams("mu"), TypeError, r"FlatParams: params must be a list of graph variables"),
        (lambda: dg.vectorize_graph(dg.scalar("x"), [1, 2]), TypeError, r"dg\.vectorize_graph: replace must be a dict"),
        (lambda: dg.arange(G, 5), TypeError, r"arange: with a Dim \('g'\) it takes no other arguments"),
    ],
)
def test_the_reported_junk_arguments_are_named(call, error, message):
    """The cases of issue 28: each was a raw or misattributed error ("constant None: arrays of dtype
    object...", a raw OverflowError, mu named for sigma, an internal AssertionError, AttributeError)."""
    with pytest.raises(error, match=message):
        call()


def test_a_valid_argument_of_each_kind_still_passes():
    """The door check accepts what the functions take: NumPy ints for counts, DataArrays for operands, dtypes as names."""
    import xarray as xr

    x = dg.scalar("x")
    f = dg.function([x], dg.scan(lambda v: v + 1.0, init=x, n_steps=np.int64(3))[1], backend="python")
    assert f(0.0).tolist() == [1.0, 2.0, 3.0]
    data = xr.DataArray([0.0, 1.0], dims=("g",), coords={"g": ["a", "b"]})
    assert dg.exp(data).dims == (G,)
    assert dg.tensor("t", shape=(None, 3), dtype=np.float32).type.dtype == "float32"


DISTRIBUTIONS = [
    n for n in dir(dg.dist) if n.islower() and not n.startswith("_") and inspect.isclass(getattr(dg.dist, n))
]


_R, _C, _K = dg.Dim("r", size=2), dg.Dim("c", size=2), dg.Dim("k", size=2)
# distributions built from other distributions or on matrix dims: (constructor, its numeric parameters)
CUSTOM = {
    "lkj_corr": (lambda **p: dg.dist.lkj_corr(dims=(_R, _C), **p), {"eta": 2.0}),
    "lkj_cholesky_corr": (lambda **p: dg.dist.lkj_cholesky_corr(dims=(_R, _C), **p), {"eta": 2.0}),
    "lkj_cholesky_cov": (
        lambda **p: dg.dist.lkj_cholesky_cov(sd_dist=dg.dist.halfnormal(1.0), dims=(_R, _C), **p),
        {"eta": 2.0},
    ),
    "mixture": (
        lambda **p: dg.dist.mixture(comp_dists=[dg.dist.normal(0.0, 1.0), dg.dist.normal(1.0, 1.0)], dim=_K, **p),
        {"w": dg.constant(np.array([0.3, 0.7]), dims=(_K,))},
    ),
    "truncated": (lambda **p: dg.dist.truncated(dg.dist.normal(0.0, 1.0), **p), {"lower": 0.0, "upper": 1.0}),
    "censored": (lambda **p: dg.dist.censored(dg.dist.normal(0.0, 1.0), **p), {"lower": 0.0, "upper": 1.0}),
    "custom": (lambda **p: dg.dist.custom(logp=lambda x, mu: -((x - mu) ** 2), **p), {"mu": 0.0}),
    "ordered_logistic": (
        lambda **p: dg.dist.ordered_logistic(dim=_K, **p),
        {"eta": 0.0, "cutpoints": dg.constant(np.array([-1.0, 1.0]), dims=(_K,))},
    ),
    "ordered_probit": (
        lambda **p: dg.dist.ordered_probit(dim=_K, **p),
        {"eta": 0.0, "cutpoints": dg.constant(np.array([-1.0, 1.0]), dims=(_K,)), "sigma": 1.0},
    ),
    "interpolated": (
        lambda **p: dg.dist.interpolated(dim=_K, **p),
        {
            "x_points": dg.constant(np.array([0.0, 1.0]), dims=(_K,)),
            "pdf_points": dg.constant(np.array([1.0, 1.0]), dims=(_K,)),
        },
    ),
}
_T, _EYE, _W = dg.Dim("t", size=3), dg.constant(np.eye(2), dims=(_R, _C)), np.array([[0, 1], [1, 0]])
_P = dg.constant(np.array([0.3, 0.7]), dims=(_K,))
CUSTOM.update(
    {  # the multivariate families and the time series: matrices on dims, a graph, a time Dim
        "mv_student_t": (lambda **p: dg.dist.mv_student_t(dims=(_R, _C), **p), {"nu": 3.0, "mu": 0.0, "scale": _EYE}),
        "multinomial": (lambda **p: dg.dist.multinomial(dim=_K, **p), {"n": 3, "p": _P}),
        "dirichlet_multinomial": (lambda **p: dg.dist.dirichlet_multinomial(dim=_K, **p), {"n": 3, "a": _P}),
        "ordered_multinomial": (
            lambda **p: dg.dist.ordered_multinomial(dim="cat", cut_dim=_K, **p),
            {"eta": 0.0, "cutpoints": dg.constant(np.array([-1.0, 1.0]), dims=(_K,)), "n": 3},
        ),
        "normal_mixture": (
            lambda **p: dg.dist.normal_mixture(dim=_K, **p),
            {"w": _P, "mu": dg.constant(np.array([-1.0, 1.0]), dims=(_K,)), "sigma": 1.0},
        ),
        "stick_breaking_weights": (lambda **p: dg.dist.stick_breaking_weights(dim=_K, **p), {"alpha": 1.0}),
        "car": (lambda **p: dg.dist.car(W=_W, dim=_K, **p), {"mu": 0.0, "alpha": 0.5, "tau": 1.0}),
        "icar": (lambda **p: dg.dist.icar(_W, dim=_K, **p), {"sigma": 1.0, "zero_sum_stdev": 0.001}),
        "kronecker_normal": (
            lambda **p: dg.dist.kronecker_normal(covs=[_EYE], dims=[(_R, _C)], **p),
            {"mu": 0.0, "sigma": 0.5},
        ),
        "matrix_normal": (
            lambda **p: dg.dist.matrix_normal(
                rowcov=_EYE, colcov=_EYE.rename({"r": "k", "c": "k2"}), rowdims=(_R, _C), coldims=("k", "k2"), **p
            ),
            {"mu": 0.0},
        ),
        "wishart": (lambda **p: dg.dist.wishart(dims=(_R, _C), **p), {"nu": 3.0, "V": _EYE}),
        "inverse_wishart": (lambda **p: dg.dist.inverse_wishart(dims=(_R, _C), **p), {"nu": 3.0, "V": _EYE}),
        "random_walk": (lambda **p: dg.dist.random_walk(dg.dist.normal(), dg.dist.normal(), time=_T, **p), {}),
        "gaussian_random_walk": (lambda **p: dg.dist.gaussian_random_walk(time=_T, **p), {"mu": 0.0, "sigma": 1.0}),
        "mv_gaussian_random_walk": (
            lambda **p: dg.dist.mv_gaussian_random_walk(dims=(_R, _C), time=_T, **p),
            {"mu": 0.0, "cov": _EYE},
        ),
        "mv_student_t_random_walk": (
            lambda **p: dg.dist.mv_student_t_random_walk(dims=(_R, _C), time=_T, **p),
            {"nu": 3.0, "mu": 0.0, "scale": _EYE},
        ),
        "ar": (lambda **p: dg.dist.ar(time=_T, **p), {"rho": 0.5, "sigma": 1.0, "constant": 0.0}),
        "garch11": (
            lambda **p: dg.dist.garch11(time=_T, **p),
            {"omega": 0.1, "alpha_1": 0.1, "beta_1": 0.5, "initial_vol": 1.0},
        ),
        "euler_maruyama": (lambda **p: dg.dist.euler_maruyama(sde_fn=lambda x: (-x, 1.0), time=_T, **p), {"dt": 0.1}),
    }
)


@pytest.mark.parametrize("name", sorted(CUSTOM))
def test_a_junk_parameter_of_a_built_distribution_is_named(name):
    build, numeric = CUSTOM[name]
    build(**numeric)  # the valid call builds
    for param in numeric:
        with pytest.raises(TypeError, match=rf": {param} must be numbers"):
            build(**{**numeric, param: JUNK})


@pytest.mark.parametrize("name", [n for n in DISTRIBUTIONS if n not in CUSTOM])
def test_a_junk_distribution_parameter_is_named(name):
    """`dg.dist.*` (and so `rng.<name>(...)`) name the parameter that is not numbers."""
    cls = getattr(dg.dist, name)
    if name in ("flat", "halfflat"):
        assert cls.names == ()  # no parameters to give junk to
        return
    assert cls.names
    for param in cls.names:
        given = {q: cls.defaults.get(q, 0.5) for q in cls.names}
        if name == "multivariate_normal":
            given = {
                "mu": np.zeros(2),
                "chol": dg.constant(np.eye(2), dims=(G, G.rename("g2"))),
                "dims": (G, G.rename("g2")),
            }
        given[param] = JUNK
        with pytest.raises(TypeError, match=rf": {param} must be numbers"):
            cls(**given)
