"""Suite-wide pytest hooks.

Some tests skip when an optional dependency is missing (rclpy, franky, torch, the ROS message
packages, chromium), so that a partial install can still run the rest. ``scripts/test.sh`` has
just installed all of them, so there a skip means something is broken, not absent: it sets
``AFFORD_REQUIRE_ALL=1`` and every skip becomes a failure that names what was skipped and why.

A suite stopped with SIGTERM (a CI job's time limit, ``timeout``, ``kill``) ends as one stopped
with Ctrl-C does: the fixtures tear down. The graph tests start the sim graph with the launcher
in a session of its own, which no signal to pytest reaches; killed outright, pytest left a whole
graph running at full CPU under the next run.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Generator
from typing import Any

import pytest

REQUIRE_ALL = os.environ.get("AFFORD_REQUIRE_ALL", "") not in ("", "0")
_WHY = "AFFORD_REQUIRE_ALL is set (scripts/test.sh installed every dependency), so nothing may skip"


def _skip_reason(longrepr: Any) -> str:
    # A skip's longrepr is (path, line, "Skipped: reason").
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return f"{longrepr[2]} ({longrepr[0]}:{longrepr[1]})"
    return str(longrepr)


def _fail_skip(report: pytest.CollectReport | pytest.TestReport) -> None:
    report.longrepr = f"{_WHY}; it skipped: {_skip_reason(report.longrepr)}"
    report.outcome = "failed"


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.CollectReport = outcome.get_result()
    if REQUIRE_ALL and report.skipped:
        _fail_skip(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if REQUIRE_ALL and report.skipped and not hasattr(report, "wasxfail"):
        _fail_skip(report)


def _interrupt(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_configure(config: pytest.Config) -> None:
    # Only the main thread may set handlers, and a handler someone else installed is kept.
    if threading.current_thread() is threading.main_thread() and (
        signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    ):
        signal.signal(signal.SIGTERM, _interrupt)
