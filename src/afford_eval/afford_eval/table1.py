"""AffordSim's Table 1 protocol: every benchmark task, the same scenes, five grasp sources.

``afford bench table1 --tier easy --robot fr3 --rollouts 20 --out DIR`` runs, for each task of
the tier (``afford_sim.benchmark``), ``rollouts`` seeded scenes, and in each scene every grasp
source of :mod:`afford_eval.grasp_sources` plus a chance row (a seeded uniform draw among the
generic detector's candidates, with the same planning budget). A rollout is one
``afford run --task ID --seed S`` episode with the source's chooser; its record holds the
drawn randomization, every stage's check and the reason of a failure.

Layout of a run directory::

    config.json                         tasks, sources, rollouts, robot, executor-independent
    provenance.json                     one entry per session (commit, dirty flag, packages)
    rollouts/<task>/<source>/<seed>.json one record each, written atomically
    report.md                           derived from the records alone (``afford bench table1
                                        --report DIR`` rebuilds it)

Re-running the command resumes: stored records are kept, the rest are run. A config that only
adds tasks to the stored one (the benchmark grew: ``--tier all`` now names more) or sources (a
run of the perceiving columns completed by the others) extends the run: the new rollouts are run
and join the report; any other difference is refused.
Rollouts are independent, so they run on the local cores
(``--executor local``, spawned processes) or on a Ray cluster (``--executor ray``, with
``--ray-address`` or a local instance of ``--jobs`` CPUs) through the same function.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

from afford_core.parallel import run_jobs, run_jobs_ray
from afford_eval.runs import provenance, write_atomic, write_json
from afford_eval.stats import wilson

Executor = Literal["local", "ray"]
CHANCE = "antipodal_random"
"""The chance column: a seeded uniform order of the generic detector's candidates."""
SOURCES: tuple[str, ...] = (
    "manual", "antipodal_stability", "antipodal_stability_mask", "affordance_learned",
    "affordance_part_labels", CHANCE,
)
"""Every grasp source of ``afford_eval.grasp_sources``, in report order."""


@dataclass(frozen=True)
class Table1Config:
    """What one run measures (stored as ``config.json``; a resumed run must match it).

    Attributes:
        tasks: Registered task ids, in report order.
        sources: Grasp source names (``afford_eval.grasp_sources`` and ``antipodal_random``).
        rollouts: Scenes per task; rollout ``k`` uses seed ``first_seed + k`` for every source.
        robot: The arm (``afford robots``).
        first_seed: Seed of the first scene.
        randomize: Domain randomization of every rollout (``afford_sim.randomization``:
            ``none``, ``table1`` for AffordSim's "aggressive randomization", an axis...); every
            source faces the same draw on the same seed.
    """

    tasks: tuple[str, ...]
    sources: tuple[str, ...] = SOURCES
    rollouts: int = 20
    robot: str = "fr3"
    first_seed: int = 0
    randomize: str = "none"

    def __post_init__(self) -> None:
        if self.rollouts < 1:
            raise ValueError(f"rollouts must be >= 1, got {self.rollouts}")
        if not self.tasks:
            raise ValueError("no task to run")
        unknown = [s for s in self.sources if s not in SOURCES]
        if unknown:
            raise ValueError(f"unknown grasp sources {unknown}; known: {', '.join(SOURCES)}")
        if self.first_seed < 0:
            raise ValueError("first_seed must be >= 0")
        from afford_sim.randomization import domain_randomization

        domain_randomization(self.randomize)  # KeyError listing the presets

    def as_dict(self) -> dict[str, Any]:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Table1Config:
        return cls(tasks=tuple(data["tasks"]), sources=tuple(data["sources"]), rollouts=int(data["rollouts"]),
                   robot=str(data["robot"]), first_seed=int(data["first_seed"]),
                   randomize=str(data.get("randomize", "none")))  # runs before randomization: none


@dataclass(frozen=True)
class Job:
    """One rollout: a task, a source, a seed, an arm, a domain randomization."""

    task_id: str
    source: str
    seed: int
    robot: str
    randomize: str = "none"

    def path(self, run_dir: Path) -> Path:
        return run_dir / "rollouts" / self.task_id / self.source / f"{self.seed:04d}.json"


