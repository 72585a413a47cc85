"""franky-sim with a robot that can be made to raise a reflex, for fault injection.

franky-sim simulates no robot errors: its SetCollisionBehavior handler only acknowledges
("Collision behavior is not simulated"), its automatic error recovery always succeeds, and a
joint target beyond the limits is silently clamped with the motion reported as successful. So
no reflex can be provoked through the stock server, and the graph's handling of one (the
executor stops, reports it, refuses motion until the operator's recovery) would go untested.

:class:`ReflexRobotServer` is franky-sim's robot server plus one thing: after
:meth:`~ReflexRobotServer.request_reflex`, the running motion (or the next one) is aborted with
libfranka's ``kReflexAborted`` Move status, the robot state reports reflex mode with
``cartesian_reflex`` set, new motions are refused while in reflex, and libfranka's automatic
error recovery command clears it, as on the FR3. Everything from the wire up (libfranka raising
its ControlException, franky, the executor, ROS) is the real code path.
:class:`FaultSimulationServer` serves such robots; the sim world (``FrankyWorld``) and the
executor node's test both run it.
"""

from __future__ import annotations

import threading
from typing import Any

from franky_sim import SimulationServer
from franky_sim.franka_robot_protocol import (
    AutomaticErrorRecoveryCommand,
    AutomaticErrorRecoveryStatus,
    BaseCommand,
    MoveStatus,
    RobotCommand,
    RobotMode,
)
from franky_sim.franka_robot_server import FrankaRobotServer

#: Index of ``cartesian_reflex`` in libfranka's error array (franka/errors.h order).
CARTESIAN_REFLEX = 7
#: Length of libfranka's error array.
N_ERRORS = 41


class _Recovery(AutomaticErrorRecoveryCommand):
    """libfranka's automatic error recovery: clears the reflex (the stock one only answers)."""

    def handle(self, server: Any) -> None:
        server.clear_reflex()
        self.reply(AutomaticErrorRecoveryStatus.kSuccess)


class ReflexRobotServer(FrankaRobotServer):
    """franky-sim's robot server that raises a reflex on request; see the module doc."""

    def __init__(self, robot: Any, hostname_candidates: Any) -> None:
        super().__init__(robot, hostname_candidates)
        # Reentrant: the executor test requests a reflex from a signal handler, which can run on
        # the loop thread while it holds the lock in process_commands.
        self._reflex_lock = threading.RLock()
        self.reflex_requested = False
        self.in_reflex = False
        # franky-sim keeps its command table private; route recovery to the handler above.
        self._FrankaServer__command_class_map[RobotCommand.kAutomaticErrorRecovery] = _Recovery  # type: ignore[attr-defined]

    def request_reflex(self) -> None:
        """Abort the running motion with a reflex at the next step (or the next motion's)."""
        with self._reflex_lock:
            self.reflex_requested = True

    def clear_reflex(self) -> None:
        with self._reflex_lock:
            self.in_reflex = False
            self.reflex_requested = False

    def process_commands(self) -> None:
        super().process_commands()
        with self._reflex_lock:
            fire = self.reflex_requested and bool(self.current_motion_id)
            if fire:
                self.reflex_requested = False
                self.in_reflex = True
        if fire:
            motion_id = self.current_motion_id
            self.stop_motion(send_preemption_signal=False)
            BaseCommand.send_response(
                self._tcp_socket, RobotCommand.kMove, motion_id, MoveStatus.kReflexAborted
            )
            self.reset_current_motion_id()

    def start_motion(self, *args: Any) -> None:
        if self.in_reflex:
            raise RuntimeError("motion refused: robot in reflex mode")  # answered as kAborted
        super().start_motion(*args)

    @property
    def robot_state(self) -> Any:
        state = super().robot_state
        if self.in_reflex:
            errors = tuple(i == CARTESIAN_REFLEX for i in range(N_ERRORS))
            state = state.replace(robot_mode=RobotMode.kReflex, errors=errors, reflex_reason=errors)
        return state


class FaultSimulationServer(SimulationServer):
    """franky-sim's simulation server with :class:`ReflexRobotServer` robots."""

    def init(self) -> None:
        for robot in self.sim.robots:
            rs = ReflexRobotServer(robot, self._remaining_hostname_candidates)
            rs.init()
            self.robot_servers.append(rs)
        self.sim.start()

    def request_reflex(self) -> None:
        for rs in self.robot_servers:
            rs.request_reflex()
