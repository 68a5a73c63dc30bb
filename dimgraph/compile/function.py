"""`dg.function`: from user variables to one compiled callable.

Pipeline: labeled inputs/outputs are lowered to positional ones (`dimgraph.lower`),
shared variables become implicit inputs, the graph is copied into a
`FunctionGraph`, rewritten, and handed to a backend. The returned `Function`
checks every input before any work, runs the backend's callable, applies
updates only after all outputs exist, and wraps outputs (DataArrays for labeled).
"""

from __future__ import annotations

import logging
import time

import numpy as np

from dimgraph import config
from dimgraph.backends import get_backend
from dimgraph.compile import warm
from dimgraph.compile.chunked import is_lazy, lazy_call
from dimgraph.compile.extra_dims import MappedFunction
from dimgraph.compile.pickling import Recipe, portable, restored, shared_values
from dimgraph.compile.random import default_updates
from dimgraph.compile.sharding import resolve_shard
from dimgraph.compile.signature import Signature, dataset_names
from dimgraph.compile.summary import function_html, function_repr, function_summary
from dimgraph.core.basic import constant
from dimgraph.core.fgraph import FunctionGraph
from dimgraph.core.graph import Constant, Variable, ancestors, graph_inputs, register_evaluator
from dimgraph.core.io import TensorInput, TensorOutput
from dimgraph.core.math import cast
from dimgraph.core.random import is_rng_state
from dimgraph.core.rewriting import rewrite_graph
from dimgraph.core.shared import DEFAULT_CONTEXT, SharedMixin
from dimgraph.core.type import TensorType
from dimgraph.errors import NoMatchingEntry, UnlistedInput
from dimgraph.labeled.ops import LabeledOp
from dimgraph.lower import lower_io, lower_update
from dimgraph.printing import dprint
from dimgraph.progress import Progress

_log = logging.getLogger("dimgraph")