def rollout(job: Job) -> dict[str, Any]:
    """Run one rollout; a crash is a failed rollout, recorded with its message."""
    os.environ.setdefault("MUJOCO_GL", "egl")
    from afford_eval.grasp_sources import GRASP_SOURCES, config_for
    from afford_pipeline.spine import SpineConfig, run_task

    t0 = time.perf_counter()
    record: dict[str, Any] = asdict(job)
    try:
        src = GRASP_SOURCES[job.source]
        spine = SpineConfig(seed=job.seed, robot=job.robot, allow_unvalidated_robot=True,
                            randomize=job.randomize)
        config, chooser = config_for(src, spine), src.chooser
        r = run_task(job.task_id, config, chooser=chooser)
        record.update(
            success=r.success, stages=r.stages, abstained=r.abstained,
            failed_stage=next((k for k, v in r.stages.items() if not v), None),
            detail=r.details, randomization=r.randomization, candidates=r.candidates,
            selected=None if r.selected is None else r.selected["index"],
            timings_ms={k: round(v, 1) for k, v in r.timings_ms.items()}, error=None,
        )
    except Exception as err:  # noqa: BLE001 - a crash is a failed rollout, kept with its reason
        record.update(success=False, stages={}, abstained=None, failed_stage=None, detail={},
                      error=f"{type(err).__name__}: {err}")
    record["wall_s"] = round(time.perf_counter() - t0, 2)
    return record


def jobs_of(config: Table1Config) -> list[Job]:
    """Every rollout of a config, scene-major so a partial run covers all sources of a scene."""
    return [Job(t, s, config.first_seed + k, config.robot, config.randomize)
            for t in config.tasks for k in range(config.rollouts) for s in config.sources]


def _valid(path: Path, job: Job) -> bool:
    try:
        rec = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    # A crash (an exception in our code, not the source's failure) is run again on resume.
    # Records from before the randomization field ran without it.
    same = isinstance(rec, dict) and all(rec.get(k, "none" if k == "randomize" else None) == v
                                         for k, v in asdict(job).items())
    return same and "success" in rec and not rec.get("error")


def _randomization_lines(config: Table1Config) -> list[str]:
    """The report's statement of the domain randomization (none: no line, as before it existed)."""
    if config.randomize == "none":
        return []
    from afford_sim.randomization import domain_randomization

    declared = domain_randomization(config.randomize).describe()
    return [f"Domain randomization `{config.randomize}` (every rollout's draw is in its record's "
            f"`randomization.domain`): {json.dumps(declared)}."]


def extends(stored: Table1Config, config: Table1Config) -> bool:
    """Whether ``config`` is ``stored`` with tasks or sources added (none dropped): the same
    rollouts, arm, seeds and randomization, so the stored records stay what it would run (a
    source's rollout does not depend on which other sources run)."""
    grows = {"tasks": (), "sources": ()}
    same = asdict(stored) | grows == asdict(config) | grows
    tasks, sources = set(stored.tasks), set(stored.sources)
    return (same and tasks <= set(config.tasks) and sources <= set(config.sources)
            and (tasks, sources) != (set(config.tasks), set(config.sources)))


def _open(run_dir: Path, config: Table1Config) -> None:
    path = run_dir / "config.json"
    if path.exists():
        stored = Table1Config.from_dict(json.loads(path.read_text()))
        if stored == config:
            return
        if extends(stored, config):
            write_json(path, config.as_dict())  # the new tasks or sources join; every record stays
            return
        raise ValueError(f"{run_dir} holds another run ({stored}); choose another --out, or name every "
                         "task and source it holds (a run is extended by new tasks or sources only)")
    if run_dir.exists() and any(run_dir.iterdir()):
        raise ValueError(f"{run_dir} is not empty and holds no table1 config; choose another --out")
    write_json(path, config.as_dict())


def _record_session(run_dir: Path, command: str) -> None:
    path = run_dir / "provenance.json"
    sessions = json.loads(path.read_text()) if path.exists() else []
    now = provenance(command, run_dir)
    # One table, one affordance model: a resumed run grounding with other weights would mix two
    # models' rollouts under one column. (Sessions recorded before the weights were would pass.)
    used = {str(s["affordance_weights"].get("sha256")) for s in sessions if "affordance_weights" in s}
    if used and str(now["affordance_weights"].get("sha256")) not in used:
        from afford_perception.affordance.source import WEIGHTS_ENV

        raise ValueError(f"{run_dir} was run with the affordance weights {sorted(u[:12] for u in used)}; "
                         f"this session loads {now['affordance_weights']} (is ${WEIGHTS_ENV} set?): "
                         "choose another --out")
    sessions.append(now)
    write_json(path, sessions)


