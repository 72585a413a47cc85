"""Closed-loop rollouts of policies in the batch world, on the scenes of a recorded dataset.

The harness is trusted only if a demonstration replayed through it succeeds on its own seed
(and the same actions do not on another scene), if it never moves the arm on a bad action and
keeps every target inside the robot's limits, if a policy LeRobot trained loads and runs end to
end, if a directory without weights is refused, and if the command resumes a killed run.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from afford_core.robots import get_robot
from afford_data.demos import DemoConfig, generate
from afford_policy import rollout
from afford_policy.rollout import (
    DemoDataset,
    LeRobotPolicy,
    Limits,
    ReplayPolicy,
    RolloutConfig,
    run_episode,
)
from afford_policy.training import lerobot_train_command, pretrained_dir

TASK = "place-banana-plate-v1"
SIZE = (32, 32)  # test_demos.py's tiny dataset
STAGES = ["approach", "grasp", "lift", "place"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("policy") / "ds"
    generate(DemoConfig(TASK, 2, image_size=SIZE), out)
    return out


@pytest.fixture(scope="module")
def limits() -> Limits:
    return Limits("fr3", 0.05)


def _config(ds: DemoDataset, **kw: Any) -> RolloutConfig:
    return RolloutConfig(TASK, fps=ds.fps, image_size=ds.image_size,
                         **{"max_seconds": 2 * ds.longest_seconds, **kw})


class _Watch:
    """Keeps the episode's world (and every world it makes) to be looked at afterwards."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import afford_pipeline.spine as spine

        self.worlds: list[Any] = []
        real = spine.task_world

        def keep(*args: Any, **kw: Any) -> Any:
            self.worlds.append(real(*args, **kw))
            return self.worlds[-1]

        monkeypatch.setattr(spine, "task_world", keep)


def test_a_replayed_demonstration_succeeds_on_its_seed_and_not_on_another(
    dataset: Path, limits: Limits
) -> None:
    ds = DemoDataset.load(dataset)
    assert (ds.task_id, ds.fps, ds.image_size, len(ds.episodes)) == (TASK, 10, SIZE, 2)
    meta = ds.episodes[0]
    replay = ReplayPolicy.from_dataset(ds, int(meta["seed"]))
    assert replay.actions.shape == (meta["frames"], 8) and replay.instruction == meta["instruction"]
    config = _config(ds)
    record = run_episode(replay, config, int(meta["seed"]), replay.instruction, limits=limits)
    assert record.success and record.reason is None, record.as_dict()
    assert list(record.stages) == STAGES and all(record.stages.values())
    steps = [-1 if record.stage_steps[s] is None else int(record.stage_steps[s] or 0) for s in STAGES]
    assert 0 <= steps[0] and steps == sorted(steps), record.stage_steps
    assert 0 < record.steps <= meta["frames"] and record.clipped_steps == 0 and record.rate_limited_steps == 0
    assert "on the plate: True" in record.details["place"]
    # The same actions on the other recorded scene (the banana elsewhere): the checks say no.
    other = int(ds.episodes[1]["seed"])
    wrong = run_episode(ReplayPolicy(replay.actions, other, replay.instruction), config, other, limits=limits)
    assert not wrong.success and wrong.reason and "time limit" in wrong.reason, wrong.as_dict()
    assert wrong.steps == config.max_steps


def test_a_replay_succeeds_under_visual_randomization(dataset: Path, limits: Limits) -> None:
    """The visual axes change the picture, never where things are: a recorded demonstration's
    actions still succeed on their seed, and the episode's record holds the draw."""
    ds = DemoDataset.load(dataset)
    seed = int(ds.episodes[0]["seed"])
    replay = ReplayPolicy.from_dataset(ds, seed)
    record = run_episode(replay, _config(ds, randomize="visual"), seed, replay.instruction, limits=limits)
    assert record.success, record.as_dict()
    assert record.domain is not None and record.domain["axes"] == "texture,lighting,background,camera,noise"
    assert run_episode(replay, _config(ds), seed, replay.instruction, limits=limits).domain is None


