"""The sim-in-the-loop world: franky-sim serving the libfranka protocol, with our task scene.

The executor connects to :class:`FrankyWorld` with franky exactly as it connects to a real FR3
(``franky.Robot(hostname)``, ``franky.Gripper(hostname)``): franky-sim's ``SimulationServer``
answers on ``hostname`` (1337 robot, 1338 gripper) and steps MuJoCo at 1 kHz in real time. The
MuJoCo scene is franky-sim's own FR3 (its XML tree, see ``MujocoSimulator``) with the table,
objects and cameras of a placed scene grafted in; the objects come from the same builder as the
batch world (:mod:`afford_sim.mjcf`), so geometry, masses and contact settings agree.

What this module adds to franky-sim, and why:

* **Force-controlled grasps** (:class:`GraspingRobot`). franky-sim's hand is a PD on finger
  position (kp 1000 N/m): closing on an object it pushes with ``kp * (target - q)``, about 1 N
  when the commanded width is the object's, below the finger joints' own friction, so nothing
  is held. The real Franka Hand's grasp closes at the commanded speed until it stalls and then
  holds the commanded force; the commanded width and its tolerances only decide whether the
  grasp succeeded. While a grasp is active (the gripper server is, or last was, in its
  grasping state), each finger here is pushed closed with the commanded force (at most 140 N,
  the hand's limit), at most at the commanded speed, until it stalls; moves, homing and stop
  keep franky-sim's position PD. The batch world reaches the same squeeze (~65 N per finger) by
  scaling its position servo instead.
* **Our own 1 kHz loop** with absolute deadlines and a lock: franky-sim's ``run_async`` sleeps
  a relative 1 ms after each tick, so every oversleep is lost time (~0.9x real time). The lock
  lets resets and ground-truth snapshots happen between two steps, never inside one.
* **Reset to a new scene without dropping the connection**. The server, its sockets and the
  robot object stay; the MuJoCo model and data are rebuilt and the robot re-attached to them
  (franky-sim's own ``_start`` does the rebuild). A motion running at the reset is preempted
  (franky raises in the client); the connection survives, so the executor need not reconnect.
* **Ground truth** (:class:`SimGroundTruth`): a :class:`~afford_sim.world.BatchWorld` view over a
  snapshot of franky-sim's state, so the task checks of :mod:`afford_sim.tasks` run unchanged.

Frames: franky-sim's robot base sits at the world origin, so world coordinates are
``fr3_link0`` coordinates, as in the batch world.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import mujoco
import numpy as np
from franky_sim.constants import FRANKA_HAND_FORCE_LIMIT, FRANKA_HAND_MAX_WIDTH, FRANKA_HAND_VELOCITY_LIMIT
from franky_sim.mujoco_simulator import FrankaMujocoRobot, MujocoSimulator

from afford_core.robots import get_robot
from afford_sim.franky_faults import FaultSimulationServer
from afford_sim.mjcf import (
    FLOOR_RGBA,
    HEADLIGHT_AMBIENT,
    HEADLIGHT_DIFFUSE,
    TCP_SITE,
    TOP_LIGHT_DIFFUSE,
    TOP_LIGHT_POS,
    ModelConfig,
    add_camera,
    add_object,
    add_table,
    hand_camera_pose,
)
from afford_sim.randomization import DomainDraw, apply_look, domain_randomization, place_randomized
from afford_sim.robots.fr3 import FINGER_FRICTIONLOSS
from afford_sim.scene import CameraSpec, PlacedScene
from afford_sim.tasks import Check, Task, get_task, manipulated_objects
from afford_sim.world import BatchWorld, WorldConfig

log = logging.getLogger(__name__)

ROBOT_PREFIX = "robot0_"
"""franky-sim prefixes the names of its first robot's bodies, joints and actuators with this."""
FR3 = get_robot("fr3")
"""franky-sim simulates the FR3 alone: its description names the model's joints and bodies."""
SIM_TIMESTEP = 0.001
"""franky-sim's physics step (s); it sets it in ``MujocoSimulator._start`` whatever the XML says."""
StateSink = Callable[[float, np.ndarray], None]
"""Receives ``(sim_time, qpos)`` from the simulation thread; must copy ``qpos`` and return fast."""


