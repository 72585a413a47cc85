"""``afford bringup <graph>``: start a graph on a pip install, where ``ros2 launch`` is absent.

It starts the same nodes as ``launch/<graph>.launch.py``, from the same description
(:mod:`afford_bringup.graph`): one process per node (``python -m <module> --ros-args
--params-file ... -p ... -r ...``), with its output prefixed by the node's name.

Why each node gets its own session (and so its own process group): a terminal's Ctrl-C goes to
the whole foreground group; if the nodes shared it they would all start tearing down at once
while the launcher still believed them healthy, and a node's helpers (the sim world's render
process) would be left to chance. Instead the launcher alone receives the signal and shuts the
graph down in order: SIGINT to every node's group, a grace period, SIGTERM to what is left,
another, then SIGKILL. The launcher also makes itself the *child subreaper* (Linux) so that a
helper whose node died is re-parented to the launcher, not to init, and is found and ended too:
no process of the graph outlives ``afford bringup``.

A required node that exits stops the whole graph with a non-zero status naming the node: a
graph without its executor or perception is not a degraded graph, it is a broken one, and on a
real robot it must not keep accepting tasks.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import yaml

from afford_bringup.graph import GRAPHS, GraphSpec, NodeSpec, dds_environment, node_environment, ros_args

_PR_SET_CHILD_SUBREAPER = 36


@dataclass(frozen=True)
class LauncherConfig:
    """How the launcher runs and stops a graph.

    Attributes:
        sigint_timeout_s: After SIGINT, how long the nodes get to shut down cleanly (a node may
            be stopping the arm and closing the robot connection) before SIGTERM.
        sigterm_timeout_s: After SIGTERM, how long before SIGKILL.
        poll_s: How often the launcher checks its processes.
        python: Interpreter that runs the nodes.
        config_dir: Folder of the parameter files; None: :func:`afford_bringup.graph.config_dir`.
        min_uptime_s: A respawning node that exits sooner than this after its start failed to
            start (a bad parameter, a missing model), not crashed mid-work:
        max_failed_starts: that many in a row stop the graph, naming the node, instead of
            restarting it forever.
    """

    sigint_timeout_s: float = 10.0
    sigterm_timeout_s: float = 5.0
    poll_s: float = 0.05
    python: str = field(default_factory=lambda: sys.executable)
    config_dir: Path | None = None
    min_uptime_s: float = 15.0
    max_failed_starts: int = 3

    def __post_init__(self) -> None:
        if self.sigint_timeout_s < 0 or self.sigterm_timeout_s < 0:
            raise ValueError("shutdown timeouts must be >= 0")
        if self.min_uptime_s < 0 or self.max_failed_starts < 1:
            raise ValueError("min_uptime_s must be >= 0 and max_failed_starts >= 1")
        if not 0 < self.poll_s <= 1:
            raise ValueError(f"poll_s must be in (0, 1], got {self.poll_s}")


Overrides = Mapping[str, Mapping[str, Any]]


def node_command(
    node: NodeSpec, overrides: Mapping[str, Any] | None = None, config: LauncherConfig | None = None
) -> list[str]:
    """The command line that runs ``node`` (``-u``: unbuffered, so its lines arrive as written)."""
    config = config or LauncherConfig()
    return [config.python, "-u", "-m", node.module, *ros_args(node, overrides, config.config_dir)]


def parse_sets(items: Sequence[str], graph: GraphSpec) -> dict[str, dict[str, Any]]:
    """``["executor.robot_ip=10.0.0.2", ...]`` -> ``{"executor": {"robot_ip": "10.0.0.2"}}``.

    Values are read as YAML, as ROS reads ``-p`` values (``true`` a bool, ``1.5`` a double,
    ``[1, 2]`` an array, quote a string that looks like a number: ``'"1.0"'``).

    Raises:
        ValueError: malformed item, unknown node, or a parameter the graph fixes.
    """
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        key, sep, text = item.partition("=")
        node_name, dot, param = key.partition(".")
        if not sep or not dot or not node_name or not param:
            raise ValueError(f"--set {item!r}: expected NODE.PARAM=VALUE, e.g. executor.robot_ip=172.16.0.2")
        node = graph.node(node_name)
        if param in node.inline:
            raise ValueError(
                f"--set {item!r}: {node_name}.{param} is fixed by graph {graph.name} "
                f"(= {node.inline[param]!r})"
            )
        try:
            value = yaml.safe_load(text) if text else ""
        except yaml.YAMLError as err:
            raise ValueError(f"--set {item!r}: value is not valid YAML ({err})") from None
        out.setdefault(node_name, {})[param] = value
    return out


# --------------------------------------------------------------------------- process bookkeeping


def _proc_stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, ppid, pgrp, session) of a live process, None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rindex(")") + 2 :].split()
    return fields[0], int(fields[1]), int(fields[2]), int(fields[3])


def _all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def session_members(sid: int) -> list[int]:
    """Pids of the live (non-zombie) processes in session ``sid``."""
    out = []
    for pid in _all_pids():
        st = _proc_stat(pid)
        if st is not None and st[3] == sid and st[0] != "Z":
            out.append(pid)
    return out


def _become_subreaper() -> None:
    # Orphaned helpers of a node then come to us (and are ended and reaped by us) instead of
    # init; best effort, Linux only.
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


class _Output:
    """Serialises prefixed lines from many reader threads onto one stream."""

    def __init__(self, stream: IO[str], width: int) -> None:
        self._stream = stream
        self._lock = threading.Lock()
        self._width = width

    def line(self, name: str, text: str) -> None:
        with self._lock:
            self._stream.write(f"[{name:<{self._width}}] {text}\n")
            self._stream.flush()


@dataclass
class _Running:
    node: NodeSpec
    proc: subprocess.Popen[bytes]
    reader: threading.Thread
    restart_at: float | None = None  # a respawning node waits for this time
    finished: bool = False  # exited, not required, not respawned: left alone
    started: float = field(default_factory=time.monotonic)
    failed_starts: int = 0  # exits in a row, each sooner than min_uptime_s after its start

    @property
    def sid(self) -> int:
        return self.proc.pid  # start_new_session: the child leads its own session and group

    def alive(self) -> bool:
        return self.proc.poll() is None or bool(session_members(self.sid))

    def signal(self, sig: int) -> None:
        try:
            os.killpg(self.sid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        # Helpers that moved to a group of their own stay in the session.
        for pid in session_members(self.sid):
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass


class GraphRunner:
    """Runs one graph until a required node exits or a stop is requested; see the module docstring."""

    def __init__(
        self,
        graph: GraphSpec,
        overrides: Overrides | None = None,
        config: LauncherConfig | None = None,
        out: IO[str] | None = None,
        err: IO[str] | None = None,
    ) -> None:
        self.graph = graph
        self.overrides = {k: dict(v) for k, v in (overrides or {}).items()}
        for name in self.overrides:
            graph.node(name)  # KeyError names the graph's nodes
        self.config = config or LauncherConfig()
        self._out = _Output(out or sys.stdout, max(len(n.name) for n in graph.nodes))
        self._err = err or sys.stderr
        self._running: dict[str, _Running] = {}
        self._stops = 0  # stop requests so far; each one after the first escalates the shutdown

    def commands(self) -> dict[str, list[str]]:
        """Each node's command line, in start order."""
        return {n.name: node_command(n, self.overrides.get(n.name), self.config) for n in self.graph.nodes}

    def _say(self, text: str) -> None:
        self._err.write(f"afford bringup: {text}\n")
        self._err.flush()

    def request_stop(self, *_: object) -> None:
        """Ask for a graph shutdown (signal handler); a second request skips to the next signal."""
        self._stops += 1

    def environment(self) -> dict[str, str]:
        """The environment every node starts with (the caller's, plus the graph's defaults)."""
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env.update(dds_environment(env))
        if self.graph.discovery and not env.get("ROS_AUTOMATIC_DISCOVERY_RANGE"):
            env["ROS_AUTOMATIC_DISCOVERY_RANGE"] = self.graph.discovery
        return env

    def _start(self, node: NodeSpec, cmd: list[str]) -> _Running:
        env = self.environment()
        env.update(node_environment(node, env))
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=env,
        )
        assert proc.stdout is not None
        stream = proc.stdout

        def pump() -> None:
            for raw in iter(stream.readline, b""):
                self._out.line(node.name, raw.decode(errors="replace").rstrip("\n"))

        reader = threading.Thread(target=pump, name=f"out-{node.name}", daemon=True)
        reader.start()
        self._say(f"started {node.name} (pid {proc.pid})")
        return _Running(node, proc, reader)

    def _reap_orphans(self) -> None:
        # Helpers re-parented to us (subreaper) whose node is gone: reap the dead ones.
        ours = {r.proc.pid for r in self._running.values()}
        me = os.getpid()
        for pid in _all_pids():
            st = _proc_stat(pid)
            if st is not None and st[1] == me and pid not in ours and st[0] == "Z":
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass

    def _orphans(self) -> list[int]:
        ours = {r.proc.pid for r in self._running.values()}
        me = os.getpid()
        out = []
        for pid in _all_pids():
            st = _proc_stat(pid)
            if st is not None and st[1] == me and pid not in ours and st[0] != "Z":
                out.append(pid)
        return out

    def run(self) -> int:
        """Start every node, supervise, stop; 0 after a requested stop, 1 when a node failed."""
        commands = self.commands()  # raises before anything starts on a bad override
        missing = [n.module for n in self.graph.nodes if importlib.util.find_spec(n.module) is None]
        if missing:
            self._say(f"error: node modules not found: {', '.join(missing)}")
            return 1
        env = self.environment()
        where = env.get("ROS_AUTOMATIC_DISCOVERY_RANGE") or "DDS default (subnet)"
        self._say(f"ROS_DOMAIN_ID {env.get('ROS_DOMAIN_ID') or '0 (default)'}, discovery {where}")
        _become_subreaper()
        handlers = self._install_handlers()
        failed: str | None = None
        try:
            for node in self.graph.nodes:
                if self._stops:
                    break
                try:
                    self._running[node.name] = self._start(node, commands[node.name])
                except OSError as err:
                    failed = f"could not start {node.name}: {err}"
                    break
            while failed is None and not self._stops:
                failed = self._supervise_once(commands)
                time.sleep(self.config.poll_s)
        finally:
            self._shutdown()
            self._restore_handlers(handlers)
        if failed is not None:
            self._say(f"error: {failed}")
            return 1
        self._say("graph stopped")
        return 0

    def _supervise_once(self, commands: dict[str, list[str]]) -> str | None:
        now = time.monotonic()
        for name, r in list(self._running.items()):
            if r.finished:
                continue
            if r.restart_at is not None:
                if now >= r.restart_at:
                    r.signal(signal.SIGKILL)  # what the dead instance left behind
                    self._running[name] = self._start(r.node, commands[name])
                    self._running[name].failed_starts = r.failed_starts
                continue
            rc = r.proc.poll()
            if rc is None:
                continue
            r.reader.join(timeout=0.5)  # its last lines usually say why
            if r.node.required:
                r.finished = True  # reported here, not again at shutdown
                return f"required node {name} exited with code {rc}; graph {self.graph.name} stopped"
            if r.node.respawn:
                r.failed_starts = r.failed_starts + 1 if now - r.started < self.config.min_uptime_s else 0
                if r.failed_starts >= self.config.max_failed_starts:
                    r.finished = True
                    return (
                        f"{name} exited with code {rc} within {self.config.min_uptime_s:g} s of starting, "
                        f"{r.failed_starts} times in a row; graph {self.graph.name} stopped "
                        "(its log above says why)"
                    )
                self._say(f"{name} exited with code {rc}; restarting in {r.node.respawn_delay_s:g} s")
                r.restart_at = now + r.node.respawn_delay_s
            else:
                self._say(f"{name} exited with code {rc} (not required; the graph goes on)")
                r.finished = True
        self._reap_orphans()
        return None

    def _shutdown(self) -> None:
        stages = (
            ("SIGINT", signal.SIGINT, self.config.sigint_timeout_s),
            ("SIGTERM", signal.SIGTERM, self.config.sigterm_timeout_s),
            ("SIGKILL", signal.SIGKILL, 5.0),
        )
        # A stop request during the shutdown skips to the next stage, as a second Ctrl-C does.
        stops_seen = self._stops
        for label, sig, timeout in stages:
            alive = [r for r in self._running.values() if r.alive()]
            orphans = self._orphans()
            if not alive and not orphans:
                break
            if label != "SIGINT":
                names = [r.node.name for r in alive] + (
                    [f"{len(orphans)} orphaned helper(s)"] if orphans else []
                )
                self._say(f"sending {label} to {', '.join(names)}")
            for r in alive:
                r.signal(sig)
            for pid in orphans:
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and self._stops == stops_seen:
                self._reap_orphans()
                if not any(r.alive() for r in self._running.values()) and not self._orphans():
                    break
                time.sleep(self.config.poll_s)
            stops_seen = self._stops
        for r in self._running.values():
            try:
                r.proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                self._say(f"warning: {r.node.name} (pid {r.proc.pid}) survived SIGKILL")
            r.reader.join(timeout=1.0)
            if r.proc.returncode not in (0, None, -signal.SIGINT) and not r.finished and r.restart_at is None:
                self._say(f"{r.node.name} exited with code {r.proc.returncode} during shutdown")
        self._reap_orphans()

    def _install_handlers(self) -> dict[int, Any]:
        if threading.current_thread() is not threading.main_thread():
            return {}
        old: dict[int, Any] = {}
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            old[sig] = signal.signal(sig, self.request_stop)
        return old

    @staticmethod
    def _restore_handlers(old: dict[int, Any]) -> None:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def run_graph(
    graph: GraphSpec,
    overrides: Overrides | None = None,
    config: LauncherConfig | None = None,
    dry_run: bool = False,
    out: IO[str] | None = None,
    err: IO[str] | None = None,
) -> int:
    """Run ``graph`` (or, with ``dry_run``, print each node's command) and return the exit status."""
    runner = GraphRunner(graph, overrides, config, out, err)
    if dry_run:
        stream = out or sys.stdout
        stream.write(f"# graph {graph.name}: {graph.description}\n")
        for node in graph.nodes:
            stream.write(f"# {node.name}: {node.description}\n{shlex.join(runner.commands()[node.name])}\n")
        return 0
    return runner.run()


