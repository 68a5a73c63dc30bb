"""The compiled-function boundary: what a call passes in and what it gets back.

A `Signature` is built once per compile from what lowering gives (`dimgraph.lower.lower_io`:
one spec per input and output, the checks of the data against the graph's dims and
coords) and what `dg.function` was asked (one output returned bare, a Dataset out,
the shared variables read and updated). It is a value: the warm-start record stores
it, and a `Function` reads nothing else about its inputs and outputs. A call goes

    bind (by position, by name, from a Dataset) -> convert (exact casts, dims order)
    -> check (sizes, coords, before any work) -> the backend's run -> wrap (DataArrays,
    a Dataset).

The specs themselves live with the layer that knows them: `core.io.TensorInput` and
`TensorOutput` for positional data, `labeled.io.LabeledInput` for DataArrays in,
`lower.io.LabeledOutput` for DataArrays out (it knows the coords lowering derived).

>>> import dimgraph as dg, numpy as np
>>> t = dg.Dim("t", size=2)
>>> x = dg.labeled("x", dims=(t,))
>>> f = dg.function([x], x.sum("t"), backend="python")
>>> f.signature.names, f.signature.single, f.signature.bind((), {"x": np.ones(2)})[0].tolist()
(('x',), True, [1.0, 1.0])
"""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from dimgraph.core.io import TensorInput, TensorOutput
from dimgraph.errors import InputError
from dimgraph.labeled.ops import is_labeled


@dataclasses.dataclass(frozen=True, eq=False)
class Signature:
    """The inputs and outputs of a compiled function, and how data crosses into and out of it."""

    names: tuple  # each input's name (None: given by position only)
    inputs: tuple  # each input's spec: `convert(value)` (checked, exact cast) and `trusted(value)`
    outputs: tuple  # each output's spec: `wrap(array, raw inputs)`
    checks: tuple  # `check(arrays, raw, ctx)`, run on every call before any work
    failure_checks: tuple  # run when the backend raises IndexError, to name the input at fault (labeled indexers)
    shared: tuple = ()  # shared variables the graph reads, passed after the inputs
    update_targets: tuple = ()  # storage keys of the shared variables the call updates, in the graph's output order
    single: bool = False  # one output, returned bare rather than in a list
    dataset: tuple | None = None  # output="dataset": the outputs' names in the Dataset

    @classmethod
    def of(cls, inputs, in_specs, out_specs, checks, *, single=False, dataset=None, shared=(), updates=()):
        """The signature of a function of the graph variables `inputs` (for their names) with the lowering's specs
        and checks; `updates` are the shared variables updated, in the graph's order."""
        checks = tuple(checks)
        return cls(
            names=tuple(v.name or None for v in inputs),
            inputs=tuple(in_specs),
            outputs=tuple(out_specs),
            checks=tuple(c for c in checks if not getattr(c, "on_failure", False)),
            failure_checks=tuple(c for c in checks if getattr(c, "on_failure", False)),
            shared=tuple(shared),
            update_targets=tuple(t.storage_key for t in updates),
            single=single,
            dataset=None if dataset is None else tuple(dataset),
        )

    def returning(self, *, single, dataset=None) -> Signature:
        """This signature for a call that returns its outputs as asked (a warm start reuses the stored one)."""
        return dataclasses.replace(self, single=single, dataset=None if dataset is None else tuple(dataset))

    @property
    def n_updates(self) -> int:
        return len(self.update_targets)

    # --- in ---------------------------------------------------------------------------------------

    def label(self, k) -> str:
        """How messages name input `k`."""
        return self.names[k] or f"input {k}"

    def labels(self) -> list:
        return [self.label(k) for k in range(len(self.names))]

    @functools.cached_property
    def _positions(self) -> dict:
        return {name: k for k, name in enumerate(self.names) if name}

    def bind(self, args, kwargs) -> list:
        """The call's values in input order, from positions, names, or a Dataset given first."""
        if args and is_dataset(args[0]):
            args, kwargs = (), self._from_dataset(args[0], args[1:], kwargs)
        n = len(self.names)
        if len(args) > n:
            raise InputError(f"function takes {n} inputs {self.labels()}, got {len(args)} positional values")
        values = list(args) + [_MISSING] * (n - len(args))
        for key, value in kwargs.items():
            k = self._positions.get(key)
            if k is None:
                raise InputError(f"unexpected input {key!r}; the inputs are {self.labels()}")
            if values[k] is not _MISSING:
                raise InputError(f"input {key!r} given twice (by position and by name)")
            values[k] = value
        missing = [self.label(k) for k, v in enumerate(values) if v is _MISSING]
        if missing:
            raise InputError(f"missing inputs {missing}; the inputs are {self.labels()}")
        return values

    def _from_dataset(self, ds, rest, kwargs) -> dict:
        """Keyword arguments with the labeled inputs taken from `ds` by name (its other variables are ignored:
        a model's data usually holds more than one function reads)."""
        if rest:
            raise InputError(
                f"a Dataset fills the inputs by data-variable name; give the other inputs by keyword, "
                f"got {len(rest)} more positional values"
            )
        kwargs = dict(kwargs)
        for name, spec in zip(self.names, self.inputs):
            if is_labeled(spec) and name in ds.data_vars:
                if name in kwargs:
                    raise InputError(f"input {name!r} given twice (as a Dataset variable and by keyword)")
                kwargs[name] = ds[name]
        return kwargs

    def convert(self, raw) -> list:
        """Each value as its input's array (exact casts, labeled data in dims order), or an InputError naming it."""
        return [spec.convert(v) for spec, v in zip(self.inputs, raw)]

    def trusted(self, raw) -> list:
        """Each value as its input's array without checks (`trust_input=True`)."""
        return [spec.trusted(v) for spec, v in zip(self.inputs, raw)]

    def check(self, arrays, raw, ctx):
        """Every size and label check of the data, before any work."""
        for check in self.checks:
            check(arrays, raw, ctx)

    def name_index_error(self, arrays, raw, err):
        """Raise the failure check that names the input behind the backend's IndexError `err`, if one does."""
        for check in self.failure_checks:
            try:
                check(arrays, raw)
            except IndexError as named:
                raise named from err

    def fast_specs(self):
        """Per input (dtype, ndim, ((axis, static size), ...)) when calls may skip binding, contexts and
        conversions of exact arrays (no shared variables, no updates, no Dataset out, checks that read
        only DataArrays' labels), else None."""
        specs = tuple(fast_spec(s) for s in self.inputs)
        plain = not self.shared and not self.update_targets and self.dataset is None and None not in specs
        return specs if plain and all(labels_only(c) for c in self.checks) else None

    # --- out --------------------------------------------------------------------------------------

    def wrap(self, results, raw) -> list:
        """The outputs of the backend's results (its first len(outputs)), wrapped by their specs."""
        return [spec.wrap(r, raw) for spec, r in zip(self.outputs, results)]

    def returned(self, outs):
        """What a call returns: a Dataset (output="dataset"), the one output bare, or the list."""
        if self.dataset is not None:
            return to_dataset(self.dataset, outs)
        return outs[0] if self.single else outs

    def fast_wrapper(self):
        """`wrap(out, raw)` for the backend's fast entry (a bare array, or a tuple for several outputs),
        or None when its result is the call's (one positional output, returned bare)."""
        if not all(type(s) is TensorOutput for s in self.outputs):
            return self._wrap_fast
        if len(self.outputs) != 1:
            return _listed_all
        return None if self.single else _listed

    def _wrap_fast(self, out, raw):
        return self.returned(self.wrap([out] if len(self.outputs) == 1 else out, raw))


