"""The simulated FR3: franky-sim with the task scene, perception, planner, executor, task server.

    ros2 launch afford_bringup fr3_sim.launch.py sentence:="hang the mug on the rack" seed:=2

Nodes, parameter files and remappings come from the graph description (afford_bringup.graph),
which `afford bringup fr3_sim` runs too; parameters are in config/fr3_sim.yaml. Each launch argument
defaults to its parameter's value in that file, so a bare `ros2 launch` runs exactly what
`afford bringup` runs. Topics: docs/graph_contract.md.
"""

from launch.actions import DeclareLaunchArgument, Shutdown
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from afford_bringup.graph import PACKAGE, config_path, get_graph, launch_argument_defaults, launch_text
from launch import LaunchDescription

GRAPH = "fr3_sim"


def generate_launch_description() -> LaunchDescription:
    """The fr3_sim graph, node by node from the graph description."""
    graph = get_graph(GRAPH)
    defaults = launch_argument_defaults(graph)
    actions: list = [
        DeclareLaunchArgument(a.name, default_value=launch_text(defaults[a.name]), description=a.description)
        for a in graph.launch_arguments
    ]
    for node in graph.nodes:
        # Same order as `afford bringup`: files, then launch arguments, then the parameters the
        # graph fixes (which nothing may override).
        parameters: list = [str(config_path(f)) for f in node.parameter_files]
        from_args = {
            # Typed, or a RealSense serial of digits would arrive as an int.
            a.parameter: ParameterValue(LaunchConfiguration(a.name), value_type=type(defaults[a.name]))
            for a in graph.launch_arguments
            if a.node == node.name
        }
        if from_args:
            parameters.append(from_args)
        if node.parameters:
            parameters.append(node.inline)
        actions.append(
            Node(
                package=PACKAGE,
                executable=node.executable,
                name=node.name,
                output="screen",
                parameters=parameters,
                remappings=list(node.remappings),
                respawn=node.respawn,
                respawn_delay=node.respawn_delay_s,
                # A required node's exit ends the launch, as it ends `afford bringup`.
                on_exit=Shutdown(reason=f"required node {node.name} exited") if node.required else None,
            )
        )
    return LaunchDescription(actions)
