"""``afford task`` and ``afford trial``: talk to a running graph (``afford bringup`` or
``ros2 launch``) from a shell.

``afford task "<sentence>"`` sends a ``/run_task`` goal, prints every stage as the task server
reports it and the result; Ctrl-C cancels the trial (which stops the arm). ``afford trial
approve|abort`` answers a real-robot trial waiting for the operator. ``afford robot recover`` is
the operator's recovery after a reflex or a robot link lost mid-motion (the executor refuses
motion until then).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from typing import Any


class _Session:
    """A node in a ROS context of its own, so that several calls (a task and its approval) can
    run side by side in one process, e.g. in tests."""

    def __init__(self, name: str) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor

        self.context = rclpy.Context()
        rclpy.init(args=[], context=self.context)
        self.node = rclpy.create_node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def wait(self, future: Any, timeout: float) -> None:
        self.executor.spin_until_future_complete(future, timeout_sec=timeout)

    def spin_once(self, timeout: float) -> None:
        self.executor.spin_once(timeout_sec=timeout)

    def close(self) -> None:
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


def run_task(
    sentence: str,
    seed: int = 0,
    task_id: str = "",
    grounding: str = "",
    auto_approve: bool = True,
    timeout: float = 600.0,
    out: Any = sys.stdout,
    wait: float = 15.0,
    policy: str = "",
) -> tuple[int, Any]:
    """Send one RunTask goal and wait for its result; returns (goal status, result).

    Raises:
        TimeoutError: no task server answered, or the trial outlived ``timeout``.
    """
    from action_msgs.msg import GoalStatus

    from afford_interfaces.action import RunTask
    from afford_ros.action_client import GoalSafeActionClient

    session = _Session("afford_task_cli")
    node = session.node
    client: Any = GoalSafeActionClient(node, RunTask, "/run_task")
    done = threading.Event()

    def feedback(msg: Any) -> None:
        fb = msg.feedback
        print(f"[{fb.stage}] {fb.detail}".rstrip(), file=out, flush=True)

    try:
        if not client.wait_for_server(timeout_sec=wait):
            raise TimeoutError("no task server on /run_task: is the graph up? (afford bringup fr3_sim)")
        goal = RunTask.Goal(
            sentence=sentence, task_id=task_id, seed=seed, grounding=grounding, auto_approve=auto_approve,
            policy=policy,
        )
        send = client.send_goal_async(goal, feedback_callback=feedback)
        session.wait(send, 15.0)
        handle = send.result()
        if handle is None:
            raise TimeoutError("the task server did not answer the goal")
        if not handle.accepted:
            return GoalStatus.STATUS_ABORTED, RunTask.Result(
                abstain_reason="goal rejected: a trial is already running"
            )
        result_future = handle.get_result_async()
        result_future.add_done_callback(lambda _f: done.set())
        end = time.monotonic() + timeout
        try:
            while not done.is_set():
                session.spin_once(0.1)
                if time.monotonic() > end:
                    handle.cancel_goal_async()
                    raise TimeoutError(f"no result within {timeout:.0f} s; the trial was cancelled")
        except KeyboardInterrupt:
            print("cancelling the trial ...", file=out, flush=True)
            cancel = handle.cancel_goal_async()
            session.wait(cancel, 5.0)
            session.wait(result_future, 10.0)
            if not result_future.done():
                raise
        response: Any = result_future.result()
        return response.status, response.result
    finally:
        client.destroy()
        session.close()


def _call(session_name: str, srv_type: Any, name: str, request: Any, server: str, timeout: float) -> Any:
    """Call one service of the graph from a session of its own; returns the response, or a
    string saying why there is none."""
    session = _Session(session_name)
    try:
        client: Any = session.node.create_client(srv_type, name)
        if not client.wait_for_service(timeout_sec=timeout):
            return f"no {server} on {name}: is the graph up?"
        future = client.call_async(request)
        session.wait(future, timeout)
        res = future.result()
        return f"the {server} did not answer" if res is None else res
    finally:
        session.close()


def approve_trial(approve: bool, reason: str = "", timeout: float = 10.0) -> tuple[bool, str]:
    """Answer the trial waiting for approval with the operator's token
    (:mod:`afford_ros.operator_token`); returns (accepted, message)."""
    from afford_interfaces.srv import ApproveTrial
    from afford_ros.operator_token import OperatorTokenError, read_token

    try:
        token = read_token()
    except OperatorTokenError as err:
        return False, str(err)
    res = _call(
        "afford_trial_cli",
        ApproveTrial,
        "/task_server/approve",
        ApproveTrial.Request(approve=approve, reason=reason, token=token),
        "task server",
        timeout,
    )
    return (False, res) if isinstance(res, str) else (bool(res.accepted), str(res.message))


def recover_robot(timeout: float = 10.0) -> tuple[bool, str]:
    """Call the executor's ``/executor/recover`` (an operator's action); returns (ok, message)."""
    from std_srvs.srv import Trigger

    res = _call("afford_robot_cli", Trigger, "/executor/recover", Trigger.Request(), "executor", timeout)
    return (False, res) if isinstance(res, str) else (bool(res.success), str(res.message))


def policy_argument(value: str) -> str:
    """``--policy`` as the goal carries it: a local directory made absolute (the policy node
    runs in another process, started elsewhere), ``replay:`` kept with its dataset made absolute.

    Raises:
        FileNotFoundError: the directory does not exist here.
    """
    from pathlib import Path

    value = value.strip()
    if not value:
        return ""
    prefix = "replay:" if value.startswith("replay:") else ""
    path = Path(value[len(prefix):]).expanduser()
    if not path.is_dir():
        what = "dataset" if prefix else "policy directory"
        raise FileNotFoundError(f"no {what} at {path} (--policy takes a LeRobot pretrained-policy "
                                "directory or replay:<afford generate dataset>)")
    return prefix + str(path.absolute())  # not resolved: checkpoints/last stays "last"


def _cmd_task(args: argparse.Namespace) -> int:
    from action_msgs.msg import GoalStatus

    try:
        if not (args.sentence or args.task):
            print("error: give a task sentence or --task ID (`afford tasks` lists the ids)", file=sys.stderr)
            return 2
        status, result = run_task(
            args.sentence or "",
            seed=args.seed,
            task_id=args.task or "",
            grounding=args.grounding or "",
            auto_approve=not args.operator,
            timeout=args.timeout,
            wait=args.wait,
            policy=policy_argument(args.policy or ""),
        )
    except (TimeoutError, FileNotFoundError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    stages = ", ".join(
        f"{n} {'ok' if ok else 'FAILED'}"
        for n, ok in zip(result.stage_names, result.stage_success, strict=False)
    )
    print(f"stages: {stages or 'none'}")
    if result.task_id:
        print(f"task: {result.task_id}")
    if result.success and status == GoalStatus.STATUS_SUCCEEDED:
        print("success: the policy's run" if args.policy else f"success: candidate #{result.selected_index}")
        return 0
    print(f"failed: {result.abstain_reason or 'unknown reason'}")
    return 1


def _cmd_trial(args: argparse.Namespace) -> int:
    ok, message = approve_trial(args.decision == "approve", args.reason)
    print(message)
    return 0 if ok else 1


def _cmd_robot(args: argparse.Namespace) -> int:
    ok, message = recover_robot()
    print(message)
    return 0 if ok else 1


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """Add ``task``, ``trial`` and ``robot`` to the ``afford`` command."""
    task = sub.add_parser("task", help="send a task sentence to a running graph and print its stages")
    task.add_argument("sentence", nargs="?", default="", help='e.g. "hang the mug on the rack"')
    task.add_argument("--task", default="", help="task id (`afford tasks`); alone, its instruction is used")
    task.add_argument("--seed", type=int, default=0, help="scene and sampling seed (default 0)")
    task.add_argument("--grounding", default="", help="grounding source (default: perception's parameter)")
    task.add_argument(
        "--operator",
        action="store_true",
        help="wait for `afford trial approve` instead of approving automatically (simulation only)",
    )
    task.add_argument(
        "--policy",
        default="",
        help="run a visuomotor policy instead of the pipeline: a LeRobot pretrained-policy directory, or "
        "replay:DATASET (the recorded episode of --seed); the graph: afford bringup fr3_sim_policy",
    )
    task.add_argument("--timeout", type=float, default=600.0, help="seconds before the trial is cancelled")
    task.add_argument(
        "--wait", type=float, default=15.0, help="seconds to wait for the graph's task server (default 15)"
    )
    task.set_defaults(func=_cmd_task)
    trial = sub.add_parser("trial", help="approve or abort the trial waiting for the operator")
    trial.add_argument("decision", choices=["approve", "abort"])
    trial.add_argument("--reason", default="", help="why, for the trial log")
    trial.set_defaults(func=_cmd_trial)
    robot = sub.add_parser(
        "robot", help="operator actions on the robot: recover after a reflex or a lost link"
    )
    robot.add_argument("action", choices=["recover"], help="recover: call /executor/recover")
    robot.set_defaults(func=_cmd_robot)
