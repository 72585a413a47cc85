"""Core of the counterfactual evaluation: methods, statistics, hashing, one real scene.

A method comparison is only as trustworthy as these pieces: each method must choose by its own
rule (and never by outcomes), intervals must match independent references, and every candidate
of a real scene must have been executed from the same state, reproducibly.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats as sps

from afford_core.grasp import GraspCandidate
from afford_eval.methods import (
    METHODS,
    MethodContext,
    all_method_names,
    apply_methods,
    in_mask,
    project,
)
from afford_eval.stats import paired_bootstrap, rates, wilson
from afford_eval.suites import SUITES, check_suites, sentence_for
from afford_sim.tasks import get_task

DOWN = np.diag([1.0, -1.0, -1.0])


def cand(index: int, xyz: tuple[float, float, float], **terms: float) -> GraspCandidate:
    base = {"reach": 1.0, "approach": 1.0, "clearance": 1.0, "function": 1.0, "task": 1.0, "plan": 1.0}
    base.update(terms)
    base.setdefault("reach_box", base["reach"])
    base.setdefault("reach_arm", base["reach"])
    base.setdefault("function_oracle", base["function"])
    base.setdefault("task_oracle", base["task"])
    return GraspCandidate(np.array(xyz), DOWN, terms=base, index=index)


def top_camera() -> tuple[np.ndarray, np.ndarray]:
    """A camera 1 m above (0.5, 0, 0) looking straight down; image 640 x 480."""
    K = np.array([[500.0, 0, 320], [0, 500.0, 240], [0, 0, 1]])
    T = np.eye(4)
    T[:3, :3] = np.diag([1.0, -1.0, -1.0])  # OpenCV z forward = world -z
    T[:3, 3] = [0.5, 0.0, 1.0]
    return K, T


def context(**kw: object) -> MethodContext:
    K, T = top_camera()
    args: dict[str, object] = {
        "seed": 0,
        "object_center": np.array([0.5, 0.0, 0.02]),
        "K": K,
        "world_T_camera": T,
    }
    args.update(kw)
    return MethodContext(**args)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------ suites


def test_every_suite_sentence_parses_and_has_a_task() -> None:
    """A suite that silently drops a sentence would report a rate over other tasks than it names."""
    check_suites()
    assert set(SUITES) == {"pick_and_place", "hang", "pour", "tool_by_handle", "drawer", "gate_edge",
                           "gate_clutter"}
    assert sentence_for("tool_by_handle", 4) == get_task(SUITES["tool_by_handle"][1]).instruction


def test_the_gate_suite_puts_the_tool_across_the_reach_box_edge_beside_a_block() -> None:
    """Where the gate can matter: the target straddles the far face of the reach box (x = 0.75
    m), with a block beside it; the other suites keep their tasks' own scenes."""
    from afford_eval.candidate_sets import scene_seed
    from afford_eval.suites import STANDARD_SUITES, scene_for, task_for_scene
    from afford_planner.terms import TermsConfig
    from afford_sim.scene import sample_scene

    far = TermsConfig().workspace_max[0]
    straddles = 0
    for k in range(6):
        seed = scene_seed("gate_edge", k)
        placed = sample_scene(scene_for("gate_edge", k, seed), seed)
        tool, block = placed.objects[0], placed.objects[-1]
        assert block.spec.category == "cube" and abs(float(tool.pose[0, 3]) - 0.73) <= 0.06 + 1e-9
        xs = np.asarray(tool.asset.mesh().vertices) @ tool.pose[:3, :3].T[:, 0] + tool.pose[0, 3]
        lo, hi = float(xs.min()), float(xs.max())
        straddles += lo < far < hi
    assert straddles >= 3
    assert "gate_edge" not in STANDARD_SUITES and "gate_clutter" not in STANDARD_SUITES
    # The clutter suite: the tool where its task puts it, four blocks crowded round it, at
    # least two within the clearance term's 5 cm margin of the tool's footprint.
    for k in range(4):
        seed = scene_seed("gate_clutter", k)
        spec = scene_for("gate_clutter", k, seed)
        assert spec.objects[0] == get_task(task_for_scene("gate_clutter", k)).scene(seed).objects[0]
        placed = sample_scene(spec, seed)
        tool = placed.objects[0]
        blocks = [o for o in placed.objects if o.spec.name.startswith("clutter_")]
        assert len(blocks) == 4 and all(b.spec.category == "cube" for b in blocks)
        gaps = [tool.footprint.distance(b.footprint) for b in blocks]  # between footprint rectangles
        assert sum(g < 0.05 for g in gaps) >= 2 and min(gaps) < 0.03, (k, gaps)
    seed = scene_seed("hang", 0)
    assert scene_for("hang", 0, seed) == get_task("hang-mug-v1").scene(seed)


