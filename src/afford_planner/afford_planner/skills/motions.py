"""Skills: the motions that turn a chosen grasp into an interaction.

A skill runs stage by stage against an :class:`Executor` (the batch world in simulation,
franky on the robot) and plans every stage from the state the previous one left, because the
object in the hand is never exactly where the plan assumed. What the robot knows about the
held object comes from perception only: the object's cloud, carried rigidly with the TCP
from the moment of the grasp. Success is judged elsewhere (the simulator's tasks read true
poses); a skill only reports whether each motion could be planned and executed.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from scipy.spatial.transform import Rotation

from afford_core.geometry import spout_direction
from afford_core.grasp import GraspCandidate
from afford_planner.motion import MotionPlanner, PlanResult


class Executor(Protocol):
    """What a skill needs from a robot, simulated or real."""

    def arm_q(self) -> np.ndarray: ...

    def follow(self, times: np.ndarray, qs: np.ndarray) -> None: ...

    def open_gripper(self) -> None: ...

    def close_gripper(self) -> None: ...

    def wait(self, seconds: float) -> None: ...


@dataclass
class SkillConfig:
    """Distances, speeds and waits shared by all skills.

    Attributes:
        pregrasp_offset: Distance (m) back along the approach where the free-space motion ends
            and the straight-line approach starts.
        lift_height: How far (m) to lift straight up after closing the gripper.
        vel_scale: Fraction of the robot's joint velocity limits used for every motion.
        settle_s: Wait (s) after closing or opening the gripper.
        place_clearance: Height (m) above the destination's surface at which a placed object is
            released.
        max_release_drop: When a receiver's walls stop the fingers on the way down (a banana
            into a bowl), the object is released where the way is still free if that leaves it
            at most this high (m) above the release height; a higher drop fails the stage.
        retreat: Distance (m) to back off along the approach after releasing.
        table_place_offset: Placing on the table itself ("put the can on the table"), how far
            (m) sideways from where the object stood it is set down.
        pull_distance: How far (m) to pull a drawer or door handle.
        swing_open_deg: The angle (deg) a hinged door is swung open to: square to its front,
            where it leaves the whole opening clear (the task asks for 70 deg; aiming higher
            leaves room for the hand's slip on the handle).
        swing_min_deg: When the arm cannot follow the arc to ``swing_open_deg``, smaller angles
            are tried, 5 deg less each time, down to this one (deg).
        swing_step_deg: Spacing (deg) of the poses along a door's arc, each solved by IK from
            the last.
        swing_vel_scale: Fraction of the joint velocity limits while swinging a door: slow,
            so that the fingers keep the handle while the door's damping resists.
        swing_tip_deg: How far (deg) the hand may tip about its closing axis while it swings a
            door by a vertical bar, in 10 deg steps (:meth:`SkillRunner.swing`).
        swing_lag_deg: How far (deg) the hand's turn may lag the door's about the bar, in 10 deg
            steps.
        push_vel_scale: Fraction of the joint velocity limits while pushing an object: slow, so
            that the object slides ahead of the hand instead of being knocked over.
        pour_tilt_deg: Tilt (deg) of the held container about the axis across its pour spout.
        pour_height: Height (m) of the pour spout above the receiving rim before tilting.
        hang_overshoot: How far (m) beyond the hook tip the handle ring starts before sliding on.
        hang_drop: How far (m) the ring is lowered onto the hook before release.
        hang_depth: How far (m) from the hook's tip towards the pole the ring is slid; shallow,
            because the hand around the body must stay clear of the pole and the upward tilt
            of the hook carries the ring further once released.
        hang_clear: The ring's hole centre slides on this far (m) below the hook's highest
            point (its end lip).
    """

    pregrasp_offset: float = 0.10
    lift_height: float = 0.15
    vel_scale: float = 0.6
    settle_s: float = 0.6
    place_clearance: float = 0.015
    max_release_drop: float = 0.03
    retreat: float = 0.10
    table_place_offset: float = 0.15
    pull_distance: float = 0.13
    swing_open_deg: float = 90.0
    swing_min_deg: float = 75.0
    swing_step_deg: float = 3.0
    swing_vel_scale: float = 0.2
    swing_tip_deg: float = 40.0
    swing_lag_deg: float = 20.0
    push_vel_scale: float = 0.1
    pour_tilt_deg: float = 80.0
    pour_height: float = 0.10
    hang_overshoot: float = 0.05
    hang_drop: float = 0.02
    hang_depth: float = 0.035
    hang_clear: float = 0.004

    def __post_init__(self) -> None:
        for name in ("pregrasp_offset", "lift_height", "vel_scale", "settle_s", "retreat", "pull_distance"):
            if getattr(self, name) <= 0:
                raise ValueError(f"SkillConfig.{name} must be positive")
        for name in ("vel_scale", "push_vel_scale", "swing_vel_scale"):
            if not 0 < getattr(self, name) <= 1:
                raise ValueError(f"SkillConfig.{name} must be in (0, 1]")
        if not 0 < self.pour_tilt_deg < 180:
            raise ValueError("SkillConfig.pour_tilt_deg must be in (0, 180)")
        if not 0 < self.swing_step_deg <= 15:
            raise ValueError("SkillConfig.swing_step_deg must be in (0, 15]")


class SkillError(RuntimeError):
    """A stage could not be planned or executed; the message says which and why."""


@dataclass
class StageReport:
    """Outcome of one stage as the robot sees it (planned and executed, or why not)."""

    name: str
    executed: bool
    reason: str = ""
    duration_s: float = 0.0


@dataclass
class HeldObject:
    """Perceived geometry of the grasped object, expressed in the TCP frame at grasp time.

    Attributes:
        points: (N, 3) object points in the TCP frame.
        parts: Named subsets of points (e.g. ``"spout"``, ``"handle"``) in the TCP frame.
    """

    points: np.ndarray
    parts: dict[str, np.ndarray] = field(default_factory=dict)

    @classmethod
    def from_world(cls, tcp_pose: np.ndarray, points: np.ndarray, parts: dict[str, np.ndarray]) -> HeldObject:
        inv = np.linalg.inv(tcp_pose)
        return cls(points=_apply(inv, points), parts={k: _apply(inv, v) for k, v in parts.items() if len(v)})

    def in_world(self, tcp_pose: np.ndarray, part: str | None = None) -> np.ndarray:
        return _apply(tcp_pose, self.points if part is None else self.parts[part])


def _apply(t: np.ndarray, pts: np.ndarray) -> np.ndarray:
    return np.asarray(pts) @ t[:3, :3].T + t[:3, 3]


def _axis_xy(points: np.ndarray) -> np.ndarray:
    """Horizontal position of an upright round body's axis from its (possibly one-sided) points.

    A circle fit: the median of what one camera sees of a cylinder sits a third of a radius
    towards the camera, which is enough to miss a hook.
    """
    from afford_planner.candidates import fit_circle

    centre, _, _ = fit_circle(points[:, :2])
    return centre


def receiving_centre(points: np.ndarray, min_depth: float = 0.03, band: float = 0.01,
                     max_residual: float = 0.004, around: np.ndarray | None = None) -> np.ndarray:
    """Horizontal point a placed object aims at over a receiving part's ``points``.

    A vessel (the part stands ``min_depth`` or more tall: a mug's or a bowl's body) is aimed at
    the centre of its mouth, a circle fitted to the points of its top ``band``: one camera sees
    the near wall and the far wall's inside, so their median sits a centimetre or more off the
    axis, which drops a block on a mug's rim. A flat receiver (a plate, a board, a box's top),
    or a top band that is not round within ``max_residual``, is aimed at the points' median.

    With ``around`` (the receiver's other seen points; given for a surface things rest on, not
    one they go into), a part that stands ``min_depth`` tall but is not round is a surface the
    grounding leaked off (a sugar box's top that took in part of its side, and only part of
    the top), or so few points that no band holds 10: it is aimed at the middle of the
    receiver's whole surface at the part's height (:func:`surface_middle`). Aimed at the leaked
    part's median, or at a circle through a few of its edge points, a chocolate box came down
    2-6 cm off a sugar box's top in 13 of 20 scenes.
    """
    from afford_planner.candidates import fit_circle
    from afford_planner.push import arc_deg

    pts = np.asarray(points, dtype=float)
    median = np.median(pts[:, :2], axis=0)
    z = pts[:, 2]
    if float(np.ptp(z)) < min_depth:
        return median
    top = pts[z >= z.max() - band]
    if len(top) < 10:
        return median if around is None else surface_middle(pts, np.asarray(around, dtype=float), band)
    centre, radius, resid = fit_circle(top[:, :2])
    # The fitted mouth must lie within the part as seen (not a wild fit to a short arc).
    lo, hi = pts[:, :2].min(0), pts[:, :2].max(0)
    wild = (resid > max_residual or not np.all((centre >= lo) & (centre <= hi))
            or radius > float(np.max(hi - lo)))
    if around is None:
        return median if wild else centre
    # A surface things rest on is round only if its top band goes most of the way round (a
    # pan's rim); a few points of a box's top edge fit some small circle as well.
    if not wild and arc_deg(top[:, :2], centre) >= 240.0:
        return centre
    return surface_middle(pts, np.asarray(around, dtype=float), band)


def surface_middle(part: np.ndarray, rest: np.ndarray, band: float = 0.01, link: float = 0.015) -> np.ndarray:
    """Horizontal middle of the surface a part lies in: the outline's middle
    (:func:`~afford_planner.candidates.footprint_centre`) of the seen points within ``band`` of
    the part's 90th-percentile height that the part's own points there reach through
    neighbours at most ``link`` apart (the whole top a corner of it was grounded on, not
    another thing's surface at that height across a gap)."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial import cKDTree

    from afford_planner.candidates import footprint_centre

    h = float(np.percentile(part[:, 2], 90))
    every = np.vstack([part, rest.reshape(-1, 3)])
    level = every[np.abs(every[:, 2] - h) <= band]
    seeds = np.abs(part[:, 2] - h) <= band
    if len(level) < 10 or not seeds.any():
        return np.median(part[:, :2], axis=0)
    pairs = cKDTree(level).query_pairs(link, output_type="ndarray")
    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(len(level), len(level)))
    _, labels = connected_components(graph, directed=False)
    # The part's own points at that height are the first int(seeds.sum()) rows of `level`.
    keep = np.isin(labels, np.unique(labels[: int(seeds.sum())]))
    on = level[keep]
    # The middle of the surface's outline, not of its points: one camera samples the near end
    # of a top densely and the far end thinly, and their median leaned 4 cm towards the near end.
    return footprint_centre(on) if len(on) >= 10 else np.median(part[:, :2], axis=0)


