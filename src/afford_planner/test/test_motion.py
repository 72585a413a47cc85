"""Stage-2 motion planning: FR3 kinematics, IK, collision checking, planning and timing.

Everything runs on the CPU in a few seconds; the MuJoCo model is compiled once per module.
"""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from afford_core.robots.fr3 import franky_assets_dir
from afford_planner.collision import CollisionConfig, CollisionWorld
from afford_planner.ik import IKConfig, solve_ik
from afford_planner.motion import MotionPlanner, PlannerConfig, path_length
from afford_planner.robot_model import RobotModel, RobotModelConfig

TCP_OFFSET = 0.1034  # m along the MuJoCo hand body's z


def translation(x: float, y: float, z: float) -> np.ndarray:
    t = np.eye(4)
    t[:3, 3] = [x, y, z]
    return t


@pytest.fixture(scope="module")
def robot() -> RobotModel:
    return RobotModel()


@pytest.fixture(scope="module")
def mj() -> tuple[mujoco.MjModel, mujoco.MjData]:
    assets = franky_assets_dir()
    spec = mujoco.MjSpec.from_file(str(assets / "fr3.xml"))
    spec.meshdir = str(assets / "meshes")
    model = spec.compile()
    return model, mujoco.MjData(model)


def top_down(robot: RobotModel, x: float, y: float, z: float) -> np.ndarray:
    """TCP pose at (x, y, z) with the hand pointing down as at the home pose."""
    pose = robot.fk(robot.q_home)
    pose[:3, 3] = [x, y, z]
    return pose


def wall_world(robot: RobotModel, padding: float = 0.005) -> CollisionWorld:
    """Table top at z = 0 and a 50 cm high divider across it at y = 0."""
    world = CollisionWorld(robot, CollisionConfig(padding=padding))
    world.add_box("table", [1.0, 1.2, 0.04], translation(0.5, 0.0, -0.02))
    world.add_box("wall", [0.4, 0.04, 0.5], translation(0.5, 0.0, 0.25))
    return world


def wall_sides(robot: RobotModel) -> tuple[np.ndarray, np.ndarray]:
    q_left = solve_ik(robot, top_down(robot, 0.5, 0.25, 0.15), robot.q_home).q
    q_right = solve_ik(robot, top_down(robot, 0.5, -0.25, 0.15), robot.q_home).q
    assert q_left is not None and q_right is not None
    return q_left, q_right


def assert_path_clear(world: CollisionWorld, waypoints: np.ndarray, step: float = 0.002) -> None:
    """Every state along the straight joint segments, ``step`` rad apart, is collision-free."""
    for a, b in zip(waypoints[:-1], waypoints[1:], strict=True):
        n = max(1, math.ceil(np.linalg.norm(b - a) / step))
        for s in np.linspace(0.0, 1.0, n + 1):
            q = a + (b - a) * s
            assert not world.in_collision(q), f"path touches {world.colliding_pairs(q)} at {q}"


# --------------------------------------------------------------------------- kinematics
def test_fk_matches_mujoco(robot: RobotModel, mj: tuple[mujoco.MjModel, mujoco.MjData]) -> None:
    """The simulator executes in MuJoCo; a TCP that disagrees with it misplaces every grasp."""
    model, data = mj
    hand = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, "hand")
    rng = np.random.default_rng(7)
    for _ in range(25):
        q = robot.random_configuration(rng)
        data.qpos[:7] = q
        mujoco.mj_kinematics(model, data)
        rot = data.xmat[hand].reshape(3, 3)
        expected_pos = data.xpos[hand] + rot @ [0.0, 0.0, TCP_OFFSET]
        tcp = robot.fk(q)
        np.testing.assert_allclose(tcp[:3, 3], expected_pos, atol=1e-6)
        np.testing.assert_allclose(tcp[:3, :3], rot, atol=1e-6)


def test_joint_limits_are_the_simulators(robot: RobotModel, mj: tuple[mujoco.MjModel, mujoco.MjData]) -> None:
    """A plan inside the URDF's wider limits could drive a simulated joint into its stop."""
    model, _ = mj
    np.testing.assert_allclose(robot.lower, model.jnt_range[:7, 0])
    np.testing.assert_allclose(robot.upper, model.jnt_range[:7, 1])
    np.testing.assert_allclose(robot.velocity_limits, [2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26])


