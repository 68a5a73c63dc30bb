"""`native.call`: a jitted function's call of another through the callee's native entry point at a run-time
address, against Numba's own linked call as the oracle."""

import numba
import numpy as np
import pytest

from dimgraph.backends.numba import native
from dimgraph.errors import InputError


@numba.njit
def _callee(a, i):
    if i >= a.shape[0]:
        raise InputError("index out of range")
    return a[i] * 2.0, a + 1.0


@numba.njit
def _by_address(address, a, i):
    x, y = native.call(_callee, address, a, i)
    return x + y.sum()


@numba.njit
def _linked(a, i):
    x, y = _callee(a, i)
    return x + y.sum()


@numba.njit
def _caught(address, a, i):
    try:
        return native.call(_callee, address, a, i)[0]
    except Exception:  # noqa: BLE001 - the error's status crosses the pointer call as a linked call's does
        return -1.0


def _defined(dispatcher):
    (sig,) = dispatcher.signatures
    llvm = dispatcher.overloads[sig].library.get_llvm_str()
    return [line.split("@", 1)[1].split("(", 1)[0] for line in llvm.splitlines() if line.startswith("define")]


def test_a_call_by_address_matches_the_linked_call_and_holds_no_callee_code():
    sig = (numba.float64[::1], numba.int64)
    _callee.compile(sig)
    address = native.address(_callee, sig)
    a = np.linspace(-1.0, 2.0, 5)
    assert _by_address(address, a, 3) == _linked(a, 3) == a[3] * 2.0 + (a + 1.0).sum()
    assert not any("_callee" in name for name in _defined(_by_address))
    assert any("_callee" in name for name in _defined(_linked))
    with pytest.raises(InputError, match="index out of range"):
        _by_address(address, a, 5)
    assert _caught(address, a, 5) == -1.0 and _caught(address, a, 1) == a[1] * 2.0


def test_types_the_callee_is_not_compiled_for_get_the_linked_call():
    strided = np.linspace(0.0, 1.0, 8)[::2]  # layout A: no compiled signature of the callee matches it

    @numba.njit
    def by_address(address, a, i):
        return native.call(_callee, address, a, i)[0]

    assert by_address(0, strided, 2) == strided[2] * 2.0  # the address (0) is never called
    assert any("_callee" in name for name in _defined(by_address))
