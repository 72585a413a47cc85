"""Tests of the affordance training data: vocabulary, targets, held-out splits, files.

The learned affordance source is only as good as its data: a target mask off by one part teaches
the robot to grasp a mug by its rim, and a held-out split that leaks training shapes or words
reports generalisation the robot will not have. Generation runs on tiny configs here.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from afford_core.ontology import AFFORDANCES, category
from afford_data import affordance as ds
from afford_data.affordance import AffordanceDataConfig, generate
from afford_perception.affordance import dataset as fmt
from afford_perception.affordance import vocabulary as vocab
from afford_perception.affordance.dataset import load, prepare_points

TINY = AffordanceDataConfig(
    categories=("mug", "box"), unseen_categories=("paper_cup", "scoop"), train_seeds=2, heldout_seeds=1,
    unseen_category_seeds=1, views_per_shape=1, full_clouds_per_shape=1, num_points=256, seed=3,
)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny")
    generate(TINY, out, progress=False)
    return out


def _hashes(out: Path) -> dict[str, str]:
    return {p.name: ds.sha256(p) for p in sorted(out.glob("*.npz"))}


# --- vocabulary ------------------------------------------------------------------------------


def test_every_affordance_has_disjoint_seen_and_unseen_phrasings() -> None:
    """Unseen-phrasing scores mean something only if those words never reached training, and
    every affordance the robot can be asked about must be trainable and testable."""
    split = vocab.split_phrasings()
    assert set(split.seen) == set(split.unseen) == set(AFFORDANCES)
    for aff in AFFORDANCES:
        seen, unseen = set(split.seen[aff]), set(split.unseen[aff])
        assert len(vocab.PHRASINGS[aff]) >= 8, aff
        assert len(unseen) >= 2 and len(seen) >= 6, aff
        assert not seen & unseen, aff
        assert seen | unseen == set(vocab.PHRASINGS[aff]), aff


def test_no_phrase_names_two_affordances() -> None:
    """A phrase with two affordances would have two contradictory targets on the same cloud."""
    phrases = [p for ps in vocab.PHRASINGS.values() for p in ps]
    assert len(phrases) == len(set(phrases))
    assert vocab.affordance_of("the spout") == "pour_out"
    with pytest.raises(KeyError, match="not a phrasing"):
        vocab.affordance_of("the flux capacitor")


def test_training_pool_adds_training_only_wordings_and_never_a_held_out_one() -> None:
    """More training wordings help the model read new ones, but one that repeats a held-out
    phrasing would turn the unseen-phrasing benchmark into a seen one without anyone noticing."""
    split = vocab.split_phrasings()
    pool = vocab.training_pool(split)
    held_out = {p for ps in split.unseen.values() for p in ps}
    for aff in AFFORDANCES:
        assert set(split.seen[aff]) <= set(pool[aff]), aff
        assert set(vocab.TRAINING_ONLY.get(aff, ())) <= set(pool[aff]), aff
        assert not set(pool[aff]) & held_out, aff
    everywhere = [p for ps in pool.values() for p in ps]
    assert len(everywhere) == len(set(everywhere)), "a training wording names two affordances"
    for aff, phrases in vocab.TRAINING_ONLY.items():
        assert all(vocab.affordance_of(p) == aff for p in phrases)


def test_training_pool_refuses_a_training_only_phrase_that_could_be_held_out(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The check runs on every use, so an edit that copies an authored phrase (perhaps a
    held-out one) into the training-only table fails at once instead of leaking it."""
    held = vocab.split_phrasings().unseen["pour_out"][0]
    monkeypatch.setattr(vocab, "TRAINING_ONLY", {**vocab.TRAINING_ONLY, "pour_out": (held,)})
    with pytest.raises(ValueError, match="repeat authored"):
        vocab.training_pool()
    twice = {"pour_out": ("the pour hole",), "pour_in": ("the pour hole",)}
    monkeypatch.setattr(vocab, "TRAINING_ONLY", twice)
    with pytest.raises(ValueError, match="names both"):
        vocab.training_pool()


def test_phrasing_split_ignores_authored_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """The held-out words are fixed by their text alone, so reordering the vocabulary while
    editing it cannot silently move a test phrasing into training."""
    before = vocab.split_phrasings()
    monkeypatch.setattr(vocab, "PHRASINGS", {a: tuple(reversed(p)) for a, p in vocab.PHRASINGS.items()})
    after = vocab.split_phrasings()
    for aff in AFFORDANCES:
        assert set(after.unseen[aff]) == set(before.unseen[aff])


