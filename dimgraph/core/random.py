"""Random draws as pure graph values: an RNG state type and the primitive draw op.

An RNG state is a value like any other: `RandomDraw` takes a state and returns
the next state with the draws, so nothing is hidden in global state and the
graph shows how states are threaded (a loop carries one as an ordinary state).

NOTE: the state is three uint64 words `[key0, key1, counter]` on every backend.
A draw reads the stream named by (key, counter) and returns the state with the
counter plus one, so a state used twice gives the same numbers twice, and the
next state is known without drawing. Each backend turns the words into its own
generator: NumPy's `Philox` (python), a Philox4x32-10 of our own (numba, c),
`jax.random` keys (jax). The same seed gives the same numbers on the same
backend; across backends only the distributions agree.

The primitives are the few draws that need an algorithm of their own
(uniform, normal, gamma, Poisson, binomial); every named distribution is a
graph of them (`dimgraph.prob`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dimgraph.core.basic import as_tensor, constant
from dimgraph.core.elemwise import DimShuffle
from dimgraph.core.graph import Apply, Constant, Op
from dimgraph.core.math import as_float, cast
from dimgraph.core.shape import shape_entry_as_variable, to_static
from dimgraph.core.type import TensorType
from dimgraph.core.variable import TensorVariable
from dimgraph.core.vectorize import pad
from dimgraph.errors import NonDifferentiable

STATE_WORDS = 3

# kind -> (number of parameters, output dtype)
PRIMITIVES = {
    "uniform": (0, "float64"),
    "normal": (0, "float64"),
    "gamma": (1, "float64"),
    "poisson": (1, "int64"),
    "binomial": (2, "int64"),
}


@dataclass(frozen=True)
class RNGStateType(TensorType):
    """The type of RNG states: three uint64 words (key, key, counter), see the module docstring."""

    dtype: str = "uint64"
    shape: tuple = (STATE_WORDS,)

    def make_variable(self, name=None):
        return TensorVariable(self, name=name)

    def is_super(self, other) -> bool:
        return isinstance(other, RNGStateType)

    def __str__(self):
        return "rng_state"


def is_rng_state(x) -> bool:
    return isinstance(getattr(x, "type", None), RNGStateType)


_draws_made = [0]


def draws_made() -> int:
    """How many draw nodes (positional or labeled) were made so far: a loop compares it before and after its step."""
    return _draws_made[0]


def mark_draw(node):
    """Number the draw node `node` (in `node.tag["draw"]`) and return it."""
    _draws_made[0] += 1
    node.tag["draw"] = _draws_made[0]
    return node


def seed_sequence(seed, what="seed") -> np.random.SeedSequence:
    """`seed` as a `numpy.random.SeedSequence`: a non-negative int (or a sequence of them), a SeedSequence, or None
    for fresh entropy; anything else is a TypeError / ValueError naming `what`, raised before any work."""
    if seed is None or isinstance(seed, np.random.SeedSequence):
        return seed if seed is not None else np.random.SeedSequence()
    try:
        return np.random.SeedSequence(seed)
    except (TypeError, ValueError) as err:
        raise type(err)(
            f"{what}: seed: expected a non-negative int, a sequence of them, a numpy SeedSequence or None, got {seed!r}"
        ) from None


def seed_state(seed=None) -> np.ndarray:
    """The state words for `seed` (an int, a `numpy.random.SeedSequence`, or None for fresh entropy).

    >>> import dimgraph as dg
    >>> s = dg.core.seed_state(42)
    >>> s.dtype.name, s.shape, int(s[2])
    ('uint64', (3,), 0)
    """
    key = seed_sequence(seed, "seed_state").generate_state(2, dtype=np.uint64)
    return np.array([key[0], key[1], 0], dtype=np.uint64)


def rng_state(name=None):
    """A symbolic RNG state input: give it `dg.core.seed_state(seed)` when calling.

    >>> import dimgraph as dg
    >>> s = dg.rng_state("s")
    >>> nxt, z = dg.core.random_draw("normal", s, size=(2,))
    >>> f = dg.function([s], [nxt, z], backend="python")
    >>> s1, draws = f(dg.core.seed_state(0))
    >>> s1.tolist()[2], draws.shape
    (1, (2,))
    """
    return RNGStateType().make_variable(name=name)


def next_state_words(state) -> np.ndarray:
    """The state after one draw from `state`: the counter plus one."""
    out = np.array(state, dtype=np.uint64, copy=True)
    out[2] += np.uint64(1)
    return out


def numpy_generator(state) -> np.random.Generator:
    """NumPy's Philox generator for the stream a state names (the python backend's bits)."""
    state = np.asarray(state, dtype=np.uint64)
    counter = np.array([0, 0, state[2], 0], dtype=np.uint64)
    return np.random.Generator(np.random.Philox(key=state[:2], counter=counter))


_NUMPY_SAMPLERS = {
    "uniform": lambda g, size: g.random(size),
    "normal": lambda g, size: g.standard_normal(size),
    "gamma": lambda g, size, a: g.standard_gamma(np.broadcast_to(a, size)),
    "poisson": lambda g, size, lam: g.poisson(np.broadcast_to(lam, size)),
    "binomial": lambda g, size, n, p: g.binomial(np.broadcast_to(n, size), np.broadcast_to(p, size)),
}


@dataclass(frozen=True)
class RandomDraw(Op):
    """Draws of a primitive distribution `kind` from an RNG state: `(state, *params, *size) -> (next state, draws)`.

    `params` have the draws' number of axes, stretched where their static size is 1
    (as Elemwise); `size` entries are 0-d int64 (constants where known). Parameters:
    uniform on [0, 1) and the standard normal take none, gamma its shape (scale 1),
    Poisson its rate, binomial (n, p). Invalid parameters give NaN (gamma) or -1
    (Poisson, binomial) draws on every backend.
    """

    kind: str

    def __post_init__(self):
        if self.kind not in PRIMITIVES:
            raise ValueError(f"RandomDraw: kind must be one of {sorted(PRIMITIVES)}, got {self.kind!r}")

    @property
    def nparams(self) -> int:
        return PRIMITIVES[self.kind][0]

    @property
    def dtype(self) -> str:
        return PRIMITIVES[self.kind][1]

    def make_node(self, state, *rest):
        if not is_rng_state(state):
            raise TypeError(f"{self}: the first input must be an RNG state (dg.rng_state), got {state!r}")
        if len(rest) < self.nparams:
            raise TypeError(f"{self}: takes {self.nparams} parameters, got {len(rest)} inputs after the state")
        params = [as_tensor(p) for p in rest[: self.nparams]]
        size = [
            as_tensor(constant(s, dtype="int64") if isinstance(s, (int, np.integer)) else s)
            for s in rest[self.nparams :]
        ]
        for s in size:
            if s.type.ndim != 0 or np.dtype(s.type.dtype).kind not in "iu":
                raise TypeError(f"{self}: size entries must be 0-d integers, got {s!r}")
        for p in params:
            if p.type.ndim != len(size):
                raise TypeError(f"{self}: parameter {p!r} must have {len(size)} axes (one per size entry)")
        inputs = [state, *params, *size]
        (_, shape) = self.infer_shape(inputs, None)
        for p in params:
            for k, (ps, s) in enumerate(zip(p.type.shape, shape)):
                s = to_static(s)
                if ps is not None and ps != 1 and s is not None and ps != s:
                    raise ValueError(f"{self}: parameter {p!r} has size {ps} on axis {k}, the draws {s}")
        return mark_draw(
            Apply(self, inputs, [RNGStateType(), TensorType(self.dtype, tuple(to_static(s) for s in shape))])
        )

    def infer_shape(self, inputs, input_shapes):
        size = inputs[1 + self.nparams :]
        return [(STATE_WORDS,), tuple(int(s.data) if isinstance(s, Constant) else s for s in size)]

    def perform(self, node, inputs):
        state, rest = inputs[0], inputs[1:]
        params, size = rest[: self.nparams], tuple(int(s) for s in rest[self.nparams :])
        with np.errstate(invalid="ignore"):
            draws = _numpy_draw(self.kind, numpy_generator(state), size, params)
        return [next_state_words(state), np.asarray(draws, dtype=self.dtype)]

    def L_op(self, inputs, outputs, output_grads):
        """No gradient flows into a state or a count; a gamma draw's shape has no reparameterization here."""
        if self.kind == "gamma" and output_grads[1] is not None:
            raise NonDifferentiable(f"{self}: the gradient of gamma draws w.r.t. their shape is not implemented")
        return [None] * len(inputs)

    def __str__(self):
        return f"RandomDraw{{{self.kind}}}"


