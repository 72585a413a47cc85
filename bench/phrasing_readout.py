"""How well the shipped text embedding reads held-out phrasings, before any point is looked at.

The learned model matches points against the MiniLM embedding of a query; a held-out wording
can only be grounded well if its embedding lies near the training phrasings of its own
affordance. This script measures that bound without the point model: for each held-out
phrasing it finds the nearest training phrasing (cosine similarity of MiniLM embeddings, the
anchoring of ``affordance/anchoring.py`` with k = 1) and reports whether that phrasing names
the same affordance. Each miss is a query the model is asked about the wrong affordance, and
the unseen-phrasing mIoU gap follows from the misses, not from the point encoder.

The training wordings are the training pool (``vocabulary.training_pool``: the seen phrasings
and the training-only ones). Baselines in the same run: the held-out readout against the seen
phrasings alone (the vocabulary before the training-only wordings), and the training wordings
read against each other (leave-one-out), i.e. how separable the trained wordings are.

With ``--eval`` (the JSON of ``afford affordance eval --json``), each held-out phrasing also
gets the learned model's mean IoU on the unseen-phrasing split, and the split's score is given
twice: over all held-out phrasings, and without those that have a near-copy among the training
wordings (cosine >= ``--near``, same affordance), i.e. on wordings that are new in substance and
not only in letters. Both are the mean over affordances of the mean over their phrasings.

Run:  .venv/bin/python bench/phrasing_readout.py [--eval bench/results/affordance_eval.json]
      [--out bench/results/phrasing_readout.txt]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path

import numpy as np


def readout(queries: list[tuple[str, str]], anchors: list[tuple[str, str]],
            embed: object) -> list[tuple[str, str, str, str, float]]:
    """(affordance, phrase, nearest anchor phrase, its affordance, cosine) per query; a query
    that is itself an anchor is compared with the other anchors only (leave-one-out)."""
    q_emb = np.asarray(embed([p for _, p in queries]))  # type: ignore[operator]
    a_emb = np.asarray(embed([p for _, p in anchors]))  # type: ignore[operator]
    sims = q_emb @ a_emb.T
    rows = []
    for i, (aff, phrase) in enumerate(queries):
        row = sims[i].copy()
        row[[j for j, (_, p) in enumerate(anchors) if p == phrase]] = -np.inf
        j = int(np.argmax(row))
        rows.append((aff, phrase, anchors[j][1], anchors[j][0], float(row[j])))
    return rows


Row = tuple[str, str, str, str, float]


def _macro(held: list[Row], by_phrase: dict[str, float], skip: set[str]) -> float:
    """Mean over affordances of the mean IoU over their held-out phrasings not in ``skip``: the
    benchmark's own ``summarize`` with one entry per phrasing instead of per query."""
    from afford_perception.affordance.evaluate import summarize

    kept = [(aff, phrase) for aff, phrase, *_ in held if phrase not in skip and phrase in by_phrase]
    return float(summarize([a for a, _ in kept], [by_phrase[p] for _, p in kept])["overall"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the report here")
    parser.add_argument("--eval", type=Path, help="`afford affordance eval --json` output to read "
                        "the learned model's IoU per held-out phrasing from")
    parser.add_argument("--near", type=float, default=0.9, help="cosine from which a training wording "
                        "counts as a near-copy of a held-out one (default 0.9)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from afford_perception.affordance.vocabulary import split_phrasings, training_pool
    from afford_perception.text_embedding import embed

    split = split_phrasings()
    seen = [(a, p) for a, ps in split.seen.items() for p in ps]
    pool = [(a, p) for a, ps in training_pool(split).items() for p in ps]
    unseen = [(a, p) for a, ps in split.unseen.items() for p in ps]
    held = readout(unseen, pool, embed)
    held_seen_only = readout(unseen, seen, embed)
    loo = readout(pool, pool, embed)

    command = shlex.join(["bench/phrasing_readout.py", *(argv or sys.argv[1:])])
    lines = [f"command: .venv/bin/python {command}", "",
             "held-out phrasing -> nearest training wording (MiniLM cosine)"]
    by_phrase: dict[str, float] = {}
    if args.eval:
        by_phrase = json.loads(args.eval.read_text())["test_unseen_phrasings"]["learned"]["by_phrase"]
    for aff, phrase, near, near_aff, sim in held:
        mark = "ok  " if near_aff == aff else "MISS"
        score = f"  IoU {by_phrase[phrase]:.2f}" if phrase in by_phrase else ""
        lines.append(f"  {mark} {aff:<13} {phrase!r:<40} -> {near!r} ({near_aff}, {sim:.2f}){score}")
    n_held = sum(a == b for a, _, _, b, _ in held)
    n_seen = sum(a == b for a, _, _, b, _ in held_seen_only)
    n_loo = sum(a == b for a, _, _, b, _ in loo)
    lines += ["", f"held-out phrasings read as their own affordance:  {n_held}/{len(held)} "
              f"= {n_held / len(held):.2f} ({len(pool)} training wordings)",
              f"baseline, against the seen phrasings only:         {n_seen}/{len(held)} "
              f"= {n_seen / len(held):.2f} ({len(seen)} wordings)",
              f"baseline, training wordings leave-one-out:         {n_loo}/{len(loo)} "
              f"= {n_loo / len(loo):.2f}"]
    per: dict[str, list[bool]] = {}
    for aff, _, _, near_aff, _ in held:
        per.setdefault(aff, []).append(near_aff == aff)
    lines.append("per affordance (held-out): " + ", ".join(f"{a} {sum(v)}/{len(v)}" for a, v in per.items()))
    if by_phrase:
        copies = {p for a, p, _, near_aff, sim in held if near_aff == a and sim >= args.near}
        lines += ["", f"learned, unseen-phrasing split ({args.eval}):",
                  f"  all {len(held)} held-out phrasings: {_macro(held, by_phrase, set()):.3f}",
                  f"  without the {len(copies)} with a near-copy (cos >= {args.near}): "
                  f"{_macro(held, by_phrase, copies):.3f}  (left out: {', '.join(sorted(copies))})"]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
