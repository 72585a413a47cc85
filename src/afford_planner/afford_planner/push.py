"""Push contacts: where an open hand meets an object to slide it along the table.

A push candidate is a :class:`~afford_core.grasp.GraspCandidate` whose pose is the hand's start
of contact: just behind the pushed region's back face (as seen along the push direction), low on
the object, the hand pitched so that its fingertips lead and the palm stays back and up, the
fingers spread across the push direction. The approach ends there (the pre-pose lies back along
the pitched approach, behind and above); the push skill then moves the hand straight along the
push direction.

Why low and pitched: a tall object pushed above ``radius / friction`` over its base tips over
instead of sliding (a 10 cm coffee tin with table friction 1 tips when pushed higher than 5 cm),
so the contact sits 2.5 cm above the object's base; a hand pointing straight down would meet the
object with its palm first, 5 cm above the fingertips. An object that cannot be pushed that low
without tipping (a tall, narrow post) or that is too flat for it gets no contact: the episode
abstains.
Why spread fingers: two fingertips on the back face, 8 cm apart, cradle a round body and keep a
box from turning as it slides.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from afford_core.geometry import perceived_center
from afford_core.grasp import GraspCandidate


@dataclass(frozen=True)
class PushConfig:
    """How push contacts are laid out.

    Attributes:
        height: Contact height above the object's lowest observed point (m), one for every
            contact: low, yet with the fingertips (1 cm below the TCP, pitched) clear of the
            table and of a mat on it (at 1.5-2 cm they touched it and the planner stopped the
            push). Offering higher contacts too let the planner's shortest path pick them: a
            tin pushed at 3 cm fell over where it slid at 2.5 cm.
        max_height_share: No contact when the height is above this share of the object's
            height: a box must stand at least 4.5 cm tall for the fingertips to stay below its
            top edge, over which they would slide.
        tip_share: No contact when the height is above this share of the base's half-depth
            along the push. An object pushed at height h over a base reaching b ahead of its
            centre tips once h exceeds b / friction (table friction 1); measured, a 10 cm tin fell
            in 4 of 10 pushes at 4.5 cm, and slid upright at 2.5 cm: at most 0.6 of b.
        offsets: Lateral offsets of the push line from the object's centre, across the push
            direction (m).
        pitches_deg: Angles of the hand's approach axis from straight down, tipped towards the
            push direction (deg).
        gap: Distance behind the back face where the contact pose sits (m); the push closes it.
        band: Margin beyond the spread fingers of the slab of points that decides where the
            object's back is, and half-width of the slab in which the region must reach the
            back (m).
        reach_region: A push line whose region points all lie farther than this ahead of the
            object's back is dropped (m): it would push the object by another part.
    """

    height: float = 0.025
    max_height_share: float = 0.55
    tip_share: float = 0.6
    offsets: tuple[float, ...] = (0.0, -0.015, 0.015)
    pitches_deg: tuple[float, ...] = (45.0, 30.0)
    gap: float = 0.01
    band: float = 0.015
    reach_region: float = 0.03

    def __post_init__(self) -> None:
        if self.height <= 0:
            raise ValueError("PushConfig.height must be positive")
        if not self.offsets:
            raise ValueError("PushConfig.offsets must not be empty")
        if not 0 < self.max_height_share <= 1 or not 0 < self.tip_share <= 1:
            raise ValueError("PushConfig.max_height_share and tip_share must be in (0, 1]")
        if any(not 0 <= p < 90 for p in self.pitches_deg) or not self.pitches_deg:
            raise ValueError("PushConfig.pitches_deg must be in [0, 90)")
        if self.gap < 0 or self.band <= 0 or self.reach_region <= 0:
            raise ValueError("PushConfig.gap must be >= 0, band and reach_region > 0")


def push_goal(receiving: np.ndarray, tol: float = 0.003, min_arc_deg: float = 120.0) -> np.ndarray:
    """Where a pushed object's centre should end: the middle of the receiving part's points (a
    mat seen from above), at their median height.

    The middle is the centre of the circle that most corners of the points' outline (their
    convex hull) lie on, within ``tol``, when those corners span at least ``min_arc_deg`` of
    it; else the middle of the points' extent. Part of a round mat hidden behind something
    taller (a shelf) cuts its outline along an edge whose corners lie inside the rim, while the
    rest of the outline is the rim: the circle through the rim's corners is the whole mat's,
    where the middle of the seen extent moved 3-5 cm off towards the seen part and the push
    stopped short of the mat.
    """
    pts = np.asarray(receiving, dtype=float).reshape(-1, 3)
    if len(pts) == 0:
        raise ValueError("a push goal needs the receiving part's points")
    lo, hi = np.percentile(pts[:, :2], 2, axis=0), np.percentile(pts[:, :2], 98, axis=0)
    middle = 0.5 * (lo + hi)
    centre = outline_centre(pts[:, :2], tol, min_arc_deg)
    if centre is not None:
        middle = centre
    return np.array([*middle, float(np.median(pts[:, 2]))])


def outline_centre(xy: np.ndarray, tol: float = 0.003, min_arc_deg: float = 120.0,
                   tries: int = 300) -> np.ndarray | None:
    """Centre of the circle most outline corners of ``xy`` (top-view points of a round thing)
    lie on, within ``tol`` (a seeded consensus over circles through three corners, refitted to
    its inliers), or None when no circle holds enough of them over ``min_arc_deg`` of arc, or
    the points' middle is not inside it. A round mat's or lid's rim, even partly hidden."""
    from scipy.spatial import ConvexHull, QhullError

    from afford_planner.candidates import fit_circle

    try:
        ring = xy[ConvexHull(xy).vertices]
    except (QhullError, ValueError):
        return None
    if len(ring) < 6:
        return None
    rng = np.random.default_rng(0)
    best: np.ndarray | None = None
    for _ in range(tries):
        centre, radius, _ = fit_circle(ring[rng.choice(len(ring), 3, replace=False)])
        if not np.all(np.isfinite(centre)) or radius <= 0:
            continue
        inliers = np.abs(np.linalg.norm(ring - centre, axis=1) - radius) <= tol
        if best is None or inliers.sum() > best.sum():
            best = inliers
    if best is None or best.sum() < 6:
        return None
    centre, radius, _ = fit_circle(ring[best])
    arc = arc_deg(ring[best], centre)
    if arc < min_arc_deg or np.linalg.norm(np.median(xy, axis=0) - centre) >= radius:
        return None
    return centre


