"""PreAfford's grasping module: a scene cloud and a grasp in, the chance it lifts the object out.

The seed (Sec. III-C) builds each module from a PointNet++ feature of the object-and-scene
cloud, an MLP code of the contact point and one of the action, and three heads: a critic (the
chance of success), an affordance map (the mean critic score of a point's proposals) and a cVAE
proposal network. This is the critic, C_2, with its encoder; the affordance map follows from it
(not built yet), and proposals come, until the cVAE is trained, from the seed's own
sampler on the observed cloud (:func:`cloud_proposals`), so nothing here reads the simulator.

The encoder reuses the affordance model's PointNet++ blocks (``afford_perception.affordance.model``)
with the object mask as each point's input feature (the seed segments object and scene too).
Clouds are centred on the seen object's centroid and divided by a fixed :data:`SCALE` rather
than by their own size: whether fingers fit depends on centimetres, not on proportions.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch
from torch import nn

from afford_core.grasp import hemisphere_grasp, pinch_grasp
from afford_perception.affordance.model import SetAbstraction, interpolate, nearest, shared_mlp

SCALE = 0.4  # m: the observed cloud's radius round the object
FORMAT = 2
# Where the hand would be, in its frame (x, closing y, approach z; metres; the gripper of
# afford_sim.preafford.world, which perception does not import): the TCP, the two pads
# at the 8 cm opening, the palm's centre and its two ends (the palm is 20 cm along y, 8.5 cm
# behind the TCP). The critic reads the scene there: whether the table or the feature is where
# the lower finger or the palm would go decides a grasp more than the geometry at the TCP.
HAND_POINTS = np.array(
    [
        [0.0, 0.0, 0.0],
        [0.0, 0.04, 0.0],
        [0.0, -0.04, 0.0],
        [0.0, 0.0, -0.085],
        [0.0, 0.09, -0.085],
        [0.0, -0.09, -0.085],
    ],
    dtype=np.float32,
)


@dataclass(frozen=True)
class GraspModuleConfig:
    """Sizes of the grasping module (defaults sized for training on two CPU cores)."""

    points: int = 1024
    sa1_centers: int = 256
    sa1_radius: float = 0.1  # in units of SCALE: 4 cm, about a fingertip's reach round a point
    sa1_neighbors: int = 24
    sa1_mlp: tuple[int, ...] = (32, 32, 64)
    sa2_centers: int = 64
    sa2_radius: float = 0.3  # 12 cm: an object's edge and the feature beside it
    sa2_neighbors: int = 24
    sa2_mlp: tuple[int, ...] = (64, 128, 128)
    point_dim: int = 64
    code_dim: int = 32
    head: tuple[int, ...] = (128, 64)


def normalise(cloud: np.ndarray, is_obj: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(centre, scaled cloud): the seen object's centroid, and the cloud about it in SCALE units."""
    centre = cloud[is_obj].mean(axis=0) if is_obj.any() else cloud.mean(axis=0)
    return centre, (cloud - centre) / SCALE


def grasp_code(tcp: np.ndarray, rot: np.ndarray, centre: np.ndarray) -> np.ndarray:
    """(N, 9): the TCP about the cloud's centre in SCALE units, the approach and closing axes
    (the closing axis's sign is meaningless for a symmetric gripper: made canonical)."""
    rot = rot.reshape(-1, 3, 3)
    closing = rot[:, :, 1] * np.where(rot[:, 2:3, 1] < 0, -1.0, 1.0)
    return np.concatenate([(tcp.reshape(-1, 3) - centre) / SCALE, rot[:, :, 2], closing], axis=1).astype(
        np.float32
    )


