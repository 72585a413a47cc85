"""The affordance benchmark: mIoU per affordance on each held-out split, for every grounding source.

Every source answers the same questions of the same clouds: for each query of a split (a phrase
naming an affordance, asked of one cloud), the predicted region is compared with the points
whose part offers that affordance.

- ``learned``: the model is asked the query text itself, told the object's category when its
  checkpoint was trained on it (as the other sources are told it: the task names the object;
  an unseen category is scored blind, as ``LearnedSource`` does), and thresholded at 0.5.
- ``geometric`` / ``oracle``: they ground parts, not phrases, so an affordance's region is the
  union of the regions of the parts that offer it (``Category.parts_with``). Wording cannot
  change their answer: their seen- and unseen-phrasing scores are equal by construction.
- ``geometric_text`` / ``oracle_text``: the same part sources answering the query's words
  rather than its label: the affordance is the one ``affordance.reader`` reads from the text
  (the nearest training wordings vote), so they are scored like for like with ``learned`` on
  free text. ``oracle_text`` is the reading's ceiling (perfect parts, read words).
  ``learned_text`` is the model used as the spine uses it: the read affordance's parts, each
  decoded from the model's affordance regions (``LearnedSource``), rather than the query's
  words handed to the model.
- ``chance``: the floor under every table. A guess drawn uniformly from the answers a part
  source can give, knowing the object's true parts but not the question: one of the
  category's parts (its labelled points, empty when out of view) or "nothing here". Its score
  is the exact expectation of that draw (the mean IoU over the choices), so it has no seed.

IoU follows ``grounding.views.iou``: a query whose target is empty (an affordance the object
does not offer, or a part out of view) scores 1 when nothing is predicted and 0 otherwise, so
"nothing here" is graded, not skipped. A split's mIoU per affordance is the mean over its
queries; ``overall`` is the mean over the affordances present (each class weighs the same, so
the many grasp queries cannot hide a missed ``pull``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from afford_core.ontology import category
from afford_core.types import ObjectCloud
from afford_perception.affordance.dataset import (
    INDEPENDENT_SPLITS,
    MANIFEST,
    SPLITS,
    AffordanceSplit,
    load,
    load_manifest,
)
from afford_perception.grounding.base import GroundingError, GroundingSource, make_source, region_mask
from afford_perception.grounding.views import iou

#: The held-out splits, scored by default (``train`` is not a benchmark).
HELDOUT_SPLITS: tuple[str, ...] = tuple(s for s in SPLITS if s != "train")

#: The name of the chance floor among the sources (not a grounding source: it answers no query).
CHANCE = "chance"
#: A part source's name with this suffix answers the affordance read from each query's text
#: (``affordance.reader``) instead of the one the query is labelled with.
READS_TEXT = "_text"

Embedder = Callable[[Sequence[str]], np.ndarray]


def summarize(affordances: Sequence[str], ious: Sequence[float] | np.ndarray) -> dict[str, Any]:
    """mIoU per affordance (mean over its queries) and overall (mean over affordances present).

    Args:
        affordances: Affordance name of each query.
        ious: IoU of each query, aligned with ``affordances``.
    """
    if len(affordances) != len(ious):
        raise ValueError(f"{len(affordances)} affordances but {len(ious)} IoUs")
    per: dict[str, list[float]] = {}
    for aff, value in zip(affordances, ious, strict=True):
        per.setdefault(aff, []).append(float(value))
    per_affordance = {a: float(np.mean(v)) for a, v in sorted(per.items())}
    overall = float(np.mean(list(per_affordance.values()))) if per_affordance else float("nan")
    return {"per_affordance": per_affordance, "overall": overall, "queries": len(ious)}


def learned_ious(model: Any, split: AffordanceSplit, embeddings: dict[str, np.ndarray],
                 threshold: float = 0.5, batch: int = 16,
                 categories: dict[str, np.ndarray] | None = None) -> np.ndarray:
    """IoU of every query of ``split`` for a trained model, threshold ``threshold``.

    The split's clouds are already resampled to the data set's P points, so they are encoded as
    stored, in batches, and each cloud is encoded once for all of its queries. This is what
    ``predict`` computes on a P-point cloud (no resampling happens there either), batched.

    Args:
        model: An ``AffordanceModel``; clouds of another size than its ``num_points`` go
            through ``predict_many`` (resampled, scores mapped back), one cloud at a time.
        split: The split to score.
        embeddings: Query text -> (text_dim,) unit embedding, for every text of the split.
        threshold: Score threshold of the predicted region.
        batch: Clouds encoded per forward pass (bounds memory).
        categories: Category name -> (text_dim,) embedding of its ``category_text``; clouds of
            a category absent from it are scored as of an unknown category, as ``LearnedSource``
            scores a category its checkpoint was not trained on. None: every cloud unknown.
    """
    import torch

    region_mask(np.zeros(1), threshold)  # validates the threshold
    out = np.empty(len(split.query_cloud), dtype=np.float64)
    cat_rows = None
    if categories is not None:
        unknown = np.zeros(model.config.text_dim, dtype=np.float32)
        cat_rows = np.stack([categories.get(c, unknown) for c in split.categories]).astype(np.float32)
        cat_rows = cat_rows[split.category]
    if len(split) and split.points.shape[1] != model.config.num_points:
        # Another cloud size than the model's: resample and map back per cloud, as on the robot.
        from afford_perception.affordance.model import predict_many

        for i in range(len(split)):
            q = np.flatnonzero(split.query_cloud == i)
            texts = [split.texts[t] for t in split.query_text[q]]
            scores = predict_many(model, split.points[i], texts,
                                  embedder=lambda ts: np.stack([embeddings[t] for t in ts]),
                                  category_emb=None if cat_rows is None else cat_rows[i])
            out[q] = [iou(s >= threshold, t) for s, t in zip(scores, split.query_targets(q), strict=True)]
        return out
    queries = torch.from_numpy(np.stack([embeddings[t] for t in split.texts]).astype(np.float32))
    was_training = model.training
    model.eval()
    with torch.no_grad():
        for start in range(0, len(split), batch):
            stop = min(start + batch, len(split))
            cats = None if cat_rows is None else torch.from_numpy(cat_rows[start:stop])
            feats = model.encode(torch.from_numpy(np.ascontiguousarray(split.points[start:stop])), cats)
            q = np.flatnonzero((split.query_cloud >= start) & (split.query_cloud < stop))
            if len(q) == 0:
                continue
            local = torch.from_numpy(split.query_cloud[q] - start)
            text_rows = queries[torch.from_numpy(split.query_text[q])]
            logits = model.match(feats[local], model.query(text_rows, None if cats is None else cats[local]))
            pred = torch.sigmoid(logits).numpy() >= threshold
            targets = split.query_targets(q)
            out[q] = [iou(p, t) for p, t in zip(pred, targets, strict=True)]
    model.train(was_training)
    return out


def part_source_ious(source: GroundingSource, split: AffordanceSplit, threshold: float = 0.5,
                     asked: Sequence[str] | None = None) -> tuple[np.ndarray, int]:
    """IoU of every query of ``split`` for a part-grounding source, and the number of clouds it
    could not ground (``GroundingError``; scored as an empty prediction, which is what the robot
    would act on).

    Args:
        asked: Per query, the affordance the source grounds (default: the one it is labelled
            with); the target is always the labelled one's.
    """
    if asked is not None and len(asked) != len(split.query_cloud):
        raise ValueError(f"{len(asked)} affordances read for {len(split.query_cloud)} queries")
    out = np.empty(len(split.query_cloud), dtype=np.float64)
    failures = 0
    for i in range(len(split)):
        q = np.flatnonzero(split.query_cloud == i)
        if len(q) == 0:
            continue
        name = split.categories[split.category[i]]
        info = category(name)
        cloud = ObjectCloud(points=split.points[i].astype(np.float64), category=name,
                            part_labels=split.part_labels[i].astype(np.int64), part_names=info.parts)
        regions: dict[str, np.ndarray] = {}
        failed = False
        for part in info.parts:
            try:
                regions[part] = region_mask(source.ground(cloud, part), threshold)
            except GroundingError:
                failed = True
                regions[part] = np.zeros(len(cloud), dtype=bool)
        failures += failed
        targets = split.query_targets(q)
        for row, qi in enumerate(q):
            pred = np.zeros(len(cloud), dtype=bool)
            wanted = split.affordances[split.query_affordance[qi]] if asked is None else asked[qi]
            for part in info.parts_with(wanted):
                pred |= regions[part]
            out[qi] = iou(pred, targets[row])
    return out, failures


def chance_ious(split: AffordanceSplit) -> np.ndarray:
    """Expected IoU of every query of ``split`` under a uniform guess among the object's parts
    and "nothing here" (see the module docstring): the chance floor of a table.

    The parts are the category's (``afford_core.ontology``), each the cloud's points labelled so;
    a part out of view is an empty guess, as is "nothing".
    """
    out = np.empty(len(split.query_cloud), dtype=np.float64)
    for i in range(len(split)):
        q = np.flatnonzero(split.query_cloud == i)
        if len(q) == 0:
            continue
        parts = category(split.categories[split.category[i]]).parts
        labels = split.part_labels[i]
        guesses = [labels == k for k in range(len(parts))] + [np.zeros(len(labels), dtype=bool)]
        for row, target in zip(q, split.query_targets(q), strict=True):
            out[row] = float(np.mean([iou(g, target) for g in guesses]))
    return out


def view_kinds(split: AffordanceSplit, views_per_shape: int) -> np.ndarray:
    """Kind of every cloud of ``split``: ``orbit`` (a synthetic single view from anywhere around
    the object), ``scan`` (a complete surface) or ``scene`` (rendered through a task's camera,
    what the spine grounds on), or ``independent`` (a view of an object made by another author);
    ``views_per_shape`` is the data set's config value."""
    if split.name in INDEPENDENT_SPLITS:
        return np.full(len(split), "independent")
    kinds = np.where(split.view < views_per_shape, "orbit", "scene")
    return np.where(split.full, "scan", kinds)


