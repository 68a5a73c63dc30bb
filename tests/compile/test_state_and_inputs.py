"""Shared state changes only through calls and `set`; bad inputs are InputErrors naming the input.

Every test runs on every backend (the `backend` fixture).
"""

import numpy as np
import pytest
import xarray as xr

import dimgraph as dg

OBS = dg.Dim("obs")


# ---------------------------------------------------------------- shared state (no aliasing)


def test_update_from_an_input_does_not_alias_the_callers_array(backend):
    x = dg.tensor("x", shape=(3,))
    w = dg.shared(np.zeros(3), name="w")
    f = dg.function([x], x.sum(), updates={w: x}, backend=backend)
    data = np.arange(3.0)
    assert float(f(data)) == 3.0
    data[:] = 99.0
    assert w.get().tolist() == [0.0, 1.0, 2.0]


def test_output_that_is_the_shared_value_does_not_alias_it(backend):
    w = dg.shared(np.arange(3.0), name="w")
    f = dg.function([], w, backend=backend)
    out = f()
    out[:] = -1.0
    assert w.get().tolist() == [0.0, 1.0, 2.0]
    assert f().tolist() == [0.0, 1.0, 2.0]


def test_output_that_is_the_update_does_not_alias_the_new_value(backend):
    w = dg.shared(np.arange(3.0), name="w")
    ctx = dg.SharedContext()
    f = dg.function([], w + 1, updates={w: w + 1}, backend=backend)
    out = f(ctx=ctx)
    assert out.tolist() == [1.0, 2.0, 3.0]
    out[:] = 42.0
    assert w.get(ctx=ctx).tolist() == [1.0, 2.0, 3.0]
    assert f(ctx=ctx).tolist() == [2.0, 3.0, 4.0]


def test_labeled_update_from_an_input_does_not_alias(backend):
    x = dg.labeled("x", dims=(OBS,))
    w = dg.shared(np.zeros(2), dims=(OBS,), name="w")
    f = dg.function([x], x.sum(), updates={w: x}, backend=backend)
    data = np.array([1.0, 2.0])
    f(data)
    data[:] = 0.0
    assert w.get().values.tolist() == [1.0, 2.0]


def test_positional_shared_updated_from_a_labeled_expression(backend):
    xv = dg.labeled("xv", dims=(OBS,))
    acc = dg.shared(np.array(0.0), name="acc")
    ctx = dg.SharedContext()
    f = dg.function([xv], xv.mean(), updates={acc: acc + xv.sum()}, backend=backend)
    assert float(f(np.arange(4.0), ctx=ctx)) == 1.5
    f(np.ones(2), ctx=ctx)
    assert float(acc.get(ctx=ctx)) == 8.0


# ---------------------------------------------------------------- inputs


def test_ragged_list_is_an_input_error_naming_it(backend):
    x = dg.tensor("x", shape=(None, None))
    f = dg.function([x], x * 2, backend=backend)
    with pytest.raises(dg.InputError, match="input 'x'"):
        f([[1.0, 2.0], [3.0]])


def test_dataset_as_the_value_of_one_input_is_an_input_error_naming_it(backend):
    x = dg.labeled("x", dims=(OBS,))
    t = dg.tensor("t", shape=())
    f = dg.function([t, x], x * t, backend=backend)
    ds = xr.Dataset({"y": ("obs", np.ones(2))})
    with pytest.raises(dg.InputError, match="input 'x'.*Dataset"):
        f(t=2.0, x=ds)


def test_masked_values_are_an_input_error_naming_the_input(backend):
    """NumPy drops a mask when it makes an array: the function computed with the masked values."""
    x = dg.tensor("x", shape=(None,))
    lx = dg.labeled("lx", dims=(OBS,))
    f, g = dg.function([x], x * 2, backend=backend), dg.function([lx], lx * 2, backend=backend)
    masked = np.ma.masked_array([1.0, 2.0], mask=[False, True])
    with pytest.raises(dg.InputError, match="input 'x'.*1 masked"):
        f(masked)
    with pytest.raises(dg.InputError, match="input 'lx'.*1 masked"):
        g(masked)
    assert f(np.ma.masked_array([1.0, 2.0])).tolist() == [2.0, 4.0]  # nothing masked: its data


