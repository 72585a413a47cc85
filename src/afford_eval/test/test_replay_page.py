"""The replay page, run in headless Chromium: the rule switch must select what the engine selects.

The page is how a reviewer inspects a reported selection; if its JavaScript ranked candidates
differently from ``afford_planner.selection``, it would show a robot choice that never
happened. The browser test needs the ``chromium`` binary (scripts/setup.sh installs it); it is
skipped, with that reason, where the binary is missing.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

from afford_cli.cli import main
from afford_eval import replay, runs

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
needs_chromium = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (scripts/setup.sh)")
ROT = [[1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]]


def _cand(index: int, terms: dict[str, float], success: bool) -> dict[str, Any]:
    return {
        "index": index,
        "source": "affordance",
        "origin": "propose" if index < 2 else "antipodal",
        "position": [0.45 + 0.03 * index, 0.05 * index, 0.08],
        "rotation": ROT,
        "width": 0.05,
        "terms": terms,
        "planned": True,
        "outcome": {
            "success": success,
            "stages": {"grasp": success},
            "failed_stage": None if success else "grasp",
            "detail": "" if success else "object slipped",
        },
    }


def gate_record() -> dict[str, Any]:
    """Candidate 0 is out of reach (r = 0.1) but excellent on every other term; candidate 1 is
    feasible and merely good. A weighted sum lets 0's other terms outvote its reach (gate
    none picks 0, which fails); the gate removes it (picks 1, which succeeds). A product
    already drives 0 down, so there the gate changes nothing: AFFORD-X's finding, in small."""
    best = {"function": 1.0, "task": 1.0, "plan": 1.0}
    return {
        "suite": "hang",
        "scene": 0,
        "seed": 7,
        "sentence": "hang the mug on the rack",
        "grounding": "oracle",
        "candidate_set_hash": "ab" * 32,
        "candidates": [
            _cand(0, {"reach": 0.1, "approach": 1.0, "clearance": 1.0, **best}, False),
            _cand(
                1,
                {"reach": 1.0, "approach": 0.8, "clearance": 0.9, "function": 0.6, "task": 0.5, "plan": 0.7},
                True,
            ),
            _cand(
                2,
                {"reach": 1.0, "approach": 0.3, "clearance": 1.0, "function": 0.2, "task": 1.0, "plan": 0.4},
                False,
            ),
        ],
        "methods": {"afford_L4_none_weighted_sum": 0, "afford_L4_feasibility_weighted_sum": 1},
        "determinism": [],
        "timings_s": {},
        "cloud": {
            "points": [[0.45 + 0.001 * i, 0.0, 0.05] for i in range(200)],
            "region": [[0.46, 0.0, 0.05]],
        },
    }


def _dom(page: Path, fragment: str) -> str:
    profile = tempfile.mkdtemp(prefix="afford-chromium-")
    try:
        proc = subprocess.run(
            [
                str(CHROMIUM),
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
                f"--user-data-dir={profile}",
                "--dump-dom",
                f"{page.resolve().as_uri()}#{fragment}",
            ],
            capture_output=True,
            text=True,
            timeout=90,
        )
    finally:
        shutil.rmtree(profile, ignore_errors=True)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def _selected(dom: str) -> tuple[str, str]:
    m = re.search(r'<output id="selected"([^>]*)>', dom)
    assert m, "no #selected element: the page's script did not run"
    attrs = dict(re.findall(r'data-(\w+)="([^"]*)"', m.group(1)))
    return attrs["index"], attrs["success"]