class _Scripted:
    """Returns the given actions in turn, counting the calls."""

    def __init__(self, actions: list[np.ndarray]) -> None:
        self.actions, self.calls, self.resets = actions, 0, 0

    def reset(self) -> None:
        self.resets += 1

    def act(self, obs: Any) -> np.ndarray:
        for key in (rollout.FRONT_KEY, rollout.WRIST_KEY):
            assert obs[key].dtype == np.uint8 and obs[key].shape == (SIZE[1], SIZE[0], 3)
        assert obs[rollout.STATE_KEY].dtype == np.float32 and obs[rollout.STATE_KEY].shape == (8,)
        assert isinstance(obs[rollout.TASK_KEY], str) and "banana" in obs[rollout.TASK_KEY]
        self.calls += 1
        return self.actions[min(self.calls - 1, len(self.actions) - 1)]


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_action_ends_the_episode_and_the_arm_never_moves(
    dataset: Path, limits: Limits, monkeypatch: pytest.MonkeyPatch, bad: float
) -> None:
    ds = DemoDataset.load(dataset)
    watch = _Watch(monkeypatch)
    home = get_robot("fr3").home_array
    action = np.append(home + 0.3, 1.0)  # would move every joint and close the hand
    action[2 if np.isnan(bad) else 7] = bad  # NaN in a joint; inf in the gripper command
    policy = _Scripted([action])
    record = run_episode(policy, _config(ds), 0, limits=limits)
    world = watch.worlds[-1]
    assert not record.success and record.steps == 0 and policy.calls == 1 and policy.resets == 1
    assert record.reason is not None and "non-finite action" in record.reason and "not moved" in record.reason
    # Nothing was commanded and no physics ran: the world is as the scene left it.
    assert np.allclose(world.arm_target(), home, atol=1e-6)
    assert np.abs(world.arm_q() - home).max() < 1e-3
    assert world.time == pytest.approx(world.config.settle_time, abs=1e-9)
    assert world.gripper_width() > 0.07  # still open
    assert record.stages == {"approach": False, "grasp": False, "lift": False, "place": False}


