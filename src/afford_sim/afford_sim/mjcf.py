"""Compile a placed scene into a MuJoCo model: the scene's robot, the table, the objects.

The robot's model (built by its simulator builder, ``afford_sim.robots``) is loaded as the base
of the spec, so its joint, actuator and body names stay as its description gives them
(``RobotDescription.sim``); the scene is added around it. Geom names carry meaning and are relied
on downstream:

* ``{object}/{part}/{i}``: piece ``i`` of an object's part (segmentation, contacts, collision export);
* ``robot/{body}/{i}``: the robot's geoms, renamed so contact queries can say ``robot/hand``;
  the fingers' geoms are ``robot/left_finger/{i}`` and ``robot/right_finger/{i}`` on every
  robot, whatever their bodies are called;
* ``table`` and ``floor``.

Why the contact settings: a parallel-jaw grasp holds by friction alone, so fingers and objects
use ``condim=4`` (torsional friction resists the object spinning about the closing axis),
elliptic friction cones with a high ``impratio`` (MuJoCo's advice against slip in grasps) and a
stiff but stable ``solref`` (time constant at least twice the timestep).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from afford_core.robots import RobotDescription, get_robot
from afford_sim.robots import SIM_BUILDERS
from afford_sim.scene import CameraSpec, PlacedObject, PlacedScene, piece_names

if TYPE_CHECKING:  # randomization imports this module's neighbours; only the type is needed here
    from afford_sim.randomization import DomainDraw

TCP_SITE = "tcp"
"""The site at the robot's TCP (between the fingertip pads; z approach, y closing axis)."""
ROBOT_PREFIX = "robot"
FINGER_ROLES: tuple[str, str] = ("left_finger", "right_finger")


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
        if self.furniture_density <= 0:
            raise ValueError("furniture_density must be positive")
        if min(self.slide_frictionloss, self.hinge_frictionloss, self.joint_armature) < 0:
            raise ValueError("frictionloss and armature values must be >= 0")


_INTEGRATORS = {
    "euler": mujoco.mjtIntegrator.mjINT_EULER,
    "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
    "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST,
    "rk4": mujoco.mjtIntegrator.mjINT_RK4,
}
# MuJoCo's camera looks along its -z with y up; OpenCV's along +z with y down.
MJ_T_CV = np.diag([1.0, -1.0, -1.0])
#: How a scene looks: the floor, the headlight and one light from above. The franky-sim world
#: uses the same (franky_world.build_scene_tree), so a camera shows the same picture in both
#: worlds: a policy trained on batch-world images is served on the graph's.
FLOOR_RGBA = (0.35, 0.35, 0.38, 1.0)
HEADLIGHT_AMBIENT = (0.35, 0.35, 0.35)
HEADLIGHT_DIFFUSE = (0.45, 0.45, 0.45)
TOP_LIGHT_POS = (0.5, 0.0, 2.0)
TOP_LIGHT_DIFFUSE = (0.5, 0.5, 0.5)


def _quat(rot: np.ndarray) -> np.ndarray:
    q = np.zeros(4)
    mujoco.mju_mat2Quat(q, np.ascontiguousarray(rot, dtype=float).reshape(9))
    return q


def load_robot(robot: RobotDescription, config: ModelConfig) -> mujoco.MjSpec:
    """The robot's spec from its builder, with what every robot gets here: geom names (see the
    module docstring), the fingers' contact settings and the TCP site."""
    spec = SIM_BUILDERS.get(robot.sim.builder)(robot, config)
    for key in list(spec.keys):  # its keyframe has no room for the scene's free joints
        spec.delete(key)
    roles = {b: FINGER_ROLES[0] for b in robot.sim.left_finger_bodies}
    roles.update({b: FINGER_ROLES[1] for b in robot.sim.right_finger_bodies})
    counts: dict[str, int] = {}
    for geom in spec.geoms:
        body = geom.parent.name
        role = roles.get(body, body)
        geom.name = f"{ROBOT_PREFIX}/{role}/{counts.get(role, 0)}"
        counts[role] = counts.get(role, 0) + 1
        if body in roles and geom.contype:
            geom.condim = config.condim
            geom.friction = config.friction
            geom.solref = config.solref
            geom.solimp = config.solimp
    missing = [r for r in FINGER_ROLES if r not in counts]
    if missing:
        raise ValueError(f"{robot.name}: no geoms on the {' and '.join(missing)} bodies of its description")
    tcp = robot.sim.tcp_matrix
    spec.body(robot.sim.hand_body).add_site(name=TCP_SITE, pos=tcp[:3, 3], quat=_quat(tcp[:3, :3]),
                                            size=[0.005, 0, 0], rgba=[1, 0, 0, 0.5], group=4)
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
            size=[0, 0, 0.05], rgba=list(FLOOR_RGBA),
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


