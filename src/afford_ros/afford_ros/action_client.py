"""An rclpy action client whose goal answer cannot be lost to another executor thread.

rclpy 9.1.2 (the wheel we pin, ``requirements.txt``) registers a goal's future under the
client's lock, releases the lock, then makes a second future and registers it in the first
one's place, and returns the second. An executor thread that takes the server's answer in
between completes the first future; the one returned never completes (a slip in the backport
of ros2/rclpy#1308). The caller then waits for an answer that came: in CI the task server
stopped a policy run whose feedback it was receiving, "the policy node did not answer the goal
within 10 s". Every node and test that sends goals from one thread while an executor spins in
another uses this client.

The fix holds the client's lock across the whole send, so the executor (which takes answers
under the same lock) cannot take the answer before the returned future is registered. The lock
becomes reentrant because rclpy's own send takes it again inside ours.
"""

from __future__ import annotations

import threading
from typing import Any

from rclpy.action import ActionClient


class GoalSafeActionClient(ActionClient):
    """``rclpy.action.ActionClient`` with ``send_goal_async`` made atomic against the executor."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not hasattr(self, "_lock"):
            # Another rclpy: it takes answers without this lock, so holding it would not help.
            raise RuntimeError(
                "rclpy's ActionClient has no _lock: check whether this rclpy still loses goal "
                "answers (afford_ros/action_client.py) before using it"
            )
        self._lock = threading.RLock()  # type: ignore[assignment]  # rclpy types it as a Lock

    def send_goal_async(self, goal: Any, feedback_callback: Any = None, goal_uuid: Any = None) -> Any:
        with self._lock:
            future = super().send_goal_async(goal, feedback_callback=feedback_callback, goal_uuid=goal_uuid)
            self._drop_orphans()
            return future

    def _drop_orphans(self) -> None:
        """Forget the futures rclpy made and then replaced: registered nowhere, never to be
        completed, each would stay in the list the executor walks on every answer (one per goal
        sent, for the life of a task server)."""
        pending = (self._pending_goal_requests, self._pending_cancel_requests, self._pending_result_requests)
        registered = {id(f) for requests in pending for f in requests.values()}
        for orphan in [f for f in self._futures if id(f) not in registered and not f.done()]:
            self.remove_future(orphan)
