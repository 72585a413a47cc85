"""Evaluation runs as immutable, verifiable, resumable directories.

Layout of a run directory::

    config.json                    the resolved run config (suites, scene count, methods,
                                   grounding, every threshold and weight), fixed before the
                                   first scene is evaluated
    provenance.json                git commit and dirty flag, Python and package versions,
                                   the command; one entry per session (a resumed run has two)
    scenes/<suite>/<scene:03d>.json  one raw scene record each (the evaluation core's schema)
    manifest.json                  sha256 of every file above; its presence marks the run
                                   finished, after which nothing listed in it is rewritten
    report/                        derived from the scene records alone (report.md, PNGs);
                                   outside the manifest, so it can be rebuilt at any time

The report lives *outside* the immutability check on purpose: it is a pure function of the
raw records, so rebuilding it with a fixed plotting bug must not invalidate the evidence.
``verify`` therefore hashes everything except ``manifest.json`` itself and ``report/``.

Every file is written atomically (a temporary file in the same directory, fsync, rename), so a
run killed at any instant leaves either a complete record or none. Re-running the same command
on the same directory resumes: valid records are kept, missing or unreadable ones are redone,
and a different config is refused rather than mixing two experiments in one directory.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import json
import os
import platform
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from afford_core.files import TMP_MARK, remove_temporaries, write_atomic
from afford_core.parallel import run_jobs

CONFIG = "config.json"
PROVENANCE = "provenance.json"
MANIFEST = "manifest.json"
SCENES = "scenes"
REPORT = "report"
_TMP_MARK = TMP_MARK
# Distributions whose versions decide a result (physics, planning, statistics, learning).
TRACKED_PACKAGES = (
    "mujoco",
    "numpy",
    "scipy",
    "pin",
    "coal",
    "ompl",
    "torch",
    "trimesh",
    "open3d",
    "matplotlib",
)
# A package whose distribution has another name than the module (the CPU wheel of open3d).
_DISTRIBUTIONS = {"open3d": ("open3d", "open3d-cpu")}
RECORD_KEYS = ("suite", "scene", "seed", "candidate_set_hash", "candidates", "methods")

SceneFn = Callable[[str, int], dict[str, Any]]


class RunError(RuntimeError):
    """A run directory cannot be created, resumed or written as asked."""


@dataclass(frozen=True)
class RunConfig:
    """What one evaluation run measures; serialised to ``config.json`` before it starts.

    Attributes:
        suites: Suite names, evaluated in this order.
        scenes: Scenes per suite; scene indices are ``0 .. scenes - 1``.
        methods: Method names every scene record must carry a selection for.
        grounding: Grounding source of the region (``oracle`` or ``geometric``).
        evaluation: The evaluation core's resolved config (thresholds, weights, sampler and
            determinism settings) as plain JSON; fixed before the run so that no threshold can
            be tuned after seeing outcomes.
    """

    suites: tuple[str, ...]
    scenes: int
    methods: tuple[str, ...]
    grounding: str
    evaluation: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.suites:
            raise ValueError("a run needs at least one suite")
        if len(set(self.suites)) != len(self.suites):
            raise ValueError(f"suites are listed twice: {list(self.suites)}")
        if self.scenes < 1:
            raise ValueError(f"scenes must be >= 1, got {self.scenes}")
        if not self.methods:
            raise ValueError("a run needs at least one method")
        if not self.grounding:
            raise ValueError("grounding must name a source")
        try:
            json.dumps(dict(self.evaluation), allow_nan=False)
        except (TypeError, ValueError) as err:
            raise ValueError(f"evaluation config must be plain JSON: {err}") from None

    def as_dict(self) -> dict[str, Any]:
        return {
            "suites": list(self.suites),
            "scenes": self.scenes,
            "methods": list(self.methods),
            "grounding": self.grounding,
            "evaluation": json.loads(json.dumps(dict(self.evaluation), sort_keys=True)),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunConfig:
        try:
            return cls(
                suites=tuple(data["suites"]),
                scenes=int(data["scenes"]),
                methods=tuple(data["methods"]),
                grounding=str(data["grounding"]),
                evaluation=dict(data.get("evaluation", {})),
            )
        except KeyError as err:
            raise RunError(f"{CONFIG} lacks {err.args[0]!r}") from None


@dataclass(frozen=True)
class RunSummary:
    """What ``execute`` did: scenes evaluated now, scenes kept from an earlier session."""

    run_dir: Path
    evaluated: int
    skipped: int
    redone: tuple[str, ...]
    seconds: float


# --------------------------------------------------------------------------- files


def write_json(path: Path, obj: Any) -> None:
    """Atomically write ``obj`` as indented, key-sorted JSON (NaN refused: not JSON)."""
    write_atomic(path, (json.dumps(obj, indent=1, sort_keys=True, allow_nan=False) + "\n").encode())


def _read_json(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def scene_path(run_dir: Path | str, suite: str, scene: int) -> Path:
    return Path(run_dir) / SCENES / suite / f"{scene:03d}.json"


def _tracked_files(run_dir: Path) -> Iterator[str]:
    """Every file the manifest covers, as POSIX paths relative to the run: all but the manifest
    and the derived report."""
    for path in sorted(run_dir.rglob("*")):
        rel = path.relative_to(run_dir)
        if rel.parts[0] == REPORT or rel.as_posix() == MANIFEST or path.is_dir():
            continue
        yield rel.as_posix()


# --------------------------------------------------------------------------- provenance


def _git(*args: str, cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


# Our Python packages whose code decides a run's numbers (afford_interfaces is generated).
SOURCE_PACKAGES = (
    "afford_bringup", "afford_cli", "afford_core", "afford_data", "afford_eval", "afford_perception",
    "afford_pipeline", "afford_planner", "afford_policy", "afford_ros", "afford_sim",
)  # fmt: skip


def _package_dirs() -> list[Path]:
    """Where each of our packages is imported from: the source tree, a colcon install or a wheel."""
    import importlib.util

    dirs = []
    for name in SOURCE_PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.origin is not None:
            dirs.append(Path(spec.origin).resolve().parent)
    return dirs


def source_hash(packages: Sequence[Path] | None = None) -> str:
    """sha256 over the Python sources of our packages (package name, path and contents):
    identifies the code that ran even when the git tree is dirty.

    ``packages`` are package folders (default: where each of ours is imported from). No source
    found is an error, not the hash of nothing.
    """
    dirs = _package_dirs() if packages is None else [Path(p) for p in packages]
    paths = sorted((d.name, p.relative_to(d).as_posix(), p) for d in dirs for p in d.rglob("*.py"))
    if not paths:
        raise FileNotFoundError(f"no Python sources in {[str(d) for d in dirs]}")
    h = hashlib.sha256()
    for package, rel, path in paths:
        h.update(f"{package}/{rel}".encode() + b"\0")
        h.update(path.read_bytes() + b"\0")
    return h.hexdigest()


def provenance(command: str, run_dir: Path | str | None = None) -> dict[str, Any]:
    """Where a session ran: the code (commit, dirty flag), the interpreter, the packages.

    ``run_dir``, the run's own output, does not count towards the dirty flag: regenerating a
    checked-in run replaces tracked files there, and that is the result, not a change of code.
    """
    here = Path(__file__).resolve().parent
    where, exclude = here, []
    top = _git("rev-parse", "--show-toplevel", cwd=here) if run_dir is not None else None
    if top is not None and run_dir is not None and Path(run_dir).resolve().is_relative_to(top):
        where = Path(top)
        exclude = ["--", ".", f":(exclude){Path(run_dir).resolve().relative_to(top).as_posix()}"]
    status = _git("status", "--porcelain", "--untracked-files=no", *exclude, cwd=where)
    versions: dict[str, str | None] = {}
    for name in TRACKED_PACKAGES:
        versions[name] = None
        for dist in _DISTRIBUTIONS.get(name, (name,)):
            try:
                versions[name] = importlib.metadata.version(dist)
                break
            except importlib.metadata.PackageNotFoundError:
                continue
    return {
        "command": command,
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "git_commit": _git("rev-parse", "HEAD", cwd=here),
        # Only tracked files: a stray untracked log does not change what code ran.
        "git_dirty": None if status is None else bool(status),
        "source_sha256": source_hash(),
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": versions,
        "affordance_weights": affordance_weights(),
    }


def affordance_weights() -> dict[str, Any]:
    """The checkpoint the learned grounding loads in this process (as ``LearnedSource`` resolves
    it: ``$AFFORD_AFFORDANCE_WEIGHTS``, else the shipped file), with its sha256, so a run made
    with other weights says so; ``error`` when none can be found (the learned sources then fail)
    or when this environment has no perception package at all (the Meta-World one)."""
    try:
        from afford_perception.affordance.source import WEIGHTS_ENV, WeightsNotFound, resolve_weights
    except ImportError as err:
        return {"error": f"no learned grounding in this environment ({err})"}
    try:
        path = resolve_weights()
    except (WeightsNotFound, FileNotFoundError) as err:
        return {"error": str(err)}
    return {"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
            "from_environment": bool(os.environ.get(WEIGHTS_ENV))}


# --------------------------------------------------------------------------- records


def record_problem(record: Any, suite: str, scene: int, methods: Sequence[str]) -> str | None:
    """Why ``record`` is not a valid raw record of ``suite``/``scene``; None when it is."""
    if not isinstance(record, dict):
        return "not a JSON object"
    missing = [k for k in RECORD_KEYS if k not in record]
    if missing:
        return f"lacks {missing}"
    if record["suite"] != suite or record["scene"] != scene:
        return f"is for {record['suite']}/{record['scene']}, expected {suite}/{scene}"
    absent = [m for m in methods if m not in record["methods"]]
    if absent:
        return f"has no selection for methods {absent}"
    known = {c.get("index") for c in record["candidates"] if isinstance(c, dict)}
    for name, sel in record["methods"].items():
        if sel is not None and sel not in known:
            return f"method {name!r} selected candidate {sel}, which is not in the set"
    return None


def _read_record(path: Path, suite: str, scene: int, methods: Sequence[str]) -> str | None:
    """None when ``path`` holds a valid record, else why not."""
    try:
        return record_problem(_read_json(path), suite, scene, methods)
    except (OSError, json.JSONDecodeError) as err:
        return f"unreadable ({err})"


def load_config(run_dir: Path | str) -> RunConfig:
    path = Path(run_dir) / CONFIG
    if not path.is_file():
        raise RunError(f"{run_dir} is not a run directory (no {CONFIG})")
    return RunConfig.from_dict(_read_json(path))


def load_provenance(run_dir: Path | str) -> dict[str, Any]:
    path = Path(run_dir) / PROVENANCE
    return _read_json(path) if path.is_file() else {"sessions": []}


def load_records(run_dir: Path | str) -> dict[str, list[dict[str, Any]]]:
    """The raw records of a run per suite, in scene order; only scenes that exist.

    Raises:
        RunError: a record is unreadable or does not match its place in the run.
    """
    run_dir = Path(run_dir)
    cfg = load_config(run_dir)
    out: dict[str, list[dict[str, Any]]] = {}
    for suite in cfg.suites:
        out[suite] = []
        for k in range(cfg.scenes):
            path = scene_path(run_dir, suite, k)
            if not path.exists():
                continue
            problem = _read_record(path, suite, k, cfg.methods)
            if problem:
                raise RunError(f"{path.relative_to(run_dir)} {problem}")
            out[suite].append(_read_json(path))
    return out


def is_finished(run_dir: Path | str) -> bool:
    return (Path(run_dir) / MANIFEST).is_file()


# --------------------------------------------------------------------------- run


def _open(run_dir: Path, config: RunConfig) -> None:
    """Create the run, or check that an existing one is the same experiment."""
    cfg_path = run_dir / CONFIG
    if is_finished(run_dir):
        raise RunError(
            f"{run_dir} is a finished run ({MANIFEST} exists) and is never rewritten; "
            "choose a new --out directory (or rebuild its report with `afford eval report`)"
        )
    if cfg_path.exists():
        try:
            old = _read_json(cfg_path)
        except (OSError, json.JSONDecodeError) as err:
            raise RunError(f"{cfg_path} is unreadable ({err}); not resuming into it") from None
        if old != config.as_dict():
            diff = sorted(
                k for k in set(old) | set(config.as_dict()) if old.get(k) != config.as_dict().get(k)
            )
            raise RunError(
                f"{run_dir} holds a run with a different config (differs in {', '.join(diff)}); "
                "resume with the same arguments or choose a new --out directory"
            )
    elif run_dir.exists() and any(run_dir.iterdir()):
        raise RunError(f"{run_dir} exists, is not empty and is not a run directory")
    else:
        write_json(cfg_path, config.as_dict())
    # Leftovers of a session killed mid-write: never complete, never part of the evidence.
    remove_temporaries(run_dir)


def _record_session(run_dir: Path, command: str) -> None:
    prov = load_provenance(run_dir)
    sessions = prov.setdefault("sessions", [])
    now = provenance(command, run_dir)
    if sessions and sessions[0].get("source_sha256") != now["source_sha256"]:
        # Not refused: a resume after an unrelated edit is common; but the report says so.
        print(
            f"afford: warning: {run_dir} was started with other source code "
            f"(git {sessions[0].get('git_commit')}); its scenes will mix two versions",
            file=sys.stderr,
        )
    sessions.append(now)
    write_json(run_dir / PROVENANCE, prov)


def mixed_code(prov: Mapping[str, Any]) -> bool:
    """Whether the sessions of a run ran different source code."""
    return len({s.get("source_sha256") for s in prov.get("sessions", [])}) > 1


def _todo(run_dir: Path, config: RunConfig) -> tuple[list[tuple[str, int]], list[str], int]:
    todo: list[tuple[str, int]] = []
    redone: list[str] = []
    for suite in config.suites:
        for k in range(config.scenes):
            path = scene_path(run_dir, suite, k)
            if path.exists():
                problem = _read_record(path, suite, k, config.methods)
                if problem is None:
                    continue
                redone.append(f"{suite}/{k:03d}: {problem}")
            todo.append((suite, k))
    skipped = len(config.suites) * config.scenes - len(todo)
    return todo, redone, skipped


def _progress(total: int, initial: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="scene", disable=not enabled, dynamic_ncols=True)


def execute(
    run_dir: Path | str,
    config: RunConfig,
    scene_fn: SceneFn,
    *,
    command: str = "",
    jobs: int = 1,
    progress: bool = True,
) -> RunSummary:
    """Evaluate every scene of ``config`` into ``run_dir`` (creating or resuming it), then write
    the manifest that finishes it.

    Args:
        run_dir: The run directory; created if absent.
        config: The run config; must equal the stored one when resuming.
        scene_fn: ``(suite, scene_index) -> record``. With ``jobs > 1`` it runs in worker
            processes, so it must be picklable (a module-level function or a partial of one).
        command: The command line, stored in the provenance and quoted by the report.
        jobs: Scenes evaluated in parallel (processes).
        progress: Show a progress bar on stderr.

    Raises:
        RunError: the run is finished, the directory holds another config or something else,
            or ``scene_fn`` returned a record that does not fit its scene.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    run_dir = Path(run_dir)
    t0 = time.perf_counter()
    _open(run_dir, config)
    _record_session(run_dir, command)
    todo, redone, skipped = _todo(run_dir, config)

    def store(suite: str, k: int, record: dict[str, Any]) -> None:
        problem = record_problem(record, suite, k, config.methods)
        if problem:
            raise RunError(f"the evaluation of {suite}/{k:03d} returned a record that {problem}")
        write_json(scene_path(run_dir, suite, k), record)

    bar = _progress(len(config.suites) * config.scenes, skipped, progress)

    def stored(job: tuple[str, int], record: dict[str, Any]) -> None:
        store(*job, record)
        bar.set_postfix_str(f"{job[0]}/{job[1]:03d}")
        bar.update()

    try:
        # Ctrl-C or a failed scene stops the run; what is stored is complete and resumable.
        run_jobs(functools.partial(_call, scene_fn), todo, 1 if len(todo) <= 1 else jobs, stored)
    finally:
        bar.close()
    finish(run_dir)
    return RunSummary(run_dir, len(todo), skipped, tuple(redone), time.perf_counter() - t0)


