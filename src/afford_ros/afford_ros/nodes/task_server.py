"""task_server: the ``/run_task`` action, one trial from a sentence to a result.

A trial runs: find the task the sentence asks for (or take the goal's task id), (sim) reset
the scene of that task and seed, perceive, plan, wait for the
operator's approval (``/task_server/approve``; automatic only in sim mode, when the node's
``auto_approve`` allows it and the goal asks for it; in real mode every goal waits, whatever it
asks; only a request carrying the operator's token counts, see
:mod:`afford_ros.operator_token`), execute the skill stage by stage, and
(sim) check the outcome against the simulator's state. Every step is sent as feedback and on
``/afford/trial_state``. A goal naming a ``policy`` skips perception and planning: after the
operator's approval the policy node (``/policy/run``) runs the visuomotor policy in closed loop
through the executor's checks, watched as a skill is, and the simulator judges the outcome.

Safety: while a trial moves the arm, the camera and the robot state are watched; a camera
silent for longer than ``max_frame_age_s`` publishes the stop topic, cancels the skill and
aborts the trial with that reason (judged 0.3 s after a stall of the task server's own
process, whose queued frames come first: :class:`SilenceWatch`). A cancel of the goal does
the same. Bad goals (an empty sentence, an object the stack does not know, an object not in
view) end before anything moves, with the reason in the result.

A busy machine. In sim mode the simulator reports on ``/diagnostics`` when it fell behind real
time; a trial that fails after such a report (ERROR: a stall long enough for the robot's link
to notice, or half speed) says so first, e.g. "the simulation fell behind real time: the loop
stalled for 1.52 s (...); the robot link failed: ...": the user learns the machine was short
of CPU, not that the skill is broken.
"""

from __future__ import annotations

import math
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from sensor_msgs.msg import CameraInfo
from std_msgs.msg import Empty, String
from std_srvs.srv import Trigger

from afford_interfaces.action import ExecuteSkill, RunPolicy, RunTask
from afford_interfaces.srv import ApproveTrial, Perceive, PlanGrasp, ResetScene
from afford_perception.parser import parse_steps
from afford_ros import contract, operator_token
from afford_ros.action_client import GoalSafeActionClient
from afford_ros.nodes.spin import run_node
from afford_ros.qos import qos_profile
from afford_sim.tasks import TASKS, CompositeTask, find_task, get_task

MODES = ("sim", "real")
#: libfranka drops a connection after this much silence (s): a simulator stall this long loses
#: the robot's link whenever it happens (afford_sim.franky_world.LIBFRANKA_UDP_TIMEOUT; not
#: imported, to keep MuJoCo out of the task server).
LIBFRANKA_TIMEOUT_S = 1.0


#: The planner's action that runs a skill.
EXECUTE_SKILL = "/planner/execute_skill"
#: The policy node's action that runs a visuomotor policy.
RUN_POLICY = "/policy/run"
#: Longest wait (s) for the planner to answer an execute_skill goal; it answers at once when up.
GOAL_ANSWER_S = 10.0
#: After a goal went unanswered (arm stopped), how long (s) to wait for DDS to tell whether the
#: planner died: a killed node's endpoints stay listed until its lease runs out (Fast DDS: 20 s).
PEER_LEASE_S = 25.0
#: After a service's server was restarted mid-request, a request still unanswered this long (s)
#: is sent again (a perceive answers in 1-5 s on two busy cores, a plan in 3-15 s).
RESEND_AFTER_RESTART_S = 20.0
#: Most times one request is sent again (the first on the restart itself).
RESENDS = 3


