"""The ROS 2 nodes, the graph contract, the robot drivers and the graph's command-line clients."""
