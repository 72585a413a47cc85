"""AFFORD-X terms, task constraints and the selection rule on hand-computed numbers."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from afford_core.grasp import GraspCandidate
from afford_core.types import Intent, NextAction, ObjectCloud
from afford_planner.candidates import Stage1Config, index_candidates, sample_affordance_grasps
from afford_planner.selection import (
    SelectionConfig,
    candidate_set_hash,
    score_candidates,
    select,
)
from afford_planner.task_constraints import (
    ApproachFrom,
    AvoidOccluding,
    FaceClearance,
    HoldsTilt,
    KeepPartClear,
    TaskContext,
    compile_constraints,
    fill_task_terms,
    task_term,
)
from afford_planner.terms import (
    TermsConfig,
    approach_term,
    clearance_term,
    fill_terms,
    function_term,
    reach_term,
)

DOWN = np.array([0.0, 0.0, -1.0])


def grasp(
    position,
    approach=DOWN,
    closing=(0.0, 1.0, 0.0),
    width: float = 0.04,
    index: int = 0,
    terms: dict[str, float] | None = None,
) -> GraspCandidate:
    """A candidate from its TCP, approach (gripper z) and closing axis (gripper y)."""
    z = np.asarray(approach, dtype=float) / np.linalg.norm(approach)
    y = np.asarray(closing, dtype=float)
    y = y - np.dot(y, z) * z
    y /= np.linalg.norm(y)
    return GraspCandidate(
        np.asarray(position, float),
        np.column_stack([np.cross(y, z), y, z]),
        width,
        index=index,
        terms=dict(terms or {}),
    )


def tilted(deg: float) -> np.ndarray:
    """An approach ``deg`` degrees away from straight down."""
    t = np.deg2rad(deg)
    return np.array([np.sin(t), 0.0, -np.cos(t)])


CFG = TermsConfig(reach_source="box")  # AFFORD-X's own reading: these tests check its numbers
TCP = np.array([0.4, 0.0, 0.2])

# --------------------------------------------------------------------------- terms


def test_reach_is_one_inside_the_workspace_and_a_tenth_outside() -> None:
    """A grasp beyond the Franka's 0.75 m of forward reach, or below the table, cannot be
    executed; AFFORD-X scores it 0.1, enough for the gate to remove it."""
    assert reach_term(grasp(TCP), CFG) == 1.0
    assert reach_term(grasp([0.75, 0.5, 0.9]), CFG) == 1.0  # bounds inclusive
    assert reach_term(grasp([0.80, 0.0, 0.2]), CFG) == 0.1
    assert reach_term(grasp([0.4, 0.0, 0.0]), CFG) == 0.1
    assert reach_term(grasp([0.4, -0.51, 0.2]), CFG) == 0.1


@pytest.mark.parametrize(
    ("approach", "expected"),
    [(DOWN, 1.0), (tilted(45), np.cos(np.pi / 4)), (tilted(60), 0.5), (tilted(90), 0.3), (tilted(150), 0.3)],
)
def test_approach_is_the_cosine_to_top_down_with_a_floor(approach: np.ndarray, expected: float) -> None:
    """The executor's IK and pre-grasp are built for top-down; a side or upward approach is
    harder but not impossible, hence the floor of 0.3 rather than 0."""
    assert approach_term(grasp(TCP, approach), CFG) == pytest.approx(expected)


def test_other_approaches_score_as_the_preferred_one() -> None:
    """A pour from a spout is held from the side, along its tilt axis, either way: those
    approaches score as top-down does; one across the axis still scores the floor."""
    cfg = TermsConfig(other_approaches=((2.0, 0.0, 0.0), (-1.0, 0.0, 0.0)))
    assert cfg.other_approaches == ((1.0, 0.0, 0.0), (-1.0, 0.0, 0.0))
    assert approach_term(grasp(TCP, [1.0, 0.0, 0.0], closing=[0, 0, 1]), cfg) == 1.0
    assert approach_term(grasp(TCP, [-1.0, 0.0, 0.0], closing=[0, 0, 1]), cfg) == 1.0
    assert approach_term(grasp(TCP, DOWN), cfg) == 1.0
    assert approach_term(grasp(TCP, [0.0, 1.0, 0.0], closing=[0, 0, 1]), cfg) == pytest.approx(0.3)
    assert approach_term(grasp(TCP, [1.0, 0.0, 0.0], closing=[0, 0, 1]), CFG) == pytest.approx(0.3)


def test_clearance_is_half_at_two_and_a_half_centimetres() -> None:
    """A neighbouring object 2.5 cm from a finger leaves half the 5 cm margin: the finger may
    brush it on the way down. Fingertips sit at y = +-2 cm for a 4 cm opening."""
    obstacle = np.array([[0.4, 0.045, 0.22]])  # 2.5 cm beside the +y finger, 2 cm above its tip
    assert clearance_term(grasp(TCP), obstacle, CFG) == pytest.approx(0.5)
    assert clearance_term(grasp(TCP), np.array([[0.4, 0.08, 0.2]]), CFG) == 1.0
    assert clearance_term(grasp(TCP), None, CFG) == 1.0
    assert clearance_term(grasp(TCP), np.zeros((0, 3)), CFG) == 1.0


def test_clearance_sees_the_palm_centre_behind_the_tcp() -> None:
    """The hand body ends 0.1034 m behind the TCP (the flange); a shelf 1 cm above it collides
    with the wrist even though the fingers are clear."""
    obstacle = np.array([[0.4, 0.0, 0.2 + 0.1034 + 0.01]])
    assert clearance_term(grasp(TCP), obstacle, CFG) == pytest.approx(0.2)


def test_clearance_with_a_prebuilt_tree_matches_brute_force() -> None:
    """fill_terms indexes the scene once; that must not change any clearance value."""
    from scipy.spatial import cKDTree

    rng = np.random.default_rng(3)
    pts = TCP + rng.uniform(-0.15, 0.15, size=(3000, 3))
    for k, approach in enumerate([DOWN, tilted(40), tilted(90)]):
        c = grasp(TCP + [0.01 * k, 0, 0], approach)
        assert clearance_term(c, cKDTree(pts), CFG) == pytest.approx(clearance_term(c, pts, CFG))


@pytest.mark.parametrize(
    ("distance", "expected"), [(0.0, 1.0), (0.02, 1.0), (0.03, 1.0), (0.055, 0.5), (0.09, 0.0)]
)
def test_function_term_ramps_from_three_to_eight_centimetres(distance: float, expected: float) -> None:
    """A grasp within 3 cm of the handle holds the handle; 8 cm away it holds the hammer head."""
    region = np.array([[0.4, 0.0, 0.1], [0.4, 0.3, 0.1]])
    c = grasp([0.4 - distance, 0.0, 0.1])
    assert function_term(c, region, CFG) == pytest.approx(expected)


def test_function_term_is_neutral_without_a_named_region() -> None:
    """A cube has no handle; the function term must not reorder its candidates."""
    assert function_term(grasp(TCP), None, CFG) == 1.0
    assert function_term(grasp(TCP), np.zeros((0, 3)), CFG) == 1.0


def test_fill_terms_writes_every_factor_and_their_product() -> None:
    """Logged terms are what the replay viewer and the paired analysis read back."""
    cands = [grasp(TCP, tilted(60)), grasp([0.8, 0.0, 0.2], index=1)]
    fill_terms(cands, region_points=np.array([[0.4, 0.0, 0.2]]), obstacle_points=None, config=CFG)
    expected = {"reach": 1.0, "reach_box": 1.0, "approach": 0.5, "clearance": 1.0, "feasibility": 0.5,
                "function": 1.0}
    assert cands[0].terms == pytest.approx(expected)
    assert cands[1].terms["feasibility"] == pytest.approx(0.1)


def test_reach_can_come_from_the_arm_instead_of_the_box() -> None:
    """AFFORD-X's box ends at x = 0.75 m; the FR3 puts its hand top-down at 0.80 m. With reach
    from the arm that grasp is reachable (r = 1) and one 1.2 m away is not; both readings are
    kept, and the configured one is ``reach``. Asking for the arm without a test is an error,
    not a silent fall back to the box."""
    from afford_planner.ik import arm_reach
    from afford_planner.robot_model import RobotModel

    model = RobotModel()
    reach = arm_reach(model, model.q_home)
    near, far, beyond = grasp([0.80, 0.0, 0.2]), grasp([1.2, 0.0, 0.2], index=1), grasp(TCP, index=2)
    assert reach(near) and not reach(far) and reach(beyond)
    arm = TermsConfig()
    assert arm.reach_source == "arm"  # the default: the FR3 reaches past AFFORD-X's box
    cands = fill_terms([near, far, beyond], None, None, arm, arm_reach=reach)
    assert [c.terms["reach_box"] for c in cands] == [0.1, 0.1, 1.0]
    assert [c.terms["reach_arm"] for c in cands] == [1.0, 0.1, 1.0]
    assert [c.terms["reach"] for c in cands] == [1.0, 0.1, 1.0]
    assert cands[0].terms["feasibility"] == pytest.approx(1.0)
    # With the box as the reading, the arm's is still stored beside it when a test is given.
    boxed = fill_terms([grasp([0.80, 0.0, 0.2])], None, None, CFG, arm_reach=reach)[0]
    assert boxed.terms["reach"] == 0.1 and boxed.terms["reach_arm"] == 1.0
    with pytest.raises(ValueError, match="reach_source='arm' needs arm_reach"):
        fill_terms([grasp(TCP)], None, None, arm)
    with pytest.raises(ValueError, match="reach_source"):
        TermsConfig(reach_source="elbow")  # type: ignore[arg-type]
    # The orientation counts, not just the distance: at 0.78 m top-down is reachable, but a
    # hand pointing back at the robot puts the wrist 10 cm further out, past the arm's reach.
    assert reach(grasp([0.78, 0.0, 0.2]))
    assert not reach(grasp([0.78, 0.0, 0.2], approach=(-1.0, 0.0, 0.0), closing=(0.0, 1.0, 0.0)))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"workspace_min": (1.0, -0.5, 0.0)},
        {"reach_outside": 1.0},
        {"preferred_approach": (0.0, 0.0, 0.0)},
        {"other_approaches": ((0.0, 0.0, 0.0),)},
        {"approach_floor": 1.5},
        {"clearance_margin": 0.0},
        {"function_full": 0.09},
    ],
)
def test_terms_config_validation(kwargs: dict) -> None:
    """Thresholds are fixed in the experiment config before a run; a bad one must fail at load."""
    with pytest.raises(ValueError):
        TermsConfig(**kwargs)


# --------------------------------------------------------------------------- task constraints


def test_keep_part_clear_ramps_from_contact_to_four_centimetres() -> None:
    """Fingers on a mug's handle block it from sliding onto the hook; 4 cm off it is free."""
    for gap, expected in [(0.06, 1.0), (0.04, 1.0), (0.02, 0.5), (0.0, 0.0)]:
        part = np.array([[0.4, 0.02 + gap, 0.2]])  # beside the +y fingertip
        assert KeepPartClear("handle", part).score(grasp(TCP)) == pytest.approx(expected)


