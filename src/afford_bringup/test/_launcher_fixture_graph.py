"""Runs the launcher on a fixture graph of :mod:`_launcher_fixture_node` processes (for the tests).

Usage: ``python _launcher_fixture_graph.py PID_DIR NAME:BEHAVIOUR:HELPER[:optional|:respawn] ...``;
``FIXTURE_MIN_UPTIME`` sets the launcher's ``min_uptime_s``.
"""

from __future__ import annotations

import os
import sys

from afford_bringup.graph import GraphSpec, NodeSpec
from afford_bringup.launcher import LauncherConfig, run_graph


def main(argv: list[str]) -> int:
    pid_dir, specs = argv[0], argv[1:]
    nodes = []
    overrides = {}
    for spec in specs:
        name, behaviour, helper, *flags = spec.split(":")
        nodes.append(
            NodeSpec(
                name=name,
                module="_launcher_fixture_node",
                executable=name,
                required="optional" not in flags and "respawn" not in flags,
                respawn="respawn" in flags,
                respawn_delay_s=0.2,
                remappings=(("/in", f"/{name}/in"),),
            )
        )
        overrides[name] = {"pid_dir": pid_dir, "behaviour": behaviour, "helper": helper}
    graph = GraphSpec(name="fixture", description="launcher test graph", nodes=tuple(nodes))
    config = LauncherConfig(
        sigint_timeout_s=1.5,
        sigterm_timeout_s=1.5,
        min_uptime_s=float(os.environ.get("FIXTURE_MIN_UPTIME", "15")),
    )
    return run_graph(graph, overrides, config)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