def test_targets_far_outside_the_limits_are_clipped_and_rate_limited(
    dataset: Path, limits: Limits, monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = DemoDataset.load(dataset)
    watch = _Watch(monkeypatch)
    seen: list[tuple[np.ndarray, np.ndarray]] = []
    up, down = np.append(np.full(7, 50.0), 0.0), np.append(np.full(7, -50.0), 0.0)
    policy = _Scripted([up] * 8 + [down] * 12)
    config = _config(ds, max_seconds=2.0)
    record = run_episode(policy, config, 0, limits=limits,
                         on_step=lambda _k, w: seen.append((w.arm_target(), w.arm_q())))
    assert record.steps == len(seen) == 20 and record.clipped_steps == 20 and record.rate_limited_steps > 0
    targets = np.array([np.asarray(t) for t, _ in seen])
    measured = np.array([np.asarray(q) for _, q in seen])
    assert np.all(targets >= limits.lower - 1e-9) and np.all(targets <= limits.upper + 1e-9)
    rng = watch.worlds[-1]._arm_range  # the joints' own ranges: the margin is not eaten into
    assert np.all(measured >= rng[:, 0]) and np.all(measured <= rng[:, 1])
    step = np.abs(np.diff(np.vstack([get_robot("fr3").home_array, targets]), axis=0))
    assert np.all(step <= limits.velocity / config.fps + 1e-9)
    # The arm did follow: within 0.8 s every joint's target went as far up as its speed allows
    # or to its limit, then came back down.
    assert np.any(np.isclose(targets[7], limits.upper)) and np.all(targets[-1] < targets[7])


@pytest.fixture(scope="module")
def act_policy(dataset: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two steps of ACT with LeRobot's own trainer (test_demos.py's flags)."""
    out = tmp_path_factory.mktemp("act") / "act"
    cmd = lerobot_train_command(dataset, out, policy="act", steps=2, batch_size=2, workers=0, log_every=1)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return pretrained_dir(out)


def test_a_lerobot_act_policy_runs_in_closed_loop(act_policy: Path, dataset: Path, limits: Limits) -> None:
    policy = LeRobotPolicy(act_policy)
    assert policy.config.type == "act" and policy.image_size == SIZE
    assert policy.training_dataset() == dataset
    seen: list[np.ndarray] = []
    real_act = policy.act

    def act(obs: Any) -> np.ndarray:
        seen.append(real_act(obs))
        return seen[-1]

    policy.act = act  # type: ignore[method-assign]
    config = RolloutConfig(TASK, image_size=policy.image_size, max_seconds=1.0)
    record = run_episode(policy, config, 0, limits=limits)
    assert record.steps == 10 == len(seen) and all(a.shape == (8,) and np.all(np.isfinite(a)) for a in seen)
    assert list(record.stages) == STAGES and all(isinstance(v, bool) for v in record.stages.values())
    assert record.reason is not None and "time limit" in record.reason  # two training steps place nothing
    from afford_data.demos import instruction_for
    from afford_sim.tasks import get_task

    assert record.instruction == instruction_for(get_task(TASK), 0)
    json.dumps(record.as_dict())


def test_a_lerobot_diffusion_policy_trains_and_runs_in_closed_loop(dataset: Path, limits: Limits,
                                                                   tmp_path: Path) -> None:
    """One step of LeRobot's Diffusion Policy, small (it needs LeRobot's [diffusion] extra)."""
    out = tmp_path / "dp"
    small = ["--policy.down_dims=[32,64,128]", "--policy.crop_shape=[28,28]",
             "--policy.noise_scheduler_type=DDIM", "--policy.num_inference_steps=2"]
    cmd = lerobot_train_command(dataset, out, policy="diffusion", steps=1, batch_size=2, workers=0,
                                log_every=1, extra=small)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    policy = LeRobotPolicy(pretrained_dir(out))
    assert policy.config.type == "diffusion" and policy.image_size == SIZE
    record = run_episode(policy, RolloutConfig(TASK, image_size=SIZE, max_seconds=0.3), 0, limits=limits)
    assert record.steps == 3 and record.reason is not None and "time limit" in record.reason


def test_a_directory_without_weights_is_refused(act_policy: Path, tmp_path: Path) -> None:
    from afford_cli.cli import main

    for missing in ("model.safetensors", "config.json"):
        broken = tmp_path / f"no-{missing}"
        shutil.copytree(act_policy, broken)
        (broken / missing).unlink()
        with pytest.raises(FileNotFoundError, match=f"no {missing}.*refusing"):
            LeRobotPolicy(broken)
        assert main(["policy", "eval", "--policy", str(broken), "--task", TASK, "--episodes", "1",
                     "--out", str(tmp_path / "run")]) == 2
    with pytest.raises(FileNotFoundError, match="not a directory"):
        LeRobotPolicy(tmp_path / "nowhere")
    assert not (tmp_path / "run").exists()


def test_the_command_writes_records_and_a_report_and_resumes(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from afford_cli.cli import main
    from afford_core.files import TMP_MARK

    out = tmp_path / "run"
    argv = ["policy", "eval", "--replay", str(dataset), "--task", TASK, "--episodes", "2", "--out", str(out),
            "--videos", "1"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "[1/2] seed 0: success" in printed and "[2/2] seed 1: success" in printed
    records = {p.name: json.loads(p.read_text()) for p in (out / "episodes").glob("*.json")}
    assert sorted(records) == ["seed_000000.json", "seed_000001.json"]
    for r in records.values():
        assert r["success"] and list(r["stages"]) == STAGES and r["steps"] > 0 and r["wall_s"] > 0
        assert "banana" in r["instruction"]
    assert records["seed_000000.json"]["video"] == "videos/seed_000000.mp4"
    assert (out / "videos" / "seed_000000.mp4").stat().st_size > 0
    assert records["seed_000001.json"]["video"] is None
    report = (out / "report.md").read_text()
    assert "| **task** | 2/2 = 1.00 [0.34, 1.00] |" in report  # Wilson's 95% interval of 2 in 2
    assert "| stage `grasp` | 2/2" in report and "scripted (recorded)" in report

    # Killed after seed 0: seed 1's record gone, a torn temporary left. The same command runs
    # seed 1 alone and rebuilds the report.
    (out / "episodes" / "seed_000001.json").unlink()
    torn = out / "episodes" / f".seed_000001.json{TMP_MARK}77"
    torn.write_text("{")
    ran: list[int] = []
    real = rollout.run_episode

    def spy(policy: Any, config: Any, seed: int, *args: Any, **kw: Any) -> Any:
        ran.append(seed)
        return real(policy, config, seed, *args, **kw)

    monkeypatch.setattr(rollout, "run_episode", spy)
    assert main(argv) == 0
    assert ran == [1] and not torn.exists() and (out / "episodes" / "seed_000001.json").is_file()
    assert "[1/2] seed 0: kept from before" in capsys.readouterr().out
    assert "2/2 = 1.00" in (out / "report.md").read_text()
    # Another plan in the same directory is refused, nothing run.
    assert main([*argv[:7], "1", *argv[8:]]) == 2 and ran == [1]
    assert "another plan" in capsys.readouterr().err
