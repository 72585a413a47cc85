"""How fast the simulated world runs: physics alone, and physics with a camera rendering.

Run:  .venv/bin/python bench/bench_physics.py [--seconds 4] [--fps 10]

The scene is the FR3 with a mug, a bowl with a cube in it, a rack and a cabinet (a few hundred
convex pieces). The arm sweeps between two configurations the whole time so contacts and servos
are exercised. Results are simulated seconds per wall second (the real-time factor); the target
for physics alone is at least 5x on two CPU cores. Rendering numbers are frames per wall second
of the default 640x480 camera for RGB only and for RGB + depth + segmentation.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from afford_sim.scene import ObjectSpec, Relative, SceneSpec, Window, sample_scene
from afford_sim.world import BatchWorld


def bench_scene() -> SceneSpec:
    return SceneSpec(objects=(
        ObjectSpec("cabinet", "cabinet", 0, Window(center=(0.72, 0.27), size=(0.05, 0.05))),
        ObjectSpec("rack", "rack", 0, Window(center=(0.6, -0.3), size=(0.1, 0.1))),
        ObjectSpec("mug", "mug", 0, Window(center=(0.45, 0.0), size=(0.1, 0.1))),
        ObjectSpec("bowl", "bowl", 0, Relative("left_of", "mug")),
        ObjectSpec("cube", "cube", 0, Relative("in", "bowl")),
    ))


def sweep(world: BatchWorld, seconds: float, render_every: float | None) -> tuple[float, float, int]:
    """Move the arm back and forth for ``seconds`` of simulated time.

    Returns:
        wall seconds, CPU seconds of this process, frames rendered.
    """
    q0 = np.array(world.placed.spec.robot_q)
    q1 = q0 + np.array([0.4, 0.2, 0.0, 0.2, 0.0, 0.0, 0.3])
    frames = 0
    leg = 1.0
    start, cpu = time.perf_counter(), time.process_time()
    t = 0.0
    while t < seconds - 1e-9:
        if render_every is None:
            world.move_arm([q1, q0], [leg, 2 * leg], settle=0.0)
        else:
            # Command in slices between frames, as a camera-driven controller would.
            for target in (q1, q0):
                n = int(round(leg / render_every))
                start_q = world.arm_q()
                for k in range(1, n + 1):
                    world.move_arm([start_q + (target - start_q) * k / n], [render_every], settle=0.0)
                    world.render()
                    frames += 1
        t += 2 * leg
    return time.perf_counter() - start, time.process_time() - cpu, frames


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=4.0, help="simulated seconds per measurement")
    ap.add_argument("--fps", type=float, default=10.0, help="camera rate while rendering (frames per sim s)")
    args = ap.parse_args()

    t0 = time.perf_counter()
    placed = sample_scene(bench_scene(), seed=0)
    world = BatchWorld(placed)
    setup = time.perf_counter() - t0
    m = world.model
    print(f"command: {' '.join([os.path.relpath(sys.executable), *sys.argv])}")
    print(f"scene: {len(placed.objects)} objects, {m.ngeom} geoms, nq={m.nq}, "
          f"timestep {m.opt.timestep * 1e3:.1f} ms; build {setup:.2f} s; cores: {os.cpu_count()}")

    # CPU time is reported too: on a shared machine other processes inflate the wall time.
    wall, cpu, _ = sweep(world, args.seconds, None)
    print(f"physics only:            {args.seconds / wall:6.1f} x real time by wall clock, "
          f"{args.seconds / cpu:6.1f} x by process CPU time ({args.seconds} sim s)")

    world.reset()
    world.render()  # the first render creates the GL context; keep it out of the timing
    wall, cpu, frames = sweep(world, args.seconds, 1.0 / args.fps)
    backend = world.gl_backend
    print(f"physics + {args.fps:g} fps RGB-D-seg: {args.seconds / wall:6.1f} x real time by wall clock, "
          f"{args.seconds / cpu:6.1f} x by CPU time ({frames} frames, GL backend {backend})")

    modes = (("rgb only", (True, False, False)), ("rgb+depth+seg", (True, True, True)),
             ("depth+seg only", (False, True, True)))
    for label, (rgb, depth, seg) in modes:
        n = 20
        t = time.perf_counter()
        for _ in range(n):
            world.render(rgb=rgb, depth=depth, segmentation=seg)
        dt = (time.perf_counter() - t) / n
        print(f"render {label:15s} 640x480: {1 / dt:6.1f} fps ({dt * 1e3:.1f} ms)")
    world.close()


if __name__ == "__main__":
    main()
