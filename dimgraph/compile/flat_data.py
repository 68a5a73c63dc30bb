"""The data inputs of a flat function (`flat_value_and_grad`): what `fn(theta, **data)`, `fn.bind(**data)`
and `fn.cfunc(**data)` share on every backend.

Data are converted and checked as a call of the compiled function converts and checks
them (exact casts, dims order, the size and label checks), so a flat call that hands
arrays straight to the backend's entry refuses what the function would, with the same
messages. NumPy arrays already of the declared dtype and static sizes pass as they
are (and need no label checks); anything else is converted.
"""

from __future__ import annotations

import numpy as np

from dimgraph.compile.signature import fast_spec, labels_only
from dimgraph.errors import InputError

_MISSING = object()


class FlatData:
    """The data inputs `names` (with their input `specs`) of a function with signature `signature`, whose
    parameters' places in its checks are held by `stand_ins` (arrays of their static shapes)."""

    def __init__(self, names, specs, signature, stand_ins):
        self.names = list(names)
        self.specs = list(specs)
        self.signature = signature
        self.stand_ins = list(stand_ins)
        fast = [fast_spec(spec) for spec in self.specs]
        plain = not signature.shared and not signature.update_targets and None not in fast + self.names
        # per data input (name, spec, dtype, ndim, ((axis, static size), ...)) when calls may hand the data to
        # the backend's entry, else None (a function with shared variables: its own call checks them)
        self.fast = [(n, sp, *f) for n, sp, f in zip(self.names, self.specs, fast)] if plain else None
        self._checks = signature.checks
        self._size_checks = [c for c in signature.checks if not labels_only(c)]

    def arrays(self, data):
        """The data in input order, converted and checked (None when one is missing or unexpected, or calls
        cannot take the entry: the general path names what is wrong)."""
        if self.fast is None or len(data) != len(self.fast):
            return None
        arrays, converted = [], False
        for name, spec, dtype, ndim, static in self.fast:
            value = data.get(name, _MISSING)
            if value is _MISSING:
                return None
            exact = type(value) is np.ndarray and value.dtype == dtype and value.ndim == ndim
            if exact:
                shape = value.shape
                for a, n in static:
                    if shape[a] != n:
                        exact = False
                        break
            if not exact:
                value = spec.convert(value)
                converted = True
            arrays.append(value)
        checks = self._checks if converted else self._size_checks  # NumPy data pass the label checks
        if checks:
            every = self.stand_ins + arrays
            raw = [None] * len(self.stand_ins) + [data[name] for name in self.names]
            for check in checks:
                check(every, raw)
        return arrays

    def trusted(self, data):
        """The data in input order as given (`trust_input=True`), or None when one is missing or is not an
        array (the compiled function's trusted call puts a DataArray in dims order)."""
        if self.fast is None or len(data) != len(self.fast):
            return None
        arrays = []
        for name in self.names:
            value = data.get(name, _MISSING)
            if type(value) is not np.ndarray:
                return None
            arrays.append(value)
        return arrays

    def check_names(self, data, what):
        """An InputError, `what` ("bind", "cfunc") first, when `data` misses a data input or has another."""
        missing = [n for n in self.names if n not in data]
        unknown = sorted(set(data) - set(self.names))
        if missing or unknown:
            raise InputError(f"{what}: binds the data inputs {self.names}; missing {missing}, unexpected {unknown}")

    def name_index_error(self, data, arrays, err):
        """Raise the function's failure check naming the data input behind the entry's IndexError `err`."""
        raw = [None] * len(self.stand_ins) + [data[name] for name in self.names]
        self.signature.name_index_error(self.stand_ins + arrays, raw, err)
