"""Perception for the afford stack: task parsing, object clouds and affordance grounding.

Core modules here never import rclpy; ROS nodes are thin shells in ``afford_perception.nodes``.
"""