def test_face_clearance_keeps_fingers_above_the_bottom_of_a_placed_object() -> None:
    """Fingertips below a cup's bottom hit the table when the cup is set down."""
    bottom = np.array([[0.4 + dx, dy, 0.05] for dx in (-0.03, 0, 0.03) for dy in (-0.03, 0, 0.03)])
    face = FaceClearance("bottom", np.array([0.4, 0.0, 0.05]), np.array([0, 0, -1.0]), bottom)
    assert face.score(grasp([0.4, 0.0, 0.06])) == pytest.approx(0.5)  # tips 1 cm above: half the 2 cm margin
    assert face.score(grasp([0.4, 0.0, 0.09])) == 1.0
    assert face.score(grasp([0.4, 0.0, 0.04])) == 0.0
    assert face.score(grasp([0.6, 0.0, 0.04])) == 1.0  # beside the footprint: not over the face


def test_approach_from_scores_the_angle_to_the_required_direction() -> None:
    """A drawer handle is pulled along the drawer's axis; a grasp approaching from above turns
    the pull into a twist of the wrist."""
    front = ApproachFrom("front", np.array([1.0, 0.0, 0.0]))
    assert front.score(grasp(TCP, [1, 0, 0], closing=[0, 0, 1])) == 1.0
    assert front.score(grasp(TCP, tilted(60))) == 1.0  # 30 deg from +x
    assert front.score(grasp(TCP, tilted(30))) == pytest.approx(0.5)  # 60 deg: (90 - 60) / (90 - 30)
    assert front.score(grasp(TCP, DOWN)) == 0.0  # 90 deg


