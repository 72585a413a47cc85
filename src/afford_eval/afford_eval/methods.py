"""Selection methods compared on one candidate set: baselines, the AFFORD-X factorial, and the
factorial's best cell with terms from part labels.

Each method is a function ``(candidates, context) -> MethodChoice``: the index of the candidate
it would execute (None when it abstains; an abstention counts as a failure) and how many
candidates tied for its top rank. A method sees the candidates' poses and terms and the
perception context, never the outcomes of executing them. Ties are never broken by list order:
the pick among tied candidates is a draw seeded by the scene and the method's name, and the
tie's size is recorded, so a report can say how often a rule did not decide.

    random                 uniform among all candidates (seeded by the scene)
    stability              nearest the perceived centre of the object, ties (within
                           ``tie_distance``) by antipodal quality: AnyGrasp's preference for
                           grasps through the centre of mass
    stability_filter       stability among the candidates whose TCP projects into the
                           grounded region's 2-D mask in the camera image (GenManip's
                           AnyGrasp + Filter); abstains when none does
    afford_<L>_<gate>_<comb>   AFFORD-X ``selection.select`` at level L1..L4, gate none or
                           feasibility, combination weighted_sum or product, reach from
                           AFFORD-X's fixed workspace box
    afford_<L>_<gate>_<comb>_armreach   the same cell with reach from the arm's IK at the
                           grasp pose (``reach_arm``): the gate then follows the arm
    part_label_terms       L4, feasibility gate, product, with function and task terms from
                           the simulator's part labels (``function_oracle``, ``task_oracle``):
                           what better grounding would give on the same candidates. Not a
                           ceiling; the ceiling is a scene where any candidate succeeded.

Every method also runs as ``<name>@planned``: the same rule over only the candidates that have a
collision-free plan (``MethodContext.planned``). Only L4's plan term knows plannability; giving
every method the same plan mask is what makes a comparison with L4 fair.
"""

from __future__ import annotations

import copy
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage

from afford_core.grasp import GraspCandidate
from afford_planner.selection import Combination, Gate, Level, SelectionConfig, select
from afford_planner.terms import ReachSource


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
        planned: Indices of the candidates with a collision-free plan; None when unknown (the
            ``@planned`` methods then refuse to run).
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
    planned: frozenset[int] | None = None

    def __post_init__(self) -> None:
        if np.asarray(self.object_center).shape != (3,):
            raise ValueError(f"object_center must be a 3-vector, got {self.object_center!r}")
        if np.asarray(self.K).shape != (3, 3) or np.asarray(self.world_T_camera).shape != (4, 4):
            raise ValueError("K must be 3x3 and world_T_camera 4x4")
        if self.image_size[0] < 1 or self.image_size[1] < 1:
            raise ValueError(f"image_size must be positive (width, height), got {self.image_size}")
        if self.mask_dilation_px < 0 or self.tie_distance < 0:
            raise ValueError("mask_dilation_px and tie_distance must be >= 0")


@dataclass(frozen=True)
class MethodChoice:
    """What a method selected: a candidate index (None: abstained) and the size of the tie it
    was drawn from (1: the rule decided alone; 0: abstained)."""

    index: int | None
    tied: int = 1


Method = Callable[[Sequence[GraspCandidate], MethodContext], MethodChoice]
PLANNED = "@planned"
"""Suffix of a method run over the planned candidates only."""
ARM_REACH = "_armreach"
"""Suffix of an AFFORD-X cell whose reach term comes from the arm's IK, not AFFORD-X's box."""

ABSTAIN = MethodChoice(None, 0)


def seeded_pick(tied: Sequence[int], seed: int, salt: str) -> int:
    """One of the tied candidate indices, drawn with a generator seeded by the scene and
    ``salt`` (the method's name): the same scene and method always pick the same one, and no
    rule inherits an advantage from the order candidates were listed in."""
    ordered = sorted(int(i) for i in tied)
    if len(ordered) == 1:
        return ordered[0]
    rng = np.random.default_rng([int(seed), zlib.crc32(salt.encode())])
    return ordered[int(rng.integers(len(ordered)))]


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


def random_method(cands: Sequence[GraspCandidate], context: MethodContext) -> MethodChoice:
    """Uniform choice among all candidates, seeded by the scene (one draw; the report also
    gives the expectation over candidates)."""
    if not cands:
        return ABSTAIN
    rng = np.random.default_rng(context.seed)
    return MethodChoice(int(cands[int(rng.integers(len(cands)))].index), 1)


def stability_groups(cands: Sequence[GraspCandidate], context: MethodContext) -> list[list[GraspCandidate]]:
    """The candidates in the stability rule's order, best first, as groups the rule cannot
    separate: distance to the perceived centre in steps of ``tie_distance``, then antipodal
    quality."""
    centre = np.asarray(context.object_center, dtype=np.float64)
    tie = max(context.tie_distance, 1e-9)

    def key(c: GraspCandidate) -> tuple[float, float]:
        d = float(np.linalg.norm(c.position - centre))
        return (float(np.floor(d / tie)), -float(c.terms.get("antipodal", 0.0)))

    groups: dict[tuple[float, float], list[GraspCandidate]] = {}
    for c in cands:
        groups.setdefault(key(c), []).append(c)
    return [groups[k] for k in sorted(groups)]


def stability_ranking(cands: Sequence[GraspCandidate], context: MethodContext,
                      salt: str = "stability") -> list[GraspCandidate]:
    """Every candidate in the stability rule's order, each tie group in a seeded random order."""
    out: list[GraspCandidate] = []
    for k, group in enumerate(stability_groups(cands, context)):
        rng = np.random.default_rng([int(context.seed), zlib.crc32(f"{salt}/{k}".encode())])
        ordered = sorted(group, key=lambda c: c.index)
        out += [ordered[i] for i in rng.permutation(len(ordered))]
    return out


