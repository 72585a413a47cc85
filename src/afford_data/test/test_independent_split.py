"""The independent split: objects by another author, written in the data set's format, scored
like every other split."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from afford_core.ontology import category
from afford_data.independent_split import IndependentConfig, generate_independent, read_queries
from afford_perception.affordance.dataset import INDEPENDENT_QUERIES_SPLIT, INDEPENDENT_SPLIT, MANIFEST, load
from afford_perception.affordance.evaluate import evaluate_sources

TINY = IndependentConfig(instances=1, views=1)


@pytest.fixture(scope="module")
def split_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("independent")
    generate_independent(out, TINY)
    return out


def test_the_split_is_written_in_the_data_set_format(split_dir: Path) -> None:
    """Every cloud is one labelled view of an object of the other author's, resampled to the
    model's point count; its queries ask each affordance its category offers, and one it lacks;
    the manifest records where the objects came from."""
    import afford_data.independent_objects as independent_objects

    split = load(split_dir / f"{INDEPENDENT_SPLIT}.npz")
    assert set(split.categories) == set(independent_objects.CATEGORIES)
    assert len(split) == len(independent_objects.CATEGORIES) * TINY.instances * TINY.views
    assert split.points.shape[1:] == (2048, 3) and not split.full.any()
    for i in range(len(split)):
        info = category(split.categories[split.category[i]])
        labels = split.part_labels[i]
        assert labels.min() >= 0 and labels.max() < len(info.parts)
        asked = {q.affordance for q in split[i].queries}
        offered = {a for p in info.parts for a in info.affordances.get(p, ())}
        assert offered <= asked and len(asked - offered) == 1
    entry = json.loads((split_dir / MANIFEST).read_text())["splits"][INDEPENDENT_SPLIT]
    assert entry["clouds"] == len(split) and sum(entry["independent"]["origins"].values()) == 11


def test_it_is_scored_like_any_split_and_added_beside_the_others(split_dir: Path, tmp_path: Path) -> None:
    """Part labels score 1.0 on it (the labels are the targets), a geometric rule less; a data set's
    manifest keeps its splits when the independent one is added, and asking for the split where
    it was never written names the command that writes it."""
    results = evaluate_sources(split_dir, sources=("oracle", "geometric", "chance"),
                               splits=(INDEPENDENT_SPLIT,))
    scores = results[INDEPENDENT_SPLIT]
    assert scores["oracle"]["overall"] == pytest.approx(1.0)
    assert 0.0 < scores["chance"]["overall"] < scores["geometric"]["overall"] < 1.0
    cats = load(split_dir / f"{INDEPENDENT_SPLIT}.npz").categories
    assert set(scores["geometric"]["by_category"]) == set(cats)
    assert scores["geometric"]["by_view"] == {"independent": pytest.approx(scores["geometric"]["overall"])}

    manifest = {"format": 1, "config": json.loads((split_dir / MANIFEST).read_text())["config"],
                "splits": {"train": {"file": "train.npz"}}, "affordances": []}
    (tmp_path / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(FileNotFoundError, match="afford affordance independent"):
        evaluate_sources(tmp_path, sources=("oracle",), splits=(INDEPENDENT_SPLIT,))
    generate_independent(tmp_path, IndependentConfig(instances=1, views=1, seed=1))
    splits = json.loads((tmp_path / MANIFEST).read_text())["splits"]
    assert set(splits) == {"train", INDEPENDENT_SPLIT, INDEPENDENT_QUERIES_SPLIT}
    assert not list(tmp_path.glob(".staging-*"))


def test_the_split_is_reproducible(split_dir: Path, tmp_path: Path) -> None:
    generate_independent(tmp_path, TINY)
    a, b = load(split_dir / f"{INDEPENDENT_SPLIT}.npz"), load(tmp_path / f"{INDEPENDENT_SPLIT}.npz")
    np.testing.assert_array_equal(a.points, b.points)
    np.testing.assert_array_equal(a.part_labels, b.part_labels)


def test_the_same_clouds_are_asked_in_the_other_authors_free_text(split_dir: Path) -> None:
    """The free-text split holds the shapes split's clouds, each asked every query the other
    author wrote for its category (four per affordance it offers), with the targets of the
    affordance the query names; part labels still score 1.0 on it."""
    shapes = load(split_dir / f"{INDEPENDENT_SPLIT}.npz")
    free = load(split_dir / f"{INDEPENDENT_QUERIES_SPLIT}.npz")
    np.testing.assert_array_equal(shapes.points, free.points)
    written = read_queries()
    assert sum(len(v) for v in written.values()) == 168
    for i in range(len(free)):
        cat = free.categories[free.category[i]]
        info = category(cat)
        asked = [(q.affordance, q.text) for q in free[i].queries]
        assert asked == written[cat]
        for q in free[i].queries:
            parts = [info.parts.index(p) for p in info.parts if q.affordance in info.affordances.get(p, ())]
            np.testing.assert_array_equal(q.mask, np.isin(free.part_labels[i], parts))
    for aff_texts in written.values():
        per_aff: dict[str, int] = {}
        for aff, _ in aff_texts:
            per_aff[aff] = per_aff.get(aff, 0) + 1
        assert set(per_aff.values()) == {4}
    scores = evaluate_sources(split_dir, sources=("oracle", "geometric"),
                              splits=(INDEPENDENT_SPLIT, INDEPENDENT_QUERIES_SPLIT))
    assert scores[INDEPENDENT_QUERIES_SPLIT]["oracle"]["overall"] == pytest.approx(1.0)
    # Every free-text query asks an affordance the object offers; the shapes split also asks
    # one it lacks per cloud, which "offered" leaves out, so the two are compared alike.
    free_geo = scores[INDEPENDENT_QUERIES_SPLIT]["geometric"]
    assert free_geo["offered"]["queries"] == free_geo["queries"]
    assert free_geo["offered"]["overall"] == pytest.approx(free_geo["overall"])
    shapes_geo = scores[INDEPENDENT_SPLIT]["geometric"]
    assert shapes_geo["offered"]["queries"] == shapes_geo["queries"] - len(shapes)
    entry = json.loads((split_dir / MANIFEST).read_text())["splits"][INDEPENDENT_QUERIES_SPLIT]
    assert entry["queries"] == len(free.query_cloud) and entry["queries_file"]["sha256"]


def test_a_part_source_reading_the_words_is_scored_on_what_it_read(split_dir: Path) -> None:
    """`oracle_text` grounds the affordance the reader reads from each query (MiniLM, the
    training wordings vote): the model's own wordings (the shapes split) are read right, so it
    scores as the oracle; the other author's free text is not all read right, and each misread
    query scores what grounding the wrong affordance gives (not its label's 1.0)."""
    scores = evaluate_sources(split_dir, sources=("oracle_text", "chance"),
                              splits=(INDEPENDENT_SPLIT, INDEPENDENT_QUERIES_SPLIT))
    own = scores[INDEPENDENT_SPLIT]["oracle_text"]
    assert own["reading"]["queries_read_right"] == 1.0 and own["overall"] == pytest.approx(1.0)
    free = scores[INDEPENDENT_QUERIES_SPLIT]["oracle_text"]
    assert 0.0 < free["reading"]["queries_read_right"] < 1.0
    assert free["reading"]["texts"] == 168 and free["reading"]["ties"] == 0
    assert scores[INDEPENDENT_QUERIES_SPLIT]["chance"]["overall"] < free["overall"] < 1.0


@pytest.mark.parametrize("line, why", [
    ("mug\tpress\tthe button", "offers no 'press'"),
    ("teapot\tpour_out\tthe spout", "unknown category"),
    ("mug\tcontain", "three non-empty"),
    ("mug\tcontain\tthe inside\nmug\tcontain\tthe inside", "given twice"),
])
def test_a_bad_queries_file_is_refused_before_anything_is_written(
    tmp_path: Path, line: str, why: str,
) -> None:
    bad = tmp_path / "queries.tsv"
    bad.write_text("category\taffordance\tquery\n" + line + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=why):
        generate_independent(tmp_path / "out", TINY, queries=bad)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_the_learned_model_reading_the_words_grounds_parts_with_the_runs_weights(
    split_dir: Path, tmp_path: Path,
) -> None:
    """`learned_text` is the model as the graph uses it: the affordance read from the words, its
    parts decoded from the model's regions; its own wordings are read right, and it is built
    with the run's weights (a missing file is refused, not replaced by the shipped one)."""
    from afford_perception.affordance.source import WeightsNotFound

    got = evaluate_sources(split_dir, sources=("learned_text",), splits=(INDEPENDENT_SPLIT,))
    scores = got[INDEPENDENT_SPLIT]["learned_text"]
    assert scores["reading"]["queries_read_right"] == 1.0
    assert 0.0 < scores["overall"] < 1.0
    with pytest.raises(WeightsNotFound):
        evaluate_sources(split_dir, sources=("learned_text",), splits=(INDEPENDENT_SPLIT,),
                         weights=tmp_path / "none.pt")