# ----------------------------------------------------------------------------------- methods


def test_random_is_seeded_and_uniform() -> None:
    """Random choice is the floor every method is compared against: it must be reproducible per
    scene and not favour any candidate."""
    cands = [cand(i, (0.5, 0.01 * i, 0.02)) for i in range(4)]
    pick = METHODS["random"]
    assert pick(cands, context(seed=5)) == pick(cands, context(seed=5))
    counts = np.bincount([pick(cands, context(seed=s)).index for s in range(2000)], minlength=4)
    assert sps.chisquare(counts).pvalue > 0.001


def test_stability_picks_nearest_centre_ties_by_antipodal_quality() -> None:
    """AnyGrasp's preference: the grasp through the centre of mass, then the better squeeze."""
    cands = [
        cand(0, (0.56, 0.0, 0.02)),
        cand(1, (0.52, 0.0, 0.02), antipodal=0.2),
        cand(2, (0.5, 0.021, 0.02), antipodal=0.9),  # 0.021 m: the same 5 mm bin as 0.02
    ]
    ctx = context(tie_distance=0.005)
    assert METHODS["stability"](cands, ctx).index == 2
    assert METHODS["stability"](cands[:2], ctx).index == 1
    assert METHODS["stability"](cands, context(tie_distance=0.0)).index == 1


def test_projection_matches_the_pinhole_model() -> None:
    """The mask filter stands on projecting world points into the image; a point straight below
    the camera lands on the principal point, and 0.1 m to the side at 1 m lands 50 px off."""
    K, T = top_camera()
    uv, front = project(np.array([[0.5, 0.0, 0.0], [0.6, 0.0, 0.0], [0.5, 0.0, 2.0]]), K, T)
    assert np.allclose(uv[0], [320, 240]) and np.allclose(uv[1], [370, 240])
    assert front.tolist() == [True, True, False]


def test_filter_excludes_a_tcp_outside_the_region_mask() -> None:
    """GenManip's filter: a stable grasp outside the named part's mask is not taken, even when it
    is nearest the centre (a hammer held by its head)."""
    xs = np.linspace(0.60, 0.64, 9)
    region = np.array([[x, y, 0.0] for x in xs for y in np.linspace(-0.01, 0.01, 5)])
    ctx = context(region_points=region)
    head, handle = cand(0, (0.5, 0.0, 0.02)), cand(1, (0.62, 0.0, 0.02))
    assert in_mask([head, handle], ctx) == [False, True]
    assert METHODS["stability"]([head, handle], ctx).index == 0
    assert METHODS["stability_filter"]([head, handle], ctx).index == 1
    assert METHODS["stability_filter"]([head], ctx).index is None


def gate_case() -> list[GraspCandidate]:
    """Candidate 0 is out of reach (r = 0.1) but perfect otherwise; 1 is feasible, middling."""
    return [
        cand(0, (0.5, 0.0, 0.02), reach=0.1),
        cand(1, (0.5, 0.05, 0.02), approach=0.6, clearance=0.9, function=0.6, task=0.6),
    ]


