"""The `mlir` backend: the rewritten graph as MLIR (linalg on tensors, arith/math, scf), compiled by IREE.

`compile(fgraph)` prints one module (`program.module_text`: one `linalg.generic`
per fused loop, dynamic dims where the graph's sizes are unknown, so a new data
length needs no recompile), compiles it for the CPU with IREE (`build.py`,
cached on disk) and returns `run(arrays) -> arrays`. The module returns an error
checks as `cf.assert`s; a failed one raises the check's exception.
An op or case it cannot emit is refused in `compile` with an `MlirUnsupported`
(a `NotImplementedError`) naming it; without IREE installed, compiling raises
`BackendUnavailable` (the extra is `dimgraph[mlir]`). See docs/mlir.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from dimgraph.backends import Backend, Compiled

# Emitter families, mirroring dimgraph.core; each registers its ops with `registry.mlir_impl`.
from dimgraph.backends.mlir import control, elemwise, linalg, shape, subtensor  # noqa: F401
from dimgraph.backends.mlir.build import compile_module, load
from dimgraph.backends.mlir.emitter import CHECK
from dimgraph.backends.mlir.program import boundary_dtype, module_text
from dimgraph.backends.mlir.registry import MlirUnsupported, mlir_impl  # noqa: F401
from dimgraph.core.rewriting.fusion import unfuse_indexed_loop

BACKEND = Backend("mlir", __name__, cleanups=(unfuse_indexed_loop,))


def compile(fgraph, **options):
    """The `MlirCompiled` of `fgraph`; the IREE module comes from the disk cache or is compiled now."""
    text, errors = module_text(fgraph)
    data, key = compile_module(text)
    main = load(data)
    in_dtypes = [np.dtype(boundary_dtype(v.type.dtype)) for v in fgraph.inputs]
    bools = [v.type.dtype == "bool" for v in fgraph.outputs]
    in_bools = [v.type.dtype == "bool" for v in fgraph.inputs]  # bool crosses the boundary as uint8
    single = len(fgraph.outputs) == 1

    any_bool = any(bools)

    def call(arrays):
        try:
            results = main(*arrays)
        except RuntimeError as err:  # a failed `cf.assert` (`Emitter.fail_if`): its number indexes `errors`
            found = re.search(rf"{CHECK} (\d+)", str(err))
            if found is None:
                raise
            exc, message = errors[int(found.group(1)) - 1]
            raise exc(message) from None
        results = results if isinstance(results, tuple) else (results,)
        outs = [np.array(r.to_host()) for r in results]
        if any_bool:
            outs = [a.view(np.bool_) if is_bool else a for a, is_bool in zip(outs, bools)]
        return outs

    def run(args):
        arrays = []
        for a, d in zip(args, in_dtypes):
            a = np.asarray(a)
            arrays.append(np.asarray(a.view(np.uint8) if a.dtype == np.bool_ else a, dtype=d, order="C"))
        return call(arrays)

    def fast(*arrays):
        """`Function`'s positional entry: arrays of the exact dtypes in (bool still to be viewed as uint8)."""
        if any(in_bools) or not all(a.flags.c_contiguous for a in arrays):
            arrays = [np.asarray(a.view(np.uint8) if a.dtype == np.bool_ else a, order="C") for a in arrays]
        results = call(arrays)
        return results[0] if single else tuple(results)

    return MlirCompiled(run, source=text, fast=fast, cache_key=key)


@dataclass(frozen=True)
class MlirCompiled(Compiled):
    cache_key: str = ""  # the digest naming the compiled module in the disk cache


# The rest of the backend contract (`dimgraph.backends.BackendModule`): no warm start (the disk cache serves a second process).
from_plan = None
warm_tag = None
REGISTRIES = (mlir_impl.registry,)