def test_category_text_is_the_name_in_words() -> None:
    """The model is told an object's category as words MiniLM knows ("paper cup"), so an unseen
    category's name can land near the seen ones it resembles; an empty name is refused."""
    assert vocab.category_text("paper_cup") == "paper cup"
    assert vocab.category_text("mug") == "mug"
    with pytest.raises(ValueError, match="empty"):
        vocab.category_text(" _ ")


def test_mug_handle_target_is_exactly_its_handle_points() -> None:
    """"Where you hold it" on a mug must be the handle and nothing else, or the grasp planner
    samples grasps on the body wall or the rim."""
    parts = category("mug").parts
    labels = np.array([parts.index(p) for p in ("body", "handle", "rim", "handle", "body")] + [-1])
    handle = labels == parts.index("handle")
    np.testing.assert_array_equal(vocab.target_mask("mug", labels, "grasp_handle"), handle)
    np.testing.assert_array_equal(vocab.target_mask("mug", labels, "hang"), handle)
    assert not vocab.target_mask("mug", labels, "pull").any()


# --- generated splits ------------------------------------------------------------------------


def test_stored_targets_match_the_ontology(tiny_dir: Path) -> None:
    """Every stored target, for every query of every split, is the set of points whose part
    offers the affordance according to the ontology (a mug's handle for grasp_handle)."""
    checked_handle = False
    for split in ds.SPLITS:
        data = load(tiny_dir / f"{split}.npz")
        for sample in data:
            info = category(sample.category)
            assert sample.points.shape == (TINY.num_points, 3) and sample.points.dtype == np.float32
            for text, aff, mask in sample.queries:
                assert mask.shape == (TINY.num_points,) and mask.dtype == bool
                assert aff == vocab.affordance_of(text)
                wanted = [info.parts.index(p) for p in info.parts_with(aff)]
                np.testing.assert_array_equal(mask, np.isin(sample.part_labels, wanted))
                if sample.category == "mug" and aff == "grasp_handle":
                    np.testing.assert_array_equal(mask, sample.part_labels == info.parts.index("handle"))
                    checked_handle = checked_handle or bool(mask.any())
    assert checked_handle, "no mug view showed its handle: the check above never ran"


def test_clouds_are_centred_and_single_views_are_partial(tiny_dir: Path) -> None:
    """The model is run on clouds centred the same way, and trained mostly on the one-sided views
    a real camera gives, not only on complete scans."""
    data = load(tiny_dir / "train.npz")
    for i in range(len(data)):
        pts = data.points[i]
        assert np.abs(0.5 * (pts.min(axis=0) + pts.max(axis=0))).max() < 0.01
    full = data.full
    single = ~full & (data.view < TINY.views_per_shape)  # synthetic views, voxel-filtered like the scans
    assert full.any() and single.any()
    for seed in np.unique(data.shape_seed):
        for cat in np.unique(data.category):
            same = (data.shape_seed == seed) & (data.category == cat)
            assert data.observed[same & single].max() < data.observed[same & full].min()


def test_scene_views_are_the_clouds_the_spine_grounds_on(tiny_dir: Path) -> None:
    """A model trained only on synthetic orbit views abstained on the drawer task's cabinet: the
    shoulder camera's view of a cabinet front was unlike anything it was trained on. Every shape
    therefore also gets views rendered in a task scene through the tasks' own cameras."""
    data = load(tiny_dir / "train.npz")
    first = TINY.views_per_shape + TINY.full_clouds_per_shape
    scene = data.view >= first
    assert scene.sum() == len(TINY.categories) * TINY.train_seeds * TINY.scene_views_per_shape
    assert not data.full[scene].any()
    mug = scene & (data.category == data.categories.index("mug"))
    assert (data.part_labels[mug] >= 0).all()  # the simulator labels every observed pixel

    from afford_sim.assets import make

    cabinet = make("cabinet", 0)
    cloud = ds._scene_view(TINY, cabinet, 0)
    assert cloud is not None
    parts = category("cabinet").parts
    handle = cloud.part_labels == parts.index("drawer_handle")
    assert handle.sum() > 100, "the shoulder camera must see the drawer handle, as in the drawer task"
    # The front faces the camera: the handle is nearer to it than the carcass behind it.
    body = cloud.part_labels == parts.index("body")
    assert cloud.points[handle, 0].mean() < cloud.points[body, 0].mean()