class Function:
    """A compiled graph. Call with arrays positionally or by input name.

    `signature` is its boundary (`dimgraph.compile.signature.Signature`): the inputs' and
    outputs' specs, the checks every call runs, the shared variables read and updated.
    `timings` gives seconds per compile phase: "lower", "rewrite", "codegen", "first call"
    (once a call has run: numba compiles its kernels then), "jit graph" (numba: once the whole
    graph runs as one jitted function) and "kernels" ({kernel: seconds} on the numba backend);
    a warm start (the same graph compiled by an earlier process, see `dimgraph.compile.warm`)
    has "warm start" instead of the first three. `timings["perform"]` names the ops run by
    their Python `perform` (no compiled form). `compile_time` is the sum of the phases.
    Compiles that run long show their progress (a bar in a notebook, `logging` "dimgraph" elsewhere:
    `dimgraph.progress`).
    """

    __name__ = "dimgraph_function"  # what tools that name callables show (dask task keys, profilers)

    def __init__(self, signature, compiled, *, inputs, outputs, backend, recipe, fgraph, timings):
        """`fgraph`: the rewritten FunctionGraph, or a callable making it again (a warm start has none until
        asked for); `timings`: seconds of the compile phases so far; `recipe`: what pickling rebuilds from."""
        self.signature = signature
        self.inputs = inputs
        self.outputs = outputs
        self.backend = backend
        self._recipe = recipe
        self._fgraph = None if callable(fgraph) else fgraph
        self._make_fgraph = fgraph if callable(fgraph) else None
        self._compiled = compiled
        self._run = compiled.run
        self.source = compiled.source
        tiers = compiled.tiers
        kernels, performs = (tiers.kernel_timings, tiers.performs) if tiers is not None else ({}, ())
        self.timings = {"kernels": kernels, "perform": performs, **timings}
        self._n_inputs = len(inputs)
        # The common call (every input positional, arrays or labeled arrays, no shared variables, no updates,
        # no size checks) skips binding and contexts: `compiled.fast(*arrays)` is the backend's own entry
        # (numba: the driver), returning a bare array for one output, a tuple for several; labeled outputs
        # are wrapped by their specs. Per input: (dtype, ndim, ((axis, static size), ...)): data that matches
        # exactly needs no conversion.
        specs = signature.fast_specs()
        self._fast_specs = specs or ()
        # The first call takes the general path and is timed (it compiles the numba kernels); the fast path is
        # switched on after it succeeds.
        self._fast_after_first = compiled.fast if specs is not None else None
        self._fast = None
        self._first_call = True
        self._fast_wrap = signature.fast_wrapper()  # None: the backend's result is the call's
        self._fallback = None
        for attr, make in compiled.exports.items():  # backend extras built on the Function (jax: f.jax_fn)
            setattr(self, attr, make(self))
        if tiers is not None:  # a faster entry later (numba: the jitted graph)
            tiers.promote(self._promote)

    def _promote(self, fast, run, fallback, seconds):
        """Switch calls to the backend's faster entry (called once it is ready, maybe from another thread)."""
        self.timings["jit graph"] = seconds
        self._fallback = fallback
        self._run = run
        if self._fast_after_first is not None:
            self._fast_after_first = fast
            if self._fast is not None:
                self._fast = fast

    @property
    def entry(self):
        """The backend's own entry, `entry(*arrays) -> result` (a bare array for one output, a tuple for
        several), for a caller that converted and checked the inputs' arrays itself (no shared variables),
        or None (numba: the driver; its jitted graph comes later, through `tiers.promote`).

        >>> import dimgraph as dg, numpy as np
        >>> x = dg.tensor("x", shape=(2,))
        >>> f = dg.function([x], x * 2, backend="numba")
        >>> f.entry(np.array([1.0, 2.0])).tolist(), f.tiers is not None
        ([2.0, 4.0], True)
        """
        return self._compiled.fast

    @property
    def tiers(self):
        """The backend's entries beyond its first (`dimgraph.backends.Tiers`: numba's jitted graph, which
        calls take, and the flat entries on it), or None where the backend has one entry."""
        return self._compiled.tiers

    @property
    def fgraph(self):
        """The rewritten graph (a warm-started function lowers and rewrites the user's graph again when asked)."""
        if self._fgraph is None:
            self._fgraph = self._make_fgraph()
        return self._fgraph

    @property
    def rewrite_trace(self):
        """What the rewrites did (dimgraph.core.rewriting.RewriteTrace): counts, and events when traced."""
        return getattr(self.fgraph, "rewrite_trace", None)

    @property
    def compile_time(self) -> float:
        """Seconds of compiling so far: the sum of the phases in `timings` (the first call's kernel compiles
        once it has run, the jitted graph's once it is ready)."""
        return sum(v for k, v in self.timings.items() if k in _PHASES and v is not None)

    def summary(self) -> str:
        """What runs a call, and what compiling took: the backend, graph size, the entry calls take
        (numba: the Python driver or the jitted graph), the ops run by Python `perform`, seconds per phase.

        >>> import dimgraph as dg, numpy as np
        >>> x = dg.scalar("x")
        >>> f = dg.function([x], x + 1, backend="numba", jit_graph=True)
        >>> float(f(1.0))
        2.0
        >>> print(f.summary())  # doctest: +ELLIPSIS
        dimgraph.Function: numba, 1 nodes (0 fused kernels)
        calls run: the jitted graph (compiled in ... s)
        driver calls: 1
        run by Python perform: none
        compile: ...
        """
        return function_summary(self)

    def _fast_convert(self, args):
        """`args` unchanged when each is an ndarray of the exact dtype and static shape, else converted
        (None: the general path, which checks labels and takes dask-backed inputs lazily)."""
        for value, (dtype, ndim, static) in zip(args, self._fast_specs):
            if type(value) is not np.ndarray or value.dtype != dtype or value.ndim != ndim:
                break
            shape = value.shape
            for axis, size in static:
                if shape[axis] != size:
                    break
            else:
                continue
            break
        else:
            return args
        if self.signature.checks or any(is_lazy(v) for v in args):  # label checks read the DataArrays; dask stays lazy
            return None
        return self.signature.convert(args)

    def __call__(self, /, *args, ctx=None, trust_input=False, **kwargs):
        """Run the function on data given positionally or by input name.

        `trust_input=True` skips every check and conversion (for a hot loop): arrays
        must already have the declared dtype and shape; a DataArray for a labeled input
        is only put in dims order. `ctx` is the shared-variable context to read and update.

        >>> import dimgraph as dg, numpy as np, xarray as xr
        >>> t = dg.Dim("t", size=3)
        >>> x = dg.labeled("x", dims=(t,))
        >>> f = dg.function([x], x * 2)
        >>> f(xr.DataArray(np.arange(3.0), dims="t"), trust_input=True).values.tolist()
        [0.0, 2.0, 4.0]
        """
        fast = self._fast
        if fast is not None and not kwargs and ctx is None and len(args) == self._n_inputs:
            if not trust_input:
                arrays = self._fast_convert(args)
            else:
                arrays = args
                for a in args:
                    if type(a) is not np.ndarray:  # a DataArray, a Python or NumPy scalar
                        arrays = self.signature.trusted(args)
                        break
            if arrays is not None:
                try:
                    out = fast(*arrays)
                except IndexError as err:
                    self.signature.name_index_error(arrays, args, err)
                    raise
                except NoMatchingEntry:  # the backend's faster entry refused these types: its fallback answers
                    out = self._fallback(arrays)
                return out if self._fast_wrap is None else self._fast_wrap(out, args)
        if self._first_call:
            return self._timed_first_call(args, ctx, trust_input, kwargs)
        signature = self.signature
        raw = signature.bind(args, kwargs)
        if any(is_lazy(v) for v in raw):
            return lazy_call(self, raw, ctx)
        arrays = signature.trusted(raw) if trust_input else signature.convert(raw)
        ctx = ctx or DEFAULT_CONTEXT
        if not trust_input:
            signature.check(arrays, raw, ctx)
        if signature.update_targets:
            with ctx.lock:  # NOTE: read, run, write back as one step: threads sharing ctx never reuse a state
                outs = self._run_in(ctx, arrays, raw)
        else:
            outs = self._run_in(ctx, arrays, raw)
        return signature.returned(outs)

    def _run_in(self, ctx, arrays, raw):
        """The wrapped outputs for `arrays` with the shared values of `ctx`; then the updates go into `ctx`."""
        signature = self.signature
        arrays = arrays + [ctx.get(s) for s in signature.shared]
        try:
            results = self._run(arrays)
        except IndexError as err:
            signature.name_index_error(arrays, raw, err)
            raise
        n_out = len(results) - signature.n_updates
        if signature.shared or signature.update_targets:
            results = _unaliased(results, n_out, arrays, self._n_inputs)
        outs = signature.wrap(results[:n_out], raw)
        for var, value in zip(signature.update_targets, results[n_out:]):
            ctx._values[var] = value
        return outs

    def _timed_first_call(self, args, ctx, trust_input, kwargs):
        self._first_call = False
        t0 = time.perf_counter()
        try:
            out = self(*args, ctx=ctx, trust_input=trust_input, **kwargs)
        except BaseException:
            self._first_call = True  # bad input, say: the next call is the first that runs
            raise
        seconds = time.perf_counter() - t0
        # A jitted graph compiled within this call (`jit_graph=True`) is its own phase.
        self.timings["first call"] = seconds - (self.timings.get("jit graph") or 0.0)
        self._fast = self._fast_after_first
        if seconds > 2.0:
            _log.info("dimgraph: first call took %.2f s (kernel compiles: %s)", seconds, self.timings["kernels"])
        return out

    def __reduce__(self):
        # By value: the recipe (graph, backend, options) and the default context's shared values travel;
        # unpickling compiles again or loads from the cache.
        return _unpickled, (portable(self._recipe), shared_values(self.signature.shared))

    def dprint(self, file=None, width=120):
        """Print the rewritten graph with types and static shapes (lines cut at `width`)."""
        return dprint(self, file=file, width=width)

    def __repr__(self):
        return function_repr(self)

    def _repr_html_(self):
        return function_html(self)


