"""The sim-in-the-loop world: franky-sim with our scene, driven by franky over loopback."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import mujoco
import numpy as np
import pytest

franky = pytest.importorskip("franky")

from afford_sim.franky_world import (  # noqa: E402
    LIBFRANKA_UDP_TIMEOUT,
    ROBOT_PREFIX,
    FrankyWorld,
    FrankyWorldConfig,
    LoopTiming,
    build_scene_tree,
    dressed_scene,
    final_stage,
    realtime_priority,
    scene_for,
)
from afford_sim.sim_render import RenderConfig, RenderProcess, SceneRenderer, SharedState  # noqa: E402
from afford_sim.tasks import TASKS, CompositeTask  # noqa: E402
from afford_sim.world import BatchWorld  # noqa: E402

# A loopback address of our own, so parallel test runs never fight over ports 1337/1338.
HOST = f"127.0.{os.getpid() % 250 + 1}.{(os.getpid() // 250) % 250 + 1}"


@pytest.fixture(scope="module")
def world() -> Iterator[FrankyWorld]:
    w = FrankyWorld(FrankyWorldConfig(hostname=HOST))
    w.start("pick-cube-v1", seed=0)
    yield w
    w.stop()


@pytest.fixture(scope="module")
def robot(world: FrankyWorld) -> franky.Robot:
    r = franky.Robot(world.hostname, realtime_config=franky.RealtimeConfig.Ignore)
    r.relative_dynamics_factor = 0.2
    return r


def _top_down(world: FrankyWorld, xyz: np.ndarray, yaw: float) -> franky.CartesianMotion:
    m = np.eye(4)
    c, s = np.cos(yaw), np.sin(yaw)
    m[:3, :3] = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) @ np.diag([1.0, -1.0, -1.0])
    m[:3, 3] = xyz
    return franky.CartesianMotion(franky.RobotPose(franky.Affine(m)))


def test_scene_tree_compiles_with_robot_and_objects() -> None:
    """The executor's robot and the perception camera must live in the same model as the
    objects, with the names the contact checks and the segmentation rely on."""
    task, placed = scene_for("place-banana-plate-v1", seed=2)
    tree, _ = build_scene_tree(placed, placed.spec.cameras, FrankyWorldConfig())
    import xml.etree.ElementTree as ET

    model = mujoco.MjModel.from_xml_string(ET.tostring(tree, encoding="unicode"))
    names = {model.geom(i).name for i in range(model.ngeom)}
    assert {"table", "floor"} <= names
    assert any(n.startswith("robot/left_finger/") for n in names)
    assert any(n.startswith("banana/") for n in names) and any(n.startswith("plate/") for n in names)
    assert model.camera("front").id >= 0 and model.site("tcp").id >= 0
    assert model.joint(ROBOT_PREFIX + "fr3_joint1").id >= 0
    assert task.task_id == "place-banana-plate-v1"


def test_final_stage_of_every_task() -> None:
    """/sim_world/evaluate reports the check of the task's last stage; a wrong stage would
    report a pick as done before the lift, or a place while the object is still held."""
    expected = {"pick": "lift", "place": "place", "hang": "hang", "pour": "pour", "open": "pull",
                "push": "push"}
    for _, cls in TASKS.items():
        if issubclass(cls, CompositeTask):  # judged step by step; the graph runs one step a trial
            with pytest.raises(ValueError, match="is a composite of"):
                final_stage(cls())
            continue
        assert final_stage(cls()) == expected[cls.skill]


def test_ground_truth_agrees_with_batch_world(world: FrankyWorld) -> None:
    """The live world's ground truth must read poses and contacts as the batch world does, or
    success in the ROS graph and in the benchmark would mean different things."""
    batch = BatchWorld(world.scene.placed)
    gt = world.ground_truth()
    for name in world.scene.objects:
        assert np.allclose(gt.object_pose(name)[:3, 3], batch.object_pose(name)[:3, 3], atol=2e-3)
        assert gt.in_contact("table", name) == batch.in_contact("table", name) is True
        assert not gt.in_contact("robot/left_finger", name)
    assert gt.gripper_width() == pytest.approx(0.08, abs=1e-3)
    assert np.allclose(gt.tcp_pose()[:3, 3], batch.tcp_pose()[:3, 3], atol=5e-3)
    stage, check = world.evaluate()
    assert stage == "lift" and not check.ok  # nothing lifted yet


def test_franky_moves_the_arm(world: FrankyWorld, robot: franky.Robot) -> None:
    """franky must drive franky-sim as it drives the FR3: a joint motion ends at its target."""
    q0 = np.array(robot.current_joint_state.position)
    target = q0 + np.array([0.2, 0, 0, 0, 0, 0, 0])
    robot.move(franky.JointMotion(franky.JointState([float(x) for x in target])))
    world.wait_sim_time(0.3)
    q = world.ground_truth().arm_q()
    assert np.abs(q - target).max() < 0.01
    robot.move(franky.JointMotion(franky.JointState([float(x) for x in q0])))


def test_grasp_holds_the_cube_when_lifted(world: FrankyWorld, robot: franky.Robot) -> None:
    """A franky grasp must squeeze with its force: franky-sim's position PD alone pushes ~1 N
    and the cube would stay on the table."""
    gt = world.ground_truth()
    pose, centre = gt.object_pose("cube"), gt.object_center("cube")
    yaw = float(np.arctan2(pose[1, 0], pose[0, 0]))
    bounds = np.asarray(world.scene.placed.object("cube").asset.mesh().bounds)
    width = float(np.min(bounds[1] - bounds[0]))
    gripper = franky.Gripper(world.hostname)
    robot.move(_top_down(world, centre + [0, 0, 0.10], yaw))
    robot.move(_top_down(world, centre, yaw))
    assert gripper.grasp(width, 0.05, 60.0, epsilon_inner=0.01, epsilon_outer=0.01)
    assert world.robot.grasping
    robot.move(_top_down(world, centre + [0, 0, 0.15], yaw))
    world.wait_sim_time(0.5)
    stage, check = world.evaluate()
    assert check.ok, check.detail
    assert world.ground_truth().object_pose("cube")[2, 3] > pose[2, 3] + 0.12
    gripper.move(0.08, 0.05)
    assert not world.robot.grasping


def test_reset_keeps_the_connection(world: FrankyWorld, robot: franky.Robot) -> None:
    """After a new scene the executor's franky connection must still work (no reconnect)."""
    info = world.reset("pick-mug-v1", seed=1)
    assert info.objects == ("mug",)
    q = world.ground_truth().arm_q()
    assert np.allclose(q, info.placed.spec.robot_q, atol=0.02)
    target = q + np.array([0, 0, 0, 0, 0, 0, 0.3])
    robot.move(franky.JointMotion(franky.JointState([float(x) for x in target])))
    world.wait_sim_time(0.2)
    assert abs(world.ground_truth().arm_q()[6] - target[6]) < 0.01
    with pytest.raises(ValueError):
        world.reset("pick-mug-v1", seed=-1)
    with pytest.raises(KeyError, match="unknown task"):
        world.reset("pick up the mug", seed=1)
    assert world.scene.generation == info.generation  # a refused reset leaves the scene


