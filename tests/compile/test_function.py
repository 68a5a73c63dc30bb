import numpy as np
import pytest

import dimgraph as dg


def test_call_by_position_and_name(backend):
    x = dg.tensor("x", shape=(None,))
    y = dg.tensor("y", shape=(None,))
    f = dg.function([x, y], x - y, backend=backend)
    np.testing.assert_allclose(f(np.arange(3.0), np.ones(3)), [-1.0, 0.0, 1.0])
    np.testing.assert_allclose(f(y=np.ones(3), x=np.arange(3.0)), [-1.0, 0.0, 1.0])
    assert f.backend == backend


def test_single_and_list_outputs(backend):
    x = dg.tensor("x", shape=(2,))
    assert isinstance(dg.function([x], x, backend=backend)(np.ones(2)), np.ndarray)
    out = dg.function([x], [x, x * 2], backend=backend)(np.ones(2))
    assert isinstance(out, list) and len(out) == 2
    np.testing.assert_allclose(out[1], [2.0, 2.0])


@pytest.mark.parametrize(
    "value, message",
    [
        (np.ones((2, 2)), "expected 1 axes"),
        (np.ones(4), "expected shape (3,), got (4,)"),
        (np.array([0.5, 1.0, 2.0]), "change when cast"),
        (np.array(["a", "b", "c"]), "numeric data"),
    ],
)
def test_bad_input_is_input_error_naming_input(value, message):
    x = dg.tensor("counts", shape=(3,), dtype="int64")
    f = dg.function([x], x + 1, backend="python")
    with pytest.raises(dg.InputError, match="counts") as err:
        f(value)
    assert message in str(err.value)


def test_exact_casts_are_accepted():
    x = dg.tensor("x", shape=(3,), dtype="int32")
    f = dg.function([x], x * 1, backend="python")
    out = f(np.array([1.0, 2.0, 3.0]))
    assert out.dtype == np.int32 and out.tolist() == [1, 2, 3]
    y = dg.tensor("y", shape=(2,), dtype="float64")
    assert dg.function([y], y, backend="python")(np.array([1, 2], dtype="int64")).dtype == np.float64


def test_missing_unexpected_and_duplicate_inputs():
    x = dg.tensor("x", shape=(1,))
    f = dg.function([x], x, backend="python")
    with pytest.raises(dg.InputError, match="missing inputs \\['x'\\]"):
        f()
    with pytest.raises(dg.InputError, match="unexpected input 'z'"):
        f(np.ones(1), z=1)
    with pytest.raises(dg.InputError, match="given twice"):
        f(np.ones(1), x=np.ones(1))


def test_unknown_backend_lists_registered():
    x = dg.tensor("x", shape=(1,))
    with pytest.raises(ValueError, match="registered backends: .*python"):
        dg.function([x], x, backend="fortran")


def test_output_needs_undeclared_input():
    x, y = dg.tensor("x", shape=(1,)), dg.tensor("y", shape=(1,))
    with pytest.raises(dg.InputError, match="'y'"):
        dg.function([x], x + y)


def test_updates_apply_after_outputs_and_not_on_failure(backend):
    w = dg.shared(np.zeros(2), name="w")
    x = dg.tensor("x", shape=(2,))
    ctx = dg.SharedContext()
    f = dg.function([x], w + x, updates={w: w + x}, backend=backend)
    np.testing.assert_allclose(f(np.ones(2), ctx=ctx), [1.0, 1.0])
    np.testing.assert_allclose(f(np.ones(2), ctx=ctx), [2.0, 2.0])
    np.testing.assert_allclose(w.get(ctx=ctx), [2.0, 2.0])
    np.testing.assert_allclose(w.get(), [0.0, 0.0])  # the default context is untouched
    with pytest.raises(dg.InputError):
        f(np.ones(3), ctx=ctx)
    np.testing.assert_allclose(w.get(ctx=ctx), [2.0, 2.0])


def test_eval():
    x = dg.tensor("x", shape=(None,))
    np.testing.assert_allclose((x + 1).eval({x: np.zeros(2)}), [1.0, 1.0])
