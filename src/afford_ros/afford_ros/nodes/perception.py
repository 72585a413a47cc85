"""perception: camera frames and a task sentence in, an intent and grounded object clouds out.

Keeps the newest RGB-D frame (and, in simulation, the simulator's ground-truth segmentation)
and answers ``/perception/perceive``: parse the sentence, cut the target's (and destination's)
cloud out of the frame, ground every region the task needs with the configured source, and
publish what it found on the contract topics for viewers. A frame older than
``max_frame_age_s`` is never used: on a real robot a frozen camera must stop a trial, not feed
it a stale scene.
"""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from geometry_msgs.msg import PoseStamped
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo, Image, PointCloud2
from std_msgs.msg import Header, String

from afford_core.geometry import perceived_center, voxel_down
from afford_core.ontology import category
from afford_core.types import Intent, ObjectCloud, region_names
from afford_interfaces.msg import Intent as IntentMsg
from afford_interfaces.srv import Perceive
from afford_perception.grounding import GroundingSource, make_source
from afford_perception.observation import (
    Frame,
    depth_from_millimetres,
    make_mask_source,
    masks_from_labels,
    object_cloud,
    pick_target,
    scene_cloud,
)
from afford_perception.parser import TaskParseError, parse
from afford_ros import contract
from afford_ros.nodes.clouds import to_cloud
from afford_ros.nodes.convert import image_problem, image_to_msg, matrix_from_pose, msg_to_image
from afford_ros.nodes.spin import run_node
from afford_ros.qos import qos_profile

SEGMENTATIONS = ("ground_truth", "depth", "sam")
COLOR_TOPIC = "/camera/color/image_raw"
DEPTH_TOPIC = "/camera/aligned_depth_to_color/image_raw"
INFO_TOPIC = "/camera/color/camera_info"
EXTRINSICS_TOPIC = "/camera/extrinsics"
LABELS_TOPIC = "/sim/ground_truth/segmentation"
#: How far ahead of this node's clock an input may be stamped (s): publishers on one machine
#: share its clock; more is a wrong clock or a forged stamp.
FUTURE_TOLERANCE_S = 0.5


class PerceptionError(Exception):
    """Why a perceive request cannot be answered; the text goes back to the caller."""


class StaleFrame(PerceptionError):
    """No frame yet, or the newest is older than the limit: worth waiting a little for."""


@dataclass
class Grounded:
    """One object as perception hands it on: its cloud and a grounding score per region."""

    cloud: ObjectCloud
    scores: dict[str, np.ndarray]


def intent_to_msg(intent: Intent) -> IntentMsg:
    return IntentMsg(
        target=intent.target,
        grasp_region=intent.grasp_region,
        keep_clear=list(intent.keep_clear),
        next_action=intent.next_action.value,
        destination=intent.destination or "",
        destination_region=intent.destination_region or "",
        use_region=intent.use_region or "",
        text=intent.text,
    )


