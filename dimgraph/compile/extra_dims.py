"""Compiled labeled functions called with DataArrays that carry extra dims (`dg.function(..., map_extra_dims=True)`).

A labeled function is written over the dims of its inputs; a posterior adds
`chain` and `draw`. With `map_extra_dims=True` a call whose DataArrays carry
dims the inputs do not have maps the function over them: the first call with
a new set of extra dims (by input and name) builds the vectorized graph
(`dg.vectorize_graph`, one graph for the whole batch) and compiles it once;
later calls with the same names reuse it, whatever their sizes. Outputs carry
the extra dims first, in order of first appearance over the inputs, with the
coords the DataArrays give them.
"""

from __future__ import annotations

from dimgraph.errors import InputError


class MappedFunction:
    """A compiled labeled `Function` that maps itself over extra dims of its DataArray inputs."""

    def __init__(self, base, options):
        self._base = base
        self._options = options  # dg.function's keyword arguments, for the vectorized compiles
        self._mapped = {}  # ((input position, extra dim names), ...) -> (Function, batch dim names)
        self._core = {d.name for v in base.inputs + base.outputs if hasattr(v.type, "dims") for d in v.type.dims}

    def __getattr__(self, name):
        if name.startswith("__") or name in ("_base", "_options", "_mapped", "_core"):
            raise AttributeError(name)
        return getattr(self._base, name)

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
        from dimgraph.labeled.basic import is_dataarray

        base = self._base
        values = base._bind(args, kwargs)
        key = []
        for k, (var, value) in enumerate(zip(base.inputs, values)):
            if not is_dataarray(value) or not hasattr(var.type, "dims"):
                continue
            own = {d.name for d in var.type.dims}
            extra = tuple(str(n) for n in value.dims if str(n) not in own)
            if extra:
                clashing = [n for n in extra if n in self._core]
                if clashing:
                    raise InputError(
                        f"input {base._input_label(k)!r}: the extra dims {clashing} have the names of dims the "
                        "function computes with; rename them before the call"
                    )
                key.append((k, extra))
        if not key:
            return base(*values, ctx=ctx, trust_input=trust_input)
        key = tuple(key)
        found = self._mapped.get(key)
        if found is None:
            found = self._mapped[key] = self._build(key, values)
        return found(*values, ctx=ctx, trust_input=trust_input)

    def _build(self, key, values):
        from dimgraph.labeled.dims import Dim
        from dimgraph.labeled.type import LabeledType
        from dimgraph.labeled.vectorize import vectorize_graph

        base = self._base
        batch = {}
        replace, new_inputs = {}, list(base.inputs)
        for k, extra in key:
            var = base.inputs[k]
            dims = []
            for name in extra:
                dims.append(batch.setdefault(name, Dim(name)))  # no size: one compile serves every size
            new = LabeledType(var.type.dtype, tuple(dims) + tuple(var.type.dims)).make_variable(name=var.name)
            replace[var] = new
            new_inputs[k] = new
        outs = vectorize_graph(list(base.outputs), replace)
        order = list(batch)
        final = []
        for o in outs:
            first = [n for n in order if n in {d.name for d in o.type.dims}]
            rest = [d.name for d in o.type.dims if d.name not in batch]
            final.append(o.transpose(*first, *rest) if [d.name for d in o.type.dims] != first + rest else o)
        from dimgraph.compile.function import function

        return function(new_inputs, final if not base._single else final[0], **self._options)

    def __reduce__(self):
        """Pickles as the base function and its options; vectorized versions compile again when called."""
        return (MappedFunction, (self._base, self._options))
