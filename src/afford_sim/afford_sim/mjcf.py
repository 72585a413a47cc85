"""Compile a placed scene into a MuJoCo model: the FR3 from franky-sim, the table, the objects.

The FR3 model (``fr3.xml`` of franky-sim) is loaded as the base of the spec, so its names
(``fr3_joint1``..``7``, actuator ``hand``, body ``hand``) stay as they are; the scene is added
around it. Geom names carry meaning and are relied on downstream:

* ``{object}/{part}/{i}``: piece ``i`` of an object's part (segmentation, contacts, collision export);
* ``robot/{body}/{i}``: the robot's geoms, renamed so contact queries can say ``robot/hand``;
* ``table`` and ``floor``.

Why the contact settings: a parallel-jaw grasp holds by friction alone, so fingers and objects
use ``condim=4`` (torsional friction resists the object spinning about the closing axis),
elliptic friction cones with a high ``impratio`` (MuJoCo's advice against slip in grasps) and a
stiff but stable ``solref`` (time constant at least twice the timestep).
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from afford_sim.scene import CameraSpec, PlacedObject, PlacedScene, piece_names

ARM_JOINTS: tuple[str, ...] = tuple(f"fr3_joint{i}" for i in range(1, 8))
"""The seven arm joints (and their position actuators), in configuration order."""
FINGER_JOINTS: tuple[str, str] = ("finger_joint1", "finger_joint2")
GRIPPER_ACTUATOR = "hand"
HAND_BODY = "hand"
FINGER_BODIES: tuple[str, str] = ("left_finger", "right_finger")
TCP_SITE = "tcp"
TCP_OFFSET = 0.1034
"""TCP (between the fingertip pads) along the hand's z, as in franky / libfranka."""
ROBOT_PREFIX = "robot"
GRIPPER_OPEN_CTRL = 255.0
GRIPPER_CLOSED_CTRL = 0.0
# Bodies whose weight the (simulated) controller cancels, as the real FR3's does.
_GRAVCOMP_BODIES: tuple[str, ...] = (*(f"fr3_link{i}" for i in range(1, 8)), HAND_BODY, *FINGER_BODIES)


def fr3_assets_dir() -> Path:
    """franky-sim's asset folder (``fr3.xml``, ``meshes/``), located through the installed package."""
    spec = importlib.util.find_spec("franky_sim")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("franky_sim is not installed: it ships the FR3 model")
    path = Path(next(iter(spec.submodule_search_locations))) / "assets"
    if not (path / "fr3.xml").is_file() or not (path / "meshes").is_dir():
        raise FileNotFoundError(f"franky_sim at {path} lacks fr3.xml or meshes/")
    return path