def test_avoid_occluding_penalises_a_hand_in_the_sight_line() -> None:
    """A wrist between the camera and the spout hides the pour from the monitor that stops it."""
    con = AvoidOccluding(camera=np.array([0.4, 0.0, 1.0]), target=np.array([0.4, 0.0, 0.0]))
    assert con.score(grasp(TCP)) == 0.0
    assert con.score(grasp([0.4, 0.2, 0.2])) == 1.0


def _mug_parts() -> dict[str, np.ndarray]:
    a = np.linspace(0, 2 * np.pi, 36, endpoint=False)
    body = np.column_stack([0.4 + 0.04 * np.cos(a), 0.04 * np.sin(a), np.full_like(a, 0.05)])
    body = np.vstack([body, body - [0, 0, 0.05]])
    handle = np.column_stack([np.full(10, 0.4), np.full(10, 0.06), np.linspace(0.02, 0.08, 10)])
    rim = np.column_stack([0.4 + 0.04 * np.cos(a), 0.04 * np.sin(a), np.full_like(a, 0.1)])
    return {"body": body, "handle": handle, "rim": rim}


def test_hang_compiles_keep_handle_clear_and_approach_opposite_the_handle() -> None:
    """To hang a mug the handle must be free and the gripper on the far side of the body, so
    the handle can be threaded onto the hook without the hand in the way."""
    intent = Intent("mug", "body", NextAction.HANG, keep_clear=("handle",), destination="rack")
    cons = compile_constraints(intent, _mug_parts(), TaskContext(object_center=(0.4, 0.0, 0.05)))
    assert [c.name for c in cons] == ["keep_part_clear:handle", "approach_from:opposite_handle"]
    side = cons[1]
    # The handle is at +y: approaching along +y comes from the side opposite it.
    assert side.score(grasp([0.4, -0.08, 0.05], [0, 1, 0], closing=[1, 0, 0])) == 1.0
    assert side.score(grasp([0.4, 0.12, 0.05], [0, -1, 0], closing=[1, 0, 0])) == 0.0
    assert side.score(grasp([0.4, -0.02, 0.15])) == pytest.approx(45 / 105)  # top-down: 90 deg


