"""The text reader: which affordance a free-text query asks for, voted by the nearest wordings."""

from __future__ import annotations

import numpy as np
import pytest
from _text_stub import hashed_unit_vectors

from afford_perception.affordance.anchoring import AnchorConfig
from afford_perception.affordance.reader import AffordanceReader
from afford_perception.affordance.vocabulary import split_phrasings

POOL = {"grasp_handle": ("the handle", "the grip"), "pour_out": ("the spout",), "hang": ("the loop",)}


_stub = hashed_unit_vectors


def test_a_wording_reads_as_its_affordance_and_a_near_one_as_its_neighbours() -> None:
    reader = AffordanceReader(_stub, AnchorConfig(k=2, temperature=0.05), pool=POOL)
    assert reader.read(["the spout", "the grip", "the loop"]) == ["pour_out", "grasp_handle", "hang"]
    votes = reader.votes(["the spout", "something else"])
    np.testing.assert_allclose(votes.sum(axis=1), 1.0)
    spout, noise = _stub(["the spout"])[0], _stub(["anything"])[0]
    near = (spout + 0.5 * noise) / np.linalg.norm(spout + 0.5 * noise)

    def embed(texts):
        return np.array([near if t == "q" else _stub([t])[0] for t in texts])

    assert AffordanceReader(embed, AnchorConfig(k=2, temperature=0.05), pool=POOL).read(["q"]) == ["pour_out"]
    assert reader.ties == 0


def test_a_tie_is_broken_by_a_seeded_draw_and_counted() -> None:
    """Two affordances whose wordings embed alike get the same vote: the reader draws between
    them with the given seed (the same seed, the same answer) and says how many it drew."""
    same = _stub(["x"])[0]

    def embed(texts):
        return np.array([same if t in ("the handle", "the spout", "q") else _stub([t])[0] for t in texts])

    pool = {"grasp_handle": ("the handle",), "pour_out": ("the spout",), "hang": ("the loop",)}
    reader = AffordanceReader(embed, AnchorConfig(k=2, temperature=0.05), pool=pool)
    draws = {seed: reader.read(["q"] * 8, seed=seed) for seed in range(4)}
    assert reader.ties == 8
    assert all(set(d) <= {"grasp_handle", "pour_out"} for d in draws.values())
    assert len({a for d in draws.values() for a in d}) == 2  # both sides get drawn
    assert reader.read(["q"] * 8, seed=1) == draws[1]


def test_a_wording_owned_by_two_affordances_is_refused() -> None:
    with pytest.raises(ValueError, match="names both"):
        AffordanceReader(_stub, pool={"grasp_handle": ("the handle",), "hang": ("the handle",)})
    with pytest.raises(ValueError, match="no wordings"):
        AffordanceReader(_stub, pool={})


def test_only_training_wordings_vote() -> None:
    """The held-out phrasings stay held out: none of them is among the reader's wordings."""
    reader = AffordanceReader(_stub)
    held_out = {p for ps in split_phrasings().unseen.values() for p in ps}
    assert reader.wordings and not held_out & set(reader.wordings)
