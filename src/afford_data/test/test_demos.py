"""Demonstrations recorded from the scripted pipeline, written and read back by LeRobot itself.

The dataset is only useful if LeRobot's own loader reads what we meant to write: the frames of
every kept episode, their instruction, a state and an action that move with the arm, and two
cameras (one of them riding on the hand). A killed run must resume without redoing or losing a
finished episode, and a failed rollout must never end up in the data.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from afford_core.files import TMP_MARK
from afford_data import demos
from afford_data.demos import DemoConfig, generate

TASK = "place-banana-plate-v1"
SIZE = (32, 32)


def _read(root: Path) -> tuple[object, list[dict[str, object]]]:
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    ds = LeRobotDataset(f"afford/{TASK}", root=root, video_backend="pyav")
    meta = [json.loads(line) for line in (root / "meta" / "afford_episodes.jsonl").read_text().splitlines()]
    return ds, meta


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, demos.GenerationReport]:
    out = tmp_path_factory.mktemp("demos") / "ds"
    return out, generate(DemoConfig(TASK, 2, image_size=SIZE), out)


Dataset = tuple[Path, demos.GenerationReport]


def test_two_episodes_are_written_and_read_back_by_lerobot(dataset: Dataset) -> None:
    out, report = dataset
    assert (report.episodes, report.failures) == (2, 0) and not out.with_name("ds.staging").exists()
    ds, meta = _read(out)
    assert ds.num_episodes == 2 and ds.fps == 10  # type: ignore[attr-defined]
    assert ds.num_frames == report.frames == sum(m["frames"] for m in meta)  # type: ignore[attr-defined]
    from afford_sim.tasks import get_task

    phrasings = set(get_task(TASK).instructions)
    first = ds[0]  # type: ignore[index]
    assert first["observation.images.front"].shape == (3, SIZE[1], SIZE[0])
    assert first["observation.images.wrist"].shape == (3, SIZE[1], SIZE[0])
    assert first["task"] in phrasings and first["task"] == meta[0]["instruction"]
    for m in meta:
        assert m["success"] and all(m["stages"].values()) and "banana" in m["randomization"]
    # One episode's state and action, frame by frame: the arm moves, the hand closes on the
    # banana and opens over the plate, the measured joints follow the setpoints.
    n = meta[0]["frames"]
    frames = [ds[i] for i in range(n)]  # type: ignore[index]
    state = np.stack([f["observation.state"].numpy() for f in frames])
    action = np.stack([f["action"].numpy() for f in frames])
    grip = action[:, 7]
    assert grip[0] == 0 and grip.max() == 1 and grip[-1] == 0
    assert np.ptp(state[:, :7], axis=0).max() > 0.3
    assert np.abs(state[:, :7] - action[:, :7]).max() < 0.35
    assert state[:, 7].min() < 0.06 < state[:, 7].max()  # opening (m): open, then on the banana
    ee = np.stack([f["action.ee"].numpy() for f in frames])
    assert np.allclose(np.linalg.norm(ee[:, 3:7], axis=1), 1.0, atol=1e-4) and np.array_equal(ee[:, 7], grip)
    # The wrist camera sees something else than the third-person one, and its view changes.
    wrist = np.stack([f["observation.images.wrist"].numpy() for f in frames[:: max(1, n // 4)]])
    front = np.stack([f["observation.images.front"].numpy() for f in frames[:: max(1, n // 4)]])
    assert np.abs(wrist - front).mean() > 0.05 and np.ptp(wrist, axis=0).mean() > 0.02
    card = (out / "README.md").read_text()
    assert f"afford generate --task {TASK} --episodes 2" in card and "2 kept" in card


def test_lerobot_train_trains_act_on_it(dataset: Dataset, tmp_path: Path) -> None:
    """LeRobot's own trainer, offline on the CPU, two steps of ACT: it loads our features,
    normalises them and writes a checkpoint (the flags docs/demonstrations.md gives)."""
    import re
    import subprocess

    out, _ = dataset
    # The flags afford policy train uses (offline, CPU, PyAV, no backbone download).
    from afford_policy.training import lerobot_train_command

    cmd = lerobot_train_command(out, tmp_path / "act", policy="act", steps=2, batch_size=2, workers=0,
                                log_every=1)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    losses = [float(x) for x in re.findall(r"\bloss:([0-9.]+)", proc.stdout + proc.stderr)]
    assert len(losses) == 2 and all(np.isfinite(losses))
    assert (tmp_path / "act" / "checkpoints" / "last" / "pretrained_model" / "model.safetensors").is_file()


def test_two_processes_or_ray_make_the_same_episodes(dataset: Dataset, tmp_path: Path) -> None:
    """Attempts run side by side are taken in seed order and the first successes kept: the
    dataset does not depend on how many processes made it, nor on whether Ray ran them (the
    simulation is deterministic)."""
    out, _ = dataset
    _, one = _read(out)
    for executor in ("local", "ray"):  # Ray: a real local instance of 2 CPUs
        twin = tmp_path / executor
        generate(DemoConfig(TASK, 2, image_size=SIZE), twin, jobs=2, executor=executor)
        _, two = _read(twin)
        assert [(m["seed"], m["frames"], m["instruction"]) for m in one] == \
            [(m["seed"], m["frames"], m["instruction"]) for m in two], executor


def test_a_killed_run_resumes_and_failures_are_counted_not_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seed 0 is staged as if a killed run had finished it, with a torn episode beside it;
    seed 1 fails (its stage check said no); the run goes on to seed 2 and keeps 0 and 2."""
    out = tmp_path / "ds"
    config = DemoConfig(TASK, 2, image_size=SIZE, use_videos=False)
    staging = tmp_path / "ds.staging"
    staging.mkdir()
    (staging / "config.json").write_text(json.dumps(config.as_dict()))
    meta, arrays = demos.record_episode(config, 0)
    demos._stage(staging, meta, arrays)
    torn = staging / f".episode_000001.npz{TMP_MARK}99"
    torn.write_bytes(b"torn")
    real = demos.record_episode
    seen: list[int] = []

    def record(cfg: DemoConfig, seed: int) -> tuple[dict[str, object], dict[str, np.ndarray] | None]:
        seen.append(seed)
        if seed == 1:
            return {"seed": 1, "success": False, "stages": {"approach": True, "grasp": False}}, None
        return real(cfg, seed)

    monkeypatch.setattr(demos, "record_episode", record)
    report = generate(config, out)
    assert seen == [1, 2]  # seed 0 was not run again
    assert not torn.exists() and not (tmp_path / "ds.staging").exists()
    assert (report.kept_from_before, report.failures, report.failure_stages) == (1, 1, {"grasp": 1})
    _, meta_read = _read(out)
    assert [m["seed"] for m in meta_read] == [0, 2]


