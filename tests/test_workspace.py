"""The workspace as ROS 2 sees it: every package found by the ament index.

Which package may import which (and that core code never imports rclpy) is the import
contract, tests/test_import_layers.py.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = (
    "afford_core", "afford_perception", "afford_planner", "afford_sim", "afford_policy", "afford_pipeline",
    "afford_eval", "afford_data", "afford_ros", "afford_bringup", "afford_cli",
)


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
