"""Selection methods compared on one candidate set: baselines, the AFFORD-X factorial, oracle.

Each method is a function ``(candidates, context) -> index | None``: the index of the
candidate it would execute, or None when it abstains (an abstention counts as a failure).
A method sees the candidates' poses and terms and the perception context, never the
outcomes of executing them.

    random                 uniform among all candidates (seeded by the scene)
    stability              nearest the perceived centre of the object, ties (within
                           ``tie_distance``) by antipodal quality: AnyGrasp's preference for
                           grasps through the centre of mass
    stability_filter       stability among the candidates whose TCP projects into the
                           grounded region's 2-D mask in the camera image (GenManip's
                           AnyGrasp + Filter); abstains when none does
    afford_<L>_<gate>_<comb>   AFFORD-X ``selection.select`` at level L1..L4, gate none or
                           feasibility, combination weighted_sum or product
    oracle                 L4, feasibility gate, product, with function and task terms from
                           the simulator's part labels (``function_oracle``, ``task_oracle``)
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage

from afford_core.grasp import GraspCandidate
from afford_planner.selection import Combination, Gate, Level, SelectionConfig, select


@dataclass(frozen=True)
class MethodContext:
    """What a method may know about the scene besides the candidates.

    Attributes:
        seed: Seed of the random method's draw (the scene seed).
        object_center: (3,) perceived centre of the target object in world.
        region_points: (M, 3) grounded points of the grasp region (the mask filter's region).
        K: 3x3 camera intrinsics of the perception view (OpenCV convention).
        world_T_camera: 4x4 OpenCV camera pose in world.
        image_size: (width, height) of the perception view in pixels.
        weights: Weights of the weighted-sum rule per rank term, fixed before the run.
        mask_dilation_px: Pixels the projected region mask is dilated by: projected depth
            points leave one-pixel holes, and a TCP inside a thin handle sits on its edge.
        tie_distance: Distances to the centre within this (m) tie for the stability method.
    """

    seed: int
    object_center: np.ndarray
    region_points: np.ndarray = field(default_factory=lambda: np.empty((0, 3)))
    K: np.ndarray = field(default_factory=lambda: np.eye(3))
    world_T_camera: np.ndarray = field(default_factory=lambda: np.eye(4))
    image_size: tuple[int, int] = (640, 480)
    weights: Mapping[str, float] = field(default_factory=dict)
    mask_dilation_px: int = 3
    tie_distance: float = 0.005

    def __post_init__(self) -> None:
        if np.asarray(self.object_center).shape != (3,):
            raise ValueError(f"object_center must be a 3-vector, got {self.object_center!r}")
        if np.asarray(self.K).shape != (3, 3) or np.asarray(self.world_T_camera).shape != (4, 4):
            raise ValueError("K must be 3x3 and world_T_camera 4x4")
        if self.image_size[0] < 1 or self.image_size[1] < 1:
            raise ValueError(f"image_size must be positive (width, height), got {self.image_size}")
        if self.mask_dilation_px < 0 or self.tie_distance < 0:
            raise ValueError("mask_dilation_px and tie_distance must be >= 0")


Method = Callable[[Sequence[GraspCandidate], MethodContext], int | None]


def project(points: np.ndarray, K: np.ndarray, world_T_camera: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pixel coordinates (u, v) of world ``points`` (N, 3) and whether each is in front of the camera."""
    cam_T_world = np.linalg.inv(world_T_camera)
    pc = np.asarray(points, dtype=np.float64) @ cam_T_world[:3, :3].T + cam_T_world[:3, 3]
    front = pc[:, 2] > 1e-6
    z = np.where(front, pc[:, 2], 1.0)
    uv = (pc[:, :2] / z[:, None]) @ K[:2, :2].T + K[:2, 2]
    return uv, front


def region_mask(context: MethodContext) -> np.ndarray:
    """(H, W) mask of the grounded region in the perception view, dilated by ``mask_dilation_px``."""
    w, h = context.image_size
    mask = np.zeros((h, w), dtype=bool)
    if len(context.region_points) == 0:
        return mask
    uv, front = project(context.region_points, context.K, context.world_T_camera)
    px = np.rint(uv[front]).astype(np.int64)
    inside = (px[:, 0] >= 0) & (px[:, 0] < w) & (px[:, 1] >= 0) & (px[:, 1] < h)
    mask[px[inside, 1], px[inside, 0]] = True
    if context.mask_dilation_px:
        mask = ndimage.binary_dilation(mask, iterations=context.mask_dilation_px)
    return mask


def in_mask(cands: Sequence[GraspCandidate], context: MethodContext) -> list[bool]:
    """Whether each candidate's TCP projects into the region mask."""
    if not cands:
        return []
    mask = region_mask(context)
    h, w = mask.shape
    uv, front = project(np.array([c.position for c in cands]), context.K, context.world_T_camera)
    px = np.rint(uv).astype(np.int64)
    ok = front & (px[:, 0] >= 0) & (px[:, 0] < w) & (px[:, 1] >= 0) & (px[:, 1] < h)
    return [bool(o and mask[p[1], p[0]]) for o, p in zip(ok, px, strict=True)]


def random_method(cands: Sequence[GraspCandidate], context: MethodContext) -> int | None:
    """Uniform choice among all candidates, seeded by the scene."""
    if not cands:
        return None
    rng = np.random.default_rng(context.seed)
    return int(cands[int(rng.integers(len(cands)))].index)


def stability(cands: Sequence[GraspCandidate], context: MethodContext) -> int | None:
    """Nearest the perceived centre; within ``tie_distance`` the better antipodal quality, then index."""
    if not cands:
        return None
    centre = np.asarray(context.object_center, dtype=np.float64)
    tie = max(context.tie_distance, 1e-9)

    def key(c: GraspCandidate) -> tuple[float, float, int]:
        d = float(np.linalg.norm(c.position - centre))
        return (float(np.floor(d / tie)), -float(c.terms.get("antipodal", 0.0)), c.index)

    return int(min(cands, key=key).index)


def stability_filter(cands: Sequence[GraspCandidate], context: MethodContext) -> int | None:
    """Stability among candidates whose TCP falls in the region's 2-D mask; None if none does."""
    kept = [c for c, ok in zip(cands, in_mask(cands, context), strict=True) if ok]
    return stability(kept, context)


def afford(level: Level, gate: Gate, combination: Combination) -> Method:
    """The AFFORD-X rule at one factorial cell."""

    def method(cands: Sequence[GraspCandidate], context: MethodContext) -> int | None:
        cfg = SelectionConfig(combination=combination, gate=gate, level=level, weights=dict(context.weights))
        # select writes scores and eligibility into the candidates: rank copies, so that no
        # method's ranking leaks into the set another method sees.
        chosen = select(copy.deepcopy(list(cands)), cfg).chosen
        return None if chosen is None else int(chosen.index)

    method.__name__ = f"afford_{level}_{gate}_{combination}"
    return method


def oracle(cands: Sequence[GraspCandidate], context: MethodContext) -> int | None:
    """L4 product with the feasibility gate, on function and task terms from the part labels."""
    twins = copy.deepcopy(list(cands))
    for c in twins:
        c.terms["function"] = c.terms["function_oracle"]
        c.terms["task"] = c.terms["task_oracle"]
    chosen = select(twins, SelectionConfig(combination="product", gate="feasibility", level="L4")).chosen
    return None if chosen is None else int(chosen.index)


LEVELS: tuple[Level, ...] = ("L1", "L2", "L3", "L4")
GATES: tuple[Gate, ...] = ("none", "feasibility")
COMBINATIONS: tuple[Combination, ...] = ("weighted_sum", "product")

METHODS: dict[str, Method] = {
    "random": random_method,
    "stability": stability,
    "stability_filter": stability_filter,
    **{f"afford_{lv}_{g}_{cb}": afford(lv, g, cb) for lv in LEVELS for g in GATES for cb in COMBINATIONS},
    "oracle": oracle,
}


def all_method_names() -> list[str]:
    """Every registered method, baselines first, then the factorial, then the oracle."""
    return list(METHODS)


def apply_methods(
    cands: Sequence[GraspCandidate], context: MethodContext, names: Sequence[str] | None = None
) -> dict[str, int | None]:
    """Each named method's selection on the same set (all methods when ``names`` is None)."""
    chosen_names = list(names) if names is not None else all_method_names()
    unknown = [n for n in chosen_names if n not in METHODS]
    if unknown:
        raise KeyError(f"unknown methods {unknown}; known: {all_method_names()}")
    return {n: METHODS[n](cands, context) for n in chosen_names}
