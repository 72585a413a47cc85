"""conftest.py turns skips into failures when AFFORD_REQUIRE_ALL is set (scripts/test.sh sets it):
a dependency that set-up should have installed and did not must not hide as a skip in CI."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SKIPPING = '''
import pytest

def test_runs():
    assert True

def test_skips_inside():
    pytest.skip("franky-sim is not here")

@pytest.mark.xfail(reason="known", strict=True)
def test_expected_failure():
    assert False
'''
SKIPPING_MODULE = '''
import pytest
pytest.importorskip("a_package_that_is_not_installed_anywhere")

def test_never_collected():
    pass
'''


def _run(tmp_path: Path, require_all: str, *files: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "conftest.py").write_text(
        # The suite's hooks, without their module's __file__ (pytest checks it is this file).
        "import runpy\n"
        f"hooks = runpy.run_path({str(ROOT / 'conftest.py')!r})\n"
        "globals().update({k: v for k, v in hooks.items() if not k.startswith('__')})\n"
    )
    (tmp_path / "test_a.py").write_text(SKIPPING)
    (tmp_path / "test_b.py").write_text(SKIPPING_MODULE)
    env = dict(os.environ, AFFORD_REQUIRE_ALL=require_all)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rA",
         *(str(tmp_path / f) for f in files or ("test_a.py", "test_b.py"))],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )


@pytest.mark.parametrize("value", ["", "0"])
def test_skips_are_skips_without_it(tmp_path: Path, value: str) -> None:
    out = _run(tmp_path, value)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "1 passed, 2 skipped, 1 xfailed" in out.stdout, out.stdout


def test_every_skip_fails_with_it(tmp_path: Path) -> None:
    out = _run(tmp_path, "1", "test_a.py")
    assert out.returncode == 1, out.stdout + out.stderr
    # The skip fails with its reason; an expected failure stays what it is.
    assert "1 failed, 1 passed, 1 xfailed" in out.stdout, out.stdout
    assert "franky-sim is not here" in out.stdout and "AFFORD_REQUIRE_ALL is set" in out.stdout


def test_a_module_that_skips_fails_collection_with_it(tmp_path: Path) -> None:
    out = _run(tmp_path, "1", "test_b.py")
    assert out.returncode == 2, out.stdout + out.stderr  # pytest's "interrupted: collection error"
    assert "1 error" in out.stdout, out.stdout
    assert "a_package_that_is_not_installed_anywhere" in out.stdout
    assert "AFFORD_REQUIRE_ALL is set" in out.stdout
