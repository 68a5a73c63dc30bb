"""Checking one op's `L_op` against central finite differences, node by node.

`NodeVJP(key, backend, build, specs)` builds `build(*inputs)` (whose outputs
must all come from one node, and whose inputs must be the node's inputs),
asks that node's op for its vector-Jacobian product with symbolic cotangents
`w` (one per output), and compiles `inputs + w -> outputs + gradients of the
float inputs` once per (key, backend). `check(values, seed)` draws `w` and
directions `d` from `seed` and compares `<grad, d>` with the central
difference of `sum(w * y)` along `d`; the forward values for the differences
come from the python backend (the forward ops are checked against NumPy by
their own suites), the gradient from the backend under test.

Tolerance: the ops checked here are linear or bilinear in each input (cumprod
is a polynomial, zeros included), so the truncation error of a central
difference with EPS = 1e-6 is far below rounding; rounding in float64
contributes about 1e-16 * sum|w * y| / EPS. We accept
|fd - analytic| <= RTOL * |fd| + ATOL * (1 + sum|w * y| + sum|grad * d|).
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import given as _given

import dimgraph as dg

EPS = 1e-6
RTOL = 1e-6
ATOL = 1e-7

_CACHE = {}


def given(*args, **kwargs):
    """`hypothesis.given` for tests that also take the `backend` fixture (a plain string, safe to share
    between examples), on the loaded profile's settings."""

    def wrap(fn):
        checks = list(settings().suppress_health_check) + [HealthCheck.function_scoped_fixture]
        return settings(suppress_health_check=checks)(_given(*args, **kwargs)(fn))

    return wrap


def is_float(dtype):
    return np.dtype(dtype).kind in "fc"


class NodeVJP:
    """One compiled vector-Jacobian product of one node (see the module doc)."""

    def __new__(cls, key, backend, build, specs, no_gradient=()):
        cached = _CACHE.get((key, backend))
        if cached is not None:
            return cached
        self = super().__new__(cls)
        self._setup(backend, build, specs, set(no_gradient))
        _CACHE[(key, backend)] = self
        return self

    def _setup(self, backend, build, specs, no_gradient):
        xs = [dg.tensor(name, shape=shape, dtype=dtype) for name, shape, dtype in specs]
        outs = build(*xs)
        outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
        node = outs[0].owner
        assert node is not None and all(o.owner is node for o in outs), "build must return the outputs of one node"
        ws = [dg.tensor(f"w{k}", shape=o.type.shape, dtype=o.type.dtype) for k, o in enumerate(node.outputs)]
        grads = node.op.L_op(list(node.inputs), list(node.outputs), ws)
        assert len(grads) == len(node.inputs), (
            f"{node.op}: L_op gave {len(grads)} entries for {len(node.inputs)} inputs"
        )
        by_input = {id(v): g for v, g in zip(node.inputs, grads)}
        self.float_inputs, float_grads, self.no_gradient = [], [], []
        for k, x in enumerate(xs):
            if x.name in no_gradient:  # float inputs the op declares disconnected: the differences must be 0
                assert by_input.get(id(x)) is None, f"{node.op}: {x!r} got a gradient"
                self.no_gradient.append(k)
                continue
            if not is_float(x.type.dtype):  # index inputs may reach the node through other ops
                assert by_input.get(id(x)) is None, f"{node.op}: the integer input {x!r} got a gradient"
                continue
            assert id(x) in by_input, f"input {x!r} is not an input of {node.op} (build must not convert it)"
            g = by_input[id(x)]
            assert g is not None, f"{node.op}: no gradient for the float input {x!r}"
            assert g.type.dtype == x.type.dtype, f"{node.op}: gradient {g.type} for input {x.type}"
            assert g.type.ndim == x.type.ndim
            for s, t in zip(x.type.shape, g.type.shape):
                assert s is None or s == t, f"{node.op}: gradient static shape {g.type.shape} for input {x.type.shape}"
            self.float_inputs.append(k)
            float_grads.append(g)
        self.op = node.op
        self.n_out = len(node.outputs)
        self.grad_types = [g.type for g in float_grads]
        self.f = dg.function(xs + ws, list(node.outputs) + float_grads, backend=backend)
        self.forward = dg.function(xs, list(node.outputs), backend="python")

    def check(self, values, seed=0):
        """Gradients at `values` against central differences; returns the gradients for extra checks."""
        rng = np.random.default_rng(seed)
        values = [np.asarray(v) for v in values]
        ys = self.forward(*values)
        ws = [rng.normal(size=np.shape(y)) for y in ys]
        res = self.f(*values, *ws)
        for y, r in zip(ys, res[: self.n_out]):
            np.testing.assert_allclose(r, y, rtol=1e-12, atol=1e-12)
        grads = res[self.n_out :]
        scale = sum(float(np.sum(np.abs(w * y))) for w, y in zip(ws, ys))
        for k, g, t in zip(self.float_inputs, grads, self.grad_types):
            x = values[k]
            assert g.shape == x.shape and g.dtype == x.dtype, (self.op, k, g.shape, g.dtype, x.shape, x.dtype)
            assert all(s is None or s == n for s, n in zip(t.shape, g.shape)), (self.op, t.shape, g.shape)
            if x.size == 0:
                continue
            one_hot = np.zeros(x.shape)
            one_hot.flat[rng.integers(x.size)] = 1.0
            for d in (rng.normal(size=x.shape), one_hot):
                fd = self._fd(values, ws, k, d)
                an = float(np.sum(g * d))
                tol = RTOL * abs(fd) + ATOL * (1 + scale + float(np.sum(np.abs(g * d))))
                assert abs(fd - an) <= tol, f"{self.op}: input {k}: finite difference {fd!r} vs gradient {an!r}"
        for k in self.no_gradient:
            fd = self._fd(values, ws, k, rng.normal(size=values[k].shape))
            assert abs(fd) <= ATOL * (1 + scale), f"{self.op}: input {k} got no gradient but moves the cost ({fd!r})"
        return grads

    def _fd(self, values, ws, k, d):
        def cost(x):
            vals = list(values)
            vals[k] = x
            return sum(float(np.sum(w * y)) for w, y in zip(ws, self.forward(*vals)))

        x = values[k]
        return (cost(x + EPS * d) - cost(x - EPS * d)) / (2 * EPS)
