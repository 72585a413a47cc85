"""The graph contract: every topic, service and action, its type, frame and QoS, in one table.

The sim world, the real drivers and the Isaac Sim bridge publish onto these names, so the
graph does not know which world it is in. Nodes take their names from here; the user docs
(docs/graph_contract.md) are checked against this table by a test, and the Isaac Sim bridge
configuration is checked against it too. Nothing here imports rclpy: QoS is named by profile
(``sensor``: reliable, keep last 2, volatile, for streams where only the newest message
matters: camera frames, joint states; best effort lost a third of the 640x480 frames across
processes with Fast DDS here; ``reliable``: keep last 10; ``latched``: reliable, transient
local, keep last 1, for the latest state a late joiner needs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from afford_core.robots import DEFAULT_ROBOT, RobotDescription, get_robot

QosName = Literal["sensor", "reliable", "latched"]


def base_frame(robot: RobotDescription | str = DEFAULT_ROBOT) -> str:
    """The frame poses and clouds are given in: the robot's base link."""
    return get_robot(robot).base_link


def arm_joints(robot: RobotDescription | str = DEFAULT_ROBOT) -> tuple[str, ...]:
    """The arm's joints as /joint_states carries them (the robot description's names)."""
    return get_robot(robot).arm_joints


def finger_width_joint(robot: RobotDescription | str = DEFAULT_ROBOT) -> str:
    """The /joint_states entry holding the opening between the fingertip pads (m)."""
    return f"{get_robot(robot).name}_finger_width"


#: Frames. The camera frames follow the REP 103 optical convention (z forward, x right, y down).
#: The graphs drive the reference arm (the FR3): its base link and TCP frame.
BASE_FRAME = base_frame()
CAMERA_FRAME = "camera_color_optical_frame"
TCP_FRAME = get_robot().tcp_frame
#: The policy cameras' optical frames (afford_sim.policy_cameras: the dataset's two views).
POLICY_FRONT_FRAME = "policy_camera_front_optical_frame"
POLICY_WRIST_FRAME = "policy_camera_wrist_optical_frame"


@dataclass(frozen=True)
class Topic:
    """One topic of the contract.

    Attributes:
        name: Absolute topic name.
        type: ROS interface type, ``pkg/msg/Name``.
        frame: ``header.frame_id`` of its messages; empty for messages without a header.
        qos: QoS profile name (see the module docstring).
        publisher: Node that publishes it in the sim graph (the real graph's driver or the
            Isaac Sim bridge replaces ``sim_world``); ``operator`` and ``policy`` for what a
            person or a learned policy sends; ``policy_camera`` for the policy's cameras
            (``sim_world`` when asked to render them, the lab's drivers on the real robot).
        description: What a message means, for the docs table.
        sim_only: Published only by the simulator (ground truth); no real-world node offers it,
            and no node may need it to run a task on the real robot.
    """

    name: str
    type: str
    frame: str
    qos: QosName
    publisher: str
    description: str
    sim_only: bool = False


@dataclass(frozen=True)
class Endpoint:
    """A service or action of the contract.

    Attributes:
        name: Absolute name.
        type: ``pkg/srv/Name`` or ``pkg/action/Name``.
        server: Node that serves it.
        description: What a call does, for the docs table.
        sim_only: Offered only by the simulator.
    """

    name: str
    type: str
    server: str
    description: str
    sim_only: bool = False


#: The name of sim_world's status on /diagnostics.
SIM_LOOP_STATUS = "sim_world: simulation loop"

