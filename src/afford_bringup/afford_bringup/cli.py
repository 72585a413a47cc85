"""The ``afford`` command: run the sentence-to-interaction spine and inspect the asset library.

    afford run "hang the mug on the rack" --seed 3 --grounding geometric --video out.mp4
    afford run "pick up the scoop" --json
    afford objects
    afford show mug --seed 2 -o mug.png

Errors print one line on stderr and exit non-zero.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence


def _setup_env() -> None:
    # Offline model loading and headless rendering, also when scripts/env.sh was not sourced.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("MUJOCO_GL", "egl")
    os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])


def _cmd_run(args: argparse.Namespace) -> int:
    from afford_bringup.spine import SpineConfig, run_sentence

    config = SpineConfig(grounding=args.grounding, seed=args.seed, video_path=args.video)
    progress = None if args.json else (lambda line: print(line, flush=True))
    result = run_sentence(args.sentence, config, progress=progress)
    if args.json:
        print(json.dumps(result.as_dict()))
    else:
        print(result.summary())
    return 0 if result.success else 3


def _cmd_objects(args: argparse.Namespace) -> int:
    from afford_perception.ontology import CATEGORIES
    from afford_sim import assets

    rows = []
    for name in assets.categories():
        cat = CATEGORIES[name]
        meta = assets.metadata(assets.make(name, 0))
        affs = "; ".join(f"{p}: {', '.join(a)}" for p, a in cat.affordances.items())
        rows.append(
            (
                name,
                ", ".join(cat.parts),
                "fixed" if cat.fixed else "free",
                "articulated" if cat.articulated else "",
                affs,
                meta,
            )
        )
    if args.json:
        print(
            json.dumps(
                [
                    {
                        "category": r[0],
                        "parts": r[1].split(", "),
                        "base": r[2],
                        "articulated": bool(r[3]),
                        "affordances": CATEGORIES[r[0]].affordances,
                    }
                    for r in rows
                ]
            )
        )
        return 0
    width = max(len(r[0]) for r in rows)
    for name, parts, base, art, affs, _ in rows:
        print(f"{name:<{width}}  parts: {parts:<45} {base:<5} {art}")
        print(f"{'':<{width}}  affords: {affs}")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    from afford_sim import assets

    asset = assets.make(args.object, args.seed)
    assets.render_labelled_cloud(asset, args.output)
    print(f"wrote {args.output} ({asset.name}: parts {', '.join(asset.info.parts)})")
    return 0


def _grounding_sources() -> list[str]:
    from afford_perception.grounding import available_sources

    return available_sources()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="afford", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a task sentence through the spine in the batch world")
    run.add_argument("sentence", help='e.g. "hang the mug on the rack"')
    run.add_argument("--seed", type=int, default=0, help="scene and object seed (default 0)")
    run.add_argument(
        "--grounding",
        default="oracle",
        choices=_grounding_sources(),
        help="where the grasp region comes from (default: oracle)",
    )
    run.add_argument("--video", default=None, help="write an MP4 of the execution here")
    run.add_argument("--json", action="store_true", help="print one JSON object instead of a report")
    run.set_defaults(func=_cmd_run)

    objs = sub.add_parser("objects", help="list the procedural asset library")
    objs.add_argument("--json", action="store_true")
    objs.set_defaults(func=_cmd_objects)

    show = sub.add_parser("show", help="draw an object's labelled surface cloud to a PNG")
    show.add_argument("object", help="category name, see `afford objects`")
    show.add_argument("--seed", type=int, default=0)
    show.add_argument("-o", "--output", default="object.png")
    show.set_defaults(func=_cmd_show)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    _setup_env()
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("afford: interrupted", file=sys.stderr)
        return 130
    except (ValueError, KeyError, RuntimeError, FileNotFoundError) as err:
        msg = err.args[0] if isinstance(err, KeyError) and err.args else str(err)
        print(f"afford: error: {msg}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
