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

from afford_core.ontology import AFFORDANCES, category

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


# Training-only phrasings: more wordings of each affordance, used by training (every step asks
# each query with a wording drawn from the affordance's whole training pool) and as anchors, never
# held out. They were written by a separate author who was shown the seen phrasings above and
# never the held-out ones, so adding them leaves ``test_unseen_phrasings`` the same 27 wordings.
# That author wrote 7 of the 27 word for word, unprompted (a sign they are natural wordings);
# those were dropped here. A phrase here may not repeat any phrase of ``PHRASINGS`` (checked).
TRAINING_ONLY: dict[str, tuple[str, ...]] = {
    "grasp_handle": (
        "the mug's handle", "the pan handle", "the hammer's shaft", "the handle you hold it by",
        "where you grip it to carry it", "the part to hold it by", "the haft",
        "the long grip of the tool", "the carrying handle", "the cup handle",
        "what you hold on to when lifting it", "the grip end of the hammer",
        "the handle of the frying pan", "the handle your fingers go through", "the kettle's handle",
        "the pan's long arm you hold", "the grab handle", "the handle for lifting it",
        "the wooden grip of the hammer", "the part you hold when swinging the hammer",
        "the scoop's handle", "the stick part you hold", "the hilt",
    ),
    "grasp_body": (
        "the bottle's body", "the side of the cup", "the outer wall of the mug",
        "where you wrap your hand around it", "the barrel of the bottle",
        "the round side of the paper cup", "the bottle's sides to wrap your fingers around",
        "the exterior", "the cylindrical body", "the side wall to grab around",
        "the outside of the cup", "its body to wrap a hand around", "the belly of the bottle",
        "the wide part of the bottle", "the middle of the bottle", "the outer shell", "the cup's sides",
        "where to grab it around the middle", "the outside of the kettle body", "the sidewall",
        "the whole body of the cup", "the bottle's outer surface", "the part you hug with your palm",
        "the box's outer sides",
    ),
    "pour_out": (
        "the kettle spout", "the bottle's mouth to pour from", "where you pour from",
        "the lip to pour out of", "the pouring spout", "where the liquid pours out",
        "the bottle neck you pour from", "the pan's pouring lip", "the spout of the teapot",
        "the outflow", "where the tea comes out", "the opening it pours out of",
        "the tip it pours from", "the exit for the liquid", "the jug's beak",
        "where the coffee flows out", "the side to tip it out from", "the pour spout",
        "the rim you pour out over", "the outlet of the kettle",
        "where the contents come out when tipped", "the scoop's pouring tip",
        "the mouth you empty it from",
    ),
    "pour_in": (
        "the mouth of the cup to pour into", "where you fill it", "the fill opening",
        "the opening you fill the kettle through", "the top of the bowl to pour into", "the intake",
        "the open rim you pour into", "where the water goes in", "the entrance for the liquid",
        "the open top of the cup", "the filler neck", "the hole to fill through",
        "where you pour the milk in", "the receiving opening", "the filling port", "the mouth to fill",
        "the gap to pour liquid into", "the pot's open top", "where to add water",
        "where stuff gets poured in", "the target opening to pour into", "the intake hole",
        "where you top it up", "the paper cup's opening to fill",
    ),
    "hang": (
        "the hanging loop", "the rack's peg", "the loop to hang it by", "where it hangs on the rack",
        "the hook on the rack", "the part to hang it from", "the peg to hang things on",
        "the hole for hanging", "the hang hole", "the ring it hangs by", "the mug hook",
        "the spot to hang the mug", "the rack arm to hang it on", "the hanging hook", "the hanging eye",
        "what it hangs from", "the pin to hang it on", "the hole in the handle for hanging",
        "the suspension point", "the part that goes over the hook", "where to hook it",
        "the prong of the mug tree", "the dowel to hang cups on",
    ),
    "contain": (
        "the interior of the bowl", "inside the cup", "the bowl's hollow", "the inside of the box",
        "the drawer's interior", "where the contents sit", "the space inside", "the compartment",
        "the inner cavity", "the well of the bowl", "where things are kept inside", "the inner volume",
        "the pot's interior", "the scoop's bowl", "the receptacle", "the hollow of the mug",
        "the space the soup sits in", "what it holds things in", "the chamber",
        "the inside of the microwave", "the box's inner space", "the pocket inside",
    ),
    "support": (
        "the plate's top", "the tray surface", "the shelf board", "the shelf",
        "the flat part to put things on", "where you place items", "the ledge", "the deck",
        "the top of the plate to set food on", "the serving surface", "the flat face to set things on",
        "the upper surface of the tray", "the bearing surface", "the spot to set a cup down on",
        "the level surface", "the countertop", "the cabinet top to put things on",
        "the shelf to stack things on", "where things rest on top", "the tray bed", "the plate surface",
        "the board to put stuff on", "the flat base to place it on", "the microwave's turntable",
    ),
    "press": (
        "the push button", "the power button", "the microwave's start button", "the knob to push in",
        "the hammer's striking face", "the hammerhead", "the face of the hammer", "the key",
        "the button to press", "the pump head to press down", "the cap to push down", "the keypad",
        "the release button", "the plunger", "the spot to press", "the door release button",
        "the pressing surface", "what you press with your finger", "the striking end of the hammer",
        "the bit to poke", "the touch pad", "the kettle's on switch", "the toggle",
    ),
    "pull": (
        "the door handle of the cabinet", "the microwave door handle", "the drawer pull",
        "the handle you pull to open the drawer", "what you pull on to open it", "the door pull",
        "the pull handle", "the tab to pull open", "the knob to pull the drawer out", "the ring pull",
        "the finger pull", "the recessed pull", "where you yank it open", "the cabinet pull",
        "the part to tug it open with", "the handle on the drawer front",
        "the drawer's grip to slide it out", "the door grip to swing it open", "the cupboard handle",
        "the pull tab", "the pull knob", "the lever you pull to open the door",
        "the handle for opening the door",
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


def training_pool(split: PhrasingSplit | None = None) -> dict[str, tuple[str, ...]]:
    """Every wording training may use, per affordance: ``split``'s seen phrasings, then the
    ``TRAINING_ONLY`` ones.

    Raises:
        ValueError: a training-only phrase is also in ``PHRASINGS`` (so possibly held out) or
            names two affordances.
    """
    split = split or split_phrasings()
    owner: dict[str, str] = {}
    for aff in AFFORDANCES:
        for phrase in TRAINING_ONLY.get(aff, ()):
            if phrase in owner and owner[phrase] != aff:
                raise ValueError(f"training-only phrase {phrase!r} names both {owner[phrase]} and {aff}")
            owner[phrase] = aff
    authored = {p for phrases in PHRASINGS.values() for p in phrases}
    clash = sorted(set(owner) & authored)
    if clash:
        raise ValueError(f"training-only phrases repeat authored ones (which may be held out): {clash}")
    return {aff: tuple(dict.fromkeys((*split.seen[aff], *TRAINING_ONLY.get(aff, ())))) for aff in AFFORDANCES}


def affordance_of(phrase: str) -> str:
    """The affordance a known phrasing names (exact text); a clear error otherwise."""
    for table in (PHRASINGS, TRAINING_ONLY):
        for aff, phrases in table.items():
            if phrase in phrases:
                return aff
    raise KeyError(f"{phrase!r} is not a phrasing in the affordance vocabulary")


def category_text(category_name: str) -> str:
    """The words the model is told an object is ("paper_cup" -> "paper cup"); their sentence
    embedding is the category input of the affordance model."""
    words = category_name.replace("_", " ").strip()
    if not words:
        raise ValueError("an empty category name says nothing about the object")
    return words


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