def test_open_compiles_approach_from_the_front() -> None:
    """A drawer that slides towards the robot (-x) must be approached along +x."""
    handle = np.array([[0.6, y, 0.3] for y in np.linspace(-0.05, 0.05, 11)])
    body = handle + [0.2, 0, 0]
    intent = Intent("cabinet", "drawer_handle", NextAction.OPEN)
    for ctx in (TaskContext(pull_axis=(-1.0, 0.0, 0.0)), TaskContext(object_center=(0.8, 0.0, 0.3))):
        (front,) = compile_constraints(intent, {"drawer_handle": handle, "body": body}, ctx)
        assert front.name == "approach_from:front"
        assert front.score(grasp([0.58, 0, 0.3], [1, 0, 0], closing=[0, 0, 1])) == 1.0
        assert front.score(grasp([0.6, 0, 0.32])) == 0.0


def test_place_and_pour_compile_their_faces_and_parts() -> None:
    """Placing needs the bottom free (a mug's handle, close to its body, adds no holds_load);
    pouring from a kettle needs the spout free and a grasp that holds the kettle as it tips
    towards the spout."""
    parts = _mug_parts()
    (bottom,) = compile_constraints(Intent("mug", "handle", NextAction.PLACE), parts, TaskContext())
    assert bottom.name == "clearance:bottom"
    assert bottom.score(grasp([0.4, 0.0, 0.005])) == pytest.approx(0.25)  # tips 5 mm above the bottom
    assert bottom.score(grasp([0.4, 0.0, 0.11])) == 1.0

    kettle = {"handle": parts["handle"], "body": parts["body"], "spout": parts["handle"] - [0, 0.12, 0]}
    names = [
        c.name
        for c in compile_constraints(Intent("kettle", "handle", NextAction.POUR), kettle, TaskContext())
    ]
    assert names == ["keep_part_clear:spout", "holds_tilt"]
    # A mug pours over its rim, which is all around: no side to approach from, and no hand on
    # the body can keep it clear (the pour skill tilts away from the fingers instead).
    names = [
        c.name for c in compile_constraints(Intent("mug", "handle", NextAction.POUR), parts, TaskContext())
    ]
    assert names == []
    names = [
        c.name
        for c in compile_constraints(
            Intent("mug", "body", NextAction.POUR, keep_clear=("rim",), use_region="rim"),
            parts,
            TaskContext(),
        )
    ]
    assert names == []


