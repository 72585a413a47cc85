"""Our rosidl interfaces (afford_interfaces) as the graph uses them: built from the PyPI ROS 2
wheels, found by the ament index, serializable, and carried between rclpy nodes over DDS."""

from __future__ import annotations

import importlib.util
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

if importlib.util.find_spec("afford_interfaces") is None:
    pytest.skip(
        "afford_interfaces is not built: run scripts/build_interfaces.sh",
        allow_module_level=True,
    )

import rclpy
from geometry_msgs.msg import Point, Pose, Quaternion
from rclpy.action import ActionClient, ActionServer
from rclpy.action.server import ServerGoalHandle
from rclpy.context import Context
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.serialization import deserialize_message, serialize_message

from afford_interfaces.action import RunTask
from afford_interfaces.msg import AffordanceQuery, CandidateSet, GraspCandidate, Intent
from afford_interfaces.srv import ApproveTrial

DEADLINE_S = 10.0
"""Upper bound for discovery plus delivery on a loaded 2-core CI machine (typically < 1 s)."""


def _candidate(index: int) -> GraspCandidate:
    return GraspCandidate(
        pose=Pose(
            position=Point(x=0.45, y=-0.1 * index, z=0.12),
            orientation=Quaternion(x=1.0, y=0.0, z=0.0, w=0.0),
        ),
        width=0.035,
        source="region",
        term_names=["function", "task", "clearance"],
        term_values=[0.9, 0.7 - 0.1 * index, 0.02],
        score=0.8 - 0.1 * index,
        index=index,
        eligible=index != 2,
    )


def _candidate_set() -> CandidateSet:
    msg = CandidateSet(content_hash="sha256:0f3a", candidates=[_candidate(i) for i in range(3)])
    msg.header.frame_id = "fr3_link0"
    msg.header.stamp.sec = 1_700_000_000
    msg.header.stamp.nanosec = 250_000_000
    return msg


def _examples() -> list[object]:
    return [
        Intent(
            target="mug",
            grasp_region="body",
            keep_clear=["handle"],
            next_action="hang",
            destination="rack",
            destination_region="hook",
            use_region="handle",
            text="hang the mug on the rack by its handle",
        ),
        AffordanceQuery(object="kettle", region="spout"),
        _candidate(0),
        _candidate_set(),
        ApproveTrial.Request(approve=True, reason="workspace clear"),
        ApproveTrial.Response(accepted=True, message="trial 3 approved"),
        RunTask.Goal(sentence="put the bowl on the plate", seed=7, grounding="", auto_approve=True),
        RunTask.Result(
            success=False,
            selected_index=-1,
            abstain_reason="no eligible candidate on the handle",
            stage_names=["perceive", "ground", "plan"],
            stage_success=[True, True, False],
        ),
        RunTask.Feedback(stage="plan", detail="12 candidates, 3 eligible"),
    ]


@pytest.mark.parametrize("msg", _examples(), ids=lambda m: type(m).__name__)
def test_messages_survive_cdr_serialization(msg: object) -> None:
    """Everything a node publishes is CDR on the wire; a field that does not round-trip (a
    dropped sequence, a truncated float) would silently change which grasp the robot takes."""
    data = serialize_message(msg)
    assert isinstance(data, bytes) and len(data) > 0
    assert deserialize_message(data, type(msg)) == msg


def test_ament_index_finds_the_package_and_its_interfaces() -> None:
    """ros2 tools, rosbag2 readers and the launch files look interfaces up by package name in
    the ament index; a package that imports but is not indexed is invisible to them."""
    from ament_index_python.packages import get_package_share_directory, get_resource

    share = Path(get_package_share_directory("afford_interfaces"))
    assert "<name>afford_interfaces</name>" in (share / "package.xml").read_text()
    listed, _ = get_resource("rosidl_interfaces", "afford_interfaces")
    for name in (
        "msg/Intent.msg",
        "msg/AffordanceQuery.msg",
        "msg/GraspCandidate.msg",
        "msg/CandidateSet.msg",
        "srv/ApproveTrial.srv",
        "action/RunTask.action",
    ):
        assert name in listed.splitlines(), f"{name} missing from the rosidl_interfaces index"
        assert (share / name).is_file()


def test_fields_are_typed_when_checking_is_on() -> None:
    """A node that fills a candidate with, say, a string score must fail where the bug is.
    Kilted's generated classes only check types with check_fields=True (or
    ROS_PYTHON_CHECK_FIELDS=1 at import); unchecked, the release-built C conversion turns
    score="high" into a denormal float on the wire instead of raising."""
    with pytest.raises(AssertionError, match="score"):
        GraspCandidate(score="high", check_fields=True)
    with pytest.raises(AssertionError, match="seed"):
        RunTask.Goal(seed=1.5, check_fields=True)
    checked = CandidateSet(check_fields=True)
    with pytest.raises(AssertionError, match="candidates"):
        checked.candidates = [Intent()]