# --------------------------------------------------------------------------- CLI


def register_cli(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add ``bringup`` to the ``afford`` command (its handler is :func:`run_bringup`)."""
    p = subparsers.add_parser(
        "bringup",
        help="start a ROS 2 graph (one process per node) without ros2 launch",
        description="Start a graph from afford_bringup.graph: "
        + "; ".join(f"{g.name}: {g.description}" for g in GRAPHS.values())
        + " Ctrl-C stops the whole graph.",
    )
    p.add_argument("graph", choices=sorted(GRAPHS), help="which graph")
    p.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="NODE.PARAM=VALUE",
        help="override a parameter (YAML value), repeatable, e.g. --set executor.robot_ip=172.16.0.2",
    )
    p.add_argument("--dry-run", action="store_true", help="print each node's command line and exit")
    p.add_argument(
        "--sigint-timeout",
        type=float,
        default=LauncherConfig.sigint_timeout_s,
        help="seconds the nodes get after SIGINT before SIGTERM (default %(default)s)",
    )
    p.add_argument(
        "--sigterm-timeout",
        type=float,
        default=LauncherConfig.sigterm_timeout_s,
        help="seconds after SIGTERM before SIGKILL (default %(default)s)",
    )
    p.set_defaults(func=run_bringup)
    return p


def run_bringup(args: argparse.Namespace) -> int:
    """Handler of ``afford bringup``."""
    graph = GRAPHS[args.graph]
    config = LauncherConfig(sigint_timeout_s=args.sigint_timeout, sigterm_timeout_s=args.sigterm_timeout)
    return run_graph(graph, parse_sets(args.sets, graph), config, dry_run=args.dry_run)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m afford_bringup.launcher <graph> ...``: the same as ``afford bringup``."""
    parser = argparse.ArgumentParser(prog="afford_bringup.launcher")
    register_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["bringup", *(sys.argv[1:] if argv is None else argv)])
    try:
        return int(args.func(args))
    except (ValueError, KeyError, FileNotFoundError) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        print(f"afford bringup: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