class SilenceWatch:
    """Judges a camera's silence from a loop that polls it, without taking a stall of this
    process for a dead camera: after a loop turn that came late (the process was descheduled,
    as a loaded machine does for a second or two), the frames that arrived meanwhile are still
    queued for their callback, so the silence is not judged for ``grace`` seconds. A silence
    beyond ``hard_factor`` times the limit is judged even then (a loop late on every turn must
    still stop the arm).
    """

    def __init__(self, limit: float, late: float = 0.2, grace: float = 0.3, hard_factor: float = 3.0) -> None:
        self.limit, self.late, self.grace, self.hard = limit, late, grace, hard_factor * limit
        self._last_turn: float | None = None
        self._judge_after = 0.0

    def silent(self, now: float, last_frame: float) -> float | None:
        """The silence (s) to act on at this turn, or None."""
        if self._last_turn is not None and now - self._last_turn > self.late:
            self._judge_after = now + self.grace
        self._last_turn = now
        silence = now - last_frame
        if silence > self.limit and (now >= self._judge_after or silence > self.hard):
            return silence
        return None


def service_servers(node: Node, service: str) -> set[bytes]:
    """The endpoints serving ``service`` now, as ``node`` sees the graph (the request readers'
    GIDs): what tells one instance of a node from the next, restarted one."""
    infos = node.get_subscriptions_info_by_topic(f"rq{service}Request", no_mangle=True)
    return {bytes(i.endpoint_gid) for i in infos}


class TrialAborted(Exception):
    """Ends a trial early; the text is the result's reason."""


class PeerLost(TrialAborted):
    """A node the trial depended on died or was restarted mid-request: the cause is known, so
    the simulator's account of falling behind (a restarting node loads the CPU) is not put
    first."""


@dataclass
class Approval:
    """A trial waiting for the operator."""

    event: threading.Event = field(default_factory=threading.Event)
    approved: bool = False
    reason: str = ""


