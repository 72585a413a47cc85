"""The simulated FR3 serving a visuomotor policy: fr3_sim, the policy cameras and the policy node.

    ros2 launch afford_bringup fr3_sim_policy.launch.py task:=hang-mug-v1 seed:=2

Nodes, parameter files and remappings come from the graph description (afford_bringup.graph),
which `afford bringup fr3_sim_policy` runs too; parameters are in config/fr3_sim.yaml and, on
top, config/fr3_sim_policy.yaml. Each launch argument defaults to its parameter's value there,
so a bare `ros2 launch` runs exactly what `afford bringup` runs. Then `afford task --policy DIR
"..."`. Topics: docs/graph_contract.md.
"""

from afford_bringup.launch_description import generate

GRAPH = "fr3_sim_policy"


def generate_launch_description():  # noqa: ANN201 - a launch.LaunchDescription
    """The fr3_sim_policy graph, node by node from the graph description."""
    return generate(GRAPH)
