"""Arms from robosuite's models, made into position-controlled arms with a working gripper.

robosuite's exported MJCF (:mod:`afford_core.robots.robosuite_models`) drives its arm with torque
motors for robosuite's own controllers. A real arm's controller tracks joint positions with
gravity compensation, and the batch world commands positions, so each motor becomes a position
servo:

* ``kp = tau_max / 0.075 rad``: the joint reaches its torque limit (robosuite's motor range:
  UR5e 150 / 28 Nm, the maker's joint torques; Panda 80 / 12 Nm; Kinova Gen3 32 / 13 Nm; Sawyer
  80 / 40 / 9 Nm, Rethink's; xArm7 80 Nm on every joint) at 4.3 deg of error; a 0.1 kg payload
  0.5 m out costs a quarter of a milliradian at the UR5e's shoulder;
* ``kv`` for critical damping (MuJoCo's ``dampratio`` 1), stable under ``implicitfast``;
* the joint ranges narrowed to the description's ``position_limits`` where it gives them (the
  Kinova Gen3's continuous joints get a range), so the simulator and the planner agree;
* gravity compensation on every body of the robot (the controller knows the tool), delivered
  through the actuators (``actgravcomp``) so the torque limits still clamp it;
* joint armature 0.1 kg m^2 instead of robosuite's artificial 5 / (i + 1) (the value of the
  UR5e model in MuJoCo Menagerie), and no air density or viscosity (robosuite switches on
  fluid forces).

The Robotiq 2F-85 as exported (on the UR5e and the Kinova Gen3) has open linkages and two weak
actuators: closed on nothing its fingers fold past their limits and jam (robosuite issue #772).
:func:`close_robotiq_linkage` adds the ROS model's mimic relations as joint equalities and drives
the hand with one force-limited position actuator, so one control value opens and closes it and
the squeeze per pad is set in newtons.

The Panda gripper as exported drives each slide finger with its own 20 N servo: the fingers are
neither coupled nor squeezed with the hand's force. :func:`couple_panda_fingers` mirrors the
second finger on the first with a joint equality and drives the pair with one force-limited
position actuator, as for the Robotiq. Two settings keep that servo calm: its damping sits on the
finger joints (an actuator's own damping, clamped by its force limit, made the force flip between
its limits every step), and robosuite's 1 kg finger armature stays (with 0.01 kg the fingers
vibrated on a thin mug handle until the contact broke: MuJoCo scales a contact's stiffness with
the mass behind it). The Sawyer's Rethink gripper is two slide fingers too and is coupled the same
way (:func:`couple_rethink_fingers`); its servo's closing target lies past the fingers' stop, so
it squeezes with the full grasp force at any opening (its fingers stop 14.1 mm apart).

The xArm Gripper as exported (on the xArm7) is a linkage whose loops robosuite does close, with
``connect`` equalities, but it is driven through a tendon, with 1 N m of dry friction on each of
its six joints and a spring on the inner knuckles. :func:`close_xarm_linkage` replaces the
closures by the mimics (every follower equals the driven joint: the linkage is two
parallelograms) and drives the hand as the Robotiq.

A description's ``never_colliding`` pairs, which the planner leaves out, are excluded from
contacts here too (the Sawyer's shoulder and elbow covers, from Rethink's MoveIt configuration).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import mujoco

from afford_core.robots import RobotDescription
from afford_core.robots.panda import FINGER_TRAVEL, PANDA_GRIPPER
from afford_core.robots.robotiq import ROBOTIQ_2F85, ROBOTIQ_CLOSED, ROBOTIQ_FOLLOWERS
from afford_core.robots.sawyer import CLOSE_TARGET as RETHINK_CLOSE_TARGET
from afford_core.robots.sawyer import FINGER_OPEN as RETHINK_OPEN
from afford_core.robots.sawyer import FINGER_SHUT as RETHINK_SHUT
from afford_core.robots.sawyer import RETHINK_GRIPPER
from afford_core.robots.xarm7 import DRIVER, XARM_CLOSED, XARM_FOLLOWERS, XARM_GRIPPER

if TYPE_CHECKING:
    from afford_sim.mjcf import ModelConfig

SATURATION_ERROR = 0.075
"""Joint error (rad) at which a servo reaches its torque limit."""
ARM_ARMATURE = 0.1
"""Joint armature (kg m^2) of the arm joints."""
ROBOTIQ_TORQUE_PER_NEWTON = 0.107
"""``finger_joint`` torque (N m) per newton of squeeze on each pad: twice d(pad y)/d(finger_joint)
near a 45 mm opening, measured on the exported model."""
GRIP_TIME_CONSTANT = 0.15
"""kv / kp of the gripper servos (s): a first-order close in about half a second in free air (the
real 2F-85 takes >= 0.57 s; the Panda gripper, whose servo starts at its force limit, shuts from
fully open in about 0.75 s); the force limit bounds the squeeze at rest, not the speed."""
XARM_TORQUE_PER_NEWTON = 0.107
"""Driven-joint torque (N m) per newton of squeeze on each pad of the xArm Gripper: twice
d(pad y)/d(driver) near a 45 mm opening, measured on the exported model."""
XARM_KP = 50.0
"""Stiffness of the xArm Gripper's servo (N m/rad), as the Robotiq's: at its torque limit from
0.064 rad (about 7 mm of opening) short of its target."""
PANDA_FULL_FORCE_TRAVEL = 0.01
"""Finger travel (m) from shut at which the Panda gripper's servo reaches its force limit: objects
2 cm wide and wider are squeezed with the full grasp force, thinner ones with proportionally
less."""


def _subtree(body: mujoco.MjsBody) -> list[mujoco.MjsBody]:
    out = [body]
    for child in body.bodies:
        out.extend(_subtree(child))
    return out


def make_position_controlled(spec: mujoco.MjSpec, robot: RobotDescription) -> None:
    """Each arm joint's motor becomes a position servo named after its joint (module docstring)."""
    motors = {a.target: a for a in spec.actuators if a.trntype == mujoco.mjtTrn.mjTRN_JOINT}
    for i, name in enumerate(robot.sim.arm_joints):
        if name not in motors:
            raise ValueError(f"{robot.name}: no actuator drives {name} in the exported model")
        act, joint = motors[name], spec.joint(name)
        if robot.position_limits is not None:  # the planner's limits (a continuous joint's too)
            lo, hi = robot.position_limits[i]
            if joint.range[0] < joint.range[1]:
                lo, hi = max(lo, joint.range[0]), min(hi, joint.range[1])
            joint.range = [lo, hi]
            joint.limited = mujoco.mjtLimited.mjLIMITED_TRUE
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
    drive = _only_drive(spec, robot, prefix, driven)
    for follower, multiple in ROBOTIQ_FOLLOWERS.items():
        _mimic(spec, prefix, follower, driven, multiple)
    for joint in spec.joints:
        if joint.name.startswith(prefix):
            joint.armature = 0.005
            joint.damping = [0.01, 0.0, 0.0]
    torque = robot.gripper.grasp_force * ROBOTIQ_TORQUE_PER_NEWTON
    drive.set_to_position(kp=50.0, kv=50.0 * GRIP_TIME_CONSTANT)
    _bound_drive(drive, robot, (0.0, ROBOTIQ_CLOSED), torque)
    _exclude_within(spec, prefix)


