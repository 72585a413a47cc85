"""Mutation run over the safety checks and the stage checks: do the tests notice a broken check?

Each mutant is the real module with one small change inside one of the functions named below:
a refusal or branch removed (its ``if`` condition made ``False``), a comparison turned around
(``<`` to ``<=`` and back, ``>`` to ``>=``, ``==`` to ``!=``, ``in`` to ``not in``, ``is`` to
``is not``), ``and`` swapped with ``or``, a ``not`` dropped, or a check's verdict forced to
``True``. The mutant is
written to a copy of its package in a temporary directory that shadows the installed one on
``PYTHONPATH``; the tests that cover the module run against it. A mutant *survives* when those
tests still pass: either a test is missing, or no test can tell the change apart; the second
kind is listed in ``EXPLAINED`` with its reason, and any other survivor makes the run exit 1.

Run:  .venv/bin/python bench/mutation.py [--target safety|checks|all] [--out bench/results/mutation.md]
      [--list]    (print the mutants without running them)

The working tree is never modified, so it is safe to interrupt. About 3-4 s per safety mutant
and 8-55 s per stage-check mutant on two cores (about 25 minutes in all at f09a01c).
"""

from __future__ import annotations

import argparse
import ast
import copy
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Target:
    """A module, the functions in it to mutate, and the tests that must catch the mutants."""

    package_dir: Path  # the import package's folder, copied whole
    module: str  # path of the module inside package_dir
    functions: tuple[str, ...]  # "Class.method" or "function"
    tests: tuple[str, ...]


TARGETS: dict[str, Target] = {
    "safety": Target(
        ROOT / "src/afford_planner/afford_planner",
        "safety.py",
        ("SafetyChecker.check_trajectory", "SafetyChecker._check_workspace", "SafetyChecker.check_gripper"),
        ("src/afford_planner/test/test_safety.py",),
    ),
    "checks": Target(
        ROOT / "src/afford_sim/afford_sim",
        "tasks.py",
        (
            "Task.check_approach", "Task.check_grasp", "Task.check_lift", "_held",
            "PlaceTask.check_place", "PlaceOnTableTask.check_place", "HangTask.check_hang",
            "PourTask.check_pour",
            "OpenDrawerTask.check_approach", "OpenDrawerTask.check_grasp", "OpenDrawerTask.check_pull",
        ),
        # The stage checks shown failing, and passing on real episodes (the spine's end-to-end
        # runs with the simulator's labels: a check broken towards "no" fails them).
        ("src/afford_sim/test/test_stage_checks.py", "src/afford_pipeline/test/test_spine_e2e.py",
         "-k", "not geometric"),
    ),
}

_BOUNDARY = ("a threshold on a measured, continuous quantity (a distance, an angle, a height, a "
             "width): ``<`` and ``<=`` differ only when the measurement equals the threshold exactly, "
             "which no simulated state can be made to do; the threshold's side is tested on both "
             "sides by states well away from it")

