"""Grasp candidates and their scores: the planner's shared data types.

Gripper frame convention (the Franka Hand's TCP, as franky and libfranka use it):
    z: approach direction, pointing from the palm towards the object;
    y: finger closing axis (the fingers slide along +/- y);
    x: y cross z, completing a right-handed frame.
The candidate's position is the TCP: the point midway between the fingertip pads.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class GraspCandidate:
    """One grasp: where the TCP goes, how the hand is turned, and how it was scored.

    Attributes:
        position: (3,) TCP position in the world frame.
        rotation: (3, 3) rotation matrix whose columns are the gripper x, y, z axes in world.
        width: Finger opening (m) to use before closing.
        source: Which sampler proposed it (``"affordance"`` or ``"generic"``).
        terms: Named scores in [0, 1] (``reach``, ``approach``, ``clearance``, ``function``,
            ``task``, ``plan`` ...), filled in as the pipeline runs.
        score: The final ranking score under the configured rule.
        index: Position in its candidate set (stable across methods).
    """

    position: np.ndarray
    rotation: np.ndarray
    width: float = 0.08
    source: str = "affordance"
    terms: dict[str, float] = field(default_factory=dict)
    score: float = 0.0
    index: int = -1

    def __post_init__(self) -> None:
        self.position = np.asarray(self.position, dtype=np.float64).reshape(3)
        self.rotation = np.asarray(self.rotation, dtype=np.float64).reshape(3, 3)
        if not (np.all(np.isfinite(self.position)) and np.all(np.isfinite(self.rotation))):
            raise ValueError("grasp pose has NaN or infinite entries")
        if not np.allclose(self.rotation.T @ self.rotation, np.eye(3), atol=1e-6):
            raise ValueError("grasp rotation is not orthonormal")
        if np.linalg.det(self.rotation) < 0:
            raise ValueError("grasp rotation is a reflection")

    @property
    def approach(self) -> np.ndarray:
        """Unit approach direction (gripper z) in world."""
        return self.rotation[:, 2]

    @property
    def closing_axis(self) -> np.ndarray:
        """Unit finger closing axis (gripper y) in world."""
        return self.rotation[:, 1]

    def pose_matrix(self) -> np.ndarray:
        """4x4 homogeneous TCP pose in world."""
        t = np.eye(4)
        t[:3, :3] = self.rotation
        t[:3, 3] = self.position
        return t

    def as_dict(self) -> dict[str, object]:
        return {
            "index": self.index,
            "source": self.source,
            "position": [round(float(v), 5) for v in self.position],
            "rotation": [[round(float(v), 6) for v in row] for row in self.rotation],
            "width": round(float(self.width), 4),
            "terms": {k: round(float(v), 4) for k, v in self.terms.items()},
            "score": round(float(self.score), 6),
        }
