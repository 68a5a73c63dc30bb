"""The rule of `dg.vectorize_graph` on labeled graphs: per batch entry, what the graph gives for that entry's inputs.

Oracle: the unbatched graph, compiled once per program on the python backend
and called on each entry's inputs (values, dims and coords compared), for
random small programs over the labeled ops (one core dim sized and labeled
by the data) in which every input gains its own random subset of the batch
dims, each batch dim of a random kind (a size, coords, or a size the data
brings). The three kinds of graphs PyTensor's
xtensor cases found failing (indexed updates, broadcasting between inputs
with different batch dims, stacking) and the order of the result's dims
(batch dims first, then the graph's own) are explicit tests.
"""

import itertools

import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from labeled_strategies import examples

import dimgraph as dg
from dimgraph.core.graph import ancestors

A = dg.Dim("a", coords=["p", "q"])
B = dg.Dim("b", size=3)
C = dg.Dim("c")  # sized by the data, which labels it
OBS = dg.Dim("obs", size=4)

# the graph's inputs: floats on core dims, integer positions along b and a, and an update value on obs
CORE = {
    "x": ((A, B), "float64"),
    "y": ((B, C), "float64"),
    "z": ((A,), "float64"),
    "w": ((), "float64"),
    "ib": ((OBS,), "int64"),
    "ia": ((OBS,), "int64"),
    "v": ((OBS,), "float64"),
}
POSITIONS = {"ib": B.size, "ia": A.size}
BATCH_NAMES = ("p0", "p1", "p2")
SIZES = {"a": 2, "b": 3, "c": 2, "obs": 4, "p0": 2, "p1": 3, "p2": 2}
DATA_LABELS = {"c": ["c0", "c1"]}


def _values(rng, name, shape):
    if name in POSITIONS:
        return rng.integers(0, POSITIONS[name], size=shape)
    return rng.uniform(-2.0, 2.0, size=shape)


def _dataarray(rng, name, dims, sizes):
    shape = tuple(sizes[d.name] for d in dims)
    coords = {d.name: d.coords for d in dims if d.coords is not None}
    coords.update({d.name: DATA_LABELS[d.name] for d in dims if d.name in DATA_LABELS})
    return xr.DataArray(_values(rng, name, shape), dims=[d.name for d in dims], coords=coords)


# -- random programs over the labeled ops ---------------------------------------------


def _pick(draw, pool, ok=lambda v: True):
    found = [v for v in pool if ok(v)]
    return draw(st.sampled_from(found)) if found else None


def _dim_of(draw, v):
    return draw(st.sampled_from(v.dims)) if v.dims else None