def test_the_loop_is_paced_to_the_wall_clock(world: FrankyWorld) -> None:
    """franky times motions against the 1 kHz state stream, so the world steps in real time: it
    runs, and never ahead of the clock. How close to 1.0 it keeps up on a loaded machine is a
    speed goal, measured in bench/bench_camera_stream.py (franky-sim alone and with the camera)."""
    window = 0.5
    factor = world.realtime_factor(window)
    # At most the schedule plus a backlog of max_lag run in a burst after a stall of the process.
    ceiling = world.config.realtime_factor * (1.0 + world.config.max_lag / window) + 0.02
    assert 0.0 < factor <= ceiling, (factor, ceiling)


def _policy_of_a_child() -> int:
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", "import os; print(os.sched_getscheduler(0))"],
        capture_output=True, text=True, check=True,
    )
    return int(out.stdout)


def test_only_the_loop_thread_gets_real_time_scheduling(world: FrankyWorld) -> None:
    """The 1 kHz loop asks for SCHED_RR (niceness alone left it at 0.1-0.4x real time beside a
    busy graph, bench/bench_load.py). Where the system allows it, the world's loop runs so; the
    call affects its own thread only, and a process that thread starts runs normally. Where it
    is refused, the call says 0 (and the loop keeps its niceness)."""
    got: dict[str, int] = {}
    # Not necessarily SCHED_OTHER: libfranka asks for SCHED_FIFO on the thread that runs a
    # motion (this one, in the tests above), and RealtimeConfig.Ignore only ignores a refusal.
    mine = os.sched_getscheduler(0)

    def in_a_thread() -> None:
        got["priority"] = realtime_priority(10)
        got["policy"] = os.sched_getscheduler(0) & ~os.SCHED_RESET_ON_FORK
        got["child"] = _policy_of_a_child()

    thread = threading.Thread(target=in_a_thread)
    thread.start()
    thread.join()
    assert os.sched_getscheduler(0) == mine, "the caller's other threads changed"
    assert got["child"] == os.SCHED_OTHER, "a process started by the real-time thread inherited it"
    if got["priority"]:
        assert got["priority"] == 10 and got["policy"] == os.SCHED_RR
        assert world.loop_realtime == world.config.loop_rt_priority == 10
    else:
        assert got["policy"] == os.SCHED_OTHER and world.loop_realtime == 0
        with pytest.raises(PermissionError):  # refused for real, not skipped by mistake
            os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(10))
    assert realtime_priority(0) == 0
    with pytest.raises(ValueError, match="loop_rt_priority"):
        FrankyWorldConfig(loop_rt_priority=100)


