"""Pre-grasp pushing (PreAfford, issue 13): flat objects, the five scenes, a floating gripper's
pushes and grasps, and the seed's success rules."""
