"""A static, self-contained HTML page replaying one scene of an evaluation run.

The page shows the target's object cloud and the scene's candidates as small gripper glyphs
(orthographic view, drag to rotate), coloured by their score under the rule the controls pick:
gate (none / feasibility), combination (weighted sum / product) and level (L1..L4). It
recomputes in JavaScript which candidate that rule selects, with the formulas of
``afford_planner.selection`` (see ``_SELECT_JS``), and shows whether the simulator executed it
successfully. Where the run recorded a selection for the same factorial cell the page checks
its own choice against it, so a drift between the page and the engine shows on the page.

Everything is inline (script, style, data as JSON): the page opens from disk, offline. The
controls can be set from the URL hash (``page.html#gate=none&comb=weighted_sum&level=L1``),
which is how the headless-browser test drives it.

The evaluation core's scene record does not store the object cloud, so by default it is
re-perceived from the scene's seed (the camera render is deterministic: same scene, same
points); a record that carries ``"cloud"`` (a list of points, or ``{"points", "region"}``) is
used as is.
"""

from __future__ import annotations

import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np

from afford_eval import runs

RANK_TERMS = ("reach", "approach", "clearance", "function", "task", "plan")


def downsample(points: np.ndarray, max_points: int) -> np.ndarray:
    """At most ``max_points`` of ``points``, evenly spread over the array (deterministic)."""
    points = np.asarray(points, dtype=np.float64).reshape(-1, 3)
    if len(points) <= max_points:
        return points
    return points[np.linspace(0, len(points) - 1, max_points).astype(int)]


