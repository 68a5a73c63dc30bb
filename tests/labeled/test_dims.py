"""Dim values: equality by name/size/coords, hashing, errors; dim references and clashes."""

import numpy as np
import pandas as pd
import pytest

import dimgraph as dg


def test_dim_from_coords_and_size():
    country = dg.Dim("country", coords=["USA", "Italy", "Chile"])
    assert country.size == 3 and isinstance(country.coords, pd.Index)
    assert dg.Dim("age", size=5).coords is None and dg.Dim("obs").size is None
    with pytest.raises(dg.DimError, match="size=2 disagrees with the 3 coords"):
        dg.Dim("country", size=2, coords=["a", "b", "c"])
    with pytest.raises(dg.DimError, match="unique"):
        dg.Dim("country", coords=["a", "b", "a"])
    with pytest.raises(dg.DimError, match="non-negative"):
        dg.Dim("n", size=-1)
    with pytest.raises(TypeError):
        dg.Dim(3)


def test_equality_and_hash_include_coords_and_order():
    a = dg.Dim("c", coords=["x", "y"])
    assert a == dg.Dim("c", coords=["x", "y"]) and hash(a) == hash(dg.Dim("c", coords=["x", "y"]))
    assert a != dg.Dim("c", coords=["y", "x"])
    assert a != dg.Dim("c", size=2)
    assert dg.Dim("c", size=2) == dg.Dim("c", size=2) and dg.Dim("c") == dg.Dim("c")
    assert a.rename("d") == dg.Dim("d", coords=["x", "y"])
    assert len({a, dg.Dim("c", coords=["x", "y"]), dg.Dim("c", size=2)}) == 2


def test_product_dim():
    a, b = dg.Dim("a", coords=["x", "y"]), dg.Dim("b", size=3)
    cell = dg.ProductDim("cell", (a, b))
    assert cell.size == 6 and list(cell.coords.names) == ["a", "b"]
    assert cell.coords[1] == ("x", 1)
    assert cell == dg.ProductDim("cell", (a, b)) and cell != dg.Dim("cell", size=6)


def test_clash_names_both_dims():
    x = dg.labeled("x", dims=(dg.Dim("country", size=3),))
    y = dg.labeled("y", dims=(dg.Dim("country", size=4),))
    with pytest.raises(dg.DimError, match="two different dims named 'country'") as err:
        x + y
    assert "size=3" in str(err.value) and "size=4" in str(err.value) and "'x'" in str(err.value)
    z = dg.labeled("z", dims=(dg.Dim("country", coords=["a", "b", "c"]),))
    w = dg.labeled("w", dims=(dg.Dim("country", coords=["a", "q", "c"]),))
    with pytest.raises(dg.DimError, match="position 1: 'b' vs 'q'"):
        z * w


def test_new_dims_only_as_dim_objects_and_lone_string_is_one_name():
    with pytest.raises(TypeError, match="Dim objects"):
        dg.labeled("x", dims="country")
    ab = dg.Dim("ab", size=2)
    x = dg.labeled("x", dims=(ab, dg.Dim("c", size=3)))
    assert x.sum("ab").dims == (dg.Dim("c", size=3),)  # "ab" is one name, never "a" and "b"
    with pytest.raises(dg.DimError, match="has no dim 'a'; its dims are \\(ab: 2, c: 3\\)"):
        x.sum("a")
    with pytest.raises(dg.DimError, match="appears twice"):
        dg.labeled("x", dims=(ab, ab))


def test_reference_by_dim_that_differs_is_a_clash():
    x = dg.labeled("x", dims=(dg.Dim("c", size=3),))
    with pytest.raises(dg.DimError, match="two different dims named 'c'"):
        x.sum(dg.Dim("c", size=4))


def test_labeled_variable_properties_and_repr():
    country, obs = dg.Dim("country", coords=["USA", "Italy"]), dg.Dim("obs")
    x = dg.labeled("x", dims=(country, obs), dtype="float32")
    assert x.dims == (country, obs) and x.ndim == 2 and x.dtype == np.float32 and x.name == "x"
    assert x.sizes["country"] == 2
    assert int(x.sizes["obs"].eval({x: np.zeros((2, 7), "float32")})) == 7
    assert repr(x) == "x: float32(country: 2, obs: ?)"
    html = x._repr_html_()
    assert "<table>" in html and "USA" in html and "obs" in html
