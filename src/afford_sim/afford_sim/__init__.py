"""Simulation for the afford stack: procedural assets with part labels, scenes, MuJoCo worlds."""
