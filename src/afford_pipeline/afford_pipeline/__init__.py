"""The spine without ROS: perceive, ground, sample, select, plan and execute a task in the batch world."""
