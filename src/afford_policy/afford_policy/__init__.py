"""Visuomotor policies for the afford stack (LeRobot).

:mod:`afford_policy.rollout` runs a policy in closed loop in the batch world, on the scenes an
``afford generate`` dataset was recorded on, and judges it with the task's stage checks
(``afford policy eval``; docs/demonstrations.md). A policy node on the ROS graph is still to do.
"""
