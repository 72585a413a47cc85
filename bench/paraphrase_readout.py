"""How many sentences written by someone else reach the task they ask for.

The benchmark's tasks each carry a few phrasings of our own (``afford tasks --json``), and the
suite checks that every one of them parses back to its task. That shows the parser reads what
we wrote. This readout asks the question a new user asks: does it read what *they* write?
``tests/data/benchmark_paraphrases.tsv`` holds sentences by an author who had not read the
parser, the lexicon, the ontology or the task definitions, told only what each task does. Each
sentence is parsed in a scene holding the task's objects and mapped to a task id
(``find_steps``: one task, or a composite's steps in turn); it counts as understood when that
is the task it was written for.

Run:  .venv/bin/python bench/paraphrase_readout.py [--out bench/results/paraphrase_readout.md]
"""

from __future__ import annotations

import argparse
import csv
import functools
import shlex
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "benchmark_paraphrases.tsv"


def load(path: Path = DATA) -> list[tuple[str, str]]:
    """(task id, sentence) rows of the paraphrase file."""
    with open(path, encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return [(r["task_id"].strip(), r["sentence"].strip()) for r in rows]


def read(rows: list[tuple[str, str]]) -> list[tuple[str, str, str | None, str]]:
    """(task id, sentence, task it reached or None, why not) per row."""
    from afford_perception.parser import TaskParseError, parse_steps
    from afford_sim.tasks import CompositeTask, find_steps, get_task

    @functools.cache  # one scene per task, not per sentence
    def scope_of(task_id: str) -> list[str]:
        task = get_task(task_id)
        tasks = task.subtasks() if isinstance(task, CompositeTask) else [task]
        # Each object of the scene once, so "all the cubes" can be counted (a tower of four).
        scope = [o.category for o in task.scene(0).objects]
        return scope + [o for t in tasks for o in (t.target, t.destination) if o and o not in scope]

    out = []
    for task_id, sentence in rows:
        scope = scope_of(task_id)
        try:
            got = find_steps(parse_steps(sentence, known_objects=scope))
            out.append((task_id, sentence, got, "" if got == task_id else f"reached {got}"))
        except (TaskParseError, ValueError) as err:
            out.append((task_id, sentence, None, str(err)))
    return out


def report(results: list[tuple[str, str, str | None, str]], command: str) -> str:
    by: dict[str, list[tuple[str, str | None, str]]] = defaultdict(list)
    for task_id, sentence, got, why in results:
        by[task_id].append((sentence, got, why))
    ok = sum(got == t for t, _, got, _ in results)
    lines = [
        f"Command: `{command}`",
        "",
        f"Sentences by an independent author understood as the task they ask for: {ok} of "
        f"{len(results)} ({100 * ok / max(len(results), 1):.0f}%).",
        "",
        "| task | understood |",
        "|---|---|",
    ]
    for task_id, rs in by.items():
        lines.append(f"| {task_id} | {sum(got == task_id for _, got, _ in rs)} / {len(rs)} |")
    lines += ["", "Not understood:", ""]
    for task_id, rs in by.items():
        for sentence, got, why in rs:
            if got != task_id:
                lines.append(f"- {task_id}: \"{sentence}\" -> {why}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)
    given = argv if argv is not None else sys.argv[1:]
    command = shlex.join(["python", "bench/paraphrase_readout.py", *given])
    text = report(read(load(args.data)), command)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
