"""Data types that cross module boundaries in perception: the typed intent and object clouds.

Frames: every array in world coordinates (metres, z up, the robot base at the origin)
unless a field says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np


class NextAction(StrEnum):
    """What happens after the grasp; compiles into task constraints on the grasp."""

    PICK = "pick"  # lift only
    PLACE = "place"
    INSERT = "insert"
    POUR = "pour"
    STACK = "stack"
    HANG = "hang"
    HAND_OVER = "hand_over"
    OPEN = "open"
    CLOSE = "close"
    PUSH = "push"
    PULL = "pull"


@dataclass(frozen=True)
class Intent:
    """A task sentence resolved to what must be touched and what happens next.

    Attributes:
        target: Category of the object to interact with (``"mug"``).
        grasp_region: Part of the target the gripper must hold (``"body"``).
        keep_clear: Parts of the target the grasp must stay away from (``("handle",)``).
        next_action: What the held object is used for after the grasp.
        destination: Category of the receiving object, if any (``"rack"``).
        destination_region: Part of the destination that receives (``"hook"``).
        use_region: Part of the target that does the work in the next action (a kettle's
            ``"spout"`` when pouring), if any.
        text: The sentence this came from.
    """

    target: str
    grasp_region: str
    next_action: NextAction
    keep_clear: tuple[str, ...] = ()
    destination: str | None = None
    destination_region: str | None = None
    use_region: str | None = None
    text: str = ""

    def __post_init__(self) -> None:
        if self.grasp_region in self.keep_clear:
            raise ValueError(
                f"contradictory intent: grasp region {self.grasp_region!r} is also a part to keep clear"
            )
        if self.destination_region is not None and self.destination is None:
            raise ValueError("destination_region given without a destination")

    def as_dict(self) -> dict[str, object]:
        """JSON-ready form used by the CLI and the ROS message conversion."""
        return {
            "target": self.target,
            "grasp_region": self.grasp_region,
            "keep_clear": list(self.keep_clear),
            "next_action": self.next_action.value,
            "destination": self.destination,
            "destination_region": self.destination_region,
            "use_region": self.use_region,
        }


@dataclass
class ObjectCloud:
    """Points observed (or sampled) on one object.

    Attributes:
        points: (N, 3) float64 positions in the world frame.
        category: Object category (a key of ``ontology.CATEGORIES``).
        normals: Optional (N, 3) unit normals pointing out of the object.
        part_labels: Optional (N,) int labels indexing ``part_names``; -1 for unlabelled.
            Only a simulator or the asset library can provide them (the oracle source).
        part_names: Names for the label indices; the category's parts in ontology order.
        object_center: Optional (3,) reference centre (for orienting normals outward); the
            cloud centroid is used when absent.
    """

    points: np.ndarray
    category: str
    normals: np.ndarray | None = None
    part_labels: np.ndarray | None = None
    part_names: tuple[str, ...] = field(default_factory=tuple)
    object_center: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.points = np.asarray(self.points, dtype=np.float64)
        if self.points.ndim != 2 or self.points.shape[1] != 3:
            raise ValueError(f"points must be (N, 3), got {self.points.shape}")
        if len(self.points) == 0:
            raise ValueError(f"empty cloud for {self.category!r}: nothing of the object was observed")
        if not np.all(np.isfinite(self.points)):
            raise ValueError(f"cloud for {self.category!r} contains NaN or infinite points")
        n = len(self.points)
        if self.normals is not None and np.shape(self.normals) != (n, 3):
            raise ValueError("normals must match points")
        if self.part_labels is not None:
            self.part_labels = np.asarray(self.part_labels, dtype=np.int64)
            if self.part_labels.shape != (n,):
                raise ValueError("part_labels must be (N,)")

    def __len__(self) -> int:
        return len(self.points)

    @property
    def center(self) -> np.ndarray:
        return self.object_center if self.object_center is not None else self.points.mean(axis=0)

    def part_mask(self, part: str) -> np.ndarray:
        """Boolean mask of the points labelled ``part``; requires labels."""
        if self.part_labels is None:
            raise ValueError("this cloud has no part labels")
        if part not in self.part_names:
            raise KeyError(f"{self.category} has no part {part!r}; parts: {self.part_names}")
        return self.part_labels == self.part_names.index(part)


def region_names(intent: Intent) -> list[str]:
    """The target's parts a task needs grounded: the grasp region, the parts kept clear and the
    part used by the next action, without repeats."""
    names = [intent.grasp_region, *intent.keep_clear, *([intent.use_region] if intent.use_region else [])]
    return list(dict.fromkeys(names))
