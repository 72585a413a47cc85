"""A MuJoCo world for pre-grasp pushing: a scene's table and features, the flat object, and a
free-floating parallel gripper the size of the Franka Hand.

The seed collects its data with a free-floating gripper (no arm), and so do we: an interaction
is then cheap and what it measures is the object, the feature and the fingers; the arm's reach is
the planner's business once a push and a grasp are chosen (the FR3 runs them through the graph).
The gripper follows a mocap target through a weld, so it pushes and is pushed back with finite
force (a hand driven into the table stops on it rather than passing through); its weight is
cancelled, as the FR3's controller cancels the hand's.

Gripper frame: z is the approach direction (out of the palm, between the fingers), y the
closing axis, the TCP at the origin between the finger pads (as ``afford_core``'s grasp frame).
Fingers: 1.8 cm wide, 1.2 cm thick, 6 cm long, opening to 8 cm (the Franka Hand's), squeezing
with up to 70 N each (its continuous force).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

import mujoco
import numpy as np

from . import rules
from .scenes import FLOOR_Z, TABLE_HALF, WALL_HEIGHT, Feature, PreGraspScene

TIMESTEP = 0.002
FINGER_HALF = np.array([0.009, 0.006, 0.03])  # x: width, y: thickness (closing), z: length
FINGER_Z = -0.025  # finger centre along the approach: tips 5 mm past the TCP, pads round it
PALM_HALF = np.array([0.03, 0.1, 0.025])
PALM_Z = FINGER_Z - FINGER_HALF[2] - PALM_HALF[2]
MAX_OPEN = 0.04  # per finger: 8 cm between the pads
GRIP_FORCE = 70.0
OPEN_FORCE = 20.0
FINGER_DAMPING = 200.0  # N s/m: the fingers close at ~0.35 m/s under the grip force
# A soft limit gives way in proportion to force over effective mass: on a bare 50 g finger the
# grip force would drive it 2.6 cm through its closed stop (the fingers then cross). The gear
# train's inertia (armature) and a stiff limit keep it within a millimetre.
FINGER_ARMATURE = 1.0
SPEED = 0.15  # m/s of the hand's target between waypoints
FRICTION = (0.6, 0.005, 0.0001)
PAD_FRICTION = (1.0, 0.01, 0.0005)
TABLE_THICKNESS = 0.04
CAMERA_SIZE = (320, 240)
CAMERA_FOVY = 45.0
CLOUD_RADIUS = 0.4  # m round the object's start: the object and the feature beside it
SLOPE_RUN = 0.15
WALL_THICKNESS = 0.05


@dataclass
class GraspResult:
    """What one grasp did.

    Attributes:
        success: The rule (:func:`rules.grasp_succeeded`).
        rise: How far the object's centre rose (m).
        turn_deg: How far it turned in the hand from closing to the end of the hold.
        blocked: The open hand could not be placed at the pre-grasp pose (it would overlap the
            scene or the object): nothing was executed.
    """

    success: bool
    rise: float
    turn_deg: float
    blocked: bool = False


@dataclass
class PushResult:
    """What one push did.

    Attributes:
        moved: How far the object's centre moved in the table plane (m).
        turned_deg: How far it turned.
        fell: It fell off the table (:data:`rules.FALL_Z`).
        collided: The gripper touched the table, a wall, a slope or the slot's sides.
        blocked: The closed hand could not be put at the push's start (over the object or in a feature).
    """

    moved: float
    turned_deg: float
    fell: bool
    collided: bool
    blocked: bool = False


def _rot_z(a: float) -> np.ndarray:
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _quat(r: np.ndarray) -> np.ndarray:
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(r).ravel())
    return q


def _frame(scene: PreGraspScene) -> tuple[float, dict[int, Feature]]:
    """The scene's frame angle (the features lie along its axes) and its features by side
    (0: +u, 1: +v, 2: -u, 3: -v)."""
    d0 = scene.features[0].direction
    angle = float(np.arctan2(d0[1], d0[0]))
    sides = {}
    for f in scene.features:
        a = np.arctan2(f.direction[1], f.direction[0]) - angle
        sides[int(np.round(a / (np.pi / 2))) % 4] = f
    return angle, sides


def build_model(scene: PreGraspScene) -> mujoco.MjModel:
    """The scene's MuJoCo model (table and features, object, floating gripper)."""
    spec = mujoco.MjSpec()
    spec.option.timestep = TIMESTEP
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    spec.option.noslip_iterations = 2
    world = spec.worldbody
    world.add_geom(
        name="floor",
        type=mujoco.mjtGeom.mjGEOM_PLANE,
        pos=[0, 0, FLOOR_Z],
        size=[0, 0, 0.05],
        rgba=[0.4, 0.4, 0.4, 1],
    )
    angle, sides = _frame(scene)
    frame = world.add_body(name="table", pos=[0, 0, 0], quat=_quat(_rot_z(angle)))
    bound = [TABLE_HALF] * 4  # +u, +v, -u, -v
    for side, f in sides.items():
        if f.kind in ("edge", "slot"):
            bound[side] = f.offset

    def box(
        name: str, lo: list[float], hi: list[float], rgba: tuple[float, ...] = (0.55, 0.42, 0.3, 1)
    ) -> None:
        lo_, hi_ = np.asarray(lo), np.asarray(hi)
        frame.add_geom(
            name=name,
            type=mujoco.mjtGeom.mjGEOM_BOX,
            pos=(lo_ + hi_) / 2,
            size=(hi_ - lo_) / 2,
            rgba=list(rgba),
            friction=list(FRICTION),
        )

    box("table_top", [-bound[2], -bound[3], -TABLE_THICKNESS], [bound[0], bound[1], 0.0])
    for side, f in sides.items():
        # Work in the feature's own axes: u along its direction, v across.
        turn = _rot_z(side * np.pi / 2)
        lo_v, hi_v = -bound[(side + 3) % 4], bound[(side + 1) % 4]

        def local(
            name: str,
            lo: list[float],
            hi: list[float],
            rgba: tuple[float, ...] = (0.55, 0.42, 0.3, 1),
            turn: np.ndarray = turn,
        ) -> None:
            corners = np.array(
                [[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])]
            )
            rc = corners @ turn.T
            box(name, list(rc.min(axis=0)), list(rc.max(axis=0)), rgba)

        if f.kind == "wall":
            local(
                "wall",
                [f.offset, lo_v, 0.0],
                [f.offset + WALL_THICKNESS, hi_v, WALL_HEIGHT],
                (0.8, 0.8, 0.75, 1),
            )
        elif f.kind == "slot":
            width, depth = f.size
            far = max(TABLE_HALF, f.offset + width + 0.3)
            local("slot_far", [f.offset + width, lo_v, -TABLE_THICKNESS], [far, hi_v, 0.0])
            local(
                "slot_floor",
                [f.offset, lo_v, -depth - TABLE_THICKNESS],
                [f.offset + width, hi_v, -depth],
                (0.45, 0.33, 0.22, 1),
            )
        elif f.kind == "slope":
            (tilt,) = f.size
            h = SLOPE_RUN * np.tan(tilt)
            u0, u1 = f.offset, f.offset + SLOPE_RUN
            pts = np.array(
                [[u0, lo_v, 0], [u0, hi_v, 0], [u1, lo_v, 0], [u1, hi_v, 0], [u1, lo_v, h], [u1, hi_v, h]]
            )
            pts = pts @ turn.T
            spec.add_mesh(name="slope", uservert=pts.ravel())
            frame.add_geom(
                name="slope",
                type=mujoco.mjtGeom.mjGEOM_MESH,
                meshname="slope",
                rgba=[0.6, 0.55, 0.45, 1],
                friction=list(FRICTION),
            )
    _add_object(spec, scene)
    _add_gripper(spec)
    _add_camera(spec, scene)
    return spec.compile()


