"""Compiled functions called with dask-backed DataArrays: lazy DataArrays out, one task per chunk.

The rule (`docs/api.md`, "Dask"):
- Extra dims (those a `map_extra_dims=True` function maps over: `chain`, `draw`,
  a `time` the graph does not name) keep their chunks; every output gets them
  first, chunked alike, and each task runs the compiled function on one block.
- The dims the function computes with (its inputs' own dims: reduced, looped,
  indexed along) must be whole in each task: inputs chunked along one are
  rechunked to one chunk with a `ChunkWarning` naming the input and the dim.
  To split such a dim, leave it out of the function's inputs and map over it.
- Random draws are made per element of the extra dims, each element from its
  own stream keyed by the call's RNG state and the element's position in the
  whole array, so the draws are independent and the same whatever the
  chunking. The call advances the context's RNG states once, as an eager call
  does; functions that update other shared variables are refused (their new
  values would depend on computing).
- Output dims, dtypes and coords come from running the function on empty
  extra dims (no data is read) or, with no extra dims, on zeros shaped like
  the inputs.
"""

from __future__ import annotations

import operator
import sys
import warnings

import numpy as np

from dimgraph.core.random import RNGStateType, seed_state
from dimgraph.core.shared import DEFAULT_CONTEXT, SharedContext
from dimgraph.errors import InputError
from dimgraph.labeled.basic import is_dataarray


class ChunkWarning(UserWarning):
    """A dask input chunked along a dim the function computes with was rechunked to one chunk along it."""


def is_lazy(value) -> bool:
    """True for a dask array or a DataArray holding one (dask is never imported here to find out)."""
    dask_array = sys.modules.get("dask.array")
    if dask_array is None or isinstance(value, (np.ndarray, np.generic)):  # a NumPy value's .data is a buffer,
        return False  # which NumPy refuses to make for dates, time deltas and objects (a ValueError, not an answer)
    return isinstance(value, dask_array.Array) or isinstance(getattr(value, "data", None), dask_array.Array)


def lazy_call(fn, values, ctx):
    """`fn(*values)` as lazy DataArrays (or dask arrays for positional outputs): see the module docstring."""
    import dask.array as da

    ctx = ctx or DEFAULT_CONTEXT
    base = getattr(fn, "_base", fn)
    plan = _Plan(base, values)
    streams = [s for s in base.signature.shared if _is_rng(s)]
    if len(streams) != len(base.signature.shared) or base.signature.n_updates > len(streams):
        raise InputError(
            "a function that updates shared variables cannot be called with dask-backed inputs (the new values "
            "would exist only after computing); call .compute() on the inputs or drop the updates"
        )
    with ctx.lock:  # the states this call starts from, and their one advance, as an eager call under threads
        meta_ctx = _copy_of(ctx, streams)
        meta = _as_list(fn(*plan.meta_values(), ctx=meta_ctx), base)
        start = {s: np.asarray(ctx.get(s)).copy() for s in streams}
        for s in streams:
            ctx._values[s] = meta_ctx.get(s)
    n_extra = len(plan.extra)
    kernel = _Block(fn, plan, meta, start)
    args = []
    for k in plan.lazy:
        args += [plan.arrays[k], plan.letters[k]]
    out_letters = tuple(plan.letter_of[n] for n in plan.extra)
    if streams:  # each task learns where its block lies: the global positions along every extra dim
        for n in plan.extra:
            args += [da.arange(plan.sizes[n], chunks=(plan.chunks[n],)), (plan.letter_of[n],)]
    packed = da.blockwise(
        kernel,
        out_letters,
        *args,
        concatenate=True,
        align_arrays=False,
        meta=np.empty((0,) * n_extra, dtype=object),
        name="dimgraph-" + (base.outputs[0].name or "call"),
    )
    results = []
    for j, m in enumerate(meta):
        core = np.shape(m)[n_extra:]
        chunks = tuple(plan.chunks[n] for n in plan.extra) + tuple((n,) for n in core)
        lazy = da.map_blocks(
            operator.getitem,
            packed,
            j,
            chunks=chunks,
            dtype=m.dtype,
            new_axis=list(range(n_extra, n_extra + len(core))) or None,
            meta=np.empty((0,) * len(chunks), m.dtype),
        )
        results.append(_like(m, lazy, plan))
    return results[0] if base.signature.single else results


