"""Skill geometry that does not need a simulator: carried clouds, tilts about a lip, configs."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from afford_planner.skills.motions import HeldObject, SkillConfig, _axis_xy, _rotated_about, _translated


def _pose(rotvec: tuple[float, float, float], xyz: tuple[float, float, float]) -> np.ndarray:
    t = np.eye(4)
    t[:3, :3] = Rotation.from_rotvec(rotvec).as_matrix()
    t[:3, 3] = xyz
    return t


def test_held_object_moves_rigidly_with_the_tcp() -> None:
    """After the grasp the robot knows its object only as the cloud it saw, carried with the hand:
    moving the TCP must move every point (and every named part) by the same rigid motion."""
    grasp = _pose((0.1, -0.2, 0.3), (0.4, 0.1, 0.05))
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(50, 3)) * 0.03 + grasp[:3, 3]
    held = HeldObject.from_world(grasp, pts, {"handle": pts[:10]})
    assert np.allclose(held.in_world(grasp), pts)
    moved = _pose((0.0, 0.5, -0.2), (0.6, -0.1, 0.3))
    motion = moved @ np.linalg.inv(grasp)
    expected = pts @ motion[:3, :3].T + motion[:3, 3]
    assert np.allclose(held.in_world(moved), expected)
    assert np.allclose(held.in_world(moved, "handle"), expected[:10])


def test_tilt_about_the_lip_keeps_the_lip_in_place() -> None:
    """Pouring rotates the container about its lip so the stream stays over the bowl."""
    pose = _pose((0, 0, 0.4), (0.5, 0.0, 0.3))
    lip = np.array([0.55, 0.02, 0.25])
    axis = np.array([0.0, 1.0, 0.0])
    tilted = _rotated_about(pose, axis, np.deg2rad(80), lip)
    lip_in_tcp = np.linalg.inv(pose) @ np.append(lip, 1.0)
    assert np.allclose((tilted @ lip_in_tcp)[:3], lip)
    angle = np.degrees(np.arccos(np.clip(np.dot(tilted[:3, 2], pose[:3, 2]), -1, 1)))
    assert angle == pytest.approx(80.0, abs=1e-6)
    assert np.allclose(_translated(pose, np.array([0, 0, 0.1]))[:3, 3], pose[:3, 3] + [0, 0, 0.1])


def test_axis_of_a_half_seen_cylinder_is_its_true_axis() -> None:
    """One camera sees half a mug; the median of those points sits off the axis by a third of the
    radius, enough to thread a handle beside the hook instead of onto it."""
    theta = np.linspace(-np.pi / 2, np.pi / 2, 200)
    r = 0.032
    pts = np.column_stack([0.4 + r * np.cos(theta), -0.1 + r * np.sin(theta), np.linspace(0, 0.09, 200)])
    assert np.allclose(_axis_xy(pts), [0.4, -0.1], atol=1e-6)
    assert np.linalg.norm(np.median(pts[:, :2], axis=0) - [0.4, -0.1]) > 0.01


def test_a_held_cup_is_centred_by_its_base_not_its_seen_side() -> None:
    """One camera sees one side of a held paper cup, tapering from 2.2 cm at its base to 3 cm at
    its mouth: the median of those points sits more than a centimetre off the axis, and a circle
    through the whole side is pulled by the taper; the circle through the lowest band is on the
    axis. Points with no round base (a flat patch) fall back to their median."""
    from afford_planner.skills.motions import base_axis_xy

    rng = np.random.default_rng(1)
    axis = np.array([0.45, -0.2])
    z = rng.uniform(0.15, 0.25, 800)
    r = 0.022 + 0.008 * (z - 0.15) / 0.1
    ang = rng.uniform(-2.4, 0.2, 800)
    cup = np.column_stack([axis[0] + r * np.cos(ang), axis[1] + r * np.sin(ang), z])
    assert np.linalg.norm(np.median(cup[:, :2], axis=0) - axis) > 0.01
    assert np.linalg.norm(base_axis_xy(cup) - axis) < 0.001
    flat = np.column_stack([rng.uniform(0.4, 0.5, 300), rng.uniform(-0.1, 0.0, 300),
                            rng.uniform(0, 0.005, 300)])
    assert np.allclose(base_axis_xy(flat), np.median(flat[:, :2], axis=0))


@pytest.mark.parametrize("field", ["pregrasp_offset", "lift_height", "settle_s", "retreat", "pull_distance"])
def test_skill_config_refuses_non_positive_distances(field: str) -> None:
    with pytest.raises(ValueError, match=field):
        SkillConfig(**{field: 0.0})


def test_skill_config_refuses_bad_speed_and_tilt() -> None:
    with pytest.raises(ValueError, match="vel_scale"):
        SkillConfig(vel_scale=1.5)
    with pytest.raises(ValueError, match="pour_tilt_deg"):
        SkillConfig(pour_tilt_deg=190)


def _strip(length: float, width: float, yaw: float, n: int = 400) -> np.ndarray:
    rng = np.random.default_rng(0)
    pts = rng.uniform([-length / 2, -width / 2], [length / 2, width / 2], size=(n, 2))
    c, s = np.cos(yaw), np.sin(yaw)
    return pts @ np.array([[c, s], [-s, c]])


def test_a_long_object_is_turned_onto_a_long_support_and_nothing_else_is() -> None:
    """A box held along x over a strip along y turns by 90 deg (either way); onto a round
    plate, or a round object onto the strip, there is nothing to align."""
    from afford_planner.skills.motions import alignment_yaw

    turn = alignment_yaw(_strip(0.18, 0.05, 0.0), _strip(0.18, 0.04, np.pi / 2))
    assert abs(abs(turn) - np.pi / 2) < 0.05
    turn = alignment_yaw(_strip(0.18, 0.05, 0.3), _strip(0.18, 0.04, 0.5))
    assert abs(turn - 0.2) < 0.05  # the short way round
    assert alignment_yaw(_strip(0.18, 0.05, 0.0), _strip(0.2, 0.2, 0.0)) == 0.0
    assert alignment_yaw(_strip(0.06, 0.06, 0.0), _strip(0.18, 0.04, 1.0)) == 0.0


def test_the_table_spot_is_beside_the_object_towards_the_robots_centreline() -> None:
    from afford_planner.skills.library import table_spot

    can = np.array([[0.5, -0.12, 0.0], [0.5, -0.12, 0.1], [0.52, -0.1, 0.05]])
    spot = table_spot(can, 0.15)
    assert np.allclose(np.median(spot[:, :2], axis=0), [0.5, 0.03], atol=0.011)
    assert np.allclose(spot[:, 2], 0.0)
    left = table_spot(can * [1, -1, 1], 0.15)
    assert np.median(left[:, 1]) < 0.0


@pytest.mark.parametrize(("target", "whole"), [("carrot", True), ("chocolate_box", True), ("leek", True),
                                               ("mug", False), ("kettle", False), ("banana", True)])
def test_the_axis_sampler_holds_whole_bodies_only(target: str, whole: bool) -> None:
    """Objects with parts but held whole (a carrot with its leaves) get the axis grasps; a mug
    (a handle) or a kettle does not: their grasp is a part."""
    from afford_core.ontology import category
    from afford_core.robots import get_robot
    from afford_core.types import Intent, NextAction, ObjectCloud
    from afford_planner.samplers import AxisSampler, SamplerContext

    cat = category(target)
    rng = np.random.default_rng(1)
    pts = rng.uniform([-0.08, -0.02, 0.0], [0.08, 0.02, 0.03], size=(300, 3))
    labels = np.zeros(len(pts), dtype=int)
    cloud = ObjectCloud(pts, target, part_labels=labels, part_names=cat.parts)
    intent = Intent(target=target, grasp_region=cat.default_grasp, next_action=NextAction.PICK)
    ctx = SamplerContext(intent=intent, region=pts, cloud=cloud, gripper=get_robot("fr3").gripper)
    assert bool(AxisSampler().sample(ctx)) is whole


def _plate(rng: np.random.Generator, centre: tuple[float, float] = (0.4, 0.1), radius: float = 0.12,
           n: int = 2000) -> np.ndarray:
    r = radius * np.sqrt(rng.uniform(0, 1, n))
    a = rng.uniform(0, 2 * np.pi, n)
    return np.column_stack([centre[0] + r * np.cos(a), centre[1] + r * np.sin(a), rng.uniform(0, 0.012, n)])


def test_what_lies_on_a_receiver_is_found_and_its_own_points_are_not() -> None:
    from afford_planner.skills.motions import occupied_on

    rng = np.random.default_rng(0)
    plate = _plate(rng)
    # The scene as seen: the plate itself (other noise), a carrot lying across its middle, a
    # mug standing beside the plate.
    carrot = np.column_stack([rng.uniform(0.33, 0.47, 300), rng.uniform(0.085, 0.115, 300),
                              rng.uniform(0.015, 0.04, 300)])
    mug = np.column_stack([rng.uniform(0.6, 0.66, 300), rng.uniform(0.1, 0.16, 300),
                           rng.uniform(0, 0.09, 300)])
    scene = np.vstack([plate + rng.normal(0, 0.002, plate.shape), carrot, mug])
    on = occupied_on(plate, scene)
    assert len(on) > 250 and np.all(on[:, 2] > 0.015) and np.all(on[:, 0] < 0.5)
    assert len(occupied_on(plate, np.vstack([plate + rng.normal(0, 0.002, plate.shape), mug]))) == 0



def test_what_lies_inside_a_box_is_found_from_its_floor() -> None:
    """A box's seen inside reaches up its walls to the rim: measured from the top of those
    points, a cube on its floor passes for empty room and the next thing lands on it. Things
    that go inside are measured from the floor."""
    from afford_planner.skills.motions import occupied_on

    rng = np.random.default_rng(2)
    floor = np.column_stack([rng.uniform(0.3, 0.56, 1500), rng.uniform(-0.1, 0.1, 1500),
                             rng.uniform(0, 0.004, 1500)])
    # The far wall's inner face, seen over the near one: a third of the points, up to 11 cm.
    wall = np.column_stack([rng.uniform(0.3, 0.56, 800), np.full(800, 0.1), rng.uniform(0, 0.11, 800)])
    inside = np.vstack([floor, wall])
    cube = np.column_stack([rng.uniform(0.34, 0.39, 300), rng.uniform(-0.03, 0.02, 300),
                            rng.uniform(0.01, 0.05, 300)])
    scene = np.vstack([inside + rng.normal(0, 0.001, inside.shape), cube])
    assert len(occupied_on(inside, scene)) == 0  # as on a plate: the cube is below the walls' top
    found = occupied_on(inside, scene, inside=True)
    assert len(found) > 250 and np.all(found[:, 0] < 0.4)
    assert len(occupied_on(inside, inside + rng.normal(0, 0.001, inside.shape), inside=True)) == 0

def test_a_place_goes_beside_what_already_lies_on_the_receiver() -> None:
    """A cube onto a plate a carrot already lies across: not onto the carrot, beside it, and
    still well on the plate. With nothing on the plate, its centre."""
    from afford_planner.skills.motions import free_spot

    rng = np.random.default_rng(1)
    centre = np.array([0.4, 0.1])
    plate = _plate(rng, tuple(centre))
    assert np.allclose(free_spot(plate, np.empty((0, 3)), 0.03, centre), centre)
    carrot = np.column_stack([rng.uniform(0.32, 0.48, 300), rng.uniform(0.085, 0.115, 300),
                              rng.uniform(0.015, 0.04, 300)])
    spot = free_spot(plate, carrot, 0.03, centre)
    assert np.min(np.linalg.norm(carrot[:, :2] - spot, axis=1)) >= 0.03 + 0.01  # clear of it
    assert np.linalg.norm(spot - centre) <= 0.12 - 0.4 * 0.03 + 1e-9  # on the plate
    # Only as far out as it must: beside the carrot, not at the plate's rim.
    assert np.linalg.norm(spot - centre) < 0.07
    # Something far from the centre leaves the centre free.
    crumb = np.array([[0.4, 0.2, 0.02]])
    assert np.allclose(free_spot(plate, crumb, 0.03, centre), centre)


def test_a_vessel_is_aimed_at_its_mouth_and_a_flat_receiver_at_its_median() -> None:
    """One camera sees a mug's near wall and the inside of its far wall: the points' median
    sits off the axis, the circle through their top band does not. A plate is flat: its median."""
    from afford_planner.skills.motions import receiving_centre

    rng = np.random.default_rng(0)
    axis = np.array([0.4, 0.1])
    ang = rng.uniform(-2.2, 0.4, 600)  # the part of the wall one camera sees
    z = rng.uniform(0.0, 0.09, 600)
    wall = np.column_stack([axis[0] + 0.027 * np.cos(ang), axis[1] + 0.027 * np.sin(ang), z])
    assert np.linalg.norm(np.median(wall[:, :2], axis=0) - axis) > 0.01  # what the median gives
    assert np.linalg.norm(receiving_centre(wall) - axis) < 0.002
    plate = np.column_stack([rng.uniform(0.3, 0.5, 400), rng.uniform(0.0, 0.3, 400),
                             rng.uniform(0, 0.015, 400)])
    assert np.allclose(receiving_centre(plate), np.median(plate[:, :2], axis=0))


def test_a_surface_the_grounding_leaked_off_is_aimed_at_the_whole_surfaces_middle() -> None:
    """A box's top (16 x 12 cm at 9 cm, its middle at (0.44, 0.14)) grounded as a corner of it
    and a strip of the side below: the part's median lies 3 cm off, a circle through its top
    band is a wild one; with the box's other seen points the aim is the middle of the top's
    outline, sampled densely at its near end as one camera sees it. Without them (a receiver
    things go into) the aim is as before, and a pan's rim seen all round stays a circle."""
    from afford_planner.skills.motions import receiving_centre

    rng = np.random.default_rng(1)
    middle = np.array([0.44, 0.14])
    # The top, sampled four times as densely on its near half (x > 0.44) as on its far one.
    near = np.column_stack([rng.uniform(0.44, 0.52, 800), rng.uniform(0.08, 0.20, 800), np.full(800, 0.09)])
    far = np.column_stack([rng.uniform(0.36, 0.44, 200), rng.uniform(0.08, 0.20, 200), np.full(200, 0.09)])
    side = np.column_stack([np.full(300, 0.52), rng.uniform(0.08, 0.20, 300), rng.uniform(0.0, 0.09, 300)])
    top = np.vstack([near, far])
    corner = top[(top[:, 0] > 0.47) & (top[:, 1] > 0.15)]
    strip = side[side[:, 1] > 0.15]
    part = np.vstack([corner, strip])
    rest = np.vstack([top[~((top[:, 0] > 0.47) & (top[:, 1] > 0.15))], side[side[:, 1] <= 0.15]])
    assert np.linalg.norm(np.median(part[:, :2], axis=0) - middle) > 0.03
    assert np.linalg.norm(receiving_centre(part, around=rest) - middle) < 0.01
    assert np.linalg.norm(receiving_centre(part) - middle) > 0.03  # a receiver things go into
    ang = rng.uniform(0, 2 * np.pi, 600)
    rim = np.column_stack([0.3 + 0.11 * np.cos(ang), -0.1 + 0.11 * np.sin(ang), rng.uniform(0.0, 0.045, 600)])
    floor = np.column_stack([rng.uniform(0.25, 0.35, 200), rng.uniform(-0.15, -0.05, 200), np.zeros(200)])
    assert np.linalg.norm(receiving_centre(rim, around=floor) - [0.3, -0.1]) < 0.005