@pytest.fixture
def graph(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Context, MultiThreadedExecutor]]:
    """A private rclpy context, limited to this host so parallel CI jobs on one network do not
    see each other's topics; multi-threaded because the action server's execute callback
    blocks while the client's callbacks run."""
    monkeypatch.setenv("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    context = Context()
    rclpy.init(context=context)
    executor = MultiThreadedExecutor(context=context)
    try:
        yield context, executor
    finally:
        executor.shutdown()
        rclpy.shutdown(context=context)


def _spin_until(executor: MultiThreadedExecutor, done: Callable[[], bool], what: str) -> None:
    end = time.monotonic() + DEADLINE_S
    while not done():
        if time.monotonic() > end:
            pytest.fail(f"timed out after {DEADLINE_S} s waiting for {what}")
        executor.spin_once(timeout_sec=0.05)


def _unique(name: str) -> str:
    return f"/test_interfaces/{name}_{uuid.uuid4().hex[:8]}"


def test_candidate_set_crosses_dds_between_two_nodes(
    graph: tuple[Context, MultiThreadedExecutor],
) -> None:
    """The planner publishes CandidateSet and the operator view and task server subscribe in
    other nodes; the message must go through the RMW's type support, not only CDR in memory."""
    context, executor = graph
    topic = _unique("candidates")
    qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.VOLATILE)
    planner = Node("planner_under_test", context=context)
    viewer = Node("viewer_under_test", context=context)
    executor.add_node(planner)
    executor.add_node(viewer)
    received: list[CandidateSet] = []
    viewer.create_subscription(CandidateSet, topic, received.append, qos)
    publisher = planner.create_publisher(CandidateSet, topic, qos)
    _spin_until(executor, lambda: publisher.get_subscription_count() > 0, "discovery")
    sent = _candidate_set()
    publisher.publish(sent)
    _spin_until(executor, lambda: bool(received), "the CandidateSet")
    assert received[0] == sent
    assert received[0].candidates[1].term_names == ["function", "task", "clearance"]


def test_run_task_action_gives_feedback_and_a_result(
    graph: tuple[Context, MultiThreadedExecutor],
) -> None:
    """`afford task` drives the task server through RunTask: the client must see each stage
    as feedback and the per-stage outcomes in the result."""
    context, executor = graph
    name = _unique("run_task")
    stages = ["perceive", "ground", "plan", "execute"]

    feedback: list[str] = []
    seen = threading.Condition()

    def on_feedback(message: RunTask.Impl.FeedbackMessage) -> None:
        with seen:
            feedback.append(message.feedback.stage)
            seen.notify_all()

    def execute(goal_handle: ServerGoalHandle) -> RunTask.Result:
        # rclpy's client drops feedback that lands after the result, so, like a real stage
        # that takes time, each stage waits until its feedback has reached the client.
        for i, stage in enumerate(stages):
            goal_handle.publish_feedback(RunTask.Feedback(stage=stage, detail=goal_handle.request.sentence))
            with seen:
                seen.wait_for(lambda i=i: len(feedback) > i, timeout=DEADLINE_S)
        goal_handle.succeed()
        return RunTask.Result(
            success=True, selected_index=4, stage_names=stages, stage_success=[True] * len(stages)
        )

    server_node = Node("task_server_under_test", context=context)
    client_node = Node("task_client_under_test", context=context)
    executor.add_node(server_node)
    executor.add_node(client_node)
    server = ActionServer(server_node, RunTask, name, execute)
    client = ActionClient(client_node, RunTask, name)
    try:
        _spin_until(executor, client.server_is_ready, "the RunTask server")
        goal = RunTask.Goal(sentence="pick up the mug by its body", seed=3, auto_approve=True)
        sent = client.send_goal_async(goal, feedback_callback=on_feedback)
        _spin_until(executor, sent.done, "goal acceptance")
        handle = sent.result()
        assert handle is not None and handle.accepted
        result_future = handle.get_result_async()
        _spin_until(executor, result_future.done, "the RunTask result")
        result = result_future.result().result
        assert result.success and result.selected_index == 4
        assert list(result.stage_names) == stages and list(result.stage_success) == [True] * 4
        assert feedback == stages
    finally:
        client.destroy()
        server.destroy()


def test_approve_trial_service_round_trip(graph: tuple[Context, MultiThreadedExecutor]) -> None:
    """In real mode a trial waits for the operator's ApproveTrial call; the request's reason
    must reach the task server and its answer must reach the operator."""
    context, executor = graph
    name = _unique("approve")
    reasons: list[str] = []

    def handle(request: ApproveTrial.Request, response: ApproveTrial.Response) -> ApproveTrial.Response:
        reasons.append(request.reason)
        response.accepted = request.approve
        response.message = "approved" if request.approve else "aborted"
        return response

    server_node = Node("approval_server_under_test", context=context)
    client_node = Node("operator_under_test", context=context)
    executor.add_node(server_node)
    executor.add_node(client_node)
    server_node.create_service(ApproveTrial, name, handle)
    client = client_node.create_client(ApproveTrial, name)
    _spin_until(executor, client.service_is_ready, "the ApproveTrial service")
    future = client.call_async(ApproveTrial.Request(approve=False, reason="person near the table"))
    _spin_until(executor, future.done, "the ApproveTrial response")
    assert future.result() == ApproveTrial.Response(accepted=False, message="aborted")
    assert reasons == ["person near the table"]
