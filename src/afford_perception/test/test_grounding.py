"""Affordance grounding: the source interface, the oracle, the geometric partition, the view
helpers and the grounding benchmark.

The geometric source is graded against the asset library's exact labels on two kinds of cloud:
the complete outer surface (a full scan) and what one noisy depth camera sees, with the object
at arbitrary yaw, position and table height. The parts graded are the ones the tasks grasp or
use; a grasp sampled in a wrongly grounded region is a wrong interaction however stable it is.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np
import pytest

from afford_core.ontology import CATEGORIES
from afford_core.types import ObjectCloud
from afford_perception.grounding import (
    GeometricConfig,
    GeometricSource,
    GroundingError,
    GroundingSource,
    OracleSource,
    available_sources,
    base,
    make_source,
    region_mask,
    register_lazy_source,
    register_source,
)
from afford_perception.grounding.geometric import RULES
from afford_perception.grounding.views import (
    PartScore,
    ViewSpec,
    evaluate,
    full_cloud,
    iou,
    single_view,
    yaw_pose,
)
from afford_sim.assets import Asset, make

# The parts the tasks grasp or use, per category, and the IoU each must reach on average.
GRADED: dict[str, tuple[str, ...]] = {
    "mug": ("handle", "body"),
    "teacup": ("handle", "body"),
    "kettle": ("handle", "spout"),
    "pot": ("handle",),
    "pan": ("handle",),
    "scoop": ("handle",),
    "hammer": ("handle", "head"),
    "bottle": ("cap",),
    "cabinet": ("drawer_handle",),
    "chest": ("top_drawer_handle", "bottom_drawer_handle"),
    "microwave": ("door_handle",),
    "bowl": ("rim",),
    "paper_cup": ("body",),
    "carrot": ("body", "leaves"),
    "leek": ("stalk",),
    "pen": ("body", "cap"),
    "soup_can": ("body",),
    "chocolate_box": ("lid",),
    "sugar_box": ("top",),
    "cutting_board": ("handle",),
    "bell_pepper": ("body",),
    "scrub_bottle": ("body", "cap"),
    "coffee_can": ("body",),
    "paper_box": ("inside", "rim"),
    "basket": ("handle", "rim"),
    "kettle_base": ("plate", "base"),
    "coffee_machine": ("tray",),  # the nozzle hides under the head from a shoulder camera
    "lid": ("knob",),
}
MIN_MEAN_IOU = 0.6
SEEDS = (0, 1, 2)
FURNITURE = {"cabinet", "chest", "microwave", "coffee_machine"}


@cache
def asset(category: str, seed: int = 0) -> Asset:
    """Assets are deterministic, so each (category, seed) is built once per session."""
    return make(category, seed)


def _views(category: str, rng_seed: int) -> list[ViewSpec]:
    """One full scan and two single views, at random yaw, position and table height.

    Fixed furniture stands with its front towards the robot (asset +x turned to world -x), give
    or take 0.4 rad, and is seen from the robot's side (a shoulder camera); free objects take
    any yaw and are seen from anywhere around. Cameras are 25 to 60 degrees above the table.
    """
    rng = np.random.default_rng(rng_seed)
    out = []
    for k in range(3):
        if category in FURNITURE:
            yaw, azimuth = math.pi + rng.uniform(-0.4, 0.4), math.pi + rng.uniform(-0.6, 0.6)
        else:
            yaw, azimuth = rng.uniform(0, 2 * math.pi), rng.uniform(0, 2 * math.pi)
        xyz = (rng.uniform(0.4, 0.7), rng.uniform(-0.25, 0.25), rng.choice([0.0, 0.1, 0.75]))
        out.append(ViewSpec(yaw=float(yaw), azimuth=float(azimuth),
                            elevation=float(rng.uniform(math.radians(25), math.radians(60))),
                            distance=float(rng.uniform(0.3, 0.6)), full=k == 0,
                            object_xyz=tuple(float(v) for v in xyz)))
    return out


@cache
def benchmark(category: str) -> tuple[dict[tuple[str, str], PartScore], dict[tuple[str, str], PartScore]]:
    """(full-scan scores, single-view scores) of the geometric source on ``category``."""
    src = make_source("geometric")
    full, single = {}, {}
    for seed in SEEDS:
        views = _views(category, seed)
        for results, chosen in ((full, views[:1]), (single, views[1:])):
            got = evaluate(src, [category], [seed], chosen, make_asset=asset)
            for key, score in got.items():
                acc = results.setdefault(key, PartScore())
                acc.ious += score.ious
                acc.skipped += score.skipped
                acc.seconds += score.seconds
    return full, single


def _cloud(category: str, seed: int = 0, yaw: float = 0.7, full: bool = False) -> ObjectCloud:
    return ViewSpec(yaw=yaw, full=full).cloud(asset(category, seed), seed=seed)


# --- interface and registry -------------------------------------------------------------------


def test_registry_lists_and_builds_the_sources() -> None:
    """Callers pick a source by name from configuration; both v0 sources must be there."""
    assert {"oracle", "geometric"} <= set(available_sources())
    assert isinstance(make_source("oracle"), OracleSource)
    geo = make_source("geometric", config=GeometricConfig(protrusion_high=0.012))
    assert isinstance(geo, GeometricSource) and geo.config.protrusion_high == 0.012
    assert geo.name == "geometric"


def test_unknown_source_error_lists_the_known_ones() -> None:
    """A typo in a launch parameter must say what would have worked, not just fail."""
    with pytest.raises(KeyError, match="unknown grounding source 'lerned'.*geometric.*oracle"):
        make_source("lerned")


def test_a_new_source_is_one_decorator(monkeypatch: pytest.MonkeyPatch) -> None:
    """The learned model plugs in later by name, without touching any caller."""
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))

    @register_source("constant")
    class Constant(GroundingSource):
        def _ground(self, cloud: ObjectCloud, part: str) -> np.ndarray:
            return np.full(len(cloud), 0.7)

    assert "constant" in available_sources()
    scores = make_source("constant").ground(_cloud("mug"), "handle")
    assert np.all(scores == 0.7)
    with pytest.raises(ValueError, match="already registered"):
        register_source("constant")(type("Other", (Constant,), {}))
    with pytest.raises(TypeError):
        register_source("not_a_source")(int)  # type: ignore[type-var]


class _AlikeHandles(GroundingSource):
    """A source that scores a chest's handles alike, as a model decoding parts from what they
    afford does: every handle is any handle. ``hidden``: handles it does not see; ``split``:
    a handle it finds in two pieces (its bar's middle missed)."""

    tells_stacked_apart = False

    def __init__(self, hidden: tuple[str, ...] = (), split: str | None = None) -> None:
        self.hidden, self.split = hidden, split

    def _ground(self, cloud: ObjectCloud, part: str) -> np.ndarray:
        handles = [p for p in CATEGORIES["chest"].parts if p.endswith("_handle") and p not in self.hidden]
        seen = np.any([cloud.part_mask(p) for p in handles], axis=0)
        if self.split is not None:
            bar = np.flatnonzero(cloud.part_mask(self.split))
            lateral = cloud.points[bar, 1]
            middle = np.abs(lateral - np.median(lateral)) < 0.025  # a 5 cm gap in the middle
            seen[bar[middle]] = False
        return seen.astype(float)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_alike_stacked_handles_are_told_apart_by_height_or_not_at_all(seed: int) -> None:
    """A chest's three handles look alike: a source that cannot tell them apart gets the one at
    the named place by height; when it sees only two, which is which is unknown, and nothing
    is kept (the episode abstains: never the wrong drawer). A handle found in two pieces at one
    height is still one handle. The oracle and the geometric rule tell them apart themselves."""
    cloud = ViewSpec(yaw=math.pi, full=False).cloud(asset("chest", seed), seed=seed)
    handles = ("top_drawer_handle", "middle_drawer_handle", "bottom_drawer_handle")
    for source in (_AlikeHandles(), _AlikeHandles(split="top_drawer_handle")):
        for part in handles:
            assert np.array_equal(source.ground(cloud, part) >= 0.5, cloud.part_mask(part)
                                  & (source._ground(cloud, part) >= 0.5)), part
    for hidden in ("middle_drawer_handle", "bottom_drawer_handle"):
        for part in handles:
            assert not (_AlikeHandles(hidden=(hidden,)).ground(cloud, part) >= 0.5).any(), (hidden, part)
    assert not (_AlikeHandles().ground(cloud, "body") != _AlikeHandles()._ground(cloud, "body")).any()
    for name in ("oracle", "geometric"):
        src = make_source(name)
        for part in handles:
            assert iou(src.ground(cloud, part) >= 0.5, cloud.part_mask(part)) > 0.8, (name, part)


def test_lazy_source_is_imported_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """A source with heavy dependencies (torch) must cost nothing until it is asked for."""
    monkeypatch.setattr(base, "_REGISTRY", dict(base._REGISTRY))
    register_lazy_source("oracle_again", "afford_perception.grounding.oracle:OracleSource")
    assert isinstance(base._REGISTRY["oracle_again"], str)
    src = make_source("oracle_again")
    assert isinstance(src, OracleSource)
    with pytest.raises(ValueError, match="module:ClassName"):
        register_lazy_source("broken", "no_colon_here")


def test_every_category_has_a_geometric_rule() -> None:
    """The geometric source is the label-free fallback to the learned model, and the only one
    that grounds a category the model was never trained on by its own rule: no category may be
    left without one."""
    assert set(RULES) == set(CATEGORIES)


@pytest.mark.parametrize("name", ["oracle", "geometric"])
def test_bad_queries_get_clear_errors(name: str) -> None:
    """Bad input gets an error naming what is known, never a silent empty region."""
    src = make_source(name)
    cloud = _cloud("mug")
    with pytest.raises(KeyError, match="mug has no part 'spout'.*body, handle, rim"):
        src.ground(cloud, "spout")
    bad = ObjectCloud(points=cloud.points, category="mug")
    bad.category = "teapot"
    with pytest.raises(KeyError, match="unknown object category 'teapot'"):
        src.ground(bad, "body")
    empty = ObjectCloud(points=cloud.points[:3], category="mug")
    empty.points = np.zeros((0, 3))
    with pytest.raises(ValueError, match="empty cloud"):
        src.ground(empty, "body")
    nan = ObjectCloud(points=cloud.points.copy(), category="mug")
    nan.points[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        src.ground(nan, "body")


def test_oracle_refuses_a_cloud_without_labels() -> None:
    """On the real robot there are no labels; the oracle must say so and point elsewhere."""
    cloud = _cloud("mug")
    unlabelled = ObjectCloud(points=cloud.points, category="mug")
    with pytest.raises(GroundingError, match="needs part labels.*geometric"):
        make_source("oracle").ground(unlabelled, "handle")


def test_region_mask_and_result() -> None:
    """The planner samples grasps in ``scores >= threshold``; the result records how it was made."""
    assert region_mask(np.array([0.2, 0.5, 0.9])).tolist() == [False, True, True]
    assert region_mask(np.array([0.2, 0.5, 0.9]), threshold=0.95).tolist() == [False, False, False]
    with pytest.raises(ValueError, match="threshold"):
        region_mask(np.array([0.5]), threshold=0.0)
    with pytest.raises(ValueError, match="1-D"):
        region_mask(np.zeros((2, 2)))
    cloud = _cloud("mug")
    result = make_source("geometric").region(cloud, "handle", threshold=0.6)
    assert result.source == "geometric" and result.part == "handle" and result.threshold == 0.6
    assert np.array_equal(result.mask, result.scores >= 0.6)
    assert result.count == int(result.mask.sum()) > 0 and result.seconds > 0


def test_config_is_validated() -> None:
    """A mistyped threshold must fail when the node starts, not as a wrong region mid-task."""
    with pytest.raises(ValueError, match="protrusion_low < protrusion_high"):
        GeometricConfig(protrusion_low=0.02, protrusion_high=0.01)
    with pytest.raises(ValueError, match="normal_neighbors"):
        GeometricConfig(normal_neighbors=3)
    with pytest.raises(ValueError, match="rim depths"):
        GeometricConfig(rim_depth={"mug": 0.2})
    with pytest.raises(ValueError, match="softness"):
        GeometricConfig(softness=0.0)


# --- oracle ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("category", ["mug", "kettle", "cabinet", "hammer"])
def test_oracle_returns_exactly_the_labelled_points(category: str) -> None:
    """The oracle is the upper bound every other source is measured against: it must be exact."""
    src = make_source("oracle")
    for full in (True, False):
        cloud = _cloud(category, full=full)
        for part in CATEGORIES[category].parts:
            scores = src.ground(cloud, part)
            assert set(np.unique(scores)) <= {0.0, 1.0}
            assert np.array_equal(scores == 1.0, cloud.part_mask(part))


def test_oracle_treats_unlabelled_points_as_outside() -> None:
    """Points the simulator could not label (-1) must never enter a grasp region."""
    cloud = _cloud("mug")
    cloud.part_labels = cloud.part_labels.copy()
    cloud.part_labels[:10] = -1
    for part in cloud.part_names:
        assert not make_source("oracle").ground(cloud, part)[:10].any()


# --- geometric partition ------------------------------------------------------------------------


@pytest.mark.parametrize("category", sorted(CATEGORIES))
def test_geometric_scores_are_a_soft_partition(category: str) -> None:
    """Every observed point belongs to exactly one part at 0.5, with soft scores around it.

    Disjoint regions keep a grasp region and a keep-clear region from claiming the same
    points; soft scores let the planner prefer the heart of a region over its edge.
    """
    cloud = _cloud(category, seed=1)
    parts = CATEGORIES[category].parts
    scores = np.stack([make_source("geometric").ground(cloud, p) for p in parts])
    assert scores.shape == (len(parts), len(cloud))
    assert np.all((scores >= 0) & (scores <= 1))
    assert np.all((scores >= 0.5).sum(axis=0) == 1)
    if len(parts) > 1:
        assert len(np.unique(scores.round(3))) > 4


def test_geometric_partition_ignores_pose_and_table_height() -> None:
    """The same object seen the same way must split the same wherever it stands: on a 0.75 m
    table, at the edge of the workspace, turned any way."""
    cloud = _cloud("kettle", seed=3)
    src = make_source("geometric")
    before = {p: src.ground(cloud, p) >= 0.5 for p in cloud.part_names}
    pose = yaw_pose(-0.2, 0.3, 0.65, 2.1)
    moved = ObjectCloud(points=cloud.points @ pose[:3, :3].T + pose[:3, 3], category="kettle")
    for part, mask in before.items():
        assert iou(src.ground(moved, part) >= 0.5, mask) > 0.9, part


def test_geometric_needs_no_labels_or_normals() -> None:
    """A real camera cloud has neither labels nor trustworthy normals."""
    cloud = _cloud("mug", seed=2)
    bare = ObjectCloud(points=cloud.points, category="mug")
    src = make_source("geometric")
    assert iou(src.ground(bare, "handle") >= 0.5, cloud.part_mask("handle")) > 0.7


def test_repeat_queries_reuse_the_partition(monkeypatch: pytest.MonkeyPatch) -> None:
    """The planner asks for a grasp region and a keep-clear region of the same cloud in turn:
    the partition runs once for both, and again only for another cloud."""
    from afford_perception.grounding import geometric

    calls: list[str] = []
    rule = geometric.RULES["pot"]

    def counted(c):  # type: ignore[no-untyped-def]
        calls.append(c.category)
        return rule(c)

    monkeypatch.setitem(geometric.RULES, "pot", counted)
    cloud = _cloud("pot", seed=1)
    src = GeometricSource()
    handle = src.ground(cloud, "handle")
    lid = src.ground(cloud, "lid")
    assert len(calls) == 1
    assert not np.any((handle >= 0.5) & (lid >= 0.5))
    handle[:] = 0  # the caller owns its copy
    assert src.ground(cloud, "handle").max() > 0.5
    src.ground(_cloud("pot", seed=2), "lid")
    assert len(calls) == 2


@pytest.mark.parametrize("category", sorted(GRADED))
def test_geometric_grounds_the_task_parts(category: str) -> None:
    """Mean IoU >= 0.6 on the parts the tasks grasp or use, for full scans and single views,
    over three shapes of the category at random yaw, position and table height."""
    full, single = benchmark(category)
    for kind, results in (("full scan", full), ("single view", single)):
        for part in GRADED[category]:
            score = results[(category, part)]
            assert len(score.ious) >= 2, f"{category}.{part}: too few {kind} clouds show the part"
            assert score.mean >= MIN_MEAN_IOU, f"{category}.{part} {kind}: mean IoU {score.mean:.3f}"


@pytest.mark.parametrize(("sentence", "parts"), [
    ("hang the mug on the rack", {"mug": ("handle", "body"), "rack": ("hook",)}),
    ("open the drawer", {"cabinet": ("drawer_handle",)}),
])
def test_geometric_grounds_the_simulated_camera_cloud(sentence: str,
                                                      parts: dict[str, tuple[str, ...]]) -> None:
    """The clouds the stack really grounds come from the simulator's rendered depth image (the
    same path as a RealSense): the partition must hold there too, not only on sampled views."""
    from afford_perception.parser import parse
    from afford_sim.scene import sample_scene
    from afford_sim.tasks import task_for
    from afford_sim.world import BatchWorld

    task = task_for(parse(sentence))
    placed = sample_scene(task.scene(0), seed=0)
    world = BatchWorld(placed)
    obs = world.render()
    src = make_source("geometric")
    for obj in placed.objects:
        cloud = world.observed_cloud(obs, obj.name, seed=0)
        for part in parts.get(cloud.category, ()):
            got = iou(src.ground(cloud, part) >= 0.5, cloud.part_mask(part))
            assert got >= 0.8, f"{cloud.category}.{part}: IoU {got:.3f} on the rendered view"


# --- view helpers and the benchmark ----------------------------------------------------------------


def test_single_view_keeps_only_what_the_camera_sees() -> None:
    """A camera sees one side of an object; a benchmark that scores hidden points is too easy."""
    a = asset("cube")
    pose = yaw_pose(0.5, 0.0, 0.1, 0.3)
    cam = np.array([0.0, 0.0, 0.6])
    cloud = single_view(a, pose, cam, noise_std=0.0, dropout=0.0, n=4096, seed=1)
    towards = cam - cloud.points
    assert np.all(np.einsum("ij,ij->i", cloud.normals, towards) > 0)  # no back faces
    assert len(cloud) < 0.7 * 4096
    assert np.all(cloud.points[:, 2] > 0.1 + 1e-4)  # the face on the table is never seen


def test_single_view_noise_is_along_the_ray_and_dropout_thins() -> None:
    """Depth cameras err in depth, not sideways, and lose points; the views must do the same."""
    a = asset("cube")
    pose, cam = yaw_pose(0.5, 0.0, 0.1, 0.3), np.array([0.0, 0.0, 0.6])
    clean = single_view(a, pose, cam, noise_std=0.0, dropout=0.0, seed=2)
    noisy = single_view(a, pose, cam, noise_std=0.004, dropout=0.0, seed=2)
    offset = noisy.points - clean.points
    rays = clean.points - cam
    rays /= np.linalg.norm(rays, axis=1, keepdims=True)
    along = np.einsum("ij,ij->i", offset, rays)
    assert np.allclose(offset, along[:, None] * rays, atol=1e-9)
    assert 0.003 < along.std() < 0.005
    thinned = single_view(a, pose, cam, noise_std=0.0, dropout=0.5, seed=2)
    assert 0.4 < len(thinned) / len(clean) < 0.6
    with pytest.raises(ValueError, match="dropout"):
        single_view(a, pose, cam, dropout=1.0)
    with pytest.raises(ValueError, match="sees nothing"):
        single_view(a, pose, np.array([0.5, 0.0, 0.12]), seed=2)  # inside the cube


def test_full_cloud_drops_faces_no_sensor_sees() -> None:
    """Pieces meet inside an object (under a lid, between wall wedges); a scan never sees there."""
    a = asset("pot")
    raw = a.surface_cloud(8000, seed=0)[0]
    scan = full_cloud(a, np.eye(4), n=8000, seed=0)
    assert len(scan) < 0.8 * len(raw)
    bottom = (scan.points[:, 2] < 1e-3) & (scan.normals[:, 2] < -0.9)
    assert not bottom.any()  # the face on the table is never seen


def test_iou() -> None:
    """The benchmark's one number; both-empty counts as agreement (nothing to find, none found)."""
    a = np.array([1, 1, 0, 0], dtype=bool)
    b = np.array([1, 0, 1, 0], dtype=bool)
    assert iou(a, b) == pytest.approx(1 / 3)
    assert iou(a, a) == 1.0 and iou(~a & a, ~a & a) == 1.0
    with pytest.raises(ValueError, match="shape"):
        iou(a, b[:3])


def test_evaluate_scores_the_oracle_perfectly_and_skips_hidden_parts() -> None:
    """The benchmark plumbing must give the oracle 1.0, and skip a part the camera cannot see
    rather than count it as a failure of the source."""
    views = [ViewSpec(yaw=0.0, azimuth=0.0), ViewSpec(yaw=0.0, azimuth=math.pi, full=True)]
    results = evaluate(make_source("oracle"), ["mug"], [0], views, make_asset=asset, min_part_points=10)
    assert set(results) == {("mug", p) for p in CATEGORIES["mug"].parts}
    for score in results.values():
        assert score.ious and all(v == 1.0 for v in score.ious)
    # Seen from +x the handle (on the mug's +x side) is in view; from -x, low, it is hidden.
    hidden = [ViewSpec(yaw=0.0, azimuth=math.pi, elevation=math.radians(5))]
    results = evaluate(make_source("oracle"), ["mug"], [0], hidden, parts={"mug": ("handle",)},
                       make_asset=asset, min_part_points=10)
    assert results[("mug", "handle")].skipped == 1 and not results[("mug", "handle")].ious
