"""An ``afford generate`` dataset read back: its metadata (``meta/info.json``, our
``meta/afford_episodes.jsonl``) and, through LeRobot's own loader, its actions. What the policy
side (rollouts, replay, serving) and ``afford merge`` read a dataset with.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from afford_sim.policy_cameras import FRONT, WRIST

#: Feature keys of a frame (``afford_data.demos.features``) and of a policy's observation.
FRONT_KEY = f"observation.images.{FRONT}"
WRIST_KEY = f"observation.images.{WRIST}"
STATE_KEY = "observation.state"
TASK_KEY = "task"
ACTION_KEY = "action"
#: Our per-episode metadata, beside LeRobot's own in ``meta/``.
EPISODES_FILE = "afford_episodes.jsonl"


@dataclass(frozen=True)
class DemoDataset:
    """An ``afford generate`` dataset, as the rollout needs it.

    Attributes:
        root: The dataset directory.
        repo_id: The repo id it is read under.
        task_id: The task its episodes show.
        robot: The arm they were recorded on.
        fps: Frames per simulated second.
        image_size: (width, height) of both cameras.
        episodes: ``meta/afford_episodes.jsonl``, one dict per episode (``episode_index``,
            ``seed``, ``instruction``, ``stages``, ``frames`` ...), in episode order.
    """

    root: Path
    repo_id: str
    task_id: str
    robot: str
    fps: int
    image_size: tuple[int, int]
    episodes: tuple[dict[str, Any], ...]

    @staticmethod
    def load(root: Path | str, repo_id: str | None = None) -> DemoDataset:
        """Read a dataset's metadata (``meta/info.json``, ``meta/afford_episodes.jsonl``)."""
        root = Path(root)
        info_path, eps_path = root / "meta" / "info.json", root / "meta" / EPISODES_FILE
        for p in (info_path, eps_path):
            if not p.is_file():
                raise FileNotFoundError(f"{root} is not a dataset written by `afford generate`: no {p.name}")
        info = json.loads(info_path.read_text())
        episodes = tuple(json.loads(line) for line in eps_path.read_text().splitlines() if line.strip())
        if not episodes:
            raise ValueError(f"{root} holds no episodes")
        task_ids = {e["task_id"] for e in episodes}
        if len(task_ids) != 1:
            raise ValueError(f"{root} mixes tasks {sorted(task_ids)}")
        h, w = info["features"][FRONT_KEY]["shape"][:2]
        task_id = task_ids.pop()
        return DemoDataset(
            root=root,
            repo_id=repo_id or f"afford/{task_id}",
            task_id=task_id,
            robot=str(info.get("robot_type") or episodes[0].get("robot") or "fr3"),
            fps=int(info["fps"]),
            image_size=(int(w), int(h)),
            episodes=episodes,
        )

    @property
    def longest_seconds(self) -> float:
        """Duration of the longest episode at the dataset's frame rate (s)."""
        return max(int(e["frames"]) for e in self.episodes) / self.fps

    def episode_for_seed(self, seed: int) -> dict[str, Any]:
        for e in self.episodes:
            if int(e["seed"]) == seed:
                return e
        raise KeyError(
            f"{self.root} has no episode of seed {seed}; its seeds: {[int(e['seed']) for e in self.episodes]}"
        )

    def actions(self, episode_index: int) -> np.ndarray:
        """The ``action`` column of one episode (frames, 8), read with LeRobot's own loader."""
        by_episode = _lerobot_actions(str(self.root.resolve()), self.repo_id)
        if episode_index not in by_episode:
            raise KeyError(f"{self.root} has no episode {episode_index}")
        return by_episode[episode_index].copy()


@functools.lru_cache(maxsize=4)
def _lerobot_actions(root: str, repo_id: str) -> dict[int, np.ndarray]:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset(repo_id, root=root, video_backend="pyav")
    out: dict[int, np.ndarray] = {}
    for i in range(ds.meta.total_episodes):
        ep = ds.meta.episodes[i]
        lo, hi = int(ep["dataset_from_index"]), int(ep["dataset_to_index"])
        rows = ds.hf_dataset.select(range(lo, hi))
        if any(int(e) != int(ep["episode_index"]) for e in rows["episode_index"]):
            raise RuntimeError(f"{root}: rows {lo}..{hi} are not all of episode {ep['episode_index']}")
        out[int(ep["episode_index"])] = np.stack([np.asarray(a, dtype=np.float64) for a in rows[ACTION_KEY]])
    return out