_PHASES = ("lower", "rewrite", "codegen", "warm start", "first call", "jit graph")  # what `compile_time` sums


def _unaliased(results, n_out, arrays, n_inputs):
    """`results` with copies where shared state would alias memory the caller holds.

    A backend may return an input as it came (`updates={w: x}`), a shared value as
    it is stored (`function([], w)`), or one array as both an output and an update.
    State changes only through calls and `set`, so: an update that shares memory
    with an input or an output is copied before it is stored, and an output that
    shares memory with a stored shared value is copied before it is returned.
    """
    results = list(results)
    stored = arrays[n_inputs:]
    for k in range(n_out):
        if any(_overlap(results[k], s) for s in stored):
            results[k] = np.array(results[k])
    held = arrays[:n_inputs] + results[:n_out]
    for k in range(n_out, len(results)):
        if any(_overlap(results[k], h) for h in held) or any(_overlap(results[k], u) for u in results[n_out:k]):
            results[k] = np.array(results[k])
    return results


def _overlap(a, b) -> bool:
    return isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and np.may_share_memory(a, b)


def _as_list(x):
    return (list(x), False) if isinstance(x, (list, tuple)) else ([x], True)


def function(
    inputs, outputs, backend=None, updates=None, rewrites="default", map_extra_dims=False, return_numpy=False, **options
):
    """Compile `outputs` as a function of `inputs`.

    Parameters
    ----------
    inputs : list of variables (positional or labeled), each given data at call time
        (positionally, by input name, or, for labeled inputs, from an `xarray.Dataset`
        passed first: `f(ds, other=...)` takes each from the data variable of its name).
    outputs : a variable (returned bare) or a list of variables (returned as a list).
    backend : where the code runs; `dimgraph.backends.available_backends()` lists them here:
        "numba" (the default: one jitted function per graph, disk-cached),
        "jax" (one `jax.jit` function; optional, `pip install dimgraph[jax]`),
        "c" (generated C built with the system compiler, disk-cached),
        "python" (NumPy reference: each op's `perform`),
        "mlir" (MLIR compiled by IREE for the CPU; optional, `pip install dimgraph[mlir]`; a subset
        of the ops, the rest refused by name at compile: docs/mlir.md).
    updates : {shared variable: new value expression}, applied after each successful call.
    rewrites : "default", "none", or {"include"/"exclude": [rewrite names, tags or phases],
        "trace": bool} (see `f.rewrite_trace`).
    map_extra_dims : map over dims that DataArray inputs carry beyond the inputs' own (one
        compile per set of extra dims; outputs get them first); see `dimgraph.compile.extra_dims`.
    return_numpy : labeled outputs come back as NumPy arrays in the output's dim order
        instead of DataArrays (for samplers and optimizers: a call then costs what a
        positional one does).
    **options :
        output="dataset" -- any backend: the outputs come back as one `xarray.Dataset`,
            each under its variable's name.
        output="jax" -- jax: JAX device arrays instead of NumPy arrays (default "numpy").
        shard={dim or input: mesh axis}, mesh=jax.sharding.Mesh -- jax: place inputs over
            devices with `NamedSharding`.
        jit_graph=None/True/False -- numba: run the whole graph as one jitted function.
            None (default): the first calls run a Python driver between the kernels; once
            the function is hot (200 calls) the jitted graph compiles on a background
            thread and later calls take it (it is cached on disk: a later process takes it
            at its first call). True: jit it at the first call. False: the driver only.
            `f.summary()` says which runs.
        The c and python backends take no backend options; an unknown option is a TypeError on every backend.

    The result is a `Function`: `f(...)` runs it, `f.dprint()` prints the rewritten graph,
    `dg.to_dot(f)` draws it, `f.jax_fn` (jax) is the pure JAX function, and it pickles
    (by its graph and options) for worker processes.

    Examples
    --------
    >>> import dimgraph as dg, numpy as np
    >>> x = dg.tensor("x", shape=(None,))
    >>> f = dg.function([x], (x * 2).sum())
    >>> float(f(np.arange(4.0)))
    12.0
    >>> t = dg.Dim("t", size=3)
    >>> y = dg.labeled("y", dims=(t,))
    >>> dg.function([y], y + 1, return_numpy=True)(np.zeros(3))
    array([1., 1., 1.])
    """
    inputs, _ = _as_list(inputs)
    outputs, single = _as_list(outputs)
    # output="dataset" is not a backend option: the outputs come back as one Dataset, by name
    dataset = dataset_names(outputs) if options.get("output") == "dataset" else None
    backend_options = {k: v for k, v in options.items() if not (dataset is not None and k == "output")}
    backend_contract = get_backend(backend)
    backend_contract.check_options(backend_options)  # an unknown option fails before any work, on every backend
    if map_extra_dims:  # compiled per set of extra dims when called; without any, the function itself, then
        if updates:
            raise ValueError(
                "function: map_extra_dims cannot be combined with updates (a shared variable has no batch dims)"
            )
        _check_inputs(inputs)
        options = dict(options, backend=backend, rewrites=rewrites)
        return MappedFunction(inputs, outputs, single, options, function)
    if backend_options.get("shard"):  # Dims and variables become input positions: backends never read Dims
        backend_options["shard"] = resolve_shard(backend_options["shard"], inputs)
    updates = dict(updates or {})
    updates.update(default_updates(outputs, updates))
    _check_inputs(inputs)
    for target in updates:
        if not isinstance(target, SharedMixin):
            raise TypeError(f"updates: only shared variables can be updated, got {target!r}")
    recipe = Recipe(
        inputs, outputs[0] if single else outputs, backend_contract.name, updates, rewrites,
        {**options, "return_numpy": True} if return_numpy else options,
    )  # fmt: skip

    def rewritten():
        return _rewritten(inputs, outputs, updates, rewrites, backend_contract, return_numpy)

    t_lower = time.perf_counter()
    key = None
    if not updates and not _traced(rewrites):
        settings = (backend_contract.name, backend_options, rewrites, return_numpy)
        key = warm.graph_digest(inputs, outputs, backend_contract, settings)
    record = warm.load(key) if key is not None else None
    if record is not None:
        compiled = backend_contract.build(record.plan, **backend_options)
        signature = record.signature.returning(single=single, dataset=dataset)
        timings = {"warm start": time.perf_counter() - t_lower}
        fgraph = lambda: rewritten()[0]  # noqa: E731 - made again only when asked for
        _log.debug("dimgraph: warm start from %s in %.3f s", key, timings["warm start"])
    else:
        progress = Progress(_described(outputs))
        fgraph, lowered, timings = rewritten()
        signature = lowered.returning(single=single, dataset=dataset)
        t_codegen = time.perf_counter()
        progress.update("code generation")
        compiled = backend_contract.compile(fgraph, **backend_options)
        timings["codegen"] = time.perf_counter() - t_codegen
        progress.close()
        _log.debug(
            "dimgraph: lower %.3f s, rewrite %.3f s, codegen %.3f s",
            *(timings[k] for k in ("lower", "rewrite", "codegen")),
        )
        if key is not None and not signature.shared and compiled.plan is not None:
            warm.save(key, warm.Record(compiled.plan, lowered))
    return Function(
        signature, compiled, inputs=inputs, outputs=outputs, backend=backend_contract.name, recipe=recipe,
        fgraph=fgraph, timings=timings,
    )  # fmt: skip


def _described(outputs) -> str:
    """What a progress line calls the function being compiled: its outputs' names."""
    names = ", ".join(o.name or "?" for o in outputs)
    return f"the function of {names if len(names) <= 60 else names[:57] + '...'}"


def _rewritten(inputs, outputs, updates, rewrites, backend_contract, return_numpy):
    """The positional, rewritten graph of the user's one, its signature and seconds per phase.

    Returns (fgraph, Signature (outputs returned as a list), {"lower": s, "rewrite": s}).
    """
    t_lower = time.perf_counter()
    # RNG states after labeled draws are lowered with the outputs: their draws' sizes may come from the inputs
    states = [t for t, v in updates.items() if isinstance(v, Variable) and is_rng_state(t) and _from_labeled(v)]
    pos_inputs, pos_outputs, in_specs, out_specs, checks = _lower_io(
        inputs, outputs + [updates[t] for t in states], updates.values()
    )
    lowered_states = dict(zip(states, pos_outputs[len(outputs) :]))
    pos_outputs, out_specs = pos_outputs[: len(outputs)], out_specs[: len(outputs)]
    if return_numpy:
        out_specs = [TensorOutput() for _ in out_specs]
    pos_updates = _lower_updates({t: lowered_states.get(t, v) for t, v in updates.items()})
    given = set(inputs)
    shared = [v for v in graph_inputs(pos_outputs + pos_updates) if isinstance(v, SharedMixin) and v not in given]
    for v in graph_inputs(pos_outputs + pos_updates):
        if (
            v.owner is None
            and not isinstance(v, Constant)
            and v not in given
            and v not in set(shared)
            and v not in set(pos_inputs)
        ):
            raise UnlistedInput(repr(v.name or v), [i.name for i in inputs])
    fgraph = FunctionGraph(pos_inputs + shared, pos_outputs + pos_updates)
    t_rewrite = time.perf_counter()
    rewrite_graph(fgraph, rewrites, backend=backend_contract)
    seconds = {"lower": t_rewrite - t_lower, "rewrite": time.perf_counter() - t_rewrite}
    return fgraph, Signature.of(inputs, in_specs, out_specs, checks, shared=shared, updates=updates), seconds