def test_splits_share_no_shapes_categories_or_phrasings(tiny_dir: Path) -> None:
    """Held-out scores are only evidence of generalisation if the held-out shapes, categories
    and words never appear in training."""
    split = TINY.phrasings
    seen = {p for ps in split.seen.values() for p in ps}
    unseen = {p for ps in split.unseen.values() for p in ps}
    sets = {s: load(tiny_dir / f"{s}.npz") for s in ds.SPLITS}

    def shapes(d: fmt.AffordanceSplit) -> set[tuple[str, int]]:
        return {(d.categories[c], int(s)) for c, s in zip(d.category, d.shape_seed, strict=True)}

    def used(d: fmt.AffordanceSplit) -> set[str]:
        return {d.texts[t] for t in d.query_text}

    train = sets["train"]
    assert shapes(train) == set(TINY.shapes("train"))
    assert not shapes(train) & shapes(sets["val_unseen_shapes"])
    assert not set(train.categories) & set(sets["test_unseen_categories"].categories)
    assert set(sets["test_unseen_categories"].categories) == set(TINY.unseen_categories)
    for name in ("train", "val_unseen_shapes", "test_unseen_categories"):
        assert used(sets[name]) <= seen, name
    assert used(sets["test_unseen_phrasings"]) <= unseen
    assert not used(sets["test_unseen_phrasings"]) & used(train)
    # Paired by design: same clouds as val_unseen_shapes, only the words differ.
    np.testing.assert_array_equal(sets["test_unseen_phrasings"].points, sets["val_unseen_shapes"].points)
    manifest = fmt.load_manifest(tiny_dir)
    for name in ds.SPLITS:
        assert manifest["splits"][name]["clouds"] == len(sets[name])
        assert manifest["splits"][name]["queries"] == len(sets[name].query_cloud)


def test_generation_is_deterministic(tiny_dir: Path, tmp_path: Path) -> None:
    """The shipped weights name the data they were trained on by its manifest; that only holds
    if the same config gives the same bytes on every machine and run."""
    generate(TINY, tmp_path, progress=False)
    assert _hashes(tmp_path) == _hashes(tiny_dir)
    assert (tmp_path / ds.MANIFEST).read_bytes() == (tiny_dir / ds.MANIFEST).read_bytes()
    reseeded = AffordanceDataConfig(**{**TINY.as_dict(), "seed": 4})
    assert _hashes(generate(reseeded, tmp_path / "other", progress=False).out_dir) != _hashes(tiny_dir)


class _Boom(RuntimeError):
    pass


def _fail_on_call(real: Any, n: int) -> Any:
    calls = {"n": 0}

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == n:
            raise _Boom("simulated crash")
        return real(*args, **kwargs)

    return wrapped


