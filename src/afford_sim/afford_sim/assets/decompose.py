"""Convex decomposition of imported (non-procedural) meshes with CoACD.

Procedural assets are convex piece by piece already; a scanned or downloaded mesh is not, and
MuJoCo would collide with its convex hull (a mug would have no inside). CoACD splits it into
near-convex parts along concave features, keeping openings and handles open.
"""

from __future__ import annotations

import coacd
import numpy as np
import trimesh

coacd.set_log_level("error")


def decompose(mesh: trimesh.Trimesh, threshold: float = 0.05, seed: int = 0) -> list[trimesh.Trimesh]:
    """Approximate convex decomposition of ``mesh``.

    Args:
        mesh: A closed triangle mesh (metres).
        threshold: CoACD concavity threshold in (0, 1]; smaller keeps more detail and gives more
            parts (0.05 is CoACD's default, fine for household objects).
        seed: CoACD's random seed, for repeatable results.

    Returns:
        Convex hulls of the parts, in the mesh's frame.
    """
    if not 0 < threshold <= 1:
        raise ValueError(f"threshold must be in (0, 1], got {threshold}")
    if len(mesh.faces) == 0:
        raise ValueError("cannot decompose an empty mesh")
    source = coacd.Mesh(np.asarray(mesh.vertices, dtype=float), np.asarray(mesh.faces, dtype=int))
    parts = coacd.run_coacd(source, threshold=threshold, seed=seed)
    return [trimesh.convex.convex_hull(np.asarray(v)) for v, _ in parts]