def _run_local(todo: Sequence[Job], jobs: int, store: Callable[[Job, dict[str, Any]], None]) -> None:
    run_jobs(rollout, todo, jobs, store)


def _run_ray(todo: Sequence[Job], jobs: int, address: str | None,
             store: Callable[[Job, dict[str, Any]], None]) -> None:
    # Everything submitted at once: a cluster runs as many rollouts as it has CPUs for.
    run_jobs_ray(rollout, todo, max(1, len(todo)), store, cpus=jobs, address=address)


@dataclass
class Table1Summary:
    run_dir: Path
    ran: int
    kept: int
    wall_s: float
    report: Path = field(default_factory=Path)


def run(run_dir: Path | str, config: Table1Config, *, jobs: int = 1, executor: Executor = "local",
        ray_address: str | None = None, command: str = "",
        progress: Callable[[int, int, dict[str, Any]], None] | None = None) -> Table1Summary:
    """Run (or resume) every rollout of ``config`` into ``run_dir``, then write the report.

    Raises:
        ValueError: the directory holds another config, or an unknown executor.
        RuntimeError: ``executor="ray"`` without ray installed.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    if executor not in ("local", "ray"):
        raise ValueError(f"executor must be 'local' or 'ray', got {executor!r}")
    run_dir = Path(run_dir)
    t0 = time.perf_counter()
    _open(run_dir, config)
    _record_session(run_dir, command)
    every = jobs_of(config)
    todo = [j for j in every if not _valid(j.path(run_dir), j)]
    done = len(every) - len(todo)

    def store(job: Job, record: dict[str, Any]) -> None:
        nonlocal done
        write_atomic(job.path(run_dir), (json.dumps(record, indent=1, default=str) + "\n").encode())
        done += 1
        if progress is not None:
            progress(done, len(every), record)

    if executor == "local":
        _run_local(todo, jobs, store)
    else:
        _run_ray(todo, jobs, ray_address, store)
    report = write_report(run_dir)
    return Table1Summary(run_dir, len(todo), len(every) - len(todo), time.perf_counter() - t0, report)


# --------------------------------------------------------------------------- report


def load_records(run_dir: Path | str) -> list[dict[str, Any]]:
    """Every stored rollout record of a run."""
    return [json.loads(p.read_text()) for p in sorted(Path(run_dir).glob("rollouts/*/*/*.json"))]


def _rate(recs: Iterable[dict[str, Any]]) -> tuple[int, int]:
    rs = list(recs)
    return sum(bool(r["success"]) for r in rs), len(rs)


def _cell(k: int, n: int) -> str:
    if n == 0:
        return "-"
    lo, hi = wilson(k, n)
    return f"{100 * k / n:.0f} [{100 * lo:.0f}, {100 * hi:.0f}]"


def _tier_cell(by: Mapping[tuple[str, str], list[dict[str, Any]]], tasks: Sequence[str], source: str) -> str:
    """Mean of the tasks' rates, with the Wilson interval of the pooled rollouts."""
    counts = [_rate(by.get((t, source), [])) for t in tasks]
    rates = [k / n for k, n in counts if n]
    k, n = sum(c[0] for c in counts), sum(c[1] for c in counts)
    if not n:
        return "-"
    lo, hi = wilson(k, n)
    return f"{100 * sum(rates) / len(rates):.0f} [{100 * lo:.0f}, {100 * hi:.0f}]"