def _call(scene_fn: SceneFn, job: tuple[str, int]) -> dict[str, Any]:
    return scene_fn(*job)


def finish(run_dir: Path | str) -> dict[str, Any]:
    """Write the manifest (sha256 of every tracked file) and so mark the run finished.

    Raises:
        RunError: the run is already finished, or a scene of its config has no record.
    """
    run_dir = Path(run_dir)
    if is_finished(run_dir):
        raise RunError(f"{run_dir} is already finished; its manifest is never rewritten")
    cfg = load_config(run_dir)
    missing = [
        f"{s}/{k:03d}"
        for s in cfg.suites
        for k in range(cfg.scenes)
        if not scene_path(run_dir, s, k).exists()
    ]
    if missing:
        raise RunError(
            f"cannot finish {run_dir}: no record for scenes {missing[:5]}{'...' * (len(missing) > 5)}"
        )
    files = {rel: sha256_file(run_dir / rel) for rel in _tracked_files(run_dir)}
    manifest = {
        "algorithm": "sha256",
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "excluded": [MANIFEST, f"{REPORT}/"],
        "files": files,
    }
    write_json(run_dir / MANIFEST, manifest)
    # Read-only on disk as well: an editor or a stray script fails loudly instead of silently
    # invalidating the evidence (verify would still catch it).
    for rel in [*files, MANIFEST]:
        path = run_dir / rel
        path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return manifest


