"""The catalog of named distributions: each class registers its own name once, with `@register("normal")`.

`dg.dist.<name>`, `dg.rng(seed).<name>` and `Model.<name>` all look names up
here (none keeps a copy), so a distribution added to a family module is on
every surface as soon as the module is imported (`dimgraph.prob` imports them all).
"""

from __future__ import annotations

DISTRIBUTIONS: dict = {}
"""{name: Distribution class}, in the order the classes were registered."""


def register(name):
    """Class decorator: file the distribution under `name` (lower case, as `dg.dist.<name>` spells it)."""

    def decorate(cls):
        if name in DISTRIBUTIONS:
            raise ValueError(f"register: the distribution name {name!r} is taken by {DISTRIBUTIONS[name].__name__}")
        if not name.islower() or not name.isidentifier():
            raise ValueError(f"register: a distribution name is a lower-case identifier, got {name!r}")
        cls.registered_name = name
        DISTRIBUTIONS[name] = cls
        return cls

    return decorate


def by_class_name():
    """{class name: class} of the registered distributions (`dg.dist.Normal`)."""
    return {cls.__name__: cls for cls in DISTRIBUTIONS.values()}
