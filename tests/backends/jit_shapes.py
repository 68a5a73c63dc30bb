"""Graph shapes the test suite compiles, each built as a numba flat value-and-gradient (or, for random
draws, a plain function) with its jitted graph forced (`jit_graph=True`): run as a script, it prints
what each answers (JSON) and how (the tiers' state, whether `fn.cfunc` is jitted).

`test_numba_jit_robust.py` runs it twice in fresh processes over one cache directory, cold and then
warm, and compares: a process that loads the generated code from the disk cache must build the
same jitted graph as the one that printed it (issue 36: it did not for object-mode nodes).
"""

from __future__ import annotations

import ctypes
import json
import sys
import warnings

import numpy as np

import dimgraph as dg

BATCH, MACHINE = dg.Dim("batch", coords=list("abcd")), dg.Dim("machine", coords=list("xyz"))
SERIES, TIME = dg.Dim("series", size=3), dg.Dim("time", size=6)
OBS, ROW, COL = dg.Dim("obs"), dg.Dim("row", size=3), dg.Dim("col", size=3)
N = 12


def _index(rng, n):
    return rng.integers(0, n, N).astype(np.int64)


def crossed():
    """Crossed effects by two data indexers (`cell.isel(batch=b, machine=k)`), a zero-sum prior."""
    cell, log_s = dg.labeled("cell", dims=(BATCH, MACHINE)), dg.labeled("log_s", dims=())
    b, k = dg.labeled("b", dims=(OBS,), dtype="int64"), dg.labeled("k", dims=(OBS,), dtype="int64")
    y = dg.labeled("y", dims=(OBS,))
    centred = cell - cell.mean("batch") - cell.mean("machine") + cell.mean()
    cost = (
        dg.dist.normal(centred.isel(batch=b, machine=k), dg.exp(log_s)).logp(y).sum()
        + dg.dist.normal(0.0, 1.0).logp(cell).sum()
        + dg.dist.halfnormal(1.0).logp(dg.exp(log_s))
        + log_s
    )
    rng = np.random.default_rng(1)
    data = {"b": _index(rng, 4), "k": _index(rng, 3), "y": rng.normal(size=N)}
    return cost, [cell, log_s], [b, k, y], data


def walk():
    """A random walk by `cumsum`, read at two data indexers (`level.isel(series=s, time=t)`)."""
    level0, innovation = dg.labeled("level0", dims=(SERIES,)), dg.labeled("innovation", dims=(SERIES, TIME))
    log_sigma = dg.labeled("log_sigma", dims=())
    s, t = dg.labeled("s", dims=(OBS,), dtype="int64"), dg.labeled("t", dims=(OBS,), dtype="int64")
    y = dg.labeled("y", dims=(OBS,))
    level = level0 + dg.exp(log_sigma) * innovation.cumsum("time")
    cost = (
        dg.dist.normal(level.isel(series=s, time=t), 0.5).logp(y).sum()
        + dg.dist.normal(0.0, 1.0).logp(innovation).sum()
        + dg.dist.student_t(3.0, 0.0, 2.0).logp(level0).sum()
        + dg.dist.halfnormal(1.0).logp(dg.exp(log_sigma))
        + log_sigma
    )
    rng = np.random.default_rng(2)
    data = {"s": _index(rng, 3), "t": _index(rng, 6), "y": rng.normal(size=N)}
    return cost, [level0, innovation, log_sigma], [s, t, y], data


def loop_and_ifelse():
    """An AR(1) by `dg.scan` and a branch by `dg.ifelse`."""
    phi, x0 = dg.labeled("phi", dims=()), dg.labeled("x0", dims=())
    eps = dg.labeled("eps", dims=(TIME,))
    flag = dg.labeled("flag", dims=(), dtype="bool")
    states = dg.scan(lambda x, e: 0.5 * dg.tanh(phi) * x + e, x0, sequences=[eps], dim=TIME)
    path = states if not isinstance(states, (list, tuple)) else states[-1]
    cost = -(path**2).sum() + dg.ifelse(flag, -(phi**2), -(phi**4)) + dg.dist.normal(0.0, 1.0).logp(eps).sum()
    return cost, [phi, x0, eps], [flag], {"flag": np.array(True)}


def linalg():
    """Cholesky, a solve, a log determinant, `diagonal` and `dot` of a parameter-dependent matrix."""
    log_d, v = dg.labeled("log_d", dims=()), dg.labeled("v", dims=(ROW,))
    w = dg.labeled("w", dims=(ROW,))
    base = np.array([[2.0, 0.5, 0.1], [0.5, 1.5, 0.2], [0.1, 0.2, 1.0]])
    spd = dg.constant(base, dims=(ROW, COL)) + dg.exp(log_d) * dg.constant(np.eye(3), dims=(ROW, COL))
    chol = dg.linalg.cholesky(spd, dims=(ROW, COL))
    _, logdet = dg.linalg.slogdet(spd, dims=(ROW, COL))
    sol = dg.linalg.solve(spd, v, dims=(ROW, COL))
    cost = (
        -0.5 * dg.dot(sol.rename(col="row"), v)
        - 0.5 * logdet
        + dg.log(dg.linalg.diagonal(chol, dims=(ROW, COL))).sum()
        + dg.dot(v, w)
    )
    return cost, [log_d, v], [w], {"w": np.array([0.3, -0.2, 0.5])}


GRAPHS = {"crossed": crossed, "walk": walk, "loop_and_ifelse": loop_and_ifelse, "linalg": linalg}


def draws():
    """Random draws (normal, poisson) in a jitted graph, with the state's update."""
    state, mu = dg.rng_state("s"), dg.labeled("mu", dims=())
    s1, z = dg.dist.normal(mu, 2.0).draw(state, extra_dims=(dg.Dim("n", size=5),))
    s2, k = dg.dist.poisson(3.0).draw(s1, extra_dims=(dg.Dim("n", size=5),))
    f = dg.function([state, mu], [z, k, s2], backend="numba", jit_graph=True)
    z, k, s2 = f(dg.seed_state(3), 0.5)
    return {"z": np.asarray(z).tolist(), "k": np.asarray(k).tolist(), "state": f._compiled.tiers.state}


def point(size):
    """The parameter vector every process evaluates at."""
    return np.random.default_rng(0).normal(size=size) * 0.3


def _cfunc_values(fn, data, theta):
    c = fn.cfunc(**data)
    grad, logp = np.empty(fn.size), np.empty(1)
    ptr = ctypes.POINTER(ctypes.c_double)
    x = np.ascontiguousarray(theta)
    code = c.ctypes(fn.size, x.ctypes.data_as(ptr), grad.ctypes.data_as(ptr), logp.ctypes.data_as(ptr), c.data)
    return {"code": int(code), "value": float(logp[0]), "grad": grad.tolist(), "jitted": c.jitted}


def run(names):
    report = {}
    for name in names:
        cost, params, inputs, data = GRAPHS[name]()
        fn = dg.flat_value_and_grad(cost, params, inputs=inputs, backend="numba", jit_graph=True)
        theta = point(fn.size)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value, grad = fn(theta, **data)
            bound = fn.bind(**data)(theta)
            cf = _cfunc_values(fn, data, theta)
        tiers = fn.function._compiled.tiers
        report[name] = {
            "value": value,
            "grad": grad.tolist(),
            "bound": [bound[0], bound[1].tolist()],
            "cfunc": cf,
            "state": tiers.state,
            "warnings": [str(w.message) for w in caught],
        }
    report["draws"] = draws()
    return report


if __name__ == "__main__":
    print(json.dumps(run(sys.argv[1:] or list(GRAPHS))))
