"""sim_world: franky-sim with the task scene, and the camera topics rendered from its state.

A thin shell over :mod:`afford_sim.franky_world` (the libfranka server on ``hostname``, our
scene, ground truth) and :mod:`afford_sim.sim_render` (rendering in a child process from a
shared-memory copy of ``qpos``, so the 1 kHz simulation loop never waits for a render). It
publishes the ``sim_world`` topics of :mod:`afford_ros.contract`: colour (rgb8), depth
aligned to colour (16UC1, mm), camera info, the latched camera extrinsics in ``fr3_link0``, and
(``publish_ground_truth``) the object-level segmentation with the latched object names, and
(``policy_camera_width``/``height`` set) a visuomotor policy's front and wrist views, rendered
with each frame from the same state. It serves ``/sim_world/reset`` (new scene; franky
connections stay up, a running motion is preempted) and ``/sim_world/evaluate`` (the task's
final-stage check on the simulator state).

Keeping time. franky-sim must answer a libfranka client every millisecond; on a machine whose
cores are busy it can fall behind. The loop's thread runs with real-time scheduling where
permitted, else at a raised priority (:class:`~afford_sim.franky_world.FrankyWorldConfig`'s
``loop_rt_priority`` and ``loop_nice``; rendering runs niced in its
child, so it gives way first), and once a second the node publishes on ``/diagnostics`` how the
loop kept its schedule (:class:`~afford_sim.franky_world.LoopTiming`): WARN when it ran slower
than 80% of its target or went silent for 0.2 s, ERROR at half its target or a 0.5 s silence
(libfranka drops the connection at 1 s), with the reason in words, which the task server
puts in front of a failed trial's reason. ``/sim_world/inject_fault`` stalls the loop or makes the
robot raise a reflex on demand (:mod:`afford_sim.franky_faults`), for the tests of what the
graph does then.

Threads: the simulation loop (franky_world), a publisher thread that forwards rendered frames,
and the executor thread for the services. The render process is a child that exits with us.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import rclpy
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import PoseStamped
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions
from sensor_msgs.msg import CameraInfo, Image
from std_msgs.msg import Header, String
from std_srvs.srv import Trigger

from afford_interfaces.srv import InjectFault, ResetScene
from afford_ros import contract
from afford_ros.nodes.convert import (
    camera_info,
    depth_to_millimetres,
    image_to_msg,
    pose_to_msg,
    stamp_from_ns,
)
from afford_ros.nodes.spin import clean_shutdown
from afford_ros.qos import qos_profile
from afford_sim.franky_world import (
    FrankyWorld,
    FrankyWorldConfig,
    LoopTiming,
    SceneInfo,
    raise_priority,
)
from afford_sim.policy_cameras import FRONT, SCENE_CAMERAS, WRIST, policy_cameras
from afford_sim.randomization import NOISE_SALT, DomainDraw, add_rgb_noise, domain_randomization
from afford_sim.sim_render import Frame, RenderConfig, RenderProcess

NODE_NAME = "sim_world"
T_COLOR = "/camera/color/image_raw"
T_INFO = "/camera/color/camera_info"
T_DEPTH = "/camera/aligned_depth_to_color/image_raw"
T_EXTRINSICS = "/camera/extrinsics"
T_SEG = "/sim/ground_truth/segmentation"
T_OBJECTS = "/sim/ground_truth/objects"
T_DIAGNOSTICS = "/diagnostics"
T_POLICY_FRONT = "/policy_camera/front/image_raw"
T_POLICY_WRIST = "/policy_camera/wrist/image_raw"


def loop_status(window: LoopTiming, hardware_id: str, nice: int, rt_priority: int = 0) -> DiagnosticStatus:
    """The ``/diagnostics`` status of one window of the simulation loop (module docstring)."""
    behind = window.behind
    level = DiagnosticStatus.OK
    if window.severe:
        level = DiagnosticStatus.ERROR
    elif behind:
        level = DiagnosticStatus.WARN
    values = {
        "realtime_factor": f"{window.realtime_factor:.3f}",
        "target_factor": f"{window.target_factor:.3f}",
        "deadline_misses": str(window.misses),
        "worst_gap_s": f"{window.worst_gap:.4f}",
        "dropped_s": f"{window.dropped:.4f}",
        "window_s": f"{window.wall:.3f}",
        "loop_nice": str(nice),
        "loop_rt_priority": str(rt_priority),
    }
    return DiagnosticStatus(
        level=level,
        name=contract.SIM_LOOP_STATUS,
        message=behind or "keeping real time",
        hardware_id=hardware_id,
        values=[KeyValue(key=k, value=v) for k, v in values.items()],
    )


@dataclass(frozen=True)
class SimWorldParams:
    """The node's parameters (ROS names identical to the fields).

    Attributes:
        task: Id of the task whose scene is built at start (``afford tasks`` lists them).
        seed: Seed of that scene.
        hostname: Address franky-sim's libfranka server binds (the executor's ``robot_ip``).
        width: Camera image width (pixels).
        height: Camera image height (pixels).
        fps: Camera frame rate the render process aims at.
        realtime_factor: Simulated seconds per wall second.
        publish_ground_truth: Publish the segmentation and object names (simulator only).
        policy_camera_width: Width of the policy cameras (a visuomotor policy's front and wrist
            views, :mod:`afford_sim.policy_cameras`); 0: not rendered.
        policy_camera_height: Their height; 0 with the width.
        randomize: Domain randomization of every scene (``afford_sim.randomization.DOMAINS``: a
            preset such as ``visual`` or ``table1``, or a comma list of presets; ``none`` by
            default): the batch world's draw for the same task, seed and preset, pixel noise
            added here.
    """

    task: str = "pick-mug-v1"
    seed: int = 0
    hostname: str = "127.0.0.1"
    width: int = 640
    height: int = 480
    fps: float = 30.0
    realtime_factor: float = 1.0
    publish_ground_truth: bool = True
    policy_camera_width: int = 0
    policy_camera_height: int = 0
    randomize: str = "none"

    def __post_init__(self) -> None:
        if not self.task.strip():
            raise ValueError("task must not be empty")
        if self.seed < 0:
            raise ValueError("seed must be >= 0")
        size = (self.policy_camera_width, self.policy_camera_height)
        if (0 in size and size != (0, 0)) or (size != (0, 0) and not all(16 <= v <= 1024 for v in size)):
            raise ValueError(f"policy_camera_width/height must both be 0 (off) or in 16..1024, got {size}")
        try:
            domain_randomization(self.randomize)
        except (KeyError, ValueError) as err:  # the user's value, named, before anything starts
            raise ValueError(f"randomize: {err.args[0]}") from None
        # The rest is validated by FrankyWorldConfig and RenderConfig.

    @property
    def policy_cameras(self) -> bool:
        return self.policy_camera_width > 0


_DESCRIPTIONS = {
    "task": "Id of the task whose scene is built at start (see /sim_world/reset for later ones).",
    "seed": "Seed of the scene's randomisation.",
    "hostname": "Address franky-sim's libfranka server binds; the executor connects here.",
    "width": "Camera image width in pixels.",
    "height": "Camera image height in pixels.",
    "fps": "Camera frame rate the renderer aims at (it publishes as fast as it renders below it).",
    "realtime_factor": "Simulated seconds per wall-clock second (1.0: real time, as franky expects).",
    "publish_ground_truth": "Publish /sim/ground_truth/segmentation and /sim/ground_truth/objects.",
    "policy_camera_width": "Width of a policy's front and wrist cameras on /policy_camera/* (0: off).",
    "policy_camera_height": "Their height in pixels (0: off).",
    "randomize": "Domain randomization of every scene: a preset (visual, table1, table2) or a comma list of "
                 "presets (texture, lighting, background, camera, noise); none by default.",
}


def _noisy(rgb: np.ndarray, std: float, seed: list[int]) -> np.ndarray:
    """``rgb`` with the batch world's pixel noise model, drawn from ``seed`` in float32 (this runs
    in the process of the 1 kHz simulation loop, on every published image)."""
    return add_rgb_noise(rgb, std, np.random.default_rng(seed), float32=True)


def _randomized(info: SceneInfo) -> str:
    """What the scene's domain randomization drew, for the log and the reset's answer."""
    if info.domain is None:
        return ""
    return f"; domain randomization: {json.dumps(info.domain.as_dict())}"


class SimWorldNode(Node):
    """See the module docstring."""

    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        defaults = SimWorldParams()
        values: dict[str, Any] = {}
        for name, text in _DESCRIPTIONS.items():
            default = getattr(defaults, name)
            values[name] = self.declare_parameter(name, default, ParameterDescriptor(description=text)).value
        self.params = SimWorldParams(**values)
        p = self.params
        policy_size = (p.policy_camera_width, p.policy_camera_height)
        extra = policy_cameras(*policy_size) if p.policy_cameras else ()
        self.world = FrankyWorld(
            FrankyWorldConfig(
                hostname=p.hostname, realtime_factor=p.realtime_factor, camera_size=(p.width, p.height),
                extra_cameras=extra, randomize=p.randomize,
            )
        )
        self.render = RenderProcess(
            RenderConfig(width=p.width, height=p.height, fps=p.fps,
                         extra_cameras=tuple(c.name for c in extra),
                         extra_size=policy_size if extra else (128, 128))
        )
        self._topics = {t.name: t for t in contract.TOPICS if t.publisher == NODE_NAME}
        self.pub_rgb = self._publisher(Image, T_COLOR)
        self.pub_info = self._publisher(CameraInfo, T_INFO)
        self.pub_depth = self._publisher(Image, T_DEPTH)
        self.pub_extrinsics = self._publisher(PoseStamped, T_EXTRINSICS)
        self.pub_seg = self._publisher(Image, T_SEG) if p.publish_ground_truth else None
        self.pub_objects = self._publisher(String, T_OBJECTS) if p.publish_ground_truth else None
        # The policy cameras' topics are the contract's, published here only when asked for.
        self.pub_policy = {
            SCENE_CAMERAS[view]: (
                self.create_publisher(Image, topic, qos_profile(contract.topic(topic).qos)),
                contract.topic(topic).frame,
            )
            for view, topic in ((FRONT, T_POLICY_FRONT), (WRIST, T_POLICY_WRIST))
        } if p.policy_cameras else {}
        self._reset_lock = threading.Lock()
        self._stop = threading.Event()
        self._extrinsics_sent = -1
        self.frames_published = 0
        self._noise_generation, self._noise_frames = -1, 0
        self.render.start()
        try:
            self.world.add_state_sink(self.render.state.write)
            info = self.world.start(p.task, p.seed)
            self._announce(info)
        except BaseException:  # no orphans: the child is ours until the node exists
            self.world.stop()
            self.render.stop()
            raise
        self.create_service(ResetScene, "/sim_world/reset", self._on_reset)
        self.create_service(Trigger, "/sim_world/evaluate", self._on_evaluate)
        self.create_service(InjectFault, "/sim_world/inject_fault", self._on_inject)
        self.pub_diagnostics = self._publisher(DiagnosticArray, T_DIAGNOSTICS)
        self._timing = self.world.timing(take_gap=True)
        self.create_timer(1.0, self._report_timing)
        self._publisher_thread = threading.Thread(target=self._publish_loop, name="camera_pub", daemon=True)
        self._publisher_thread.start()
        self.get_logger().info(
            f"franky-sim serving on {p.hostname} with the scene of {p.task} (seed {p.seed}): "
            f"objects {list(info.objects)}; camera {p.width}x{p.height} at up to {p.fps} fps"
            + (f"; policy cameras {policy_size[0]}x{policy_size[1]}" if p.policy_cameras else "")
            + _randomized(info)
        )

    def _publisher(self, msg_type: Any, name: str) -> Any:
        t = self._topics[name]  # KeyError: a topic this node does not own in the contract
        return self.create_publisher(msg_type, t.name, qos_profile(t.qos))

    # Scene ---------------------------------------------------------------------------------

    def _announce(self, info: SceneInfo) -> None:
        if self.render.alive():  # a dead camera stays dead (main() said so); the robot goes on
            self.render.set_scene(info.generation, info.xml, info.camera.name, info.objects)
        if self.pub_objects is not None:
            self.pub_objects.publish(String(data="\n".join(info.objects)))

    def _on_reset(self, request: ResetScene.Request, response: ResetScene.Response) -> ResetScene.Response:
        try:
            with self._reset_lock:
                info = self.world.reset(request.task_id, int(request.seed))
                self._announce(info)
        except Exception as err:  # a bad task id or seed leaves the old scene running
            response.success = False
            response.message = f"{type(err).__name__}: {err}"
            self.get_logger().warning(f"reset refused: {response.message}")
            return response
        response.success = True
        response.message = f"scene of {info.task_id}, seed {request.seed}" + _randomized(info)
        response.objects = list(info.objects)
        self.get_logger().info(response.message)
        return response

    def _on_evaluate(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        try:
            with self._reset_lock:
                stage, check = self.world.evaluate()
        except Exception as err:
            response.success = False
            response.message = f"evaluation failed: {type(err).__name__}: {err}"
            return response
        response.success = bool(check.ok)
        response.message = f"{self.world.scene.task_id}/{stage}: {check.detail}"
        return response

    def _on_inject(self, request: InjectFault.Request, response: InjectFault.Response) -> Any:
        kinds = ("stall", "reflex")
        try:
            if request.kind not in kinds:
                raise ValueError(f"unknown fault {request.kind!r}; known: {', '.join(kinds)}")
            if request.kind == "stall":
                self.world.stall(float(request.seconds))
                response.message = f"the simulation loop stalls for {request.seconds:.2f} s"
            else:
                self.world.reflex()
                response.message = "the robot raises a reflex at the running (or next) motion"
        except ValueError as err:
            response.success, response.message = False, str(err)
            return response
        response.success = True
        self.get_logger().warning(f"fault injected: {response.message}")
        return response

    # Keeping time ---------------------------------------------------------------------------

    def _report_timing(self) -> None:
        now = self.world.timing(take_gap=True)
        window = now.since(self._timing)
        self._timing = now
        status = loop_status(
            window, self.params.hostname, self.world.loop_priority, self.world.loop_realtime
        )
        stamp = self.get_clock().now().to_msg()
        self.pub_diagnostics.publish(DiagnosticArray(header=Header(stamp=stamp), status=[status]))
        if status.level != DiagnosticStatus.OK:
            self.get_logger().warning(
                f"{status.message} ({window.misses} late steps in the last {window.wall:.1f} s)"
            )

    # Camera --------------------------------------------------------------------------------

    def _publish_loop(self) -> None:
        while not self._stop.is_set():
            if not self.render.alive():  # the camera is gone; main() has said so once
                time.sleep(0.5)
                continue
            try:
                frame = self.render.latest(timeout=0.1)
                scene = self.world.scene  # once: a reset may swap it while this frame goes out
                if frame is None or frame.generation != scene.generation:
                    continue
                self.publish_frame(frame, scene.domain)
            except Exception as err:  # keep publishing after a bad frame; the log says why
                if not self._stop.is_set():
                    self.get_logger().error(f"camera publishing: {type(err).__name__}: {err}")
                    time.sleep(0.1)

    def publish_frame(self, frame: Frame, domain: DomainDraw | None = None) -> None:
        """Publish one rendered frame; ``domain`` (the frame's scene's draw) adds pixel noise."""
        stamp = stamp_from_ns(frame.stamp_ns)
        cam = contract.CAMERA_FRAME
        h, w = frame.depth.shape
        if self._extrinsics_sent != frame.generation:
            msg = PoseStamped(
                header=Header(stamp=stamp, frame_id=contract.BASE_FRAME),
                pose=pose_to_msg(frame.world_T_camera),
            )
            self.pub_extrinsics.publish(msg)
            self._extrinsics_sent = frame.generation
        rgb, extra = frame.rgb, frame.extra
        if domain is not None and domain.noise_std > 0:
            # The batch world's noise model (its std, a fresh draw per image), seeded by the
            # scene's draw and the image's number since the scene began, so a reset to the same
            # task, seed and preset repeats it frame by frame.
            if self._noise_generation != frame.generation:
                self._noise_generation, self._noise_frames = frame.generation, 0
            n = self._noise_frames
            self._noise_frames += 1
            rgb = _noisy(rgb, domain.noise_std, [domain.seed, NOISE_SALT, n, 0])
            extra = {k: _noisy(v, domain.noise_std, [domain.seed, NOISE_SALT, n, i])
                     for i, (k, v) in enumerate(sorted(extra.items()), 1)}
        self.pub_rgb.publish(image_to_msg(rgb, "rgb8", cam, stamp))
        self.pub_depth.publish(image_to_msg(depth_to_millimetres(frame.depth), "16UC1", cam, stamp))
        self.pub_info.publish(camera_info(frame.K, w, h, cam, stamp))
        if self.pub_seg is not None:
            self.pub_seg.publish(image_to_msg(frame.segmentation, "16UC1", cam, stamp))
        for name, (pub, frame_id) in self.pub_policy.items():
            pub.publish(image_to_msg(extra[name], "rgb8", frame_id, stamp))
        self.frames_published += 1

    # Shutdown ------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop publishing, the simulation (sockets closed) and the render process."""
        self._stop.set()
        if self._publisher_thread.is_alive():
            self._publisher_thread.join(timeout=2.0)
        self.world.stop()
        self.render.stop()


