"""Geometric part grounding: a category prior names the part, a partition of the cloud finds it.

No labels and no learning. Each category has a small partition rule (``RULES``) that splits an
observed cloud, in the world frame, into the category's parts from shape alone. The rules are
written for what one camera sees: half an object, depth noise, holes. They assume what holds on
a table top: objects stand upright (world z is their up axis), and fixed furniture shows its
front to the robot. Nothing assumes the table height, the object's position or its yaw.

Shared steps (objects of revolution: mug, cup, bowl, kettle, pot, pan, rack):

- *Normals* are estimated from the points (open3d, k nearest neighbours), never taken from the
  cloud, so a simulated view is not graded with normals a real camera does not give.
- *Body axis*: the horizontal part of every wall normal points at the vertical axis, so the
  axis is the least-squares intersection of those 2-D lines, Cauchy re-weighted, then refitted
  without the protrusions found. This works on the visible half of a body and on tapered or
  flared bodies (cups, bowls, pans), where a circle fit of a partial arc is pulled by the
  inner wall seen on the far side.
- *Body profile*: height bands cut into azimuth sectors; each sector votes the outer edge of
  what it holds, and a band's radius is a percentile of its votes (one vote per sector, so a
  handle cannot carry a band). Bands that only a handle or a spout reaches are not body; above
  them the body radius below holds.
- *Protrusions*: points beyond the body radius by ``protrusion_high`` seed a region that grows
  through neighbours beyond ``protrusion_low`` (hysteresis, so the handle's root near the wall
  is kept while wall noise is not); groups with too few seeds are noise.

Other families: elongated tools (principal axis, thick end), box furniture (front face and
what stands off it), flat ware (well and rim), closed packages (a top band), produce, pens and
boards lying on the table (height and width profiles along the principal axis), upright
produce, bottles and baskets (width profiles up the height: a pepper's stem, a spray bottle's
neck, the top of a basket's wall), a kettle base and a pot lid (height rings round the centre),
a coffee machine (the empty bay under its head), single-part objects (all body). Each rule's
docstring states its assumptions; every constant is named at the top of the module.

Scores are soft: 0.5 is the decision boundary, and a point's distance from it grows with its
margin (how far beyond the body radius, how far along the tool axis past the split).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from afford_core.ontology import category
from afford_core.types import ObjectCloud
from afford_perception.grounding.base import (
    GroundingError,
    GroundingSource,
    check_query,
    clusters,
    register_source,
)

# Depth of the rim band per open container (m). A category prior: the lip of a mug, a rolled
# paper-cup bead, the upper curve of a bowl wall. Values sit mid-range of the asset library's
# rim bands, which follow the same real objects.
RIM_DEPTH: dict[str, float] = {"mug": 0.010, "paper_cup": 0.008, "bowl": 0.012}
# A lid seats on the wall top with a lip a few millimetres tall (m): the lid starts this far
# below where the wall points end (the lip's own wall-like points end the wall a little high).
LID_SEAT = 0.004
# Most a lid (dome and knob) rises above the wall top (m); anything higher is not lid surface.
LID_RISE = 0.035
# Width of the carcass frame around a cabinet's front panels (m): its panels' thickness.
FRAME = 0.015
# Half-thickness of the slab that counts as lying on a furniture face (m): depth noise on a
# plane seen at an angle, with margin.
FACE_SLAB = 0.008
# Percentile of the sector votes taken as the body radius of a vessel with one narrow handle
# and a thick wall (mug, pan): above the median, towards the outer wall (see _Revolution).
ONE_HANDLE_VOTE = 70.0
# Correlation of radius with height above which a protrusion beside a kettle is a spout.
SPOUT_CLIMB = 0.5


@dataclass(frozen=True)
class GeometricConfig:
    """Thresholds of the geometric partition (metres unless noted).

    Attributes:
        normal_neighbors: Neighbours per point for normal estimation; larger is smoother under
            depth noise but blurs thin parts.
        protrusion_high: Radial excess over the body profile that surely marks a handle or spout
            point (well above depth noise plus wall thickness).
        protrusion_low: Excess down to which a protrusion grows from its seeds (the handle root).
        cluster_radius: Points closer than this are connected when grouping protrusions.
        min_cluster_points: Protrusion groups with fewer points are treated as noise.
        height_band: Height of the bands of the body radius profile.
        rim_depth: Depth of the rim band below the top of an open container, per category
            (the lip a pinch grasp or a pouring edge uses); see ``RIM_DEPTH``.
        softness: Width over which a geometric score passes from 0.5 to 1 (or 0).
        axis_iterations: Re-weighting iterations of the robust body-axis fit.
        cap_depth: Height of a bottle's screw cap (a category prior; caps are 12-20 mm).
    """

    normal_neighbors: int = 16
    protrusion_high: float = 0.010
    protrusion_low: float = 0.004
    cluster_radius: float = 0.012
    min_cluster_points: int = 8
    height_band: float = 0.01
    rim_depth: dict[str, float] = field(default_factory=lambda: dict(RIM_DEPTH))
    softness: float = 0.004
    axis_iterations: int = 12
    cap_depth: float = 0.016

    def __post_init__(self) -> None:
        if self.normal_neighbors < 5:
            raise ValueError(f"normal_neighbors must be >= 5 to fit a plane, got {self.normal_neighbors}")
        if not 0 < self.protrusion_low < self.protrusion_high:
            raise ValueError(f"need 0 < protrusion_low < protrusion_high, got "
                             f"{self.protrusion_low} and {self.protrusion_high}")
        for name in ("cluster_radius", "height_band", "softness", "cap_depth"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        bad = {k: v for k, v in self.rim_depth.items() if not 0 < v < 0.05}
        if bad:
            raise ValueError(f"rim depths must be in (0, 0.05) m, got {bad}")
        if self.min_cluster_points < 1 or self.axis_iterations < 1:
            raise ValueError("min_cluster_points and axis_iterations must be >= 1")


Scores = dict[str, np.ndarray]
Rule = Callable[["_Cloud"], Scores]


# --- shared geometry ---------------------------------------------------------------------------


def _ramp(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """0 at ``lo``, 1 at ``hi``, linear between (either order)."""
    return np.clip((x - lo) / (hi - lo), 0.0, 1.0)


def _decided(member: np.ndarray, margin: np.ndarray) -> np.ndarray:
    """Soft scores consistent with a hard decision.

    ``margin`` in [0, 1] is how clearly a point is on its side of the boundary: members score
    0.5 + margin / 2, the others just under 0.5 down to 0, so ``scores >= 0.5`` is the decision.
    """
    margin = np.clip(margin, 0.0, 1.0)
    return np.where(member, 0.5 + 0.5 * margin, np.minimum(0.5 - 0.5 * margin, 0.499))


def estimate_normals(points: np.ndarray, k: int) -> np.ndarray:
    """Unit normals (unsigned) from the PCA of each point's ``k`` nearest neighbours (open3d)."""
    import open3d as o3d  # heavy import, paid on the first partition rather than at module load

    cloud = o3d.geometry.PointCloud(o3d.utility.Vector3dVector(points))
    cloud.estimate_normals(o3d.geometry.KDTreeSearchParamKNN(min(k, len(points))))
    return np.asarray(cloud.normals)


class _Cloud:
    """An observed cloud with lazily computed shared geometry for the rules."""

    def __init__(self, points: np.ndarray, category: str, config: GeometricConfig) -> None:
        self.p = points
        self.category = category
        self.cfg = config
        self.n = len(points)
        self._normals: np.ndarray | None = None

    @property
    def normals(self) -> np.ndarray:
        if self._normals is None:
            self._normals = estimate_normals(self.p, self.cfg.normal_neighbors)
        return self._normals

    @property
    def floor(self) -> float:
        """Height of the support surface: the lowest points of an upright object touch it."""
        return float(np.percentile(self.p[:, 2], 0.5))

    def grow(self, seeds: np.ndarray, allowed: np.ndarray) -> np.ndarray:
        """Hysteresis grouping: connected groups of ``allowed | seeds`` points that hold at least
        ``min_cluster_points`` seeds, a quarter of the group or more.

        A handle is mostly seed with a fringe of weaker points at its root; a band of the body
        that sits a little proud (a slightly misplaced axis, a lid's lip) is mostly fringe with a
        few noisy seeds, and is dropped.
        """
        out = np.zeros(self.n, dtype=bool)
        idx = np.flatnonzero(allowed | seeds)
        if len(idx) == 0:
            return out
        labels = clusters(self.p[idx], self.cfg.cluster_radius)
        sizes = np.bincount(labels)
        seeded = np.bincount(labels, weights=seeds[idx].astype(float), minlength=len(sizes))
        good = (seeded >= self.cfg.min_cluster_points) & (seeded >= 0.25 * sizes)
        out[idx[good[labels]]] = True
        return out


