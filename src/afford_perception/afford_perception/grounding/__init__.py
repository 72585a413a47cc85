"""Affordance grounding: which observed points belong to the part a task names.

Sources (by registry name):

- ``oracle``: the simulator's exact part labels (upper bound, data generation).
- ``geometric``: a category prior names the part and a geometric partition of the observed
  cloud finds it; no labels, no learning (the region source of every AFFORD-X reported run).

Callers use ``make_source(name).ground(cloud, part)`` and never depend on which source answers.
A new source registers itself with ``@register_source("name")`` on its class, and is imported
below (or, for heavy dependencies, ``register_lazy_source("name", "module:Class")``).

``grounding.views`` makes realistic single-view clouds from procedural assets and holds the
grounding benchmark (``iou``, ``evaluate``); it is not imported here (it needs the asset
library and open3d only when used).
"""

from afford_perception.grounding import geometric, oracle  # noqa: F401  (registers the sources)
from afford_perception.grounding.base import (
    GroundingError,
    GroundingResult,
    GroundingSource,
    available_sources,
    make_source,
    region_mask,
    register_lazy_source,
    register_source,
)
from afford_perception.grounding.geometric import GeometricConfig, GeometricSource
from afford_perception.grounding.oracle import OracleSource

register_lazy_source("learned", "afford_perception.affordance.source:LearnedSource")  # torch only on use

__all__ = [
    "GeometricConfig",
    "GeometricSource",
    "GroundingError",
    "GroundingResult",
    "GroundingSource",
    "OracleSource",
    "available_sources",
    "make_source",
    "region_mask",
    "register_lazy_source",
    "register_source",
]
