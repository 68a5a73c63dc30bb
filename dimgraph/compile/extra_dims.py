"""Compiled labeled functions called with DataArrays that carry extra dims (`dg.function(..., map_extra_dims=True)`).

A labeled function is written over the dims of its inputs; a posterior adds
`chain` and `draw`. With `map_extra_dims=True` a call whose DataArrays carry
dims the inputs do not have maps the function over them: the first call with
a new set of extra dims (by input and name) builds the vectorized graph
(the lowered graph through `vectorize_graph`, one graph for the whole batch) and compiles it once;
later calls with the same names reuse it, whatever their sizes. Outputs carry
the extra dims first, in order of first appearance over the inputs, with the
coords the DataArrays give them. Random draws are made anew for every element
of the extra dims (a posterior predictive), as separate calls would.
"""

from __future__ import annotations

from dimgraph.compile.chunked import is_lazy, lazy_call
from dimgraph.compile.random import default_updates
from dimgraph.compile.signature import Signature
from dimgraph.core.io import TensorInput
from dimgraph.core.loop import loop_draws_over_batch
from dimgraph.core.random import draw_over_batch
from dimgraph.core.shape import ShapeI, static_or_symbolic
from dimgraph.core.shape_ops import broadcast_to
from dimgraph.core.vectorize import pad, vectorize_graph
from dimgraph.errors import InputError
from dimgraph.labeled.basic import from_positional, is_dataarray
from dimgraph.labeled.dims import Dim
from dimgraph.labeled.io import LabeledInput
from dimgraph.labeled.ops import ToPositional
from dimgraph.labeled.twins import positional_twin
from dimgraph.labeled.type import LabeledType
from dimgraph.labeled.vectorize import _to_batched_positional
from dimgraph.lower import lower


