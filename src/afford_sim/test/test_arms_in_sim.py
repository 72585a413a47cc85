"""Every registered arm in the batch world: it holds its home, its planner model agrees with the
simulator, its hand opens and closes to its stroke, and it can pick a cube up."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import mujoco
import numpy as np
import pytest

from afford_core.robots import HOME_TCP_ROTATION, ROBOTS
from afford_planner.robot_model import RobotModel
from afford_sim.mjcf import ModelConfig, load_robot
from afford_sim.scene import CameraSpec, ObjectSpec, SceneSpec, Window, sample_scene
from afford_sim.world import FINGERS, BatchWorld

ARMS = ROBOTS.names()


def _world(robot: str, objects: tuple[ObjectSpec, ...] = ()) -> BatchWorld:
    spec = SceneSpec(objects=objects, cameras=(CameraSpec(),), robot=robot)
    return BatchWorld(sample_scene(spec, seed=0))


@pytest.fixture(scope="module", params=ARMS)
def arm(request: pytest.FixtureRequest) -> Iterator[tuple[BatchWorld, RobotModel]]:
    world = _world(request.param)
    yield world, RobotModel(request.param)
    world.close()


def test_arm_holds_home_and_points_down(arm: tuple[BatchWorld, RobotModel]) -> None:
    """A position-controlled arm with gravity compensation must not sag (robosuite's arms come
    with torque motors: as exported they fall)."""
    world, model = arm
    world.reset()
    world.advance(1.0)
    assert np.max(np.abs(world.arm_q() - model.q_home)) < 2e-3
    assert np.allclose(world.tcp_pose()[:3, :3], HOME_TCP_ROTATION, atol=2e-3)


def test_planner_kinematics_agree_with_the_simulator(arm: tuple[BatchWorld, RobotModel]) -> None:
    """The planner's TCP (pinocchio, from the robot's model file) must be the simulator's TCP site,
    or every planned grasp lands off target."""
    world, model = arm
    rng = np.random.default_rng(7)
    for _ in range(5):
        q = np.clip(model.random_configuration(rng), -3.0, 3.0)
        np.testing.assert_allclose(model.fk(q), world.tcp_pose_at(q), atol=1e-6)


def test_hand_opens_to_its_stroke_and_closes(arm: tuple[BatchWorld, RobotModel]) -> None:
    world, model = arm
    world.reset()
    stroke, shut = model.robot.gripper.max_width, model.robot.gripper.min_width
    assert world.close_gripper() < shut + 0.005
    assert world.open_gripper() == pytest.approx(stroke, abs=0.004)
    assert world.close_gripper() < shut + 0.005  # and again: a jammed linkage would stop here


@pytest.mark.parametrize("robot", [a for a in ARMS if a != "fr3"])
def test_home_holds_the_tcp_where_the_fr3_holds_it(robot: str) -> None:
    """The robosuite arms' homes were solved with the planner's IK for the TCP where Franka's
    ready pose puts the FR3's, pointing down (HOME_TCP_ROTATION): every arm starts a scene
    from the same TCP pose, up and back out of the tasks' camera views."""
    model = RobotModel(robot)
    home = model.fk(model.q_home)
    fr3 = RobotModel("fr3")
    np.testing.assert_allclose(home[:3, 3], fr3.fk(fr3.q_home)[:3, 3], atol=1e-3)
    np.testing.assert_allclose(home[:3, :3], HOME_TCP_ROTATION, atol=1e-3)


def _squeeze(world: BatchWorld, body: str) -> dict[str, float]:
    """Normal force (N) of each finger on ``body``, summed over their contacts."""
    m, d = world.model, world.data
    target = m.body(body).id
    out = dict.fromkeys(FINGERS, 0.0)
    force = np.zeros(6)
    for i in range(d.ncon):
        c = d.contact[i]
        g1, g2 = int(c.geom1), int(c.geom2)
        if target not in (m.geom_bodyid[g1], m.geom_bodyid[g2]):
            continue
        name = m.geom(g2 if m.geom_bodyid[g1] == target else g1).name
        finger = next((f for f in FINGERS if name.startswith(f + "/")), None)
        if finger is not None:
            mujoco.mj_contactForce(m, d, i, force)
            out[finger] += float(force[0])
    return out


