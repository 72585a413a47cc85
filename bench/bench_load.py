"""The sim graph on an idle machine and beside a declared CPU load, in the same run.

    python bench/bench_load.py --burners 2 --out bench/results/bench_load.md

Brings up ``fr3_sim`` (franky-sim in real time, every node a process, DDS between them) on a
loopback address and domain of its own and runs the same RunTask trials twice: first on the
idle machine (the baseline), then while ``--burners`` processes spin at normal priority (each
a busy loop bounded in time, so a killed bench leaves nothing running). For each phase it
records the trials' outcomes, split into successes, "simulation fell behind" abstains (the
simulator could not keep real time: a clear reason, the arm at rest) and other failures; the
simulator's own account of its loop from ``/diagnostics`` (late steps, the longest silence a
libfranka client saw, the slowest one-second real-time factor); and the perception stage's
latency (from the trial's feedback: the time from "perceive" to the next stage). A trial whose
robot link was lost is followed by the operator's recovery (``afford robot recover``), counted.

The goal (issue 16): the same success as idle, or where physics cannot keep up a clear
"simulation fell behind" abstain; never a stale-state failure the user must decode.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from bench_run_task import (
    Clock,
    provenance,
    start_graph,
)  # run as `python bench/bench_load.py`: bench/ is on the path

TRIALS = ("put the banana on the plate@1", "hang the mug on the rack@0", "pick up the mug@3")
BURN = "import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"


def stage_time(clock: Clock, stage: str) -> float | None:
    """Seconds from the feedback of ``stage`` to the next stage's (None if it never came)."""
    for (t, name), (t_next, _) in zip(clock.marks, clock.marks[1:], strict=False):
        if name == stage:
            return t_next - t
    return None


class Diagnostics:
    """Collects sim_world's loop status from /diagnostics in a thread of its own."""

    def __init__(self) -> None:
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor

        from afford_ros import contract
        from afford_ros.qos import qos_profile

        self.name = contract.SIM_LOOP_STATUS
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = rclpy.create_node("bench_load", context=self.context)
        self.windows: list[dict[str, float]] = []
        self.lock = threading.Lock()
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._on, qos_profile("reliable"))
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.thread = threading.Thread(target=self._spin, daemon=True)
        self.thread.start()

    def _spin(self) -> None:
        while self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.1)
            except Exception:  # noqa: BLE001 - shutting down
                return

    def _on(self, msg: Any) -> None:
        for status in msg.status:
            if status.name == self.name:
                values = {kv.key: float(kv.value) for kv in status.values}
                with self.lock:
                    self.windows.append(values)

    def wait_steady(self, windows: int = 3, timeout: float = 240.0) -> float:
        """Wait until the simulator reports keeping real time ``windows`` seconds in a row (the
        graph has finished starting); returns the seconds waited."""
        t0 = time.monotonic()
        steady = 0
        while steady < windows and time.monotonic() - t0 < timeout:
            time.sleep(1.0)
            for w in self.take():
                steady = steady + 1 if w["realtime_factor"] >= 0.9 * w["target_factor"] else 0
        return time.monotonic() - t0

    def take(self) -> list[dict[str, float]]:
        with self.lock:
            out, self.windows = self.windows, []
        return out

    def close(self) -> None:
        import rclpy

        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


@dataclass
class Phase:
    name: str
    outcomes: list[str] = field(default_factory=list)  # "ok", "behind", or the failure reason
    perception: list[float] = field(default_factory=list)
    recoveries: int = 0
    windows: list[dict[str, float]] = field(default_factory=list)
    wall: float = 0.0

    def row(self) -> str:
        n = len(self.outcomes)
        ok = self.outcomes.count("ok")
        behind = self.outcomes.count("behind")
        stale = sum("stale robot state" in o for o in self.outcomes)
        other = n - ok - behind
        misses = sum(w["deadline_misses"] for w in self.windows)
        steps_s = sum(w["window_s"] for w in self.windows)
        worst = max((w["worst_gap_s"] for w in self.windows), default=float("nan"))
        slowest = min(
            (w["realtime_factor"] for w in self.windows if w["window_s"] > 0.5), default=float("nan")
        )
        mean_rt = (
            sum(w["realtime_factor"] * w["window_s"] for w in self.windows) / steps_s
            if steps_s
            else float("nan")
        )
        p = sorted(self.perception)
        p50 = statistics.median(p) if p else float("nan")
        p99 = p[min(len(p) - 1, int(round(0.99 * (len(p) - 1))))] if p else float("nan")
        return (
            f"| {self.name} | {ok}/{n} | {behind} | {other} | {stale} | {self.recoveries} | "
            f"{int(misses)} ({misses / steps_s:.1f}/s) | {worst:.3f} | {slowest:.2f} | {mean_rt:.2f} | "
            f"{p50:.1f} | {p99:.1f} | {self.wall:.0f} |"
        )