def close_xarm_linkage(spec: mujoco.MjSpec, robot: RobotDescription, prefix: str = "gripper0_") -> None:
    """Make robosuite's xArm Gripper a one-actuator parallel gripper (module docstring).

    robosuite's loop closures (two ``connect`` equalities), its coupling of the two drivers and
    its tendon are replaced by the mimics of :data:`XARM_FOLLOWERS`, which close the parallelogram
    linkages exactly; the tendon actuator by one force-limited position servo on the driven joint.
    """
    for act in spec.actuators:  # robosuite's drive pulls a tendon over both drivers
        if act.name.startswith(prefix) and act.trntype == mujoco.mjtTrn.mjTRN_TENDON:
            act.trntype, act.target = mujoco.mjtTrn.mjTRN_JOINT, DRIVER
    drive = _only_drive(spec, robot, prefix, DRIVER)
    for tendon in list(spec.tendons):
        if tendon.name.startswith(prefix):
            spec.delete(tendon)
    for eq in list(spec.equalities):
        if eq.name1.startswith(prefix) or eq.name2.startswith(prefix):
            spec.delete(eq)
    for follower, multiple in XARM_FOLLOWERS.items():
        _mimic(spec, prefix, follower, DRIVER, multiple)
    for joint in spec.joints:
        if joint.name.startswith(prefix):
            # robosuite's 1 N m of dry friction on each of the six joints would hold the hand
            # against most of its servo's torque; its spring on the inner knuckles pulls them
            # towards 2.6 rad.
            joint.armature = 0.005
            joint.damping = [0.01, 0.0, 0.0]
            joint.frictionloss = 0.0
            joint.stiffness = [0.0, 0.0, 0.0]
    driver = spec.joint(DRIVER)
    driver.range = [0.0, XARM_CLOSED]
    driver.limited = mujoco.mjtLimited.mjLIMITED_TRUE
    torque = robot.gripper.grasp_force * XARM_TORQUE_PER_NEWTON
    drive.set_to_position(kp=XARM_KP, kv=XARM_KP * GRIP_TIME_CONSTANT)
    drive.gear = [1, 0, 0, 0, 0, 0]
    _bound_drive(drive, robot, (0.0, XARM_CLOSED), torque)
    _exclude_within(spec, prefix)


