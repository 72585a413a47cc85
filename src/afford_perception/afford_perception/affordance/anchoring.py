"""Query anchoring: pull a free-text query's embedding towards the phrasings the model knows.

The model learned to match point features against MiniLM embeddings of its training
phrasings. A new wording ("the bit you grab") lands somewhere else in MiniLM's space, often
near the right phrasings but not on them, and the matcher was never shaped there. Anchoring
replaces a query's embedding by a similarity-weighted mean of its nearest training phrasings
(softmax over cosine similarity, temperature ``temperature``, the ``k`` nearest), blended with
the original by ``keep``. A training phrasing is its own nearest neighbour (similarity 1) and so
comes back almost unchanged; an unseen one is read as the known wordings it resembles.

Only training wordings (the seen phrasings and ``vocabulary.TRAINING_ONLY``) are anchors: the
held-out phrasings never enter, so the unseen-phrasing benchmark stays held out. The settings
below were fixed before that split was scored and are not tuned on it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from afford_perception.affordance.vocabulary import training_pool

Embedder = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class AnchorConfig:
    """How queries are anchored.

    Attributes:
        k: Nearest training phrasings averaged.
        temperature: Softmax temperature over their cosine similarities; small values favour
            the nearest.
        keep: Weight of the query's own embedding in the blend (0: anchors only).
    """

    k: int = 5
    temperature: float = 0.05
    keep: float = 0.0

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be positive, got {self.temperature}")
        if not 0.0 <= self.keep < 1.0:
            raise ValueError(f"keep must be in [0, 1), got {self.keep}")


def training_phrasings() -> list[str]:
    """Every wording training uses (seen and training-only phrasings), the anchors."""
    pool = training_pool()
    return sorted({p for phrasings in pool.values() for p in phrasings})


class AnchoredEmbedder:
    """An embedder whose outputs are anchored to ``anchors`` (default: the training phrasings).

    Calls ``base`` once for the anchors, lazily, and once per call for the queries.
    """

    def __init__(self, base: Embedder, config: AnchorConfig | None = None,
                 anchors: Sequence[str] | None = None) -> None:
        self.base = base
        self.config = config or AnchorConfig()
        self.anchors = list(anchors) if anchors is not None else training_phrasings()
        if not self.anchors:
            raise ValueError("no anchor phrasings")
        self._anchor_emb: np.ndarray | None = None

    def _anchor_matrix(self) -> np.ndarray:
        if self._anchor_emb is None:
            self._anchor_emb = unit(np.asarray(self.base(self.anchors), dtype=np.float64))
        return self._anchor_emb

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        query = unit(np.asarray(self.base(list(texts)), dtype=np.float64))
        if len(query) == 0:
            return query.astype(np.float32)
        anchors = self._anchor_matrix()
        top, w = nearest_weights(query, anchors, self.config)
        mixed = np.einsum("qk,qkd->qd", w, anchors[top])
        out = self.config.keep * query + (1.0 - self.config.keep) * mixed
        return unit(out).astype(np.float32)


def nearest_weights(query: np.ndarray, anchors: np.ndarray,
                    config: AnchorConfig) -> tuple[np.ndarray, np.ndarray]:
    """Each query's ``config.k`` nearest anchors by cosine similarity (rows are unit vectors) and
    their softmax weights at ``config.temperature``: (Q, k) anchor indices, (Q, k) weights
    summing to 1 per row."""
    sims = query @ anchors.T
    k = min(config.k, len(anchors))
    top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
    top_sims = np.take_along_axis(sims, top, axis=1)
    w = np.exp((top_sims - top_sims.max(axis=1, keepdims=True)) / config.temperature)
    return top, w / w.sum(axis=1, keepdims=True)


def unit(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero)."""
    return x / np.maximum(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12)