@dataclass(frozen=True)
class ModelConfig:
    """Physics and contact settings of the compiled model.

    Attributes:
        timestep: Physics step (s). 2 ms keeps grasp contacts stable at > 5x real time.
        integrator: MuJoCo integrator; ``implicitfast`` is stable with the stiff position servos.
        impratio: Ratio of frictional to normal constraint impedance; > 1 reduces slip in grasps.
        friction: (sliding, torsional, rolling) friction of fingers, objects and the table.
        condim: Contact dimensionality for fingers and objects (4 adds torsional friction).
        solref: (time constant, damping ratio) of contacts; the time constant must stay >= 2
            timesteps or MuJoCo softens it silently.
        solimp: Contact impedance (dmin, dmax, width, midpoint, power).
        slide_frictionloss: Dry friction (N) of drawers, so they stay where the robot leaves them.
        hinge_frictionloss: Dry friction (N m) of doors, for the same reason.
        joint_armature: Armature of object joints; keeps light drawers numerically stable.
        furniture_density: Density (kg/m^3) giving masses to the moving links of fixed furniture
            (their ``Asset.mass`` is not used).
        gripper_force_scale: Multiplies the hand actuator's gain and bias (same setpoints:
            ctrl 255 open, 0 closed). franky-sim's servo pushes each finger with ~1 N on a 4 cm
            object, below the fingers' own friction; scaled by 60 it squeezes ~65 N per finger
            on a 4.5 cm cube, near the real Franka Hand's 70 N continuous force. The
            fr3.xml force limit (140 N on the tendon) is kept.
        finger_frictionloss: Dry friction (N) of each finger joint. fr3.xml gives the fingers the
            arm joints' 1.137 N, which stalls them millimetres short of their setpoint.
        floor: Add a floor plane below the table, so dropped objects come to rest.
    """

    timestep: float = 0.002
    integrator: str = "implicitfast"
    impratio: float = 10.0
    friction: tuple[float, float, float] = (1.0, 0.01, 0.0001)
    condim: int = 4
    solref: tuple[float, float] = (0.004, 1.0)
    solimp: tuple[float, float, float, float, float] = (0.95, 0.99, 0.001, 0.5, 2.0)
    slide_frictionloss: float = 2.0
    hinge_frictionloss: float = 0.2
    joint_armature: float = 0.01
    furniture_density: float = 500.0
    gripper_force_scale: float = 60.0
    finger_frictionloss: float = 0.1
    floor: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.timestep <= 0.01:
            raise ValueError(f"timestep must be in (0, 0.01] s, got {self.timestep}")
        if self.integrator not in ("euler", "implicit", "implicitfast", "rk4"):
            raise ValueError(f"unknown integrator {self.integrator!r}")
        if self.condim not in (1, 3, 4, 6):
            raise ValueError(f"condim must be 1, 3, 4 or 6, got {self.condim}")
        if self.solref[0] < 2 * self.timestep:
            raise ValueError(f"solref time constant {self.solref[0]} needs >= 2 timesteps ({self.timestep})")
        if self.impratio < 1 or min(self.friction) < 0:
            raise ValueError("impratio must be >= 1 and friction >= 0")
        if self.gripper_force_scale <= 0 or self.furniture_density <= 0:
            raise ValueError("gripper_force_scale and furniture_density must be positive")
        if min(self.slide_frictionloss, self.hinge_frictionloss, self.finger_frictionloss,
               self.joint_armature) < 0:
            raise ValueError("frictionloss and armature values must be >= 0")


_INTEGRATORS = {
    "euler": mujoco.mjtIntegrator.mjINT_EULER,
    "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
    "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
    "rk4": mujoco.mjtIntegrator.mjINT_RK4,
}
# MuJoCo's camera looks along its -z with y up; OpenCV's along +z with y down.
MJ_T_CV = np.diag([1.0, -1.0, -1.0])


def _quat(rot: np.ndarray) -> np.ndarray:
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(rot, dtype=float).reshape(9))
    return q


def _load_fr3(config: ModelConfig) -> mujoco.MjSpec:
    assets = fr3_assets_dir()
    spec = mujoco.MjSpec.from_file(str(assets / "fr3.xml"))
    # fr3.xml names "assets" as meshdir; the meshes really are in assets/meshes.
    spec.meshdir = str(assets / "meshes")
    for key in list(spec.keys):  # its keyframe has no room for the scene's free joints
        spec.delete(key)
    for name in _GRAVCOMP_BODIES:
        spec.body(name).gravcomp = 1.0
    counts: dict[str, int] = {}
    for geom in spec.geoms:
        body = geom.parent.name
        geom.name = f"{ROBOT_PREFIX}/{body}/{counts.get(body, 0)}"
        counts[body] = counts.get(body, 0) + 1
        if body in FINGER_BODIES and geom.contype:
            geom.condim = config.condim
            geom.friction = config.friction
            geom.solref = config.solref
            geom.solimp = config.solimp
    for name in FINGER_JOINTS:
        spec.joint(name).frictionloss = config.finger_frictionloss
    hand = spec.actuator(GRIPPER_ACTUATOR)
    hand.gainprm[0] *= config.gripper_force_scale
    hand.biasprm[1] *= config.gripper_force_scale
    hand.biasprm[2] *= config.gripper_force_scale
    spec.body(HAND_BODY).add_site(name=TCP_SITE, pos=[0.0, 0.0, TCP_OFFSET], size=[0.005, 0, 0],
                                  rgba=[1, 0, 0, 0.5], group=4)
    return spec