def base_axis_xy(points: np.ndarray, band: float = 0.015, max_residual: float = 0.003) -> np.ndarray:
    """Horizontal position of a held round object's axis, from the points of its lowest
    ``band`` (a cup's base, what has to go into another's mouth): a circle fit, as
    :func:`_axis_xy`; the points' median when fewer than 10 lie there, they are not round
    within ``max_residual``, or the circle is wider than they spread or centred more than a
    diameter from their median (a wild fit to a short arc). The median of one seen side lies
    nearly a radius off the axis, so a radius is no bound."""
    from afford_planner.candidates import fit_circle

    pts = np.asarray(points, dtype=float)
    median = np.median(pts[:, :2], axis=0)
    low = pts[pts[:, 2] <= pts[:, 2].min() + band]
    if len(low) < 10:
        return median
    centre, radius, resid = fit_circle(low[:, :2])
    spread = float(np.max(np.ptp(low[:, :2], axis=0)))
    if resid > max_residual or radius > spread or float(np.linalg.norm(centre - median)) > 2 * radius:
        return median
    return centre


def occupied_on(receiver: np.ndarray, obstacles: np.ndarray, above: float = 0.008,
                apart: float = 0.008, inside: bool = False) -> np.ndarray:
    """Points of other things resting on a receiver: the ``obstacles`` (every seen point but the
    held object's, the receiver's own among them) over the receiver's horizontal outline, more
    than ``above`` over its receiving surface and more than ``apart`` from any of its points
    (its rim). The receiving surface is the 90th percentile of the receiver's heights (a plate's
    top); for a receiver things go ``inside`` (a box, whose seen walls reach up to the rim) it
    is its floor, the 2nd percentile, or a cube already in a box would pass for empty room.
    (N, 3); empty when nothing lies on it."""
    from scipy.spatial import cKDTree

    rec = np.asarray(receiver, dtype=float).reshape(-1, 3)
    obs = np.asarray(obstacles, dtype=float).reshape(-1, 3)
    if len(rec) < 4 or not len(obs):
        return np.empty((0, 3))
    lo, hi = rec[:, :2].min(0), rec[:, :2].max(0)
    top = float(np.percentile(rec[:, 2], 2 if inside else 90))
    keep = np.all((obs[:, :2] >= lo) & (obs[:, :2] <= hi), axis=1) & (obs[:, 2] > top + above)
    cand = obs[keep]
    if not len(cand):
        return cand
    dist, _ = cKDTree(rec).query(cand)
    return cand[dist > apart]


