"""The policy package's ROS 2 node: the one module of afford_policy that imports rclpy."""
