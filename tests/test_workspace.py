"""The workspace as ROS 2 sees it: every package found by the ament index, core code ROS-free."""

from __future__ import annotations

import ast
import importlib
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("afford_perception", "afford_planner", "afford_policy", "afford_sim", "afford_bringup")


@pytest.mark.parametrize("name", PACKAGES)
def test_package_is_a_ros2_package_and_a_python_package(name: str) -> None:
    """`ros2 launch` and ament tools locate packages through the ament index; on a pip install
    the set-up script registers each one in the venv's share/ so the same lookups work."""
    from ament_index_python.packages import get_package_share_directory

    prefix = os.environ.get("AMENT_PREFIX_PATH", "")
    assert prefix, "AMENT_PREFIX_PATH is unset: source scripts/env.sh"
    share = Path(get_package_share_directory(name))
    assert (share / "package.xml").is_file()
    assert f"<name>{name}</name>" in (share / "package.xml").read_text()
    assert (ROOT / "src" / name / "resource" / name).is_file()
    importlib.import_module(name)


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module.split(".")[0])
    return names


#: Modules outside ``nodes/`` that talk to a running graph themselves: the ``afford task`` /
#: ``afford trial`` clients and the Isaac Sim scene script (which runs inside Isaac Sim).
GRAPH_CLIENTS = {"afford_bringup/graph_cli.py", "afford_bringup/isaac/scene.py"}


def test_core_modules_never_import_rclpy() -> None:
    """Core code runs (and is tested) without a ROS graph; only node modules and the graph's own
    clients may use rclpy."""
    offenders = [
        str(p.relative_to(ROOT))
        for name in PACKAGES
        for p in (ROOT / "src" / name / name).rglob("*.py")
        if "nodes" not in p.parts
        and str(p.relative_to(ROOT / "src" / name)) not in GRAPH_CLIENTS
        and "rclpy" in _imports(p)
    ]
    assert offenders == []
