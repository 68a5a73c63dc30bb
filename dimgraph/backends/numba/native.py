"""Calls of a compiled function through its native entry point, at an address given at run time.

Numba compiles a call of another jitted function by linking the callee's code into the
caller's module and optimizing the whole again: each layer of a sampler's entry (the
C function around the flat entry around the jitted graph, `flatjit.py`) would re-optimize
everything under it, seconds of a cold `m.sample`. `call(callee, address, *args)` instead
emits a call of the callee's native function (Numba's own calling convention: status,
exceptions and NRT references as in a linked call) at `address`, which the caller takes as
an argument, never baked into its code, so the caller's module stays cacheable on disk.
The callee's compiled code gives only its types: `args` are exactly the types of one of its
compiled signatures, and `address` is that signature's (`address(dispatcher, sig)`); other
types get Numba's own linked call, slower to compile but the same result.

The jitted graph calls each of its kernels so (`site_call`): call site `i` takes its address
from entry `i` of an int64 table, the graph's first argument. Which compiled signature of
which kernel each site calls is known only once the graph is typed, so a compile under
`recording()` collects it, and the caller fills the table from that (or from the record a
compile left in the disk cache, `cache.load_sites`).
"""

from __future__ import annotations

import contextlib

from numba.core import cgutils, imputils, types
from numba.core.compiler_lock import global_compiler_lock
from numba.core.errors import TypingError
from numba.extending import intrinsic


@intrinsic
def call(typingctx, callee, address, *args):
    """`callee(*args)` by its native entry point at int64 `address` (module docstring); where `callee` is not
    compiled for exactly these types, an ordinary call (compiled and linked as Numba does; `address` unused)."""
    if not isinstance(callee, types.Dispatcher) or not isinstance(address, types.Integer):
        raise TypingError("native.call takes a jitted function and an int64 address")
    found = next((c for c in callee.dispatcher.overloads.values() if tuple(c.signature.args) == args), None)
    callee_sig = found.signature if found is not None else typingctx.resolve_function_type(callee, args, {})
    sig = callee_sig.return_type(callee, address, types.StarArgTuple.from_types(args))

    def codegen(context, builder, signature, llargs):
        values = cgutils.unpack_tuple(builder, llargs[2])
        if found is None:
            values = [context.cast(builder, v, a, f) for v, a, f in zip(values, args, callee_sig.args)]
            return context.get_function(callee, callee_sig)(builder, values)
        fnty = context.call_conv.get_function_type(callee_sig.return_type, callee_sig.args)
        fn = builder.inttoptr(llargs[1], fnty.as_pointer())
        status, out = context.call_conv.call_function(builder, fn, callee_sig.return_type, callee_sig.args, values)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return imputils.fix_returning_optional(context, builder, callee_sig, status, out)

    return sig, codegen


_recordings = []  # the sites of the compile in progress (`recording`): index -> (dispatcher, its argument types)


@contextlib.contextmanager
def recording():
    """`{site index: (kernel dispatcher, the argument types of its signature called)}` of the `site_call`s
    a compile inside the block lowers (under Numba's compiler lock, so no other thread's compile adds to it)."""
    with global_compiler_lock:
        found = {}
        _recordings.append(found)
        try:
            yield found
        finally:
            _recordings.pop()


@intrinsic
def site_call(typingctx, callee, table, index, *args):
    """`callee(*args)` by its native entry point at `table[index]`, `index` a constant (module docstring)."""
    if not isinstance(index, types.IntegerLiteral):
        return None  # Numba types the call again with the constant's literal type
    if not isinstance(callee, types.Dispatcher) or table != types.int64[::1]:
        raise TypingError("native.site_call takes a jitted function and a C-contiguous int64 table")
    # typed as a linked call types it (a constant as its type, not its value): compiled for them if need be
    callee_sig = typingctx.resolve_function_type(callee, tuple(types.unliteral(a) for a in args), {})
    sig = callee_sig.return_type(callee, table, index, types.StarArgTuple.from_types(args))
    site = (callee.dispatcher, tuple(callee_sig.args))

    def codegen(context, builder, signature, llargs):
        if _recordings:  # lowering runs at every compile (typing is cached): the record of this one
            _recordings[-1][index.literal_value] = site
        values = cgutils.unpack_tuple(builder, llargs[3])
        values = [context.cast(builder, v, a, f) for v, a, f in zip(values, args, callee_sig.args)]
        entries = context.make_array(table)(context, builder, value=llargs[1]).data
        at = builder.load(cgutils.gep_inbounds(builder, entries, index.literal_value))
        fnty = context.call_conv.get_function_type(callee_sig.return_type, callee_sig.args)
        fn = builder.inttoptr(at, fnty.as_pointer())
        status, out = context.call_conv.call_function(builder, fn, callee_sig.return_type, callee_sig.args, values)
        with cgutils.if_unlikely(builder, status.is_error):
            context.call_conv.return_status_propagate(builder, status)
        return imputils.fix_returning_optional(context, builder, callee_sig, status, out)

    return sig, codegen


def address(dispatcher, sig) -> int:
    """The address of `dispatcher`'s native function compiled for `sig` (compiled or loaded from the disk
    cache: both keep it as an external symbol of the overload's own library)."""
    cres = dispatcher.overloads[tuple(sig)]
    return cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
