"""Benchmark of affordance inference on CPU: the learned model against the geometric source.

Clouds: single camera views of procedural assets (``grounding.views.single_view``: one side,
depth noise, dropout), exactly 2,048 points each, one per (category, seed). On each cloud the
timed calls are:

- ``learned model``: one query phrase through the network (encode the cloud, match the query),
  text embedding cached. This is the number the issue's "under 30 ms for a 2,048-point cloud"
  target is about.
- ``learned ground``: ``LearnedSource.ground(cloud, part)``, which asks several affordance
  phrases on one encoding (text embeddings cached, as a running node would cache them).
- ``geometric ground``: ``GeometricSource.ground(cloud, part)`` on the same cloud and part,
  a fresh source each call (it caches the last cloud's partition).
- ``text embedding``: MiniLM on one new phrase, reported once, since a node pays it only for a
  phrase it has not seen before.

Each call is warmed up, then timed ``--runs`` times per cloud; p50/p90 are over all clouds and
runs. Timing does not depend on the weight values, so without ``--weights`` (and without the
shipped file) a randomly initialised model of the default configuration is timed, and the
report says so. Torch threads: the default (one per core) and 1.

Run:  .venv/bin/python bench/bench_affordance.py [--weights PATH] [--runs 50] [--seeds 2]
      [--out bench/results/bench_affordance.txt]
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch

from afford_core.ontology import category
from afford_core.types import ObjectCloud
from afford_perception.affordance.model import (
    AffordanceModel,
    AffordanceModelConfig,
    load_model,
    predict_many,
    save_model,
)
from afford_perception.affordance.source import DEFAULT_WEIGHTS, LearnedSource, affordance_phrase
from afford_perception.grounding import GroundingSource, make_source
from afford_perception.grounding.views import camera_position, single_view, yaw_pose

#: (category, part grounded): one per geometric rule family, parts with an affordance.
CASES: tuple[tuple[str, str], ...] = (
    ("mug", "handle"),
    ("kettle", "spout"),
    ("pan", "handle"),
    ("hammer", "handle"),
    ("bottle", "cap"),
    ("cabinet", "drawer_handle"),
)
NUM_POINTS = 2048


@dataclass(frozen=True)
class BenchConfig:
    """Benchmark size.

    Attributes:
        runs: Timed calls per cloud and method, after ``warmup``.
        warmup: Untimed calls per cloud and method first (allocator, lazy imports, caches).
        seeds: Shapes per category.
        weights: Checkpoint to time; ``None``: the shipped file if present, else random init.
    """

    runs: int = 50
    warmup: int = 3
    seeds: int = 2
    weights: str | None = None

    def __post_init__(self) -> None:
        if self.runs < 5 or self.warmup < 1 or self.seeds < 1:
            raise ValueError(
                f"need runs >= 5, warmup >= 1, seeds >= 1; got {self.runs}, {self.warmup}, {self.seeds}"
            )


def make_clouds(seeds: int) -> list[tuple[ObjectCloud, str]]:
    """One 2,048-point single view per (case, seed), with the part to ground."""
    from afford_sim.assets import make  # the asset library lives with the simulator

    clouds = []
    for name, part in CASES:
        for seed in range(seeds):
            asset = make(name, seed)
            lo, hi = asset.mesh().bounds
            target = np.array([0.0, 0.0, 0.5 * (lo[2] + hi[2])])
            cam = camera_position(target, 0.6 + 0.5 * float(np.linalg.norm(hi - lo)), 0.7 + seed, 0.6)
            samples = 12000
            cloud = single_view(asset, yaw_pose(0.0, 0.0, 0.0, 0.3 * seed), cam, n=samples, seed=seed)
            while len(cloud) < NUM_POINTS and samples < 100000:  # small objects: sample denser
                samples *= 2
                cloud = single_view(asset, yaw_pose(0.0, 0.0, 0.0, 0.3 * seed), cam, n=samples, seed=seed)
            if len(cloud) < NUM_POINTS:
                raise RuntimeError(f"{name} seed {seed}: only {len(cloud)} visible points")
            pick = np.sort(np.random.default_rng(seed).choice(len(cloud), NUM_POINTS, replace=False))
            clouds.append((ObjectCloud(cloud.points[pick], name), part))
    return clouds


class CachedEmbedder:
    """MiniLM embeddings, each phrase embedded once (what a long-running node does)."""

    def __init__(self) -> None:
        from afford_perception.text_embedding import embed

        self._embed = embed
        self.cache: dict[str, np.ndarray] = {}

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if missing:
            for t, row in zip(missing, self._embed(missing), strict=True):
                self.cache[t] = np.asarray(row, dtype=np.float32)
        return np.stack([self.cache[t] for t in texts])


def time_calls(fn: Callable[[], object], runs: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def fresh_ground(kind: type[GroundingSource], cloud: ObjectCloud, part: str) -> np.ndarray:
    return kind().ground(cloud, part)


def percentiles(seconds: list[float]) -> tuple[float, float]:
    ms = np.asarray(seconds) * 1e3
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 90))


def resolve_model(weights: str | None) -> tuple[AffordanceModel, Path, str]:
    """The model to time, a checkpoint path LearnedSource can load, and where it came from."""
    if weights is not None:
        return load_model(weights), Path(weights), f"checkpoint {weights}"
    if DEFAULT_WEIGHTS.is_file():
        return load_model(DEFAULT_WEIGHTS), DEFAULT_WEIGHTS, f"shipped checkpoint {DEFAULT_WEIGHTS}"
    torch.manual_seed(0)
    model = AffordanceModel(AffordanceModelConfig()).eval()
    path = save_model(model, Path(tempfile.mkdtemp()) / "random.pt")
    return (
        model,
        path,
        (
            "RANDOMLY INITIALISED model of the default config (no weights given or shipped; "
            "timing does not depend on weight values)"
        ),
    )


def run(config: BenchConfig) -> list[str]:
    model, path, origin = resolve_model(config.weights)
    embedder = CachedEmbedder()
    learned = LearnedSource(weights=path, embedder=embedder)
    geometric = make_source("geometric")
    clouds = make_clouds(config.seeds)
    phrases = {part: affordance_phrase(part, category(c.category).affordances[part][0]) for c, part in clouds}
    embedder(list(phrases.values()))

    t0 = time.perf_counter()
    embedder._embed(["the part you press to open it"])
    text_ms = [(time.perf_counter() - t0) * 1e3]
    for i in range(9):
        t0 = time.perf_counter()
        embedder._embed([f"where you hold it, variant {i}"])
        text_ms.append((time.perf_counter() - t0) * 1e3)

    default_threads = torch.get_num_threads()
    lines = [
        f"model: {origin}",
        f"model parameters: {sum(p.numel() for p in model.parameters()):,}; config num_points "
        f"{model.config.num_points}",
        f"clouds: {len(clouds)} single views of {NUM_POINTS} points "
        f"({', '.join(f'{c}:{p}' for c, p in CASES)}; "
        f"{config.seeds} shapes each); {config.runs} timed runs per cloud after {config.warmup} warm-up",
        f"text embedding (MiniLM, one new phrase, uncached): p50 {np.percentile(text_ms, 50):.1f} ms over "
        f"{len(text_ms)} phrases",
        "",
        f"{'torch threads':>13}  {'method':<18} {'p50 ms':>8} {'p90 ms':>8}",
    ]
    summary: dict[tuple[int, str], tuple[float, float]] = {}
    for threads in dict.fromkeys((default_threads, 1)):
        torch.set_num_threads(threads)
        timings: dict[str, list[float]] = {"learned model": [], "learned ground": [], "geometric ground": []}
        for cloud, part in clouds:
            points = cloud.points
            # The category as the source tells it (None for one the checkpoint never learned).
            told = learned.category_embeddings([cloud.category]).get(cloud.category)
            timings["learned model"] += time_calls(
                partial(predict_many, model, points, [phrases[part]], embedder, told), config.runs,
                config.warmup,
            )
            timings["learned ground"] += time_calls(
                partial(learned.ground, cloud, part), config.runs, config.warmup
            )
            # A fresh source per call: GeometricSource keeps the last cloud's partition, and a
            # repeated cloud would time a dictionary lookup instead of the partition.
            timings["geometric ground"] += time_calls(
                partial(fresh_ground, type(geometric), cloud, part), config.runs, config.warmup
            )
        for method, seconds in timings.items():
            p50, p90 = percentiles(seconds)
            summary[(threads, method)] = (p50, p90)
            lines.append(f"{threads:>13}  {method:<18} {p50:>8.2f} {p90:>8.2f}")
        geo = summary[(threads, "geometric ground")][0]
        model_ratio = summary[(threads, "learned model")][0] / geo
        ground_ratio = summary[(threads, "learned ground")][0] / geo
        lines.append(
            f"{threads:>13}  ratio of p50s: learned model / geometric {model_ratio:.2f}, "
            f"learned ground / geometric {ground_ratio:.2f}"
        )
    torch.set_num_threads(default_threads)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--weights", default=None, help="checkpoint; default the shipped one, else random init"
    )
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--note", default="", help="a line recorded in the results (e.g. machine load)")
    parser.add_argument("--out", default="bench/results/bench_affordance.txt")
    args = parser.parse_args(argv)
    config = BenchConfig(runs=args.runs, warmup=args.warmup, seeds=args.seeds, weights=args.weights)
    command = "python bench/bench_affordance.py " + shlex.join(sys.argv[1:] if argv is None else argv)
    header = [
        "# Affordance inference time on CPU: learned model vs geometric source, 2,048-point clouds",
        f"command: {command}",
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"torch {torch.__version__}, default torch threads {torch.get_num_threads()}",
    ]
    if args.note:
        header.append(f"note: {args.note}")
    lines = header + run(config)
    text = "\n".join(lines) + "\n"
    print(text, end="")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