def test_base_pose_moves_fk_and_jacobian(robot: RobotModel) -> None:
    """A robot mounted elsewhere must report TCP poses and velocities in the world frame."""
    base = translation(0.2, -0.1, 0.75)
    base[:3, :3] = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    moved = RobotModel(config=RobotModelConfig(base_pose=base))
    q = robot.q_home + 0.1
    np.testing.assert_allclose(moved.fk(q), base @ robot.fk(q), atol=1e-12)
    np.testing.assert_allclose(moved.jacobian(q)[:3], base[:3, :3] @ robot.jacobian(q)[:3], atol=1e-12)


def test_jacobian_matches_finite_differences(robot: RobotModel) -> None:
    """IK and Cartesian paths step along the Jacobian; a wrong frame convention diverges."""
    q = robot.q_home + np.array([0.2, -0.1, 0.3, 0.2, -0.4, 0.1, 0.5])
    jac = robot.jacobian(q)
    eps = 1e-6
    for i in range(7):
        dq = np.zeros(7)
        dq[i] = eps
        plus, minus = robot.fk(q + dq), robot.fk(q - dq)
        lin = (plus[:3, 3] - minus[:3, 3]) / (2 * eps)
        skew = (plus[:3, :3] - minus[:3, :3]) / (2 * eps) @ robot.fk(q)[:3, :3].T
        ang = np.array([skew[2, 1], skew[0, 2], skew[1, 0]])
        np.testing.assert_allclose(jac[:3, i], lin, atol=1e-6)
        np.testing.assert_allclose(jac[3:, i], ang, atol=1e-6)


# --------------------------------------------------------------------------- IK
def test_ik_round_trips_reachable_poses(robot: RobotModel) -> None:
    """Grasp poses come from FK-reachable space; IK must find them from the home seed."""
    rng = np.random.default_rng(3)
    config = IKConfig()
    for _ in range(12):
        target = robot.fk(robot.random_configuration(rng))
        result = solve_ik(robot, target, robot.q_home, config)
        assert result.success and result.q is not None, result.reason
        assert robot.within_limits(result.q)
        reached = robot.fk(result.q)
        assert np.linalg.norm(reached[:3, 3] - target[:3, 3]) <= config.position_tolerance
        cos = (np.trace(reached[:3, :3].T @ target[:3, :3]) - 1.0) / 2.0
        assert math.degrees(math.acos(min(1.0, cos))) <= config.orientation_tolerance_deg


def test_ik_prefers_the_seed_branch(robot: RobotModel) -> None:
    """A solution near the current joints keeps the follow-up motion short and predictable."""
    q_true = robot.q_home + np.array([0.3, 0.2, -0.2, 0.3, 0.1, -0.2, 0.4])
    result = solve_ik(robot, robot.fk(q_true), q_true + 0.03)
    assert result.success and result.attempts == 1
    assert np.linalg.norm(result.q - q_true) < 0.15


def test_ik_refuses_unreachable_pose_without_iterating(robot: RobotModel) -> None:
    """An out-of-reach grasp must fail fast and say why, not burn the restart budget."""
    result = solve_ik(robot, top_down(robot, 1.5, 0.0, 0.3), robot.q_home)
    assert not result.success and result.q is None
    assert "out of reach" in result.reason
    assert result.attempts == 0


# --------------------------------------------------------------------------- collision
def test_box_through_the_arm_collides_and_clear_box_does_not(robot: RobotModel) -> None:
    """The basic contract of the collision checker, in both directions."""
    world = CollisionWorld(robot)
    tcp = robot.fk(robot.q_home)[:3, 3]
    world.add_box("block", [0.1, 0.1, 0.1], translation(*tcp))
    assert world.in_collision(robot.q_home)
    assert {b for _, b in world.colliding_pairs(robot.q_home)} == {"block"}
    assert world.min_distance(robot.q_home) < 0.0

    world.remove("block")
    world.add_box("block", [0.1, 0.1, 0.1], translation(tcp[0], tcp[1] + 0.5, tcp[2]))
    assert not world.in_collision(robot.q_home)
    assert world.colliding_pairs(robot.q_home) == []
    assert world.min_distance(robot.q_home) > 0.0


