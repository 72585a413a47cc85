"""The report of an evaluation run, derived from its raw scene records alone.

``build_report(run_dir)`` reads ``config.json``, ``provenance.json`` and
``scenes/<suite>/*.json`` and writes ``report/report.md``, ``report/summary.json`` (every
number of the report, for tests and for comparing runs) and one PNG per suite. It never reads
anything the run did not store, so a report can be rebuilt, with a fixed table layout or a new
plot, from a finished run whose evidence is hashed in its manifest; ``report/`` is outside that
manifest for this reason (see ``runs``).

A method's outcome in a scene is the stored outcome of the candidate it selected; a null
selection is an abstention and counts as a failure (AFFORD-X: abstaining is the safe choice,
but it does not finish the task). Every paired difference resamples whole scenes, so the
interval accounts for the pairing of methods on the same candidate set.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from afford_eval import runs

LEVELS = ("L1", "L2", "L3", "L4")
GATES = ("none", "feasibility")
COMBINATIONS = ("weighted_sum", "product")
BASELINES = ("random", "stability", "stability_filter", "part_label_terms")
_RENAMED = {"oracle": "part_label_terms"}  # names of earlier runs
#: Fewest clusters a cluster bootstrap is reported with: with one cluster its interval is a
#: point, with a handful it is the spread of a few means, neither of them an interval.
MIN_CLUSTERS = 5
PLANNED = "@planned"  # afford_eval.methods.PLANNED; the report does not import the methods
ARM_REACH = "_armreach"  # afford_eval.methods.ARM_REACH
REACHES = ("box", "arm")
REACH_NAMES = {"box": "reach from AFFORD-X's workspace box", "arm": "reach from the arm's IK"}
VIEWS = ("", PLANNED)
VIEW_NAMES = {"": "all candidates", PLANNED: "planned candidates only"}
ALL_SUITES = "all suites"
_GATE_RE = re.compile(r"(?:^|[_/:=-])(none|feasibility|nogate|gated)(?=$|[_/:=-])")
_COMB_RE = re.compile(r"(weighted_sum|weightedsum|product|ws|prod)(?=$|[_/:=-])")
_LEVEL_RE = re.compile(r"(?:^|[_/:=-])(L[1-4])(?=$|[_/:=-])")


@dataclass(frozen=True)
class ReportConfig:
    """How the report's statistics are computed; fixed, so that a rebuilt report is identical.

    Attributes:
        confidence: Coverage of every interval (Wilson and bootstrap).
        resamples: Scene-clustered bootstrap resamples per paired difference.
        seed: Seed of the bootstrap's generator.
        plots: Write the PNG plots (matplotlib, Agg).
    """

    confidence: float = 0.95
    resamples: int = 10_000
    seed: int = 0
    plots: bool = True

    def __post_init__(self) -> None:
        if not 0.5 <= self.confidence < 1.0:
            raise ValueError(f"confidence must be in [0.5, 1), got {self.confidence}")
        if self.resamples < 100:
            raise ValueError(f"resamples must be >= 100, got {self.resamples}")


# --------------------------------------------------------------------------- method names


def factorial_cell(method: str) -> tuple[str, str, str] | None:
    """``(level, gate, combination)`` of an affordance-guided method's name, None for others.

    Accepts the evaluation core's names and their common spellings, e.g.
    ``affordance_L3_feasibility_weighted_sum`` or ``afford/L2/none/product``.
    """
    level, gate, comb = _LEVEL_RE.search(method), _GATE_RE.search(method), _COMB_RE.search(method)
    if not (level and gate and comb):
        return None
    g = {"nogate": "none", "gated": "feasibility"}.get(gate.group(1), gate.group(1))
    c = "weighted_sum" if comb.group(1) in ("weighted_sum", "weightedsum", "ws") else "product"
    return level.group(1), g, c


def _base(method: str) -> str:
    base = method.removesuffix(PLANNED)
    return _RENAMED.get(base, base)


def _cell_index(
    methods: Sequence[str], view: str = "", reach: str = "box"
) -> dict[tuple[str, str, str], str]:
    """Factorial cell -> method name, among the methods of one view (all or planned only) and
    one reading of the reach term (AFFORD-X's box, or the arm's IK: the ``_armreach`` cells)."""
    return {cell: m for m in methods
            if m.endswith(PLANNED) == (view == PLANNED)
            and _base(m).endswith(ARM_REACH) == (reach == "arm")
            and (cell := factorial_cell(_base(m).removesuffix(ARM_REACH))) is not None}


# --------------------------------------------------------------------------- outcomes


def _stats() -> Any:
    from afford_eval import stats

    return stats


def wilson(successes: int, n: int, confidence: float) -> tuple[float, float]:
    """Wilson score interval of ``successes`` in ``n`` (the evaluation core's ``stats``)."""
    from scipy.stats import norm

    lo, hi = _stats().wilson(successes, n, z=float(norm.ppf(0.5 + confidence / 2)))
    return float(lo), float(hi)


def paired_difference(
    a: np.ndarray, b: np.ndarray, clusters: Sequence[str], cfg: ReportConfig
) -> tuple[float, float, float]:
    """Mean of ``a - b`` over scenes and its scene-clustered bootstrap interval."""
    mean, lo, hi = _stats().paired_bootstrap(
        a, b, clusters, n=cfg.resamples, seed=cfg.seed, confidence=cfg.confidence
    )
    return float(mean), float(lo), float(hi)


def _matrix(records: Sequence[Mapping[str, Any]], methods: Sequence[str]) -> dict[str, np.ndarray]:
    rows = [_stats().method_outcomes(r, methods) for r in records]
    return {m: np.array([row[m] for row in rows], dtype=np.int64) for m in methods}


def _determinism(records: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    # Not counterfactual.determinism_disagreements: reading a report must not import the simulator.
    checks = [d for r in records for d in r.get("determinism", [])]
    return sum(bool(d["first"]) != bool(d["second"]) for d in checks), len(checks)


# Why a candidate was not executed, from its planners' reasons (afford_planner.motion).
_UNEXECUTED = (
    ("IK did not converge", "no IK solution at the pre-grasp (joint limits or reach)"),
    ("out of reach", "no IK solution at the pre-grasp (joint limits or reach)"),
    ("rejected (e.g. in collision)", "the arm at the pre-grasp collides"),
    ("line blocked", "the approach line collides"),
    ("line needs joint", "the approach line flips the arm's branch"),
    ("line cannot be followed", "the approach line leaves the arm's reach"),
    ("found no path", "no free-space path found"),
)


def _unexecuted_reason(c: Mapping[str, Any]) -> str:
    failures = c.get("plan_failures") or {}
    why = failures.get("reference") or failures.get("default") or ""
    return next((label for key, label in _UNEXECUTED if key in why), "not recorded" if not why else "other")


def _executed(c: Mapping[str, Any]) -> bool:
    """Whether the candidate ran; records made before the reference planner have ``planned``."""
    return c["plan_source"] is not None if "plan_source" in c else bool(c.get("planned"))


def _suite_summary(
    records: Sequence[Mapping[str, Any]], methods: Sequence[str], cfg: ReportConfig
) -> dict[str, Any]:
    n = len(records)
    outcomes = _matrix(records, methods)
    rates: dict[str, Any] = {}
    for m in methods:
        k = int(outcomes[m].sum())
        lo, hi = wilson(k, n, cfg.confidence) if n else (0.0, 1.0)
        abstained = sum(r["methods"].get(m) is None for r in records)
        # A tie the rule did not decide (its pick was a seeded draw among them); records made
        # before ties were recorded say nothing, counted as unknown.
        tied = [int(r["ties"][m]) for r in records if m in r.get("ties", {})]
        rates[m] = {
            "successes": k,
            "n": n,
            "rate": k / n if n else 0.0,
            "low": lo,
            "high": hi,
            "abstained": abstained,
            "tie_scenes": sum(t > 1 for t in tied),
            "ties_known": len(tied),
            "mean_tie": float(np.mean([t for t in tied if t > 1])) if any(t > 1 for t in tied) else 0.0,
        }
    # Paired intervals two ways: one cluster per scene (methods are paired on the same set), and
    # one per sentence (scenes of one task share its object and wording, so they are not
    # independent evidence; the wider interval is the honest one for a claim about tasks).
    by_scene = [f"{r['suite']}/{r['scene']}" for r in records]
    by_sentence = [str(r.get("sentence") or r.get("task_id")) for r in records]
    comparisons: list[dict[str, Any]] = []

    sentences = len(set(by_sentence))

    def compare(label: str, a: str, b: str) -> None:
        if a in outcomes and b in outcomes and n:
            mean, lo, hi = paired_difference(outcomes[a], outcomes[b], by_scene, cfg)
            row = {"label": label, "a": a, "b": b, "diff": mean, "low": lo, "high": hi,
                   "sentences": sentences}
            if sentences >= MIN_CLUSTERS:
                _, row["sentence_low"], row["sentence_high"] = paired_difference(
                    outcomes[a], outcomes[b], by_sentence, cfg)
            comparisons.append(row)

    for view in VIEWS:
        for reach in REACHES:
            cells = _cell_index(methods, view, reach)
            suffix = ARM_REACH if reach == "arm" else ""
            for comb in COMBINATIONS:
                for level in LEVELS:
                    on, off = cells.get((level, "feasibility", comb)), cells.get((level, "none", comb))
                    if on and off:
                        compare(f"gate on - off, {level}, {comb}{suffix}{view}", on, off)
        # The gate with the arm's reach against the gate with AFFORD-X's box, same cells.
        box, arm = _cell_index(methods, view, "box"), _cell_index(methods, view, "arm")
        for comb in COMBINATIONS:
            for level in ("L1", "L4"):
                a, b = arm.get((level, "feasibility", comb)), box.get((level, "feasibility", comb))
                if a and b:
                    compare(f"reach from the arm - from the box, {level} gated {comb}{view}", a, b)
    # The headline: L4 against baselines given the same plan mask, all over planned candidates;
    # then over all candidates, as AFFORD-X compares.
    for view in (PLANNED, ""):
        best = _cell_index(methods, view).get(("L4", "feasibility", "product"))
        if best:
            for base in ("stability", "stability_filter", "random"):
                compare(f"L4 product gated{view} - {base}{view}", best, base + view)
    disagree, checked = _determinism(records)
    n_cands = [len(r["candidates"]) for r in records]
    any_ok = sum(any(c["outcome"]["success"] for c in r["candidates"]) for r in records)
    frac_ok = [
        float(np.mean([c["outcome"]["success"] for c in r["candidates"]])) if r["candidates"] else 0.0
        for r in records
    ]
    planned_ok = []
    for r in records:
        planned = [c["outcome"]["success"] for c in r["candidates"] if c.get("planned")]
        planned_ok.append(float(np.mean(planned)) if planned else 0.0)
    ceiling = wilson(any_ok, n, cfg.confidence) if n else (0.0, 1.0)
    every = [c for r in records for c in r["candidates"]]
    return {
        "scenes": n,
        "rates": rates,
        "comparisons": comparisons,
        "determinism": {
            "disagreements": disagree,
            "checked": checked,
            "rate": disagree / checked if checked else None,
        },
        "candidates_per_scene": float(np.mean(n_cands)) if n_cands else 0.0,
        "scenes_with_a_success": any_ok,
        "ceiling": {"successes": any_ok, "n": n, "rate": any_ok / n if n else 0.0,
                    "low": ceiling[0], "high": ceiling[1]},
        "unevaluable": {str(r["scene"]): r["unevaluable"] for r in records if r.get("unevaluable")},
        "mean_candidate_success": float(np.mean(frac_ok)) if frac_ok else 0.0,
        "expected_random": {"all": float(np.mean(frac_ok)) if frac_ok else 0.0,
                            "planned": float(np.mean(planned_ok)) if planned_ok else 0.0},
        "planned_candidates": int(sum(c.get("planned", False) for r in records for c in r["candidates"])),
        "films": {"filmed": sum(len(r.get("films", [])) for r in records),
                  "disagree": sum(not f["agrees"] for r in records for f in r.get("films", [])),
                  "scenes": sum(bool(r.get("films")) for r in records)},
        "executed_candidates": int(sum(_executed(c) for c in every)),
        "reference_planned": int(sum(c.get("plan_source") == "reference" for c in every)),
        "unexecuted": dict(sorted(Counter(_unexecuted_reason(c) for c in every if not _executed(c)).items(),
                                  key=lambda kv: -kv[1])),
        "candidates": int(sum(n_cands)),
    }


def summarise(run_dir: Path | str, cfg: ReportConfig | None = None) -> dict[str, Any]:
    """Every number of the report, from the raw records: per suite, and pooled over suites
    when there are several (the pooled bootstrap resamples (suite, scene) clusters)."""
    cfg = cfg or ReportConfig()
    config = runs.load_config(run_dir)
    records = runs.load_records(run_dir)
    methods = list(config.methods)
    suites = {s: _suite_summary(records[s], methods, cfg) for s in config.suites}
    if len(config.suites) > 1:
        pooled = [r for s in config.suites for r in records[s]]
        suites[ALL_SUITES] = _suite_summary(pooled, methods, cfg)
    expected = config.scenes * len(config.suites)
    got = sum(len(v) for v in records.values())
    return {
        "config": config.as_dict(),
        "complete": got == expected,
        "scenes_recorded": got,
        "scenes_expected": expected,
        "statistics": {"confidence": cfg.confidence, "resamples": cfg.resamples, "seed": cfg.seed},
        "suites": suites,
    }


# --------------------------------------------------------------------------- rendering


def _pct(x: float) -> str:
    return f"{x:.2f}"


def _rate_cell(r: Mapping[str, Any]) -> str:
    return f"{_pct(r['rate'])} [{_pct(r['low'])}, {_pct(r['high'])}]"


def _signed(x: float) -> str:
    return f"{x:+.2f}"


def _suite_markdown(name: str, s: Mapping[str, Any], methods: Sequence[str], plot: str | None) -> list[str]:
    conf = "95%"
    out = [f"## {name}", ""]
    out.append(
        f"{s['scenes']} scenes, {s['candidates_per_scene']:.1f} candidates per scene on average, "
        f"{s.get('planned_candidates', 0)} of {s.get('candidates', 0)} candidates with a plan; "
        f"{s['scenes_with_a_success']} scenes have at least one successful candidate (the ceiling); "
        f"a uniformly random candidate succeeds with probability {s['expected_random']['all']:.2f} "
        f"on average, a random planned one {s['expected_random']['planned']:.2f} (chance)."
    )
    if "executed_candidates" in s:
        left = s["candidates"] - s["executed_candidates"]
        reasons = "; ".join(f"{why} {n}" for why, n in s.get("unexecuted", {}).items())
        out.append(
            f"Executed: {s['executed_candidates']} of {s['candidates']} candidates, "
            f"{s.get('reference_planned', 0)} of them planned only by the reference planner "
            f"(tried on every candidate the default planner could not plan); {left} unexecuted"
            + (f" ({reasons})." if reasons else ".")
        )
    for scene, why in s.get("unevaluable", {}).items():
        out.append(f"Scene {scene} has no candidate set ({why}); every method counts it as a failure.")
    out.append("")
    base = [m for m in BASELINES if m in methods or m + PLANNED in methods]
    base += [old for old, new in _RENAMED.items() if old in methods and new not in base]
    out += [
        "### Baselines, ceiling and chance",
        "",
        "Success rate [95% Wilson interval]. *Planned candidates only*: every method chooses among "
        "the candidates that have a collision-free plan, the knowledge L4's plan term has; this is "
        "the fair comparison and the headline. *All candidates*: as AFFORD-X compares, where a "
        "method without a plan term can pick a grasp the arm cannot reach.",
        "",
        f"| method | {VIEW_NAMES[PLANNED]} | {VIEW_NAMES['']} |",
        "|---|---|---|",
    ]
    for m in base:
        cells = [_rate_cell(s["rates"][m + v]) if m + v in s["rates"] else "-" for v in (PLANNED, "")]
        out.append(f"| {m} | " + " | ".join(cells) + " |")
    er, c = s["expected_random"], s["ceiling"]
    out.append(f"| random, expected (chance) | {_pct(er['planned'])} | {_pct(er['all'])} |")
    out.append(f"| ceiling (any candidate succeeded) | {_rate_cell(c)} | {_rate_cell(c)} |")
    out.append("")
    for view, reach in ((v, r) for r in REACHES for v in (PLANNED, "")):
        cells_of = _cell_index(methods, view, reach)
        if not cells_of:
            continue
        title = VIEW_NAMES[view] + ("" if reach == "box" else f", {REACH_NAMES[reach]}")
        out += [
            f"### AFFORD-X factorial, {title}",
            "",
            f"Success rate [{conf} Wilson interval]; level x gate x combination; {REACH_NAMES[reach]}.",
            "",
        ]
        heads = [f"{g} / {c}" for c in COMBINATIONS for g in GATES]
        out.append("| level | " + " | ".join(heads) + " |")
        out.append("|---|" + "---|" * len(heads))
        for level in LEVELS:
            row = []
            for comb in COMBINATIONS:
                for g in GATES:
                    cell = cells_of.get((level, g, comb))
                    row.append(_rate_cell(s["rates"][cell]) if cell else "-")
            out.append(f"| {level} | " + " | ".join(row) + " |")
        out.append("")
    out += [
        "### Every method",
        "",
        "*Ties*: scenes where several candidates tied for the method's top rank and the pick was "
        "a draw seeded by the scene and the method (mean tie size in brackets).",
        "",
        "| method | successes / scenes | rate | 95% Wilson | abstained | ties |",
        "|---|---|---|---|---|---|",
    ]
    for m in methods:
        r = s["rates"][m]
        ties = f"{r['tie_scenes']} ({r['mean_tie']:.1f})" if r.get("ties_known") else "not recorded"
        out.append(
            f"| {m} | {r['successes']} / {r['n']} | {_pct(r['rate'])} | "
            f"[{_pct(r['low'])}, {_pct(r['high'])}] | {r['abstained']} | {ties} |"
        )
    out.append("")
    if s["comparisons"]:
        out += [
            "### Paired differences",
            "",
            "Mean difference in success over the same scenes, with paired bootstrap 95% intervals "
            "resampling scenes, and resampling sentences (scenes of one task share its object and "
            "wording, so they are not independent evidence about tasks); the interval by sentence "
            f"is given where there are at least {MIN_CLUSTERS} sentences, and decides the * "
            "(an interval that excludes 0) where it is given, the interval by scene elsewhere.",
            "",
            "| comparison | difference | 95% interval, by scene | 95% interval, by sentence | |",
            "|---|---|---|---|---|",
        ]
        for c in s["comparisons"]:
            if "sentence_low" in c:
                lo, hi = c["sentence_low"], c["sentence_high"]
                by_sentence = f"[{_signed(lo)}, {_signed(hi)}]"
            else:
                lo, hi = c["low"], c["high"]
                by_sentence = f"n/a ({c.get('sentences', '?')} sentences)"
            sig = "*" if lo > 0 or hi < 0 else ""
            out.append(f"| {c['label']} | {_signed(c['diff'])} | [{_signed(c['low'])}, {_signed(c['high'])}] "
                       f"| {by_sentence} | {sig} |")
        out.append("")
    films = s.get("films", {})
    if films.get("filmed"):
        out.append(
            f"Films: every executed rollout some method selected was filmed while it ran "
            f"({films['filmed']} rollouts in {films['scenes']} scenes, `videos/`); {films['disagree']} "
            f"disagree with the same candidate executed again without the camera."
        )
    d = s["determinism"]
    if d["checked"]:
        out.append(
            f"Determinism: {d['disagreements']} of {d['checked']} re-executed candidates disagree "
            f"with their first execution (rate {d['rate']:.3f})."
        )
    else:
        out.append("Determinism: no candidate was re-executed.")
    out.append("")
    if plot:
        out += [f"![success rates, {name}]({plot})", ""]
    return out


def _plot(name: str, s: Mapping[str, Any], methods: Sequence[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rates = [s["rates"][m] for m in methods]
    y = np.arange(len(methods))
    x = np.array([r["rate"] for r in rates])
    err = np.array([[r["rate"] - r["low"] for r in rates], [r["high"] - r["rate"] for r in rates]])
    colours = ["tab:grey" if _base(m) in BASELINES else "tab:blue" for m in methods]
    fig, ax = plt.subplots(figsize=(7.0, 0.28 * len(methods) + 1.2))
    ax.barh(y, x, xerr=np.clip(err, 0, None), color=colours, capsize=2, height=0.7)
    ax.set_yticks(y, methods, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("success rate (95% Wilson interval)")
    ax.set_title(f"{name}: {s['scenes']} scenes")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    # Fixed metadata: a rebuilt report is byte-identical.
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "_", name).strip("_")


def render_markdown(
    summary: Mapping[str, Any], provenance: Mapping[str, Any], plots: Mapping[str, str]
) -> str:
    cfg = summary["config"]
    methods = cfg["methods"]
    sessions = provenance.get("sessions", [])
    first = sessions[0] if sessions else {}
    lines = [
        "# Counterfactual evaluation of the selection layer",
        "",
        "Every method ranks the same content-hashed candidate set per scene; every candidate was "
        "executed from the identical start state, and a method's outcome is that of the candidate "
        "it selected (an abstention is a failure). Generated from the raw scene records alone "
        "(`afford eval report` rebuilds it).",
        "",
        f"- suites: {', '.join(cfg['suites'])}; {cfg['scenes']} scenes each; grounding: {cfg['grounding']}",
        f"- methods: {len(methods)}",
        f"- statistics: Wilson intervals and scene-clustered paired bootstrap, "
        f"{summary['statistics']['resamples']} resamples, seed {summary['statistics']['seed']}",
        f"- command: `{first.get('command', '?')}`",
    ]
    if not summary["complete"]:
        lines.append(
            f"- **incomplete run**: {summary['scenes_recorded']} of {summary['scenes_expected']} scene "
            "records; the numbers cover the recorded scenes only"
        )
    lines.append("")
    for name, s in summary["suites"].items():
        lines += _suite_markdown(name, s, methods, plots.get(name))
    lines += ["## Provenance", ""]
    if runs.mixed_code(provenance):
        lines += [
            "**Warning: the sessions of this run ran different source code** (see the source "
            "hashes below); scenes evaluated before and after the change are mixed.",
            "",
        ]
    for i, sess in enumerate(sessions):
        pk = ", ".join(f"{k} {v}" for k, v in sorted(sess.get("packages", {}).items()) if v)
        lines.append(
            f"- session {i + 1} ({sess.get('started', '?')}): `{sess.get('command', '')}`; git "
            f"{sess.get('git_commit')}{' (dirty)' if sess.get('git_dirty') else ''}, source "
            f"{str(sess.get('source_sha256'))[:12]}; "
            f"Python {sess.get('python')}; {pk}"
        )
    lines += [
        "",
        "Resolved evaluation config:",
        "",
        "```json",
        json.dumps(cfg["evaluation"], indent=1, sort_keys=True),
        "```",
        "",
    ]
    return "\n".join(lines)


def build_report(run_dir: Path | str, cfg: ReportConfig | None = None) -> Path:
    """Write ``report/report.md``, ``report/summary.json`` and the PNGs of ``run_dir``; returns
    the path of ``report.md``. Works on unfinished runs too (marked incomplete).

    Raises:
        runs.RunError: not a run directory, or a scene record is invalid.
    """
    cfg = cfg or ReportConfig()
    run_dir = Path(run_dir)
    summary = summarise(run_dir, cfg)
    out = run_dir / runs.REPORT
    out.mkdir(exist_ok=True)
    plots: dict[str, str] = {}
    if cfg.plots:
        for name, s in summary["suites"].items():
            if s["scenes"]:
                fname = f"success_{_slug(name)}.png"
                _plot(name, s, summary["config"]["methods"], out / fname)
                plots[name] = fname
    runs.write_json(out / "summary.json", summary)
    md = out / "report.md"
    runs.write_atomic(md, render_markdown(summary, runs.load_provenance(run_dir), plots).encode())
    return md