def _timing(steps: int, wall: float, gap: float, target: float = 1.0) -> LoopTiming:
    return LoopTiming(steps=steps, wall=wall, misses=0, dropped=0.0, worst_gap=gap, target_factor=target)


def test_loop_timing_says_when_and_how_the_simulation_fell_behind() -> None:
    """The words a failed trial starts with: a stall (and whether libfranka's timeout was
    passed), a slow loop against its own target; nothing when it kept up."""
    assert _timing(1000, 1.0, 0.004).behind == ""
    assert _timing(850, 1.0, 0.01).behind == ""  # 85% of real time: within the tolerance
    slow = _timing(400, 1.0, 0.01).behind
    assert slow.startswith("the simulation fell behind real time") and "0.40x" in slow, slow
    stalled = _timing(500, 1.0, 0.5).behind
    assert "stalled for 0.50 s" in stalled and "lost the robot" not in stalled, stalled
    lost = _timing(0, 1.0, LIBFRANKA_UDP_TIMEOUT + 0.2).behind
    assert "stalled for 1.20 s" in lost and "lost the robot" in lost, lost
    # A declared slower-than-real-time world is judged against its own target.
    assert _timing(250, 1.0, 0.01, target=0.25).behind == ""
    assert "0.10x" in _timing(100, 1.0, 0.01, target=0.25).behind
    # A window too short to judge a rate says nothing about the rate.
    assert _timing(0, 0.1, 0.01).behind == ""
    window = _timing(3000, 3.0, 0.02).since(_timing(1000, 1.0, 0.5))
    assert (window.steps, window.wall, window.worst_gap) == (2000, 2.0, 0.02)


def test_a_stall_shows_in_the_loop_timing(world: FrankyWorld) -> None:
    """stall() silences the loop (fault injection): the next reading shows a silence at least
    that long (a lower bound, whatever the machine's load) and the words for it."""
    world.timing(take_gap=True)
    before = world.steps
    world.stall(0.3)
    world.wait_sim_time(0.05)
    reading = world.timing(take_gap=True)
    assert world.steps > before
    assert reading.worst_gap >= 0.3, reading
    assert "stalled for" in reading.behind, reading
    with pytest.raises(ValueError):
        world.stall(0.0)


def test_shared_state_roundtrip() -> None:
    """The renderer must see whole states of the right scene generation, never a torn copy."""
    owner = SharedState(max_nq=16)
    reader = SharedState(owner.name, max_nq=16)
    try:
        assert reader.read() is None
        owner.generation = 3
        owner.write(1.5, np.arange(9.0))
        gen, t, wall, q = reader.read()  # type: ignore[misc]
        assert (gen, t) == (3, 1.5) and np.array_equal(q, np.arange(9.0))
        assert abs(wall - time.time_ns()) < 5e9
        with pytest.raises(ValueError):
            owner.write(0.0, np.zeros(17))
    finally:
        reader.close()
        owner.close()


def test_renderer_segments_objects_with_metric_depth(world: FrankyWorld) -> None:
    """Perception back-projects depth with K and the extrinsics, and cuts objects by the label
    image: the object's pixels must carry its index and lie at its true position."""
    from afford_sim.camera import backproject

    info = world.scene
    r = SceneRenderer(info.xml, info.camera.name, info.objects, RenderConfig(width=320, height=240))
    try:
        _, _, qpos = world.state()
        rgb, depth, seg, K, T = r.render(qpos)
    finally:
        r.close()
    assert rgb.shape == (240, 320, 3) and rgb.dtype == np.uint8 and seg.dtype == np.uint16
    assert set(np.unique(seg)) == {0, 1}
    pts = backproject(depth, K, T, seg == 1)
    centre = world.ground_truth().object_center("mug")
    assert np.linalg.norm(pts.mean(axis=0)[:2] - centre[:2]) < 0.04


def test_render_child_leaves_ctrl_c_to_its_parent() -> None:
    """Ctrl-C reaches the render child with the rest of sim_world's process group. The child
    must not act on it (a KeyboardInterrupt cut its EGL clean-up short in the demo's log): the
    node stops it in order, and until then it keeps rendering."""
    rp = RenderProcess(RenderConfig(width=64, height=48))
    rp.start()
    try:
        time.sleep(3.0)  # spawned and idling in its loop
        assert rp.alive() and rp.pid is not None
        os.kill(rp.pid, signal.SIGINT)
        time.sleep(0.5)
        assert rp.alive()
    finally:
        rp.stop()
    assert not rp.alive()


