"""Train and measure the grasping module's critic on collected grasp interactions.

``afford preafford train-grasp --data DIR --val DIR --out FILE``: every state of the training
collection (``afford preafford collect --module grasp``) with its tried grasps; binary
cross-entropy, positives weighted by the negatives-to-positives ratio (successes are ~1-5% of
tries). The checkpoint kept is the one with the best validation average precision; validation is
a collection of other categories (the seed's test categories), so it measures what transfers.

:func:`measure` reports, on a collection, the critic's ROC AUC and average precision, and the
decision it is for: in each state, the success rate of the grasp it ranks first among the tried
ones, beside chance (a uniform pick among them, the mean success) and the ceiling (the share of
states where any tried grasp succeeded).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from .grasp_module import GraspCritic, GraspModuleConfig, grasp_code, normalise, save


@dataclass
class State:
    """One observed state and the grasps tried in it."""

    scene: str
    category: str
    cloud: np.ndarray
    mask: np.ndarray
    tcp: np.ndarray
    rot: np.ndarray
    success: np.ndarray
    blocked: np.ndarray


def load_states(root: str | Path) -> list[State]:
    """Every state of a grasp collection directory (read without the collection code)."""
    root = Path(root)
    config = json.loads((root / "config.json").read_text())
    if config.get("module") != "grasp":
        raise ValueError(f"{root} is not a grasp collection (module {config.get('module')!r})")
    out = []
    for path in sorted((root / "episodes").glob("*/*/*.npz")):
        scene, category = path.parent.parent.name, path.parent.name
        with np.load(path) as f:
            for s in range(len(f["clouds"])):
                sel = f["state"] == s
                if not sel.any():
                    continue  # no tries in this state (the object barely seen from the camera)
                g = f["grasps"][sel]
                out.append(
                    State(
                        scene,
                        category,
                        f["clouds"][s],
                        f["object_mask"][s],
                        g[:, :3],
                        g[:, 3:].reshape(-1, 3, 3),
                        f["success"][sel],
                        f["blocked"][sel],
                    )
                )
    if not out:
        raise ValueError(f"{root} holds no episodes")
    return out


def _batch(
    states: list[State], points: int, rng: np.random.Generator, grasps: int = 12, blocked_weight: float = 1.0
) -> tuple[torch.Tensor, ...]:
    """A training batch: each state's cloud resampled and ``grasps`` of its tries, a blocked try
    (the open hand could not even be placed: most of the seed's proposals) drawn with relative
    weight ``blocked_weight``, so the tries the critic must really tell apart are not drowned."""
    xyz, masks, codes, labels = [], [], [], []
    g = min(grasps, *(len(s.success) for s in states))
    for s in states:
        pick = rng.choice(len(s.cloud), points, replace=len(s.cloud) < points)
        centre, x = normalise(s.cloud[pick], s.mask[pick])
        xyz.append(x)
        masks.append(s.mask[pick])
        w = np.where(s.blocked, blocked_weight, 1.0)
        which = rng.choice(len(w), g, replace=False, p=w / w.sum())
        codes.append(grasp_code(s.tcp[which], s.rot[which], centre))
        labels.append(s.success[which])
    return (
        torch.from_numpy(np.stack(xyz).astype(np.float32)),
        torch.from_numpy(np.stack(masks)),
        torch.from_numpy(np.stack(codes)),
        torch.from_numpy(np.stack(labels).astype(np.float32)),
    )


@torch.no_grad()
def predict(model: GraspCritic, states: list[State], batch: int = 16, seed: int = 0) -> list[np.ndarray]:
    """The critic's probability for every tried grasp of every state."""
    model.eval()
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = []
    for i in range(0, len(states), batch):
        chunk = states[i : i + batch]
        for s in chunk:
            pick = rng.choice(len(s.cloud), model.config.points, replace=len(s.cloud) < model.config.points)
            centre, x = normalise(s.cloud[pick], s.mask[pick])
            enc = model.encode(
                torch.from_numpy(x[None].astype(np.float32)), torch.from_numpy(s.mask[pick][None])
            )
            codes = torch.from_numpy(grasp_code(s.tcp, s.rot, centre)[None])
            out.append(torch.sigmoid(model.score(enc, codes))[0].numpy())
    return out


def measure(model: GraspCritic, states: list[State]) -> dict[str, Any]:
    """ROC AUC, average precision, and the top-ranked grasp's success beside chance and ceiling
    (module docstring), overall and per scene."""
    from sklearn.metrics import average_precision_score, roc_auc_score

    probs = predict(model, states)

    def block(idx: list[int]) -> dict[str, Any]:
        y = np.concatenate([states[i].success for i in idx])
        p = np.concatenate([probs[i] for i in idx])
        top = [bool(states[i].success[int(np.argmax(probs[i]))]) for i in idx]
        both = len(np.unique(y)) == 2
        free = ~np.concatenate([states[i].blocked for i in idx])
        both_free = len(np.unique(y[free])) == 2
        return {
            "states": len(idx),
            "grasps": int(len(y)),
            "positives": int(y.sum()),
            "auc": round(float(roc_auc_score(y, p)), 3) if both else None,
            "average_precision": round(float(average_precision_score(y, p)), 3) if both else None,
            # Among the tries the open hand could be placed for: the critic's real discrimination.
            "auc_unblocked": round(float(roc_auc_score(y[free], p[free])), 3) if both_free else None,
            "top_ranked_success": round(float(np.mean(top)), 3),
            "chance": round(float(y.mean()), 3),
            "ceiling": round(float(np.mean([states[i].success.any() for i in idx])), 3),
        }

    scenes = sorted({s.scene for s in states})
    return {
        "all": block(list(range(len(states)))),
        **{sc: block([i for i, s in enumerate(states) if s.scene == sc]) for sc in scenes},
    }


@dataclass(frozen=True)
class TrainConfig:
    epochs: int = 20
    batch: int = 16
    lr: float = 1e-3
    max_pos_weight: float = 30.0
    grasps_per_state: int = 12
    blocked_weight: float = 1.0
    seed: int = 0


def train(
    train_dir: str | Path | Sequence[str | Path],
    val_dir: str | Path,
    out: str | Path,
    config: TrainConfig | None = None,
    model_config: GraspModuleConfig | None = None,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train the critic on one collection or several; keep the checkpoint with the best
    validation average precision."""
    cfg = config or TrainConfig()
    torch.manual_seed(cfg.seed)
    rng = np.random.default_rng(cfg.seed)
    dirs = [train_dir] if isinstance(train_dir, (str, Path)) else list(train_dir)
    train_states = [s for d in dirs for s in load_states(d)]
    val_states = load_states(val_dir)
    pos = sum(int(s.success.sum()) for s in train_states)
    total = sum(len(s.success) for s in train_states)
    if pos == 0:
        raise ValueError(f"{train_dir} holds no successful grasp to learn from")
    model = GraspCritic(model_config)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=1e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg.epochs)
    # The negatives a batch holds per positive, blocked tries counted at their drawing weight.
    negatives = sum(
        int((~s.success & ~s.blocked).sum()) + cfg.blocked_weight * int(s.blocked.sum()) for s in train_states
    )
    weight = torch.tensor(min(cfg.max_pos_weight, negatives / pos))
    best: dict[str, Any] = {"average_precision": -1.0}
    history = []
    t0 = time.perf_counter()
    for epoch in range(cfg.epochs):
        model.train()
        order = rng.permutation(len(train_states))
        losses = []
        for i in range(0, len(order), cfg.batch):
            xyz, mask, codes, y = _batch(
                [train_states[j] for j in order[i : i + cfg.batch]],
                model.config.points,
                rng,
                cfg.grasps_per_state,
                cfg.blocked_weight,
            )
            logits = model.score(model.encode(xyz, mask), codes)
            loss = torch.nn.functional.binary_cross_entropy_with_logits(logits, y, pos_weight=weight)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        sched.step()
        val = measure(model, val_states)["all"]
        history.append({"epoch": epoch, "loss": round(float(np.mean(losses)), 4), **val})
        say(
            f"epoch {epoch}: loss {np.mean(losses):.4f}, val AUC {val['auc']}, "
            f"AP {val['average_precision']}, "
            f"top-ranked {val['top_ranked_success']} (chance {val['chance']}, ceiling {val['ceiling']}), "
            f"{time.perf_counter() - t0:.0f} s"
        )
        if (val["average_precision"] or 0.0) > best["average_precision"]:
            best = {**val, "epoch": epoch}
            save(
                model,
                out,
                {
                    "train": [str(d) for d in dirs],
                    "val": str(val_dir),
                    "best": best,
                    "train_config": cfg.__dict__,
                    "positives": pos,
                    "grasps": total,
                },
            )
    return {"best": best, "history": history}
