"""The oracle source: the simulator's exact part labels, as scores of 0 or 1.

It is the upper bound every other source is measured against, and the region source for data
generation in simulation where labels are free. On a real robot there are no labels, so it
refuses a cloud without them instead of guessing.
"""

from __future__ import annotations

import numpy as np

from afford_core.ontology import category
from afford_core.types import ObjectCloud
from afford_perception.grounding.base import GroundingError, GroundingSource, register_source


@register_source("oracle")
class OracleSource(GroundingSource):
    """Score 1 on the points labelled ``part``, 0 elsewhere (unlabelled points, -1, score 0)."""

    def _ground(self, cloud: ObjectCloud, part: str) -> np.ndarray:
        if cloud.part_labels is None:
            raise GroundingError(
                f"the oracle source needs part labels, and this {cloud.category} cloud has none "
                "(only the simulator or the asset library provides them; use the 'geometric' source "
                "for real observations)"
            )
        # An empty part_names means the labels index the category's parts (ObjectCloud's contract).
        names = cloud.part_names or category(cloud.category).parts
        if part not in names:
            raise GroundingError(
                f"the cloud's label names {names} do not include {part!r}, so its labels cannot say "
                "where that part is"
            )
        return (np.asarray(cloud.part_labels) == names.index(part)).astype(np.float64)
