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
"""

from __future__ import annotations

from numba.core import cgutils, imputils, types
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


def address(dispatcher, sig) -> int:
    """The address of `dispatcher`'s native function compiled for `sig` (compiled or loaded from the disk
    cache: both keep it as an external symbol of the overload's own library)."""
    cres = dispatcher.overloads[tuple(sig)]
    return cres.library.get_pointer_to_function(cres.fndesc.llvm_func_name)
