"""The procedural asset model: links made of convex pieces, each piece labelled with a part.

An asset is built in its own frame: origin at the centre of its footprint on the support
surface, z up, resting on z = 0 at its default joint configuration. Every piece is convex, so
the pieces are at once the visual mesh and an exact convex decomposition for collision; the
labels are exact because each piece belongs to exactly one part.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import trimesh

from afford_core.ontology import Category, category


@dataclass
class Piece:
    """One convex piece of geometry.

    Attributes:
        part: The part this piece belongs to (a name in the category's ``parts``).
        mesh: Convex triangle mesh in the owning link's frame.
    """

    part: str
    mesh: trimesh.Trimesh


@dataclass
class JointSpec:
    """The joint that connects a link to its parent.

    Attributes:
        name: Joint name, unique within the asset (``"drawer"``).
        kind: ``"slide"`` (prismatic) or ``"hinge"`` (revolute).
        axis: (3,) unit axis in the link frame.
        pos: (3,) point on the axis in the link frame (hinges rotate about it).
        range: (lower, upper) joint limits, metres or radians; 0 is the closed state.
        damping: Joint damping in the simulator.
    """

    name: str
    kind: Literal["slide", "hinge"]
    axis: np.ndarray
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    range: tuple[float, float] = (0.0, 0.3)
    damping: float = 1.0

    def __post_init__(self) -> None:
        self.axis = np.asarray(self.axis, dtype=float)
        self.axis = self.axis / np.linalg.norm(self.axis)
        self.pos = np.asarray(self.pos, dtype=float)
        if self.kind not in ("slide", "hinge"):
            raise ValueError(f"joint kind must be slide or hinge, got {self.kind!r}")
        if not self.range[0] < self.range[1]:
            raise ValueError(f"joint {self.name}: empty range {self.range}")


@dataclass
class Link:
    """A rigid link of an asset.

    Attributes:
        name: Link name, unique within the asset; the first link of an asset is its root.
        pieces: Convex pieces in this link's frame.
        parent: Parent link name, ``None`` for the root.
        pos: (3,) origin of this link's frame in the parent's frame (root: in the asset frame).
        joint: Joint to the parent; ``None`` for the root (and for welded links).
    """

    name: str
    pieces: list[Piece]
    parent: str | None = None
    pos: np.ndarray = field(default_factory=lambda: np.zeros(3))
    joint: JointSpec | None = None


@dataclass
class Asset:
    """A procedurally generated object with exact part labels.

    Attributes:
        category: Ontology category name.
        seed: Seed that produced this instance (same seed, same object).
        links: Rigid links; ``links[0]`` is the root.
        rgba: Colour per part.
        mass: Total mass of a free object (kg); ignored for fixed objects.
        params: The sampled shape parameters (for inspection and metadata).
    """

    category: str
    seed: int
    links: list[Link]
    rgba: dict[str, tuple[float, float, float, float]]
    mass: float = 0.2
    params: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        cat = self.info
        names = [lk.name for lk in self.links]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.category}: duplicate link names {names}")
        for lk in self.links:
            for pc in lk.pieces:
                if pc.part not in cat.parts:
                    raise ValueError(f"{self.category}: piece labelled {pc.part!r}, not in {cat.parts}")

    @property
    def info(self) -> Category:
        return category(self.category)

    @property
    def name(self) -> str:
        return f"{self.category}_{self.seed}"

    @property
    def fixed(self) -> bool:
        return self.info.fixed

    def link_transforms(self, q: dict[str, float] | None = None) -> dict[str, np.ndarray]:
        """4x4 pose of every link in the asset frame at joint values ``q`` (default all 0)."""
        q = q or {}
        out: dict[str, np.ndarray] = {}
        for lk in self.links:  # parents precede children
            base = np.eye(4) if lk.parent is None else out[lk.parent]
            local = np.eye(4)
            local[:3, 3] = lk.pos
            if lk.joint is not None:
                v = q.get(lk.joint.name, 0.0)
                j = np.eye(4)
                if lk.joint.kind == "slide":
                    j[:3, 3] = lk.joint.axis * v
                else:
                    rot = trimesh.transformations.rotation_matrix(v, lk.joint.axis, lk.joint.pos)
                    j = rot
                local = local @ j
            out[lk.name] = base @ local
        return out

    def part_mesh(self, part: str, q: dict[str, float] | None = None) -> trimesh.Trimesh:
        """All pieces of ``part`` in the asset frame, as one mesh."""
        tfs = self.link_transforms(q)
        meshes = [
            pc.mesh.copy().apply_transform(tfs[lk.name])
            for lk in self.links
            for pc in lk.pieces
            if pc.part == part
        ]
        if not meshes:
            raise KeyError(f"{self.name} has no geometry for part {part!r}")
        return trimesh.util.concatenate(meshes)

    def mesh(self, q: dict[str, float] | None = None) -> trimesh.Trimesh:
        """The whole asset in the asset frame."""
        tfs = self.link_transforms(q)
        return trimesh.util.concatenate(
            [pc.mesh.copy().apply_transform(tfs[lk.name]) for lk in self.links for pc in lk.pieces]
        )

    def surface_cloud(
        self, n: int = 4096, seed: int = 0, q: dict[str, float] | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Area-uniform surface samples with exact part labels.

        Returns:
            points (n, 3), outward normals (n, 3), labels (n,) indexing ``info.parts``.
        """
        tfs = self.link_transforms(q)
        placed = [
            (pc.mesh.copy().apply_transform(tfs[lk.name]), self.info.parts.index(pc.part))
            for lk in self.links
            for pc in lk.pieces
        ]
        areas = np.array([m.area for m, _ in placed])
        rng = np.random.default_rng(seed)
        counts = rng.multinomial(n, areas / areas.sum())
        pts, nrm, lab = [], [], []
        for (m, label), k in zip(placed, counts, strict=True):
            if k == 0:
                continue
            p, face = trimesh.sample.sample_surface(m, int(k), seed=int(rng.integers(1 << 31)))
            pts.append(p)
            nrm.append(m.face_normals[face])
            lab.append(np.full(int(k), label))
        return np.vstack(pts), np.vstack(nrm), np.concatenate(lab).astype(np.int64)
