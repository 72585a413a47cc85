"""Training a policy with LeRobot's own trainer (``lerobot-train``) on an ``afford generate``
dataset, offline and on the CPU.

``lerobot-train`` needs a few flags to run here at all: the dataset from a local root (no hub),
videos decoded with PyAV (the default decoder, torchcodec, does not load with the pinned
torch), ACT and Diffusion Policy without their ImageNet backbone weights (a download), no push
to the hub, no W&B, at most 2 data-loader workers on a 2-core machine.
:func:`lerobot_train_command` writes them once; ``afford policy train`` runs it, and plain
``lerobot-train`` with the same flags works too.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from afford_policy.rollout import DemoDataset

#: Policies trained here on the CPU (Pi 0.5, a 4-billion-parameter model, is fine-tuned on a GPU
#: machine with plain ``lerobot-train``; its checkpoint then runs here).
TRAINABLE_POLICIES = ("act", "diffusion")


def lerobot_train_executable() -> str:
    """``lerobot-train`` beside this interpreter (the venv's), else on the PATH."""
    beside = Path(sys.executable).with_name("lerobot-train")
    return str(beside) if beside.is_file() else (shutil.which("lerobot-train") or str(beside))


def lerobot_train_command(
    dataset: Path | str,
    out: Path | str,
    *,
    policy: str = "act",
    steps: int = 1000,
    batch_size: int = 8,
    workers: int = 2,
    save_every: int | None = None,
    log_every: int = 50,
    extra: Sequence[str] = (),
) -> list[str]:
    """The ``lerobot-train`` command line for ``policy`` on ``dataset``, writing to ``out``.

    Args:
        dataset: An ``afford generate`` dataset directory.
        out: The training run's directory (LeRobot refuses one that exists, unless resuming).
        policy: ``act`` or ``diffusion``.
        steps: Optimisation steps.
        batch_size: Samples per step.
        workers: Data-loader processes.
        save_every: Checkpoint every this many steps (default: once, at the end).
        log_every: Print the loss every this many steps.
        extra: More ``--key=value`` flags, after ours (LeRobot takes the last of a repeated one).

    Raises:
        FileNotFoundError / ValueError: not an ``afford generate`` dataset; an unknown policy.
    """
    if policy not in TRAINABLE_POLICIES:
        raise ValueError(f"policy must be one of {', '.join(TRAINABLE_POLICIES)}, got {policy!r}")
    if steps < 1 or batch_size < 1 or workers < 0 or log_every < 1:
        raise ValueError("steps, batch_size and log_every must be >= 1 and workers >= 0")
    ds = DemoDataset.load(dataset)
    cmd = [
        lerobot_train_executable(),
        f"--dataset.repo_id={ds.repo_id}",
        f"--dataset.root={Path(dataset).resolve()}",
        "--dataset.video_backend=pyav",
        f"--policy.type={policy}",
        "--policy.push_to_hub=false",
        "--policy.device=cpu",
        f"--steps={steps}",
        f"--batch_size={batch_size}",
        f"--num_workers={workers}",
        "--wandb.enable=false",
        f"--output_dir={Path(out).resolve()}",
        "--env_eval_freq=0",  # no simulator env registered with lerobot-train
        f"--save_freq={save_every or steps}",
        f"--log_freq={log_every}",
    ]
    # Both default (LeRobot 0.6) to ImageNet backbone weights, a download. Diffusion Policy then
    # takes group norm, as its authors train a backbone from scratch (and LeRobot 0.4 did).
    cmd.append("--policy.pretrained_backbone_weights=null")
    if policy == "diffusion":
        cmd.append("--policy.use_group_norm=true")
    return [*cmd, *extra]


def pretrained_dir(out: Path | str) -> Path:
    """The policy directory a finished run leaves (what ``afford policy eval --policy`` and
    ``afford task --policy`` take)."""
    return Path(out) / "checkpoints" / "last" / "pretrained_model"
