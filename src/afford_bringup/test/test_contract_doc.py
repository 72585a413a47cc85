"""The contract table in docs/graph_contract.md is the one in the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from afford_bringup import contract_doc
from afford_ros import contract

DOC = Path(__file__).resolve().parents[3] / "docs" / "graph_contract.md"


def test_doc_table_equals_the_contract() -> None:
    """Integrators wire drivers and bridges from the docs; a stale row there is a camera on the
    wrong topic or QoS, found only on the robot. (Refresh: python -m afford_bringup.contract_doc
    --write docs/graph_contract.md.)"""
    assert contract_doc.extract(DOC.read_text()) == contract_doc.block()


def test_generated_table_has_every_topic_service_and_action_once() -> None:
    """The generator itself must not drop or duplicate a row, or the check above proves little."""
    text = contract_doc.contract_tables()
    rows = [line for line in text.splitlines() if line.startswith("| `/")]
    names = [r.split("`")[1] for r in rows]
    expected = [t.name for t in contract.TOPICS] + [e.name for e in (*contract.SERVICES, *contract.ACTIONS)]
    assert names == expected
    for t in contract.TOPICS:
        row = rows[names.index(t.name)]
        assert f"`{t.type}`" in row and f"| {t.qos} |" in row and f"| {t.publisher} |" in row
        assert (f"`{t.frame}`" in row) if t.frame else "| — |" in row
        assert ("*(sim only)*" in row) == t.sim_only


def test_extract_refuses_a_doc_without_exactly_one_block() -> None:
    """A doc whose markers were deleted must fail loudly, not compare an empty table."""
    with pytest.raises(ValueError, match="exactly once"):
        contract_doc.extract("no table here")
    with pytest.raises(ValueError, match="exactly once"):
        contract_doc.extract(contract_doc.block() + contract_doc.block())