# --- upright objects of revolution ---------------------------------------------------------------


class _Revolution:
    """An upright body of revolution fitted to a cloud.

    ``vote_percentile`` picks a band's radius among its sectors' votes: the median ignores
    protrusions covering up to half of the sectors (a pot's two wide handles); a higher value
    favours the outer wall of a thick open vessel, whose far side shows only its inner wall,
    when its one handle is narrow (a mug).

    Attributes (per point unless noted): ``h`` height above the support, ``rho`` distance from
    the body axis, ``excess`` = ``rho`` minus the body radius at that height, ``wall`` whether
    the point's normal is horizontal; ``centre`` (2,) the axis, ``wall_top`` the height where the
    body's side wall ends (the rim of an open vessel, the seat of a lid).
    """

    # Azimuth sectors a height band's wall points must cover to count as the body: the visible
    # half of a body covers about 12 of 24; a handle or a spout one or two.
    SECTORS = 24
    BODY_SECTORS = 5
    # Percentiles of the distance from the axis that mark a sector's outer edge (see _profile).
    WALL_PERCENTILE = 75
    DISC_PERCENTILE = 95

    def __init__(self, c: _Cloud, vote_percentile: float = 50.0) -> None:
        self.c = c
        cfg = c.cfg
        self.vote_percentile = vote_percentile
        self.h = c.p[:, 2] - c.floor
        self.wall = np.abs(c.normals[:, 2]) < 0.8
        nb = max(1, int(np.ceil(max(float(self.h.max()), cfg.height_band) / cfg.height_band)))
        self.band = np.clip((self.h / cfg.height_band).astype(int), 0, nb - 1)
        everything = np.ones(c.n, dtype=bool)
        self._place(self._axis(everything))
        self.radius, self.body_band = self._profile(nb, everything)
        # Again without what sticks out: handles and spouts, now roughly known, drop out of both
        # the axis and the sector votes (wide pot handles can fill half a band's sectors).
        inliers = self.rho - self.radius < cfg.protrusion_low
        if inliers.sum() >= 10:
            self._place(self._axis(inliers, self.centre, scale=0.01))
            self.radius, self.body_band = self._profile(nb, inliers)
        self.excess = self.rho - self.radius
        self.wall_top = self._wall_top()

    def _axis(self, use: np.ndarray, start: np.ndarray | None = None, scale: float = 0.02) -> np.ndarray:
        """Least-squares intersection of the horizontal normal lines of ``use``, Cauchy re-weighted
        from ``start`` (default their centroid) with a scale annealed down from ``scale``."""
        c = self.c
        p = c.p[use, :2]
        nxy = c.normals[use, :2]
        strength = np.linalg.norm(nxy, axis=1)
        d = nxy / np.maximum(strength, 1e-9)[:, None]
        w0 = strength**4  # wall points (horizontal normals) carry the axis; floors and lids do not
        proj = np.eye(2)[None] - d[:, :, None] * d[:, None, :]
        centre = p.mean(axis=0) if start is None else start
        for _ in range(c.cfg.axis_iterations):
            off = np.einsum("nij,nj->ni", proj, centre - p)  # from each normal line to the centre
            w = w0 / (1.0 + (np.linalg.norm(off, axis=1) / scale) ** 2)
            a = np.einsum("n,nij->ij", w, proj) + 1e-9 * np.eye(2)
            b = np.einsum("n,nij,nj->i", w, proj, p)
            centre = np.linalg.solve(a, b)
            scale = max(0.005, 0.7 * scale)  # anneal: coarse first, so a handle cannot capture it
        return centre

    def _place(self, centre: np.ndarray) -> None:
        self.centre = centre
        d = self.c.p[:, :2] - centre
        self.rho = np.linalg.norm(d, axis=1)
        self.azimuth = np.arctan2(d[:, 1], d[:, 0])

    def _profile(self, nb: int, use: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Body radius at every point's height, and which height bands are body, from ``use``.

        Each height band is cut into azimuth sectors; a sector's radius is the outer edge of
        what it holds (a high percentile of the distance from the axis: the outer wall of a
        vessel, the edge of a lid or a floor). A band is body when ``BODY_SECTORS`` sectors hold
        points; its radius is a percentile of its sectors' votes (one vote per sector, so a
        handle cannot carry a band), placed at the median height of the band's points, and a
        running median over five bands removes a band or two pulled out by a handle seen
        face-on (it keeps steps such as a shoulder). Between adjacent body bands the radius is
        interpolated (tapered and flared walls); next to a level band (a dome) the larger of
        the two holds. Above a band that is not body (a pan handle rising above the pan, a
        kettle's arched handle above its lid) the radius of the body band below holds, so
        whatever rises above a body is measured against that body.
        """
        idx = np.flatnonzero(use)
        band = self.band[idx]
        sector = ((self.azimuth[idx] + np.pi) / (2 * np.pi) * self.SECTORS).astype(int) % self.SECTORS
        cell = band * self.SECTORS + sector
        order = np.lexsort((self.rho[idx], cell))  # by cell, then by distance within a cell
        cells, starts, counts = np.unique(cell[order], return_index=True, return_counts=True)
        cell_band = cells // self.SECTORS
        # Walls: the outer wall is near the 75th percentile (the inner wall and noise below and
        # above it). Level surfaces (a lid, a floor) are discs whose edge is near the top of
        # their distribution. Which one a band is, its share of wall-like normals says.
        share = np.bincount(band, weights=self.wall[idx].astype(float), minlength=nb) / np.maximum(
            np.bincount(band, minlength=nb), 1)
        self.level_band = share < 0.5
        pct = np.where(self.level_band[cell_band], self.DISC_PERCENTILE, self.WALL_PERCENTILE)
        outer = self.rho[idx][order[starts + np.floor(pct / 100 * (counts - 1)).astype(int)]]
        knot_b, knot_h, knot_r = [], [], []
        for b in np.unique(cell_band):
            votes = outer[cell_band == b]
            if votes.size >= self.BODY_SECTORS:
                knot_b.append(int(b))
                knot_h.append(float(np.median(self.h[idx][band == b])))
                knot_r.append(float(np.percentile(votes, self.vote_percentile)))
        body = np.zeros(nb, dtype=bool)
        if not knot_b:  # nothing looks like a body of revolution: one radius for all
            return np.full(self.c.n, float(np.percentile(self.rho, self.WALL_PERCENTILE))), body | True
        body[knot_b] = True
        kb, kh = np.array(knot_b), np.array(knot_h)
        padded = np.pad(np.array(knot_r), 2, mode="edge")
        kr = np.median(np.lib.stride_tricks.sliding_window_view(padded, 5), axis=1)
        below = np.clip(np.searchsorted(kh, self.h, side="right") - 1, 0, len(kh) - 1)
        above = np.minimum(below + 1, len(kh) - 1)
        adjacent = (kb[above] - kb[below] == 1) & (self.h >= kh[0])
        span = np.where(adjacent, kh[above] - kh[below], 1.0)
        t = np.where(adjacent, np.clip((self.h - kh[below]) / span, 0.0, 1.0), 0.0)
        radius = (1 - t) * kr[below] + t * kr[above]
        # Across a level band (a lid's dome) the radius changes fast with height, so depth noise
        # would read as excess: there the larger of the two neighbouring radii holds.
        level = self.level_band[kb[below]] | self.level_band[kb[above]]
        return np.where(adjacent & level, np.maximum(kr[below], kr[above]), radius), body

    def _wall_top(self) -> float:
        """Top of the side wall: where the main run of wall bands ends.

        Wall bands (body, mostly wall-like normals) are joined into runs across single missing
        bands (a band the camera barely sees); the run holding the most points is the body's
        wall, so an arched handle's legs or a knob higher up cannot raise the wall top, and a
        gap near the foot cannot lower it. The band above the run holds the last of the wall.
        """
        walls = np.flatnonzero(self.body_band & ~self.level_band)
        if len(walls) == 0:
            return float(np.percentile(self.h, 98))
        runs = np.split(walls, np.flatnonzero(np.diff(walls) > 2) + 1)
        counts = np.bincount(self.band, minlength=len(self.body_band))
        run = max(runs, key=lambda r: int(counts[r].sum()))
        first, end = int(run[0]), int(run[-1])
        on_body = self.wall & (self.band >= first) & (self.band <= end + 1)
        on_body &= np.abs(self.excess) < self.c.cfg.protrusion_high
        on_body &= self.rho > 0.5 * float(self.radius.max())
        h = self.h[on_body] if on_body.any() else self.h[self.band <= end + 1]
        return float(np.percentile(h, 98))

    @property
    def top_radius(self) -> float:
        """Body radius at the wall top."""
        return float(self.radius[np.argmin(np.abs(self.h - self.wall_top))])

    def protrusions(self) -> np.ndarray:
        """Points on handles and spouts: beyond the body radius, in handle-sized groups."""
        cfg = self.c.cfg
        return self.c.grow(self.excess > cfg.protrusion_high, self.excess > cfg.protrusion_low)

    def top(self, mask: np.ndarray | None = None) -> float:
        """Robust top height of the points in ``mask`` (depth noise spreads the true top)."""
        h = self.h if mask is None else self.h[mask]
        return float(np.percentile(h, 99)) if len(h) else float(self.h.max())

    def above_lid(self) -> tuple[np.ndarray, np.ndarray]:
        """Height of each point above the lid surface, and the points clearly above it.

        A lid is a low dome on the wall top; its surface is a robust line fit of height against
        radius over the lid points away from the axis (so a knob at the centre or an arched
        handle across the top cannot lift it). Returns (height above the lid, grouped mask of
        points more than ``protrusion_high`` above it).
        """
        cfg = self.c.cfg
        r_top = self.top_radius
        lid = (self.h > self.wall_top - 0.005) & (self.h < self.wall_top + LID_RISE)
        lid &= (self.rho > 0.3 * r_top) & (self.rho < r_top + 0.01)
        lid &= np.abs(self.c.normals[:, 2]) > 0.7
        if lid.sum() < 5:
            rise = self.h - self.wall_top
        else:
            a, b = _robust_line(self.rho[lid], self.h[lid])
            rise = self.h - (a + b * np.minimum(self.rho, r_top))
        above = self.c.grow((rise > cfg.protrusion_high) & (self.h > self.wall_top),
                            (rise > cfg.protrusion_low) & (self.h > self.wall_top - 0.01))
        return rise, above


def _robust_line(x: np.ndarray, y: np.ndarray, iterations: int = 10) -> tuple[float, float]:
    """``y = a + b x`` by Cauchy-weighted least squares (outliers: handles, knobs)."""
    w = np.ones_like(x)
    a, b = float(np.median(y)), 0.0
    scale = max(float(np.std(y)), 1e-3)
    for _ in range(iterations):
        design = np.column_stack([np.ones_like(x), x]) * w[:, None]
        a, b = np.linalg.lstsq(design, y * w, rcond=None)[0]
        r = y - (a + b * x)
        scale = max(1.4826 * float(np.median(np.abs(r))), 1e-3)
        w = 1.0 / np.sqrt(1.0 + (r / (2 * scale)) ** 2)
    return float(a), float(b)


def _protrusion_margin(excess: np.ndarray, member: np.ndarray, cfg: GeometricConfig) -> np.ndarray:
    """Decision margin of protrusion membership from the excess beyond the body surface."""
    inside = _ramp(excess, cfg.protrusion_low, cfg.protrusion_low - 2 * cfg.softness)
    # Beyond the surface but not part of a handle-sized group: noise, an uncertain call.
    inside = np.where(excess > cfg.protrusion_low, 0.5, inside)
    return np.where(member, _ramp(excess, cfg.protrusion_low, cfg.protrusion_high + cfg.softness), inside)


def _rest(scores: Scores, rest: str, n: int) -> Scores:
    """``rest`` scores as the complement of every other part (the body is what is left), kept
    below 0.5 wherever another part claims the point, so the regions never overlap."""
    others = [s for name, s in scores.items() if name != rest]
    if not others:
        scores[rest] = np.ones(n)
        return scores
    claimed = np.max(np.stack(others), axis=0)
    scores[rest] = np.where(claimed >= 0.5, np.minimum(1.0 - claimed, 0.499), 1.0 - claimed)
    return scores


def _open_container(c: _Cloud, handle: bool) -> Scores:
    """Mug, paper cup, bowl: handle = the protrusions; rim = the top band of the wall, of a
    per-category depth (``rim_depth``) below the top of the body."""
    rev = _Revolution(c, vote_percentile=ONE_HANDLE_VOTE if handle else 50.0)
    out: Scores = {}
    prot = rev.protrusions() if handle else np.zeros(c.n, dtype=bool)
    if handle:
        out["handle"] = _decided(prot, _protrusion_margin(rev.excess, prot, c.cfg))
    top = rev.top(~prot)
    cfg = c.cfg
    depth = cfg.rim_depth.get(c.category, 0.010)
    rim_margin = _ramp(np.abs(rev.h - (top - depth)), 0.0, cfg.softness)
    out["rim"] = _decided((rev.h >= top - depth) & ~prot, rim_margin)
    return _rest(out, "body", c.n)


def _mug(c: _Cloud) -> Scores:
    return _open_container(c, handle=True)


def _cup(c: _Cloud) -> Scores:
    return _open_container(c, handle=False)


def _pan(c: _Cloud) -> Scores:
    """Pan: a shallow body of revolution; the handle is what sticks out beyond it (one narrow
    handle on a thick flared wall: the band radius favours the outer wall, as for a mug)."""
    rev = _Revolution(c, vote_percentile=ONE_HANDLE_VOTE)
    prot = rev.protrusions()
    return _rest({"handle": _decided(prot, _protrusion_margin(rev.excess, prot, c.cfg))}, "body", c.n)


def _pot(c: _Cloud) -> Scores:
    """Pot: the handles are the radial protrusions (one loop on each side); the knob is what
    rises above the lid's dome near the axis; the lid is everything from the wall top up (its
    lip and dome); the body is the rest."""
    cfg = c.cfg
    rev = _Revolution(c)
    handles = rev.protrusions()
    rise, above = rev.above_lid()
    knob = above & ~handles & (rev.rho < 0.5 * rev.top_radius)
    seat = rev.wall_top - LID_SEAT
    lid = (rev.h >= seat) & ~handles & ~knob
    lid_margin = _ramp(np.abs(rev.h - seat), 0.0, cfg.softness)
    return _rest({
        "handle": _decided(handles, _protrusion_margin(rev.excess, handles, cfg)),
        "knob": _decided(knob, _ramp(rise, cfg.protrusion_low, cfg.protrusion_high + cfg.softness)),
        "lid": _decided(lid, lid_margin),
    }, "body", c.n)


def _kettle(c: _Cloud) -> Scores:
    """Kettle: spout and handle are the protrusions, beyond the body radius or above the lid.

    A group that rises above the lid is an arched top handle; it spans a vertical plane through
    the axis, and a group beside the body near that plane is one of its legs, any other is the
    spout (which leaves the body across the arch). Without an arch, the spout is told from a
    side loop handle by how it climbs: its distance from the axis grows with height (a
    correlation above ``SPOUT_CLIMB``) while a loop bulges symmetrically; only the group that
    climbs most can be the spout. The lid is everything from the wall top up.
    """
    cfg = c.cfg
    rev = _Revolution(c)
    radial = rev.protrusions()
    _, above = rev.above_lid()
    idx = np.flatnonzero(radial | above)
    handle = np.zeros(c.n, dtype=bool)
    spout = np.zeros(c.n, dtype=bool)
    offset = c.p[:, :2] - rev.centre
    labels = clusters(c.p[idx], cfg.cluster_radius) if len(idx) else np.zeros(0, dtype=int)
    groups = [idx[labels == k] for k in np.unique(labels)]
    groups = [g for g in groups if len(g) >= cfg.min_cluster_points]
    side = [g for g in groups if not above[g].any()]
    for g in groups:
        if above[g].any():
            handle[g] = True
    if handle.any():
        _, vecs = np.linalg.eigh(np.cov(offset[handle].T))
        arch_plane = vecs[:, 1]  # horizontal direction of the arch's vertical plane
        for g in side:
            heading = offset[g].mean(axis=0)
            if abs(heading @ arch_plane) > np.cos(np.pi / 4) * np.linalg.norm(heading):
                handle[g] = True  # a leg of the arch
            else:
                spout[g] = True
    else:
        side.sort(key=lambda g: _climb(rev.rho[g], rev.h[g]), reverse=True)
        for i, g in enumerate(side):
            if i == 0 and _climb(rev.rho[g], rev.h[g]) > SPOUT_CLIMB:
                spout[g] = True
            else:
                handle[g] = True
    seat = rev.wall_top - LID_SEAT
    lid = (rev.h >= seat) & ~handle & ~spout
    margin = _protrusion_margin(np.maximum(rev.excess, 0.0), handle | spout, cfg)
    return _rest({
        "handle": _decided(handle, margin),
        "spout": _decided(spout, margin),
        "lid": _decided(lid, _ramp(np.abs(rev.h - seat), 0.0, cfg.softness)),
    }, "body", c.n)


def _climb(rho: np.ndarray, h: np.ndarray) -> float:
    """Correlation of distance from the axis with height: ~1 for a spout, ~0 for a loop."""
    if np.std(rho) < 1e-6 or np.std(h) < 1e-6:
        return 0.0
    return float(np.corrcoef(rho, h)[0, 1])


def _bottle(c: _Cloud) -> Scores:
    """Bottle: the cap is the top ``cap_depth`` of the bottle (a screw cap sits on the neck and
    is barely wider than it, so its height is a category prior, not a measurement)."""
    cfg = c.cfg
    h = c.p[:, 2] - c.floor
    top = float(np.percentile(h, 99.5))
    line = top - cfg.cap_depth
    return _rest({"cap": _decided(h >= line, _ramp(np.abs(h - line), 0.0, cfg.softness))}, "body", c.n)


# --- elongated tools lying on the table -----------------------------------------------------------


def _elongated(c: _Cloud, thick: str, slender: str) -> Scores:
    """Hammer, scoop: lying on the table, the principal axis of the footprint runs along the
    handle; the thick end is ``thick``.

    The cross-section size (width across the axis in the table plane plus height above the
    table) is profiled along the axis in ``height_band`` steps. The handle is the slender run
    from the thin end; the split is where the size first rises 30 % of the way from the
    handle's size (median of the thin half) to the head's (the largest).
    """
    cfg = c.cfg
    xy = c.p[:, :2]
    mu = xy.mean(axis=0)
    _, vecs = np.linalg.eigh(np.cov((xy - mu).T))
    axis, across = vecs[:, 1], vecs[:, 0]
    t = (xy - mu) @ axis
    s = (xy - mu) @ across
    height = c.p[:, 2] - c.floor
    nb = max(4, int(np.ceil((t.max() - t.min()) / cfg.height_band)))
    edges = np.linspace(t.min(), t.max() + 1e-9, nb + 1)
    band = np.clip(np.searchsorted(edges, t, side="right") - 1, 0, nb - 1)
    size = np.full(nb, np.nan)
    for b in range(nb):
        sel = band == b
        if sel.sum() >= 3:
            size[b] = np.ptp(np.percentile(s[sel], [5, 95])) + np.percentile(height[sel], 95)
    known = np.flatnonzero(np.isfinite(size))
    size = np.interp(np.arange(nb), known, size[known])
    quarter = max(1, nb // 4)
    if size[:quarter].mean() > size[-quarter:].mean():  # orient: thin end first
        size, t, edges = size[::-1], -t, -edges[::-1]
    slender_size = float(np.median(size[: nb // 2]))
    thick_size = float(size.max())
    level = slender_size + 0.3 * (thick_size - slender_size)
    first = int(np.argmax(size >= level))
    split = edges[first]
    margin = _ramp(np.abs(t - split), 0.0, cfg.softness * 2)
    return {thick: _decided(t >= split, margin), slender: _decided(t < split, margin)}


def _hammer(c: _Cloud) -> Scores:
    return _elongated(c, thick="head", slender="handle")


def _scoop(c: _Cloud) -> Scores:
    return _elongated(c, thick="bowl", slender="handle")


# --- articulated furniture ---------------------------------------------------------------------


class _Front:
    """The front face of a box-shaped piece of furniture and what protrudes from it.

    The box's yaw comes from the horizontal normals (its faces are perpendicular, so their
    directions agree modulo 90 degrees). Each of the four vertical faces that the camera sees
    is the set of points whose normal is along that face's outward direction; its plane is the
    densest slab of those points (a door proud of the carcass and the carcass edge form two
    slabs; the larger wins, and handles are too small to be one). The front is the face with
    the most points in front of its plane (the handles); with no handle visible, the face turned
    most towards the robot (the world origin), which is how fixed furniture faces a robot cell.
    """

    def __init__(self, c: _Cloud) -> None:
        self.c = c
        cfg = c.cfg
        nrm = c.normals
        u, v = _box_axes(c)
        centre = np.median(c.p[:, :2], axis=0)
        toward_robot = -centre / max(float(np.linalg.norm(centre)), 1e-9)
        best: tuple[tuple[int, float], float, np.ndarray, np.ndarray] | None = None
        for d in (u, -u, v, -v):
            x = c.p[:, :2] @ d
            on_face = (np.abs(nrm[:, :2] @ d) > 0.8) & (x > np.median(x))
            if on_face.sum() < max(c.cfg.min_cluster_points, 0.03 * c.n):
                continue  # this face is out of view
            plane = self._plane(x[on_face])
            out = x - plane
            slab = np.count_nonzero(np.abs(out[on_face]) < FACE_SLAB)
            prot = c.grow(out > cfg.protrusion_high, out > cfg.protrusion_low)
            if slab < 0.5 * on_face.sum() or prot.sum() > 0.5 * slab:
                continue  # not a planar outer face: the edge of the top, seen past a corner
            key = (int(prot.sum()), float(toward_robot @ d))
            if best is None or key > best[0]:
                best = (key, plane, d, prot)
        if best is None:
            raise GroundingError("no vertical face of the furniture is in view; cannot find its front")
        _, self.plane, self.direction, self.protruding = best
        self.out = c.p[:, :2] @ self.direction - self.plane  # signed distance in front of the face
        self.lateral = c.p[:, :2] @ np.array([-self.direction[1], self.direction[0]])
        self.h = c.p[:, 2] - c.floor

    @staticmethod
    def _plane(x: np.ndarray) -> float:
        """Position of the densest 4 mm slab of one face's points along its normal."""
        width = 0.004
        bins = max(3, int(np.ceil((x.max() - x.min()) / width)))
        hist, edges = np.histogram(x, bins=bins)
        hist = np.convolve(hist, [1, 2, 1], mode="same")
        k = int(np.argmax(hist))
        return float(0.5 * (edges[k] + edges[k + 1]))

    def handles(self) -> list[np.ndarray]:
        """Protruding groups (handles), largest first."""
        idx = np.flatnonzero(self.protruding)
        if len(idx) == 0:
            return []
        labels = clusters(self.c.p[idx], self.c.cfg.cluster_radius)
        groups = [idx[labels == k] for k in np.unique(labels)]
        groups = [g for g in groups if len(g) >= self.c.cfg.min_cluster_points]
        return sorted(groups, key=len, reverse=True)

    def margin(self, member: np.ndarray) -> np.ndarray:
        return _protrusion_margin(self.out, member, self.c.cfg)

    def panel(self, handles: np.ndarray) -> np.ndarray:
        """Points on the front face itself (doors and drawer fronts), handles excluded."""
        return (np.abs(self.out) < FACE_SLAB) & ~handles


