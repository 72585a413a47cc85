"""Joint position commands streamed on a topic; the state comes from the world's /joint_states.

For Isaac Sim, which has no libfranka server: each checked trajectory's (or streamed chunk's)
points are published, at their times, as ``sensor_msgs/JointState`` commands on the node's
``joint_command_topic``, which Isaac Sim's articulation controller follows. A stop holds the
last measured position. The same safety checks apply as with franky.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from sensor_msgs.msg import JointState
from std_msgs.msg import Header

from afford_core.robots import RobotDescription
from afford_ros import contract
from afford_ros.drivers.base import Driver, MotionOutcome, StaleState
from afford_ros.qos import qos_profile

_POLL_PERIOD = 0.01  # s between checks of a running motion (stop, cancel, progress)


class TopicDriver(Driver):
    """Joint commands on a topic (see the module docstring)."""

    def __init__(self, node: Any, robot: RobotDescription, params: dict[str, Any], state_group: Any) -> None:
        super().__init__(node, robot, params, state_group)
        self._arm = contract.arm_joints(robot)
        self._width_joint = contract.finger_width_joint(robot)
        self._frame = contract.base_frame(robot)
        topic = str(params["joint_command_topic"])
        self._pub = node.create_publisher(JointState, topic, qos_profile("reliable"))
        self._state_timeout = float(params["state_timeout_s"])
        self._lock = threading.Lock()
        self._q: np.ndarray | None = None
        self._width = float("nan")
        self._stamp = 0.0
        self._stop = threading.Event()
        # Checked and sent under this lock, which stop() holds while it commands the hold, so no
        # trajectory point can follow the hold command.
        self._send_lock = threading.Lock()
        self._generation = 0
        node.create_subscription(
            JointState,
            "/joint_states",
            self._on_state,
            qos_profile(contract.topic("/joint_states").qos),
            callback_group=state_group,
        )

    def _on_state(self, msg: JointState) -> None:
        index = {n: i for i, n in enumerate(msg.name)}
        if not all(j in index for j in self._arm):
            return
        with self._lock:
            self._q = np.array([msg.position[index[j]] for j in self._arm])
            if self._width_joint in index:
                self._width = float(msg.position[index[self._width_joint]])
            self._stamp = time.monotonic()

    def fresh_q(self, max_age: float = 0.5, wait: float = 0.0) -> np.ndarray:
        """The last measured arm joints, no older than ``max_age`` seconds; waits up to ``wait``
        seconds for such a reading (a loaded world publishes in bursts), then raises
        :class:`StaleState`."""
        deadline = time.monotonic() + wait
        while True:
            with self._lock:
                q, stamp = self._q, self._stamp
            age = time.monotonic() - stamp
            if q is not None and age <= max_age:
                return q.copy()
            if time.monotonic() >= deadline:
                seen = "none yet" if q is None else f"the last is {age:.2f} s old"
                raise StaleState(f"no fresh /joint_states from the world within {wait:.1f} s ({seen})")
            time.sleep(0.01)

    def current_q(self) -> np.ndarray:
        return self.fresh_q(wait=self._state_timeout)

    def width(self) -> float:
        with self._lock:
            return self._width

    def command(self, names: tuple[str, ...], values: np.ndarray) -> None:
        msg = JointState(header=Header(stamp=self.node.get_clock().now().to_msg(), frame_id=self._frame))
        msg.name = list(names)
        msg.position = [float(v) for v in values]
        self._pub.publish(msg)

    def _send(
        self, times: np.ndarray, positions: np.ndarray, generation: int, progress: Callable[[float], None]
    ) -> str:
        """Publish each point at its time; "" when done, "stopped" when stopped or replaced."""
        t0 = time.monotonic()
        duration = float(times[-1]) if times[-1] > 0 else 1e-9
        for t, q in zip(times, positions, strict=True):
            while (wait := t0 + float(t) - time.monotonic()) > 0:
                if self._stop.wait(min(wait, _POLL_PERIOD)) or generation != self._generation:
                    break
                progress(min(1.0, (time.monotonic() - t0) / duration))
            with self._send_lock:
                if self._stop.is_set() or generation != self._generation:
                    return "stopped"
                self.command(self._arm, q)
        return ""

    def follow(
        self,
        times: np.ndarray,
        positions: np.ndarray,
        velocities: np.ndarray | None,
        should_stop: Callable[[], bool],
        progress: Callable[[float], None],
    ) -> MotionOutcome:
        self._stop.clear()
        with self._send_lock:
            self._generation += 1
            generation = self._generation
        done = threading.Event()

        def watch() -> None:
            while not done.wait(_POLL_PERIOD):
                if should_stop():
                    self.stop()
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            outcome = self._send(times, positions, generation, progress)
        finally:
            done.set()
            watcher.join()
        return (outcome, "motion halted by a stop or cancel") if outcome else ("", "")

    def stream(self, times: np.ndarray, positions: np.ndarray) -> None:
        self._stop.clear()
        with self._send_lock:
            self._generation += 1  # the chunk still being sent, if any, ends at its next point
            generation = self._generation
        threading.Thread(
            target=self._send, args=(times, positions, generation, lambda _p: None), daemon=True
        ).start()

    def stop(self) -> None:
        """End the stream and command the arm to stay where the world last reported it (once:
        a stop already in force commands nothing more)."""
        with self._send_lock:
            if self._stop.is_set():
                return
            self._stop.set()
            self._generation += 1
            try:
                self.command(self._arm, self.fresh_q(max_age=5.0))
            except RuntimeError:
                pass

    def gripper(self, command: str, width: float, force: float) -> tuple[bool, float, str]:
        gripper = self.robot.gripper
        self.command(gripper.finger_joints, np.asarray(gripper.finger_positions(width)))
        return True, self.width(), "command published; the world reports the width on /joint_states"
