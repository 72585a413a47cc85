"""Training of the affordance model on a generated data set, on CPUs, with a step or time budget.

One step draws ``batch_clouds`` training clouds, encodes each once, and matches it against all
of its stored queries (positive phrasings and "nothing here" negatives), so a cloud's encoding,
the expensive part, is shared by several losses. ``model.encode`` then ``model.match`` is
``model.logits`` split in two for that reason.

Class balance: the data set has many more grasp and contain queries than ``pull`` (only
furniture offers it, on a handle a few percent of the cloud). Clouds are drawn with probability
proportional to the rarest affordance among their positive queries' inverse frequency, and the
loss is ``affordance_loss`` averaged per affordance first, then over affordances, so each
affordance weighs the same in every step whatever its count. Dice inside ``affordance_loss``
keeps a tiny target from being drowned by its many negative points.

Each training cloud is changed afresh at every step (``affordance.augment``): bent, tapered,
twisted, warped, one part rescaled, turned and scaled, and seen through a depth camera's faults
(noise, flying pixels, an occluder, holes), its labels following its points; so the model meets
shapes and sensors the generator never made.

Each cloud is encoded with its category (``vocabulary.category_text``) on most steps and as of
an unknown category on a ``category_dropout`` share, drawn per cloud, so the model also answers
a bare cloud whose category nobody told it.

Every ``val_every`` steps the model is scored on ``val_unseen_shapes`` (mIoU, threshold 0.5, as
the benchmark scores it), and the best model so far is written with its provenance (the exact
command, the data manifest's SHA-256, steps, validation mIoU) atomically: a temporary file in
the same folder, then ``os.replace``, so an interrupted run never leaves half a checkpoint.
Choosing the checkpoint on ``val_unseen_shapes`` makes that split's benchmark score slightly
optimistic; ``test_unseen_categories`` is never looked at during training.
"""

from __future__ import annotations

import math
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from afford_perception.affordance.augment import AugmentConfig, augment_clouds
from afford_perception.affordance.dataset import MANIFEST, AffordanceSplit, load, sha256
from afford_perception.affordance.evaluate import learned_ious, summarize
from afford_perception.affordance.model import (
    AffordanceModel,
    AffordanceModelConfig,
    affordance_loss,
    load_checkpoint,
    load_model,
    save_model,
)
from afford_perception.affordance.vocabulary import category_text, training_pool

