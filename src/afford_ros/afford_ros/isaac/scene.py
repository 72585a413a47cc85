"""Isaac Sim world: the same task scene as the MuJoCo worlds, published through the ROS 2 bridge.

Run it with Isaac Sim's Python (it cannot run here: no Isaac Sim, no GPU), with our packages
installed into that Python (docker/Dockerfile.isaac does this):

    ./python.sh -m afford_ros.isaac.scene hang-mug-v1 --seed 2 [--headless]

then ``ros2 launch afford_bringup isaac_sim.launch.py`` (or ``afford bringup isaac_sim``).

What it does, with the documented Isaac Sim 4.5+ API only (``isaacsim.*`` modules, OmniGraph
node types of ``isaacsim.ros2.bridge`` and ``isaacsim.core.nodes``):

1. builds the placed scene exactly as the MuJoCo worlds do (the task by id, its
   :class:`~afford_sim.scene.SceneSpec`, :func:`~afford_sim.scene.sample_scene` with the seed)
   and compiles it to MJCF with :func:`afford_sim.mjcf.compile_scene`, so robot, table and
   objects are the same bodies, names and poses;
2. imports that MJCF with Isaac Sim's MJCF importer (the FR3 becomes an articulation with the
   joint names fr3_joint1..7, finger_joint1/2);
3. puts a USD camera at the scene's perception camera pose and builds one OmniGraph action graph
   from ``bridge.yaml``: RGB, depth and camera info on the contract's topics and frame, and
   joint commands in (the executor's ``joint_command_topic``) to the articulation controller;
4. publishes with rclpy what no bridge node can: ``/camera/extrinsics`` (latched PoseStamped)
   and the contract's ``/joint_states`` (arm joints plus ``fr3_finger_width``, the sum of the
   two finger joints) from the articulation's state at every rendered step.

Everything but :func:`main` is plain Python over ``afford_sim`` and is tested without Isaac Sim
(the scene description and the bridge table); the Isaac calls are kept few and flat so a reader
with the Isaac Sim docs at hand can check each one.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import yaml

BRIDGE_FILE = Path(__file__).resolve().parent / "bridge.yaml"
GRAPH_PATH = "/World/afford/ros2_bridge"
PERCEPTION_CAMERA = "front"  # the scene camera the MuJoCo world's camera topics render from


def load_bridge(path: Path = BRIDGE_FILE) -> dict[str, Any]:
    """The bridge table (``bridge.yaml``)."""
    data = yaml.safe_load(path.read_text())
    if not isinstance(data, dict) or not {"camera", "robot"} <= set(data):
        raise ValueError(f"{path}: expected 'camera' and 'robot' sections")
    return data


def scene_for(task_id: str, seed: int) -> Any:
    """The placed scene of a task: the same call chain as the sim world and the spine."""
    from afford_sim.franky_world import scene_for as placed_scene

    return placed_scene(task_id, seed)[1]


def write_mjcf(placed: Any, out_dir: Path) -> Path:
    """Compile the placed scene to an MJCF file for Isaac Sim's importer; returns its path."""
    from afford_sim.mjcf import compile_scene, to_xml

    spec = compile_scene(placed)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / "afford_scene.xml"
    path.write_text(to_xml(spec))
    return path


@dataclass(frozen=True)
class CameraPose:
    """The perception camera in the world (= fr3_link0: the robot base sits at the origin).

    Attributes:
        position: (x, y, z) in metres.
        optical_quat_xyzw: Orientation of the optical frame (z forward, x right, y down): what
            ``/camera/extrinsics`` carries.
        usd_quat_wxyz: Orientation of the USD camera prim, which looks along its -z with +y up
            (the optical frame turned half a turn about x), in USD's (w, x, y, z) order.
        K: 3x3 intrinsics, to set the USD camera's aperture and focal length.
        width: Image width in pixels.
        height: Image height in pixels.
    """

    position: tuple[float, float, float]
    optical_quat_xyzw: tuple[float, float, float, float]
    usd_quat_wxyz: tuple[float, float, float, float]
    K: np.ndarray
    width: int
    height: int


def _quat_xyzw(rot: np.ndarray) -> tuple[float, float, float, float]:
    from scipy.spatial.transform import Rotation

    x, y, z, w = Rotation.from_matrix(rot).as_quat()
    return float(x), float(y), float(z), float(w)


def camera_pose(placed: Any, name: str = PERCEPTION_CAMERA) -> CameraPose:
    """Pose and intrinsics of the scene's camera ``name``."""
    cams = {c.name: c for c in placed.spec.cameras}
    if name not in cams:
        raise KeyError(f"the scene has no camera {name!r}; cameras: {sorted(cams)}")
    cam = cams[name]
    t = cam.extrinsics()
    usd_rot = t[:3, :3] @ np.diag([1.0, -1.0, -1.0])  # optical -> USD camera axes
    x, y, z, w = _quat_xyzw(usd_rot)
    return CameraPose(
        position=(float(t[0, 3]), float(t[1, 3]), float(t[2, 3])),
        optical_quat_xyzw=_quat_xyzw(t[:3, :3]),
        usd_quat_wxyz=(w, x, y, z),
        K=cam.intrinsics(),
        width=cam.width,
        height=cam.height,
    )


