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


@numba.njit
def _two_sites(table, a, i):
    x, y = native.site_call(_callee, table, 0, a, i)
    z, _ = native.site_call(_callee, table, 1, y, i)
    return x + z


def test_a_site_call_takes_its_address_from_the_table_and_its_compile_records_the_site():
    """Call site `k` calls through `table[k]`; a compile under `recording()` says which compiled signature of
    which function each site calls, so the caller can fill the table; the call matches the linked one."""
    a = np.linspace(-1.0, 2.0, 5)
    with native.recording() as sites:
        _two_sites.compile((numba.int64[::1], numba.float64[::1], numba.int64))
    sig = (numba.float64[::1], numba.int64)
    assert sites == {0: (_callee, sig), 1: (_callee, sig)}
    table = np.array([native.address(d, s) for d, s in (sites[0], sites[1])], dtype=np.int64)
    x, y = _callee(a, 2)
    assert _two_sites(table, a, 2) == x + _callee(y, 2)[0] == a[2] * 2.0 + (a[2] + 1.0) * 2.0
    assert not any("_callee" in name for name in _defined(_two_sites))
    with pytest.raises(InputError, match="index out of range"):
        _two_sites(table, a, 7)
    with native.recording() as again:  # typing is cached by Numba; lowering, which records, runs at every compile
        numba.njit(_two_sites.py_func).compile((numba.int64[::1], numba.float64[::1], numba.int64))
    assert again == sites


def test_a_site_call_passes_a_constant_as_the_type_of_the_signature_it_resolves():
    """A constant argument (typed as a literal) reaches the callee converted to the type of the signature the
    call resolves to, as in a linked call, and the recorded site names that signature."""

    @numba.njit
    def scaled(x, s):
        return x * s

    @numba.njit
    def caller(table, x):
        return native.site_call(scaled, table, 0, x, 3)

    with native.recording() as sites:
        caller.compile((numba.int64[::1], numba.float64))
    ((callee, args),) = sites.values()
    assert callee is scaled and args == (numba.float64, numba.int64) and args in scaled.overloads
    table = np.array([native.address(callee, args)], dtype=np.int64)
    assert caller(table, 1.5) == 4.5


def test_a_site_call_refuses_a_table_that_is_not_c_contiguous_int64():
    @numba.njit
    def caller(table, a, i):
        return native.site_call(_callee, table, 0, a, i)[0]

    with pytest.raises(numba.core.errors.TypingError, match="C-contiguous int64 table"):
        caller(np.zeros(2, dtype=np.int32), np.ones(3), 0)


def test_a_site_call_of_types_the_callee_cannot_take_is_a_typing_error():
    @numba.njit
    def length(a):
        return a.shape[0]

    @numba.njit
    def caller(table, x):
        return native.site_call(length, table, 0, x)

    with pytest.raises(numba.core.errors.TypingError, match="site_call"):
        caller(np.zeros(1, dtype=np.int64), 1.5)
