"""Camera stream across processes: 640x480 RGB-D at 30 Hz over DDS against a pipe baseline,
and franky-sim's real-time factor with and without the camera publishing.

Part 1 (transport). A publisher process sends ``rgb8`` colour and ``16UC1`` depth at ``--fps``
for ``--seconds``; a subscriber process records, per colour frame, the latency from the publish
stamp to its arrival and which frames never arrived. DDS runs with the contract's ``sensor``
QoS (reliable, keep last 2) and, for comparison, best effort (keep last 5, as camera drivers
often publish) and the contract's ``reliable`` (keep last 10). The baseline sends the same
bytes through a ``multiprocessing`` pipe between two processes (no DDS, no serialisation).

Part 2 (simulation). franky-sim with a task scene (the pick-the-mug scene): its real-time
factor alone, then with the sim_world node's render process and ROS publishing running in the
same process, and the camera rate achieved.

Run:  python bench/bench_camera_stream.py [--seconds 10] [--fps 30]
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

W, H = 640, 480
RESULTS = Path(__file__).resolve().parent / "results" / "bench_camera_stream.txt"


def _frames(n: int = 4) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    # Smooth images compress nothing here, but random bytes keep the sizes honest.
    return [
        (rng.integers(0, 255, (H, W, 3), dtype=np.uint8), rng.integers(300, 5000, (H, W), dtype=np.uint16))
        for _ in range(n)
    ]


# -- DDS ---------------------------------------------------------------------------------------


def qos_profile(name: str) -> Any:
    """The contract's profiles, plus ``best_effort`` for comparison."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy

    from afford_ros.qos import qos_profile as contract_profile

    if name == "best_effort":
        return QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT)
    return contract_profile(name)


def _dds_pub(qos: str, fps: float, seconds: float, ready: Any, start: Any, sent: Any) -> None:
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Image

    from afford_ros.nodes.convert import image_to_msg, stamp_from_ns

    rclpy.init()
    node = Node("bench_pub")
    p_rgb = node.create_publisher(Image, "/bench/color", qos_profile(qos))
    p_depth = node.create_publisher(Image, "/bench/depth", qos_profile(qos))
    frames = _frames()
    ready.set()
    start.wait()
    time.sleep(1.0)  # discovery
    period, t0, k = 1.0 / fps, time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        rgb, depth = frames[k % len(frames)]
        stamp = stamp_from_ns(time.time_ns())
        m = image_to_msg(rgb, "rgb8", str(k), stamp)
        p_rgb.publish(m)
        p_depth.publish(image_to_msg(depth, "16UC1", str(k), stamp))
        k += 1
        delay = t0 + k * period - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    sent.value = k
    time.sleep(1.0)
    node.destroy_node()
    rclpy.shutdown()


def _dds_sub(qos: str, seconds: float, ready: Any, out: Any) -> None:
    import rclpy
    from rclpy.node import Node
    from sensor_msgs.msg import Image


    rclpy.init()
    node = Node("bench_sub")
    lat: list[float] = []
    seen: set[int] = set()
    depth_n = [0]

    def on_rgb(m: Image) -> None:
        now = time.time_ns()
        np.frombuffer(m.data, dtype=np.uint8)  # what a consumer does first
        lat.append((now - (m.header.stamp.sec * 1_000_000_000 + m.header.stamp.nanosec)) / 1e6)
        seen.add(int(m.header.frame_id))

    def on_depth(m: Image) -> None:
        depth_n[0] += 1

    node.create_subscription(Image, "/bench/color", on_rgb, qos_profile(qos))
    node.create_subscription(Image, "/bench/depth", on_depth, qos_profile(qos))
    ready.set()
    end = time.monotonic() + seconds + 4.0
    while time.monotonic() < end:
        rclpy.spin_once(node, timeout_sec=0.02)
    out.put((lat, sorted(seen), depth_n[0]))
    node.destroy_node()
    rclpy.shutdown()


def run_dds(qos: str, fps: float, seconds: float) -> dict[str, float]:
    ctx = mp.get_context("spawn")
    r1, r2, start, out, sent = ctx.Event(), ctx.Event(), ctx.Event(), ctx.Queue(), ctx.Value("i", 0)
    sub = ctx.Process(target=_dds_sub, args=(qos, seconds, r2, out))
    pub = ctx.Process(target=_dds_pub, args=(qos, fps, seconds, r1, start, sent))
    sub.start()
    pub.start()
    r1.wait(60)
    r2.wait(60)
    start.set()
    lat, seen, depth_n = out.get(timeout=seconds + 60)
    pub.join(30)
    sub.join(30)
    return _stats(lat, sent.value, len(seen), depth_n, seconds)


# -- Pipe baseline -----------------------------------------------------------------------------


def _pipe_pub(conn: Any, fps: float, seconds: float) -> None:
    frames = _frames()
    period, t0, k = 1.0 / fps, time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        rgb, depth = frames[k % len(frames)]
        conn.send_bytes(np.int64([time.time_ns(), k]).tobytes() + rgb.tobytes())
        conn.send_bytes(depth.tobytes())
        k += 1
        delay = t0 + k * period - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
    conn.send_bytes(b"")
    conn.close()