def _page(tmp_path: Path, record: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    data = replay.page_data(record, record["cloud"])
    page = tmp_path / "page.html"
    page.write_text(replay.render_page(data))
    return page, data


def test_page_is_self_contained(tmp_path: Path) -> None:
    """The page must open on an offline lab machine: nothing fetched from a network."""
    page, _ = _page(tmp_path, gate_record())
    text = page.read_text()
    assert not re.search(r"(src|href)=\"?(https?:)?//", text)
    assert "http://" not in text and "https://" not in text


@needs_chromium
def test_gate_switch_changes_the_selection_under_weighted_sum(tmp_path: Path) -> None:
    """Switching the gate under a weighted sum must move the selection from the unreachable
    candidate (failure) to the feasible one (success), as the engine's `select` does; the page
    also agrees with the run's recorded selections for those cells."""
    page, _ = _page(tmp_path, gate_record())
    off = _dom(page, "gate=none&comb=weighted_sum&level=L4")
    on = _dom(page, "gate=feasibility&comb=weighted_sum&level=L4")
    assert _selected(off) == ("0", "false")
    assert _selected(on) == ("1", "true")
    for dom in (off, on):
        assert 'id="agree" data-state="agrees"' in dom


@needs_chromium
def test_a_tie_the_run_drew_from_agrees_and_a_pick_outside_it_does_not(tmp_path: Path) -> None:
    """The run's methods draw among tied candidates (seeded); the page, which ranks like the
    engine (lowest index first), accepts any tied candidate as the run's pick and says it was a
    tie, and still flags a pick the rule would never make."""
    record = gate_record()
    same = {"reach": 1.0, "approach": 1.0, "clearance": 1.0, "function": 1.0, "task": 1.0, "plan": 1.0}
    for c in record["candidates"][1:]:
        c["terms"] = dict(same)
    record["methods"] = {"afford_L1_feasibility_product": 2}
    page, _ = _page(tmp_path, record)
    dom = _dom(page, "gate=feasibility&comb=product&level=L1")
    assert 'id="agree" data-state="agrees"' in dom and "a tie of 2, the run drew #2" in dom
    record["methods"] = {"afford_L1_feasibility_product": 0}  # out of reach: not in the tie
    page, _ = _page(tmp_path, record)
    assert 'id="agree" data-state="disagrees"' in _dom(page, "gate=feasibility&comb=product&level=L1")


@needs_chromium
def test_every_rule_matches_the_engine(tmp_path: Path) -> None:
    """All 16 factorial cells computed by the page's JavaScript equal
    `afford_planner.selection.select` on the same terms (including an abstention)."""
    record = gate_record()
    # A fourth candidate so that L1 under the product differs from the weighted sum, and a
    # threshold case: r*a*c = 0.5 exactly is eligible in the engine.
    record["candidates"].append(
        _cand(
            3,
            {"reach": 1.0, "approach": 0.5, "clearance": 1.0, "function": 0.9, "task": 0.9, "plan": 0.9},
            True,
        )
    )
    page, data = _page(tmp_path, record)
    dom = _dom(page, "gate=none&comb=product&level=L1")
    cells = dict(re.findall(r'data-rule="([^"]+)" data-index="([^"]+)"', dom))
    assert len(cells) == 16
    rules = [
        (lv, g, cb)
        for lv in ("L1", "L2", "L3", "L4")
        for g in ("none", "feasibility")
        for cb in ("weighted_sum", "product")
    ]
    engine = replay.selections_for(data, rules)
    for lv, g, cb in rules:
        want = engine[f"afford_{lv}_{g}_{cb}"]
        assert cells[f"{lv}_{g}_{cb}"] == ("none" if want is None else str(want)), (lv, g, cb)
    # Every eligible candidate at 0 under the product (function 0): a gated-out candidate with
    # a lower index must not win the tie, on the page as in the engine.
    zero = json.loads(json.dumps(record))
    for c in zero["candidates"]:
        c["terms"]["function"] = 0.0
    page, data = _page(tmp_path, zero)
    want = replay.selections_for(data, [("L2", "feasibility", "product")])["afford_L2_feasibility_product"]
    assert want is not None and want != 0  # candidate 0 is out of reach
    assert _selected(_dom(page, "gate=feasibility&comb=product&level=L2"))[0] == str(want)
    # And an all-infeasible set abstains on the page as in the engine.
    for c in record["candidates"]:
        c["terms"]["reach"] = 0.1
    page, data = _page(tmp_path, record)
    assert _selected(_dom(page, "gate=feasibility&comb=product&level=L2")) == ("none", "false")
    assert replay.selections_for(data, [("L2", "feasibility", "product")]) == {
        "afford_L2_feasibility_product": None
    }


@needs_chromium
def test_the_reach_switch_reads_the_arms_reach_as_the_engine_does(tmp_path: Path) -> None:
    """Candidate 0 is outside AFFORD-X's box but the arm reaches it: with reach from the arm the
    gate keeps it and the weighted sum picks it, on the page as in the engine's _armreach cells;
    every cell of the rule table under the arm's reach equals the engine's. A run without
    reach_arm offers the box alone."""
    record = gate_record()
    for c in record["candidates"]:
        c["terms"]["reach_box"] = c["terms"]["reach"]
        c["terms"]["reach_arm"] = 1.0
    record["methods"] = {"afford_L4_feasibility_weighted_sum_armreach": 0}
    page, data = _page(tmp_path, record)
    dom = _dom(page, "gate=feasibility&comb=weighted_sum&level=L4&reach=arm")
    assert _selected(dom) == ("0", "false")
    assert 'id="agree" data-state="agrees"' in dom
    assert _selected(_dom(page, "gate=feasibility&comb=weighted_sum&level=L4&reach=box")) == ("1", "true")
    cells = dict(re.findall(r'data-rule="([^"]+)" data-index="([^"]+)"', dom))
    rules = [(lv, g, cb) for lv in ("L1", "L2", "L3", "L4") for g in ("none", "feasibility")
             for cb in ("weighted_sum", "product")]
    engine = replay.selections_for(data, rules, reach="arm")
    for lv, g, cb in rules:
        want = engine[f"afford_{lv}_{g}_{cb}_armreach"]
        assert cells[f"{lv}_{g}_{cb}"] == ("none" if want is None else str(want)), (lv, g, cb)
    plain, _ = _page(tmp_path, gate_record())
    dom = _dom(plain, "gate=feasibility&comb=weighted_sum&level=L4&reach=arm")
    assert _selected(dom) == ("1", "true")  # no reach_arm in the run: the box, and the option is off
    assert re.search(r'<option value="arm" disabled', dom)


def test_replay_command_writes_the_page_from_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`afford eval replay` reads the run's record and its fixed weights; a wrong suite or scene
    is one line and a non-zero exit."""
    record = gate_record()
    cfg = runs.RunConfig(
        ("hang",),
        1,
        ("afford_L4_none_weighted_sum", "afford_L4_feasibility_weighted_sum"),
        "oracle",
        {"weights": {"reach": 3.0}},
    )
    runs.execute(tmp_path / "r", cfg, lambda s, k: record, progress=False)
    out = tmp_path / "p.html"
    assert (
        main(["eval", "replay", str(tmp_path / "r"), "--suite", "hang", "--scene", "0", "-o", str(out)]) == 0
    )
    assert '"reach":3.0' in out.read_text()
    assert main(["eval", "replay", str(tmp_path / "r"), "--suite", "pour", "--scene", "0"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and "pour" in err[0] and "hang" in err[0]