TOPICS: tuple[Topic, ...] = (
    Topic("/camera/color/image_raw", "sensor_msgs/msg/Image", CAMERA_FRAME, "sensor", "sim_world",
          "RGB image, rgb8, 640x480 by default."),
    Topic("/camera/color/camera_info", "sensor_msgs/msg/CameraInfo", CAMERA_FRAME, "sensor", "sim_world",
          "Pinhole intrinsics of the colour image (plumb_bob, no distortion in sim)."),
    Topic("/camera/aligned_depth_to_color/image_raw", "sensor_msgs/msg/Image", CAMERA_FRAME, "sensor",
          "sim_world", "Depth aligned to the colour image: 16UC1 in millimetres (RealSense, sim world) or "
          "32FC1 in metres (Isaac Sim); 0 = no return."),
    Topic("/camera/extrinsics", "geometry_msgs/msg/PoseStamped", BASE_FRAME, "latched", "sim_world",
          "Pose of the camera's optical frame in the robot base frame (hand-eye calibration)."),
    Topic("/sim/ground_truth/segmentation", "sensor_msgs/msg/Image", CAMERA_FRAME, "sensor", "sim_world",
          "Simulator ground truth: 16UC1 object index per pixel (0 = none), aligned with the colour "
          "image; indices are 1 + the position in /sim/ground_truth/objects.", sim_only=True),
    Topic("/sim/ground_truth/objects", "std_msgs/msg/String", "", "latched", "sim_world",
          "Simulator ground truth: the scene's object names, one per line, in segmentation order.",
          sim_only=True),
    Topic("/policy_camera/front/image_raw", "sensor_msgs/msg/Image", POLICY_FRONT_FRAME, "sensor",
          "policy_camera", "A visuomotor policy's third-person RGB view, rgb8, at the size the policy was "
          "trained on (sim_world renders it when policy_camera_width/height are set; on the real robot a "
          "camera driver of the lab's)."),
    Topic("/policy_camera/wrist/image_raw", "sensor_msgs/msg/Image", POLICY_WRIST_FRAME, "sensor",
          "policy_camera", "A visuomotor policy's wrist RGB view (a camera on the hand looking along the "
          "approach), rgb8, as the front view."),
    Topic("/joint_states", "sensor_msgs/msg/JointState", BASE_FRAME, "sensor", "executor",
          "FR3 joints fr3_joint1..7 and the finger width (fr3_finger_width, m), 100 Hz. In Isaac Sim "
          "the world publishes it and the executor only commands."),
    Topic("/afford/robot_error", "afford_interfaces/msg/RobotError", "", "reliable", "executor",
          "Reflexes, refused commands (limits), stops and connection faults."),
    Topic("/executor/joint_targets", "trajectory_msgs/msg/JointTrajectory", BASE_FRAME, "reliable", "policy",
          "A chunk of joint targets at a control rate (times from its header stamp, which it must "
          "carry), e.g. a policy's actions: checked like a trajectory, it replaces the chunk "
          "running; the arm holds the last target."),
    Topic("/afford/stop", "std_msgs/msg/Empty", "", "reliable", "operator",
          "Software stop: the executor halts any motion at once and refuses the running goal. "
          "Never a substitute for the hardware stop."),
    Topic("/afford/intent", "afford_interfaces/msg/Intent", "", "latched", "perception",
          "The last task sentence, parsed."),
    Topic("/afford/object_masks", "sensor_msgs/msg/Image", CAMERA_FRAME, "sensor", "perception",
          "16UC1 object mask per pixel used by perception (0 = background); the target is 1."),
    Topic("/afford/object_cloud", "sensor_msgs/msg/PointCloud2", BASE_FRAME, "latched", "perception",
          "The target object's observed cloud (x, y, z)."),
    Topic("/afford/affordance_cloud", "sensor_msgs/msg/PointCloud2", BASE_FRAME, "latched", "perception",
          "The target's cloud with an `affordance` field: the grounded score of the grasp region."),
    Topic("/afford/candidates", "afford_interfaces/msg/CandidateSet", BASE_FRAME, "latched", "planner",
          "Every grasp candidate with its terms and score, content-hashed."),
    Topic("/afford/candidate_markers", "visualization_msgs/msg/MarkerArray", BASE_FRAME, "latched",
          "planner", "Candidates as arrows coloured by score, the chosen one highlighted (RViz, Foxglove)."),
    Topic("/afford/chosen_grasp", "geometry_msgs/msg/PoseStamped", BASE_FRAME, "latched", "planner",
          "TCP pose of the chosen grasp."),
    Topic("/afford/trajectory", "trajectory_msgs/msg/JointTrajectory", BASE_FRAME, "latched", "planner",
          "Each joint trajectory as it is sent to the executor."),
    Topic("/diagnostics", "diagnostic_msgs/msg/DiagnosticArray", "", "reliable", "sim_world",
          f"Once a second, the status {SIM_LOOP_STATUS!r}: how the simulation kept real time over the "
          "last second (realtime_factor, deadline_misses, worst_gap_s, dropped_s); WARN or ERROR "
          "with the reason when it fell behind.", sim_only=True),
    Topic("/afford/trial_state", "std_msgs/msg/String", "", "latched", "task_server",
          "The running trial's stage name (idle, perceive, plan, approve, execute, done, aborted)."),
)

SERVICES: tuple[Endpoint, ...] = (
    Endpoint("/sim_world/reset", "afford_interfaces/srv/ResetScene", "sim_world",
             "Rebuild the simulated scene for a task sentence and seed.", sim_only=True),
    Endpoint("/sim_world/evaluate", "std_srvs/srv/Trigger", "sim_world",
             "Check the last task's success against the simulator's state (ground truth).",
             sim_only=True),
    Endpoint("/sim_world/inject_fault", "afford_interfaces/srv/InjectFault", "sim_world",
             "Fault injection for tests: stall the simulation loop, or make the robot raise a reflex.",
             sim_only=True),
    Endpoint("/perception/perceive", "afford_interfaces/srv/Perceive", "perception",
             "Parse a sentence and ground its regions on the latest camera frame."),
    Endpoint("/planner/plan_grasp", "afford_interfaces/srv/PlanGrasp", "planner",
             "Sample, rank and plan grasps for a perceived task."),
    Endpoint("/executor/gripper", "afford_interfaces/srv/Gripper", "executor",
             "Open the gripper or grasp with a force."),
    Endpoint("/executor/recover", "std_srvs/srv/Trigger", "executor",
             "Clear a reflex or a link lost mid-motion; motion stays refused until this is called."),
    Endpoint("/task_server/approve", "afford_interfaces/srv/ApproveTrial", "task_server",
             "The operator's go or abort for a trial waiting for approval."),
)

ACTIONS: tuple[Endpoint, ...] = (
    Endpoint("/run_task", "afford_interfaces/action/RunTask", "task_server",
             "Run one task sentence end to end, with stage feedback."),
    Endpoint("/planner/execute_skill", "afford_interfaces/action/ExecuteSkill", "planner",
             "Execute the skill behind a plan, stage by stage."),
    Endpoint("/policy/run", "afford_interfaces/action/RunPolicy", "policy",
             "Run a visuomotor policy (or a recorded episode) in closed loop through the executor."),
    Endpoint("/executor/follow_trajectory", "afford_interfaces/action/FollowTrajectory", "executor",
             "Run a joint trajectory after the limit checks."),
)

#: The reference arm's joint names in /joint_states (see :func:`arm_joints` for another robot).
ARM_JOINTS: tuple[str, ...] = arm_joints()
FINGER_WIDTH_JOINT = finger_width_joint()


def topic(name: str) -> Topic:
    """The contract entry of topic ``name``; KeyError names the known topics."""
    for t in TOPICS:
        if t.name == name:
            return t
    raise KeyError(f"{name!r} is not a contract topic; known: {[t.name for t in TOPICS]}")


def real_world_topics() -> tuple[Topic, ...]:
    """The topics a real or Isaac Sim world must offer or consume (no simulator ground truth)."""
    return tuple(t for t in TOPICS if not t.sim_only)
