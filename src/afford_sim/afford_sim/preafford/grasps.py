"""Grasp proposals as the seed samples them, and the grasp score they give a state.

PreAfford's grasp data (Sec. III-F): "grasping points randomly chosen from the object's surface,
with gripper orientations determined by a hemisphere above each point's tangent plane". Here:
a point drawn uniformly on the object's surface (by area); an approach direction drawn uniformly
from the hemisphere on the outside of the surface there (the hand comes from outside); a closing
axis drawn uniformly about the approach; the TCP put 0-3 cm past the point along the approach,
so the pads can close round an edge rather than only touch it.

The **grasp score** of a state is the fraction of a fixed, seeded set of such proposals that
succeed when each is tried from that state (the world is restored between tries). It is the
ground truth the seed's grasp critic estimates (its c_2 averaged over proposals, Eq. 3); we use
it to label pushes (:func:`rules.pregrasp_succeeded`) and to measure how graspable a scene is.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import trimesh

from afford_core.grasp import hemisphere_grasp, pinch_grasp

from .world import GraspResult, PreGraspWorld

MAX_DEPTH = 0.03


@dataclass(frozen=True)
class Grasp:
    """A grasp: the TCP position and the hand's rotation (columns x, closing y, approach z)."""

    tcp: np.ndarray
    rot: np.ndarray


def sample_grasps(world: PreGraspWorld, n: int, rng: np.random.Generator, rim: float = 0.0) -> list[Grasp]:
    """``n`` proposals on the object where it now lies (see the module docstring).

    ``rim``: the fraction drawn instead at the object's rim, for data collection (as the seed
    aims 30% of its pushes at features, to find successes sooner): a point on a side face
    (normal within 30 deg of horizontal in the object's frame), approached against its normal
    (within 20 deg), the fingers closing across the slab's thickness (the object's z, within
    15 deg). These use the simulator's object pose, so they are for collecting data, not a
    method's proposals.
    """
    pose = world.object_pose()
    mesh: trimesh.Trimesh = world.scene.obj.mesh()
    n_rim = int(round(rim * n))
    out = [
        Grasp(*hemisphere_grasp(p, nrm, rng, MAX_DEPTH))
        for p, nrm in zip(*_surface(mesh, pose, n - n_rim, rng), strict=True)
    ]
    if n_rim:
        local_n = mesh.face_normals
        sides = np.flatnonzero(np.abs(local_n[:, 2]) < np.sin(np.radians(30)))
        side_mesh = mesh.submesh([sides], append=True)
        assert isinstance(side_mesh, trimesh.Trimesh)  # append=True gives one mesh
        for p, nrm in zip(*_surface(side_mesh, pose, n_rim, rng), strict=True):
            out.append(Grasp(*pinch_grasp(p, nrm, pose[:3, 2], rng, MAX_DEPTH)))
    return out


def _surface(
    mesh: trimesh.Trimesh, pose: np.ndarray, n: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """``n`` points uniform on ``mesh``'s surface (by area) and their normals, in the world."""
    if n <= 0:
        return np.zeros((0, 3)), np.zeros((0, 3))
    points, faces = trimesh.sample.sample_surface(mesh, n, seed=int(rng.integers(2**31)))
    return points @ pose[:3, :3].T + pose[:3, 3], mesh.face_normals[faces] @ pose[:3, :3].T


def try_grasps(world: PreGraspWorld, grasps: list[Grasp]) -> list[GraspResult]:
    """Each grasp tried from the world's current state, which is restored after each."""
    state = world.snapshot()
    results = []
    for g in grasps:
        results.append(world.grasp(g.tcp, g.rot))
        world.restore(state)
    return results


def grasp_score(world: PreGraspWorld, n: int = 32, seed: int = 0) -> float:
    """The fraction of ``n`` seeded proposals that succeed from the current state."""
    results = try_grasps(world, sample_grasps(world, n, np.random.default_rng(seed)))
    return float(np.mean([r.success for r in results]))
