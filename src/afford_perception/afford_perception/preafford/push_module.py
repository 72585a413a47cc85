"""PreAfford's pre-grasping module: which push makes the object graspable.

The seed's critic C_1 scores a push (contact point, horizontal displacement) in the observed
scene; its training target (Eq. 6) is the grasp score's gain times a penalty:
p_d = exp(-|travel| / a) for the gripper's travel, p_r = exp(-rotation / b) for the object's
turn, and p_s = 0 when the object falls or the gripper hits the scene. Ours follows it, with the
gain *measured* in the simulator (``afford_data.preafford``: grasps drawn on the cloud, tried
before and after the push) where the seed reads it off its grasping module; the loss is its L1.

The seed proposes displacements with a cVAE (P_1) at the top points of an affordance map (A_1);
until those are built, :func:`push_grid` proposes a fixed grid (seen object points x 12
directions x 3 distances), all scored in one pass: the critic chooses among them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from afford_perception.affordance.model import shared_mlp

from .grasp_module import SCALE, GraspModuleConfig, SceneNet, load_module, normalise, save_module

TRAVEL_SCALE = 0.3  # a (m): a 30 cm push keeps a third of its gain
TURN_SCALE_DEG = 90.0  # b: a push that turns the object by 90 deg keeps a third
DIRECTIONS = 12
DISTANCES = (0.06, 0.12, 0.2)


def target(
    gain: np.ndarray, distance: np.ndarray, turned_deg: np.ndarray, fell: np.ndarray, collided: np.ndarray
) -> np.ndarray:
    """The seed's C_1 target: the grasp score's gain times p_d p_r p_s."""
    p = np.exp(-distance / TRAVEL_SCALE) * np.exp(-turned_deg / TURN_SCALE_DEG) * ~(fell | collided)
    return (gain * p).astype(np.float32)


def push_code(pushes: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """(N, 6): contact about the cloud's centre in SCALE units, direction (cos, sin), distance/SCALE."""
    p = pushes.reshape(-1, 5)
    return np.concatenate(
        [(p[:, :3] - centre) / SCALE, np.cos(p[:, 3:4]), np.sin(p[:, 3:4]), p[:, 4:5] / SCALE], axis=1
    ).astype(np.float32)


class PushCritic(SceneNet):
    """C_1: the feature where the push makes contact, the scene's global feature, codes of the
    contact and of the displacement, through an MLP to the expected penalised gain."""

    def __init__(self, config: GraspModuleConfig | None = None) -> None:
        c = config or GraspModuleConfig()
        super().__init__(c)
        self.contact_code = shared_mlp(3, (c.code_dim, c.code_dim))
        self.move_code = shared_mlp(3, (c.code_dim, c.code_dim))
        self.mlp = shared_mlp(c.point_dim + c.sa2_mlp[-1] + 2 * c.code_dim, c.head)
        self.out = nn.Linear(c.head[-1], 1)

    def score(
        self, encoded: tuple[torch.Tensor, torch.Tensor, torch.Tensor], codes: torch.Tensor
    ) -> torch.Tensor:
        """Expected penalised gains (B, G) of pushes ``codes`` (B, G, 6)."""
        contact = codes[..., :3]
        g = encoded[2].unsqueeze(1).expand(-1, codes.shape[1], -1)
        h = self.mlp(
            torch.cat(
                [self.at(encoded, contact), g, self.contact_code(contact), self.move_code(codes[..., 3:])], -1
            )
        )
        return torch.tanh(self.out(h).squeeze(-1))


def push_grid(cloud: np.ndarray, is_obj: np.ndarray, contacts: int, rng: np.random.Generator) -> np.ndarray:
    """(contacts x DIRECTIONS x len(DISTANCES), 5) pushes: seen object points as contacts."""
    obj = cloud[is_obj] if is_obj.any() else cloud
    pts = obj[rng.choice(len(obj), contacts, replace=len(obj) < contacts)]
    angles = np.linspace(-np.pi, np.pi, DIRECTIONS, endpoint=False)
    # Contact-major, then direction, then distance (the order the critic's data and runs use).
    n_a, n_d = len(angles), len(DISTANCES)
    grid = np.empty((len(pts), n_a, n_d, 5))
    grid[..., :3] = pts[:, None, None, :]
    grid[..., 3] = angles[None, :, None]
    grid[..., 4] = np.asarray(DISTANCES)[None, None, :]
    return grid.reshape(-1, 5).astype(np.float32)


@torch.no_grad()
def score_pushes(
    model: PushCritic, cloud: np.ndarray, is_obj: np.ndarray, pushes: np.ndarray, seed: int = 0
) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(cloud), model.config.points, replace=len(cloud) < model.config.points)
    centre, xyz = normalise(cloud[pick], is_obj[pick])
    enc = model.encode(torch.from_numpy(xyz[None].astype(np.float32)), torch.from_numpy(is_obj[pick][None]))
    return model.score(enc, torch.from_numpy(push_code(pushes, centre)[None]))[0].numpy()


