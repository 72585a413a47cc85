"""The ``afford`` command as a user meets it: exit codes, one-line errors, the JSON schema."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from afford_cli.cli import main

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}


def _afford(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "afford_cli.cli", *args],
        capture_output=True,
        text=True,
        env=ENV,
        timeout=240,
    )


def test_objects_lists_every_category_with_its_parts(capsys: pytest.CaptureFixture[str]) -> None:
    """An operator choosing a task sentence needs to see which objects and parts exist."""
    from afford_core.ontology import CATEGORIES

    assert main(["objects", "--json"]) == 0
    listed = {row["category"]: row["parts"] for row in json.loads(capsys.readouterr().out)}
    assert listed == {name: list(cat.parts) for name, cat in CATEGORIES.items()}


def test_show_writes_a_png(tmp_path: Path) -> None:
    """`afford show` is how a user checks that an object's part labels are where they expect."""
    out = tmp_path / "mug.png"
    assert main(["show", "mug", "--seed", "2", "-o", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize(
    ("sentence", "fragment"),
    [
        ("", "empty"),
        ("pick up the unicorn", "known objects"),
        ("pick up the cube by its handle", "cube"),
        ("hang the cube on the rack", "cube"),
    ],
)
def test_bad_sentences_exit_non_zero_with_one_line_and_never_move(sentence: str, fragment: str) -> None:
    """A malformed task must stop before any scene or motion exists: the arm never moves on a
    guess. The error is one line naming what is known."""
    proc = _afford("run", sentence, "--json")
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("afford: error:")
    assert fragment in lines[0].lower()
    assert proc.stdout == ""


def test_unknown_grounding_source_is_refused_before_anything_runs() -> None:
    proc = _afford("run", "pick up the scoop", "--grounding", "magic")
    assert proc.returncode == 2
    assert "invalid choice" in proc.stderr and "oracle" in proc.stderr


def test_run_json_has_the_documented_schema() -> None:
    """Scripts and the ROS task server read these fields; renaming one breaks them."""
    proc = _afford("run", "pick up the scoop", "--seed", "0", "--json")
    assert proc.returncode in (0, 3), proc.stderr
    out = json.loads(proc.stdout)
    assert {"task", "intent", "candidates", "eligible", "selected", "stages", "success", "timings_ms"} <= set(
        out
    )
    assert set(out["intent"]) >= {"target", "grasp_region", "keep_clear", "next_action", "destination"}
    assert set(out["timings_ms"]) >= {
        "parse",
        "perceive",
        "ground",
        "sample",
        "select",
        "plan",
        "execute",
        "total",
    }
    assert out["intent"]["target"] == "scoop" and out["intent"]["grasp_region"] == "handle"
    assert out["candidates"] >= out["eligible"] >= 1
    assert (proc.returncode == 0) == out["success"]
    if out["selected"] is not None:
        assert set(out["selected"]) >= {"position", "rotation", "terms", "score"}
