"""The five grasp sources of AffordSim's Table 1, as choosers the spine runs.

Every source faces the same scene (the task's sampler, the same seed), the same perception, the
same motion planner with the same budget (it plans at most ``plan_top_k`` of its candidates, in
its own order, as our method does), the same skill after the grasp and the same stage checks. Only
how the grasp is chosen differs. The later stages (where to pour, which hook) use the grounding
named by :attr:`GraspSource.grounding`: the learned model for every source that perceives, the
part labels for the two that read the simulator.

    manual                   AffordSim's "Manual": a program that reads the simulator's true
                             geometry of the part the task holds and grasps it by a fixed rule
                             (a round body around its axis, a wide rim pinched across its
                             wall, anything else across the central third of its long axis,
                             top-down); no per-object tuning yet. For a push it
                             lays the push contacts (:mod:`afford_planner.push`) on the
                             true part towards the goal. Its later stages use the part labels.
    antipodal_stability      "AnyGrasp"-like: a model-free detector on the whole perceived cloud
                             (:func:`generic_candidates`: antipodal pairs, and top-down grasps
                             across the cloud's long axis along 90% of it, which a single view
                             allows where antipodal pairs need both faces seen; for a push, push
                             contacts on the whole cloud), ranked as a stability-first detector
                             ranks (nearest the perceived centre, then antipodal quality). Not
                             AnyGrasp, a learned network we cannot ship; a geometric stand-in
                             that is blind to parts.
    antipodal_stability_mask "AnyGrasp+Filter"-like (GenManip): the same candidates, kept only
                             where the TCP (for a push, the point it pushes) projects into the
                             2-D image mask of the learned grounding's region (a stand-in for
                             SAM2's task mask), same ranking.
    affordance_learned       Ours ("AffordSim"): the spine with the learned affordance model.
    affordance_part_labels   Ours with the simulator's part labels instead of the model
                             ("Human Aff.", the oracle upper bound).
    antipodal_random         Chance: the generic detector's candidates in a uniform order seeded
                             by the scene, with the same planning budget.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import trimesh

from afford_core.grasp import GraspCandidate
from afford_core.ontology import category
from afford_core.types import ObjectCloud
from afford_eval.methods import MethodContext, in_mask, stability_ranking
from afford_pipeline.episode import Choice, Episode
from afford_pipeline.spine import Chooser, SpineConfig
from afford_planner.antipodal import AntipodalConfig, sample_antipodal_grasps
from afford_planner.candidates import (
    AxisGraspConfig,
    EnclosingGraspConfig,
    RimGraspConfig,
    index_candidates,
    sample_axis_grasps,
    sample_enclosing_grasps,
    sample_rim_grasps,
)
from afford_planner.push import PushConfig, push_contacts_towards


@dataclass(frozen=True)
class GraspSource:
    """One column of Table 1.

    Attributes:
        name: Registry name (``afford bench table1 --sources``).
        column: The seed's column this source stands for.
        grounding: Grounding source of perception's regions (what the later stages use).
        chooser: How the grasp is chosen; None runs the spine's own selection.
    """

    name: str
    column: str
    grounding: str
    chooser: Chooser | None


def _plan_in_order(ep: Episode, ranked: list[GraspCandidate], cfg: SpineConfig, none: str) -> Choice:
    """Plan the first ``plan_top_k`` of ``ranked`` and take the best-ranked one with a plan."""
    if not ranked:
        return Choice(None, none, 0, 0, 0)
    tried = ranked[: cfg.plan_top_k]
    ep.plan(tried)
    grasp = next((c for c in tried if c.index in ep.plans), None)
    reason = "" if grasp is not None else "no candidate has a collision-free plan"
    return Choice(grasp, reason, len(ranked), len(ep.plans), len(tried))


def generic_candidates(ep: Episode) -> list[GraspCandidate]:
    """The generic detector's candidates on the whole observed cloud, numbered as one set.

    Antipodal pairs (1,000 seed points) and top-down grasps across the cloud's principal
    horizontal axis at 9 positions along its central 90%: a detector that sees the object as
    one shape, without parts or a task. For a push, which no grasp serves, the same push
    contacts as ours but laid on the whole cloud, blind to parts: what a part-blind method has
    when it is told, as ours is, that the task pushes towards the goal.
    """
    assert ep.cloud is not None
    if ep.push_goal is not None:
        cands = index_candidates(
            push_contacts_towards(ep.cloud.points, ep.cloud.points, ep.push_goal, ep.gripper.max_width))
        for c in cands:
            c.terms.setdefault("antipodal", 0.0)
        return cands
    pairs = sample_antipodal_grasps(
        ep.cloud.points, AntipodalConfig(max_width=ep.gripper.max_width, seed=ep.seed, num_seeds=1000)
    )
    whole = ObjectCloud(ep.cloud.points, ep.cloud.category)
    across = sample_axis_grasps(whole, AxisGraspConfig(
        max_width=ep.gripper.max_width, max_depth=ep.gripper.pad_length, num_positions=9,
        central_fraction=0.9,
    ))
    cands = index_candidates(pairs, across)
    for c in cands:
        c.terms.setdefault("antipodal", 0.0)
    return cands


def _mask_context(ep: Episode) -> MethodContext:
    """The perception view and grounded region the mask filter projects (the view perception used)."""
    assert ep.cloud is not None and ep.world is not None
    obs = ep.world.render(rgb=False, depth=False, segmentation=False)  # does not step physics
    cam = next(c for c in ep.world.placed.spec.cameras if c.name == obs.camera)
    return MethodContext(
        seed=ep.seed,
        object_center=np.asarray(ep.cloud.center, dtype=np.float64),
        region_points=ep.region,
        K=obs.K,
        world_T_camera=obs.world_T_camera,
        image_size=(cam.width, cam.height),
    )


def _pushed_point(c: GraspCandidate) -> GraspCandidate:
    """A copy of push contact ``c`` moved 1 cm into the object along the push: where it pushes."""
    ahead = np.array([c.approach[0], c.approach[1], 0.0])
    ahead /= max(float(np.linalg.norm(ahead)), 1e-9)
    return dataclasses.replace(c, position=c.position + (PushConfig().gap + 0.01) * ahead, terms={})


def _generic(ep: Episode, cfg: SpineConfig, masked: bool) -> Choice:
    ep.candidates = generic_candidates(ep)
    context = _mask_context(ep)
    pool = list(ep.candidates)
    if masked:
        # A push contact's TCP stands behind the object; the point it pushes is ahead of it.
        probes = pool if ep.push_goal is None else [_pushed_point(c) for c in pool]
        pool = [c for c, ok in zip(pool, in_mask(probes, context), strict=True) if ok]
    # The stability rule orders the whole pool (best first; ties in a seeded order).
    ranked = stability_ranking(pool, context)
    none = ("no generic grasp projects into the grounded region's mask" if masked
            else "the generic detector found no grasp")
    return _plan_in_order(ep, ranked, cfg, none)


def antipodal_stability(ep: Episode, cfg: SpineConfig) -> Choice:
    """AnyGrasp-like (module docstring)."""
    return _generic(ep, cfg, masked=False)


def antipodal_stability_mask(ep: Episode, cfg: SpineConfig) -> Choice:
    """AnyGrasp+Filter-like (module docstring)."""
    return _generic(ep, cfg, masked=True)


def antipodal_random(ep: Episode, cfg: SpineConfig) -> Choice:
    """Chance: the generic detector's candidates in a uniform order seeded by the scene, with
    the same planning budget (Table 1's chance row)."""
    ep.candidates = generic_candidates(ep)
    order = np.random.default_rng(ep.seed).permutation(len(ep.candidates))
    return _plan_in_order(ep, [ep.candidates[i] for i in order], cfg, "the generic detector found no grasp")


def true_part_points(ep: Episode, part: str | None, n: int = 1500) -> np.ndarray:
    """Points on the true surface of the target's ``part`` (None: the whole object) at its
    simulated pose: the simulator's knowledge, which only the manual source may read."""
    assert ep.world is not None
    meshes = []
    for s in ep.world.collision_shapes():
        if s.object == ep.target_name and part in (None, s.part) and s.kind == "convex":
            assert s.vertices is not None and s.faces is not None
            meshes.append(trimesh.Trimesh(s.world_vertices(), s.faces, process=False))
    if not meshes:
        raise ValueError(f"the simulator has no {part} on the {ep.target_name}")
    mesh = trimesh.util.concatenate(meshes)
    pts, _ = trimesh.sample.sample_surface(mesh, n, seed=ep.seed)
    return np.asarray(pts, dtype=np.float64)


def manual(ep: Episode, cfg: SpineConfig) -> Choice:
    """AffordSim's Manual (module docstring): the rule on the true part geometry."""
    part = ep.intent.grasp_region
    pts = true_part_points(ep, part)
    if ep.push_goal is not None:
        whole = true_part_points(ep, None)
        contacts = push_contacts_towards(pts, whole, ep.push_goal, ep.gripper.max_width)
        ep.candidates = index_candidates(contacts)
        return _plan_in_order(ep, list(ep.candidates), cfg, f"the rule has no push contact on the {part}")
    cands: list[GraspCandidate] = []
    if "grasp_body" in category(ep.intent.target).affordances.get(part, ()):
        cands = sample_enclosing_grasps(pts, EnclosingGraspConfig(max_width=ep.gripper.max_width))
    if not cands and part == "rim":  # a rim wider than the hand: pinch its wall
        cands = sample_rim_grasps(pts, RimGraspConfig())
    if not cands:
        cloud = ObjectCloud(pts, ep.intent.target, part_names=(part,))
        config = AxisGraspConfig(max_width=ep.gripper.max_width, max_depth=ep.gripper.pad_length)
        cands = sample_axis_grasps(cloud, config)
    # Fingertip pads reach about 1 cm below the TCP: keep it 1.6 cm above the object's lowest
    # point, as the generic detector does, so a flat object is not grasped through the table.
    lowest = float(true_part_points(ep, None)[:, 2].min())
    for c in cands:
        c.position[2] = max(c.position[2], lowest + 0.016)
    # The central grasp first: the rule's preference when several fit.
    centre = 0.5 * (pts.min(axis=0) + pts.max(axis=0))
    cands = sorted(cands, key=lambda c: float(np.linalg.norm(c.position[:2] - centre[:2])))
    ep.candidates = index_candidates(cands)
    return _plan_in_order(ep, list(ep.candidates), cfg, f"the rule has no grasp for the {part}")


GRASP_SOURCES: dict[str, GraspSource] = {
    s.name: s
    for s in (
        GraspSource("manual", "Manual", "oracle", manual),
        GraspSource("antipodal_stability", "AnyGrasp", "learned", antipodal_stability),
        GraspSource("antipodal_stability_mask", "AnyGrasp+Filter", "learned", antipodal_stability_mask),
        GraspSource("affordance_learned", "AffordSim", "learned", None),
        GraspSource("affordance_part_labels", "Human Aff.", "oracle", None),
        GraspSource("antipodal_random", "chance", "learned", antipodal_random),
    )
}


def get_source(name: str) -> GraspSource:
    """The grasp source ``name`` (KeyError lists the known ones)."""
    try:
        return GRASP_SOURCES[name]
    except KeyError:
        raise KeyError(f"unknown grasp source {name!r}; known: {', '.join(GRASP_SOURCES)}") from None


def config_for(source: GraspSource, base: SpineConfig) -> SpineConfig:
    """``base`` with the source's grounding."""
    return dataclasses.replace(base, grounding=source.grounding)
