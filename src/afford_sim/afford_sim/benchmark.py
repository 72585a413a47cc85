"""AffordSim's 50-task benchmark: its task ids, tiers and skills, and which of them run here.

The catalogue is the seed's appendix list (``../shared/seeds/affordsim.md``), in its order. Each
entry names the registered task (``afford_sim.tasks``) that runs it on this stack, or ``None``
while that task is not built yet; ``afford tasks --benchmark`` prints the coverage, and the
Table 1 runner (``afford bench table1``) runs the built ones. An entry is built only when its
task exists with the same tier, so the coverage cannot claim a task that is not there.

The seed's numbers (Table 1: two tasks per tier and the tier averages, trajectory-collection
success in %, 100 rollouts each in Isaac Sim with its own assets) are kept here so every report
puts ours beside theirs.
"""

from __future__ import annotations

from dataclasses import dataclass

from afford_sim.tasks import TASKS, Tier

SKILL_TYPES = ("pick_place", "open_close", "pull_push", "hang", "pour", "stack", "composite")


@dataclass(frozen=True)
class BenchmarkTask:
    """One of the seed's 50 tasks.

    Attributes:
        seed_id: The seed's id (``pick_banana_place_bowl``).
        tier: The seed's tier.
        skill_type: One of the seed's seven skill types (:data:`SKILL_TYPES`).
        task_id: The registered task that runs it here, or None (not built yet).
    """

    seed_id: str
    tier: Tier
    skill_type: str
    task_id: str | None = None

    @property
    def built(self) -> bool:
        return self.task_id is not None


def _b(seed_id: str, tier: Tier, skill_type: str, task_id: str | None = None) -> BenchmarkTask:
    return BenchmarkTask(seed_id, tier, skill_type, task_id)


BENCHMARK: tuple[BenchmarkTask, ...] = (
    # Easy: generic-grasp tasks (10).
    _b("pick_banana_place_bowl", "easy", "pick_place", "place-banana-bowl-v2"),
    _b("pick_bottle_place_table", "easy", "pick_place", "place-bottle-table-v1"),
    _b("pick_bowl_place_plate", "easy", "pick_place", "place-bowl-plate-v1"),
    _b("pick_carrot_place_bowl", "easy", "pick_place", "place-carrot-bowl-v2"),
    _b("pick_carrot_place_plate", "easy", "pick_place", "place-carrot-plate-v1"),
    _b("pick_chocolatebox_place_sugarbox", "easy", "pick_place", "place-chocolate-box-sugar-box-v1"),
    _b("pick_cube_place_cup", "easy", "pick_place", "place-cube-mug-v2"),
    _b("pick_leek_place_cuttingboard", "easy", "pick_place", "place-leek-cutting-board-v1"),
    _b("pick_pen_place_doraemoncup", "easy", "pick_place"),
    _b("pick_soupcan_place_table", "easy", "pick_place", "place-soup-can-table-v1"),
    # Medium: affordance-critical tasks (30).
    _b("close_microwave", "medium", "open_close", "close-microwave-v1"),
    _b("open_microwave", "medium", "open_close", "open-microwave-v1"),
    _b("hang_cup", "medium", "hang", "hang-teacup-v1"),
    # The seed's "mugcup" is our mug ("cup" is a synonym of it); its other "cup" is read here as
    # the paper cup in these two tasks. The coffee machine's head reaches 2.3-6.8 cm past its
    # nozzle over the tray, so a cup centred under the nozzle and lowered from above meets it
    # (and the hand above the cup does): the coffee machine tasks wait for a place that slides
    # in from the front.
    _b("pick_cup_place_coffeemachine", "medium", "pick_place"),
    _b("pick_cup_place_woodshelf", "medium", "pick_place", "place-paper-cup-shelf-v1"),
    _b("pick_green_bellpepper_place_pan", "medium", "pick_place", "place-bell-pepper-pan-v1"),
    _b("pick_kettle_place_base", "medium", "pick_place", "place-kettle-kettle-base-v1"),
    _b("pick_lid_place_pot", "medium", "pick_place", "place-lid-pot-v1"),
    _b("pick_mugcup_place_coffeemachine", "medium", "pick_place"),
    _b("pick_mugcup_place_woodshelf", "medium", "pick_place", "place-mug-shelf-v1"),
    _b("pick_papercup_place_table", "medium", "pick_place", "place-paper-cup-table-v1"),
    _b("pick_scrubbottle_place_woodshelf", "medium", "pick_place", "place-scrub-bottle-shelf-v1"),
    _b("pick_soupcan_place_microwave", "medium", "pick_place"),
    _b("pour_basket", "medium", "pour", "pour-basket-v1"),
    _b("pour_bluekettle", "medium", "pour", "pour-kettle-v1"),
    _b("pour_mugcup", "medium", "pour", "pour-mug-v1"),
    _b("pour_pan", "medium", "pour"),
    _b("pour_papercup", "medium", "pour", "pour-paper-cup-v1"),
    _b("pour_whitekettle", "medium", "pour"),
    _b("pour_whitekettle4", "medium", "pour"),
    _b("pull_cabinet", "medium", "pull_push", "open-drawer-v1"),
    _b("pull_cabinet7", "medium", "pull_push", "open-chest-top-drawer-v1"),
    _b("pull_cabinet15", "medium", "pull_push", "open-chest-bottom-drawer-v1"),
    _b("push_cheezbox", "medium", "pull_push", "push-cheese-box-v1"),
    _b("push_coffeecan", "medium", "pull_push", "push-coffee-can-v1"),
    _b("stack_cube", "medium", "stack", "stack-cube-v1"),
    _b("stack_four_cube_pyramid", "medium", "stack"),
    _b("stack_papercup", "medium", "stack", "stack-paper-cup-v1"),
    _b("composite_2picks_to_plate", "medium", "composite", "place-carrot-plate-then-cube-plate-v1"),
    _b("composite_3picks_to_paperbox", "medium", "composite", "place-bell-pepper-soup-can-cube-paper-box-v1"),
    # Hard: composite affordance tasks (10).
    _b("hang_mugcup", "hard", "hang", "hang-mug-v1"),
    _b("stack_four_cube", "hard", "stack", "stack-cube-tower-v1"),
    _b("composite_load_microwave", "hard", "composite"),
    _b("composite_2pickplaces", "hard", "composite", "place-banana-plate-then-cube-mug-v1"),
    _b("composite_pour_then_hang", "hard", "composite", "pour-mug-then-hang-mug-v1"),
    _b("composite_pour_then_place_coffee", "hard", "composite"),
    _b("composite_double_pour_kettle", "hard", "composite", "pour-kettle-bowl-then-mug-v1"),
    _b("composite_unload_microwave", "hard", "composite"),
    _b("composite_3cups_to_tray", "hard", "composite", "place-paper-cups-tray-v1"),
    _b("composite_push_pick_to_shelf", "hard", "composite", "push-cheese-box-then-place-paper-cup-shelf-v1"),
)

