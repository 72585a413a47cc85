"""Query anchoring: unseen wordings are read as the trained phrasings they resemble."""

from __future__ import annotations

import numpy as np
import pytest
from _text_stub import hashed_unit_vectors

from afford_perception.affordance.anchoring import AnchorConfig, AnchoredEmbedder, training_phrasings
from afford_perception.affordance.vocabulary import split_phrasings

_stub = hashed_unit_vectors


def test_training_phrasings_are_anchors_and_held_out_ones_are_not() -> None:
    """The unseen-phrasing benchmark must stay unseen: no held-out wording may be an anchor."""
    anchors = set(training_phrasings())
    split = split_phrasings()
    assert all(p in anchors for ps in split.seen.values() for p in ps)
    assert not any(p in anchors for ps in split.unseen.values() for p in ps)


def test_a_known_phrasing_comes_back_unchanged_and_a_near_one_is_pulled_to_it() -> None:
    """A trained wording must keep its meaning; a new wording close to one must be read as it."""
    anchors = ["the handle", "the spout", "the rim", "the body"]
    emb = AnchoredEmbedder(_stub, AnchorConfig(k=2, temperature=0.05), anchors=anchors)
    out = emb(["the spout"])[0]
    assert out @ _stub(["the spout"])[0] > 0.999
    spout = _stub(["the spout"])[0]
    noise = _stub(["something else"])[0]
    near = spout + 0.6 * noise
    near /= np.linalg.norm(near)

    class Near:
        def __call__(self, texts):
            return np.array([near if t == "q" else _stub([t])[0] for t in texts])

    pulled = AnchoredEmbedder(Near(), AnchorConfig(k=2, temperature=0.05), anchors=anchors)(["q"])[0]
    assert pulled @ spout > near @ spout
    assert abs(np.linalg.norm(pulled) - 1) < 1e-5


def test_config_is_validated() -> None:
    """A zero temperature or k would divide by zero or average nothing: refuse at construction."""
    with pytest.raises(ValueError):
        AnchorConfig(k=0)
    with pytest.raises(ValueError):
        AnchorConfig(temperature=0)
    with pytest.raises(ValueError):
        AnchorConfig(keep=1.0)