def test_the_policy_cameras_show_the_batch_worlds_picture() -> None:
    """A policy learns from batch-world images (afford generate) and is served on the graph's
    franky-sim world: its front and wrist cameras (the wrist one riding on franky-sim's hand)
    must show the same picture there, floor and lighting included."""
    from afford_pipeline.spine import task_world
    from afford_sim.policy_cameras import SCENE_CAMERAS, policy_cameras

    task, seed, size = "place-banana-plate-v1", 3, (48, 48)
    cams = policy_cameras(*size)
    host = f"127.2.{os.getpid() % 250 + 1}.{(os.getpid() // 250) % 250 + 1}"
    w = FrankyWorld(FrankyWorldConfig(hostname=host, extra_cameras=cams))
    info = w.start(task, seed=seed)
    try:
        _, _, qpos = w.state()
    finally:
        w.stop()
    cfg = RenderConfig(width=64, height=48, extra_cameras=tuple(SCENE_CAMERAS.values()), extra_size=size)
    r = SceneRenderer(info.xml, info.camera.name, info.objects, cfg)
    try:
        r.render(qpos)
        graph = r.render_extra()
    finally:
        r.close()
    batch = task_world(task, seed, "fr3", cams)
    try:
        for name in SCENE_CAMERAS.values():
            image = batch.render(name, depth=False, segmentation=False).rgb
            assert graph[name].shape == image.shape == (48, 48, 3)
            diff = np.abs(graph[name].astype(int) - image.astype(int)).mean()
            assert diff < 2.0, f"{name}: mean difference {diff:.1f} of 255"
    finally:
        batch.close()


def test_a_randomized_scene_shows_the_batch_worlds_look() -> None:
    """Domain randomization on the graph (sim_world's ``randomize``): franky-sim's scene must
    be the batch world's draw for the same task, seed and preset (the objects where the batch
    world puts them, the same textures, lights, background and moved cameras), so a policy
    trained on randomized batch-world data is tried under the looks it was trained on. The
    background's far walls must not move the cameras' clip planes either (MuJoCo scales them
    with the model's extent: with the walls counted, the wrist camera lost the fingers)."""
    from afford_pipeline.spine import task_world
    from afford_sim.policy_cameras import SCENE_CAMERAS, policy_cameras

    task, seed, size, preset = "place-banana-plate-v1", 3, (48, 48), "texture,lighting,background,camera"
    cams = policy_cameras(*size)
    _, placed, draw = dressed_scene(task, seed, preset, cams)
    assert draw is not None and draw.lights and draw.surfaces and draw.parts and draw.cameras
    host = f"127.3.{os.getpid() % 250 + 1}.{(os.getpid() // 250) % 250 + 1}"
    w = FrankyWorld(FrankyWorldConfig(hostname=host, extra_cameras=cams, randomize=preset))
    info = w.start(task, seed=seed)
    try:
        _, _, qpos = w.state()
    finally:
        w.stop()
    assert info.domain == draw
    model = mujoco.MjModel.from_xml_string(info.xml)
    assert model.geom("floor").matid == model.material("dr/floor").id
    lights = [model.light(i).name for i in range(model.nlight)]
    assert lights == [f"dr/light/{k}" for k in range(len(draw.lights))]
    cam = placed.spec.cameras[0]
    width, height = cam.width, cam.height
    cfg = RenderConfig(width=width, height=height, extra_cameras=tuple(SCENE_CAMERAS.values()),
                       extra_size=size)
    r = SceneRenderer(info.xml, info.camera.name, info.objects, cfg)
    try:
        rgb, depth, _, _, pose = r.render(qpos)
        graph = r.render_extra()
    finally:
        r.close()
    batch = task_world(task, seed, "fr3", cams, randomize=preset)
    try:
        assert batch.domain == draw
        np.testing.assert_allclose(pose, batch.placed.spec.cameras[0].extrinsics(), atol=1e-6)
        seen = batch.render(cam.name, segmentation=False)
        assert rgb.shape == seen.rgb.shape
        diff = np.abs(rgb.astype(int) - seen.rgb.astype(int)).mean()
        assert diff < 3.0, f"perception camera: mean difference {diff:.1f} of 255"
        both = (depth > 0) & (seen.depth > 0)
        assert np.median(np.abs(depth[both] - seen.depth[both])) < 1e-3  # m
        default = task_world(task, seed, "fr3", cams)
        try:
            plain = default.render(cam.name, depth=False, segmentation=False).rgb
        finally:
            default.close()
        assert np.abs(plain.astype(int) - seen.rgb.astype(int)).mean() > 10.0  # a different look
        for name in SCENE_CAMERAS.values():
            image = batch.render(name, depth=False, segmentation=False).rgb
            diff = np.abs(graph[name].astype(int) - image.astype(int)).mean()
            assert diff < 3.0, f"{name}: mean difference {diff:.1f} of 255"
    finally:
        batch.close()