def build_report(
    config: Table1Config, records: Sequence[dict[str, Any]], sessions: Sequence[Mapping[str, Any]]
) -> str:
    """The Markdown report of a run, from its config and records alone."""
    from afford_eval.grasp_sources import GRASP_SOURCES
    from afford_sim.benchmark import BENCHMARK, SEED_TABLE1, SEED_TIER_AVERAGES, by_task_id

    cols = list(config.sources)
    # A column says what the method is; the seed's column it stands for follows in brackets.
    seed_column = {s: GRASP_SOURCES[s].column for s in cols}
    header = [f"{s} ({seed_column[s]})" for s in cols]

    def seed_cells(numbers: Mapping[str, int]) -> str:
        return " | ".join(str(numbers.get(seed_column.get(s, ""), "")) for s in cols)

    by: dict[tuple[str, str], list[dict[str, Any]]] = {}
    scenes: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for r in records:
        by.setdefault((r["task_id"], r["source"]), []).append(r)
        if r["source"] != CHANCE:
            scenes.setdefault((r["task_id"], r["seed"]), []).append(r)
    commits = sorted({str(s.get("git_commit"))[:10] + (" (dirty)" if s.get("git_dirty") else "")
                      for s in sessions})
    last = config.first_seed + config.rollouts - 1
    out = [
        "# AffordSim Table 1 on this stack",
        "",
        f"Command: `{sessions[-1]['command'] if sessions else '?'}`",
        f"Code: {', '.join(commits) or '?'}",
        f"Robot: {config.robot}. Rollouts per task: {config.rollouts} (seeds {config.first_seed}..{last}, "
        f"the same scenes for every source). Records: {len(records)} of {len(jobs_of(config))}; "
        f"crashed (counted as failures, run again on resume): {sum(bool(r.get('error')) for r in records)}.",
        *_randomization_lines(config),
        "",
        "Success rate (%) with 95% Wilson intervals. Every source faces the same scenes, the same "
        "planner with the same budget and the same skill after the grasp (docs/benchmark.md). "
        "**ceiling**: scenes where at least one source succeeded; **chance**: a seeded uniform draw "
        "among the generic detector's candidates. *seed*: AffordSim's published number for the same "
        "task (its Table 1 lists two tasks per tier and the tier averages), measured in Isaac Sim with "
        "other assets; a reference, not the same experiment.",
        "",
        "| tier | task (seed id) | " + " | ".join(header) + " | ceiling |",
        "|---|---|" + "---|" * (len(cols) + 1),
    ]
    tiers: dict[str, list[str]] = {}
    for t in config.tasks:
        info = by_task_id(t)
        tiers.setdefault(info.tier, []).append(t)
        cells = " | ".join(_cell(*_rate(by.get((t, s), []))) for s in cols)
        seeds = [k for (tt, k) in scenes if tt == t]
        ceiling = _cell(sum(any(r["success"] for r in scenes[(t, k)]) for k in seeds), len(seeds))
        out.append(f"| {info.tier} | {t} ({info.seed_id}) | {cells} | {ceiling} |")
        if info.seed_id in SEED_TABLE1:
            out.append(f"| | *seed* | {seed_cells(SEED_TABLE1[info.seed_id])} | |")
    out += [
        "",
        "Tier averages (mean of the tasks' rates, as the seed averages; the interval is the Wilson "
        "interval of the pooled rollouts):",
        "",
        "| tier | tasks run / in tier | " + " | ".join(header) + " |",
        "|---|---|" + "---|" * len(cols),
    ]
    for tier, ts in tiers.items():
        in_tier = sum(1 for b in BENCHMARK if b.tier == tier)
        cells = " | ".join(_tier_cell(by, ts, s) for s in cols)
        out.append(f"| {tier} | {len(ts)} / {in_tier} | {cells} |")
        if tier in SEED_TIER_AVERAGES:
            out.append(f"| *seed ({in_tier} tasks)* | | {seed_cells(SEED_TIER_AVERAGES[tier])} |")
    out += ["", "Per-stage success (% of rollouts that passed each stage; a stage after a failed one "
            "counts as failed) and where the failures happened:", ""]
    for t in config.tasks:
        for s, name in zip(cols, header, strict=True):
            rs = by.get((t, s), [])
            if not rs:
                continue
            stages = list(dict.fromkeys(k for r in rs for k in r["stages"]))
            passed = {n: sum(bool(r["stages"].get(n)) for r in rs) for n in stages}
            bars = ", ".join(f"{n} {100 * k / len(rs):.0f}" for n, k in passed.items())
            why = _failures(rs)
            out.append(f"- {t}, {name}: {bars or 'no stage ran'}" + (f"; failures: {why}" if why else ""))
    return "\n".join(out) + "\n"


def _failures(rs: Sequence[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for r in rs:
        if r["success"]:
            continue
        key = (r.get("failed_stage") or ("abstained" if r.get("abstained") else None)
               or ("error: " + str(r.get("error"))[:60] if r.get("error") else "unknown"))
        counts[key] = counts.get(key, 0) + 1
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))


def write_report(run_dir: Path | str) -> Path:
    """Rebuild ``report.md`` from the run's config and records."""
    run_dir = Path(run_dir)
    config = Table1Config.from_dict(json.loads((run_dir / "config.json").read_text()))
    prov = run_dir / "provenance.json"
    sessions = json.loads(prov.read_text()) if prov.exists() else []
    path = run_dir / "report.md"
    write_atomic(path, build_report(config, load_records(run_dir), sessions).encode())
    return path
