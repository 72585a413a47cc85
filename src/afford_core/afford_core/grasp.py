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


# --- random grasps in this frame ------------------------------------------------------------------


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def cross3(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``np.cross(a, b)`` for two float 3-vectors, bitwise the same (both promoted to their common
    type, then the same products and differences in the same order), without its per-call
    overhead (about 15 us of array plumbing, which dominated the grasp samplers' time). Anything
    else goes to ``np.cross``."""
    if a.shape != (3,) or b.shape != (3,) or a.dtype not in _FLOATS or b.dtype not in _FLOATS:
        return np.cross(a, b)
    kind = np.result_type(a, b)
    if kind == np.float64:
        a0, a1, a2 = a.tolist()  # Python floats: float64 arithmetic
        b0, b1, b2 = b.tolist()
    else:
        a0, a1, a2 = a  # float32 scalars: float32 arithmetic, as np.cross on float32 arrays
        b0, b1, b2 = b
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], dtype=kind)


def hand_frame(approach: np.ndarray, closing: np.ndarray) -> np.ndarray:
    """The rotation whose columns are the gripper x, y (``closing``), z (``approach``) axes."""
    return np.column_stack([cross3(closing, approach), closing, approach])


def perpendicular(v: np.ndarray) -> np.ndarray:
    """A unit vector perpendicular to unit ``v`` (v x world x, or v x world y when v is near x)."""
    ref = np.array([1.0, 0.0, 0.0]) if abs(v[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = cross3(v, ref)
    return u / np.linalg.norm(u)


def tilted(v: np.ndarray, max_angle: float, rng: np.random.Generator) -> np.ndarray:
    """Unit ``v`` turned by up to ``max_angle`` (rad) about a random axis perpendicular to it."""
    a = perpendicular(v)
    t = rng.uniform(0.0, 2 * np.pi)
    axis = np.cos(t) * a + np.sin(t) * cross3(v, a)
    ang = rng.uniform(0.0, max_angle)
    out = np.cos(ang) * v + np.sin(ang) * cross3(axis, v)
    return out / np.linalg.norm(out)


def hemisphere_grasp(
    point: np.ndarray, normal: np.ndarray, rng: np.random.Generator, max_depth: float
) -> tuple[np.ndarray, np.ndarray]:
    """PreAfford's grasp sampler at a surface point: an approach from the hemisphere outside
    ``normal``, a closing axis uniform about it, the TCP 0-``max_depth`` past the point.
    Returns (tcp, rotation)."""
    d = rng.normal(size=3)
    d /= np.linalg.norm(d)
    if d @ normal < 0:
        d = -d
    approach = -d  # from outside the surface, towards it
    x = perpendicular(approach)
    y = cross3(approach, x)
    a = rng.uniform(0.0, np.pi)
    rot = hand_frame(approach, np.cos(a) * x + np.sin(a) * y)
    return point + rng.uniform(0.0, max_depth) * approach, rot


def pinch_grasp(
    point: np.ndarray, outward: np.ndarray, across: np.ndarray, rng: np.random.Generator, max_depth: float
) -> tuple[np.ndarray, np.ndarray]:
    """A pinch across a slab at its rim: approached against ``outward`` (within 20 deg), the
    fingers closing along ``across``, the slab's thickness (within 15 deg, then made square to
    the approach), the TCP 0-``max_depth`` in from ``point``. Returns (tcp, rotation)."""
    approach = tilted(-outward, np.radians(20.0), rng)
    closing = tilted(across, np.radians(15.0), rng)
    closing -= (closing @ approach) * approach
    closing /= np.linalg.norm(closing)
    return point + rng.uniform(0.0, max_depth) * approach, hand_frame(approach, closing)
