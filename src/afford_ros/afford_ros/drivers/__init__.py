"""How the executor node commands a robot: one driver per kind of connection, by name.

The executor node is the same for every robot; what differs is how commands reach the arm and
how its state comes back. A :class:`Driver` does that for one kind (``RobotDescription.drive``):

* ``franky``: libfranka through franky, to the FR3 or to franky-sim on loopback
  (:class:`~afford_ros.drivers.franky_driver.FrankyDriver`); the node publishes ``/joint_states``
  from the driver's readings;
* ``joint_command_topic``: joint position commands streamed on a topic, state read from the
  world's ``/joint_states`` (Isaac Sim's articulation controller;
  :class:`~afford_ros.drivers.topic_driver.TopicDriver`).

Every command a driver receives has passed the node's safety checks; a driver never alters one
(beyond slowing it to fit the robot's dynamics). ``sim_only`` robots (the UR5e) have no driver:
they run in the batch world alone.
"""

from afford_core.registry import Registry
from afford_ros.drivers.base import ArmReading, Driver, MotionState, StaleState

DRIVERS: Registry[type[Driver]] = Registry("executor driver")
DRIVERS.register_lazy("franky", "afford_ros.drivers.franky_driver:FrankyDriver")
DRIVERS.register_lazy("joint_command_topic", "afford_ros.drivers.topic_driver:TopicDriver")

__all__ = ["DRIVERS", "ArmReading", "Driver", "MotionState", "StaleState"]
