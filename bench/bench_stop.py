"""Benchmark of the software stop: /afford/stop published -> the arm at rest, over N trials.

Real processes, as in the graph: a franky-sim server (MuJoCo, loopback address unique to this
run), the executor node connected to it with franky, and this script as the operator. Each
trial sends a 3 s, 0.6 rad joint-1 trajectory (alternating direction), waits until joint 1
moves faster than ``--speed`` rad/s, publishes the stop and times, from the publish, until every
joint velocity on /joint_states stays below 0.01 rad/s for 50 ms. It also records the speed at
the stop and how far joint 1 travelled after it.

On franky-sim the arm's deceleration after libfranka's StopMove is the simulator's impedance
controller settling, so the numbers bound the executor's reaction plus the sim's braking; the
real FR3 brakes with its own controller and must be measured on the robot.

Run:  .venv/bin/python bench/bench_stop.py [--trials 20] [--speed 0.2]
(``BENCH_STOP_LOG=/tmp/x`` keeps the server's and executor's output in /tmp/x.<pid>.)
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

RESULTS = Path(__file__).resolve().parent / "results" / "bench_stop.txt"
#: The executor logs how long commanding each stop took ("stop sent (X ms to command it)").
_STOP_LINE = re.compile(r"stop sent \(([0-9.]+) ms to command it, received at monotonic ([0-9.]+)\)")
EXECUTOR_STOP_MS: list[float] = []
EXECUTOR_STOP_AT: list[float] = []
PUBLISHED_AT: list[float] = []
REST_SPEED = 0.01  # rad/s, every joint
HOLD = 0.05  # s the arm must stay under REST_SPEED


@dataclass
class BenchConfig:
    """Size of the benchmark.

    Attributes:
        trials: Stops measured.
        speed: Joint-1 speed (rad/s) the arm must exceed before the stop is sent.
        dynamics_factor: The executor's franky dynamics factor.
    """

    trials: int = 20
    speed: float = 0.2
    dynamics_factor: float = 0.15

    def __post_init__(self) -> None:
        if self.trials < 1:
            raise ValueError(f"trials must be >= 1, got {self.trials}")
        if not 0.0 < self.speed < 0.3:
            raise ValueError(
                f"speed must be in (0, 0.3) rad/s (the trajectory peaks near 0.3), got {self.speed}"
            )
        if not 0.0 < self.dynamics_factor <= 1.0:
            raise ValueError(f"dynamics_factor must be in (0, 1], got {self.dynamics_factor}")


def _start(cmd: list[str], token: str, env: dict[str, str], timeout: float = 60.0) -> subprocess.Popen[str]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    end = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < end:
        line = proc.stdout.readline()
        if token in line:
            log = os.environ.get("BENCH_STOP_LOG")
            sink = open(f"{log}.{proc.pid}", "w") if log else None  # noqa: SIM115 - lives with the thread

            def drain(sink: object = sink) -> None:
                for out in proc.stdout or ():
                    found = _STOP_LINE.search(out)
                    if found:
                        EXECUTOR_STOP_MS.append(float(found.group(1)))
                        EXECUTOR_STOP_AT.append(float(found.group(2)))
                    if sink is not None:
                        sink.write(out)  # type: ignore[attr-defined]
                        sink.flush()  # type: ignore[attr-defined]

            threading.Thread(target=drain, daemon=True).start()
            return proc
        if not line and proc.poll() is not None:
            break
    proc.kill()
    raise RuntimeError(f"{cmd[:3]} did not print {token!r} (rc={proc.poll()})")


def _stop_proc(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def run(cfg: BenchConfig) -> list[tuple[float, float, float]]:
    """(stop -> rest s, joint-1 speed at the stop rad/s, joint-1 travel after the stop rad) per trial."""
    host = f"127.{os.getpid() % 200 + 20}.{(os.getpid() >> 8) % 256}.9"
    env = dict(os.environ, ROS_DOMAIN_ID=str(200 + os.getpid() % 30))
    server = _start(
        [sys.executable, "-m", "franky_sim.run_server", "-s", "mujoco", "--hostname", host],
        "Press Ctrl+C",
        env,
    )
    executor = None
    try:
        executor = _start(
            [
                sys.executable, "-m", "afford_ros.nodes.executor", "--ros-args",
                "-p", f"robot_ip:={host}", "-p", f"dynamics_factor:={cfg.dynamics_factor}",
            ],
            "executor ready",
            env,
        )  # fmt: skip
        return _trials(cfg, int(env["ROS_DOMAIN_ID"]))
    finally:
        if executor is not None:
            _stop_proc(executor)
        _stop_proc(server)
        time.sleep(0.2)  # let the drain threads read the last lines


def _trials(cfg: BenchConfig, domain: int) -> list[tuple[float, float, float]]:
    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Empty

    from afford_interfaces.action import FollowTrajectory
    from afford_ros.action_client import GoalSafeActionClient
    from afford_ros.nodes.convert import trajectory_msg
    from afford_ros.qos import qos_profile

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain)
    node = rclpy.create_node("bench_stop", context=ctx)
    lock = threading.Lock()
    states: list[tuple[float, np.ndarray, np.ndarray]] = []

    def on_state(msg: JointState) -> None:
        with lock:
            states.append((time.monotonic(), np.array(msg.position[:7]), np.array(msg.velocity[:7])))
            del states[:-2000]

    node.create_subscription(JointState, "/joint_states", on_state, qos_profile("sensor"))
    stop_pub = node.create_publisher(Empty, "/afford/stop", qos_profile("reliable"))
    action: GoalSafeActionClient = GoalSafeActionClient(node, FollowTrajectory, "/executor/follow_trajectory")
    executor = MultiThreadedExecutor(num_threads=2, context=ctx)
    executor.add_node(node)
    threading.Thread(target=executor.spin, daemon=True).start()

    def latest() -> tuple[float, np.ndarray, np.ndarray]:
        while True:
            with lock:
                if states:
                    return states[-1]
            time.sleep(0.01)

    def wait(future: object, timeout: float) -> object:
        end = time.monotonic() + timeout
        while not future.done():  # type: ignore[attr-defined]
            if time.monotonic() > end:
                raise TimeoutError("no answer from the executor")
            time.sleep(0.005)
        return future.result()  # type: ignore[attr-defined]

    def rest_after(since: float, timeout: float = 5.0) -> float:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with lock:
                samples = [(t, float(np.max(np.abs(dq)))) for t, _q, dq in states if t >= since]
            calm = None
            for t, speed in samples:
                calm = (calm if calm is not None else t) if speed < REST_SPEED else None
            if calm is not None and samples[-1][0] - calm >= HOLD:
                return calm - since
            time.sleep(0.01)
        raise TimeoutError("the arm did not come to rest")

    results: list[tuple[float, float, float]] = []
    try:
        if not action.wait_for_server(timeout_sec=20.0):
            raise RuntimeError("executor action not available")
        latest()
        for k in range(cfg.trials):
            rest_after(time.monotonic())
            q0 = latest()[1]
            t = np.arange(0.0, 3.0 + 1e-9, 0.01)
            s = 0.5 * (1.0 - np.cos(np.pi * t / 3.0))
            sign = 1.0 if k % 2 == 0 else -1.0
            qs = np.repeat(q0[None, :], len(t), axis=0)
            qs[:, 0] += sign * 0.6 * s
            msg = trajectory_msg(t, qs)
            goal = wait(action.send_goal_async(FollowTrajectory.Goal(trajectory=msg)), 10.0)
            end = time.monotonic() + 10.0
            while abs(latest()[2][0]) < cfg.speed:
                if time.monotonic() > end:
                    raise TimeoutError("the arm never reached the trial speed")
                time.sleep(0.002)
            _t, q_stop, dq_stop = latest()
            t_stop = time.monotonic()
            stop_pub.publish(Empty())
            PUBLISHED_AT.append(t_stop)
            latency = rest_after(t_stop)
            wait(goal.get_result_async(), 10.0)  # type: ignore[attr-defined]
            travel = float(abs(latest()[1][0] - q_stop[0]))
            results.append((latency, float(abs(dq_stop[0])), travel))
            print(f"trial {k + 1:2d}: rest after {latency * 1000:6.1f} ms (from {abs(dq_stop[0]):.3f} rad/s, "
                  f"travel {travel * 1000:.1f} mrad)", flush=True)  # fmt: skip
    finally:
        executor.shutdown()
        node.destroy_node()
        ctx.try_shutdown()
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=BenchConfig.trials)
    parser.add_argument("--speed", type=float, default=BenchConfig.speed)
    parser.add_argument("--dynamics-factor", type=float, default=BenchConfig.dynamics_factor)
    args = parser.parse_args(argv)
    cfg = BenchConfig(trials=args.trials, speed=args.speed, dynamics_factor=args.dynamics_factor)
    results = np.array(run(cfg))
    lat, speed, travel = results[:, 0] * 1000.0, results[:, 1], results[:, 2] * 1000.0
    command = "python bench/bench_stop.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    lines = [
        f"$ {command.strip()}",
        f"# {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs (shared machine), franky-sim (MuJoCo) "
        f"+ executor node, dynamics_factor {cfg.dynamics_factor}, load average at the end "
        f"{os.getloadavg()[0]:.1f}",
        f"# {cfg.trials} stops of joint 1 moving at {speed.mean():.3f} rad/s (min {speed.min():.3f}); "
        f"at rest = every |dq| < {REST_SPEED} rad/s for {HOLD * 1000:.0f} ms",
        f"stop topic -> at rest   p50 {np.percentile(lat, 50):7.1f} ms   p99 {np.percentile(lat, 99):7.1f} ms"
        f"   max {lat.max():7.1f} ms",
        f"joint-1 travel after    p50 {np.percentile(travel, 50):7.1f} mrad "
        f"p99 {np.percentile(travel, 99):7.1f} mrad",
    ]
    if EXECUTOR_STOP_MS:
        ex = np.array(EXECUTOR_STOP_MS)
        lines.append(
            f"executor: stop msg -> StopMove returned p50 {np.percentile(ex, 50):5.1f} ms "
            f"p99 {np.percentile(ex, 99):5.1f} ms (n={len(ex)})"
        )
    if len(EXECUTOR_STOP_AT) == len(PUBLISHED_AT) > 0:
        delivery = (np.array(EXECUTOR_STOP_AT) - np.array(PUBLISHED_AT)) * 1000.0
        lines.append(
            f"stop publish -> executor callback      p50 {np.percentile(delivery, 50):5.1f} ms "
            f"p99 {np.percentile(delivery, 99):5.1f} ms"
        )
    lines += [
        "# The rest of the time is DDS delivery, franky-sim's impedance controller settling, and CPU",
        "# contention: franky-sim's 1 kHz loop is Python, slowed when the machine is loaded.",
    ]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