def test_gate_matters_under_weighted_sum_not_under_product() -> None:
    """AFFORD-X's factorial finding in miniature: a weighted sum lets function and task outvote
    reach 0.1 unless the gate removes the grasp; a product is already driven down by it."""
    picks = apply_methods(
        gate_case(),
        context(),
        [f"afford_L3_{g}_{c}" for g in ("none", "feasibility") for c in ("weighted_sum", "product")],
    )
    assert picks["afford_L3_none_weighted_sum"].index == 0
    assert picks["afford_L3_feasibility_weighted_sum"].index == 1
    assert picks["afford_L3_none_product"].index == picks["afford_L3_feasibility_product"].index == 1


def test_armreach_cells_gate_on_the_arms_reach_and_the_others_on_the_box() -> None:
    """The gate-edge case in miniature: candidate 0 lies past AFFORD-X's box (reach_box 0.1) but
    the arm reaches it (reach_arm 1) and it is the better grasp; candidate 1 is inside both.
    The box cells gate 0 out, the _armreach cells keep it. A box cell reads reach_box even
    when the set was scored with reach from the arm, so a method's name says what it used; a
    set scored without the arm's test cannot be ranked by an _armreach cell."""
    out = cand(0, (0.78, 0.0, 0.02), reach=1.0, reach_box=0.1, reach_arm=1.0, function=1.0)
    inside = cand(1, (0.5, 0.0, 0.02), reach=1.0, reach_box=1.0, reach_arm=1.0, function=0.5)
    names = [f"afford_L2_feasibility_{c}{r}" for c in ("weighted_sum", "product") for r in ("", "_armreach")]
    picks = apply_methods([out, inside], context(), names)
    assert picks["afford_L2_feasibility_product"].index == 1
    assert picks["afford_L2_feasibility_weighted_sum"].index == 1
    assert picks["afford_L2_feasibility_product_armreach"].index == 0
    assert picks["afford_L2_feasibility_weighted_sum_armreach"].index == 0
    old = [cand(0, (0.5, 0.0, 0.02))]
    del old[0].terms["reach_box"], old[0].terms["reach_arm"]
    assert METHODS["afford_L1_feasibility_product"](old, context()).index == 0  # plain reach: box
    with pytest.raises(KeyError, match="no reach_arm term"):
        METHODS["afford_L1_feasibility_product_armreach"](old, context())


def test_part_label_terms_read_the_label_terms_and_methods_do_not_mutate_the_set() -> None:
    """part_label_terms differs from ours only in where the region comes from; and no method may
    leave scores behind in the shared set, or the next method would rank another set."""
    cands = [cand(0, (0.5, 0.0, 0.02), function_oracle=0.0), cand(1, (0.5, 0.05, 0.02), plan=0.9)]
    before = [dict(c.terms) for c in cands]
    picks = apply_methods(cands, context(planned=frozenset({0, 1})))
    assert picks["afford_L4_feasibility_product"].index == 0 and picks["part_label_terms"].index == 1
    assert [c.terms for c in cands] == before and all(c.score == 0.0 for c in cands)
    assert set(picks) == set(all_method_names()) and len(all_method_names()) == 2 * (3 + 2 * 16 + 1)
    with pytest.raises(KeyError, match="unknown methods"):
        apply_methods(cands, context(), ["anygrasp"])