#: The seed's Table 1 rows (%), by column: Manual, AnyGrasp, AnyGrasp+Filter, AffordSim, Human Aff.
SEED_TABLE1: dict[str, dict[str, int]] = {
    "pick_banana_place_bowl": {"Manual": 100, "AnyGrasp": 80, "AnyGrasp+Filter": 100, "AffordSim": 100,
                               "Human Aff.": 100},
    "pick_soupcan_place_table": {"Manual": 100, "AnyGrasp": 55, "AnyGrasp+Filter": 75, "AffordSim": 95,
                                 "Human Aff.": 100},
    "pick_mugcup_place_coffeemachine": {"Manual": 90, "AnyGrasp": 25, "AnyGrasp+Filter": 55, "AffordSim": 88,
                                        "Human Aff.": 95},
    "hang_cup": {"Manual": 85, "AnyGrasp": 0, "AnyGrasp+Filter": 0, "AffordSim": 25, "Human Aff.": 90},
    "stack_four_cube": {"Manual": 82, "AnyGrasp": 18, "AnyGrasp+Filter": 33, "AffordSim": 77,
                        "Human Aff.": 88},
    "composite_double_pour_kettle": {"Manual": 70, "AnyGrasp": 0, "AnyGrasp+Filter": 15, "AffordSim": 65,
                                     "Human Aff.": 85},
}
#: The seed's Table 1 tier averages (%).
SEED_TIER_AVERAGES: dict[str, dict[str, int]] = {
    "easy": {"Manual": 100, "AnyGrasp": 67, "AnyGrasp+Filter": 87, "AffordSim": 98, "Human Aff.": 100},
    "medium": {"Manual": 85, "AnyGrasp": 15, "AnyGrasp+Filter": 45, "AffordSim": 79, "Human Aff.": 93},
    "hard": {"Manual": 72, "AnyGrasp": 3, "AnyGrasp+Filter": 16, "AffordSim": 64, "Human Aff.": 86},
}


def check_catalogue() -> None:
    """Every built entry names a registered task of the same tier, each at most once.

    Raises:
        ValueError: an entry names an unknown task, a task of another tier, or a task twice.
    """
    seen: set[str] = set()
    for b in BENCHMARK:
        if b.task_id is None:
            continue
        if b.task_id not in TASKS:
            raise ValueError(f"{b.seed_id}: no registered task {b.task_id!r}")
        tier = TASKS.get(b.task_id).tier
        if tier != b.tier:
            raise ValueError(f"{b.seed_id} is {b.tier} in the seed, but {b.task_id} is registered as {tier}")
        if b.task_id in seen:
            raise ValueError(f"{b.task_id} stands for two benchmark tasks")
        seen.add(b.task_id)


def built(tier: Tier | None = None) -> list[BenchmarkTask]:
    """The entries that run here (of one tier, or all), in the seed's order."""
    check_catalogue()
    return [b for b in BENCHMARK if b.built and (tier is None or b.tier == tier)]


def by_task_id(task_id: str) -> BenchmarkTask:
    """The benchmark entry a registered task stands for.

    Raises:
        KeyError: the task is not one of the benchmark's.
    """
    for b in BENCHMARK:
        if b.task_id == task_id:
            return b
    raise KeyError(f"{task_id} stands for no AffordSim benchmark task (afford tasks --benchmark)")


def coverage() -> dict[str, tuple[int, int]]:
    """Per tier: (built, total)."""
    out: dict[str, tuple[int, int]] = {}
    for b in BENCHMARK:
        k, n = out.get(b.tier, (0, 0))
        out[b.tier] = (k + b.built, n + 1)
    return out
