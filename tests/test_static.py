"""Static checks the style guide asks for: ``ruff`` and ``mypy`` clean on every package.

Both tools are pinned in requirements.txt, so a new release cannot turn this red on its own.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("src/*/afford_*") if p.is_dir())


def _run(*args: str, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_every_package_is_found() -> None:
    # The glob is what both checks run on; a renamed layout must not make them check nothing.
    assert len(PACKAGES) >= 10, PACKAGES
    assert "src/afford_core/afford_core" in PACKAGES


def test_ruff_is_clean() -> None:
    out = _run("ruff", "check", "--no-cache", "src", "tests", "bench", timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr


def test_mypy_is_clean(tmp_path: Path) -> None:
    # A fresh cache: a stale one from another checkout could hide an error.
    out = _run("mypy", "--cache-dir", str(tmp_path / "mypy"), *PACKAGES, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