def test_ties_are_drawn_seeded_and_counted_not_won_by_the_lowest_index() -> None:
    """Hang in miniature: every candidate has the same terms, so L1 cannot decide. The pick is a
    draw seeded by the scene (the same scene, the same pick), spread over the tied candidates
    across scenes, and the tie's size is recorded; a rule that decides reports no tie."""
    cands = [cand(i, (0.5, 0.01 * i, 0.02)) for i in range(5)]
    name = "afford_L1_feasibility_product"
    picks = [METHODS[name](cands, context(seed=s)) for s in range(300)]
    assert all(p.tied == 5 for p in picks)
    assert METHODS[name](cands, context(seed=7)) == METHODS[name](cands, context(seed=7))
    counts = np.bincount([p.index for p in picks], minlength=5)
    assert counts.min() > 30 and sps.chisquare(counts).pvalue > 0.001  # not always index 0
    decided = [cand(0, (0.5, 0.0, 0.02), approach=0.9), cand(1, (0.5, 0.01, 0.02))]
    assert METHODS[name](decided, context()).tied == 1 and METHODS[name](decided, context()).index == 1
    # Methods draw independently of each other: two rules facing one tie need not agree.
    other = [METHODS["afford_L2_feasibility_product"](cands, context(seed=s)).index for s in range(50)]
    assert other != [p.index for p in picks[:50]]
    # Stability's ties (same distance bin, same antipodal quality) are drawn too.
    ring = [cand(i, (0.5 + 0.032 * np.cos(a), 0.032 * np.sin(a), 0.02))
            for i, a in enumerate(np.linspace(0, 3, 4))]
    st = [METHODS["stability"](ring, context(seed=s)) for s in range(100)]
    assert {p.tied for p in st} == {4} and len({p.index for p in st}) == 4


def test_planned_methods_choose_among_planned_candidates_only() -> None:
    """The fair view: a baseline given L4's knowledge of which grasps can be planned. Without a
    plan mask the @planned methods refuse rather than guess."""
    near, far = cand(0, (0.5, 0.0, 0.02)), cand(1, (0.6, 0.0, 0.02))
    ctx = context(planned=frozenset({1}))
    assert METHODS["stability"]([near, far], ctx).index == 0
    assert METHODS["stability@planned"]([near, far], ctx).index == 1
    assert METHODS["random@planned"]([near, far], ctx).index == 1
    assert METHODS["stability@planned"]([near, far], context(planned=frozenset())).index is None
    with pytest.raises(ValueError, match="plan mask"):
        METHODS["stability@planned"]([near, far], context())


# -------------------------------------------------------------------------------- statistics


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (17, 40), (1, 1), (57, 100)])
def test_wilson_matches_scipy(k: int, n: int) -> None:
    """The reported 95% intervals are the standard Wilson score intervals."""
    z = float(sps.norm.ppf(0.975))
    ref = sps.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    assert wilson(k, n, z) == pytest.approx((ref.low, ref.high), abs=1e-12)
    assert wilson(k, n) == pytest.approx((ref.low, ref.high), abs=1e-4)
    with pytest.raises(ValueError):
        wilson(n + 1, n)


def test_bootstrap_matches_independent_references() -> None:
    """With one scene per cluster the interval is the ordinary paired percentile bootstrap
    (scipy's, a separate implementation); the point estimate is the mean paired difference."""
    rng = np.random.default_rng(0)
    a = (rng.random(60) < 0.7).astype(float)
    b = (rng.random(60) < 0.4).astype(float)
    mean, lo, hi = paired_bootstrap(a, b, list(range(60)), n=10_000, seed=1)
    ref = sps.bootstrap((a - b,), np.mean, n_resamples=10_000, method="percentile", random_state=2)
    assert mean == pytest.approx(float(np.mean(a - b)))
    assert lo == pytest.approx(ref.confidence_interval.low, abs=0.02)
    assert hi == pytest.approx(ref.confidence_interval.high, abs=0.02)
    assert lo < mean < hi


def test_bootstrap_resamples_clusters_not_scenes() -> None:
    """Scenes that share a cluster move together: doubling every scene inside its own cluster
    adds no evidence and leaves the interval unchanged, while treating the copies as independent
    scenes would narrow it (overstating certainty)."""
    rng = np.random.default_rng(3)
    a, b = (rng.random(30) < 0.6).astype(float), (rng.random(30) < 0.5).astype(float)
    single = paired_bootstrap(a, b, list(range(30)), n=4000, seed=7)
    doubled = paired_bootstrap(np.repeat(a, 2), np.repeat(b, 2), np.repeat(np.arange(30), 2), n=4000, seed=7)
    naive = paired_bootstrap(np.repeat(a, 2), np.repeat(b, 2), list(range(60)), n=4000, seed=7)
    assert doubled == pytest.approx(single, abs=1e-12)
    assert (naive[2] - naive[1]) < 0.85 * (single[2] - single[1])
    assert paired_bootstrap([1, 0, 1], [1, 0, 1], [0, 1, 2]) == (0.0, 0.0, 0.0)
    assert paired_bootstrap([1, 1], [0, 0], ["s", "t"]) == (1.0, 1.0, 1.0)