def couple_panda_fingers(spec: mujoco.MjSpec, robot: RobotDescription, prefix: str = "gripper0_") -> None:
    """Make robosuite's Panda gripper a one-actuator parallel gripper (module docstring).

    The squeeze per pad is half the actuator's force (the coupled fingers share it), so its
    force limit is twice the description's ``grasp_force``.
    """
    _couple_slide_fingers(spec, robot, (0.0, FINGER_TRAVEL), PANDA_FULL_FORCE_TRAVEL, prefix)


def couple_rethink_fingers(spec: mujoco.MjSpec, robot: RobotDescription, prefix: str = "gripper0_") -> None:
    """Make robosuite's Rethink gripper (the Sawyer's) a one-actuator parallel gripper, as the
    Panda's (module docstring).

    Its closing target lies past the fingers' stop (``sawyer.CLOSE_TARGET``), at the travel where
    the servo reaches its force limit, so every object it closes on is squeezed with the full grasp
    force. robosuite leaves the finger boxes out of contacts with each other (``contype`` 0) and
    without friction; they are made ordinary colliding geoms, so the scene builder gives them the
    fingers' contact settings (contacts within the hand stay excluded).
    """
    _couple_slide_fingers(spec, robot, (RETHINK_CLOSE_TARGET, RETHINK_OPEN),
                          RETHINK_SHUT - RETHINK_CLOSE_TARGET, prefix)
    fingers = set(robot.sim.left_finger_bodies) | set(robot.sim.right_finger_bodies)
    for geom in spec.geoms:
        if geom.parent.name in fingers and geom.conaffinity:
            geom.contype = 1