def verify(run_dir: Path | str) -> list[str]:
    """Problems with a finished run: files altered, added or removed since the manifest, scene
    records missing or invalid. An empty list means the run is intact."""
    run_dir = Path(run_dir)
    if not (run_dir / CONFIG).is_file():
        return [f"{run_dir} is not a run directory (no {CONFIG})"]
    if not is_finished(run_dir):
        return [f"{run_dir} is not finished (no {MANIFEST}): it was killed or is still running"]
    try:
        listed: dict[str, str] = _read_json(run_dir / MANIFEST)["files"]
    except (OSError, json.JSONDecodeError, KeyError, TypeError) as err:
        return [f"{MANIFEST} is unreadable ({err})"]
    problems: list[str] = []
    present = set(_tracked_files(run_dir))
    for rel in sorted(set(listed) - present):
        problems.append(f"removed: {rel}")
    for rel in sorted(present - set(listed)):
        problems.append(f"added: {rel}")
    for rel in sorted(present & set(listed)):
        if sha256_file(run_dir / rel) != listed[rel]:
            problems.append(f"altered: {rel}")
    if not problems:
        try:
            cfg = load_config(run_dir)
            records = load_records(run_dir)
        except (RunError, json.JSONDecodeError) as err:
            return [str(err)]
        for suite in cfg.suites:
            if len(records[suite]) != cfg.scenes:
                problems.append(f"{suite}: {len(records[suite])} of {cfg.scenes} scene records")
    return problems