@pytest.mark.parametrize("where", ["building", "writing"])
def test_interrupted_generation_leaves_no_half_written_split(
    where: str, tiny_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash (or Ctrl-C) during a long generation must not leave a truncated split that
    training would read as data, nor break the data set that was already there."""
    from afford_sim.assets import make

    write_npz = ds._write_npz
    fresh, existing = tmp_path / "fresh", tmp_path / "existing"
    shutil.copytree(tiny_dir, existing)
    before = _hashes(existing)

    def crashing_run(config: AffordanceDataConfig, out: Path) -> None:
        # Crash on the third shape, or on the second split file (one split already staged).
        if where == "writing":
            monkeypatch.setattr(ds, "_write_npz", _fail_on_call(write_npz, 2))
        with pytest.raises(_Boom):
            generate(config, out, progress=False,
                     make_asset=_fail_on_call(make, 3) if where == "building" else make)

    crashing_run(TINY, fresh)
    assert list(fresh.iterdir()) == []
    crashing_run(AffordanceDataConfig(**{**TINY.as_dict(), "seed": 9}), existing)
    assert _hashes(existing) == before
    assert sorted(p.name for p in existing.iterdir()) == sorted([*before, ds.MANIFEST])


def test_load_round_trips_and_refuses_damaged_files(tiny_dir: Path, tmp_path: Path) -> None:
    """Training reads back exactly what was written, and a damaged copy is refused instead of
    training on garbage."""
    path = tiny_dir / "val_unseen_shapes.npz"
    data = load(path)
    with np.load(path) as raw:
        np.testing.assert_array_equal(data.points, raw["points"])
        np.testing.assert_array_equal(data[0].points, raw["points"][0])
    q = np.arange(len(data.query_cloud))
    targets = data.query_targets(q)
    flat = [query for sample in data for query in sample.queries]
    assert len(flat) == len(q)
    for row, query in zip(targets, flat, strict=True):
        np.testing.assert_array_equal(row, query.mask)
    with pytest.raises(IndexError, match="out of range"):
        data[len(data)]
    damaged = tmp_path / path.name
    raw_bytes = bytearray(path.read_bytes())
    raw_bytes[len(raw_bytes) // 2] ^= 0xFF
    damaged.write_bytes(bytes(raw_bytes))
    (tmp_path / ds.MANIFEST).write_text((tiny_dir / ds.MANIFEST).read_text())
    with pytest.raises(ValueError, match="SHA-256"):
        load(damaged)
    manifest = json.loads((tiny_dir / ds.MANIFEST).read_text())
    assert ds.AffordanceDataConfig.from_dict(manifest["config"]) == TINY


def test_prepare_points_keeps_every_observed_point_when_upsampling() -> None:
    """A small or far object gives few points; duplicating some must not drop any of them (a
    thin handle may be only a handful of points)."""
    rng = np.random.default_rng(0)
    pts = rng.normal(size=(100, 3)) + 5.0
    out, idx, centre = prepare_points(pts, 256, rng)
    assert out.shape == (256, 3) and out.dtype == np.float32
    assert set(idx.tolist()) == set(range(100))
    np.testing.assert_allclose(centre, 0.5 * (pts.min(axis=0) + pts.max(axis=0)))
    _, idx, _ = prepare_points(pts, 50, rng)
    assert len(set(idx.tolist())) == 50
    with pytest.raises(ValueError, match="non-empty"):
        prepare_points(np.zeros((0, 3)), 8, rng)


def test_config_rejects_leaky_or_unknown_categories() -> None:
    """A category both trained on and held out would make the unseen-category score a lie."""
    with pytest.raises(ValueError, match="both seen and unseen"):
        AffordanceDataConfig(categories=("mug", "pot"), unseen_categories=("pot", "scoop"))
    with pytest.raises(KeyError, match="known"):
        AffordanceDataConfig(categories=("saucepan",))
    default = AffordanceDataConfig()
    assert {"pot", "scoop"} <= set(default.unseen_categories) and "pot" not in default.categories
    # Every affordance of the unseen categories is taught by some seen category.
    taught = {a for c in default.categories for a in vocab.affordances_of(c)}
    for cat in default.unseen_categories:
        assert set(vocab.affordances_of(cat)) <= taught, cat


def test_cli_builds_the_categories_it_is_given_and_refuses_an_unknown_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`afford affordance data --categories` builds the data set a checkpoint lists (the shipped
    one was trained on 16 categories; the default is every one); a category the ontology lacks
    fails in one line before anything is written."""
    from afford_cli.cli import main

    built: list[AffordanceDataConfig] = []

    def recording(config: AffordanceDataConfig, out_dir: Path | str, progress: bool = True) -> Any:
        built.append(config)
        raise SystemExit(0)  # the config is what is checked; the generation has its own tests

    monkeypatch.setattr(ds, "generate", recording)
    with pytest.raises(SystemExit):
        main(["affordance", "data", "--categories", "mug", "kettle", "mug", "--out", str(tmp_path / "a")])
    assert built[-1].categories == ("mug", "kettle") and built[-1].unseen_categories == ("pot", "scoop")
    with pytest.raises(SystemExit):
        main(["affordance", "data", "--out", str(tmp_path / "b")])
    every = AffordanceDataConfig().categories
    assert set(built[-1].categories) == set(every) and len(every) > 16
    assert main(["affordance", "data", "--categories", "teapot", "--out", str(tmp_path / "c")]) == 2
    assert "unknown object category 'teapot'" in capsys.readouterr().err
    assert not (tmp_path / "c").exists()