def _add_camera(spec: mujoco.MjSpec, scene: PreGraspScene) -> None:
    eye = np.asarray(scene.camera_eye, dtype=float)
    target = np.array([*scene.xy, 0.0])
    back = (eye - target) / np.linalg.norm(eye - target)  # MuJoCo's camera looks along its -z
    right = np.cross([0.0, 0.0, 1.0], back)
    right /= np.linalg.norm(right)
    spec.worldbody.add_camera(
        name="view",
        pos=eye,
        quat=_quat(np.column_stack([right, np.cross(back, right), back])),
        fovy=CAMERA_FOVY,
    )
    spec.visual.global_.offwidth, spec.visual.global_.offheight = CAMERA_SIZE


def _add_object(spec: mujoco.MjSpec, scene: PreGraspScene) -> None:
    obj = scene.obj
    body = spec.worldbody.add_body(name="object", pos=[*scene.xy, 0.001], quat=_quat(_rot_z(scene.yaw)))
    body.add_freejoint(name="object_free")
    volumes = np.array([p.volume for p in obj.pieces])
    for k, piece in enumerate(obj.pieces):
        name = f"object_{k}"
        spec.add_mesh(
            name=name,
            uservert=np.asarray(piece.vertices, dtype=float).ravel(),
            userface=np.asarray(piece.faces, dtype=np.int32).ravel(),
        )
        body.add_geom(
            name=name,
            type=mujoco.mjtGeom.mjGEOM_MESH,
            meshname=name,
            mass=float(obj.mass * volumes[k] / volumes.sum()),
            rgba=list(obj.rgba),
            friction=list(FRICTION),
            condim=4,
        )