def add_table(spec: mujoco.MjSpec, placed: PlacedScene, config: ModelConfig) -> None:
    table = placed.spec.table
    pose = table.pose()
    spec.worldbody.add_geom(
        name="table", type=mujoco.mjtGeom.mjGEOM_BOX, pos=pose[:3, 3],
        size=[table.size[0] / 2, table.size[1] / 2, table.thickness / 2], rgba=table.rgba,
        friction=config.friction, solref=config.solref, solimp=config.solimp,
    )
    if config.floor:
        spec.worldbody.add_geom(
            name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, pos=[0, 0, table.top_z - table.height],
            size=[0, 0, 0.05], rgba=[0.35, 0.35, 0.38, 1.0],
        )


def _piece_masses(obj: PlacedObject, config: ModelConfig) -> dict[str, float]:
    """Mass per geom: a free object's ``asset.mass`` spread by volume; furniture by density."""
    vols = {}
    links = {lk.name: lk for lk in obj.asset.links}
    for link, k, _, name in piece_names(obj.name, obj.asset):
        mesh = links[link].pieces[k].mesh
        vols[name] = max(float(abs(mesh.volume)), 1e-9)
    if obj.fixed:
        return {n: v * config.furniture_density for n, v in vols.items()}
    total = sum(vols.values())
    return {n: obj.asset.mass * v / total for n, v in vols.items()}


def add_object(spec: mujoco.MjSpec, obj: PlacedObject, config: ModelConfig) -> None:
    asset = obj.asset
    masses = _piece_masses(obj, config)
    root = asset.links[0]
    root_pose = obj.pose.copy()
    root_pose[:3, 3] += obj.pose[:3, :3] @ np.asarray(root.pos, dtype=float)
    bodies: dict[str, mujoco.MjsBody] = {
        root.name: spec.worldbody.add_body(name=obj.name, pos=root_pose[:3, 3], quat=_quat(root_pose[:3, :3]))
    }
    if not obj.fixed:
        bodies[root.name].add_freejoint(name=f"{obj.name}/free")
    for lk in asset.links[1:]:
        if lk.parent not in bodies:
            raise ValueError(f"{obj.name}: link {lk.name!r} has parent {lk.parent!r}, not an earlier link")
        body = bodies[lk.parent].add_body(name=f"{obj.name}/{lk.name}", pos=np.asarray(lk.pos, dtype=float))
        bodies[lk.name] = body
        if lk.joint is not None:
            j = lk.joint
            hinge = j.kind == "hinge"
            body.add_joint(
                name=f"{obj.name}/{j.name}",
                type=mujoco.mjtJoint.mjJNT_HINGE if hinge else mujoco.mjtJoint.mjJNT_SLIDE,
                axis=j.axis, pos=j.pos, range=list(j.range), limited=mujoco.mjtLimited.mjLIMITED_TRUE,
                damping=j.damping, armature=config.joint_armature,
                frictionloss=config.hinge_frictionloss if hinge else config.slide_frictionloss,
            )
    # Links of one object touch by construction (a drawer in its carcass, a door beside it);
    # their contacts would only add friction the joints already model.
    names = list(bodies)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            spec.add_exclude(bodyname1=bodies[a].name, bodyname2=bodies[b].name)
    pieces = {lk.name: lk.pieces for lk in asset.links}
    for link, k, part, name in piece_names(obj.name, asset):
        mesh = pieces[link][k].mesh
        spec.add_mesh(name=name, uservert=np.asarray(mesh.vertices, dtype=float).ravel(),
                      userface=np.asarray(mesh.faces, dtype=np.int32).ravel())
        bodies[link].add_geom(
            name=name, type=mujoco.mjtGeom.mjGEOM_MESH, meshname=name, mass=masses[name],
            rgba=asset.rgba.get(part, (0.7, 0.7, 0.7, 1.0)), condim=config.condim,
            friction=config.friction, solref=config.solref, solimp=config.solimp,
        )