class MappedFunction:
    """A compiled labeled `Function` that maps itself over extra dims of its DataArray inputs.

    Each set of extra dims compiles its vectorized graph once; the function itself (no extra
    dims) compiles only when a call without any, or an attribute of the compiled function
    (`source`, `timings`, ...), asks for it, so a function only ever mapped over (chain, draw)
    compiles once.
    """

    _OWN = ("inputs", "outputs", "_single", "_options", "_compile", "_compiled_base", "_binding", "_mapped", "_core")

    def __init__(self, inputs, outputs, single, options, compile):
        self.inputs, self.outputs, self._single = list(inputs), list(outputs), single
        self._options = options  # dg.function's keyword arguments, for the compiles
        self._compile = compile  # dg.function, which compiles them
        self._compiled_base = None
        labels = [v.name or f"input {k}" for k, v in enumerate(self.inputs)]
        specs = [
            LabeledInput(n, v.type) if hasattr(v.type, "dims") else TensorInput(n, v.type)
            for n, v in zip(labels, self.inputs)
        ]
        self._binding = Signature.of(self.inputs, specs, (), (), single=single)  # binds a call's values to the inputs
        self._mapped = {}  # ((input position, extra dim names), ...) -> (Function, batch dim names)
        self._core = {d.name for v in self.inputs + self.outputs if hasattr(v.type, "dims") for d in v.type.dims}

    @property
    def _base(self):
        """The function itself, without extra dims (compiled at the first need)."""
        if self._compiled_base is None:
            self._compiled_base = self._compile(
                self.inputs, self.outputs[0] if self._single else self.outputs, **self._options
            )
        return self._compiled_base

    def __getattr__(self, name):
        if name.startswith("__") or name in self._OWN:
            raise AttributeError(name)
        return getattr(self._base, name)

    def __repr__(self):
        return f"{repr(self._base)[:-1]}, mapped over extra dims>"

    @property
    def compiled_extra_dims(self):
        """The sets of extra dims this function has been compiled for."""
        return list(self._mapped)

    def __call__(self, *args, ctx=None, trust_input=False, **kwargs):
        """Run on data; DataArrays with extra dims run the vectorized function for those dims.

        >>> import dimgraph as dg, numpy as np, xarray as xr
        >>> obs = dg.Dim("obs", size=3)
        >>> mu = dg.labeled("mu", dims=())
        >>> f = dg.function([mu], dg.arange(obs) * mu, map_extra_dims=True)
        >>> f(xr.DataArray([1.0, 2.0], dims="draw")).dims
        ('draw', 'obs')
        """
        binding = self._binding
        values = binding.bind(args, kwargs)
        if any(is_lazy(v) for v in values):
            return lazy_call(self, values, ctx)
        key = []
        for k, (var, value) in enumerate(zip(self.inputs, values)):
            if not is_dataarray(value) or not hasattr(var.type, "dims"):
                continue
            own = {d.name for d in var.type.dims}
            extra = tuple(str(n) for n in value.dims if str(n) not in own)
            if extra:
                clashing = [n for n in extra if n in self._core]
                if clashing:
                    raise InputError(
                        f"input {binding.label(k)!r}: the extra dims {clashing} have the names of dims the "
                        "function computes with; rename them before the call"
                    )
                key.append((k, extra))
        if not key:
            return self._base(*values, ctx=ctx, trust_input=trust_input)
        key = tuple(key)
        found = self._mapped.get(key)
        if found is None:
            found = self._mapped[key] = self._build(key, values)
        return found(*values, ctx=ctx, trust_input=trust_input)

    def _build(self, key, values):
        """The base graph, lowered, vectorized positionally with every extra dim first, read back with dims.

        Vectorizing the lowered graph (not the labeled one) keeps the batch axes
        leading through every op, so gathers and reductions of one draw stay
        contiguous runs (`dimgraph.core.vectorize`).
        """
        batch = {}
        new_inputs = list(self.inputs)
        for k, extra in key:
            var = self.inputs[k]
            dims = tuple(batch.setdefault(name, Dim(name)) for name in extra)  # no size: one compile serves every size
            new_inputs[k] = LabeledType(var.type.dtype, dims + tuple(var.type.dims)).make_variable(name=var.name)
        order = tuple(batch.values())
        sizes, replace = {}, {}
        for k, extra in key:
            var, new = self.inputs[k], new_inputs[k]
            present = tuple(d for d in order if d in new.type.dims)
            for ax, d in enumerate(present):
                sizes.setdefault(d, ShapeI(ax)(ToPositional(present + tuple(var.type.dims))(new)))
            replace[positional_twin(var)] = _to_batched_positional(new, var.type.dims, order)
        # the streams' next states go through the same vectorizing: theirs read the draws' parameters and sizes
        explicit = dict(self._options.get("updates") or {})
        streams = default_updates(self.outputs, explicit)
        lowered = lower(list(self.outputs) + list(streams.values()), inputs=self.inputs)
        outputs = []
        batch_sizes = [sizes[d] for d in order]

        def fresh_draws(node, ins):  # each element draws anew, in loops too
            found = draw_over_batch(node, ins, batch_sizes)
            return found if found is not None else loop_draws_over_batch(node, ins, batch_sizes)

        vectorized = vectorize_graph(lowered, replace, node_rule=fresh_draws)
        options = dict(self._options, updates={**explicit, **dict(zip(streams, vectorized[len(self.outputs) :]))})
        for out, low in zip(self.outputs, vectorized):
            if low.type.ndim == out.type.ndim:  # an output of no extra dim gets them all, as apply_ufunc's
                low = pad(low, len(order))
            # every extra dim leads; one the output did not depend on is broadcast along
            nb, shape = len(order), static_or_symbolic(low)
            low = broadcast_to(
                low, tuple(sizes[d] if low.type.shape[a] == 1 else shape[a] for a, d in enumerate(order)) + shape[nb:]
            )
            mapped = from_positional(low, order + tuple(out.type.dims))
            mapped.name = out.name  # the output DataArray's (and Dataset variable's) name
            outputs.append(mapped)
        return self._compile(new_inputs, outputs[0] if self._single else outputs, **options)

    def __reduce__(self):
        """Pickles as its graph and options; the functions compile again when called."""
        return (MappedFunction, (self.inputs, self.outputs, self._single, self._options, self._compile))