def _offered(split: AffordanceSplit) -> np.ndarray:
    """Per query: whether the object's category offers the affordance asked (not a "nothing
    here" question). Splits mix the two in different shares; this keeps them comparable."""
    cats = np.array(split.categories)[split.category[split.query_cloud]]
    affs = np.array(split.affordances)[split.query_affordance]
    pairs = zip(cats.tolist(), affs.tolist(), strict=True)
    return np.array([bool(category(c).parts_with(a)) for c, a in pairs], dtype=bool)


def _default_embedder(texts: Sequence[str]) -> np.ndarray:
    from afford_perception.text_embedding import embed

    return embed(texts)


def evaluate_sources(
    data_dir: Path | str,
    sources: Sequence[str] = ("learned", "geometric", "oracle"),
    splits: Sequence[str] = HELDOUT_SPLITS,
    weights: Path | str | None = None,
    threshold: float = 0.5,
    embedder: Embedder | None = None,
    tell_category: bool = True,
) -> dict[str, dict[str, dict[str, Any]]]:
    """mIoU of each source on each split of a generated data set.

    Args:
        data_dir: Folder written by ``dataset.generate``.
        sources: Grounding source names; ``learned`` is scored on the query text, the others
            through the parts that offer the queried affordance; ``chance`` (:data:`CHANCE`) is
            the floor, a uniform guess among the object's parts and nothing (:func:`chance_ious`);
            a part source's name + ``_text`` (:data:`READS_TEXT`) grounds the affordance read
            from each query's text (``affordance.reader``) instead of its label.
        splits: Split names (default the three held-out ones).
        weights: Checkpoint for ``learned`` and ``learned_text`` (default: as ``LearnedSource``
            resolves it).
        threshold: Score threshold of every predicted region.
        embedder: ``texts -> (len, 384)`` for the learned model; default the shipped MiniLM.
        tell_category: Tell the learned model each cloud's category, as the part sources are
            told it; False scores it on bare clouds (what it does when nobody named the object).

    Returns:
        ``{split: {source: {"per_affordance": {affordance: mIoU}, "overall": mIoU,
        "queries": int, "failures": int, "seconds": float, "by_view": {kind: overall},
        "by_phrase": {text: mean IoU}}}}``; ``failures`` counts clouds a part source refused
        (always 0 for ``learned``); ``by_view`` is the overall mIoU on each kind of cloud
        (:func:`view_kinds`); ``by_category`` the overall mIoU on each category's clouds;
        ``by_phrase`` the mean IoU of the queries asked with each wording; ``offered`` the
        summary over the queries of an affordance the object offers (no "nothing here" ones);
        a ``_text`` source adds ``reading``: the share of queries whose text was read as the
        affordance they are labelled with, the number of distinct texts and of tied votes.
    """
    unknown = [s for s in splits if s not in (*SPLITS, *INDEPENDENT_SPLITS)]
    if unknown:
        raise KeyError(f"unknown split {unknown[0]!r}; known: {', '.join((*SPLITS, *INDEPENDENT_SPLITS))}")
    if not sources:
        raise ValueError("no sources to evaluate")
    if not (Path(data_dir) / MANIFEST).is_file():
        raise FileNotFoundError(f"no affordance data set in {data_dir} (no {MANIFEST}): generate it with "
                                "`afford affordance data`")
    missing = [s for s in splits if s not in load_manifest(data_dir)["splits"]]
    if missing:
        hint = ("`afford affordance independent --data DIR`" if missing[0] in INDEPENDENT_SPLITS
                else "`afford affordance data`")
        raise FileNotFoundError(f"{data_dir} has no {missing[0]} split: write it with {hint}")
    loaded = {name: load(Path(data_dir) / f"{name}.npz") for name in splits}
    views_per_shape = int(load_manifest(data_dir)["config"]["views_per_shape"])
    built: dict[str, Any] = {}
    for name in dict.fromkeys(sources):
        if name == "learned":
            from afford_perception.affordance.source import LearnedSource

            built[name] = LearnedSource(weights=weights, embedder=embedder)
        elif name == CHANCE:
            built[name] = None
        elif name.endswith(READS_TEXT):
            from afford_perception.affordance.reader import AffordanceReader

            base = name.removesuffix(READS_TEXT)
            if base == "learned":  # as a part source (the spine's use), with this run's weights
                from afford_perception.affordance.source import LearnedSource

                parts: GroundingSource = LearnedSource(weights=weights, embedder=embedder)
            else:
                parts = make_source(base)
            built[name] = (parts, AffordanceReader(embedder))
        else:
            built[name] = make_source(name)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    for split_name, split in loaded.items():
        affs = [split.affordances[a] for a in split.query_affordance]
        kind_of_query = view_kinds(split, views_per_shape)[split.query_cloud]
        results[split_name] = {}
        for name, source in built.items():
            t0 = time.perf_counter()
            reading: dict[str, Any] = {}
            if name == "learned":
                emb = source.embeddings(split.texts)
                cats = source.category_embeddings(split.categories) if tell_category else None
                ious, failures = learned_ious(source.model, split, emb, threshold, categories=cats), 0
            elif name == CHANCE:
                ious, failures = chance_ious(split), 0
            elif name.endswith(READS_TEXT):
                part_source, reader = source
                read = dict(zip(split.texts, reader.read(split.texts), strict=True))
                asked = [read[split.texts[t]] for t in split.query_text]
                ious, failures = part_source_ious(part_source, split, threshold, asked=asked)
                labelled = [split.affordances[a] for a in split.query_affordance]
                reading = {"queries_read_right": float(np.mean([a == b for a, b in zip(asked, labelled,
                                                                                        strict=True)])),
                           "texts": len(split.texts), "ties": reader.ties}
            else:
                ious, failures = part_source_ious(source, split, threshold)
            by_view = {str(k): summarize([a for a, m in zip(affs, kind_of_query == k, strict=True) if m],
                                         ious[kind_of_query == k])["overall"]
                       for k in sorted(set(kind_of_query.tolist()))}
            cat_of_query = np.array(split.categories)[split.category[split.query_cloud]]
            by_category = {str(c): summarize([a for a, m in zip(affs, cat_of_query == c, strict=True) if m],
                                             ious[cat_of_query == c])["overall"]
                           for c in sorted(set(cat_of_query.tolist()))}
            texts = np.array(split.texts)[split.query_text]
            by_phrase = {str(t): float(ious[texts == t].mean()) for t in sorted(set(texts.tolist()))}
            offered = _offered(split)
            on_offered = summarize([a for a, m in zip(affs, offered, strict=True) if m], ious[offered])
            results[split_name][name] = {**summarize(affs, ious), "failures": failures,
                                         "seconds": time.perf_counter() - t0, "by_view": by_view,
                                         "by_category": by_category, "by_phrase": by_phrase,
                                         "offered": on_offered, **({"reading": reading} if reading else {})}
    return results