def test_input_size_against_a_shared_variables_is_an_input_error(backend):
    x = dg.labeled("x", dims=(OBS,))
    w = dg.shared(np.ones(3), dims=(OBS,), name="w")
    f = dg.function([x], x * w, backend=backend)
    assert f(np.arange(3.0)).values.tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(dg.InputError, match="input 'x'.*'obs'.*size 4.*shared variable 'w'.*size 3"):
        f(np.arange(4.0))
    ctx = dg.SharedContext()
    w.set(np.ones(4), ctx=ctx)
    assert f(np.arange(4.0), ctx=ctx).values.tolist() == [0.0, 1.0, 2.0, 3.0]
    # read only by an update, or by a gradient (computed positionally): it was the kernel's ShapeError
    g = dg.function([x], [x.sum(), dg.grad((x * w).sum(), x)], updates={w: w + x}, backend=backend)
    with pytest.raises(dg.InputError, match="input 'x'.*'obs'.*size 4.*shared variable 'w'.*size 3"):
        g(np.arange(4.0))
    total, grad = g(np.arange(3.0))
    assert (
        float(total) == 3.0 and grad.values.tolist() == [1.0, 1.0, 1.0] and w.get().values.tolist() == [1.0, 2.0, 3.0]
    )


def test_a_constant_read_only_by_a_gradient_fixes_the_input_size(backend):
    """The gradient does not read `x` at all: it returned 3 values for 4 without an error."""
    x = dg.labeled("x", dims=(OBS,))
    c = dg.constant(np.array([1.0, 2.0, 3.0]), dims=(OBS,))
    f = dg.function([x], dg.grad((x * c).sum(), x), backend=backend)
    assert f(np.zeros(3)).values.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(
        dg.InputError, match="input 'x': dim 'obs' has size 4, but a constant in the graph gives it size 3"
    ):
        f(np.zeros(4))


def test_a_constant_read_only_by_an_update_fixes_the_input_size(backend):
    """The size check reads the constants of the updates' graphs too, and refuses before any state changes."""
    x = dg.labeled("x", dims=(OBS,))
    c = dg.constant(np.array([1.0, 2.0, 3.0]), dims=(OBS,))
    w = dg.shared(np.zeros(()), dims=(), name="w")
    ctx = dg.SharedContext()
    f = dg.function([x], x.sum(), updates={w: w + dg.dot(x, c)}, backend=backend)
    assert float(f(np.ones(3), ctx=ctx)) == 3.0 and float(w.get(ctx=ctx)) == 6.0
    with pytest.raises(
        dg.InputError, match="input 'x': dim 'obs' has size 4, but a constant in the graph gives it size 3"
    ):
        f(np.ones(4), ctx=ctx)
    assert float(w.get(ctx=ctx)) == 6.0


def test_an_input_named_self_is_passed_by_keyword(backend):
    x = dg.tensor("self", shape=())
    f = dg.function([x], x + 1, backend=backend)
    assert float(f(self=2.0)) == 3.0


def test_duplicate_input_names_are_refused_at_build_time(backend):
    a, b = dg.tensor("x", shape=()), dg.tensor("x", shape=())
    with pytest.raises(ValueError, match="inputs \\[0, 1\\] are all named 'x'"):
        dg.function([a, b], a + b, backend=backend)


@pytest.mark.parametrize("name", ["ctx", "trust_input"])
def test_input_named_as_a_call_keyword_is_refused_at_build_time(backend, name):
    """`f(ctx=3.0)` took the value as the shared-variable context and then said the input `ctx` was missing."""
    x = dg.tensor(name, shape=())
    with pytest.raises(ValueError, match=f"input 0 is named '{name}', the call's own keyword"):
        dg.function([x], x + 1, backend=backend)


def test_non_numeric_input_dtype_is_refused_at_build_time(backend):
    x = dg.labeled("x", dims=(OBS,), dtype="str")
    with pytest.raises(TypeError, match="input 'x' has dtype <U0"):
        dg.function([x], x, backend=backend)


def test_trusted_python_scalar_for_a_0d_input(backend):
    x = dg.tensor("x", shape=(), dtype="float64")
    f = dg.function([x], x * 2, backend=backend)
    assert float(f(1.5, trust_input=True)) == 3.0
    lx = dg.labeled("lx", dims=())
    g = dg.function([lx], lx * 2, backend=backend)
    assert float(g(2.5, trust_input=True)) == 5.0


