"""The body of every launch file in ``afford_bringup/launch``: one graph of
:mod:`afford_bringup.graph` as ROS 2 launch actions, so that ``ros2 launch`` and ``afford
bringup`` start the same nodes with the same parameter files, launch arguments and remappings.

The ``launch`` packages are imported when a description is built, not when this module is:
they exist on a full ROS 2 install (the lab image), not on a pip install.
"""

from __future__ import annotations

import os
from typing import Any

from afford_bringup.graph import (
    config_path,
    get_graph,
    launch_argument_defaults,
    launch_text,
    node_environment,
)


def generate(graph_name: str) -> Any:
    """The graph ``graph_name`` as a ``LaunchDescription``, node by node from the graph
    description. Needs the ROS 2 ``launch`` packages (a full ROS 2 install)."""
    from launch import LaunchDescription  # type: ignore[attr-defined]  # mypy sees the launch/ folders
    from launch.actions import DeclareLaunchArgument, Shutdown
    from launch.substitutions import LaunchConfiguration
    from launch_ros.actions import Node
    from launch_ros.parameter_descriptions import ParameterValue

    graph = get_graph(graph_name)
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
                package=node.package,
                executable=node.executable,
                name=node.name,
                output="screen",
                parameters=parameters,
                remappings=list(node.remappings),
                additional_env=node_environment(node, os.environ) or None,  # as `afford bringup`
                respawn=node.respawn,
                respawn_delay=node.respawn_delay_s,
                # A required node's exit ends the launch, as it ends `afford bringup`.
                on_exit=Shutdown(reason=f"required node {node.name} exited") if node.required else None,
            )
        )
    return LaunchDescription(actions)