def free_spot(surface: np.ndarray, occupied: np.ndarray, radius: float, prefer: np.ndarray,
              margin: float = 0.01, edge_share: float = 0.4, samples: int = 400) -> np.ndarray:
    """Where over a receiving ``surface`` an object of footprint ``radius`` goes down clear of
    what already lies there (``occupied``, :func:`occupied_on`): the first of
    :func:`free_spots`. Horizontal (2,)."""
    return free_spots(surface, occupied, radius, prefer, margin, edge_share, samples)[0]


def free_spots(surface: np.ndarray, occupied: np.ndarray, radius: float, prefer: np.ndarray,
               margin: float = 0.01, edge_share: float = 0.4, samples: int = 400) -> np.ndarray:
    """Spots over a receiving ``surface`` for an object of footprint ``radius``, best first,
    clear of what already lies there (``occupied``, :func:`occupied_on`).

    ``prefer`` (the receiver's centre) alone when nothing is within ``radius + margin`` of it;
    else the surface points whose distance to the surface's outline is at least ``edge_share *
    radius`` (the object's centre well on the receiver): those clear of the occupied points by
    ``margin``, nearest to ``prefer`` first, then the rest, the clearest first. (K, 2).
    """
    from scipy.spatial import ConvexHull, QhullError, cKDTree

    prefer = np.asarray(prefer, dtype=float)[:2]
    occ = np.asarray(occupied, dtype=float).reshape(-1, 3)[:, :2]
    if not len(occ):
        return prefer[None]
    tree = cKDTree(occ)
    if tree.query(prefer)[0] >= radius + margin:
        return prefer[None]
    xy = np.asarray(surface, dtype=float).reshape(-1, 3)[:, :2]
    if len(xy) > samples:
        xy = xy[np.random.default_rng(0).choice(len(xy), samples, replace=False)]
    try:
        hull = ConvexHull(xy)
    except (QhullError, ValueError):
        return prefer[None]
    inside = -(xy @ hull.equations[:, :2].T + hull.equations[:, 2]).min(axis=1)
    cand = xy[inside >= edge_share * radius]
    if not len(cand):
        return prefer[None]
    clear = tree.query(cand)[0] - radius
    ok = clear >= margin
    near = cand[ok][np.argsort(np.linalg.norm(cand[ok] - prefer, axis=1), kind="stable")]
    rest = cand[~ok][np.argsort(-clear[~ok], kind="stable")]
    return np.vstack([near, rest])


def _translated(pose: np.ndarray, delta: np.ndarray) -> np.ndarray:
    out = pose.copy()
    out[:3, 3] = out[:3, 3] + delta
    return out


def _long_axis(xy: np.ndarray) -> tuple[float, float]:
    """Yaw (rad) of the principal horizontal axis of ``xy`` and its elongation (sqrt of the
    eigenvalue ratio; 1 for a round or square patch)."""
    centred = xy - xy.mean(axis=0)
    vals, vecs = np.linalg.eigh(np.cov(centred.T) + 1e-12 * np.eye(2))
    return float(np.arctan2(vecs[1, 1], vecs[0, 1])), float(np.sqrt(vals[1] / max(vals[0], 1e-12)))


def alignment_yaw(obj_xy: np.ndarray, support_xy: np.ndarray, min_elongation: float = 1.5,
                  min_object_elongation: float = 1.2) -> float:
    """The turn about the vertical (rad, within +-90 deg) that aligns a held object's long axis
    with its support's; 0 unless the support is elongated by ``min_elongation`` and the object
    by ``min_object_elongation`` (lower: the held object is seen partly, its ends hidden by the
    hand, so its points understate how long it is)."""
    if len(obj_xy) < 3 or len(support_xy) < 3:
        return 0.0
    a_obj, e_obj = _long_axis(np.asarray(obj_xy, dtype=float))
    a_sup, e_sup = _long_axis(np.asarray(support_xy, dtype=float))
    if e_obj < min_object_elongation or e_sup < min_elongation:
        return 0.0
    return float((a_sup - a_obj + np.pi / 2) % np.pi - np.pi / 2)


def _rotated_about(pose: np.ndarray, axis: np.ndarray, angle: float, point: np.ndarray) -> np.ndarray:
    """``pose`` rotated by ``angle`` about the world line through ``point`` along ``axis``."""
    r = Rotation.from_rotvec(axis / np.linalg.norm(axis) * angle).as_matrix()
    out = np.eye(4)
    out[:3, :3] = r @ pose[:3, :3]
    out[:3, 3] = r @ (pose[:3, 3] - point) + point
    return out