def add_camera(spec: mujoco.MjSpec, cam: CameraSpec) -> None:
    world_T_cv = cam.extrinsics()
    rot = world_T_cv[:3, :3] @ MJ_T_CV
    c = spec.worldbody.add_camera(name=cam.name, pos=world_T_cv[:3, 3], quat=_quat(rot))
    if cam.K is None:
        c.fovy = cam.fovy
        return
    # Explicit intrinsics: MuJoCo takes focal length and principal point in pixels for a given
    # resolution; the sensor size only sets the unit and is arbitrary here. MuJoCo's renderer
    # puts the principal point at (W/2 - px, H/2 - py) from the top-left corner with pixel
    # centres at half-integers (checked against its GL frustum: camera.CameraRenderer.intrinsics).
    k = cam.K
    c.resolution = [cam.width, cam.height]
    c.sensor_size = [cam.width * 1e-5, cam.height * 1e-5]
    c.focal_pixel = [k[0, 0], k[1, 1]]
    c.principal_pixel = [cam.width / 2 - (k[0, 2] + 0.5), cam.height / 2 - (k[1, 2] + 0.5)]


def _add_initial_keyframe(spec: mujoco.MjSpec, placed: PlacedScene) -> None:
    model = spec.compile()
    qpos = model.qpos0.copy()
    for name, q in zip(ARM_JOINTS, placed.spec.robot_q, strict=True):
        qpos[model.joint(name).qposadr[0]] = q
    for name in FINGER_JOINTS:
        qpos[model.joint(name).qposadr[0]] = 0.04
    ctrl = np.zeros(model.nu)
    for name, q in zip(ARM_JOINTS, placed.spec.robot_q, strict=True):
        ctrl[model.actuator(name).id] = q
    ctrl[model.actuator(GRIPPER_ACTUATOR).id] = GRIPPER_OPEN_CTRL
    spec.add_key(name="initial", qpos=qpos, ctrl=ctrl)


def compile_scene(placed: PlacedScene, config: ModelConfig | None = None) -> mujoco.MjSpec:
    """Build the MuJoCo spec of a placed scene (call ``.compile()`` for the model).

    The spec holds a keyframe ``initial``: the arm at ``spec.robot_q``, fingers open, objects
    at their placed poses.
    """
    config = config or ModelConfig()
    spec = _load_fr3(config)
    spec.modelname = "afford_scene"
    spec.option.timestep = config.timestep
    spec.option.integrator = _INTEGRATORS[config.integrator]
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = config.impratio
    cams = placed.spec.cameras
    # Offscreen buffers must hold the largest camera image; no multisampling for speed.
    spec.visual.global_.offwidth = max([640, *(c.width for c in cams)])
    spec.visual.global_.offheight = max([480, *(c.height for c in cams)])
    spec.visual.quality.offsamples = 0
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
    spec.visual.headlight.diffuse = [0.45, 0.45, 0.45]
    spec.worldbody.add_light(name="top", pos=[0.5, 0.0, 2.0], dir=[0, 0, -1], castshadow=False,
                             diffuse=[0.5, 0.5, 0.5])
    add_table(spec, placed, config)
    for obj in placed.objects:
        add_object(spec, obj, config)
    for cam in cams:
        add_camera(spec, cam)
    _add_initial_keyframe(spec, placed)
    return spec


def to_xml(spec: mujoco.MjSpec) -> str:
    """MJCF text of a compiled scene (meshes of objects inline, FR3 meshes by file)."""
    return spec.to_xml()
