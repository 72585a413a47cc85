"""What a category generator is: a parameter class and a function from parameters to geometry."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .base import Link
from .palette import RGBA
from .params import Params
from .shapes import PieceSet


@dataclass
class Built:
    """What a build function returns; :func:`afford_sim.assets.make` wraps it into an Asset.

    Attributes:
        links: Rigid links, root first (see :class:`~afford_sim.assets.base.Link`).
        rgba: Colour per part.
        mass: Mass of the object (kg).
        centre_xy: Recentre the footprint's bounding box on the origin (objects that rest on
            several feet, such as a hammer lying on its head and handle end).
    """

    links: list[Link]
    rgba: dict[str, RGBA]
    mass: float
    centre_xy: bool = False

    @classmethod
    def rigid(cls, pieces: PieceSet, rgba: dict[str, RGBA], mass: float, centre_xy: bool = False) -> Built:
        """A one-link object."""
        return cls([Link("body", pieces.pieces)], rgba, mass, centre_xy)


@dataclass(frozen=True)
class Generator:
    """One category's generator.

    Attributes:
        params: The parameter class; its field ranges define the family of shapes.
        build: Turns sampled parameters (and the seeded stream, for colours) into geometry.
    """

    params: type[Params]
    build: Callable[[Any, np.random.Generator], Built]
