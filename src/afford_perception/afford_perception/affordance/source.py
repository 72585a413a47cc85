"""The ``learned`` grounding source: the trained affordance model behind the grounding interface.

The model answers phrases ("where you hold it"), and a phrase names an affordance, whose region
may span several parts (a pot's handle and its lid knob are both grasped by hand). The grounding
interface asks for one part, so a part is decoded from affordance regions with set algebra over
the ontology: the part is where every affordance it offers fires, and no affordance that only
other parts of the category offer does (soft AND / AND NOT: ``min`` of the former times one
minus the ``max`` of the latter). A mug's handle is then "grasp_handle and hang, not grasp_body,
contain, pour_in or pour_out". Parts that offer exactly the same affordances (a cabinet's drawer
and door handles) cannot be told apart this way: both get their common region.

The model is told the cloud's category (``ObjectCloud.category``, which the task named), as the
geometric source is, when it was trained on that category (the checkpoint lists them). Any other
category, and a bare (N, 3) array given to :meth:`LearnedSource.query` without one, is scored
as of an unknown category: told "scoop", a category it never saw, the model read the name as
one without a handle and found none, while asked blind it finds the scoop's handle.

Each affordance is asked with the phrase that is the part's own name when the vocabulary has it
("the handle", "the spout"), otherwise with the affordance's first seen phrasing.

Weights come from, in order: the ``weights=`` argument, the ``AFFORD_AFFORDANCE_WEIGHTS``
environment variable, the shipped file ``affordance/weights/affordance.pt``. Nothing is ever
downloaded; with none of the three, construction fails naming the options.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from afford_core.ontology import AFFORDANCES, category
from afford_core.types import ObjectCloud
from afford_perception.affordance.anchoring import AnchorConfig, AnchoredEmbedder
from afford_perception.affordance.model import (
    AffordanceModel,
    load_checkpoint,
    model_from_checkpoint,
    predict,
    predict_many,
)
from afford_perception.affordance.vocabulary import category_text, split_phrasings
from afford_perception.grounding.base import GroundingSource, register_source

_LOG = logging.getLogger(__name__)

#: Environment variable naming a checkpoint; overrides the shipped default.
WEIGHTS_ENV = "AFFORD_AFFORDANCE_WEIGHTS"
#: Where shipped weights live (absent in a checkout without trained weights).
DEFAULT_WEIGHTS = Path(__file__).resolve().parent / "weights" / "affordance.pt"

Embedder = Callable[[Sequence[str]], np.ndarray]
_DEFAULT_ANCHOR = object()


class WeightsNotFound(FileNotFoundError):
    """No affordance checkpoint was given, configured or shipped."""


def resolve_weights(weights: Path | str | None = None) -> Path:
    """The checkpoint the learned source loads: ``weights``, else ``$AFFORD_AFFORDANCE_WEIGHTS``,
    else the shipped default; a clear error when the chosen file does not exist."""
    if weights is not None:
        path, origin = Path(weights), "weights argument (CLI: --weights)"
    elif os.environ.get(WEIGHTS_ENV):
        path, origin = Path(os.environ[WEIGHTS_ENV]), f"${WEIGHTS_ENV}"
    else:
        if not DEFAULT_WEIGHTS.is_file():
            raise WeightsNotFound(
                "no affordance model weights: pass weights=PATH (--weights PATH on `afford affordance "
                f"eval` and `afford show`) or set {WEIGHTS_ENV}=PATH; nothing is shipped at "
                f"{DEFAULT_WEIGHTS} "
                "(train one with `afford affordance train`)"
            )
        return DEFAULT_WEIGHTS
    if not path.is_file():
        raise WeightsNotFound(
            f"no affordance model weights at {path} (from the {origin}); pass weights=PATH (--weights "
            f"PATH on `afford affordance eval` and `afford show`) or set {WEIGHTS_ENV}=PATH to an "
            "existing checkpoint"
        )
    return path


def _default_embedder(texts: Sequence[str]) -> np.ndarray:
    from afford_perception.text_embedding import embed

    return embed(texts)


def affordance_phrase(part: str, affordance: str) -> str:
    """The phrase asking for ``affordance`` when the part ``part`` is meant: the part's own
    name ("the spout") if it is a seen phrasing of that affordance, else the affordance's first
    seen phrasing. Held-out phrasings are never asked: the model was not trained on them, and
    one that reads like another affordance ("the drawer handle" lies nearer "the handle", a
    grasp, than any pull phrasing) would ground the wrong region."""
    own = f"the {part.replace('_', ' ')}"
    seen = split_phrasings().seen[affordance]
    return own if own in seen else seen[0]


@register_source("learned")
class LearnedSource(GroundingSource):
    """Part scores from the learned open-vocabulary affordance model.

    Args:
        weights: Checkpoint path; default ``$AFFORD_AFFORDANCE_WEIGHTS`` or the shipped file.
        embedder: ``texts -> (len(texts), 384)`` unit rows; default the shipped MiniLM. Tests
            pass a stub so they need not load it.
        anchor: Query anchoring to the training phrasings (:mod:`.anchoring`); by default on
            with the MiniLM embedder and off with a custom one. None turns it off.

    Raises:
        WeightsNotFound: no checkpoint (the message names ``weights=`` and the variable).
        CheckpointMismatch: the file is not a checkpoint this code can load.
    """

    # Alike parts (a chest's drawer handles) share their affordances, from which the model
    # decodes a part: it scores them alike, and the base class picks by height.
    tells_stacked_apart = False

    def __init__(
        self,
        weights: Path | str | None = None,
        embedder: Embedder | None = None,
        anchor: AnchorConfig | None | object = _DEFAULT_ANCHOR,
    ) -> None:
        self.weights = resolve_weights(weights)
        checkpoint = load_checkpoint(self.weights)
        self.model: AffordanceModel = model_from_checkpoint(checkpoint, self.weights)
        #: Categories the model is told by name; any other is scored as unknown.
        self.categories: frozenset[str] = frozenset(checkpoint["meta"].get("categories", ()))
        if anchor is _DEFAULT_ANCHOR:
            anchor = AnchorConfig() if embedder is None else None
        base = embedder or _default_embedder
        # Category names go through the plain embedder: anchoring would pull "mug" towards
        # whichever training phrasing it resembles, and a category is not a query.
        self._base: Embedder = base
        self._category_rows: dict[str, np.ndarray] = {}
        self._blind: set[str] = set()
        self._whole: set[str] = set()
        self._embedder: Embedder = base
        if isinstance(anchor, AnchorConfig):
            self._embedder = AnchoredEmbedder(base, anchor)

    def embeddings(self, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """Text -> unit embedding for each of ``texts`` (one embedder call)."""
        unique = list(dict.fromkeys(texts))
        rows = np.asarray(self._embedder(unique), dtype=np.float32) if unique else np.zeros((0, 0))
        return dict(zip(unique, rows, strict=True))

    def category_embeddings(self, names: Sequence[str]) -> dict[str, np.ndarray]:
        """Category name -> unit embedding of its ``category_text`` (cached; not anchored), for
        those of ``names`` the model was trained on; the others are left out (unknown)."""
        known = [n for n in dict.fromkeys(names) if n in self.categories]
        missing = [n for n in known if n not in self._category_rows]
        if missing:
            rows = np.asarray(self._base([category_text(n) for n in missing]), dtype=np.float32)
            self._category_rows.update(zip(missing, rows, strict=True))
        return {n: self._category_rows[n] for n in known}

    def _category_row(self, name: str | None) -> np.ndarray | None:
        if name is None:
            return None
        row = self.category_embeddings([name]).get(name)
        if row is None and name not in self._blind:
            # Said once per category: blind scores are far weaker (README), and a misspelt or
            # new category name would otherwise cost accuracy without a trace.
            self._blind.add(name)
            _LOG.warning("the affordance model was not trained on %r; scoring it as of an unknown "
                         "category (trained: %s)", name, ", ".join(sorted(self.categories)) or "none")
        return row

    def query(self, cloud: ObjectCloud | np.ndarray, text: str, category: str | None = None) -> np.ndarray:
        """(N,) scores in [0, 1] of a free-text query on a cloud (an ``ObjectCloud`` or (N, 3)).

        The object's category is ``category`` if given, else the ``ObjectCloud``'s; a bare
        array without ``category``, or a category the model was not trained on, is scored as
        of an unknown category."""
        points = cloud.points if isinstance(cloud, ObjectCloud) else cloud
        if category is None and isinstance(cloud, ObjectCloud):
            category = cloud.category
        return predict(self.model, np.asarray(points), text, embedder=self._embedder,
                       category_emb=self._category_row(category))

    def _ground(self, cloud: ObjectCloud, part: str) -> np.ndarray:
        info = category(cloud.category)
        if len(info.parts) == 1 and cloud.category not in self.categories:
            # An object of one part is that part everywhere; the model, never shown this
            # category, would only guess at a subset (a cracker box's hidden back went missing).
            # Not the model's answer: said once per category.
            if cloud.category not in self._whole:
                self._whole.add(cloud.category)
                _LOG.info("a %s has one part (%s): taken whole, the model is not asked", cloud.category, part)
            return np.ones(len(cloud))
        own = info.affordances.get(part, ())
        if not own:
            # No affordance to decode the part from: ask for it by name.
            return self.query(cloud, f"the {part.replace('_', ' ')}")
        others = [a for a in AFFORDANCES if a not in own
                  and any(a in info.affordances.get(p, ()) for p in info.parts if p != part)]
        texts = [affordance_phrase(part, a) for a in (*own, *others)]
        scores = predict_many(self.model, cloud.points, texts, embedder=self._embedder,
                              category_emb=self._category_row(cloud.category))
        region = scores[: len(own)].min(axis=0)
        if others:
            region = region * (1.0 - scores[len(own):].max(axis=0))
        return region
