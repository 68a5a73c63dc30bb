"""The `jax` backend: the whole graph as one `jax.jit` function (optional: `pip install dimgraph[jax]`).

`compile(fgraph, output="numpy", shard=None, mesh=None)` builds one Python
function over `jax.numpy`/`jax.lax` for the whole FunctionGraph from a registry
keyed by Op type (`registry.jax_impl`), and wraps it once in `jax.jit`:

- dtypes are NumPy's exactly; graphs holding 64-bit values are traced and run
  under `jax.enable_x64(True)`, which is local to the calling thread and leaves
  the global JAX config untouched (`compiler.py`);
- shapes are static Python ints while tracing; a new input shape retraces;
- the run-time checks other backends make raise the same errors: shape checks
  (unknown-size axes that would broadcast, joins, products) while tracing, as
  shapes are concrete then; data checks (positions out of range, `Assert`,
  negative integer powers) come back from the jitted call as flags and raise
  before any output is returned or state updated;
- known difference: XLA on CPU flushes subnormal floats to zero (inputs and
  results, jax-ml/jax#16200);
- `output="jax"` returns JAX device arrays instead of NumPy arrays (for
  chaining into JAX code without a transfer); `f(..., trust_input=True)` hands
  device arrays to the jitted call as they are (the input checks convert to NumPy);
  64-bit device arrays stay 64-bit in your JAX code only under x64 (see `f.jax_fn`);
- sizes, slice bounds and masks computed from small inputs are compiled in
  (one compile per distinct value); from large inputs, NotImplementedError;
- `f.jax_fn` is the pure JAX function, not jitted (for `jax.grad`, `jax.vmap`,
  your own `jax.jit`): positional arrays in, JAX arrays out, data checks
  skipped (JAX's semantics apply, e.g. out-of-range positions clamp). It works
  under either x64 mode: inside, the graph computes in its own dtypes (64-bit
  ones under a thread-local x64); at its boundary, arguments and results take
  the dtypes of the caller's mode (float32 for a float64 graph without x64), so
  a value and its `jax.grad` agree. For 64-bit results, run your transforms
  inside `with jax.enable_x64(True):`;
- `shard={dim or input: mesh axis}` and `mesh=` place inputs over devices with
  `jax.sharding.NamedSharding` (`sharding.py`).

>>> import dimgraph as dg, numpy as np
>>> x = dg.tensor("x", shape=(None,))
>>> f = dg.function([x], (x * x).sum(), backend="jax")
>>> float(f(np.arange(3.0)))
5.0
"""

from __future__ import annotations

from dimgraph.backends import Backend
from dimgraph.backends.jax.registry import jax_impl
from dimgraph.errors import BackendUnavailable

# Fused ops this backend runs (`dimgraph.core.rewriting.OPT_IN`): XLA reduces several sums in one pass.
BACKEND = Backend("jax", __name__, options=("output", "shard", "mesh"), rewrites_opt_in=("multi_output_reduce_fusion",))


def compile(fgraph, **options):
    """The `Compiled` (`run(list of arrays) -> list of arrays`) of `fgraph` (options in the module docstring)."""
    try:
        import jax  # noqa: F401
    except ImportError as err:
        raise BackendUnavailable(
            f"the jax backend needs JAX, which is not installed here ({err}); install it with "
            "`pip install dimgraph[jax]`, or use backend='numba' or 'python'"
        ) from err
    from dimgraph.backends.jax.compiler import compile_graph

    return compile_graph(fgraph, **options)


# The rest of the backend contract (`dimgraph.backends.BackendModule`): no warm start (each process compiles afresh).
from_plan = None
warm_tag = None
REGISTRIES = (jax_impl.registry,)
