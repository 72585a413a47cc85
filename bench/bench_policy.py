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

Pi 0.5 (LeRobot's ``pi05``) is not trained here: a checkpoint with random weights is written
as ``lerobot-train`` lays one out (:func:`afford_policy.pi05.write_random_checkpoint`, a small
word-level tokenizer standing in for PaliGemma's) and loaded the same way, at LeRobot's default
settings (50-action chunks, 10 flow-matching steps, prompts padded to 200 tokens). The ``small`` size
keeps every class of the model with narrow layers (LeRobot's standard 4.1-billion-parameter size
needs about 34 GB to load, more than these machines have); ``--pi05-standard`` also builds the
standard size in memory (random weights, no file: minutes and about 17 GB) and times its chunks
on the same frames through the small checkpoint's processors (``--pi05-standard-chunks`` of them:
each takes tens of seconds). The memory column is the growth of
this process's resident memory while the policy loads (sampled every 50 ms), an estimate.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
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


PI05_SMALL = "Pi 0.5 small (random weights)"
PI05_STANDARD = "Pi 0.5 standard, LeRobot's default size (random weights, built in memory)"


class _PeakMemory:
    """The growth of this process's resident memory inside the block, sampled every 50 ms."""

    def __enter__(self) -> _PeakMemory:
        import psutil

        self._proc = psutil.Process()
        self._start = self._peak = self._proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self._peak = max(self._peak, self._proc.memory_info().rss)

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._thread.join()
        self._peak = max(self._peak, self._proc.memory_info().rss)

    @property
    def grew(self) -> int:
        return self._peak - self._start


def _measure(policy: Any, frames: list[dict[str, Any]], chunks: int) -> tuple[int, float, float, float]:
    """(parameters, chunk p50, chunk max, queued action p50) in seconds."""
    params = sum(p.numel() for p in policy.policy.parameters())
    chunk, queued = [], []
    for k in range(chunks + 1):  # the first is a warm-up
        policy.reset()
        c = _time(policy.act, frames[k % len(frames)])
        q = _time(policy.act, frames[(k + 1) % len(frames)])
        if k:
            chunk.append(c)
            queued.append(q)
    return params, statistics.median(chunk), max(chunk), statistics.median(queued)


def _pi05_standard(small: Any, frames: list[dict[str, Any]], chunks: int) -> tuple[Any, ...]:
    """LeRobot's standard Pi 0.5, random weights, in place of the small one's model."""
    import torch
    from lerobot.policies.pi05.modeling_pi05 import PI05Policy

    config = copy.deepcopy(small.policy.config)  # chunks, steps and prompt length: LeRobot's defaults
    config.image_resolution = (224, 224)
    with _PeakMemory() as memory:
        t0 = time.perf_counter()
        torch.manual_seed(0)
        model = PI05Policy(config)
        model.eval()
        build_s = time.perf_counter() - t0
    small.policy = model
    print(f"{PI05_STANDARD}: built in {build_s:.0f} s", flush=True)
    return (PI05_STANDARD, *_measure(small, frames, chunks), build_s, memory.grew)


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
    ap.add_argument("--pi05-standard", action="store_true",
                    help="also build LeRobot's standard Pi 0.5 in memory and time it (minutes, ~17 GB)")
    ap.add_argument("--pi05-standard-chunks", type=int, default=3, help="chunks timed on the standard Pi 0.5")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    os.environ.setdefault("MUJOCO_GL", "egl")
    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    from afford_data.demos import DemoConfig, generate
    from afford_policy import pi05
    from afford_policy.rollout import FRONT_KEY, STATE_KEY, TASK_KEY, WRIST_KEY, LeRobotPolicy, ReplayPolicy
    from afford_policy.training import lerobot_train_command, pretrained_dir

    names = [n for n in [*POLICIES, PI05_SMALL] if not args.only or any(n.startswith(p) for p in args.only)]
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
        small_pi05: Any = None
        for name in names:
            if name == PI05_SMALL:
                words = " ".join(f[TASK_KEY] for f in frames).split()
                tok = pi05.write_tokenizer(Path(tmp) / "tokenizer", words)
                # LeRobot's defaults: 50-action chunks, 10 flow-matching steps, prompts of 200 tokens.
                pretrained = pi05.write_random_checkpoint(
                    Path(tmp) / "pi05", tok, cameras=(FRONT_KEY, WRIST_KEY),
                    image_size=tuple(args.image_size), chunk_size=50, inference_steps=10)
                context: Any = pi05.small_model()
            else:
                kind, extra = POLICIES[name]
                out = Path(tmp) / kind / name.replace(" ", "_").replace(",", "")
                cmd = lerobot_train_command(data, out, policy=kind, steps=1, batch_size=2, workers=0,
                                            log_every=1, extra=extra)
                proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
                if proc.returncode != 0:
                    print(proc.stderr[-3000:], file=sys.stderr)
                    return 1
                pretrained, tok, context = pretrained_dir(out), None, contextlib.nullcontext()
            with context, _PeakMemory() as memory:
                t0 = time.perf_counter()
                policy = LeRobotPolicy(pretrained, tokenizer=tok)
                load_s = time.perf_counter() - t0
            if name == PI05_SMALL:
                small_pi05 = policy
            rows.append((name, *_measure(policy, frames, args.chunks), load_s, memory.grew))
            print(f"{name}: chunk p50 {1000 * rows[-1][2]:.0f} ms", flush=True)
        if args.pi05_standard:
            if small_pi05 is None:
                print("--pi05-standard times the standard model through the small checkpoint's processors: "
                      "leave Pi 0.5 small in --only", file=sys.stderr)
                return 2
            rows.append(_pi05_standard(small_pi05, frames, args.pi05_standard_chunks))
    period = 1.0 / fps
    given = argv if argv is not None else sys.argv[1:]
    w, h = args.image_size
    standard_chunks = f" ({args.pi05_standard_chunks} for the standard Pi 0.5)" if args.pi05_standard else ""
    lines = [
        f"Command: `{shlex.join(['python', 'bench/bench_policy.py', *given])}`",
        f"Two {w}x{h} cameras and the joint state, batch 1, torch on {args.threads} threads, "
        f"{os.cpu_count()} cores, CPU only; {args.chunks} chunks each after a warm-up{standard_chunks}; "
        f"the control period is {1000 * period:.0f} ms ({fps} fps, the dataset's).",
        "",
        "| policy | parameters | load (s) | memory while loading (GB) | chunk p50 (ms) | chunk max (ms) | "
        "chunk / control period | queued action p50 (ms) |",
        "|---|---|---|---|---|---|---|---|",
        f"| replay (the control) | 0 | - | - | {1000 * replay_s:.3f} | - | {replay_s / period:.4f} | - |",
    ]
    for name, params, c50, cmax, q50, load_s, grew in rows:
        lines.append(f"| {name} | {params / 1e6:.1f}M | {load_s:.1f} | {grew / 1e9:.2f} | {1000 * c50:.0f} | "
                     f"{1000 * cmax:.0f} | {c50 / period:.2f} | {1000 * q50:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