def test_task_term_is_the_product_and_missing_parts_fail_loudly() -> None:
    """One violated constraint vetoes a grasp; a part the constraints need but perception did
    not deliver must stop the run rather than silently drop the constraint."""
    parts = _mug_parts()
    intent = Intent("mug", "body", NextAction.HANG, keep_clear=("handle",))
    cons = compile_constraints(intent, parts, TaskContext(object_center=(0.4, 0.0, 0.05)))
    c = grasp([0.4, -0.02, 0.15])
    expected = cons[0].score(c) * cons[1].score(c)
    assert task_term(c, cons) == pytest.approx(expected)
    fill_task_terms([c], cons)
    assert c.terms["task"] == pytest.approx(expected)
    assert c.terms["task.approach_from:opposite_handle"] == pytest.approx(45 / 105)
    assert task_term(c, []) == 1.0
    with pytest.raises(KeyError, match="handle"):
        compile_constraints(intent, {"body": parts["body"]}, TaskContext())


# --------------------------------------------------------------------------- selection


def scored(index: int, r: float, a: float, c: float, f: float = 1.0, t: float = 1.0) -> GraspCandidate:
    """A candidate with its terms given directly: reach, approach, clearance, function, task."""
    terms = {"reach": r, "approach": a, "clearance": c, "function": f, "task": t}
    return grasp(TCP + [0.001 * index, 0, 0], index=index, terms=terms)


def test_gate_is_inclusive_at_one_half() -> None:
    """AFFORD-X removed one in-workspace grasp with a collision term of 0.497; exactly 0.5 passes."""
    ranked = score_candidates([scored(0, 1.0, 0.5, 1.0), scored(1, 1.0, 1.0, 0.497)], SelectionConfig())
    assert [c.terms["eligible"] for c in ranked] == [1.0, 0.0]
    assert ranked[1].score == 0.0


def test_gate_matters_under_weighted_sum_not_under_product() -> None:
    """E is on the handle but outside the workspace (r = 0.1); F is reachable, side-on, 3.5 cm
    off the handle. The weighted sum lets E's other terms outvote reach and would send the arm
    to a pose it cannot reach; the product never prefers E; the gate fixes the weighted sum.

    L2 weighted sum: E = (0.1 + 1 + 1 + 1) / 4 = 0.775, F = (1 + 0.6 + 1 + 0.4) / 4 = 0.75.
    L2 product:      E = 0.1,                           F = 0.24.
    """

    def cands() -> list[GraspCandidate]:
        return [scored(0, 0.1, 1.0, 1.0, f=1.0), scored(1, 1.0, 0.6, 1.0, f=0.4)]

    chosen = {}
    for comb in ("weighted_sum", "product"):
        for gate in ("none", "feasibility"):
            sel = select(cands(), SelectionConfig(combination=comb, gate=gate, level="L2"))  # type: ignore[arg-type]
            chosen[comb, gate] = sel.chosen.index if sel.chosen else None
    assert chosen == {
        ("weighted_sum", "none"): 0,
        ("weighted_sum", "feasibility"): 1,
        ("product", "none"): 1,
        ("product", "feasibility"): 1,
    }
    sel = select(cands(), SelectionConfig(combination="weighted_sum", gate="none", level="L2"))
    assert sel.scores == {0: pytest.approx(0.775), 1: pytest.approx(0.75)}


def test_levels_add_terms_and_weights_shape_the_sum() -> None:
    """L1 ignores function; L2 uses it. A handle grasp and a head grasp tie on feasibility, so
    only from L2 on does the rule pick the handle."""
    head = scored(0, 1.0, 1.0, 1.0, f=0.0)
    handle = scored(1, 1.0, 0.9, 1.0, f=1.0)
    assert select([head, handle], SelectionConfig(level="L1")).chosen is head
    assert select([head, handle], SelectionConfig(level="L2")).chosen is handle
    cfg = SelectionConfig(combination="weighted_sum", level="L2", weights={"function": 3.0})
    ranked = score_candidates([head, handle], cfg)
    assert handle.score == pytest.approx((1 + 0.9 + 1 + 3) / 6)
    assert ranked[0] is handle