@st.composite
def program_step(draw, pool, inputs):
    """One labeled op on variables of `pool` (None when the drawn op does not apply to them)."""
    p = _pick(draw, pool)
    kind = draw(
        st.sampled_from(
            ["binary", "unary", "where", "reduce", "scan", "transpose", "shape", "broadcast", "isel", "sel", "update"]
            + ["stack", "concat", "dot", "positional"]
        )
    )
    if kind == "binary":
        q = _pick(draw, pool)
        op = draw(st.sampled_from(["add", "sub", "mul", "maximum"]))
        return {"add": p + q, "sub": p - q, "mul": p * q, "maximum": dg.maximum(p, q)}[op]
    if kind == "unary":
        return draw(st.sampled_from([lambda t: dg.tanh(t) * 2.0 + 1.0, lambda t: t**2, lambda t: dg.exp(-t)]))(p)
    if kind == "reduce":
        how = draw(st.sampled_from(["sum", "mean", "max"]))
        dims = (
            draw(st.one_of(st.none(), st.lists(st.sampled_from(p.dims), unique=True, min_size=1))) if p.dims else None
        )
        return getattr(p, how)(None if dims is None else [d.name for d in dims])
    if kind == "where":
        q, cond = _pick(draw, pool), _pick(draw, pool)
        return dg.where(cond > 0.0, p, q)
    if kind == "scan":
        d = _dim_of(draw, p)
        if d is None:
            return None
        how = draw(st.sampled_from(["cumsum", "diff", "shift"]))
        if how == "cumsum":
            return p.cumsum(d.name)
        return p.diff(d.name) if how == "diff" else p.shift({d.name: 1}, fill_value=0.0)
    if kind == "transpose":
        return p.transpose(*[d.name for d in draw(st.permutations(p.dims))])
    if kind == "shape":
        k = dg.Dim("k3", coords=["e", "f"])
        return p.expand_dims(k) if draw(st.booleans()) else p.expand_dims(k).sum("k3")
    if kind == "positional":  # out of labels and back: the positional ops in between batch through core's rules
        return dg.from_positional(dg.exp(p.to_positional()) - 1.0, p.dims)
    if kind == "broadcast":
        q = _pick(draw, pool)
        how = draw(st.sampled_from(["broadcast", "broadcast_like", "second"]))
        if how == "broadcast_like":
            return p.broadcast_like(q)
        return dg.broadcast(p, q)[0 if how == "broadcast" else 1]
    if kind == "isel":
        d = _dim_of(draw, p)
        if d is None:
            return None
        how = draw(st.sampled_from(["int", "slice", "list", "data", "data pair"]))
        n = SIZES[d.name]
        if how == "int":
            return p.isel({d.name: draw(st.integers(-n, n - 1))})
        if how == "slice":
            return p.isel({d.name: slice(draw(st.integers(0, n - 1)), None, draw(st.sampled_from([1, -1, 2])))})
        if how == "list":
            return p.isel(
                {d.name: draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3, unique=d.coords is not None))}
            )
        if how == "data pair" and {"a", "b"} <= set(p.type.names):
            return p.isel(a=inputs["ia"], b=inputs["ib"])
        if d.name in ("a", "b"):
            return p.isel({d.name: inputs["i" + d.name]})
        return None
    if kind == "sel":
        if "a" not in p.type.names:
            return None
        return p.sel(
            a=draw(
                st.sampled_from(
                    [
                        "q",
                        ["q", "p"],
                        slice("q", None),
                        dg.constant(np.array(["q", "p", "q"]), dims=(dg.Dim("k", size=3),)),
                    ]
                )
            )
        )
    if kind == "update":
        mode = draw(st.sampled_from(["set", "inc"]))
        if "b" in p.type.names and draw(st.booleans()):
            target = p.isel(b=inputs["ib"])  # data positions: the value on obs (repeated positions accumulate on inc)
            value = _pick(draw, pool + [inputs["v"]], lambda t: set(t.type.names) <= set(target.type.names))
        else:
            d = _dim_of(draw, p)
            if d is None:
                return None
            target = p.isel({d.name: draw(st.sampled_from([0, slice(0, 2), [1, 0]]))})
            value = _pick(draw, pool, lambda t: set(t.type.names) <= set(target.type.names))
        return None if value is None else getattr(target, mode)(value)
    if kind == "stack":
        if p.ndim < 2:
            return None
        parts = draw(st.lists(st.sampled_from(p.dims), unique=True, min_size=2, max_size=2))
        stacked = p.stack(s=[d.name for d in parts])
        return stacked.unstack("s") * 1.0 if draw(st.booleans()) else stacked
    if kind == "concat":
        q = _pick(draw, pool)
        along = draw(st.sampled_from(["b", "new"]))
        return dg.concat([p, q], "b" if along == "b" else dg.Dim("k2", size=2))
    q = _pick(draw, pool)
    return dg.dot(p, q)


@st.composite
def programs(draw, max_steps):
    """(inputs, outputs): up to `max_steps` labeled ops built on the inputs of CORE, every result an output."""
    inputs = {name: dg.labeled(name, dims=dims, dtype=dtype) for name, (dims, dtype) in CORE.items()}
    pool = [inputs[n] for n in ("x", "y", "z", "w")]
    outputs = []
    for _ in range(draw(st.integers(1, max_steps))):
        try:
            out = draw(program_step(pool, inputs))
        except (dg.DimError, TypeError, ValueError, IndexError, KeyError):
            continue  # the drawn op refuses these operands (a clash, a value the selection lacks): the graph is not built
        if out is not None:
            pool.append(out)
            outputs.append(out)
    if not outputs:
        outputs = [inputs["x"] * 2.0]
    return inputs, outputs


@st.composite
def batching(draw, inputs):
    """The batch dims (two or three, each of a drawn kind) and, per input, its replacement's dims (a drawn
    subset of them, inserted among its own dims in a drawn order)."""
    n = draw(st.integers(2, 3))
    batch = []
    for name in BATCH_NAMES[:n]:
        kind = draw(st.sampled_from(["size", "coords", "unknown"]))
        size = SIZES[name]
        if kind == "coords":
            batch.append(dg.Dim(name, coords=[f"{name}_{k}" for k in range(size)]))
        else:
            batch.append(dg.Dim(name, size=size if kind == "size" else None))
    dims = {}
    for name, var in inputs.items():
        mine = draw(st.lists(st.sampled_from(batch), unique=True, max_size=n))
        dims[name] = tuple(draw(st.permutations(list(var.dims) + mine)))
    return tuple(batch), dims


def _expected_batch(out, inputs, dims):
    """The batch dims `out` depends on (those of the replacements of the inputs it is built from), in order of
    first appearance over the replacements."""
    graph = {id(v) for v in ancestors([out])}
    carried = {d for name, var in inputs.items() if id(var) in graph for d in dims[name] if d not in var.dims}
    order = dict.fromkeys(d for name, var in inputs.items() for d in dims[name] if d not in var.dims)
    return tuple(d for d in order if d in carried)