def test_allow_ignores_only_the_named_links(robot: RobotModel) -> None:
    """During the final approach the fingers may touch the target, the forearm may not."""
    world = CollisionWorld(robot)
    tcp = robot.fk(robot.q_home)[:3, 3]
    world.add_box("target", [0.1, 0.1, 0.1], translation(*tcp))
    hand_links = ["fr3_hand", "fr3_leftfinger", "fr3_rightfinger"]
    touching = {a for a, _ in world.colliding_pairs(robot.q_home)}
    assert touching and touching <= set(hand_links)
    world.allow("target", hand_links)
    assert not world.in_collision(robot.q_home)

    # A taller object also reaches the wrist: allowing the hand must not hide that.
    world.remove("target")
    world.add_box("target", [0.1, 0.1, 0.3], translation(tcp[0], tcp[1], tcp[2] + 0.12))
    world.allow("target", hand_links)
    touching = {a for a, _ in world.colliding_pairs(robot.q_home)}
    assert "fr3_link7" in touching and not touching & set(hand_links)
    world.disallow("target")
    assert {"fr3_hand", "fr3_link7"} <= {a for a, _ in world.colliding_pairs(robot.q_home)}
    world.allow("target")
    assert not world.in_collision(robot.q_home)
    with pytest.raises(KeyError, match="no obstacle"):
        world.allow("ghost")


def test_finger_width_changes_finger_geometry(robot: RobotModel) -> None:
    """A thin post between the fingers is clear when the hand is open and hit when closed."""
    world = CollisionWorld(robot, CollisionConfig(padding=0.0))
    world.add_box("post", [0.02, 0.02, 0.02], translation(*robot.fk(robot.q_home)[:3, 3]))
    world.allow("post", ["fr3_hand"])
    assert not world.in_collision(robot.q_home)
    world.set_finger_width(0.0)
    assert world.in_collision(robot.q_home)


def test_self_collision_agrees_with_mujoco(
    robot: RobotModel, mj: tuple[mujoco.MjModel, mujoco.MjData]
) -> None:
    """Folding the hand into the shoulder must be caught, exactly where the simulator sees contact."""
    model, data = mj
    world = CollisionWorld(robot, CollisionConfig(finger_width=0.08))
    folded = np.array([0.0, -0.5, 0.0, -3.0, 0.0, 0.6, 0.785])
    assert ("fr3_link1", "fr3_hand") in world.colliding_pairs(folded)
    assert not world.in_collision(robot.q_home)

    def mujoco_contact(q: np.ndarray) -> bool:
        data.qpos[:7] = q
        data.qpos[7:9] = 0.04
        mujoco.mj_forward(model, data)
        return any(c.dist < 0.0 for c in data.contact[: data.ncon])

    rng = np.random.default_rng(11)
    samples = [robot.random_configuration(rng) for _ in range(150)] + [folded]
    disagreements = [q for q in samples if world.in_collision(q) != mujoco_contact(q)]
    assert not disagreements, f"{len(disagreements)} configurations disagree, e.g. {disagreements[0]}"


def test_never_colliding_pairs_stay_apart(robot: RobotModel) -> None:
    """Pairs skipped for speed must really be unable to touch inside the joint limits."""
    audit = CollisionWorld(robot, CollisionConfig(self_padding=0.01, skip_never_colliding=False))
    rng = np.random.default_rng(2024)
    for _ in range(600):
        q = robot.random_configuration(rng)
        close = [frozenset(p) for p in audit.colliding_pairs(q)]
        assert not robot.robot.never_colliding.intersection(close), f"skipped pair within 1 cm at {q}"


def test_point_cloud_blocks_like_the_box(robot: RobotModel) -> None:
    """A wall seen only as depth points must stop the arm as the modelled wall does."""
    boxed = wall_world(robot, padding=0.0)
    clouded = CollisionWorld(robot)
    clouded.add_box("table", [1.0, 1.2, 0.04], translation(0.5, 0.0, -0.02))
    # Points on the wall's six faces, as a depth camera would return them, 5 mm apart.
    xs, ys, zs = np.arange(0.3, 0.7001, 0.005), np.array([-0.02, 0.02]), np.arange(0.0, 0.5001, 0.005)
    faces = [np.stack(np.meshgrid(xs, ys, zs), -1).reshape(-1, 3)]
    yy = np.arange(-0.02, 0.0201, 0.005)
    faces.append(np.stack(np.meshgrid([0.3, 0.7], yy, zs), -1).reshape(-1, 3))
    faces.append(np.stack(np.meshgrid(xs, yy, [0.0, 0.5]), -1).reshape(-1, 3))
    clouded.add_point_cloud("wall_cloud", np.vstack(faces), resolution=0.01)

    q_left, q_right = wall_sides(robot)
    planner = MotionPlanner(robot, clouded)
    assert not planner.motion_valid(q_left, q_right)
    assert not MotionPlanner(robot, boxed).motion_valid(q_left, q_right)
    result = planner.plan(q_left, q_right)
    assert result.success, result.reason
    assert_path_clear(boxed, result.waypoints)