def run_pipe(fps: float, seconds: float) -> dict[str, float]:
    ctx = mp.get_context("spawn")
    recv, send = ctx.Pipe(duplex=False)
    pub = ctx.Process(target=_pipe_pub, args=(send, fps, seconds))
    pub.start()
    send.close()
    lat: list[float] = []
    n, depth_n = 0, 0
    while True:
        b = recv.recv_bytes()
        if not b:
            break
        now = time.time_ns()
        head = np.frombuffer(b[:16], dtype=np.int64)
        np.frombuffer(b[16:], dtype=np.uint8)
        lat.append((now - int(head[0])) / 1e6)
        n = int(head[1]) + 1
        recv.recv_bytes()
        depth_n += 1
    pub.join()
    return _stats(lat, n, len(lat), depth_n, seconds)


def _stats(lat: list[float], sent: int, got: int, depth_n: int, seconds: float) -> dict[str, float]:
    a = np.asarray(lat) if lat else np.array([np.nan])
    return {
        "sent": sent,
        "received": got,
        "depth_received": depth_n,
        "drop": 1.0 - got / max(sent, 1),
        "p50_ms": float(np.percentile(a, 50)),
        "p99_ms": float(np.percentile(a, 99)),
        "rate_hz": got / seconds,
    }


# -- franky-sim real-time factor -----------------------------------------------------------------


def run_sim(seconds: float) -> dict[str, float]:
    """RTF of franky-sim alone, then inside the sim_world node with camera publishing."""
    from afford_sim.franky_world import FrankyWorld, FrankyWorldConfig

    host = f"127.2.{os.getpid() % 250 + 1}.1"
    res: dict[str, float] = {}
    with FrankyWorld(FrankyWorldConfig(hostname=host)) as w:
        w.start("pick-mug-v1", 0)
        res["rtf_alone"] = w.realtime_factor(seconds)
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from afford_ros.nodes.sim_world import SimWorldNode

    os.environ.setdefault("ROS_DOMAIN_ID", str(150 + os.getpid() % 50))
    sys.setswitchinterval(0.0005)  # as sim_world.main does
    rclpy.init(args=["bench", "--ros-args", "-p", f"hostname:={host}"])
    node = SimWorldNode()
    ex = SingleThreadedExecutor()
    ex.add_node(node)
    try:
        t_end = time.monotonic() + 30
        while node.frames_published < 3 and time.monotonic() < t_end:  # render process warm
            ex.spin_once(timeout_sec=0.05)
        f0, s0, t0 = node.frames_published, node.world.steps, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            ex.spin_once(timeout_sec=0.05)
        dt = time.perf_counter() - t0
        res["rtf_publishing"] = (node.world.steps - s0) * 1e-3 / dt
        res["camera_hz"] = (node.frames_published - f0) / dt
    finally:
        node.close()
        node.destroy_node()
        rclpy.shutdown()
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--fps", type=float, default=30.0)
    ap.add_argument("--no-write", action="store_true", help="print only, do not write the results file")
    args = ap.parse_args(argv)
    load0 = f"{os.getloadavg()[0]:.1f}"
    rows = {
        "pipe (baseline)": run_pipe(args.fps, args.seconds),
        "dds sensor (reliable, 2)": run_dds("sensor", args.fps, args.seconds),
        "dds best effort (5)": run_dds("best_effort", args.fps, args.seconds),
        "dds reliable (10)": run_dds("reliable", args.fps, args.seconds),
    }
    base = rows["pipe (baseline)"]
    lines = [
        f"# {W}x{H} rgb8 + 16UC1 at {args.fps:g} Hz for {args.seconds:g} s, 2 processes",
        f"{'transport':<26}{'sent':>6}{'recv':>6}{'drop':>8}{'p50 ms':>9}{'p99 ms':>9}"
        f"{'x p50':>8}{'x p99':>8}",
    ]
    for name, r in rows.items():
        lines.append(
            f"{name:<26}{r['sent']:>6}{r['received']:>6}{r['drop']:>8.1%}{r['p50_ms']:>9.2f}"
            f"{r['p99_ms']:>9.2f}{r['p50_ms'] / base['p50_ms']:>8.1f}{r['p99_ms'] / base['p99_ms']:>8.1f}"
        )
    sim = run_sim(min(args.seconds, 5.0))
    lines += [
        "",
        "# franky-sim (pick-the-mug scene) real-time factor, 1 kHz loop",
        f"alone:                       {sim['rtf_alone']:.3f}",
        f"with render + ROS publishing: {sim['rtf_publishing']:.3f}  "
        f"(camera published at {sim['camera_hz']:.1f} Hz of {30.0:g} Hz asked)",
    ]
    text = "\n".join(lines)
    print(text)
    if not args.no_write:
        cmd = "python bench/bench_camera_stream.py " + " ".join(argv if argv is not None else sys.argv[1:])
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(
            f"$ {cmd.strip()}\n# {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs "
            f"(shared machine; load average before/after: {load0} / {os.getloadavg()[0]:.1f})\n{text}\n"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
