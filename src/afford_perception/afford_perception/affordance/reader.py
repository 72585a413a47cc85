"""Read which affordance a free-text query asks for: the nearest training wordings vote.

The part sources (``geometric``, ``oracle``) ground parts, not words: the benchmark hands them
the affordance each query names, which a robot reading "the loop for a cup hook" would first have
to work out. This reader does that work with what the learned model already has, MiniLM and the
training wordings (``vocabulary.training_pool``): a query's ``k`` nearest training wordings by
cosine similarity vote for their affordances, weighted by a softmax over their similarities
(temperature ``temperature``), and the heaviest affordance wins. With it a part source answers a
free-text query like for like: ``geometric`` reading the text is the score a robot grounding
parts by rule would get from the words alone.

The reader is told nothing but the text (not the object), so a query for something the object
lacks is read as that affordance and grounded as nothing there. Its settings are
:class:`~afford_perception.affordance.anchoring.AnchorConfig`'s defaults, fixed for anchoring
before any held-out split was scored; they are not tuned on the splits it is scored on. Only
training wordings vote, so held-out phrasings stay held out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from afford_perception.affordance.anchoring import AnchorConfig, Embedder, nearest_weights, unit
from afford_perception.affordance.vocabulary import training_pool


class AffordanceReader:
    """Maps query texts to affordance names by a vote of their nearest training wordings.

    Args:
        embedder: ``texts -> (len(texts), dim)`` embeddings (the shipped MiniLM by default).
        config: ``k`` nearest wordings and the softmax ``temperature`` (``keep`` is unused).
        pool: Affordance -> its wordings (default: every training wording).
    """

    def __init__(self, embedder: Embedder | None = None, config: AnchorConfig | None = None,
                 pool: dict[str, Sequence[str]] | None = None) -> None:
        if embedder is None:
            from afford_perception.text_embedding import embed

            embedder = embed
        self.embedder: Embedder = embedder
        self.config = config or AnchorConfig()
        wordings_of: dict[str, Sequence[str]] = dict(training_pool() if pool is None else pool)
        owner: dict[str, str] = {}
        for aff, wordings in wordings_of.items():
            for w in wordings:
                if owner.setdefault(w, aff) != aff:
                    raise ValueError(f"wording {w!r} names both {owner[w]} and {aff}")
        if not owner:
            raise ValueError("no wordings to read queries by")
        self.wordings = list(owner)
        self.affordances = sorted(set(owner.values()))
        self._owner = np.array([self.affordances.index(owner[w]) for w in self.wordings])
        self._emb: np.ndarray | None = None
        #: Texts whose vote was an exact tie in the last :meth:`read`.
        self.ties = 0

    def _wording_matrix(self) -> np.ndarray:
        if self._emb is None:
            self._emb = unit(np.asarray(self.embedder(self.wordings), dtype=np.float64))
        return self._emb

    def votes(self, texts: Sequence[str]) -> np.ndarray:
        """(len(texts), len(self.affordances)) vote shares, each row summing to 1."""
        if not texts:
            return np.zeros((0, len(self.affordances)))
        query = unit(np.asarray(self.embedder(list(texts)), dtype=np.float64))
        top, w = nearest_weights(query, self._wording_matrix(), self.config)
        out = np.zeros((len(texts), len(self.affordances)))
        np.add.at(out, (np.repeat(np.arange(len(texts)), top.shape[1]), self._owner[top].ravel()), w.ravel())
        return out

    def read(self, texts: Sequence[str], seed: int = 0) -> list[str]:
        """The affordance each text asks for: the heaviest vote. An exact tie (rare with a
        softmax over real similarities) is broken by a draw seeded with ``seed`` and counted in
        :attr:`ties`."""
        votes = self.votes(texts)
        rng = np.random.default_rng(seed)
        self.ties = 0
        out: list[str] = []
        for row in votes:
            best = np.flatnonzero(row == row.max())
            self.ties += len(best) > 1
            out.append(self.affordances[int(best[0] if len(best) == 1 else rng.choice(best))])
        return out