def _box_axes(c: _Cloud) -> tuple[np.ndarray, np.ndarray]:
    """Horizontal axes of a box-shaped object: its vertical faces' normals agree modulo 90 deg,
    so the mean of four times their angle, quartered, is its yaw."""
    nrm = c.normals
    vertical = np.abs(nrm[:, 2]) < 0.3
    ang = np.arctan2(nrm[vertical, 1], nrm[vertical, 0]) if vertical.any() else np.zeros(1)
    theta = float(np.angle(np.exp(4j * ang).sum())) / 4.0
    u = np.array([np.cos(theta), np.sin(theta)])
    return u, np.array([-u[1], u[0]])


def _mask(n: int, idx: np.ndarray) -> np.ndarray:
    m = np.zeros(n, dtype=bool)
    m[idx] = True
    return m


def _cabinet(c: _Cloud) -> Scores:
    """Cabinet: a drawer above a door, each with a handle standing off the front.

    Handles are the protrusions. With two or more, the highest is the drawer's (drawers sit
    above doors); a lone handle is the drawer's if its bar is horizontal, the door's if
    vertical (how pulls are mounted on each). The front face, less a carcass frame of
    ``FRAME`` around its edge, is split into drawer above and door below at the height where a
    handle centred on its panel puts the panel edge (see ``_panel_split``).
    """
    f = _Front(c)
    groups = sorted(f.handles(), key=lambda g: float(np.median(f.h[g])), reverse=True)
    drawer_h = np.zeros(c.n, dtype=bool)
    door_h = np.zeros(c.n, dtype=bool)
    if len(groups) == 1:
        g = groups[0]
        horizontal = np.ptp(f.lateral[g]) > np.ptp(f.h[g])
        (drawer_h if horizontal else door_h)[g] = True
    elif groups:
        drawer_h[groups[0]] = True
        door_h[np.concatenate(groups[1:])] = True
    panel = f.panel(drawer_h | door_h)
    inner = _inside_frame(f, panel)
    split = _panel_split(f, panel, drawer_h, door_h)
    above = _ramp(np.abs(f.h - split), 0.0, c.cfg.softness)
    return _rest({
        "drawer_handle": _decided(drawer_h, f.margin(drawer_h)),
        "door_handle": _decided(door_h, f.margin(door_h)),
        "drawer": _decided(inner & (f.h >= split), above),
        "door": _decided(inner & (f.h < split), above),
    }, "body", c.n)