def test_rates_count_abstentions_as_failures() -> None:
    """A method that abstains did not achieve the task: its scene counts in n, not in k."""
    rec = {
        "suite": "s",
        "candidates": [
            {"index": 0, "outcome": {"success": True}},
            {"index": 1, "outcome": {"success": False}},
        ],
        "methods": {"m": 0, "abstainer": None, "bad": 1},
    }
    table = rates([rec, rec])["s"]
    assert (table["m"]["k"], table["m"]["n"]) == (2, 2)
    assert (table["abstainer"]["k"], table["bad"]["k"], table["abstainer"]["n"]) == (0, 0, 2)
    assert (table["m"]["lo"], table["m"]["hi"]) == pytest.approx(wilson(2, 2))


# ------------------------------------------------------------------------- one real scene


@pytest.mark.slow
def test_the_reference_planner_retries_what_the_default_could_not_plan() -> None:
    """A candidate counts as unexecutable only when the reference planner cannot plan it
    either. Here the default planner is starved (5 IK iterations, no restart), so it fails
    where a real planner succeeds: the reference plans those, they become executable with
    plan_source "reference", the default's reason is kept, and their plan term stays 0 (L4
    knows only what the robot's own planner found)."""
    from afford_eval.suites import scene_for, sentence_for, task_for_scene
    from afford_perception.grounding import make_source
    from afford_perception.parser import parse
    from afford_pipeline.episode import Episode
    from afford_planner.ik import IKConfig
    from afford_planner.motion import MotionPlanner, PlannerConfig
    from afford_planner.selection import SelectionConfig
    from afford_sim.scene import sample_scene
    from afford_sim.world import BatchWorld

    world = BatchWorld(sample_scene(scene_for("pick_and_place", 1, 11), seed=11))
    try:
        ep = Episode(parse(sentence_for("pick_and_place", 1)), get_task(task_for_scene("pick_and_place", 1)),
                     world, make_source("oracle"), seed=11)
        ep.perceive()
        ep.ground()
        cands = ep.propose()
        ep.score(None, SelectionConfig())
        starved = PlannerConfig(ik=IKConfig(max_iterations=5, restarts=0))
        ep.planner = MotionPlanner(ep.model, ep.cworld, starved)
        ep.plan(cands, reference=PlannerConfig())
        sources = {c.index: ep.plan_source[c.index] for c in cands}
        rescued = [i for i, src in sources.items() if src == "reference"]
        assert rescued, sources
        for i in rescued:
            assert i in ep.plans and "IK did not converge" in ep.plan_failures[i]["default"]
            assert "reference" not in ep.plan_failures[i]
            assert next(c for c in cands if c.index == i).terms["plan"] == 0.0
        for i, src in sources.items():
            assert (i in ep.plans) == (src is not None)
    finally:
        world.close()