def _add_gripper(spec: mujoco.MjSpec) -> None:
    target = spec.worldbody.add_body(name="gripper_target", mocap=True, pos=[0, 0, 0.5])
    target.add_site(name="target", size=[0.005, 0.005, 0.005])
    hand = spec.worldbody.add_body(name="gripper", pos=[0, 0, 0.5], gravcomp=1.0)
    hand.add_freejoint(name="gripper_free")
    hand.add_geom(
        name="palm",
        type=mujoco.mjtGeom.mjGEOM_BOX,
        pos=[0, 0, PALM_Z],
        size=PALM_HALF,
        mass=0.7,
        rgba=[0.9, 0.9, 0.9, 1],
    )
    hand.add_site(name="tcp", size=[0.004, 0.004, 0.004])
    for side, name in ((1, "left"), (-1, "right")):
        finger = hand.add_body(name=f"{name}_finger", gravcomp=1.0)
        finger.add_joint(
            name=f"{name}_finger",
            type=mujoco.mjtJoint.mjJNT_SLIDE,
            axis=[0, side, 0],
            range=[0.0, MAX_OPEN],
            limited=mujoco.mjtLimited.mjLIMITED_TRUE,
            damping=FINGER_DAMPING,
            armature=FINGER_ARMATURE,
            solref_limit=[0.004, 1.0],
        )
        finger.add_geom(
            name=f"{name}_finger",
            type=mujoco.mjtGeom.mjGEOM_BOX,
            pos=[0, side * FINGER_HALF[1], FINGER_Z],
            size=FINGER_HALF,
            mass=0.05,
            rgba=[0.2, 0.2, 0.2, 1],
            friction=list(PAD_FRICTION),
            condim=6,
        )
        # A force per finger, as the Franka Hand's grasp command gives: the squeeze does not fall
        # off as the fingers close on a thin object (a position servo's would).
        spec.add_actuator(
            name=f"{name}_finger",
            target=f"{name}_finger",
            trntype=mujoco.mjtTrn.mjTRN_JOINT,
            ctrlrange=[-GRIP_FORCE, OPEN_FORCE],
            ctrllimited=mujoco.mjtLimited.mjLIMITED_TRUE,
        )
    spec.add_exclude(bodyname1="gripper", bodyname2="left_finger")
    spec.add_exclude(bodyname1="gripper", bodyname2="right_finger")
    spec.add_exclude(bodyname1="left_finger", bodyname2="right_finger")
    # data: anchor, relative position, relative quaternion, torque scale. Given in full: MjSpec's
    # default is the MJCF attribute defaults laid end to end, which offsets the hand.
    weld = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    spec.add_equality(
        type=mujoco.mjtEq.mjEQ_WELD,
        name1="gripper",
        name2="gripper_target",
        objtype=mujoco.mjtObj.mjOBJ_BODY,
        solref=[0.01, 1.0],
        data=weld,
    )


