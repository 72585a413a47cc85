"""Procedural asset library: seeded, part-labelled objects for every ontology category.

    from afford_sim.assets import make, categories, metadata
    mug = make("mug", seed=3)          # same seed, same mug
    pts, normals, labels = mug.surface_cloud(4096)

Every asset is built from convex pieces labelled with ontology parts (see ``base.py``).
"""

from .base import Asset, JointSpec, Link, Piece
from .decompose import decompose
from .furniture import rack_hooks
from .library import GENERATORS, categories, make, metadata
from .render import render_labelled_cloud

__all__ = [
    "GENERATORS",
    "Asset",
    "JointSpec",
    "Link",
    "Piece",
    "categories",
    "decompose",
    "make",
    "metadata",
    "rack_hooks",
    "render_labelled_cloud",
]
