"""PreAfford's learned modules (issue 13): the grasping module's critic so far."""