def _traced(rewrites) -> bool:
    """Whether this compile records rewrite events (it must run the rewrites, so no warm start)."""
    return bool(config.rewrite_trace or (isinstance(rewrites, dict) and rewrites.get("trace")))


def _check_inputs(inputs):
    """Inputs are graph inputs (no owner, not constants), each listed once, with distinct names and numeric data."""
    for v in inputs:
        if not isinstance(v, Variable) or v.owner is not None or isinstance(v, Constant):
            raise TypeError(f"function inputs must be graph inputs (no owner, not constants); got {v!r}")
    if len(set(inputs)) != len(inputs):
        raise ValueError(f"an input is listed twice in {inputs}")
    _check_input_names_and_dtypes(inputs)


def _check_input_names_and_dtypes(inputs):
    """Input names are keywords of the call, so they must differ (from each other and from the call's
    own `ctx` and `trust_input`); data must be numeric."""
    where = {}
    for k, v in enumerate(inputs):
        if v.name:
            where.setdefault(v.name, []).append(k)
    for name in ("ctx", "trust_input"):
        if name in where:
            raise ValueError(
                f"input {where[name][0]} is named {name!r}, the call's own keyword ({name}=...): a call could not "
                "pass it by keyword; give it another name"
            )
    twice = {name: ks for name, ks in where.items() if len(ks) > 1}
    if twice:
        name, ks = next(iter(twice.items()))
        raise ValueError(
            f"inputs {ks} are all named {name!r}: a call could not tell them apart by keyword; give them different names"
        )
    for k, v in enumerate(inputs):
        dtype = np.dtype(v.type.dtype)
        if dtype.kind not in "biufc":
            raise TypeError(
                f"input {v.name or k!r} has dtype {dtype}: compiled functions take numeric data "
                f"(bool, int, uint, float, complex)"
            )