@dataclass(frozen=True)
class FrankyWorldConfig:
    """Settings of a :class:`FrankyWorld`.

    Attributes:
        hostname: Address the libfranka server binds (ports 1337 and 1338). Loopback by default;
            run two worlds side by side on different 127.x.y.z addresses.
        realtime_factor: Simulated seconds per wall-clock second. 1.0 is what franky expects (its
            motions are timed against the state stream, not the wall clock, so other values
            work too, e.g. 0.5 on a loaded machine).
        camera_size: (width, height) the perception camera is rendered at, overriding the scene's
            camera; None keeps it. A camera with explicit intrinsics must keep its size.
        model: Contact and physics settings of the scene objects and the fingers (the batch
            world's). Its ``timestep`` and the robot's servos are franky-sim's; its ``floor`` is
            ignored (franky-sim's ground plane is moved to where the floor belongs).
        settle_time: Simulated time (s) after a reset before the task's start state is recorded
            (objects come to rest on their supports).
        max_lag: When the loop falls this far (s) behind its schedule (a long pause of the
            process), it drops the backlog instead of running the missed steps in a burst.
        state_every: The state sinks get the state every this many 1 ms steps.
        loop_nice: Niceness the simulation loop's thread asks for (-20..0; 0 leaves it). The
            loop is what a libfranka client hears every millisecond; on a machine whose cores
            are busy (a training job beside the graph) a raised priority keeps it on time.
            Raising needs CAP_SYS_NICE or a nice limit (``ulimit -e``; the lab's real-time group
            usually has it); without it the loop runs at normal priority and says so once.
        loop_rt_priority: Real-time priority (SCHED_RR, 1..99) the loop's thread asks for
            first; 0 skips it and only ``loop_nice`` applies. Niceness alone was not enough:
            with the graph's other processes busy (other sessions, so other scheduler
            autogroups, where niceness does not reach) the loop, which sleeps each millisecond
            and waits to be woken, got 0.3-0.4 of a core and ran at 0.1-0.4x real time; with
            SCHED_RR it kept real time beside four busy processes. It stands in for the FR3's
            own controller, which has a processor to itself. Only this thread gets it (children
            reset to normal scheduling); the kernel keeps 5% of every core for normal threads.
            Needs CAP_SYS_NICE or an rtprio limit (``ulimit -r``); otherwise ``loop_nice``.
        extra_cameras: Cameras added to every scene after the task's own (a policy's front and
            wrist cameras, :mod:`afford_sim.policy_cameras`); hand-mounted ones ride on the hand.
        randomize: Domain randomization of every scene (:data:`afford_sim.randomization.DOMAINS`:
            a preset, or a comma list of them; ``none`` by default): the batch world's draw for
            the same task, seed and preset (object pose, textures, lighting, background, camera
            pose, pixel noise), so the graph can be tried under the looks a policy or a data set
            was made with. The pixel noise is added by whoever publishes the images
            (:attr:`SceneInfo.domain`).
    """

    hostname: str = "127.0.0.1"
    realtime_factor: float = 1.0
    camera_size: tuple[int, int] | None = None
    model: ModelConfig = field(default_factory=lambda: ModelConfig(floor=False))
    settle_time: float = 0.3
    max_lag: float = 0.05
    state_every: int = 2
    loop_nice: int = -10
    loop_rt_priority: int = 10
    extra_cameras: tuple[CameraSpec, ...] = ()
    randomize: str = "none"

    def __post_init__(self) -> None:
        domain_randomization(self.randomize)  # KeyError listing the presets
        if not self.hostname:
            raise ValueError("hostname must not be empty")
        if not 0.01 <= self.realtime_factor <= 10.0:
            raise ValueError(f"realtime_factor must be in [0.01, 10], got {self.realtime_factor}")
        if self.camera_size is not None and (min(self.camera_size) < 16 or max(self.camera_size) > 4096):
            raise ValueError(f"camera_size must be within 16..4096 pixels, got {self.camera_size}")
        if self.settle_time < 0 or self.max_lag <= 0 or self.state_every < 1:
            raise ValueError("settle_time must be >= 0, max_lag > 0 and state_every >= 1")
        if not -20 <= self.loop_nice <= 0:
            raise ValueError(f"loop_nice must be in -20..0, got {self.loop_nice}")
        if not 0 <= self.loop_rt_priority <= 99:
            raise ValueError(f"loop_rt_priority must be in 0..99, got {self.loop_rt_priority}")
        if self.model.solref[0] < 2 * SIM_TIMESTEP:
            raise ValueError(f"model.solref time constant must be >= {2 * SIM_TIMESTEP} s")


# ---------------------------------------------------------------------------------------------
# The hand.


