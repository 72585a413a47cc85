"""How the affordance reader reads free text: the share of queries read as the affordance meant.

``affordance/reader.py`` turns a free-text query ("the bit you hook a finger through") into the
affordance it asks for (the nearest training wordings vote), so a part source can ground it; its
reading caps every free-text score (``oracle_text`` in ``afford affordance eval``). Two sets
are read here, each ``category, affordance, query`` lines:

- ``tests/data/affordance_queries_dev.tsv`` (default): 193 queries, up to five per affordance
  each object offers, written by a third author told only the affordances' meanings and which
  part offers each, who read no file of this project (not the model's wordings, not the
  held-out queries); the 17 of its 210 that the held-out file also holds word for word ("the
  spout") were taken out, so nothing tuned on it is tuned on held-out queries. Open to read:
  the set to improve the reader on.
- ``--data src/afford_data/afford_data/independent_part_queries.tsv``: the independent split's
  168 held-out queries (another author's). Counts only, never its queries, so the reader is not
  tuned to them.

Prints the share read right, overall and per affordance meant, and the most common confusions
(meant -> read; dev set only).

Run:  .venv/bin/python bench/reader_readout.py [--data FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEV = ROOT / "tests" / "data" / "affordance_queries_dev.tsv"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEV,
                    help="category, affordance, query file (default: the dev set)")
    ap.add_argument("--out", type=Path, default=None, help="also write the readout (markdown) here")
    args = ap.parse_args(argv)
    from afford_data.independent_split import read_queries
    from afford_perception.affordance.reader import AffordanceReader

    rows = [(a, t) for lst in read_queries(args.data).values() for a, t in lst]
    if not rows:
        print(f"reader_readout: {args.data} holds no queries", file=sys.stderr)
        return 2
    reader = AffordanceReader()
    read = reader.read([t for _, t in rows])
    right = [a == r for (a, _), r in zip(rows, read, strict=True)]
    path = args.data.resolve()
    held_out = path != DEV.resolve()
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    command = " ".join(shlex.quote(a) for a in [".venv/bin/python", "bench/reader_readout.py",
                                                   *(argv if argv is not None else sys.argv[1:])])
    share = f"{sum(right)} of {len(rows)} ({sum(right) / len(rows):.1%})"
    lines = [f"# Affordance reader on {name}", "", f"Command: `{command}`", "",
             f"Read right: {share}; tied votes: {reader.ties}", "",
             "| affordance meant | queries | read right |", "|---|---|---|"]
    for aff in sorted({a for a, _ in rows}):
        mine = [ok for (a, _), ok in zip(rows, right, strict=True) if a == aff]
        lines.append(f"| {aff} | {len(mine)} | {sum(mine) / len(mine):.2f} |")
    if not held_out:
        confusions = Counter((a, r) for (a, _), r in zip(rows, read, strict=True) if a != r)
        lines += ["", "Most common confusions (meant -> read): "
                  + ", ".join(f"{a} -> {r} ({n})" for (a, r), n in confusions.most_common(8))]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