def test_task_term_enters_at_l3() -> None:
    """Two handle grasps, one with the fingers on the part the next action needs (task 0.2)."""
    blocking = scored(0, 1.0, 1.0, 1.0, t=0.2)
    free = scored(1, 1.0, 0.8, 1.0, t=1.0)
    assert select([blocking, free], SelectionConfig(level="L2")).chosen is blocking
    assert select([blocking, free], SelectionConfig(level="L3")).chosen is free


def test_l4_falls_back_to_l3_until_stage2_fills_plan() -> None:
    """Stage 2 runs after selection's first pass; until it has, L4 must rank exactly as L3 and
    say so, and a half-planned set must not be ranked on mixed terms."""
    a, b = scored(0, 1.0, 1.0, 1.0), scored(1, 1.0, 0.9, 1.0)
    sel = select([a, b], SelectionConfig(level="L4"))
    assert sel.chosen is a and "plan" not in sel.terms_used and sel.notes
    a.terms["plan"], b.terms["plan"] = 0.3, 1.0
    sel = select([a, b], SelectionConfig(level="L4"))
    assert sel.chosen is b and "plan" in sel.terms_used and not sel.notes
    del b.terms["plan"]
    with pytest.raises(ValueError, match="plan"):
        select([a, b], SelectionConfig(level="L4"))
    # A gated-out candidate need not be planned.
    c = scored(2, 0.1, 1.0, 1.0)
    assert select([a, c], SelectionConfig(level="L4")).chosen is a


def test_abstains_when_nothing_passes_the_gate() -> None:
    """Executing a grasp the arm cannot do is worse than reporting failure: no motion, a log line."""
    cands = [scored(0, 0.1, 1.0, 1.0), scored(1, 1.0, 0.3, 1.0), scored(2, 1.0, 1.0, 0.4)]
    sel = select(cands, SelectionConfig())
    assert sel.abstained and sel.chosen is None and sel.eligible == ()
    assert "gate" in sel.reason and "candidate 2" in sel.reason and "clearance 0.4" in sel.reason
    assert all(s == 0.0 for s in sel.scores.values())
    # Without the gate something is always executed.
    assert select(cands, SelectionConfig(gate="none")).chosen is not None
    assert select([], SelectionConfig()).reason == "no candidates to select from"


def test_the_gate_wins_a_tie_at_zero() -> None:
    """An eligible candidate can score 0 (a function term of 0 under the product), as every
    gated-out one does: the gated-out one must not be chosen for its lower index."""
    cands = [scored(0, 0.1, 1.0, 1.0), scored(1, 1.0, 1.0, 1.0), scored(2, 1.0, 1.0, 1.0)]
    for c in cands[1:]:
        c.terms["function"] = 0.0
    sel = select(cands, SelectionConfig(level="L2", combination="product"))
    assert sel.chosen is not None and sel.chosen.index == 1 and sel.eligible == (1, 2)
    assert sel.ranking[-1] == 0  # ineligible ones last
    assert sel.tied == (1, 2)  # the gated-out 0 scores 0 too, but is not in the tie
    assert select(cands[:1], SelectionConfig()).tied == ()  # abstained


def test_ties_are_broken_by_index() -> None:
    """Two methods that score a tie differently must still pick the same grasp in replays."""
    cands = [scored(3, 1.0, 1.0, 1.0), scored(1, 1.0, 1.0, 1.0), scored(2, 1.0, 1.0, 1.0)]
    assert [c.index for c in score_candidates(cands, SelectionConfig())] == [1, 2, 3]


def test_selection_rejects_inconsistent_input() -> None:
    """Missing terms, out-of-range terms and duplicate indices are pipeline bugs, not data."""
    with pytest.raises(KeyError, match="function"):
        score_candidates(
            [grasp(TCP, terms={"reach": 1, "approach": 1, "clearance": 1})], SelectionConfig(level="L2")
        )
    with pytest.raises(ValueError, match="outside"):
        score_candidates([scored(0, 1.0, 1.0, 1.2)], SelectionConfig())
    with pytest.raises(ValueError, match="unique"):
        score_candidates([scored(0, 1, 1, 1), scored(0, 1, 1, 1)], SelectionConfig())