class GraspingRobot(FrankaMujocoRobot):
    """franky-sim's FR3 whose grasps squeeze with the commanded force (see the module docstring).

    A grasp is recognised by the gripper server's state on the first step after a new hand goal:
    franky-sim's ``FrankaGripperServer.start_grasp`` sets the goal and then enters its grasping
    state, so a goal followed by ``GRASPING`` belongs to a grasp; moves, homing and stop enter
    other states and turn force control off.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._force_mode = False
        self._goal_changed = False

    @property
    def grasping(self) -> bool:
        """Whether the fingers are force-controlled (a grasp is active)."""
        return self._force_mode

    def set_hand_goal(self, width: float, max_velocity: float, max_force: float) -> None:
        super().set_hand_goal(width, max_velocity, max_force)
        self._goal_changed = True

    def release(self, width: float = FRANKA_HAND_MAX_WIDTH) -> None:
        """Open to ``width`` under position control (used by resets, not by the protocol)."""
        super().set_hand_goal(width, FRANKA_HAND_VELOCITY_LIMIT, 70.0)  # N: the hand's continuous force
        self._force_mode = False
        self._goal_changed = False

    def _pre_step(self) -> None:
        data = self._data
        if data is None:
            return
        if self._goal_changed:
            # franky-sim never sets BaseRobot.gripper_server; the robot server holds it.
            gripper = getattr(self.server, "gripper_server", None)
            state = getattr(gripper, "_motion_state", None)
            self._force_mode = getattr(state, "name", "") == "GRASPING"
            self._goal_changed = False
        q = data.qpos[self._finger_qpos_addrs]
        dq = data.qvel[self._finger_dof_addrs]
        target = self._hand_goal_width / 2
        tau = self._kp_hand * (target - q) - self._kv_hand * dq
        if self._force_mode:
            # A grasp closes until the fingers stall (on an object, or shut) and then holds the
            # force; the commanded width only decides whether the grasp counts as a success.
            # In free motion the speed limit below keeps the closing speed at the commanded one.
            tau = np.full(2, -self._hand_goal_force)
        too_fast = (np.abs(dq) > self._hand_goal_velocity) & (np.sign(dq) == np.sign(tau))
        tau = np.where(too_fast, -self._kv_hand * dq, tau)
        limit = min(FRANKA_HAND_FORCE_LIMIT, self._hand_goal_force)
        data.qfrc_applied[self._finger_dof_addrs] = np.clip(tau, -limit, limit)


class SceneSimulator(MujocoSimulator):
    """franky-sim's MuJoCo simulator whose robot is a :class:`GraspingRobot` and whose scene can
    be rebuilt in place (:meth:`rebuild`)."""

    def add_robot(self, *args: Any, **kwargs: Any) -> GraspingRobot:  # type: ignore[override]
        if self._robots:
            raise RuntimeError("the scene simulator holds one robot")
        super().add_robot(*args, **kwargs)
        kwargs.pop("position", None)
        robot = GraspingRobot(*args, **kwargs)
        self._robots[-1] = robot
        return robot

    def set_scene(self, tree: ET.Element) -> None:
        """Use this MJCF tree (from :func:`build_scene_tree`) at the next start or rebuild."""
        self._scene = tree

    def rebuild(self) -> None:
        """Recompile the current scene tree and re-attach the robot to the new model and data.

        Runs franky-sim's own start-up (compile, zero the XML actuators' gains, put the robot at
        its ``initial_q``, warm up 100 steps) on a started simulator; the caller must hold the
        simulation lock.
        """
        if not self.is_started:
            raise RuntimeError("rebuild needs a started simulator")
        self._start()


# ---------------------------------------------------------------------------------------------
# The scene.


def scene_for(task_id: str, seed: int) -> tuple[Task, PlacedScene]:
    """The task ``task_id`` and its placed scene for ``seed``, as the spine builds them.

    Raises:
        KeyError: no task has that id (the message lists them).
        ValueError: a negative seed, or the scene cannot be placed.
    """
    task, placed, _ = dressed_scene(task_id, seed)
    return task, placed


def dressed_scene(task_id: str, seed: int, randomize: str = "none",
                  cameras: Sequence[CameraSpec] = ()) -> tuple[Task, PlacedScene, DomainDraw | None]:
    """The task, its placed scene for ``seed`` with ``cameras`` added to its own, and the
    domain randomization's draw (None with ``randomize="none"``): the batch world's
    (``afford_pipeline.spine.task_world``) for the same arguments.

    Raises:
        KeyError: no task has that id, or no preset has that name (the messages list them).
        ValueError: a negative seed, or the scene cannot be placed.
    """
    if seed < 0:
        raise ValueError(f"seed must be >= 0, got {seed}")
    dr = domain_randomization(randomize)
    task = get_task(task_id)
    spec = task.scene(seed)
    if cameras:
        spec = dataclasses.replace(spec, cameras=(*spec.cameras, *cameras))
    placed, draw = place_randomized(spec, seed, dr, manipulated_objects(task))
    return task, placed, draw


def perception_camera(placed: PlacedScene, size: tuple[int, int] | None = None) -> CameraSpec:
    """The scene's first camera (the one perception uses), at ``size`` if given."""
    if not placed.spec.cameras:
        raise ValueError("the scene has no camera")
    cam = placed.spec.cameras[0]
    if size is None or (cam.width, cam.height) == tuple(size):
        return cam
    if cam.K is not None:
        raise ValueError(
            f"camera {cam.name!r} has explicit intrinsics for {cam.width}x{cam.height}; "
            f"it cannot be rendered at {size[0]}x{size[1]}"
        )
    return dataclasses.replace(cam, width=int(size[0]), height=int(size[1]))


def _scene_elements(placed: PlacedScene, cameras: Sequence[CameraSpec], config: ModelConfig,
                    domain: DomainDraw | None = None) -> ET.Element:
    # The objects go through the batch world's builder (MjSpec), then into franky-sim's XML tree;
    # so does a domain randomization's look (the batch world's apply_look on the same builder).
    spec = mujoco.MjSpec()
    add_table(spec, placed, dataclasses.replace(config, floor=False))
    for obj in placed.objects:
        add_object(spec, obj, config)
    for cam in cameras:
        if cam.mount != "tcp":  # hand-mounted ones go into franky-sim's hand (build_scene_tree)
            add_camera(spec, cam)
    if domain is not None:
        table = placed.spec.table
        apply_look(spec, domain, placed.names, floor_z=table.top_z - table.height)
    return ET.fromstring(spec.to_xml())


def _rename_robot_geoms(worldbody: ET.Element) -> None:
    """Name the robot's geoms ``robot/{body}/{i}`` as the batch world does, so contact queries
    (``robot/left_finger``) and segmentation labels mean the same in both worlds."""

    roles = {b: "left_finger" for b in FR3.sim.left_finger_bodies}
    roles.update({b: "right_finger" for b in FR3.sim.right_finger_bodies})

    def visit(body: ET.Element) -> None:
        name = body.attrib.get("name", "").removeprefix(ROBOT_PREFIX)
        name = roles.get(name, name)
        k = 0
        for child in body:
            if child.tag == "geom":
                child.attrib["name"] = f"robot/{name}/{k}"
                k += 1
            elif child.tag == "body":
                visit(child)

    for body in worldbody:
        if body.tag == "body" and body.attrib.get("name", "").startswith(ROBOT_PREFIX):
            visit(body)


