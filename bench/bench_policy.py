"""Inference time of the policies the graph serves, on this machine's CPUs, against the control
period they must fit in.

    python bench/bench_policy.py --out bench/results/bench_policy.txt

Makes a small dataset (``afford generate``, two episodes, ``--image-size``), trains each policy
one step with ``afford policy train``'s flags (inference time does not depend on the weights),
loads it as the policy node does (``LeRobotPolicy``: LeRobot's processors, ``select_action``),
and times, over ``--chunks`` fresh chunks on frames of the dataset's own scene:

- a chunk: the first ``act`` after ``reset`` (ACT predicts its whole action chunk, Diffusion
  Policy denoises one; LeRobot's queue then hands out the chunk's actions);
- a queued action: the next ``act``.

Each is compared in the same run with the control period (1 / fps of the dataset: the time a
step has on the robot) and with the replay control (``ReplayPolicy``). Policies: ACT at
LeRobot's defaults (no pretrained backbone), Diffusion Policy at LeRobot's defaults but 10 DDIM
steps, and a small Diffusion Policy (U-Net down_dims 128/256/512, 84x84 crops: the size that
trains at a few s/step here). torch uses ``--threads`` threads (2: this machine's cores).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

POLICIES: dict[str, tuple[str, list[str]]] = {
    "ACT (defaults)": ("act", []),
    "Diffusion Policy, 10 DDIM steps": (
        "diffusion", ["--policy.noise_scheduler_type=DDIM", "--policy.num_inference_steps=10"]),
    "Diffusion Policy small, 10 DDIM steps": (
        "diffusion", ["--policy.noise_scheduler_type=DDIM", "--policy.num_inference_steps=10",
                      "--policy.down_dims=[128,256,512]", "--policy.crop_shape=[84,84]"]),
}


def _time(fn: Any, *args: Any) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--task", default="place-banana-plate-v1")
    ap.add_argument("--image-size", type=int, nargs=2, default=[128, 128])
    ap.add_argument("--chunks", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", nargs="*", default=None, help="a subset of the policies, by name prefix")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    os.environ.setdefault("MUJOCO_GL", "egl")
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    from afford_data.demos import DemoConfig, generate
    from afford_policy.rollout import FRONT_KEY, STATE_KEY, TASK_KEY, WRIST_KEY, LeRobotPolicy, ReplayPolicy
    from afford_policy.training import lerobot_train_command, pretrained_dir

    names = [n for n in POLICIES if not args.only or any(n.startswith(p) for p in args.only)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "ds"
        generate(DemoConfig(args.task, 2, image_size=tuple(args.image_size)), data)
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        ds = LeRobotDataset(f"afford/{args.task}", root=data, video_backend="pyav")
        fps = ds.meta.fps
        frames = []
        for i in range(0, min(len(ds), 40), 4):
            f = ds[i]
            frames.append({
                FRONT_KEY: (f[FRONT_KEY].permute(1, 2, 0).numpy() * 255).astype(np.uint8),
                WRIST_KEY: (f[WRIST_KEY].permute(1, 2, 0).numpy() * 255).astype(np.uint8),
                STATE_KEY: f[STATE_KEY].numpy(), TASK_KEY: f[TASK_KEY],
            })
        replay = ReplayPolicy(np.zeros((10, 8)), 0, "")
        replay_s = statistics.median(_time(replay.act, frames[0]) for _ in range(100))
        for name in names:
            kind, extra = POLICIES[name]
            out = Path(tmp) / kind / name.replace(" ", "_").replace(",", "")
            cmd = lerobot_train_command(data, out, policy=kind, steps=1, batch_size=2, workers=0,
                                        log_every=1, extra=extra)
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
            if proc.returncode != 0:
                print(proc.stderr[-3000:], file=sys.stderr)
                return 1
            t0 = time.perf_counter()
            policy = LeRobotPolicy(pretrained_dir(out))
            load_s = time.perf_counter() - t0
            params = sum(p.numel() for p in policy.policy.parameters())
            chunk, queued = [], []
            for k in range(args.chunks + 1):  # the first is a warm-up
                policy.reset()
                c = _time(policy.act, frames[k % len(frames)])
                q = _time(policy.act, frames[(k + 1) % len(frames)])
                if k:
                    chunk.append(c)
                    queued.append(q)
            rows.append((name, params, load_s, statistics.median(chunk), max(chunk),
                         statistics.median(queued)))
            print(f"{name}: chunk p50 {1000 * rows[-1][3]:.0f} ms", flush=True)
    period = 1.0 / fps
    given = argv if argv is not None else sys.argv[1:]
    w, h = args.image_size
    lines = [
        f"Command: `{shlex.join(['python', 'bench/bench_policy.py', *given])}`",
        f"Two {w}x{h} cameras and the joint state, batch 1, torch on {args.threads} threads, "
        f"{os.cpu_count()} cores, CPU only; {args.chunks} chunks each after a warm-up; the control period "
        f"is {1000 * period:.0f} ms ({fps} fps, the dataset's).",
        "",
        "| policy | parameters | load (s) | chunk p50 (ms) | chunk max (ms) | chunk / control period | "
        "queued action p50 (ms) |",
        "|---|---|---|---|---|---|---|",
        f"| replay (the control) | 0 | - | {1000 * replay_s:.3f} | - | {replay_s / period:.4f} | - |",
    ]
    for name, params, load_s, c50, cmax, q50 in rows:
        lines.append(f"| {name} | {params / 1e6:.1f}M | {load_s:.1f} | {1000 * c50:.0f} | "
                     f"{1000 * cmax:.0f} | {c50 / period:.2f} | {1000 * q50:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
