"""franky-sim standing in for the lab's FR3 and RealSense, for tests/test_real_graph.py.

Usage: ``python tests/_real_graph_world.py HOST OUT_DIR TASK_ID SEED``.

Serves a task scene on ``HOST`` over the libfranka protocol (``FrankyWorld``, as the sim graph's
world does), renders the scene's perception camera once from the start state and records it as
a librealsense ``.db3`` file, the format a RealSense recording has, for the real graph's camera
node to play. Prints one JSON line (the recording's path and the camera's pose in the robot
base as ``[x, y, z, qx, qy, qz, qw]``, the real graph's ``camera.extrinsics``), then ``READY``,
and serves until SIGINT or SIGTERM.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from pathlib import Path

from scipy.spatial.transform import Rotation

from afford_perception.realsense import write_recording
from afford_ros.nodes.convert import depth_to_millimetres
from afford_sim.franky_world import FrankyWorld, FrankyWorldConfig, raise_priority
from afford_sim.sim_render import RenderConfig, SceneRenderer

W, H = 640, 480


def main(argv: list[str]) -> int:
    host, out, task_id, seed = argv[0], Path(argv[1]), argv[2], int(argv[3])
    stop = threading.Event()
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # As the sim graph's world does: the robot's 1 kHz stream first (the FR3 has a controller
    # of its own; the stand-in shares two cores with the whole graph).
    raise_priority(FrankyWorldConfig().loop_nice, "the stand-in FR3")
    world = FrankyWorld(FrankyWorldConfig(hostname=host, camera_size=(W, H)))
    try:
        info = world.start(task_id, seed=seed)
        _, _, qpos = world.state()
        renderer = SceneRenderer(info.xml, info.camera.name, info.objects, RenderConfig(width=W, height=H))
        try:
            rgb, depth, _seg, K, base_T_camera = renderer.render(qpos)
        finally:
            renderer.close()
        # A still camera: the same frameset, recorded for 20 s at 5 Hz (playback loses the first
        # few; a low rate leaves the two cores to the nodes).
        frames = [(rgb, depth_to_millimetres(depth))] * 100
        recording = write_recording(out / "scene.db3", frames, K, fps=5)
        quat = Rotation.from_matrix(base_T_camera[:3, :3]).as_quat()  # x, y, z, w
        extrinsics = [float(v) for v in (*base_T_camera[:3, 3], *quat)]
        print(json.dumps({"recording": str(recording), "extrinsics": extrinsics}), flush=True)
        print("READY", flush=True)
        last = world.timing(take_gap=True)
        while not stop.wait(1.0):
            if not world.running:
                print(f"the world stopped: {world.loop_error!r}", flush=True)
                return 1
            # The sim graph's world reports this on /diagnostics; here it goes to stderr, which
            # a failing test shows: a motion that never finished is then explained (or not).
            now = world.timing(take_gap=True)
            behind = now.since(last).behind
            if behind:
                print(f"[stand-in FR3 {time.strftime('%H:%M:%S')}] {behind}", file=sys.stderr, flush=True)
            last = now
    finally:
        world.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