def _chest(c: _Cloud) -> Scores:
    """Chest of drawers: equal drawers one above the other, each with a handle standing off the
    front. The inner front face (less a carcass frame of ``FRAME``) is cut into as many equal
    height bands as the chest has drawers, top first; each handle belongs to the drawer of the
    band its middle is in."""
    # The ontology's stacked handles, top first, name the drawers ("top_drawer_handle").
    drawers = [h.removesuffix("_handle") for h in category(c.category).stacked[0]]
    f = _Front(c)
    groups = f.handles()
    handles = np.zeros(c.n, dtype=bool)
    for g in groups:
        handles[g] = True
    panel = f.panel(handles)
    inner = _inside_frame(f, panel)
    lo, hi = (np.percentile(f.h[inner], [0.5, 99.5]) if inner.sum() >= 10
              else (float(f.h.min()), float(f.h.max())))
    band = (hi - lo) / len(drawers)

    def rank(h: np.ndarray) -> np.ndarray:  # band k from the top: [hi - (k + 1) band, hi - k band)
        return np.clip(((hi - h) / max(band, 1e-6)).astype(int), 0, len(drawers) - 1)

    point_rank = rank(f.h)
    handle_rank = np.full(c.n, -1)
    for g in groups:
        handle_rank[g] = rank(np.array([np.median(f.h[g])]))[0]
    scores: Scores = {}
    for k, name in enumerate(drawers):
        own = handle_rank == k
        scores[f"{name}_handle"] = _decided(own, f.margin(own))
        edge = np.minimum(np.abs(f.h - (hi - k * band)), np.abs(f.h - (hi - (k + 1) * band)))
        scores[name] = _decided(inner & (point_rank == k), _ramp(edge, 0.0, c.cfg.softness))
    return _rest(scores, "body", c.n)