# --------------------------------------------------------------------------- planning
def test_plan_goes_around_the_wall(robot: RobotModel) -> None:
    """The planned path must be collision-free everywhere, not only at its waypoints."""
    world = wall_world(robot)
    planner = MotionPlanner(robot, world, PlannerConfig(seed=5))
    q_left, q_right = wall_sides(robot)
    assert not planner.motion_valid(q_left, q_right), "the wall must block the direct motion"

    result = planner.plan(q_left, q_right)
    assert result.success, result.reason
    np.testing.assert_allclose(result.waypoints[0], q_left)
    np.testing.assert_allclose(result.waypoints[-1], q_right)
    assert len(result.waypoints) > 2
    assert result.path_length == pytest.approx(path_length(result.waypoints))
    assert result.path_length >= np.linalg.norm(q_right - q_left)
    assert all(robot.within_limits(q) for q in result.waypoints)
    # Judged against the wall without padding: real contact, at a fifth of the planner's step.
    assert_path_clear(wall_world(robot, padding=0.0), result.waypoints)

    again = MotionPlanner(robot, world, PlannerConfig(seed=5)).plan(q_left, q_right)
    np.testing.assert_array_equal(again.waypoints, result.waypoints)


@pytest.mark.parametrize("algorithm", ["BKPIECE1", "PRM"])
def test_another_ompl_planner_goes_around_the_wall_too(robot: RobotModel, algorithm: str) -> None:
    """The evaluation's reference planner is another OMPL planner; it must plan the same kind of
    valid path, and a failure names the planner that failed."""
    world = wall_world(robot)
    q_left, q_right = wall_sides(robot)
    result = MotionPlanner(robot, world, PlannerConfig(algorithm=algorithm, seed=5, time_limit=10.0)).plan(
        q_left, q_right)
    assert result.success, result.reason
    assert_path_clear(wall_world(robot, padding=0.0), result.waypoints)
    starved = MotionPlanner(robot, world, PlannerConfig(algorithm=algorithm, seed=5, time_limit=1e-4))
    failed = starved.plan(q_left, q_right)
    assert not failed.success and f"{algorithm} found no path" in failed.reason


def test_plan_refuses_goal_in_obstacle_without_planning(robot: RobotModel) -> None:
    """A goal inside an obstacle can never be reached; say so at once with the touching pair."""
    world = wall_world(robot)
    planner = MotionPlanner(robot, world)
    q_left, _ = wall_sides(robot)
    q_inside = solve_ik(robot, top_down(robot, 0.5, 0.0, 0.2), robot.q_home).q
    assert q_inside is not None
    result = planner.plan(q_left, q_inside)
    assert not result.success
    assert "goal in collision" in result.reason and "wall" in result.reason
    assert result.collision_checks <= 2 and len(result.waypoints) == 0

    posed = planner.plan_to_pose(q_left, top_down(robot, 0.5, 0.0, 0.2))
    assert not posed.success and "wall" in posed.reason


def test_plan_refuses_unreachable_pose_and_bad_joints(robot: RobotModel) -> None:
    """Out-of-reach or out-of-limit goals are refused up front with a usable reason."""
    planner = MotionPlanner(robot, wall_world(robot))
    q_left, _ = wall_sides(robot)
    far = planner.plan_to_pose(q_left, top_down(robot, 1.5, 0.0, 0.3))
    assert not far.success and "out of reach" in far.reason
    assert far.collision_checks <= 1 and len(far.waypoints) == 0  # the start checked, no search

    bad = robot.q_home.copy()
    bad[3] = 0.2
    result = planner.plan(q_left, bad)
    assert not result.success and "joint 4" in result.reason


def test_plan_to_pose_reaches_the_pose(robot: RobotModel) -> None:
    """The end of a pose plan must put the TCP where the grasp asked for it."""
    planner = MotionPlanner(robot, wall_world(robot))
    q_left, _ = wall_sides(robot)
    target = top_down(robot, 0.5, -0.25, 0.2)
    result = planner.plan_to_pose(q_left, target)
    assert result.success and result.goal is not None, result.reason
    assert np.linalg.norm(robot.fk(result.goal)[:3, 3] - target[:3, 3]) < 1e-3
    assert_path_clear(wall_world(robot, padding=0.0), result.waypoints)


