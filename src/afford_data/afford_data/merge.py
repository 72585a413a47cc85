"""Datasets of one task made apart (other machines, other seed ranges) merged into one, with
LeRobot's own aggregation.

``afford generate`` on two machines, say ``--first-seed 0`` and ``--first-seed 1000``, makes two
datasets of the same task; :func:`merge` joins them with ``lerobot.datasets.aggregate``
(frames, videos, episode metadata, statistics, tasks) and carries our per-episode metadata
(``meta/afford_episodes.jsonl``: seed, instruction, randomization draw, stage checks) across,
episode indices renumbered as LeRobot renumbers them (the sources in the order given, each in
its own order). The result is checked before it is moved into place: LeRobot reads it back
with every episode, and each episode's frame count is the one its source recorded.

Refused, before anything is written: fewer than two sources, a source that is not an
``afford generate`` dataset, sources of different tasks, robots, frame rates or camera sizes,
the same scene seed in two sources (the same demonstration twice), an output that exists.
``out`` holds the whole merged dataset or nothing.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from afford_data.dataset import EPISODES_FILE, DemoDataset


def _signature(ds: DemoDataset) -> dict[str, Any]:
    """What must agree between sources."""
    w, h = ds.image_size
    return {"task": ds.task_id, "robot": ds.robot, "fps": ds.fps, "camera size": f"{w}x{h}"}


@dataclass
class MergeReport:
    """What :func:`merge` made."""

    out: Path
    sources: list[Path]
    episodes: int
    frames: int

    def line(self) -> str:
        return f"{self.out}: {self.episodes} episodes, {self.frames} frames from {len(self.sources)} datasets"


def check_sources(roots: Sequence[Path | str]) -> list[DemoDataset]:
    """The sources, read and checked (module docstring).

    Raises:
        FileNotFoundError / ValueError: what is wrong, naming the dataset.
    """
    if len(roots) < 2:
        raise ValueError(f"give at least two datasets to merge, got {len(roots)}")
    resolved = [Path(r).resolve() for r in roots]
    if len(set(resolved)) != len(resolved):
        raise ValueError("a dataset is named twice")
    sources = [DemoDataset.load(r) for r in roots]
    first = _signature(sources[0])
    for src in sources[1:]:
        sig = _signature(src)
        differ = [k for k in first if sig[k] != first[k]]
        if differ:
            what = "; ".join(f"{k} {first[k]} in {sources[0].root}, {sig[k]} in {src.root}" for k in differ)
            raise ValueError(f"these datasets cannot be merged into one: {what}")
    seen: dict[int, Path] = {}
    for src in sources:
        for e in src.episodes:
            seed = int(e["seed"])
            if seed in seen:
                raise ValueError(
                    f"scene seed {seed} is in both {seen[seed]} and {src.root}: the same "
                    "demonstration twice (generate the shards with distinct --first-seed ranges)"
                )
            seen[seed] = src.root
    return sources


def merge(roots: Sequence[Path | str], out: Path | str, *, repo_id: str | None = None) -> MergeReport:
    """Merge the ``afford generate`` datasets at ``roots`` into ``out`` (module docstring).

    Raises:
        FileExistsError: ``out`` exists.
        FileNotFoundError / ValueError: sources that cannot be merged (:func:`check_sources`).
        RuntimeError: the merged dataset does not read back as its sources (nothing is left at
            ``out``).
    """
    from lerobot.datasets.aggregate import aggregate_datasets
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    out = Path(out)
    if out.exists():
        raise FileExistsError(f"{out} exists; merge into a new directory")
    sources = check_sources(roots)
    task_id = sources[0].task_id
    repo_id = repo_id or f"afford/{task_id}"
    tmp = out.with_name(out.name + ".merging")
    if tmp.exists():
        shutil.rmtree(tmp)  # a merge killed before it finished
    try:
        aggregate_datasets(
            repo_ids=[repo_id] * len(sources),
            aggr_repo_id=repo_id,
            roots=[s.root for s in sources],
            aggr_root=tmp,
        )
        episodes = [e for s in sources for e in s.episodes]
        with open(tmp / "meta" / EPISODES_FILE, "w") as fh:
            for i, e in enumerate(episodes):
                fh.write(json.dumps({**e, "episode_index": i}, sort_keys=True, default=str) + "\n")
        merged = LeRobotDataset(repo_id, root=tmp, video_backend="pyav")
        lengths = [int(merged.meta.episodes[i]["length"]) for i in range(merged.meta.total_episodes)]
        want = [int(e["frames"]) for e in episodes]
        if lengths != want:
            raise RuntimeError(f"the merged dataset's episode lengths {lengths} are not its sources' {want}")
        (tmp / "README.md").write_text(_card(sources, repo_id, len(episodes), sum(want)))
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    os.replace(tmp, out)
    return MergeReport(out, [s.root for s in sources], len(episodes), sum(want))


def _card(sources: list[DemoDataset], repo_id: str, episodes: int, frames: int) -> str:
    rows = "\n".join(
        f"| `{s.root}` | {len(s.episodes)} | {min(int(e['seed']) for e in s.episodes)}.."
        f"{max(int(e['seed']) for e in s.episodes)} |"
        for s in sources
    )
    cards = "\n\n".join(
        f"### `{s.root.name}`\n\n" + (s.root / "README.md").read_text().split("\n", 1)[-1].strip()
        for s in sources
        if (s.root / "README.md").is_file()
    )
    return f"""# {repo_id}

{episodes} episodes ({frames} frames) of `{sources[0].task_id}`, merged by `afford merge` with
LeRobot's `aggregate_datasets` from {len(sources)} datasets made by `afford generate`; episode
indices follow the sources in this order. Per-episode metadata (seed, randomization draw, stage
checks) is in `meta/{EPISODES_FILE}`.

| source | episodes | scene seeds |
|---|---|---|
{rows}

## How each source was made

{cards}
"""
