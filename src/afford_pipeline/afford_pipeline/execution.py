"""Running skills on the batch world: the adapter that lets the skills drive it like a robot."""

from __future__ import annotations

from typing import Any

import numpy as np

from afford_planner.skills import SkillError


class WorldExecutor:
    """Adapts the batch world to the skills' :class:`~afford_planner.skills.Executor`.

    When ``frames`` is a list, a frame of ``camera`` is appended every ``1 / fps`` simulated
    seconds.
    """

    _next_frame: float  # simulated time the next frame is due

    def __init__(
        self, world: Any, frames: list[np.ndarray] | None = None, fps: int = 20, camera: str | None = None
    ) -> None:
        self.world = world
        self.frames = frames
        self.period = 1.0 / fps
        self.camera = camera
        self._next_frame = 0.0

    def frame(self) -> None:
        """Record a frame if one is due."""
        if self.frames is not None and self.world.time >= self._next_frame:
            self.frames.append(self.world.render(self.camera, depth=False, segmentation=False).rgb)
            self._next_frame = self.world.time + self.period

    def arm_q(self) -> np.ndarray:
        return self.world.arm_q()

    def follow(self, times: np.ndarray, qs: np.ndarray) -> None:
        on_step = self.frame if self.frames is not None else None
        # A contact (a hook, a drawer's friction) can leave the arm off the plan's start; join
        # it back gently instead of asking the servos for a jump.
        gap = float(np.max(np.abs(self.world.arm_q() - qs[0])))
        if gap > 0.01:
            self.world.move_arm(
                qs[:1], [max(0.05, gap / 0.5)], interpolation="pchip", settle=0.1, on_step=on_step
            )
            off = np.abs(self.world.arm_q() - qs[0])
            if off.max() > 0.03:
                # The arm is held back (a load beyond a joint's torque, a collision): stop, as
                # the real controller would, rather than command a jump.
                raise SkillError(
                    f"the arm cannot follow: joint {int(off.argmax()) + 1} stays "
                    f"{off.max():.2f} rad from its setpoint"
                )
        keep = times > 1e-9  # move_arm starts from the measured state at t = 0
        times, qs = times[keep], qs[keep]
        if len(times) == 0:
            return
        # What is left of a small gap (under the join's threshold, or what the join left) over
        # a first step of a few milliseconds can ask a joint for more than its limit (2.99 rad/s
        # of a Kinova's joint 1 over 3 ms, a path computed ahead of a motion from where that
        # motion was to end): the world would refuse it. Such a path starts later, its first
        # step at half the limit; every step the world accepts runs as before.
        step = np.abs(qs[0] - self.world.arm_q())
        limits = self.world.velocity_limits
        if np.any(step / times[0] > limits):
            times = times + (float(np.max(step / (0.5 * limits))) - times[0])
        self.world.move_arm(qs, times, settle=0.0, on_step=on_step)
        self.wait(0.15)

    def open_gripper(self) -> None:
        self.world.open_gripper()
        self.frame()

    def close_gripper(self) -> None:
        self.world.close_gripper()
        self.frame()

    def wait(self, seconds: float) -> None:
        end = self.world.time + seconds
        while self.world.time < end - 1e-9:
            self.world.advance(min(self.period, end - self.world.time))
            self.frame()