class PreGraspWorld:
    """One scene, simulated: pushes and grasps by the floating gripper, and snapshots to try
    several actions from the same state (:meth:`snapshot`, :meth:`restore`)."""

    def __init__(self, scene: PreGraspScene) -> None:
        self.scene = scene
        self.model = build_model(scene)
        self.data = mujoco.MjData(self.model)
        m = self.model
        self._obj_body = m.body("object").id
        self._obj_qpos = m.jnt_qposadr[m.joint("object_free").id]
        self._hand_qpos = m.jnt_qposadr[m.joint("gripper_free").id]
        self._hand_dof = m.jnt_dofadr[m.joint("gripper_free").id]
        self._mocap = m.body_mocapid[m.body("gripper_target").id]
        gripper_bodies = {m.body(n).id for n in ("gripper", "left_finger", "right_finger")}
        self._gripper_geoms = {g for g in range(m.ngeom) if m.geom_bodyid[g] in gripper_bodies}
        self._object_geoms = {g for g in range(m.ngeom) if m.geom_bodyid[g] == self._obj_body}
        self._scene_geoms = set(range(m.ngeom)) - self._gripper_geoms - self._object_geoms
        self._renderer: Any = None
        self._frames: list[np.ndarray] | None = None
        self._frame_every = 1
        self._since_frame = 0
        self._park()
        self.settle()

    # ------------------------------------------------------------------ state
    def snapshot(self) -> mujoco.MjData:
        return copy.copy(self.data)

    def restore(self, state: mujoco.MjData) -> None:
        self.data = copy.copy(state)

    def object_pose(self) -> np.ndarray:
        """The object's 4x4 pose in the world."""
        t = np.eye(4)
        t[:3, :3] = self.data.xmat[self._obj_body].reshape(3, 3)
        t[:3, 3] = self.data.xpos[self._obj_body]
        return t

    def object_points(self) -> np.ndarray:
        """Every vertex of the object's pieces, in the world (exact geometry, for samplers)."""
        pose = self.object_pose()
        verts = np.vstack([p.vertices for p in self.scene.obj.pieces])
        return verts @ pose[:3, :3].T + pose[:3, 3]

    def fallen(self) -> bool:
        return float(self.object_points()[:, 2].min()) < rules.FALL_Z

    def observe(self, n: int = 2048, rng: np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
        """What the depth camera sees now, as the seed's modules take it: ``n`` points (m, world
        frame) within :data:`CLOUD_RADIUS` of the object's start (object and scene together),
        and which of them are the object's (from the renderer's geom ids: the seed segments the
        object too). The gripper is parked out of view. Drawn with replacement when fewer are seen."""
        from afford_sim.camera import backproject, camera_pose

        renderer = self._camera()
        cam = self.model.camera("view").id
        w, h = CAMERA_SIZE
        _, depth, ids = renderer.render(self.data, cam, w, h, rgb=False)
        assert depth is not None and ids is not None
        k = renderer.intrinsics(w, h)
        hit = (depth > 0) & ~np.isin(ids, list(self._gripper_geoms))
        pts = backproject(depth, k, camera_pose(self.data, cam), hit)
        is_obj = np.isin(ids[hit], list(self._object_geoms))
        near = np.linalg.norm(pts[:, :2] - self.scene.xy, axis=1) < CLOUD_RADIUS
        pts, is_obj = pts[near], is_obj[near]
        if not len(pts):
            raise RuntimeError("the camera sees nothing near the object")
        pick = (rng or np.random.default_rng(0)).choice(len(pts), n, replace=len(pts) < n)
        return pts[pick].astype(np.float32), is_obj[pick]

    def _camera(self) -> Any:
        """The scene camera's renderer, made on first use (a world that never looks needs no GL)."""
        if self._renderer is None:
            from afford_sim.camera import CameraRenderer

            self._renderer = CameraRenderer(self.model)
        return self._renderer

    def frame(self) -> np.ndarray:
        """An RGB image (H, W, 3) of the scene camera now (the depth camera's view)."""
        w, h = CAMERA_SIZE
        rgb, _, _ = self._camera().render(
            self.data, self.model.camera("view").id, w, h, rgb=True, depth=False, geom_ids=False
        )
        assert rgb is not None
        return rgb

    def film(self, fps: int = 25) -> list[np.ndarray]:
        """From now on, an RGB frame every ``1 / fps`` s of simulated time is appended to the
        returned list (the first one now). Rendering only reads the state: a filmed rollout's
        outcome is the unfilmed one's."""
        if fps < 1:
            raise ValueError(f"fps must be >= 1, got {fps}")
        self._frames = [self.frame()]
        self._frame_every = max(1, int(round(1.0 / (fps * TIMESTEP))))
        self._since_frame = 0
        return self._frames

    # ------------------------------------------------------------------ motion
    def _advance(self) -> None:
        """One physics step (and a frame, when filming and one is due)."""
        mujoco.mj_step(self.model, self.data)
        if self._frames is not None:
            self._since_frame += 1
            if self._since_frame >= self._frame_every:
                self._since_frame = 0
                self._frames.append(self.frame())

    def _park(self) -> None:
        """The gripper out of the way, 0.5 m above the table, pointing down, closed."""
        self._place_hand(np.array([0.0, 0.0, 0.5]), np.diag([1.0, -1.0, -1.0]), opening=0.0)

    def _place_hand(self, pos: np.ndarray, rot: np.ndarray, opening: float) -> None:
        q = _quat(rot)
        d = self.data
        d.mocap_pos[self._mocap], d.mocap_quat[self._mocap] = pos, q
        d.qpos[self._hand_qpos : self._hand_qpos + 3] = pos
        d.qpos[self._hand_qpos + 3 : self._hand_qpos + 7] = q
        d.qvel[self._hand_dof : self._hand_dof + 6] = 0.0
        for name in ("left_finger", "right_finger"):
            d.qpos[self.model.jnt_qposadr[self.model.joint(name).id]] = opening
        d.ctrl[:] = OPEN_FORCE if opening > 0 else -GRIP_FORCE
        mujoco.mj_forward(self.model, d)

    def _hand_touches(self, geoms: set[int]) -> bool:
        d = self.data
        for c in d.contact[: d.ncon]:
            pair = {int(c.geom1), int(c.geom2)}
            if pair & self._gripper_geoms and pair & geoms and c.dist < 0.0:
                return True
        return False

    def _step(self, seconds: float, watch: bool = False) -> bool:
        """Simulate ``seconds``; with ``watch``, whether the gripper touched the scene."""
        touched = False
        for _ in range(int(round(seconds / TIMESTEP))):
            self._advance()
            if watch and not touched:
                touched = self._hand_touches(self._scene_geoms)
        return touched

    def _move(self, goal: np.ndarray, watch: bool = False) -> bool:
        """Move the hand's target in a straight line to ``goal`` at :data:`SPEED`."""
        start = self.data.mocap_pos[self._mocap].copy()
        n = max(1, int(np.ceil(np.linalg.norm(goal - start) / SPEED / TIMESTEP)))
        touched = False
        for i in range(1, n + 1):
            self.data.mocap_pos[self._mocap] = start + (goal - start) * i / n
            self._advance()
            if watch and not touched:
                touched = self._hand_touches(self._scene_geoms)
        return touched

    def settle(self, seconds: float = 0.5) -> None:
        self._step(seconds)

    # ------------------------------------------------------------------ actions
    def grasp(self, tcp: np.ndarray, rot: np.ndarray, retreat: float = 0.08) -> GraspResult:
        """Open, come in along the approach (``rot``'s z) from ``retreat`` back, close, lift
        :data:`rules.LIFT_M`, hold :data:`rules.HOLD_S`. The scene is left as the grasp left it."""
        tcp, rot = np.asarray(tcp, dtype=float), np.asarray(rot, dtype=float)
        start = tcp - retreat * rot[:, 2]
        self._place_hand(start, rot, MAX_OPEN)
        if self._hand_touches(self._scene_geoms | self._object_geoms):
            self._park()
            return GraspResult(False, 0.0, 0.0, blocked=True)
        z0 = self.object_pose()[2, 3]
        self._move(tcp)
        self._step(0.2)
        self.data.ctrl[:] = -GRIP_FORCE
        self._step(0.4)
        hand0 = self.data.xmat[self.model.body("gripper").id].reshape(3, 3).copy()
        obj0 = self.object_pose()[:3, :3]
        rel0 = hand0.T @ obj0
        self._move(self.data.mocap_pos[self._mocap] + np.array([0.0, 0.0, rules.LIFT_M]))
        self._step(rules.HOLD_S)
        hand1 = self.data.xmat[self.model.body("gripper").id].reshape(3, 3)
        rel1 = hand1.T @ self.object_pose()[:3, :3]
        rise = float(self.object_pose()[2, 3] - z0)
        turn = rules.rotation_deg(rel0, rel1)
        return GraspResult(rules.grasp_succeeded(rise, turn), rise, turn)

    def push_vector(self, push: np.ndarray) -> PushResult:
        """A push as the modules write it, (contact x, y, z, direction, distance): the fingertips
        4 mm below the contact (at least 1.5 mm above the table), so a contact on a slab's top
        face pushes its side; the start steps back from the contact up to 40 cm along the push."""
        height = float(np.clip(push[2] - 0.004, 0.0015, 0.02))
        return self.push(push[:2], float(push[3]), float(push[4]), height=height, max_back=0.4)

    def push(
        self,
        contact_xy: np.ndarray,
        direction: float,
        distance: float,
        height: float = 0.0015,
        max_back: float = 0.04,
    ) -> PushResult:
        """A push as the seed defines it: the closed gripper, pointing down with its fingertips
        ``height`` above the table, put just outside the object behind ``contact_xy`` and moved
        horizontally ``distance`` along ``direction`` (rad), then withdrawn upwards. The start
        steps back from ``contact_xy`` at most ``max_back``; blocked when no clear start is found."""
        d = np.array([np.cos(direction), np.sin(direction), 0.0])
        # Pointing down; the closing axis across the push, so the two fingers push side by side.
        rot = np.column_stack([d, np.cross([0.0, 0.0, -1.0], d), [0.0, 0.0, -1.0]])
        z = height + FINGER_Z + FINGER_HALF[2]  # the TCP above the fingertips, which point down
        pose0 = self.object_pose()
        state = self.snapshot()
        # Just clear of the outline behind the contact: stepping back from it along the push
        # until the closed fingers (2.4 cm across) touch nothing, so a contact on the object's
        # top is pushed from the outline behind it, and one on a slanted outline from where
        # both fingers are clear.
        for back in FINGER_HALF[0] + 0.005 + np.arange(0.0, max_back, 0.005):
            start = np.array([*contact_xy, z]) - back * d
            self._place_hand(start, rot, 0.0)
            if not self._hand_touches(self._object_geoms | self._scene_geoms):
                break
        else:
            self.restore(state)
            return PushResult(0.0, 0.0, self.fallen(), collided=False, blocked=True)
        self.restore(state)
        self._place_hand(start + [0, 0, 0.15], rot, 0.0)
        touched = self._move(start, watch=True) or self._step(0.2, watch=True)
        if touched or self._hand_touches(self._object_geoms):
            self._park()
            self.settle(0.3)
            return PushResult(0.0, 0.0, self.fallen(), collided=False, blocked=True)
        collided = self._move(start + (distance + back) * d, watch=True)
        self._step(0.2)
        collided |= self._move(self.data.mocap_pos[self._mocap] + [0, 0, 0.15], watch=True)
        self._park()
        self.settle(0.5)
        pose1 = self.object_pose()
        return PushResult(
            float(np.linalg.norm(pose1[:2, 3] - pose0[:2, 3])),
            rules.rotation_deg(pose0[:3, :3], pose1[:3, :3]),
            self.fallen(),
            collided,
        )