class TaskServerNode(Node):
    def __init__(self, **node_kwargs: Any) -> None:
        # node_kwargs (context, parameter_overrides) let a test build it on a context of its own.
        super().__init__("task_server", **node_kwargs)
        d = ParameterDescriptor
        self.declare_parameter(
            "mode", "sim", d(description="sim (franky-sim world) or real (the lab's FR3).")
        )
        self.declare_parameter(
            "auto_approve",
            False,
            d(description="Let goals asking for it (RunTask.auto_approve) skip the operator; sim only."),
        )
        self.declare_parameter(
            "approval_timeout_s", 120.0, d(description="How long a trial waits for approval (s).")
        )
        self.declare_parameter(
            "max_frame_age_s", 1.0, d(description="Longest camera silence tolerated while a trial runs (s).")
        )
        self.declare_parameter(
            "service_timeout_s", 60.0, d(description="Longest wait for perception or planning (s).")
        )
        self.declare_parameter(
            "sim_world",
            True,
            d(
                description="In sim mode, reset our sim world's scene for each goal and judge the outcome "
                "by its ground truth (false for Isaac Sim, whose scene is built once)."
            ),
        )
        self.mode = str(self.get_parameter("mode").value)
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {self.mode!r}")
        self.auto_approve = bool(self.get_parameter("auto_approve").value)
        self.sim_world = self.mode == "sim" and bool(self.get_parameter("sim_world").value)
        if self.auto_approve and self.mode == "real":
            raise ValueError("auto_approve is refused in real mode: a person approves every real trial")
        self.max_frame_age = float(self.get_parameter("max_frame_age_s").value)
        self.service_timeout = float(self.get_parameter("service_timeout_s").value)
        group = ReentrantCallbackGroup()
        self._last_frame = 0.0
        # Only the frames' arrival matters here: camera_info comes with every frame and is tiny
        # (the image itself is 0.9 MB a frame to take in, for nothing).
        self.create_subscription(
            CameraInfo,
            "/camera/color/camera_info",
            self._on_frame,
            qos_profile("sensor"),
            callback_group=group,
        )
        # (monotonic time, worst gap, message) of the simulator's ERROR reports on /diagnostics.
        self._sim_behind: list[tuple[float, float, str]] = []
        self._moving_since: float | None = None  # when the running trial began moving the arm
        self.create_subscription(
            DiagnosticArray,
            "/diagnostics",
            self._on_diagnostics,
            qos_profile("reliable"),
            callback_group=group,
        )
        self.pub_state = self.create_publisher(String, "/afford/trial_state", qos_profile("latched"))
        self.pub_stop = self.create_publisher(Empty, "/afford/stop", qos_profile("reliable"))
        self.reset_client: Any = self.create_client(ResetScene, "/sim_world/reset", callback_group=group)
        self.evaluate_client: Any = self.create_client(Trigger, "/sim_world/evaluate", callback_group=group)
        self.perceive_client: Any = self.create_client(Perceive, "/perception/perceive", callback_group=group)
        self.plan_client: Any = self.create_client(PlanGrasp, "/planner/plan_grasp", callback_group=group)
        self.skill_client: Any = GoalSafeActionClient(
            self, ExecuteSkill, EXECUTE_SKILL, callback_group=group
        )
        self.policy_client: Any = GoalSafeActionClient(self, RunPolicy, RUN_POLICY, callback_group=group)
        # Only the operator's tool can read this token (a file private to this account); an
        # approval without it is refused, whoever can reach the graph.
        self._token, self.token_file = operator_token.write_token()
        self.create_service(ApproveTrial, "/task_server/approve", self._on_approve, callback_group=group)
        self._approval: Approval | None = None
        self._busy = threading.Lock()
        self._server = ActionServer(
            self,
            RunTask,
            "/run_task",
            execute_callback=self._on_goal,
            goal_callback=self._accept,
            cancel_callback=lambda _g: CancelResponse.ACCEPT,
            callback_group=group,
        )
        self._state("idle")
        self.get_logger().info(
            f"task_server ready ({self.mode} mode, auto_approve {self.auto_approve}); "
            f"operator token in {self.token_file}"
        )

    def destroy_node(self) -> None:
        operator_token.remove_token(self.token_file, self._token)
        super().destroy_node()

    # Inputs -------------------------------------------------------------------------------------

    def _on_frame(self, _msg: CameraInfo) -> None:
        self._last_frame = time.monotonic()

    def _on_diagnostics(self, msg: DiagnosticArray) -> None:
        now = time.monotonic()
        for status in msg.status:
            if status.name == contract.SIM_LOOP_STATUS and status.level == DiagnosticStatus.ERROR:
                values = {kv.key: kv.value for kv in status.values}
                try:
                    gap = float(values.get("worst_gap_s", "0"))
                except ValueError:
                    gap = 0.0
                self._sim_behind = [r for r in self._sim_behind if now - r[0] < 600.0]
                self._sim_behind.append((now, gap, status.message))

    def behind_since(self, t0: float, moving_since: float | None = None) -> str:
        """The worst report (longest stall, then the first) of the simulator falling behind
        (ERROR) that bears on a trial that started at ``t0`` and began moving the arm at
        ``moving_since`` (monotonic; None: it never moved); "" if none.

        A slow stretch before the motion (a scene reset compiling its model, a node restarting)
        does not change what the arm did, so only reports from the motion on count, and before
        it only a stall long enough for the robot's link to notice (libfranka's timeout)."""
        reports = [
            (-gap, t, m)
            for t, gap, m in list(self._sim_behind)
            if (moving_since is not None and t >= moving_since) or (t >= t0 and gap >= LIBFRANKA_TIMEOUT_S)
        ]
        return min(reports)[2] if reports else ""

    def _state(self, text: str) -> None:
        self.pub_state.publish(String(data=text))

    def _accept(self, goal: RunTask.Goal) -> GoalResponse:
        # One trial at a time; everything else about the goal is judged inside the trial so
        # that the caller gets the reason in the result.
        if self._busy.locked():
            self.get_logger().warning("rejecting a goal: a trial is already running")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _on_approve(self, req: ApproveTrial.Request, res: ApproveTrial.Response) -> ApproveTrial.Response:
        if not operator_token.matches(req.token, self._token):
            self.get_logger().warning("refused an approval request without the operator's token")
            res.accepted = False
            res.message = (
                "refused: the request does not carry the operator's token (`afford trial approve|abort` "
                f"reads it from {self.token_file}, which only the task server's account can read)"
            )
            return res
        pending = self._approval
        if pending is None or pending.event.is_set():
            res.accepted, res.message = False, "no trial is waiting for approval"
            return res
        pending.approved, pending.reason = bool(req.approve), req.reason
        pending.event.set()
        res.accepted = True
        res.message = "approved" if req.approve else "aborted"
        return res

    # The trial ----------------------------------------------------------------------------------

    def _call(self, client: Any, request: Any, what: str) -> Any:
        if not client.wait_for_service(timeout_sec=5.0):
            raise TrialAborted(f"{what} is not available ({client.srv_name})")
        servers = service_servers(self, client.srv_name)
        future = client.call_async(request)
        current = client

        def resend() -> Any:
            nonlocal current
            # A fresh client: new DDS endpoints, matched afresh with the server that is there now
            # (CI: a restarted perception never got a request sent again on the old client, whose
            # endpoints had been matched with the dead one). Fast DDS's availability counts
            # matched endpoints: a request sent before the match would be lost.
            current = self._renew_client(current)
            current.wait_for_service(timeout_sec=10.0)
            return current.call_async(request)

        return self._answer(future, client.srv_name, servers, what, self.service_timeout, resend=resend)

    def _renew_client(self, client: Any) -> Any:
        """Replace ``client`` (one of this node's service clients) by a new one on the same service."""
        fresh: Any = self.create_client(
            client.srv_type, client.srv_name, callback_group=client.callback_group)
        for name in ("reset_client", "evaluate_client", "perceive_client", "plan_client"):
            if getattr(self, name) is client:
                setattr(self, name, fresh)
        self.destroy_client(client)
        return fresh

    def _gone(self, service: str, servers: set[bytes], what: str) -> str:
        """Why the node that took a request on ``service`` cannot answer it any more, or ""."""
        if not servers:
            return ""  # not known at the call (the graph cache lagged): cannot tell
        now = service_servers(self, service)
        if servers & now:
            if now - servers:
                # A second instance of the node appeared: the launcher restarted it (the old
                # one's endpoints stay listed until DDS's lease runs out, about 20 s).
                return (
                    f"{what} was restarted while it worked on this trial (a new instance serves "
                    f"{service}); its answer is lost"
                )
            return ""
        return f"{what} went away while it worked on this trial: nothing serves {service} any more"

    def _answer(
        self, future: Any, service: str, servers: set[bytes], what: str, timeout: float,
        resend: Callable[[], Any] | None = None,
    ) -> Any:
        """Wait for ``future``; end early, with the reason, when the server left the graph.

        ``resend`` (for a request that may be sent twice: the trial's services are) sends the
        request again when one of the servers known at the call vanishes while another stays:
        after a node's restart the graph can list the new instance before DDS has matched our
        request to it, so the request reached only the dead one (seen: a restarted perception
        never asked, the trial waiting out its 60 s). Seen on CI too: the new instance unasked
        after that; so, after a restart, a request still unanswered after
        :data:`RESEND_AFTER_RESTART_S` is sent again, up to :data:`RESENDS` times in all.
        """
        done = threading.Event()
        future.add_done_callback(lambda _f: done.set())
        end = time.monotonic() + timeout
        resends, again_at = RESENDS, math.inf
        while not done.wait(0.25):
            if resend is not None and servers and resends > 0:
                now = service_servers(self, service)
                restarted = bool(servers - now and servers & now)
                if restarted or (time.monotonic() > again_at and now):
                    self.get_logger().info(
                        f"{what}: a server of {service} went away; asking again" if restarted
                        else f"{what}: no answer {RESEND_AFTER_RESTART_S:.0f} s after a restart of "
                        f"{service}'s server; asking again"
                    )
                    future.cancel()  # sets the old event: the new future gets its own
                    future, done = resend(), threading.Event()
                    future.add_done_callback(lambda _f, event=done: event.set())
                    servers, resends = now, resends - 1
                    again_at = time.monotonic() + RESEND_AFTER_RESTART_S
                    continue
            gone = self._gone(service, servers, what)
            if gone or time.monotonic() > end:
                future.cancel()
                if gone:
                    raise PeerLost(gone)
                raise TrialAborted(f"{what}: no answer within {timeout:.0f} s")
        return future.result()

    def _feedback(self, goal_handle: Any, stage: str, detail: str = "") -> None:
        goal_handle.publish_feedback(RunTask.Feedback(stage=stage, detail=detail))
        self._state(stage)
        self.get_logger().info(f"[{stage}] {detail}")

    def _approve(self, goal_handle: Any, summary: str) -> None:
        """Wait for the operator, unless this is simulation and approval is automatic."""
        if self.mode == "sim" and self.auto_approve and goal_handle.request.auto_approve:
            self._feedback(goal_handle, "approve", "automatic (simulation)")
            return
        pending = Approval()
        self._approval = pending
        timeout = float(self.get_parameter("approval_timeout_s").value)
        # A goal that asks for automatic approval (`afford task` does unless --operator) waits
        # like any other on the real robot: it is the same command in the lab as in simulation.
        note = " (automatic approval does not apply to the real robot)" if (
            self.mode == "real" and goal_handle.request.auto_approve) else ""
        self._feedback(
            goal_handle, "approve",
            f"waiting for the operator{note}: {summary} (afford trial approve|abort)",
        )
        end = time.monotonic() + timeout
        try:
            while not pending.event.wait(0.1):
                if goal_handle.is_cancel_requested:
                    raise TrialAborted("cancelled while waiting for approval")
                if time.monotonic() > end:
                    raise TrialAborted(f"no approval within {timeout:.0f} s")
        finally:
            self._approval = None
        if not pending.approved:
            raise TrialAborted(
                "the operator aborted the trial" + (f": {pending.reason}" if pending.reason else "")
            )

    def _execute(self, goal_handle: Any, plan_id: str, result: RunTask.Result) -> str:
        """Run the skill; watch the camera and the cancel flag. Returns the failure reason."""
        if not self.skill_client.wait_for_server(timeout_sec=5.0):
            raise TrialAborted("the planner's execute_skill action is not available")

        def on_feedback(msg: Any) -> None:
            self._feedback(goal_handle, f"execute:{msg.feedback.stage}")

        skill, why = self._follow(
            goal_handle, self.skill_client, EXECUTE_SKILL, ExecuteSkill.Goal(plan_id=plan_id),
            "the planner (which runs the skill)", on_feedback, "the planner refused to execute the plan",
            watch_from_feedback=False,
        )
        result.stage_names = list(skill.stage_names)
        result.stage_success = list(skill.stage_success)
        return why or ("" if skill.success else skill.message)

    def _run_policy(self, goal_handle: Any, policy: str, instruction: str) -> str:
        """Run a policy through the policy node; watch as a skill is watched. Returns the
        failure reason."""

        def on_feedback(msg: Any) -> None:
            f = msg.feedback
            self._feedback(goal_handle, "execute:policy", f"step {f.step}, {f.elapsed_s:.0f} s: {f.detail}")

        goal = RunPolicy.Goal(policy=policy, instruction=instruction, seed=goal_handle.request.seed)
        # The policy node sends its first feedback (step 0) once the policy is loaded and
        # before its first action; the camera is watched from then on.
        out, why = self._follow(
            goal_handle, self.policy_client, RUN_POLICY, goal, "the policy node", on_feedback,
            "the policy node refused the run (is another one running?)", watch_from_feedback=True,
        )
        return why or ("" if out.success else out.message)

    def _follow(
        self, goal_handle: Any, client: Any, action: str, goal: Any, what: str,
        on_feedback: Callable[[Any], None], refused: str, watch_from_feedback: bool,
    ) -> tuple[Any, str]:
        """Send ``goal`` to the action that moves the arm and wait for its result, watching the
        camera, the cancel flag and the server. Returns (the result, why the arm was stopped or
        ""); raises when no result will come. ``watch_from_feedback``: the server moves nothing
        before its first feedback (the policy node's step 0), so the camera's silence is judged
        from then on (a silence before it counts from it)."""
        # One watch covers the wait for the goal's answer and the wait for its result: the
        # server can take the goal, start the arm and die before its answer reaches us (seen
        # with the sim at a sixth of real time), and the camera must be watched all along.
        armed: list[float] = [] if watch_from_feedback else [0.0]

        def feedback(msg: Any) -> None:
            if not armed:
                armed.append(time.monotonic())
            on_feedback(msg)

        goal_future = client.send_goal_async(goal, feedback_callback=feedback)
        watched = [f"{action}/_action/{s}" for s in ("send_goal", "get_result")]
        servers = {service: service_servers(self, service) for service in watched}
        handle: Any = None
        future: Any = None
        why, stopped, gone = "", False, ""
        camera = SilenceWatch(self.max_frame_age)
        sent = checked = time.monotonic()
        unanswered_at = 0.0  # when the goal's answer was given up (the arm stopped), or 0
        while future is None or not future.done():
            time.sleep(0.02)
            now = time.monotonic()
            if handle is None and goal_future.done():
                handle = goal_future.result()
                if not handle.accepted:
                    raise TrialAborted(refused)
                future = handle.get_result_async()
                if stopped:
                    handle.cancel_goal_async()
                continue
            if now - checked > 0.25:
                checked = now
                gone = next((g for s in watched if (g := self._gone(s, servers[s], what))), "")
                if gone:
                    # Nobody will answer: stop the arm here and end, without the result.
                    why = why if why and not unanswered_at else f"{gone}; arm stopped"
            silent = camera.silent(now, max(self._last_frame, armed[0])) if armed else None
            if not why and silent is not None:
                why = (
                    f"camera stream lost: no image for {silent:.1f} s "
                    f"(limit {self.max_frame_age:.1f} s); arm stopped"
                )
            if not why and goal_handle.is_cancel_requested:
                why = "cancelled by the client; arm stopped"
            if not why and handle is None and now - sent > GOAL_ANSWER_S:
                # The arm may be moving under a goal we cannot see: stop it; then wait a
                # while longer to learn whether the server died (DDS notices within its lease).
                why = f"{what} did not answer the goal within {GOAL_ANSWER_S:.0f} s; arm stopped"
                unanswered_at = now
            if why and not stopped:
                stopped = True
                self.pub_stop.publish(Empty())
                if handle is not None:
                    handle.cancel_goal_async()
            if gone or (unanswered_at and now - unanswered_at > PEER_LEASE_S):
                break
        if gone:
            raise PeerLost(why)
        if future is None or not future.done():
            goal_future.cancel()
            raise TrialAborted(why)
        return future.result().result, why

    def _on_goal(self, goal_handle: Any) -> RunTask.Result:
        with self._busy:
            result = RunTask.Result(success=False, selected_index=-1)
            started = time.monotonic()
            self._moving_since = None
            cause_known = False
            try:
                self._trial(goal_handle, result)
            except TrialAborted as err:
                result.abstain_reason = str(err)
                cause_known = isinstance(err, PeerLost)
            except Exception as err:  # noqa: BLE001 - a node must answer every goal
                self.get_logger().error(f"trial failed: {err!r}")
                result.abstain_reason = f"internal error: {err}"
                if self._moving_since is not None:
                    # The skill may still drive the arm: nobody is left to watch it.
                    self.pub_stop.publish(Empty())
                    result.abstain_reason += "; arm stopped"
            if not result.success and self.mode == "sim" and result.task_id and not cause_known:
                # A report covers the second before it: wait for the one about the failure.
                time.sleep(1.1)
                behind = self.behind_since(started, self._moving_since)
                if behind:
                    result.abstain_reason = f"{behind}; {result.abstain_reason}"
            if result.success:
                self._state("done")
                goal_handle.succeed()
            else:
                self._state(f"aborted: {result.abstain_reason}")
                self.get_logger().warning(f"trial ended without success: {result.abstain_reason}")
                if goal_handle.is_cancel_requested:
                    goal_handle.canceled()
                else:
                    goal_handle.abort()
            return result

    def _trial(self, goal_handle: Any, result: RunTask.Result) -> None:
        goal = goal_handle.request
        sentence, task_id = resolve_task(goal.sentence, goal.task_id, need_task=self.sim_world)
        result.task_id = task_id
        if self.sim_world:
            if not self.reset_client.wait_for_service(timeout_sec=30.0):
                raise TrialAborted("no /sim_world/reset: is the sim world running?")
            self._feedback(goal_handle, "reset", f"scene of {task_id}, seed {goal.seed}")
            reset = self._call(
                self.reset_client, ResetScene.Request(task_id=task_id, seed=goal.seed), "scene reset"
            )
            if not reset.success:
                raise TrialAborted(f"scene reset: {reset.message}")
            # Frames rendered before the reset show the old scene; perception only takes frames
            # younger than max_frame_age_s, so waiting that long leaves only new ones.
            time.sleep(self.max_frame_age + 0.1)
        if goal.policy.strip():
            self._policy_trial(goal_handle, result, sentence)
            return
        self._feedback(goal_handle, "perceive", sentence)
        seen = self._call(
            self.perceive_client,
            Perceive.Request(sentence=sentence, grounding=goal.grounding, seed=goal.seed),
            "perception",
        )
        result.stage_names, result.stage_success = ["perceive"], [bool(seen.success)]
        if not seen.success:
            raise TrialAborted(seen.reason)
        # A push touches without holding: the operator is told of a push contact, not a grasp.
        pushes = seen.intent.next_action == "push"
        self._feedback(
            goal_handle,
            "plan",
            f"{seen.intent.target}: push at its {seen.intent.grasp_region}" if pushes else
            f"{seen.intent.target}: grasp {seen.intent.grasp_region}, then {seen.intent.next_action}",
        )
        req = PlanGrasp.Request(
            intent=seen.intent,
            target_cloud=seen.target_cloud,
            region_names=seen.region_names,
            destination_cloud=seen.destination_cloud,
            destination_region_names=seen.destination_region_names,
            obstacles=seen.obstacles,
            seed=goal.seed,
        )
        plan = self._call(self.plan_client, req, "planning")
        result.stage_names.append("plan")
        result.stage_success.append(bool(plan.success))
        if not plan.success:
            raise TrialAborted(plan.reason)
        result.selected_index = int(plan.selected_index)
        n = len(plan.candidates.candidates)
        kind = "push contact" if pushes else "grasp"
        summary = f"{kind} #{plan.selected_index} of {n} on the {seen.intent.grasp_region}"
        self._approve_and_start(goal_handle, summary)
        head_names, head_ok = list(result.stage_names), list(result.stage_success)
        why = self._execute(goal_handle, plan.plan_id, result)
        result.stage_names = head_names + list(result.stage_names)
        result.stage_success = head_ok + list(result.stage_success)
        if why:
            raise TrialAborted(why)
        self._evaluate(goal_handle, result)

    def _policy_trial(self, goal_handle: Any, result: RunTask.Result, sentence: str) -> None:
        """A trial whose motion comes from a visuomotor policy: no perception or planning; the
        operator approves the policy's run, the policy node runs it through the executor's
        checks, the simulator judges it."""
        name = goal_handle.request.policy.strip()
        # Before the operator is asked: a run that cannot start is not put to them.
        if not self.policy_client.wait_for_server(timeout_sec=5.0):
            raise TrialAborted(
                f"no policy node serves {RUN_POLICY}: run the graph with one (afford bringup fr3_sim_policy)"
            )
        self._feedback(goal_handle, "plan", f"policy {name}")
        summary = f"policy {name} in closed loop (each action through the executor's limit checks)"
        self._approve_and_start(goal_handle, summary)
        why = self._run_policy(goal_handle, name, sentence)
        result.stage_names, result.stage_success = ["policy"], [not why]
        if why:
            raise TrialAborted(why)
        self._evaluate(goal_handle, result)

    def _approve_and_start(self, goal_handle: Any, summary: str) -> None:
        """The operator's approval of ``summary``; then the trial may move the arm from now."""
        self._approve(goal_handle, summary)
        if goal_handle.is_cancel_requested:
            raise TrialAborted("cancelled")
        self._feedback(goal_handle, "execute", summary)
        self._moving_since = time.monotonic()

    def _evaluate(self, goal_handle: Any, result: RunTask.Result) -> None:
        """In simulation, judge the outcome by the simulator's state; then the trial succeeded."""
        if self.sim_world:
            self._feedback(goal_handle, "evaluate", "simulator ground truth")
            check = self._call(self.evaluate_client, Trigger.Request(), "evaluation")
            result.stage_names.append("evaluate")
            result.stage_success.append(bool(check.success))
            if not check.success:
                raise TrialAborted(f"the task was not achieved: {check.message}")
        result.success = True


