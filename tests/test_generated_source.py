"""Snapshots of the source the numba and c backends generate for a few representative graphs.

A change in code generation then shows up in review as a diff of
`tests/snapshots/<backend>-<graph>.txt`. After an intended change, regenerate
them with `DIMGRAPH_UPDATE_SNAPSHOTS=1 pytest tests/test_generated_source.py`
and commit the new files with the change.
"""

import difflib
import os
import pathlib

import pytest

import dimgraph as dg

SNAPSHOTS = pathlib.Path(__file__).parent / "snapshots"
UPDATE = os.environ.get("DIMGRAPH_UPDATE_SNAPSHOTS") == "1"


def _logp():
    """A normal log-density summed over data: one fused reduce-of-elementwise kernel."""
    x, mu = dg.tensor("x", shape=(None,)), dg.scalar("mu")
    return [x, mu], (-0.5 * (x - mu) ** 2 - 0.9189385332046727).sum()


def _gather_scatter():
    """A gather by an index vector and the scatter-add of its gradient."""
    table, idx = dg.tensor("table", shape=(4,)), dg.tensor("idx", shape=(None,), dtype="int64")
    cost = dg.exp(table[idx]).sum()
    return [table, idx], [cost, dg.grad(cost, table)]


def _matmul():
    a, b = dg.tensor("a", shape=(None, 3)), dg.tensor("b", shape=(3, None))
    return [a, b], dg.tanh(a @ b)


def _gather_reduce():
    """Rows of a matrix picked by an index vector, then summed along the other axis (`sel(...).sum(...)`)."""
    data, idx = dg.tensor("data", shape=(None, None)), dg.tensor("idx", shape=(None,), dtype="int64")
    return [data, idx], dg.exp(data[idx]).sum(axis=1)


GRAPHS = {"logp": _logp, "gather_scatter": _gather_scatter, "matmul": _matmul, "gather_reduce": _gather_reduce}


@pytest.mark.parametrize("backend", ["numba", "c"])
@pytest.mark.parametrize("graph", sorted(GRAPHS))
def test_generated_source_matches_its_snapshot(backend, graph):
    inputs, outputs = GRAPHS[graph]()
    f = dg.function(inputs, outputs, backend=backend)
    source = f.source
    path = SNAPSHOTS / f"{backend}-{graph}.txt"
    if UPDATE:
        path.write_text(source)
    expected = path.read_text()
    if source != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), source.splitlines(True), str(path), "generated"))
        pytest.fail(f"the {backend} source of {graph!r} changed (DIMGRAPH_UPDATE_SNAPSHOTS=1 rewrites it):\n{diff}")