def _has_labeled(variables) -> bool:
    """Whether any of `variables` or what they are computed from is labeled (and needs lowering)."""
    return any(not isinstance(v.type, TensorType) for v in ancestors(list(variables)))


def _lower_io(inputs, outputs, updates):
    """Positional stand-ins for labeled inputs/outputs, with their converters, wrappers and checks
    (of what the outputs and the updates' new values read)."""
    # positional outputs computed by labeled ops (`x.to_positional()`, an RNG state after labeled draws) are lowered too
    if all(isinstance(v.type, TensorType) for v in inputs + outputs) and not any(map(_from_labeled, outputs)):
        in_specs = [TensorInput(v.name or f"input {k}", v.type) for k, v in enumerate(inputs)]
        return inputs, outputs, in_specs, [TensorOutput() for _ in outputs], []
    return lower_io(inputs, outputs, updates)


def _from_labeled(value):
    """True for a positional value computed by labeled ops (an RNG state after labeled draws)."""
    return value.owner is not None and any(
        v.owner is not None and isinstance(v.owner.op, LabeledOp) for v in ancestors([value])
    )


def _lower_updates(updates):
    out = []
    for target, value in updates.items():
        if not isinstance(value, Variable):
            value = constant(value)
        if _has_labeled([value]) or _from_labeled(value):  # a positional value may be computed from labeled ones
            value = lower_update(target, value)
        if value.type.dtype != target.type.dtype:
            value = cast(value, target.type.dtype)
        if value.type.ndim != target.type.ndim or any(
            a is not None and b is not None and a != b for a, b in zip(value.type.shape, target.type.shape)
        ):
            raise ValueError(f"updates: the new value of {target.name!r} has type {value.type}, expected {target.type}")
        out.append(value)
    return out


def _unpickled(recipe, values):
    """A compiled function from its recipe and shared values (the unpickling half of `Function.__reduce__`)."""
    recipe = restored(recipe, values)
    return function(
        recipe.inputs, recipe.outputs, backend=recipe.backend, updates=recipe.updates or None, rewrites=recipe.rewrites,
        **recipe.options,
    )  # fmt: skip


def _evaluate(variable, inputs, backend):
    """`Variable.eval`: the variable compiled alone as a function of `inputs`, called on their values."""
    return function(list(inputs), variable, backend=backend)(*inputs.values())


register_evaluator(_evaluate)