class _FakePlan:
    def __init__(self, waypoints: list[np.ndarray]) -> None:
        self.success = True
        self.reason = ""
        self.waypoints = np.asarray(waypoints)


def test_a_pour_that_runs_a_joint_into_its_limit_is_tried_from_another_ik_branch(monkeypatch) -> None:  # noqa: ANN001
    """The carry goes to the IK solution nearest the arm; when the 80 deg turn from there runs
    the wrist into its limit, another solution of the redundant arm at the same pose is tried,
    its whole turn checked before anything moves, and the carry planned to that one."""
    from afford_planner.skills.motions import SkillError, SkillRunner

    q0, near, other = np.zeros(7), np.full(7, 0.1), np.full(7, -0.1)
    planned: list[tuple[np.ndarray, np.ndarray]] = []

    class Planner:
        model = object()
        world = type("W", (), {"in_collision": staticmethod(lambda q: False)})()
        config = type("C", (), {"ik": None})()

        def plan_to_pose(self, q, pose):  # noqa: ANN001, ANN202
            return _FakePlan([q, near])

        def plan(self, q, goal):  # noqa: ANN001, ANN202
            planned.append((q, goal))
            return _FakePlan([q, goal])

    class Executor:
        def arm_q(self) -> np.ndarray:
            return q0

    def through(self, q, poses, stage):  # noqa: ANN001, ANN202
        if np.allclose(q, near):
            raise SkillError(f"{stage}: no IK solution near the current arm (joint(s) 7 at their limits)")
        return np.array([q, q + 0.01])

    monkeypatch.setattr("afford_planner.ik.ik_solutions", lambda *a, **k: ([near, other], None))
    monkeypatch.setattr(SkillRunner, "plan_through", through)
    runner = SkillRunner(executor=Executor(), planner=Planner())  # type: ignore[arg-type]
    with pytest.raises(SkillError, match="at their limits"):  # the nearest branch only, by default
        runner._carry_then_through(np.eye(4), [np.eye(4)], "pour")
    assert not planned
    carry, down = runner._carry_then_through(np.eye(4), [np.eye(4)], "pour", branches=6)
    assert np.allclose(carry.waypoints[-1], other) and np.allclose(down[0], other)
    assert len(planned) == 1 and np.allclose(planned[0][1], other)
    # No branch turns through: the reasons, once each, and nothing planned to move.
    monkeypatch.setattr("afford_planner.ik.ik_solutions", lambda *a, **k: ([near], None))
    planned.clear()
    with pytest.raises(SkillError, match="joint\\(s\\) 7 at their limits") as err:
        runner._carry_then_through(np.eye(4), [np.eye(4)], "pour", branches=6)
    assert str(err.value).count("at their limits") == 1 and not planned


def _door_runner(q0: np.ndarray):  # noqa: ANN202
    """A runner on the FR3's own model and planner whose executor records what it is sent."""
    from afford_planner.collision import CollisionWorld
    from afford_planner.motion import MotionPlanner
    from afford_planner.robot_model import RobotModel
    from afford_planner.skills.motions import SkillRunner

    model = RobotModel()
    sent: list[np.ndarray] = []

    class Executor:
        q = q0.copy()

        def arm_q(self) -> np.ndarray:
            return self.q

        def follow(self, times: np.ndarray, qs: np.ndarray) -> None:
            sent.append(qs)
            self.q = qs[-1]

        def wait(self, seconds: float) -> None:
            pass

    return SkillRunner(executor=Executor(), planner=MotionPlanner(model, CollisionWorld(model))), model, sent  # type: ignore[arg-type]


def test_a_door_swing_carries_the_hand_on_the_handles_arc() -> None:
    """Opening a door 80 deg by a vertical bar: every pose the arm is sent holds the TCP on the
    circle about the hinge (its radius and height kept within 3 mm), turning one way only, and the
    last stands 80 deg round. An arc the arm cannot follow (a hinge 1.5 m away) raises before
    anything moves."""
    from afford_core.robots import get_robot
    from afford_planner.ik import solve_ik
    from afford_planner.robot_model import RobotModel
    from afford_planner.skills.motions import SkillError

    # The hand level, pointing away from the robot (+x), fingers closing across a vertical bar.
    grasp = _pose((0.0, np.pi / 2, 0.0), (0.67, -0.25, 0.15))
    q0 = solve_ik(RobotModel(), grasp, np.asarray(get_robot("fr3").home)).q
    assert q0 is not None
    runner, model, sent = _door_runner(q0)
    start = model.fk(q0)[:3, 3]
    # A microwave's as the task places it: the hinge on the robot's left, the door along the
    # front, opening towards the robot.
    hinge = np.array([0.72, 0.1, 0.15])
    axis = np.array([0.0, 0.0, -1.0])
    assert runner.swing(hinge, axis, [80.0]) == 80.0
    qs = np.vstack(sent)
    tcp = np.array([model.fk(q)[:3, 3] for q in qs])
    radius = np.linalg.norm(start[:2] - hinge[:2])
    # Between the 3 deg poses the joints move in straight segments: the hand sags off the
    # circle by a few millimetres at most, which the fingers round the bar take up.
    off = np.abs(np.linalg.norm(tcp[:, :2] - hinge[:2], axis=1) - radius)
    assert off.max() < 0.003, off.max()
    assert np.all(np.abs(tcp[:, 2] - start[2]) < 0.003)
    turned = np.unwrap(np.arctan2(tcp[:, 1] - hinge[1], tcp[:, 0] - hinge[0]))
    turned = np.degrees(turned - turned[0]) * np.sign(axis[2])
    assert np.all(np.diff(turned) >= -0.05) and abs(turned[-1] - 80.0) < 0.5
    # Out of reach: nothing is sent.
    runner, _, sent = _door_runner(q0)
    with pytest.raises(SkillError, match="no reachable hand pose"):
        runner.swing(np.array([1.5, 1.5, 0.15]), axis, [80.0])
    assert not sent


def test_free_spots_rank_the_clear_ones_nearest_the_centre_first() -> None:
    """The place skill tries spots in this order until the hand fits: with the centre taken,
    spots clear of what is there come first, nearest the centre first, then the rest."""
    from afford_planner.skills.motions import free_spots

    rng = np.random.default_rng(4)
    centre = np.array([0.4, 0.1])
    plate = _plate(rng, tuple(centre))
    assert np.allclose(free_spots(plate, np.empty((0, 3)), 0.03, centre), [centre])
    cup = np.column_stack([rng.uniform(0.37, 0.43, 200), rng.uniform(0.07, 0.13, 200),
                           rng.uniform(0.01, 0.1, 200)])
    spots = free_spots(plate, cup, 0.03, centre)
    clear = np.array([np.min(np.linalg.norm(cup[:, :2] - s, axis=1)) for s in spots]) - 0.03
    k = int(np.argmin(clear >= 0.01))  # where the clear ones end
    assert k > 0 and np.all(clear[:k] >= 0.01) and np.all(clear[k:] < 0.01)
    assert np.all(np.diff(np.linalg.norm(spots[:k] - centre, axis=1)) >= -1e-12)