def _require_isaac() -> None:
    if importlib.util.find_spec("isaacsim") is None:
        raise RuntimeError(
            "afford_ros.isaac.scene runs inside Isaac Sim (4.5 or newer) only: start it with "
            "Isaac Sim's python.sh (see docs/isaac_sim.md). This Python has no 'isaacsim' module."
        )


def _build_bridge_graph(bridge: dict[str, Any], render_width: int, render_height: int) -> None:
    # One action graph ticking on playback; node and attribute names as in Isaac Sim's ROS 2
    # bridge tutorials (camera helper, joint state publisher/subscriber, articulation controller).
    import omni.graph.core as og

    cam, robot = bridge["camera"], bridge["robot"]
    pubs = {p["helper_type"]: p for p in cam["publishers"]}
    keys = og.Controller.Keys
    og.Controller.edit(
        {"graph_path": GRAPH_PATH, "evaluator_name": "execution"},
        {
            keys.CREATE_NODES: [
                ("tick", "omni.graph.action.OnPlaybackTick"),
                ("context", "isaacsim.ros2.bridge.ROS2Context"),
                ("render", "isaacsim.core.nodes.IsaacCreateRenderProduct"),
                ("rgb", pubs["rgb"]["omnigraph_node"]),
                ("depth", pubs["depth"]["omnigraph_node"]),
                ("info", pubs["camera_info"]["omnigraph_node"]),
                ("joint_command", robot["joint_command"]["omnigraph_node"]),
                ("controller", "isaacsim.core.nodes.IsaacArticulationController"),
            ],
            keys.SET_VALUES: [
                ("render.inputs:cameraPrim", cam["prim"]),
                ("render.inputs:width", render_width),
                ("render.inputs:height", render_height),
                ("rgb.inputs:topicName", pubs["rgb"]["topic"]),
                ("rgb.inputs:type", "rgb"),
                ("rgb.inputs:frameId", cam["frame_id"]),
                ("depth.inputs:topicName", pubs["depth"]["topic"]),
                ("depth.inputs:type", "depth"),
                ("depth.inputs:frameId", cam["frame_id"]),
                ("info.inputs:topicName", pubs["camera_info"]["topic"]),
                ("info.inputs:frameId", cam["frame_id"]),
                ("joint_command.inputs:topicName", robot["joint_command"]["isaac_topic"]),
                ("controller.inputs:targetPrim", robot["prim"]),
            ],
            keys.CONNECT: [
                ("tick.outputs:tick", "render.inputs:execIn"),
                ("render.outputs:execOut", "rgb.inputs:execIn"),
                ("render.outputs:execOut", "depth.inputs:execIn"),
                ("render.outputs:execOut", "info.inputs:execIn"),
                ("render.outputs:renderProductPath", "rgb.inputs:renderProductPath"),
                ("render.outputs:renderProductPath", "depth.inputs:renderProductPath"),
                ("render.outputs:renderProductPath", "info.inputs:renderProductPath"),
                ("context.outputs:context", "rgb.inputs:context"),
                ("context.outputs:context", "depth.inputs:context"),
                ("context.outputs:context", "info.inputs:context"),
                ("tick.outputs:tick", "joint_command.inputs:execIn"),
                ("tick.outputs:tick", "controller.inputs:execIn"),
                ("context.outputs:context", "joint_command.inputs:context"),
                ("joint_command.outputs:jointNames", "controller.inputs:jointNames"),
                ("joint_command.outputs:positionCommand", "controller.inputs:positionCommand"),
                ("joint_command.outputs:velocityCommand", "controller.inputs:velocityCommand"),
                ("joint_command.outputs:effortCommand", "controller.inputs:effortCommand"),
            ],
        },
    )


def _add_camera(pose: CameraPose, prim_path: str) -> None:
    # A pinhole USD camera matching K: focal length and apertures in the same (arbitrary) unit.
    import omni.usd
    from pxr import Gf, UsdGeom

    stage = omni.usd.get_context().get_stage()
    camera = UsdGeom.Camera.Define(stage, prim_path)
    pixel = 0.01  # aperture units per pixel; only ratios matter
    camera.CreateFocalLengthAttr(float(pose.K[0, 0] * pixel))
    camera.CreateHorizontalApertureAttr(float(pose.width * pixel))
    camera.CreateVerticalApertureAttr(float(pose.height * pixel))
    camera.CreateClippingRangeAttr(Gf.Vec2f(0.05, 10.0))
    xform = UsdGeom.Xformable(camera.GetPrim())
    xform.ClearXformOpOrder()
    xform.AddTranslateOp().Set(Gf.Vec3d(*pose.position))
    w, x, y, z = pose.usd_quat_wxyz
    xform.AddOrientOp(UsdGeom.XformOp.PrecisionDouble).Set(Gf.Quatd(w, Gf.Vec3d(x, y, z)))


