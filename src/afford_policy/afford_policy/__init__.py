"""Visuomotor policies for the afford stack (LeRobot datasets, training, a policy server).

The policy work is its own issue; this package holds the ROS 2 package slot in the workspace
so that the graph description and the docker image can already name it.
"""
