"""The cost model: what a graph costs to run, in nanoseconds of one core, with fusion modeled.

Counted (constants measured with numba on the project's 2-core box, 1e5 float64s):
- elements read and written by streaming kernels, `ELEMENT` each (a view,
  `DimShuffle`/basic `Subtensor`/`Reshape`, moves nothing: its consumer reads the base;
  nor does an `Assert`, which checks scalars and passes its value through);
- kernels launched, `KERNEL` each (loop set-up and the output's allocation);
- scalar work per element: `TRANSCENDENTAL` per call of sin/log/..., cheaper for
  the ops in `TRANSCENDENTAL_COST` (numba's exp is a vectorized polynomial),
  `ARITH` per arithmetic op;
- masked reads and writes (`x[mask]`, `set(x, mask, v)`): a branch per element that
  the CPU mispredicts at random masks, `MASKED_READ`/`MASKED_WRITE` per selected element.

Fusion is modeled the way `rewriting.fusion` fuses: an Elemwise whose input is an
Elemwise of the same static shape reads it from a register, not from memory, and
a reduction of an Elemwise reads its terms the same way. Sizes are estimates:
an axis known only at run time counts `UNKNOWN_LENGTH`, a boolean mask keeps
`MASK_FRACTION` of the elements it covers (the e-graph option `mask_fraction`
overrides it: the one fact the lazy-switch decision hinges on, and only the data knows it).

`graph_cost(fgraph)` prices a whole (fused) graph, counting each node once; the
extractor prices e-nodes locally (`node_cost`), a tree cost, as egg's greedy
extractor does.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from dimgraph.core.elemwise import DimShuffle, Elemwise
from dimgraph.core.extra import Assert
from dimgraph.core.fused import CAReduceElemwise, IndexedLoop
from dimgraph.core.reduce import CAReduce
from dimgraph.core.scalar import Composite, is_cheap
from dimgraph.core.shape import Shape, ShapeI
from dimgraph.core.shape_ops import Reshape
from dimgraph.core.subtensor import AdvancedIncSubtensor, AdvancedSubtensor, IncSubtensor, Subtensor
from dimgraph.core.type import TensorType

UNKNOWN_LENGTH = 10_000  # an axis whose length only the data says
MASK_FRACTION = 0.5  # the share of elements a boolean mask keeps (unknown when the graph is built)
ELEMENT = 0.25  # one float64 read or written by a streaming loop
KERNEL = 200.0  # one loop launched and its output allocated
ARITH = 0.1  # one add/mul/compare per element (vectorized)
TRANSCENDENTAL = 20.0  # one sin/cos/log/log1p/... call per element (measured 18-26 ns)
TRANSCENDENTAL_COST = {"exp": 1.0, "logaddexp": 40.0}  # measured: numba's exp 0.7 ns
MASKED_READ = 25.0  # per element kept by x[mask] (1.4 ms for 1e5 at half density)
MASKED_WRITE = 120.0  # per element written by set(x, mask, v) (6.5 ms for 1e5 at half density)

# Scalar ops that are not `cheap` in the scalar table (worth hoisting out of loops) but cost a few
# instructions, not a library call: priced as arithmetic.
ARITHMETIC = frozenset({"true_div", "reciprocal", "sqrt", "floor_div", "mod"})

VIEWS = (DimShuffle, Subtensor, Reshape, ShapeI, Shape, Assert)


def scalar_work(scalar_op):
    """(transcendental cost, arithmetic ops) of one evaluation of `scalar_op`."""
    if isinstance(scalar_op, Composite):
        trans = arith = 0.0
        for op, _ in scalar_op.steps:
            t, a = scalar_work(op)
            trans, arith = trans + t, arith + a
        return trans, arith
    if is_cheap(scalar_op) or scalar_op.name in ARITHMETIC:
        return 0.0, 1.0
    return TRANSCENDENTAL_COST.get(scalar_op.name, TRANSCENDENTAL), 0.0


def is_masked(op, in_types):
    """`op` reads or writes through a boolean mask."""
    return isinstance(op, (AdvancedSubtensor, AdvancedIncSubtensor)) and any(
        isinstance(t, TensorType) and t.dtype == "bool" for t in in_types[1:]
    )


def static_size(typ):
    """Elements of a value of type `typ`, unknown axes counted `UNKNOWN_LENGTH`."""
    if not isinstance(typ, TensorType):
        return 1
    return float(math.prod(UNKNOWN_LENGTH if s is None else s for s in typ.shape))


def estimate_size(op, out_type, in_types, in_sizes, mask_fraction=MASK_FRACTION):
    """Estimated elements of an output of `op` on inputs of these types and estimated sizes."""
    if isinstance(out_type, TensorType) and None not in out_type.shape:
        return float(math.prod(out_type.shape))
    if isinstance(op, Elemwise) and in_sizes:
        return max(in_sizes)
    if isinstance(op, (DimShuffle, Assert)):
        return in_sizes[0]
    if isinstance(op, (IncSubtensor, AdvancedIncSubtensor)):
        return in_sizes[0]
    if isinstance(op, AdvancedSubtensor) and is_masked(op, in_types):
        return in_sizes[0] * mask_fraction
    return static_size(out_type)


@dataclass
class GraphCost:
    """The cost of one graph: kernels, elements moved, transcendental and arithmetic work, masked traffic."""

    kernels: int = 0
    elements: float = 0.0
    transcendental: float = 0.0  # in TRANSCENDENTAL units (calls, exp weighted by its measured cost)
    arithmetic: float = 0.0
    masked: float = 0.0  # MASKED_READ/WRITE-weighted cost of masked reads and writes

    @property
    def total(self):
        return (
            ELEMENT * self.elements
            + KERNEL * self.kernels
            + self.transcendental
            + ARITH * self.arithmetic
            + self.masked
        )

    def __str__(self):
        return (
            f"cost {self.total:.4g} (kernels {self.kernels}, elements {self.elements:.4g}, "
            f"transcendental {self.transcendental:.4g}, masked {self.masked:.4g})"
        )


def _masked_cost(op, in_sizes, out_size, mask_fraction=MASK_FRACTION):
    if isinstance(op, AdvancedSubtensor):
        return MASKED_READ * out_size
    return MASKED_WRITE * in_sizes[0] * mask_fraction


def _work(node, sizes):
    """(transcendental cost, arithmetic ops) a node spends, in total over its elements."""
    op = node.op
    if isinstance(op, Elemwise):
        t, a = scalar_work(op.scalar_op)
        n = sizes[node.outputs[0]]
    elif isinstance(op, (CAReduceElemwise, IndexedLoop)):
        t, a = scalar_work(op.scalar_op)
        n = max(sizes[i] for i in node.inputs[: op.scalar_op.nin]) if op.scalar_op.nin else 1
    elif isinstance(op, CAReduce):
        t, a, n = 0, 1, sizes[node.inputs[0]]
    else:
        return 0.0, 0.0
    return t * n, a * n


def variable_sizes(fgraph, mask_fraction=MASK_FRACTION):
    """Estimated elements of every variable of `fgraph`."""
    sizes = {}

    def size(v):
        if v not in sizes:
            sizes[v] = static_size(v.type)
        return sizes[v]

    for node in fgraph.toposort():
        in_types = [i.type for i in node.inputs]
        in_sizes = [size(i) for i in node.inputs]
        for out in node.outputs:
            sizes[out] = estimate_size(node.op, out.type, in_types, in_sizes, mask_fraction)
    for v in fgraph.inputs:
        size(v)
    return sizes


def graph_cost(fgraph, mask_fraction=MASK_FRACTION):
    """The modeled cost of running `fgraph` as it stands (run it after fusion to model fusion exactly)."""
    sizes = variable_sizes(fgraph, mask_fraction)
    cost = GraphCost()
    for node in fgraph.toposort():
        if isinstance(node.op, VIEWS):
            continue
        cost.kernels += 1
        cost.elements += sum(sizes[i] for i in set(node.inputs)) + sum(sizes[o] for o in node.outputs)
        t, a = _work(node, sizes)
        cost.transcendental += t
        cost.arithmetic += a
        if is_masked(node.op, [i.type for i in node.inputs]):
            cost.masked += _masked_cost(node.op, [sizes[i] for i in node.inputs], sizes[node.outputs[0]], mask_fraction)
    return cost


# -- local costs for extraction --------------------------------------------------------------

FREE, ELEMWISE, REDUCE, KERNEL_KIND = "free", "elemwise", "reduce", "kernel"


def kind_of(op):
    """How an e-node's op runs: a view (free), a fusable Elemwise, a reduction, or its own kernel."""
    if op == "leaf" or isinstance(op, VIEWS):
        return FREE
    if isinstance(op, Elemwise):
        return ELEMWISE
    if isinstance(op, (CAReduce, CAReduceElemwise)):
        return REDUCE
    return KERNEL_KIND