def _import_mjcf(path: Path, prim_path: str) -> None:
    import omni.kit.commands

    _, config = omni.kit.commands.execute("MJCFCreateImportConfig")
    config.set_fix_base(True)
    config.set_make_default_prim(False)
    omni.kit.commands.execute(
        "MJCFCreateAsset", mjcf_path=str(path), import_config=config, prim_path=prim_path
    )


def _publish_extrinsics(pose: CameraPose, topic: str, frame_id: str) -> Any:
    # rclpy inside Isaac Sim's Python (its ROS 2 bridge provides it); latched like the contract says.
    import rclpy
    from geometry_msgs.msg import PoseStamped
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    rclpy.init(args=[])
    node = rclpy.create_node("isaac_camera_extrinsics")
    qos = QoSProfile(
        depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
    )
    pub = node.create_publisher(PoseStamped, topic, qos)
    msg = PoseStamped()
    msg.header.frame_id = frame_id
    msg.header.stamp = node.get_clock().now().to_msg()
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = pose.position
    q = msg.pose.orientation
    q.x, q.y, q.z, q.w = pose.optical_quat_xyzw
    pub.publish(msg)
    return node


def joint_state_fields(names: Sequence[str], positions: Sequence[float]) -> tuple[list[str], list[float]]:
    """The contract's /joint_states content from the articulation's dofs: the arm joints in
    order, then the finger width (the opening the robot's simulator finger joints make; for the
    FR3 the two joints' sum: each is one jaw's travel)."""
    from afford_core.robots import get_robot
    from afford_ros.contract import ARM_JOINTS, FINGER_WIDTH_JOINT

    fingers = get_robot().sim.finger_joints
    q = dict(zip(names, (float(p) for p in positions), strict=True))
    missing = [j for j in (*ARM_JOINTS, *fingers) if j not in q]
    if missing:
        raise KeyError(f"the articulation lacks joints {missing}; it has {list(names)}")
    width = get_robot().sim.finger_width(np.array([q[j] for j in fingers]))
    return [*ARM_JOINTS, FINGER_WIDTH_JOINT], [*(q[j] for j in ARM_JOINTS), width]


def _joint_state_publisher(node: Any, topic: str, frame_id: str) -> Any:
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import JointState

    # The contract's "sensor" profile: reliable, keep last 2.
    qos = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)
    pub = node.create_publisher(JointState, topic, qos)

    def publish(names: Sequence[str], positions: Sequence[float]) -> None:
        msg = JointState()
        msg.header.stamp = node.get_clock().now().to_msg()
        msg.header.frame_id = frame_id
        msg.name, msg.position = joint_state_fields(names, positions)
        pub.publish(msg)

    return publish


def main(argv: Sequence[str] | None = None) -> int:
    """Build the scene and the bridge in Isaac Sim and run until the window (or Ctrl-C) ends it."""
    parser = argparse.ArgumentParser(prog="afford_ros.isaac.scene", description=__doc__.split("\n\n")[0])
    parser.add_argument("task", help="id of the task whose scene to build, e.g. hang-mug-v1 (afford tasks)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--headless", action="store_true")
    parser.add_argument("--out", default="/tmp/afford_isaac", help="where the scene's MJCF is written")
    args = parser.parse_args(argv)
    _require_isaac()
    # Isaac Sim must be started before any omni/pxr import.
    from isaacsim import SimulationApp

    app = SimulationApp({"headless": args.headless})
    try:
        from isaacsim.core.api import World
        from isaacsim.core.utils.extensions import enable_extension

        enable_extension("isaacsim.ros2.bridge")
        enable_extension("isaacsim.asset.importer.mjcf")
        app.update()

        bridge = load_bridge()
        placed = scene_for(args.task, args.seed)
        pose = camera_pose(placed)
        world = World(stage_units_in_meters=1.0, physics_dt=1.0 / 500.0, rendering_dt=1.0 / 30.0)
        _import_mjcf(write_mjcf(placed, Path(args.out)), bridge["robot"]["prim"])
        _add_camera(pose, bridge["camera"]["prim"])
        _build_bridge_graph(bridge, pose.width, pose.height)
        extr = next(p for p in bridge["camera"]["publishers"] if p["helper_type"] == "extrinsics")
        ros_node = _publish_extrinsics(pose, extr["topic"], extr["frame_id"])
        js = bridge["robot"]["joint_states"]
        publish_state = _joint_state_publisher(ros_node, js["topic"], js["frame_id"])
        from isaacsim.core.prims import SingleArticulation

        robot = SingleArticulation(prim_path=bridge["robot"]["prim"], name="fr3")
        world.scene.add(robot)
        world.reset()
        world.play()
        print(
            f"isaac scene: {args.task} seed {args.seed}, objects {', '.join(placed.names)}", flush=True
        )
        try:
            while app.is_running():
                world.step(render=True)
                publish_state(robot.dof_names, robot.get_joint_positions())
        except KeyboardInterrupt:
            pass
        ros_node.destroy_node()
    finally:
        app.close()
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except RuntimeError as err:
        print(f"afford isaac: error: {err}", file=sys.stderr)
        sys.exit(2)
