"""The graph against Isaac Sim: start afford_ros/isaac/scene.py in Isaac Sim first.

    ros2 launch afford_bringup isaac_sim.launch.py

Nodes, parameter files and remappings come from the graph description (afford_bringup.graph),
which `afford bringup isaac_sim` runs too; parameters are in config/isaac_sim.yaml. Each launch argument
defaults to its parameter's value in that file, so a bare `ros2 launch` runs exactly what
`afford bringup` runs. Topics: docs/graph_contract.md.
"""

from afford_bringup.launch_description import generate

GRAPH = "isaac_sim"


def generate_launch_description():  # noqa: ANN201 - a launch.LaunchDescription
    """The isaac_sim graph, node by node from the graph description."""
    return generate(GRAPH)