def _couple_slide_fingers(spec: mujoco.MjSpec, robot: RobotDescription, ctrl_range: tuple[float, float],
                          full_force_travel: float, prefix: str) -> None:
    """Two slide fingers, the second mirroring the first, driven by one position servo on the first
    that reaches its force limit ``full_force_travel`` (m) short of its target."""
    first, second = robot.sim.finger_joints
    drive = _only_drive(spec, robot, prefix, first)
    _mimic(spec, prefix, second, first, -1.0)
    force = 2.0 * robot.gripper.grasp_force
    kp = force / full_force_travel
    for name in (first, second):
        joint = spec.joint(name)  # robosuite's armature (1 kg) is kept: module docstring
        # The servo's damping, on the joints (module docstring): together kv = kp * GRIP_TIME_CONSTANT.
        joint.damping = [kp * GRIP_TIME_CONSTANT / 2.0, 0.0, 0.0]
        joint.frictionloss = 0.1  # as the FR3's fingers
    drive.set_to_position(kp=kp, kv=0.0)
    _bound_drive(drive, robot, ctrl_range, force)
    _exclude_within(spec, prefix)


def _only_drive(spec: mujoco.MjSpec, robot: RobotDescription, prefix: str, joint: str) -> mujoco.MjsActuator:
    """The gripper's actuator on ``joint``; its other actuators are deleted."""
    drive = None
    for act in list(spec.actuators):
        if act.name.startswith(prefix):
            if act.target == joint:
                drive = act
            else:
                spec.delete(act)
    if drive is None:
        raise ValueError(f"{robot.name}: no actuator on {joint}")
    return drive


def _bound_drive(drive: mujoco.MjsActuator, robot: RobotDescription, ctrl_range: tuple[float, float],
                 force: float) -> None:
    """The gripper's one drive: controls in ``ctrl_range`` (open and closed at either end), its
    force (or torque) limited to ``force``, named as the description's gripper actuator."""
    drive.ctrlrange = list(ctrl_range)
    drive.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
    drive.forcerange = [-force, force]
    drive.forcelimited = mujoco.mjtLimited.mjLIMITED_TRUE
    drive.name = robot.sim.gripper_actuator


def _mimic(spec: mujoco.MjSpec, prefix: str, follower: str, leader: str, multiple: float) -> None:
    """``follower = multiple * leader``, as a stiff joint equality (a URDF's mimic)."""
    eq = spec.add_equality()
    eq.type = mujoco.mjtEq.mjEQ_JOINT
    eq.name = f"{prefix}mimic_{follower.removeprefix(prefix)}"
    eq.name1, eq.name2 = follower, leader
    eq.data[0:5] = [0.0, multiple, 0.0, 0.0, 0.0]
    eq.solref = [0.005, 1.0]
    eq.solimp = [0.95, 0.99, 0.001, 0.5, 2.0]


def _exclude_within(spec: mujoco.MjSpec, prefix: str) -> None:
    """No contacts between the gripper's own bodies (the linkage and the pads pass through each
    other at the closed end)."""
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
    if robot.gripper.name == ROBOTIQ_2F85.name:
        close_robotiq_linkage(spec, robot)
    elif robot.gripper.name == PANDA_GRIPPER.name:
        couple_panda_fingers(spec, robot)
    elif robot.gripper.name == XARM_GRIPPER.name:
        close_xarm_linkage(spec, robot)
    elif robot.gripper.name == RETHINK_GRIPPER.name:
        couple_rethink_fingers(spec, robot)
    else:
        raise ValueError(f"{robot.name}: no simulator set-up for the {robot.gripper.name} yet")
    _exclude_never_colliding(spec, robot)
    _tidy(spec)
    return spec


def _exclude_never_colliding(spec: mujoco.MjSpec, robot: RobotDescription) -> None:
    """The description's ``never_colliding`` pairs, which the planner leaves unchecked, make no
    contacts in the simulator either (the Sawyer's extra shoulder and elbow covers)."""
    bodies = {b.name for b in spec.bodies}
    for pair in robot.never_colliding:
        a, b = sorted(pair)
        if a not in bodies or b not in bodies:
            raise ValueError(f"{robot.name}: never_colliding names {sorted(pair)}, not bodies of the model")
        exclude = spec.add_exclude()
        exclude.bodyname1, exclude.bodyname2 = a, b