def test_randomized_episodes_record_their_draw_and_look_different() -> None:
    """The same scene under domain randomization: the same objects where they were, another
    picture, and the draw in the episode's metadata (what the dataset's jsonl keeps)."""
    plain_meta, plain = demos.record_episode(DemoConfig(TASK, 1, image_size=SIZE), 0)
    meta, arrays = demos.record_episode(DemoConfig(TASK, 1, image_size=SIZE, randomize="visual"), 0)
    assert plain is not None and arrays is not None, (plain_meta, meta)
    domain = meta["randomization"]["domain"]
    assert set(domain["camera"]) >= {"demo_front", "demo_wrist"}
    assert {k: v for k, v in meta["randomization"].items() if k != "domain"} == plain_meta["randomization"]
    first = {k: v[0].astype(int) for k, v in arrays.items() if v.ndim == 4}
    assert first and all(np.abs(first[k] - plain[k][0].astype(int)).mean() > 10 for k in first)
    assert set(demos._declared("visual")) == {"texture", "lighting", "background", "camera", "noise"}


def test_bad_requests_are_refused_before_anything_runs(tmp_path: Path) -> None:
    from afford_cli.cli import main

    with pytest.raises(KeyError):
        DemoConfig("no-such-task-v1", 1)
    with pytest.raises(ValueError, match="episodes"):
        DemoConfig(TASK, 0)
    with pytest.raises(ValueError, match="max_attempts"):
        DemoConfig(TASK, 3, max_attempts=2)
    with pytest.raises(KeyError, match="visual"):
        DemoConfig(TASK, 1, randomize="foggy")
    taken = tmp_path / "taken"
    taken.mkdir()
    assert main(["generate", "--task", TASK, "--episodes", "1", "--out", str(taken)]) == 2
    staging = tmp_path / "other.staging"
    staging.mkdir()
    (staging / "config.json").write_text(json.dumps(DemoConfig(TASK, 5).as_dict()))
    with pytest.raises(ValueError, match="another configuration"):
        generate(DemoConfig(TASK, 1), tmp_path / "other")


def test_the_wrist_camera_rides_on_the_hand() -> None:
    """Its pose is the TCP's times its mount, wherever the arm is."""
    import dataclasses

    from afford_sim.scene import sample_scene
    from afford_sim.tasks import get_task
    from afford_sim.world import BatchWorld

    task = get_task(TASK)
    front, wrist = demos.policy_cameras(*SIZE)
    spec = task.scene(0)
    world = BatchWorld(sample_scene(dataclasses.replace(spec, cameras=(*spec.cameras, front, wrist)), 0))
    try:
        poses = []
        for q in (world.arm_q(), world.arm_q() + np.array([0.3, 0.2, 0.0, 0.2, 0.0, 0.1, 0.3])):
            world.move_arm(q[None], [1.0])
            obs = world.render(wrist.name, depth=False, segmentation=False)
            expected = world.tcp_pose() @ wrist.extrinsics()
            assert np.allclose(obs.world_T_camera, expected, atol=2e-3)
            poses.append(obs.world_T_camera)
        assert np.linalg.norm(poses[0][:3, 3] - poses[1][:3, 3]) > 0.05
    finally:
        world.close()