# --------------------------------------------------------------------------- Cartesian paths
def test_cartesian_path_follows_the_line(robot: RobotModel) -> None:
    """A final approach that bows off the line would push the object before grasping it."""
    planner = MotionPlanner(robot, wall_world(robot))
    q_left, _ = wall_sides(robot)
    start = robot.fk(q_left)
    goal = start.copy()
    goal[:3, 3] += [0.0, 0.05, -0.1]
    result = planner.cartesian_path(q_left, goal, step=0.005)
    assert result.success, result.reason
    assert result.fraction == 1.0 and len(result.waypoints) >= 23
    direction = (goal[:3, 3] - start[:3, 3]) / np.linalg.norm(goal[:3, 3] - start[:3, 3])
    for q in result.waypoints:
        pose = robot.fk(q)
        off = pose[:3, 3] - start[:3, 3]
        assert np.linalg.norm(off - off.dot(direction) * direction) < 1.5e-3
        cos = (np.trace(pose[:3, :3].T @ start[:3, :3]) - 1.0) / 2.0
        assert math.degrees(math.acos(min(1.0, cos))) < 1.5
    assert np.linalg.norm(robot.fk(result.waypoints[-1])[:3, 3] - goal[:3, 3]) < 1e-3


def test_cartesian_path_stops_at_obstacle_and_at_reach(robot: RobotModel) -> None:
    """A blocked lift or pull must fail cleanly, saying where and what blocks it."""
    world = CollisionWorld(robot)
    world.add_box("table", [1.0, 1.2, 0.04], translation(0.5, 0.0, -0.02))
    planner = MotionPlanner(robot, world)
    start = robot.fk(robot.q_home)
    into_table = start.copy()
    into_table[2, 3] = -0.1
    blocked = planner.cartesian_path(robot.q_home, into_table)
    assert not blocked.success
    assert "blocked" in blocked.reason and "table" in blocked.reason
    # The fingertips reach about 1 cm below the TCP: the line stops a bit above z = 0.
    assert 0.7 < blocked.fraction < 0.95
    assert len(blocked.waypoints) > 1
    assert all(not world.in_collision(q) for q in blocked.waypoints)

    away = start.copy()
    away[:3, 3] = [1.6, 0.0, 0.4]
    far = planner.cartesian_path(robot.q_home, away)
    assert not far.success and "out of reach" in far.reason and len(far.waypoints) == 0


# --------------------------------------------------------------------------- timing
def test_time_parameterization_respects_velocity_limits(robot: RobotModel) -> None:
    """The FR3 faults on any joint above its velocity limit; the scaled limit must hold."""
    planner = MotionPlanner(robot, CollisionWorld(robot))
    waypoints = np.array(
        [
            robot.q_home,
            robot.q_home + [0.8, 0.3, 0.0, 0.4, 0.0, 0.2, 1.0],
            robot.q_home + [0.8, 0.6, 0.5, 0.0, 1.0, 0.0, 0.0],
        ]
    )
    times, qs = planner.time_parameterize(waypoints, vel_scale=0.4)
    assert np.all(np.diff(times) > 0.0)
    np.testing.assert_allclose(qs[0], waypoints[0])
    np.testing.assert_allclose(qs[-1], waypoints[-1])
    velocities = np.diff(qs, axis=0) / np.diff(times)[:, None]
    assert np.all(np.abs(velocities) <= 0.4 * robot.velocity_limits + 1e-6)
    # Rest to rest, and it does use the allowed speed somewhere.
    assert np.abs(velocities[0]).max() < 0.1 and np.abs(velocities[-1]).max() < 0.1
    assert (np.abs(velocities) / robot.velocity_limits).max() > 0.3
    # The corner is passed through, not cut.
    assert np.min(np.linalg.norm(qs - waypoints[1], axis=1)) < 0.01


# --------------------------------------------------------------------------- configs
@pytest.mark.parametrize(
    ("factory", "message"),
    [
        (lambda: PlannerConfig(time_limit=0.0), "time_limit"),
        (lambda: PlannerConfig(algorithm="RRTstar"), "algorithm"),
        (lambda: PlannerConfig(seed=0), "seed"),
        (lambda: PlannerConfig(collision_step=0.5), "collision_step"),
        (lambda: IKConfig(position_tolerance=-1.0), "position_tolerance"),
        (lambda: CollisionConfig(finger_width=0.5), "finger_width"),
        (lambda: RobotModelConfig(base_pose=np.ones((4, 4))), "base_pose"),
    ],
)
def test_configs_reject_bad_values(factory: object, message: str) -> None:
    """Misconfiguration must fail loudly at construction, not as a strange plan later."""
    with pytest.raises(ValueError, match=message):
        factory()  # type: ignore[operator]
