"""The catalogue: one seeded generator per ontology category, and what to say about an asset."""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np

from . import containers, cookware, furniture, groceries, simple, tools
from .base import Asset
from .generator import Generator

GENERATORS: dict[str, Generator] = {
    **containers.GENERATORS, **cookware.GENERATORS, **tools.GENERATORS, **simple.GENERATORS,
    **furniture.GENERATORS, **groceries.GENERATORS,
}


def categories() -> list[str]:
    """Names of every category with a generator, sorted."""
    return sorted(GENERATORS)


def make(category: str, seed: int = 0, **overrides: float) -> Asset:
    """A new instance of ``category``; the same (category, seed, overrides) gives the same object.

    Args:
        category: An ontology category name (see :func:`categories`).
        seed: Non-negative seed; it draws the shape parameters and the colours.
        overrides: Shape parameters to pin instead of drawing them (names of the category's
            params dataclass, e.g. ``make("mug", 3, radius=0.03)``); checked against its ranges.
    """
    try:
        gen = GENERATORS[category]
    except KeyError:
        raise KeyError(f"no generator for category {category!r}; known: {', '.join(categories())}") from None
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    # The category name is mixed into the stream so that mug 3 and bowl 3 do not share colours.
    rng = np.random.default_rng([int(seed), zlib.crc32(category.encode())])
    params = gen.params.sample(rng, overrides)
    built = gen.build(params, rng)
    asset = Asset(category=category, seed=int(seed), links=built.links, rgba=built.rgba,
                  mass=float(built.mass), params=params.as_dict())
    _rest_on_support(asset, built.centre_xy)
    return asset


def _rest_on_support(asset: Asset, centre_xy: bool) -> None:
    """Shift the geometry so it rests on z = 0 (and, if asked, centre its footprint).

    Generators already build on z = 0; this removes the last sub-millimetre offsets of
    hulls and bevels so an object never starts inside the table or dropping onto it.
    """
    lo, hi = asset.mesh().bounds
    shift = np.array([0.0, 0.0, -lo[2]])
    if centre_xy:
        shift[:2] = -(lo[:2] + hi[:2]) / 2
    if np.allclose(shift, 0.0):
        return
    root = asset.links[0]
    for pc in root.pieces:
        pc.mesh.apply_translation(shift)
    for lk in asset.links[1:]:
        if lk.parent == root.name:
            lk.pos = np.asarray(lk.pos, dtype=float) + shift


def metadata(asset: Asset) -> dict[str, Any]:
    """A JSON-friendly description of an asset: what it is, its parts, size, mass and joints."""
    info = asset.info
    lo, hi = asset.mesh().bounds
    parents = {lk.name: lk.parent for lk in asset.links}
    joints = [{"name": lk.joint.name, "kind": lk.joint.kind, "link": lk.name, "parent": parents[lk.name],
               "axis": lk.joint.axis.tolist(), "pos": lk.joint.pos.tolist(), "range": list(lk.joint.range),
               "parts": sorted({pc.part for pc in lk.pieces})}
              for lk in asset.links if lk.joint is not None]
    return {
        "category": asset.category,
        "name": asset.name,
        "seed": asset.seed,
        "parts": list(info.parts),
        "affordances": {p: list(info.affordances.get(p, ())) for p in info.parts},
        "default_grasp": info.default_grasp,
        "params": dict(asset.params),
        "bounds": [lo.tolist(), hi.tolist()],
        "mass": asset.mass,
        "fixed": info.fixed,
        "articulated": info.articulated,
        "joints": joints,
        "n_pieces": sum(len(lk.pieces) for lk in asset.links),
    }