# ---------------------------------------------------------------- text that is not valid unicode


def test_lone_surrogate_in_an_assert_message_compiles_and_is_raised(backend):
    message = "bad \udc80 value"
    x = dg.tensor("x", shape=())
    f = dg.function([x], dg.core.assert_op(x, x > 0, msg=message), backend=backend)
    assert float(f(1.0)) == 1.0
    with pytest.raises(AssertionError) as info:
        f(-1.0)
    assert message in str(info.value.args[0])


def test_lone_surrogate_in_a_coord_label_is_a_dim_error():
    with pytest.raises(dg.DimError, match="Dim 'a'.*not valid text"):
        dg.Dim("a", coords=["x\udc80", "y"])


# ---------------------------------------------------------------- errors that name the numbers


def test_out_of_range_gather_names_the_index_and_the_axis_size(backend):
    table = dg.tensor("table", shape=(None,))
    at = dg.tensor("at", shape=(None,), dtype="int64")
    f = dg.function([table, at], table[at] * 2.0, backend=backend)
    assert f(np.arange(85.0), np.array([84, -85])).tolist() == [168.0, 0.0]
    with pytest.raises(IndexError, match="index 85 is out of bounds for axis 0 with size 85"):
        f(np.arange(85.0), np.array([3, 85]))


def test_out_of_range_labeled_indexer_names_the_input_and_the_dim(backend):
    group = dg.Dim("group", size=4)
    mu = dg.labeled("mu", dims=(group,))
    group_idx = dg.labeled("group_idx", dims=(OBS,), dtype="int64")
    f = dg.function([mu, group_idx], mu.isel(group=group_idx), backend=backend)
    assert f(np.arange(4.0), np.array([3, 0, -1])).values.tolist() == [3.0, 0.0, 3.0]
    with pytest.raises(
        IndexError, match="input 'group_idx': index 4 is out of bounds for dim 'group' of 'mu' with size 4"
    ):
        f(np.arange(4.0), np.array([1, 4]))
    g = dg.function([mu, group_idx], dg.grad((mu.isel(group=group_idx) ** 2).sum(), mu), backend=backend)
    assert g(np.arange(4.0), np.array([3, 3, 1])).values.tolist() == [0.0, 2.0, 0.0, 12.0]
    with pytest.raises(
        IndexError, match="input 'group_idx': index -5 is out of bounds for dim 'group' of 'mu' with size 4"
    ):
        g(np.arange(4.0), np.array([1, -5]))  # a gradient is computed positionally: it named only an axis


def test_gradient_of_a_sel_by_label_refuses_data_labeled_otherwise(backend):
    """A gradient is computed positionally; the labels check of its `sel` was missed, so a DataArray
    labeled [2, 1, 0] was read by position (xarray would select label 0, the last element)."""
    x = dg.labeled("x", dims=(OBS,))
    f = dg.function([x], dg.grad(x.sel(obs=0) ** 2, x), backend=backend)
    assert f(np.array([1.0, 2.0, 3.0])).values.tolist() == [2.0, 0.0, 0.0]
    with pytest.raises(dg.InputError, match="input 'x': dim 'obs' has the labels \\[2, 1, 0\\]"):
        f(xr.DataArray([1.0, 2.0, 3.0], dims=["obs"], coords={"obs": [2, 1, 0]}))


def test_out_of_range_labeled_indexer_changes_no_state(backend):
    group = dg.Dim("group", size=3)
    mu = dg.labeled("mu", dims=(group,))
    idx = dg.labeled("idx", dims=(OBS,), dtype="int64")
    total = dg.shared(np.zeros(()), dims=(), name="total")
    f = dg.function(
        [mu, idx], mu.isel(group=idx).sum(), updates={total: total + mu.isel(group=idx).sum()}, backend=backend
    )
    ctx = dg.SharedContext()
    assert float(f(np.arange(3.0), np.array([2, 2]), ctx=ctx)) == 4.0
    with pytest.raises(IndexError, match="input 'idx': index -4 is out of bounds for dim 'group' of 'mu' with size 3"):
        f(np.arange(3.0), np.array([0, -4]), ctx=ctx)
    assert float(total.get(ctx=ctx)) == 4.0  # the failed call left the state as the last good one did