class SceneNet(nn.Module):
    """The modules' shared encoder shape (the seed's PointNet++ with a segmentation head): each
    module has its own weights, as each of the seed's networks extracts its own features."""

    def __init__(self, config: GraspModuleConfig) -> None:
        super().__init__()
        c = self.config = config
        self.sa1 = SetAbstraction(c.sa1_centers, c.sa1_radius, c.sa1_neighbors, 1, c.sa1_mlp)
        self.sa2 = SetAbstraction(c.sa2_centers, c.sa2_radius, c.sa2_neighbors, c.sa1_mlp[-1], c.sa2_mlp)
        self.fp2 = shared_mlp(2 * c.sa2_mlp[-1] + c.sa1_mlp[-1], (128, c.point_dim))
        self.fp1 = shared_mlp(c.point_dim + 4, (c.point_dim, c.point_dim))

    def encode(
        self, xyz: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B, P, 3) scaled clouds, (B, P) object masks -> points, per-point features, global."""
        feat0 = mask.unsqueeze(-1).float()
        xyz1, feat1 = self.sa1(xyz, feat0)
        xyz2, feat2 = self.sa2(xyz1, feat1)
        glob = feat2.amax(dim=1)
        ctx = glob.unsqueeze(1).expand(-1, feat2.shape[1], -1)
        up1 = self.fp2(torch.cat([interpolate(xyz1, xyz2, torch.cat([feat2, ctx], -1)), feat1], -1))
        up0 = self.fp1(torch.cat([interpolate(xyz, xyz1, up1), xyz, feat0], -1))
        return xyz, up0, glob

    def at(
        self, encoded: tuple[torch.Tensor, torch.Tensor, torch.Tensor], where: torch.Tensor
    ) -> torch.Tensor:
        """The per-point feature of the cloud point nearest each of ``where`` (B, G, 3)."""
        xyz, feats, _ = encoded
        _, idx = nearest(where, xyz, 1)
        return torch.gather(feats, 1, idx.expand(-1, -1, feats.shape[-1]))


M = TypeVar("M", bound="SceneNet")


class GraspCritic(SceneNet):
    """C_2: per-point scene features, then for each grasp the feature where its TCP is, the
    scene's global feature and codes of the TCP and the axes, through an MLP to a logit."""

    def __init__(self, config: GraspModuleConfig | None = None) -> None:
        c = config or GraspModuleConfig()
        super().__init__(c)
        self.tcp_code = shared_mlp(3, (c.code_dim, c.code_dim))
        self.axes_code = shared_mlp(6, (c.code_dim, c.code_dim))
        n = len(HAND_POINTS)
        # Per hand point: the scene feature there and the offset to the nearest seen point.
        self.hand_code = shared_mlp(n * (c.point_dim + 3), (2 * c.point_dim, c.point_dim))
        self.mlp = shared_mlp(c.point_dim + c.sa2_mlp[-1] + 2 * c.code_dim, c.head)
        self.out = nn.Linear(c.head[-1], 1)
        self.register_buffer("hand_points", torch.from_numpy(HAND_POINTS / SCALE))

    def score(
        self, encoded: tuple[torch.Tensor, torch.Tensor, torch.Tensor], codes: torch.Tensor
    ) -> torch.Tensor:
        """Logits (B, G) of grasps ``codes`` (B, G, 9) in the encoded scenes."""
        xyz = encoded[0]
        tcp, approach, closing = codes[..., :3], codes[..., 3:6], codes[..., 6:9]
        side = torch.cross(closing, approach, dim=-1)
        frame = torch.stack([side, closing, approach], dim=-1)  # (B, G, 3, 3): columns x, y, z
        pts = tcp.unsqueeze(-2) + torch.einsum("bgij,hj->bghi", frame, self.hand_points)  # (B, G, H, 3)
        b, g_, h_, _ = pts.shape
        flat = pts.reshape(b, g_ * h_, 3)
        _, idx = nearest(flat, xyz, 1)
        offset = torch.gather(xyz, 1, idx.expand(-1, -1, 3)) - flat
        local = torch.cat([self.at(encoded, flat), offset], -1).reshape(b, g_, -1)
        glob = encoded[2].unsqueeze(1).expand(-1, codes.shape[1], -1)
        h = self.mlp(
            torch.cat([self.hand_code(local), glob, self.tcp_code(tcp), self.axes_code(codes[..., 3:])], -1)
        )
        return self.out(h).squeeze(-1)