def _is_rng(var) -> bool:
    return isinstance(var.type, RNGStateType)


def _copy_of(ctx, streams):
    """A context holding `ctx`'s current RNG states, for a call that must not advance `ctx` itself."""
    return _context({s: np.asarray(ctx.get(s)).copy() for s in streams})


def _as_list(out, base):
    return [out] if base.signature.single else list(out)


def _like(meta, lazy, plan):
    """The lazy array with the meta output's dims, name and coords, and the extra dims' coords of the inputs."""
    import xarray as xr

    if not isinstance(meta, xr.DataArray):
        return lazy
    coords = {n: c for n, c in meta.coords.items() if not set(c.dims) & set(plan.extra)}
    for name in plan.extra:
        if name in plan.coords:
            coords[name] = plan.coords[name]
    out = xr.DataArray(lazy, dims=meta.dims, coords=coords, attrs=meta.attrs)
    out.name = meta.name  # not the dask array's task name, which xarray takes for a missing one
    return out


class _Plan:
    """Which inputs are lazy, their extra dims (in the order the mapped function puts them), letters and chunks."""

    def __init__(self, base, values):
        import dask.array as da

        self.values = list(values)
        self.lazy, self.arrays, self.letters, self.dims, self.core_coords = [], {}, {}, {}, {}
        self.extra, self.sizes, self.coords, self.letter_of = [], {}, {}, {}
        for k, (var, value) in enumerate(zip(base.inputs, values)):
            if not is_dataarray(value):
                if is_lazy(value):  # a bare dask array for a positional input: one whole block
                    self.lazy.append(k)
                    self.dims[k] = tuple(f"{_input(base, k)}/axis{a}" for a in range(value.ndim))
                    self.arrays[k] = value.rechunk(-1)
                continue
            own = {d.name for d in getattr(var.type, "dims", ())}
            if not hasattr(var.type, "dims"):
                own = {str(n) for n in value.dims}
            dims = tuple(str(n) for n in value.dims)
            for n, size in zip(dims, value.shape):
                if n in own:
                    continue
                if n not in self.sizes:
                    self.extra.append(n)
                    self.sizes[n] = size
                elif self.sizes[n] != size:
                    raise InputError(
                        f"input {_input(base, k)!r}: extra dim {n!r} has length {size}, another input has {self.sizes[n]}"
                    )
                if n in value.indexes and n not in self.coords:
                    self.coords[n] = value.indexes[n]
            self.lazy.append(k)
            self.dims[k] = dims
            self.core_coords[k] = {n: value.coords[n].values for n in dims if n in own and n in value.indexes}
            data = value.data if is_lazy(value) else da.from_array(np.asarray(value.data), chunks=-1)
            whole = {a: -1 for a, n in enumerate(dims) if n in own}
            split = [n for a, n in enumerate(dims) if n in own and len(data.chunks[a]) > 1]
            if split:
                warnings.warn(
                    f"input {_input(base, k)!r} is chunked along {split}, which the function computes with; rechunked "
                    f"to one chunk along {'it' if len(split) == 1 else 'them'} (to split a dim, leave it out of the "
                    "function's inputs and compile with map_extra_dims=True)",
                    ChunkWarning,
                    stacklevel=4,
                )
            self.arrays[k] = data.rechunk(whole) if whole else data
        letters = iter(_letters())
        for n in self.extra:
            self.letter_of[n] = next(letters)
        for k in self.lazy:
            self.letters[k] = tuple(self.letter_of[n] if n in self.letter_of else next(letters) for n in self.dims[k])
        if self.extra:  # one chunking per extra dim: the finest boundaries of all inputs
            _, arrays = da.core.unify_chunks(*[x for k in self.lazy for x in (self.arrays[k], self.letters[k])])
            for k, array in zip(self.lazy, arrays):
                self.arrays[k] = array
        self.chunks = {}
        for k in self.lazy:
            for n, c in zip(self.dims[k], self.arrays[k].chunks):
                if n in self.letter_of:
                    self.chunks[n] = c

    def meta_values(self):
        """The inputs with every extra dim empty (or, with none, zeros of the inputs' shapes), for the output types."""
        import xarray as xr

        values = list(self.values)
        for k in self.lazy:
            array = self.arrays[k]
            shape = tuple(0 if n in self.letter_of else s for n, s in zip(self.dims[k], array.shape))
            zeros = np.zeros(shape, dtype=array.dtype)
            values[k] = (
                xr.DataArray(zeros, dims=self.dims[k], coords=self.core_coords[k]) if k in self.core_coords else zeros
            )
        return values