def test_one_real_scene_is_evaluated_counterfactually(tmp_path) -> None:  # noqa: ANN001
    """Every candidate of a real pick-and-place scene is executed from the same saved state and
    recorded; re-executions agree; methods select from the set; the record survives JSON and its
    hash is recomputable from it, and changes with the grounding source. A video of one method's
    rollout is recorded and agrees with the unrecorded outcome."""
    from afford_eval.candidate_sets import CandidateSetConfig, candidate_set_id
    from afford_eval.counterfactual import EvalConfig, evaluate_scene

    cfg = EvalConfig(video_dir=str(tmp_path), video=(("afford_L4_feasibility_product", 0),),
                     film_selected=True)
    rec = json.loads(json.dumps(evaluate_scene("pick_and_place", 0, cfg), allow_nan=False))

    assert rec["sentence"] == "put the banana on the plate" and rec["grounding"] == "oracle"
    cands = rec["candidates"]
    assert [c["index"] for c in cands] == list(range(len(cands)))
    assert {c["origin"] for c in cands} == {"propose", "antipodal"}
    assert any(c["planned"] for c in cands)
    for c in cands:
        out = c["outcome"]
        if c["plan_source"] is not None:
            assert out["stages"] and list(out["stages"])[0] == "approach"
            assert out["success"] == all(out["stages"].values()) == (out["failed_stage"] is None)
        else:
            assert out == {"success": False, "stages": {}, "failed_stage": "plan", "detail": "no plan"}
            assert set(c["plan_failures"]) == {"default", "reference"}
        for k in ("reach", "reach_box", "reach_arm", "function", "task", "plan", "antipodal",
                  "function_oracle", "task_oracle"):
            assert 0.0 <= c["terms"][k] <= 1.0
        # The arm reaches whatever it can plan to: a plan implies an IK solution at the grasp.
        assert not c["planned"] or c["terms"]["reach_arm"] == 1.0
    assert set(rec["methods"]) == set(all_method_names())
    assert all(v is None or 0 <= v < len(cands) for v in rec["methods"].values())
    assert len(rec["determinism"]) == 2
    assert all(d["first"] == d["second"] for d in rec["determinism"])
    assert [v["agrees"] for v in rec["videos"]] == [True]
    # Every executed candidate some method selected was filmed as it ran, and only those; the
    # outcome on film is the recorded one, and an unfilmed run of it agrees.
    by_index = {c["index"]: c for c in cands}
    selected = {i for i in rec["methods"].values() if i is not None and by_index[i]["plan_source"]}
    assert {f["index"] for f in rec["films"]} == selected
    for f in rec["films"]:
        assert f["success"] == by_index[f["index"]]["outcome"]["success"] and f["agrees"]
        assert f["frames"] > 10 and (tmp_path / f["path"]).stat().st_size > 1000
        assert all(rec["methods"][m] == f["index"] for m in f["methods"])
    assert (tmp_path / "pick_and_place_0000_afford_L4_feasibility_product.mp4").stat().st_size > 1000
    assert rec["timings_s"]["total"] > 0 and math.isfinite(rec["timings_s"]["per_candidate"])

    rebuilt = [
        GraspCandidate(
            np.array(c["position"]), np.array(c["rotation"]), c["width"], c["source"], index=c["index"]
        )
        for c in cands
    ]
    args = (rebuilt, "pick_and_place", 0, rec["seed"])
    assert candidate_set_id(*args, "oracle", CandidateSetConfig()) == rec["candidate_set_hash"]
    assert candidate_set_id(*args, "geometric", CandidateSetConfig()) != rec["candidate_set_hash"]


def test_a_scene_without_a_grounded_region_is_recorded_as_a_failure_for_every_method(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A camera that cannot see the handle must not stop a 100-scene run, nor be dropped from it
    (dropping would flatter every method): the scene is kept, with every method abstaining."""
    from afford_eval import counterfactual

    def blind(*_: object, **__: object) -> None:
        raise ValueError("geometric grounding found no cabinet drawer_handle in view")

    monkeypatch.setattr(counterfactual, "build_candidate_set", blind)
    cfg = counterfactual.EvalConfig(methods=("random", "stability"))
    record = counterfactual.evaluate_scene("drawer", 5, cfg)
    assert record["candidates"] == [] and record["candidate_set_hash"] is None
    assert record["methods"] == {"random": None, "stability": None}
    assert "drawer_handle" in record["unevaluable"]
    assert not counterfactual.method_success(record, "random")