#: Surviving mutants that no test can kill, each with the reason: (function, mutation, a piece
#: of the mutated line's source, why). Anything surviving that is not listed fails the run.
EXPLAINED: tuple[tuple[str, str, str, str], ...] = (
    ("Task.check_approach", "comparison flipped", "moved < 0.01", _BOUNDARY),
    ("Task.check_grasp", "comparison flipped", "world.gripper_width() > 0.004", _BOUNDARY),
    ("Task.check_lift", "comparison flipped", "dz > 0.05", _BOUNDARY),
    ("_held", "comparison flipped", "world.gripper_width() > 0.004", _BOUNDARY),
    ("PlaceTask.check_place", "comparison flipped", "np.all(centre[:2] >= lo)", _BOUNDARY),
    ("PlaceTask.check_place", "comparison flipped", "np.all(centre[:2] <= hi)", _BOUNDARY),
    ("PlaceTask.check_place", "comparison flipped", "sunk >= need", _BOUNDARY),
    ("PlaceOnTableTask.check_place", "comparison flipped", "moved >= 0.08", _BOUNDARY),
    ("PlaceOnTableTask.check_place", "comparison flipped", "tilt <= 20", _BOUNDARY),
    ("HangTask.check_hang", "comparison flipped", "low > 0.05", _BOUNDARY),
    ("PourTask.check_pour", "comparison flipped", "tilt >= 45 and off < 0.8 * r", _BOUNDARY),
    ("HangTask.check_hang", "and/or swapped", "held = world.in_contact(FINGERS[0]",
     "telling 'either finger touches the mug' from 'both do' needs a mug hanging on the rack with "
     "one finger pad still on it through the check's 1.5 s of settling; a teleported state does not "
     "stay there, so no test builds it (the same or/and in check_place and _held is killed)"),
    ("PourTask.check_pour", "comparison flipped", 's.object == "bowl" and s.part == "rim"',
     "taking the bowl's body for its rim: the body shares the rim's centre and its radius within "
     "1 mm and its top is about 1 cm lower, so only a held cup tilted over the bowl with its lip in "
     "that 1 cm band tells them apart; no test poses the arm there yet (it needs IK in the test)"),
    ("OpenDrawerTask.check_grasp", "and/or swapped", "cabinet/drawer_handle",
     "one finger on the drawer handle instead of both: no test places the hand with one pad on the "
     "fixed handle yet (it needs the arm posed by IK in the test); the end-to-end drawer runs have "
     "both fingers on it, the failure states none"),
)


_FLIP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}


@dataclass(frozen=True)
class Mutant:
    function: str
    line: int
    kind: str
    index: int  # the index-th node of its kind in the function, in walk order


def _functions(tree: ast.Module, wanted: tuple[str, ...]) -> dict[str, ast.FunctionDef]:
    found: dict[str, ast.FunctionDef] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found[node.name] = node
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    found[f"{node.name}.{item.name}"] = item
    missing = [w for w in wanted if w not in found]
    if missing:
        raise SystemExit(f"functions not found (renamed?): {missing}")
    return {w: found[w] for w in wanted}


def _sites(fn: ast.FunctionDef) -> Iterator[tuple[str, ast.AST, int]]:
    """(kind, node, operator index) of every place a mutation applies, in walk order."""
    for node in ast.walk(fn):
        if isinstance(node, ast.If):
            yield "branch removed", node, 0
        elif isinstance(node, ast.Compare):
            for k in range(len(node.ops)):
                yield "comparison flipped", node, k
        elif isinstance(node, ast.BoolOp):
            yield "and/or swapped", node, 0
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            yield "not dropped", node, 0
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Check"
              and node.args):
            yield "verdict forced True", node, 0


def mutants(target: Target) -> list[Mutant]:
    tree = ast.parse((target.package_dir / target.module).read_text())
    out = []
    for name, fn in _functions(tree, target.functions).items():
        counts: dict[str, int] = {}
        for kind, node, _ in _sites(fn):
            i = counts.get(kind, 0)
            counts[kind] = i + 1
            out.append(Mutant(name, int(getattr(node, "lineno", 0)), kind, i))
    return out


def apply(target: Target, mutant: Mutant) -> str:
    """The module's source with ``mutant`` applied."""
    tree = ast.parse((target.package_dir / target.module).read_text())
    fn = _functions(tree, target.functions)[mutant.function]
    sites = [(node, k) for kind, node, k in _sites(fn) if kind == mutant.kind]
    node, k = sites[mutant.index]
    if mutant.kind == "branch removed":
        assert isinstance(node, ast.If)
        node.test = ast.Constant(False)
    elif mutant.kind == "comparison flipped":
        assert isinstance(node, ast.Compare)
        node.ops[k] = _FLIP[type(node.ops[k])]()
    elif mutant.kind == "and/or swapped":
        assert isinstance(node, ast.BoolOp)
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif mutant.kind == "not dropped":
        # "not x" becomes "bool(x)": the negation is gone, the type stays a bool.
        assert isinstance(node, ast.UnaryOp)
        operand = ast.Call(ast.Name("bool", ast.Load()), [copy.deepcopy(node.operand)], [])
        node.op = ast.UAdd()
        node.operand = operand
    else:
        assert isinstance(node, ast.Call)
        node.args[0] = ast.Constant(True)
    return ast.unparse(ast.fix_missing_locations(tree))


