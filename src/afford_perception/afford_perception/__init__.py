"""Perception for the afford stack: task parsing, object clouds and affordance grounding.

Core modules here never import rclpy; the ROS 2 nodes (a later issue) will be thin shells over them.
"""
