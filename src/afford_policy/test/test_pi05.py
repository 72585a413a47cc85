"""Pi 0.5 through LeRobot's own classes: built, saved, loaded from a local directory with a local
tokenizer, run in closed loop and through the serving path, and refused when its weights or its
tokenizer are not all there.

The model is LeRobot's ``PI05Policy`` with random weights at the small size
(:func:`afford_policy.pi05.small_model`: every class and code path, narrow layers), since the
standard 4-billion-parameter model does not fit these test machines; the tokenizer is a small
word-level one standing in for PaliGemma's, which cannot be downloaded here.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from afford_policy import pi05
from afford_policy.rollout import (
    FRONT_KEY,
    STATE_KEY,
    TASK_KEY,
    WRIST_KEY,
    LeRobotPolicy,
    Limits,
    RolloutConfig,
    run_episode,
)
from afford_policy.serving import PolicyStepper, load_policy

TASK = "place-banana-plate-v1"
SIZE = (64, 48)
HOME = np.array([0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785])


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pi05.write_tokenizer(
        tmp_path_factory.mktemp("tok") / "tokenizer", "put pick place the banana on plate mug".split()
    )


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory, tokenizer: Path) -> Path:
    return pi05.write_random_checkpoint(
        tmp_path_factory.mktemp("pi05") / "pretrained_model",
        tokenizer,
        cameras=(FRONT_KEY, WRIST_KEY),
        image_size=SIZE,
    )


@pytest.fixture(autouse=True)
def small() -> Iterator[None]:
    with pi05.small_model():
        yield


def _obs(rng: np.random.Generator, text: str = "put the banana on the plate") -> dict:
    w, h = SIZE
    return {
        FRONT_KEY: rng.integers(0, 256, (h, w, 3), dtype=np.uint8),
        WRIST_KEY: rng.integers(0, 256, (h, w, 3), dtype=np.uint8),
        STATE_KEY: np.append(HOME, 0.04).astype(np.float32),
        TASK_KEY: text,
    }


def test_a_checkpoint_as_lerobot_train_lays_it_out_names_the_hub_tokenizer(checkpoint: Path) -> None:
    steps = json.loads((checkpoint / "policy_preprocessor.json").read_text())["steps"]
    names = {s["registry_name"]: s.get("config", {}) for s in steps}
    assert names["tokenizer_processor"]["tokenizer_name"] == "google/paligemma-3b-pt-224"
    assert json.loads((checkpoint / "config.json").read_text())["type"] == "pi05"


def test_it_loads_with_a_local_tokenizer_and_answers_with_finite_actions(
    checkpoint: Path, tokenizer: Path
) -> None:
    policy = LeRobotPolicy(checkpoint, tokenizer=tokenizer)
    assert policy.config.type == "pi05" and policy.image_size == SIZE
    assert pi05.weight_gaps(policy.policy, checkpoint / "model.safetensors") == []
    rng = np.random.default_rng(0)
    policy.reset()
    actions = [policy.act(_obs(rng)) for _ in range(12)]  # a chunk is 10: the second one is inferred too
    assert all(a.shape == (8,) and np.all(np.isfinite(a)) for a in actions)
    assert len({a.tobytes() for a in actions}) > 1


def test_missing_or_misshapen_tensors_are_refused_not_left_at_random(
    checkpoint: Path, tokenizer: Path, tmp_path: Path
) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(checkpoint / "model.safetensors")
    name = next(k for k in tensors if "action_out_proj.weight" in k)
    for case, edit in (
        ("missing", lambda t: t.pop(name)),
        ("misshapen", lambda t: t.__setitem__(name, t[name][:, :-1].contiguous())),
    ):
        broken = tmp_path / case
        shutil.copytree(checkpoint, broken)
        cut = dict(tensors)
        edit(cut)
        save_file(cut, broken / "model.safetensors", metadata={"format": "pt"})
        with pytest.raises(
            ValueError, match=r"does not provide 1 of the Pi 0\.5 model's tensors.*action_out_proj"
        ):
            LeRobotPolicy(broken, tokenizer=tokenizer)
    (tmp_path / "missing" / "model.safetensors").unlink()
    with pytest.raises(FileNotFoundError, match="no model.safetensors.*refusing"):
        LeRobotPolicy(tmp_path / "missing", tokenizer=tokenizer)


def test_the_tokenizer_is_found_given_inside_or_by_the_environment_and_never_fetched(
    checkpoint: Path, tokenizer: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(pi05.TOKENIZER_ENV, raising=False)
    with pytest.raises(FileNotFoundError, match="--tokenizer DIR.*AFFORD_PI05_TOKENIZER"):
        LeRobotPolicy(checkpoint)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="holds no tokenizer.json"):
        LeRobotPolicy(checkpoint, tokenizer=tmp_path / "empty")
    monkeypatch.setenv(pi05.TOKENIZER_ENV, str(tokenizer))
    assert pi05.resolve_tokenizer(checkpoint) == tokenizer.resolve()
    monkeypatch.delenv(pi05.TOKENIZER_ENV)
    inside = tmp_path / "with-tokenizer"
    shutil.copytree(checkpoint, inside)
    shutil.copytree(tokenizer, inside / pi05.TOKENIZER_SUBDIR)
    assert pi05.resolve_tokenizer(inside) == (inside / pi05.TOKENIZER_SUBDIR).resolve()
    assert LeRobotPolicy(inside).image_size == SIZE


def test_it_runs_in_closed_loop_in_the_batch_world(checkpoint: Path, tokenizer: Path) -> None:
    policy = LeRobotPolicy(checkpoint, tokenizer=tokenizer)
    config = RolloutConfig(TASK, image_size=policy.image_size, max_seconds=0.5)
    record = run_episode(policy, config, 0, limits=Limits("fr3", 0.05))
    assert record.steps == 5 and record.reason is not None and "time limit" in record.reason


def test_it_is_served_as_act_is(checkpoint: Path, tokenizer: Path, tmp_path: Path) -> None:
    served = tmp_path / "served"
    shutil.copytree(checkpoint, served)
    shutil.copytree(tokenizer, served / pi05.TOKENIZER_SUBDIR)
    loaded = load_policy(str(served), 0)  # the graph's policy node's loader
    assert loaded.image_size == SIZE and loaded.fps == 10
    stepper = PolicyStepper(loaded, Limits("fr3", 0.05), HOME)
    rng = np.random.default_rng(1)
    gated, chunk = stepper.step(_obs(rng), now=0.0, measured=HOME)
    assert gated.target.shape == (7,) and np.all(np.isfinite(gated.target))
    # Random weights ask for anything: what goes out is within the rate limit from where the arm is.
    if chunk is not None:
        at, qs = chunk
        assert np.all(np.abs(qs[1] - qs[0]) <= stepper.limits.velocity * stepper.period + 1e-9)


def test_the_eval_command_takes_a_tokenizer(checkpoint: Path, tokenizer: Path, tmp_path: Path) -> None:
    from afford_cli.cli import main

    out = tmp_path / "run"
    assert (
        main(
            [
                "policy",
                "eval",
                "--policy",
                str(checkpoint),
                "--tokenizer",
                str(tokenizer),
                "--task",
                TASK,
                "--episodes",
                "1",
                "--max-seconds",
                "0.3",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert (out / "report.md").is_file()