def node_cost(op, out_type, out_size, children, mask_fraction=MASK_FRACTION):
    """Cost of one e-node without its children's own costs.

    `children`: (type, estimated size, kind of the child's chosen e-node) per
    child (the op's inputs in order). An Elemwise child of the consumer's shape
    fuses into an Elemwise or a reduction consumer (no memory traffic); any other
    Elemwise child is its own kernel whose output is written and read back.
    """
    kind = kind_of(op)
    cost = 0.0
    if kind == ELEMWISE:
        t, a = scalar_work(op.scalar_op)
        cost += out_size * (t + ARITH * a)
    elif kind == REDUCE:
        cost += KERNEL + ELEMENT * out_size + ARITH * children[0][1]
    elif kind == KERNEL_KIND:
        cost += KERNEL + ELEMENT * out_size
        if is_masked(op, [c[0] for c in children]):
            cost += _masked_cost(op, [c[1] for c in children], out_size, mask_fraction)
    seen = set()
    for k, (ctype, csize, ckind, cid) in enumerate(children):
        if cid in seen:
            continue
        seen.add(cid)
        fusable = (
            kind in (ELEMWISE, REDUCE) and ckind == ELEMWISE and (ctype == out_type if kind == ELEMWISE else k == 0)
        )
        if fusable:
            continue
        if ckind == ELEMWISE:
            cost += KERNEL + ELEMENT * csize  # the child runs as its own kernel and writes its result
        if kind != FREE:
            cost += ELEMENT * csize  # read from memory
    return cost