def _inside_frame(f: _Front, panel: np.ndarray) -> np.ndarray:
    """Front-face points more than ``FRAME`` inside the face's outline (the carcass edges are body)."""
    if panel.sum() < 10:
        return panel
    lat, h = f.lateral[panel], f.h[panel]
    lo_l, hi_l = np.percentile(lat, [0.5, 99.5])
    lo_h, hi_h = np.percentile(h, [0.5, 99.5])
    return panel & (f.lateral > lo_l + FRAME) & (f.lateral < hi_l - FRAME) & (f.h > lo_h + FRAME) & (
        f.h < hi_h - FRAME)


def _panel_split(f: _Front, panel: np.ndarray, drawer_h: np.ndarray, door_h: np.ndarray) -> float:
    """Height of the boundary between the drawer front (above) and the door (below).

    A pull is mounted at the middle of its panel's height, so the drawer front reaches as far
    below its handle as the face's top is above it, and the door as far above its handle as
    the face's bottom is below it; the boundary is the mean of what the visible handles say.
    With no handle in view, the drawer is the upper third of the front.
    """
    h = f.h[panel] if panel.any() else f.h
    top, bottom = float(np.percentile(h, 99.5)) - FRAME, float(np.percentile(h, 0.5)) + FRAME
    guesses = []
    if drawer_h.any():
        guesses.append(2 * float(np.median(f.h[drawer_h])) - top)
    if door_h.any():
        guesses.append(2 * float(np.median(f.h[door_h])) - bottom)
    return float(np.mean(guesses)) if guesses else bottom + 2 / 3 * (top - bottom)


def _microwave(c: _Cloud) -> Scores:
    """Microwave: every handle on the front is the door handle; the door is the front face
    itself, which the door makes (it stands proud of the control strip beside it, so the densest
    front slab is the door, and the recessed strip stays body)."""
    f = _Front(c)
    groups = f.handles()
    handle = _mask(c.n, np.concatenate(groups)) if groups else np.zeros(c.n, dtype=bool)
    panel = f.panel(handle)
    return _rest({
        "door_handle": _decided(handle, f.margin(handle)),
        "door": _decided(panel, np.ones(c.n)),
    }, "body", c.n)


# --- flat ware and fixtures ------------------------------------------------------------------------


def _level(c: _Cloud) -> np.ndarray:
    """Heights above the support."""
    return c.p[:, 2] - c.floor


def _plate(c: _Cloud) -> Scores:
    """Plate: a flat well inside a rim that rises outwards.

    The height of the upper surface against the distance from the centre is flat over the well
    and climbs over the rim; the rim starts at the hinge of the best two-piece fit (flat, then
    a straight climb), searched over radii.
    """
    h = _level(c)
    centre = 0.5 * (np.percentile(c.p[:, :2], 1, axis=0) + np.percentile(c.p[:, :2], 99, axis=0))
    rho = np.linalg.norm(c.p[:, :2] - centre, axis=1)
    outer = float(np.percentile(rho, 99.5))
    # The upper surface: the top of each ring (the rim's underside, seen from the side, is lower).
    edges = np.arange(0.0, outer + 0.005, 0.005)
    ring = np.digitize(rho, edges)
    rings = [k for k in np.unique(ring) if np.count_nonzero(ring == k) >= 3]
    r = np.array([float(np.median(rho[ring == k])) for k in rings])
    z = np.array([float(np.percentile(h[ring == k], 90)) for k in rings])
    best, hinge = np.inf, 0.65 * outer
    for r0 in np.linspace(0.3 * outer, 0.95 * outer, 40):
        design = np.column_stack([np.ones_like(r), np.maximum(r - r0, 0.0)])
        coef, *_ = np.linalg.lstsq(design, z, rcond=None)
        cost = float(np.sum((z - design @ coef) ** 2))
        if coef[1] > 0 and cost < best:
            best, hinge = cost, float(r0)
    return _rest({"rim": _decided(rho > hinge, _ramp(np.abs(rho - hinge), 0.0, c.cfg.softness))}, "body", c.n)