class PerceptionNode(Node):
    def __init__(self) -> None:
        super().__init__("perception")
        self.declare_parameter(
            "grounding",
            "geometric",
            ParameterDescriptor(
                description="Default grounding source: geometric (hand-written per category; ahead "
                "of the learned model on objects made by another author, 0.787 mIoU against 0.555) "
                "or learned (the shipped affordance model); a Perceive request may name another."
            ),
        )
        self.declare_parameter(
            "segmentation",
            "ground_truth",
            ParameterDescriptor(
                description="Where object masks come from: ground_truth (the simulator's "
                "segmentation topic), depth (table-plane removal and clustering) or sam."
            ),
        )
        self.declare_parameter(
            "sam_checkpoint",
            "",
            ParameterDescriptor(description="Local SAM checkpoint folder (segmentation sam)."),
        )
        self.declare_parameter(
            "max_frame_age_s",
            1.0,
            ParameterDescriptor(description="Oldest camera frame perception may use (s)."),
        )
        self.declare_parameter(
            "frame_wait_s",
            5.0,
            ParameterDescriptor(description="How long a request waits for a fresh frame (s)."),
        )
        self.declare_parameter(
            "target_rule",
            "largest",
            ParameterDescriptor(description="Which unnamed segment is the target without ground truth."),
        )
        self.segmentation = str(self.get_parameter("segmentation").value)
        if self.segmentation not in SEGMENTATIONS:
            raise ValueError(f"segmentation must be one of {SEGMENTATIONS}, got {self.segmentation!r}")
        self.max_age = float(self.get_parameter("max_frame_age_s").value)
        self._mask_source = None
        if self.segmentation != "ground_truth":
            kwargs = {}
            if self.segmentation == "sam":
                kwargs["checkpoint"] = str(self.get_parameter("sam_checkpoint").value)
            self._mask_source = make_mask_source(self.segmentation, **kwargs)
        self._sources: dict[str, GroundingSource] = {}
        self._lock = threading.Lock()
        self._color: Image | None = None
        self._depth: dict[tuple[int, int], Image] = {}
        self._labels: dict[tuple[int, int], Image] = {}
        self._info: CameraInfo | None = None
        self._extrinsics: np.ndarray | None = None
        self._object_names: list[str] = []
        self._refused: dict[str, str] = {}  # topic -> why its last refused message was refused

        sensor, latched = qos_profile("sensor"), qos_profile("latched")
        # Frames keep arriving while a perceive request waits for a fresh one.
        inputs = MutuallyExclusiveCallbackGroup()
        subs = [
            (Image, COLOR_TOPIC, self._on_color, sensor),
            (Image, DEPTH_TOPIC, self._on_depth, sensor),
            (CameraInfo, INFO_TOPIC, self._on_info, sensor),
            (PoseStamped, EXTRINSICS_TOPIC, self._on_extrinsics, latched),
        ]
        if self.segmentation == "ground_truth":
            subs += [
                (Image, LABELS_TOPIC, self._on_labels, sensor),
                (String, "/sim/ground_truth/objects", self._on_objects, latched),
            ]
        for msg_type, topic, callback, qos in subs:
            self.create_subscription(msg_type, topic, callback, qos, callback_group=inputs)

        self.pub_intent = self.create_publisher(IntentMsg, "/afford/intent", latched)
        self.pub_masks = self.create_publisher(Image, "/afford/object_masks", sensor)
        self.pub_cloud = self.create_publisher(PointCloud2, "/afford/object_cloud", latched)
        self.pub_affordance = self.create_publisher(PointCloud2, "/afford/affordance_cloud", latched)
        # Build the default source now: missing or foreign weights stop the launch with the fix,
        # instead of failing the first trial an operator starts.
        if str(self.get_parameter("grounding").value) != "oracle":
            self._source("")
        serve = MutuallyExclusiveCallbackGroup()
        self.create_service(Perceive, "/perception/perceive", self._on_perceive, callback_group=serve)
        self.get_logger().info(
            f"perception ready: segmentation {self.segmentation}, "
            f"grounding {self.get_parameter('grounding').value}"
        )

    # Inputs -------------------------------------------------------------------------------------

    @staticmethod
    def _key(msg: Image) -> tuple[int, int]:
        return (msg.header.stamp.sec, msg.header.stamp.nanosec)

    def _admit(self, msg: Any, topic: str, frame: str) -> bool:
        """Whether an input message may be used: a readable image (for images), in the
        contract's frame, and not stamped in the future (frames are taken newest stamp first,
        so one stamped ahead would be taken over every real frame until its stamp passed). A
        refusal is logged (throttled) and kept as the topic's last refusal, which a perceive
        request that finds no usable frame reports."""
        why = ""
        if isinstance(msg, Image):
            why = image_problem(msg) or ("an empty image" if msg.height == 0 or msg.width == 0 else "")
        if not why and msg.header.frame_id != frame:
            why = f"in frame {msg.header.frame_id!r}, not {frame!r}"
        if not why:
            stamp = msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9
            ahead = stamp - self.get_clock().now().nanoseconds * 1e-9
            if ahead > FUTURE_TOLERANCE_S:
                why = f"stamped {ahead:.2f} s in the future (clocks differ?)"
        if why:
            with self._lock:
                self._refused[topic] = why
            self.get_logger().warning(f"refused a message on {topic}: {why}", throttle_duration_sec=5.0)
            return False
        return True

    def _keep(self, store: dict[tuple[int, int], Image], msg: Image, topic: str) -> None:
        if not self._admit(msg, topic, contract.CAMERA_FRAME):
            return
        with self._lock:
            store[self._key(msg)] = msg
            while len(store) > 8:
                del store[min(store)]

    def _on_color(self, msg: Image) -> None:
        if self._admit(msg, COLOR_TOPIC, contract.CAMERA_FRAME):
            with self._lock:
                self._color = msg

    def _on_depth(self, msg: Image) -> None:
        self._keep(self._depth, msg, DEPTH_TOPIC)

    def _on_labels(self, msg: Image) -> None:
        self._keep(self._labels, msg, LABELS_TOPIC)

    def _on_info(self, msg: CameraInfo) -> None:
        if self._admit(msg, INFO_TOPIC, contract.CAMERA_FRAME):
            with self._lock:
                self._info = msg

    def _on_extrinsics(self, msg: PoseStamped) -> None:
        # The camera's pose in the robot base: a pose in any other frame would place every
        # point of the scene wrongly.
        if not self._admit(msg, EXTRINSICS_TOPIC, contract.BASE_FRAME):
            return
        pose = matrix_from_pose(msg.pose)
        if not np.all(np.isfinite(pose)):
            with self._lock:
                self._refused[EXTRINSICS_TOPIC] = "a non-finite pose"
            self.get_logger().warning(f"refused a message on {EXTRINSICS_TOPIC}: a non-finite pose")
            return
        with self._lock:
            self._extrinsics = pose

    def _refusals(self) -> str:
        with self._lock:
            refused = dict(self._refused)
        return "".join(f"; the last message on {t} was refused: {why}" for t, why in sorted(refused.items()))

    def _on_objects(self, msg: String) -> None:
        with self._lock:
            self._object_names = [n for n in msg.data.splitlines() if n]

    def _frame(self) -> tuple[Frame, Image | None, Header]:
        """The newest usable frame, waiting up to ``frame_wait_s`` for a fresh one (a camera
        still starting, a slow one, a scene just reset); StaleFrame when none comes."""
        end = time.monotonic() + float(self.get_parameter("frame_wait_s").value)
        while True:
            try:
                return self._newest_frame()
            except StaleFrame:
                if time.monotonic() > end:
                    raise
                time.sleep(0.05)

    def _newest_frame(self) -> tuple[Frame, Image | None, Header]:
        with self._lock:
            depth, labels, info, ext = dict(self._depth), dict(self._labels), self._info, self._extrinsics
            color = self._color
        if not depth:
            raise StaleFrame(f"no depth image received on {DEPTH_TOPIC}{self._refusals()}")
        if info is None or ext is None:
            raise StaleFrame(f"no camera_info or camera extrinsics received yet{self._refusals()}")
        keys = sorted(depth)
        if self.segmentation == "ground_truth":
            keys = [k for k in keys if k in labels]
            if not keys:
                raise StaleFrame("no ground-truth segmentation matching a depth frame")
        key = keys[-1]
        if self.segmentation == "ground_truth":
            with self._lock:
                names = len(self._object_names)
            if int(msg_to_image(labels[key]).max()) > names:
                # A scene was just reset and its object list has not arrived yet.
                raise StaleFrame("the simulator's object list does not cover its segmentation yet")
        depth_msg = depth[key]
        stamp = key[0] + key[1] * 1e-9
        age = self.get_clock().now().nanoseconds * 1e-9 - stamp
        if age > self.max_age:
            raise StaleFrame(
                f"stale camera: the newest depth frame is {age:.2f} s old (limit {self.max_age:.2f} s)"
                f"{self._refusals()}"
            )
        raw = msg_to_image(depth_msg)
        if depth_msg.encoding == "32FC1":  # Isaac Sim publishes metres
            depth_m = np.nan_to_num(raw.astype(np.float32), nan=0.0, posinf=0.0, neginf=0.0)
        else:
            depth_m = depth_from_millimetres(raw)
        if color is not None and (color.height, color.width) == depth_m.shape:
            rgb = msg_to_image(color)
        else:
            rgb = np.zeros((*depth_m.shape, 3), np.uint8)
        frame = Frame(
            rgb=rgb, depth=depth_m, K=np.array(info.k, float).reshape(3, 3), base_T_camera=ext, stamp=stamp
        )
        return frame, labels.get(key), depth_msg.header

    # Perceive -----------------------------------------------------------------------------------

    def _source(self, name: str) -> GroundingSource:
        name = name or str(self.get_parameter("grounding").value)
        if name == "oracle":
            raise PerceptionError(
                "the oracle source needs the simulator's part labels, which the camera topics do not "
                "carry; use geometric or learned in the graph"
            )
        if name not in self._sources:
            try:
                self._sources[name] = make_source(name)
            except (KeyError, FileNotFoundError, ValueError) as err:
                raise PerceptionError(str(err)) from err
        return self._sources[name]

    def _masks(self, frame: Frame, labels: Image | None, intent: Intent) -> dict[str, np.ndarray]:
        wanted = [intent.target, *([intent.destination] if intent.destination else [])]
        if self.segmentation == "ground_truth":
            assert labels is not None
            masks = masks_from_labels(msg_to_image(labels), self._object_names)
            missing = [w for w in wanted if w not in masks or not masks[w].any()]
            if missing:
                seen = ", ".join(n for n, m in masks.items() if m.any()) or "nothing"
                raise PerceptionError(f"no {' or '.join(missing)} in view (the camera sees: {seen})")
            return {n: masks[n] for n in masks}
        assert self._mask_source is not None
        segments = self._mask_source.segments(frame)
        if not segments:
            raise PerceptionError(f"no object on the table in view ({self.segmentation} segmentation)")
        if intent.destination:
            raise PerceptionError(
                f"{self.segmentation} segmentation cannot tell the {intent.target} from the "
                f"{intent.destination}: no object detector ships with the stack"
            )
        i = pick_target(segments, frame, str(self.get_parameter("target_rule").value))
        others = {f"object_{k}": m for k, m in enumerate(segments) if k != i}
        return {intent.target: segments[i], **others}

    def _ground(
        self, frame: Frame, mask: np.ndarray, name: str, regions: list[str], src: GroundingSource
    ) -> Grounded:
        try:
            raw = object_cloud(frame, mask, name)
        except ValueError as err:
            raise PerceptionError(f"the {name}: {err}") from err
        cloud = ObjectCloud(raw.points, name, object_center=perceived_center(raw.points))
        return Grounded(cloud, {r: np.asarray(src.ground(cloud, r), float) for r in regions})

    def perceive(
        self, sentence: str, grounding: str
    ) -> tuple[Intent, Grounded, Grounded | None, np.ndarray, Header]:
        """The whole request; raises PerceptionError with the reason to report."""
        if not sentence.strip():
            raise PerceptionError("empty task sentence")
        try:
            intent = parse(sentence)
        except TaskParseError as err:
            raise PerceptionError(str(err)) from err
        source = self._source(grounding)
        frame, labels, header = self._frame()
        masks = self._masks(frame, labels, intent)
        target = self._ground(frame, masks[intent.target], intent.target, region_names(intent), source)
        dest = None
        if intent.destination:
            parts = category(intent.destination).parts
            order = [intent.destination_region or "", *[p for p in parts if p != intent.destination_region]]
            dest = self._ground(
                frame, masks[intent.destination], intent.destination, list(dict.fromkeys(order)), source
            )
        exclude = np.zeros(frame.depth.shape, bool)
        exclude |= masks[intent.target]
        obstacles = voxel_down(scene_cloud(frame, exclude=exclude), 0.005)
        self._publish(intent, masks, target, header)
        return intent, target, dest, obstacles, Header(stamp=header.stamp, frame_id=contract.BASE_FRAME)

    def _publish(
        self, intent: Intent, masks: dict[str, np.ndarray], target: Grounded, header: Header
    ) -> None:
        self.pub_intent.publish(intent_to_msg(intent))
        ids = np.zeros(next(iter(masks.values())).shape, np.uint16)
        order = [intent.target, *([intent.destination] if intent.destination else [])]
        order += [n for n in masks if n not in order]
        for k, name in enumerate(order):
            ids[masks[name] & (ids == 0)] = k + 1
        self.pub_masks.publish(image_to_msg(ids, "16UC1", contract.CAMERA_FRAME, header.stamp))
        base = Header(stamp=header.stamp, frame_id=contract.BASE_FRAME)
        self.pub_cloud.publish(to_cloud(target.cloud.points, base))
        self.pub_affordance.publish(
            to_cloud(target.cloud.points, base, {"affordance": target.scores[intent.grasp_region]})
        )

    def _on_perceive(self, req: Perceive.Request, res: Perceive.Response) -> Perceive.Response:
        t0 = time.perf_counter()
        try:
            intent, target, dest, obstacles, header = self.perceive(req.sentence, req.grounding)
        except PerceptionError as err:
            res.success, res.reason = False, str(err)
            self.get_logger().warning(f"perceive {req.sentence!r}: {err}")
            return res
        except Exception as err:  # noqa: BLE001 - a node answers every request, and stays up
            self.get_logger().error(f"perceive {req.sentence!r} failed: {err!r}")
            res.success, res.reason = False, f"perception failed: {type(err).__name__}: {err}"
            return res
        res.success = True
        res.intent = intent_to_msg(intent)
        res.target_cloud = to_cloud(target.cloud.points, header, target.scores)
        res.region_names = list(target.scores)
        if dest is not None:
            res.destination_cloud = to_cloud(dest.cloud.points, header, dest.scores)
            res.destination_region_names = list(dest.scores)
        else:
            res.destination_cloud = to_cloud(np.zeros((0, 3)), header)
        res.obstacles = to_cloud(obstacles, header)
        self.get_logger().info(
            f"perceive {req.sentence!r}: {len(target.cloud)} target points, "
            + ", ".join(f"{int((v >= 0.5).sum())} {k}" for k, v in target.scores.items())
            + f" ({(time.perf_counter() - t0) * 1e3:.0f} ms)"
        )
        return res


def main(argv: list[str] | None = None) -> int:
    return run_node(PerceptionNode, argv, threads=2)


if __name__ == "__main__":
    sys.exit(main())