_MISSING = object()


def fast_spec(spec):
    """(dtype, ndim, ((axis, static size), ...)) of a positional or labeled input spec, else None."""
    if type(spec) is TensorInput:
        shape = spec.type.shape
    elif is_labeled(spec) and hasattr(spec, "trusted"):  # a labeled input: NumPy data in dims order
        shape = tuple(d.size for d in spec.type.dims)
    else:
        return None
    return np.dtype(spec.type.dtype), len(shape), tuple((a, n) for a, n in enumerate(shape) if n is not None)


def labels_only(check) -> bool:
    """Whether `check` reads only DataArrays' labels (NumPy data always passes it)."""
    return getattr(check, "labels_only", False)


def _listed(out, raw):
    return [out]


def _listed_all(out, raw):
    return list(out)


# --- Datasets -----------------------------------------------------------------------------------


def is_dataset(x) -> bool:
    return type(x).__name__ == "Dataset" and hasattr(x, "data_vars")


def dataset_names(outputs) -> list:
    """The Dataset variable name of each output (output="dataset"); a TypeError before compiling when one
    cannot be one."""
    names = []
    for k, o in enumerate(outputs):
        if not o.name:
            raise TypeError(
                f'output="dataset": output {k} ({o!r}) has no name; name it with .rename("name") or, positional, .name = "name"'
            )
        if not is_labeled(o) and o.type.ndim:
            raise TypeError(
                f'output="dataset": output {o.name!r} is positional with {o.type.ndim} axes, so it has no dims; '
                "give it dims with dg.from_positional(t, dims)"
            )
        if o.name in names:
            raise TypeError(f'output="dataset": two outputs are named {o.name!r}')
        names.append(o.name)
    return names


def to_dataset(names, values):
    """One Dataset of the outputs (DataArrays, or 0-d arrays) under their names."""
    import xarray as xr

    return xr.Dataset({n: v if hasattr(v, "dims") else ((), v) for n, v in zip(names, values)})
