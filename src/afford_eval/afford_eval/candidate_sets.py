"""One scene's candidate set: affordance-guided and generic grasps, scored, planned, hashed.

Every method of the evaluation ranks this one set, so a difference in success between methods
is a difference in the selected interaction. The set holds

- the pipeline's own candidates (``Episode.propose``: AffordSim Stage 1 on the grounded region,
  enclosing and axis grasps), and
- generic antipodal candidates over the whole object cloud (``afford_planner.antipodal``), as a
  grasp estimator without affordance knowledge would propose them,

numbered as one set, with every term any method reads filled in: feasibility, function and
task from the grounded regions (``Episode.score``), ``plan`` from Stage 2 run on every
candidate (``Episode.plan``), ``antipodal`` quality (0 for the pipeline's candidates, which are
not antipodal samples), and ``function_oracle`` / ``task_oracle`` from the simulator's exact
part labels, for the oracle method. The camera view's intrinsics and pose are kept so that
the 2-D mask filter can project the region.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from afford_core.grasp import GraspCandidate
from afford_planner.antipodal import AntipodalConfig, sample_antipodal_grasps
from afford_planner.ik import IKConfig
from afford_planner.motion import PlannerConfig

SCENE_SEED_SPACE = 2**31 - 1

#: The evaluation's reference planner: another OMPL planner (BKPIECE1 explores by cell
#: coverage, not by RRTConnect's greedy trees), five times the budget, three times the IK
#: restarts and twice the IK goals of the default.
REFERENCE_PLANNER = PlannerConfig(algorithm="BKPIECE1", time_limit=5.0, ik=IKConfig(restarts=60), ik_goals=8)


def scene_seed(suite: str, scene_index: int) -> int:
    """Seed of scene ``scene_index`` of ``suite``: a hash, so that scenes differ across suites
    and do not depend on Python's per-process string hashing."""
    if scene_index < 0:
        raise ValueError(f"scene_index must be >= 0, got {scene_index}")
    digest = hashlib.sha256(f"{suite}/{scene_index}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % SCENE_SEED_SPACE


@dataclass(frozen=True)
class CandidateSetConfig:
    """How a scene's candidate set is built.

    Attributes:
        antipodal: The generic sampler's parameters (its seed is replaced by the scene seed).
        terms: Feasibility and function parameters (``afford_planner.terms.TermsConfig``);
            None: the AFFORD-X defaults.
        reference: The reference planner that retries every candidate the default planner
            found no plan for, so that a candidate counts as infeasible only when neither
            plans it (``afford_planner.motion.PlannerConfig``); None: no retry.
    """

    antipodal: AntipodalConfig = field(default_factory=AntipodalConfig)
    terms: Any = None
    reference: PlannerConfig | None = field(default_factory=lambda: REFERENCE_PLANNER)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form, part of the set's hash."""
        return {
            "antipodal": dataclasses.asdict(self.antipodal),
            "terms": None if self.terms is None else dataclasses.asdict(self.terms),
            "reference": None if self.reference is None else dataclasses.asdict(self.reference),
        }


@dataclass
class CandidateSet:
    """A built scene: its episode (world at the start state), candidates and hash.

    Attributes:
        episode: The prepared episode; its world is at the state the candidates start from.
        candidates: The scored, planned set (the same objects as ``episode.candidates``).
        set_hash: ``candidate_set_hash`` of the candidates and the scene/config.
        origins: Per candidate index, ``"propose"`` (the pipeline's sampler) or ``"antipodal"``.
        object_center: The perceived centre of the target (stability methods).
        region_points: The grounded grasp-region points (the mask filter).
        K, world_T_camera, image_size: The perception view's intrinsics, OpenCV camera pose in
            world, and (width, height).
    """

    episode: Any
    candidates: list[GraspCandidate]
    set_hash: str
    origins: dict[int, str]
    object_center: np.ndarray
    region_points: np.ndarray
    K: np.ndarray
    world_T_camera: np.ndarray
    image_size: tuple[int, int]


def _oracle_terms(ep: Any, cands: list[GraspCandidate], terms_cfg: Any) -> None:
    """Function and task terms with the simulator's part labels, as ``*_oracle`` terms."""
    from afford_core.geometry import front_normal
    from afford_perception.grounding import make_source
    from afford_pipeline.episode import FURNITURE_ACTIONS
    from afford_planner.task_constraints import TaskContext, compile_constraints, fill_task_terms
    from afford_planner.terms import TermsConfig, fill_terms

    cloud, intent = ep.cloud, ep.intent
    oracle = make_source("oracle")
    parts = {p: cloud.points[oracle.ground(cloud, p) >= 0.5] for p in ep.parts}
    # A part the labels say is out of view keeps the grounded points the pipeline used, so the
    # oracle differs from the pipeline only where the labels know better.
    parts = {p: (pts if len(pts) >= 5 else ep.parts[p]) for p, pts in parts.items()}
    # Only function and task are read from the twins; reach stays the set's own.
    cfg = dataclasses.replace(terms_cfg or TermsConfig(), reach_source="box")
    pull = ep.pull_axis
    if intent.next_action in FURNITURE_ACTIONS and len(parts[intent.grasp_region]):
        face = parts.get(intent.use_region or "", np.empty((0, 3)))
        pull = front_normal(parts[intent.grasp_region], face, cloud.points)
    if pull is not None:
        cfg = dataclasses.replace(cfg, preferred_approach=tuple(-pull))
    # On copies: the grounded terms of the set must stay as the methods see them.
    twins = copy.deepcopy(cands)
    fill_terms(twins, parts[intent.grasp_region], ep.obstacles, cfg)
    fill_task_terms(twins, compile_constraints(intent, parts, TaskContext(cloud.center, pull_axis=pull)))
    for c, t in zip(cands, twins, strict=True):
        c.terms["function_oracle"] = t.terms["function"]
        c.terms["task_oracle"] = t.terms["task"]


def candidate_set_id(
    cands: list[GraspCandidate],
    suite: str,
    scene_index: int,
    seed: int,
    grounding: str,
    config: CandidateSetConfig,
) -> str:
    """The set's content hash: its candidates and everything that produced them. Recomputable
    from a scene record (its candidates' poses and widths), which is how a record is checked."""
    from afford_planner.selection import candidate_set_hash

    extra = {
        "suite": suite,
        "scene": scene_index,
        "seed": seed,
        "grounding": grounding,
        "config": config.as_dict(),
    }
    return candidate_set_hash(cands, extra)


def build_candidate_set(
    suite: str, scene_index: int, grounding: str, config: CandidateSetConfig | None = None
) -> CandidateSet:
    """Build scene ``scene_index`` of ``suite``, perceive, ground, sample, score and plan.

    The caller owns ``result.episode.world`` and must ``close()`` it.

    Raises:
        ValueError: the scene's target is not seen or its grasp region is not grounded (the
            scene cannot be evaluated; the error says which).
    """
    from afford_eval.suites import scene_for, sentence_for, task_for_scene
    from afford_perception.grounding import make_source
    from afford_perception.parser import parse
    from afford_pipeline.episode import Episode
    from afford_planner.candidates import index_candidates
    from afford_planner.selection import SelectionConfig
    from afford_sim.scene import sample_scene
    from afford_sim.tasks import get_task
    from afford_sim.world import BatchWorld

    cfg = config or CandidateSetConfig()
    sentence = sentence_for(suite, scene_index)
    seed = scene_seed(suite, scene_index)
    intent = parse(sentence)
    task = get_task(task_for_scene(suite, scene_index))
    world = BatchWorld(sample_scene(scene_for(suite, scene_index, seed), seed=seed))
    try:
        ep = Episode(intent, task, world, make_source(grounding), seed=seed)
        ep.perceive()
        ep.ground()
        cloud = ep.cloud
        assert cloud is not None  # perceive() sets it or raises
        if len(ep.region) < 5:
            raise ValueError(f"{grounding} grounding found no {intent.target} {intent.grasp_region} in view")
        # Rendering does not step physics: this is the view perceive() used.
        obs = world.render(rgb=False, depth=False, segmentation=False)
        proposed = ep.propose()
        generic = sample_antipodal_grasps(cloud.points, dataclasses.replace(cfg.antipodal, seed=seed))
        cands = index_candidates(proposed, generic)
        origins = {c.index: ("propose" if i < len(proposed) else "antipodal") for i, c in enumerate(cands)}
        for c in cands:
            c.terms.setdefault("antipodal", 0.0)
        ep.candidates = cands
        ep.score(cfg.terms, SelectionConfig(), with_arm_reach=True)
        _oracle_terms(ep, cands, cfg.terms)
        ep.plan(cands, reference=cfg.reference)
        set_hash = candidate_set_id(cands, suite, scene_index, seed, grounding, cfg)
        cam = next(c for c in world.placed.spec.cameras if c.name == obs.camera)
        return CandidateSet(
            episode=ep,
            candidates=cands,
            set_hash=set_hash,
            origins=origins,
            object_center=np.asarray(cloud.center, dtype=np.float64),
            region_points=ep.region.copy(),
            K=obs.K,
            world_T_camera=obs.world_T_camera,
            image_size=(cam.width, cam.height),
        )
    except BaseException:
        world.close()
        raise
