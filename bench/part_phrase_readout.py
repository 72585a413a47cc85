"""How the parser reads a part named in someone else's words: right part, wrong part, refused.

``tests/data/part_phrases_heldout.tsv`` holds instructions to pick up an object by one of its
parts ("grab the mug by the bit you hook your finger through"), written by an author who had
not read the parser, the lexicon, the ontology or the affordance vocabulary, told only each
object's parts in plain words; each line is ``object, part, sentence``. Each sentence is parsed
as the robot parses it (MiniLM fallback on) and scored by the part it grasps:

- ``right``: the part the author meant;
- ``wrong``: another part, or another object: the reading that sends the arm to the wrong place;
- ``refused``: a one-line refusal, which the operator sees and rephrases.

A refusal costs a rephrasing; a wrong part costs a wrong grasp, so ``wrong`` is the number to
keep low. Beside the parser as it is, the same sentences are read with the last-resort reading
of the affordance model's training wordings switched off (``parser._part_by_wording``), in the
same run, so the change it makes is measured. The file is held out: this prints counts only,
never its sentences, so the parser is not tuned to them (a label the ontology lacks, such as a
bottle's "neck", is counted apart: no part is right there, and a refusal is what is wanted).

``tests/data/part_phrases_dev.tsv`` is a second set by another author who had not read the parser
either (told every object's parts), open to read: the parser's part readings were developed on it
(``--data tests/data/part_phrases_dev.tsv``), and the held-out file measures them.

Run:  .venv/bin/python bench/part_phrase_readout.py [--data FILE] [--out bench/results/part_phrase_readout.md]
"""

from __future__ import annotations

import argparse
import csv
import shlex
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "part_phrases_heldout.tsv"
#: The author's plain labels that the ontology names otherwise.
ALIASES = {("pot", "handles"): "handle"}


def load(path: Path = DATA) -> list[tuple[str, str, str]]:
    """(object, part, sentence) rows, the part mapped to the ontology's name where it differs."""
    rows = []
    with path.open(newline="") as f:
        for line in csv.reader(f, delimiter="\t"):
            if not line or line[0].startswith("#"):
                continue
            obj, part, sentence = (x.strip() for x in line)
            obj = obj.replace(" ", "_")  # "paper cup" is the ontology's paper_cup
            rows.append((obj, ALIASES.get((obj, part), part), sentence))
    return rows


def read(rows: list[tuple[str, str, str]]) -> Counter[str]:
    """Counts of right / wrong / refused, and ``no_such_part`` rows by how they were read."""
    from afford_core.ontology import category
    from afford_perception.parser import TaskParseError, parse

    out: Counter[str] = Counter()
    for obj, part, sentence in rows:
        exists = part in category(obj).parts
        try:
            intent = parse(sentence)
        except TaskParseError:
            out["refused" if exists else "no_such_part: refused"] += 1
            continue
        if not exists:
            out["no_such_part: read as a part"] += 1
        elif intent.target == obj and intent.grasp_region == part:
            out["right"] += 1
        else:
            out["wrong"] += 1
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    import afford_perception.parser as parser_module
    from afford_core.ontology import category

    rows = load(args.data)
    with_wordings = read(rows)
    kept = parser_module._part_by_wording
    parser_module._part_by_wording = lambda cat, phrase: None
    try:
        without = read(rows)
    finally:
        parser_module._part_by_wording = kept
    scored = sum(1 for obj, part, _ in rows if part in category(obj).parts)
    keys = ["right", "wrong", "refused", "no_such_part: refused", "no_such_part: read as a part"]
    command = ["python", "bench/part_phrase_readout.py", *(argv if argv is not None else sys.argv[1:])]
    lines = [
        "# How the parser reads a part named in someone else's words",
        "",
        f"command: {shlex.join(command)}",
        f"data: {args.data.relative_to(ROOT) if args.data.is_relative_to(ROOT) else args.data} "
        f"({len(rows)} sentences, {scored} naming a part the ontology has)"
        + ("; held out: counts only" if args.data.resolve() == DATA else "; a development set"),
        "",
        "| reading | parser as it is | without the training-wording reading |",
        "|---|---|---|",
        *(f"| {k} | {with_wordings[k]} | {without[k]} |" for k in keys),
        "",
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