def save(model: PushCritic, path: str | Path, meta: dict[str, Any]) -> Path:
    return save_module(model, "push", path, meta)


def load(path: str | Path) -> tuple[PushCritic, dict[str, Any]]:
    return load_module(path, "push", PushCritic)


@dataclass
class PushState:
    scene: str
    category: str
    cloud: np.ndarray
    mask: np.ndarray
    pushes: np.ndarray
    target: np.ndarray
    gain: np.ndarray


def load_push_states(root: str | Path) -> list[PushState]:
    """Every episode of a push collection with its pushes' targets; pushes whose grasp score
    could not be measured (the object barely seen before or after: NaN) are left out, and
    episodes left with none."""
    root = Path(root)
    config = json.loads((root / "config.json").read_text())
    if config.get("module") != "push" or not config.get("score_tries"):
        raise ValueError(f"{root} is not a push collection with measured grasp scores")
    out = []
    for path in sorted((root / "episodes").glob("*/*/*.npz")):
        with np.load(path) as f:
            gain = f["score_after"] - f["score_before"]
            keep = np.isfinite(gain)
            if not keep.any():
                continue
            pushes = f["pushes"][keep]
            out.append(
                PushState(
                    path.parent.parent.name,
                    path.parent.name,
                    f["cloud"],
                    f["object_mask"],
                    pushes,
                    target(
                        gain[keep], pushes[:, 4], f["turned_deg"][keep], f["fell"][keep], f["collided"][keep]
                    ),
                    gain[keep],
                )
            )
    if not out:
        raise ValueError(f"{root} holds no episodes")
    return out


@torch.no_grad()
def measure_push(model: PushCritic, states: list[PushState]) -> dict[str, Any]:
    """L1 error, and per episode the target of the push the critic ranks first beside the mean
    (chance) and the best (ceiling) among the tried ones."""
    l1, top, chance, best = [], [], [], []
    for s in states:
        pred = score_pushes(model, s.cloud, s.mask, s.pushes)
        l1.append(np.abs(pred - s.target).mean())
        top.append(s.target[int(np.argmax(pred))])
        chance.append(s.target.mean())
        best.append(s.target.max())
    return {
        "episodes": len(states),
        "l1": round(float(np.mean(l1)), 4),
        "top_ranked_target": round(float(np.mean(top)), 4),
        "chance": round(float(np.mean(chance)), 4),
        "ceiling": round(float(np.mean(best)), 4),
    }


def train_push(
    train_dir: str | Path,
    val_dir: str | Path,
    out: str | Path,
    epochs: int = 30,
    batch: int = 16,
    lr: float = 1e-3,
    seed: int = 0,
    say: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train C_1 (L1 on the penalised gain); keep the best validation top-ranked target."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    tr, va = load_push_states(train_dir), load_push_states(val_dir)
    model = PushCritic()
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=1e-4)
    best: dict[str, Any] = {"top_ranked_target": -np.inf}
    history = []
    t0 = time.perf_counter()
    for epoch in range(epochs):
        model.train()
        losses = []
        for i in range(0, len(tr), batch):
            chunk = [tr[j] for j in rng.permutation(len(tr))[i : i + batch]]
            g = min(len(s.pushes) for s in chunk)
            xyz, masks, codes, ys = [], [], [], []
            for s in chunk:
                pick = rng.choice(
                    len(s.cloud), model.config.points, replace=len(s.cloud) < model.config.points
                )
                centre, x = normalise(s.cloud[pick], s.mask[pick])
                xyz.append(x)
                masks.append(s.mask[pick])
                codes.append(push_code(s.pushes[:g], centre))
                ys.append(s.target[:g])
            enc = model.encode(
                torch.from_numpy(np.stack(xyz).astype(np.float32)), torch.from_numpy(np.stack(masks))
            )
            pred = model.score(enc, torch.from_numpy(np.stack(codes)))
            loss = (pred - torch.from_numpy(np.stack(ys))).abs().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
        model.eval()
        val = measure_push(model, va)
        history.append({"epoch": epoch, "loss": round(float(np.mean(losses)), 4), **val})
        say(f"epoch {epoch}: loss {np.mean(losses):.4f}, val {val}, {time.perf_counter() - t0:.0f} s")
        if val["top_ranked_target"] > best["top_ranked_target"]:
            best = {**val, "epoch": epoch}
            save(model, out, {"train": str(train_dir), "val": str(val_dir), "best": best})
    return {"best": best, "history": history}