def _tray(c: _Cloud) -> Scores:
    """Tray: a flat base inside raised walls. The base's floor level is the median height of
    the level (upward-facing) points; the rim is everything clearly above the floor."""
    h = _level(c)
    level = np.abs(c.normals[:, 2]) > 0.8
    floor = float(np.median(h[level])) if level.sum() >= 5 else float(np.percentile(h, 30))
    line = floor + c.cfg.protrusion_low
    return _rest({"rim": _decided(h > line, _ramp(np.abs(h - line), 0.0, c.cfg.softness))}, "base", c.n)


def _rack(c: _Cloud) -> Scores:
    """Mug rack: a wide base disc, a thin pole on the axis and hooks sticking out of the pole.

    The base is the bottom run of height bands at least twice as wide as the pole; the hooks
    are what protrudes beyond the pole's radius; the pole is the rest.
    """
    cfg = c.cfg
    rev = _Revolution(c)
    pole_r = float(np.median(rev.radius[rev.h > 0.5 * float(rev.h.max())]))
    wide = rev.radius > 2.0 * pole_r
    base_top = float(np.percentile(rev.h[wide], 99)) if wide.any() else float(np.percentile(rev.h, 5))
    base = rev.h <= base_top
    hooks = rev.protrusions() & ~base
    return _rest({
        "base": _decided(base, _ramp(np.abs(rev.h - base_top), 0.0, cfg.softness)),
        "hook": _decided(hooks, _protrusion_margin(rev.excess, hooks, cfg)),
    }, "pole", c.n)


def _shelf(c: _Cloud) -> Scores:
    """Open shelf: boards are the level surfaces between the side panels; the frame (sides,
    back, plinth) is the rest. The wider horizontal axis of the unit is its width; points
    within ``FRAME`` of its ends are the side panels."""
    u, v = _box_axes(c)
    xy = c.p[:, :2]
    extent = [np.ptp(np.percentile(xy @ d, [1, 99])) for d in (u, v)]
    across = u if extent[0] >= extent[1] else v
    lat = xy @ across
    lo, hi = np.percentile(lat, [0.5, 99.5])
    inside = (lat > lo + FRAME) & (lat < hi - FRAME)
    level = np.abs(c.normals[:, 2]) > 0.7
    margin = _ramp(np.minimum(lat - lo - FRAME, hi - FRAME - lat), 0.0, c.cfg.softness)
    return _rest({"board": _decided(inside & level, margin)}, "frame", c.n)


# --- produce, packaged food, a pen and a board (AffordSim's objects) --------------------------------

# Depth of the top band of a closed package below its top (m): a category prior at mid-range of
# the asset library's bands, which follow the real objects (a can's rolled lid, a carton's
# printed lid, a sugar box's top panel, a coffee can's snap-on lid).
TOP_BAND: dict[str, float] = {"soup_can": 0.006, "chocolate_box": 0.008, "sugar_box": 0.0045,
                               "coffee_can": 0.011}
# A carrot's tuft lies below this share of the crown's height (it leaves the crown's middle and
# droops to the table); a leek's leaves flatten below this share of the stalk's height.
CARROT_LEAVES = 0.65
LEEK_LEAVES = 0.8
# Length of a pen's cap (m): a category prior (caps are 40-55 mm), as for a bottle's cap; the
# cap is too little thicker than the barrel to find it under depth noise.
PEN_CAP = 0.047
# Share of the end's share of the axis compared to tell a pen's capped end from its tip.
PEN_END = 0.2
# A cutting board's handle tab is narrower than this share of the board's width.
BOARD_HANDLE = 0.6
# Length step of the profiles along an object lying on the table (m).
LENGTH_STEP = 0.005


def _top_band(c: _Cloud, top: str, rest: str) -> Scores:
    """Soup can, chocolate box, sugar box: ``top`` is the top ``TOP_BAND`` of a closed upright
    package (the lid or top panel), the rest is the body."""
    h = _level(c)
    line = float(np.percentile(h, 99.5)) - TOP_BAND[c.category]
    return _rest({top: _decided(h >= line, _ramp(np.abs(h - line), 0.0, c.cfg.softness))}, rest, c.n)


class _Lengthwise:
    """An object lying on the table along the principal axis of its footprint, profiled along it.

    Attributes: ``t`` each point's position along the axis, ``band`` its ``LENGTH_STEP`` band,
    ``edges`` the band edges, and per band the ``height`` (95th percentile above the support)
    and ``width`` (5th to 95th percentile across the axis); bands with fewer than three points
    take their neighbours' values.
    """

    def __init__(self, c: _Cloud) -> None:
        xy = c.p[:, :2]
        mu = xy.mean(axis=0)
        _, vecs = np.linalg.eigh(np.cov((xy - mu).T))
        self.t = (xy - mu) @ vecs[:, 1]
        s = (xy - mu) @ vecs[:, 0]
        h = _level(c)
        nb = max(4, int(np.ceil(np.ptp(self.t) / LENGTH_STEP)))
        self.edges = np.linspace(self.t.min(), self.t.max() + 1e-9, nb + 1)
        self.band = np.clip(np.searchsorted(self.edges, self.t, side="right") - 1, 0, nb - 1)
        height, width = np.full(nb, np.nan), np.full(nb, np.nan)
        for b in range(nb):
            sel = self.band == b
            if sel.sum() >= 3:
                height[b] = np.percentile(h[sel], 95)
                width[b] = np.ptp(np.percentile(s[sel], [5, 95]))
        known = np.flatnonzero(np.isfinite(height))
        self.height = np.interp(np.arange(nb), known, height[known])
        self.width = np.interp(np.arange(nb), known, width[known])

    def beyond(self, c: _Cloud, band: int, forward: bool, part: str, rest: str) -> Scores:
        """``part`` is every point past ``band``, the last band of ``rest`` walking forward
        (towards larger ``t``) or backward."""
        split = self.edges[band + 1] if forward else self.edges[band]
        member = self.t >= split if forward else self.t < split
        margin = _ramp(np.abs(self.t - split), 0.0, 2 * c.cfg.softness)
        return _rest({part: _decided(member, margin)}, rest, c.n)


def _walk(profile: np.ndarray, start: int, step: int, keep: Callable[[float], bool]) -> int:
    """Last band from ``start`` in direction ``step`` (+1 or -1) where ``keep`` still holds."""
    b = start
    while 0 <= b + step < len(profile) and keep(float(profile[b + step])):
        b += step
    return b


def _carrot(c: _Cloud) -> Scores:
    """Carrot: a root tapering from its crown to its tip, a low tuft of leaves beyond the crown.

    The crown is the highest band of the height profile (the root is thickest there); it sits
    near one end (the tuft is short), while the root tapers over most of the length to the
    other. The leaves are what lies beyond the crown towards the near end, from where the
    height drops below ``CARROT_LEAVES`` of the crown's.
    """
    f = _Lengthwise(c)
    smooth = np.median(np.lib.stride_tricks.sliding_window_view(np.pad(f.height, 1, mode="edge"), 3), axis=1)
    crown = int(np.argmax(smooth))
    forward = crown >= len(smooth) - 1 - crown  # the tuft is on the side of the nearer end
    level = CARROT_LEAVES * float(smooth[crown])
    last = _walk(smooth, crown, 1 if forward else -1, lambda v: v >= level)
    return f.beyond(c, last, forward, "leaves", "body")