@pytest.mark.slow
@pytest.mark.parametrize("robot", ARMS)
def test_arm_picks_up_a_cube(robot: str) -> None:
    """Top-down over a 4.5 cm cube, the TCP at its middle, close, lift 15 cm: the cube comes up
    between both fingers, each squeezing it with the gripper's grasp force."""
    cube = ObjectSpec("cube", "cube", 0, Window(center=(0.5, 0.0), size=(0.0, 0.0), yaw=(0.0, 0.0)))
    world = _world(robot, (cube,))
    model = RobotModel(robot)
    from afford_planner.ik import solve_ik

    try:
        start = world.object_pose("cube")[:3, 3].copy()  # the cube's origin: the middle of its base
        grasp = np.eye(4)
        grasp[:3, :3] = HOME_TCP_ROTATION
        grasp[:3, 3] = start + np.array([0.0, 0.0, 0.0225])
        above, lifted = grasp.copy(), grasp.copy()
        above[2, 3] += 0.12
        lifted[2, 3] += 0.15
        q = world.arm_q()
        path = []
        for pose in (above, grasp):
            res = solve_ik(model, pose, q)
            assert res.success and res.q is not None, res.reason
            path.append(res.q)
            q = res.q
        world.move_arm(path[:1], [2.0])
        world.move_arm(path[1:], [1.5])
        assert world.close_gripper() == pytest.approx(0.045, abs=0.003)  # closed on it, not stalled
        world.advance(0.3)
        # The robosuite grippers' one servo is set from the grasp force; the FR3's hand is
        # franky-sim's servo scaled to about 65 N per finger (afford_sim.robots.fr3).
        squeeze = _squeeze(world, "cube")
        for finger in FINGERS:
            expected = model.robot.gripper.grasp_force
            assert squeeze[finger] == pytest.approx(expected, rel=0.15 if robot == "fr3" else 0.05), squeeze
        res = solve_ik(model, lifted, q)
        assert res.success and res.q is not None
        world.move_arm([res.q], [1.5])
        world.advance(0.5)
        assert world.object_pose("cube")[2, 3] - start[2] > 0.12
        assert world.in_contact(FINGERS[0], "cube") and world.in_contact(FINGERS[1], "cube")
        # The width the simulator reads (the description's map from finger joints to the pads'
        # opening) is the cube's 4.5 cm, less what the pads sink in.
        assert world.gripper_width() == pytest.approx(0.045, abs=0.003)
    finally:
        world.close()


@pytest.mark.parametrize("robot", [a for a in ARMS if ROBOTS.get(a).sim.builder == "robosuite"])
def test_links_the_planner_never_checks_never_touch_in_the_simulator(robot: str) -> None:
    """A robosuite arm's never_colliding pairs (the Sawyer's, from Rethink's MoveIt configuration,
    among them shoulder covers that overlap the base) are left out of the planner's self-collision
    checks; the simulator must not collide them either, or a plan the planner finds free could jam
    the arm on itself."""
    description = ROBOTS.get(robot)
    m = load_robot(description, ModelConfig()).compile()
    excluded = {
        frozenset((m.body(int(sig >> 16)).name, m.body(int(sig & 0xFFFF)).name))
        for sig in m.exclude_signature
    }
    assert description.never_colliding <= excluded


def test_unbounded_joints_need_the_description_s_limits() -> None:
    """The Kinova Gen3's model leaves four joints continuous; without the description's
    position_limits the planner would sample and interpolate over infinite ranges."""
    kinova3 = ROBOTS.get("kinova3")
    with pytest.raises(ValueError, match=r"joints \[1, 3, 5, 7\] are unbounded"):
        RobotModel(dataclasses.replace(kinova3, position_limits=None))


def test_a_scene_for_an_unknown_robot_is_refused() -> None:
    with pytest.raises(KeyError, match="unknown robot"):
        SceneSpec(robot="r2d2")
    with pytest.raises(ValueError, match="robot_q must be 6"):
        dataclasses.replace(SceneSpec(robot="ur5e"), robot_q=(0.0,) * 7)
