"""Sampled shape parameters: a dataclass whose fields carry their own ranges.

Each generator declares its parameters as a :class:`Params` subclass whose fields are made with
:func:`span` (a float range) or :func:`count` (an integer range). The ranges live next to the
field, so sampling, validation and documentation cannot drift apart: ``sample`` draws every
field uniformly from its range and ``__post_init__`` rejects hand-given values outside its limits
(the range, unless the field declares wider ones a task may pin a value in).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Self

import numpy as np


def span(lo: float, hi: float, limits: tuple[float, float] | None = None) -> Any:
    """A float parameter drawn uniformly from ``[lo, hi]``; its default is the midpoint.

    ``limits`` (default: the range itself) is the wider interval the generator still builds a
    sound object in. Only a value given by hand (an override) may use it: a task that needs a
    smaller cube or a wider bowl than the everyday draw pins one there (``make("cube", 3,
    size=0.03)``), while the default distribution stays what every other scene was built with.
    """
    if not lo <= hi:
        raise ValueError(f"empty parameter range [{lo}, {hi}]")
    low, high = limits if limits is not None else (lo, hi)
    if not low <= lo <= hi <= high:
        raise ValueError(f"limits [{low}, {high}] must contain the range [{lo}, {hi}]")
    return field(default=(lo + hi) / 2, metadata={"range": (float(lo), float(hi)), "integer": False,
                                                   "limits": (float(low), float(high))})


def count(lo: int, hi: int, limits: tuple[int, int] | None = None) -> Any:
    """An integer parameter drawn uniformly from ``lo..hi`` inclusive; its default is ``lo``.

    ``limits`` is as for :func:`span`: a wider range only a task's pinned value may use.
    """
    if not lo <= hi:
        raise ValueError(f"empty parameter range {lo}..{hi}")
    low, high = limits if limits is not None else (lo, hi)
    if not low <= lo <= hi <= high:
        raise ValueError(f"limits {low}..{high} must contain the range {lo}..{hi}")
    return field(default=lo, metadata={"range": (lo, hi), "integer": True, "limits": (low, high)})


@dataclass
class Params:
    """Base of every generator's parameter set; subclasses only declare fields."""

    def __post_init__(self) -> None:
        for f in fields(self):
            lo, hi = f.metadata["limits"]
            value = getattr(self, f.name)
            if f.metadata["integer"] and int(value) != value:
                raise ValueError(f"{type(self).__name__}.{f.name} must be an integer, got {value!r}")
            if not lo <= value <= hi:
                raise ValueError(f"{type(self).__name__}.{f.name} = {value!r} is outside [{lo}, {hi}]")

    @classmethod
    def ranges(cls) -> dict[str, tuple[float, float]]:
        """Every field's (lower, upper) range."""
        return {f.name: f.metadata["range"] for f in fields(cls)}

    @classmethod
    def limits(cls) -> dict[str, tuple[float, float]]:
        """Every field's (lower, upper) limits: what a hand-given value may take."""
        return {f.name: f.metadata["limits"] for f in fields(cls)}

    @classmethod
    def sample(cls, rng: np.random.Generator, overrides: Mapping[str, float] | None = None) -> Self:
        """Draw every field from its range, then apply ``overrides`` (validated like the rest).

        All fields are drawn even when overridden, so an override does not shift the random
        stream and the rest of the object (colours included) stays what the seed gives.
        """
        values: dict[str, float] = {}
        for f in fields(cls):
            lo, hi = f.metadata["range"]
            integer = f.metadata["integer"]
            values[f.name] = int(rng.integers(lo, hi + 1)) if integer else float(rng.uniform(lo, hi))
        unknown = set(overrides or {}) - set(values)
        if unknown:
            raise ValueError(f"{cls.__name__} has no parameters {sorted(unknown)}; known: {sorted(values)}")
        values.update(overrides or {})
        return cls(**values)

    def as_dict(self) -> dict[str, float]:
        """Field values by name (integer fields stay ``int``, so ``cls(**as_dict())`` round-trips)."""
        return {f.name: (int if f.metadata["integer"] else float)(getattr(self, f.name))
                for f in fields(self)}