def _input(base, k):
    return base.inputs[k].name or f"input {k}"


def _letters():
    """Index names for `dask.array.blockwise`: any hashable works; short strings keep graphs readable."""
    k = 0
    while True:
        yield f"i{k}"
        k += 1


class _Block:
    """One task: the compiled function on one block; returns every output's values (extra dims first)."""

    def __init__(self, fn, plan, meta, start):
        self.fn, self.start = fn, start
        self.lazy = plan.lazy
        self.values = [None if k in plan.lazy else v for k, v in enumerate(plan.values)]
        self.dims = {k: plan.dims[k] for k in plan.lazy}
        self.core_coords = plan.core_coords
        self.extra = tuple(plan.extra)
        self.order = [tuple(getattr(m, "dims", ())) for m in meta]
        self.empty = [(np.shape(m)[len(plan.extra) :], np.asarray(m).dtype) for m in meta]
        self.base = getattr(fn, "_base", fn)

    def __call__(self, *blocks):
        import xarray as xr

        values = list(self.values)
        for k, block in zip(self.lazy, blocks):
            values[k] = (
                xr.DataArray(block, dims=self.dims[k], coords=self.core_coords.get(k))
                if k in self.core_coords
                else block
            )
        if not self.start:
            return tuple(self._ordered(_as_list(self.fn(*values), self.base)))
        return self._drawn(values, blocks[len(self.lazy) :])

    def _ordered(self, outs):
        import xarray as xr

        return [
            np.asarray(o.transpose(*dims).data) if isinstance(o, xr.DataArray) else np.asarray(o)
            for o, dims in zip(outs, self.order)
        ]

    def _drawn(self, values, positions):
        """Element by element over the extra dims, each element's draws from its own stream (chunking-invariant)."""
        shape = tuple(len(p) for p in positions)
        outs = [np.empty(shape + core, dtype=dtype) for core, dtype in self.empty]
        for local in np.ndindex(*shape):
            position = [int(p[i]) for p, i in zip(positions, local)]
            element = [self._element(v, k, local) for k, v in enumerate(values)]
            ctx = _context(
                {s: seed_state(np.random.SeedSequence([*map(int, w), *position])) for s, w in self.start.items()}
            )
            results = _as_list(self.base(*element, ctx=ctx), self.base)
            for out, r, dims in zip(outs, results, self.order):
                core = dims[len(self.extra) :]
                out[local] = np.asarray(r.transpose(*core).data) if hasattr(r, "transpose") and core else np.asarray(r)
        return tuple(outs)

    def _element(self, value, k, local):
        import xarray as xr

        if k not in self.dims or not isinstance(value, xr.DataArray):
            return value
        pick = {n: i for n, i in zip(self.extra, local) if n in value.dims}
        return value.isel(pick) if pick else value


def _context(values):
    """A context holding just `values` (RNG states), so a call reads and advances nothing else."""
    ctx = SharedContext()
    ctx.seed_sequence = None
    ctx._values = values
    return ctx