#: Categories that are markings on the table, seen but never touched: a pushed tin tripped over
#: the edge of a 1 mm mat (its leading rim caught and it fell forward) as it would not on a
#: printed or taped-down target.
MARKINGS: frozenset[str] = frozenset({"target_mat"})


def add_object(spec: mujoco.MjSpec, obj: PlacedObject, config: ModelConfig) -> None:
    asset = obj.asset
    marking = asset.category in MARKINGS
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
            contype=0 if marking else 1, conaffinity=0 if marking else 1,
        )


def hand_camera_pose(cam: CameraSpec, robot: RobotDescription) -> tuple[np.ndarray, np.ndarray]:
    """Position and MuJoCo quaternion (w, x, y, z) of a hand-mounted (``mount="tcp"``) camera
    in the robot's hand body: its pose is given in the TCP frame, which hangs from the hand."""
    hand_T_cv = robot.sim.tcp_matrix @ cam.extrinsics()
    return hand_T_cv[:3, 3].copy(), _quat(hand_T_cv[:3, :3] @ MJ_T_CV)


def add_camera(spec: mujoco.MjSpec, cam: CameraSpec, robot: RobotDescription | None = None) -> None:
    if cam.mount == "tcp":
        # A wrist camera rides on the hand body.
        if robot is None:
            raise ValueError(f"camera {cam.name} is mounted on the hand; the robot is needed to place it")
        pos, quat = hand_camera_pose(cam, robot)
        c = spec.body(robot.sim.hand_body).add_camera(name=cam.name, pos=pos, quat=quat)
    else:
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


def _add_initial_keyframe(spec: mujoco.MjSpec, placed: PlacedScene, robot: RobotDescription) -> None:
    model = spec.compile()
    qpos = model.qpos0.copy()
    ctrl = np.zeros(model.nu)
    for name, q in zip(robot.sim.arm_joints, placed.spec.robot_q, strict=True):
        qpos[model.joint(name).qposadr[0]] = q
        ctrl[model.actuator(name).id] = q
    for name, q in zip(robot.sim.finger_joints, robot.sim.finger_open_qpos, strict=True):
        qpos[model.joint(name).qposadr[0]] = q
    ctrl[model.actuator(robot.sim.gripper_actuator).id] = robot.sim.gripper_open_ctrl
    for obj in placed.objects:  # articulated objects that start open (ObjectSpec.joints)
        for joint, value in obj.spec.joints:
            try:
                j = model.joint(f"{obj.name}/{joint}")
            except KeyError:
                known = [lk.joint.name for lk in obj.asset.links if lk.joint is not None]
                raise ValueError(f"{obj.name} has no joint {joint!r}; joints: {known}") from None
            lo, hi = (float(v) for v in j.range)
            if not lo <= value <= hi:
                raise ValueError(f"{obj.name}/{joint} starts at {value}, outside its range [{lo}, {hi}]")
            qpos[j.qposadr[0]] = value
    spec.add_key(name="initial", qpos=qpos, ctrl=ctrl)


def compile_scene(placed: PlacedScene, config: ModelConfig | None = None,
                  domain: DomainDraw | None = None) -> mujoco.MjSpec:
    """Build the MuJoCo spec of a placed scene (call ``.compile()`` for the model).

    The spec holds a keyframe ``initial``: the arm at ``spec.robot_q``, fingers open, objects
    at their placed poses, articulated joints at their ``ObjectSpec.joints`` (else closed).
    ``domain``: a domain-randomization draw dressing the scene
    (``afford_sim.randomization``: textures, background, lights; physics unchanged).
    """
    config = config or ModelConfig()
    robot = get_robot(placed.spec.robot)
    spec = load_robot(robot, config)
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
    spec.visual.headlight.ambient = list(HEADLIGHT_AMBIENT)
    spec.visual.headlight.diffuse = list(HEADLIGHT_DIFFUSE)
    spec.worldbody.add_light(name="top", pos=list(TOP_LIGHT_POS), dir=[0, 0, -1], castshadow=False,
                             diffuse=list(TOP_LIGHT_DIFFUSE))
    add_table(spec, placed, config)
    for obj in placed.objects:
        add_object(spec, obj, config)
    if domain is not None:
        from afford_sim.randomization import apply_look

        apply_look(spec, domain, placed.names, floor_z=placed.spec.table.top_z - placed.spec.table.height)
    for cam in cams:
        add_camera(spec, cam, robot)
    _add_initial_keyframe(spec, placed, robot)
    return spec


def to_xml(spec: mujoco.MjSpec) -> str:
    """MJCF text of a compiled scene (meshes of objects inline, robot meshes by file)."""
    return spec.to_xml()
