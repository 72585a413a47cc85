"""How well the shipped text embedding reads held-out phrasings, before any point is looked at.

The learned model matches points against the MiniLM embedding of a query; a held-out wording
can only be grounded well if its embedding lies near the training phrasings of its own
affordance. This script measures that bound without the point model: for each held-out
phrasing it finds the nearest training phrasing (cosine similarity of MiniLM embeddings, the
anchoring of ``affordance/anchoring.py`` with k = 1) and reports whether that phrasing names
the same affordance. Each miss is a query the model is asked about the wrong affordance, and
the unseen-phrasing mIoU gap follows from the misses, not from the point encoder.

A baseline in the same run: the same readout of the training phrasings against the other
training phrasings (leave-one-out), i.e. how separable the seen wordings are.

Run:  .venv/bin/python bench/phrasing_readout.py [--out bench/results/phrasing_readout.txt]
"""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="also write the report here")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from afford_perception.affordance.vocabulary import split_phrasings
    from afford_perception.text_embedding import embed

    split = split_phrasings()
    seen = [(a, p) for a, ps in split.seen.items() for p in ps]
    unseen = [(a, p) for a, ps in split.unseen.items() for p in ps]
    held = readout(unseen, seen, embed)
    loo = readout(seen, seen, embed)

    command = shlex.join(["bench/phrasing_readout.py", *(argv or sys.argv[1:])])
    lines = [f"command: .venv/bin/python {command}", "",
             "held-out phrasing -> nearest training phrasing (MiniLM cosine)"]
    for aff, phrase, near, near_aff, sim in held:
        mark = "ok  " if near_aff == aff else "MISS"
        lines.append(f"  {mark} {aff:<13} {phrase!r:<40} -> {near!r} ({near_aff}, {sim:.2f})")
    n_held = sum(a == b for a, _, _, b, _ in held)
    n_loo = sum(a == b for a, _, _, b, _ in loo)
    lines += ["", f"held-out phrasings read as their own affordance: {n_held}/{len(held)} "
              f"= {n_held / len(held):.2f}",
              f"baseline, training phrasings leave-one-out:       {n_loo}/{len(loo)} "
              f"= {n_loo / len(loo):.2f}"]
    per: dict[str, list[bool]] = {}
    for aff, _, _, near_aff, _ in held:
        per.setdefault(aff, []).append(near_aff == aff)
    lines.append("per affordance (held-out): " + ", ".join(f"{a} {sum(v)}/{len(v)}" for a, v in per.items()))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
