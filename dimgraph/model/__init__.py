"""Models: named random variables with transforms, deterministics, data and observations (`dg.Model`)."""

from dimgraph.model.model import LogpFunction, Model  # noqa: F401