Embedder = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class TrainConfig:
    """One training run. Stops at ``steps`` or after ``minutes``, whichever comes first.

    A steps-only run is reproducible from ``seed``; a time budget makes the step count (and the
    learning-rate schedule) depend on the machine's speed.

    Attributes:
        data_dir: Folder written by ``dataset.generate`` (needs ``train`` and
            ``val_unseen_shapes``).
        out: Checkpoint path; the best model by validation mIoU is written here.
        steps: Most optimisation steps, or None for no step limit.
        minutes: Wall-clock budget in minutes, or None for no time limit. At least one of
            ``steps`` and ``minutes`` must be set.
        batch_clouds: Clouds per step; each brings all of its queries.
        lr: Peak AdamW learning rate, decayed by a cosine to 5 % of it over the budget (the
            share of steps or of time used, whichever is larger), so a ``--minutes`` run also
            ends on small steps.
        weight_decay: AdamW weight decay.
        seed: Seeds torch, the cloud draws and the augmentation.
        threads: Torch intra-op threads; None keeps torch's default (all cores).
        log_every: Steps between progress lines (mean loss since the last line).
        val_every: Steps between validations (and checkpoint updates); the last step is
            always validated.
        val_clouds: Validate on this many clouds of ``val_unseen_shapes``, spread evenly over it
            (the same ones every time), or on all of it when None: scoring the whole split costs
            minutes on two cores once it covers every category.
        augment: Change every training cloud afresh at each step as ``augmentation`` draws.
        augmentation: Shape changes (taper, twist, bend, warp, one part rescaled), yaw and scale,
            and depth-camera faults (noise, flying pixels, occlusion, holes), labels following
            the points (``affordance.augment``); ``augment.YAW_AND_SCALE`` is what the first
            models were trained with.
        resample_phrasings: Ask each query with a wording drawn afresh, every step, from its
            affordance's training pool (``vocabulary.training_pool``: the seen phrasings and
            the training-only ones) instead of the phrase the data set stored. The data set
            keeps two wordings per affordance and cloud; this shows the model all of them, and
            lets the vocabulary grow without regenerating data. Held-out phrasings are never in
            the pool.
        category_dropout: Share of clouds, drawn per cloud and step, encoded as of an unknown
            category (a zero category row) instead of their own; 0 trains a model that always
            needs the category, 1 one that never uses it. Ignored when the model has no
            category input (``model.category_dim == 0``).
        model: Architecture. Its ``num_points`` must equal the data set's points per cloud.
        command: The command line that started the run, stored in the checkpoint.
        init: Start from this checkpoint's weights instead of random ones (its architecture must
            be ``model``): a model trained on some categories, taught more. The optimiser and
            the schedule start afresh; the checkpoint written records where it started.
    """

    data_dir: Path
    out: Path
    steps: int | None = 4000
    minutes: float | None = None
    batch_clouds: int = 8
    lr: float = 2e-3
    weight_decay: float = 1e-4
    seed: int = 0
    threads: int | None = None
    log_every: int = 50
    val_every: int = 250
    val_clouds: int | None = 512
    augment: bool = True
    augmentation: AugmentConfig = field(default_factory=AugmentConfig)
    resample_phrasings: bool = True
    category_dropout: float = 0.2
    model: AffordanceModelConfig = field(default_factory=AffordanceModelConfig)
    command: str = ""
    init: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "data_dir", Path(self.data_dir))
        object.__setattr__(self, "out", Path(self.out))
        if self.init is not None:
            object.__setattr__(self, "init", Path(self.init))
        if self.steps is None and self.minutes is None:
            raise ValueError("set steps, minutes or both: training needs a budget")
        if self.steps is not None and self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")
        if self.minutes is not None and not self.minutes > 0:
            raise ValueError(f"minutes must be positive, got {self.minutes}")
        for name in ("batch_clouds", "log_every", "val_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.val_clouds is not None and self.val_clouds < 1:
            raise ValueError(f"val_clouds must be >= 1 or None, got {self.val_clouds}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")
        if not 0.0 <= self.category_dropout <= 1.0:
            raise ValueError(f"category_dropout must be in [0, 1], got {self.category_dropout}")
        if not self.lr > 0 or self.weight_decay < 0:
            raise ValueError(f"need lr > 0 and weight_decay >= 0, got {self.lr}, {self.weight_decay}")


@dataclass(frozen=True)
class TrainReport:
    """What a training run did.

    Attributes:
        out: Checkpoint written (the best validation mIoU).
        steps: Steps run.
        best_step: Step of the checkpointed model.
        best_val_miou: Its mIoU on ``val_unseen_shapes``.
        losses: Mean training loss per logging interval, as (step, loss).
        validations: (step, val mIoU) of every validation.
        seconds: Wall time of the run.
    """

    out: Path
    steps: int
    best_step: int
    best_val_miou: float
    losses: list[tuple[int, float]]
    validations: list[tuple[int, float]]
    seconds: float


def _default_embedder(texts: Sequence[str]) -> np.ndarray:
    from afford_perception.text_embedding import embed

    return embed(texts)


def cloud_weights(split: AffordanceSplit) -> np.ndarray:
    """Draw probability of each cloud: its rarest positive affordance's inverse query frequency.

    A cabinet view is then drawn about as often as all mug views together, so ``pull`` gets as
    many updates as ``grasp_handle``. Clouds without positive queries keep the weight of the
    commonest affordance.
    """
    positive = split.query_targets(np.arange(len(split.query_cloud))).any(axis=1)
    counts = np.bincount(split.query_affordance[positive].astype(np.int64), minlength=len(split.affordances))
    inv = np.where(counts > 0, 1.0 / np.maximum(counts, 1), 0.0)
    floor = inv[counts > 0].min() if (counts > 0).any() else 1.0
    weights = np.full(len(split), floor)
    for q in np.flatnonzero(positive):
        c = split.query_cloud[q]
        weights[c] = max(weights[c], inv[split.query_affordance[q]])
    return weights / weights.sum()


class _Wordings:
    """The training pool of every affordance of a split, flattened, for per-step draws."""

    def __init__(self, split: AffordanceSplit) -> None:
        pool = training_pool()
        stored = {split.texts[t] for t in np.unique(split.query_text)}
        known = {p for phrases in pool.values() for p in phrases}
        if not stored <= known:
            raise ValueError(f"the data set asks wordings outside the training pool (a different "
                             f"vocabulary?): {sorted(stored - known)[:5]}")
        self.texts: list[str] = []
        self.offsets = np.zeros(len(split.affordances), dtype=np.int64)
        self.counts = np.zeros(len(split.affordances), dtype=np.int64)
        for i, aff in enumerate(split.affordances):
            self.offsets[i], self.counts[i] = len(self.texts), len(pool[aff])
            self.texts += pool[aff]

    def draw(self, affordances: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One random wording (an index into ``texts``) per query affordance."""
        a = np.asarray(affordances, dtype=np.int64)
        return self.offsets[a] + (rng.random(len(a)) * self.counts[a]).astype(np.int64)


def _budget_fraction(config: TrainConfig, step: int, seconds: float) -> float:
    """Share of the budget used: of the steps or of the time, whichever runs out first."""
    used = 0.0
    if config.steps is not None:
        used = max(used, step / config.steps)
    if config.minutes is not None:
        used = max(used, seconds / (60.0 * config.minutes))
    return min(used, 1.0)


def _lr_factor(fraction: float) -> float:
    """Cosine decay from 1 to 0.05 over the budget: big steps early, fine ones at the end."""
    return 0.05 + 0.95 * 0.5 * (1.0 + math.cos(math.pi * fraction))


def balanced_loss(logits: torch.Tensor, targets: torch.Tensor, affordances: torch.Tensor,
                  dice_weight: float) -> torch.Tensor:
    """``affordance_loss`` per affordance present, averaged over affordances (equal weight each)."""
    losses = [affordance_loss(logits[affordances == a], targets[affordances == a], dice_weight)
              for a in torch.unique(affordances)]
    return torch.stack(losses).mean()


def _save_atomic(model: AffordanceModel, path: Path, meta: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        save_model(model, tmp, meta=meta)
        # mkstemp makes the file private (0600); a checkpoint is shared like any other file.
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def train(config: TrainConfig, progress: bool = True, embedder: Embedder | None = None,
          log: Callable[[str], None] = print) -> TrainReport:
    """Train a model as ``config`` says and write the best one to ``config.out``.

    Args:
        config: The run.
        progress: Print a line every ``log_every`` steps and at each validation.
        embedder: ``texts -> (len, text_dim)`` unit rows; default the shipped MiniLM (every
            phrase of the data set is embedded once, before the first step).
        log: Where progress lines go.

    Raises:
        FileNotFoundError: the data set or its manifest is missing.
        ValueError: the data set's points per cloud differ from ``config.model.num_points``.
    """
    t0 = time.perf_counter()
    manifest = config.data_dir / MANIFEST
    if not manifest.is_file():
        raise FileNotFoundError(f"no {MANIFEST} in {config.data_dir}: run `afford affordance data` first")
    train_split = load(config.data_dir / "train.npz")
    val_split = load(config.data_dir / "val_unseen_shapes.npz")
    if config.val_clouds is not None and config.val_clouds < len(val_split):
        spread = np.linspace(0, len(val_split) - 1, config.val_clouds).round().astype(int)
        val_split = val_split.subset(spread)
    if train_split.points.shape[1] != config.model.num_points:
        raise ValueError(f"the data set has {train_split.points.shape[1]} points per cloud, the model config "
                         f"{config.model.num_points}; set AffordanceModelConfig.num_points to match")
    if len(train_split.query_cloud) == 0 or len(val_split.query_cloud) == 0:
        raise ValueError(f"{config.data_dir}: the train or val_unseen_shapes split has no queries")
    if config.threads is not None:
        torch.set_num_threads(config.threads)
    torch.manual_seed(config.seed)
    rng = np.random.default_rng(config.seed)

    wordings = _Wordings(train_split) if config.resample_phrasings else None
    texts = sorted(set(train_split.texts) | set(val_split.texts) | set(wordings.texts if wordings else ())
                   | {category_text(c) for c in (*train_split.categories, *val_split.categories)})
    rows = np.asarray((embedder or _default_embedder)(texts), dtype=np.float32)
    embeddings = dict(zip(texts, rows, strict=True))
    uses_category = config.model.category_dim > 0
    category_emb = torch.from_numpy(np.stack([embeddings[category_text(c)] for c in train_split.categories]))
    val_categories = ({c: embeddings[category_text(c)] for c in val_split.categories}
                      if uses_category else None)
    train_emb = torch.from_numpy(np.stack([embeddings[t] for t in train_split.texts]))
    pool_emb = torch.from_numpy(np.stack([embeddings[t] for t in wordings.texts])) if wordings else None
    weights = cloud_weights(train_split)
    bounds = np.searchsorted(train_split.query_cloud, np.arange(len(train_split) + 1))
    val_affs = [val_split.affordances[a] for a in val_split.query_affordance]

    model = AffordanceModel(config.model)
    started_from: dict[str, Any] = {}
    if config.init is not None:
        # load_model checks the architecture field by field and that every weight fits it.
        model.load_state_dict(load_model(config.init, expected=config.model).state_dict())
        init_meta = load_checkpoint(config.init).get("meta", {})
        started_from = {"init": {"path": str(config.init), "sha256": sha256(config.init),
                                 "command": init_meta.get("command", ""),
                                 "categories": init_meta.get("categories", [])}}
    optimizer = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    meta_base = {"command": config.command, "data_manifest_sha": sha256(manifest),
                 # The categories whose names the model learned to read; LearnedSource tells it
                 # no other (an unseen name's embedding lands where training never shaped it).
                 "categories": list(train_split.categories) if uses_category else [],
                 "train": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(config).items()
                           if k not in ("model", "command")}, **started_from}

    losses: list[tuple[int, float]] = []
    validations: list[tuple[int, float]] = []
    best = (-1.0, 0)
    window: list[float] = []
    step = 0
    deadline = None if config.minutes is None else t0 + 60.0 * config.minutes
    model.train()
    while True:
        step += 1
        clouds = rng.choice(len(train_split), size=config.batch_clouds, replace=True, p=weights)
        q = np.concatenate([np.arange(bounds[c], bounds[c + 1]) for c in clouds])
        owner = np.repeat(np.arange(len(clouds)), bounds[clouds + 1] - bounds[clouds])
        points = train_split.points[clouds]
        index = None
        if config.augment:
            points, index = augment_clouds(points, train_split.part_labels[clouds], rng, config.augmentation)
        cats = None
        if uses_category:
            cats = category_emb[torch.from_numpy(train_split.category[clouds].astype(np.int64))]
            cats = cats * torch.from_numpy(rng.random(len(clouds)) >= config.category_dropout).unsqueeze(1)
        feats = model.encode(torch.from_numpy(np.ascontiguousarray(points, dtype=np.float32)), cats)
        if wordings is not None and pool_emb is not None:
            text_rows = pool_emb[torch.from_numpy(wordings.draw(train_split.query_affordance[q], rng))]
        else:
            text_rows = train_emb[torch.from_numpy(train_split.query_text[q])]
        owner_t = torch.from_numpy(owner)
        logits = model.match(feats[owner_t], model.query(text_rows, None if cats is None else cats[owner_t]))
        targets_np = train_split.query_targets(q)
        if index is not None:  # the labels follow the points the augmentation kept or repeated
            targets_np = np.take_along_axis(targets_np, index[owner], axis=1)
        targets = torch.from_numpy(targets_np)
        affordances = torch.from_numpy(train_split.query_affordance[q].astype(np.int64))
        loss = balanced_loss(logits, targets, affordances, config.model.dice_weight)
        for group in optimizer.param_groups:
            group["lr"] = config.lr * _lr_factor(_budget_fraction(config, step - 1, time.perf_counter() - t0))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        window.append(loss.item())

        out_of_time = deadline is not None and time.perf_counter() >= deadline
        last = out_of_time or (config.steps is not None and step >= config.steps)
        if step % config.log_every == 0 or last:
            losses.append((step, float(np.mean(window))))
            window = []
            if progress:
                log(f"step {step}: loss {losses[-1][1]:.4f} ({time.perf_counter() - t0:.0f} s)")
        if step % config.val_every == 0 or last:
            miou = summarize(val_affs, learned_ious(model, val_split, embeddings, categories=val_categories))[
                "overall"]
            validations.append((step, miou))
            if miou > best[0]:
                best = (miou, step)
                _save_atomic(model, config.out, {**meta_base, "steps": step, "val_miou": miou,
                                                 "seconds": time.perf_counter() - t0})
            if progress:
                log(f"step {step}: val_unseen_shapes mIoU {miou:.3f} (best {best[0]:.3f} at step {best[1]})")
        if last:
            break
    return TrainReport(out=config.out, steps=step, best_step=best[1], best_val_miou=best[0], losses=losses,
                       validations=validations, seconds=time.perf_counter() - t0)
