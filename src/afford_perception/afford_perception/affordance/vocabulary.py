"""The affordance vocabulary: how people phrase each affordance, and which points it names.

A query like "the grip" or "the part you pour from" names an affordance, not a part: the
ontology decides which parts of an object offer it (a mug's handle both is grasped and hangs
on a hook; a bottle's cap is pressed and poured from). The target of a query on an object is
therefore the set of points whose part offers the affordance (``Category.parts_with``).

Each affordance has a dozen phrasings. A fixed subset is held out of training so the learned
model can be scored on wording it never saw; the split is drawn by hashing the phrase, not by
hand, so nobody picks the easy ones to hold out, and it never changes unless a phrase does.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from afford_perception.ontology import AFFORDANCES, category

# The phrasings of every ontology affordance. Words a person might use for the region, from
# part names ("the spout") to function ("where liquid comes out"). One phrase names one
# affordance only, so a query has a single target.
PHRASINGS: dict[str, tuple[str, ...]] = {
    "grasp_handle": (
        "the handle", "the grip", "where you hold it", "the handgrip", "the part you hold",
        "the shaft", "the stem", "the place to grab it", "where your hand goes",
        "the bit you hold on to", "the holding part", "what you pick it up by",
    ),
    "grasp_body": (
        "the body", "the side", "the outside wall", "the main body", "the middle",
        "the outer surface", "the part to wrap your hand around", "the bulk of it",
        "where to grab the object itself", "the sides", "the whole object", "its outside",
    ),
    "pour_out": (
        "the spout", "the part you pour from", "where liquid comes out", "the nozzle",
        "the pouring lip", "the outlet", "the snout", "where it pours out",
        "the end you pour with", "the pouring edge", "where the water leaves",
    ),
    "pour_in": (
        "the opening", "where you pour into it", "the mouth", "where liquid goes in",
        "the fill hole", "the top opening", "the inlet", "where to fill it",
        "the part to pour into", "the way in", "where the water enters",
    ),
    "hang": (
        "the hook", "the ring to hang it by", "the loop", "where it hangs", "the peg",
        "the part to hang things on", "the hanger", "the hook ring", "the hanging point",
        "the eyelet", "what goes on the hook",
    ),
    "contain": (
        "the inside", "the cavity", "the interior", "where things go", "the container part",
        "the hollow", "the part that holds stuff", "the vessel", "the storage space",
        "the basin", "what holds the contents",
    ),
    "support": (
        "the surface", "the flat top", "where to put things", "the platform",
        "the shelf surface", "the resting surface", "the part things sit on",
        "the base to set things on", "the tabletop", "the place to rest items",
        "where you set something down",
    ),
    "press": (
        "the button", "the knob", "the part you press", "the top to push", "the striking face",
        "the press point", "where you push down", "the head", "the cap", "the switch",
        "what you push",
    ),
    "pull": (
        "the pull", "the door handle", "the drawer handle", "what you pull to open it",
        "the handle to open it", "where to pull", "the pull bar", "the part to tug",
        "the opener", "the latch", "what opens it",
    ),
}


@dataclass(frozen=True)
class PhrasingSplit:
    """Seen (trained on) and unseen (held-out) phrasings of every affordance.

    Attributes:
        seen: Affordance -> phrasings used for training and for the seen-wording splits.
        unseen: Affordance -> phrasings never shown in training; at least ``min_unseen`` each.
        unseen_fraction: Share of each affordance's phrasings held out (rounded, at least
            ``min_unseen``, and at least one phrasing always stays seen).
    """

    seen: dict[str, tuple[str, ...]]
    unseen: dict[str, tuple[str, ...]]
    unseen_fraction: float

    def phrasings(self, affordance: str, unseen: bool) -> tuple[str, ...]:
        """The seen or unseen phrasings of ``affordance``; a clear error for an unknown one."""
        table = self.unseen if unseen else self.seen
        if affordance not in table:
            raise KeyError(f"unknown affordance {affordance!r}; known: {', '.join(AFFORDANCES)}")
        return table[affordance]


def _phrase_key(phrase: str) -> bytes:
    return hashlib.sha256(phrase.encode()).digest()


def split_phrasings(unseen_fraction: float = 0.25, min_unseen: int = 2) -> PhrasingSplit:
    """Hold out a deterministic share of each affordance's phrasings.

    The phrasings of an affordance are ordered by the SHA-256 of their text and the first
    ``max(min_unseen, round(unseen_fraction * n))`` are held out; the order of ``PHRASINGS``
    and Python's hash seed play no part, so every machine holds out the same words.
    """
    if not 0.0 < unseen_fraction < 1.0:
        raise ValueError(f"unseen_fraction must be in (0, 1), got {unseen_fraction}")
    if min_unseen < 1:
        raise ValueError(f"min_unseen must be >= 1, got {min_unseen}")
    seen: dict[str, tuple[str, ...]] = {}
    unseen: dict[str, tuple[str, ...]] = {}
    for aff in AFFORDANCES:
        phrases = PHRASINGS[aff]
        k = max(min_unseen, round(unseen_fraction * len(phrases)))
        if k >= len(phrases):
            raise ValueError(f"{aff!r} has {len(phrases)} phrasings; holding out {k} leaves none to train on")
        held = set(sorted(phrases, key=_phrase_key)[:k])
        # Keep the authored order inside each side: it reads better in manifests and reports.
        seen[aff] = tuple(p for p in phrases if p not in held)
        unseen[aff] = tuple(p for p in phrases if p in held)
    return PhrasingSplit(seen=seen, unseen=unseen, unseen_fraction=unseen_fraction)


def affordance_of(phrase: str) -> str:
    """The affordance a known phrasing names (exact text); a clear error otherwise."""
    for aff, phrases in PHRASINGS.items():
        if phrase in phrases:
            return aff
    raise KeyError(f"{phrase!r} is not a phrasing in the affordance vocabulary")


def affordances_of(category_name: str) -> tuple[str, ...]:
    """Affordances some part of ``category_name`` offers, in ontology order."""
    info = category(category_name)
    return tuple(a for a in AFFORDANCES if info.parts_with(a))


def part_affordance_bits(category_name: str) -> np.ndarray:
    """Per part label of ``category_name``, a bit field with bit ``i`` set when the part offers
    ``AFFORDANCES[i]``: the point-wise targets of every affordance at once, stored in one array."""
    info = category(category_name)
    bits = np.zeros(len(info.parts), dtype=np.uint16)
    for i, aff in enumerate(AFFORDANCES):
        for part in info.parts_with(aff):
            bits[info.parts.index(part)] |= np.uint16(1 << i)
    return bits


def target_mask(category_name: str, part_labels: np.ndarray, affordance: str) -> np.ndarray:
    """Points of a labelled cloud whose part offers ``affordance`` (all False if none does).

    Args:
        category_name: Ontology category of the cloud.
        part_labels: (N,) int labels indexing the category's parts; -1 (unlabelled) is never
            a target.
        affordance: An ontology affordance name.
    """
    if affordance not in AFFORDANCES:
        raise KeyError(f"unknown affordance {affordance!r}; known: {', '.join(AFFORDANCES)}")
    info = category(category_name)
    labels = np.asarray(part_labels)
    wanted = [info.parts.index(p) for p in info.parts_with(affordance)]
    return np.isin(labels, wanted)