def save_module(model: SceneNet, kind: str, path: str | Path, meta: dict[str, Any]) -> Path:
    """Write a module's checkpoint: its kind (``grasp``, ``push``), sizes, weights and ``meta``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "format": FORMAT,
        "kind": kind,
        "config": asdict(model.config),
        "state": model.state_dict(),
        "meta": meta,
    }
    torch.save(payload, path)
    return path


def load_module(path: str | Path, kind: str, cls: type[M]) -> tuple[M, dict[str, Any]]:
    """Read a checkpoint of ``kind`` into a ``cls``; another kind or format is refused."""
    payload = torch.load(Path(path), map_location="cpu", weights_only=False)
    if payload.get("format") != FORMAT or payload.get("kind") != kind:
        raise ValueError(
            f"{path} is not a {kind} module checkpoint of format {FORMAT} "
            f"(kind {payload.get('kind')!r}, format {payload.get('format')!r})"
        )
    cfg: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in payload["config"].items()}
    model = cls(GraspModuleConfig(**cfg))
    model.load_state_dict(payload["state"])
    model.eval()
    return model, payload["meta"]


def save(model: GraspCritic, path: str | Path, meta: dict[str, Any]) -> Path:
    return save_module(model, "grasp", path, meta)


def load(path: str | Path) -> tuple[GraspCritic, dict[str, Any]]:
    return load_module(path, "grasp", GraspCritic)


@torch.no_grad()
def score_grasps(
    model: GraspCritic, cloud: np.ndarray, is_obj: np.ndarray, tcp: np.ndarray, rot: np.ndarray, seed: int = 0
) -> np.ndarray:
    """The chance each grasp (tcp (N, 3), rot (N, 3, 3)) succeeds in the observed scene."""
    rng = np.random.default_rng(seed)
    pick = rng.choice(len(cloud), model.config.points, replace=len(cloud) < model.config.points)
    centre, xyz = normalise(cloud[pick], is_obj[pick])
    enc = model.encode(torch.from_numpy(xyz[None].astype(np.float32)), torch.from_numpy(is_obj[pick][None]))
    codes = torch.from_numpy(grasp_code(tcp, rot, centre)[None])
    return torch.sigmoid(model.score(enc, codes))[0].numpy()


MIN_SEEN = 3


def seen_object(cloud: np.ndarray, is_obj: np.ndarray) -> np.ndarray:
    """The object's points of the cloud; an object seen by fewer than :data:`MIN_SEEN` points
    gets no proposals (a ValueError: nothing to grasp on is a refusal, not a guess on the table)."""
    obj = cloud[is_obj]
    if len(obj) < MIN_SEEN:
        raise ValueError(f"the object is seen by {len(obj)} points: too few to propose on")
    return obj


def cloud_proposals(
    cloud: np.ndarray,
    is_obj: np.ndarray,
    n: int,
    rng: np.random.Generator,
    max_depth: float = 0.03,
    rim: float = 0.0,
) -> tuple[np.ndarray, np.ndarray]:
    """The seed's grasp sampler on the observed cloud (no simulator state): a seen object point,
    an approach from the hemisphere outside its estimated normal (the normal's side towards the
    camera-facing outside: away from the object's centroid), a closing axis uniform about it, the
    TCP 0-3 cm past the point. Returns tcp (n, 3) and rot (n, 3, 3).

    ``rim``: the fraction drawn instead at the seen object's outline (:func:`rim_proposals`), from
    the cloud alone, as the data collection draws rim grasps from the simulator's pose."""
    n_rim = int(round(rim * n))
    if n_rim:
        t0, r0 = cloud_proposals(cloud, is_obj, n - n_rim, rng, max_depth)
        t1, r1 = rim_proposals(cloud, is_obj, n_rim, rng, max_depth)
        return np.concatenate([t0, t1]), np.concatenate([r0, r1])
    obj = seen_object(cloud, is_obj)
    centre = obj.mean(axis=0)
    idx = rng.integers(len(obj), size=n)
    _, nb = nearest(
        torch.from_numpy(obj[idx][None].astype(np.float32)),
        torch.from_numpy(obj[None].astype(np.float32)),
        min(12, len(obj)),
    )
    tcps, rots = np.zeros((n, 3)), np.zeros((n, 3, 3))
    for k, (i, neigh) in enumerate(zip(idx, nb[0].numpy(), strict=True)):
        p = obj[i]
        local = obj[neigh] - obj[neigh].mean(axis=0)
        normal = np.linalg.svd(local, full_matrices=False)[2][-1]
        if normal @ (p - centre) < 0:
            normal = -normal
        tcps[k], rots[k] = hemisphere_grasp(p, normal, rng, max_depth)
    return tcps, rots


def rim_proposals(
    cloud: np.ndarray, is_obj: np.ndarray, n: int, rng: np.random.Generator, max_depth: float = 0.03
) -> tuple[np.ndarray, np.ndarray]:
    """Pinches across a flat object's thickness at its outline, from the cloud alone: the seen
    object's principal plane (its least axis is the thickness), a direction in that plane, the
    outline point furthest along it, an approach against it (within 20 deg), fingers closing
    along the thickness axis (within 15 deg), the TCP 0-3 cm in and 4 mm below the seen top."""
    obj = seen_object(cloud, is_obj)
    centre = obj.mean(axis=0)
    axes = np.linalg.svd(obj - centre, full_matrices=False)[2]
    e1, e2, e3 = axes[0], axes[1], axes[2] * (1.0 if axes[2][2] >= 0 else -1.0)
    tcps, rots = np.zeros((n, 3)), np.zeros((n, 3, 3))
    for k in range(n):
        phi = rng.uniform(-np.pi, np.pi)
        out = np.cos(phi) * e1 + np.sin(phi) * e2
        p = obj[int(np.argmax((obj - centre) @ out))]
        tcps[k], rots[k] = pinch_grasp(p, out, e3, rng, max_depth)
        tcps[k] -= 0.004 * e3
    return tcps, rots
