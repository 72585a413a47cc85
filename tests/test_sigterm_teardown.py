"""pytest stopped with SIGTERM tears its fixtures down (conftest.py), as on Ctrl-C, so a graph a
fixture started is stopped rather than left running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SUITE = '''
import time
from pathlib import Path

import pytest

MARKS = Path(__file__).parent


@pytest.fixture()
def graph():
    (MARKS / "started").write_text("")
    yield
    (MARKS / "torn_down").write_text("")


def test_runs_long(graph):
    time.sleep(3600)
'''


def test_a_sigterm_tears_the_fixtures_down(tmp_path: Path) -> None:
    (tmp_path / "test_long.py").write_text(SUITE, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    # The suite's own conftest as a plugin (-p conftest), the long test outside the repository.
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "conftest", "--rootdir", str(tmp_path),
         "-c", os.devnull, str(tmp_path / "test_long.py")],
        cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    end = time.monotonic() + 300  # pytest itself took a minute to start on two busy cores
    while not (tmp_path / "started").exists():
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < end, "the long test never started"
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    try:
        out, _ = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("pytest went on after SIGTERM") from None
    assert (tmp_path / "torn_down").exists(), f"the fixture was not torn down:\n{out}"
    assert "KeyboardInterrupt: signal 15" in out and proc.returncode != 0, out
