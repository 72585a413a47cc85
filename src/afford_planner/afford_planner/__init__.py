"""Planning for the afford stack: grasp candidates, the selection layer, IK and motion planning.

Core modules here never import rclpy.
"""
