"""Types of graph variables.

A `TensorType` is a dtype plus a static shape: an int per axis where the size is
known when the graph is built, None where it is only known at run time. Types are
frozen values; a variable's type never changes (rewrites replace variables).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class Type:
    """Base of all variable types; subclasses are frozen dataclasses."""

    def make_variable(self, name=None):
        raise NotImplementedError(f"{type(self).__name__} cannot make variables")

    def is_super(self, other: "Type") -> bool:
        """True when every value of `other` is a value of `self` (replacement is safe)."""
        return self == other


@dataclass(frozen=True)
class TensorType(Type):
    dtype: str
    shape: tuple

    def __post_init__(self):
        object.__setattr__(self, "dtype", np.dtype(self.dtype).name)
        shape = tuple(None if s is None else int(s) for s in self.shape)
        if any(s is not None and s < 0 for s in shape):
            raise ValueError(f"TensorType: negative static size in shape {shape}")
        object.__setattr__(self, "shape", shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def make_variable(self, name=None):
        # cycle: TensorVariable's operators build ops, whose modules import this one
        from dimgraph.core.variable import TensorVariable

        return TensorVariable(self, name=name)

    def is_super(self, other) -> bool:
        return (
            isinstance(other, TensorType)
            and other.dtype == self.dtype
            and other.ndim == self.ndim
            and all(s is None or s == o for s, o in zip(self.shape, other.shape))
        )

    def __str__(self):
        dims = ", ".join("?" if s is None else str(s) for s in self.shape)
        return f"{self.dtype}({dims})"
