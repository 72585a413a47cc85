"""Datasets made apart, merged with LeRobot's own aggregation: LeRobot reads the result back with
every episode, each episode's frames and metadata are its source's, and what cannot be merged
is refused before anything is written."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from afford_data.demos import DemoConfig, generate
from afford_data.merge import merge

TASK = "place-banana-plate-v1"
SIZE = (32, 32)


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Two machines' worth: seeds 0.. and 100.."""
    root = tmp_path_factory.mktemp("shards")
    out = []
    for name, first in (("a", 0), ("b", 100)):
        generate(DemoConfig(TASK, 2 if name == "a" else 1, first_seed=first, image_size=SIZE), root / name)
        out.append(root / name)
    return out


def _lerobot(root: Path) -> object:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    return LeRobotDataset(f"afford/{TASK}", root=root, video_backend="pyav")


def _meta(root: Path) -> list[dict]:
    return [json.loads(x) for x in (root / "meta" / "afford_episodes.jsonl").read_text().splitlines()]


def test_lerobot_reads_the_merge_back_episode_for_episode(shards: list[Path], tmp_path: Path) -> None:
    from afford_cli.cli import main

    out = tmp_path / "merged"
    assert main(["merge", *map(str, shards), "--out", str(out)]) == 0
    merged, parts = _lerobot(out), [_lerobot(s) for s in shards]
    assert merged.num_episodes == 3  # type: ignore[attr-defined]
    assert merged.num_frames == sum(p.num_frames for p in parts)  # type: ignore[attr-defined]
    meta = _meta(out)
    assert [m["episode_index"] for m in meta] == [0, 1, 2]
    assert [m["seed"] for m in meta] == [m["seed"] for s in shards for m in _meta(s)]
    # The third merged episode is shard b's first: same actions, same instruction, same picture.
    start = sum(m["frames"] for m in meta[:2])
    for k in (0, meta[2]["frames"] - 1):
        got, want = merged[start + k], parts[1][k]  # type: ignore[index]
        assert got["episode_index"] == 2 and got["task"] == want["task"] == meta[2]["instruction"]
        np.testing.assert_array_equal(got["action"].numpy(), want["action"].numpy())
        # Videos are copied, not re-encoded: the decoded frames are identical.
        np.testing.assert_array_equal(
            got["observation.images.front"].numpy(), want["observation.images.front"].numpy()
        )
    card = (out / "README.md").read_text()
    seed_b = meta[2]["seed"]  # 100, or the next seed if 100's attempt failed
    assert "afford merge" in card and str(shards[0]) in card and f"| {seed_b}..{seed_b} |" in card
    from afford_policy.rollout import DemoDataset

    assert DemoDataset.load(out).episode_for_seed(seed_b)["episode_index"] == 2


def test_what_cannot_be_merged_is_refused_and_nothing_is_written(shards: list[Path], tmp_path: Path) -> None:
    out = tmp_path / "merged"
    with pytest.raises(ValueError, match="scene seed 0 is in both"):
        merge([shards[0], _copy(shards[0], tmp_path / "again")], out)
    with pytest.raises(ValueError, match="at least two"):
        merge([shards[0]], out)
    with pytest.raises(FileNotFoundError, match="not a dataset written by `afford generate`"):
        merge([shards[0], tmp_path], out)
    other = _copy(shards[1], tmp_path / "other-fps")
    info = json.loads((other / "meta" / "info.json").read_text())
    info["fps"] = 20
    (other / "meta" / "info.json").write_text(json.dumps(info))
    with pytest.raises(ValueError, match="fps 10 in .*, 20 in"):
        merge([shards[0], other], out)
    assert not out.exists() and not out.with_name("merged.merging").exists()
    out.mkdir()
    with pytest.raises(FileExistsError):
        merge(shards, out)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst
