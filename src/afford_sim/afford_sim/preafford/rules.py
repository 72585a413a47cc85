"""The success rules of pre-grasp pushing, with the values the seed leaves open.

PreAfford (Sec. III-A) labels a grasp successful when the object rises by more than a height
``theta_v`` with a rotation under ``theta_r2``, and a push successful when the grasp score rises
by more than 40% with no fall and no collision of the gripper with a wall or slope; it gives no
values for the two thresholds. Ours, and why:
"""

from __future__ import annotations

import numpy as np

LIFT_M = 0.10
"""How far the hand lifts after closing (the seed's Delta z_2)."""
HOLD_S = 0.5
"""How long it then holds still (the seed's Delta t): a slipping grip shows within it."""
MIN_RISE_M = 0.06
"""theta_v: the object's centre must rise 6 of the hand's 10 cm. Above the slot's 3-5 cm depth
and the slope's lifted edge, so an object only tipped up by the fingers, or sliding out of them,
does not count; below the full 10 cm, so a grip that settles a few centimetres is still one."""
MAX_TURN_DEG = 20.0
"""theta_r2: the object's rotation relative to the hand from closing to the end of the hold.
A firm grip keeps it within a few degrees; an object pivoting about the pads (held by friction
at one corner) turns tens of degrees before it drops."""
PREGRASP_GAIN = 0.4
"""A push succeeds when the grasp score rises by more than 0.4 (absolute). The seed says 40%;
read as relative it would make any gain from a score of 0 infinite, so we read it as points of
success probability."""
FALL_Z = -0.08
"""An object whose lowest point is this far below the table top has fallen off (the slot's
floor is at most 5 cm down; the floor under the edge 75 cm)."""


def rotation_deg(r_a: np.ndarray, r_b: np.ndarray) -> float:
    """Angle (deg) of the rotation taking ``r_a`` to ``r_b`` (3x3 rotation matrices)."""
    c = (np.trace(r_a.T @ r_b) - 1.0) / 2.0
    return float(np.degrees(np.arccos(np.clip(c, -1.0, 1.0))))


def grasp_succeeded(rise_m: float, turn_deg: float) -> bool:
    """The grasp rule: risen at least :data:`MIN_RISE_M`, turned in the hand at most :data:`MAX_TURN_DEG`."""
    return rise_m >= MIN_RISE_M and turn_deg <= MAX_TURN_DEG


def pregrasp_succeeded(score_before: float, score_after: float, fell: bool, collided: bool) -> bool:
    """The push rule: the grasp score up by more than :data:`PREGRASP_GAIN`, no fall, no collision."""
    return not fell and not collided and score_after - score_before > PREGRASP_GAIN