@dataclass
class SkillRunner:
    """Runs the stages of a skill: plans each from the current state and executes it.

    Attributes:
        executor: The robot (simulated or real).
        planner: The motion planner, whose collision world mirrors the scene.
        config: Skill distances and speeds.
        allow_contact: Called with an object name and a flag to let the planner ignore (or
            again respect) collisions with that object, for the last centimetres of an
            approach and while an object is held.
    """

    executor: Executor
    planner: MotionPlanner
    config: SkillConfig = field(default_factory=SkillConfig)
    allow_contact: Callable[[str, bool], None] = lambda name, allowed: None

    def _execute(self, result: PlanResult, stage: str, vel_scale: float | None = None) -> None:
        if not result.success:
            raise SkillError(f"{stage}: {result.reason or 'planning failed'}")
        waypoints = np.asarray(result.waypoints)
        if len(waypoints) < 2:
            return
        scale = self.config.vel_scale if vel_scale is None else vel_scale
        times, qs = self.planner.time_parameterize(waypoints, scale)
        self.executor.follow(np.asarray(times), np.asarray(qs))

    def move_to(self, pose: np.ndarray, stage: str) -> None:
        """Collision-free motion to a TCP pose."""
        self._execute(self.planner.plan_to_pose(self.executor.arm_q(), pose), stage)

    def move_line(self, pose: np.ndarray, stage: str, vel_scale: float | None = None) -> None:
        """Straight-line TCP motion to a pose (orientation interpolated), at ``vel_scale`` of
        the joint velocity limits (default the config's)."""
        self._execute(self.planner.cartesian_path(self.executor.arm_q(), pose), stage, vel_scale)

    def current_pose(self) -> np.ndarray:
        """The TCP pose now, by the planner's own forward kinematics of the measured joints."""
        return self.planner.model.fk(self.executor.arm_q())

    # Stages -----------------------------------------------------------------------------------

    def approach(self, grasp: GraspCandidate, plan: PlanResult | None = None) -> None:
        """Free-space motion to the pre-grasp pose, then open the hand."""
        pre = _translated(grasp.pose_matrix(), -grasp.approach * self.config.pregrasp_offset)
        if plan is not None:
            self._execute(plan, "approach")
        else:
            self.move_to(pre, "approach")
        self.executor.open_gripper()
        self.executor.wait(self.config.settle_s)

    def grasp(self, grasp: GraspCandidate, target: str) -> None:
        """Straight in along the approach, close, wait for the fingers to settle."""
        self.allow_contact(target, True)
        self.move_line(grasp.pose_matrix(), "grasp")
        self.executor.close_gripper()
        self.executor.wait(self.config.settle_s)

    def lift(self) -> None:
        self.move_line(_translated(self.current_pose(), np.array([0, 0, self.config.lift_height])), "lift")

    def release_and_retreat(self) -> None:
        self.executor.open_gripper()
        self.executor.wait(self.config.settle_s)
        pose = self.current_pose()
        back = _translated(pose, -pose[:3, 2] * self.config.retreat)
        self.move_line(back, "retreat")

    def place(self, held: HeldObject, surface_points: np.ndarray,
              occupied: np.ndarray | None = None, round_base: bool = False, boxes: bool = False,
              cover: bool = False, around: np.ndarray | None = None) -> None:
        """Put the held object down centred over ``surface_points`` (the receiving region), or,
        when ``occupied`` (points of things already on it) leaves no room there, at the free
        spot beside them (:func:`free_spot`). With ``round_base`` the object is centred by the
        axis of its round base (:func:`base_axis_xy`) instead of its points' median: what one
        camera sees of a held cup lies to one side of its axis, a centimetre off, and a cup
        nested into another has millimetres to spare. With ``boxes`` (a block onto a block)
        both are centred by their footprints (:func:`~afford_planner.candidates.footprint_centre`):
        a tower of blocks each a centimetre or two off its median-aimed spot leans over its
        base's edge by the third block. With ``cover`` (a lid onto a pot) the held object's
        outline circle (:func:`~afford_planner.push.outline_centre`) goes over the mouth's
        centre and its lowest point to the rim's top, not the receiving points' 90th percentile
        (a centimetre down the pot's wall): a lid has a centimetre of overlap on the rim.
        ``around``, the receiver's other seen points, is for a surface things rest on
        (:func:`receiving_centre`)."""
        from afford_planner.candidates import footprint_centre
        from afford_planner.push import outline_centre

        pose = self.current_pose()
        obj = held.in_world(pose)
        # A round base has no long axis to align (and what is seen of it, one side, can look
        # elongated enough to turn it for nothing).
        turn = 0.0 if round_base or cover else alignment_yaw(obj[:, :2], surface_points[:, :2])
        if turn:
            # A long object onto a long, narrow support (a chocolate box onto a sugar box on its
            # side): turn it about the vertical so that the two long axes agree.
            centre = np.append(np.median(obj[:, :2], axis=0), 0.0)
            pose = _rotated_about(pose, np.array([0.0, 0.0, 1.0]), turn, centre)
            obj = held.in_world(pose)
        target_xy = (footprint_centre(surface_points) if boxes
                     else receiving_centre(surface_points, around=around))
        top = float(np.percentile(surface_points[:, 2], 99 if cover else 90))
        held_xy = (base_axis_xy(obj) if round_base else footprint_centre(obj) if boxes
                   else np.median(obj[:, :2], axis=0))
        if cover:
            rim = outline_centre(obj[:, :2])
            held_xy = held_xy if rim is None else rim
        delta = np.zeros(3)
        delta[2] = top + self.config.place_clearance - obj[:, 2].min()
        down = 0.08
        if occupied is not None and len(occupied):
            obj_xy = obj[:, :2] - np.median(obj[:, :2], axis=0)
            spots = free_spots(surface_points, occupied, float(np.max(np.linalg.norm(obj_xy, axis=1))),
                               target_xy)
            target_xy = self._spot_the_hand_fits(pose, held_xy, delta[2], spots, down)
        delta[:2] = target_xy - held_xy
        above = _translated(pose, delta + np.array([0, 0, down]))
        self.move_to(above, "carry")
        line = self.planner.cartesian_path(self.executor.arm_q(), _translated(pose, delta))
        short = (1.0 - line.fraction) * down
        blocked = not line.success and line.reason.startswith("line blocked")
        if blocked and short <= self.config.max_release_drop:
            # The fingers would meet the receiver's wall before the object meets its floor:
            # let go from the last free point of the line; the object drops `short` at most.
            line = dataclasses.replace(line, success=True)
        self._execute(line, "lower")
        self.release_and_retreat()

    def _spot_the_hand_fits(self, pose: np.ndarray, held_xy: np.ndarray, dz: float, spots: np.ndarray,
                            down: float, tries: int = 12, spread: float = 0.015) -> np.ndarray:
        """The first of ``spots`` where the arm, holding the object as it does now (``pose``),
        reaches the pose ``down`` metres above the put-down one and lowers it there along the
        line :meth:`place` runs (blocked no higher than a release drop); the first spot when
        none of ``tries`` spots, ``spread`` apart at least, is.

        A spot clear of the things already on the receiver by the object's own footprint can
        still put a finger or the hand's body on one of them (the fingers stand out of a held
        cup's side, and the hand is 20 cm across them): the second of three cups onto a tray met
        the first with a finger half-way down. The planner's collision model, which holds the
        seen scene, judges each spot.
        """
        from afford_planner.ik import local_ik

        q0 = self.executor.arm_q()
        tried: list[np.ndarray] = []
        for xy in spots:
            # Neighbouring spots fail together: each try at least `spread` from the ones before.
            if len(tried) >= tries:
                break
            if any(np.linalg.norm(xy - t) < spread for t in tried):
                continue
            tried.append(xy)
            shift = np.array([xy[0] - held_xy[0], xy[1] - held_xy[1], dz])
            res = local_ik(self.planner.model, _translated(pose, shift + np.array([0.0, 0.0, down])), q0)
            if not res.success or res.q is None or self.planner.world.in_collision(res.q):
                continue
            # The lowering line itself, as place() will run it: a paper cup's flared rim stands
            # out over its narrower foot, so a finger can clear the foot and meet the rim above it.
            line = self.planner.cartesian_path(res.q, _translated(pose, shift))
            blocked = line.reason.startswith("line blocked")
            if line.success or (blocked and (1.0 - line.fraction) * down <= self.config.max_release_drop):
                return np.asarray(xy)
        return np.asarray(spots[0])

    def plan_through(self, q: np.ndarray, poses: list[np.ndarray], stage: str) -> np.ndarray:
        """Joint waypoints through TCP poses close to each other (a wrist tilt), from ``q``.

        Each pose is solved by IK seeded with the previous solution, so the arm stays on one
        branch; consecutive solutions are joined by straight joint segments checked for
        collisions. Used where a Cartesian line would swing the wrist through a singularity.
        """
        from afford_planner.ik import local_ik

        model = self.planner.model
        path = [q]
        for pose in poses:
            res = local_ik(model, pose, q)
            if not res.success or res.q is None:
                raise SkillError(f"{stage}: no IK solution near the current arm ({res.reason})")
            if not self.planner.motion_valid(q, res.q):
                what = self.planner.world.describe_collision(res.q)
                raise SkillError(f"{stage}: the motion would collide ({what})")
            q = res.q
            path.append(q)
        return np.asarray(path)

    def _carry_then_through(
        self, pose: np.ndarray, poses: list[np.ndarray], stage: str, branches: int = 0
    ) -> tuple[PlanResult, np.ndarray]:
        """A collision-free motion to ``pose`` and the joint path through ``poses`` from there.

        The arm first takes the IK solution at ``pose`` nearest its own configuration; when
        the turn through ``poses`` runs a joint into its limit from there (a pour's 80 deg
        tilt about the hand's own axis can take the last joint's whole range), up to
        ``branches`` other solutions of the redundant arm are tried (none by default), each
        with its whole turn checked before the arm moves.
        """
        from afford_planner.ik import ik_solutions

        q0 = self.executor.arm_q()
        reasons: list[str] = []
        carry = self.planner.plan_to_pose(q0, pose)
        if carry.success:
            try:
                return carry, self.plan_through(np.asarray(carry.waypoints)[-1], poses, stage)
            except SkillError as err:
                reasons.append(str(err))
        else:
            reasons.append(f"carry: {carry.reason}")
        if branches < 1:
            raise SkillError("; ".join(reasons))
        world = self.planner.world
        goals, _ = ik_solutions(self.planner.model, pose, q0, self.planner.config.ik, branches + 1,
                                accept=lambda q: not world.in_collision(q))
        tried = np.asarray(carry.waypoints)[-1] if carry.success else None
        for goal in goals:
            if tried is not None and np.allclose(goal, tried, atol=1e-3):
                continue
            try:
                down = self.plan_through(goal, poses, stage)
            except SkillError as err:
                reasons.append(str(err))
                continue
            carry = self.planner.plan(q0, goal)
            if carry.success:
                return carry, down
            reasons.append(f"carry: {carry.reason}")
        raise SkillError("; ".join(dict.fromkeys(reasons)))

    def _follow_path(self, path: np.ndarray) -> None:
        if len(path) < 2:
            return
        times, qs = self.planner.time_parameterize(path, self.config.vel_scale)
        self.executor.follow(np.asarray(times), np.asarray(qs))

    def pour(self, held: HeldObject, use_part: str, rim_points: np.ndarray, spout: bool = False) -> None:
        """Bring the held container's lip over the receiving rim, then tilt it about the lip.

        From a ``spout`` (the ontology's: a part that pours out and takes nothing in), seen off
        to one side, the container tips towards the spout, about the horizontal axis across it:
        a kettle held by the ``tilt`` sampler's grasps turns about the hand's own approach axis,
        which its pads hold by shape. Otherwise it tips away from the hand: the tilt direction
        is horizontal and perpendicular to the closing axis, so the tilt turns about the line
        through the two finger pads and the stream leaves clear of the fingers; the pads'
        torsional friction carries the weight's torque, enough for a light cup. The lip is the
        pouring part's point farthest out along the tilt direction: an off-centre part sets the
        side; a round rim pours from the side that faces the bowl, or the other side, or with
        less tilt, whichever the arm can reach without collision (tried in that order, planned
        completely before anything moves). A spout's lip is the whole held cloud's point
        farthest towards it, which a grounding that stops short of the tip does not move.
        """
        pose = self.current_pose()
        body = held.in_world(pose)
        lip_pts = held.in_world(pose, use_part)
        bowl_c = np.median(rim_points, axis=0)
        centre_xy = np.median(body[:, :2], axis=0)
        off_centre = spout_direction(lip_pts, centre_xy)  # an off-centre part sets the side
        towards = off_centre if spout else None
        if towards is not None:
            sides = [towards]
        else:
            y = pose[:3, 1]
            across = np.array([-y[1], y[0], 0.0])  # horizontal, perpendicular to the closing axis
            across /= np.linalg.norm(across) + 1e-9
            ref = off_centre[:2] if off_centre is not None else bowl_c[:2] - centre_xy
            first = across if np.dot(across[:2], ref) >= 0 else -across
            sides = [first] if off_centre is not None else [first, -first]
        goal_tip = np.array([bowl_c[0], bowl_c[1], rim_points[:, 2].max() + self.config.pour_height])
        steps = 10
        reasons = []
        options = []
        for tilt_deg in (self.config.pour_tilt_deg, 0.75 * self.config.pour_tilt_deg):
            for out_dir in sides:
                # A spout is the container's extreme point towards it: the whole cloud finds
                # its tip even where the grounded spout stops short of it.
                ends = body if towards is not None else lip_pts
                tip = ends[np.argmax(ends @ out_dir)]
                over = _translated(pose, goal_tip - tip)
                axis = np.cross(np.array([0.0, 0.0, 1.0]), out_dir)
                tilt = np.deg2rad(tilt_deg)
                options.append((over, [_rotated_about(over, axis, tilt * k / steps, goal_tip)
                                       for k in range(1, steps + 1)]))
        # Every option from the arm's nearest IK solution first; another branch of the arm (a
        # larger motion with the object in hand) only when none of them turns through.
        for branches in (0, 6):
            for over, poses in options:
                try:
                    carry, down = self._carry_then_through(over, poses, "pour", branches)
                except SkillError as err:
                    reasons.append(str(err))
                    continue
                self._execute(carry, "carry")
                self._follow_path(down)
                self.executor.wait(self.config.settle_s)
                self._untilt = down[::-1]
                return
        raise SkillError("; ".join(dict.fromkeys(reasons)))

    def untilt(self) -> None:
        """Turn the container back upright along the tilt's own joint path after :meth:`pour`."""
        self._follow_path(getattr(self, "_untilt", np.empty((0, self.planner.model.nq))))

    def hang(
        self, held: HeldObject, ring_part: str, hook_points: np.ndarray, support_points: np.ndarray
    ) -> None:
        """Thread the held object's ring (a mug handle) onto a hook, lower it and let go.

        ``hook_points`` are one hook's points; ``support_points`` the pole/base it sticks out of,
        which tells which end of the hook is the free tip. The ring's hole axis is turned onto
        the hook's axis by a turn of the hand about the vertical (either of the two that do it),
        the ring starts beyond the tip, slides on along the hook and is lowered onto it. Every
        variant (turn, depth along the hook) is planned to the end before the arm moves.
        """
        pose = self.current_pose()
        body = held.in_world(pose)
        # Hook axis by PCA, oriented from the pole towards the free tip.
        c = hook_points.mean(0)
        h = np.linalg.svd(hook_points - c, full_matrices=False)[2][0]
        if np.dot(h, c - support_points.mean(0)) < 0:
            h = -h
        tip = hook_points[np.argmax((hook_points - c) @ h)]
        h_flat = np.array([h[0], h[1], 0.0]) / (np.linalg.norm(h[:2]) + 1e-9)
        # The ring's hole axis is horizontal and perpendicular to the direction from the
        # object's axis to the ring.
        body_part = next((k for k in held.parts if k != ring_part), None)
        axis_xy = _axis_xy(held.in_world(pose, body_part) if body_part else body)
        ring = held.in_world(pose, ring_part)
        u = ring.mean(0)[:2] - axis_xy
        u = np.append(u / (np.linalg.norm(u) + 1e-9), 0.0)
        hole = np.cross(np.array([0.0, 0.0, 1.0]), u)
        turns = []
        for sign in (1.0, -1.0):
            turns.append(float(np.arctan2(np.cross(hole, sign * h_flat)[2], np.dot(hole, sign * h_flat))))
        turns.sort(key=abs)
        centre = np.array([*axis_xy, pose[2, 3]])
        reasons = []
        for turn in turns:
            turned = _rotated_about(pose, np.array([0.0, 0.0, 1.0]), turn, centre)
            ring_t = held.in_world(turned, ring_part)
            body_t = held.in_world(turned, body_part) if body_part else held.in_world(turned)
            axis_t = _axis_xy(body_t)
            u_t = ring_t.mean(0)[:2] - axis_t
            u_t /= np.linalg.norm(u_t) + 1e-9
            radial = (ring_t[:, :2] - axis_t) @ u_t
            body_r = float(np.percentile((body_t[:, :2] - axis_t) @ u_t, 95))
            # Hole centre: between the body's wall and the ring's far side, at ring height.
            hole_c = np.array(
                [*(axis_t + u_t * 0.5 * (body_r + radial.max())), float(np.median(ring_t[:, 2]))]
            )
            # Slide on high: the hole's centre level with the top of the hook (its end lip), so
            # the ring's upper edge clears the lip and the rod passes through the lower half.
            rise = np.array([0.0, 0.0, hook_points[:, 2].max() - self.config.hang_clear - tip[2]])
            start = _translated(turned, tip + h * self.config.hang_overshoot + rise - hole_c)
            carry = self.planner.plan_to_pose(self.executor.arm_q(), start)
            if not carry.success:
                reasons.append(f"carry: {carry.reason}")
                continue
            for depth in (
                self.config.hang_depth,
                self.config.hang_depth - 0.01,
                self.config.hang_depth - 0.02,
            ):
                on_hook = tip - h * depth
                threaded = _translated(turned, on_hook + rise - hole_c)
                lowered = _translated(
                    turned, on_hook + rise - hole_c - np.array([0, 0, self.config.hang_drop])
                )
                thread = self.planner.cartesian_path(np.asarray(carry.waypoints)[-1], threaded)
                if not thread.success:
                    reasons.append(f"thread: {thread.reason}")
                    continue
                lower = self.planner.cartesian_path(np.asarray(thread.waypoints)[-1], lowered)
                if not lower.success:
                    reasons.append(f"lower: {lower.reason}")
                    continue
                self._execute(carry, "carry")
                self._execute(thread, "thread")
                self._execute(lower, "lower")
                self.release_and_retreat()
                return
        raise SkillError("; ".join(dict.fromkeys(reasons)))

    def push(self, contact: GraspCandidate, travel: np.ndarray) -> None:
        """Slide an object: in to the contact pose, straight on by ``travel`` (world, m), then
        back off and up (half the retreat back, the whole of it up: a hand lifted straight up
        drags its fingertips along a tall object's side), the object left where the push put it.
        The caller has taken the object's cloud out of the planner's world: the object moves
        ahead of the hand, and the arm passes over where it stood."""
        self.move_line(contact.pose_matrix(), "push")
        end = _translated(contact.pose_matrix(), np.asarray(travel, dtype=float))
        self.move_line(end, "push", self.config.push_vel_scale)
        along = np.asarray(travel, dtype=float) / max(float(np.linalg.norm(travel)), 1e-9)
        back = -0.5 * self.config.retreat * along
        world = self.planner.world
        # A push low on a heavy box can press the fingertips onto the table by the end: the way
        # back starts from that contact and leaves it.
        table = "table" in world.obstacle_names
        if table:
            world.allow("table", world.hand_links)
        try:
            self.move_line(_translated(end, back), "retreat")
            self.move_line(_translated(end, back + np.array([0.0, 0.0, self.config.retreat])), "retreat")
        finally:
            if table:
                world.disallow("table")

    def pull(self, direction: np.ndarray) -> None:
        """Pull the grasped handle along ``direction`` (e.g. a drawer's opening direction)."""
        d = np.asarray(direction, dtype=float)
        d = d / np.linalg.norm(d)
        pose = self.current_pose()
        self.move_line(_translated(pose, d * self.config.pull_distance), "pull")

    def swing(self, point: np.ndarray, axis: np.ndarray, angles_deg: list[float],
              stage: str = "pull") -> float:
        """Turn the grasped handle about a hinge: the hand's position carried on the arc about
        the line through ``point`` along ``axis`` by each angle (deg; positive opens,
        :class:`~afford_core.geometry.Hinge`), in steps of ``swing_step_deg``, each pose solved by
        IK from the last and every segment checked for collisions. The first angle in
        ``angles_deg`` whose whole arc is planned is executed, slowly; returns it.

        A vertical bar pinched across by the fingers holds the hand's position, not all of its
        turn: the hand may tip about its closing axis (the pads stay either side of the bar) and
        lag the door's turn about the bar by a little (the bar turns between the pads; the
        fingertips stay clear of the door's face). Each pose takes the first of those variants,
        nearest the last one taken, that the arm reaches from where it is.

        The arm is redundant, and the elbow the grasp left it with may run the shoulder or wrist
        into a limit part way round (a door swung towards the robot brings the hand low and
        near). Then the arc is followed from the arm's other solutions at the grasp pose, and the
        arm first moves to the one that follows it within its self-motion, the hand held still
        on the handle (:meth:`_self_motion`); everything is planned before the arm moves.
        """
        from afford_planner.ik import IKConfig, ik_solutions

        pose0 = self.current_pose()
        q_start = self.executor.arm_q()
        axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
        point = np.asarray(point, dtype=float)
        reasons = []
        others: list[np.ndarray] | None = None
        for angle in angles_deg:
            path, why = self._arc(q_start, pose0, point, axis, angle)
            if path is None:
                if others is None:  # the arm's other solutions at the grasp pose, once
                    others, _ = ik_solutions(self.planner.model, pose0, q_start, IKConfig(restarts=30), 8,
                                             accept=lambda q: not self.planner.world.in_collision(q))
                for other in others:
                    if np.linalg.norm(other - q_start) < 0.05:
                        continue
                    arc, _ = self._arc(other, pose0, point, axis, angle)
                    walk = self._self_motion(q_start, other, pose0) if arc is not None else None
                    if arc is not None and walk is not None:
                        path = [*walk, *arc[1:]]
                        break
            if path is None:
                reasons.append(f"{angle:g} deg: {why}")
                continue
            # The measured start can stand a hair past a joint limit the grasp pressed into.
            model = self.planner.model
            qs_path = np.clip(np.asarray(path), model.lower, model.upper)
            times, qs = self.planner.time_parameterize(qs_path, self.config.swing_vel_scale)
            self.executor.follow(np.asarray(times), np.asarray(qs))
            self.executor.wait(self.config.settle_s)
            return angle
        raise SkillError(f"{stage}: " + "; ".join(reasons))

    def arc_start(self, grasp: GraspCandidate, q_pre: np.ndarray, point: np.ndarray, axis: np.ndarray,
                  angle: float) -> np.ndarray | None:
        """Before a door is grasped: a pre-grasp arm configuration from which, once the hand is
        on the handle, the arc of :meth:`swing` by ``angle`` can be followed; None when the one
        the approach was planned to (``q_pre``) can, or none can.

        The arm is redundant, and the solution the approach plan took may be a branch whose
        shoulder or wrist reaches its limit part way round (found for a level grasp low down,
        with the door swinging towards the robot); another solution at the same grasp pose, on
        a branch that follows the arc, is then approached instead. A kinematic check: the
        door's and handle's own points are ignored (the hand holds them), the rest of the world
        is checked again when the arc is planned after the grasp.
        """
        from afford_planner.ik import IKConfig, ik_solutions, local_ik

        model, world = self.planner.model, self.planner.world
        pose = grasp.pose_matrix()
        pre = _translated(pose, -grasp.approach * self.config.pregrasp_offset)
        held = "target" in world.obstacle_names

        def follows(q: np.ndarray) -> bool:
            if held:  # the door turns with the hand: only the arm's reach is checked here
                world.allow("target")
            try:
                return self._arc(q, pose, point, axis, angle)[0] is not None
            finally:
                if held:
                    world.disallow("target")

        at_grasp = local_ik(model, pose, q_pre)
        if at_grasp.success and at_grasp.q is not None and follows(at_grasp.q):
            return None
        if held:  # the fingers round the handle touch it; the arm must not
            world.allow("target", world.hand_links)
        try:
            others, _ = ik_solutions(model, pose, q_pre, IKConfig(restarts=30), 8,
                                     accept=lambda q: not world.in_collision(q))
        finally:
            if held:
                world.disallow("target")
        for other in others:
            if not follows(other):
                continue
            back = local_ik(model, pre, other)
            if back.success and back.q is not None:
                return back.q
        return None

    def _arc(self, q: np.ndarray, pose0: np.ndarray, point: np.ndarray, axis: np.ndarray,
             angle: float) -> tuple[list[np.ndarray] | None, str]:
        """Joint waypoints from ``q`` (the arm at ``pose0``) along the arc of :meth:`swing`, or
        None and why not."""
        from afford_planner.ik import local_ik

        closing = pose0[:3, 1]
        # Tip the approach downwards (sign of the turn about the closing axis that lowers it).
        down = 1.0 if np.cross(closing, pose0[:3, 2])[2] < 0 else -1.0
        tips = np.arange(0.0, self.config.swing_tip_deg + 1e-9, 10.0)
        lags = np.arange(0.0, self.config.swing_lag_deg + 1e-9, 10.0)
        variants = [(float(tip), float(lag)) for tip in tips for lag in lags]
        n = max(1, int(np.ceil(abs(angle) / self.config.swing_step_deg)))
        path, last = [q], (0.0, 0.0)
        for k in range(1, n + 1):
            turn = np.deg2rad(angle) * k / n
            base = _rotated_about(pose0, axis, turn, point)
            tried = sorted(variants, key=lambda v: (abs(v[0] - last[0]) + abs(v[1] - last[1]), v))
            why = ""
            for tip, lag in tried:
                pose = _rotated_about(base, base[:3, 1], down * np.deg2rad(tip), base[:3, 3])
                pose = _rotated_about(pose, axis, -np.sign(angle) * np.deg2rad(lag), base[:3, 3])
                res = local_ik(self.planner.model, pose, q)
                smooth = res.success and res.q is not None and self._stays_on(q, res.q, pose)
                if smooth and res.q is not None and self.planner.motion_valid(q, res.q):
                    q, last = res.q, (tip, lag)
                    path.append(q)
                    break
                if not why:  # the reason for the pose nearest the last one taken
                    why = (res.reason if not res.success or res.q is None
                           else "the arm would leave the arc between two poses" if not smooth
                           else f"the motion would collide ({self.planner.world.describe_collision(res.q)})")
            else:
                return None, f"no reachable hand pose at {np.degrees(turn):.0f} deg of the arc ({why})"
        return path, ""

    def _stays_on(self, q0: np.ndarray, q1: np.ndarray, pose1: np.ndarray, tol: float = 0.005) -> bool:
        """Whether the straight joint segment from ``q0`` to ``q1`` keeps the TCP on its way:
        its middle within ``tol`` (m) of the middle of the two ends' TCP positions. A local IK
        that converged on another branch gives a segment whose middle swings the hand away (off
        the handle)."""
        model = self.planner.model
        a, b = model.fk(q0)[:3, 3], pose1[:3, 3]
        mid = model.fk(0.5 * (q0 + q1))[:3, 3]
        return float(np.linalg.norm(mid - 0.5 * (a + b))) < tol

    def _self_motion(self, q_from: np.ndarray, q_to: np.ndarray, pose: np.ndarray, step: float = 0.05,
                     max_steps: int = 200) -> list[np.ndarray] | None:
        """Joint waypoints from ``q_from`` to ``q_to``, both at the TCP ``pose``, that keep the
        TCP there: steps in the null space of the TCP's Jacobian, each put back on the pose by
        IK and checked for collisions; None when the two lie on different self-motion branches
        (the walk stalls) or a step collides."""
        from afford_planner.ik import local_ik

        model = self.planner.model
        q, path = q_from, [q_from]
        for _ in range(max_steps):
            gap = q_to - q
            if float(np.linalg.norm(gap)) < step:
                if not self.planner.motion_valid(q, q_to):
                    return None
                return [*path, q_to]
            _, jac = model.tcp_in_base_and_local_jacobian(q)
            move = (np.eye(model.nq) - np.linalg.pinv(jac) @ jac) @ gap
            norm = float(np.linalg.norm(move))
            if norm < 1e-3:
                return None
            res = local_ik(model, pose, model.clip(q + move * min(1.0, step / norm)))
            if (not res.success or res.q is None or not self._stays_on(q, res.q, pose)
                    or not self.planner.motion_valid(q, res.q)):
                return None
            if float(np.linalg.norm(q_to - res.q)) >= float(np.linalg.norm(gap)) - 1e-4:
                return None  # no nearer: another branch
            q = res.q
            path.append(q)
        return None


def stage_iter(stages: list[tuple[str, Callable[[], None]]]) -> Iterator[StageReport]:
    """Run named stage callables in order; stop at the first that raises a :class:`SkillError`."""
    for name, fn in stages:
        t0 = time.perf_counter()
        try:
            fn()
        except SkillError as err:
            yield StageReport(name, False, str(err), time.perf_counter() - t0)
            return
        yield StageReport(name, True, "", time.perf_counter() - t0)