def stability(cands: Sequence[GraspCandidate], context: MethodContext) -> MethodChoice:
    """Nearest the perceived centre; within ``tie_distance`` the better antipodal quality; a
    seeded draw among what still ties."""
    if not cands:
        return ABSTAIN
    top = stability_groups(cands, context)[0]
    return MethodChoice(seeded_pick([c.index for c in top], context.seed, "stability"), len(top))


def stability_filter(cands: Sequence[GraspCandidate], context: MethodContext) -> MethodChoice:
    """Stability among candidates whose TCP falls in the region's 2-D mask; abstains if none does."""
    kept = [c for c, ok in zip(cands, in_mask(cands, context), strict=True) if ok]
    return stability(kept, context)


def _select_with_ties(cands: Sequence[GraspCandidate], cfg: SelectionConfig, context: MethodContext,
                      salt: str) -> MethodChoice:
    # select writes scores and eligibility into the candidates: rank copies, so that no
    # method's ranking leaks into the set another method sees.
    sel = select(copy.deepcopy(list(cands)), cfg)
    if sel.chosen is None:
        return ABSTAIN
    return MethodChoice(seeded_pick(sel.tied, context.seed, salt), len(sel.tied))


def with_reach(cands: Sequence[GraspCandidate], reach: ReachSource) -> list[GraspCandidate]:
    """Copies of ``cands`` whose ``reach`` term is the named reading: ``reach_box`` (AFFORD-X's
    box; plain ``reach`` in runs made before both were stored) or ``reach_arm`` (the arm's IK).
    A method's name says which reach it used, whichever the set was scored with."""
    twins = copy.deepcopy(list(cands))
    for c in twins:
        key = f"reach_{reach}"
        if reach == "arm" and key not in c.terms:
            raise KeyError(f"candidate {c.index} has no reach_arm term: the set was scored without the arm's "
                           "reach test (a run made before it existed cannot rank with it)")
        if key in c.terms:
            c.terms["reach"] = c.terms[key]
    return twins


def afford(level: Level, gate: Gate, combination: Combination, reach: ReachSource = "box") -> Method:
    """The AFFORD-X rule at one factorial cell, ties drawn (``selection.select`` alone would
    take the lowest index); ``reach="arm"`` reads the reach term from the arm's IK instead of
    AFFORD-X's box."""
    name = f"afford_{level}_{gate}_{combination}" + ("" if reach == "box" else ARM_REACH)

    def method(cands: Sequence[GraspCandidate], context: MethodContext) -> MethodChoice:
        cfg = SelectionConfig(combination=combination, gate=gate, level=level, weights=dict(context.weights))
        return _select_with_ties(with_reach(cands, reach), cfg, context, name)

    method.__name__ = name
    return method


def part_label_terms(cands: Sequence[GraspCandidate], context: MethodContext) -> MethodChoice:
    """L4 product with the feasibility gate, on function and task terms from the part labels."""
    twins = with_reach(cands, "box")
    for c in twins:
        c.terms["function"] = c.terms["function_oracle"]
        c.terms["task"] = c.terms["task_oracle"]
    cfg = SelectionConfig(combination="product", gate="feasibility", level="L4")
    return _select_with_ties(twins, cfg, context, "part_label_terms")


def planned_only(method: Method) -> Method:
    """``method`` over the candidates with a plan (``context.planned``)."""

    def restricted(cands: Sequence[GraspCandidate], context: MethodContext) -> MethodChoice:
        if context.planned is None:
            raise ValueError("an @planned method needs the set's plan mask (MethodContext.planned)")
        return method([c for c in cands if c.index in context.planned], context)

    restricted.__name__ = f"{getattr(method, '__name__', 'method')}{PLANNED}"
    return restricted


LEVELS: tuple[Level, ...] = ("L1", "L2", "L3", "L4")
GATES: tuple[Gate, ...] = ("none", "feasibility")
COMBINATIONS: tuple[Combination, ...] = ("weighted_sum", "product")

_BASE: dict[str, Method] = {
    "random": random_method,
    "stability": stability,
    "stability_filter": stability_filter,
    **{f"afford_{lv}_{g}_{cb}": afford(lv, g, cb) for lv in LEVELS for g in GATES for cb in COMBINATIONS},
    **{f"afford_{lv}_{g}_{cb}{ARM_REACH}": afford(lv, g, cb, "arm")
       for lv in LEVELS for g in GATES for cb in COMBINATIONS},
    "part_label_terms": part_label_terms,
}
METHODS: dict[str, Method] = {**_BASE, **{f"{n}{PLANNED}": planned_only(m) for n, m in _BASE.items()}}


def all_method_names() -> list[str]:
    """Every registered method: baselines, the factorial, part-label terms; then each of them
    over the planned candidates only."""
    return list(METHODS)


def apply_methods(
    cands: Sequence[GraspCandidate], context: MethodContext, names: Sequence[str] | None = None
) -> dict[str, MethodChoice]:
    """Each named method's selection on the same set (all methods when ``names`` is None)."""
    chosen_names = list(names) if names is not None else all_method_names()
    unknown = [n for n in chosen_names if n not in METHODS]
    if unknown:
        raise KeyError(f"unknown methods {unknown}; known: {all_method_names()}")
    return {n: METHODS[n](cands, context) for n in chosen_names}
