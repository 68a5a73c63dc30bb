"""Quickstart: build a small positional graph, compile it, run it."""

import numpy as np

import dimgraph as dg

x = dg.tensor("x", shape=(None, 3))
w = dg.tensor("w", shape=(3,))
logits = x * w
y = dg.logsumexp(logits, axis=1)

f = dg.function([x, w], [y, logits.mean()], backend="python")
lse, m = f(np.arange(6.0).reshape(2, 3), np.array([1.0, 0.5, -1.0]))
print("logsumexp per row:", lse)
print("mean of logits:", m)
f.dprint()