def run_phase(name: str, trials: list[tuple[str, int]], diag: Diagnostics) -> Phase:
    from afford_ros.graph_cli import recover_robot, run_task

    phase = Phase(name)
    diag.take()
    t0 = time.perf_counter()
    for sentence, seed in trials:
        clock = Clock()
        _, result = run_task(sentence, seed=seed, out=clock, wait=180.0, timeout=900.0)
        if result.success:
            outcome = "ok"
        elif result.abstain_reason.startswith("the simulation fell behind"):
            outcome = "behind"
        else:
            outcome = result.abstain_reason or "unknown"
        phase.outcomes.append(outcome)
        took = stage_time(clock, "perceive")
        if took is not None:
            phase.perception.append(took)
        print(
            f"  [{name}] {sentence!r} seed {seed}: {'SUCCESS' if result.success else result.abstain_reason}"
        )
        if not result.success and "communication" in result.abstain_reason:
            ok, message = recover_robot()
            phase.recoveries += 1
            print(f"  [{name}] operator recovery: {message}")
    phase.wall = time.perf_counter() - t0
    time.sleep(1.2)  # the last window's report
    phase.windows = diag.take()
    return phase


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", nargs="+", default=list(TRIALS), help='"sentence@seed" each')
    ap.add_argument(
        "--burners", type=int, default=os.cpu_count() or 2, help="busy processes (default: cores)"
    )
    ap.add_argument("--out", default=None, help="write the Markdown table here too")
    ap.add_argument("--log", default="bench_load_graph.log", help="the graph's log (default: %(default)s)")
    args = ap.parse_args(argv)
    trials = [(t.rsplit("@", 1)[0], int(t.rsplit("@", 1)[1])) for t in args.trials]
    at = provenance()

    os.environ.setdefault("ROS_DOMAIN_ID", str(150 + os.getpid() % 60))
    host = f"127.0.{os.getpid() % 200 + 30}.9"
    log = open(args.log, "w")  # noqa: SIM115 - the graph writes to it until it ends
    graph = start_graph(host, log)
    diag = Diagnostics()
    burners: list[subprocess.Popen[bytes]] = []
    phases = []
    try:
        from afford_ros.graph_cli import run_task

        # The first goal waits for the graph; the baseline starts once the simulator keeps time.
        run_task("pick up the unicorn", wait=240.0, out=open(os.devnull, "w"))  # noqa: SIM115
        print(f"graph steady after {diag.wait_steady():.0f} s more")
        print("idle:")
        phases.append(run_phase("idle", trials, diag))
        bound = 3600
        burners = [
            subprocess.Popen([sys.executable, "-c", BURN.format(seconds=bound)]) for _ in range(args.burners)
        ]
        print(f"loaded ({args.burners} busy processes at normal priority):")
        phases.append(run_phase(f"{args.burners} busy processes", trials, diag))
    finally:
        for b in burners:
            b.kill()
        diag.close()
        if graph.poll() is None:
            os.killpg(graph.pid, signal.SIGINT)
            try:
                graph.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(graph.pid, signal.SIGKILL)

    lines = [
        "# The sim graph idle and under load",
        "",
        f"Command: `python bench/bench_load.py --burners {args.burners}` at {at}; "
        f"{os.cpu_count()} cores, {platform.machine()}; "
        f"trials: {', '.join(args.trials)}.",
        "",
        "| phase | success | fell-behind abstains | other failures | of them stale state | operator "
        "recoveries | late sim steps | worst sim silence (s) | slowest RT factor (1 s) | mean RT factor | "
        "perception p50 (s) | perception p99 (s) | wall (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
        *(p.row() for p in phases),
        "",
        "Other failures:",
        *(f"- {p.name}: {o}" for p in phases for o in p.outcomes if o not in ("ok", "behind")),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
