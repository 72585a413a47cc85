"""Which pouring parts are spouts: the pour tips towards a spout, away from the hand over a rim."""

from __future__ import annotations

from afford_core.ontology import CATEGORIES, category


def test_a_spout_pours_out_and_a_rim_is_an_opening_all_round() -> None:
    assert category("kettle").is_spout("spout")
    for cup in ("mug", "paper_cup"):
        assert not category(cup).is_spout("rim")  # it takes in as well: the opening
    assert not category("kettle").is_spout("handle")
    assert not category("kettle").is_spout(None)
    assert not category("kettle").is_spout("no such part")


def test_the_spouts_are_the_parts_that_only_pour_out() -> None:
    """A kettle's spout, a scoop's bowl (it tips towards it), a coffee machine's nozzle, and a
    bottle's cap (on the axis: a pour from it has no side, see ``spout_direction``)."""
    spouts = {(c.name, p) for c in CATEGORIES.values() for p in c.parts if c.is_spout(p)}
    assert spouts == {("kettle", "spout"), ("scoop", "bowl"), ("bottle", "cap"), ("scrub_bottle", "cap"),
                      ("coffee_machine", "nozzle")}