def _check_entry(got, expected, what):
    assert got.dims == expected.dims, f"{what}: dims {got.dims}, unbatched {expected.dims}"
    assert got.dtype == expected.dtype, f"{what}: dtype {got.dtype}, unbatched {expected.dtype}"
    assert set(got.coords) == set(expected.coords), (
        f"{what}: coords {set(got.coords)}, unbatched {set(expected.coords)}"
    )
    for name in expected.coords:
        ours, theirs = got.indexes.get(name), expected.indexes.get(name)
        assert (ours is None) == (theirs is None), f"{what}: the index of {name!r}: {ours} vs unbatched {theirs}"
        if ours is not None:
            assert ours.equals(theirs), f"{what}: the index of {name!r}: {list(ours)} vs unbatched {list(theirs)}"
        else:
            np.testing.assert_array_equal(
                got.coords[name].values, expected.coords[name].values, err_msg=f"{what}: coord {name!r}"
            )
    np.testing.assert_allclose(got.values, expected.values, rtol=1e-9, atol=1e-12, err_msg=what)


def check_vectorization(inputs, outputs, batch, dims, backend, rng, unbatched=None):
    """`dg.vectorize_graph(outputs, ...)` with `inputs[name]` on `dims[name]`, compiled on `backend`, against the
    unbatched graph (`unbatched`, else compiled here on python) called on every batch entry's inputs."""
    new = {name: dg.labeled(f"{name}_batched", dims=dims[name], dtype=var.type.dtype) for name, var in inputs.items()}
    vectorized = dg.vectorize_graph(outputs, {var: new[name] for name, var in inputs.items()})
    for out, vec in zip(outputs, vectorized):
        want = _expected_batch(out, inputs, dims) + out.dims
        assert vec.dims == want, f"the vectorized dims {vec.dims}, expected {want} (batch dims first)"
    names = list(inputs)
    f = dg.function([new[n] for n in names], vectorized, backend=backend)
    f0 = unbatched or dg.function([inputs[n] for n in names], outputs, backend="python")
    data = {n: _dataarray(rng, n, dims[n], SIZES) for n in names}
    got = f(*[data[n] for n in names])
    used = [d for d in batch if any(d in dims[n] for n in names)]
    for entry in itertools.product(*[range(SIZES[d.name]) for d in used]):
        at = dict(zip([d.name for d in used], entry))
        args = [data[n].isel({k: i for k, i in at.items() if k in data[n].dims}, drop=True) for n in names]
        expected = f0(*args)
        for k, (g, e) in enumerate(zip(got, expected)):
            g = g.isel({k2: i for k2, i in at.items() if k2 in g.dims}, drop=True)
            _check_entry(g, e, f"output {k} ({outputs[k].owner.op if outputs[k].owner else outputs[k]}) at {at}")


@pytest.mark.parametrize("backend", ["python", "numba"])
def test_vectorized_random_programs_give_each_entry_what_the_graph_gives(backend):
    # numba compiles each example's vectorized graph (seconds): fewer examples, each a longer program
    @settings(max_examples=examples(backend, 6), suppress_health_check=list(HealthCheck))
    @given(data=st.data())
    def run(data):
        inputs, outputs = data.draw(programs(4 if backend == "python" else 7))
        batch, dims = data.draw(batching(inputs))
        check_vectorization(
            inputs, outputs, batch, dims, backend, np.random.default_rng(data.draw(st.integers(0, 2**16)))
        )

    run()


# -- the cases PyTensor's xtensor suite found failing ------------------------------------

P0, P1, P2 = dg.Dim("p0", size=2), dg.Dim("p1", coords=[10, 20, 30]), dg.Dim("p2")


def _core_inputs(*names):
    return {n: dg.labeled(n, dims=CORE[n][0], dtype=CORE[n][1]) for n in names}


def test_an_indexed_update_whose_target_positions_and_value_gain_different_batch_dims(backend):
    """x, the positions and the value each gain their own batch dim: every entry updates its own copy of x."""
    inputs = _core_inputs("x", "ib", "v")
    x, ib, v = inputs.values()
    outputs = [x.isel(b=ib).set(v), x.isel(b=ib).inc(v), x.isel(b=ib).inc(v * 2.0).sum("b")]
    dims = {"x": (A, P0, B), "ib": (OBS, P1), "v": (P2, OBS)}
    check_vectorization(inputs, outputs, (P0, P1, P2), dims, backend, np.random.default_rng(1))