def build_scene_tree(
    placed: PlacedScene, cameras: Sequence[CameraSpec], config: FrankyWorldConfig,
    domain: DomainDraw | None = None,
) -> tuple[ET.Element, GraspingRobot]:
    """franky-sim's FR3 scene with ``placed`` grafted in, and the robot it was built for.

    Only the XML is built here (a throwaway :class:`SceneSimulator` makes franky-sim's tree);
    the returned robot starts at the scene's ``robot_q`` with the fingers open. ``domain``
    dresses it as the batch world dresses the same scene (``randomization.apply_look``):
    textures, floor, table and walls, lights and ambient; the cameras come already moved.
    """
    model_cfg = config.model
    sim = SceneSimulator()
    robot = sim.add_robot(
        initial_q=tuple(float(q) for q in placed.spec.robot_q), initial_hand_width=FRANKA_HAND_MAX_WIDTH
    )
    root, worldbody = sim.scene, sim.worldbody
    _rename_robot_geoms(worldbody)
    for body in worldbody.iter("body"):
        name = body.attrib.get("name", "")
        if name == ROBOT_PREFIX + FR3.sim.hand_body:
            tcp = FR3.sim.tcp_matrix[:3, 3]
            ET.SubElement(body, "site", name=TCP_SITE, pos=" ".join(map(str, tcp)), size="0.005", group="4")
            for cam in cameras:
                if cam.mount == "tcp":  # a wrist camera (a policy's), as the batch world mounts it
                    pos, quat = hand_camera_pose(cam, FR3)
                    ET.SubElement(body, "camera", name=cam.name, pos=" ".join(map(str, pos)),
                                  quat=" ".join(map(str, quat)), fovy=str(cam.fovy))
        if name.removeprefix(ROBOT_PREFIX) in (*FR3.sim.left_finger_bodies, *FR3.sim.right_finger_bodies):
            for geom in body.findall("geom"):
                if geom.attrib.get("class") != "visual":  # the collision geoms
                    geom.attrib.update(
                        condim=str(model_cfg.condim),
                        friction=" ".join(map(str, model_cfg.friction)),
                        solref=" ".join(map(str, model_cfg.solref)),
                        solimp=" ".join(map(str, model_cfg.solimp)),
                    )
    for joint in worldbody.iter("joint"):
        if joint.attrib.get("name", "").removeprefix(ROBOT_PREFIX) in FR3.sim.finger_joints:
            # fr3.xml gives the fingers the arm's 1.137 N of dry friction, which eats a gentle
            # grasp; the batch world uses the same lower value.
            joint.attrib["frictionloss"] = str(FINGER_FRICTIONLOSS)
    # franky-sim's ground is at z = 0, the table top's height; the floor belongs under the table.
    # It looks and is lit as the batch world's (mjcf.FLOOR_RGBA ...), so the cameras show the same
    # picture in both worlds (franky-sim's checker floor and three lights did not).
    table = placed.spec.table
    fmt = " ".join
    for geom in worldbody.findall("geom"):
        if geom.attrib.get("name") == "ground":
            geom.attrib.pop("material", None)
            geom.attrib.update(name="floor", pos=f"0 0 {table.top_z - table.height}", size="0 0 0.05",
                               rgba=fmt(map(str, FLOOR_RGBA)))
            if domain is not None and domain.surfaces:
                geom.attrib.update(material="dr/floor", rgba="1 1 1 1")
    for light in worldbody.findall("light"):
        worldbody.remove(light)
    if domain is None or not domain.lights:  # drawn lights come with the graft
        ET.SubElement(worldbody, "light", name="top", pos=fmt(map(str, TOP_LIGHT_POS)), dir="0 0 -1",
                      castshadow="false", diffuse=fmt(map(str, TOP_LIGHT_DIFFUSE)))
    option = root.find("option")
    if option is None:
        option = ET.SubElement(root, "option")
    option.attrib.update(cone="elliptic", impratio=str(model_cfg.impratio))
    visual = root.find("visual")
    assert visual is not None
    headlight = visual.find("headlight")
    if headlight is None:
        headlight = ET.SubElement(visual, "headlight")
    headlight.attrib.clear()  # MuJoCo's defaults but these, as the batch world
    ambient, diffuse = HEADLIGHT_AMBIENT, HEADLIGHT_DIFFUSE
    if domain is not None and domain.lights:  # apply_look's levels
        level = float(domain.ambient or 0.0)
        ambient, diffuse = (level,) * 3, (0.5 * level,) * 3
    headlight.attrib.update(ambient=fmt(map(str, ambient)), diffuse=fmt(map(str, diffuse)))
    quality = visual.find("quality")
    if quality is not None:
        quality.attrib["offsamples"] = "0"
    ET.SubElement(
        visual,
        "global",
        offwidth=str(max(640, *(c.width for c in cameras))),
        offheight=str(max(480, *(c.height for c in cameras))),
    )
    graft = _scene_elements(placed, cameras, model_cfg, domain)
    # The background's walls stand far out; MuJoCo scales the cameras' near and far planes with
    # the model's extent, so they join after the extent is taken without them (as apply_look
    # keeps the batch world's), and the depth images stay as they are without randomization.
    walls = [g for g in graft.iter("geom") if g.attrib.get("name", "").startswith("floor/wall/")]
    graft_body = graft.find("worldbody")
    for wall in walls:
        assert graft_body is not None
        graft_body.remove(wall)
    asset = root.find("asset")
    assert asset is not None
    for tag, dest in (("asset", asset), ("worldbody", worldbody)):
        section = graft.find(tag)
        if section is not None:
            dest.extend(list(section))
    contact = root.find("contact")
    section = graft.find("contact")
    if contact is not None and section is not None:
        contact.extend(list(section))
    if walls:
        stat = mujoco.MjModel.from_xml_string(ET.tostring(root, encoding="unicode")).stat
        statistic = root.find("statistic")
        if statistic is None:
            statistic = ET.SubElement(root, "statistic")
        statistic.attrib.update(extent=repr(float(stat.extent)),
                                center=fmt(repr(float(v)) for v in stat.center))
        worldbody.extend(walls)
    return root, robot


# ---------------------------------------------------------------------------------------------
# Ground truth over franky-sim's state.