def main(argv: list[str] | None = None) -> int:
    """Run the node until Ctrl-C or SIGTERM; returns the exit code (0 on a clean stop)."""
    args = sys.argv if argv is None else argv
    # The simulation thread needs the GIL every millisecond; the default 5 ms switch interval
    # lets the publisher thread hold it for whole frames.
    sys.setswitchinterval(0.0005)
    # Every thread of this process runs raised (they are started after this line and inherit
    # it; the render child lowers its own): a thread holding the GIL must not be preempted by a
    # busy neighbour while the 1 kHz loop waits for it.
    raise_priority(FrankyWorldConfig().loop_nice, "sim_world")
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    node: SimWorldNode | None = None
    code = 0
    camera_lost = False
    try:
        with clean_shutdown():
            node = SimWorldNode()
            executor = SingleThreadedExecutor()
            executor.add_node(node)
            while not stop.is_set() and rclpy.ok():
                executor.spin_once(timeout_sec=0.1)
                if not node.world.running:
                    node.get_logger().error(f"the simulation loop stopped: {node.world.loop_error!r}")
                    code = 1
                    break
                if not camera_lost and not node.render.alive():
                    # Like an unplugged camera: the robot keeps running, the camera topics stop, and
                    # the trial's watchdog decides what that means for the task.
                    node.get_logger().error(
                        "the render process died: no camera topics; the robot keeps running"
                    )
                    camera_lost = True
    finally:
        if node is not None:
            node.close()
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
        for s, handler in previous.items():
            signal.signal(s, handler)
    return code


if __name__ == "__main__":
    sys.exit(main())