def test_broadcasting_inputs_that_gain_different_batch_dims_keeps_every_batch_dim(backend):
    inputs = _core_inputs("z", "y")
    z, y = inputs.values()
    outputs = [*dg.broadcast(z, y), z.broadcast_like(y), y.broadcast_like(z) + 1.0, z + y]
    dims = {"z": (P0, A), "y": (B, P1, C)}
    check_vectorization(inputs, outputs, (P0, P1), dims, backend, np.random.default_rng(2))


def test_stack_in_a_vectorized_graph_gives_each_entry_the_unbatched_labels(backend):
    """The stacked dim gets the labels the unbatched graph gives it (from the components, never from batch dims)."""
    u = dg.Dim("u")  # sized by the data: its labels come with the data, or are positions
    inputs = {"x": dg.labeled("x", dims=(A, B)), "t": dg.labeled("t", dims=(u, C))}
    x, t = inputs.values()
    outputs = [
        x.stack(s=("a", "b")),
        t.stack(s=("u", "c")) * 2.0,
        (x.stack(s=("b", "a")) + 1.0).unstack("s"),
        x.ravel().sum(),
    ]
    dims = {"x": (P1, A, P0, B), "t": (C, P0, u)}
    sizes_of = {**SIZES, "u": 3}
    rng = np.random.default_rng(3)
    new = {n: dg.labeled(f"{n}_batched", dims=dims[n]) for n in inputs}
    vectorized = dg.vectorize_graph(outputs, {inputs[n]: new[n] for n in inputs})
    f = dg.function(list(new.values()), vectorized, backend=backend)
    f0 = dg.function(list(inputs.values()), outputs, backend="python")
    for with_labels in (False, True):
        data = {n: _dataarray(rng, n, dims[n], sizes_of) for n in inputs}
        if with_labels:
            data["t"] = data["t"].assign_coords(u=["u0", "u1", "u2"])
        got = f(*data.values())
        for i, j in itertools.product(range(2), range(3)):
            args = [data["x"].isel(p0=i, p1=j, drop=True), data["t"].isel(p0=i, drop=True)]
            for k, (g, e) in enumerate(zip(got, f0(*args))):
                _check_entry(
                    g.isel({n: at for n, at in (("p0", i), ("p1", j)) if n in g.dims}, drop=True), e, f"output {k}"
                )


# -- the order of the result's dims: batch dims first, then the graph's own ---------------


def test_vectorize_graph_and_vectorize_put_the_batch_dims_first_in_order_of_appearance(backend):
    a, b, c = dg.Dim("a", size=3), dg.Dim("b", size=2), dg.Dim("c", size=4)
    x, y, z = dg.labeled("x", dims=(a,)), dg.labeled("y", dims=(a,)), dg.labeled("z", dims=())
    x_new = dg.labeled("x_new", dims=(c, a, b))
    plus_one = dg.vectorize_graph(x + 1.0, {x: x_new})
    assert plus_one.dims == (c, b, a)  # PyTensor's xtensor: ("c", "b", "a")
    by_vectorize = dg.vectorize(lambda t: t + 1.0, [("a",)], [("a",)])(x_new)
    assert by_vectorize.dims == (c, b, a)
    xb, yb = dg.labeled("xb", dims=(a, c)), dg.labeled("yb", dims=(b, a, c))
    outs = dg.vectorize_graph([x * y, (x * y).sum(), z * 2.0], {x: xb, y: yb})
    assert [o.dims for o in outs] == [(c, b, a), (c, b), ()]  # a result that depends on no batch dim stays as it is
    f = dg.function([x_new, xb, yb], [plus_one, by_vectorize, outs[0]], backend=backend)
    X, XB, YB = np.arange(24.0).reshape(4, 3, 2), np.arange(12.0).reshape(3, 4), np.arange(24.0).reshape(2, 3, 4)
    got = f(X, XB, YB)
    np.testing.assert_array_equal(got[0].values, X.transpose(0, 2, 1) + 1.0)
    np.testing.assert_array_equal(got[1].values, got[0].values)
    np.testing.assert_array_equal(got[2].values, XB.T[:, None, :] * YB.transpose(2, 0, 1))


def test_a_selection_whose_length_would_vary_with_the_batch_is_refused_naming_it():
    x = dg.labeled("x", dims=(A, B))
    mask = dg.labeled("mask", dims=(B,), dtype="bool")
    with pytest.raises(dg.DimError, match=r"boolean mask on the batch dims \['p0'\]"):
        dg.vectorize_graph(x.isel(b=mask), {mask: dg.labeled("masks", dims=(P0, B), dtype="bool")})
    n = dg.labeled("n", dims=(), dtype="int64")
    with pytest.raises(dg.DimError, match=r"slice bounds of dim 'b' .* vary with the batch dims \['p0'\]"):
        dg.vectorize_graph(x.isel(b=slice(0, n)), {n: dg.labeled("ns", dims=(P0,), dtype="int64")})
