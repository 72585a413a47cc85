"""The import contract: which package may import which (pyproject.toml, ``[tool.importlinter]``).

Layers, top to bottom (docs/architecture.md): cli > bringup > policy > ros | eval | data >
pipeline > perception | planner | sim > core. A package imports only from layers below it, and
packages that share a layer do not import each other. Core code never imports ROS, and no two
modules of one package import each other, even inside a function.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = [
    sys.executable,
    "-c",
    "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())",
]


def _lint(extra_path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if extra_path is not None:
        # A package found first on the path shadows the installed (editable) one.
        env["PYTHONPATH"] = os.pathsep.join([str(extra_path), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [*LINT, "--config", str(ROOT / "pyproject.toml"), "--no-cache"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_packages_keep_the_import_contract() -> None:
    run = _lint()
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "3 kept, 0 broken" in run.stdout


@pytest.mark.parametrize(
    ("package", "line", "broken"),
    [
        ("afford_core", "import rclpy", "Core packages never import ROS"),
        ("afford_core", "import afford_pipeline", "Packages import only downwards"),
        ("afford_sim", "def f():\n    import afford_perception.parser", "Packages import only downwards"),
        ("afford_planner", "import afford_ros.contract", "Packages import only downwards"),
    ],
)
def test_a_violation_breaks_the_contract(tmp_path: Path, package: str, line: str, broken: str) -> None:
    """The contract is not vacuous: a copy of a package with one forbidden import fails it (an
    import inside a function too)."""
    copy = tmp_path / package
    shutil.copytree(ROOT / "src" / package / package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "_violation.py").write_text(line + "\n")
    run = _lint(tmp_path)
    assert run.returncode != 0
    assert f"{broken}" in run.stdout and "BROKEN" in run.stdout, run.stdout[-3000:]
    assert "_violation" in run.stdout
