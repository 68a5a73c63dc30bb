"""`LabeledBlockwise`: a positional core op applied over named core dims, mapped over every other dim.

The labeled face of `dimgraph.core.blockwise`: each input names its core dims
(the ones the core op reads, in its axis order); every other dim is a batch
dim. Batch dims of all inputs broadcast by name (xarray's order of first
appearance, clashes refused) and come first in the outputs, core dims last
(API.md's rule for `dg.linalg`). The lowering transposes each input to
(batch dims, core dims), inserts length-1 axes for the batch dims it lacks,
and applies `Blockwise` (or the core op alone when there is no batch dim).
"""

from __future__ import annotations

from dataclasses import dataclass

from dimgraph.core.blockwise import Blockwise
from dimgraph.core.graph import Apply
from dimgraph.core.type import TensorType
from dimgraph.errors import DimError
from dimgraph.labeled.dims import clash, fmt_dims
from dimgraph.labeled.ops import LabeledOp, _check_labeled
from dimgraph.labeled.type import LabeledType


@dataclass(frozen=True)
class LabeledBlockwise(LabeledOp):
    """`core_op` (with gufunc `signature`) over `core_dims_in` of each input, giving `core_dims_out` per output."""

    core_op: object
    signature: str
    core_dims_in: tuple
    core_dims_out: tuple
    name: str = ""

    def _what(self):
        return self.name or str(self.core_op)

    def make_node(self, *inputs):
        what = self._what()
        if len(inputs) != len(self.core_dims_in):
            raise TypeError(f"{what}: takes {len(self.core_dims_in)} inputs, got {len(inputs)}")
        seen, batch = {}, []
        core_of = {}
        for k, (x, core) in enumerate(zip(inputs, self.core_dims_in)):
            _check_labeled(what, x)
            have = {d.name: d for d in x.type.dims}
            for d in core:
                if d.name not in have:
                    raise DimError(
                        f"{what}: {x.name or f'input {k}'} has no core dim {d.name!r}; its dims are {fmt_dims(x.type.dims)}"
                    )
                got = have[d.name]
                prev = core_of.setdefault(d.name, got)
                if prev != got:
                    raise clash(what, d.name, prev, "another input", got, x.name or f"input {k}")
            for d in x.type.dims:
                if any(d.name == c.name for c in core):
                    continue
                prev = seen.get(d.name)
                if prev is None:
                    seen[d.name] = d
                    batch.append(d)
                elif prev != d:
                    raise clash(what, d.name, prev, "another input", d, x.name or f"input {k}")
        clashing = [
            d.name
            for d in batch
            if d.name in core_of or any(d.name == c.name for out in self.core_dims_out for c in out)
        ]
        if clashing:
            raise DimError(f"{what}: the batch dims {clashing} are also core dims of another input or of the result")
        # the core op tells the dtypes (and checks the core sizes it knows)

        dummies = [
            TensorType(x.type.dtype, tuple(core_of[c.name].size for c in core)).make_variable()
            for x, core in zip(inputs, self.core_dims_in)
        ]
        core_node = Blockwise(self.core_op, self.signature).core_node(dummies)
        out_types = []
        for o, core in zip(core_node.outputs, self.core_dims_out):
            dims = tuple(batch) + tuple(core_of.get(c.name, c) for c in core)
            out_types.append(LabeledType(o.type.dtype, dims))
        return Apply(self, list(inputs), out_types)

    def __str__(self):
        return self._what()


def apply_blockwise(core_op, signature, inputs, core_dims_in, core_dims_out, name=""):
    """The outputs (one variable or a tuple) of `LabeledBlockwise` on labeled `inputs`."""
    op = LabeledBlockwise(
        core_op, signature, tuple(tuple(c) for c in core_dims_in), tuple(tuple(c) for c in core_dims_out), name
    )
    node = op.make_node(*inputs)
    return node.outputs[0] if len(node.outputs) == 1 else tuple(node.outputs)