@pytest.mark.parametrize(
    "kwargs",
    [
        {"combination": "max"},
        {"gate": "soft"},
        {"level": "L5"},
        {"weights": {"stability": 1.0}},
        {"weights": {"reach": -1.0}},
        {
            "combination": "weighted_sum",
            "level": "L1",
            "weights": {"reach": 0, "approach": 0, "clearance": 0},
        },
        {"gate_threshold": 0.0},
    ],
)
def test_selection_config_validation(kwargs: dict) -> None:
    """A factorial cell with a typo would silently run the default cell."""
    with pytest.raises(ValueError):
        SelectionConfig(**kwargs)


# --------------------------------------------------------------------------- content hash


def _hash_set() -> list[GraspCandidate]:
    return [grasp(TCP, tilted(20), index=0), grasp(TCP + [0.05, 0, 0], index=1, width=0.06)]


EXTRA = {"stage1": Stage1Config().__dict__, "scene": "libero_spatial/3", "seed": 7}


def test_hash_is_stable() -> None:
    """Every method must be shown to have ranked the same set; the hash must not change with
    scores, terms, key order or a float round-trip through a log."""
    h = candidate_set_hash(_hash_set(), EXTRA)
    assert len(h) == 64
    again = _hash_set()
    again[0].score, again[0].terms = 0.9, {"reach": 1.0}
    again[1].position = again[1].position + 1e-9
    assert candidate_set_hash(again, dict(reversed(list(EXTRA.items())))) == h


@pytest.mark.parametrize(
    "change",
    ["position", "rotation", "width", "source", "index", "order", "extra_value", "extra_key"],
)
def test_hash_is_sensitive_to_every_input(change: str) -> None:
    """A different set under the same name would make paired comparisons meaningless."""
    cands, extra = _hash_set(), copy.deepcopy(EXTRA)
    c = cands[0]
    if change == "position":
        c.position = c.position + [1e-4, 0, 0]
    elif change == "rotation":
        c.rotation = grasp(TCP, tilted(20.01)).rotation
    elif change == "width":
        c.width = 0.041
    elif change == "source":
        c.source = "generic"
    elif change == "index":
        c.index = 5
    elif change == "order":
        cands.reverse()
    elif change == "extra_value":
        extra["seed"] = 8
    else:
        extra["camera"] = "front"
    assert candidate_set_hash(cands, extra) != candidate_set_hash(_hash_set(), EXTRA)


def test_hash_rejects_unserialisable_extra() -> None:
    """An object whose repr changes between runs (an address) must not enter the hash."""
    with pytest.raises(TypeError, match="extra.sampler"):
        candidate_set_hash(_hash_set(), {"sampler": object()})


# --------------------------------------------------------------------------- pipeline


def test_stage1_on_a_hammer_then_selection_picks_the_handle() -> None:
    """End to end on a hammer lying on the table: Stage 1 samples on the handle, the terms and
    the product rule pick a reachable handle grasp; the head is never chosen."""
    rng = np.random.default_rng(0)
    t = rng.uniform(0.0, 0.20, 1500)
    a = rng.uniform(0, 2 * np.pi, 1500)
    handle = np.column_stack([0.45 + t, 0.01 * np.cos(a), 0.012 + 0.01 * np.sin(a)])
    head = np.column_stack(
        [rng.uniform(0.65, 0.69, 600), rng.uniform(-0.05, 0.05, 600), rng.uniform(0.002, 0.03, 600)]
    )
    cloud = ObjectCloud(np.vstack([handle, head]), "hammer")
    cands = index_candidates(sample_affordance_grasps(handle, cloud, Stage1Config(include_topdown=True)))
    table = np.column_stack([rng.uniform(0.3, 0.9, 2000), rng.uniform(-0.3, 0.3, 2000), np.zeros(2000)])
    fill_terms(cands, handle, obstacle_points=None, config=CFG)
    sel = select(cands, SelectionConfig(level="L2"))
    assert sel.chosen is not None and sel.chosen.terms["function"] == 1.0
    assert sel.chosen.approach == pytest.approx([0, 0, -1])  # the executor prefers top-down
    assert np.linalg.norm(sel.chosen.position[:2] - [0.55, 0.0]) < 0.03
    # With the table as an obstacle every grasp of a 2 cm-high handle is gated: the rule abstains.
    fill_terms(cands, handle, obstacle_points=table, config=CFG)
    assert select(cands, SelectionConfig(level="L2")).abstained


