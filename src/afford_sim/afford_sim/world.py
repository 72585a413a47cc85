"""An in-process MuJoCo world of a placed scene: control the robot, read state, render, export.

:class:`BatchWorld` is what episode runners, tests and the sim bridge drive: joint-space arm
motions and gripper commands advance physics synchronously; object poses, joint values and
contacts are read by name; :meth:`BatchWorld.render` produces RGB, metric depth and part-level
segmentation with the camera's intrinsics and OpenCV extrinsics, from which
:meth:`BatchWorld.observed_cloud` makes the partial, noisy, oracle-labelled object clouds the
perception stack consumes.

Determinism: the whole state (time, positions, velocities, controls, applied forces and the
solver warm start) is saved by :meth:`BatchWorld.save_state`; restoring it and replaying the
same commands reproduces the trajectory bit for bit, which is what lets an evaluation branch
from one settled scene into several grasp attempts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import mujoco
import numpy as np
import numpy.typing as npt

from afford_core.ontology import category as ontology_category
from afford_core.robots import get_robot
from afford_core.types import ObjectCloud
from afford_sim.camera import CameraRenderer, Observation, camera_pose, pixels_to_world
from afford_sim.mjcf import FINGER_ROLES, ROBOT_PREFIX, TCP_SITE, ModelConfig, compile_scene
from afford_sim.randomization import NOISE_SALT, DomainDraw, add_rgb_noise
from afford_sim.scene import (
    CameraSpec,
    CollisionShape,
    PlacedObject,
    PlacedScene,
    object_shapes,
    table_shape,
)

FINGERS: tuple[str, str] = (f"{ROBOT_PREFIX}/{FINGER_ROLES[0]}", f"{ROBOT_PREFIX}/{FINGER_ROLES[1]}")
"""Geom-name prefixes of the two fingers, for :meth:`BatchWorld.in_contact`."""
_STATE = mujoco.mjtState.mjSTATE_INTEGRATION


class NotVisible(ValueError):
    """An object the camera does not see (occluded by another, or outside the view): a run
    abstains with this reason rather than guess where the object is."""


@dataclass(frozen=True)
class WorldConfig:
    """Settings of a :class:`BatchWorld`.

    Attributes:
        model: Physics and contact settings of the compiled model.
        settle_time: Physics time (s) run after placing the objects, before the reset state
            is stored, so objects start at rest on their supports.
        gripper_timeout: Longest time (s) a blocking gripper command waits for the fingers.
        gripper_still_speed: Finger speed (m/s) under which the fingers count as stopped.
        velocity_limits: Joint speed limits (rad/s) :meth:`BatchWorld.move_arm` refuses to
            exceed, as the real controller would; empty: the robot's datasheet limits.
        max_render_geoms: Capacity of the render scene (geoms drawn per view).
    """

    model: ModelConfig = field(default_factory=ModelConfig)
    settle_time: float = 0.3
    gripper_timeout: float = 1.5
    gripper_still_speed: float = 2e-3
    velocity_limits: tuple[float, ...] = ()
    max_render_geoms: int = 4000

    def __post_init__(self) -> None:
        if self.settle_time < 0 or self.gripper_timeout <= 0 or self.gripper_still_speed <= 0:
            raise ValueError("settle_time must be >= 0, gripper_timeout and gripper_still_speed > 0")
        if self.velocity_limits and min(self.velocity_limits) <= 0:
            raise ValueError(f"velocity_limits must be positive speeds, got {self.velocity_limits}")


@dataclass(frozen=True)
class WorldState:
    """A full physics snapshot (``mj_getState`` with ``mjSTATE_INTEGRATION``).

    Attributes:
        time: Simulation time of the snapshot (s).
        data: The flat state vector; only meaningful for the world (model) that made it.
        signature: Size of the state vector, to catch restoring into another model.
    """

    time: float
    data: np.ndarray
    signature: int


@dataclass(frozen=True)
class MoveResult:
    """How well the arm followed a commanded motion.

    Attributes:
        max_joint_error: Largest |q - q_setpoint| over the motion and joints (rad).
        final_joint_error: Largest |q - q_final| at the end (rad).
        final_tcp_error: Distance (m) between the TCP and where it would be at q_final.
        duration: Simulated time the motion took, settling included (s).
    """

    max_joint_error: float
    final_joint_error: float
    final_tcp_error: float
    duration: float


def _segment_match(name: str, prefix: str) -> bool:
    # Prefixes match whole '/'-separated segments: "mug" matches "mug/handle/0", not "mug2/...".
    prefix = prefix.rstrip("/")
    return name == prefix or name.startswith(prefix + "/")


class BatchWorld:
    """A MuJoCo simulation of one placed scene with its robot (``placed.spec.robot``).

    Args:
        placed: The scene (from :func:`afford_sim.scene.sample_scene`).
        config: World settings.
        domain: A domain-randomization draw (``afford_sim.randomization.randomize_scene``):
            the scene's look, and the pixel noise :meth:`render` adds; None: the default look.
    """

    def __init__(self, placed: PlacedScene, config: WorldConfig | None = None,
                 domain: DomainDraw | None = None) -> None:
        self.placed = placed
        self.config = config or WorldConfig()
        self.domain = domain
        # Pixel noise is drawn per rendered image, numbered, so a rollout repeats exactly.
        self._renders = 0
        self.spec = compile_scene(placed, self.config.model, domain)
        self.model = self.spec.compile()
        self.data = mujoco.MjData(self.model)
        self._scratch = mujoco.MjData(self.model)  # forward kinematics of setpoints
        m = self.model
        self.robot = get_robot(placed.spec.robot)
        sim = self.robot.sim
        self.arm_joints: tuple[str, ...] = sim.arm_joints
        n = self.dof = self.robot.dof
        self._velocity_limits = np.asarray(self.config.velocity_limits or self.robot.velocity_limits)
        if self._velocity_limits.shape != (n,):
            raise ValueError(f"velocity_limits must hold {n} speeds for the {self.robot.name}")
        self._arm_qpos = np.array([m.joint(j).qposadr[0] for j in sim.arm_joints])
        self._arm_dof = np.array([m.joint(j).dofadr[0] for j in sim.arm_joints])
        self._arm_act = np.array([m.actuator(j).id for j in sim.arm_joints])
        self._arm_range = np.array([m.joint(j).range for j in sim.arm_joints])
        # The robot comes first in the model, so its joints and actuators are contiguous; slices
        # give views for the per-step control loop.
        for idx in (self._arm_qpos, self._arm_act):
            if not np.array_equal(idx, np.arange(idx[0], idx[0] + n)):
                raise RuntimeError("arm joints/actuators are not contiguous in the compiled model")
        self._arm_qpos_slice = slice(int(self._arm_qpos[0]), int(self._arm_qpos[0]) + n)
        self._arm_act_slice = slice(int(self._arm_act[0]), int(self._arm_act[0]) + n)
        self._arm_kp = m.actuator_gainprm[self._arm_act, 0].copy()
        self._arm_kv = -m.actuator_biasprm[self._arm_act, 2]
        self._finger_qpos = np.array([m.joint(j).qposadr[0] for j in sim.finger_joints])
        self._finger_dof = np.array([m.joint(j).dofadr[0] for j in sim.finger_joints])
        self._grip_act = m.actuator(sim.gripper_actuator).id
        self._tcp = m.site(TCP_SITE).id
        self.geom_names: list[str] = [m.geom(i).name for i in range(m.ngeom)]
        self._labels, self._geom_label = self._segmentation_labels()
        self._prefix_masks: dict[str, np.ndarray] = {}
        self._renderer: CameraRenderer | None = None
        self._cams: dict[str, CameraSpec] = {c.name: c for c in placed.spec.cameras}
        self._root_offset = {o.name: np.asarray(o.asset.links[0].pos, dtype=float) for o in placed.objects}
        self._center_local = {o.name: np.asarray(o.asset.mesh().bounds, dtype=float).mean(axis=0)
                              for o in placed.objects}
        mujoco.mj_resetDataKeyframe(m, self.data, m.key("initial").id)
        mujoco.mj_forward(m, self.data)
        self.advance(self.config.settle_time)
        self._initial = self.save_state()

    # ---------------------------------------------------------------------------------------
    # Time and state.

    @property
    def time(self) -> float:
        return float(self.data.time)

    @property
    def timestep(self) -> float:
        return float(self.model.opt.timestep)

    def reset(self) -> None:
        """Back to the settled initial state (objects at rest, arm at ``robot_q``, gripper open)."""
        self.restore_state(self._initial)

    def step(self, n: int = 1) -> None:
        """Advance physics ``n`` timesteps with the current controls."""
        if n < 0:
            raise ValueError(f"cannot step a negative number of times ({n})")
        if n:
            mujoco.mj_step(self.model, self.data, nstep=int(n))

    def advance(self, seconds: float) -> None:
        """Advance physics by ``seconds`` (rounded to whole timesteps)."""
        if seconds < 0:
            raise ValueError(f"cannot advance by negative time ({seconds} s)")
        self.step(int(round(seconds / self.timestep)))

    def save_state(self) -> WorldState:
        """Snapshot of everything the next step depends on."""
        size = mujoco.mj_stateSize(self.model, _STATE)
        buf = np.empty(size)
        mujoco.mj_getState(self.model, self.data, buf, _STATE)
        return WorldState(time=self.time, data=buf, signature=size)

    def restore_state(self, state: WorldState) -> None:
        """Return to a snapshot taken by :meth:`save_state` on this world."""
        size = mujoco.mj_stateSize(self.model, _STATE)
        if state.signature != size or state.data.shape != (size,):
            raise ValueError("this state was saved from a different world (state size differs)")
        mujoco.mj_setState(self.model, self.data, state.data, _STATE)
        mujoco.mj_forward(self.model, self.data)

    # ---------------------------------------------------------------------------------------
    # Arm and gripper.

    def arm_q(self) -> np.ndarray:
        """Measured arm joint positions (dof,)."""
        return self.data.qpos[self._arm_qpos].copy()

    def arm_target(self) -> np.ndarray:
        """Current arm joint setpoints (dof,)."""
        return self.data.ctrl[self._arm_act].copy()

    def _check_q(self, q: npt.ArrayLike, what: str) -> np.ndarray:
        q = np.asarray(q, dtype=float)
        if q.shape[-1] != self.dof or not np.all(np.isfinite(q)):
            raise ValueError(f"{what}: expected finite values for {self.dof} joints, got shape {q.shape}")
        lo, hi = self._arm_range[:, 0], self._arm_range[:, 1]
        bad = np.nonzero(np.any((q < lo - 1e-9) | (q > hi + 1e-9), axis=tuple(range(q.ndim - 1))))[0]
        if bad.size:
            j = int(bad[0])
            raise ValueError(f"{what}: {self.arm_joints[j]} outside its range [{lo[j]:.4f}, {hi[j]:.4f}] rad")
        return q

    def set_arm_target(self, q: npt.ArrayLike) -> None:
        """Set the arm's joint position setpoints (held until changed)."""
        q = np.asarray(q, dtype=float).reshape(self.dof)
        self.data.ctrl[self._arm_act] = self._check_q(q, "arm target")

    @property
    def velocity_limits(self) -> np.ndarray:
        """(dof,) joint speeds (rad/s) :meth:`move_arm` refuses a segment above."""
        return self._velocity_limits.copy()

    def move_arm(
        self,
        q_waypoints: npt.ArrayLike,
        times: npt.ArrayLike,
        interpolation: Literal["linear", "pchip"] = "linear",
        settle: float = 0.2,
        on_step: Callable[[], None] | None = None,
    ) -> MoveResult:
        """Follow joint waypoints in time, stepping physics, then hold the last one.

        The setpoint starts at the measured configuration at time 0 and passes waypoint ``k``
        at ``times[k]`` (seconds from now), interpolated per timestep; the setpoint velocity
        is fed forward through the servos' damping, as a real joint controller does, so the arm
        does not lag behind.

        Args:
            q_waypoints: (K, dof) joint positions.
            times: (K,) strictly increasing arrival times (s), the first > 0.
            interpolation: ``linear`` (a planner's time-parameterised path) or ``pchip``
                (smooth, no overshoot between waypoints).
            settle: Time (s) to hold the final setpoint afterwards.
            on_step: Called after every physics step of the motion (e.g. to record video
                frames); it must not change the simulation state.

        Raises:
            ValueError: on bad shapes, limits, or a segment faster than ``velocity_limits``.
        """
        from scipy.interpolate import PchipInterpolator

        qs = self._check_q(np.asarray(q_waypoints, dtype=float).reshape(-1, self.dof), "waypoints")
        ts = np.asarray(times, dtype=float).reshape(-1)
        if ts.shape[0] != qs.shape[0]:
            raise ValueError(f"{qs.shape[0]} waypoints but {ts.shape[0]} times")
        if ts[0] <= 0 or np.any(np.diff(ts) <= 0):
            raise ValueError(f"times must be strictly increasing and start after 0, got {ts}")
        if settle < 0:
            raise ValueError(f"settle must be >= 0, got {settle}")
        knots = np.concatenate([[0.0], ts])
        points = np.vstack([self.arm_q(), qs])
        speed = np.abs(np.diff(points, axis=0)) / np.diff(knots)[:, None]
        limits = self._velocity_limits
        if np.any(speed > limits):
            seg_i, j = np.unravel_index(np.argmax(speed / limits), speed.shape)
            raise ValueError(
                f"segment {seg_i} needs {self.arm_joints[j]} at {speed[seg_i, j]:.2f} rad/s, above its "
                f"{limits[j]:.2f} rad/s limit; slow the motion down"
            )
        dt = self.timestep
        n = max(1, math.ceil(ts[-1] / dt - 1e-9))
        t = np.minimum(np.arange(1, n + 1) * dt, ts[-1])
        if interpolation == "linear":
            setpoints = np.column_stack([np.interp(t, knots, points[:, j]) for j in range(self.dof)])
            seg = np.clip(np.searchsorted(knots, t, side="left") - 1, 0, len(ts) - 1)
            velocities = (np.diff(points, axis=0) / np.diff(knots)[:, None])[seg]
        elif interpolation == "pchip":
            spline = PchipInterpolator(knots, points, axis=0)
            setpoints, velocities = spline(t), spline.derivative()(t)
        else:
            raise ValueError(f"interpolation must be 'linear' or 'pchip', got {interpolation!r}")
        m, d = self.model, self.data
        # Velocity feedforward through the servo itself: kp (q* + kv/kp v* - q) - kv qd equals
        # kp (q* - q) + kv (v* - qd), and stays inside the joint torque limits, which clamp the
        # actuator force (adding the feedforward as an external force would bypass them).
        commands = setpoints + velocities * (self._arm_kv / self._arm_kp)
        measured = np.empty_like(setpoints)
        ctrl, qpos = d.ctrl[self._arm_act_slice], d.qpos[self._arm_qpos_slice]  # views, no copies
        for k in range(n):
            ctrl[:] = commands[k]
            mujoco.mj_step(m, d)
            measured[k] = qpos
            if on_step is not None:
                on_step()
        max_err = float(np.max(np.abs(measured - setpoints)))
        self.set_arm_target(qs[-1])
        self.advance(settle)
        final = self.arm_q()
        return MoveResult(
            max_joint_error=max(max_err, float(np.max(np.abs(final - qs[-1])))),
            final_joint_error=float(np.max(np.abs(final - qs[-1]))),
            final_tcp_error=float(np.linalg.norm(self.tcp_pose()[:3, 3] - self.tcp_pose_at(qs[-1])[:3, 3])),
            duration=n * dt + settle,
        )

    def tcp_pose(self) -> np.ndarray:
        """4x4 world pose of the TCP (z approach, y finger closing axis)."""
        t = np.eye(4)
        t[:3, :3] = self.data.site_xmat[self._tcp].reshape(3, 3)
        t[:3, 3] = self.data.site_xpos[self._tcp]
        return t

    def tcp_pose_at(self, q: npt.ArrayLike) -> np.ndarray:
        """4x4 world TCP pose the arm would have at joint positions ``q`` (forward kinematics)."""
        s = self._scratch
        s.qpos[:] = self.data.qpos
        s.qpos[self._arm_qpos] = self._check_q(np.asarray(q, dtype=float).reshape(self.dof), "q")
        mujoco.mj_kinematics(self.model, s)
        t = np.eye(4)
        t[:3, :3] = s.site_xmat[self._tcp].reshape(3, 3)
        t[:3, 3] = s.site_xpos[self._tcp]
        return t

    def gripper_width(self) -> float:
        """Distance between the fingertip pads (m), 0 up to the gripper's largest opening."""
        return self.robot.sim.finger_width(self.data.qpos[self._finger_qpos])

    def _gripper(self, ctrl: float, wait: bool) -> float:
        self.data.ctrl[self._grip_act] = ctrl
        if wait:
            dt = self.timestep
            still = 0
            for k in range(int(self.config.gripper_timeout / dt)):
                self.step()
                moving = np.max(np.abs(self.data.qvel[self._finger_dof])) > self.config.gripper_still_speed
                still = 0 if moving else still + 1
                # Stopped for 50 ms (on the object, or at the end of travel), and given 0.1 s to
                # start moving at all.
                if still * dt >= 0.05 and k * dt >= 0.1:
                    break
        return self.gripper_width()

    def open_gripper(self, wait: bool = True) -> float:
        """Open the fingers; with ``wait``, step until they stop. Returns the width (m)."""
        return self._gripper(self.robot.sim.gripper_open_ctrl, wait)

    def close_gripper(self, wait: bool = True) -> float:
        """Close the fingers; with ``wait``, step until they stop (on an object or shut)."""
        return self._gripper(self.robot.sim.gripper_closed_ctrl, wait)

    # ---------------------------------------------------------------------------------------
    # Objects and contacts.

    def _object(self, name: str) -> PlacedObject:
        return self.placed.object(name)

    def object_pose(self, name: str) -> np.ndarray:
        """4x4 world pose of an object's asset frame."""
        self._object(name)
        b = self.model.body(name).id
        t = np.eye(4)
        t[:3, :3] = self.data.xmat[b].reshape(3, 3)
        t[:3, 3] = self.data.xpos[b] - t[:3, :3] @ self._root_offset[name]
        return t

    def set_object_pose(self, name: str, pose: np.ndarray) -> None:
        """Teleport a free object (asset frame to ``pose``), at rest."""
        if self._object(name).fixed:
            raise ValueError(f"{name} is fixed furniture; only free objects can be moved")
        pose = np.asarray(pose, dtype=float)
        j = self.model.joint(f"{name}/free")
        q = np.zeros(4)
        mujoco.mju_mat2Quat(q, np.ascontiguousarray(pose[:3, :3]).reshape(9))
        a, v = j.qposadr[0], j.dofadr[0]
        self.data.qpos[a:a + 3] = pose[:3, 3] + pose[:3, :3] @ self._root_offset[name]
        self.data.qpos[a + 3:a + 7] = q
        self.data.qvel[v:v + 6] = 0.0
        mujoco.mj_forward(self.model, self.data)

    def _joint(self, name: str, joint: str) -> int:
        obj = self._object(name)
        try:
            return int(self.model.joint(f"{name}/{joint}").qposadr[0])
        except KeyError:
            known = [lk.joint.name for lk in obj.asset.links if lk.joint is not None]
            raise KeyError(f"{name} has no joint {joint!r}; joints: {known}") from None

    def object_joint(self, name: str, joint: str) -> float:
        """Position of an articulated object's joint (m or rad; 0 = closed)."""
        return float(self.data.qpos[self._joint(name, joint)])

    def set_object_joint(self, name: str, joint: str, value: float) -> None:
        """Set an articulated object's joint position (at rest)."""
        adr = self._joint(name, joint)
        jid = self.model.joint(f"{name}/{joint}").id
        self.data.qpos[adr] = value
        self.data.qvel[self.model.jnt_dofadr[jid]] = 0.0
        mujoco.mj_forward(self.model, self.data)

    def _mask(self, prefixes: str | Sequence[str]) -> np.ndarray:
        key = prefixes if isinstance(prefixes, str) else "\n".join(prefixes)
        if key not in self._prefix_masks:
            plist = [prefixes] if isinstance(prefixes, str) else list(prefixes)
            mask = np.array([any(_segment_match(n, p) for p in plist) for n in self.geom_names])
            if not mask.any():
                raise KeyError(f"no geom matches {plist}; geom names look like 'mug/handle/0', "
                               "'robot/left_finger/3', 'table'")
            self._prefix_masks[key] = mask
        return self._prefix_masks[key]

    def in_contact(self, a: str | Sequence[str], b: str | Sequence[str]) -> bool:
        """Whether any geom named under prefix(es) ``a`` touches one under ``b``.

        Prefixes match whole name segments: ``"mug"`` matches ``mug/handle/0``, ``"robot/hand"``
        the hand's geoms; :data:`FINGERS` names both fingers.
        """
        ma, mb = self._mask(a), self._mask(b)
        n = self.data.ncon
        if n == 0:
            return False
        g1, g2 = self.data.contact.geom1[:n], self.data.contact.geom2[:n]
        return bool(np.any((ma[g1] & mb[g2]) | (ma[g2] & mb[g1])))

    # ---------------------------------------------------------------------------------------
    # Rendering and observed clouds.

    def _segmentation_labels(self) -> tuple[tuple[tuple[str, str], ...], np.ndarray]:
        labels: dict[tuple[str, str], int] = {}
        lut = np.full(self.model.ngeom, -1, dtype=np.int32)
        for i, name in enumerate(self.geom_names):
            if not name:
                continue
            seg = name.split("/")
            key = (seg[0], seg[1] if len(seg) > 2 else "")
            lut[i] = labels.setdefault(key, len(labels))
        return tuple(labels), lut

    @property
    def cameras(self) -> list[str]:
        return list(self._cams)

    @property
    def gl_backend(self) -> str | None:
        """The OpenGL backend rendering uses (``egl``, ``osmesa``...), once something was rendered."""
        return self._renderer.backend if self._renderer is not None else None

    def render(self, camera: str | None = None, rgb: bool = True, depth: bool = True,
               segmentation: bool = True) -> Observation:
        """Render a camera: RGB, metric depth and (object, part) segmentation.

        Args:
            camera: Camera name; the scene's first camera by default.
        """
        if not self._cams:
            raise ValueError("the scene has no cameras")
        name = camera or next(iter(self._cams))
        if name not in self._cams:
            raise KeyError(f"no camera {name!r}; cameras: {list(self._cams)}")
        cam = self._cams[name]
        if self._renderer is None:
            self._renderer = CameraRenderer(self.model, self.config.max_render_geoms)
        cid = self.model.camera(name).id
        img, dep, ids = self._renderer.render(self.data, cid, cam.width, cam.height, rgb, depth, segmentation)
        if img is not None and self.domain is not None and self.domain.noise_std > 0:
            rng = np.random.default_rng([self.domain.seed, NOISE_SALT, self._renders])
            img = add_rgb_noise(img, self.domain.noise_std, rng)
        self._renders += 1
        seg = None
        if ids is not None:
            seg = np.where(ids >= 0, self._geom_label[np.maximum(ids, 0)], -1).astype(np.int32)
        return Observation(camera=name, rgb=img, depth=dep, segmentation=seg, labels=self._labels,
                           K=self._renderer.intrinsics(cam.width, cam.height),
                           world_T_camera=camera_pose(self.data, cid), time=self.time)

    def object_center(self, name: str) -> np.ndarray:
        """World centre of the object's bounding box (at closed joints)."""
        return self.object_pose(name)[:3, :3] @ self._center_local[name] + self.object_pose(name)[:3, 3]

    def observed_cloud(self, obs: Observation, object_name: str, depth_noise_std: float = 0.002,
                       dropout: float = 0.05, seed: int = 0) -> ObjectCloud:
        """The object's points as a depth camera sees them, with oracle part labels.

        Single view, so partial; each pixel's depth gets Gaussian noise (along its ray) and a
        random ``dropout`` fraction of pixels is lost, like a real RGB-D sensor.

        Raises:
            NotVisible: when the object is not visible in the view.
        """
        if obs.depth is None or obs.segmentation is None:
            raise ValueError("observed_cloud needs a view rendered with depth and segmentation")
        if depth_noise_std < 0 or not 0 <= dropout < 1:
            raise ValueError(f"need depth_noise_std >= 0, 0 <= dropout < 1; got {depth_noise_std}, {dropout}")
        obj = self._object(object_name)
        parts = ontology_category(obj.category).parts
        ids = [i for i, (o, _) in enumerate(obs.labels) if o == object_name]
        sel = np.isin(obs.segmentation, ids) & (obs.depth > 0)
        v, u = np.nonzero(sel)
        rng = np.random.default_rng(seed)
        keep = rng.random(v.size) >= dropout
        v, u = v[keep], u[keep]
        if v.size == 0:
            raise NotVisible(f"the {object_name} is not visible from camera {obs.camera!r} "
                             "(occluded or outside)")
        z = obs.depth[v, u].astype(np.float64)
        if depth_noise_std > 0:
            z = z + rng.normal(0.0, depth_noise_std, z.size)
        points = pixels_to_world(u, v, z, obs.K, obs.world_T_camera)
        part_of_label = np.array([parts.index(p) if o == object_name and p in parts else -1
                                  for o, p in obs.labels], dtype=np.int64)
        return ObjectCloud(points=points, category=obj.category,
                           part_labels=part_of_label[obs.segmentation[v, u]], part_names=parts,
                           object_center=self.object_center(object_name))

    def scene_cloud(self, obs: Observation, exclude: Sequence[str] = ()) -> np.ndarray:
        """World points (N, 3) of everything in view except the robot and ``exclude``.

        ``exclude`` holds object names (the object about to be grasped) and may hold
        ``"table"`` or ``"floor"``; the result is the planner's obstacle cloud.
        """
        if obs.depth is None or obs.segmentation is None:
            raise ValueError("scene_cloud needs a view rendered with depth and segmentation")
        known = {o for o, _ in self._labels}
        unknown = sorted(set(exclude) - known)
        if unknown:
            raise KeyError(f"cannot exclude unknown names {unknown}; known: {sorted(known)}")
        drop = {"robot", *exclude}
        ids = [i for i, (o, _) in enumerate(obs.labels) if o not in drop]
        sel = np.isin(obs.segmentation, ids) & (obs.depth > 0)
        v, u = np.nonzero(sel)
        return pixels_to_world(u, v, obs.depth[v, u], obs.K, obs.world_T_camera)

    # ---------------------------------------------------------------------------------------
    # Planner export.

    def collision_shapes(self) -> list[CollisionShape]:
        """The table and every object piece at the current simulated poses and joint values."""
        shapes = [table_shape(self.placed.spec.table)]
        for obj in self.placed.objects:
            poses = {}
            for i, lk in enumerate(obj.asset.links):
                b = self.model.body(obj.name if i == 0 else f"{obj.name}/{lk.name}").id
                t = np.eye(4)
                t[:3, :3] = self.data.xmat[b].reshape(3, 3)
                t[:3, 3] = self.data.xpos[b]
                poses[lk.name] = t
            shapes += object_shapes(obj, poses)
        return shapes

    def close(self) -> None:
        """Release the renderer's GL context."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None