def draw_over_batch(node, inputs, batch):
    """The outputs of the draw `node` with leading batch axes of sizes `batch`: fresh numbers for every batch
    element, from its one state (what `dg.function(..., map_extra_dims=True)` gives each (chain, draw), as
    separate calls would). `inputs` are the node's new inputs, parameters with some leading batch axes or
    none; None for a node that is not a draw.
    """
    if not isinstance(node.op, RandomDraw):
        return None
    op, (state, *rest) = node.op, inputs
    if state.type.ndim != 1 or any(s.type.ndim for s in rest[op.nparams :]):
        raise ValueError(f"{op}: a batch of RNG states or of draw sizes cannot be mapped over")
    params = [pad(p, len(batch) + q.type.ndim - p.type.ndim) for p, q in zip(rest[: op.nparams], node.inputs[1:])]
    return list(RandomDraw(op.kind)(state, *params, *[shape_entry_as_variable(b) for b in batch], *rest[op.nparams :]))


def _numpy_draw(kind, gen, size, params):
    """NumPy's sampler, with invalid parameters giving NaN / -1 as the other backends do."""
    if kind == "gamma":
        (a,) = params
        bad = ~(np.broadcast_to(a, size) > 0)
        draws = _NUMPY_SAMPLERS[kind](gen, size, np.where(bad, 1.0, a))
        return np.where(bad, np.nan, draws)
    if kind == "poisson":
        (lam,) = params
        bad = ~((np.broadcast_to(lam, size) >= 0) & (lam < 1e18))
        return np.where(bad, -1, _NUMPY_SAMPLERS[kind](gen, size, np.where(bad, 0.0, lam)))
    if kind == "binomial":
        n, p = (np.broadcast_to(v, size) for v in params)
        bad = ~((n >= 0) & (p >= 0) & (p <= 1))
        return np.where(bad, -1, _NUMPY_SAMPLERS[kind](gen, size, np.where(bad, 0, n), np.where(bad, 0.5, p)))
    return _NUMPY_SAMPLERS[kind](gen, size)


def random_draw(kind, state, *params, size=()):
    """`(next state, draws)` of primitive `kind` with `size` (params broadcast to it by NumPy's rules).

    >>> import dimgraph as dg, numpy as np
    >>> s = dg.rng_state("s")
    >>> nxt, k = dg.core.random_draw("poisson", s, np.full(3, 4.0), size=(3,))
    >>> k.type
    TensorType(dtype='int64', shape=(3,))
    """
    size = tuple(size)
    prepared = []
    for p in params:
        p = as_tensor(p)
        if p.type.ndim > len(size):
            raise ValueError(f"random_draw {kind}: parameter {p!r} has more axes than size {size}")
        new_axes = len(size) - p.type.ndim  # NumPy broadcasting: length-1 axes in front
        if new_axes:
            p = DimShuffle(p.type.ndim, ("x",) * new_axes + tuple(range(p.type.ndim)))(p)
        prepared.append(p)
    if kind in ("gamma", "poisson"):
        prepared = [as_float(p) for p in prepared]
    if kind == "binomial":
        prepared = [cast(prepared[0], "int64"), as_float(prepared[1])]
    return RandomDraw(kind)(state, *prepared, *size)
