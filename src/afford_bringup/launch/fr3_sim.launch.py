"""The simulated FR3: franky-sim with the task scene, perception, planner, executor, task server.

    ros2 launch afford_bringup fr3_sim.launch.py task:=hang-mug-v1 seed:=2

Nodes, parameter files and remappings come from the graph description (afford_bringup.graph),
which `afford bringup fr3_sim` runs too; parameters are in config/fr3_sim.yaml. Each launch argument
defaults to its parameter's value in that file, so a bare `ros2 launch` runs exactly what
`afford bringup` runs. Topics: docs/graph_contract.md.
"""

from afford_bringup.launch_description import generate

GRAPH = "fr3_sim"


def generate_launch_description():  # noqa: ANN201 - a launch.LaunchDescription
    """The fr3_sim graph, node by node from the graph description."""
    return generate(GRAPH)
