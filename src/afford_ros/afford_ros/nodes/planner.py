"""planner: grounded clouds in, ranked grasp candidates, a chosen grasp and motions out.

``/planner/plan_grasp`` runs AffordSim's Stage 1 in the grounded region, fills the AFFORD-X
terms, gates, ranks and plans the best candidates (the same :class:`~afford_pipeline.episode.
Episode` code the batch spine runs), publishes the candidate set with its scores, markers for
viewers and the chosen grasp, and keeps the plan. ``/planner/execute_skill`` then runs the
skill's stages for that plan through the executor node, one feedback message per stage. A
plan is refused once the arm has moved away from where it was planned from: the arm never
moves on a plan made for another state.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

import numpy as np
from geometry_msgs.msg import Point, PoseStamped, Vector3
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import ColorRGBA, Header
from visualization_msgs.msg import Marker, MarkerArray

from afford_core.grasp import GraspCandidate
from afford_core.robots import DEFAULT_ROBOT, get_robot
from afford_core.types import Intent, NextAction, ObjectCloud
from afford_interfaces.action import ExecuteSkill
from afford_interfaces.msg import CandidateSet
from afford_interfaces.msg import GraspCandidate as CandidateMsg
from afford_interfaces.srv import PlanGrasp
from afford_pipeline.episode import Episode, TableBox
from afford_planner.selection import SelectionConfig, candidate_set_hash
from afford_planner.skills import SkillError, stage_iter
from afford_ros import contract
from afford_ros.nodes.clouds import from_cloud
from afford_ros.nodes.convert import pose_to_msg, trajectory_msg
from afford_ros.nodes.robot_link import GraphRobot
from afford_ros.nodes.spin import run_node
from afford_ros.params import declare_config, read_config
from afford_ros.qos import qos_profile

#: The arm may drift this far (rad, any joint) between planning and execution.
PLAN_START_TOLERANCE = 0.02


def intent_from_msg(msg: Any) -> Intent:
    return Intent(
        target=msg.target,
        grasp_region=msg.grasp_region,
        keep_clear=tuple(msg.keep_clear),
        next_action=NextAction(msg.next_action),
        destination=msg.destination or None,
        destination_region=msg.destination_region or None,
        use_region=msg.use_region or None,
        text=msg.text,
    )


def candidate_msg(c: GraspCandidate, eligible: bool) -> CandidateMsg:
    names = sorted(c.terms)
    return CandidateMsg(
        pose=pose_to_msg(c.pose_matrix()),
        width=float(c.width),
        source=c.source,
        term_names=names,
        term_values=[float(c.terms[n]) for n in names],
        score=float(c.score),
        index=int(c.index),
        eligible=eligible,
    )


def markers(cands: list[GraspCandidate], chosen: int, header: Header) -> MarkerArray:
    """An arrow along each candidate's approach, ending at the TCP, coloured by score (red low,
    green high); the chosen one thicker and blue."""
    out = MarkerArray(markers=[Marker(header=header, ns="candidates", action=Marker.DELETEALL)])
    top = max((c.score for c in cands), default=0.0) or 1.0
    for c in cands:
        tip = c.position
        tail = tip - c.approach * 0.08
        s = float(np.clip(c.score / top, 0.0, 1.0))
        m = Marker(header=header, ns="candidates", id=int(c.index), type=Marker.ARROW, action=Marker.ADD)
        m.points = [
            Point(x=float(tail[0]), y=float(tail[1]), z=float(tail[2])),
            Point(x=float(tip[0]), y=float(tip[1]), z=float(tip[2])),
        ]
        big = c.index == chosen
        m.scale = Vector3(x=0.006 if big else 0.003, y=0.012 if big else 0.006, z=0.0)
        m.color = ColorRGBA(r=0.1, g=0.3, b=1.0, a=1.0) if big else ColorRGBA(r=1.0 - s, g=s, b=0.0, a=0.8)
        out.markers.append(m)
    return out


@dataclass
class StoredPlan:
    """A chosen grasp with its episode, waiting for ExecuteSkill."""

    episode: Episode
    grasp: GraspCandidate
    start_q: np.ndarray
    created: float


def _regions(points: np.ndarray, fields: dict[str, np.ndarray], names: list[str]) -> dict[str, np.ndarray]:
    missing = [n for n in names if n not in fields]
    if missing:
        raise ValueError(f"cloud lacks region fields {missing}")
    return {n: points[fields[n] >= 0.5] for n in names}


_NODE_SETS = ("level",)


class PlannerNode(Node):
    def __init__(self) -> None:
        super().__init__("planner")
        d = ParameterDescriptor
        self.declare_parameter(
            "robot",
            DEFAULT_ROBOT,
            d(description="The arm planned for (afford robots): its kinematics, gripper and joints; "
              "the executor's robot."),
        )
        self.declare_parameter(
            "plan_top_k", 6, d(description="Eligible candidates the motion planner tries.")
        )
        # The ranking rule: SelectionConfig's fields as selection.* (the level is the node's: L3
        # to choose what to plan, L4 to pick among the plans).
        declare_config(self, SelectionConfig, "selection", exclude=_NODE_SETS)
        self.declare_parameter(
            "table_size", [1.0, 1.2, 0.04], d(description="Table box size x, y, thickness (m).")
        )
        self.declare_parameter(
            "table_center",
            [0.5, 0.0, -0.02],
            d(description="Table box centre in fr3_link0 (m); the top is at z + thickness/2."),
        )
        self.declare_parameter(
            "max_state_age_s", 0.5, d(description="Oldest /joint_states a plan may start from (s).")
        )
        self.declare_parameter(
            "max_plans", 8, d(description="Plans kept for execute_skill; older ones are dropped.")
        )
        self.declare_parameter(
            "look_after_lift",
            True,
            d(description="Ask perception to observe the held object after the lift."),
        )
        size = [float(v) for v in self.get_parameter("table_size").value]
        center = [float(v) for v in self.get_parameter("table_center").value]
        pose = np.eye(4)
        pose[:3, 3] = center
        self.table = TableBox((size[0], size[1], size[2]), pose)
        self.selection = read_config(self, SelectionConfig, "selection", exclude=_NODE_SETS)
        self.top_k = int(self.get_parameter("plan_top_k").value)
        group = ReentrantCallbackGroup()
        self.description = get_robot(str(self.get_parameter("robot").value))
        self.robot = GraphRobot(
            self, max_state_age=float(self.get_parameter("max_state_age_s").value), robot=self.description
        )
        self.plans: dict[str, StoredPlan] = {}
        self._plans_lock = threading.Lock()
        latched = qos_profile("latched")
        self.pub_candidates = self.create_publisher(CandidateSet, "/afford/candidates", latched)
        self.pub_markers = self.create_publisher(MarkerArray, "/afford/candidate_markers", latched)
        self.pub_chosen = self.create_publisher(PoseStamped, "/afford/chosen_grasp", latched)
        self.create_service(PlanGrasp, "/planner/plan_grasp", self._on_plan, callback_group=group)
        self._perceive: Any = None
        if bool(self.get_parameter("look_after_lift").value):
            from afford_interfaces.srv import Perceive

            self._perceive = self.create_client(Perceive, "/perception/perceive", callback_group=group)
        self._server = ActionServer(
            self,
            ExecuteSkill,
            "/planner/execute_skill",
            execute_callback=self._on_execute,
            goal_callback=lambda _g: GoalResponse.ACCEPT,
            cancel_callback=self._on_cancel,
            callback_group=group,
        )
        self._running: GraphRobot | None = None
        self.get_logger().info("planner ready")

    # Planning -----------------------------------------------------------------------------------

    def _look(self, sentence: str, grounding: str) -> Any:
        """The held object seen again after the lift, through perception; None when unseen."""
        from afford_interfaces.srv import Perceive
        from afford_ros.nodes.robot_link import wait_future

        if self._perceive is None or not self._perceive.wait_for_service(timeout_sec=1.0):
            return None

        def look() -> tuple[ObjectCloud, dict[str, np.ndarray]] | None:
            try:
                res = wait_future(
                    self._perceive.call_async(Perceive.Request(sentence=sentence, grounding=grounding)),
                    10.0,
                    "look",
                )
            except SkillError:
                return None
            if not res.success:
                return None
            pts, fields = from_cloud(res.target_cloud)
            if len(pts) == 0:
                return None
            cloud = ObjectCloud(pts, res.intent.target)
            return cloud, _regions(pts, fields, list(res.region_names))

        return look

    def plan(self, req: PlanGrasp.Request) -> tuple[StoredPlan, CandidateSet, PoseStamped]:
        """Run Stage 1, ranking and Stage 2; raises ValueError with the reason to abstain."""
        intent = intent_from_msg(req.intent)
        base = contract.base_frame(self.description)
        for what, cloud in (
            ("target", req.target_cloud),
            ("destination", req.destination_cloud),
            ("obstacle", req.obstacles),
        ):
            # Points in any other frame would put grasps (and collisions) where nothing is.
            if cloud.width * cloud.height and cloud.header.frame_id != base:
                raise ValueError(
                    f"the {what} cloud is in frame {cloud.header.frame_id!r}; the planner takes clouds "
                    f"in the robot base frame {base!r}"
                )
        pts, fields = from_cloud(req.target_cloud)
        if len(pts) < 20:
            raise ValueError(f"the {intent.target} cloud has {len(pts)} points; too few to plan on")
        if not np.all(np.isfinite(pts)):
            raise ValueError("the target cloud contains NaN or infinite points")
        parts = _regions(pts, fields, list(req.region_names))
        dest_region = dest_support = None
        dpts, dfields = from_cloud(req.destination_cloud)
        if intent.destination:
            if len(dpts) == 0:
                raise ValueError(f"no cloud of the destination {intent.destination}")
            dparts = _regions(dpts, dfields, list(req.destination_region_names))
            dest_region = dparts.get(intent.destination_region or "", np.empty((0, 3)))
            others = [v for k, v in dparts.items() if k != intent.destination_region and len(v)]
            dest_support = np.vstack(others) if others else None
        obstacles, _ = from_cloud(req.obstacles)
        if not (np.all(np.isfinite(dpts)) and np.all(np.isfinite(obstacles))):
            raise ValueError("the destination or obstacle cloud contains NaN or infinite points")
        start_q = self.robot.wait_for_state(2.0)
        ep = Episode(
            intent,
            None,
            None,
            None,
            seed=int(req.seed),
            table=self.table,
            arm_q=self.robot.arm_q,
            robot=self.description,
        )
        ep.observe(
            ObjectCloud(pts, intent.target, object_center=None), parts, obstacles, dest_region, dest_support
        )
        if len(ep.region) < 5:
            raise ValueError(f"grounding found no {intent.target} {intent.grasp_region} in the view")
        unseen = ep.unseen_reason()
        if unseen:
            raise ValueError(unseen)
        cands = ep.propose()
        choice = ep.choose(None, self.selection, self.top_k)
        digest = candidate_set_hash(cands, {"task": intent.text, "seed": int(req.seed)})
        header = Header(stamp=self.get_clock().now().to_msg(), frame_id=contract.base_frame(self.description))
        eligible = {c.index for c in cands if c.terms.get("eligible", 0) > 0}
        candidate_set = CandidateSet(
            header=header,
            content_hash=digest,
            candidates=[candidate_msg(c, c.index in eligible) for c in cands],
        )
        self.pub_candidates.publish(candidate_set)
        chosen = choice.grasp.index if choice.grasp is not None else -1
        self.pub_markers.publish(markers(cands, chosen, header))
        if choice.grasp is None:
            raise ValueError(choice.reason)
        grasp = PoseStamped(header=header, pose=pose_to_msg(choice.grasp.pose_matrix()))
        self.pub_chosen.publish(grasp)
        return StoredPlan(ep, choice.grasp, start_q, time.monotonic()), candidate_set, grasp

    def _on_plan(self, req: PlanGrasp.Request, res: PlanGrasp.Response) -> PlanGrasp.Response:
        t0 = time.perf_counter()
        try:
            stored, candidate_set, grasp = self.plan(req)
        except (ValueError, SkillError) as err:
            res.success, res.reason, res.selected_index = False, str(err), -1
            self.get_logger().warning(f"plan_grasp: abstain: {err}")
            return res
        except Exception as err:  # noqa: BLE001 - a node answers every request, and stays up
            self.get_logger().error(f"plan_grasp failed: {err!r}")
            res.success, res.selected_index = False, -1
            res.reason = f"planning failed: {type(err).__name__}: {err}"
            return res
        stored.episode.look = self._look(req.intent.text, "")
        res.success = True
        res.candidates = candidate_set
        res.selected_index = int(stored.grasp.index)
        res.grasp = grasp
        free, _line = stored.episode.plans[stored.grasp.index]
        times, qs = stored.episode.planner.time_parameterize(
            free.waypoints, stored.episode.skill_config.vel_scale
        )
        res.trajectory = trajectory_msg(
            np.asarray(times), np.asarray(qs), grasp.header.stamp, self.description
        )
        plan_id = uuid.uuid4().hex[:12]
        with self._plans_lock:
            self.plans[plan_id] = stored
            while len(self.plans) > int(self.get_parameter("max_plans").value):
                del self.plans[min(self.plans, key=lambda k: self.plans[k].created)]
        res.plan_id = plan_id
        self.get_logger().info(
            f"plan_grasp: {len(candidate_set.candidates)} candidates, chose #{stored.grasp.index} "
            f"(score {stored.grasp.score:.3f}) "
            f"in {(time.perf_counter() - t0) * 1e3:.0f} ms; plan {plan_id}"
        )
        return res

    # Execution ----------------------------------------------------------------------------------

    def _on_cancel(self, _goal: Any) -> CancelResponse:
        robot = self._running
        if robot is not None:
            robot.cancel()
        return CancelResponse.ACCEPT

    def _on_execute(self, goal_handle: Any) -> ExecuteSkill.Result:
        plan_id = goal_handle.request.plan_id
        result = ExecuteSkill.Result()
        with self._plans_lock:
            stored = self.plans.pop(plan_id, None)
        if stored is None:
            result.message = f"unknown or already executed plan {plan_id!r}"
            goal_handle.abort()
            return result
        try:
            q = self.robot.arm_q()
        except SkillError as err:
            result.message = str(err)
            goal_handle.abort()
            return result
        drift = float(np.max(np.abs(q - stored.start_q)))
        if drift > PLAN_START_TOLERANCE:
            result.message = f"the arm moved {drift:.3f} rad since planning; plan again"
            goal_handle.abort()
            return result
        robot = self.robot
        if self._running is not None:
            result.message = "another skill is running"
            goal_handle.abort()
            return result
        try:
            stages = stored.episode.stages(stored.grasp, robot)
        except ValueError as err:  # the skill cannot be built from what was perceived
            result.message = str(err)
            goal_handle.abort()
            return result
        robot.cancelled = False
        self._running = robot
        ok = True
        try:
            for name, _ in stages:
                result.stage_names.append(name)
            outcomes: dict[str, bool] = {}
            for report in _announced(stage_iter(stages), stages, goal_handle):
                outcomes[report.name] = report.executed
                if not report.executed:
                    result.message = f"{report.name}: {report.reason}"
                    ok = False
                    break
            result.stage_success = [outcomes.get(n, False) for n in result.stage_names]
        finally:
            self._running = None
        result.success = ok and all(result.stage_success)
        if goal_handle.is_cancel_requested:
            goal_handle.canceled()
        elif result.success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        return result


def _announced(reports: Any, stages: list[Any], goal_handle: Any) -> Any:
    """Yield stage reports, sending each stage's name as feedback before it runs."""
    names = [n for n, _ in stages]
    goal_handle.publish_feedback(ExecuteSkill.Feedback(stage=names[0]))
    for i, report in enumerate(reports):
        yield report
        if report.executed and i + 1 < len(names):
            goal_handle.publish_feedback(ExecuteSkill.Feedback(stage=names[i + 1]))


def main(argv: list[str] | None = None) -> int:
    return run_node(PlannerNode, argv, threads=4)


if __name__ == "__main__":
    sys.exit(main())
