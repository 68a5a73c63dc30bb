"""Graph identity: one structural digest for merging, inner graphs and caches (`dimgraph.core.digest`).

The oracle is structure itself: graphs built twice from one function digest
alike, in this process and in another; any change of op, constant bit or wiring
changes the digest; inner graphs compare by their digest, in time linear in their size.
"""

import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import dimgraph as dg
from dimgraph.core import digest
from dimgraph.core.fgraph import FunctionGraph
from dimgraph.core.graph import graph_digest
from dimgraph.core.inner import InnerGraph
from dimgraph.core.loop import Scan
from dimgraph.core.rewriting import rewrite_graph

_BUILD = textwrap.dedent(
    """
    import numpy as np
    import dimgraph as dg
    from dimgraph.core.graph import graph_digest
    from dimgraph.core.inner import InnerGraph

    x, w = dg.vector("x", size=3), dg.scalar("w")
    y = dg.tanh(x * w) + np.array([1.0, -0.0, 2.5])
    c0 = dg.scalar("c0")
    total = dg.scan(lambda c, v: c + v * w, init=c0, sequences=x)[0]
    body = InnerGraph([x, w], [y, (y * 2.0).sum()])
    print(graph_digest([x, w, c0], [y, total]).hex(), body.structural_digest.hex())
    """
)


def _built_here():
    namespace = {}
    exec(compile(_BUILD.replace("print(", "RESULT = ("), "<graph>", "exec"), namespace)
    return " ".join(namespace["RESULT"])


def test_the_same_graph_has_the_same_digest_in_another_process():
    """A process of its own (another hash seed) finds the digests this process finds."""
    here = _built_here()
    env = {"PYTHONHASHSEED": "12345", "PYTHONPATH": ":".join(sys.path)}
    there = subprocess.run([sys.executable, "-c", _BUILD], capture_output=True, text=True, env=env, check=True)
    assert there.stdout.split() == here.split()


def _model(c, op=dg.exp):
    x = dg.vector("x", size=len(c))
    y = dg.scalar("y")
    return [x, y], [op(x * y + c).sum(), x - y]


@given(c=hnp.arrays(np.float64, st.integers(1, 4), elements=st.floats(allow_nan=True, allow_infinity=True)))
def test_equal_graphs_have_equal_digests_and_keys(c):
    (ins1, outs1), (ins2, outs2) = _model(c), _model(c.copy())
    assert graph_digest(ins1, outs1) == graph_digest(ins2, outs2)
    const1, const2 = (
        outs1[0].owner.inputs[0].owner.inputs[0].owner.inputs[1],
        outs2[0].owner.inputs[0].owner.inputs[0].owner.inputs[1],
    )
    assert const1.key == const2.key  # constants by content
    assert outs1[1].owner.key == outs1[1].owner.op.make_node(*outs1[1].owner.inputs).key  # nodes by op and inputs


@given(
    c=hnp.arrays(np.float64, st.integers(1, 4), elements=st.floats(allow_nan=True, allow_infinity=True)),
    at=st.integers(0, 3),
    bit=st.integers(0, 63),
)
def test_a_constant_differing_in_one_bit_differs(c, at, bit):
    other = c.copy()
    other.view(np.uint64)[at % len(c)] ^= np.uint64(1 << bit)
    assert graph_digest(*_model(c)) != graph_digest(*_model(other))
    assert dg.core.constant(c).key != dg.core.constant(other).key


def test_ops_inputs_order_and_dtypes_change_the_digest():
    base = graph_digest(*_model(np.ones(2)))
    assert graph_digest(*_model(np.ones(2), op=dg.log)) != base
    assert graph_digest(*_model(np.ones(2, dtype=np.float32))) != base
    x, y = dg.scalar("x"), dg.scalar("y")
    assert graph_digest([x, y], [x - y]) != graph_digest([x, y], [y - x])
    assert graph_digest([x, y], [x - y]) == graph_digest([y, x], [y - x])  # inputs by position, not identity


def test_a_strict_encoder_refuses_what_only_this_process_knows():
    encode = digest.Encoder(strict=True)
    with pytest.raises(digest.Unstable):
        encode(lambda v: v)
    loose = digest.Encoder()
    f = lambda v: v  # noqa: E731
    assert loose(f) == loose(f) and loose.why_unstable is not None


def _chain(n, scale):
    x = dg.scalar("x")
    y = x
    for k in range(n):
        y = dg.sin(y) * scale + k
    return x, y


def test_inner_graphs_compare_by_digest_in_linear_time(monkeypatch):
    """Building a body encodes each of its ops once; comparing two bodies walks neither."""
    calls = []
    encode = digest.Encoder.__call__

    def counted(self, x):
        calls.append(1)
        return encode(self, x)

    monkeypatch.setattr(digest.Encoder, "__call__", counted)
    sizes = {}
    for n in (50, 100, 200):
        calls.clear()
        InnerGraph(*map(lambda v: [v], _chain(n, 2.0)))
        sizes[n] = len(calls)
    assert sizes[200] - sizes[100] == 2 * (sizes[100] - sizes[50])  # the same cost per node: linear

    a, b, c = (InnerGraph(*map(lambda v: [v], _chain(300, s))) for s in (2.0, 2.0, 3.0))
    import dimgraph.core.graph as graph_module

    monkeypatch.setattr(graph_module, "toposort", lambda *a, **k: pytest.fail("equality walked a graph"))
    calls.clear()
    assert a == b and hash(a) == hash(b) and a != c
    assert calls == []  # compared by the digests made when they were built


def test_nested_inner_graphs_digest_through_the_inner_digest():
    """A loop inside a loop: the outer body reads the inner body's digest, equal for equal builds."""

    def outer():
        x = dg.vector("x", size=4)
        c0 = dg.scalar("c0")
        final = dg.scan(lambda c, v: c * 0.5 + v, init=c0, sequences=x)[0]
        return InnerGraph([x, c0], [final + 1.0])

    one, two = outer(), outer()
    assert one == two and one.why_unstable is None
    (loop,) = [n.op for n in one.nodes() if isinstance(n.op, Scan)]
    (again,) = [n.op for n in two.nodes() if isinstance(n.op, Scan)]
    assert loop is not again and digest.op_digest(loop) == digest.op_digest(again)
    assert ("graph", loop.body.structural_digest) in digest.Encoder()(loop)[2:][0]


def test_merge_makes_equal_subgraphs_one():
    """Two separately built copies of one subgraph (ops equal, not identical) become one."""
    x = dg.vector("x", size=3)
    fg = FunctionGraph([x], [dg.exp(x * 2.0).sum(), dg.exp(x * 2.0).sum()])
    rewrite_graph(fg, {"include": ["merge"]})
    assert fg.outputs[0] is fg.outputs[1]
    assert [type(n.op).__name__ for n in fg.toposort()].count("Elemwise") == 2  # one mul, one exp
