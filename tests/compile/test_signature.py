"""The compiled-function boundary (`dimgraph.compile.signature.Signature`): one value, built once per
compile, that binds, converts, checks and wraps; a `Function` complete when constructed."""

import pickle

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import dimgraph as dg
from dimgraph.compile.signature import Signature
from dimgraph.errors import InputError

T = dg.Dim("t", coords=pd.Index([10, 20, 30], name="t"))
X = dg.labeled("x", dims=(T,))
Y = dg.tensor("y", shape=(None,))
DATA = xr.DataArray([1.0, 2.0, 3.0], dims="t", coords={"t": [10, 20, 30]})


@pytest.fixture(scope="module")
def f():
    total = (X * 2).sum("t").rename("total")
    return dg.function([X, Y], [X + 1, total, Y.sum()], backend="python")


def test_the_signature_says_what_crosses_the_boundary(f):
    sig = f.signature
    assert isinstance(sig, Signature)
    assert sig.names == ("x", "y") and sig.labels() == ["x", "y"]
    assert len(sig.inputs) == 2 and len(sig.outputs) == 3
    assert sig.single is False and sig.dataset is None
    assert sig.shared == () and sig.update_targets == () and sig.n_updates == 0


def test_binding_by_position_name_and_dataset(f):
    sig = f.signature
    y = np.arange(2.0)
    assert sig.bind((DATA,), {"y": y})[1] is y
    assert sig.bind((), {"y": y, "x": DATA})[0] is DATA
    ds = xr.Dataset({"x": DATA, "unused": DATA})
    bound = sig.bind((ds,), {"y": y})
    xr.testing.assert_identical(bound[0], ds["x"])
    with pytest.raises(InputError, match=r"unexpected input 'z'; the inputs are \['x', 'y'\]"):
        sig.bind((DATA,), {"y": y, "z": 1})
    with pytest.raises(InputError, match=r"input 'x' given twice \(by position and by name\)"):
        sig.bind((DATA,), {"x": DATA, "y": y})
    with pytest.raises(InputError, match=r"missing inputs \['y'\]"):
        sig.bind((DATA,), {})
    with pytest.raises(InputError, match=r"takes 2 inputs \['x', 'y'\], got 3 positional values"):
        sig.bind((DATA, y, y), {})
    with pytest.raises(InputError, match=r"input 'x' given twice \(as a Dataset variable and by keyword\)"):
        sig.bind((ds,), {"x": DATA, "y": y})


def test_convert_check_and_wrap_give_what_the_call_gives(f):
    sig = f.signature
    raw = sig.bind((DATA, [1.0, 2.0]), {})
    arrays = sig.convert(raw)
    assert [a.dtype for a in arrays] == [np.float64, np.float64]
    sig.check(arrays, raw, None)
    results = f._compiled.run(arrays)
    wrapped = sig.returned(sig.wrap(results, raw))
    called = f(DATA, [1.0, 2.0])
    for w, c in zip(wrapped, called):
        if isinstance(c, xr.DataArray):
            xr.testing.assert_identical(w, c)
        else:
            np.testing.assert_array_equal(w, c)
    assert called[1].name == "total" and float(called[1]) == 12.0
    np.testing.assert_array_equal(called[0].coords["t"], [10, 20, 30])
    bad = DATA.assign_coords(t=[10, 20, 31])
    with pytest.raises(InputError, match="'x'"):
        sig.check(sig.convert([bad, [1.0]]), [bad, [1.0]], None)


def test_a_function_is_complete_when_constructed():
    """No attribute is added to a Function after its constructor: calls, the fast path, pickling and the
    summary read what it set."""
    t = dg.Dim("t", size=3)
    x = dg.labeled("x", dims=(t,))
    f = dg.function([x], (x * 2).sum("t"), backend="numba")
    made = set(vars(f))
    for _ in range(3):
        assert float(f(np.arange(3.0))) == 6.0
    assert float(f(x=np.arange(3.0))) == 6.0
    f.summary(), repr(f), f.fgraph
    copy = pickle.loads(pickle.dumps(f))
    assert float(copy(np.arange(3.0))) == 6.0
    assert set(vars(f)) <= made | {"_fgraph"}, set(vars(f)) - made
    assert set(vars(copy)) == made


def test_the_signature_pickles_and_travels_in_the_warm_record(tmp_path, monkeypatch):
    """A warm start reuses the stored signature, returning the outputs as each compile asks (bare, list,
    Dataset)."""
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", str(tmp_path))
    t = dg.Dim("t", coords=pd.Index(["a", "b"], name="t"))
    x = dg.labeled("x", dims=(t,))
    out = (x + 1).rename("out")
    data = xr.DataArray([1.0, 2.0], dims="t", coords={"t": ["a", "b"]})
    cold = dg.function([x], out, backend="numba")
    want = cold(data)
    # (the first compile gives the labeled input its positional twin, which the digest reads: the compiles
    # after it share one record, stored by the list-returning one)
    listed = dg.function([x], [out], backend="numba")
    dataset = dg.function([x], out, backend="numba", output="dataset")
    bare = dg.function([x], out, backend="numba")
    assert "warm start" in dataset.timings and "warm start" in bare.timings
    assert isinstance(listed(data), list) and listed.signature.single is False
    xr.testing.assert_identical(want, listed(data)[0])
    xr.testing.assert_identical(want, bare(data))
    xr.testing.assert_identical(dataset(data), xr.Dataset({"out": want}))
    copied = pickle.loads(pickle.dumps(cold.signature))
    assert copied.names == cold.signature.names and copied.single is True
    raw = copied.bind((data,), {})
    xr.testing.assert_identical(copied.returned(copied.wrap(cold._compiled.run(copied.convert(raw)), raw)), cold(data))


def test_updates_and_shared_variables_are_in_the_signature():
    w = dg.shared(np.zeros(2), name="w")
    y = dg.tensor("y", shape=(2,))
    f = dg.function([y], w + y, updates={w: w + y}, backend="python")
    assert f.signature.shared == (w,) and f.signature.n_updates == 1
    np.testing.assert_array_equal(f([1.0, 2.0]), [1.0, 2.0])
    np.testing.assert_array_equal(f([1.0, 2.0]), [2.0, 4.0])
    assert f.signature.fast_specs() is None
