"""ROS 2 nodes of the graph: one node per module, each a thin shell over ROS-free core code."""
