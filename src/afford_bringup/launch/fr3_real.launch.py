"""The real FR3 (franky) with a RealSense camera; every trial waits for the operator.

    ros2 launch afford_bringup fr3_real.launch.py robot_ip:=172.16.0.2 camera_serial:=<serial>

Nodes, parameter files and remappings come from the graph description (afford_bringup.graph),
which `afford bringup fr3_real` runs too; parameters are in config/fr3_real.yaml. Each launch argument
defaults to its parameter's value in that file, so a bare `ros2 launch` runs exactly what
`afford bringup` runs. Topics: docs/graph_contract.md.
"""

from afford_bringup.launch_description import generate

GRAPH = "fr3_real"


def generate_launch_description():  # noqa: ANN201 - a launch.LaunchDescription
    """The fr3_real graph, node by node from the graph description."""
    return generate(GRAPH)
