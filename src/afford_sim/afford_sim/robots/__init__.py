"""The simulator's robot models: one MuJoCo model builder per kind of robot model file.

A builder turns a :class:`~afford_core.robots.RobotDescription` into a ``mujoco.MjSpec`` of the
arm and its gripper alone, position-controlled (a position actuator per arm joint named after
the joint), gravity-compensated as a real arm's controller does, with the gripper opened and
closed by one actuator. :func:`afford_sim.mjcf.load_robot` then applies what every robot gets
(geom names, finger contact settings, the TCP site) and the scene is built around it.

Builders are registered by the name a description gives in ``sim.builder``; heavy ones (that
import robosuite) lazily.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import mujoco

from afford_core.registry import Registry
from afford_core.robots import RobotDescription

if TYPE_CHECKING:
    from afford_sim.mjcf import ModelConfig

SimBuilder = Callable[[RobotDescription, "ModelConfig"], mujoco.MjSpec]

SIM_BUILDERS: Registry[SimBuilder] = Registry("simulator robot builder")
SIM_BUILDERS.register_lazy("franky_fr3", "afford_sim.robots.fr3:build")
SIM_BUILDERS.register_lazy("robosuite", "afford_sim.robots.robosuite:build")
