"""Arms from robosuite's models, made into position-controlled arms with a working gripper.

robosuite's exported MJCF (:mod:`afford_core.robots.robosuite_models`) drives its arm with torque
motors for robosuite's own controllers. A real arm's controller tracks joint positions with
gravity compensation, and the batch world commands positions, so each motor becomes a position
servo:

* ``kp = tau_max / 0.075 rad``: the joint reaches its torque limit (robosuite's motor range,
  the maker's joint torques: UR5e 150 / 28 Nm) at 4.3 deg of error; a 0.1 kg payload 0.5 m out
  costs a quarter of a milliradian at the shoulder;
* ``kv`` for critical damping (MuJoCo's ``dampratio`` 1), stable under ``implicitfast``;
* gravity compensation on every body of the robot (the controller knows the tool), delivered
  through the actuators (``actgravcomp``) so the torque limits still clamp it;
* joint armature 0.1 kg m^2 instead of robosuite's artificial 5 / (i + 1) (the value of the
  UR5e model in MuJoCo Menagerie), and no air density or viscosity (robosuite switches on
  fluid forces).

The Robotiq 2F-85 as exported has open linkages and two weak actuators: closed on nothing its
fingers fold past their limits and jam (robosuite issue #772). :func:`close_robotiq_linkage`
adds the ROS model's mimic relations as joint equalities and drives the hand with one
force-limited position actuator, so one control value opens and closes it and the squeeze per
pad is set in newtons.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import mujoco

from afford_core.robots import RobotDescription
from afford_core.robots.ur5e import ROBOTIQ_CLOSED, ROBOTIQ_FOLLOWERS

if TYPE_CHECKING:
    from afford_sim.mjcf import ModelConfig

SATURATION_ERROR = 0.075
"""Joint error (rad) at which a servo reaches its torque limit."""
ARM_ARMATURE = 0.1
"""Joint armature (kg m^2) of the arm joints."""
ROBOTIQ_TORQUE_PER_NEWTON = 0.107
"""``finger_joint`` torque (N m) per newton of squeeze on each pad: twice d(pad y)/d(finger_joint)
near a 45 mm opening, measured on the exported model."""


def _subtree(body: mujoco.MjsBody) -> list[mujoco.MjsBody]:
    out = [body]
    for child in body.bodies:
        out.extend(_subtree(child))
    return out


def make_position_controlled(spec: mujoco.MjSpec, robot: RobotDescription) -> None:
    """Each arm joint's motor becomes a position servo named after its joint (module docstring)."""
    motors = {a.target: a for a in spec.actuators if a.trntype == mujoco.mjtTrn.mjTRN_JOINT}
    for name in robot.sim.arm_joints:
        if name not in motors:
            raise ValueError(f"{robot.name}: no actuator drives {name} in the exported model")
        act, joint = motors[name], spec.joint(name)
        tau_max = float(max(abs(act.ctrlrange[0]), abs(act.ctrlrange[1])))
        act.set_to_position(kp=tau_max / SATURATION_ERROR, dampratio=1.0)
        act.gear = [1, 0, 0, 0, 0, 0]
        if joint.range[0] < joint.range[1]:
            act.ctrlrange = [joint.range[0], joint.range[1]]
            act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
        else:  # a continuous joint
            act.ctrllimited = mujoco.mjtLimited.mjLIMITED_FALSE
        act.forcerange = [-tau_max, tau_max]
        act.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
        act.name = name
        joint.actgravcomp = True
        joint.armature = ARM_ARMATURE
    base = next(b for b in spec.worldbody.bodies)
    for body in _subtree(base):
        body.gravcomp = 1.0
    spec.option.density = 0.0
    spec.option.viscosity = 0.0


def close_robotiq_linkage(spec: mujoco.MjSpec, robot: RobotDescription, prefix: str = "gripper0_") -> None:
    """Make robosuite's Robotiq 2F-85 a one-actuator parallel gripper (module docstring)."""
    driven = prefix + "finger_joint"
    for tendon in list(spec.tendons):
        if tendon.name.startswith(prefix):
            spec.delete(tendon)
    drive = None
    for act in list(spec.actuators):
        if act.name.startswith(prefix):
            if act.target == driven:
                drive = act
            else:
                spec.delete(act)
    if drive is None:
        raise ValueError(f"{robot.name}: no actuator on {driven}")
    for follower, multiple in ROBOTIQ_FOLLOWERS.items():
        eq = spec.add_equality()
        eq.type = mujoco.mjtEq.mjEQ_JOINT
        eq.name = f"{prefix}mimic_{follower.removeprefix(prefix)}"
        eq.name1, eq.name2 = follower, driven
        eq.data[0:5] = [0.0, multiple, 0.0, 0.0, 0.0]
        eq.solref = [0.005, 1.0]
        eq.solimp = [0.95, 0.99, 0.001, 0.5, 2.0]
    for joint in spec.joints:
        if joint.name.startswith(prefix):
            joint.armature = 0.005
            joint.damping = [0.01, 0.0, 0.0]
    # kv = 0.15 kp: a first-order close in about half a second (the real 2F-85 takes >= 0.57 s);
    # the force limit bounds the squeeze at rest, not the speed in free air.
    torque = robot.gripper.grasp_force * ROBOTIQ_TORQUE_PER_NEWTON
    drive.set_to_position(kp=50.0, kv=50.0 * 0.15)
    drive.ctrlrange = [0.0, ROBOTIQ_CLOSED]
    drive.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
    drive.forcerange = [-torque, torque]
    drive.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
    drive.name = robot.sim.gripper_actuator
    bodies = [b.name for b in spec.bodies if b.name.startswith(prefix)]
    for i, a in enumerate(bodies):
        for b in bodies[i + 1 :]:
            exclude = spec.add_exclude()
            exclude.bodyname1, exclude.bodyname2 = a, b


def _tidy(spec: mujoco.MjSpec) -> None:
    # robosuite leaves its recoloured collision geoms in group 0 and marker sites (one 20 m long)
    # in groups 1-2, so a default render would draw them over the visual meshes.
    for geom in spec.geoms:
        if (geom.contype or geom.conaffinity) and geom.group == 0:
            geom.group = 3
    for site in spec.sites:
        if site.group in (1, 2):
            site.group = 4
    for sensor in list(spec.sensors):
        spec.delete(sensor)


def build(robot: RobotDescription, config: ModelConfig) -> mujoco.MjSpec:
    """The robot from its exported robosuite MJCF, position-controlled, with a working hand."""
    spec = mujoco.MjSpec.from_file(str(robot.sim.mjcf()))
    make_position_controlled(spec, robot)
    if robot.gripper.name == "robotiq_2f85":
        close_robotiq_linkage(spec, robot)
    else:
        raise ValueError(f"{robot.name}: no simulator set-up for the {robot.gripper.name} yet")
    _tidy(spec)
    return spec