def test_holds_load_prefers_the_grasp_that_carries_a_kettle_by_shape() -> None:
    """Carried upright to be set down, a kettle held by a handle 10 cm off its centre hangs its
    weight about the horizontal axis across that offset. Held from above with the pads closing
    across the handle's bar (along x here), that axis is the closing axis: only the pads'
    torsional friction holds it (the 10 cm reach is the lever; a kettle turned 40-50 deg so).
    Held from the side along that axis, the lever is about the approach axis: held by shape.
    A pick (judged by its height and hold), a body grasp and a handle close to the body (a
    mug's, 4.5 cm here: under SIDE_HANDLE_M from the centre) get no such constraint."""
    from afford_planner.task_constraints import SIDE_HANDLE_M, HoldsLoad

    parts = _mug_parts()
    handle = parts["handle"] + [0, 0.04, 0]
    kettle = {"handle": handle, "body": parts["body"], "spout": handle - [0, 0.2, 0]}
    centre = (0.4, 0.0, 0.05)
    for action in (NextAction.PLACE, NextAction.HANG):
        cons = compile_constraints(Intent("kettle", "handle", action, destination=None), kettle,
                                   TaskContext(object_center=centre))
        (hold,) = [c for c in cons if c.name == "holds_load"]
        side = grasp([0.4, 0.1, 0.05], approach=[1.0, 0.0, 0.0], closing=[0.0, 0.0, 1.0])
        top = grasp([0.4, 0.06, 0.08], approach=DOWN, closing=[1.0, 0.0, 0.0])
        assert hold.lever(side) == pytest.approx(0.0, abs=1e-9) and hold.score(side) == 1.0
        assert hold.lever(top) == pytest.approx(0.06)
        assert hold.floor < hold.score(top) < 0.6
    near = {**kettle, "handle": parts["handle"] - [0, 0.015, 0]}
    assert np.linalg.norm(near["handle"].mean(axis=0)[:2] - centre[:2]) < SIDE_HANDLE_M
    for intent, part_points in ((Intent("kettle", "handle", NextAction.PICK), kettle),
                                (Intent("kettle", "body", NextAction.PLACE), kettle),
                                (Intent("kettle", "handle", NextAction.PLACE), near)):
        cons = compile_constraints(intent, part_points, TaskContext(object_center=centre))
        assert not [c for c in cons if c.name == "holds_load"], intent
    with pytest.raises(ValueError, match="full_lever"):
        HoldsLoad(np.zeros(3), full_lever=0.1, zero_lever=0.05)


def test_holds_tilt_prefers_the_grasp_whose_pads_hold_the_pour_by_shape() -> None:
    """A kettle at x = 0.4 with its handle on +y and its spout on -y tips about +x. Held from
    the side (approach along x, the pads across the handle's bar), the weight turns the hand
    about its own approach axis, which the pads hold by shape: lever 0. Held from above with
    the pads closing along x, the weight turns the kettle about the line through the pads,
    which only their torsional friction holds: the handle's 6 cm reach is the lever."""
    parts = _mug_parts()
    kettle = {"handle": parts["handle"], "body": parts["body"], "spout": parts["handle"] - [0, 0.12, 0]}
    centre = (0.4, 0.0, 0.05)
    (_, hold) = compile_constraints(
        Intent("kettle", "handle", NextAction.POUR), kettle, TaskContext(object_center=centre)
    )
    assert hold.name == "holds_tilt" and np.allclose(hold.axis, [1.0, 0.0, 0.0])
    side = grasp([0.4, 0.06, 0.05], approach=[1.0, 0.0, 0.0], closing=[0.0, 0.0, 1.0])
    top = grasp([0.4, 0.06, 0.08], approach=DOWN, closing=[1.0, 0.0, 0.0])
    assert hold.lever(side) == pytest.approx(0.0, abs=1e-9)
    assert hold.score(side) == 1.0
    assert 0.06 <= hold.lever(top) <= np.hypot(0.06, 0.03) + 1e-9  # the reach, then the drop below
    assert hold.floor <= hold.score(top) < 0.6
    # Nothing holds a 10 cm lever: the floor, not a veto (a light container may still pour).
    far = grasp([0.4, 0.16, 0.05], approach=DOWN, closing=[1.0, 0.0, 0.0])
    assert hold.score(far) == pytest.approx(hold.floor)
    with pytest.raises(ValueError, match="full_lever"):
        HoldsTilt([1.0, 0.0, 0.0], np.zeros(3), full_lever=0.1, zero_lever=0.05)