def resolve_task(sentence: str, task_id: str, need_task: bool) -> tuple[str, str]:
    """The goal's sentence and task id, each filled in from the other.

    The sentence is parsed and its task found (:func:`afford_sim.tasks.find_task`); a given task
    id must be the one the sentence asks for. Without a sentence the task's own instruction is
    used. A composite task (several tasks in turn) is refused: a trial runs one, and the
    operator sends the steps as goals in turn. In simulation the task must exist (its scene is
    built); on the real robot a sentence
    that no registered task covers still runs (the skill follows from the sentence), with an
    empty task id.

    Raises:
        TrialAborted: an empty goal, an unknown id, a sentence that cannot be parsed, or a
            sentence and an id that disagree.
    """
    sentence, task_id = sentence.strip(), task_id.strip()
    if not sentence and not task_id:
        raise TrialAborted("empty goal: give a task sentence or a task id")
    if task_id and task_id not in TASKS:
        raise TrialAborted(f"unknown task id {task_id!r}; `afford tasks` lists them")
    composite = TASKS.get(task_id) if task_id else None
    if composite is not None and issubclass(composite, CompositeTask):
        raise TrialAborted(_one_step_at_a_time(composite.steps))
    if not sentence:
        return get_task(task_id).instruction, task_id
    try:
        intents = parse_steps(sentence)
        if len(intents) > 1:
            raise TrialAborted(_one_step_at_a_time(tuple(find_task(i) for i in intents)))
        found = find_task(intents[0])
    except TrialAborted:
        raise
    except ValueError as err:  # TaskParseError is one
        if need_task or task_id:
            raise TrialAborted(str(err)) from None
        return sentence, ""  # the real robot: perception reports what it cannot parse
    if task_id and found != task_id:
        raise TrialAborted(f"the sentence {sentence!r} asks for task {found}, not {task_id}")
    return sentence, found


def _one_step_at_a_time(steps: tuple[str, ...]) -> str:
    return (f"a trial on the graph runs one task; this asks for {len(steps)} in turn "
            f"({' then '.join(steps)}): send them as goals one after the other (`afford run` runs "
            "the whole sequence in the batch world)")


def main(argv: list[str] | None = None) -> int:
    return run_node(TaskServerNode, argv, threads=4)


if __name__ == "__main__":
    sys.exit(main())