def explanation(target: Target, mutant: Mutant) -> str | None:
    """Why ``mutant`` cannot be killed, when it is listed in :data:`EXPLAINED`."""
    line = (target.package_dir / target.module).read_text().splitlines()[mutant.line - 1]
    for function, kind, snippet, why in EXPLAINED:
        if function == mutant.function and kind == mutant.kind and snippet in line:
            return why
    return None


def run_tests(target: Target, source: str | None, timeout: float) -> tuple[bool, float]:
    """Run the target's tests against ``source`` (the original when None); (passed, seconds)."""
    with tempfile.TemporaryDirectory(prefix="afford-mutant-") as tmp:
        env = dict(os.environ)
        if source is not None:
            pkg = Path(tmp) / target.package_dir.name
            shutil.copytree(target.package_dir, pkg, ignore=shutil.ignore_patterns("__pycache__", "weights"))
            if (target.package_dir / "weights").exists():
                (pkg / "weights").symlink_to(target.package_dir / "weights")
            (pkg / target.module).write_text(source)
            env["PYTHONPATH"] = os.pathsep.join([tmp, env.get("PYTHONPATH", "")])
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        start = time.monotonic()
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *target.tests],
                cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
            )
            passed = proc.returncode == 0
        except subprocess.TimeoutExpired:
            passed = False  # a mutant that hangs the tests is caught
        return passed, time.monotonic() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--target", choices=[*TARGETS, "all"], default="all")
    ap.add_argument("--out", default=None, help="write the Markdown report here too")
    ap.add_argument("--list", action="store_true", help="print the mutants and stop")
    args = ap.parse_args()
    names = list(TARGETS) if args.target == "all" else [args.target]
    lines = [f"Command: `python bench/mutation.py --target {args.target}"
             + (f" --out {args.out}`" if args.out else "`"), ""]
    total = survived = explained_total = 0
    for name in names:
        target = TARGETS[name]
        found = mutants(target)
        if args.list:
            for m in found:
                print(f"{name}: {m.function}:{m.line} {m.kind} #{m.index}")
            continue
        ok, base = run_tests(target, None, timeout=600)
        if not ok:
            print(f"{name}: the tests fail on the unmutated code; fix that first", file=sys.stderr)
            return 2
        print(f"{name}: {len(found)} mutants of {target.module}, tests take {base:.1f} s unmutated",
              flush=True)
        rows = []
        for k, m in enumerate(found, 1):
            passed, secs = run_tests(target, apply(target, m), timeout=max(60.0, 5 * base))
            why = explanation(target, m) if passed else None
            status = "killed" if not passed else ("survived, explained" if why else "SURVIVED")
            print(f"  [{k}/{len(found)}] {m.function}:{m.line} {m.kind}: {status} ({secs:.1f} s)", flush=True)
            rows.append((m, status, why or ""))
        killed = sum(1 for _, s, _ in rows if s == "killed")
        explained = sum(1 for _, s, _ in rows if s == "survived, explained")
        total += len(rows)
        survived += len(rows) - killed - explained
        explained_total += explained
        lines += [f"## {name}: `{target.module}` against {', '.join(target.tests)}", "",
                  f"{killed} of {len(rows)} mutants killed, {explained} survived with a reason, "
                  f"{len(rows) - killed - explained} survived unexplained.", "",
                  "| function | line | mutation | result |", "|---|---|---|---|"]
        lines += [f"| {m.function} | {m.line} | {m.kind} | {s} |" for m, s, _ in rows]
        reasons = sorted({w for _, s, w in rows if w})
        if reasons:
            lines += ["", "Why the explained ones survive:", ""] + [f"- {w}." for w in reasons]
        lines.append("")
    if args.list:
        return 0
    lines.insert(1, f"{total - survived - explained_total} of {total} mutants killed, {explained_total} "
                    f"survived with a reason, {survived} survived unexplained.")
    report = "\n".join(lines) + "\n"
    print(report)
    if args.out:
        Path(args.out).write_text(report)
    return 0 if survived == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