class SimGroundTruth(BatchWorld):
    """The batch world's read-only queries (poses, contacts, joints, collision shapes) over a
    snapshot of franky-sim's state, for the checks of :mod:`afford_sim.tasks`.

    :meth:`BatchWorld.__init__` is not called: there is no model to compile, the model is
    franky-sim's; this sets the attributes its query methods read. Commands that would step
    physics refuse (franky-sim steps it), except :meth:`advance`, which waits for the live
    simulation and takes a new snapshot.
    """

    def __init__(self, world: FrankyWorld, model: mujoco.MjModel, placed: PlacedScene) -> None:
        self._world = world
        self.placed = placed
        self.config = WorldConfig()
        self.model = model
        self.data = mujoco.MjData(model)
        self._scratch = mujoco.MjData(model)
        m = model
        self.robot = FR3
        self.arm_joints = FR3.sim.arm_joints
        self.dof = FR3.dof
        self._velocity_limits = np.asarray(FR3.velocity_limits)
        self._arm_qpos = np.array([m.joint(ROBOT_PREFIX + j).qposadr[0] for j in FR3.sim.arm_joints])
        self._arm_dof = np.array([m.joint(ROBOT_PREFIX + j).dofadr[0] for j in FR3.sim.arm_joints])
        self._arm_range = np.array([m.joint(ROBOT_PREFIX + j).range for j in FR3.sim.arm_joints])
        self._finger_qpos = np.array([m.joint(ROBOT_PREFIX + j).qposadr[0] for j in FR3.sim.finger_joints])
        self._finger_dof = np.array([m.joint(ROBOT_PREFIX + j).dofadr[0] for j in FR3.sim.finger_joints])
        self._tcp = m.site(TCP_SITE).id
        self.geom_names = [m.geom(i).name for i in range(m.ngeom)]
        self._labels, self._geom_label = self._segmentation_labels()
        self._prefix_masks: dict[str, np.ndarray] = {}
        self._renderer = None
        self._cams = {c.name: c for c in placed.spec.cameras}
        self._root_offset = {o.name: np.asarray(o.asset.links[0].pos, dtype=float) for o in placed.objects}
        self._center_local = {
            o.name: np.asarray(o.asset.mesh().bounds, dtype=float).mean(axis=0) for o in placed.objects
        }

    def load(self, time_s: float, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """Set the snapshot (positions, velocities) and recompute kinematics and contacts."""
        self.data.time = time_s
        self.data.qpos[:] = qpos
        self.data.qvel[:] = qvel
        mujoco.mj_forward(self.model, self.data)

    def refresh(self) -> None:
        """Take a new snapshot of the live simulation."""
        self._world.snapshot_into(self)

    def step(self, n: int = 1) -> None:
        raise RuntimeError("franky-sim steps the live world; use advance() to wait for it")

    def advance(self, seconds: float) -> None:
        """Wait until the live simulation has run ``seconds`` further, then take a snapshot."""
        if seconds < 0:
            raise ValueError(f"cannot advance by negative time ({seconds} s)")
        self._world.wait_sim_time(seconds)
        self.refresh()

    def restore_state(self, state: Any) -> None:
        raise RuntimeError("the live world cannot be restored; reset it to a new scene instead")


def final_stage(task: Task) -> str:
    """The stage whose check says whether the whole task succeeded.

    The most derived class that defines checks owns the task's last stage, and defines its
    checks in stage order (``PickTask``: the base's approach, grasp, lift; ``PlaceTask``: place;
    ``OpenDrawerTask``: approach, grasp, pull).

    Raises:
        ValueError: the task has no checks, or is a composite (judged step by step by each
            step's own task, in the batch world; a trial on the graph runs one step).
    """
    from afford_sim.tasks import CompositeTask

    if isinstance(task, CompositeTask):
        raise ValueError(f"task {task.task_id!r} is a composite of {', '.join(task.steps)}: each step "
                         "is judged by its own task; run the steps one per trial")
    for cls in type(task).__mro__:
        # set_down is a composite's, after a step whose object a later step takes again.
        stages = [k.removeprefix("check_") for k in vars(cls)
                  if k.startswith("check_") and k != "check_set_down"]
        if stages:
            return stages[-1]
    raise ValueError(f"task {task.task_id!r} defines no stage checks")


# ---------------------------------------------------------------------------------------------
# Keeping time.


def raise_priority(nice: int, what: str) -> int:
    """Ask for niceness ``nice`` (<= 0) for the calling thread, and the threads and child
    processes it starts from now on (Linux: niceness is per thread and inherited). Returns the
    niceness it runs at; says once, in the log, when raising is not permitted (it needs
    CAP_SYS_NICE or a nice limit, ``ulimit -e``; a lab's real-time group usually has one).

    Why a whole process and not only its 1 kHz thread: Python threads share one lock (the
    GIL); a thread holding it at normal priority, preempted by a busy neighbour, would hold a
    raised loop back all the same.
    """
    tid = threading.get_native_id()
    if nice >= 0:
        return os.getpriority(os.PRIO_PROCESS, tid)
    try:
        os.setpriority(os.PRIO_PROCESS, tid, nice)
        return nice
    except OSError as err:
        log.warning(
            "%s runs at normal priority (nice %d could not be set: %s); on a busy machine it may "
            "fall behind real time. Grant CAP_SYS_NICE or a nice limit (ulimit -e) to raise it.",
            what,
            nice,
            err,
        )
        return os.getpriority(os.PRIO_PROCESS, tid)


def realtime_priority(priority: int) -> int:
    """Ask for round-robin real-time scheduling at ``priority`` (1..99) for the calling thread
    only: threads and processes it starts later get normal scheduling (SCHED_RESET_ON_FORK).
    Returns the priority it got, 0 when ``priority`` is 0 or the system refuses (no
    CAP_SYS_NICE and no ``ulimit -r``; said once in the log) or has no such call."""
    if priority <= 0 or not hasattr(os, "sched_setscheduler"):
        return 0
    try:
        os.sched_setscheduler(0, os.SCHED_RR | os.SCHED_RESET_ON_FORK, os.sched_param(priority))
        return priority
    except OSError as err:
        log.warning(
            "the simulation loop runs without real-time scheduling (SCHED_RR %d refused: %s); "
            "on a busy machine it may fall behind real time. Grant CAP_SYS_NICE or an rtprio "
            "limit (ulimit -r) to allow it.",
            priority,
            err,
        )
        return 0


#: libfranka gives up on a connection when no state packet comes for this long (s): its UDP
#: receive timeout. franky-sim sends one per step, so a loop that stalls this long loses the
#: client (measured: a 1.5 s stall mid-motion ends it in "UDP receive: Timeout" and the
#: client must reconnect; a 0.8 s stall passes).
LIBFRANKA_UDP_TIMEOUT = 1.0


@dataclass(frozen=True)
class LoopTiming:
    """How the simulation loop has kept its schedule since it started (totals; differences of
    two readings give a window).

    Attributes:
        steps: Physics steps run (each ``SIM_TIMESTEP`` of simulated time).
        wall: Wall seconds since the loop started, less the time resets spent rebuilding the
            scene (a new scene restarts the schedule).
        misses: Steps that began more than one period after their deadline (the loop was late).
        dropped: Wall seconds of backlog the loop gave up (``max_lag``) instead of catching up:
            simulated time lost against the wall clock.
        worst_gap: The longest wall time (s) between two consecutive steps since the previous
            reading that asked for it (``take_gap``), a silence still going on included: the
            longest a libfranka client heard nothing. Over ``LIBFRANKA_UDP_TIMEOUT`` it lost
            the connection.
        target_factor: The configured real-time factor.
    """

    steps: int
    wall: float
    misses: int
    dropped: float
    worst_gap: float
    target_factor: float

    def since(self, earlier: LoopTiming) -> LoopTiming:
        """The window from ``earlier`` to this reading (``worst_gap`` is this reading's)."""
        return LoopTiming(
            steps=self.steps - earlier.steps,
            wall=self.wall - earlier.wall,
            misses=self.misses - earlier.misses,
            dropped=self.dropped - earlier.dropped,
            worst_gap=self.worst_gap,
            target_factor=self.target_factor,
        )

    @property
    def realtime_factor(self) -> float:
        """Simulated seconds per wall second over the reading (0 before any wall time)."""
        return self.steps * SIM_TIMESTEP / self.wall if self.wall > 0 else 0.0

    @property
    def severe(self) -> bool:
        """Fell behind far enough for the robot's link to be at risk: a silence of half
        libfranka's timeout, or under half the target factor over a window long enough to say."""
        return self.worst_gap >= LIBFRANKA_UDP_TIMEOUT / 2 or (
            self.wall > 0.5 and self.realtime_factor < 0.5 * self.target_factor
        )

    @property
    def behind(self) -> str:
        """Why the simulation fell behind in this reading, in words; "" when it kept up (ran at
        80% of its target factor or better, with no gap a client notices, 0.2 s)."""
        why = []
        if self.worst_gap >= 0.2:
            lost = (
                " (libfranka's timeout: the client lost the robot)"
                if self.worst_gap >= LIBFRANKA_UDP_TIMEOUT
                else ""
            )
            why.append(f"the loop stalled for {self.worst_gap:.2f} s{lost}")
        if self.wall >= 0.5 and self.realtime_factor < 0.8 * self.target_factor:
            why.append(
                f"it ran at {self.realtime_factor:.2f}x real time (target {self.target_factor:.2f}x)"
            )
        if not why:
            return ""
        return "the simulation fell behind real time: " + " and ".join(why)


# ---------------------------------------------------------------------------------------------
# The world.


@dataclass(frozen=True)
class SceneInfo:
    """What the rest of the graph needs to know about the current scene.

    Attributes:
        task_id: The task the scene was built for.
        seed: Its seed.
        task: The task (checks).
        placed: The placed scene.
        xml: The compiled MJCF text; compiling it again gives the same model (renderers do).
        camera: The perception camera as rendered.
        objects: Object names in segmentation order (index 1 is the first).
        generation: Counts resets; state copies carry it so a reader never mixes two models.
        domain: The domain randomization's draw (None: none); its ``noise_std`` is for the
            publisher of the images to add (seeded by ``domain.seed`` and ``NOISE_SALT``).
    """

    task_id: str
    seed: int
    task: Task
    placed: PlacedScene
    xml: str
    camera: CameraSpec
    objects: tuple[str, ...]
    generation: int
    domain: DomainDraw | None = None


class FrankyWorld:
    """franky-sim with a task scene, served on ``config.hostname`` in real time.

    Usage::

        world = FrankyWorld(FrankyWorldConfig())
        world.start("pick-mug-v1", seed=0)
        ...  # franky.Robot(world.hostname) drives it
        world.evaluate()  # the final stage's Check
        world.reset("hang-mug-v1", seed=3)
        world.stop()
    """

    def __init__(self, config: FrankyWorldConfig | None = None) -> None:
        self.config = config or FrankyWorldConfig()
        self._lock = threading.Lock()
        self._sim: SceneSimulator | None = None
        self._server: FaultSimulationServer | None = None
        self._robot: GraspingRobot | None = None
        self._thread: threading.Thread | None = None
        self._running = False
        self._scene: SceneInfo | None = None
        self._sinks: list[StateSink] = []
        self._steps = 0
        self._generation = 0
        self._view: SimGroundTruth | None = None
        self._loop_error: BaseException | None = None
        # Loop timing (LoopTiming), written by the loop thread only.
        self._t_start = 0.0
        self._misses = 0
        self._dropped = 0.0
        self._worst_gap = 0.0
        self._stall_until = 0.0
        self._paused = 0.0  # wall seconds spent rebuilding scenes (resets), not stepping
        self._last_step = 0.0  # perf_counter at the end of the latest step
        #: The loop thread's niceness once it runs (config.loop_nice where permitted).
        self.loop_priority = 0
        #: The loop thread's real-time priority once it runs (0: normal scheduling).
        self.loop_realtime = 0

    # Lifecycle -----------------------------------------------------------------------------

    @property
    def hostname(self) -> str:
        return self.config.hostname

    @property
    def scene(self) -> SceneInfo:
        if self._scene is None:
            raise RuntimeError("the world is not started")
        return self._scene

    @property
    def robot(self) -> GraspingRobot:
        if self._robot is None:
            raise RuntimeError("the world is not started")
        return self._robot

    @property
    def running(self) -> bool:
        return self._running and self._thread is not None and self._thread.is_alive()

    def add_state_sink(self, sink: StateSink) -> None:
        """Call ``sink(sim_time, qpos)`` from the simulation thread every ``state_every`` steps."""
        self._sinks.append(sink)

    def _prepare(self, task_id: str, seed: int) -> tuple[SceneInfo, ET.Element, GraspingRobot]:
        # The extra cameras join before the draw, as the batch world's (task_world's cameras).
        task, placed, domain = dressed_scene(task_id, seed, self.config.randomize, self.config.extra_cameras)
        cam = perception_camera(placed, self.config.camera_size)
        cameras = [cam, *placed.spec.cameras[1:]]
        tree, robot = build_scene_tree(placed, cameras, self.config, domain)
        xml = ET.tostring(tree, encoding="unicode")
        mujoco.MjModel.from_xml_string(xml)  # fail here, before the running world is touched
        info = SceneInfo(
            task_id=task_id,
            seed=seed,
            task=task,
            placed=placed,
            xml=xml,
            camera=cam,
            objects=tuple(placed.names),
            generation=self._generation + 1,
            domain=domain,
        )
        return info, tree, robot

    def start(self, task_id: str, seed: int = 0) -> SceneInfo:
        """Build the scene, bind the server, start the real-time loop; returns the scene.

        Raises:
            OSError: the hostname's ports are taken (another server runs there).
        """
        if self._server is not None:
            raise RuntimeError("already started; use reset() for a new scene")
        info, tree, robot = self._prepare(task_id, seed)
        sim = SceneSimulator()
        sim.init()
        sim.set_scene(tree)
        sim._robots = [robot]  # the robot the tree was built for
        server = FaultSimulationServer(sim, hostname_candidates=[self.config.hostname])
        try:
            server.init()  # binds the sockets, then builds the model (sim.start)
        except Exception:
            server.cleanup()
            raise
        if not robot.hostname:
            server.cleanup()
            raise OSError(f"franky-sim could not bind {self.config.hostname}")
        self._sim, self._server, self._robot = sim, server, robot
        self._generation = info.generation
        self._scene = info
        self._view = SimGroundTruth(self, sim.model, info.placed)
        self._running = True
        self._thread = threading.Thread(target=self._loop, name="franky-sim", daemon=True)
        self._thread.start()
        self._begin_task()
        return info

    def reset(self, task_id: str, seed: int = 0) -> SceneInfo:
        """Rebuild the world for a new task scene; the server and its connections stay up.

        A motion running at the reset is preempted (the franky client raises); the arm is
        moved to the scene's start configuration with the fingers open.

        Raises:
            KeyError / ValueError: an unknown task id, or a seed that gives no scene; the
                world is left as it was.
        """
        if self._sim is None or self._server is None or self._robot is None:
            raise RuntimeError("the world is not started")
        info, tree, _ = self._prepare(task_id, seed)
        robot, sim = self._robot, self._sim
        with self._lock:
            for rs in self._server.robot_servers:
                rs.stop_motion(send_preemption_signal=True)
            robot._initial_q = tuple(float(q) for q in info.placed.spec.robot_q)
            robot._initial_hand_width = FRANKA_HAND_MAX_WIDTH
            robot.release()
            sim.set_scene(tree)
            sim.rebuild()
            for rs in self._server.robot_servers:
                rs._reset_state()  # hold the new configuration, no motion running
            # The state's finite-difference velocity estimates would see the jump as a spike.
            for comp in robot._tracked_state_components.values():
                for obs in comp.observers.values():
                    obs.clear()
            self._generation = info.generation
            self._scene = info
            self._view = SimGroundTruth(self, sim.model, info.placed)
        self._begin_task()
        return info

    def stop(self) -> None:
        """Stop the loop, close the sockets (clients see the connection drop)."""
        self._running = False
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            self._thread = None
        if self._server is not None:
            self._server.cleanup()
            self._server = None
        if self._sim is not None and self._sim.is_initialized and not self._sim.is_cleaned_up:
            self._sim.cleanup()
        self._sim = None

    def __enter__(self) -> FrankyWorld:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _begin_task(self) -> None:
        self.wait_sim_time(self.config.settle_time)
        self.scene.task.begin(self.ground_truth())

    # The loop ------------------------------------------------------------------------------

    def _raise_priority(self) -> None:
        self.loop_priority = raise_priority(self.config.loop_nice, "the simulation loop")
        self.loop_realtime = realtime_priority(self.config.loop_rt_priority)

    def _loop(self) -> None:
        assert self._server is not None and self._sim is not None
        server, sim = self._server, self._sim
        self._raise_priority()
        period = SIM_TIMESTEP / self.config.realtime_factor
        deadline = self._t_start = last = time.perf_counter()
        generation = self._generation
        try:
            while self._running:
                if self._stall_until:
                    self._stall()
                with self._lock:
                    if generation != self._generation:
                        # A reset rebuilt the model meanwhile (the loop waited on the lock): a new
                        # scene restarts the schedule; its build time is no lateness.
                        now = time.perf_counter()
                        self._paused += now - last
                        generation, last, deadline = self._generation, now, now
                    if time.perf_counter() - deadline > period:
                        self._misses += 1
                    server.run_once(realtime=False)
                    self._steps += 1
                    if self._sinks and self._steps % self.config.state_every == 0:
                        data = sim.data
                        for sink in self._sinks:
                            sink(float(data.time), data.qpos)
                now = time.perf_counter()
                self._worst_gap = max(self._worst_gap, now - last)
                last = self._last_step = now
                deadline += period
                delay = deadline - now
                if delay > 0:
                    time.sleep(delay)
                elif delay < -self.config.max_lag:
                    self._dropped -= delay
                    deadline = now
        except BaseException as err:  # surfaced by wait_sim_time and the node's health check
            self._loop_error = err
            log.exception("franky-sim loop stopped")
            self._running = False

    def _stall(self) -> None:
        # Fault injection (stall()): hold the lock, so nothing steps and no packet goes out.
        with self._lock:
            while self._running and time.perf_counter() < self._stall_until:
                time.sleep(0.005)
            self._stall_until = 0.0

    def stall(self, seconds: float) -> None:
        """Fault injection: the loop runs no step for ``seconds`` wall seconds, from its next
        step, as on a machine that starves it (no state packet goes out meanwhile; over
        ``LIBFRANKA_UDP_TIMEOUT`` a connected franky client loses the robot). Returns at once.
        """
        if not 0.0 < seconds <= 60.0:
            raise ValueError(f"a stall must last (0, 60] s, got {seconds}")
        self._stall_until = time.perf_counter() + seconds

    def reflex(self) -> None:
        """Fault injection: the robot raises a reflex (a Cartesian reflex, as after a collision)
        at the running motion's next step, or at the next motion's start, as the FR3 does: the
        motion aborts, the state reports reflex mode, and motion is refused until libfranka's
        automatic error recovery (the executor's ``/executor/recover``). Returns at once."""
        if self._server is None:
            raise RuntimeError("the world is not started")
        self._server.request_reflex()

    def timing(self, take_gap: bool = False) -> LoopTiming:
        """How the loop has kept its schedule (:class:`LoopTiming`); ``take_gap`` starts a new
        worst-gap window (one reader should take it, e.g. the node's health report)."""
        now = time.perf_counter()
        # A stall still going on counts as far as it has got.
        silent = now - self._last_step if self._last_step and self.running else 0.0
        reading = LoopTiming(
            steps=self._steps,
            wall=now - self._t_start - self._paused if self._t_start else 0.0,
            misses=self._misses,
            dropped=self._dropped,
            worst_gap=max(self._worst_gap, silent),
            target_factor=self.config.realtime_factor,
        )
        if take_gap:
            self._worst_gap = 0.0
        return reading

    @property
    def loop_error(self) -> BaseException | None:
        """The exception that ended the simulation loop, if one did."""
        return self._loop_error

    @property
    def steps(self) -> int:
        """Physics steps run since start (1 ms of simulated time each)."""
        return self._steps

    def sim_time(self) -> float:
        """Simulated time of the current model (s); restarts at 0 with every reset."""
        sim = self._sim
        return float(sim.data.time) if sim is not None and sim.data is not None else 0.0

    def wait_sim_time(self, seconds: float, timeout: float | None = None) -> None:
        """Block until the simulation has advanced ``seconds`` of simulated time.

        Raises:
            RuntimeError: the loop is not running (stopped or crashed).
            TimeoutError: it did not get there within ``timeout`` wall seconds (default: 10x
                the time it should take, plus 5 s).
        """
        target = self._steps + int(round(seconds / SIM_TIMESTEP))
        limit = timeout if timeout is not None else 5.0 + 10 * seconds / self.config.realtime_factor
        t_end = time.monotonic() + limit
        while self._steps < target:
            if not self.running:
                raise RuntimeError(f"the simulation loop is not running ({self._loop_error!r})")
            if time.monotonic() > t_end:
                raise TimeoutError(f"simulation did not advance {seconds} s within {limit:.1f} s")
            time.sleep(0.002)

    def realtime_factor(self, window: float = 1.0) -> float:
        """Measured simulated seconds per wall second over ``window`` wall seconds (blocks)."""
        s0, t0 = self._steps, time.perf_counter()
        time.sleep(window)
        return (self._steps - s0) * SIM_TIMESTEP / (time.perf_counter() - t0)

    # State and ground truth ----------------------------------------------------------------

    def state(self) -> tuple[int, float, np.ndarray]:
        """``(generation, sim_time, qpos copy)``, consistent (taken between two steps)."""
        with self._lock:
            sim = self._sim
            if sim is None or sim.data is None:
                raise RuntimeError("the world is not started")
            return self._generation, float(sim.data.time), sim.data.qpos.copy()

    def snapshot_into(self, view: SimGroundTruth) -> None:
        """Copy the live state into ``view`` (between two steps)."""
        with self._lock:
            sim = self._sim
            if sim is None or sim.data is None:
                raise RuntimeError("the world is not started")
            if sim.model is not view.model:
                raise RuntimeError("the scene was reset since this ground-truth view was made")
            t, qpos, qvel = float(sim.data.time), sim.data.qpos.copy(), sim.data.qvel.copy()
        view.load(t, qpos, qvel)

    def ground_truth(self) -> SimGroundTruth:
        """The current scene's ground-truth view, refreshed to now."""
        with self._lock:
            view = self._view
        if view is None:
            raise RuntimeError("the world is not started")
        view.refresh()
        return view

    def evaluate(self, stage: str | None = None) -> tuple[str, Check]:
        """Check the task's ``stage`` (default: its final stage) against the live state."""
        task = self.scene.task
        stage = stage or final_stage(task)
        check = task.check(stage, self.ground_truth())
        if check is None:
            raise ValueError(f"task {task.task_id!r} has no check for stage {stage!r}")
        return stage, check
