"""`dg.to_dot`: a graph as Graphviz DOT text, rendered to SVG where Graphviz is installed.

PyTensor users have `pydotprint`/d3viz; here one function gives the text (always:
it needs nothing) and, where a Graphviz program is installed (the system `dot`, or
the pip-installable graphviz-pure of the `graphviz` extra), a picture that
notebooks display by themselves. Ops are boxes, graph inputs are
rounded boxes, edges carry the value's dtype with dims (or shape), and a fused
kernel is a cluster holding the scalar steps it computes in one loop.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import warnings

from dimgraph.core.graph import Constant, toposort
from dimgraph.core.scalar import Composite
from dimgraph.printing import _type


class RenderUnavailable(RuntimeError):
    """No Graphviz program is installed to turn DOT text into a picture."""


INSTALL_HINT = (
    "no Graphviz renderer found: install one with `pip install 'dimgraph[graphviz]'` (graphviz-pure, a "
    "self-contained dot program) or Graphviz itself (apt install graphviz, brew install graphviz, conda install "
    "graphviz); until then notebooks show the DOT text"
)


def renderer():
    """The program that renders DOT text: Graphviz's `dot` on PATH, else graphviz-pure's (PATH or this venv), else None."""
    found = shutil.which("dot")
    if found:
        return found
    beside = os.path.join(os.path.dirname(sys.executable), "graphviz-pure")
    return shutil.which("graphviz-pure") or (beside if os.access(beside, os.X_OK) else None)


class DotGraph(str):
    """DOT text (a `str`) that renders itself as SVG in notebooks where a Graphviz program is installed."""

    def svg(self) -> str:
        """The picture as SVG text, from the program `renderer()` finds (`RenderUnavailable` naming what to install)."""
        program = renderer()
        if program is None:
            raise RenderUnavailable(INSTALL_HINT)
        done = subprocess.run([program, "-Tsvg"], input=str(self).encode(), capture_output=True, timeout=120)
        if done.returncode:
            raise RenderUnavailable(f"{program} failed on this graph: {done.stderr.decode(errors='replace').strip()}")
        return done.stdout.decode()

    def _repr_svg_(self):
        try:
            return self.svg()
        except RenderUnavailable as err:  # the notebook falls back to the text; say once what would draw it
            _warn_once(str(err))
            return None


_warned = set()


def _warn_once(message):
    if message not in _warned:
        _warned.add(message)
        warnings.warn(message, RuntimeWarning, stacklevel=3)


def to_dot(obj, max_label=60) -> DotGraph:
    """The graph of a compiled function (its rewritten graph) or of variables, as Graphviz DOT text.

    >>> import dimgraph as dg
    >>> x = dg.labeled("x", dims=(dg.Dim("i", size=3),))
    >>> text = dg.to_dot(dg.exp(x).sum())
    >>> text.startswith("digraph dimgraph {"), "i: 3" in text
    (True, True)
    """
    fgraph = getattr(obj, "fgraph", None)
    builder = _Builder(max_label)
    if fgraph is None:
        outputs = list(obj) if isinstance(obj, (list, tuple)) else [obj]
        return DotGraph(builder.build(outputs, [o.name for o in outputs]))
    for pos, user in zip(fgraph.inputs, obj.inputs):  # the rewritten graph's inputs stand for the user's
        dims = getattr(user.type, "dims", None)
        if dims is not None:
            builder.names[id(pos)] = tuple(d.name for d in dims)
    return DotGraph(builder.build(list(fgraph.outputs), [o.name for o in obj.outputs]))


def _quote(text) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


class _Builder:
    def __init__(self, max_label):
        self.max_label = max_label
        self.lines, self.ids, self.sources, self.names = [], {}, {}, {}

    def _short(self, text):
        text = str(text)
        return text if len(text) <= self.max_label else text[: self.max_label - 3] + "..."

    def _node(self, key, label, **attrs):
        ident = self.ids.setdefault(key, f"n{len(self.ids)}")
        extra = "".join(f", {k}={_quote(v)}" for k, v in attrs.items())
        self.lines.append(f"  {ident} [label={_quote(label)}{extra}];")
        return ident

    def _edge(self, source, target, var):
        self.lines.append(f"  {source} -> {target} [label={_quote(_type(var, self.names))}];")

    def _source(self, var):
        """The DOT node a value comes from (graph inputs and constants get a node on first use)."""
        if id(var) in self.sources:
            return self.sources[id(var)]
        if isinstance(var, Constant):
            data = getattr(var, "data", None)
            label = (
                self._short(repr(var).split(":")[0]) if data is None or getattr(data, "size", 1) <= 4 else "constant"
            )
            ident = self._node(("var", id(var)), label, shape="plaintext")
        else:
            ident = self._node(
                ("var", id(var)),
                f"{var.name or 'input'}\n{_type(var, self.names)}",
                shape="box",
                style="rounded,filled",
                fillcolor="#e8f0fe",
            )
        self.sources[id(var)] = ident
        return ident

    def build(self, outputs, names):
        self.lines = ["digraph dimgraph {", "  rankdir=TB;", '  node [fontname="Helvetica", fontsize=10, shape=box];',
                      '  edge [fontname="Helvetica", fontsize=8];']  # fmt: skip
        nodes = toposort(outputs)
        for node in nodes:  # graph inputs and constants first, so none is drawn inside a kernel's cluster
            for i in node.inputs:
                if i.owner is None:
                    self._source(i)
        for k, node in enumerate(nodes):
            composite = getattr(node.op, "scalar_op", None)
            if isinstance(composite, Composite):
                self._kernel(k, node, composite)
            else:
                ident = self._node(("apply", id(node)), self._short(node.op))
                for i in node.inputs:
                    self._edge(self._source(i), ident, i)
                for o in node.outputs:
                    self.sources[id(o)] = ident
        for k, (out, name) in enumerate(zip(outputs, names)):
            ident = self._node(("out", k), f"output {k}" + (f": {name}" if name else ""), shape="box", style="bold")
            self._edge(self._source(out), ident, out)
        self.lines.append("}")
        return "\n".join(self.lines) + "\n"

    def _kernel(self, k, node, composite):
        """A cluster of the kernel's scalar steps (and the kernel op itself unless it is a plain Elemwise).

        Edges from outside are written after the cluster: an edge inside a DOT subgraph would pull
        its other end into the cluster.
        """
        body_start = len(self.lines)
        steps, incoming = [], []
        for j, (op, refs) in enumerate(composite.steps):
            ident = self._node(("step", id(node), j), getattr(op, "name", str(op)), shape="ellipse")
            steps.append(ident)
            for r in refs:
                if r < composite.nin:
                    incoming.append((self._source(node.inputs[r]), ident, node.inputs[r]))
                else:
                    self.lines.append(f"  {steps[r - composite.nin]} -> {ident};")
        if type(node.op).__name__ == "Elemwise":
            for o, ref in zip(node.outputs, composite.outs):
                self.sources[id(o)] = (
                    steps[ref - composite.nin] if ref >= composite.nin else self._source(node.inputs[ref])
                )
        else:
            ident = self._node(("apply", id(node)), self._short(f"{type(node.op).__name__}{_params(node.op)}"))
            for ref in composite.outs:
                if ref >= composite.nin:
                    self.lines.append(f"  {steps[ref - composite.nin]} -> {ident};")
            for o in node.outputs:
                self.sources[id(o)] = ident
        body = self.lines[body_start:]
        shape = _type(node.outputs[0], self.names)
        self.lines[body_start:] = [
            f"  subgraph cluster_{k} {{",
            f"    label={_quote(f'fused kernel: {type(node.op).__name__} {shape}')}; style=dashed; color=gray40;",
            *("  " + line for line in body),
            "  }",
        ]
        for source, target, var in incoming:
            self._edge(source, target, var)


def _params(op) -> str:
    reducer, axis = getattr(op, "reducer", None), getattr(op, "axis", None)
    return "" if reducer is None else f"{{{reducer}, axis={list(axis) if axis is not None else None}}}"