def perceived_cloud(record: Mapping[str, Any], max_points: int = 1500) -> dict[str, Any]:
    """The target's observed cloud and grasp-region points of the record's scene, re-perceived
    from its seed (a render, no physics step). Seconds: it builds the scene."""
    from afford_eval.suites import SCENE_VARIANTS
    from afford_perception.grounding import make_source
    from afford_perception.parser import parse
    from afford_pipeline.episode import Episode
    from afford_sim.scene import sample_scene
    from afford_sim.tasks import find_task, get_task
    from afford_sim.world import BatchWorld

    intent = parse(record["sentence"])
    task = get_task(record.get("task_id") or find_task(intent))
    seed = int(record["seed"])
    spec = task.scene(seed)
    if record.get("suite") in SCENE_VARIANTS:
        spec = SCENE_VARIANTS[record["suite"]](spec, seed)
    world = BatchWorld(sample_scene(spec, seed=seed))
    try:
        ep = Episode(intent, task, world, make_source(record.get("grounding", "oracle")), seed=seed)
        ep.perceive()
        ep.ground()
        assert ep.cloud is not None
        return {
            "points": downsample(ep.cloud.points, max_points).round(4).tolist(),
            "region": downsample(ep.region, max_points // 3).round(4).tolist(),
            "source": "re-perceived from the scene seed",
        }
    finally:
        world.close()


def _cloud_of(record: Mapping[str, Any], max_points: int) -> dict[str, Any]:
    cloud = record.get("cloud")
    if cloud is None:
        return perceived_cloud(record, max_points)
    if isinstance(cloud, Mapping):
        pts, region = cloud.get("points", []), cloud.get("region", [])
    else:
        pts, region = cloud, []
    return {
        "points": downsample(np.asarray(pts), max_points).round(4).tolist() if len(pts) else [],
        "region": downsample(np.asarray(region), max_points // 3).round(4).tolist() if len(region) else [],
        "source": "stored in the record",
    }


def page_data(
    record: Mapping[str, Any],
    cloud: Mapping[str, Any],
    weights: Mapping[str, float] | None = None,
    gate_threshold: float = 0.5,
) -> dict[str, Any]:
    """The JSON the page embeds: what the JavaScript needs, nothing it does not."""
    w = {k: float((weights or {}).get(k, 1.0)) for k in RANK_TERMS}
    cands = [
        {
            "index": int(c["index"]),
            "source": c.get("origin", c.get("source", "")),
            "position": [round(float(v), 5) for v in c["position"]],
            "rotation": [[round(float(v), 6) for v in row] for row in c["rotation"]],
            "width": float(c.get("width", 0.08)),
            "terms": {k: float(v) for k, v in c["terms"].items()},
            "planned": bool(c.get("planned", True)),
            "success": bool(c["outcome"]["success"]),
            "failed_stage": c["outcome"].get("failed_stage"),
            "detail": c["outcome"].get("detail", ""),
        }
        for c in record["candidates"]
    ]
    return {
        "suite": record["suite"],
        "scene": record["scene"],
        "sentence": record.get("sentence", ""),
        "candidate_set_hash": record.get("candidate_set_hash", ""),
        "weights": w,
        "gate_threshold": gate_threshold,
        "candidates": cands,
        "recorded": {k: v for k, v in record.get("methods", {}).items()},
        "cloud": dict(cloud),
    }


# The selection rule of afford_planner.selection, line for line: eligibility by r*a*c against
# the threshold (with the same epsilon), L4 falling back to L3 when no eligible candidate has a
# plan term, product or weight-normalised sum, eligible candidates first, ties to the lower
# index, abstention when no candidate is eligible. The evaluation's methods draw among tied
# candidates instead (seeded), so the page also lists the tie, accepts any of its members as
# the run's pick, and shows the outcome of the one the run drew.
_SELECT_JS = r"""
const LEVEL_TERMS = {L1: ["reach", "approach", "clearance"],
  L2: ["reach", "approach", "clearance", "function"],
  L3: ["reach", "approach", "clearance", "function", "task"],
  L4: ["reach", "approach", "clearance", "function", "task", "plan"]};
const GATE_EPS = 1e-12;
function termOf(c, k) { const v = c.terms[k]; return v === undefined ? NaN : v; }
// The reach reading a rule uses: AFFORD-X's box (reach_box; plain reach in runs made before
// both were stored) or the arm's IK (reach_arm).
function ruleTerm(c, k, rule) {
  if (k !== "reach") return termOf(c, k);
  if (rule.reach === "arm") return termOf(c, "reach_arm");
  return "reach_box" in c.terms ? c.terms.reach_box : termOf(c, "reach");
}
function selectRule(cands, rule, weights, threshold) {
  const eligible = cands.map(c => rule.gate === "none" ||
    ruleTerm(c, "reach", rule) * termOf(c, "approach") * termOf(c, "clearance") >= threshold - GATE_EPS);
  let names = LEVEL_TERMS[rule.level], note = "";
  if (rule.level === "L4" && !cands.some((c, i) => eligible[i] && ("plan" in c.terms))) {
    names = LEVEL_TERMS.L3; note = "no plan term: ranked on the L3 terms";
  }
  const scores = cands.map((c, i) => {
    if (!eligible[i]) return 0;
    const xs = names.map(k => ruleTerm(c, k, rule));
    if (rule.comb === "product") return xs.reduce((a, b) => a * b, 1);
    const ws = names.map(k => weights[k] ?? 1);
    const wsum = ws.reduce((a, b) => a + b, 0);
    return xs.reduce((a, x, j) => a + ws[j] * x, 0) / wsum;
  });
  const order = cands.map((c, i) => i).sort((i, j) =>
    (eligible[j] - eligible[i]) || (scores[j] - scores[i]) || (cands[i].index - cands[j].index));
  const any = eligible.some(e => e);
  const best = any ? scores[order[0]] : 0;
  const tied = any ? order.filter(i => eligible[i] && Math.abs(scores[i] - best) <= 1e-12) : [];
  return {scores, eligible, order, chosen: any ? order[0] : null, tied, note};
}
"""

_PAGE_JS = r"""
const D = JSON.parse(document.getElementById("scene-data").textContent);
const $ = id => document.getElementById(id);
const view = {yaw: -0.6, pitch: 0.5, drag: null};
let current = null;

function ruleFromHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  for (const [key, id] of [["gate", "gate"], ["comb", "comb"], ["level", "level"], ["reach", "reach"]]) {
    const v = h.get(key);
    if (v !== null && [...$(id).options].some(o => o.value === v && !o.disabled)) $(id).value = v;
  }
}
function rule() {
  return {gate: $("gate").value, comb: $("comb").value, level: $("level").value, reach: $("reach").value};
}
const ARM = D.candidates.length > 0 && D.candidates.every(c => "reach_arm" in c.terms);
if (!ARM) { $("reach").value = "box"; $("reach").options[1].disabled = true; }

function colour(t) {  // score 0..1 -> dark blue .. yellow
  const stops = [[68, 1, 84], [59, 82, 139], [33, 145, 140], [94, 201, 98], [253, 231, 37]];
  const x = Math.min(Math.max(t, 0), 1) * (stops.length - 1), i = Math.min(Math.floor(x), stops.length - 2);
  const f = x - i, c = stops[i].map((v, k) => Math.round(v + f * (stops[i + 1][k] - v)));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

function norm(score) {  // colour scale over the eligible candidates' scores: they are often close
  const s = current.scores.filter((v, i) => current.eligible[i]);
  const lo = Math.min(...s), hi = Math.max(...s);
  return hi - lo < 1e-9 ? 1 : (score - lo) / (hi - lo);
}

function update() {
  const r = rule();
  current = selectRule(D.candidates, r, D.weights, D.gate_threshold);
  const tb = $("cands").tBodies[0];
  tb.innerHTML = "";
  const terms = ["reach", "approach", "clearance", "function", "task", "plan"];
  current.order.forEach(i => {
    const c = D.candidates[i], tr = tb.insertRow();
    tr.dataset.index = c.index;
    if (i === current.chosen) tr.className = "chosen";
    const cells = [c.index, c.source,
      ...terms.map(k => k in c.terms ? ruleTerm(c, k, r).toFixed(3) : "-"),
      current.eligible[i] ? "yes" : "no", current.scores[i].toFixed(4),
      c.success ? "success" : ("fail" + (c.failed_stage ? " @ " + c.failed_stage : "")),
      c.detail.length > 70 ? c.detail.slice(0, 70) + "..." : c.detail];
    cells.forEach((v, k) => { const td = tr.insertCell(); td.textContent = v;
      if (k === cells.length - 1) td.title = c.detail;
      if (k === cells.length - 3) {
        td.style.background = current.eligible[i] ? colour(norm(current.scores[i])) : "#eee";
      }
    });
  });
  const out = $("selected");
  const method = `afford_${r.level}_${r.gate}_${r.comb}` + (r.reach === "arm" ? "_armreach" : "");
  const rec = method in D.recorded ? D.recorded[method] : undefined;
  if (current.chosen === null) {
    out.dataset.index = "none"; out.dataset.success = "false";
    out.textContent = "abstains: no candidate passes the feasibility gate (counts as a failure)";
  } else {
    const c = D.candidates[current.chosen];
    out.dataset.index = String(c.index); out.dataset.success = String(c.success);
    out.textContent = `selects candidate #${c.index} (score ${current.scores[current.chosen].toFixed(4)}): ` +
      (c.success ? "SUCCESS" : `FAILURE (${c.failed_stage || "?"}: ${c.detail})`);
    const drawn = D.candidates.find(x => x.index === rec);
    if (current.tied.length > 1 && drawn !== undefined && rec !== c.index &&
        current.tied.some(i => D.candidates[i].index === rec)) {
      out.textContent += `; tied with ${current.tied.length - 1} more, and the run drew #${rec}: ` +
        (drawn.success ? "SUCCESS" : `FAILURE (${drawn.failed_stage || "?"}: ${drawn.detail})`);
    }
  }
  const mine = current.chosen === null ? null : D.candidates[current.chosen].index;
  const agree = $("agree");
  if (rec === undefined) {
    agree.dataset.state = "unrecorded"; agree.textContent = `(${method} was not run)`;
  }
  else {
    const tied = current.tied.map(i => D.candidates[i].index);
    const ok = rec === mine || (rec !== null && tied.includes(rec));
    agree.dataset.state = ok ? "agrees" : "disagrees";
    agree.textContent = !ok ? `DIFFERS from the run's ${method} (#${rec})` :
      tied.length > 1 ? `matches the run's ${method}: a tie of ${tied.length}, the run drew #${rec}` :
      `matches the run's ${method}`;
  }
  $("note").textContent = current.note;
  allRules();
  location.hash = `gate=${r.gate}&comb=${r.comb}&level=${r.level}&reach=${r.reach}`;
  draw();
}

function allRules() {  // every factorial cell at once: where the rule matters in this scene
  const tb = $("rules").tBodies[0], r = rule();
  tb.innerHTML = "";
  for (const level of ["L1", "L2", "L3", "L4"]) {
    const tr = tb.insertRow();
    tr.insertCell().textContent = level;
    for (const comb of ["weighted_sum", "product"]) for (const gate of ["none", "feasibility"]) {
      const s = selectRule(D.candidates, {gate, comb, level, reach: r.reach}, D.weights, D.gate_threshold);
      const c = s.chosen === null ? null : D.candidates[s.chosen];
      const td = tr.insertCell();
      td.dataset.rule = `${level}_${gate}_${comb}`;
      td.dataset.index = c === null ? "none" : String(c.index);
      td.dataset.success = String(c !== null && c.success);
      td.textContent = c === null ? "abstain" : `#${c.index} ${c.success ? "ok" : "fail"}`;
      td.className = c !== null && c.success ? "ok" : "fail";
      if (level === r.level && gate === r.gate && comb === r.comb) td.style.outline = "2px solid #0969da";
    }
  }
}

function project(p) {  // orthographic, world z up; yaw about z, then pitch about the view x
  const cy = Math.cos(view.yaw), sy = Math.sin(view.yaw);
  const cp = Math.cos(view.pitch), sp = Math.sin(view.pitch);
  const q = [p[0] - view.c[0], p[1] - view.c[1], p[2] - view.c[2]];
  const x = cy * q[0] - sy * q[1], y = sy * q[0] + cy * q[1];
  return [x, -(cp * q[2] - sp * y), sp * q[2] + cp * y];
}

function draw() {
  const cv = $("view"), g = cv.getContext("2d");
  g.clearRect(0, 0, cv.width, cv.height);
  const s = view.scale, ox = cv.width / 2, oy = cv.height / 2;
  const to = p => { const q = project(p); return [ox + s * q[0], oy + s * q[1], q[2]]; };
  g.fillStyle = "#9aa0a6";
  for (const p of D.cloud.points) { const q = to(p); g.fillRect(q[0] - 1, q[1] - 1, 2, 2); }
  g.fillStyle = "#e8a33d";
  for (const p of D.cloud.region) { const q = to(p); g.fillRect(q[0] - 1, q[1] - 1, 2.5, 2.5); }
  if (!current) return;
  const order = current.order.slice().reverse();  // best drawn last, on top
  for (const i of order) {
    const c = D.candidates[i], R = c.rotation, p = c.position;
    const ax = k => [R[0][k], R[1][k], R[2][k]];
    const y = ax(1), z = ax(2), h = c.width / 2, L = 0.04;
    const at = (a, b) => [0, 1, 2].map(k => p[k] + a * y[k] + b * z[k]);
    // Fingers reach the TCP along the approach z; the palm sits L behind; the stem further back.
    const pts = [at(-h, 0), at(-h, -L), at(h, -L), at(h, 0)].map(to);
    const stem = [at(0, -L), at(0, -2 * L)].map(to);
    const chosen = i === current.chosen;
    g.strokeStyle = current.eligible[i] ? colour(norm(current.scores[i])) : "#d0d0d0";
    g.lineWidth = chosen ? 4 : 1.5;
    g.beginPath(); g.moveTo(pts[0][0], pts[0][1]);
    for (const q of pts.slice(1)) g.lineTo(q[0], q[1]);
    g.moveTo(stem[0][0], stem[0][1]); g.lineTo(stem[1][0], stem[1][1]); g.stroke();
    if (chosen) { g.strokeStyle = c.success ? "#1a7f37" : "#cf222e"; g.lineWidth = 1.5;
      g.beginPath(); g.arc(to(p)[0], to(p)[1], 9, 0, 2 * Math.PI); g.stroke(); }
  }
}

function fit() {
  const all = D.cloud.points.concat(D.candidates.map(c => c.position));
  const lo = [0, 1, 2].map(k => Math.min(...all.map(p => p[k])));
  const hi = [0, 1, 2].map(k => Math.max(...all.map(p => p[k])));
  view.c = lo.map((v, k) => (v + hi[k]) / 2);
  const ext = Math.max(0.05, ...hi.map((v, k) => v - lo[k]));
  view.scale = 0.8 * Math.min($("view").width, $("view").height) / ext;
}

const cv = $("view");
cv.addEventListener("mousedown", e => { view.drag = [e.clientX, e.clientY]; });
window.addEventListener("mouseup", () => { view.drag = null; });
window.addEventListener("mousemove", e => {
  if (!view.drag) return;
  view.yaw += 0.01 * (e.clientX - view.drag[0]);
  view.pitch = Math.max(-1.5, Math.min(1.5, view.pitch + 0.01 * (e.clientY - view.drag[1])));
  view.drag = [e.clientX, e.clientY]; draw();
});
cv.addEventListener("wheel", e => { e.preventDefault(); view.scale *= Math.exp(-0.001 * e.deltaY); draw(); });
for (const id of ["gate", "comb", "level", "reach"]) $(id).addEventListener("change", update);
window.addEventListener("hashchange", () => { ruleFromHash(); if (location.hash.slice(1) !== "") update(); });
$("title").textContent = `${D.suite} / scene ${D.scene}: "${D.sentence}"`;
$("meta").textContent = `${D.candidates.length} candidates, set ${D.candidate_set_hash.slice(0, 12)}; ` +
  `cloud ${D.cloud.points.length} points (${D.cloud.source}), orange = grasp region`;
fit(); ruleFromHash(); update();
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font: 13px system-ui, sans-serif; margin: 12px; color: #1f2328; }}
#wrap {{ display: flex; gap: 16px; align-items: flex-start; flex-wrap: wrap; }}
canvas {{ border: 1px solid #d0d7de; cursor: grab; }}
table {{ border-collapse: collapse; font-size: 12px; }}
td, th {{ border: 1px solid #d0d7de; padding: 2px 6px; text-align: right; }}
tr.chosen {{ outline: 2px solid #0969da; font-weight: bold; }}
#selected {{ font-size: 15px; font-weight: bold; display: block; margin: 8px 0; }}
td.ok {{ color: #1a7f37; }} td.fail {{ color: #cf222e; }}
#agree[data-state=disagrees] {{ color: #cf222e; font-weight: bold; }}
</style></head><body>
<h2 id="title"></h2><div id="meta"></div>
<p>Rule:
<label>gate <select id="gate"><option value="feasibility">feasibility</option>
<option value="none">none</option></select></label>
<label>combination <select id="comb"><option value="product">product</option>
<option value="weighted_sum">weighted sum</option></select></label>
<label>level <select id="level"><option>L1</option><option>L2</option><option>L3</option>
<option selected>L4</option></select></label>
<label>reach from <select id="reach"><option value="box">AFFORD-X's box</option>
<option value="arm">the arm's IK</option></select></label>
<span id="note"></span></p>
<output id="selected"></output> <span id="agree"></span>
<div id="wrap"><canvas id="view" width="520" height="440"></canvas>
<table id="cands"><thead><tr><th>#</th><th>origin</th><th>r</th><th>a</th><th>c</th><th>f</th><th>t</th>
<th>p</th><th>eligible</th><th>score</th><th>outcome</th><th>detail</th></tr></thead><tbody></tbody></table></div>
<h3>Selection under every rule</h3>
<table id="rules"><thead><tr><th>level</th><th>none / weighted sum</th><th>feasibility / weighted sum</th>
<th>none / product</th><th>feasibility / product</th></tr></thead><tbody></tbody></table>
<p>Drag to rotate, wheel to zoom. Glyph: fingers at the TCP, palm and stem behind along the approach;
colour = score under the rule (grey: gated out); ring = selected (green success, red failure).</p>
<script type="application/json" id="scene-data">{data}</script>
<script>{select_js}{page_js}</script>
</body></html>
"""


def render_page(data: Mapping[str, Any]) -> str:
    """The HTML text of the page for ``page_data``'s output."""
    # "</" inside the embedded JSON would end the script element early.
    payload = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("</", "<\\/")
    title = html.escape(f"{data['suite']} scene {data['scene']} replay")
    return _PAGE.format(title=title, data=payload, select_js=_SELECT_JS, page_js=_PAGE_JS)


def write_replay(
    run_dir: Path | str,
    suite: str,
    scene: int,
    output: Path | str,
    max_points: int = 1500,
) -> Path:
    """Write the replay page of ``suite``/``scene`` of a run to ``output``.

    Weights and the gate threshold come from the run's config (fixed before the run), so the
    page ranks exactly as the run did.

    Raises:
        runs.RunError: not a run, or the scene has no valid record.
        KeyError: the suite is not part of the run.
    """
    run_dir = Path(run_dir)
    cfg = runs.load_config(run_dir)
    if suite not in cfg.suites:
        raise KeyError(f"suite {suite!r} is not in this run; its suites: {list(cfg.suites)}")
    if not 0 <= scene < cfg.scenes:
        raise ValueError(f"scene must be in 0..{cfg.scenes - 1}, got {scene}")
    path = runs.scene_path(run_dir, suite, scene)
    if not path.is_file():
        raise runs.RunError(f"{suite}/{scene:03d} has no record in {run_dir} (not evaluated yet)")
    record = json.loads(path.read_text())
    problem = runs.record_problem(record, suite, scene, cfg.methods)
    if problem:
        raise runs.RunError(f"{path} {problem}")
    ev = cfg.evaluation
    data = page_data(
        record, _cloud_of(record, max_points), ev.get("weights"), float(ev.get("gate_threshold", 0.5))
    )
    out = Path(output)
    out.write_text(render_page(data), encoding="utf-8")
    return out


def selections_for(data: Mapping[str, Any], rules: Sequence[tuple[str, str, str]],
                   reach: str = "box") -> dict[str, int | None]:
    """What ``afford_planner.selection.select`` chooses for each ``(level, gate, comb)`` on the
    page's candidates, reach read from ``reach`` ("box" or "arm"): the reference the page's
    JavaScript is tested against."""
    return {name: (min(tied) if tied else None) for name, tied in ties_for(data, rules, reach).items()}


def ties_for(data: Mapping[str, Any], rules: Sequence[tuple[str, str, str]],
             reach: str = "box") -> dict[str, list[int]]:
    """The candidates tied for the top of each ``(level, gate, comb)`` under
    ``afford_planner.selection.select`` (empty: it abstains), reach from AFFORD-X's box or the
    arm as the evaluation's methods read it; the run's methods drew among them."""
    from afford_core.grasp import GraspCandidate
    from afford_eval.methods import ARM_REACH, with_reach
    from afford_planner.selection import SelectionConfig, select

    out: dict[str, list[int]] = {}
    for level, gate, comb in rules:
        cands = [
            GraspCandidate(
                position=np.array(c["position"]),
                rotation=np.array(c["rotation"]),
                width=c["width"],
                terms=dict(c["terms"]),
                index=c["index"],
            )
            for c in data["candidates"]
        ]
        cands = with_reach(cands, cast(Any, reach))
        cfg = SelectionConfig(
            combination=cast(Any, comb),  # validated by SelectionConfig itself
            gate=cast(Any, gate),
            level=cast(Any, level),
            weights=dict(data["weights"]),
            gate_threshold=data["gate_threshold"],
        )
        name = f"afford_{level}_{gate}_{comb}" + (ARM_REACH if reach == "arm" else "")
        out[name] = list(select(cands, cfg).tied)
    return out