def arc_deg(xy: np.ndarray, centre: np.ndarray) -> float:
    """How much of the circle about ``centre`` the points ``xy`` go round (deg): 360 less the
    widest gap between their angles."""
    angles = np.sort(np.arctan2(xy[:, 1] - centre[1], xy[:, 0] - centre[0]))
    gaps = np.diff(np.concatenate([angles, [angles[0] + 2 * np.pi]]))
    return float(np.degrees(2 * np.pi - gaps.max()))


def push_direction(centre: np.ndarray, goal: np.ndarray) -> np.ndarray:
    """Unit horizontal direction from ``centre`` to ``goal`` (zero when they coincide in xy)."""
    d = np.zeros(3)
    d[:2] = np.asarray(goal, dtype=float)[:2] - np.asarray(centre, dtype=float)[:2]
    n = float(np.linalg.norm(d))
    return d / n if n > 1e-6 else np.zeros(3)


def push_rotation(direction: np.ndarray, pitch_deg: float) -> np.ndarray:
    """The hand's rotation for a push along ``direction``: approach (z) pitched ``pitch_deg``
    from straight down towards the push, fingers (y) spread across it."""
    d = np.asarray(direction, dtype=float)
    a = np.radians(pitch_deg)
    z = np.array([0.0, 0.0, -np.cos(a)]) + np.sin(a) * d
    y = np.cross(np.array([0.0, 0.0, 1.0]), d)
    y /= np.linalg.norm(y)
    x = np.cross(y, z)
    return np.column_stack([x, y, z])


def sample_push_contacts(region: np.ndarray, cloud: np.ndarray, centre: np.ndarray, direction: np.ndarray,
                         width: float, config: PushConfig | None = None) -> list[GraspCandidate]:
    """Push contacts on ``region`` (the part the push may touch) for a push along ``direction``.

    Args:
        region: (M, 3) grounded points of the part to push by (world).
        cloud: (N, 3) the whole observed object; its lowest point is the base the height counts
            from; its height and its depth along the push decide whether it can be pushed.
        centre: The object's centre; push lines run through it, offset sideways.
        direction: Unit horizontal push direction.
        width: Finger opening of every candidate (the hand's full stroke: spread fingertips).
        config: Layout; defaults to :class:`PushConfig`.

    Returns:
        Candidates (``source="push"``), possibly none: none for a zero direction or an empty
        region, none where the contact is not on the region, and none for an object too
        narrow (it would tip) or too flat to be pushed at the contact height.
    """
    cfg = config or PushConfig()
    region = np.asarray(region, dtype=float).reshape(-1, 3)
    cloud = np.asarray(cloud, dtype=float).reshape(-1, 3)
    d = np.asarray(direction, dtype=float)
    if len(region) == 0 or len(cloud) == 0 or float(np.linalg.norm(d)) < 0.5:
        return []
    across = np.cross(np.array([0.0, 0.0, 1.0]), d)
    base = float(np.percentile(cloud[:, 2], 1))
    tall = float(np.percentile(cloud[:, 2], 99)) - base
    rel = cloud - np.asarray(centre, dtype=float)
    along, side = rel @ d, rel @ across
    half_base = 0.5 * float(np.percentile(along, 99) - np.percentile(along, 1))
    h = cfg.height
    if h > cfg.max_height_share * tall or h > cfg.tip_share * half_base:
        return []
    rrel = region - np.asarray(centre, dtype=float)
    r_along, r_side = rrel @ d, rrel @ across
    out: list[GraspCandidate] = []
    for o in cfg.offsets:
        # The object's back across the hand's whole spread (a box at 30 deg meets the outer
        # finger first), from every height: a camera in front sees a box's top and front face,
        # which reach back as far as its hidden back face.
        line = np.abs(side - o) <= 0.5 * width + cfg.band
        if not line.any():
            continue
        back = float(along[line].min())
        # The contact must land on the part the push may touch (a tin's body, not its lid): the
        # region reaches the object's back on this line.
        r_line = np.abs(r_side - o) <= cfg.band
        if not r_line.any() or float(r_along[r_line].min()) > back + cfg.reach_region:
            continue
        pos = np.asarray(centre, dtype=float) + (back - cfg.gap) * d + o * across
        pos[2] = base + h
        for pitch in cfg.pitches_deg:
            out.append(GraspCandidate(pos.copy(), push_rotation(d, pitch), width=width, source="push"))
    return out


def push_contacts_towards(region: np.ndarray, cloud: np.ndarray, goal: np.ndarray, width: float,
                          config: PushConfig | None = None) -> list[GraspCandidate]:
    """:func:`sample_push_contacts` for a push that brings the object onto ``goal``: push lines
    through the middle of the cloud's bounding box (what the push skill measures its travel
    from), along the direction from there to the goal."""
    pts = np.asarray(cloud, dtype=float).reshape(-1, 3)
    if len(pts) == 0:
        return []
    centre = perceived_center(pts)
    return sample_push_contacts(region, pts, centre, push_direction(centre, goal), width, config)