def _leek(c: _Cloud) -> Scores:
    """Leek: a round stalk and flattened leaves, one at each end. The stalk's end is the taller
    of the two end quarters; the leaves start where the height first drops below
    ``LEEK_LEAVES`` of the stalk's (its median over the stalk's end 40 %)."""
    f = _Lengthwise(c)
    nb = len(f.height)
    quarter = max(1, nb // 4)
    forward = float(np.median(f.height[:quarter])) >= float(np.median(f.height[-quarter:]))
    profile = f.height if forward else f.height[::-1]
    level = LEEK_LEAVES * float(np.median(profile[: max(2, int(0.4 * nb))]))
    last = _walk(profile, 0, 1, lambda v: v >= level)
    return f.beyond(c, last if forward else nb - 1 - last, forward, "leaves", "stalk")


def _pen(c: _Cloud) -> Scores:
    """Pen: the cap is the last ``PEN_CAP`` of the pen at its capped end, the end whose points
    stand higher on average (the cap's wall and clip; the other end tapers to the tip)."""
    f = _Lengthwise(c)
    h = _level(c)
    lo, hi = np.percentile(f.t, [0.5, 99.5])
    end = PEN_END * (hi - lo)
    forward = float(h[f.t > hi - end].mean()) >= float(h[f.t < lo + end].mean())
    split = hi - PEN_CAP if forward else lo + PEN_CAP
    member = f.t >= split if forward else f.t <= split
    margin = _ramp(np.abs(f.t - split), 0.0, 2 * c.cfg.softness)
    return _rest({"cap": _decided(member, margin)}, "body", c.n)


def _cutting_board(c: _Cloud) -> Scores:
    """Cutting board: the handle is the run of bands at one end of the long axis narrower than
    ``BOARD_HANDLE`` of the board's width (the median band width); with none, all is board."""
    f = _Lengthwise(c)
    level = BOARD_HANDLE * float(np.median(f.width))
    nb = len(f.width)
    head = _walk(f.width, -1, 1, lambda v: v < level) + 1  # narrow bands at the start
    tail = _walk(f.width[::-1], -1, 1, lambda v: v < level) + 1  # and at the end
    if max(head, tail) == 0:
        return _rest({"handle": np.zeros(c.n)}, "board", c.n)
    if head > tail:
        return f.beyond(c, head, False, "handle", "board")
    return f.beyond(c, nb - 1 - tail, True, "handle", "board")


def _soup_can(c: _Cloud) -> Scores:
    return _top_band(c, "lid", "body")


def _chocolate_box(c: _Cloud) -> Scores:
    return _top_band(c, "lid", "body")


def _sugar_box(c: _Cloud) -> Scores:
    return _top_band(c, "top", "body")


# --- AffordSim's Medium-tier objects ------------------------------------------------------------

# Depth of the rim band of a paper box and of a basket below the top of their walls (m): category
# priors at mid-range of the asset library's bands.
RIM_DEPTH_BOX = {"paper_box": 0.0115, "basket": 0.0125}
# A pepper's stem is thinner than this across (m) and widens less than STEM_JUMP times from its
# top to its foot; the broad shoulders it stands on are wider.
STEM_WIDTH = 0.022
STEM_JUMP = 1.6
# Bands within this of the narrowest (m) are a spray bottle's neck (depth noise on a 25-30 mm
# neck seen from one side).
NECK_SLACK = 0.004
# A sprayer (collar and head) is at least this tall (m): the neck is below it.
SPRAYER_MIN = 0.035
# Height step of the profiles taken up an upright object (m), and the fewest points that give
# a band's extent.
HEIGHT_STEP = 0.003
BAND_POINTS = 8
# A basket's wall bands are wide both ways; the handle's bands, one bar in a vertical plane,
# are thinner than this across that plane (m).
HANDLE_PLANE = 0.035
# Width of the rings round a kettle base's centre whose heights find the raised plate (m).
PLATE_RING = 0.004
# The middle of a kettle base out to this share of its radius is surely plate (plates are 0.06-
# 0.09 m across on 0.14-0.18 m bases).
PLATE_MIDDLE = 0.35
# A pot lid's knob stands within this distance of the lid's centre (m), this much or more above
# the dome's fitted surface.
KNOB_REACH = 0.03
KNOB_RISE = 0.006
# A coffee machine's drip tray is lower than this (m); the bay in front of the tower is empty
# between this share of the height and half of it (no cup is in the cloud of the machine).
TRAY_TOP = 0.03
BAY_BAND = (0.2, 0.5)
# Half-width of the band round a coffee machine's middle line that holds its nozzle (m).
NOZZLE_CLEAR = 0.025


def _band_widths(c: _Cloud, step: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Heights above the support, each point's band of ``step``, and per band the extents of
    its points across the band's narrow and along its long horizontal axis (5th to 95th
    percentile), as a (bands, 2) array; NaN for a band with fewer than ``BAND_POINTS``."""
    h = _level(c)
    band = np.clip((h / step).astype(int), 0, None)
    width = np.full((int(band.max()) + 1, 2), np.nan)
    for b in np.unique(band):
        xy = c.p[band == b, :2]
        if len(xy) >= BAND_POINTS:
            _, vecs = np.linalg.eigh(np.cov((xy - xy.mean(axis=0)).T))
            width[b] = [float(np.ptp(np.percentile(xy @ vecs[:, k], [5, 95]))) for k in (0, 1)]
    return h, band, width


def _bell_pepper(c: _Cloud) -> Scores:
    """Bell pepper: the stem is the run of height bands from the top that stay narrow: under
    ``STEM_JUMP`` times the width of the stem's top (the median of its top two bands) and under
    ``STEM_WIDTH`` across. The pepper's broad shoulders round it are wider."""
    h, _, widths = _band_widths(c, HEIGHT_STEP)
    width = widths[:, 0]
    top = min(int(np.floor(float(np.percentile(h, 99.8)) / HEIGHT_STEP)), len(width) - 1)
    known = width[max(0, top - 2):top + 1]
    ref = float(np.nanmedian(known)) if np.isfinite(known).any() else STEM_WIDTH / STEM_JUMP
    limit = min(STEM_WIDTH, STEM_JUMP * ref)
    b = top
    while b > 0 and not width[b - 1] >= limit:  # NaN (a sparse band) keeps walking down
        b -= 1
    split = b * HEIGHT_STEP
    return _rest({"stem": _decided(h >= split, _ramp(np.abs(h - split), 0.0, c.cfg.softness))}, "body", c.n)


def _scrub_bottle(c: _Cloud) -> Scores:
    """Spray bottle: the neck is the run of bands in the upper half of the bottle, below the
    least sprayer height ``SPRAYER_MIN``, shortest along their long axis (the sprayer head is
    narrow across but long, the body wider both ways); the cap (collar, trigger, head and
    nozzle) is everything above the neck."""
    h, _, widths = _band_widths(c, HEIGHT_STEP)
    length = widths[:, 1]
    top = float(np.percentile(h, 99.5))
    lo, hi = int(0.5 * top / HEIGHT_STEP), int((top - SPRAYER_MIN) / HEIGHT_STEP)
    upper = length[lo:hi]
    if not np.isfinite(upper).any():
        return _bottle(c)
    neck = float(np.nanmin(upper))
    narrow = np.flatnonzero(np.nan_to_num(upper, nan=np.inf) <= neck + NECK_SLACK) + lo
    split = (int(narrow.max()) + 1) * HEIGHT_STEP
    return _rest({"cap": _decided(h >= split, _ramp(np.abs(h - split), 0.0, c.cfg.softness))}, "body", c.n)


def _coffee_can(c: _Cloud) -> Scores:
    return _top_band(c, "lid", "body")


def _paper_box(c: _Cloud) -> Scores:
    """Paper box: the rim is the top band of the walls (a category prior), the inside the rest."""
    h = _level(c)
    line = float(np.percentile(h, 99.5)) - RIM_DEPTH_BOX["paper_box"]
    return _rest({"rim": _decided(h >= line, _ramp(np.abs(h - line), 0.0, c.cfg.softness))}, "inside", c.n)


def _basket(c: _Cloud) -> Scores:
    """Basket: the wall ends at the highest band wider than ``HANDLE_PLANE`` across its narrow
    axis (above it is only the arch, a bar in a vertical plane); the handle is what rises above
    the wall, the rim the top band of the wall (a category prior), the body the rest."""
    h, _, widths = _band_widths(c, HEIGHT_STEP)
    wide = np.flatnonzero(np.nan_to_num(widths[:, 0], nan=0.0) > HANDLE_PLANE)
    wall_top = (int(wide.max()) + 1) * HEIGHT_STEP if len(wide) else float(np.percentile(h, 60))
    line = wall_top - RIM_DEPTH_BOX["basket"]
    soft = c.cfg.softness
    handle = h > wall_top
    rim = (h >= line) & ~handle
    return _rest({
        "handle": _decided(handle, _ramp(np.abs(h - wall_top), 0.0, soft)),
        "rim": _decided(rim, np.minimum(_ramp(np.abs(h - line), 0.0, soft),
                                        _ramp(np.abs(h - wall_top), 0.0, soft))),
    }, "body", c.n)


def _kettle_base(c: _Cloud) -> Scores:
    """Kettle base: two level surfaces, the disc's top and the raised plate's above it. Rings
    round the footprint's centre each take the median height of their level points (robust to
    depth noise, which is as large as the plate's step); the plate is the run of rings from the
    centre that stand more than half way from the disc (the outer quarter's median) to the
    highest ring."""
    h = _level(c)
    lo, hi = np.percentile(c.p[:, :2], [1, 99], axis=0)
    rho = np.linalg.norm(c.p[:, :2] - 0.5 * (lo + hi), axis=1)
    outer = float(np.percentile(rho, 99.5))
    level = np.abs(c.normals[:, 2]) > 0.8
    ring = np.minimum((rho / PLATE_RING).astype(int), int(outer / PLATE_RING))
    heights = np.full(int(ring.max()) + 1, np.nan)
    for k in np.unique(ring[level]):
        sel = level & (ring == k)
        if sel.sum() >= 5:
            heights[k] = float(np.median(h[sel]))
    rim = heights[int(0.75 * outer / PLATE_RING):]
    if not np.isfinite(heights).any() or not np.isfinite(rim).any():
        return _rest({"plate": np.zeros(c.n)}, "base", c.n)
    disc = float(np.nanmedian(rim))
    middle = heights[: max(1, int(PLATE_MIDDLE * outer / PLATE_RING))]
    if not np.isfinite(middle).any():
        return _rest({"plate": np.zeros(c.n)}, "base", c.n)
    line = 0.5 * (disc + float(np.nanmedian(middle)))
    above = np.nan_to_num(heights, nan=line) >= line
    last = _walk(above.astype(float), 0, 1, lambda v: v > 0.5)
    radius = (last + 1) * PLATE_RING
    plate = rho <= radius
    margin = _ramp(np.abs(rho - radius), 0.0, c.cfg.softness)
    return _rest({"plate": _decided(plate, margin)}, "base", c.n)


def _lid(c: _Cloud) -> Scores:
    """Pot lid: a low dome, and the knob rising from its centre. The dome's surface is a robust
    line fit of height against distance from the centre, over the level points away from the
    knob; the knob is what stands ``KNOB_RISE`` above it within ``KNOB_REACH`` of the centre."""
    h = _level(c)
    lo, hi = np.percentile(c.p[:, :2], [1, 99], axis=0)
    rho = np.linalg.norm(c.p[:, :2] - 0.5 * (lo + hi), axis=1)
    dome = (rho > KNOB_REACH) & (np.abs(c.normals[:, 2]) > 0.7)
    if dome.sum() >= 5:
        a, b = _robust_line(rho[dome], h[dome])
        rise = h - (a + b * np.maximum(rho, KNOB_REACH))
    else:
        rise = h - float(np.percentile(h, 50))
    knob = (rise > KNOB_RISE) & (rho < KNOB_REACH)
    return _rest({"knob": _decided(knob, _ramp(np.abs(rise - KNOB_RISE), 0.0, c.cfg.softness))}, "lid", c.n)


def _coffee_machine(c: _Cloud) -> Scores:
    """Coffee machine: the bay is the side of the tower where, between ``BAY_BAND`` of the
    height, nothing stands (the head overhangs it, the tray is its floor). Along each box axis
    the bay side is the one where those mid-height points stop short of the full extent; the
    tower's front face is where they stop. In the bay the tray is everything below
    ``TRAY_TOP``, the nozzle everything between the tray and the head, whose underside is the
    lowest of the bay's points that are not near the nozzle's vertical line."""
    h = _level(c)
    top = float(np.percentile(h, 99.5))
    u, v = _box_axes(c)
    mid = (h > BAY_BAND[0] * top) & (h < BAY_BAND[1] * top)
    best: tuple[float, np.ndarray] | None = None
    for d in (u, -u, v, -v):
        if mid.sum() < 5:
            break
        short = float(np.percentile(c.p[:, :2] @ d, 99.5) - np.percentile(c.p[mid, :2] @ d, 99))
        if best is None or short > best[0]:
            best = (short, d)
    if best is None:
        return _rest({"tray": np.zeros(c.n), "nozzle": np.zeros(c.n)}, "body", c.n)
    d = best[1]
    x = c.p[:, :2] @ d
    front = float(np.percentile(x[mid], 99))
    lateral = c.p[:, :2] @ np.array([-d[1], d[0]])
    bay = x > front + 0.005
    tray = bay & (h < TRAY_TOP)
    # The head spans the width; the nozzle hangs on the middle line, under NOZZLE_CLEAR of it.
    side = bay & (h > 0.5 * top) & (np.abs(lateral - float(np.median(lateral[bay]))) > NOZZLE_CLEAR) \
        if bay.any() else bay
    under = float(np.percentile(h[side], 2)) if side.sum() >= 5 else top
    nozzle = bay & (h >= TRAY_TOP) & (h < under - 0.002)
    soft = c.cfg.softness
    bay_margin = _ramp(x - front, 0.005, 0.005 + soft)
    return _rest({
        "tray": _decided(tray, np.minimum(bay_margin, _ramp(np.abs(h - TRAY_TOP), 0.0, soft))),
        "nozzle": _decided(nozzle, bay_margin),
    }, "body", c.n)


# --- single-part objects --------------------------------------------------------------------------


def _whole(c: _Cloud) -> Scores:
    return {"body": np.ones(c.n)}


def _mat(c: _Cloud) -> Scores:
    return {"marking": np.ones(c.n)}


RULES: dict[str, Rule] = {
    "mug": _mug,
    "teacup": _mug,  # the same build, squatter
    "paper_cup": _cup,
    "bowl": _cup,
    "hammer": _hammer,
    "pan": _pan,
    "pot": _pot,
    "kettle": _kettle,
    "bottle": _bottle,
    "scoop": _scoop,
    "plate": _plate,
    "tray": _tray,
    "rack": _rack,
    "shelf": _shelf,
    "cabinet": _cabinet,
    "chest": _chest,
    "microwave": _microwave,
    "banana": _whole,
    "box": _whole,
    "cube": _whole,
    "carrot": _carrot,
    "leek": _leek,
    "pen": _pen,
    "soup_can": _soup_can,
    "chocolate_box": _chocolate_box,
    "sugar_box": _sugar_box,
    "cutting_board": _cutting_board,
    "bell_pepper": _bell_pepper,
    "scrub_bottle": _scrub_bottle,
    "cheese_box": _whole,
    "target_mat": _mat,
    "coffee_can": _coffee_can,
    "paper_box": _paper_box,
    "basket": _basket,
    "kettle_base": _kettle_base,
    "coffee_machine": _coffee_machine,
    "lid": _lid,
}


@register_source("geometric")
class GeometricSource(GroundingSource):
    """Label-free grounding by per-category geometric partition rules (see the module docstring).

    One partition scores every part of a cloud at once; the last one is kept, keyed by the
    category and a digest of the points, so asking for the handle and then the body of the
    same cloud (what the planner does for a grasp region and a keep-clear region) costs one.
    """

    def __init__(self, config: GeometricConfig | None = None) -> None:
        self.config = config or GeometricConfig()
        self._last: tuple[tuple[str, bytes], Scores] | None = None

    def partition(self, cloud: ObjectCloud) -> Scores:
        """Scores of every part of the cloud's category, by part name (validated like ``ground``)."""
        info = category(cloud.category)
        rule = RULES.get(info.name)
        if rule is None:
            raise NotImplementedError(
                f"no geometric partition rule for {info.name!r}; rules exist for: {', '.join(sorted(RULES))}"
            )
        check_query(cloud, info.parts[0])
        points = np.ascontiguousarray(cloud.points, dtype=np.float64)
        key = (info.name, hashlib.blake2b(points.tobytes(), digest_size=16).digest())
        if self._last is not None and self._last[0] == key:
            return {name: s.copy() for name, s in self._last[1].items()}
        scores = rule(_Cloud(points, info.name, self.config))
        missing = set(info.parts) - set(scores)
        if missing:
            raise RuntimeError(f"the {info.name} rule did not score parts {sorted(missing)}")
        scores = {name: np.clip(scores[name], 0.0, 1.0) for name in info.parts}
        self._last = (key, scores)
        return {name: s.copy() for name, s in scores.items()}

    def _ground(self, cloud: ObjectCloud, part: str) -> np.ndarray:
        return self.partition(cloud)[part]
